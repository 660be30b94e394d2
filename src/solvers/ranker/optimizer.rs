//! First-order updates of the ranker's flat parameter vector θ = [U | V | b].
//!
//! The step direction is the minibatch gradient of the objective,
//!   g = (1/P_B) ∇_θ Σ_{i∈B} L(z(x_i), Y_i) + α·[U | V | 0],
//! an unbiased estimate of ∇F for minibatches B drawn as a shuffled partition
//! (up to the 1/P_B versus 1/P weighting of pairs). Then, element-wise:
//! * Adagrad (Duchi, Hazan, Singer 2011): a += g²,  θ −= η g / (√a + ε);
//! * Adam (Kingma, Ba 2015): m = β₁m + (1−β₁)g, v = β₂v + (1−β₂)g²,
//!   θ −= η (m/(1−β₁ᵗ)) / (√(v/(1−β₂ᵗ)) + ε).
//!
//! Each element is updated independently, so splitting θ over threads cannot change a bit.

use rayon::prelude::*;

use crate::real::Real;
use crate::{Error, Result};

const EPSILON: f64 = 1e-8;
const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
/// Elements per parallel task.
const BLOCK: usize = 1 << 14;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimizer {
    Adagrad,
    Adam,
}

impl Optimizer {
    pub fn new(name: &str) -> Result<Self> {
        match name {
            "adagrad" => Ok(Optimizer::Adagrad),
            "adam" => Ok(Optimizer::Adam),
            other => Err(Error::param("optimizer", format!("must be 'adagrad' or 'adam', got {other:?}"))),
        }
    }
}

/// The optimiser's memory: Adagrad's squared-gradient sums in `first`; Adam's moment
/// estimates in `first` and `second`; `steps` taken so far (Adam's t).
pub struct OptimizerState<'a, T> {
    pub first: &'a mut [T],
    pub second: &'a mut [T],
    pub steps: u64,
}

/// One update of θ from the data gradient `data_grad` (unnormalised, as
/// [`super::add_data_gradient`] leaves it), scaled by `data_scale` = 1/P_B; the L2
/// term α·θ applies to the first `regularised` elements. Returns whether every updated
/// parameter is finite (false: the step diverged).
#[allow(clippy::too_many_arguments)]
pub fn apply_update<T: Real>(
    optimizer: Optimizer,
    theta: &mut [T],
    data_grad: &[T],
    data_scale: f64,
    alpha: f64,
    regularised: usize,
    learning_rate: f64,
    state: &mut OptimizerState<'_, T>,
) -> bool {
    state.steps += 1;
    let t = state.steps as f64;
    let (bias1, bias2) = (1.0 - BETA1.powf(t), 1.0 - BETA2.powf(t));
    theta
        .par_chunks_mut(BLOCK)
        .zip(data_grad.par_chunks(BLOCK))
        .zip(state.first.par_chunks_mut(BLOCK))
        .zip(state.second.par_chunks_mut(BLOCK))
        .enumerate()
        .map(|(block, (((w, g), a), v))| {
            let offset = block * BLOCK;
            let mut finite = true;
            for (idx, (((w, &g), a), v)) in w.iter_mut().zip(g).zip(a.iter_mut()).zip(v.iter_mut()).enumerate() {
                let wf = w.to_f64();
                let mut gf = g.to_f64() * data_scale;
                if offset + idx < regularised {
                    gf += alpha * wf;
                }
                let step = match optimizer {
                    Optimizer::Adagrad => {
                        let acc = a.to_f64() + gf * gf;
                        *a = T::from_f64(acc);
                        gf / (acc.sqrt() + EPSILON)
                    }
                    Optimizer::Adam => {
                        let m = BETA1 * a.to_f64() + (1.0 - BETA1) * gf;
                        let s = BETA2 * v.to_f64() + (1.0 - BETA2) * gf * gf;
                        *a = T::from_f64(m);
                        *v = T::from_f64(s);
                        (m / bias1) / ((s / bias2).sqrt() + EPSILON)
                    }
                };
                let updated = wf - learning_rate * step;
                finite &= updated.is_finite();
                *w = T::from_f64(updated);
            }
            finite
        })
        // Every block is updated; no short-circuit.
        .reduce(|| true, |a, b| a & b)
}
