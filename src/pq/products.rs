//! Matrix products with the decoded matrix X̂ (n × d) without forming it.
//!
//! X̂·B (B: d × m), the paper's Algorithm 1: per sub-space q a table T_q = C_q B_q
//! (ksub × m; C_q the centroids, B_q the dsub rows of B of that sub-space), then
//!   (X̂B)_i = Σ_q T_q[code_iq]:  M·ksub·dsub·m multiply-adds and n·M·m adds.
//! X̂ᵀ·B (B: n × m), Algorithm 2: per sub-space the bucket sums D_q[c] = Σ_{i: code_iq = c} B_i,
//! then (X̂ᵀB)_{q·dsub + t} = Σ_c C_q[c, t] D_q[c]:  n·M·m adds and M·ksub·dsub·m
//! multiply-adds. Both are exact sums of the same products as X̂·B formed densely, in
//! another order (tested against the decoded matrix to 1e-10 in f64).
//!
//! Blocking: the lookups touch one row of a table per code. X̂·B: row blocks of `ROWS`
//! rows (in parallel) are visited one column chunk of `COLS` and one group of `GROUP`
//! sub-spaces at a time, so the output chunk and the group's table chunks stay in L2;
//! a full chunk is summed in registers. X̂ᵀ·B: groups of sub-spaces (in parallel) each
//! stream B and the codes once into their own buckets.

use rayon::prelude::*;

use super::codebooks::Codebooks;
use crate::vector_code::widest_vector_code;
use crate::{Error, Real, Result};

/// f32 or f64 with the arithmetic the products need, and their inner loops compiled
/// for the widest vector instructions the CPU has (`vector_code.rs`).
pub trait Scalar: Real + Default + std::ops::AddAssign + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> {
    /// [`lookups`] for this type.
    fn lookups(out_block: &mut [Self], code_block: &[u8], tables: &[Self], shape: Shape);
    /// [`bucket_sums`] for this type.
    fn bucket_sums(buckets: &mut [Self], b: &[Self], codes: &[u8], groups: std::ops::Range<usize>, shape: Shape);
}

/// (M, ksub, m) of a product.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    n_sub: usize,
    ksub: usize,
    m: usize,
}

macro_rules! scalar {
    ($t:ty, $lookups:ident, $buckets:ident) => {
        widest_vector_code! {
            fn $lookups(out_block: &mut [$t], code_block: &[u8], tables: &[$t], shape: Shape) -> () {
                lookups::<$t>(out_block, code_block, tables, shape)
            }
        }
        widest_vector_code! {
            fn $buckets(buckets: &mut [$t], b: &[$t], codes: &[u8], groups: std::ops::Range<usize>, shape: Shape) -> () {
                bucket_sums::<$t>(buckets, b, codes, groups, shape)
            }
        }
        impl Scalar for $t {
            fn lookups(out_block: &mut [Self], code_block: &[u8], tables: &[Self], shape: Shape) {
                $lookups(out_block, code_block, tables, shape)
            }
            fn bucket_sums(buckets: &mut [Self], b: &[Self], codes: &[u8], groups: std::ops::Range<usize>, shape: Shape) {
                $buckets(buckets, b, codes, groups, shape)
            }
        }
    };
}

scalar!(f32, lookups_f32, bucket_sums_f32);
scalar!(f64, lookups_f64, bucket_sums_f64);

/// Rows of X̂·B per parallel task.
const ROWS: usize = 1024;
/// Columns of B per pass over a block.
const COLS: usize = 64;
/// Sub-spaces whose tables (or buckets) are used together (at most).
const GROUP: usize = 16;

fn check_b<T>(b: &[T], rows: usize, m: usize, what: &str) -> Result<()> {
    if rows.checked_mul(m) != Some(b.len()) {
        return Err(Error::input("B", format!("{} values are not {rows} x {m} ({what})", b.len())));
    }
    Ok(())
}

