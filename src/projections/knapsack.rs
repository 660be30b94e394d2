//! Continuous quadratic knapsack (CQKP) with scalar bounds, by variable fixing.
//!
//! Problem:  min_p ½‖p − x‖²  s.t.  lo ≤ p_i ≤ hi,  Σp = r,   feasible iff m·lo ≤ r ≤ m·hi.
//! KKT: p_i = clip(x_i − t, lo, hi) with Σ_i p_i = r (t the multiplier of the sum).
//!
//! Variable fixing (Bitran & Hax 1981; Kiwiel 2008, "Variable fixing algorithms for
//! the continuous quadratic knapsack problem", JOTA 136): on the free set F solve the
//! problem without bounds, t = (Σ_F x − r_F)/|F|; measure how far p = x − t leaves the
//! box below (∇lo = Σ (lo − p_i)_+) and above (∇hi = Σ (p_i − hi)_+). If ∇lo ≥ ∇hi
//! every variable with p_i ≤ lo is at its lower bound in the optimum, else every
//! variable with p_i ≥ hi is at its upper bound: fix them and repeat. Each pass is
//! O(|F|) and removes at least one variable; in practice a handful of passes suffice.
//!
//! Those fixing decisions compare violation sums that can agree to the last bit when
//! the row spans many orders of magnitude (x = (1e20, −1e20, 0)); so the result is
//! verified (Σp = r up to rounding) and, if the check fails, the threshold is solved
//! again exactly on sorted values (`capped_root`), whose decisions are comparisons of
//! single entries. This fallback is exact, not an approximation.

use super::prefix::{
    capped_root, check_output, check_resolved, output_tolerance, write_checked, Param, Sum, TopPrefix, Workspace,
    Written, BLOCK,
};
use super::Thresholds;
use crate::real::Real;
use crate::{Error, Result};

/// Projects `x` onto `{lo ≤ p ≤ hi, Σp = r}`, writing `out`. Returns the threshold.
pub fn knapsack<T: Real>(x: &[T], lo: f64, hi: f64, r: f64, out: &mut [T], ws: &mut Workspace) -> Result<Thresholds> {
    super::check_row(x, out)?;
    for (name, v) in [("lo", lo), ("hi", hi), ("r", r)] {
        if !v.is_finite() {
            return Err(Error::param(name, format!("must be finite, got {v}")));
        }
    }
    for (name, v) in [("lo", lo), ("hi", hi), ("r", r)] {
        check_resolved("knapsack", name, v)?;
    }
    let m = x.len() as f64;
    if lo > hi {
        return Err(Error::Infeasible { name: "lo", reason: format!("lo = {lo} > hi = {hi}") });
    }
    // r within half the output's rounding bound of m·lo or m·hi is their sum as far as
    // float64 can tell (the output check then accepts the point lo·1 or hi·1); beyond
    // it, the set is empty.
    let slack = 0.5 * output_tolerance(x.len(), r, m * lo.abs().max(hi.abs()), 0.0);
    if m * lo > r + slack || m * hi < r - slack {
        return Err(Error::Infeasible {
            name: "r",
            reason: format!("need m·lo ≤ r ≤ m·hi, got m = {m}, lo = {lo}, hi = {hi}, r = {r}"),
        });
    }
    let param = Param { name: "r", value: r };
    if hi == lo {
        // The single point p = lo·1, which a float32 output may not hold (lo = −1e300).
        let stored = T::from_f64(lo);
        out.iter_mut().for_each(|o| *o = stored);
        let written = Written { total: m * stored.to_f64(), fits: stored.to_f64().is_finite() };
        check_output("knapsack", out, lo, written, Sum::Equal(r), Param { name: "lo", value: lo })?;
        return Ok(Thresholds { shift: 0.0, lower: f64::NAN, upper: hi });
    }
    let t = variable_fixing_threshold(x, lo, hi, r, ws);
    let th = relative_to_pivot(x, t, lo, hi, r);
    if write_checked("knapsack", x, &th, lo, out, Sum::Equal(r), param).is_ok() {
        return Ok(th);
    }
    let th = sorted_threshold(x, lo, hi, r, ws)?;
    write_checked("knapsack", x, &th, lo, out, Sum::Equal(r), param)?;
    Ok(th)
}

