//! Biased projection onto the bipartite ("two") simplex: the dual set of the
//! multi-label hinge loss max{0, 1 + max_{l∈N} s_l − min_{j∈Y} s_j} (Lapin, Hein,
//! Schiele, "Analysis and Optimization of Loss Functions for Multiclass, Top-k, and
//! Multilabel Classification", TPAMI 2018), whose Prox-SDCA step is this projection.
//! Unlike the top-k simplex (`topk_simplex.rs`, where the label's coordinate is
//! eliminated and returns as ρ(Σp)² with ρ = 1), both parts here are free variables,
//! so the plain step has ρ = 0. With |Y| = 1 the two coincide: a = s, and
//! (s − x_y)² = s² − 2⟨x_y·1, b⟩ + const, so b = topk_simplex(x_N + x_y, 1, r, 1 + ρ).
//!
//! Problem: a row x split by a mask into x_Y (the positive entries, |Y| ≥ 1) and x_N
//! (the others, |N| ≥ 1):
//!     min_{a,b} ‖a − x_Y‖² + ‖b − x_N‖² + ρ s²  s.t.  a ≥ 0, b ≥ 0, Σa = Σb = s ≤ r.
//! r = ∞ is allowed (no bound on s): the problem always has its solution, because the
//! objective grows at least like s²/|Y| + s²/|N| along the constraint.
//!
//! KKT: for a fixed s each part is the simplex projection a = (x_Y − t_Y(s))_+ with
//! Σa = s (`simplex.rs`), and the value of that inner problem has derivative −2·t_Y(s)
//! in s. So the optimal s minimises a convex function of one variable whose
//! derivative is 2·(ρs − g(s)) with
//!     g(s) = t_Y(s) + t_N(s) − ρ s,
//! continuous and strictly decreasing (t_Y and t_N are non-increasing), from
//! g(0⁺) = max x_Y + max x_N. Hence:
//!   * s = 0 (a = b = 0) iff max x_Y + max x_N ≤ 0;
//!   * s = r iff g(r) ≥ 0 (the multiplier of Σ ≤ r is g(r) ≥ 0);
//!   * otherwise s is the root of g in (0, r).
//!
//! Algorithm (sorting-based, O(m log m) at worst): with x_Y sorted descending, d_i = x_i − x_1
//! and D_j = Σ_{i≤j} d_i, the support of a has j entries for s in [S_j, S_{j+1}],
//! S_j = Σ_{i≤j}(d_i − d_j) = D_j − j·d_j (non-decreasing), where
//! t_Y(s) = x_1 + (D_j − s)/j; likewise for x_N (e, E_k, k). Between consecutive
//! breakpoints of the merged lists g is linear and its root is
//!     s = (x_1 + y_1 + D_j/j + E_k/k) / (1/j + 1/k + ρ).
//! We walk the merged breakpoints upward until that root falls inside its segment,
//! or the segment reaches r (then s = r). Only entries within `reach` (a bound on s)
//! of their part's maximum can be in a support, so only those are sorted: one pass
//! over the row plus a sort of a few entries when s is small next to the spread of x.
//! Each part is then written as a simplex
//! projection with sum s, its threshold taken relative to the smallest support entry
//! (as `simplex_threshold` does), and both parts go through the output check of every
//! projection: a sum off its constraint by more than its proved rounding bound raises.

use super::prefix::{check_output, check_resolved, Param, Sum, Workspace, Written};
use super::topk_cone::check_rho;
use super::Thresholds;
use crate::real::Real;
use crate::{Error, Result};

/// The solution of a bipartite simplex projection: the common sum `s = Σa = Σb` and
/// the two parts' thresholds (`a_i = max(0, (x_i − shift) − lower)` with the positive
/// part's, `b_i` likewise with the negative part's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BipartiteThresholds {
    pub sum: f64,
    pub positive: Thresholds,
    pub negative: Thresholds,
}

