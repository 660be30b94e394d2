//! Matrix products with the decoded matrix X̂ (n × d) without forming it.
//!
//! X̂·B (B: d × m), the paper's Algorithm 1: per sub-space q a table T_q = C_q B_q
//! (ksub × m; C_q the centroids, B_q the dsub rows of B of that sub-space), then
//!   (X̂B)_i = Σ_q T_q[code_iq]:  M·ksub·dsub·m multiply-adds and n·M·m adds.
//! X̂ᵀ·B (B: n × m), Algorithm 2: per sub-space the bucket sums D_q[c] = Σ_{i: code_iq = c} B_i,
//! then (X̂ᵀB)_{q·dsub + t} = Σ_c C_q[c, t] D_q[c]:  n·M·m adds and M·ksub·dsub·m
//! multiply-adds per block of rows (see below). Both are exact sums of the same
//! products as X̂·B formed densely, in another order (tested against the decoded matrix
//! to 1e-10 in f64).
//!
//! Blocking (measured at the paper's shape with `cargo bench --bench pq`). Both products
//! take B's columns in chunks of one cache line (16 float32 or 8 float64 columns; fewer
//! for a thin B), so that one sub-space's table or buckets for a chunk (256 × 64 bytes =
//! 16 KB) fit in L1 and a group of them in L2:
//! * X̂·B: per chunk, the tables of every sub-space (in parallel, on huge pages: the
//!   lookups jump between a group's tables at random, and with 4 KB pages nearly every
//!   one missed the TLB), then blocks of rows (in parallel); within a block, sub-spaces a
//!   group at a time (the group's tables in L2) and rows four at a time, their sums in
//!   registers.
//! * X̂ᵀ·B: groups of sub-spaces in parallel. Per block of rows the group's codes are
//!   transposed (a sub-space's codes contiguous) and per chunk B's rows copied
//!   contiguous; per sub-space the block's bucket sums are formed in L1 and folded into
//!   the output at once by the centroid products. The M × ksub × m buckets of the whole
//!   matrix (64 MB at the paper's shape) are never formed. The bucket additions are
//!   read-modify-writes at random rows of L1 and bound the product: about 1.5 ns per
//!   64-byte row on this project's reference machine, against a few tenths of a ns per
//!   multiply-add line in a BLAS GEMM, which is why X̂ᵀ·B gains far less over dense
//!   BLAS than its 1/dsub operation count suggests (BENCHMARKS.md).
//!
//! Results depend neither on the thread count nor on the group sizes: every output
//! entry is summed in one fixed order (sub-spaces in order for X̂·B; rows in order within
//! a block, blocks in order, for X̂ᵀ·B).

use std::ops::Range;

use rayon::prelude::*;

use super::codebooks::Codebooks;
use crate::huge_pages;
use crate::vector_code::widest_vector_code;
use crate::{Error, Real, Result};

