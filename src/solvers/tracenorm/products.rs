//! The two matrix products rank-one descent needs from the design matrix X (n × d):
//! X·B (B: d × m, the scores of a weight matrix or X·u of a new atom) and Xᵀ·R (R: n × m,
//! the gradient Xᵀ(P − Y)/n of the data term).
//!
//! Dense designs (and any design with [`Design::dense_block`]) go through a blocked GEMM
//! (faer's, single-threaded per block) on blocks of rows; sparse designs through their
//! rows. Product-quantized designs (`Design::coded`) use the compressed-domain products
//! of `crate::pq` instead (table look-ups per sub-space). Both products are deterministic for any number of threads: X·B
//! computes each output row independently, and Xᵀ·R gives each task a fixed block of
//! output rows (features) summed over the rows of X in order, or, for sparse designs,
//! a fixed number of row ranges summed in order.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::data::{Design, Row, RowBuf};
use crate::linalg::{axpy, dot, dot4};
use crate::{Error, Result};

/// Rows of X per block: a block of a dense X (d ≤ a few thousand) stays in L2.
const BLOCK_ROWS: usize = 256;
/// Up to this many columns of B, a dense X·B is row-by-column dot products (one pass over
/// X at streaming speed, Bᵀ in L1), beyond it a GEMM. Measured at 20,000 × 512: one
/// column 2.4 ms against the GEMM's 6.8 ms, four 3.5 ms; at eight, Bᵀ (32 KB) leaves L1
/// and the dot products take 11 ms against the GEMM's 9.5 ms.
const THIN: usize = 4;
/// Output rows (features) of Xᵀ·R per task for dense designs: wide enough for faer's GEMM
/// to run at speed, narrow enough to split a few hundred features between threads
/// (measured at 20,000 × 512 × 50 on one thread: 90 ms through ndarray's GEMM on blocks of
/// 64 features × 256 rows, 62 ms through faer's on 64 features, 47 ms on 256 or 512;
/// NumPy's OpenBLAS takes 33 ms).
const FEATURE_BLOCK: usize = 256;
/// Rows of X per GEMM of a dense Xᵀ·R (faer packs its operands itself).
const GEMM_ROWS: usize = 2048;
/// Row ranges of a sparse Xᵀ·R, each with its own d × m accumulator (fixed, so that the
/// sum does not depend on the thread count).
const SPARSE_PARTS: usize = 4;

fn check(len: usize, rows: usize, m: usize, what: &'static str) -> Result<()> {
    if rows.checked_mul(m) != Some(len) {
        return Err(Error::input(what, format!("must hold {rows} x {m} values, got {len}")));
    }
    Ok(())
}

/// X·B for B (d × m, row-major): n × m, row-major.
pub fn x_times<D: Design + ?Sized>(x: &D, b: &[f64], m: usize) -> Result<Vec<f64>> {
    let (n, d) = (x.n_rows(), x.n_features());
    check(b.len(), d, m, "B")?;
    let mut out = vec![0.0; n * m];
    if m == 0 || d == 0 {
        return Ok(out);
    }
    let b_mat = MatRef::from_row_major_slice(b, d, m);
    // Bᵀ for thin B: each row of X against every column of B while the row is in L1.
    let b_columns: Vec<f64> =
        if m <= THIN { (0..m).flat_map(|k| (0..d).map(move |j| b[j * m + k])).collect() } else { Vec::new() };
    out.par_chunks_mut(BLOCK_ROWS * m).enumerate().for_each_init(RowBuf::new, |buf, (block, out_block)| {
        let (start, rows) = (block * BLOCK_ROWS, out_block.len() / m);
        if let Some(dense) = x.dense_block(start..start + rows, buf) {
            if m <= THIN {
                for (row, o) in dense.chunks_exact(d).zip(out_block.chunks_exact_mut(m)) {
                    thin_row_product(row, &b_columns, o);
                }
                return;
            }
            let a = MatRef::from_row_major_slice(dense, rows, d);
            let c = MatMut::from_row_major_slice_mut(out_block, rows, m);
            matmul(c, Accum::Replace, a, b_mat, 1.0, Par::Seq);
            return;
        }
        for (r, o) in out_block.chunks_exact_mut(m).enumerate() {
            match x.row(start + r, buf) {
                Row::Sparse { indices, values } => {
                    for (&j, &v) in indices.iter().zip(values) {
                        axpy(v, &b[j as usize * m..(j as usize + 1) * m], o);
                    }
                }
                Row::Dense(row) => {
                    for (j, &v) in row.iter().enumerate() {
                        axpy(v, &b[j * m..(j + 1) * m], o);
                    }
                }
            }
        }
    });
    Ok(out)
}