/// Projects `x` onto the bipartite simplex of radius `r` (`+∞`: none) with bias `rho`,
/// the part `Y` being the entries where `positive` is true, writing `out`.
pub fn bipartite_simplex<T: Real>(
    x: &[T],
    positive: &[bool],
    r: f64,
    rho: f64,
    out: &mut [T],
    ws: &mut Workspace,
) -> Result<BipartiteThresholds> {
    super::check_row(x, out)?;
    if positive.len() != x.len() {
        return Err(Error::input("positive", format!("has length {}, expected {}", positive.len(), x.len())));
    }
    let n_pos = positive.iter().filter(|&&p| p).count();
    if n_pos == 0 || n_pos == x.len() {
        let which = if n_pos == 0 { "no entry" } else { "every entry" };
        return Err(Error::input(
            "positive",
            format!("marks {which} of a row; each row needs at least one positive and one negative entry"),
        ));
    }
    check_rho(rho)?;
    if r.is_nan() || r < 0.0 {
        return Err(Error::param("r", format!("must be >= 0 (or inf), got {r}")));
    }
    check_resolved("bipartite_simplex", "r", r)?;
    if r == 0.0 {
        let th = super::write_zero(out);
        return Ok(BipartiteThresholds { sum: 0.0, positive: th, negative: th });
    }
    let (mut max_pos, mut max_neg) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for (v, &p) in x.iter().zip(positive) {
        let slot = if p { &mut max_pos } else { &mut max_neg };
        *slot = slot.max(v.to_f64());
    }
    let top = max_pos + max_neg;
    if !top.is_finite() {
        // The caller reports the NaN or infinity (`batch::finite_row`).
        return Err(Error::input("x", "contains NaN or infinity"));
    }
    if top <= 0.0 {
        let th = super::write_zero(out);
        return Ok(BipartiteThresholds { sum: 0.0, positive: th, negative: th });
    }
    // g(s) ≤ top − s·(1/|Y| + 1/|N| + ρ) (each part's largest entry holds at least
    // s/|part|), so s ≤ reach; and the largest entry of a part holds at most s, so
    // t_part ≥ max − reach: entries at or below it are zero and their breakpoints lie
    // beyond reach. Only the others are sorted (a few ulps of slack keep rounding from
    // dropping a support entry; keeping one too many changes nothing).
    let reach = r.min(top / (1.0 / n_pos as f64 + 1.0 / (x.len() - n_pos) as f64 + rho));
    let bound = |max: f64| (max - reach) - 4.0 * f64::EPSILON * (max.abs() + reach);
    let (bound_pos, bound_neg) = (bound(max_pos), bound(max_neg));
    // Both parts, each sorted descending: positives in front, negatives after them.
    let values = &mut ws.values;
    values.clear();
    values.extend(x.iter().zip(positive).filter(|(v, &p)| p && v.to_f64() > bound_pos).map(|(v, _)| v.to_f64()));
    let kept_pos = values.len();
    values.extend(x.iter().zip(positive).filter(|(v, &p)| !p && v.to_f64() > bound_neg).map(|(v, _)| v.to_f64()));
    let (pos, neg) = values.split_at_mut(kept_pos);
    pos.sort_unstable_by(|a, b| b.total_cmp(a));
    neg.sort_unstable_by(|a, b| b.total_cmp(a));
    let (pos, neg) = (&*pos, &*neg);
    if pos.is_empty() || neg.is_empty() {
        // Each part keeps its maximum (reach > 0), unless x holds NaN.
        return Err(Error::input("x", "contains NaN or infinity"));
    }
    let (s, j, k) = common_sum(pos, neg, top, r, rho);
    let th_pos = part_threshold(pos, j, s);
    let th_neg = part_threshold(neg, k, s);
    // Both parts written in one pass, each summed in its own lane.
    let mut totals = [0.0f64; 2];
    for ((o, &v), &p) in out.iter_mut().zip(x).zip(positive) {
        let th = if p { &th_pos } else { &th_neg };
        let value = T::from_f64(((v.to_f64() - th.shift) - th.lower).max(0.0));
        totals[usize::from(p)] += value.to_f64();
        *o = value;
    }
    let fits = T::as_f64_slice(out).is_some() || out.iter().all(|o| o.to_f64().is_finite());
    // The parameter that set s: r when the radius binds, else the data.
    let param = if s == r { Param { name: "r", value: r } } else { Param { name: "x", value: s } };
    // Each part is checked against the whole row's mass and length: a looser bound than
    // the part's own, still relative and proved (`output_tolerance` grows with both).
    for total in totals {
        check_output("bipartite_simplex", out, 0.0, Written { total, fits }, Sum::Equal(s), param)?;
    }
    Ok(BipartiteThresholds { sum: s, positive: th_pos, negative: th_neg })
}

