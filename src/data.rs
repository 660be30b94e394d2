//! Design matrices: the training examples x_i as rows, behind one trait so that every
//! solver runs unchanged on dense row-major `f32`/`f64` arrays and on CSR matrices
//! (scipy's layout, `i32` or `i64` indices) without densifying or copying them.
//!
//! Solvers read one row at a time through [`Design::row`], which hands out the caller's
//! own slices (dense `f64`; CSR with `f64` values, `i32` indices and no explicit zeros)
//! or the row converted into a caller-owned [`RowBuf`] (dense `f32`, other CSR).
//! Converting costs O(nnz) per call and lets every inner product run on `f64` data.

use crate::linalg::{axpy, dot, dot4};
use crate::real::Real;
use crate::solvers::Monitor;
use crate::{Error, Result};

/// One example x_i in `f64`, dense or as sorted (index, value) pairs.
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    Dense(&'a [f64]),
    Sparse { indices: &'a [u32], values: &'a [f64] },
}

/// [⟨x, w_0⟩, …, ⟨x, w_{K−1}⟩] for a sparse x in one pass over its entries (the rows
/// of w are gathered at x's indices); each sum runs in the order of x's entries.
#[inline]
fn sparse_dots<const K: usize>(indices: &[u32], values: &[f64], ws: [&[f64]; K]) -> [f64; K] {
    let mut s = [0.0; K];
    for (&j, &v) in indices.iter().zip(values) {
        for (sk, wk) in s.iter_mut().zip(&ws) {
            *sk += v * wk[j as usize];
        }
    }
    s
}

impl Row<'_> {
    /// ⟨x, w⟩ for a dense `w` of length n_features (or longer: extra entries unused).
    #[inline]
    pub fn dot(&self, w: &[f64]) -> f64 {
        match *self {
            Row::Dense(x) => dot(x, &w[..x.len()]),
            Row::Sparse { indices, values } => sparse_dots(indices, values, [w])[0],
        }
    }

    /// out\[t\] = ⟨x, w_c⟩ for c = classes\[t\], where w_c = w[c·stride..] is row c of a
    /// row-major weight matrix (rows at least as wide as x). Four rows at a time share
    /// one pass over x, and for a sparse x the last one to three rows share one too;
    /// every value equals [`Row::dot`] with that row bit for bit.
    pub fn dot_rows(&self, w: &[f64], stride: usize, classes: &[u32], out: &mut [f64]) {
        assert_eq!(classes.len(), out.len());
        let row = |c: u32| &w[c as usize * stride..];
        let (blocks, rest) = classes.split_at(classes.len() - classes.len() % 4);
        let (out_blocks, out_rest) = out.split_at_mut(blocks.len());
        for (cs, o) in blocks.chunks_exact(4).zip(out_blocks.chunks_exact_mut(4)) {
            let ws = [row(cs[0]), row(cs[1]), row(cs[2]), row(cs[3])];
            let v = match *self {
                Row::Dense(x) => dot4(x, ws.map(|w| &w[..x.len()])),
                Row::Sparse { indices, values } => sparse_dots(indices, values, ws),
            };
            o.copy_from_slice(&v);
        }
        match (*self, rest) {
            (Row::Sparse { indices, values }, &[a, b]) => {
                out_rest.copy_from_slice(&sparse_dots(indices, values, [row(a), row(b)]))
            }
            (Row::Sparse { indices, values }, &[a, b, c]) => {
                out_rest.copy_from_slice(&sparse_dots(indices, values, [row(a), row(b), row(c)]))
            }
            _ => rest.iter().zip(out_rest).for_each(|(&c, o)| *o = self.dot(row(c))),
        }
    }

    /// w += alpha · x.
    #[inline]
    pub fn axpy_into(&self, alpha: f64, w: &mut [f64]) {
        match *self {
            Row::Dense(x) => axpy(alpha, x, &mut w[..x.len()]),
            Row::Sparse { indices, values } => {
                indices.iter().zip(values).for_each(|(&j, &v)| w[j as usize] += alpha * v)
            }
        }
    }

    /// ‖x‖².
    pub fn sq_norm(&self) -> f64 {
        match *self {
            Row::Dense(x) => dot(x, x),
            Row::Sparse { values, .. } => dot(values, values),
        }
    }
}

