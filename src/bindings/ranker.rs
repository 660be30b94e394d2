//! Bindings of the factorised ranker: one training epoch, and the full objective with
//! its gradient (for tests and diagnostics). The parameters θ = [U | V | b] and the
//! optimiser state are NumPy arrays owned by the Python estimator and updated in
//! place, without the GIL; Ctrl-C stops an epoch between minibatches.

use ndarray::Ix1;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::arrays::{array_in, first_non_finite, float_type, in_place, Float};
use super::design::{with_design, DesignJob};
use super::errors::invalid;
use super::monitor::PyMonitor;
use super::threads;
use crate::data::Design;
use crate::solvers::ranker::{
    objective, train_epoch, LabelLoss, Labels, Optimizer, OptimizerState, Param, Shape, TrainOptions,
};

/// The positive labels as CSR offsets and label indices.
fn label_lists(indptr: &Bound<'_, PyAny>, indices: &Bound<'_, PyAny>) -> PyResult<(Vec<usize>, Vec<u32>)> {
    let indptr = array_in::<i64, Ix1>(indptr, "Y")?
        .as_slice()?
        .iter()
        .map(|&p| usize::try_from(p).map_err(|_| invalid("Y", "negative label pointer")))
        .collect::<PyResult<_>>()?;
    let indices = array_in::<i64, Ix1>(indices, "Y")?
        .as_slice()?
        .iter()
        .map(|&y| u32::try_from(y).map_err(|_| invalid("Y", format!("label {y} out of range"))))
        .collect::<PyResult<_>>()?;
    Ok((indptr, indices))
}

fn row_list(rows: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    array_in::<i64, Ix1>(rows, "rows")?
        .as_slice()?
        .iter()
        .map(|&i| usize::try_from(i).map_err(|_| invalid("rows", format!("negative row {i}"))))
        .collect()
}

/// Refuses parameters with NaN or infinity: training would only spread them.
fn check_params<T: crate::Real>(values: &[T], name: &str) -> PyResult<()> {
    match first_non_finite(values) {
        None => Ok(()),
        Some(at) => Err(invalid(name, format!("contains NaN or infinity (entry {at})"))),
    }
}

struct EpochJob<'a, T> {
    labels: (&'a [usize], &'a [u32]),
    rows: &'a [usize],
    shape: Shape,
    theta: &'a mut [T],
    first: &'a mut [T],
    second: &'a mut [T],
    steps: u64,
    options: TrainOptions,
    seed: u64,
}

impl<T: Param> DesignJob for EpochJob<'_, T> {
    type Output = (f64, usize, u64, bool);
    fn run<D: Design>(self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let labels = Labels::new(self.labels.0, self.labels.1, x.n_rows(), self.shape.labels)?;
        let mut state = OptimizerState { first: self.first, second: self.second, steps: self.steps };
        let report =
            train_epoch(x, &labels, self.rows, self.shape, self.theta, &mut state, &self.options, self.seed, monitor)?;
        Ok((report.mean_loss, report.steps, state.steps, report.interrupted))
    }
}

struct ObjectiveJob<'a, T> {
    labels: (&'a [usize], &'a [u32]),
    rows: &'a [usize],
    shape: Shape,
    theta: &'a [T],
    loss: LabelLoss,
    alpha: f64,
    batch_size: usize,
}

impl<T: Param> DesignJob for ObjectiveJob<'_, T> {
    type Output = (f64, Vec<T>);
    fn run<D: Design>(self, x: &D, _monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let labels = Labels::new(self.labels.0, self.labels.1, x.n_rows(), self.shape.labels)?;
        self.loss.check_labels(self.shape.labels)?;
        if let Some(&bad) = self.rows.iter().find(|&&i| i >= x.n_rows()) {
            return Err(crate::Error::input("rows", format!("row {bad} out of range [0, {})", x.n_rows())));
        }
        objective(x, &labels, self.rows, self.shape, self.theta, self.loss, self.alpha, self.batch_size)
    }
}

