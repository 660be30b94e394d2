//! Biased projection onto the "box simplex", the dual set of the top-k hinge loss
//! "beta" (Usunier et al.; Lapin, Hein, Schiele 2015, §5, Proposition 5, eq. (9)-(10)).
//!
//! Problem:  min_p ‖p − x‖² + ρ(Σp)²  s.t.  0 ≤ p_i ≤ hi,  Σp ≤ r
//! (the top-k Usunier set Δ̃_k(r) has hi = r/k). KKT: p_i = clip(x_i − t, 0, hi) with
//! t = ρ s + λ, s = Σp, λ ≥ 0 the multiplier of Σp ≤ r, λ (s − r) = 0.
//! Either λ = 0 and t solves t = ρ Σ clip(x_i − t, 0, hi) (t = 0 when ρ = 0), which is
//! the answer if its sum is ≤ r; or s = r and t solves the knapsack Σ clip(x − t, 0, hi)
//! = r, whose λ = t − ρ r is then ≥ 0. Both equations are solved exactly on a sorted
//! prefix by `capped_root`. Either way Σp ≤ r, so with K the fewest entries whose caps
//! exceed r (K·hi > r), t ≥ x_[K] − hi: only entries above that are sorted
//! (`capped_zero_below`).

use super::prefix::{
    capped_root, capped_sum, capped_zero_below, check_output, check_resolved, short_top, solve_largest, write_checked,
    write_clipped, Param, Sum, Workspace, SHORT_ROW, TRACKED,
};
use super::topk_cone::check_rho;
use super::Thresholds;
use crate::real::Real;
use crate::{Error, Result};

const FIRST_PREFIX: usize = 32;

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
        check_resolved("box_simplex", name, v)?;
    }
    if hi == 0.0 || r == 0.0 {
        return Ok(super::write_zero(out));
    }
    // Σp = s ≤ r in both branches, so the bound for Σp ≤ r holds.
    // λ = (shift − ρr) + lower: next to huge entries t = shift + lower rounds to the
    // shift and would hide a small negative λ.
    let multiplier_ok = |k: &Thresholds| (k.shift - rho * r) + k.lower >= 0.0;
    let zero_below = if x.len() <= SHORT_ROW {
        short_zero_below(x, hi, r, rho)
    } else {
        capped_zero_below(x, hi, r, FIRST_PREFIX, ws)
    };
    let knapsack_on = |d: &[f64], p: &[f64], rest: f64| {
        // A prefix whose caps cannot reach r has no knapsack root: `capped_root` returns
        // "all capped", which the prefix test cannot refute (a long tail of equal entries
        // summed to 32·hi where r = m·hi), so the prefix must grow.
        if (d.len() as f64) * hi < r && rest > f64::NEG_INFINITY {
            return None;
        }
        let knapsack = capped_root(d, p, hi, 0.0, r);
        knapsack.clears(rest).then_some(knapsack)
    };
    let (th, sum) = solve_largest(x, zero_below, FIRST_PREFIX, ws, |d, p, rest| {
        // Σp = r with λ = t − ρr ≥ 0 meets the KKT conditions: then the knapsack is the
        // answer, and the free branch (whose threshold lies lower, needing more
        // entries) is not needed. Only where the prefix's caps can reach r (otherwise
        // its knapsack has no root, and `capped_root` returns a bracket end), and where
        // the cap is resolved next to the entries (else the breakpoints x_i and
        // x_i − hi coincide in float64 and the free branch's order is the safe one).
        let knapsack = knapsack_on(d, p, rest);
        let resolved = || hi > 1e-12 * d[0].abs().max(d[d.len() - 1].abs());
        if let Some(knapsack) = knapsack.filter(|k| d.len() as f64 * hi > r && resolved() && multiplier_ok(k)) {
            return Ok(Some((knapsack, Sum::Equal(r))));
        }
        // λ = 0: t = ρ·F(t), i.e. F(t) = t/ρ (t = 0 when ρ = 0).
        let free = if rho > 0.0 {
            capped_root(d, p, hi, 1.0 / rho, 0.0)
        } else {
            Thresholds { shift: 0.0, lower: 0.0, upper: hi }
        };
        if !free.clears(rest) {
            return Ok(None);
        }
        if capped_sum(d, p, hi, free.threshold()) <= r {
            return Ok(Some((free, Sum::AtMost(r))));
        }
        // Σp = r, if its multiplier is ≥ 0. A negative one puts the knapsack's threshold
        // below the free one, so the free sum is ≤ r = F(t_knapsack) in exact arithmetic
        // and exceeded r above only by rounding (r a multiple of hi, the free solution
        // capping exactly r/hi entries): the free solution is the answer. Taking the
        // knapsack there gave an entry below 0 a share of the rounding residue.
        Ok(knapsack.map(
            |knapsack| {
                if multiplier_ok(&knapsack) {
                    (knapsack, Sum::Equal(r))
                } else {
                    (free, Sum::AtMost(r))
                }
            },
        ))
    })?;
    let written = write_clipped(x, &th, 0.0, out);
    // Σp = r (or ≤ r) is set by r, unless the cap hi is what leaves the entries subnormal.
    let param = if hi < r { Param { name: "hi", value: hi } } else { Param { name: "r", value: r } };
    // The stored total may exceed r by the output type's own rounding alone (float32
    // rounds hi up): that the output check allows, and the free solution stays optimal.
    // Only a float64 sum above r means the branch test was wrong.
    let above_r = || x.iter().map(|&v| ((v.to_f64() - th.shift) - th.lower).max(0.0).min(hi)).sum::<f64>() > r;
    if matches!(sum, Sum::AtMost(_)) && written.total > r && above_r() {
        // The branch test summed the free solution from prefix sums, which carry the
        // rounding of the largest entries: its output lands above r, so Σp ≤ r binds.
        let knapsack = solve_largest(x, zero_below, FIRST_PREFIX, ws, |d, p, rest| Ok(knapsack_on(d, p, rest)))?;
        if multiplier_ok(&knapsack) {
            write_checked("box_simplex", x, &knapsack, 0.0, out, Sum::Equal(r), param)?;
            return Ok(knapsack);
        }
    }
    check_output("box_simplex", out, 0.0, written, sum, param)?;
    Ok(th)
}

