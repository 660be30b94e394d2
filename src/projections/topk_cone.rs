//! Biased projection onto the top-k cone (Lapin, Hein, Schiele 2015, §4.2, Lemmas 3–4).
//!
//! Problem:  min_p ‖p − x‖² + ρ(Σp)²  s.t.  0 ≤ p_i ≤ (Σp)/k.
//! With s = Σp and multipliers t (for Σp = s), ν_i ≥ 0 (for p_i ≤ s/k), the KKT
//! conditions are (proof of Lemma 3)
//!     p_i = clip(x_i − t, 0, s/k),     t = ρ s − (1/k) Σ_{i∈U} (x_i − t − s/k),
//! where U = {p_i = s/k} and M = {0 < p_i < s/k}. For fixed |U| = u and |U ∪ M| = j
//! (the u and j largest entries) the two equations are linear, eq. (7):
//!     t = ((ρk² + u)·Σ_M x − (k − u)·Σ_U x) / D,   D = (k − u)² + (ρk² + u)·|M|,
//!     s = k/(k − u) · (Σ_M x − |M| t),
//! valid iff the partition matches the thresholds, eq. (8):
//!     max_L x ≤ t ≤ min_M x,   max_M x ≤ t + s/k ≤ min_U x.
//! Special cases: p = 0 iff the sum of the k largest entries is ≤ 0 (Lemma 4; the
//! condition is also necessary for ρ > 0, because the bias term has zero gradient at
//! 0), and M = ∅, |U| = k with s = Σ_{i≤k} x_[i] / (1 + ρk) (Lemma 3, case 2).
//!
//! Instead of the paper's O(k·m) scan over all (U, M) partitions we sort once (a
//! prefix, see `prefix.rs`) and, for each u < k, find |M| by a binary search: for
//! fixed u, eliminating s leaves g(t) = (k − u)t + Σ_U x − (ρk² + u)/(k − u)·Σ_{i∉U}
//! (x_i − t)_+ = 0 with g increasing, so the root's bracket among the sorted x is
//! found in O(log m). Total O(m + c log c + k log c) for a prefix of length c.

use super::prefix::{check_output, write_clipped, Param, Sum, TopPrefix, Workspace};
use super::Thresholds;
use crate::real::Real;
use crate::{Error, Result};

/// Projects `x` onto the top-k cone with bias `rho`, writing `out`.
pub fn topk_cone<T: Real>(x: &[T], k: usize, rho: f64, out: &mut [T], ws: &mut Workspace) -> Result<Thresholds> {
    super::check_row(x, out)?;
    check_k(k, x.len())?;
    check_rho(rho)?;
    let mut top = TopPrefix::load(x, ws);
    let th = top.solve(first_prefix(k), |d, p, rest| cone_on_prefix(d, p, rest, k, rho))?;
    // p_i ≤ s/k with s = Σp: the cap must be the output's own mean over k (the
    // output's sum is checked against k·cap, within its proved rounding bound).
    let written = write_clipped(x, &th, 0.0, out);
    check_output("topk_cone", out, 0.0, written, Sum::Equal(k as f64 * th.upper), Param { name: "x", value: 0.0 })?;
    Ok(th)
}

pub(crate) fn first_prefix(k: usize) -> usize {
    (2 * k + 8).max(32)
}

pub(crate) fn check_k(k: usize, m: usize) -> Result<()> {
    if k == 0 || k > m {
        return Err(Error::param("k", format!("must satisfy 1 <= k <= m = {m}, got {k}")));
    }
    Ok(())
}

pub(crate) fn check_rho(rho: f64) -> Result<()> {
    if !(rho >= 0.0 && rho.is_finite()) {
        return Err(Error::param("rho", format!("must be finite and >= 0, got {rho}")));
    }
    Ok(())
}

