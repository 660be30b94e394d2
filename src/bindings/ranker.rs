//! Bindings of the factorised ranker: one training epoch, and the full objective with
//! its gradient (for tests and diagnostics). The parameters θ = [U | V | b] and the
//! optimiser state are NumPy arrays owned by the Python estimator and updated in
//! place, without the GIL; Ctrl-C stops an epoch between minibatches.

use ndarray::Ix1;
use numpy::Element;
use pyo3::prelude::*;

use super::arrays::{array_in, first_non_finite, float_type, in_place, to_numpy, Float};
use super::design::{with_design, DesignJob};
use super::errors::{invalid, to_py};
use super::monitor::PyMonitor;
use super::threads;
use crate::data::Design;
use crate::solvers::ranker::{
    objective, train_epoch, LabelLoss, Labels, Optimizer, OptimizerState, Param, Shape, TrainOptions,
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

/// The optimiser's state, updated in place: θ, the first and second moments (float32 or
/// float64, all of one dtype) and the steps taken.
#[derive(FromPyObject)]
pub(crate) struct Training<'py> {
    theta: Bound<'py, PyAny>,
    first: Bound<'py, PyAny>,
    second: Bound<'py, PyAny>,
    steps: u64,
}

/// A 1-D integer array as indices of type `I`, a value that does not fit refused as `why(value)`.
fn index_list<I: TryFrom<i64>>(a: &Bound<'_, PyAny>, name: &str, why: fn(i64) -> String) -> PyResult<Vec<I>> {
    let a = array_in::<i64, Ix1>(a, name)?;
    a.as_slice()?.iter().map(|&v| I::try_from(v).map_err(|_| invalid(name, why(v)))).collect()
}

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
        let indptr = index_list(&y.getattr("indptr")?, "Y", |p| format!("negative label pointer {p}"))?;
        let indices = index_list(&y.getattr("indices")?, "Y", |l| format!("label {l} out of range"))?;
        let rows = index_list(rows, "rows", |i| format!("negative row {i}"))?;
        let (_, d): (usize, usize) = x.getattr("shape")?.extract()?;
        let shape = Shape::new(d, s.n_labels, s.n_components).map_err(to_py)?;
        Ok(Self { indptr, indices, rows, shape, loss })
    }

    fn labels(&self, n_rows: usize) -> crate::Result<Labels<'_>> {
        Labels::new(&self.indptr, &self.indices, n_rows, self.shape.labels)
    }
}

/// Refuses parameters with NaN or infinity: training would only spread them.
fn check_params<T: crate::Real>(values: &[T]) -> PyResult<()> {
    match first_non_finite(values) {
        None => Ok(()),
        Some(at) => Err(invalid("theta", format!("contains NaN or infinity (entry {at})"))),
    }
}

struct EpochJob<'a, T> {
    inputs: &'a Inputs,
    theta: &'a mut [T],
    state: OptimizerState<'a, T>,
    options: TrainOptions,
    seed: u64,
}

impl<T: Param> DesignJob for EpochJob<'_, T> {
    type Output = (f64, usize, u64, bool);
    fn run<D: Design>(mut self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let (p, labels) = (self.inputs, self.inputs.labels(x.n_rows())?);
        let (options, seed) = (&self.options, self.seed);
        let report = train_epoch(x, &labels, &p.rows, p.shape, self.theta, &mut self.state, options, seed, monitor)?;
        Ok((report.mean_loss, report.steps, self.state.steps, report.interrupted))
    }
}

