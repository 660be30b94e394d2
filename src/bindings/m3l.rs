//! Bindings of the M3L solvers: the kernel from the data or a precomputed Gram matrix
//! (not copied), the whole solve without the GIL, Ctrl-C and progress as for the other
//! dual solvers.

use numpy::{PyArray2, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::design::{with_design, with_kernel, DesignJob, KernelJob};
use super::errors::invalid;
use super::monitor::PyMonitor;
use super::sdca::kernel_function;
use super::threads;
use crate::kernels::{ColumnCache, KernelSource, ShiftedKernel};
use crate::data::Design;
use crate::solvers::m3l::{solve_dcd, solve_smo, DcdOptions, M3l, M3lReport, SmoOptions};

struct SmoJob<'a> {
    problem: M3l<'a>,
    /// Added to every kernel entry: the squared intercept feature (0: no intercept).
    shift: f64,
    alpha: Vec<f64>,
    cache_mb: f64,
    options: SmoOptions,
}

impl KernelJob for SmoJob<'_> {
    type Output = (Vec<f64>, M3lReport);
    fn run<S: KernelSource + ?Sized>(mut self, source: &S, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let source = &ShiftedKernel { inner: source, shift: self.shift };
        let mut cache = ColumnCache::new(source.n(), self.cache_mb)?;
        let report = solve_smo(&self.problem, source, &mut cache, &mut self.alpha, &self.options, monitor)?;
        Ok((self.alpha, report))
    }
}

pub(crate) fn slice<'a>(a: &'a PyReadonlyArray2<'_, f64>, name: &str) -> PyResult<&'a [f64]> {
    a.as_slice().map_err(|_| invalid(name, "must be a C-contiguous float64 array"))
}

/// The checked problem of either solver and its starting α (zeros, or `dual_coef`).
fn problem_and_start<'a>(
    y: &'a PyReadonlyArray2<'_, f64>,
    r: &'a PyReadonlyArray2<'_, f64>,
    c: f64,
    delta_plus: &'a PyReadonlyArray2<'_, f64>,
    delta_minus: &'a PyReadonlyArray2<'_, f64>,
    tol: f64,
    dual_coef: Option<&PyReadonlyArray2<'_, f64>>,
) -> PyResult<(M3l<'a>, Vec<f64>)> {
    let (n, labels) = (y.shape()[0], y.shape()[1]);
    let problem = M3l::new(n, labels, slice(y, "Y")?, slice(r, "R")?, c, slice(delta_plus, "loss")?, slice(delta_minus, "loss")?)
        .map_err(super::errors::to_py)?;
    if !(tol > 0.0 && tol.is_finite()) {
        return Err(invalid("tol", format!("must be finite and > 0, got {tol}")));
    }
    let alpha = match dual_coef {
        Some(a) => slice(a, "dual_coef")?.to_vec(),
        None => vec![0.0; n * labels],
    };
    Ok((problem, alpha))
}

