//! Bindings of the M3L solvers: the kernel from the data or a precomputed Gram matrix
//! (not copied), the whole solve without the GIL, Ctrl-C and progress as for the other
//! dual solvers.

use ndarray::Ix2;
use numpy::{PyArray2, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::arrays::{array_in, check_finite_small};
use super::design::{with_design, with_kernel, DesignJob, KernelJob};
use super::errors::invalid;
use super::monitor::PyMonitor;
use super::sdca::kernel_function;
use super::threads;
use crate::data::Design;
use crate::kernels::{ColumnCache, KernelSource, ShiftedKernel};
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

/// The arrays of an M3L problem, taken through `array_in` and checked finite: Y (N × L,
/// ±1), R (L × L) and the losses Δ⁺, Δ⁻ (N × L).
pub(crate) struct M3lArrays<'py> {
    y: PyReadonlyArray2<'py, f64>,
    r: PyReadonlyArray2<'py, f64>,
    delta_plus: PyReadonlyArray2<'py, f64>,
    delta_minus: PyReadonlyArray2<'py, f64>,
    pub(crate) n: usize,
    pub(crate) labels: usize,
}

impl<'py> M3lArrays<'py> {
    pub(crate) fn new(
        y: &Bound<'py, PyAny>,
        r: &Bound<'py, PyAny>,
        delta_plus: &Bound<'py, PyAny>,
        delta_minus: &Bound<'py, PyAny>,
    ) -> PyResult<Self> {
        let finite = |a: &Bound<'py, PyAny>, name: &str| -> PyResult<PyReadonlyArray2<'py, f64>> {
            let a = array_in::<f64, Ix2>(a, name)?;
            check_finite_small(a.as_slice()?, name)?;
            Ok(a)
        };
        let (y, r) = (finite(y, "Y")?, finite(r, "R")?);
        let (delta_plus, delta_minus) = (finite(delta_plus, "loss")?, finite(delta_minus, "loss")?);
        let (n, labels) = (y.shape()[0], y.shape()[1]);
        Ok(Self { y, r, delta_plus, delta_minus, n, labels })
    }

    /// The checked problem with cost `c`.
    pub(crate) fn problem(&self, c: f64) -> PyResult<M3l<'_>> {
        let (y, r) = (self.y.as_slice()?, self.r.as_slice()?);
        let (plus, minus) = (self.delta_plus.as_slice()?, self.delta_minus.as_slice()?);
        M3l::new(self.n, self.labels, y, r, c, plus, minus).map_err(super::errors::to_py)
    }
}

/// The checked problem of either solver and its starting α (zeros, or `dual_coef`).
fn problem_and_start<'a>(
    arrays: &'a M3lArrays<'_>,
    c: f64,
    tol: f64,
    dual_coef: Option<&Bound<'_, PyAny>>,
) -> PyResult<(M3l<'a>, Vec<f64>)> {
    let problem = arrays.problem(c)?;
    if !(tol > 0.0 && tol.is_finite()) {
        return Err(invalid("tol", format!("must be finite and > 0, got {tol}")));
    }
    let (n, labels) = (arrays.n, arrays.labels);
    let alpha = match dual_coef {
        Some(a) => {
            let a = array_in::<f64, Ix2>(a, "dual_coef")?;
            if a.shape() != [n, labels] {
                return Err(invalid("dual_coef", format!("must have shape ({n}, {labels}), got {:?}", a.shape())));
            }
            check_finite_small(a.as_slice()?, "dual_coef")?;
            a.as_slice()?.to_vec()
        }
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
    y: &Bound<'py, PyAny>,
    r: &Bound<'py, PyAny>,
    c: f64,
    delta_plus: &Bound<'py, PyAny>,
    delta_minus: &Bound<'py, PyAny>,
    kernel: &str,
    gamma: f64,
    degree: u32,
    coef0: f64,
    cache_size: f64,
    tol: f64,
    max_iter: usize,
    intercept_shift: f64,
    report_every: usize,
    dual_coef: Option<&Bound<'py, PyAny>>,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let threads = threads::resolve(n_jobs)?;
    let arrays = M3lArrays::new(y, r, delta_plus, delta_minus)?;
    let labels = arrays.labels;
    let (problem, alpha) = problem_and_start(&arrays, c, tol, dual_coef)?;
    let function = if kernel == "precomputed" { None } else { Some(kernel_function(kernel, gamma, degree, coef0)?) };
    if !(intercept_shift >= 0.0 && intercept_shift.is_finite()) {
        return Err(invalid("intercept_scaling", "must be finite"));
    }
    let job = SmoJob {
        problem,
        shift: intercept_shift,
        alpha,
        cache_mb: cache_size,
        options: SmoOptions { tol, max_iter, report_every },
    };
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
    y: &Bound<'py, PyAny>,
    r: &Bound<'py, PyAny>,
    c: f64,
    delta_plus: &Bound<'py, PyAny>,
    delta_minus: &Bound<'py, PyAny>,
    tol: f64,
    max_iter: usize,
    seed: u64,
    bias: Option<f64>,
    shrinking: bool,
    dual_coef: Option<&Bound<'py, PyAny>>,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let threads = threads::resolve(n_jobs)?;
    let arrays = M3lArrays::new(y, r, delta_plus, delta_minus)?;
    let labels = arrays.labels;
    let (problem, alpha) = problem_and_start(&arrays, c, tol, dual_coef)?;
    let job = DcdJob { problem, alpha, options: DcdOptions { tol, max_iter, seed, bias, shrinking } };
    let (alpha, report, z) = with_design(x, threads, callback, job)?;
    let out = PyDict::new(py);
    let to_2d =
        |v: Vec<f64>, cols: usize| PyArray2::from_vec2(py, &v.chunks(cols).map(|r| r.to_vec()).collect::<Vec<_>>());
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