/// The breakpoint S_{j+1} = Σ_{i≤j+1}(d_i − d_{j+1}) of a sorted part, given
/// D_j = Σ_{i≤j}(d_i) (`+∞` past the end): where entry j+1 joins the support.
fn next_breakpoint(part: &[f64], j: usize, sum_d: f64) -> f64 {
    match part.get(j) {
        None => f64::INFINITY,
        Some(&v) => {
            let d = v - part[0];
            (sum_d + d) - (j + 1) as f64 * d
        }
    }
}

/// The optimal common sum s of the two sorted parts (`top = pos[0] + neg[0] > 0`)
/// and the support sizes (j, k) at s (the module docs' walk over the breakpoints).
fn common_sum(pos: &[f64], neg: &[f64], top: f64, r: f64, rho: f64) -> (f64, usize, usize) {
    let (mut j, mut k) = (1usize, 1usize);
    // D_j and E_k: sums of the support entries relative to each part's maximum.
    let (mut sum_d, mut sum_e) = (0.0f64, 0.0f64);
    loop {
        let (jf, kf) = (j as f64, k as f64);
        let root = (top + sum_d / jf + sum_e / kf) / (1.0 / jf + 1.0 / kf + rho);
        let next_pos = next_breakpoint(pos, j, sum_d);
        let next_neg = next_breakpoint(neg, k, sum_e);
        let hi = next_pos.min(next_neg);
        // g is linear on [lo, hi]: its root lies in the segment, or g(hi) > 0 and the
        // walk goes on (unless the radius ends it first: then g(r) > 0 and s = r).
        // A NaN (a row whose differences overflow) ends the walk too; the output check
        // then refuses the answer.
        let (more_pos, more_neg) = (j < pos.len(), k < neg.len());
        if root.is_nan() || hi.is_nan() || root <= hi || hi >= r || !(more_pos || more_neg) {
            return (root.max(0.0).min(r), j, k);
        }
        if more_pos && !(more_neg && next_pos > next_neg) {
            sum_d += pos[j] - pos[0];
            j += 1;
        } else {
            sum_e += neg[k] - neg[0];
            k += 1;
        }
    }
}

/// The simplex threshold of a sorted part whose support is its `j` largest entries at
/// sum `s`, relative to the smallest support entry (see `simplex_threshold`): the
/// entries are (d_i − d_j) − (Σ_{i≤j}(d_i − d_j) − s)/j, each term in [0, a_i].
fn part_threshold(part: &[f64], j: usize, s: f64) -> Thresholds {
    let top = part[0];
    let smallest = part[j - 1] - top;
    let above: f64 = part[..j].iter().map(|&v| (v - top) - smallest).sum();
    Thresholds { shift: top, lower: smallest + (above - s) / j as f64, upper: f64::INFINITY }
}

#[cfg(test)]
mod tests {
    use super::super::simplex::simplex;
    use super::*;

    /// The objective ‖a − x_Y‖² + ‖b − x_N‖² + ρs² of a candidate.
    fn objective(x: &[f64], positive: &[bool], p: &[f64], rho: f64) -> f64 {
        let s: f64 = p.iter().zip(positive).filter(|(_, &q)| q).map(|(v, _)| v).sum();
        x.iter().zip(p).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() + rho * s * s
    }

    /// The reference by another route: the inner simplex projections at a given s,
    /// and a golden-section search of the convex value over s ∈ [0, min(r, bound)].
    fn reference(x: &[f64], positive: &[bool], r: f64, rho: f64) -> Vec<f64> {
        let mut ws = Workspace::new();
        let split = |s: f64, ws: &mut Workspace| {
            let parts: Vec<Vec<f64>> = [true, false]
                .iter()
                .map(|&side| {
                    let part: Vec<f64> = x.iter().zip(positive).filter(|(_, &q)| q == side).map(|(v, _)| *v).collect();
                    let mut out = vec![0.0; part.len()];
                    simplex(&part, s, false, &mut out, ws).unwrap();
                    out
                })
                .collect();
            let (mut a, mut b) = (parts[0].iter(), parts[1].iter());
            positive.iter().map(|&q| *if q { a.next() } else { b.next() }.unwrap()).collect::<Vec<f64>>()
        };
        let bound = x.iter().map(|v| v.abs()).sum::<f64>() + 1.0;
        let (mut lo, mut hi) = (0.0, r.min(bound));
        let phi = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..200 {
            let (m1, m2) = (hi - phi * (hi - lo), lo + phi * (hi - lo));
            if objective(x, positive, &split(m1, &mut ws), rho) <= objective(x, positive, &split(m2, &mut ws), rho) {
                hi = m2;
            } else {
                lo = m1;
            }
        }
        split((lo + hi) / 2.0, &mut ws)
    }