/// Scratch space a [`Design`] converts rows into.
#[derive(Debug, Default, Clone)]
pub struct RowBuf {
    values: Vec<f64>,
    indices: Vec<u32>,
}

impl RowBuf {
    pub fn new() -> Self {
        Self::default()
    }

    /// The dense values resized to `len`, for a design that writes its rows itself
    /// (the product-quantized rows decode into it).
    pub(crate) fn dense_mut(&mut self, len: usize) -> &mut [f64] {
        self.values.resize(len, 0.0);
        &mut self.values
    }
}

/// A read-only n × d matrix of examples.
pub trait Design: Sync {
    fn n_rows(&self) -> usize;
    fn n_features(&self) -> usize;
    /// Row `i` in `f64`, borrowed from the matrix or converted into `buf`.
    fn row<'s>(&'s self, i: usize, buf: &'s mut RowBuf) -> Row<'s>;
    /// Rows `rows` as one dense row-major `f64` block (borrowed, or converted into
    /// `buf`), for blocked matrix products; `None` for sparse designs.
    fn dense_block<'s>(&'s self, _rows: std::ops::Range<usize>, _buf: &'s mut RowBuf) -> Option<&'s [f64]> {
        None
    }
    /// Number of stored entries of row `i`.
    fn row_nnz(&self, i: usize) -> usize;
    /// Starts loading row `i` into the cache (a hint; rows visited in a shuffled order
    /// are too scattered for the hardware prefetcher).
    fn prefetch_row(&self, _i: usize) {}
    /// The codebooks and codes of product-quantized rows (`crate::pq::CodedRows`), for
    /// products computed on the codes by table look-ups instead of decoding every row;
    /// `None` for other designs.
    fn coded(&self) -> Option<(&crate::pq::Codebooks<'_>, &[u8])> {
        None
    }
}

/// Work that runs on X, generic over the design's type: a fit, a round, a product. The
/// caller (the bindings) builds the design from its storage with [`DesignJob::on_dense`],
/// [`DesignJob::on_csr`] or [`DesignJob::on_coded`], which check X first.
pub trait DesignJob: Send + Sized {
    type Output: Send;
    /// True for jobs that detect non-finite rows of X from what they compute (a round
    /// that reads a part of X, a product whose every output entry reads a whole row or
    /// column): a pass over X would cost as much as the job.
    const CHECKS_X_ITSELF: bool = false;
    fn run<D: Design>(self, x: &D, monitor: &mut dyn Monitor) -> Result<Self::Output>;

    /// The job on the dense row-major n × d values `data`, checked for NaN and infinity
    /// first (unless [`Self::CHECKS_X_ITSELF`]).
    fn on_dense<T: Real>(self, data: &[T], n: usize, d: usize, monitor: &mut dyn Monitor) -> Result<Self::Output> {
        if !Self::CHECKS_X_ITSELF {
            crate::batch::check_finite_rows(data, d, "X")?;
        }
        self.run(&DenseRows::new(data, n, d)?, monitor)
    }

    /// The job on a CSR matrix of `d` columns ([`CsrRows::new`]), its values checked for
    /// NaN and infinity first (unless [`Self::CHECKS_X_ITSELF`]).
    fn on_csr<T: Real, I: CsrIndex>(
        self,
        (indptr, indices, data): (&[I], &[I], &[T]),
        d: usize,
        monitor: &mut dyn Monitor,
    ) -> Result<Self::Output> {
        let design = CsrRows::new(indptr, indices, data, d)?;
        if !Self::CHECKS_X_ITSELF {
            design.check_finite()?;
        }
        self.run(&design, monitor)
    }

    /// The job on product-quantized rows (`CodedRows::new`: the codebooks are finite,
    /// checked when built; the codes are indices).
    fn on_coded(
        self,
        books: crate::pq::Codebooks<'_>,
        codes: &[u8],
        monitor: &mut dyn Monitor,
    ) -> Result<Self::Output> {
        self.run(&crate::pq::CodedRows::new(books, codes)?, monitor)
    }
}

