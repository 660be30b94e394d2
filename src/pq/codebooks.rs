//! Codebooks: training (k-means per sub-space), encoding and decoding.
//!
//! Layout as faiss's `ProductQuantizer.centroids`: M × ksub × dsub float32, sub-space q's
//! centroid c at `(q·ksub + c)·dsub`. Codes are one byte per sub-space, row-major n × M
//! (the products read a row's M codes together).

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::kmeans::kmeans;
use super::nearest::CentroidTable;
use crate::rng::SplitMix64;
use crate::{Error, Real, Result};

/// Rows encoded together, sub-space by sub-space.
const ENCODE_ROWS: usize = 256;

/// A borrowed set of codebooks with its shape.
#[derive(Debug, Clone, Copy)]
pub struct Codebooks<'a> {
    data: &'a [f32],
    n_subspaces: usize,
    ksub: usize,
    dsub: usize,
}

impl<'a> Codebooks<'a> {
    /// Checks the shape: `data.len() == n_subspaces · ksub · dsub`, 2 ≤ ksub ≤ 256, all
    /// entries finite.
    pub fn new(data: &'a [f32], n_subspaces: usize, ksub: usize, dsub: usize) -> Result<Self> {
        if n_subspaces == 0 || dsub == 0 {
            return Err(Error::input("codebooks", "needs at least one sub-space of at least one feature"));
        }
        if !(2..=256).contains(&ksub) {
            return Err(Error::input("codebooks", format!("must have 2 to 256 centroids per sub-space, got {ksub}")));
        }
        if n_subspaces.checked_mul(ksub).and_then(|x| x.checked_mul(dsub)) != Some(data.len()) {
            return Err(Error::input(
                "codebooks",
                format!("{} values are not {n_subspaces} x {ksub} x {dsub}", data.len()),
            ));
        }
        if data.iter().any(|v| !v.is_finite()) {
            return Err(Error::input("codebooks", "contains NaN or infinity"));
        }
        Ok(Self { data, n_subspaces, ksub, dsub })
    }

    pub fn n_subspaces(&self) -> usize {
        self.n_subspaces
    }

    pub fn ksub(&self) -> usize {
        self.ksub
    }

    pub fn dsub(&self) -> usize {
        self.dsub
    }

    /// Number of features d = M · dsub.
    pub fn dim(&self) -> usize {
        self.n_subspaces * self.dsub
    }

    /// The centroids of sub-space q (ksub × dsub).
    pub fn subspace(&self, q: usize) -> &'a [f32] {
        let len = self.ksub * self.dsub;
        &self.data[q * len..(q + 1) * len]
    }

    /// Checks that X's rows, of `features` entries, have the codebooks' d features.
    pub fn check_features(&self, features: usize) -> Result<()> {
        match self.dim() {
            d if d == features => Ok(()),
            d => Err(Error::input("X", format!("has {features} features, the codebooks {d}"))),
        }
    }

    /// Checks that the codes' rows, of `columns` codes, have one per sub-space (a flat
    /// [`Self::check_codes`] cannot tell n × M' from n' × M).
    pub fn check_code_columns(&self, columns: usize) -> Result<()> {
        match self.n_subspaces {
            m if m == columns => Ok(()),
            m => Err(Error::input("codes", format!("must have {m} columns (one per sub-space), got {columns}"))),
        }
    }

    /// Checks that `codes` holds n rows of M codes, each below ksub.
    pub fn check_codes(&self, codes: &[u8]) -> Result<usize> {
        let m = self.n_subspaces;
        if codes.len() % m != 0 {
            return Err(Error::input("codes", format!("{} codes are not whole rows of {m} sub-spaces", codes.len())));
        }
        // With 256 centroids every byte is a valid code: no pass over the codes.
        let out_of_range = if self.ksub < 256 { codes.iter().position(|&c| usize::from(c) >= self.ksub) } else { None };
        if let Some(pos) = out_of_range {
            return Err(Error::input(
                "codes",
                format!(
                    "code {} at row {}, sub-space {} is out of range for {} centroids",
                    codes[pos],
                    pos / m,
                    pos % m,
                    self.ksub
                ),
            ));
        }
        Ok(codes.len() / m)
    }
}

