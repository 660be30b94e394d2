//! Multi-label losses of a score row s and its label set Y (the row's `positive` entries;
//! N the other classes), from Lapin, Hein, Schiele, "Analysis and Optimization of Loss
//! Functions for Multiclass, Top-k, and Multilabel Classification" (TPAMI 2018, §4):
//!
//!   hinge:    L(s; Y) = max{0, 1 + max_{l∈N} s_l − min_{j∈Y} s_j}
//!                     = max_{p ∈ B} ⟨h, p⟩,   h = (½ − s_Y, ½ + s_N),
//!   softmax:  L(s; Y) = log Σ_j exp(s_j) − (1/|Y|) Σ_{j∈Y} s_j,
//!
//! B = {p ≥ 0, Σp_Y = Σp_N = τ ≤ 1} the bipartite simplex (⟨h, p⟩ = τ + ⟨p_N, s_N⟩ −
//! ⟨p_Y, s_Y⟩). The smoothing γ ≥ 0 of the SVM subtracts (γ/2)‖p‖² inside the max (the
//! Moreau envelope of the hinge, 1/γ-smooth), attained at p = Π_B(h/γ); by Danskin's
//! theorem ∂L/∂s_Y = −p_Y and ∂L/∂s_N = p_N. At γ = 0 the maximising vertex (1 on the
//! lowest label and on the highest other class while the margin is violated) is an
//! element of the subdifferential. The softmax's gradient is softmax(s) − 1_Y/|Y|.
//! A row needs at least one label and one other class.

use crate::projections::{bipartite_simplex, check_row, Workspace};
use crate::real::Real;
use crate::{Error, Result};

/// The multi-label hinge of one row, smoothed by `smoothing` (γ ≥ 0; 0 is the loss
/// itself), and its gradient with respect to the scores in `grad`.
pub fn multilabel_hinge<T: Real>(
    scores: &[T],
    positive: &[bool],
    smoothing: f64,
    grad: &mut [T],
    ws: &mut Workspace,
) -> Result<f64> {
    check_row(scores, grad)?;
    let mut scratch = std::mem::take(&mut ws.scratch);
    let loss = hinge_and_maximiser(scores, positive, smoothing, &mut scratch, ws);
    if loss.is_ok() {
        let p = &scratch[scores.len()..];
        for ((g, &pj), &label) in grad.iter_mut().zip(p).zip(positive) {
            // 0 − p: a label outside the support gets +0, not −0.
            *g = T::from_f64(if label { 0.0 - pj } else { pj });
        }
    }
    ws.scratch = scratch;
    loss
}

/// L_γ of one row (see [`multilabel_hinge`]) and its maximiser p over B, left in
/// `scratch[m..2m]` (`scratch[..m]` holds h/γ). The one computation of the loss:
/// Prox-SDCA's primal (`crate::solvers::topk_svm::MultiLabelHinge`) calls it too.
pub(crate) fn hinge_and_maximiser<T: Real>(
    scores: &[T],
    positive: &[bool],
    smoothing: f64,
    scratch: &mut Vec<f64>,
    ws: &mut Workspace,
) -> Result<f64> {
    let m = scores.len();
    check_label_set(positive, m)?;
    if !(smoothing >= 0.0 && smoothing.is_finite()) {
        return Err(Error::param("smoothing", format!("must be finite and >= 0, got {smoothing}")));
    }
    scratch.clear();
    scratch.resize(2 * m, 0.0);
    let (h, p) = scratch.split_at_mut(m);
    // L_γ ≤ L ≤ L_γ + γ (‖p‖² ≤ 2 on B), so a γ below the rounding of the scores leaves
    // L itself (and h/γ beyond what a projection of radius 1 resolves).
    let largest = scores.iter().fold(0.0f64, |top, s| top.max(s.to_f64().abs())) + 1.0;
    if smoothing <= 1e-12 * largest {
        // The lowest label and the highest other class (the first of ties).
        let (mut low, mut high) = ((0, f64::INFINITY), (0, f64::NEG_INFINITY));
        for (j, (&s, &label)) in scores.iter().zip(positive).enumerate() {
            let s = s.to_f64();
            if label && s < low.1 {
                low = (j, s);
            } else if !label && s > high.1 {
                high = (j, s);
            }
        }
        if !(low.1.is_finite() && high.1.is_finite()) {
            // Both sides hold a class (checked): only a NaN or infinite score leaves one.
            return Err(Error::no_solution("multilabel_hinge", "non-finite score"));
        }
        let loss = (1.0 + (high.1 - low.1)).max(0.0);
        if loss > 0.0 {
            (p[low.0], p[high.0]) = (1.0, 1.0);
        }
        return Ok(loss);
    }
    let scale = 1.0 / smoothing;
    for ((hj, &s), &label) in h.iter_mut().zip(scores).zip(positive) {
        let s = s.to_f64();
        *hj = (if label { 0.5 - s } else { 0.5 + s }) * scale;
    }
    bipartite_simplex(h, positive, 1.0, 0.0, p, ws)?;
    let (hp, pp) = h.iter().zip(p.iter()).fold((0.0, 0.0), |(hp, pp), (&h, &p)| (hp + smoothing * h * p, pp + p * p));
    Ok(hp - 0.5 * smoothing * pp)
}

