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
use super::monitor::PyMonitor;
use super::report::{fitted, FitReport};
use crate::data::Design;
use crate::kernels::KernelSource;
use crate::solvers::m3l::{fit_smo, solve_dcd, DcdOptions, M3l, M3lReport, SmoOptions};
use crate::threads;

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

/// `toprank._options.M3lProblem`, read by attribute: Y (±1, n × L), the label prior R
/// (L × L), the losses Δ⁺ and Δ⁻ (n × L) and the examples' weights of C (checked by the
/// core, `M3l::new` and `M3l::with_weights`).
#[derive(FromPyObject)]
pub(crate) struct M3lProblem<'py> {
    y: Bound<'py, PyAny>,
    r: Bound<'py, PyAny>,
    delta_plus: Bound<'py, PyAny>,
    delta_minus: Bound<'py, PyAny>,
    sample_weight: Option<Bound<'py, PyAny>>,
}

/// A fit's arrays and report (`report::Fitted`) and the largest |projected gradient|.
type M3lFitted<'py> = (Option<Bound<'py, PyAny>>, Bound<'py, PyAny>, FitReport, f64);

/// M3L on `problem` from α = 0. With `settings.kernel`, kernel SMO on `x`'s kernel (or
/// `x` as the Gram matrix for kernel="precomputed"); without, linear DCD with shrinking
/// on `x` (dense or CSR). Returns (Z: n_labels × (n_features [+ 1]), None for SMO;
/// dual_coef; report; the largest |projected gradient|).
#[pyfunction]
#[pyo3(signature = (x, problem, settings, *, n_jobs=None, callback=None))]
pub(crate) fn m3l_fit<'py>(
    x: &Bound<'py, PyAny>,
    problem: M3lProblem<'py>,
    settings: M3lSettings,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<M3lFitted<'py>> {
    let threads = threads::resolve(n_jobs)?;
    let read = |(a, name)| array_in::<f64, Ix2>(a, name);
    let p = &problem;
    let [y, r, plus, minus] = [(&p.y, "Y"), (&p.r, "R"), (&p.delta_plus, "loss"), (&p.delta_minus, "loss")].map(read);
    let (y, r, plus, minus) = (y?, r?, plus?, minus?);
    let (n, labels) = (y.shape()[0], y.shape()[1]);
    let m3l = M3l::new(n, labels, y.as_slice()?, r.as_slice()?, settings.c, plus.as_slice()?, minus.as_slice()?)?;
    let weights = p.sample_weight.as_ref().map(|w| array_in::<f64, Ix1>(w, "sample_weight")).transpose()?;
    let m3l = match &weights {
        Some(w) => m3l.with_weights(w.as_slice()?)?,
        None => m3l,
    };
    let alpha = crate::solvers::initial_dual(None, n, labels)?;
    let job = Fit { problem: m3l, alpha, settings: &settings };
    let out = with_model(x, settings.kernel.as_ref(), threads, callback, job)?;
    let violation = out.2.max_violation;
    let (coef, dual, report) = fitted(x.py(), out, labels)?;
    Ok((coef, dual, report, violation))
}