/// k-means settings of [`train`].
#[derive(Debug, Clone, Copy)]
pub struct TrainOptions {
    pub n_iter: usize,
    /// At most this many training points per centroid (a seeded row sample beyond).
    pub max_points_per_centroid: usize,
    pub seed: u64,
}

/// What [`train`] returns: the codebooks (M × ksub × dsub) and k-means's error after
/// each assignment step, per sub-space (M × n_iter).
#[derive(Debug, Clone)]
pub struct Trained {
    pub codebooks: Vec<f32>,
    pub errors: Vec<Vec<f64>>,
}

fn check_rows<T: Real>(x: &[T], d: usize) -> Result<usize> {
    if d == 0 || x.len() % d != 0 {
        return Err(Error::input("X", format!("{} values are not whole rows of {d} features", x.len())));
    }
    if x.iter().any(|v| !v.to_f64().is_finite()) {
        return Err(Error::input("X", "contains NaN or infinity"));
    }
    Ok(x.len() / d)
}

/// Learns M codebooks of 2^n_bits centroids from the rows of `x` (n × d, row-major):
/// k-means per sub-space, the sub-spaces in parallel on the current rayon pool. None
/// when `stop` was raised before the end (Ctrl-C from Python: k-means polls it every
/// few thousand points).
pub fn train<T: Real>(
    x: &[T],
    d: usize,
    n_subspaces: usize,
    n_bits: u32,
    opts: &TrainOptions,
    stop: Option<&AtomicBool>,
) -> Result<Option<Trained>> {
    if !(1..=8).contains(&n_bits) {
        return Err(Error::param("n_bits", format!("must lie in 1..=8 (one byte per code), got {n_bits}")));
    }
    if n_subspaces == 0 || d % n_subspaces != 0 {
        return Err(Error::param(
            "n_subspaces",
            format!("must divide the number of features d = {d}, got {n_subspaces}"),
        ));
    }
    if opts.n_iter == 0 {
        return Err(Error::param("n_iter", "must be >= 1"));
    }
    // The errors are returned as an M × n_iter float64 array.
    if opts
        .n_iter
        .checked_mul(n_subspaces)
        .and_then(|v| v.checked_mul(8))
        .is_none_or(|bytes| bytes > isize::MAX as usize)
    {
        return Err(Error::param(
            "n_iter",
            format!("{} steps x {n_subspaces} sub-spaces of errors do not fit in memory", opts.n_iter),
        ));
    }
    if opts.max_points_per_centroid == 0 {
        return Err(Error::param("max_points_per_centroid", "must be >= 1"));
    }
    let n = check_rows(x, d)?;
    let ksub = 1usize << n_bits;
    if n < ksub {
        return Err(Error::input(
            "X",
            format!("needs at least 2^n_bits = {ksub} rows to train {ksub} centroids, got {n}"),
        ));
    }
    // One row sample for every sub-space, as faiss does.
    let mut rows: Vec<usize> = (0..n).collect();
    let budget = ksub.saturating_mul(opts.max_points_per_centroid);
    if n > budget {
        SplitMix64::derive(opts.seed, 0).shuffle(&mut rows);
        rows.truncate(budget);
        rows.sort_unstable();
    }
    let dsub = d / n_subspaces;
    // None (stopped) for any sub-space makes the whole collection None.
    let per_subspace: Option<Vec<(Vec<f64>, Vec<f64>)>> = (0..n_subspaces)
        .into_par_iter()
        .map(|q| {
            let points: Vec<f64> = rows
                .iter()
                .flat_map(|&i| x[i * d + q * dsub..i * d + (q + 1) * dsub].iter().map(|v| v.to_f64()))
                .collect();
            kmeans(&points, dsub, ksub, opts.n_iter, SplitMix64::derive(opts.seed, 1 + q as u64).next_u64(), stop)
        })
        .collect();
    Ok(per_subspace.map(|per_subspace| {
        let codebooks = per_subspace.iter().flat_map(|(c, _)| c.iter().map(|&v| v as f32)).collect();
        Trained { codebooks, errors: per_subspace.into_iter().map(|(_, e)| e).collect() }
    }))
}