fn epoch<T: Param + Element>(
    x: &Bound<'_, PyAny>,
    inputs: &Inputs,
    training: &Training<'_>,
    options: TrainOptions,
    settings: &RankerSettings,
    threads: Option<usize>,
) -> PyResult<(f64, usize, u64, bool)> {
    let arrays = [("theta", &training.theta), ("first", &training.first), ("second", &training.second)];
    let arrays = arrays.map(|(name, a)| in_place::<T, Ix1>(a, name));
    let [theta, first, second] = arrays;
    let (theta, first, second) = (theta?, first?, second?);
    let (mut theta_rw, mut first_rw, mut second_rw) = (theta.readwrite()?, first.readwrite()?, second.readwrite()?);
    let theta_slice = theta_rw.as_slice_mut()?;
    check_params(theta_slice)?;
    let state =
        OptimizerState { first: first_rw.as_slice_mut()?, second: second_rw.as_slice_mut()?, steps: training.steps };
    let job = EpochJob { inputs, theta: theta_slice, state, options, seed: settings.seed };
    let out = with_design(x, threads, None, job)?;
    drop((theta_rw, first_rw, second_rw));
    theta.finish()?;
    first.finish()?;
    second.finish()?;
    Ok(out)
}

/// One epoch of minibatch training over `rows` of `x` with the positive labels `y` (an
/// object with CSR `indptr` and `indices`), updating `training`'s arrays in place.
/// Returns the mean training loss per pair, the number of minibatches, the optimiser's
/// new step count and whether Ctrl-C stopped the epoch.
#[pyfunction]
#[pyo3(signature = (x, y, rows, training, settings, *, n_jobs=None))]
pub(crate) fn ranker_epoch<'py>(
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    rows: &Bound<'py, PyAny>,
    training: Training<'py>,
    settings: RankerSettings,
    n_jobs: Option<i64>,
) -> PyResult<(f64, usize, u64, bool)> {
    let threads = threads::resolve(n_jobs)?;
    let inputs = Inputs::new(x, y, rows, &settings)?;
    let options = TrainOptions {
        loss: inputs.loss,
        optimizer: Optimizer::new(&settings.optimizer).map_err(to_py)?,
        learning_rate: settings.learning_rate,
        alpha: settings.alpha,
        batch_size: settings.batch_size,
    };
    match float_type(&training.theta, "theta")? {
        Float::F64 => epoch::<f64>(x, &inputs, &training, options, &settings, threads),
        Float::F32 => epoch::<f32>(x, &inputs, &training, options, &settings, threads),
    }
}

struct ObjectiveJob<'a, T> {
    inputs: &'a Inputs,
    theta: &'a [T],
    settings: &'a RankerSettings,
}

impl<T: Param> DesignJob for ObjectiveJob<'_, T> {
    type Output = (f64, Vec<T>);
    fn run<D: Design>(self, x: &D, _monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let (p, labels, n) = (self.inputs, self.inputs.labels(x.n_rows())?, x.n_rows());
        p.loss.check_labels(p.shape.labels)?;
        if let Some(&bad) = p.rows.iter().find(|&&i| i >= n) {
            return Err(crate::Error::input("rows", format!("row {bad} out of range [0, {n})")));
        }
        let (alpha, batch_size) = (self.settings.alpha, self.settings.batch_size);
        objective(x, &labels, &p.rows, p.shape, self.theta, p.loss, alpha, batch_size)
    }
}

fn objective_of<'py, T: Param + Element>(
    x: &Bound<'py, PyAny>,
    inputs: &Inputs,
    theta: &Bound<'py, PyAny>,
    settings: &RankerSettings,
    threads: Option<usize>,
) -> PyResult<(f64, Bound<'py, PyAny>)> {
    let theta = array_in::<T, Ix1>(theta, "theta")?;
    let (theta, size) = (theta.as_slice()?, inputs.shape.parameters());
    check_params(theta)?;
    if theta.len() != size {
        return Err(invalid("theta", format!("must hold {size} values, got {}", theta.len())));
    }
    let (value, grad) = with_design(x, threads, None, ObjectiveJob { inputs, theta, settings })?;
    Ok((value, to_numpy(x.py(), grad, &[size])?))
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
    match float_type(theta, "theta")? {
        Float::F64 => objective_of::<f64>(x, &inputs, theta, &settings, threads),
        Float::F32 => objective_of::<f32>(x, &inputs, theta, &settings, threads),
    }
}
