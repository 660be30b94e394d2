//! The per-example losses of the ranker: one score row z against all of the example's
//! positive labels Y, L(z, Y) = Σ_{y∈Y} ℓ(z, y) (the sum over the (example, label)
//! pairs of the Rankmax paper's experiments), its value and ∂L/∂z.
//!
//! * softmax:   ℓ = log Σ_i e^{z_i} − z_y, so L = |Y|·lse(z) − Σ_{y∈Y} z_y and
//!   ∂L/∂z = |Y|·softmax(z) − 1_Y: one O(n) pass for all labels.
//! * sparsemax: ℓ = Σ_i p_i(z_i − z_y) − ½‖p‖² + ½ with p = sparsemax(z) (independent
//!   of y), ∂L/∂z = |Y|·p − 1_Y: one O(n) projection for all labels.
//! * rankmax:   ℓ = −log min(1, Rankmax(z, y)_y) (eq. (14)); for k = 1 all labels in
//!   one sweep ([`crate::losses::rankmax_loss_multilabel`]), for k > 1 the
//!   single-label loss per y (μ_y, α_y depend on y), O(n log k) each.

use crate::losses::{rankmax_loss, rankmax_loss_multilabel, SweepWorkspace};
use crate::projections::{sparsemax, Workspace};
use crate::real::Real;
use crate::{Error, Result};

/// Which cross-entropy the ranker minimises.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LabelLoss {
    Softmax,
    Sparsemax,
    /// Rankmax onto the (n, k)-simplex with margin `eta`.
    Rankmax {
        k: usize,
        eta: f64,
    },
}

impl LabelLoss {
    pub fn new(name: &str, k: usize, eta: f64) -> Result<Self> {
        match name {
            "softmax" => Ok(LabelLoss::Softmax),
            "sparsemax" => Ok(LabelLoss::Sparsemax),
            "rankmax" => {
                if k == 0 {
                    return Err(Error::param("k", "must be >= 1"));
                }
                if !(eta > 0.0 && eta.is_finite()) {
                    return Err(Error::param("eta", format!("must be finite and > 0, got {eta}")));
                }
                Ok(LabelLoss::Rankmax { k, eta })
            }
            other => Err(Error::param("loss", format!("must be 'rankmax', 'softmax' or 'sparsemax', got {other:?}"))),
        }
    }

    /// Checks the loss against the number of labels n (Rankmax needs k < n).
    pub fn check_labels(&self, n: usize) -> Result<()> {
        if n < 2 {
            return Err(Error::input("Y", format!("needs at least 2 labels, got {n}")));
        }
        if let LabelLoss::Rankmax { k, .. } = *self {
            if k >= n {
                return Err(Error::param("k", format!("must satisfy 1 <= k < n_labels = {n}, got {k}")));
            }
        }
        Ok(())
    }
}

/// Scratch space for one thread's rows.
#[derive(Debug, Default, Clone)]
pub struct LossScratch<T> {
    projection: Workspace,
    sweep: SweepWorkspace,
    row: Vec<T>,
}

impl<T: Real> LossScratch<T> {
    pub fn new() -> Self {
        Self { projection: Workspace::new(), sweep: SweepWorkspace::new(), row: Vec::new() }
    }
}

