//! Biased projection onto the top-k simplex (Lapin, Hein, Schiele 2015, §4.3, Lemma 5).
//!
//! Problem:  min_p ‖p − x‖² + ρ(Σp)²  s.t.  0 ≤ p_i ≤ (Σp)/k,  Σp ≤ r.
//! This is the dual set Δ_k(r) of the top-k hinge loss ("alpha"); ρ = 1 is the
//! Prox-SDCA step (Proposition 4). KKT (Lemma 5): either the sum constraint is
//! inactive and p is the top-k cone projection (`topk_cone.rs`), or Σp = r, the bias
//! term is constant, and p is the knapsack solution p = clip(x − t, 0, r/k) with
//! Σp = r, which is optimal iff its multiplier
//!     λ = t + (1/k) Σ_{i∈U} (x_i − t − r/k) − ρ r ≥ 0.
//! Following the paper we try the (cheaper) knapsack first and fall back to the cone.

use super::prefix::{
    capped_root, check_output, check_resolved, order_statistic_bounds, short_top, solve_largest, write_clipped, Param,
    Sum, Workspace, SHORT_ROW, TRACKED,
};
use super::topk_cone::{check_k, check_rho, cone_on_prefix, first_prefix};
use super::Thresholds;
use crate::real::Real;
use crate::{Error, Result};

/// Projects `x` onto the top-k simplex of radius `r` with bias `rho`, writing `out`.
pub fn topk_simplex<T: Real>(
    x: &[T],
    k: usize,
    r: f64,
    rho: f64,
    out: &mut [T],
    ws: &mut Workspace,
) -> Result<Thresholds> {
    super::check_row(x, out)?;
    check_k(k, x.len())?;
    check_rho(rho)?;
    if !(r >= 0.0 && r.is_finite()) {
        return Err(Error::param("r", format!("must be finite and >= 0, got {r}")));
    }
    check_resolved("topk_simplex", "r", r)?;
    if r == 0.0 {
        return Ok(super::write_zero(out));
    }
    let first = first_prefix(k);
    let top = short_row_top(x, k);
    let (bound, slack) = match &top {
        Some((top, _)) => short_zero_below(&top[..=k], x.len(), r, rho),
        None => long_zero_below(x, k, r, first, ws),
    };
    let step = |d: &[f64], p: &[f64], rest: f64| {
        if slack {
            // Σp < r at the answer: it is the cone's solution (the unique minimiser
            // without the sum constraint, which it meets), and the knapsack need not
            // be tried. A sum that rounds above r leaves it to the general solve.
            Ok(cone_on_prefix(d, p, rest, k, rho)?.filter(|th| th.upper * k as f64 <= r))
        } else {
            simplex_on_prefix(d, p, rest, k, r, rho)
        }
    };
    let th = match top.and_then(|(top, n)| solve_on_top(&top, n, x.len(), k, step).transpose()) {
        Some(answer) => answer?,
        None => solve_largest(x, bound, first, ws, step)?,
    };
    // Both branches give Σp = k·upper: the knapsack's cap is r/k with Σp = r, the
    // cone's is s/k with Σp = s ≤ r (checked in `simplex_on_prefix`); so p_i ≤ upper
    // ≤ Σp/k up to the output's proved rounding bound.
    let written = write_clipped(x, &th, 0.0, out);
    check_output("topk_simplex", out, 0.0, written, Sum::Equal(k as f64 * th.upper), Param { name: "r", value: r })?;
    Ok(th)
}

/// Entries at or below min(x_[k] − r/k, x_[k+1]) are zero in the solution: with a
/// threshold t below both, the k largest entries would sit at their cap s/k and
/// x_[k+1] above zero, so Σp > s (s = r for the knapsack, s ≤ r for the cone,
/// whose cap s/k is then at most r/k). Any lower bounds B_k ≤ x_[k], B_{k+1} ≤ x_[k+1]
/// give a bound min(B_k − r/k, B_{k+1}) too: the exact ones for a short row
/// ([`short_zero_below`]), those of the block maxima for a long one
/// (`order_statistic_bounds`; `−∞`, no filtering, where they give none). A long row's
/// sum constraint is never known slack in advance (the second value).
fn long_zero_below<T: Real>(x: &[T], k: usize, r: f64, first_len: usize, ws: &mut Workspace) -> (f64, bool) {
    match order_statistic_bounds(x, k, first_len, ws) {
        Some((kth, next)) => ((kth - r / k as f64).min(next), false),
        None => (f64::NEG_INFINITY, false),
    }
}

