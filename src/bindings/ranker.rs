//! Bindings of the factorised ranker: one training epoch, and the full objective with
//! its gradient (for tests and diagnostics). The parameters θ = [U | V | b] and the
//! optimiser's state come in as NumPy arrays (float32 or float64, all of θ's dtype); an
//! epoch runs without the GIL on copies of them and returns the updated state as new
//! arrays, so the caller's arrays are never written. Ctrl-C stops an epoch between
//! minibatches.

use ndarray::Ix1;
use pyo3::prelude::*;

use super::arrays::{array_exact, array_in, indices, to_numpy, with_float};
use super::design::{with_design, DesignJob};
use super::errors::to_py;
use super::monitor::PyMonitor;
use super::threads;
use crate::data::Design;
use crate::solvers::ranker::{
    objective, train_epoch, EpochReport, LabelLoss, Labels, Optimizer, OptimizerState, Param, Shape, TrainOptions,
};

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
    seed: u64,
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

/// What an epoch and the objective read: the positive labels as CSR lists (`y.indptr`,
/// `y.indices`), the rows to visit, θ's shape and the loss.
struct Inputs {
    indptr: Vec<usize>,
    indices: Vec<u32>,
    rows: Vec<usize>,
    shape: Shape,
    loss: LabelLoss,
}

impl Inputs {
    fn new(x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>, rows: &Bound<'_, PyAny>, s: &RankerSettings) -> PyResult<Self> {
        let loss = LabelLoss::new(&s.loss, s.k, s.eta).map_err(to_py)?;
        let (indptr, labels) = (indices(&y.getattr("indptr")?, "Y")?, indices(&y.getattr("indices")?, "Y")?);
        let (_, d): (usize, usize) = x.getattr("shape")?.extract()?;
        let shape = Shape::new(d, s.n_labels, s.n_components).map_err(to_py)?;
        Ok(Self { indptr, indices: labels, rows: indices(rows, "rows")?, shape, loss })
    }

    fn labels(&self, n_rows: usize) -> crate::Result<Labels<'_>> {
        Labels::new(&self.indptr, &self.indices, n_rows, self.shape.labels)
    }
}

/// An epoch on its own copy of the state [θ, first, second] after `steps` steps.
struct EpochJob<'a, T> {
    inputs: &'a Inputs,
    state: [Vec<T>; 3],
    steps: u64,
    options: TrainOptions,
    seed: u64,
}

impl<T: Param> DesignJob for EpochJob<'_, T> {
    type Output = ([Vec<T>; 3], u64, EpochReport);
    fn run<D: Design>(self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let (p, labels) = (self.inputs, self.inputs.labels(x.n_rows())?);
        let [mut theta, mut first, mut second] = self.state;
        let mut state = OptimizerState { first: &mut first, second: &mut second, steps: self.steps };
        let (options, seed) = (&self.options, self.seed);
        let report = train_epoch(x, &labels, &p.rows, p.shape, &mut theta, &mut state, options, seed, monitor)?;
        let steps = state.steps;
        Ok(([theta, first, second], steps, report))
    }
}

/// One epoch of minibatch training over `rows` of `x` with the positive labels `y` (an
/// object with CSR `indptr` and `indices`), from the state `training`. Returns the new
/// state (θ, first, second moment: new arrays of θ's dtype; the optimiser's step count)
/// and the epoch's (mean training loss per pair, minibatches, whether Ctrl-C stopped it).
#[pyfunction]
#[pyo3(signature = (x, y, rows, training, settings, *, n_jobs=None))]
pub(crate) fn ranker_epoch<'py>(
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    rows: &Bound<'py, PyAny>,
    training: Training<'py>,
    settings: RankerSettings,
    n_jobs: Option<i64>,
) -> PyResult<(State<'py>, (f64, usize, bool))> {
    let threads = threads::resolve(n_jobs)?;
    let (inputs, s) = (Inputs::new(x, y, rows, &settings)?, &settings);
    let optimizer = Optimizer::new(&s.optimizer).map_err(to_py)?;
    let (learning_rate, alpha, batch_size) = (s.learning_rate, s.alpha, s.batch_size);
    let options = TrainOptions { loss: inputs.loss, optimizer, learning_rate, alpha, batch_size };
    let Training { theta, first, second, steps } = &training;
    with_float!(theta, "theta", |T| {
        let copy = |a, name| Ok::<_, PyErr>(array_exact::<T, Ix1>(a, name, "theta")?.as_slice()?.to_vec());
        let state = [copy(theta, "theta")?, copy(first, "first")?, copy(second, "second")?];
        let job = EpochJob { inputs: &inputs, state, steps: *steps, options, seed: s.seed };
        let ([theta, first, second], steps, report) = with_design(x, threads, None, job)?;
        let out = |values: Vec<T>| to_numpy(x.py(), values, &[inputs.shape.parameters()]);
        let state = (out(theta)?, out(first)?, out(second)?, steps);
        Ok((state, (report.mean_loss, report.steps, report.interrupted)))
    })
}

struct ObjectiveJob<'a, T> {
    inputs: &'a Inputs,
    theta: &'a [T],
    settings: &'a RankerSettings,
}

impl<T: Param> DesignJob for ObjectiveJob<'_, T> {
    type Output = (f64, Vec<T>);
    fn run<D: Design>(self, x: &D, _monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let (p, labels) = (self.inputs, self.inputs.labels(x.n_rows())?);
        let (alpha, batch_size) = (self.settings.alpha, self.settings.batch_size);
        objective(x, &labels, &p.rows, p.shape, self.theta, p.loss, alpha, batch_size)
    }
}

/// The training objective F(θ) over `rows` and its gradient (same dtype as `theta`).
#[pyfunction]
#[pyo3(signature = (x, y, rows, theta, settings, *, n_jobs=None))]
pub(crate) fn ranker_objective<'py>(
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    rows: &Bound<'py, PyAny>,
    theta: &Bound<'py, PyAny>,
    settings: RankerSettings,
    n_jobs: Option<i64>,
) -> PyResult<(f64, Bound<'py, PyAny>)> {
    let threads = threads::resolve(n_jobs)?;
    let inputs = Inputs::new(x, y, rows, &settings)?;
    with_float!(theta, "theta", |T| {
        let theta = array_in::<T, Ix1>(theta, "theta")?;
        let job = ObjectiveJob { inputs: &inputs, theta: theta.as_slice()?, settings: &settings };
        let (value, grad) = with_design(x, threads, None, job)?;
        let size = grad.len();
        Ok((value, to_numpy(x.py(), grad, &[size])?))
    })
}
