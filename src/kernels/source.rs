//! Where kernel columns come from: the one interface the kernel solvers (top-k SVM,
//! TopPush/Pat&Mat, M3L) and the column cache use.
//!
//! A source is an n × n symmetric positive semidefinite matrix K that is never stored
//! unless the caller stored it ([`super::PrecomputedKernel`]); [`super::DataKernel`]
//! computes entries from the examples on demand. Every method takes `&self` and is
//! thread-safe, so the duality-gap passes can ask for kernel values on all threads.

use rayon::prelude::*;

use super::{DataKernel, KernelFunction, PrecomputedKernel};
use crate::data::DenseRows;
use crate::solvers::Monitor;
use crate::{Real, Result};

/// Work that runs on a kernel matrix, generic over where its columns come from: a kernel
/// fit. The caller (the bindings) hands it the examples with [`KernelJob::on_rows`].
pub trait KernelJob: Send + Sized {
    type Output: Send;
    fn run<S: KernelSource + ?Sized>(self, source: &S, monitor: &mut dyn Monitor) -> Result<Self::Output>;

    /// The job on the kernel `function` of the dense row-major examples `data` (rows ×
    /// cols), or, without a function, on `data` as a precomputed Gram matrix (checked
    /// finite and symmetric).
    fn on_rows<T: Real>(
        self,
        data: &[T],
        (rows, cols): (usize, usize),
        function: Option<KernelFunction>,
        monitor: &mut dyn Monitor,
    ) -> Result<Self::Output> {
        let Some(f) = function else {
            return self.run(&PrecomputedKernel::checked(data, rows, cols)?, monitor);
        };
        // The kernel's diagonal check misses non-finite features (an RBF's is 1).
        crate::batch::check_finite_rows(data, cols, "X")?;
        self.run(&DataKernel::new(&DenseRows::new(data, rows, cols)?, f)?, monitor)
    }
}

/// An n × n kernel matrix read by columns.
pub trait KernelSource: Sync {
    /// Number of examples n.
    fn n(&self) -> usize;

    /// K(i, i), precomputed once (O(1)).
    fn diag(&self, i: usize) -> f64;

    /// About how many multiply-adds one entry costs (1 for a stored matrix; the stored
    /// entries per example for one computed from the examples). Solvers use it to bound
    /// speculative work, such as columns loaded ahead of need.
    fn entry_work(&self) -> usize {
        1
    }

    /// out\[j\] = K(j, i) for all j (`out.len() == n`). Serial, no cache; callable from
    /// any thread.
    fn column_into(&self, i: usize, out: &mut [f64]);

    /// out\[t\] = K(rows\[t\], i) (`out.len() == rows.len()`): the part of column i that a
    /// caller needs, e.g. only the examples with nonzero dual variables. Serial.
    ///
    /// Gives bit-for-bit the values of [`KernelSource::column_into`] (and of
    /// [`KernelSource::columns_into`]), so cached and uncached paths agree exactly.
    fn entries_into(&self, i: usize, rows: &[usize], out: &mut [f64]);

    /// Several columns as one computation on the current rayon pool: column `idx[b]`
    /// goes to `out[b·n .. (b+1)·n]` (column-major). The default runs `column_into` on
    /// the columns in parallel; [`super::DataKernel`] blocks the work so that each
    /// example is read once per block of columns instead of once per column.
    fn columns_into(&self, idx: &[usize], out: &mut [f64]) {
        let n = self.n();
        assert_eq!(out.len(), idx.len() * n, "columns_into: output must hold idx.len() columns of n entries");
        if n == 0 {
            return;
        }
        out.par_chunks_mut(n).zip(idx.par_iter()).for_each(|(col, &i)| self.column_into(i, col));
    }
}

impl<S: KernelSource + ?Sized> KernelSource for &S {
    fn n(&self) -> usize {
        (**self).n()
    }
    fn diag(&self, i: usize) -> f64 {
        (**self).diag(i)
    }
    fn entry_work(&self) -> usize {
        (**self).entry_work()
    }
    fn column_into(&self, i: usize, out: &mut [f64]) {
        (**self).column_into(i, out)
    }
    fn entries_into(&self, i: usize, rows: &[usize], out: &mut [f64]) {
        (**self).entries_into(i, rows, out)
    }
    fn columns_into(&self, idx: &[usize], out: &mut [f64]) {
        (**self).columns_into(idx, out)
    }
}
