//! Binding of the factorised ranker: a problem object, built once per fit from X, the
//! positive labels, the rows to visit and the settings, whose `epoch` runs one training
//! epoch and whose `objective` gives the full objective with its gradient (for tests and
//! diagnostics). The parameters θ = [U | V | b] and the optimiser's state come in as
//! NumPy arrays (float32 or float64, all of θ's dtype); an epoch runs without the GIL on
//! copies of them and returns the updated state as new arrays, so the caller's arrays
//! are never written. Ctrl-C stops an epoch between minibatches.

use ndarray::Ix1;
use pyo3::prelude::*;

use super::arrays::{array_exact, array_in, indices, to_numpy, with_float};
use super::design::with_design;
use crate::solvers::ranker::{Epoch, Objective, Problem, Settings};
use crate::threads;

// `toprank._options.RankerSettings`.
by_attribute!(Settings { n_labels, n_components, loss, k, eta, alpha, optimizer, learning_rate, batch_size });

/// The optimiser's state: θ, the first and second moments (of θ's dtype) and the steps
/// taken.
#[derive(FromPyObject)]
pub(crate) struct Training<'py> {
    theta: Bound<'py, PyAny>,
    first: Bound<'py, PyAny>,
    second: Bound<'py, PyAny>,
    steps: u64,
}

/// An epoch's new state for Python: (θ, first moment, second moment, steps taken).
type State<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, u64);

/// A ranker's training problem: X (read, and checked finite, at each call) and the
/// core's problem.
#[pyclass(module = "toprank._core", frozen)]
pub(crate) struct RankerProblem {
    x: Py<PyAny>,
    problem: Problem,
}

#[pymethods]
impl RankerProblem {
    /// X (dense or CSR), the positive labels `y` (an object with CSR `indptr` and
    /// `indices`), the rows to visit and the settings (`toprank._options.RankerSettings`,
    /// read by attribute; the loss and optimiser named by the core).
    #[new]
    fn new(x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>, rows: &Bound<'_, PyAny>, settings: Settings) -> PyResult<Self> {
        let labels = (indices(&y.getattr("indptr")?, "Y")?, indices(&y.getattr("indices")?, "Y")?);
        let (_, d): (usize, usize) = x.getattr("shape")?.extract()?;
        let problem = Problem::new(d, labels, indices(rows, "rows")?, &settings)?;
        Ok(Self { x: x.clone().unbind(), problem })
    }

    /// One epoch of minibatch training from the state `training`, the rows in the order
    /// of `seed`. Returns the new state (θ, first, second moment: new arrays of θ's
    /// dtype; the optimiser's step count) and the epoch's (mean training loss per pair,
    /// minibatches, whether Ctrl-C stopped it).
    #[pyo3(signature = (training, seed, *, n_jobs=None))]
    fn epoch<'py>(
        &self,
        py: Python<'py>,
        training: Training<'py>,
        seed: u64,
        n_jobs: Option<i64>,
    ) -> PyResult<(State<'py>, (f64, usize, bool))> {
        let threads = threads::resolve(n_jobs)?;
        let Training { theta, first, second, steps } = &training;
        with_float!(theta, "theta", |T| {
            let copy = |a, name| Ok::<_, PyErr>(array_exact::<T, Ix1>(a, name, "theta")?.as_slice()?.to_vec());
            let state = [copy(theta, "theta")?, copy(first, "first")?, copy(second, "second")?];
            let job = Epoch { problem: &self.problem, state, steps: *steps, seed };
            let ([theta, first, second], steps, report) = with_design(self.x.bind(py), threads, None, job)?;
            let out = |values: Vec<T>| to_numpy(py, values, &[self.problem.shape.parameters()]);
            let state = (out(theta)?, out(first)?, out(second)?, steps);
            Ok((state, (report.mean_loss, report.steps, report.interrupted)))
        })
    }

    /// The training objective F(θ) over the rows and its gradient (of θ's dtype).
    #[pyo3(signature = (theta, *, n_jobs=None))]
    fn objective<'py>(
        &self,
        py: Python<'py>,
        theta: &Bound<'py, PyAny>,
        n_jobs: Option<i64>,
    ) -> PyResult<(f64, Bound<'py, PyAny>)> {
        let threads = threads::resolve(n_jobs)?;
        with_float!(theta, "theta", |T| {
            let theta = array_in::<T, Ix1>(theta, "theta")?;
            let (value, grad) =
                with_design(self.x.bind(py), threads, None, Objective(&self.problem, theta.as_slice()?))?;
            let size = grad.len();
            Ok((value, to_numpy(py, grad, &[size])?))
        })
    }
}