/// o_j = ⟨x, column j of B⟩ for Bᵀ given row by row (`columns`, m × d).
fn thin_row_product(x: &[f64], columns: &[f64], o: &mut [f64]) {
    let d = x.len();
    let mut quads = columns.chunks_exact(4 * d);
    let mut outs = o.chunks_exact_mut(4);
    for (quad, out) in (&mut quads).zip(&mut outs) {
        let ys = [&quad[..d], &quad[d..2 * d], &quad[2 * d..3 * d], &quad[3 * d..]];
        out.copy_from_slice(&dot4(x, ys));
    }
    for (column, out) in quads.remainder().chunks_exact(d).zip(outs.into_remainder()) {
        *out = dot(x, column);
    }
}

/// Xᵀ·R for R (n × m, row-major): d × m, row-major.
pub fn xt_times<D: Design + ?Sized>(x: &D, r: &[f64], m: usize) -> Result<Vec<f64>> {
    let (n, d) = (x.n_rows(), x.n_features());
    check(r.len(), n, m, "R")?;
    let mut out = vec![0.0; d * m];
    if m == 0 || n == 0 {
        return Ok(out);
    }
    let dense = x.dense_block(0..1, &mut RowBuf::new()).is_some();
    if dense {
        out.par_chunks_mut(FEATURE_BLOCK * m).enumerate().for_each_init(RowBuf::new, |buf, (block, out_block)| {
            let (j0, width) = (block * FEATURE_BLOCK, out_block.len() / m);
            let mut c = MatMut::from_row_major_slice_mut(out_block, width, m);
            for start in (0..n).step_by(GEMM_ROWS) {
                let end = (start + GEMM_ROWS).min(n);
                let rows = x.dense_block(start..end, buf).expect("a dense design gives dense blocks");
                let a = MatRef::from_row_major_slice(rows, end - start, d).subcols(j0, width);
                let r_rows = MatRef::from_row_major_slice(&r[start * m..end * m], end - start, m);
                let accum = if start == 0 { Accum::Replace } else { Accum::Add };
                matmul(c.as_mut(), accum, a.transpose(), r_rows, 1.0, Par::Seq);
            }
        });
        return Ok(out);
    }
    let per = n.div_ceil(SPARSE_PARTS);
    let parts: Vec<Vec<f64>> = (0..SPARSE_PARTS)
        .into_par_iter()
        .map(|part| {
            let mut acc = vec![0.0; d * m];
            let mut buf = RowBuf::new();
            for i in part * per..((part + 1) * per).min(n) {
                let ri = &r[i * m..(i + 1) * m];
                match x.row(i, &mut buf) {
                    Row::Sparse { indices, values } => {
                        for (&j, &v) in indices.iter().zip(values) {
                            axpy(v, ri, &mut acc[j as usize * m..(j as usize + 1) * m]);
                        }
                    }
                    Row::Dense(row) => {
                        for (j, &v) in row.iter().enumerate() {
                            axpy(v, ri, &mut acc[j * m..(j + 1) * m]);
                        }
                    }
                }
            }
            acc
        })
        .collect();
    for part in parts {
        out.iter_mut().zip(part).for_each(|(o, p)| *o += p);
    }
    Ok(out)
}

/// X as rank-one descent sees it: its shape and the two products, each checked finite
/// (a non-finite product means a non-finite or overflowing X, named as such).
pub trait Products: Sync {
    fn n_rows(&self) -> usize;
    fn n_features(&self) -> usize;
    /// X·B for B (d × m, row-major): n × m, row-major.
    fn times(&self, b: &[f64], m: usize) -> Result<Vec<f64>>;
    /// Xᵀ·R for R (n × m, row-major): d × m, row-major.
    fn t_times(&self, r: &[f64], m: usize) -> Result<Vec<f64>>;
}

/// A design through [`x_times`] and [`xt_times`] (dense or CSR), or through the
/// compressed-domain products of `crate::pq` when its rows are product-quantized.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a, D: ?Sized>(pub &'a D);

/// `out` unless it holds a NaN or an infinity (the product overflowed or X is not finite).
fn finite_product(out: Vec<f64>, m: usize, transposed: bool) -> Result<Vec<f64>> {
    match out.iter().position(|v| !v.is_finite()) {
        None => Ok(out),
        Some(at) => {
            let what = if transposed { "column" } else { "row" };
            Err(Error::input("X", format!("contains NaN or infinity, or overflows float64 ({what} {})", at / m.max(1))))
        }
    }
}

