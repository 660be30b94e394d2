//! One training epoch of the ranker: a seeded shuffle of the training rows, then a
//! minibatch gradient step ([`super::add_data_gradient`], [`super::apply_update`])
//! per `batch_size` rows. Deterministic for a given seed, whatever the thread count.

use super::label_loss::LabelLoss;
use super::objective::{add_data_gradient, check_theta_rows, Labels, Param, Scratch, Shape, SCORES_OVERFLOW};
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
    check_theta_rows(theta, shape, rows, x.n_rows())?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::solvers::Silent;

    /// An epoch refuses parameters with NaN or infinity before its first step (the
    /// binding checked them before).
    #[test]
    fn an_epoch_refuses_non_finite_parameters() {
        let x = [1.0, 0.0, 0.0, 1.0];
        let design = DenseRows::new(&x, 2, 2).unwrap();
        let (indptr, indices) = ([0, 1, 2], [0, 1]);
        let labels = Labels::new(&indptr, &indices, 2, 2).unwrap();
        let shape = Shape::new(2, 2, 1).unwrap();
        let options = TrainOptions {
            loss: LabelLoss::Softmax,
            optimizer: Optimizer::Adagrad,
            learning_rate: 0.1,
            alpha: 0.0,
            batch_size: 1,
        };
        let len = shape.parameters();
        let (mut first, mut second) = (vec![0.0; len], vec![0.0; len]);
        let mut theta = vec![0.1; len];
        theta[len - 1] = f64::INFINITY;
        let mut state = OptimizerState { first: &mut first, second: &mut second, steps: 0 };
        let err = train_epoch(&design, &labels, &[0, 1], shape, &mut theta, &mut state, &options, 0, &mut Silent);
        assert!(err.unwrap_err().to_string().starts_with("theta: contains NaN or infinity"));
        assert_eq!(state.steps, 0);
    }
}