    /// The KKT conditions of the module docs, checked on an answer.
    fn check_kkt(x: &[f64], positive: &[bool], r: f64, rho: f64, p: &[f64], th: &BipartiteThresholds) {
        let tol = 1e-12 * (1.0 + x.iter().map(|v| v.abs()).fold(0.0, f64::max));
        let s = th.sum;
        let (sum_a, sum_b) =
            p.iter().zip(positive).fold((0.0, 0.0), |(a, b), (v, &q)| if q { (a + v, b) } else { (a, b + v) });
        assert!((sum_a - s).abs() <= tol && (sum_b - s).abs() <= tol, "{sum_a} {sum_b} {s}");
        assert!((0.0..=r).contains(&s));
        let (t_pos, t_neg) = (th.positive.threshold(), th.negative.threshold());
        for ((&v, &q), &a) in x.iter().zip(positive).zip(p) {
            let t = if q { t_pos } else { t_neg };
            assert!((a - (v - t).max(0.0)).abs() <= tol, "entry {v} -> {a}, threshold {t}");
        }
        let g = t_pos + t_neg - rho * s;
        if s == 0.0 {
            let max_of = |side: bool| {
                x.iter().zip(positive).filter(|(_, &q)| q == side).map(|(v, _)| *v).fold(f64::NEG_INFINITY, f64::max)
            };
            assert!(max_of(true) + max_of(false) <= 0.0);
        } else if s == r {
            assert!(g >= -tol, "multiplier of the radius {g} < 0");
        } else {
            assert!(g.abs() <= tol, "g(s) = {g} at an interior s = {s}");
        }
    }

    fn solve(x: &[f64], positive: &[bool], r: f64, rho: f64) -> (Vec<f64>, BipartiteThresholds) {
        let mut out = vec![0.0; x.len()];
        let th = bipartite_simplex(x, positive, r, rho, &mut out, &mut Workspace::new()).unwrap();
        (out, th)
    }

    #[test]
    fn known_projections() {
        // One entry per side: a = b = s, minimising (s − 2)² + (s − 1)² + s²: s = 1.
        let (out, th) = solve(&[2.0, 1.0], &[true, false], f64::INFINITY, 1.0);
        assert_eq!((out, th.sum), (vec![1.0, 1.0], 1.0));
        // The radius binds.
        let (out, th) = solve(&[2.0, 1.0], &[true, false], 0.5, 1.0);
        assert_eq!((out, th.sum), (vec![0.5, 0.5], 0.5));
        // max x_Y + max x_N ≤ 0: zero.
        let (out, th) = solve(&[1.0, -1.0, -3.0], &[true, false, false], 1.0, 0.0);
        assert_eq!((out, th.sum), (vec![0.0; 3], 0.0));
    }