/// L(z, Y) into the return value, ∂L/∂z into `grad` (overwritten).
pub fn label_loss<T: Real>(
    loss: LabelLoss,
    z: &[T],
    labels: &[u32],
    grad: &mut [T],
    scratch: &mut LossScratch<T>,
) -> Result<f64> {
    let zero = T::from_f64(0.0);
    if labels.is_empty() {
        grad.iter_mut().for_each(|g| *g = zero);
        return Ok(0.0);
    }
    let count = labels.len() as f64;
    match loss {
        LabelLoss::Softmax => {
            let top = z.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v.to_f64()));
            let mut total = 0.0;
            for (g, &v) in grad.iter_mut().zip(z) {
                let e = (v.to_f64() - top).exp();
                total += e;
                *g = T::from_f64(e);
            }
            let scale = count / total;
            grad.iter_mut().for_each(|g| *g = T::from_f64(g.to_f64() * scale));
            let log_sum = total.ln();
            let mut value = 0.0;
            for &y in labels {
                let y = y as usize;
                // lse − z_y = (top − z_y) + log Σ e^{z_i − top}: no large terms cancel.
                value += (top - z[y].to_f64()) + log_sum;
                grad[y] = T::from_f64(grad[y].to_f64() - 1.0);
            }
            Ok(value)
        }
        LabelLoss::Sparsemax => {
            sparsemax(z, grad, &mut scratch.projection)?;
            let top = z.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v.to_f64()));
            // Σ p_i(z_i − z_y) = Σ p_i(z_i − top) + (top − z_y), as Σp = 1.
            let (mut shifted, mut square) = (0.0, 0.0);
            for (&p, &v) in grad.iter().zip(z) {
                let p = p.to_f64();
                if p > 0.0 {
                    shifted += p * (v.to_f64() - top);
                    square += p * p;
                }
            }
            grad.iter_mut().for_each(|g| *g = T::from_f64(g.to_f64() * count));
            let mut value = 0.0;
            for &y in labels {
                let y = y as usize;
                value += (shifted + (top - z[y].to_f64()) - 0.5 * square + 0.5).max(0.0);
                grad[y] = T::from_f64(grad[y].to_f64() - 1.0);
            }
            Ok(value)
        }
        LabelLoss::Rankmax { k: 1, eta } => rankmax_loss_multilabel(z, labels, eta, grad, &mut scratch.sweep),
        LabelLoss::Rankmax { k, eta } => {
            grad.iter_mut().for_each(|g| *g = zero);
            scratch.row.resize(z.len(), zero);
            let mut value = 0.0;
            for &y in labels {
                value += rankmax_loss(z, y as usize, k, eta, &mut scratch.row, &mut scratch.projection)?;
                grad.iter_mut().zip(&scratch.row).for_each(|(g, &d)| *g = T::from_f64(g.to_f64() + d.to_f64()));
            }
            Ok(value)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::{softmax_loss, sparsemax_loss};
    use crate::rng::SplitMix64;

    /// Every closed form equals the sum of the foundation's single-label losses.
    #[test]
    fn multilabel_forms_equal_sums_of_single_label_losses() {
        let mut rng = SplitMix64::new(11);
        for trial in 0..100 {
            let n = 3 + rng.below(40);
            let z: Vec<f64> = (0..n).map(|_| (rng.next_f64() - 0.5) * [0.5, 4.0, 50.0][trial % 3]).collect();
            let labels: Vec<u32> = (0..1 + rng.below(5)).map(|_| rng.below(n) as u32).collect();
            let k = 1 + rng.below(n - 1);
            for loss in [
                LabelLoss::Softmax,
                LabelLoss::Sparsemax,
                LabelLoss::Rankmax { k: 1, eta: 1.0 },
                LabelLoss::Rankmax { k, eta: 0.7 },
            ] {
                let mut grad = vec![0.0; n];
                let value = label_loss(loss, &z, &labels, &mut grad, &mut LossScratch::new()).unwrap();
                let (mut want, mut want_grad, mut g) = (0.0, vec![0.0; n], vec![0.0; n]);
                let mut ws = Workspace::new();
                for &y in &labels {
                    want += match loss {
                        LabelLoss::Softmax => softmax_loss(&z, y as usize, &mut g).unwrap(),
                        LabelLoss::Sparsemax => sparsemax_loss(&z, y as usize, &mut g, &mut ws).unwrap(),
                        LabelLoss::Rankmax { k, eta } => rankmax_loss(&z, y as usize, k, eta, &mut g, &mut ws).unwrap(),
                    };
                    want_grad.iter_mut().zip(&g).for_each(|(a, b)| *a += b);
                }
                assert!((value - want).abs() <= 1e-10 * (1.0 + want.abs()), "{loss:?}: {value} vs {want}");
                for (a, b) in grad.iter().zip(&want_grad) {
                    assert!((a - b).abs() <= 1e-10 * (1.0 + b.abs()), "{loss:?}");
                }
            }
        }
    }

    #[test]
    fn parameters_are_checked() {
        assert!(LabelLoss::new("hinge", 1, 1.0).is_err());
        assert!(LabelLoss::new("rankmax", 0, 1.0).is_err());
        assert!(LabelLoss::new("rankmax", 1, 0.0).is_err());
        assert!(LabelLoss::new("rankmax", 3, 1.0).unwrap().check_labels(3).is_err());
        assert!(LabelLoss::new("softmax", 3, 1.0).unwrap().check_labels(1).is_err());
    }
}