/// A dense row-major n × d matrix.
#[derive(Debug, Clone, Copy)]
pub struct DenseRows<'a, T> {
    data: &'a [T],
    n_features: usize,
}

impl<'a, T: Real> DenseRows<'a, T> {
    pub fn new(data: &'a [T], n_rows: usize, n_features: usize) -> Result<Self> {
        if n_rows.checked_mul(n_features) != Some(data.len()) {
            return Err(Error::input("X", format!("buffer of {} values is not {n_rows} x {n_features}", data.len())));
        }
        if n_features == 0 {
            return Err(Error::input("X", "needs at least one feature"));
        }
        Ok(Self { data, n_features })
    }

    fn slice(&self, i: usize) -> &'a [T] {
        &self.data[i * self.n_features..(i + 1) * self.n_features]
    }
}

impl<T: Real> Design for DenseRows<'_, T> {
    fn n_rows(&self) -> usize {
        self.data.len() / self.n_features
    }
    fn n_features(&self) -> usize {
        self.n_features
    }
    fn row<'s>(&'s self, i: usize, buf: &'s mut RowBuf) -> Row<'s> {
        Row::Dense(as_f64(self.slice(i), buf))
    }
    fn dense_block<'s>(&'s self, rows: std::ops::Range<usize>, buf: &'s mut RowBuf) -> Option<&'s [f64]> {
        Some(as_f64(&self.data[rows.start * self.n_features..rows.end * self.n_features], buf))
    }
    fn row_nnz(&self, _i: usize) -> usize {
        self.n_features
    }
    fn prefetch_row(&self, i: usize) {
        crate::vector_code::prefetch_lines(self.slice(i));
    }
}

/// `x` as `f64`: borrowed when it already is, else converted into `buf`.
fn as_f64<'s, T: Real>(x: &'s [T], buf: &'s mut RowBuf) -> &'s [f64] {
    if let Some(x64) = T::as_f64_slice(x) {
        return x64;
    }
    buf.values.clear();
    buf.values.extend(x.iter().map(|v| v.to_f64()));
    &buf.values
}

/// An index type of a CSR matrix (scipy uses `i32` or `i64`).
pub trait CsrIndex: Copy + Send + Sync + 'static {
    fn to_usize(self) -> Option<usize>;
    /// The slice read as `u32` when the type has its layout (lets rows be borrowed;
    /// callers have checked that the entries are non-negative).
    fn as_u32_slice(s: &[Self]) -> Option<&[u32]>;
}

impl CsrIndex for i32 {
    #[inline]
    fn to_usize(self) -> Option<usize> {
        usize::try_from(self).ok()
    }
    #[inline]
    fn as_u32_slice(s: &[Self]) -> Option<&[u32]> {
        // SAFETY: i32 and u32 have the same size and alignment, and every bit pattern
        // is a valid u32.
        Some(unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u32>(), s.len()) })
    }
}

impl CsrIndex for i64 {
    #[inline]
    fn to_usize(self) -> Option<usize> {
        usize::try_from(self).ok()
    }
    #[inline]
    fn as_u32_slice(_: &[Self]) -> Option<&[u32]> {
        None
    }
}

/// A CSR matrix (compressed sparse rows), borrowed from the caller's arrays.
#[derive(Debug, Clone, Copy)]
pub struct CsrRows<'a, T, I> {
    indptr: &'a [I],
    indices: &'a [I],
    data: &'a [T],
    n_features: usize,
    /// Rows are handed out as the caller's own slices: `f64` values, 32-bit indices and
    /// no explicit zeros (else each row is converted, zeros dropped, into a buffer —
    /// which, called twice per SDCA step, cost more than the step's arithmetic).
    borrowed: bool,
}

