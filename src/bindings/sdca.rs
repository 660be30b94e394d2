//! Bindings of the Prox-SDCA solvers: extract the design matrix (dense or CSR, zero-copy),
//! run the whole solve without the GIL on the requested pool, poll Ctrl-C and report
//! progress through a Python callback, return plain arrays and numbers.

use std::time::{Duration, Instant};

use numpy::{PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::errors::invalid;
use super::threads;
use crate::data::{CsrIndex, CsrRows, DenseRows, Design};
use crate::losses::TopKVariant;
use crate::solvers::sdca::{self, Examples, LinearModel, SdcaLoss, SdcaOptions, SdcaReport, TopKHinge};
use crate::solvers::{Monitor, Progress};
use crate::Real;

/// Below this many examples a parallel (CoCoA+) solve does not pay for its rounds.
const PARALLEL_MIN_ROWS: usize = 10_000;

/// How often the solver thread takes the GIL to check for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// Forwards progress to a Python callable and Ctrl-C (or a callback exception) to the
/// solver as a stop request; the Python error is re-raised after the solve.
pub(crate) struct PyMonitor {
    callback: Option<Py<PyAny>>,
    last_poll: Instant,
    pub(crate) error: Option<PyErr>,
}

impl PyMonitor {
    pub(crate) fn new(callback: Option<Py<PyAny>>) -> Self {
        Self { callback, last_poll: Instant::now(), error: None }
    }
}

impl Monitor for PyMonitor {
    fn report(&mut self, p: &Progress) {
        if self.error.is_some() {
            return;
        }
        if let Some(cb) = &self.callback {
            let args = (p.epoch, p.primal, p.dual, p.gap, p.elapsed.as_secs_f64());
            if let Err(e) = Python::attach(|py| cb.call1(py, args).map(|_| ())) {
                self.error = Some(e);
            }
        }
    }

    fn should_stop(&mut self) -> bool {
        if self.error.is_some() {
            return true;
        }
        if self.last_poll.elapsed() >= SIGNAL_POLL {
            self.last_poll = Instant::now();
            if let Err(e) = Python::attach(|py| py.check_signals()) {
                self.error = Some(e);
            }
        }
        self.error.is_some()
    }
}

/// The loss named by the facade.
pub(crate) fn make_loss(loss: &str, k: usize, smoothing: f64) -> PyResult<Box<dyn SdcaLoss>> {
    let hinge = |variant| -> Box<dyn SdcaLoss> { Box::new(TopKHinge { k, variant, smoothing }) };
    Ok(match loss {
        "alpha" => hinge(TopKVariant::Alpha),
        "beta" => hinge(TopKVariant::Beta),
        other => return Err(invalid("loss", format!("must be 'alpha' or 'beta', got {other:?}"))),
    })
}

/// Solver settings and data that do not depend on the design's type.
struct LinearJob<'a> {
    loss: &'a dyn SdcaLoss,
    y: &'a [usize],
    c: &'a [f64],
    m: usize,
    bias: Option<f64>,
    opts: SdcaOptions,
    parallel: Option<bool>,
    dual: Vec<f64>,
}

struct LinearFit {
    coef: Vec<f64>,
    width: usize,
    dual: Vec<f64>,
    report: SdcaReport,
}

impl LinearJob<'_> {
    fn run<D: Design>(mut self, x: &D, monitor: &mut PyMonitor) -> crate::Result<LinearFit> {
        let n = x.n_rows();
        let mut model = LinearModel::new(x, self.m, self.bias);
        let width = model.row_width();
        // A warm start: W = Σ_i x_i a_iᵀ, rebuilt from the dual rows so the pair is exact.
        let mut buf = crate::data::RowBuf::new();
        for (i, ai) in self.dual.chunks(self.m).enumerate() {
            if ai.iter().any(|&v| v != 0.0) {
                sdca::ScoreModel::apply(&mut model, i, ai, &mut buf);
            }
        }
        let ex = Examples { y: self.y, c: self.c };
        let blocks = rayon::current_num_threads();
        let parallel = self.parallel.unwrap_or(blocks >= 2 && n >= PARALLEL_MIN_ROWS);
        let report = if parallel {
            sdca::solve_cocoa(&mut model, self.loss, &ex, &mut self.dual, &self.opts, blocks.max(2), monitor)?
        } else {
            sdca::solve(&mut model, self.loss, &ex, &mut self.dual, &self.opts, monitor)?
        };
        Ok(LinearFit { coef: model.weights().to_vec(), width, dual: self.dual, report })
    }
}

fn run_csr<T: Real + numpy::Element, I: CsrIndex + numpy::Element>(
    x: &Bound<'_, PyAny>,
    n_features: usize,
    job: LinearJob<'_>,
    threads: Option<usize>,
    monitor: &mut PyMonitor,
) -> PyResult<LinearFit> {
    let data = x.getattr("data")?.extract::<PyReadonlyArray1<'_, T>>()?;
    let indices = x.getattr("indices")?.extract::<PyReadonlyArray1<'_, I>>()?;
    let indptr = x.getattr("indptr")?.extract::<PyReadonlyArray1<'_, I>>()?;
    let (data, indices, indptr) = (data.as_slice()?, indices.as_slice()?, indptr.as_slice()?);
    super::arrays::run_detached(x.py(), threads, || {
        let design = CsrRows::new(indptr, indices, data, n_features)?;
        job.run(&design, monitor)
    })
}

