//! A ranker's training problem as the estimator holds it for a fit: built once, then an
//! epoch ([`Epoch`]) or the objective ([`Objective`]) per call, each a job on X (which
//! the caller passes again at every call).

use super::label_loss::LabelLoss;
use super::objective::{objective, Labels, Param, Shape};
use super::optimizer::{Optimizer, OptimizerState};
use super::trainer::{train_epoch, EpochReport, TrainOptions};
use crate::data::{Design, DesignJob};
use crate::solvers::Monitor;
use crate::Result;

/// The positive labels as CSR lists (`indptr`, `indices`), the rows to visit, θ's shape
/// and the training options.
#[derive(Debug, Clone)]
pub struct Problem {
    pub indptr: Vec<usize>,
    pub indices: Vec<u32>,
    pub rows: Vec<usize>,
    pub shape: Shape,
    pub options: TrainOptions,
}

/// A ranker's settings as the estimator gives them: the model's shape, the loss and the
/// optimiser by name ([`LabelLoss::new`], [`Optimizer::new`]) and the training options.
#[derive(Debug, Clone)]
pub struct Settings {
    pub n_labels: usize,
    pub n_components: usize,
    pub loss: String,
    pub k: usize,
    pub eta: f64,
    pub alpha: f64,
    pub optimizer: String,
    pub learning_rate: f64,
    pub batch_size: usize,
}

impl Problem {
    /// The problem on X of `d` features: the positive labels (`indptr`, `indices`), the
    /// rows to visit and the settings.
    pub fn new(d: usize, (indptr, indices): (Vec<usize>, Vec<u32>), rows: Vec<usize>, s: &Settings) -> Result<Self> {
        let (loss, optimizer) = (LabelLoss::new(&s.loss, s.k, s.eta)?, Optimizer::new(&s.optimizer)?);
        let (learning_rate, alpha, batch_size) = (s.learning_rate, s.alpha, s.batch_size);
        let options = TrainOptions { loss, optimizer, learning_rate, alpha, batch_size };
        Ok(Self { indptr, indices, rows, shape: Shape::new(d, s.n_labels, s.n_components)?, options })
    }

    /// The labels, checked against X's `n_rows` rows.
    fn labels(&self, n_rows: usize) -> Result<Labels<'_>> {
        Labels::new(&self.indptr, &self.indices, n_rows, self.shape.labels)
    }
}

/// An epoch on its own copy of the state [θ, first, second moment] after `steps` steps,
/// its examples in the order of `seed`: the new state, the steps taken and the report.
pub struct Epoch<'a, T> {
    pub problem: &'a Problem,
    pub state: [Vec<T>; 3],
    pub steps: u64,
    pub seed: u64,
}

impl<T: Param> DesignJob for Epoch<'_, T> {
    type Output = ([Vec<T>; 3], u64, EpochReport);
    fn run<D: Design>(self, x: &D, monitor: &mut dyn Monitor) -> Result<Self::Output> {
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
pub struct Objective<'a, T>(pub &'a Problem, pub &'a [T]);

impl<T: Param> DesignJob for Objective<'_, T> {
    type Output = (f64, Vec<T>);
    fn run<D: Design>(self, x: &D, _monitor: &mut dyn Monitor) -> Result<Self::Output> {
        let (p, o) = (self.0, &self.0.options);
        objective(x, &p.labels(x.n_rows())?, &p.rows, p.shape, self.1, o.loss, o.alpha, o.batch_size)
    }
}
