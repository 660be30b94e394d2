//! Binding of the M3L fit: the problem's arrays in (checked by the core, `M3l::new`), one
//! core call without the GIL — kernel SMO (`solvers::m3l::fit_smo`) on the kernel of the
//! settings (or a precomputed Gram matrix, not copied) when they have one, else linear
//! DCD (`solvers::m3l::solve_dcd`) on a dense or CSR design — and the arrays, a
//! `FitReport` and the largest |projected gradient| out.

use ndarray::{Ix1, Ix2};
use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;

use super::arrays::array_in;
use super::design::{with_model, DesignJob, KernelJob, KernelSettings};
use super::errors::to_py;
use super::monitor::PyMonitor;
use super::report::{fitted, FitReport};
use super::threads;
use crate::data::Design;
use crate::kernels::KernelSource;
use crate::solvers::m3l::{fit_smo, solve_dcd, DcdOptions, M3l, M3lReport, SmoOptions};

/// `toprank._options.M3lSettings`.
#[derive(FromPyObject)]
pub(crate) struct M3lSettings {
    c: f64,
    tol: f64,
    max_iter: usize,
    bias: Option<f64>,
    seed: u64,
    shrinking: bool,
    report_every: usize,
    kernel: Option<KernelSettings>,
}

/// One fit: the checked problem, α to start from and the settings.
struct Fit<'a> {
    problem: M3l<'a>,
    alpha: Vec<f64>,
    settings: &'a M3lSettings,
}

/// SMO: no weights, α and the report.
impl KernelJob for Fit<'_> {
    type Output = (Option<Vec<f64>>, Vec<f64>, M3lReport);
    fn run<S: KernelSource + ?Sized>(mut self, source: &S, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let s = self.settings;
        let cache_mb = s.kernel.as_ref().map_or(0.0, |k| k.cache_size);
        let options =
            SmoOptions { tol: s.tol, max_iter: s.max_iter, report_every: s.report_every, bias: s.bias, cache_mb };
        let report = fit_smo(&self.problem, source, &mut self.alpha, &options, monitor)?;
        Ok((None, self.alpha, report))
    }
}

/// DCD: Z (L × (d [+ 1 for the bias feature])), α and the report.
impl DesignJob for Fit<'_> {
    type Output = (Option<Vec<f64>>, Vec<f64>, M3lReport);
    fn run<D: Design>(mut self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let s = self.settings;
        let options =
            DcdOptions { tol: s.tol, max_iter: s.max_iter, seed: s.seed, bias: s.bias, shrinking: s.shrinking };
        let (report, z) = solve_dcd(&self.problem, x, &mut self.alpha, &options, monitor)?;
        Ok((Some(z), self.alpha, report))
    }
}

/// A fit's arrays and report (`report::Fitted`) and the largest |projected gradient|.
type M3lFitted<'py> = (Option<Bound<'py, PyAny>>, Bound<'py, PyAny>, FitReport, f64);

/// M3L from α = 0; `problem` is a `toprank._options.M3lProblem`, `sample_weight` the
/// examples' weights of C (checked by the core, `M3l::with_weights`).
/// With `settings.kernel`, kernel SMO on `x`'s kernel (or `x` as the Gram matrix for
/// kernel="precomputed"); without, linear DCD with shrinking on `x` (dense or CSR).
/// Returns (Z: n_labels × (n_features [+ 1]), None for SMO; dual_coef; report; the
/// largest |projected gradient|).
#[pyfunction]
#[pyo3(signature = (x, problem, settings, *, sample_weight=None, n_jobs=None, callback=None))]
pub(crate) fn m3l_fit<'py>(
    x: &Bound<'py, PyAny>,
    problem: &Bound<'py, PyAny>,
    settings: M3lSettings,
    sample_weight: Option<&Bound<'py, PyAny>>,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<M3lFitted<'py>> {
    let threads = threads::resolve(n_jobs)?;
    let read = |attr: &str, name: &str| array_in::<f64, Ix2>(&problem.getattr(attr)?, name);
    let (y, r) = (read("y", "Y")?, read("r", "R")?);
    let (plus, minus) = (read("delta_plus", "loss")?, read("delta_minus", "loss")?);
    let (n, labels) = (y.shape()[0], y.shape()[1]);
    let (y, r, plus, minus) = (y.as_slice()?, r.as_slice()?, plus.as_slice()?, minus.as_slice()?);
    let problem = M3l::new(n, labels, y, r, settings.c, plus, minus).map_err(to_py)?;
    let weights = sample_weight.map(|w| array_in::<f64, Ix1>(w, "sample_weight")).transpose()?;
    let problem = match &weights {
        Some(w) => problem.with_weights(w.as_slice()?).map_err(to_py)?,
        None => problem,
    };
    let alpha = crate::solvers::initial_dual(None, n, labels).map_err(to_py)?;
    let job = Fit { problem, alpha, settings: &settings };
    let out = with_model(x, settings.kernel.as_ref(), threads, callback, job)?;
    let violation = out.2.max_violation;
    let (coef, dual, report) = fitted(x.py(), out, labels)?;
    Ok((coef, dual, report, violation))
}