/// A short row's largest entries, descending, from one scan (`short_top`), and how
/// many: at least k + 2 where the scan can track them — the k + 1 or more that
/// [`solve_on_top`] solves on and the largest of the others — else k + 1 (what
/// [`short_zero_below`] needs). `None` for a long row, or when k + 1 entries are the
/// whole row or more than the scan tracks.
///
/// Why k + 3, and at least 6: a prefix that holds the support spares the general path,
/// and one more entry tracked costs one compare-exchange per entry. Counted with
/// callgrind on the SDCA rows of `benches/projections.rs` (m = 25), instructions per
/// row against the general path alone: k = 1: 2,000 vs 2,790; k = 3: 2,390 vs 2,810;
/// k = 5: 2,750 vs 3,300 (k + 2 tracked: 2,950, 2,620, 2,930 — a prefix of k + 1 misses
/// the support of 10–40 % of those rows).
fn short_row_top<T: Real>(x: &[T], k: usize) -> Option<([f64; TRACKED], usize)> {
    if x.len() > SHORT_ROW || k >= x.len() {
        return None;
    }
    let n = if k + 2 <= TRACKED { (k + 3).clamp(6, TRACKED).min(x.len()) } else { k + 1 };
    short_top(x, n).map(|top| (top, n))
}

/// The answer from a short row's `n` largest entries `top` alone, when they decide it:
/// the problem solved on all but the last of them as the sorted prefix, with the last
/// as the rest (the whole row, rest −∞, when `top` is the whole row). In an SDCA step
/// the support is one to a few entries, so this prefix almost always holds it, and the
/// copy, selection and sort of the general path (`solve_largest`) are skipped; the
/// step's test that its threshold clears the rest is the same, so `None` (a longer
/// prefix needed, or fewer than k + 2 entries tracked) only hands over to the general
/// path.
fn solve_on_top(
    top: &[f64; TRACKED],
    n: usize,
    m: usize,
    k: usize,
    mut step: impl FnMut(&[f64], &[f64], f64) -> Result<Option<Thresholds>>,
) -> Result<Option<Thresholds>> {
    if n < k + 2 && n != m {
        return Ok(None);
    }
    let len = if n == m { n } else { n - 1 };
    let rest = if len < n { top[len] } else { f64::NEG_INFINITY };
    // Summed in order, as `TopPrefix` sums its sorted prefix.
    let mut sums = [0.0; TRACKED + 1];
    for (j, &v) in top[..len].iter().enumerate() {
        sums[j + 1] = sums[j] + v;
    }
    step(&top[..len], &sums[..=len], rest)
}

/// The bound of [`long_zero_below`] for a short row, from its k + 1 largest entries `top`
/// (descending), with s = Σp bounded more tightly than by r: p is optimal against the
/// feasible point 0, so ⟨p − x + ρs·1, 0 − p⟩ ≥ 0, i.e. ‖p‖² + ρs² ≤ ⟨x, p⟩, where
/// ⟨x, p⟩ ≤ (s/k)·Σ_{i≤k} x_[i] (p/s lies in the top-k simplex of sum 1) and
/// ‖p‖² ≥ s²/m: s ≤ mean_k / (ρ + 1/m), mean_k the mean of the k largest entries. In
/// an SDCA step (ρ = 1, entries v_j/δ of a few score differences) that bound is far
/// below r, and the filter keeps the handful of entries near the top instead of all
/// those within r/k of x_[k]. The mean's rounding is added to the bound; a bound still
/// too tight costs the general solve, never a wrong answer (`solve_largest`). When the
/// bound on s is below r, the sum constraint is slack at the answer (the second value).
fn short_zero_below(top: &[f64], m: usize, r: f64, rho: f64) -> (f64, bool) {
    let k = top.len() - 1;
    let kf = k as f64;
    let (sum, mass) = top[..k].iter().fold((0.0, 0.0), |(s, a), &v| (s + v, a + v.abs()));
    let sum = sum + 2.0 * kf * f64::EPSILON * mass;
    let s_max = if sum > 0.0 { (sum / kf) / (rho + 1.0 / m as f64) * (1.0 + 4.0 * f64::EPSILON) } else { 0.0 };
    ((top[k - 1] - s_max.min(r) / kf).min(top[k]), s_max < r)
}

