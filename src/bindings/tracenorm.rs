//! Binding of rank-one descent (`crate::solvers::tracenorm::descent`): a solver object
//! holding the problem's penalties and settings, whose `fit` runs the whole solve without
//! the GIL (interruptible, progress to a callback as every solver's, `monitor.rs`) on a
//! dense or CSR X (`design.rs`) or a product-quantized one (an object with `codebooks` and
//! `codes`), and returns a fit object: W, b, the atoms, the status and history, and what
//! the next point of a regularisation path starts from.

use ndarray::{Array1, Array2, Ix1, Ix2, Ix3};
use numpy::{IntoPyArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::arrays::array_in;
use super::design::{with_design, DesignJob};
use super::errors::invalid;
use super::monitor::{run_interruptible, PyMonitor};
use super::threads;
use crate::data::Design;
use crate::solvers::tracenorm::{self as tn, Atoms, Penalties, Start};

/// The penalties and settings of one trace-norm problem (checked by the core).
#[pyclass(frozen, module = "toprank._core")]
pub(crate) struct TraceNormSolver {
    options: tn::Options,
}

/// A finished fit.
#[pyclass(frozen, module = "toprank._core")]
pub(crate) struct TraceNormFit {
    fit: tn::Fit,
}

/// The work on X: the descent from `start`.
struct FitJob<'a> {
    labels: &'a [u32],
    m: usize,
    options: tn::Options,
    start: Option<Start>,
}

impl FitJob<'_> {
    fn solve<P: tn::Products + ?Sized>(self, x: &P, monitor: &mut PyMonitor<'_>) -> crate::Result<tn::Fit> {
        tn::rank_one_descent(x, self.labels, self.m, &self.options, self.start, monitor)
    }
}

impl DesignJob for FitJob<'_> {
    type Output = tn::Fit;
    // The first product of every fit, Xᵀ(P − Y) (or X U for a warm start), reads all of X,
    // and the core refuses a non-finite product naming X.
    const CHECKS_X_ITSELF: bool = true;
    fn run<D: Design>(self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<tn::Fit> {
        self.solve(&tn::Rows(x), monitor)
    }
}

fn array2(a: &Bound<'_, PyAny>, name: &str) -> PyResult<Array2<f64>> {
    Ok(array_in::<f64, Ix2>(a, name)?.as_array().to_owned())
}

fn array1(a: &Bound<'_, PyAny>, name: &str) -> PyResult<Array1<f64>> {
    Ok(array_in::<f64, Ix1>(a, name)?.as_array().to_owned())
}

/// A start: a previous fit on the same data (its atoms, their Z and gradient), or the
/// arrays (U, V, θ, b) of a fit on any data of the same shape.
fn start_of(start: &Bound<'_, PyAny>) -> PyResult<Start> {
    if let Ok(previous) = start.cast::<TraceNormFit>() {
        let fit = &previous.get().fit;
        return Ok(Start { atoms: fit.atoms.clone(), gradient: fit.gradient.clone() });
    }
    let (u, v, theta, b): (Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>) = start
        .extract()
        .map_err(|_| invalid("start", "must be a TraceNormFit or a tuple (U, V, theta, b) of float64 arrays"))?;
    let atoms = Atoms {
        u: array2(&u, "start")?,
        v: array2(&v, "start")?,
        theta: array1(&theta, "start")?,
        b: array1(&b, "start")?,
        z: Array2::zeros((0, 0)),
    };
    Ok(Start { atoms, gradient: None })
}

#[pymethods]
impl TraceNormSolver {
    #[new]
    #[pyo3(signature = (lambda_trace, lambda_fro, *, fit_intercept, tol, max_iter, subspace_every, seed))]
    fn new(
        lambda_trace: f64,
        lambda_fro: f64,
        fit_intercept: bool,
        tol: f64,
        max_iter: usize,
        subspace_every: usize,
        seed: u64,
    ) -> PyResult<Self> {
        let options = tn::Options {
            penalties: Penalties { trace: lambda_trace, fro: lambda_fro },
            fit_intercept,
            tol,
            max_iter,
            subspace_every,
            seed,
        };
        options.check().map_err(super::errors::to_py)?;
        Ok(Self { options })
    }

    /// R1D on X (dense, CSR, or an object with `codebooks` and `codes`) and labels y in
    /// 0..max(y), from `start` if given.
    #[pyo3(signature = (x, y, *, start=None, n_jobs=None, callback=None))]
    fn fit(
        &self,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        start: Option<&Bound<'_, PyAny>>,
        n_jobs: Option<i64>,
        callback: Option<Py<PyAny>>,
    ) -> PyResult<TraceNormFit> {
        let threads = threads::resolve(n_jobs)?;
        let labels = array_in::<u32, Ix1>(y, "y")?;
        let labels = labels.as_slice()?;
        let m = labels.iter().max().map_or(0, |&top| top as usize + 1);
        let start = start.map(start_of).transpose()?;
        let job = FitJob { labels, m, options: self.options, start };
        let fit = if x.hasattr("codebooks")? && x.hasattr("codes")? {
            let codes = array_in::<u8, Ix2>(&x.getattr("codes")?, "X")?;
            let books = array_in::<f32, Ix3>(&x.getattr("codebooks")?, "codebooks")?;
            let shape = books.shape().to_vec();
            let (codes, books) = (codes.as_slice()?, books.as_slice()?);
            run_interruptible(x.py(), threads, callback, |monitor| {
                let books = crate::pq::Codebooks::new(books, shape[0], shape[1], shape[2])?;
                job.solve(&tn::Coded::new(books, codes)?, monitor)
            })?
        } else {
            with_design(x, threads, callback, job)?
        };
        Ok(TraceNormFit { fit })
    }
}

type History = Vec<(usize, f64, f64, usize, f64)>;

#[pymethods]
impl TraceNormFit {
    /// W (n_features × n_classes).
    #[getter]
    fn coef<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.fit.atoms.w().into_pyarray(py).into_any()
    }
    #[getter]
    fn intercept<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.fit.atoms.b.clone().into_pyarray(py).into_any()
    }
    /// The atoms' weights: W's nonzero singular values, largest first.
    #[getter]
    fn singular_values<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.fit.atoms.theta.clone().into_pyarray(py).into_any()
    }
    /// W's left singular vectors (n_features × rank).
    #[getter]
    fn u<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.fit.atoms.u.clone().into_pyarray(py).into_any()
    }
    /// W's right singular vectors (n_classes × rank).
    #[getter]
    fn v<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.fit.atoms.v.clone().into_pyarray(py).into_any()
    }
    #[getter]
    fn rank(&self) -> usize {
        self.fit.rank()
    }
    #[getter]
    fn objective(&self) -> f64 {
        self.fit.objective
    }
    #[getter]
    fn n_iter(&self) -> usize {
        self.fit.n_iter
    }
    #[getter]
    fn status(&self) -> &'static str {
        self.fit.status.as_str()
    }
    /// (iteration, objective, σ_max(−∇), rank, seconds) per iteration.
    #[getter]
    fn history(&self) -> History {
        self.fit.history.iter().map(|r| (r.iteration, r.objective, r.sigma, r.rank, r.seconds)).collect()
    }
}
