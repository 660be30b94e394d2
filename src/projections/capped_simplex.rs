//! Euclidean projection onto the (n,k)-simplex (Rankmax paper §2, eq. (8) with α = 1).
//!
//! Problem:  min_p ½‖p − x‖²  s.t.  0 ≤ p_i ≤ 1,  Σp = k,   0 < k ≤ m (k may be fractional).
//! KKT: p_i = clip(x_i − t, 0, 1) with Σp = k — a knapsack with bounds [0, 1], solved
//! exactly on a sorted prefix of the k-or-so largest entries (`capped_root`), taken
//! from the entries above x_[K] − 1, K = ⌊k⌋ + 1 (K entries at 1 would exceed k).

use super::prefix::{
    capped_root, capped_zero_below, check_resolved, solve_largest, write_checked, Param, Sum, Workspace,
};
use super::Thresholds;
use crate::real::Real;
use crate::{Error, Result};

/// Projects `x` onto `{0 ≤ p ≤ 1, Σp = k}`, writing `out`.
pub fn capped_simplex<T: Real>(x: &[T], k: f64, out: &mut [T], ws: &mut Workspace) -> Result<Thresholds> {
    super::check_row(x, out)?;
    check_capped_k(k, x.len())?;
    check_resolved("capped_simplex", "k", k)?;
    let first = ((2.0 * k.ceil() + 8.0).min(x.len() as f64) as usize).max(32);
    let th = solve_largest(x, capped_zero_below(x, 1.0, k, first, ws), first, ws, |d, p, rest| {
        let th = capped_root(d, p, 1.0, 0.0, k);
        Ok(th.clears(rest).then_some(th))
    })?;
    write_checked("capped_simplex", x, &th, 0.0, out, Sum::Equal(k), Param { name: "k", value: k })?;
    Ok(th)
}

pub(crate) fn check_capped_k(k: f64, m: usize) -> Result<()> {
    if !(k > 0.0 && k <= m as f64) {
        return Err(Error::param("k", format!("must satisfy 0 < k <= m = {m}, got {k}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_at_one() {
        let mut out = [0.0; 4];
        capped_simplex(&[5.0, 4.0, 0.0, -1.0], 2.0, &mut out, &mut Workspace::new()).unwrap();
        assert_eq!(out, [1.0, 1.0, 0.0, 0.0]);
        capped_simplex(&[0.0; 4], 4.0, &mut out, &mut Workspace::new()).unwrap();
        assert_eq!(out, [1.0; 4]);
    }
}