impl<'a, T: Real, I: CsrIndex> CsrRows<'a, T, I> {
    /// Checks the structure once (monotone `indptr`, column indices in range), so the
    /// solvers can index without further checks.
    pub fn new(indptr: &'a [I], indices: &'a [I], data: &'a [T], n_features: usize) -> Result<Self> {
        if indptr.is_empty() {
            return Err(Error::input("X.indptr", "must have n_rows + 1 entries"));
        }
        if indices.len() != data.len() {
            return Err(Error::input("X.indices", "must have as many entries as X.data"));
        }
        if n_features == 0 || n_features > u32::MAX as usize {
            return Err(Error::input("X", format!("number of features {n_features} out of range")));
        }
        let mut prev = 0usize;
        for (r, p) in indptr.iter().enumerate() {
            let p = p.to_usize().ok_or_else(|| Error::input("X.indptr", "has a negative entry"))?;
            if (r == 0 && p != 0) || p < prev || p > data.len() {
                return Err(Error::input("X.indptr", "must start at 0, not decrease and end at nnz"));
            }
            prev = p;
        }
        if prev != data.len() {
            return Err(Error::input("X.indptr", "must end at nnz"));
        }
        if indices.iter().any(|j| j.to_usize().is_none_or(|j| j >= n_features)) {
            return Err(Error::input("X.indices", format!("column indices must lie in [0, {n_features})")));
        }
        let borrowed =
            I::as_u32_slice(indices).is_some() && T::as_f64_slice(data).is_some_and(|v| v.iter().all(|&v| v != 0.0));
        Ok(Self { indptr, indices, data, n_features, borrowed })
    }

    /// Refuses a NaN or an infinity among the stored values, naming X and the row.
    pub fn check_finite(&self) -> Result<()> {
        let Some(at) = crate::batch::first_non_finite(self.data) else { return Ok(()) };
        let row = self.indptr.partition_point(|p| p.to_usize().is_some_and(|p| p <= at)).saturating_sub(1);
        Err(Error::input("X", format!("contains NaN or infinity (row {row})")))
    }

    fn range(&self, i: usize) -> std::ops::Range<usize> {
        // Checked in `new`: entries are non-negative and within nnz.
        self.indptr[i].to_usize().unwrap_or(0)..self.indptr[i + 1].to_usize().unwrap_or(0)
    }
}