/// T_q[c, :] = Σ_t C_q[c, t] B[q·dsub + t, :] for every q (M × ksub × m), in f64 and
/// rounded once to T.
fn tables<T: Scalar>(books: &Codebooks<'_>, b: &[T], m: usize) -> Vec<T> {
    let (ksub, dsub) = (books.ksub(), books.dsub());
    let mut out = vec![T::default(); books.n_subspaces() * ksub * m];
    out.par_chunks_mut(ksub * m).enumerate().for_each_init(
        || vec![0.0f64; m],
        |acc, (q, table)| {
            let centroids = books.subspace(q);
            for (c, row) in table.chunks_exact_mut(m).enumerate() {
                acc.iter_mut().for_each(|a| *a = 0.0);
                for t in 0..dsub {
                    let w = f64::from(centroids[c * dsub + t]);
                    let b_row = &b[(q * dsub + t) * m..(q * dsub + t + 1) * m];
                    acc.iter_mut().zip(b_row).for_each(|(a, &v)| *a += w * v.to_f64());
                }
                row.iter_mut().zip(acc.iter()).for_each(|(r, &a)| *r = T::from_f64(a));
            }
        },
    );
    out
}

/// acc += row, elementwise (the inner loop of both algorithms).
#[inline(always)]
fn add_into<T: Scalar>(acc: &mut [T], row: &[T]) {
    for (a, &r) in acc.iter_mut().zip(row) {
        *a += r;
    }
}

/// The lookups of Algorithm 1 for one block of rows: out[i, :] += Σ_q T_q[code_iq, :],
/// a chunk of `COLS` columns and a group of sub-spaces at a time; a full chunk is summed
/// in registers.
#[inline(always)]
fn lookups<T: Scalar>(out_block: &mut [T], code_block: &[u8], tables: &[T], shape: Shape) {
    let Shape { n_sub, ksub, m } = shape;
    for j0 in (0..m).step_by(COLS) {
        let j1 = (j0 + COLS).min(m);
        for q0 in (0..n_sub).step_by(GROUP) {
            let q1 = (q0 + GROUP).min(n_sub);
            for (out_row, code) in out_block.chunks_exact_mut(m).zip(code_block.chunks_exact(n_sub)) {
                let rows = code[q0..q1].iter().enumerate().map(|(g, &c)| ((q0 + g) * ksub + usize::from(c)) * m);
                if j1 - j0 == COLS {
                    let acc: &mut [T; COLS] = (&mut out_row[j0..j1]).try_into().expect("a full chunk");
                    let mut sum = *acc;
                    for at in rows {
                        let row: &[T; COLS] = tables[at + j0..at + j1].try_into().expect("a full chunk");
                        for j in 0..COLS {
                            sum[j] += row[j];
                        }
                    }
                    *acc = sum;
                } else {
                    for at in rows {
                        add_into(&mut out_row[j0..j1], &tables[at + j0..at + j1]);
                    }
                }
            }
        }
    }
}

/// The bucket sums of Algorithm 2 for the sub-spaces `groups`: buckets[q − q0, c, :] +=
/// B[i, :] for every row i with code c in sub-space q. B and the codes stream once; the
/// group's buckets stay in cache.
#[inline(always)]
fn bucket_sums<T: Scalar>(buckets: &mut [T], b: &[T], codes: &[u8], groups: std::ops::Range<usize>, shape: Shape) {
    let Shape { n_sub, ksub, m } = shape;
    for (b_row, code) in b.chunks_exact(m).zip(codes.chunks_exact(n_sub)) {
        for (g, &c) in code[groups.clone()].iter().enumerate() {
            let at = (g * ksub + usize::from(c)) * m;
            add_into(&mut buckets[at..at + m], b_row);
        }
    }
}

/// X̂·B for codes (n × M) and B (d × m, row-major): n × m.
pub fn dot<T: Scalar>(books: &Codebooks<'_>, codes: &[u8], b: &[T], m: usize) -> Result<Vec<T>> {
    let n = books.check_codes(codes)?;
    check_b(b, books.dim(), m, "B must have d rows for X.dot(B)")?;
    let n_sub = books.n_subspaces();
    let mut out = vec![T::default(); n * m];
    if n == 0 || m == 0 {
        return Ok(out);
    }
    let tables = tables(books, b, m);
    let shape = Shape { n_sub, ksub: books.ksub(), m };
    out.par_chunks_mut(ROWS * m).zip(codes.par_chunks(ROWS * n_sub)).for_each(|(out_block, code_block)| {
        T::lookups(out_block, code_block, &tables, shape);
    });
    Ok(out)
}