/// One epoch of minibatch training over `rows`, updating `theta`, `first` and `second`
/// (float32 or float64, all of one dtype) in place. Returns the mean training loss per
/// pair, the number of minibatches and the optimiser's new step count.
#[pyfunction]
#[pyo3(signature = (
    x, y_indptr, y_indices, rows, theta, first, second, steps, *, n_labels, n_components, loss, k, eta,
    optimizer, learning_rate, alpha, batch_size, seed, n_jobs=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn ranker_epoch<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y_indptr: &Bound<'py, PyAny>,
    y_indices: &Bound<'py, PyAny>,
    rows: &Bound<'py, PyAny>,
    theta: &Bound<'py, PyAny>,
    first: &Bound<'py, PyAny>,
    second: &Bound<'py, PyAny>,
    steps: u64,
    n_labels: usize,
    n_components: usize,
    loss: &str,
    k: usize,
    eta: f64,
    optimizer: &str,
    learning_rate: f64,
    alpha: f64,
    batch_size: usize,
    seed: u64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let threads = threads::resolve(n_jobs)?;
    let options = TrainOptions {
        loss: LabelLoss::new(loss, k, eta).map_err(super::errors::to_py)?,
        optimizer: Optimizer::new(optimizer).map_err(super::errors::to_py)?,
        learning_rate,
        alpha,
        batch_size,
    };
    let (indptr, indices) = label_lists(y_indptr, y_indices)?;
    let rows = row_list(rows)?;
    let (_, d): (usize, usize) = x.getattr("shape")?.extract()?;
    let shape = Shape::new(d, n_labels, n_components).map_err(super::errors::to_py)?;
    macro_rules! epoch_dtype {
        ($t:ty) => {{
            let theta = in_place::<$t, Ix1>(theta, "theta")?;
            let first = in_place::<$t, Ix1>(first, "first")?;
            let second = in_place::<$t, Ix1>(second, "second")?;
            let (mut theta_rw, mut first_rw, mut second_rw) =
                (theta.readwrite()?, first.readwrite()?, second.readwrite()?);
            let theta_slice = theta_rw.as_slice_mut()?;
            check_params(theta_slice, "theta")?;
            let job = EpochJob {
                labels: (&indptr, &indices),
                rows: &rows,
                shape,
                theta: theta_slice,
                first: first_rw.as_slice_mut()?,
                second: second_rw.as_slice_mut()?,
                steps,
                options,
                seed,
            };
            let out = with_design(x, threads, None, job)?;
            drop((theta_rw, first_rw, second_rw));
            theta.finish()?;
            first.finish()?;
            second.finish()?;
            out
        }};
    }
    let (mean_loss, batches, steps, interrupted) = match float_type(theta, "theta")? {
        Float::F64 => epoch_dtype!(f64),
        Float::F32 => epoch_dtype!(f32),
    };
    let out = PyDict::new(py);
    out.set_item("loss", mean_loss)?;
    out.set_item("batches", batches)?;
    out.set_item("steps", steps)?;
    out.set_item("interrupted", interrupted)?;
    Ok(out)
}

/// The training objective F(θ) over `rows` and its gradient (same dtype as `theta`).
#[pyfunction]
#[pyo3(signature = (x, y_indptr, y_indices, rows, theta, *, n_labels, n_components, loss, k, eta, alpha, batch_size=256, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn ranker_objective<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y_indptr: &Bound<'py, PyAny>,
    y_indices: &Bound<'py, PyAny>,
    rows: &Bound<'py, PyAny>,
    theta: &Bound<'py, PyAny>,
    n_labels: usize,
    n_components: usize,
    loss: &str,
    k: usize,
    eta: f64,
    alpha: f64,
    batch_size: usize,
    n_jobs: Option<i64>,
) -> PyResult<(f64, Bound<'py, PyAny>)> {
    let threads = threads::resolve(n_jobs)?;
    let loss = LabelLoss::new(loss, k, eta).map_err(super::errors::to_py)?;
    let (indptr, indices) = label_lists(y_indptr, y_indices)?;
    let rows = row_list(rows)?;
    let (_, d): (usize, usize) = x.getattr("shape")?.extract()?;
    let shape = Shape::new(d, n_labels, n_components).map_err(super::errors::to_py)?;
    macro_rules! objective_dtype {
        ($t:ty) => {{
            let theta = array_in::<$t, Ix1>(theta, "theta")?;
            let theta = theta.as_slice()?;
            check_params(theta, "theta")?;
            if theta.len() != shape.parameters() {
                return Err(invalid("theta", format!("must hold {} values, got {}", shape.parameters(), theta.len())));
            }
            let job = ObjectiveJob { labels: (&indptr, &indices), rows: &rows, shape, theta, loss, alpha, batch_size };
            let (value, grad) = with_design(x, threads, None, job)?;
            (value, PyArray1::from_vec(py, grad).into_any())
        }};
    }
    Ok(match float_type(theta, "theta")? {
        Float::F64 => objective_dtype!(f64),
        Float::F32 => objective_dtype!(f32),
    })
}
