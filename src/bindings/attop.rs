//! Bindings of the ranking-at-the-top fits (TopPush, TopPushK, Pat&Mat): the kernel
//! from the data or a precomputed Gram matrix (not copied), one core call without the
//! GIL, the arrays and a `FitReport` out.

use ndarray::Ix1;
use pyo3::prelude::*;

use super::arrays::{array_in, to_numpy};
use super::design::{with_kernel, KernelSettings};
use super::report::FitReport;
use crate::solvers::attop::{AtTopOptions, Fit, Settings};
use crate::threads;

/// `toprank._options.AttopSettings`: the kernel and the core's settings and options, read
/// from its attributes.
pub(crate) struct AttopSettings {
    kernel: KernelSettings,
    fit: Settings,
}
by_attribute!(AttopSettings { kernel; fit });
by_attribute!(Settings { method, surrogate, c, scale, k, tau; options });
by_attribute!(AtTopOptions { tol, max_iter, check_every, seed, reuse });

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
    let (positive, kernel) = (array_in::<bool, Ix1>(positive, "y")?, &settings.kernel);
    let job = Fit::new(&settings.fit, positive.as_slice()?, kernel.cache_size)?;
    let (solution, report, cache) = with_kernel(x, kernel, threads, callback, job)?;
    let (n, py) = (solution.v.len(), x.py());
    let (v, f) = (to_numpy(py, solution.v, &[n])?, to_numpy(py, solution.f, &[n])?);
    Ok((v, f, report.objectives.threshold, FitReport::from(&report), cache))
}
