//! The dual matrix A (n × m) of Prox-SDCA in one of two layouts: dense (row-major
//! `[f64]`, n·m values) or sparse ([`SparseDual`]: per example its nonzero entries,
//! ascending by class).
//!
//! Why two: the top-k hinge losses' dual rows are sparse — a_i is nonzero only on the
//! label and the classes that violate the margin, a handful to a few dozen of m
//! (`SdcaLoss::shrinks_classes`). At ImageNet scale (1.28 M examples, 1,000 classes)
//! the dense A is 10.2 GB; stored sparse it is n·s·16 bytes for s nonzeros per row
//! (about 0.6 GB at s = 30). Dense rows stay where they are faster and small: few
//! classes, kernel models (their scores read all of A) and smooth losses (dense rows).
//! [`Fit`](super::Fit) picks the layout (`DualLayout`).
//!
//! A solver sees A through [`DualRows`] / [`DualRowsMut`]: it reads a row as a dense
//! slice (the dense layout lends its own; the sparse one writes the row into a
//! per-thread scratch of m zeros) and changes a row through
//! [`DualRowsMut::update_row`], which hands the step a dense row and stores the result
//! back. Every step and check then runs the same arithmetic on either layout, so the
//! two layouts give the same iterates (up to the sign of zeros, which the sparse
//! layout does not keep).

use crate::vector_code::prefetch_lines;
use crate::{Error, Result};

/// One example's nonzero dual entries (class, value), ascending by class.
pub type SparseRow = Vec<(u32, f64)>;

/// Read access to A (n × m); `m` is the solver's class count, passed by the caller (a
/// dense slice does not know its row length).
pub trait DualRows: Sync {
    /// Whether A has n rows of m entries: an error naming `dual_coef` otherwise.
    fn check_shape(&self, n: usize, m: usize) -> Result<()>;
    /// a_i as a dense row of m values: borrowed, or written into `scratch` (length m).
    fn row<'s>(&'s self, i: usize, m: usize, scratch: &'s mut [f64]) -> &'s [f64];
    /// All of A row-major, if dense: what a kernel model's scores read.
    fn dense(&self) -> Option<&[f64]>;
    /// Starts loading row i (a hint).
    fn prefetch(&self, i: usize, m: usize);
}

/// Write access to A.
pub trait DualRowsMut: DualRows {
    /// Hands `step` row i as a dense row of m values, which it may change in place; the
    /// step returns whether it changed anything. `scratch` holds m zeros, and does so
    /// again when this returns.
    fn update_row(
        &mut self,
        i: usize,
        m: usize,
        scratch: &mut [f64],
        step: impl FnOnce(&mut [f64]) -> Result<bool>,
    ) -> Result<bool>;
    /// a_ij ← f(a_ij) for every entry, f(0) = 0 (a scaling).
    fn map_values(&mut self, f: impl Fn(f64) -> f64);
    /// Row access for threads that each work on their own rows (CoCoA+'s blocks).
    fn disjoint(&mut self, m: usize) -> DisjointRows<'_>;
}

/// The dense layout: a row-major slice (or anything holding one, as a `Vec`).
impl<S: AsRef<[f64]> + Sync + ?Sized> DualRows for S {
    fn check_shape(&self, n: usize, m: usize) -> Result<()> {
        let len = self.as_ref().len();
        if len != n * m {
            return Err(Error::input("dual_coef", format!("must have {n} x {m} entries, got {len}")));
        }
        Ok(())
    }
    #[inline]
    fn row<'s>(&'s self, i: usize, m: usize, _scratch: &'s mut [f64]) -> &'s [f64] {
        &self.as_ref()[i * m..(i + 1) * m]
    }
    fn dense(&self) -> Option<&[f64]> {
        Some(self.as_ref())
    }
    #[inline]
    fn prefetch(&self, i: usize, m: usize) {
        prefetch_lines(&self.as_ref()[i * m..(i + 1) * m]);
    }
}

