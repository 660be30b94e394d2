//! Multinomial logistic (softmax cross-entropy) loss.
//!
//! L(z, y) = log Σ_i exp(z_i) − z_y,   ∂L/∂z = softmax(z) − e_y.
//! Computed with the max shift, so no overflow for any finite z.

use crate::real::Real;
use crate::Result;

/// Returns L(z, y) and writes the gradient into `grad`.
pub fn softmax_loss<T: Real>(z: &[T], y: usize, grad: &mut [T]) -> Result<f64> {
    crate::projections::check_row(z, grad)?;
    super::check_label(z.len(), y)?;
    let top = z.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v.to_f64()));
    let mut total = 0.0;
    for (g, &v) in grad.iter_mut().zip(z) {
        let e = (v.to_f64() - top).exp();
        total += e;
        *g = T::from_f64(e);
    }
    let inv = 1.0 / total;
    for g in grad.iter_mut() {
        *g = T::from_f64(g.to_f64() * inv);
    }
    grad[y] = T::from_f64(grad[y].to_f64() - 1.0);
    Ok(top + total.ln() - z[y].to_f64())
}
