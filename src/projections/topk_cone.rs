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

use super::prefix::{check_sum, check_tolerance, clipped_noise, max_abs, write_clipped, Sum, TopPrefix, Workspace};
use super::Thresholds;
use crate::real::Real;
use crate::{Error, Result};

/// Projects `x` onto the top-k cone with bias `rho`, writing `out`.
pub fn topk_cone<T: Real>(
    x: &[T],
    k: usize,
    rho: f64,
    out: &mut [T],
    ws: &mut Workspace,
) -> Result<Thresholds> {
    super::check_row(x, out)?;
    check_k(k, x.len())?;
    check_rho(rho)?;
    let mut top = TopPrefix::load(x, ws);
    let th = top.solve(first_prefix(k), |d, p, rest| cone_on_prefix(d, p, rest, k, rho))?;
    // p_i ≤ s/k with s = Σp: the cap must be the output's own mean over k, up to the
    // rounding of the entries that determine s.
    let written = write_clipped(x, &th, 0.0, out);
    check_sum("topk_cone", written, || clipped_noise(x, &th, 0.0), Sum::Equal(k as f64 * th.upper), || k as f64 * max_abs(x))?;
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
pub(crate) fn cone_on_prefix(
    d: &[f64],
    p: &[f64],
    rest: f64,
    k: usize,
    rho: f64,
) -> Result<Option<Thresholds>> {
    let c = d.len();
    if c < k {
        return Ok(None);
    }
    let kf = k as f64;
    // Lemma 4: zero iff the k largest entries sum to ≤ 0.
    let top_k = p[k];
    if top_k <= 0.0 {
        return Ok(Some(Thresholds { shift: 0.0, lower: f64::INFINITY, upper: 0.0 }));
    }
    let scale = d[0].abs().max(d[c - 1].abs()).max(top_k.abs() / kf);
    let tol = check_tolerance(scale);
    let next_after = |j: usize| if j < c { d[j] } else { rest };

    // Lemma 3, case 2: U = the k largest, M = ∅. Relative to x_[k]: next to huge
    // entries d[k−1] − cap would round, and the k-th entry (or all of them) would lose
    // the cap's digits.
    let s = top_k / (1.0 + rho * kf);
    let cap = s / kf;
    let next = next_after(k);
    if d[k - 1] - cap >= next {
        let t = d[k - 1] - cap;
        return Ok((t >= rest).then_some(Thresholds { shift: d[k - 1], lower: -cap, upper: cap }));
    }
    // Case 2 holding only within the tolerance (x_[k+1] a hair above x_[k] − s/k): case 3
    // below resolves those entries (M ≠ ∅); if rounding defeats it, this is the answer,
    // with the threshold raised to x_[k+1] so that the entries below stay 0 as the
    // partition says (x_[k] then ends at most the tolerance under its cap) — except for
    // a tie x_[k+1] = x_[k], where that would zero every tied entry.
    let within_tolerance = (d[k - 1] - cap >= next - tol).then(|| {
        let lower = if next < d[k - 1] { (-cap).max(next - d[k - 1]) } else { -cap };
        (d[k - 1] + lower, Thresholds { shift: d[k - 1], lower, upper: cap })
    });

    // Lemma 3, case 3, for each u = |U| < k.
    for u in 0..k {
        let free = (k - u) as f64;
        let coupling = (rho * kf * kf + u as f64) / free;
        let g = |t: f64, j: usize| free * t + p[u] - coupling * (p[j] - p[u] - (j - u) as f64 * t);
        // Largest j in (u, c] with g(d[j−1]) ≥ 0: then M = d[u..j].
        if g(d[u], u + 1) < 0.0 {
            continue;
        }
        let (mut lo, mut hi) = (u + 1, c);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if g(d[mid - 1], mid) >= 0.0 {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let j = lo;
        let in_m = (j - u) as f64;
        let sum_m = p[j] - p[u];
        let denom = free * free + (rho * kf * kf + u as f64) * in_m;
        let t = ((rho * kf * kf + u as f64) * sum_m - free * p[u]) / denom;
        let s = kf / free * (sum_m - in_m * t);
        if s <= 0.0 {
            continue;
        }
        let upper = t + s / kf;
        let u_ok = u == 0 || d[u - 1] >= upper - tol;
        // L entries inside the prefix; the ones outside are checked by `t >= rest`.
        let m_ok = d[u] <= upper + tol && d[j - 1] >= t - tol && (j == c || d[j] <= t + tol);
        if u_ok && m_ok {
            return Ok((t >= rest).then_some(Thresholds { shift: 0.0, lower: t, upper: s / kf }));
        }
    }
    if let Some((t, th)) = within_tolerance {
        return Ok((t >= rest).then_some(th));
    }
    Err(Error::no_solution(
        "topk_cone",
        format!("no partition (U, M, L) satisfies eq. (8) for k = {k}, rho = {rho}"),
    ))
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
}
