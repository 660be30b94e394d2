//! Bindings of the Prox-SDCA fits: the design matrix (dense, CSR or product-quantized
//! codes) or the kernel in, one core call without the GIL (`solvers::sdca::fit_linear`,
//! `solvers::sdca::solve`), the arrays and a `FitReport` out.

use ndarray::{Ix1, Ix2, Ix3};
use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;

use super::arrays::{array_in, check_finite_rows, check_finite_small, to_numpy};
use super::design::{with_design, with_kernel, DesignJob, KernelJob};
use super::errors::invalid;
use super::monitor::{run_interruptible, PyMonitor};
use super::report::FitReport;
use super::threads;
use crate::data::{DenseRows, Design};
use crate::kernels::{ColumnCache, DataKernel, KernelFunction, KernelSource};
use crate::losses::TopKVariant;
use crate::solvers::sdca::{
    self, Examples, KernelModel, LinearModel, SdcaLoss, SdcaOptions, SdcaReport, Softmax, TopKEntropy, TopKHinge,
};

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

/// `toprank._options.KernelSettings`.
#[derive(FromPyObject)]
pub(crate) struct KernelSettings {
    kernel: String,
    gamma: f64,
    degree: u32,
    coef0: f64,
    pub(crate) cache_size: f64,
}

impl KernelSettings {
    /// The kernel function, or None for a precomputed Gram matrix.
    pub(crate) fn function(&self) -> PyResult<Option<KernelFunction>> {
        let (gamma, degree, coef0) = (self.gamma, self.degree, self.coef0);
        let f = match self.kernel.as_str() {
            "precomputed" => return Ok(None),
            "linear" => KernelFunction::Linear,
            "rbf" => KernelFunction::Rbf { gamma },
            "poly" => KernelFunction::Poly { gamma, degree, coef0 },
            other => {
                return Err(invalid(
                    "kernel",
                    format!("must be 'linear', 'rbf', 'poly' or 'precomputed', got {other:?}"),
                ))
            }
        };
        f.check().map_err(super::errors::to_py)?;
        Ok(Some(f))
    }
}

/// `toprank._options.SdcaSettings`.
#[derive(FromPyObject)]
pub(crate) struct SdcaSettings {
    n_classes: usize,
    loss: String,
    k: usize,
    smoothing: f64,
    tol: f64,
    max_epochs: usize,
    check_every: usize,
    seed: u64,
    shrinking: bool,
    bias: Option<f64>,
    parallel: Option<bool>,
    kernel: Option<KernelSettings>,
}

impl SdcaSettings {
    fn options(&self) -> SdcaOptions {
        let (tol, max_epochs, check_every, seed, shrinking) =
            (self.tol, self.max_epochs, self.check_every, self.seed, self.shrinking);
        SdcaOptions { tol, max_epochs, check_every, seed, shrinking }
    }
}

/// What both fits solve: the loss, the examples' labels and weights, the dual rows to
/// start from (n × m, m classes: zeros, or `dual_coef`) and the settings.
struct Problem {
    loss: Box<dyn SdcaLoss>,
    y: Vec<usize>,
    c: Vec<f64>,
    dual: Vec<f64>,
    m: usize,
    settings: SdcaSettings,
}

impl Problem {
    fn new(
        y: &Bound<'_, PyAny>,
        c: &Bound<'_, PyAny>,
        dual: Option<&Bound<'_, PyAny>>,
        settings: SdcaSettings,
    ) -> PyResult<Self> {
        let loss = make_loss(&settings.loss, settings.k, settings.smoothing)?;
        let (y, c) = (labels_of(y)?, weights(c)?.as_slice()?.to_vec());
        let m = settings.n_classes;
        let dual = initial_dual(dual, y.len(), m)?;
        Ok(Self { loss, y, c, dual, m, settings })
    }
}

/// A linear fit: the weights (m × width), their width, the dual rows and the report.
impl DesignJob for Problem {
    type Output = (Vec<f64>, usize, Vec<f64>, SdcaReport);
    fn run<D: Design>(mut self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let mut model = LinearModel::new(x, self.m, self.settings.bias);
        let (ex, opts) = (Examples { y: &self.y, c: &self.c }, self.settings.options());
        let report =
            sdca::fit_linear(&mut model, &*self.loss, &ex, &mut self.dual, &opts, self.settings.parallel, monitor)?;
        Ok((model.weights().to_vec(), model.row_width(), self.dual, report))
    }
}

/// A kernel fit (scores A·K_i, no intercept): the dual rows and the report.
impl KernelJob for Problem {
    type Output = (Vec<f64>, SdcaReport);
    fn run<S: KernelSource + ?Sized>(mut self, source: &S, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let cache_mb = self.settings.kernel.as_ref().map_or(0.0, |k| k.cache_size);
        let mut model = KernelModel::new(source, self.m, None, ColumnCache::new(source.n(), cache_mb)?)?;
        model.sync_dual(&self.dual)?;
        let (ex, opts) = (Examples { y: &self.y, c: &self.c }, self.settings.options());
        let report = sdca::solve(&mut model, &*self.loss, &ex, &mut self.dual, &opts, monitor)?;
        Ok((self.dual, report))
    }
}

