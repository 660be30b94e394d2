//! Bindings of the ranking-at-the-top solvers (TopPush, TopPushK, Pat&Mat): the kernel
//! from the data or a precomputed Gram matrix (not copied), the whole solve without the
//! GIL, Ctrl-C and progress as for Prox-SDCA.

use ndarray::Ix1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::arrays::array_in;
use super::design::{with_kernel, KernelJob};
use super::errors::invalid;
use super::monitor::PyMonitor;
use super::sdca::kernel_function;
use super::threads;
use crate::kernels::{ColumnCache, KernelSource};
use crate::solvers::attop::{solve_attop, AtTop, AtTopOptions, AtTopReport, AtTopSolution, Method, Surrogate};

fn problem(method: &str, k: usize, tau: f64, surrogate: &str, scale: f64, c: f64) -> PyResult<AtTop> {
    let method = match method {
        "toppushk" => Method::TopPushK { k },
        "patmat" => Method::PatMat { tau },
        other => return Err(invalid("method", format!("must be 'toppushk' or 'patmat', got {other:?}"))),
    };
    let surrogate = match surrogate {
        "quadratic" => Surrogate::Quadratic,
        "hinge" => Surrogate::Hinge,
        other => return Err(invalid("surrogate", format!("must be 'quadratic' or 'hinge', got {other:?}"))),
    };
    Ok(AtTop { method, surrogate, scale, c })
}

/// A TopPush/Pat&Mat solve, whatever the source of the kernel columns.
struct AtTopFit<'a> {
    problem: AtTop,
    positive: &'a [bool],
    cache_mb: f64,
    opts: AtTopOptions,
}

impl KernelJob for AtTopFit<'_> {
    type Output = (AtTopSolution, AtTopReport, [u64; 2]);
    fn run<S: KernelSource + ?Sized>(self, source: &S, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let mut cache = ColumnCache::new(source.n(), self.cache_mb)?;
        let (solution, report) = solve_attop(&self.problem, source, &mut cache, self.positive, &self.opts, monitor)?;
        Ok((solution, report, [cache.hits(), cache.misses()]))
    }
}

/// Fits TopPushK (K = 1: TopPush) or Pat&Mat; `x` is the dense training data, or the
/// n × n Gram matrix for kernel="precomputed" (any float array; a C-ordered `np.memmap`
/// is read in place). `positive[i]` is true for the positive class.
#[pyfunction]
#[pyo3(signature = (
    x, positive, *, method, k, tau, surrogate, scale, c, kernel, gamma, degree, coef0, cache_size,
    tol, max_iter, check_every, seed, reuse=0.5, n_jobs=None, callback=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn attop_fit<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    positive: &Bound<'py, PyAny>,
    method: &str,
    k: usize,
    tau: f64,
    surrogate: &str,
    scale: f64,
    c: f64,
    kernel: &str,
    gamma: f64,
    degree: u32,
    coef0: f64,
    cache_size: f64,
    tol: f64,
    max_iter: usize,
    check_every: usize,
    seed: u64,
    reuse: f64,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let threads = threads::resolve(n_jobs)?;
    let problem = problem(method, k, tau, surrogate, scale, c)?;
    if !(0.0..=1.0).contains(&reuse) {
        return Err(invalid("reuse", format!("must lie in [0, 1], got {reuse}")));
    }
    let opts = AtTopOptions { tol, max_iter, check_every, seed, reuse };
    let positive = array_in::<bool, Ix1>(positive, "y")?;
    let positive = positive.as_slice()?;
    let f = if kernel == "precomputed" { None } else { Some(kernel_function(kernel, gamma, degree, coef0)?) };
    let job = AtTopFit { problem, positive, cache_mb: cache_size, opts };
    let (solution, report, cache) = with_kernel(x, f, threads, callback, job)?;
    let out = PyDict::new(py);
    out.set_item("dual_coef", numpy::PyArray1::from_vec(py, solution.v))?;
    out.set_item("decision", numpy::PyArray1::from_vec(py, solution.f))?;
    out.set_item("threshold", report.objectives.threshold)?;
    out.set_item("status", report.status.as_str())?;
    out.set_item("iterations", report.iterations)?;
    out.set_item("primal", report.objectives.primal)?;
    out.set_item("dual", report.objectives.dual)?;
    out.set_item("gap", report.objectives.relative_gap())?;
    let history: Vec<(usize, f64, f64, f64, f64)> =
        report.history.iter().map(|p| (p.epoch, p.primal, p.dual, p.gap, p.elapsed.as_secs_f64())).collect();
    out.set_item("history", history)?;
    out.set_item("cache_hits", cache[0])?;
    out.set_item("cache_misses", cache[1])?;
    Ok(out)
}