impl<S: AsRef<[f64]> + AsMut<[f64]> + Sync + ?Sized> DualRowsMut for S {
    #[inline]
    fn update_row(
        &mut self,
        i: usize,
        m: usize,
        _scratch: &mut [f64],
        step: impl FnOnce(&mut [f64]) -> Result<bool>,
    ) -> Result<bool> {
        step(&mut self.as_mut()[i * m..(i + 1) * m])
    }
    fn map_values(&mut self, f: impl Fn(f64) -> f64) {
        self.as_mut().iter_mut().for_each(|v| *v = f(*v));
    }
    fn disjoint(&mut self, m: usize) -> DisjointRows<'_> {
        let values = self.as_mut();
        let n_rows = values.len().checked_div(m).unwrap_or(0);
        DisjointRows { rows: Rows::Dense(values.as_mut_ptr()), n_rows, m, _a: Default::default() }
    }
}

/// A stored sparse: per example its nonzero entries, ascending by class.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseDual {
    rows: Vec<SparseRow>,
    m: usize,
}

impl SparseDual {
    /// n rows of zeros over m classes.
    pub fn zeros(n: usize, m: usize) -> Result<Self> {
        if u32::try_from(m).is_err() {
            return Err(Error::param("n_classes", format!("a sparse dual holds at most 2^32 classes, got {m}")));
        }
        Ok(Self { rows: vec![Vec::new(); n], m })
    }

    /// The nonzeros of a dense n × m matrix (row-major).
    pub fn from_dense(values: &[f64], n: usize, m: usize) -> Result<Self> {
        values.check_shape(n, m)?;
        let mut dual = Self::zeros(n, m)?;
        for (row, dense) in dual.rows.iter_mut().zip(values.chunks_exact(m.max(1))) {
            store(row, dense);
        }
        Ok(dual)
    }

    /// A compressed-sparse-row matrix (n × m): row i's classes `indices[indptr[i] ..
    /// indptr[i + 1]]`, values likewise in `data`. Checks the structure (offsets
    /// nondecreasing and in bounds, classes below m and strictly ascending per row) and
    /// that the values are finite; explicit zeros are dropped.
    pub fn from_csr(indptr: &[usize], indices: &[usize], data: &[f64], n: usize, m: usize) -> Result<Self> {
        let bad = |why: String| Err(Error::input("dual_coef", why));
        if indptr.len() != n + 1 || indptr[0] != 0 || indptr[n] != indices.len() || indices.len() != data.len() {
            return bad(format!(
                "a CSR matrix of {n} rows needs {} offsets from 0 to its {} entries, and as many values as classes",
                n + 1,
                indices.len()
            ));
        }
        let mut dual = Self::zeros(n, m)?;
        for (i, row) in dual.rows.iter_mut().enumerate() {
            let (lo, hi) = (indptr[i], indptr[i + 1]);
            if lo > hi || hi > indices.len() {
                return bad(format!("row offsets must be nondecreasing, row {i} has {lo}..{hi}"));
            }
            let classes = &indices[lo..hi];
            if classes.iter().any(|&c| c >= m) || classes.windows(2).any(|w| w[0] >= w[1]) {
                return bad(format!("row {i}: classes must be < {m} and strictly ascending (sorted, no duplicates)"));
            }
            if data[lo..hi].iter().any(|v| !v.is_finite()) {
                return bad(format!("row {i} contains NaN or infinity"));
            }
            row.extend(classes.iter().zip(&data[lo..hi]).filter(|(_, &v)| v != 0.0).map(|(&c, &v)| (c as u32, v)));
        }
        Ok(dual)
    }

    /// The CSR arrays (indptr, indices, data) of A, each row freed once copied (the
    /// peak is the CSR arrays and what is left of the rows, not both whole).
    pub fn into_csr(self) -> (Vec<i64>, Vec<i64>, Vec<f64>) {
        let nnz = self.nnz();
        let (mut indptr, mut indices, mut data) =
            (Vec::with_capacity(self.rows.len() + 1), Vec::with_capacity(nnz), Vec::with_capacity(nnz));
        indptr.push(0);
        for row in self.rows {
            indices.extend(row.iter().map(|&(c, _)| i64::from(c)));
            data.extend(row.iter().map(|&(_, v)| v));
            indptr.push(indices.len() as i64);
        }
        (indptr, indices, data)
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.rows.iter().map(Vec::len).sum()
    }

