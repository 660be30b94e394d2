//! Bindings of the ranking-at-the-top fits (TopPush, TopPushK, Pat&Mat): the kernel
//! from the data or a precomputed Gram matrix (not copied), one core call without the
//! GIL, the arrays and a `FitReport` out.

use ndarray::Ix1;
use pyo3::prelude::*;

use super::arrays::{array_in, to_numpy};
use super::design::{with_kernel, KernelJob, KernelSettings};
use super::errors::to_py;
use super::monitor::PyMonitor;
use super::report::FitReport;
use crate::kernels::{ColumnCache, KernelSource};
use crate::solvers::attop::{solve_attop, AtTop, AtTopOptions, AtTopReport, AtTopSolution};
use crate::threads;

/// `toprank._options.AttopSettings`.
#[derive(FromPyObject)]
pub(crate) struct AttopSettings {
    method: String,
    surrogate: String,
    c: f64,
    scale: f64,
    kernel: KernelSettings,
    tol: f64,
    max_iter: usize,
    check_every: usize,
    seed: u64,
    k: usize,
    tau: f64,
    reuse: f64,
}

/// A TopPush/Pat&Mat solve, whatever the source of the kernel columns.
struct AtTopFit<'a> {
    problem: AtTop,
    positive: &'a [bool],
    settings: &'a AttopSettings,
}

impl KernelJob for AtTopFit<'_> {
    type Output = (AtTopSolution, AtTopReport, (u64, u64));
    fn run<S: KernelSource + ?Sized>(self, source: &S, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let s = self.settings;
        let opts =
            AtTopOptions { tol: s.tol, max_iter: s.max_iter, check_every: s.check_every, seed: s.seed, reuse: s.reuse };
        let mut cache = ColumnCache::new(source.n(), s.kernel.cache_size)?;
        let (solution, report) = solve_attop(&self.problem, source, &mut cache, self.positive, &opts, monitor)?;
        Ok((solution, report, (cache.hits(), cache.misses())))
    }
}

/// The arrays and numbers of a TopPush/Pat&Mat fit: (dual_coef, decision values on the
/// training examples, threshold, report, (kernel-cache hits, misses)).
type AttopResult<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, f64, FitReport, (u64, u64));

/// Fits TopPushK (K = 1: TopPush) or Pat&Mat under `settings`; `x` is the dense
/// training data, or the n × n Gram matrix for kernel="precomputed" (any float array; a
/// C-ordered `np.memmap` is read in place). `positive[i]` is true for the positive class.
#[pyfunction]
#[pyo3(signature = (x, positive, settings, *, n_jobs=None, callback=None))]
pub(crate) fn attop_fit<'py>(
    x: &Bound<'py, PyAny>,
    positive: &Bound<'py, PyAny>,
    settings: AttopSettings,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<AttopResult<'py>> {
    let threads = threads::resolve(n_jobs)?;
    let s = &settings;
    let problem = AtTop::named(&s.method, &s.surrogate, s.k, s.tau, s.scale, s.c).map_err(to_py)?;
    let positive = array_in::<bool, Ix1>(positive, "y")?;
    let job = AtTopFit { problem, positive: positive.as_slice()?, settings: s };
    let (solution, report, cache) = with_kernel(x, &s.kernel, threads, callback, job)?;
    let (n, py) = (solution.v.len(), x.py());
    let (v, f) = (to_numpy(py, solution.v, &[n])?, to_numpy(py, solution.f, &[n])?);
    Ok((v, f, report.objectives.threshold, FitReport::from(&report), cache))
}