/// The exact threshold from sorted values: p − lo = clip(x − t', 0, hi − lo) with
/// Σ = r − m·lo, then t = t' − lo in `write_clipped`'s convention.
fn sorted_threshold<T: Real>(x: &[T], lo: f64, hi: f64, r: f64, ws: &mut Workspace) -> Result<Thresholds> {
    let (cap, target) = (hi - lo, r - x.len() as f64 * lo);
    let mut top = TopPrefix::load(x, ws);
    let th = top.solve(64, |d, p, rest| {
        let th = capped_root(d, p, cap, 0.0, target);
        Ok(th.clears(rest).then_some(th))
    })?;
    Ok(Thresholds { shift: th.shift, lower: th.lower - lo, upper: hi })
}

/// Recomputes the threshold for the partition that `t` defines, relative to a pivot
/// entry of the free set: t = pivot + (Σ_M (x_i − pivot) − r_M)/|M|. The sum of
/// differences keeps the precision that a threshold next to huge entries would lose.
fn relative_to_pivot<T: Real>(x: &[T], t: f64, lo: f64, hi: f64, r: f64) -> Thresholds {
    let is_free = |v: f64| {
        let p = v - t;
        p > lo && p < hi
    };
    let Some(pivot) = x.iter().map(|v| v.to_f64()).find(|&v| is_free(v)) else {
        return Thresholds { shift: 0.0, lower: t, upper: hi };
    };
    // Branch-free, in independent lanes: which side of the box an entry falls on is
    // unpredictable, and one running sum would wait on each addition in turn.
    let mut free_sum = [0.0f64; BLOCK];
    let mut fixed_sum = [0.0f64; BLOCK];
    let mut free = [0usize; BLOCK];
    let mut accumulate = |lane: usize, v: f64| {
        let p = v - t;
        let (low, high) = (p <= lo, p >= hi);
        let inside = !(low || high);
        fixed_sum[lane] += if low {
            lo
        } else if high {
            hi
        } else {
            0.0
        };
        free_sum[lane] += if inside { v - pivot } else { 0.0 };
        free[lane] += inside as usize;
    };
    let mut blocks = x.chunks_exact(BLOCK);
    for block in blocks.by_ref() {
        for (lane, &v) in block.iter().enumerate() {
            accumulate(lane, v.to_f64());
        }
    }
    for &v in blocks.remainder() {
        accumulate(0, v.to_f64());
    }
    let (free_sum, fixed_sum) = (free_sum.iter().sum::<f64>(), fixed_sum.iter().sum::<f64>());
    let free = free.iter().sum::<usize>();
    Thresholds { shift: pivot, lower: (free_sum - (r - fixed_sum)) / free as f64, upper: hi }
}