/// X̂ᵀ·B for codes (n × M) and B (n × m, row-major): d × m.
pub fn tdot<T: Scalar>(books: &Codebooks<'_>, codes: &[u8], b: &[T], m: usize) -> Result<Vec<T>> {
    let n = books.check_codes(codes)?;
    check_b(b, n, m, "B must have n rows for X.T.dot(B)")?;
    let (n_sub, ksub, dsub) = (books.n_subspaces(), books.ksub(), books.dsub());
    let mut out = vec![T::default(); books.dim() * m];
    if m == 0 {
        return Ok(out);
    }
    // Groups small enough to give every thread a few tasks.
    let group = (n_sub / (4 * rayon::current_num_threads())).clamp(1, GROUP);
    out.par_chunks_mut(group * dsub * m).enumerate().for_each(|(g, out_group)| {
        let q0 = g * group;
        let q1 = (q0 + group).min(n_sub);
        // Bucket sums of B's rows by code, sub-spaces q0..q1 (q − q0, c, column).
        let mut buckets = vec![T::default(); (q1 - q0) * ksub * m];
        T::bucket_sums(&mut buckets, b, codes, q0..q1, Shape { n_sub, ksub, m });
        // (X̂ᵀB)[q·dsub + t, :] = Σ_c C_q[c, t] D_q[c, :], in f64.
        let mut acc = vec![0.0f64; m];
        for q in q0..q1 {
            let centroids = books.subspace(q);
            for t in 0..dsub {
                acc.iter_mut().for_each(|a| *a = 0.0);
                for c in 0..ksub {
                    let w = f64::from(centroids[c * dsub + t]);
                    let bucket = &buckets[((q - q0) * ksub + c) * m..((q - q0) * ksub + c + 1) * m];
                    acc.iter_mut().zip(bucket).for_each(|(a, &v)| *a += w * v.to_f64());
                }
                let row = &mut out_group[((q - q0) * dsub + t) * m..((q - q0) * dsub + t + 1) * m];
                row.iter_mut().zip(&acc).for_each(|(r, &a)| *r = T::from_f64(a));
            }
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pq::{decode, encode, train, TrainOptions};
    use crate::rng::SplitMix64;

    /// Both products equal the dense products with the decoded matrix, for shapes where
    /// n, m and M are not multiples of the blocks, and for no rows at all.
    #[test]
    fn products_equal_dense_products_with_the_decoded_matrix() {
        let mut rng = SplitMix64::new(4);
        for &(n, d, n_sub, bits, m) in &[(300, 6, 3, 2, 1), (2100, 40, 20, 4, 70), (700, 24, 8, 8, 130), (0, 6, 2, 3, 5)] {
            let rows = n.max(1 << bits);
            let x: Vec<f64> = (0..rows * d).map(|_| rng.next_f64() - 0.5).collect();
            let trained = train(&x, d, n_sub, bits, &TrainOptions { n_iter: 3, max_points_per_centroid: 64, seed: 1 }).unwrap();
            let books = Codebooks::new(&trained.codebooks, n_sub, 1 << bits, d / n_sub).unwrap();
            let codes = encode(&books, &x[..n * d]).unwrap();
            let xh: Vec<f64> = decode(&books, &codes).unwrap().into_iter().map(f64::from).collect();
            let b: Vec<f64> = (0..d * m).map(|_| rng.next_f64() - 0.5).collect();
            let got = dot(&books, &codes, &b, m).unwrap();
            for i in 0..n {
                for j in 0..m {
                    let want: f64 = (0..d).map(|t| xh[i * d + t] * b[t * m + j]).sum();
                    assert!((got[i * m + j] - want).abs() <= 1e-10 * (1.0 + want.abs()), "dot ({n},{d},{m}) [{i},{j}]");
                }
            }
            let g: Vec<f64> = (0..n * m).map(|_| rng.next_f64() - 0.5).collect();
            let got = tdot(&books, &codes, &g, m).unwrap();
            for t in 0..d {
                for j in 0..m {
                    let want: f64 = (0..n).map(|i| xh[i * d + t] * g[i * m + j]).sum();
                    assert!((got[t * m + j] - want).abs() <= 1e-10 * (1.0 + want.abs()), "tdot ({n},{d},{m}) [{t},{j}]");
                }
            }
        }
    }
}