/// The threshold bound of a short row: [`capped_zero_below`]'s x_[K] − hi (K the fewest
/// entries whose caps exceed r), from the exact order statistics, and t ≥ 0 with more:
/// t = ρs + λ ≥ ρs and s ≥ p_[1] = min(hi, x_[1] − t) when x_[1] > t, so
/// t ≥ min(ρ·hi, ρ·x_[1]/(1 + ρ)) — or x_[1] ≤ t. In an SDCA step (ρ = 1) that keeps
/// only the entries above about half the largest instead of all those above zero.
/// Lowered below x_[1], so that the filtered row is never empty (an all-zero answer is
/// then found on x_[1] alone). `−∞` (no filter) when the order statistics are not
/// tracked (`short_top`).
fn short_zero_below<T: Real>(x: &[T], hi: f64, r: f64, rho: f64) -> f64 {
    let fit = (r / hi).floor();
    // The smallest K with K·hi > r (as in `capped_zero_below`), if the row has K entries.
    let over = if fit < x.len() as f64 { (fit as usize..=x.len()).find(|&c| c as f64 * hi > r) } else { None };
    let n = over.map_or(1, |c| c.max(1)).min(TRACKED);
    let Some(top) = short_top(x, n) else {
        return f64::NEG_INFINITY;
    };
    let capped = match over {
        Some(c) if (1..=TRACKED).contains(&c) => top[c - 1] - hi,
        _ => f64::NEG_INFINITY,
    };
    let x1 = top[0];
    let floor = x1.min(rho * hi).min(rho * x1 / (1.0 + rho)).max(0.0);
    let bound = capped.max(floor);
    if bound < x1 {
        bound
    } else {
        // Everything is 0 (x_[1] ≤ t): keep x_[1] alone, just above the bound.
        x1 - (2.0 * x1.abs() * f64::EPSILON + f64::MIN_POSITIVE)
    }
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

    /// r = 7·hi to the last ulp and seven positive entries far above hi (fuzz seed 11):
    /// the free sum 7·hi rounds above r, and the knapsack that was taken instead
    /// (threshold −0.38, a negative multiplier) gave 4e-19 to an entry of −0.38.
    #[test]
    fn free_solution_when_the_knapsack_multiplier_is_negative() {
        let x = [
            0.4598010818695521,
            0.4598010818695521,
            0.12004350694762572,
            -0.37654776385951816,
            -0.37654776385951794,
            0.45980108186955193,
            0.12004350694762576,
            -0.3765477638595182,
            0.459801081869552,
            -0.376547763859518,
            0.12004350694762568,
        ];
        let (hi, r) = (0.0005559758255192996, 0.0038918307786350976);
        let mut out = [0.0f64; 11];
        box_simplex(&x, hi, r, 0.0, &mut out, &mut Workspace::new()).unwrap();
        for (&o, &v) in out.iter().zip(&x) {
            assert_eq!(o, if v > 0.0 { hi } else { 0.0 }, "{out:?}");
        }
    }
}