/// The multi-label softmax loss of one row and its gradient in `grad`.
pub fn multilabel_softmax_loss<T: Real>(z: &[T], positive: &[bool], grad: &mut [T]) -> Result<f64> {
    check_row(z, grad)?;
    check_label_set(positive, z.len())?;
    // log Σ exp(z_j) = top + log1p(Σ_{j ≠ top} exp(z_j − top)): nothing overflows, and
    // the sum of the other terms keeps its digits when it is small.
    let (jmax, top) =
        z.iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(i, t), (j, &v)| if v.to_f64() > t { (j, v.to_f64()) } else { (i, t) });
    let mut rest = 0.0;
    for (j, (g, &v)) in grad.iter_mut().zip(z).enumerate() {
        let e = (v.to_f64() - top).exp();
        if j != jmax {
            rest += e;
        }
        *g = T::from_f64(e);
    }
    let (mut sum, mut count) = (0.0, 0usize);
    for (&v, _) in z.iter().zip(positive).filter(|(_, &label)| label) {
        sum += v.to_f64();
        count += 1;
    }
    let (norm, share) = (1.0 / (1.0 + rest), 1.0 / count as f64);
    for (g, &label) in grad.iter_mut().zip(positive) {
        *g = T::from_f64(g.to_f64() * norm - if label { share } else { 0.0 });
    }
    Ok((top - sum / count as f64) + rest.ln_1p())
}

/// A label set must leave both sides non-empty: the losses compare the labels with the
/// other classes.
fn check_label_set(positive: &[bool], m: usize) -> Result<()> {
    if positive.len() != m {
        return Err(Error::input("y", format!("has {} entries per row, the scores {m}", positive.len())));
    }
    match positive.iter().filter(|&&label| label).count() {
        0 => Err(Error::input("y", "a row has no label: nothing to rank above the other classes")),
        labels if labels == m => Err(Error::input("y", "a row has every class as a label: nothing ranks below them")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loss of one row writing its gradient.
    type RowLoss<'a> = &'a dyn Fn(&[f64], &mut [f64], &mut Workspace) -> Result<f64>;

    /// The gradients against central differences of the loss, smoothed hinge and softmax,
    /// and the hinge's subgradient inequality at γ = 0.
    #[test]
    fn gradients_are_the_losses_derivatives() {
        let mut ws = Workspace::default();
        let mut rng = crate::rng::SplitMix64::new(5);
        let m = 9;
        for trial in 0..50 {
            let s: Vec<f64> =
                (0..m).map(|_| 4.0 * ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) - 2.0).collect();
            let mut positive: Vec<bool> = (0..m).map(|j| (j + trial) % 3 == 0).collect();
            positive[trial % m] = !positive[trial % m];
            let mut grad = vec![0.0; m];
            let mut other = vec![0.0; m];
            let losses: [RowLoss<'_>; 2] = [&|s, g, ws| multilabel_hinge(s, &positive, 0.7, g, ws), &|s, g, _| {
                multilabel_softmax_loss(s, &positive, g)
            }];
            for loss in losses {
                loss(&s, &mut grad, &mut ws).unwrap();
                for j in 0..m {
                    let (mut up, mut down) = (s.clone(), s.clone());
                    up[j] += 1e-6;
                    down[j] -= 1e-6;
                    let fd =
                        (loss(&up, &mut other, &mut ws).unwrap() - loss(&down, &mut other, &mut ws).unwrap()) / 2e-6;
                    assert!((fd - grad[j]).abs() < 1e-6, "trial {trial} class {j}: {fd} vs {}", grad[j]);
                }
            }
            // γ = 0: L(s') ≥ L(s) + ⟨g, s' − s⟩ for any s'.
            let at = multilabel_hinge(&s, &positive, 0.0, &mut grad, &mut ws).unwrap();
            for _ in 0..20 {
                let t: Vec<f64> =
                    s.iter().map(|v| v + ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) - 0.5).collect();
                let lt = multilabel_hinge(&t, &positive, 0.0, &mut other, &mut ws).unwrap();
                let linear: f64 = grad.iter().zip(t.iter().zip(&s)).map(|(g, (a, b))| g * (a - b)).sum();
                assert!(lt >= at + linear - 1e-12);
            }
        }
    }

    #[test]
    fn label_sets_must_leave_both_sides() {
        let mut ws = Workspace::default();
        let mut grad = [0.0; 3];
        for positive in [[false; 3], [true; 3]] {
            assert!(multilabel_hinge(&[1.0, 2.0, 3.0], &positive, 0.0, &mut grad, &mut ws).is_err());
            assert!(multilabel_softmax_loss(&[1.0, 2.0, 3.0], &positive, &mut grad).is_err());
        }
    }
}