    /// Example i's nonzero entries.
    pub fn entries(&self, i: usize) -> &[(u32, f64)] {
        &self.rows[i]
    }
}

impl DualRows for SparseDual {
    fn check_shape(&self, n: usize, m: usize) -> Result<()> {
        if self.rows.len() != n || self.m != m {
            return Err(Error::input("dual_coef", format!("must be {n} x {m}, got {} x {}", self.rows.len(), self.m)));
        }
        Ok(())
    }
    #[inline]
    fn row<'s>(&'s self, i: usize, _m: usize, scratch: &'s mut [f64]) -> &'s [f64] {
        scratch.fill(0.0);
        load(&self.rows[i], scratch);
        scratch
    }
    fn dense(&self) -> Option<&[f64]> {
        None
    }
    #[inline]
    fn prefetch(&self, i: usize, _m: usize) {
        prefetch_lines(std::slice::from_ref(&self.rows[i]));
    }
}

impl DualRowsMut for SparseDual {
    #[inline]
    fn update_row(
        &mut self,
        i: usize,
        _m: usize,
        scratch: &mut [f64],
        step: impl FnOnce(&mut [f64]) -> Result<bool>,
    ) -> Result<bool> {
        update_sparse(&mut self.rows[i], scratch, step)
    }
    fn map_values(&mut self, f: impl Fn(f64) -> f64) {
        for row in &mut self.rows {
            row.iter_mut().for_each(|(_, v)| *v = f(*v));
            // A scaling that underflows a value to zero: keep only nonzeros.
            row.retain(|&(_, v)| v != 0.0);
        }
    }
    fn disjoint(&mut self, m: usize) -> DisjointRows<'_> {
        debug_assert_eq!(m, self.m);
        DisjointRows { rows: Rows::Sparse(self.rows.as_mut_ptr()), n_rows: self.rows.len(), m, _a: Default::default() }
    }
}

/// Writes a sparse row's values into `dense` (zeros elsewhere are the caller's).
#[inline]
fn load(row: &[(u32, f64)], dense: &mut [f64]) {
    row.iter().for_each(|&(c, v)| dense[c as usize] = v);
}

/// Replaces `row` by the nonzeros of `dense`, and zeroes `dense`.
#[inline]
fn store(row: &mut SparseRow, dense: &[f64]) {
    row.clear();
    row.extend(dense.iter().enumerate().filter(|(_, &v)| v != 0.0).map(|(c, &v)| (c as u32, v)));
    // A row that once held many classes (the first epochs score them all) keeps its
    // allocation; give back what is far beyond its use.
    if row.capacity() > 2 * row.len() + 8 {
        row.shrink_to(row.len() + 4);
    }
}

/// [`DualRowsMut::update_row`] on one sparse row: load it into the zeroed `scratch`,
/// step, store the nonzeros back if the step changed anything, zero `scratch` again.
#[inline]
fn update_sparse(
    row: &mut SparseRow,
    scratch: &mut [f64],
    step: impl FnOnce(&mut [f64]) -> Result<bool>,
) -> Result<bool> {
    load(row, scratch);
    let changed = step(scratch);
    match changed {
        Ok(true) => {
            store(row, scratch);
            scratch.fill(0.0);
        }
        Ok(false) => row.iter().for_each(|&(c, _)| scratch[c as usize] = 0.0),
        Err(_) => scratch.fill(0.0),
    }
    changed
}

enum Rows {
    Dense(*mut f64),
    Sparse(*mut SparseRow),
}

/// Mutable access to distinct rows of A from several threads.
pub struct DisjointRows<'a> {
    rows: Rows,
    n_rows: usize,
    m: usize,
    /// Holds A's mutable borrow while rows are handed out.
    _a: std::marker::PhantomData<&'a mut ()>,
}

