//! Rankmax cross-entropy (Rankmax paper eq. (14); gradient eq. (16) for k = 1).
//!
//! L(z, y) = −log min(1, p_y),  p = Rankmax(z, y) = clip(α(z − μ), 0, 1).
//! Let M be the uncapped support (ranks t+1..s), S = Σ_{i∈M}(z_i − μ) = (k − t)/α.
//! Then p_y = α (z_y − μ) and, where p_y < 1 (else L = 0 and ∇L = 0):
//!   L = −log(k − t) + log S − log(z_y − μ).
//! * z_y ≤ z_[k]: μ = z_y − η, so z_y − μ = η is constant and
//!   ∂L/∂z_i = 1/S for i ∈ M∖{y},   ∂L/∂z_y = (1 − |M|)/S,   0 elsewhere.
//!   For k = 1 this is eq. (16): 1/S = p_y and |M| = s.
//! * z_y > z_[k] (y strictly in the top k): μ = z_κ − η for the index κ of z_[k], so
//!   ∂L/∂z_i = 1/S for i ∈ M∖{κ} (plus −1/(z_y − μ) for i = y),
//!   ∂L/∂z_κ = (1 − |M|)/S + 1/(z_y − μ).
//!
//! t, s and the membership of M are locally constant; at ties the formulas give one
//! element of the Clarke subdifferential. The gradient sums to zero, as eq. (16) notes.

use crate::projections::{rankmax_state, Workspace};
use crate::real::Real;
use crate::Result;

/// Returns L(z, y) and writes ∂L/∂z into `grad`.
pub fn rankmax_loss<T: Real>(
    z: &[T],
    y: usize,
    k: usize,
    eta: f64,
    grad: &mut [T],
    ws: &mut Workspace,
) -> Result<f64> {
    crate::projections::check_row(z, grad)?;
    let state = rankmax_state(z, y, k, eta, ws)?;
    let zy = z[y].to_f64();
    let p_y = state.alpha * state.excess(zy);
    let zero = T::from_f64(0.0);
    if p_y >= 1.0 {
        grad.iter_mut().for_each(|g| *g = zero);
        return Ok(0.0);
    }
    let inv_mass = state.alpha / (k - state.capped) as f64;
    let in_m = (state.support - state.capped) as f64;
    let step = T::from_f64(inv_mass);
    let (anchor, eta, cap_score) = (state.anchor, state.eta, state.cap_score);
    for (g, &v) in grad.iter_mut().zip(z) {
        let v = v.to_f64();
        *g = if ((v - anchor) + eta > 0.0) & (v < cap_score) { step } else { zero };
    }
    if zy <= state.anchor {
        grad[y] = T::from_f64((1.0 - in_m) * inv_mass);
    } else {
        let inv_margin = 1.0 / state.excess(zy);
        let kappa = z.iter().position(|&v| v.to_f64() == state.anchor).unwrap_or(y);
        grad[y] = T::from_f64(inv_mass - inv_margin);
        grad[kappa] = T::from_f64((1.0 - in_m) * inv_mass + inv_margin);
    }
    Ok(-p_y.ln())
}
