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
use super::design::{with_design, DesignJob};
use super::monitor::PyMonitor;
use crate::data::Design;
use crate::solvers::ranker::{
    objective, train_epoch, EpochReport, LabelLoss, Labels, Optimizer, OptimizerState, Param, Shape, TrainOptions,
};
use crate::threads;

/// `toprank._options.RankerSettings`.
#[derive(FromPyObject)]
pub(crate) struct RankerSettings {
    n_labels: usize,
    n_components: usize,
    loss: String,
    k: usize,
    eta: f64,
    alpha: f64,
    optimizer: String,
    learning_rate: f64,
    batch_size: usize,
}

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

/// A ranker's training problem: X (read, and checked finite, at each call), the positive
/// labels as CSR lists, the rows to visit, θ's shape and the training options.
#[pyclass(module = "toprank._core", frozen)]
pub(crate) struct RankerProblem {
    x: Py<PyAny>,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    rows: Vec<usize>,
    shape: Shape,
    options: TrainOptions,
}

impl RankerProblem {
    fn labels(&self, n_rows: usize) -> crate::Result<Labels<'_>> {
        Labels::new(&self.indptr, &self.indices, n_rows, self.shape.labels)
    }
}

/// An epoch on its own copy of the state [θ, first, second] after `steps` steps, its
/// examples in the order of `seed`.
struct EpochJob<'a, T> {
    problem: &'a RankerProblem,
    state: [Vec<T>; 3],
    steps: u64,
    seed: u64,
}

impl<T: Param> DesignJob for EpochJob<'_, T> {
    type Output = ([Vec<T>; 3], u64, EpochReport);
    fn run<D: Design>(self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let (p, labels) = (self.problem, self.problem.labels(x.n_rows())?);
        let [mut theta, mut first, mut second] = self.state;
        let mut state = OptimizerState { first: &mut first, second: &mut second, steps: self.steps };
        let (options, seed) = (&p.options, self.seed);
        let report = train_epoch(x, &labels, &p.rows, p.shape, &mut theta, &mut state, options, seed, monitor)?;
        let steps = state.steps;
        Ok(([theta, first, second], steps, report))
    }
}

/// The objective and its gradient at θ.
struct ObjectiveJob<'a, T>(&'a RankerProblem, &'a [T]);

impl<T: Param> DesignJob for ObjectiveJob<'_, T> {
    type Output = (f64, Vec<T>);
    fn run<D: Design>(self, x: &D, _monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let (p, o) = (self.0, &self.0.options);
        objective(x, &p.labels(x.n_rows())?, &p.rows, p.shape, self.1, o.loss, o.alpha, o.batch_size)
    }
}

#[pymethods]
impl RankerProblem {
    /// X (dense or CSR), the positive labels `y` (an object with CSR `indptr` and
    /// `indices`), the rows to visit and the settings (loss and optimiser named by the
    /// core).
    #[new]
    fn new(
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        rows: &Bound<'_, PyAny>,
        settings: RankerSettings,
    ) -> PyResult<Self> {
        let s = settings;
        let (loss, optimizer) = (LabelLoss::new(&s.loss, s.k, s.eta)?, Optimizer::new(&s.optimizer)?);
        let (learning_rate, alpha, batch_size) = (s.learning_rate, s.alpha, s.batch_size);
        let options = TrainOptions { loss, optimizer, learning_rate, alpha, batch_size };
        let (indptr, labels) = (indices(&y.getattr("indptr")?, "Y")?, indices(&y.getattr("indices")?, "Y")?);
        let (_, d): (usize, usize) = x.getattr("shape")?.extract()?;
        let shape = Shape::new(d, s.n_labels, s.n_components)?;
        Ok(Self { x: x.clone().unbind(), indptr, indices: labels, rows: indices(rows, "rows")?, shape, options })
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
            let job = EpochJob { problem: self, state, steps: *steps, seed };
            let ([theta, first, second], steps, report) = with_design(self.x.bind(py), threads, None, job)?;
            let out = |values: Vec<T>| to_numpy(py, values, &[self.shape.parameters()]);
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
            let (value, grad) = with_design(self.x.bind(py), threads, None, ObjectiveJob(self, theta.as_slice()?))?;
            let size = grad.len();
            Ok((value, to_numpy(py, grad, &[size])?))
        })
    }
}