fn run_dense<T: Real + numpy::Element>(
    x: &Bound<'_, PyAny>,
    job: LinearJob<'_>,
    threads: Option<usize>,
    monitor: &mut PyMonitor,
) -> PyResult<LinearFit> {
    let arr = x.extract::<PyReadonlyArray2<'_, T>>()?;
    let (n, d) = (arr.shape()[0], arr.shape()[1]);
    let data = arr.as_slice().map_err(|_| invalid("X", "must be C-contiguous (the facade copies other layouts)"))?;
    super::arrays::run_detached(x.py(), threads, || {
        let design = DenseRows::new(data, n, d)?;
        job.run(&design, monitor)
    })
}

/// Linear Prox-SDCA fit (see `toprank.svm.TopKSVC` for the meaning of everything).
#[pyfunction]
#[pyo3(signature = (
    x, y, c, n_classes, *, loss, k, smoothing, bias, tol, max_epochs, check_every, seed,
    n_jobs=None, parallel=None, shrinking=true, dual_coef=None, callback=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sdca_fit_linear<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: PyReadonlyArray1<'py, i64>,
    c: PyReadonlyArray1<'py, f64>,
    n_classes: usize,
    loss: &str,
    k: usize,
    smoothing: f64,
    bias: Option<f64>,
    tol: f64,
    max_epochs: usize,
    check_every: usize,
    seed: u64,
    n_jobs: Option<i64>,
    parallel: Option<bool>,
    shrinking: bool,
    dual_coef: Option<PyReadonlyArray2<'py, f64>>,
    callback: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let threads = threads::resolve(n_jobs)?;
    let loss = make_loss(loss, k, smoothing)?;
    let y: Vec<usize> = y
        .as_array()
        .iter()
        .map(|&v| usize::try_from(v).map_err(|_| invalid("y", format!("label {v} is negative"))))
        .collect::<PyResult<_>>()?;
    let c = c.as_slice()?;
    let n = y.len();
    let dual = match &dual_coef {
        Some(a) if a.shape() == [n, n_classes] => a.as_array().iter().copied().collect(),
        Some(a) => return Err(invalid("dual_coef", format!("must have shape ({n}, {n_classes}), got {:?}", a.shape()))),
        None => vec![0.0; n * n_classes],
    };
    let opts = SdcaOptions { tol, max_epochs, check_every, seed, shrinking };
    let job = LinearJob { loss: &*loss, y: &y, c, m: n_classes, bias, opts, parallel, dual };
    let mut monitor = PyMonitor::new(callback);
    let fit = if x.hasattr("indptr")? {
        let (_, d): (usize, usize) = x.getattr("shape")?.extract()?;
        let dtype = x.getattr("data")?.getattr("dtype")?.str()?.to_string();
        let itype = x.getattr("indices")?.getattr("dtype")?.str()?.to_string();
        match (dtype.as_str(), itype.as_str()) {
            ("float64", "int32") => run_csr::<f64, i32>(x, d, job, threads, &mut monitor),
            ("float64", "int64") => run_csr::<f64, i64>(x, d, job, threads, &mut monitor),
            ("float32", "int32") => run_csr::<f32, i32>(x, d, job, threads, &mut monitor),
            ("float32", "int64") => run_csr::<f32, i64>(x, d, job, threads, &mut monitor),
            _ => Err(invalid("X", format!("sparse data must be float32/float64 with int32/int64 indices, got {dtype}/{itype}"))),
        }
    } else {
        let dtype = x.getattr("dtype")?.str()?.to_string();
        match dtype.as_str() {
            "float64" => run_dense::<f64>(x, job, threads, &mut monitor),
            "float32" => run_dense::<f32>(x, job, threads, &mut monitor),
            other => Err(invalid("X", format!("must be float32 or float64, got {other}"))),
        }
    };
    if let Some(err) = monitor.error.take() {
        return Err(err);
    }
    let fit = fit?;
    report_dict(py, fit.report, fit.dual, n, n_classes, Some((fit.coef, fit.width)))
}

/// The result dictionary shared by the linear and kernel fits.
pub(crate) fn report_dict<'py>(
    py: Python<'py>,
    report: SdcaReport,
    dual: Vec<f64>,
    n: usize,
    m: usize,
    coef: Option<(Vec<f64>, usize)>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let to_2d = |v: Vec<f64>, rows: usize, cols: usize| -> PyResult<Bound<'py, PyArray2<f64>>> {
        let arr = ndarray::Array2::from_shape_vec((rows, cols), v).map_err(|e| invalid("output", e.to_string()))?;
        Ok(numpy::IntoPyArray::into_pyarray(arr, py))
    };
    if let Some((w, width)) = coef {
        out.set_item("coef", to_2d(w, m, width)?)?;
    }
    out.set_item("dual_coef", to_2d(dual, n, m)?)?;
    out.set_item("status", report.status.as_str())?;
    out.set_item("epochs", report.epochs)?;
    out.set_item("primal", report.objectives.primal)?;
    out.set_item("dual", report.objectives.dual)?;
    out.set_item("gap", report.objectives.relative_gap())?;
    let history: Vec<(usize, f64, f64, f64, f64)> =
        report.history.iter().map(|p| (p.epoch, p.primal, p.dual, p.gap, p.elapsed.as_secs_f64())).collect();
    out.set_item("history", history)?;
    Ok(out)
}