fn simplex_on_prefix(d: &[f64], p: &[f64], rest: f64, k: usize, r: f64, rho: f64) -> Result<Option<Thresholds>> {
    if d.len() < k {
        return Ok(None);
    }
    let kf = k as f64;
    let cap = r / kf;
    // The knapsack: Σ clip(x − t, 0, r/k) = r.
    let knapsack = capped_root(d, p, cap, 0.0, r);
    if !knapsack.clears(rest) {
        // The knapsack needs entries left out of the prefix. The cone's solution, if the
        // prefix holds it (it clears `rest`) and its sum is at most r, is feasible and
        // optimal without the sum constraint, hence the answer: a short row's bound is
        // one for the answer (`short_zero_below`), and may leave out the support of the
        // knapsack when the sum constraint is far from binding, as in SDCA steps.
        return Ok(cone_on_prefix(d, p, rest, k, rho)?.filter(|th| th.upper * kf <= r));
    }
    // Its multiplier λ = t + (1/k) Σ_U (x_i − t − r/k) − ρr, with t = shift + lower
    // kept apart (next to huge entries their sum rounds to the shift and would hide a
    // small negative λ): λ = (shift − ρr) + lower + (1/k) Σ_U ((x_i − shift) − lower − cap).
    let excess = |v: f64| ((v - knapsack.shift) - knapsack.lower) - cap;
    let capped = d.partition_point(|&v| excess(v) >= 0.0);
    let over: f64 = d[..capped].iter().map(|&v| excess(v)).sum();
    let lambda = ((knapsack.shift - rho * r) + knapsack.lower) + over / kf;
    // λ's own rounding: capped + 4 roundings of the magnitudes summed. Within it, λ = 0
    // and both branches are the same point.
    let lambda_err = 8.0
        * (capped as f64 + 4.0)
        * f64::EPSILON
        * (knapsack.shift.abs() + rho * r + knapsack.lower.abs() + over / kf);
    if lambda >= -lambda_err {
        return Ok(Some(knapsack));
    }
    // λ < 0: the sum constraint is inactive; the cone solution must have Σp < r.
    match cone_on_prefix(d, p, rest, k, rho)? {
        None => Ok(None),
        Some(th) => {
            let s = th.upper * kf;
            if s > r * (1.0 + 1e-9) {
                return Err(Error::no_solution(
                    "topk_simplex",
                    format!("knapsack multiplier {lambda} < 0 but the cone solution has sum {s} > r = {r}"),
                ));
            }
            // s just above r: λ < 0 only by rounding, and the knapsack (Σp = r) is the
            // feasible one of the two equal answers.
            Ok(Some(if s > r { knapsack } else { th }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radius_binds_or_not() {
        let mut ws = Workspace::new();
        let mut out = [0.0; 4];
        // Small input: the cone projection has sum < r, so it is the answer.
        let x = [0.1, 0.05, -0.2, 0.02];
        topk_simplex(&x, 2, 10.0, 0.0, &mut out, &mut ws).unwrap();
        let mut cone = [0.0; 4];
        super::super::topk_cone::topk_cone(&x, 2, 0.0, &mut cone, &mut ws).unwrap();
        assert_eq!(out, cone);
        // Large input: the radius binds, Σp = r and p ≤ r/k.
        topk_simplex(&[10.0, 9.0, 8.0, -1.0], 2, 1.0, 1.0, &mut out, &mut ws).unwrap();
        assert!((out.iter().sum::<f64>() - 1.0).abs() < 1e-14);
        assert!(out.iter().all(|&v| (0.0..=0.5 + 1e-15).contains(&v)));
    }
}