impl<D: Design + ?Sized> Products for Rows<'_, D> {
    fn n_rows(&self) -> usize {
        self.0.n_rows()
    }
    fn n_features(&self) -> usize {
        self.0.n_features()
    }
    fn times(&self, b: &[f64], m: usize) -> Result<Vec<f64>> {
        let out = match self.0.coded() {
            Some((books, codes)) => crate::pq::dot::<f64>(books, codes, b, m)?,
            None => x_times(self.0, b, m)?,
        };
        finite_product(out, m, false)
    }
    fn t_times(&self, r: &[f64], m: usize) -> Result<Vec<f64>> {
        let out = match self.0.coded() {
            Some((books, codes)) => crate::pq::tdot::<f64>(books, codes, r, m)?,
            None => xt_times(self.0, r, m)?,
        };
        finite_product(out, m, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrRows, DenseRows};
    use crate::pq::{Codebooks, CodedRows};
    use crate::rng::SplitMix64;

    #[test]
    fn products_of_coded_rows_are_computed_on_the_codes() {
        // 2 sub-spaces of 3 features, 4 centroids each; 50 rows.
        let (n, ksub, m) = (50, 4, 3);
        let mut rng = SplitMix64::new(5);
        let book_values: Vec<f32> = (0..2 * ksub * 3).map(|_| rng.next_f64() as f32 - 0.5).collect();
        let books = Codebooks::new(&book_values, 2, ksub, 3).unwrap();
        let codes: Vec<u8> = (0..n * 2).map(|i| (i * 7 % ksub) as u8).collect();
        let (b, r): (Vec<f64>, Vec<f64>) =
            ((0..6 * m).map(|_| rng.next_f64()).collect(), (0..n * m).map(|_| rng.next_f64()).collect());
        let coded = CodedRows::new(books, &codes).unwrap();
        let rows = Rows(&coded);
        // The table look-ups of `crate::pq`, not a pass over decoded rows.
        assert_eq!(rows.times(&b, m).unwrap(), crate::pq::dot::<f64>(&books, &codes, &b, m).unwrap());
        assert_eq!(rows.t_times(&r, m).unwrap(), crate::pq::tdot::<f64>(&books, &codes, &r, m).unwrap());
        // ... which give the products of the decoded matrix.
        let decoded: Vec<f64> = crate::pq::decode(&books, &codes).unwrap().into_iter().map(f64::from).collect();
        let dense = DenseRows::new(&decoded, n, 6).unwrap();
        let close = |a: Vec<f64>, b: Vec<f64>| a.iter().zip(&b).all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs()));
        assert!(close(rows.times(&b, m).unwrap(), Rows(&dense).times(&b, m).unwrap()));
        assert!(close(rows.t_times(&r, m).unwrap(), Rows(&dense).t_times(&r, m).unwrap()));
    }

    #[test]
    fn dense_and_sparse_products_match_the_definition() {
        let (n, d, m) = (613, 37, 5);
        let mut rng = SplitMix64::new(3);
        let mut x: Vec<f64> = (0..n * d).map(|_| rng.next_f64() - 0.5).collect();
        x.iter_mut().for_each(|v| {
            if *v < 0.2 {
                *v = 0.0
            }
        });
        let b: Vec<f64> = (0..d * m).map(|_| rng.next_f64()).collect();
        let r: Vec<f64> = (0..n * m).map(|_| rng.next_f64() - 0.5).collect();
        let (mut indptr, mut indices, mut data) = (vec![0i64], vec![], vec![]);
        for i in 0..n {
            for j in 0..d {
                if x[i * d + j] != 0.0 {
                    indices.push(j as i64);
                    data.push(x[i * d + j]);
                }
            }
            indptr.push(indices.len() as i64);
        }
        let dense = DenseRows::new(&x, n, d).unwrap();
        let csr = CsrRows::new(&indptr, &indices, &data, d).unwrap();
        let mut xb = vec![0.0; n * m];
        let mut xtr = vec![0.0; d * m];
        for i in 0..n {
            for j in 0..d {
                for k in 0..m {
                    xb[i * m + k] += x[i * d + j] * b[j * m + k];
                    xtr[j * m + k] += x[i * d + j] * r[i * m + k];
                }
            }
        }
        for got in [x_times(&dense, &b, m).unwrap(), x_times(&csr, &b, m).unwrap()] {
            assert!(got.iter().zip(&xb).all(|(a, b)| (a - b).abs() < 1e-12));
        }
        for got in [xt_times(&dense, &r, m).unwrap(), xt_times(&csr, &r, m).unwrap()] {
            assert!(got.iter().zip(&xtr).all(|(a, b)| (a - b).abs() < 1e-11));
        }
        assert!(x_times(&dense, &b[1..], m).is_err());
    }
}