/// Solves the cone problem on a sorted prefix `d` (with prefix sums `p`), entries
/// outside the prefix being at most `rest`. `None`: the prefix is too short.
///
/// The partition (U, M) is searched with the prefix sums; each candidate is then
/// solved again relative to its smallest free entry ([`solve_partition`]) and accepted
/// only if that solution satisfies eq. (8) to within its own rounding. When the prefix
/// sums are too coarse to find the partition at all (entries spanning many orders of
/// magnitude), the search is repeated with every g evaluated entry by entry.
pub(crate) fn cone_on_prefix(d: &[f64], p: &[f64], rest: f64, k: usize, rho: f64) -> Result<Option<Thresholds>> {
    let c = d.len();
    if c < k {
        return Ok(None);
    }
    let kf = k as f64;
    // Lemma 4: zero iff the k largest entries sum to T ≤ 0 (summed relative to x_[k], so
    // that ties and near-ties are not lost to the rounding of the prefix sums).
    let kth = d[k - 1];
    let above_kth = d[..k].iter().map(|&v| v - kth).sum::<f64>();
    let top_k = above_kth + kf * kth;
    // ... and within T's own rounding. T̂ carries k subtractions, k additions and k·x_[k]:
    // |T̂ − T| ≤ E = 4(k + 2)ε(Σ_{i≤k} |x_[i] − x_[k]| + k|x_[k]|) (γ_{2k+2} with room).
    // For T̂ ≤ E the exact s is at the rounding level of the entries — and then so is the
    // error of t, which eq. (7) finds by cancelling terms of size k|x|: a free entry can
    // land above the cap s/k by more than s itself (a Letter row, k = 3: s = 2e-17 next
    // to entries of 1e-2, and the output summed to 2s/3). p = 0 is instead the exact
    // projection of x − (2E/k)·1, whose k largest entries sum to T − 2E ≤ 0: a row moved
    // by a few ulps of its k largest entries (independent of m), and exactly feasible.
    // (A row whose k·|x_[k]| overflows gets no such bound: its breakdown is reported below.)
    let top_k_err = 4.0 * (kf + 2.0) * f64::EPSILON * (above_kth + kf * kth.abs());
    if top_k <= 0.0 || (top_k_err.is_finite() && top_k <= top_k_err) {
        return Ok(Some(Thresholds { shift: 0.0, lower: f64::INFINITY, upper: 0.0 }));
    }
    let next_after = |j: usize| if j < c { d[j] } else { rest };

    // Lemma 3, case 2: U = the k largest, M = ∅. Relative to x_[k]: next to huge
    // entries d[k−1] − cap would round, and the k-th entry (or all of them) would lose
    // the cap's digits. Every entry of U then sits exactly at the cap.
    let s = top_k / (1.0 + rho * kf);
    let cap = s / kf;
    let next = next_after(k);
    if (kth - next) - cap >= 0.0 {
        let th = Thresholds { shift: kth, lower: -cap, upper: cap };
        return Ok(th.clears(rest).then_some(th));
    }
    if let Some(th) = case_3::<false>(d, p, k, rho) {
        return Ok(th.clears(rest).then_some(th));
    }
    // Entries left out of the prefix: a longer one first. Usually the partition needs
    // them, and sorting more costs less than the entry-by-entry search, which is O(c)
    // per evaluation (Gaussian rows, m = 1000, k = 5: 5.2 µs with it here, 3.7 µs
    // without); on the whole row that search settles what rounding left open.
    if rest > f64::NEG_INFINITY {
        return Ok(None);
    }
    if let Some(th) = case_3::<true>(d, p, k, rho) {
        return Ok(th.clears(rest).then_some(th));
    }
    // Case 2 holding only within rounding (x_[k+1] a hair above x_[k] − s/k) where case 3
    // could not resolve the entries in between: the threshold is raised to x_[k+1] so
    // that the entries below stay 0 as the partition says (x_[k] then ends at most that
    // hair under its cap; the output check bounds it) — except for a tie
    // x_[k+1] = x_[k], where that would zero every tied entry.
    let hair = 8.0 * (k as f64 + 4.0) * f64::EPSILON * (kth.abs() + cap + next.abs());
    if (kth - next) - cap >= -hair {
        let lower = if next < kth { (-cap).max(next - kth) } else { -cap };
        let th = Thresholds { shift: kth, lower, upper: cap };
        return Ok(th.clears(rest).then_some(th));
    }
    Err(Error::no_solution("topk_cone", format!("no partition (U, M, L) satisfies eq. (8) for k = {k}, rho = {rho}")))
}