/// f32 or f64 with the arithmetic the products need; each type picks the width of its
/// column chunks (compiled widths, narrowest that holds m, else the widest).
pub trait Scalar:
    Real + Default + std::ops::AddAssign + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
    /// X̂·B added into `out` (n × m).
    #[doc(hidden)]
    fn dot_into(books: &Codebooks<'_>, codes: &[u8], b: &[Self], m: usize, out: &mut [Self]);
    /// X̂ᵀ·B added into `out` (d × m).
    #[doc(hidden)]
    fn tdot_into(books: &Codebooks<'_>, codes: &[u8], b: &[Self], m: usize, out: &mut [Self]);
}

macro_rules! scalar {
    ($t:ty, [$($width:literal),+]) => {
        impl Scalar for $t {
            fn dot_into(books: &Codebooks<'_>, codes: &[u8], b: &[Self], m: usize, out: &mut [Self]) {
                match chunk_width(m, &[$($width),+]) {
                    $($width => dot_chunks::<$t, $width>(books, codes, b, m, out),)+
                    _ => unreachable!("chunk_width returns a compiled width"),
                }
            }
            fn tdot_into(books: &Codebooks<'_>, codes: &[u8], b: &[Self], m: usize, out: &mut [Self]) {
                match chunk_width(m, &[$($width),+]) {
                    $($width => tdot_chunks::<$t, $width>(books, codes, b, m, out),)+
                    _ => unreachable!("chunk_width returns a compiled width"),
                }
            }
        }
    };
}

scalar!(f32, [1, 8, 16]);
scalar!(f64, [1, 4, 8]);

/// The narrowest of `widths` (ascending) that holds m columns, else the widest.
fn chunk_width(m: usize, widths: &[usize]) -> usize {
    widths.iter().copied().find(|&w| w >= m).unwrap_or(widths[widths.len() - 1])
}

/// Rows of X̂·B per parallel task (the task's output chunk stays in L2).
const DOT_ROWS: usize = 4096;
/// Bytes of the tables one group of sub-spaces uses in X̂·B (half of L2).
const DOT_GROUP_BYTES: usize = 1 << 20;
/// Rows of X̂·B summed together (independent sums in registers).
const TILE: usize = 4;
/// Rows per block of X̂ᵀ·B: the block's chunk of B and transposed codes stay in L2, and
/// the centroid products are paid once per block.
const TDOT_ROWS: usize = 16384;
/// Sub-spaces per X̂ᵀ·B task, at most: every task streams all of B once.
const TDOT_GROUP: usize = 64;
/// Sub-spaces whose buckets one pass over a block's rows fills together (their buckets
/// share L1; each row of B is loaded once for all of them). Measured at the paper's
/// shape: 2 is 20% faster than 1; 3 (48 KB of buckets, all of L1) and 4 with half-line
/// chunks are slower.
const PASS: usize = 2;

/// A chunk of 256 entries (codes beyond ksub stay zero), one per code.
type Entries<T, const W: usize> = [[T; W]; 256];

fn check_b<T>(b: &[T], rows: usize, m: usize, what: &str) -> Result<()> {
    if rows.checked_mul(m) != Some(b.len()) {
        return Err(Error::input("B", format!("{} values are not {rows} x {m} ({what})", b.len())));
    }
    Ok(())
}

/// X̂·B for codes (n × M) and B (d × m, row-major): n × m.
pub fn dot<T: Scalar>(books: &Codebooks<'_>, codes: &[u8], b: &[T], m: usize) -> Result<Vec<T>> {
    let n = books.check_codes(codes)?;
    check_b(b, books.dim(), m, "B must have d rows for X.dot(B)")?;
    let mut out = huge_pages::advised_vec(n * m, T::default());
    if n > 0 && m > 0 {
        T::dot_into(books, codes, b, m, &mut out);
    }
    Ok(out)
}

/// X̂ᵀ·B for codes (n × M) and B (n × m, row-major): d × m.
pub fn tdot<T: Scalar>(books: &Codebooks<'_>, codes: &[u8], b: &[T], m: usize) -> Result<Vec<T>> {
    let n = books.check_codes(codes)?;
    check_b(b, n, m, "B must have n rows for X.T.dot(B)")?;
    let mut out = huge_pages::advised_vec(books.dim() * m, T::default());
    if n > 0 && m > 0 {
        T::tdot_into(books, codes, b, m, &mut out);
    }
    Ok(out)
}

/// X̂·B ([`dot`]) or, `transposed`, X̂ᵀ·B ([`tdot`]) for B of `m` columns, B checked for
/// NaN and infinity first: the products as a caller with arbitrary B asks for them.
pub fn times<T: Scalar>(books: &Codebooks<'_>, codes: &[u8], b: &[T], m: usize, transposed: bool) -> Result<Vec<T>> {
    crate::batch::check_finite_rows(b, m, "B")?;
    if transposed {
        tdot(books, codes, b, m)
    } else {
        dot(books, codes, b, m)
    }
}

/// Algorithm 1, chunk by chunk of W columns.
fn dot_chunks<T: Scalar, const W: usize>(books: &Codebooks<'_>, codes: &[u8], b: &[T], m: usize, out: &mut [T]) {
    let (n_sub, ksub, dsub) = (books.n_subspaces(), books.ksub(), books.dsub());
    let group = (DOT_GROUP_BYTES / (ksub * W * std::mem::size_of::<T>())).clamp(1, n_sub);
    // Huge pages: the lookups jump between the group's tables (MBs) at random.
    let mut tables = huge_pages::HugeBuffer::filled(n_sub, [[T::default(); W]; 256]);
    for j0 in (0..m).step_by(W) {
        let cols = j0..(j0 + W).min(m);
        tables.par_iter_mut().enumerate().for_each(|(q, table)| {
            build_table::<T, W>(table, books.subspace(q), dsub, &b[q * dsub * m..(q + 1) * dsub * m], m, cols.clone());
        });
        let chunk = Chunk { m, cols };
        out.par_chunks_mut(DOT_ROWS * m).zip(codes.par_chunks(DOT_ROWS * n_sub)).for_each(|(out_block, code_block)| {
            lookups::<T, W>(out_block, code_block, &tables, group, &chunk);
        });
    }
}

/// Where a chunk of columns lies in B and the output (rows of m values).
struct Chunk {
    m: usize,
    cols: Range<usize>,
}

widest_vector_code! {
    /// T_q[c, :] = Σ_t C_q[c, t] B[q·dsub + t, cols] for one sub-space (`b_rows` are its
    /// dsub rows of B), summed in f64 and rounded once; columns beyond `cols` and codes
    /// beyond ksub are zero.
    fn build_table[T: Scalar, const W: usize][T, W](table: &mut Entries<T, W>, centroids: &[f32], dsub: usize, b_rows: &[T], m: usize, cols: Range<usize>) -> () {
        for (entry, centroid) in table.iter_mut().zip(centroids.chunks_exact(dsub)) {
            let mut acc = [0.0f64; W];
            for (t, &c) in centroid.iter().enumerate() {
                let row = &b_rows[t * m + cols.start..t * m + cols.end];
                for (a, &v) in acc.iter_mut().zip(row) {
                    *a += f64::from(c) * v.to_f64();
                }
            }
            for (e, a) in entry.iter_mut().zip(acc) {
                *e = T::from_f64(a);
            }
        }
    }
}

widest_vector_code! {
    /// The lookups of Algorithm 1 for one block of rows and one chunk of columns:
    /// out[i, cols] += Σ_q T_q[code_iq], `group` sub-spaces and `TILE` rows at a time.
    fn lookups[T: Scalar, const W: usize][T, W](out_block: &mut [T], code_block: &[u8], tables: &[Entries<T, W>], group: usize, chunk: &Chunk) -> () {
        let n_sub = tables.len();
        let rows = code_block.len() / n_sub;
        for q0 in (0..n_sub).step_by(group) {
            let group = &tables[q0..(q0 + group).min(n_sub)];
            let mut i = 0;
            while i + TILE <= rows {
                lookup_rows::<T, W, TILE>(out_block, code_block, group, q0, i, chunk);
                i += TILE;
            }
            for i in i..rows {
                lookup_rows::<T, W, 1>(out_block, code_block, group, q0, i, chunk);
            }
        }
    }
}

/// Rows i..i+R of a block: their chunks of the output, plus the table entries of the
/// sub-spaces `group` (starting at q0), summed in registers in sub-space order.
#[inline(always)]
fn lookup_rows<T: Scalar, const W: usize, const R: usize>(
    out_block: &mut [T],
    code_block: &[u8],
    group: &[Entries<T, W>],
    q0: usize,
    i: usize,
    chunk: &Chunk,
) {
    let n_sub = code_block.len() / (out_block.len() / chunk.m);
    let cols = &chunk.cols;
    let mut acc = [[T::default(); W]; R];
    for (r, a) in acc.iter_mut().enumerate() {
        let at = (i + r) * chunk.m;
        copy_prefix(a, &out_block[at + cols.start..at + cols.end]);
    }
    let codes: [&[u8]; R] =
        std::array::from_fn(|r| &code_block[(i + r) * n_sub + q0..(i + r) * n_sub + q0 + group.len()]);
    for (g, table) in group.iter().enumerate() {
        for (a, code) in acc.iter_mut().zip(&codes) {
            let entry = &table[usize::from(code[g])];
            for j in 0..W {
                a[j] += entry[j];
            }
        }
    }
    for (r, a) in acc.iter().enumerate() {
        let at = (i + r) * chunk.m;
        store_prefix(&mut out_block[at + cols.start..at + cols.end], a);
    }
}

/// dst = src padded with zeros (a whole copy when the chunk is full).
#[inline(always)]
fn copy_prefix<T: Scalar, const W: usize>(dst: &mut [T; W], src: &[T]) {
    match <&[T; W]>::try_from(src) {
        Ok(full) => *dst = *full,
        Err(_) => {
            dst[..src.len()].copy_from_slice(src);
            dst[src.len()..].fill(T::default());
        }
    }
}

/// dst = src[..dst.len()] (a whole copy when the chunk is full).
#[inline(always)]
fn store_prefix<T: Copy, const W: usize>(dst: &mut [T], src: &[T; W]) {
    match <&mut [T; W]>::try_from(&mut *dst) {
        Ok(full) => *full = *src,
        Err(_) => dst.copy_from_slice(&src[..dst.len()]),
    }
}

/// Algorithm 2 by groups of sub-spaces (in parallel), blocks of rows and chunks of W
/// columns.
fn tdot_chunks<T: Scalar, const W: usize>(books: &Codebooks<'_>, codes: &[u8], b: &[T], m: usize, out: &mut [T]) {
    let (n_sub, dsub) = (books.n_subspaces(), books.dsub());
    let n = codes.len() / n_sub;
    // Enough tasks to keep every thread busy; the results do not depend on it.
    let group = n_sub.div_ceil(4 * rayon::current_num_threads()).clamp(1, TDOT_GROUP);
    out.par_chunks_mut(group * dsub * m).enumerate().for_each(|(task, out_group)| {
        let subspaces = task * group..((task + 1) * group).min(n_sub);
        let mut codes_t = vec![0u8; subspaces.len() * TDOT_ROWS.min(n)];
        let mut b_block = vec![[T::default(); W]; TDOT_ROWS.min(n)];
        let mut buckets: Box<[Entries<T, W>; PASS]> = Box::new([[[T::default(); W]; 256]; PASS]);
        for r0 in (0..n).step_by(TDOT_ROWS) {
            let rows = r0..(r0 + TDOT_ROWS).min(n);
            let codes_t = &mut codes_t[..subspaces.len() * rows.len()];
            transpose_codes(&codes[rows.start * n_sub..rows.end * n_sub], n_sub, subspaces.clone(), codes_t);
            for j0 in (0..m).step_by(W) {
                let cols = j0..(j0 + W).min(m);
                let b_block = &mut b_block[..rows.len()];
                for (dst, i) in b_block.iter_mut().zip(rows.clone()) {
                    copy_prefix(dst, &b[i * m + cols.start..i * m + cols.end]);
                }
                let chunk = Chunk { m, cols };
                bucket_block::<T, W>(out_group, codes_t, b_block, &mut buckets, books, subspaces.clone(), &chunk);
            }
        }
    });
}

/// The codes of `subspaces` for a block of rows (rows × M), one sub-space after the
/// other (|subspaces| × rows). Tiles of `TRANSPOSE` rows: the tile's code lines stay in
/// L1 while each sub-space's codes are written as whole lines.
fn transpose_codes(code_block: &[u8], n_sub: usize, subspaces: Range<usize>, out: &mut [u8]) {
    const TRANSPOSE: usize = 64;
    let rows = code_block.len() / n_sub;
    for i0 in (0..rows).step_by(TRANSPOSE) {
        let tile = &code_block[i0 * n_sub..(i0 + TRANSPOSE).min(rows) * n_sub];
        for (g, q) in subspaces.clone().enumerate() {
            let dst = &mut out[g * rows + i0..g * rows + i0 + tile.len() / n_sub];
            for (d, code) in dst.iter_mut().zip(tile.chunks_exact(n_sub)) {
                *d = code[q];
            }
        }
    }
}

widest_vector_code! {
    /// For each sub-space q of a task and one block of rows: the bucket sums
    /// D[c] = Σ_{i: code_iq = c} B[i, cols] in L1, then out[q·dsub + t, cols] +=
    /// Σ_c C_q[c, t] D[c]. Sub-spaces go `PASS` at a time, so that each row of B, once
    /// loaded, is added to that many buckets.
    fn bucket_block[T: Scalar, const W: usize][T, W](
        out_group: &mut [T],
        codes_t: &[u8],
        b_block: &[[T; W]],
        buckets: &mut [Entries<T, W>; PASS],
        books: &Codebooks<'_>,
        subspaces: Range<usize>,
        chunk: &Chunk,
    ) -> () {
        let mut g = 0;
        while g + PASS <= subspaces.len() {
            bucket_sums::<T, W, PASS>(buckets, codes_t, b_block, g);
            for (p, set) in buckets.iter().enumerate() {
                fold_subspace(out_group, g + p, set, books.subspace(subspaces.start + g + p), books.dsub(), chunk);
            }
            g += PASS;
        }
        for g in g..subspaces.len() {
            let [set, ..] = buckets;
            bucket_sums::<T, W, 1>(std::array::from_mut(set), codes_t, b_block, g);
            fold_subspace(out_group, g, set, books.subspace(subspaces.start + g), books.dsub(), chunk);
        }
    }
}

/// The bucket sums of the task's sub-spaces g..g+P over one block of rows, one set of
/// buckets each.
#[inline(always)]
fn bucket_sums<T: Scalar, const W: usize, const P: usize>(
    sets: &mut [Entries<T, W>; P],
    codes_t: &[u8],
    b_block: &[[T; W]],
    g: usize,
) {
    let rows = b_block.len();
    let codes: [&[u8]; P] = std::array::from_fn(|p| &codes_t[(g + p) * rows..(g + p + 1) * rows]);
    sets.iter_mut().flatten().for_each(|bucket| *bucket = [T::default(); W]);
    for (i, row) in b_block.iter().enumerate() {
        for (set, code) in sets.iter_mut().zip(&codes) {
            let bucket = &mut set[usize::from(code[i])];
            for j in 0..W {
                bucket[j] += row[j];
            }
        }
    }
}

/// out[g·dsub + t, cols] += Σ_c C[c, t] D[c] for the task's sub-space g, four output
/// rows at a time.
#[inline(always)]
fn fold_subspace<T: Scalar, const W: usize>(
    out_group: &mut [T],
    g: usize,
    buckets: &Entries<T, W>,
    centroids: &[f32],
    dsub: usize,
    chunk: &Chunk,
) {
    let mut t = 0;
    while t + 4 <= dsub {
        fold::<T, W, 4>(out_group, g * dsub + t, buckets, centroids, t, dsub, chunk);
        t += 4;
    }
    for t in t..dsub {
        fold::<T, W, 1>(out_group, g * dsub + t, buckets, centroids, t, dsub, chunk);
    }
}

/// out[row + k, cols] += Σ_c C[c, t + k] D[c] for k < K: each bucket is loaded once for
/// K output rows.
#[inline(always)]
fn fold<T: Scalar, const W: usize, const K: usize>(
    out_group: &mut [T],
    row: usize,
    buckets: &Entries<T, W>,
    centroids: &[f32],
    t: usize,
    dsub: usize,
    chunk: &Chunk,
) {
    let mut acc = [[T::default(); W]; K];
    for (bucket, centroid) in buckets.iter().zip(centroids.chunks_exact(dsub)) {
        let weights: [T; K] = std::array::from_fn(|k| T::from_f64(f64::from(centroid[t + k])));
        for k in 0..K {
            for j in 0..W {
                acc[k][j] += weights[k] * bucket[j];
            }
        }
    }
    let cols = &chunk.cols;
    for (k, a) in acc.iter().enumerate() {
        let at = (row + k) * chunk.m;
        for (o, &v) in out_group[at + cols.start..at + cols.end].iter_mut().zip(a) {
            *o += v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pq::{decode, encode, train, TrainOptions};
    use crate::rng::SplitMix64;

    /// Both products equal the dense products with the decoded matrix, for shapes where
    /// n, m and M are not multiples of the blocks, and for no rows at all.
    /// `times` is `dot` or `tdot`, and refuses a B with NaN or infinity, naming it.
    #[test]
    fn times_checks_b_and_picks_the_product() {
        let values: Vec<f32> = (0..2 * 4 * 3).map(|v| v as f32 / 8.0).collect();
        let books = Codebooks::new(&values, 2, 4, 3).unwrap();
        let codes = [0u8, 1, 2, 3, 3, 0];
        let b: Vec<f64> = (0..6 * 2).map(|v| v as f64 - 5.0).collect();
        assert_eq!(times(&books, &codes, &b, 2, false).unwrap(), dot(&books, &codes, &b, 2).unwrap());
        let bt: Vec<f64> = (0..3 * 2).map(|v| v as f64).collect();
        assert_eq!(times(&books, &codes, &bt, 2, true).unwrap(), tdot(&books, &codes, &bt, 2).unwrap());
        let mut bad = b.clone();
        bad[3] = f64::NAN;
        let err = times(&books, &codes, &bad, 2, false).unwrap_err().to_string();
        assert_eq!(err, "B: contains NaN or infinity (row 1, column 1)");
    }

    #[test]
    fn products_equal_dense_products_with_the_decoded_matrix() {
        let mut rng = SplitMix64::new(4);
        // The last shapes span several row blocks of both products and a partial chunk.
        for &(n, d, n_sub, bits, m) in &[
            (300, 6, 3, 2, 1),
            (2100, 40, 20, 4, 70),
            (700, 24, 8, 8, 130),
            (0, 6, 2, 3, 5),
            (2 * TDOT_ROWS + 5, 6, 3, 8, 21),
        ] {
            let rows = n.max(1 << bits);
            let x: Vec<f64> = (0..rows * d).map(|_| rng.next_f64() - 0.5).collect();
            let trained =
                train(&x, d, n_sub, bits, &TrainOptions { n_iter: 3, max_points_per_centroid: 64, seed: 1 }, None)
                    .unwrap()
                    .unwrap();
            let books = Codebooks::new(&trained.codebooks, n_sub, 1 << bits, d / n_sub).unwrap();
            let codes = encode(&books, &x[..n * d], None).unwrap().unwrap();
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
                    assert!(
                        (got[t * m + j] - want).abs() <= 1e-10 * (1.0 + want.abs()),
                        "tdot ({n},{d},{m}) [{t},{j}]"
                    );
                }
            }
        }
    }

    /// The products give the same bits on 1, 2 and 3 threads (the groups of sub-spaces
    /// change with the thread count, the order of every sum does not), in f32 and f64.
    #[test]
    fn products_do_not_depend_on_the_thread_count() {
        let mut rng = SplitMix64::new(9);
        let (n, d, n_sub, m) = (TDOT_ROWS + DOT_ROWS + 3, 24, 12, 19);
        let x: Vec<f32> = (0..n * d).map(|_| rng.next_f64() as f32).collect();
        let trained = train(&x, d, n_sub, 8, &TrainOptions { n_iter: 2, max_points_per_centroid: 16, seed: 3 }, None)
            .unwrap()
            .unwrap();
        let books = Codebooks::new(&trained.codebooks, n_sub, 256, d / n_sub).unwrap();
        let codes = encode(&books, &x, None).unwrap().unwrap();
        let w: Vec<f32> = (0..d * m).map(|_| rng.next_f64() as f32 - 0.5).collect();
        let g: Vec<f32> = (0..n * m).map(|_| rng.next_f64() as f32 - 0.5).collect();
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let w64: Vec<f64> = w.iter().map(|&v| f64::from(v)).collect();
                let g64: Vec<f64> = g.iter().map(|&v| f64::from(v)).collect();
                (
                    dot(&books, &codes, &w, m).unwrap(),
                    tdot(&books, &codes, &g, m).unwrap(),
                    dot(&books, &codes, &w64, m).unwrap(),
                    tdot(&books, &codes, &g64, m).unwrap(),
                )
            })
        };
        let one = run(1);
        for threads in [2, 3] {
            assert!(run(threads) == one, "{threads} threads");
        }
    }
}
