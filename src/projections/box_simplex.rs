//! Biased projection onto the "box simplex", the dual set of the top-k hinge loss
//! "beta" (Usunier et al.; Lapin, Hein, Schiele 2015, §5, Proposition 5, eq. (9)-(10)).
//!
//! Problem:  min_p ‖p − x‖² + ρ(Σp)²  s.t.  0 ≤ p_i ≤ hi,  Σp ≤ r
//! (the top-k Usunier set Δ̃_k(r) has hi = r/k). KKT: p_i = clip(x_i − t, 0, hi) with
//! t = ρ s + λ, s = Σp, λ ≥ 0 the multiplier of Σp ≤ r, λ (s − r) = 0.
//! Either λ = 0 and t solves t = ρ Σ clip(x_i − t, 0, hi) (t = 0 when ρ = 0), which is
//! the answer if its sum is ≤ r; or s = r and t solves the knapsack Σ clip(x − t, 0, hi)
//! = r, whose λ = t − ρ r is then ≥ 0. Both equations are solved exactly on a sorted
//! prefix by `capped_root`.

use super::prefix::{capped_root, capped_sum, check_sum, clipped_noise, write_clipped, Sum, TopPrefix, Workspace};
use super::topk_cone::check_rho;
use super::Thresholds;
use crate::real::Real;
use crate::{Error, Result};

/// Projects `x` onto `{0 ≤ p ≤ hi, Σp ≤ r}` with bias `rho`, writing `out`.
pub fn box_simplex<T: Real>(
    x: &[T],
    hi: f64,
    r: f64,
    rho: f64,
    out: &mut [T],
    ws: &mut Workspace,
) -> Result<Thresholds> {
    super::check_row(x, out)?;
    check_rho(rho)?;
    for (name, v) in [("hi", hi), ("r", r)] {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(Error::param(name, format!("must be finite and >= 0, got {v}")));
        }
    }
    if hi == 0.0 || r == 0.0 {
        return Ok(super::write_zero(out));
    }
    let mut top = TopPrefix::load(x, ws);
    let knapsack_on = |d: &[f64], p: &[f64], rest: f64| {
        let knapsack = capped_root(d, p, hi, 0.0, r);
        (knapsack.threshold() >= rest).then_some(knapsack)
    };
    let (th, sum) = top.solve(32, |d, p, rest| {
        // λ = 0: t = ρ·F(t), i.e. F(t) = t/ρ (t = 0 when ρ = 0).
        let free = if rho > 0.0 {
            capped_root(d, p, hi, 1.0 / rho, 0.0)
        } else {
            Thresholds { shift: 0.0, lower: 0.0, upper: hi }
        };
        if free.threshold() < rest {
            return Ok(None);
        }
        if capped_sum(d, p, hi, free.threshold()) <= r {
            return Ok(Some((free, Sum::AtMost(r))));
        }
        // Σp = r.
        Ok(knapsack_on(d, p, rest).map(|knapsack| (knapsack, Sum::Equal(r))))
    })?;
    let written = write_clipped(x, &th, 0.0, out);
    if matches!(sum, Sum::AtMost(_)) && written.total > r {
        // The branch test summed the free solution from prefix sums, which carry the
        // rounding of the largest entries: its output lands above r, so Σp ≤ r binds.
        let th = top.solve(32, |d, p, rest| Ok(knapsack_on(d, p, rest)))?;
        check_sum("box_simplex", write_clipped(x, &th, 0.0, out), || clipped_noise(x, &th, 0.0), Sum::Equal(r), || 0.0)?;
        return Ok(th);
    }
    check_sum("box_simplex", written, || clipped_noise(x, &th, 0.0), sum, || 0.0)?;
    Ok(th)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inactive_and_active_sum() {
        let mut ws = Workspace::new();
        let mut out = [0.0f64; 3];
        box_simplex(&[0.2, 0.9, -1.0], 0.5, 10.0, 0.0, &mut out, &mut ws).unwrap();
        for (a, b) in out.iter().zip([0.2, 0.5, 0.0]) {
            assert!((a - b).abs() < 1e-15, "{out:?}");
        }
        box_simplex(&[0.2, 0.9, -1.0], 0.5, 0.6, 0.0, &mut out, &mut ws).unwrap();
        assert!((out[0] - 0.1).abs() < 1e-15 && (out[1] - 0.5).abs() < 1e-15);
    }
}
