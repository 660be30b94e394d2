//! Bindings of the M3L fits: the problem's arrays in (checked finite), one core call
//! without the GIL — kernel SMO (`solvers::m3l::fit_smo`) on the data's kernel or a
//! precomputed Gram matrix (not copied), or linear DCD (`solvers::m3l::solve_dcd`) on a
//! dense or CSR design — and the arrays, a `FitReport` and the largest |projected
//! gradient| out.

use ndarray::Ix2;
use numpy::{PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::arrays::{array_in, check_finite_small, to_numpy};
use super::design::{with_design, with_kernel, DesignJob, KernelJob};
use super::errors::invalid;
use super::monitor::PyMonitor;
use super::report::FitReport;
use super::sdca::{initial_dual, KernelSettings};
use super::threads;
use crate::data::Design;
use crate::kernels::KernelSource;
use crate::solvers::m3l::{fit_smo, solve_dcd, DcdOptions, M3l, M3lReport, SmoOptions};

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

    /// The arrays of a `toprank._options.M3lProblem` (any object with these attributes).
    fn of(problem: &Bound<'py, PyAny>) -> PyResult<Self> {
        let part = |name: &str| problem.getattr(name);
        Self::new(&part("y")?, &part("r")?, &part("delta_plus")?, &part("delta_minus")?)
    }

    /// The checked problem with cost `c`.
    pub(crate) fn problem(&self, c: f64) -> PyResult<M3l<'_>> {
        let (y, r) = (self.y.as_slice()?, self.r.as_slice()?);
        let (plus, minus) = (self.delta_plus.as_slice()?, self.delta_minus.as_slice()?);
        M3l::new(self.n, self.labels, y, r, c, plus, minus).map_err(super::errors::to_py)
    }
}

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

impl<'a> Fit<'a> {
    /// α starts at zero, or at `dual_coef` (N × L).
    fn new(
        arrays: &'a M3lArrays<'_>,
        settings: &'a M3lSettings,
        dual_coef: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let problem = arrays.problem(settings.c)?;
        Ok(Self { problem, alpha: initial_dual(dual_coef, arrays.n, arrays.labels)?, settings })
    }
}

impl KernelJob for Fit<'_> {
    type Output = (Vec<f64>, M3lReport);
    fn run<S: KernelSource + ?Sized>(mut self, source: &S, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let s = self.settings;
        let cache_mb = s.kernel.as_ref().map_or(0.0, |k| k.cache_size);
        let options =
            SmoOptions { tol: s.tol, max_iter: s.max_iter, report_every: s.report_every, bias: s.bias, cache_mb };
        let report = fit_smo(&self.problem, source, &mut self.alpha, &options, monitor)?;
        Ok((self.alpha, report))
    }
}

impl DesignJob for Fit<'_> {
    type Output = (Vec<f64>, M3lReport, Vec<f64>);
    fn run<D: Design>(mut self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let s = self.settings;
        let options =
            DcdOptions { tol: s.tol, max_iter: s.max_iter, seed: s.seed, bias: s.bias, shrinking: s.shrinking };
        let (report, z) = solve_dcd(&self.problem, x, &mut self.alpha, &options, monitor)?;
        Ok((self.alpha, report, z))
    }
}

/// Kernel M3L by SMO under `settings.kernel`; `problem` is a `toprank._options.M3lProblem`
/// and `x` the examples, or the Gram matrix for kernel="precomputed". Returns (dual_coef,
/// report, the largest |projected gradient|).
#[pyfunction]
#[pyo3(signature = (x, problem, settings, *, dual_coef=None, n_jobs=None, callback=None))]
pub(crate) fn m3l_fit_kernel<'py>(
    x: &Bound<'py, PyAny>,
    problem: &Bound<'py, PyAny>,
    settings: M3lSettings,
    dual_coef: Option<&Bound<'py, PyAny>>,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, FitReport, f64)> {
    let threads = threads::resolve(n_jobs)?;
    let arrays = M3lArrays::of(problem)?;
    let function = settings.kernel.as_ref().ok_or_else(|| invalid("kernel", "a kernel fit needs one"))?.function()?;
    let job = Fit::new(&arrays, &settings, dual_coef)?;
    let (alpha, report) = with_kernel(x, function, threads, callback, job)?;
    Ok((to_numpy(x.py(), alpha, &[arrays.n, arrays.labels])?, FitReport::from(&report), report.max_violation))
}

/// Linear M3L by dual coordinate descent with shrinking; `x` dense or CSR. Returns (Z:
/// n_labels × (n_features [+ 1 for the bias feature]), dual_coef, report, the largest
/// |projected gradient|).
#[pyfunction]
#[pyo3(signature = (x, problem, settings, *, dual_coef=None, n_jobs=None, callback=None))]
pub(crate) fn m3l_fit_linear<'py>(
    x: &Bound<'py, PyAny>,
    problem: &Bound<'py, PyAny>,
    settings: M3lSettings,
    dual_coef: Option<&Bound<'py, PyAny>>,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, FitReport, f64)> {
    let threads = threads::resolve(n_jobs)?;
    let arrays = M3lArrays::of(problem)?;
    let job = Fit::new(&arrays, &settings, dual_coef)?;
    let (alpha, report, z) = with_design(x, threads, callback, job)?;
    let (n, labels) = (arrays.n, arrays.labels);
    let width = z.len() / labels;
    let coef = to_numpy(x.py(), z, &[labels, width])?;
    Ok((coef, to_numpy(x.py(), alpha, &[n, labels])?, FitReport::from(&report), report.max_violation))
}