fn variable_fixing_threshold<T: Real>(x: &[T], lo: f64, hi: f64, r: f64, ws: &mut Workspace) -> f64 {
    let free = &mut ws.values;
    free.clear();
    free.extend(x.iter().map(|v| v.to_f64()));
    let mut n = free.len();
    let mut r_free = r;
    let mut sum = lane_sum(free);
    // Any valid threshold keeps the fixed variables at their bounds:
    // t ≥ x_i − lo for those fixed low, t ≤ x_i − hi for those fixed high.
    let (mut t_min, mut t_max) = (f64::NEG_INFINITY, f64::INFINITY);
    // The loops are branch-free: which side of the box an entry falls on is
    // unpredictable, and mispredictions would cost more than the arithmetic.
    while n > 0 {
        let t = (sum - r_free) / n as f64;
        // Summed in independent lanes, which vectorise. Also the largest entry at or
        // below the box and the smallest at or above it, whichever side gets fixed.
        let (mut below, mut above, mut magnitude) = ([0.0f64; BLOCK], [0.0f64; BLOCK], [0.0f64; BLOCK]);
        let (mut low_max, mut high_min) = ([f64::NEG_INFINITY; BLOCK], [f64::INFINITY; BLOCK]);
        let mut measure = |lane: usize, v: f64| {
            let p = v - t;
            magnitude[lane] += p.abs();
            below[lane] += (lo - p).max(0.0);
            above[lane] += (p - hi).max(0.0);
            // The tests of the compaction below, term for term.
            low_max[lane] = low_max[lane].max(if lo - p >= 0.0 { v } else { f64::NEG_INFINITY });
            high_min[lane] = high_min[lane].min(if -(hi - p) >= 0.0 { v } else { f64::INFINITY });
        };
        let mut blocks = free[..n].chunks_exact(BLOCK);
        for block in blocks.by_ref() {
            for (lane, &v) in block.iter().enumerate() {
                measure(lane, v);
            }
        }
        blocks.remainder().iter().for_each(|&v| measure(0, v));
        let (below, above) = (below.iter().sum::<f64>(), above.iter().sum::<f64>());
        let magnitude = r_free.abs() + magnitude.iter().sum::<f64>();
        // Done when no variable leaves the box, up to the rounding noise of the sums
        // (an exact `below == above` test would also stop on two large violations that
        // only agree after rounding).
        let noise = 16.0 * f64::EPSILON * magnitude;
        if below <= noise && above <= noise {
            return if t_min <= t_max { t.max(t_min).min(t_max) } else { t };
        }
        // Fix the side with the larger violation (either is valid when they are equal:
        // then t is optimal and both sides are at their bounds in the optimum), and
        // compact the free set in place, then sum what stays free for the next round.
        let fix_low = below >= above;
        let (bound, sign) = if fix_low { (lo, 1.0) } else { (hi, -1.0) };
        let mut kept = 0usize;
        for i in 0..n {
            let v = free[i];
            // fix_low: p ≤ lo  ⇔  (lo − p) ≥ 0;  fix high: p ≥ hi  ⇔  (p − hi) ≥ 0.
            let at_bound = sign * (bound - (v - t)) >= 0.0;
            free[kept] = v;
            kept += (!at_bound) as usize;
        }
        // Summed afterwards, in lanes: inside the compaction the compiler turns the
        // select of what to add into a branch.
        let kept_sum = lane_sum(&free[..kept]);
        let fixed_extreme = if fix_low {
            low_max.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b))
        } else {
            -high_min.iter().fold(f64::INFINITY, |a, &b| a.min(b))
        };
        let fixed = n - kept;
        if fixed == 0 {
            // Only possible with NaN in x (every comparison false): stop rather than
            // spin; the caller reports the non-finite input.
            return t;
        }
        if fix_low {
            t_min = t_min.max(fixed_extreme - lo);
        } else {
            t_max = t_max.min(-fixed_extreme - hi);
        }
        r_free -= fixed as f64 * bound;
        sum = kept_sum;
        n = kept;
    }
    // Every variable sits at a bound: any t in [t_min, t_max] reproduces them.
    if t_min.is_finite() {
        t_min
    } else {
        t_max
    }
}

/// Σ values, in independent lanes (which vectorise).
fn lane_sum(values: &[f64]) -> f64 {
    let mut lanes = [0.0f64; BLOCK];
    let mut blocks = values.chunks_exact(BLOCK);
    for block in blocks.by_ref() {
        lanes.iter_mut().zip(block).for_each(|(l, &v)| *l += v);
    }
    lanes.iter().sum::<f64>() + blocks.remainder().iter().sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_hand_solution() {
        let mut ws = Workspace::new();
        let mut out = [0.0; 4];
        knapsack(&[2.0, 0.0, -1.0, 5.0], 0.0, 1.0, 2.0, &mut out, &mut ws).unwrap();
        // t = 1 → clip((1, -1, -2, 4), 0, 1) = (1, 0, 0, 1).
        assert_eq!(out, [1.0, 0.0, 0.0, 1.0]);
        knapsack(&[0.3, 0.1, 0.2], -1.0, 1.0, 0.0, &mut out[..3], &mut ws).unwrap();
        assert!((out[..3].iter().sum::<f64>()).abs() < 1e-15);
    }

    #[test]
    fn rejects_infeasible_bounds() {
        let mut out = [0.0; 2];
        let err = knapsack(&[0.0, 0.0], 0.0, 1.0, 3.0, &mut out, &mut Workspace::new());
        assert!(matches!(err, Err(Error::Infeasible { name: "r", .. })));
    }

    /// lo = hi: the single point lo·1, which float32 cannot hold for lo = −1e300.
    #[test]
    fn single_point_that_overflows_float32_raises() {
        let mut out = [0.0f32; 2];
        let err = knapsack(&[0.0f32; 2], -1e300, -1e300, -2e300, &mut out, &mut Workspace::new()).unwrap_err();
        assert!(matches!(err, Error::NoSolution { .. }), "{err}");
        let mut out = [0.0f64; 2];
        knapsack(&[0.0f64; 2], -1e300, -1e300, -2e300, &mut out, &mut Workspace::new()).unwrap();
        assert_eq!(out, [-1e300; 2]);
    }
}