// SAFETY: a `DisjointRows` touches a row only through its unsafe methods, whose callers
// guarantee that no two threads use the same row at the same time.
unsafe impl Sync for DisjointRows<'_> {}

impl DisjointRows<'_> {
    /// [`DualRowsMut::update_row`] on row i.
    ///
    /// # Safety
    /// No other thread may use row i meanwhile.
    pub unsafe fn update_row(
        &self,
        i: usize,
        scratch: &mut [f64],
        step: impl FnOnce(&mut [f64]) -> Result<bool>,
    ) -> Result<bool> {
        assert!(i < self.n_rows, "row {i} out of range");
        match self.rows {
            // SAFETY: in bounds (asserted); exclusivity is the caller's contract.
            Rows::Dense(ptr) => step(unsafe { std::slice::from_raw_parts_mut(ptr.add(i * self.m), self.m) }),
            // SAFETY: as above.
            Rows::Sparse(ptr) => update_sparse(unsafe { &mut *ptr.add(i) }, scratch, step),
        }
    }

    /// Starts loading row i (a hint).
    ///
    /// # Safety
    /// No thread may write row i meanwhile.
    pub unsafe fn prefetch(&self, i: usize) {
        assert!(i < self.n_rows, "row {i} out of range");
        match self.rows {
            // SAFETY: in bounds (asserted); no writer is the caller's contract.
            Rows::Dense(ptr) => prefetch_lines(unsafe { std::slice::from_raw_parts(ptr.add(i * self.m), self.m) }),
            // SAFETY: as above.
            Rows::Sparse(ptr) => prefetch_lines(std::slice::from_ref(unsafe { &*ptr.add(i) })),
        }
    }
}

/// Where a linear fit keeps A ([`Fit`](super::Fit) decides, the estimator may force it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DualLayout {
    /// Sparse for losses with sparse dual rows on linear models with at least
    /// [`SPARSE_MIN_CLASSES`] classes; dense otherwise.
    Auto,
    Dense,
    Sparse,
}

/// From this many classes on, `DualLayout::Auto` stores a sparse-row loss's A sparse:
/// below it the dense rows are small (2 KB at 255 classes) and a step's O(m) pass
/// over them is cheaper than the bookkeeping.
pub const SPARSE_MIN_CLASSES: usize = 256;

impl DualLayout {
    /// The layout by name: "auto", "dense" or "sparse".
    pub fn named(name: &str) -> Result<Self> {
        match name {
            "auto" => Ok(Self::Auto),
            "dense" => Ok(Self::Dense),
            "sparse" => Ok(Self::Sparse),
            _ => Err(Error::param("dual_layout", format!("must be 'auto', 'dense' or 'sparse', got {name:?}"))),
        }
    }

    /// Whether a fit stores A sparse: a linear model (`kernel` false) and a loss with
    /// sparse dual rows (`sparse_rows`), by choice or from m classes on.
    pub fn is_sparse(self, kernel: bool, sparse_rows: bool, m: usize) -> Result<bool> {
        match self {
            Self::Dense => Ok(false),
            Self::Auto => Ok(!kernel && sparse_rows && m >= SPARSE_MIN_CLASSES),
            Self::Sparse if kernel => {
                Err(Error::param("dual_layout", "a kernel model reads all of A: 'sparse' needs kernel='linear'"))
            }
            Self::Sparse => Ok(true),
        }
    }
}

/// A as a fit starts from it or returns it: dense (n × m, row-major) or sparse.
#[derive(Debug, Clone, PartialEq)]
pub enum DualMatrix {
    Dense(Vec<f64>),
    Sparse(SparseDual),
}