/// Linear Prox-SDCA fit (see `toprank.svm.TopKSVC`) from the dual rows `dual_coef`
/// (None: a cold start). `x` is dense or CSR, or has `codes` (n × M uint8) and
/// `codebooks` (a `toprank.pq.CompressedMatrix`, decoded row by row). Returns (coef,
/// dual_coef, report).
#[pyfunction]
#[pyo3(signature = (x, y, c, settings, *, dual_coef=None, n_jobs=None, callback=None))]
pub(crate) fn sdca_fit_linear<'py>(
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    c: &Bound<'py, PyAny>,
    settings: SdcaSettings,
    dual_coef: Option<&Bound<'py, PyAny>>,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, FitReport)> {
    let threads = threads::resolve(n_jobs)?;
    let job = Problem::new(y, c, dual_coef, settings)?;
    let (n, m) = (job.y.len(), job.m);
    let (coef, width, dual, report) = if x.hasattr("codebooks")? {
        let codes = array_in::<u8, Ix2>(&x.getattr("codes")?, "X")?;
        let books = array_in::<f32, Ix3>(&x.getattr("codebooks")?, "codebooks")?;
        let (shape, codes, books) = (books.shape().to_vec(), codes.as_slice()?, books.as_slice()?);
        run_interruptible(x.py(), threads, callback, |monitor| {
            let books = crate::pq::Codebooks::new(books, shape[0], shape[1], shape[2])?;
            DesignJob::run(job, &crate::pq::CodedRows::new(books, codes)?, monitor)
        })?
    } else {
        with_design(x, threads, callback, job)?
    };
    let report = FitReport::from(&report);
    Ok((to_numpy(x.py(), coef, &[m, width])?, to_numpy(x.py(), dual, &[n, m])?, report))
}

/// Kernel Prox-SDCA fit under `settings.kernel`: `x` is the dense training data, or the
/// n × n Gram matrix for kernel="precomputed" (any C-contiguous float array, e.g. an
/// `np.memmap`; not copied). Returns (dual_coef, report).
#[pyfunction]
#[pyo3(signature = (x, y, c, settings, *, dual_coef=None, n_jobs=None, callback=None))]
pub(crate) fn sdca_fit_kernel<'py>(
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    c: &Bound<'py, PyAny>,
    settings: SdcaSettings,
    dual_coef: Option<&Bound<'py, PyAny>>,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, FitReport)> {
    let threads = threads::resolve(n_jobs)?;
    let function = settings.kernel.as_ref().ok_or_else(|| invalid("kernel", "a kernel fit needs one"))?.function()?;
    let job = Problem::new(y, c, dual_coef, settings)?;
    let (n, m) = (job.y.len(), job.m);
    let (dual, report) = with_kernel(x, function, threads, callback, job)?;
    Ok((to_numpy(x.py(), dual, &[n, m])?, FitReport::from(&report)))
}

/// K(z_r, x_j) for all test rows r and training rows j: the (n_z, n_x) cross kernel that
/// kernel models predict with.
#[pyfunction]
#[pyo3(signature = (z, x, kernel, *, n_jobs=None))]
pub(crate) fn kernel_cross<'py>(
    z: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    kernel: KernelSettings,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let threads = threads::resolve(n_jobs)?;
    let f = kernel.function()?.ok_or_else(|| invalid("kernel", "a precomputed kernel has no cross kernel"))?;
    let (z, x) = (array_in::<f64, Ix2>(z, "X")?, array_in::<f64, Ix2>(x, "X_fit")?);
    let (nz, zd, nx, d) = (z.shape()[0], z.shape()[1], x.shape()[0], x.shape()[1]);
    let (zs, xs) = (z.as_slice()?, x.as_slice()?);
    let out = super::arrays::run_detached(z.py(), threads, || {
        check_finite_rows(zs, zd, "X")?;
        check_finite_rows(xs, d, "X_fit")?;
        let (train, test) = (DenseRows::new(xs, nx, d)?, DenseRows::new(zs, nz, zd)?);
        let mut out = vec![0.0; nz * nx];
        DataKernel::new(&train, f)?.cross_into(&test, 0..nz, &mut out)?;
        Ok(out)
    })?;
    to_numpy(z.py(), out, &[nz, nx])
}

/// Class labels (an int64 array, or a narrower integer one), each >= 0.
pub(crate) fn labels_of(y: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let y = array_in::<i64, Ix1>(y, "y")?;
    y.as_slice()?
        .iter()
        .map(|&v| usize::try_from(v).map_err(|_| invalid("y", format!("label {v} is negative"))))
        .collect()
}

/// The dual rows to start from: zeros, or `dual_coef` (n × m, checked finite).
pub(crate) fn initial_dual(dual_coef: Option<&Bound<'_, PyAny>>, n: usize, m: usize) -> PyResult<Vec<f64>> {
    let Some(a) = dual_coef else { return Ok(vec![0.0; n * m]) };
    let a = array_in::<f64, Ix2>(a, "dual_coef")?;
    if a.shape() != [n, m] {
        return Err(invalid("dual_coef", format!("must have shape ({n}, {m}), got {:?}", a.shape())));
    }
    check_finite_small(a.as_slice()?, "dual_coef")?;
    Ok(a.as_slice()?.to_vec())
}

/// The examples' weights c_i (float64; a float32 array is converted), checked finite.
pub(crate) fn weights<'py>(c: &Bound<'py, PyAny>) -> PyResult<numpy::PyReadonlyArray1<'py, f64>> {
    let c = array_in::<f64, Ix1>(c, "c")?;
    check_finite_small(c.as_slice()?, "c")?;
    Ok(c)
}