/// The code of every row of `x` (n × d): per sub-space the nearest centroid (squared
/// distance in f64, ties to the smaller index), rows in parallel. None when `stop` was
/// raised before the end (polled before each block of rows).
pub fn encode<T: Real>(books: &Codebooks<'_>, x: &[T], stop: Option<&AtomicBool>) -> Result<Option<Vec<u8>>> {
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let d = books.dim();
    let n = check_rows(x, d)?;
    let (m, dsub) = (books.n_subspaces, books.dsub);
    let tables: Vec<CentroidTable> = (0..m)
        .map(|q| CentroidTable::new(&books.subspace(q).iter().map(|&v| f64::from(v)).collect::<Vec<_>>(), dsub))
        .collect();
    let mut codes = vec![0u8; n * m];
    // Sub-space by sub-space within a block of rows: one sub-space's centroids (16 KB
    // for 256 × 8) stay in L1 while the block's rows are encoded.
    codes.par_chunks_mut(ENCODE_ROWS * m).zip(x.par_chunks(ENCODE_ROWS * d)).for_each_init(
        || (vec![0.0f64; dsub], tables[0].scratch()),
        |(sub, scratch), (code_block, row_block)| {
            if stopped() {
                return;
            }
            for (q, table) in tables.iter().enumerate() {
                for (code, row) in code_block.chunks_exact_mut(m).zip(row_block.chunks_exact(d)) {
                    sub.iter_mut().zip(&row[q * dsub..(q + 1) * dsub]).for_each(|(s, v)| *s = v.to_f64());
                    code[q] = table.nearest(sub, scratch) as u8;
                }
            }
        },
    );
    Ok((!stopped()).then_some(codes))
}