impl DualMatrix {
    /// This matrix in the sparse (`sparse`) or dense layout, converted if needed.
    pub fn into_layout(self, sparse: bool, n: usize, m: usize) -> Result<Self> {
        Ok(match (self, sparse) {
            (Self::Dense(values), true) => Self::Sparse(SparseDual::from_dense(&values, n, m)?),
            (Self::Sparse(dual), false) => {
                dual.check_shape(n, m)?;
                let mut values = vec![0.0; n * m];
                for (row, dense) in dual.rows.iter().zip(values.chunks_exact_mut(m.max(1))) {
                    load(row, dense);
                }
                Self::Dense(values)
            }
            (same, _) => same,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Vec<f64> {
        vec![0.0, 1.5, 0.0, -2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.25, 0.0]
    }

    #[test]
    fn dense_and_sparse_rows_read_the_same() {
        let (n, m) = (3, 4);
        let dense = example();
        let sparse = SparseDual::from_dense(&dense, n, m).unwrap();
        assert_eq!(sparse.nnz(), 4);
        let mut scratch = vec![7.0; m];
        for i in 0..n {
            assert_eq!(sparse.row(i, m, &mut scratch).to_vec(), dense.row(i, m, &mut []).to_vec());
        }
        let (indptr, indices, data) = sparse.clone().into_csr();
        assert_eq!((indptr.as_slice(), indices.as_slice()), ([0, 2, 2, 4].as_slice(), [1, 3, 0, 2].as_slice()));
        let [indptr, indices] = [indptr, indices].map(|v| v.into_iter().map(|i| i as usize).collect::<Vec<_>>());
        assert_eq!(SparseDual::from_csr(&indptr, &indices, &data, n, m).unwrap(), sparse);
        let back = DualMatrix::Sparse(sparse).into_layout(false, n, m).unwrap();
        assert_eq!(back, DualMatrix::Dense(dense));
    }

    /// An update stores the step's nonzeros, and leaves the scratch zeroed whether the
    /// step changed the row, left it or failed.
    #[test]
    fn an_update_stores_the_nonzeros_and_clears_the_scratch() {
        let (n, m) = (3, 4);
        let mut sparse = SparseDual::from_dense(&example(), n, m).unwrap();
        let mut scratch = vec![0.0; m];
        let changed = sparse
            .update_row(0, m, &mut scratch, |row| {
                assert_eq!(row, [0.0, 1.5, 0.0, -2.0]);
                (row[1], row[2]) = (0.0, 4.0);
                Ok(true)
            })
            .unwrap();
        assert!(changed);
        assert_eq!(sparse.entries(0), [(2, 4.0), (3, -2.0)]);
        assert!(scratch.iter().all(|&v| v == 0.0));
        assert!(!sparse.update_row(2, m, &mut scratch, |_| Ok(false)).unwrap());
        assert!(scratch.iter().all(|&v| v == 0.0));
        let failed = sparse.update_row(2, m, &mut scratch, |row| {
            row[1] = 9.0;
            Err(Error::input("X", "a failed step"))
        });
        assert!(failed.is_err() && scratch.iter().all(|&v| v == 0.0));
        assert_eq!(sparse.entries(2), [(0, 3.0), (2, 0.25)]);
    }

    #[test]
    fn malformed_csr_names_dual_coef() {
        let cases: [(&[usize], &[usize], &[f64]); 4] = [
            (&[0, 1], &[0], &[1.0]),
            (&[0, 2, 2, 2], &[1, 1], &[1.0, 2.0]),
            (&[0, 1, 1, 1], &[4], &[1.0]),
            (&[0, 1, 1, 1], &[0], &[f64::NAN]),
        ];
        for (indptr, indices, data) in cases {
            let err = SparseDual::from_csr(indptr, indices, data, 3, 4).unwrap_err();
            assert!(err.to_string().contains("dual_coef"), "{err}");
        }
        assert!(DualLayout::Sparse.is_sparse(true, true, 1000).is_err());
        assert!(DualLayout::Auto.is_sparse(false, true, SPARSE_MIN_CLASSES).unwrap());
        assert!(!DualLayout::Auto.is_sparse(false, true, SPARSE_MIN_CLASSES - 1).unwrap());
        assert!(!DualLayout::Auto.is_sparse(false, false, 1000).unwrap());
    }
}
