//! One training epoch of the ranker: a seeded shuffle of the training rows, then a
//! minibatch gradient step ([`super::add_data_gradient`], [`super::apply_update`])
//! per `batch_size` rows. Deterministic for a given seed, whatever the thread count.

use super::label_loss::LabelLoss;
use super::objective::{add_data_gradient, Labels, Param, Scratch, Shape, SCORES_OVERFLOW};
use super::optimizer::{apply_update, Optimizer, OptimizerState};
use crate::data::Design;
use crate::rng::SplitMix64;
use crate::solvers::Monitor;
use crate::{Error, Result};

/// The settings of a training run.
#[derive(Debug, Clone, Copy)]
pub struct TrainOptions {
    pub loss: LabelLoss,
    pub optimizer: Optimizer,
    pub learning_rate: f64,
    /// L2 strength α on U and V.
    pub alpha: f64,
    pub batch_size: usize,
}

impl TrainOptions {
    pub fn check(&self) -> Result<()> {
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return Err(Error::param("learning_rate", format!("must be finite and > 0, got {}", self.learning_rate)));
        }
        if !(self.alpha >= 0.0 && self.alpha.is_finite()) {
            return Err(Error::param("alpha", format!("must be finite and >= 0, got {}", self.alpha)));
        }
        if self.batch_size == 0 {
            return Err(Error::param("batch_size", "must be >= 1"));
        }
        Ok(())
    }
}

/// What an epoch did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpochReport {
    /// Mean data loss per (example, label) pair, each minibatch measured before its step.
    pub mean_loss: f64,
    /// Minibatch steps taken.
    pub steps: usize,
    /// The monitor asked to stop before the epoch ended.
    pub interrupted: bool,
}

/// Runs one epoch over `rows` in the order of `SplitMix64::new(seed)`, updating θ
/// and the optimiser state in place.
#[allow(clippy::too_many_arguments)]
pub fn train_epoch<T: Param, D: Design>(
    x: &D,
    labels: &Labels<'_>,
    rows: &[usize],
    shape: Shape,
    theta: &mut [T],
    state: &mut OptimizerState<'_, T>,
    options: &TrainOptions,
    seed: u64,
    monitor: &mut dyn Monitor,
) -> Result<EpochReport> {
    options.check()?;
    options.loss.check_labels(shape.labels)?;
    let len = shape.parameters();
    if theta.len() != len || state.first.len() != len || state.second.len() != len {
        return Err(Error::input("theta", format!("parameters and optimiser state must each hold {len} values")));
    }
    if let Some(&bad) = rows.iter().find(|&&i| i >= x.n_rows()) {
        return Err(Error::input("rows", format!("row {bad} out of range [0, {})", x.n_rows())));
    }
    let mut order = rows.to_vec();
    SplitMix64::new(seed).shuffle(&mut order);
    let mut grad = vec![T::from_f64(0.0); len];
    let mut scratch = Scratch::default();
    let (mut total, mut pairs, mut steps) = (0.0, 0usize, 0usize);
    for batch in order.chunks(options.batch_size) {
        if monitor.should_stop() {
            return Ok(EpochReport { mean_loss: total / pairs.max(1) as f64, steps, interrupted: true });
        }
        grad.iter_mut().for_each(|g| *g = T::from_f64(0.0));
        let batch_pairs = labels.pairs(batch);
        let value = add_data_gradient(x, labels, batch, shape, theta, options.loss, &mut grad, &mut scratch);
        total += value.map_err(|e| match e {
            // Before the optimiser's first step (it counts them in `state.steps`) θ is
            // the caller's initial draw: no step size is to blame.
            Error::NoSolution { problem, detail } if detail == SCORES_OVERFLOW && state.steps == 0 => {
                Error::no_solution(problem, "the scores of the initial parameters overflow the model's precision: lower init_scale, or rescale X")
            }
            other => other,
        })?;
        pairs += batch_pairs;
        let scale = if batch_pairs > 0 { 1.0 / batch_pairs as f64 } else { 0.0 };
        let finite = apply_update(
            options.optimizer,
            theta,
            &grad,
            scale,
            options.alpha,
            shape.regularised(),
            options.learning_rate,
            state,
        );
        steps += 1;
        if !finite {
            return Err(Error::no_solution("ranker training", format!("the parameters diverged to inf/NaN at minibatch {steps}: lower learning_rate, or rescale X if its values are large")));
        }
    }
    Ok(EpochReport { mean_loss: total / pairs.max(1) as f64, steps, interrupted: false })
}
