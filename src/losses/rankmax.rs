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
use crate::{Error, Result};

/// Returns L(z, y) and writes ∂L/∂z into `grad`.
pub fn rankmax_loss<T: Real>(z: &[T], y: usize, k: usize, eta: f64, grad: &mut [T], ws: &mut Workspace) -> Result<f64> {
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
    let in_m = state.support - state.capped;
    let step = T::from_f64(inv_mass);
    let (anchor, eta, cap_score) = (state.anchor, state.eta, state.cap_score);
    let uncapped = |v: f64| ((v - anchor) + eta > 0.0) & (v < cap_score);
    let mut marked = 0usize;
    for (g, &v) in grad.iter_mut().zip(z) {
        let on = uncapped(v.to_f64());
        marked += on as usize;
        *g = if on { step } else { zero };
    }
    // The state caps the t largest scores by rank, so of the scores tied with the
    // smallest capped one some belong to M; the value test above left them all out.
    // Give M's step to as many of them as M lacks: y first (p_y < 1, so y is in M),
    // then κ, then the others in index order, so that the gradient sums to zero.
    let mut spare = in_m.checked_sub(marked).ok_or_else(|| {
        Error::no_solution("rankmax_loss", format!("{marked} scores lie below the cap where the state counts {in_m}"))
    })?;
    let take = |i: usize, grad: &mut [T], spare: &mut usize| {
        let free = *spare > 0;
        if free {
            grad[i] = step;
            *spare -= 1;
        }
        free
    };
    let y_in_m = uncapped(zy) || (zy == cap_score && take(y, grad, &mut spare));
    if !y_in_m {
        // y ranks among the capped scores, p_y < 1 only by rounding: p_y = 1, as above.
        grad.iter_mut().for_each(|g| *g = zero);
        return Ok(0.0);
    }
    let kappa = if zy <= anchor { y } else { z.iter().position(|&v| v.to_f64() == anchor).unwrap_or(y) };
    let kappa_in_m = kappa == y || uncapped(anchor) || (anchor == cap_score && take(kappa, grad, &mut spare));
    let mut i = 0;
    while spare > 0 && i < z.len() {
        if i != y && i != kappa && z[i].to_f64() == cap_score {
            take(i, grad, &mut spare);
        }
        i += 1;
    }
    if spare > 0 || !kappa_in_m {
        return Err(Error::no_solution(
            "rankmax_loss",
            format!("the support M has {in_m} scores but {spare} of them cannot be placed below the cap"),
        ));
    }
    let in_m = in_m as f64;
    if zy <= anchor {
        grad[y] = T::from_f64((1.0 - in_m) * inv_mass);
    } else {
        let inv_margin = 1.0 / state.excess(zy);
        grad[y] = T::from_f64(inv_mass - inv_margin);
        grad[kappa] = T::from_f64((1.0 - in_m) * inv_mass + inv_margin);
    }
    Ok(-p_y.ln())
}