impl<T: Real, I: CsrIndex> Design for CsrRows<'_, T, I> {
    fn n_rows(&self) -> usize {
        self.indptr.len() - 1
    }
    fn n_features(&self) -> usize {
        self.n_features
    }
    fn row<'s>(&'s self, i: usize, buf: &'s mut RowBuf) -> Row<'s> {
        let r = self.range(i);
        if self.borrowed {
            if let (Some(indices), Some(values)) =
                (I::as_u32_slice(&self.indices[r.clone()]), T::as_f64_slice(&self.data[r.clone()]))
            {
                return Row::Sparse { indices, values };
            }
        }
        buf.indices.clear();
        buf.values.clear();
        for (&j, &v) in self.indices[r.clone()].iter().zip(&self.data[r]) {
            let v = v.to_f64();
            if v != 0.0 {
                // In range by construction (checked in `new`).
                buf.indices.push(j.to_usize().unwrap_or(0) as u32);
                buf.values.push(v);
            }
        }
        Row::Sparse { indices: &buf.indices, values: &buf.values }
    }
    fn row_nnz(&self, i: usize) -> usize {
        self.range(i).len()
    }
    fn prefetch_row(&self, i: usize) {
        let r = self.range(i);
        crate::vector_code::prefetch_lines(&self.indices[r.clone()]);
        crate::vector_code::prefetch_lines(&self.data[r]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_finite_csr_value_is_named_with_its_row() {
        let (indptr, indices) = ([0i64, 2, 2, 3], [0i64, 2, 1]);
        assert_eq!(CsrRows::new(&indptr, &indices, &[1.0f64, 2.0, 3.0], 3).unwrap().check_finite(), Ok(()));
        let bad = CsrRows::new(&indptr, &indices, &[1.0f32, 2.0, f32::NAN], 3).unwrap().check_finite();
        assert_eq!(bad.unwrap_err().to_string(), "X: contains NaN or infinity (row 2)");
    }

    #[test]
    fn dense_and_csr_rows_agree() {
        let dense = [1.0f32, 0.0, 2.0, 0.0, 0.0, 3.0];
        let d = DenseRows::new(&dense, 2, 3).unwrap();
        let (indptr, indices, data) = ([0i64, 2, 3], [0i64, 2, 2], [1.0f64, 2.0, 3.0]);
        let s = CsrRows::new(&indptr, &indices, &data, 3).unwrap();
        let w = [0.5, -1.0, 4.0];
        let (mut b1, mut b2) = (RowBuf::new(), RowBuf::new());
        for i in 0..2 {
            let (r1, r2) = (d.row(i, &mut b1), s.row(i, &mut b2));
            assert_eq!(r1.dot(&w), r2.dot(&w));
            assert_eq!(r1.sq_norm(), r2.sq_norm());
        }
    }

    #[test]
    fn dot_rows_equals_row_dot_bit_for_bit() {
        let (d, m, stride) = (19, 11, 20);
        let x: Vec<f64> = (0..d).map(|t| if t % 3 == 0 { 0.0 } else { (t as f64 * 0.77).sin() }).collect();
        let w: Vec<f64> = (0..m * stride).map(|t| (t as f64 * 0.31).cos()).collect();
        let dense = DenseRows::new(&x, 1, d).unwrap();
        let nz: Vec<i32> = (0..d as i32).filter(|&t| x[t as usize] != 0.0).collect();
        let vals: Vec<f64> = nz.iter().map(|&t| x[t as usize]).collect();
        let indptr = [0i32, nz.len() as i32];
        let csr = CsrRows::new(&indptr, &nz, &vals, d).unwrap();
        let (mut b1, mut b2) = (RowBuf::new(), RowBuf::new());
        for row in [dense.row(0, &mut b1), csr.row(0, &mut b2)] {
            for classes in [(0..m as u32).collect::<Vec<u32>>(), vec![1, 4, 5, 9, 10], vec![7]] {
                let mut out = vec![0.0; classes.len()];
                row.dot_rows(&w, stride, &classes, &mut out);
                for (&c, &o) in classes.iter().zip(&out) {
                    assert_eq!(o.to_bits(), row.dot(&w[c as usize * stride..]).to_bits());
                }
            }
        }
    }

    /// Rows borrowed from the caller's arrays (f64 values, i32 indices, no explicit zeros)
    /// are the rows the converting path builds; an explicit zero, i64 indices or f32
    /// values take the converting path, which drops the zeros.
    #[test]
    fn borrowed_and_converted_csr_rows_agree() {
        let (indptr32, indices32, data) = ([0i32, 2, 2, 5], [0i32, 3, 1, 2, 3], [1.5f64, -2.0, 0.25, 4.0, -1.0]);
        let (indptr64, indices64) = (indptr32.map(i64::from), indices32.map(i64::from));
        let data32 = data.map(|v| v as f32);
        let mut with_zero = data;
        with_zero[3] = 0.0;
        let borrowed = CsrRows::new(&indptr32, &indices32, &data, 4).unwrap();
        assert!(borrowed.borrowed);
        assert!(!CsrRows::new(&indptr64, &indices64, &data, 4).unwrap().borrowed);
        assert!(!CsrRows::new(&indptr32, &indices32, &data32, 4).unwrap().borrowed);
        let zero = CsrRows::new(&indptr32, &indices32, &with_zero, 4).unwrap();
        assert!(!zero.borrowed);
        let converted = CsrRows::new(&indptr64, &indices64, &data, 4).unwrap();
        let (mut b1, mut b2) = (RowBuf::new(), RowBuf::new());
        for i in 0..3 {
            let (Row::Sparse { indices: i1, values: v1 }, Row::Sparse { indices: i2, values: v2 }) =
                (borrowed.row(i, &mut b1), converted.row(i, &mut b2))
            else {
                panic!("CSR rows are sparse");
            };
            assert_eq!((i1, v1), (i2, v2));
        }
        let Row::Sparse { indices, values } = zero.row(2, &mut b1) else { panic!("CSR rows are sparse") };
        assert_eq!((indices, values), (&[1u32, 3][..], &[0.25, -1.0][..]));
    }

    #[test]
    fn csr_structure_is_checked() {
        let data = [1.0f64];
        assert!(CsrRows::new(&[0i32, 1], &[3i32], &data, 3).is_err());
        assert!(CsrRows::new(&[0i32, 2], &[0i32], &data, 3).is_err());
        assert!(CsrRows::new(&[1i32, 1], &[0i32], &data, 3).is_err());
    }
}