/// Lemma 3, case 3: for each u = |U| < k, the largest j with g(x_[j]) ≥ 0 (M = d[u..j]),
/// then [`solve_partition`]. g from the prefix sums (`EXACT` false), or entry by entry
/// relative to the breakpoint (O(c) per evaluation), for rows whose prefix sums carry
/// more rounding than the gaps between the entries.
fn case_3<const EXACT: bool>(d: &[f64], p: &[f64], k: usize, rho: f64) -> Option<Thresholds> {
    let c = d.len();
    let kf = k as f64;
    for u in 0..k {
        let free = (k - u) as f64;
        let coupling = (rho * kf * kf + u as f64) / free;
        // g(t) = (k − u)t + Σ_U x − coupling·Σ_{u≤i<j} (x_i − t) at t = d[j − 1]; exactly:
        // (k − u)t + Σ_U x = k·t + Σ_U (x_i − t).
        let g = |j: usize| -> f64 {
            let t = d[j - 1];
            if EXACT {
                let above: f64 = d[..u].iter().map(|&v| v - t).sum();
                let inside: f64 = d[u..j].iter().map(|&v| v - t).sum();
                kf * t + above - coupling * inside
            } else {
                free * t + p[u] - coupling * (p[j] - p[u] - (j - u) as f64 * t)
            }
        };
        // Largest j in (u, c] with g(d[j−1]) ≥ 0: then M = d[u..j].
        if g(u + 1) < 0.0 {
            continue;
        }
        let (mut lo, mut hi) = (u + 1, c);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if g(mid) >= 0.0 {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        if !EXACT && clearly_violated(d, p, k, rho, u, lo) {
            continue;
        }
        if let Some(th) = solve_partition(d, k, rho, u, lo) {
            return Some(th);
        }
    }
    None
}

/// An O(1) screen before [`solve_partition`]'s O(j) re-solve: eq. (7) from the prefix
/// sums, and `true` only if eq. (8) fails by more than the prefix sums' rounding can
/// explain (so the partition that holds is never screened out). Most u < k fail by
/// far: on Gaussian rows (m = 1000, k = 50) the screen halves case 3's cost.
///
/// The bound: with mag = j·max(|x_[1]|, |x_[j]|) ≥ Σ_{i≤j} |x_i| (the prefix is sorted),
/// every prefix difference is off by at most E = (j + 2)ε·mag. As A/D ≤ 1/|M| and
/// F/D ≤ 1/F ≤ 1, t is off by at most 3E + 4ε|t|, and s/k by at most
/// (3j + 2)E + 7jε|t| + 3ε·mag + ε·s/k; each comparison of eq. (8) adds a rounding of
/// its terms. All of it is below 8(j + 4)(E + ε(|t| + s/k + mag)).
fn clearly_violated(d: &[f64], p: &[f64], k: usize, rho: f64, u: usize, j: usize) -> bool {
    let kf = k as f64;
    let (a, f, in_m) = (rho * kf * kf + u as f64, (k - u) as f64, (j - u) as f64);
    let (sum_u, sum_m) = (p[u], p[j] - p[u]);
    let t = (a * sum_m - f * sum_u) / (f * f + a * in_m);
    let cap = (sum_m - in_m * t) / f;
    let jf = j as f64;
    let mag = jf * d[0].abs().max(d[j - 1].abs());
    let rounding = (jf + 2.0) * f64::EPSILON * mag;
    let slack = 8.0 * (jf + 4.0) * (rounding + f64::EPSILON * (t.abs() + cap.abs() + mag));
    let u_low = u > 0 && (d[u - 1] - t) < cap - slack;
    let m_high = (d[u] - t) > cap + slack || t > d[j - 1] + slack;
    let l_high = j < d.len() && d[j] > t + slack;
    u_low || m_high || l_high || cap.is_nan() || cap <= -slack
}

/// Eq. (7) for U = d[..u], M = d[u..j], relative to the smallest free entry
/// pivot = d[j − 1] (δ_i = d_i − pivot ≥ 0): with A = ρk² + u, F = k − u,
/// D = F² + A·|M|,
///     τ = t − pivot = (A·Σ_M δ − F·Σ_U δ − F·k·pivot) / D,
///     s = k/F · (Σ_M δ − |M|·τ),
/// (substitute x_i = pivot + δ_i into eq. (7)). Σ_M δ − |M|τ = Σ_M p_i adds terms of one
/// sign (δ_i ≥ 0, −τ = p_pivot > 0), so s carries |M| + 3 roundings of itself, and
/// the output Σp = u·s/k + Σ_M (δ_i − τ) equals s up to those whatever τ's own error:
/// the estimate of `output_tolerance` holds. Returns the thresholds if they satisfy
/// eq. (8) up to the rounding of τ (τ_err below: |M| + 4 roundings of the magnitudes
/// summed), else `None`.
fn solve_partition(d: &[f64], k: usize, rho: f64, u: usize, j: usize) -> Option<Thresholds> {
    let c = d.len();
    let kf = k as f64;
    let pivot = d[j - 1];
    let above: f64 = d[..u].iter().map(|&v| v - pivot).sum();
    let inside: f64 = d[u..j].iter().map(|&v| v - pivot).sum();
    let (a, f, in_m) = (rho * kf * kf + u as f64, (k - u) as f64, (j - u) as f64);
    let denom = f * f + a * in_m;
    let tau = (a * inside - f * above - f * kf * pivot) / denom;
    let cap = (inside - in_m * tau) / f;
    if !(cap > 0.0 && cap.is_finite()) {
        return None;
    }
    let tau_err =
        8.0 * (j as f64 + 4.0) * f64::EPSILON * ((a * inside + f * above.abs() + f * kf * pivot.abs()) / denom + cap);
    let free = |i: usize| (d[i] - pivot) - tau;
    // U at or above the cap, M between 0 and the cap, L (in the prefix) at or below 0.
    let u_ok = u == 0 || free(u - 1) >= cap - tau_err;
    let m_ok = free(u) <= cap + tau_err && -tau >= -tau_err;
    let l_ok = j == c || free(j) <= tau_err;
    (u_ok && m_ok && l_ok).then_some(Thresholds { shift: pivot, lower: tau, upper: cap })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(x: &[f64], k: usize, rho: f64) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        topk_cone(x, k, rho, &mut out, &mut Workspace::new()).unwrap();
        out
    }

    #[test]
    fn zero_and_constant_cases() {
        assert_eq!(project(&[1.0, -2.0, -3.0], 2, 0.0), vec![0.0, 0.0, 0.0]);
        // Lemma 3 case 2: two large, well separated entries with k = 2.
        let p = project(&[5.0, 5.0, -10.0], 2, 0.0);
        assert_eq!(p, vec![5.0, 5.0, 0.0]);
    }

    /// A Prox-SDCA step on standardised UCI Letter (TopKSVC(k=3, C=1)): the k largest
    /// entries sum to 6e-17 next to entries of 1e-2, within that sum's rounding. The
    /// partition eq. (7) found put a free entry 7e-18 above its cap, and the output
    /// summed to 2s/3 (NoSolutionError). Now p = 0 (Lemma 4 within rounding), for the
    /// cone and the simplex, with and without the bias; a sum well above its rounding
    /// (the top entry raised by 1e-15) still gets the exact, nonzero projection.
    #[test]
    fn a_top_k_sum_within_its_rounding_projects_to_zero() {
        let x = [
            -0.04250811293296436,
            -0.04917850434701467,
            -0.059452850183945846,
            -0.04554985141438565,
            -0.08134368591842575,
            -0.05356692590942799,
            -0.014302203168030325,
            0.01794012841832441,
            -0.008970064209162187,
            -0.008970064209162187,
            -0.00897006420916219,
            -0.11197142706556074,
            -0.04312768245158548,
            -0.008970064209162187,
            -0.017180580667267596,
            -0.03270036946708888,
            -0.07124898015705339,
            -0.0613617831398264,
            -0.07435334410230375,
            -0.008970064209162158,
            -0.05123238551916627,
            -0.0574073010163171,
            -0.06420331978299394,
            -0.024935420475265004,
            -0.08478982327014521,
        ];
        let mut out = [1.0; 25];
        let mut ws = Workspace::new();
        for rho in [0.0, 1.0] {
            assert_eq!(project(&x, 3, rho), vec![0.0; 25], "rho = {rho}");
            super::super::topk_simplex(&x, 3, 1.0, rho, &mut out, &mut ws).unwrap();
            assert_eq!(out, [0.0; 25], "simplex, rho = {rho}");
        }
        let mut raised = x;
        raised[7] += 1e-15;
        let p = project(&raised, 3, 1.0);
        let s: f64 = p.iter().sum();
        assert!(s > 0.0 && p.iter().all(|&v| v <= s / 3.0 * (1.0 + 1e-12)), "{p:?}");
    }

    #[test]
    fn solution_is_feasible_and_cone_points_are_fixed() {
        let x = [0.3, 0.2, 0.1, -0.4];
        let p = project(&x, 2, 0.0);
        let s: f64 = p.iter().sum();
        assert!(p.iter().all(|&v| v >= 0.0 && v <= s / 2.0 + 1e-15));
        // A point inside the cone projects to itself when rho = 0.
        let inside = [0.2, 0.3, 0.25, 0.0];
        let q = project(&inside, 2, 0.0);
        for (a, b) in q.iter().zip(inside) {
            assert!((a - b).abs() < 1e-15);
        }
    }

    /// A constant row of 1000 entries (the first SDCA step of a 1000-class top-k SVM):
    /// the prefix sums of m·0.4 carried ~m²ε of it and the output check raised. Solved
    /// relative to the smallest free entry, each entry is 0.4/(1 + ρm), to an ulp.
    #[test]
    fn long_constant_row_is_exact() {
        for k in [1, 5, 50] {
            let p = project(&vec![0.4; 1000], k, 1.0);
            assert!(p.iter().all(|&v| (v - 0.4 / 1001.0).abs() <= 2.0 * f64::EPSILON * v), "k = {k}");
        }
    }

    /// An outlier of −1e12 loosened the partition tolerance until U = ∅ passed and
    /// (2/3, 2/3, 0, 0, 0) was returned, violating p_i ≤ Σp/3 by 50%.
    #[test]
    fn far_outlier_does_not_loosen_the_partition_test() {
        let p = project(&[1.0, 1.0, -1e12, 0.0, 0.0], 3, 0.0);
        let expected = [0.8, 0.8, 0.0, 0.4, 0.4];
        assert!(p.iter().zip(expected).all(|(a, b)| (a - b).abs() <= 1e-15), "{p:?}");
    }
}