/// X̂: every code replaced by its centroid (n × d, float32 as the codebooks).
pub fn decode(books: &Codebooks<'_>, codes: &[u8]) -> Result<Vec<f32>> {
    let n = books.check_codes(codes)?;
    let (m, dsub) = (books.n_subspaces, books.dsub);
    let mut out = vec![0.0f32; n * m * dsub];
    out.par_chunks_mut(m * dsub).zip(codes.par_chunks(m)).for_each(|(row, code)| {
        for (q, (piece, &c)) in row.chunks_exact_mut(dsub).zip(code).enumerate() {
            piece.copy_from_slice(&books.subspace(q)[usize::from(c) * dsub..(usize::from(c) + 1) * dsub]);
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes' rows have a code per sub-space and X's rows d features; the messages
    /// name the argument.
    #[test]
    fn widths_are_checked_against_the_codebooks() {
        let values = vec![0.0f32; 2 * 4 * 3];
        let books = Codebooks::new(&values, 2, 4, 3).unwrap();
        assert_eq!((books.check_code_columns(2), books.check_features(6)), (Ok(()), Ok(())));
        let codes = books.check_code_columns(3).unwrap_err().to_string();
        assert_eq!(codes, "codes: must have 2 columns (one per sub-space), got 3");
        assert_eq!(books.check_features(5).unwrap_err().to_string(), "X: has 5 features, the codebooks 6");
    }

    fn data(n: usize, d: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        (0..n * d).map(|_| rng.next_f64() * 2.0 - 1.0).collect()
    }

    /// Encoding picks the nearest centroid per sub-space (checked by brute force), and
    /// decoding the codes of the centroids themselves gives them back.
    #[test]
    fn encode_is_nearest_and_decode_inverts_on_centroids() {
        let (n, d, m) = (600, 12, 3);
        let x = data(n, d, 1);
        let trained = train(&x, d, m, 4, &TrainOptions { n_iter: 10, max_points_per_centroid: 256, seed: 5 }, None)
            .unwrap()
            .unwrap();
        let books = Codebooks::new(&trained.codebooks, m, 16, d / m).unwrap();
        let codes = encode(&books, &x, None).unwrap().unwrap();
        for i in 0..n {
            for q in 0..m {
                let sub = &x[i * d + q * 4..i * d + q * 4 + 4];
                let dist = |c: usize| -> f64 {
                    sub.iter().zip(&books.subspace(q)[c * 4..c * 4 + 4]).map(|(a, &b)| (a - f64::from(b)).powi(2)).sum()
                };
                let chosen = dist(usize::from(codes[i * m + q]));
                assert!((0..16).all(|c| dist(c) >= chosen - 1e-12), "row {i} sub-space {q}");
            }
        }
        let decoded = decode(&books, &codes).unwrap();
        let again = encode(&books, &decoded, None).unwrap().unwrap();
        assert_eq!(codes, again);
        assert!(trained.errors.iter().all(|e| e.len() == 10 && e.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12))));
    }

    /// Shapes, ranges and values are checked and named.
    #[test]
    fn bad_input_is_named() {
        let x = data(300, 6, 2);
        let opts = TrainOptions { n_iter: 2, max_points_per_centroid: 256, seed: 0 };
        let err = |r: Result<Option<Trained>>| r.unwrap_err().to_string();
        assert!(err(train(&x, 6, 4, 8, &opts, None)).starts_with("n_subspaces:"));
        assert!(err(train(&x, 6, 3, 9, &opts, None)).starts_with("n_bits:"));
        assert!(err(train(&x, 6, 3, 9, &opts, None)).starts_with("n_bits:"));
        assert!(err(train(&x[..60], 6, 3, 4, &opts, None)).starts_with("X:"));
        let mut bad = x.clone();
        bad[7] = f64::NAN;
        assert!(err(train(&bad, 6, 3, 2, &opts, None)).starts_with("X:"));
        let trained = train(&x, 6, 3, 2, &opts, None).unwrap().unwrap();
        let books = Codebooks::new(&trained.codebooks, 3, 4, 2).unwrap();
        assert!(decode(&books, &[0, 1, 4]).unwrap_err().to_string().starts_with("codes:"));
        assert!(decode(&books, &[0, 1]).unwrap_err().to_string().starts_with("codes:"));
        assert!(Codebooks::new(&trained.codebooks, 3, 4, 3).unwrap_err().to_string().starts_with("codebooks:"));
        let endless = TrainOptions { n_iter: usize::MAX / 4, ..opts };
        assert!(err(train(&x, 6, 3, 2, &endless, None)).starts_with("n_iter:"));
    }

    /// A raised stop flag ends training and encoding without a result.
    #[test]
    fn a_raised_stop_flag_ends_training_and_encoding() {
        let x = data(300, 6, 4);
        let opts = TrainOptions { n_iter: 1 << 40, max_points_per_centroid: 256, seed: 0 };
        let stop = AtomicBool::new(true);
        assert!(train(&x, 6, 3, 2, &opts, Some(&stop)).unwrap().is_none());
        let trained = train(&x, 6, 3, 2, &TrainOptions { n_iter: 2, ..opts }, None).unwrap().unwrap();
        let books = Codebooks::new(&trained.codebooks, 3, 4, 2).unwrap();
        assert!(encode(&books, &x, Some(&stop)).unwrap().is_none());
        assert!(encode(&books, &x, Some(&AtomicBool::new(false))).unwrap().is_some());
    }
}
