//! Binding of rank-one descent (`crate::solvers::tracenorm`): a solver object holding the
//! problem's settings, whose `fit` runs the whole solve without the GIL (interruptible,
//! progress to a callback, `monitor.rs`) on a dense, CSR or product-quantized X
//! (`design.rs`), and a fit object.

use ndarray::{Array, Dimension, Ix1, Ix2};
use numpy::{IntoPyArray, PyArray, ToPyArray};
use pyo3::prelude::*;

use super::arrays::array_in;
use super::design::with_design;
use super::errors::invalid;
use crate::solvers::tracenorm::{self as tn, Start};

/// The penalties and settings of one trace-norm problem (checked by the core).
#[pyclass(frozen, module = "toprank._core")]
pub(crate) struct TraceNormSolver {
    options: tn::Options,
}

/// A finished fit (history: iteration, objective, σ_max(−∇), rank, seconds per iteration).
#[pyclass(frozen, module = "toprank._core")]
pub(crate) struct TraceNormFit {
    fit: tn::Fit,
    #[pyo3(get)]
    rank: usize,
    #[pyo3(get)]
    objective: f64,
    #[pyo3(get)]
    n_iter: usize,
    #[pyo3(get)]
    status: &'static str,
    #[pyo3(get)]
    history: Vec<(usize, f64, f64, usize, f64)>,
}

/// A start: a previous fit on the same data, or the arrays (U, V, θ, b) of any fit.
fn start_of(start: &Bound<'_, PyAny>) -> PyResult<Start> {
    fn owned<D: Dimension>(a: &Bound<'_, PyAny>) -> PyResult<Array<f64, D>> {
        Ok(array_in::<f64, D>(a, "start")?.as_array().to_owned())
    }
    if let Ok(previous) = start.cast::<TraceNormFit>() {
        return Ok(previous.get().fit.next_start());
    }
    let (u, v, theta, b): (Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>) = start
        .extract()
        .map_err(|_| invalid("start", "must be a TraceNormFit or a tuple (U, V, theta, b) of float64 arrays"))?;
    Ok(Start::from_atoms(owned(&u)?, owned(&v)?, owned(&theta)?, owned(&b)?))
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
        let penalties = (lambda_trace, lambda_fro);
        Ok(Self { options: tn::Options::new(penalties, fit_intercept, tol, max_iter, subspace_every, seed)? })
    }

    /// R1D on X and labels y in 0..max(y), weighted by `sample_weight` if given, from
    /// `start` if given.
    #[pyo3(signature = (x, y, *, sample_weight=None, start=None, n_jobs=None, callback=None))]
    fn fit(
        &self,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        sample_weight: Option<&Bound<'_, PyAny>>,
        start: Option<&Bound<'_, PyAny>>,
        n_jobs: Option<i64>,
        callback: Option<Py<PyAny>>,
    ) -> PyResult<TraceNormFit> {
        let threads = crate::threads::resolve(n_jobs)?;
        let labels = array_in::<u32, Ix1>(y, "y")?;
        let weights = sample_weight.map(|w| array_in::<f64, Ix1>(w, "sample_weight")).transpose()?;
        let weights = weights.as_ref().map(|w| w.as_slice()).transpose()?;
        let job = tn::FitLabels(labels.as_slice()?, weights, self.options, start.map(start_of).transpose()?);
        let fit = with_design(x, threads, callback, job)?;
        let history = fit.history.iter().map(|r| (r.iteration, r.objective, r.sigma, r.rank, r.seconds)).collect();
        let (rank, objective, n_iter, status) = (fit.rank(), fit.objective, fit.n_iter, fit.status.as_str());
        Ok(TraceNormFit { fit, rank, objective, n_iter, status, history })
    }
}

type Out<'py, D> = Bound<'py, PyArray<f64, D>>;

#[pymethods]
impl TraceNormFit {
    /// W (n_features × n_classes).
    #[getter]
    fn coef<'py>(&self, py: Python<'py>) -> Out<'py, Ix2> {
        self.fit.atoms.w().into_pyarray(py)
    }
    /// (U, V, θ, b): W's left (n_features × rank) and right (n_classes × rank) singular
    /// vectors, its nonzero singular values (largest first), and the intercept.
    #[getter]
    fn atoms<'py>(&self, py: Python<'py>) -> (Out<'py, Ix2>, Out<'py, Ix2>, Out<'py, Ix1>, Out<'py, Ix1>) {
        let a = &self.fit.atoms;
        (a.u.to_pyarray(py), a.v.to_pyarray(py), a.theta.to_pyarray(py), a.b.to_pyarray(py))
    }
}
