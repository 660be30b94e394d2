//! Bindings of the Prox-SDCA solvers: extract the design matrix (dense or CSR, zero-copy),
//! run the whole solve without the GIL on the requested pool, poll Ctrl-C and report
//! progress through a Python callback, return plain arrays and numbers.

use ndarray::{Ix1, Ix2, Ix3};
use numpy::{PyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::arrays::{array_in, check_finite_rows, check_finite_small};
use super::design::{with_design, with_kernel, DesignJob, KernelJob};
use super::errors::invalid;
use super::monitor::{run_interruptible, PyMonitor};
use super::threads;
use crate::data::{DenseRows, Design};
use crate::kernels::{ColumnCache, DataKernel, KernelFunction, KernelSource};
use crate::losses::TopKVariant;
use crate::solvers::sdca::{
    self, Examples, KernelModel, LinearModel, SdcaLoss, SdcaOptions, SdcaReport, Softmax, TopKEntropy, TopKHinge,
};

/// Below this many examples a parallel (CoCoA+) solve does not pay for its rounds.
const PARALLEL_MIN_ROWS: usize = 10_000;

/// The loss named by the facade.
pub(crate) fn make_loss(loss: &str, k: usize, smoothing: f64) -> PyResult<Box<dyn SdcaLoss>> {
    let hinge = |variant| -> Box<dyn SdcaLoss> { Box::new(TopKHinge { k, variant, smoothing }) };
    Ok(match loss {
        "alpha" => hinge(TopKVariant::Alpha),
        "beta" => hinge(TopKVariant::Beta),
        "softmax" => Box::new(Softmax),
        "entropy" => Box::new(TopKEntropy { k }),
        other => {
            return Err(invalid("loss", format!("must be 'alpha', 'beta', 'softmax' or 'entropy', got {other:?}")))
        }
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

impl DesignJob for LinearJob<'_> {
    type Output = LinearFit;
    fn run<D: Design>(mut self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<LinearFit> {
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
        let blocks = parallel.then_some(blocks.max(2));
        let report = sdca::solve_linear(&mut model, self.loss, &ex, &mut self.dual, &self.opts, blocks, monitor)?;
        Ok(LinearFit { coef: model.weights().to_vec(), width, dual: self.dual, report })
    }
}

/// Product-quantized rows: `x` holds the codes (n × M uint8), decoded row by row.
fn run_coded(
    x: &Bound<'_, PyAny>,
    codebooks: &Bound<'_, PyAny>,
    job: LinearJob<'_>,
    threads: Option<usize>,
    callback: Option<Py<PyAny>>,
) -> PyResult<LinearFit> {
    let codes = array_in::<u8, Ix2>(x, "X")?;
    let codes = codes.as_slice()?;
    let books = array_in::<f32, Ix3>(codebooks, "codebooks")?;
    let shape = books.shape().to_vec();
    let books = books.as_slice()?;
    run_interruptible(x.py(), threads, callback, |monitor| {
        let books = crate::pq::Codebooks::new(books, shape[0], shape[1], shape[2])?;
        let design = crate::pq::CodedRows::new(books, codes)?;
        job.run(&design, monitor)
    })
}

/// Linear Prox-SDCA fit (see `toprank.svm.TopKSVC` for the meaning of everything).
#[pyfunction]
#[pyo3(signature = (
    x, y, c, n_classes, *, loss, k, smoothing, bias, tol, max_epochs, check_every, seed,
    n_jobs=None, parallel=None, shrinking=true, dual_coef=None, callback=None, codebooks=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sdca_fit_linear<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    c: &Bound<'py, PyAny>,
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
    dual_coef: Option<&Bound<'py, PyAny>>,
    callback: Option<Py<PyAny>>,
    codebooks: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let threads = threads::resolve(n_jobs)?;
    let loss = make_loss(loss, k, smoothing)?;
    let y = labels_of(y)?;
    let c = weights(c)?;
    let c = c.as_slice()?;
    let n = y.len();
    let dual = initial_dual(dual_coef, n, n_classes)?;
    let opts = SdcaOptions { tol, max_epochs, check_every, seed, shrinking };
    let job = LinearJob { loss: &*loss, y: &y, c, m: n_classes, bias, opts, parallel, dual };
    let fit = if let Some(books) = codebooks {
        run_coded(x, books, job, threads, callback)
    } else {
        with_design(x, threads, callback, job)
    };
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

/// The kernel function named by the facade ("precomputed" is handled by the caller).
pub(crate) fn kernel_function(kernel: &str, gamma: f64, degree: u32, coef0: f64) -> PyResult<KernelFunction> {
    let f = match kernel {
        "linear" => KernelFunction::Linear,
        "rbf" => KernelFunction::Rbf { gamma },
        "poly" => KernelFunction::Poly { gamma, degree, coef0 },
        other => {
            return Err(invalid("kernel", format!("must be 'linear', 'rbf', 'poly' or 'precomputed', got {other:?}")))
        }
    };
    f.check().map_err(super::errors::to_py)?;
    Ok(f)
}

/// Kernel Prox-SDCA on any kernel source (scores A·K_i, no intercept).
#[allow(clippy::too_many_arguments)]
/// A kernel SDCA solve, whatever the source of the kernel columns.
struct KernelFit<'a> {
    loss: &'a dyn SdcaLoss,
    ex: Examples<'a>,
    m: usize,
    cache_mb: f64,
    dual: Vec<f64>,
    opts: SdcaOptions,
}

impl KernelJob for KernelFit<'_> {
    type Output = (Vec<f64>, SdcaReport);
    fn run<S: KernelSource + ?Sized>(mut self, source: &S, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let cache = ColumnCache::new(source.n(), self.cache_mb)?;
        let mut model = KernelModel::new(source, self.m, None, cache)?;
        model.sync_dual(&self.dual)?;
        let report = sdca::solve(&mut model, self.loss, &self.ex, &mut self.dual, &self.opts, monitor)?;
        Ok((self.dual, report))
    }
}

/// Kernel Prox-SDCA fit: `x` is the dense training data, or the n × n Gram matrix for
/// kernel="precomputed" (any C-contiguous float array, e.g. an `np.memmap`; not copied).
#[pyfunction]
#[pyo3(signature = (
    x, y, c, n_classes, *, kernel, gamma, degree, coef0, cache_size, loss, k, smoothing, tol,
    max_epochs, check_every, seed, n_jobs=None, shrinking=true, dual_coef=None, callback=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sdca_fit_kernel<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    c: &Bound<'py, PyAny>,
    n_classes: usize,
    kernel: &str,
    gamma: f64,
    degree: u32,
    coef0: f64,
    cache_size: f64,
    loss: &str,
    k: usize,
    smoothing: f64,
    tol: f64,
    max_epochs: usize,
    check_every: usize,
    seed: u64,
    n_jobs: Option<i64>,
    shrinking: bool,
    dual_coef: Option<&Bound<'py, PyAny>>,
    callback: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let threads = threads::resolve(n_jobs)?;
    let loss = make_loss(loss, k, smoothing)?;
    let y = labels_of(y)?;
    let c = weights(c)?;
    let c = c.as_slice()?;
    let (n, m) = (y.len(), n_classes);
    let dual = initial_dual(dual_coef, n, m)?;
    let opts = SdcaOptions { tol, max_epochs, check_every, seed, shrinking };
    let ex = Examples { y: &y, c };
    let loss = &*loss;
    let f = if kernel == "precomputed" { None } else { Some(kernel_function(kernel, gamma, degree, coef0)?) };
    let job = KernelFit { loss, ex, m, cache_mb: cache_size, dual, opts };
    let (dual, report) = with_kernel(x, f, threads, callback, job)?;
    report_dict(py, report, dual, n, m, None)
}

/// K(z_r, x_j) for all test rows r and training rows j: the (n_z, n_x) cross kernel that
/// kernel models predict with.
#[pyfunction]
#[pyo3(signature = (z, x, *, kernel, gamma, degree, coef0, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn kernel_cross<'py>(
    py: Python<'py>,
    z: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    kernel: &str,
    gamma: f64,
    degree: u32,
    coef0: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let threads = threads::resolve(n_jobs)?;
    let f = kernel_function(kernel, gamma, degree, coef0)?;
    let (z, x) = (array_in::<f64, Ix2>(z, "X")?, array_in::<f64, Ix2>(x, "X_fit")?);
    let (nz, zd, nx, d) = (z.shape()[0], z.shape()[1], x.shape()[0], x.shape()[1]);
    let (zs, xs) = (z.as_slice()?, x.as_slice()?);
    let out = super::arrays::run_detached(py, threads, || {
        check_finite_rows(zs, zd, "X")?;
        check_finite_rows(xs, d, "X_fit")?;
        let train = DenseRows::new(xs, nx, d)?;
        let test = DenseRows::new(zs, nz, zd)?;
        let source = DataKernel::new(&train, f)?;
        let mut out = vec![0.0; nz * nx];
        source.cross_into(&test, 0..nz, &mut out)?;
        Ok(out)
    })?;
    let arr = ndarray::Array2::from_shape_vec((nz, nx), out).map_err(|e| invalid("output", e.to_string()))?;
    Ok(numpy::IntoPyArray::into_pyarray(arr, py))
}