    #[test]
    fn agrees_with_a_search_over_the_sum() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for case in 0..300 {
            let m = 2 + case % 9;
            // Rounded to quarters: ties within and across the parts.
            let x: Vec<f64> = (0..m).map(|_| ((next() * 12.0 - 5.0) * 4.0).round() / 4.0).collect();
            let mut positive: Vec<bool> = (0..m).map(|_| next() < 0.4).collect();
            positive[0] = true;
            positive[m - 1] = false;
            let r = [0.3, 1.0, 4.0, f64::INFINITY][case % 4];
            let rho = [0.0, 1.0, 0.25][case % 3];
            let (out, th) = solve(&x, &positive, r, rho);
            check_kkt(&x, &positive, r, rho, &out, &th);
            let expected = reference(&x, &positive, r, rho);
            // A search over the value finds its minimiser to about √ε of the scale.
            for (a, b) in out.iter().zip(&expected) {
                assert!(
                    (a - b).abs() < 1e-6,
                    "case {case}: {out:?} vs {expected:?} for x {x:?} {positive:?} r {r} rho {rho}"
                );
            }
        }
    }

    #[test]
    fn ties_constant_rows_and_magnitudes() {
        // A constant row: each side spreads s evenly.
        let x = [0.5; 6];
        let positive = [true, true, false, false, false, false];
        let (out, th) = solve(&x, &positive, f64::INFINITY, 1.0);
        check_kkt(&x, &positive, f64::INFINITY, 1.0, &out, &th);
        // Entries across many orders of magnitude, in float32 too.
        let x = [1e12, 3.0, -1e-9, 1e-300, -1e12, 2.5];
        let positive = [true, false, true, false, false, true];
        let (out, th) = solve(&x, &positive, 10.0, 1.0);
        check_kkt(&x, &positive, 10.0, 1.0, &out, &th);
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let mut out32 = vec![0.0f32; x.len()];
        bipartite_simplex(&x32, &positive, 10.0, 1.0, &mut out32, &mut Workspace::new()).unwrap();
        assert_eq!(out32.iter().filter(|&&v| v > 0.0).count(), out.iter().filter(|&&v| v > 0.0).count());
    }

    #[test]
    fn bad_input_is_refused() {
        let mut ws = Workspace::new();
        let mut out = [0.0; 3];
        let err = |positive: &[bool], r: f64, rho: f64, ws: &mut Workspace, out: &mut [f64]| {
            bipartite_simplex(&[1.0, 2.0, 3.0], positive, r, rho, out, ws).unwrap_err().to_string()
        };
        assert!(err(&[true; 3], 1.0, 0.0, &mut ws, &mut out).starts_with("positive: marks every entry"));
        assert!(err(&[false; 3], 1.0, 0.0, &mut ws, &mut out).starts_with("positive: marks no entry"));
        assert!(err(&[true, false], 1.0, 0.0, &mut ws, &mut out).starts_with("positive: has length 2"));
        assert!(err(&[true, false, false], -1.0, 0.0, &mut ws, &mut out).starts_with("r: must be >= 0"));
        assert!(err(&[true, false, false], f64::NAN, 0.0, &mut ws, &mut out).starts_with("r: must be >= 0"));
        assert!(err(&[true, false, false], 1.0, -1.0, &mut ws, &mut out).starts_with("rho: must be finite"));
    }

    /// NaN, infinities and overflowing differences give an error (the batch names the
    /// entry) or an answer that passed the output check, never a panic.
    #[test]
    fn non_finite_and_overflowing_rows_do_not_panic() {
        let mut ws = Workspace::new();
        let mut out = [0.0; 4];
        let positive = [true, false, true, false];
        for x in [
            [f64::NAN, 1.0, 2.0, 3.0],
            [f64::INFINITY, 1.0, 2.0, 3.0],
            [f64::NEG_INFINITY, 1.0, f64::INFINITY, 3.0],
            [f64::NAN, 1.0, f64::NAN, 3.0],
        ] {
            // An input NaN may be passed over (max ignores it): the batch check reports it.
            let result = bipartite_simplex(&x, &positive, f64::INFINITY, 0.0, &mut out, &mut ws);
            assert!(result.is_err() || out.iter().all(|v| v.is_finite()), "{x:?}");
        }
        let x = [1e308, -1e308, -1e308, 1e308];
        for r in [1.0, f64::INFINITY] {
            if let Ok(th) = bipartite_simplex(&x, &positive, r, 0.0, &mut out, &mut ws) {
                check_kkt(&x, &positive, r, 0.0, &out, &th);
            }
        }
    }

    /// One label: the problem is Crammer–Singer's (a single a_y = Σb), solved here from
    /// both sides; the answer does not depend on which side is called positive.
    #[test]
    fn symmetric_in_the_two_sides() {
        let x = [0.3, 1.2, -0.4, 0.9, 0.1];
        let positive = [false, true, false, false, true];
        let flipped: Vec<bool> = positive.iter().map(|q| !q).collect();
        let (a, _) = solve(&x, &positive, 1.0, 1.0);
        let (b, _) = solve(&x, &flipped, 1.0, 1.0);
        assert!(a.iter().zip(&b).all(|(u, v)| (u - v).abs() <= 1e-15), "{a:?} vs {b:?}");
    }
}
