//! Sparsemax loss (Martins & Astudillo 2016), the Fenchel–Young loss of ½‖p‖² on the simplex.
//!
//! With p = sparsemax(z):  L(z, y) = Σ_i p_i (z_i − z_y) − ½‖p‖² + ½ ≥ 0,
//! ∂L/∂z = p − e_y. (Equal to the paper's −z_y + ½Σ_{j∈S}(z_j² − τ²) + ½, written so that
//! it is invariant to shifts of z and does not square large scores.)

use crate::projections::{sparsemax, Workspace};
use crate::real::Real;
use crate::Result;

/// Returns L(z, y) and writes the gradient into `grad`.
pub fn sparsemax_loss<T: Real>(z: &[T], y: usize, grad: &mut [T], ws: &mut Workspace) -> Result<f64> {
    crate::projections::check_row(z, grad)?;
    super::check_label(z.len(), y)?;
    sparsemax(z, grad, ws)?;
    let zy = z[y].to_f64();
    let (mut linear, mut square) = (0.0, 0.0);
    for (&p, &v) in grad.iter().zip(z) {
        let p = p.to_f64();
        if p > 0.0 {
            linear += p * (v.to_f64() - zy);
            square += p * p;
        }
    }
    grad[y] = T::from_f64(grad[y].to_f64() - 1.0);
    Ok((linear - 0.5 * square + 0.5).max(0.0))
}