/// Class labels (an int64 array, or a narrower integer one), each >= 0.
pub(crate) fn labels_of(y: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let y = array_in::<i64, Ix1>(y, "y")?;
    y.as_slice()?
        .iter()
        .map(|&v| usize::try_from(v).map_err(|_| invalid("y", format!("label {v} is negative"))))
        .collect()
}

/// The examples' weights c_i (float64; a float32 array is converted), checked finite.
pub(crate) fn weights<'py>(c: &Bound<'py, PyAny>) -> PyResult<numpy::PyReadonlyArray1<'py, f64>> {
    let c = array_in::<f64, Ix1>(c, "c")?;
    check_finite_small(c.as_slice()?, "c")?;
    Ok(c)
}

fn initial_dual(dual_coef: Option<&Bound<'_, PyAny>>, n: usize, m: usize) -> PyResult<Vec<f64>> {
    let Some(a) = dual_coef else { return Ok(vec![0.0; n * m]) };
    let a = array_in::<f64, Ix2>(a, "dual_coef")?;
    if a.shape() != [n, m] {
        return Err(invalid("dual_coef", format!("must have shape ({n}, {m}), got {:?}", a.shape())));
    }
    check_finite_small(a.as_slice()?, "dual_coef")?;
    Ok(a.as_slice()?.to_vec())
}