/// Kernel M3L by SMO. `y` is N × L in {−1, +1}; `r` L × L symmetric positive definite;
/// `delta_plus`/`delta_minus` the per-(i, l) losses; `x` the examples, or the Gram matrix
/// for kernel="precomputed".
#[pyfunction]
#[pyo3(signature = (
    x, y, r, c, delta_plus, delta_minus, *, kernel, gamma, degree, coef0, cache_size, tol, max_iter,
    intercept_shift=0.0, report_every=0, dual_coef=None, n_jobs=None, callback=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn m3l_fit_kernel<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: PyReadonlyArray2<'py, f64>,
    r: PyReadonlyArray2<'py, f64>,
    c: f64,
    delta_plus: PyReadonlyArray2<'py, f64>,
    delta_minus: PyReadonlyArray2<'py, f64>,
    kernel: &str,
    gamma: f64,
    degree: u32,
    coef0: f64,
    cache_size: f64,
    tol: f64,
    max_iter: usize,
    intercept_shift: f64,
    report_every: usize,
    dual_coef: Option<PyReadonlyArray2<'py, f64>>,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let threads = threads::resolve(n_jobs)?;
    let labels = y.shape()[1];
    let (problem, alpha) = problem_and_start(&y, &r, c, &delta_plus, &delta_minus, tol, dual_coef.as_ref())?;
    let function = if kernel == "precomputed" { None } else { Some(kernel_function(kernel, gamma, degree, coef0)?) };
    if !(intercept_shift >= 0.0 && intercept_shift.is_finite()) {
        return Err(invalid("intercept_scaling", "must be finite"));
    }
    let job = SmoJob { problem, shift: intercept_shift, alpha, cache_mb: cache_size, options: SmoOptions { tol, max_iter, report_every } };
    let (alpha, report) = with_kernel(x, function, threads, callback, job)?;
    let out = PyDict::new(py);
    let to_2d = |v: Vec<f64>| PyArray2::from_vec2(py, &v.chunks(labels).map(|r| r.to_vec()).collect::<Vec<_>>());
    out.set_item("dual_coef", to_2d(alpha)?)?;
    out.set_item("status", report.status.as_str())?;
    out.set_item("iterations", report.iterations)?;
    out.set_item("primal", report.primal)?;
    out.set_item("dual", report.dual)?;
    out.set_item("max_violation", report.max_violation)?;
    Ok(out)
}

struct DcdJob<'a> {
    problem: M3l<'a>,
    alpha: Vec<f64>,
    options: DcdOptions,
}

impl DesignJob for DcdJob<'_> {
    type Output = (Vec<f64>, M3lReport, Vec<f64>);
    fn run<D: Design>(mut self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let (report, z) = solve_dcd(&self.problem, x, &mut self.alpha, &self.options, monitor)?;
        Ok((self.alpha, report, z))
    }
}

/// Linear M3L by dual coordinate descent with shrinking; `x` dense or CSR. Returns the
/// dual variables and Z (n_labels × (n_features [+ 1 for the bias feature])).
#[pyfunction]
#[pyo3(signature = (
    x, y, r, c, delta_plus, delta_minus, *, tol, max_iter, seed, bias=None, shrinking=true, dual_coef=None, n_jobs=None,
    callback=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn m3l_fit_linear<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: PyReadonlyArray2<'py, f64>,
    r: PyReadonlyArray2<'py, f64>,
    c: f64,
    delta_plus: PyReadonlyArray2<'py, f64>,
    delta_minus: PyReadonlyArray2<'py, f64>,
    tol: f64,
    max_iter: usize,
    seed: u64,
    bias: Option<f64>,
    shrinking: bool,
    dual_coef: Option<PyReadonlyArray2<'py, f64>>,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let threads = threads::resolve(n_jobs)?;
    let labels = y.shape()[1];
    let (problem, alpha) = problem_and_start(&y, &r, c, &delta_plus, &delta_minus, tol, dual_coef.as_ref())?;
    let job = DcdJob { problem, alpha, options: DcdOptions { tol, max_iter, seed, bias, shrinking } };
    let (alpha, report, z) = with_design(x, threads, callback, job)?;
    let out = PyDict::new(py);
    let to_2d = |v: Vec<f64>, cols: usize| PyArray2::from_vec2(py, &v.chunks(cols).map(|r| r.to_vec()).collect::<Vec<_>>());
    let width = z.len() / labels;
    out.set_item("dual_coef", to_2d(alpha, labels)?)?;
    out.set_item("coef", to_2d(z, width)?)?;
    out.set_item("status", report.status.as_str())?;
    out.set_item("iterations", report.iterations)?;
    out.set_item("primal", report.primal)?;
    out.set_item("dual", report.dual)?;
    out.set_item("max_violation", report.max_violation)?;
    Ok(out)
}
