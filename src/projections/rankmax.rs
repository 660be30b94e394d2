//! Rankmax (Kong et al., Rankmax paper §3.2, Proposition 3, Definition 4, eq. (11)–(13)).
//!
//! Given scores z ∈ ℝⁿ, a positive label y, 1 ≤ k < n and a margin η > 0:
//!     μ_y = min(z_y, z_[k]) − η                                         (11)
//!     Rankmax(z, y) = clip(α_y (z − μ_y), 0, 1),  Σ Rankmax(z, y) = k     (13)
//!     α_y = (k − t) / Σ_{i=t+1..s} (z_[i] − μ_y)                          (12)
//! with s = #{z_i > μ_y} (the support; s ≥ k because μ_y < z_[k]) and t the number of
//! entries capped at 1: t = min{t ∈ [0, k−1] : (k − t)(z_[t+1] − μ_y) ≤ S_t},
//! S_t = Σ_{i=t+1..s}(z_[i] − μ_y). Only the k largest scores are needed: a size-k
//! min-heap gives them in O(n log k) (never a full sort). S_t is accumulated as
//! (mass of the support outside the k largest) + (suffix sums of the k largest). That
//! outside mass comes from the same pass as the heap (total minus the kept k) only
//! when the difference keeps at least half the total, i.e. loses at most 4 roundings
//! per term, within the output's bound (`output_tolerance`); otherwise, or when y is
//! above z_[k], a second pass sums it directly.
//! For k = 1, μ_y = z_y − η and t = 0: eq. (15).
//! Every z_i − μ_y is evaluated as (z_i − anchor) + η with anchor = min(z_y, z_[k]), so
//! scores of any magnitude keep their differences (z = (1e16, −1e16, 0) works).

use super::prefix::Workspace;
use crate::real::Real;
use crate::{Error, Result};

/// Everything the projection and the loss gradient need, for one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankmaxState {
    /// μ_y of eq. (11) (rounded; computations use `anchor` and `eta`).
    pub mu: f64,
    /// The margin η.
    pub eta: f64,
    /// α_y of eq. (12).
    pub alpha: f64,
    /// min(z_y, z_\[k\]): the score μ_y is anchored to (μ_y = anchor − η). For k = 1
    /// this is always z_y.
    pub anchor: f64,
    /// s: the number of scores above μ_y.
    pub support: usize,
    /// t: the number of entries capped at 1.
    pub capped: usize,
    /// The smallest capped score (z_\[t\]); +∞ when t = 0.
    pub cap_score: f64,
}

impl RankmaxState {
    /// z_i − μ_y, computed as (z_i − anchor) + η.
    #[inline]
    pub fn excess(&self, z: f64) -> f64 {
        (z - self.anchor) + self.eta
    }
    /// Rankmax(z, y)_i for a score z_i.
    #[inline]
    pub fn prob(&self, z: f64) -> f64 {
        (self.alpha * self.excess(z)).clamp(0.0, 1.0)
    }
    /// S_t, the sum of z_i − μ over the uncapped support.
    #[inline]
    pub fn uncapped_mass(&self, k: usize) -> f64 {
        (k - self.capped) as f64 / self.alpha
    }
}

fn check_rankmax_params(n: usize, y: usize, k: usize, eta: f64) -> Result<()> {
    if n < 2 || k == 0 || k >= n {
        return Err(Error::param("k", format!("must satisfy 1 <= k < n = {n}, got {k}")));
    }
    if y >= n {
        return Err(Error::param("y", format!("label {y} out of range [0, {n})")));
    }
    if !(eta > 0.0 && eta.is_finite()) {
        return Err(Error::param("eta", format!("must be finite and > 0, got {eta}")));
    }
    super::prefix::check_resolved("rankmax", "eta", eta)
}

/// Computes μ_y, α_y, s and t for one row (see the module docs).
pub fn rankmax_state<T: Real>(z: &[T], y: usize, k: usize, eta: f64, ws: &mut Workspace) -> Result<RankmaxState> {
    state(z, y, k, eta, false, ws)
}

/// [`rankmax_state`]; `exact` sums the support's mass outside the k largest directly,
/// never as the one-pass total minus the kept mass (which keeps ~1e-12 of it).
fn state<T: Real>(z: &[T], y: usize, k: usize, eta: f64, exact: bool, ws: &mut Workspace) -> Result<RankmaxState> {
    check_rankmax_params(z.len(), y, k, eta)?;
    let zy = z[y].to_f64();
    if k == 1 {
        // eq. (15): μ = z_y − η, t = 0, α = 1 / Σ (z_i − μ)_+.
        let (support, mass) = support_mass(z, zy, eta);
        return resolved(RankmaxState {
            mu: zy - eta,
            eta,
            alpha: 1.0 / mass,
            anchor: zy,
            support,
            capped: 0,
            cap_score: f64::INFINITY,
        });
    }

    // One pass finds the k largest scores (a size-k min-heap) and, betting that y is
    // not above z_[k] (then μ = z_y − η is known up front), the support and its mass
    // for that μ.
    let heap = &mut ws.values;
    heap.clear();
    heap.extend(z[..k].iter().map(|v| v.to_f64()));
    for i in (0..k / 2).rev() {
        sift_down(heap, i);
    }
    let (mut support, mut mass) = support_mass(&z[..k], zy, eta);
    // Most scores never enter the heap: blocks are tested by their maximum (lane-wise,
    // vectorisable) and only the blocks that beat the current k-th largest are walked.
    const BLOCK: usize = 16;
    const HALF: usize = BLOCK / 2;
    let offer = |v: f64, heap: &mut Vec<f64>| {
        if v > heap[0] {
            heap[0] = v;
            sift_down(heap, 0);
        }
    };
    let mut lane_count = [0usize; HALF];
    let mut lane_mass = [0.0f64; HALF];
    let mut blocks = z[k..].chunks_exact(BLOCK);
    for block in blocks.by_ref() {
        let mut lane_max = [f64::NEG_INFINITY; HALF];
        for lane in 0..HALF {
            let (a, b) = (block[lane].to_f64(), block[lane + HALF].to_f64());
            let (ea, eb) = ((a - zy) + eta, (b - zy) + eta);
            lane_count[lane] += (ea > 0.0) as usize + (eb > 0.0) as usize;
            lane_mass[lane] += if ea > 0.0 { ea } else { 0.0 };
            lane_mass[lane] += if eb > 0.0 { eb } else { 0.0 };
            lane_max[lane] = if a > b { a } else { b };
        }
        let block_max = lane_max.iter().fold(f64::NEG_INFINITY, |m, &v| if v > m { v } else { m });
        if block_max > heap[0] {
            for &v in block {
                offer(v.to_f64(), heap);
            }
        }
    }
    for &v in blocks.remainder() {
        offer(v.to_f64(), heap);
    }
    let (tail_support, tail_mass) = support_mass(blocks.remainder(), zy, eta);
    support += lane_count.iter().sum::<usize>() + tail_support;
    mass += lane_mass.iter().sum::<f64>() + tail_mass;
    heap.sort_unstable_by(|a, b| b.total_cmp(a));
    let top = &heap[..];
    let kth = top[k - 1];
    let anchor = zy.min(kth);
    let excess = |v: f64| (v - anchor) + eta;

    // The mass of the support outside the kept k. If the bet held, it is the pass's
    // mass minus the k kept entries' — unless that difference cancels (the kept mass
    // dominates), in which case, as when y is above z_[k], a second pass sums it
    // directly. Scores tied with z_[k] are kept only as often as among the k largest.
    let kept_mass: f64 = top.iter().map(|&v| excess(v)).sum();
    let outside = if !exact && zy <= kth && mass - kept_mass >= 0.5 * mass {
        mass - kept_mass
    } else {
        let (exact_support, (mut outside, tied)) = support_and_mass(z, anchor, eta, kth);
        support = exact_support;
        let tied_kept = top.iter().rev().take_while(|&&v| v == kth).count();
        outside += (tied - tied_kept) as f64 * excess(kth);
        outside
    };

    // Suffix sums S_t = outside + Σ_{i=t..k-1} (top_i − μ), then the smallest valid t.
    let suffix = &mut ws.prefix_sums;
    suffix.clear();
    suffix.resize(k + 1, 0.0);
    suffix[k] = outside;
    for t in (0..k).rev() {
        suffix[t] = suffix[t + 1] + excess(top[t]);
    }
    let t = (0..k)
        .find(|&t| (k - t) as f64 * excess(top[t]) <= suffix[t])
        .ok_or_else(|| Error::no_solution("rankmax", "no capped count t < k satisfies eq. (12)"))?;
    resolved(RankmaxState {
        mu: anchor - eta,
        eta,
        alpha: (k - t) as f64 / suffix[t],
        anchor,
        support,
        capped: t,
        cap_score: if t > 0 { top[t - 1] } else { f64::INFINITY },
    })
}

/// The state, if its scale α_y is a positive finite number: the excesses z_i − μ_y sum
/// to a positive finite mass unless they overflow float64 (scores or η near 1e308),
/// and then α_y = 0 (or NaN) would write zeros (or NaN) where Σp = k.
fn resolved(state: RankmaxState) -> Result<RankmaxState> {
    if state.alpha.is_finite() && state.alpha > 0.0 {
        return Ok(state);
    }
    Err(Error::no_solution(
        "rankmax",
        format!(
            "the scores' excess over mu_y overflows float64 (alpha_y = {}); rescale the scores or eta",
            state.alpha
        ),
    ))
}

/// The number of scores above μ = anchor − η and the sum of their excess
/// (z_i − anchor) + η: eq. (12)'s support and mass when nothing is capped. Two entries
/// per lane per step keep eight independent vector-friendly accumulators busy.
fn support_mass<T: Real>(z: &[T], anchor: f64, eta: f64) -> (usize, f64) {
    const LANES: usize = 8;
    let mut count = [0usize; LANES];
    let mut mass = [0.0f64; LANES];
    let mut chunks = z.chunks_exact(2 * LANES);
    for chunk in chunks.by_ref() {
        for lane in 0..LANES {
            let a = (chunk[lane].to_f64() - anchor) + eta;
            let b = (chunk[lane + LANES].to_f64() - anchor) + eta;
            count[lane] += (a > 0.0) as usize + (b > 0.0) as usize;
            mass[lane] += if a > 0.0 { a } else { 0.0 };
            mass[lane] += if b > 0.0 { b } else { 0.0 };
        }
    }
    for &v in chunks.remainder() {
        let e = (v.to_f64() - anchor) + eta;
        count[0] += (e > 0.0) as usize;
        mass[0] += if e > 0.0 { e } else { 0.0 };
    }
    (count.iter().sum(), mass.iter().sum())
}

/// One pass over z: the number of scores above μ = anchor − η, the sum of
/// z_i − μ = (z_i − anchor) + η over those strictly below `kth`, and the number equal
/// to `kth` (with `kth = +∞` the sum is over the whole support). Eight independent lanes let the compiler vectorise the
/// reduction without reassociating floating-point sums behind our back.
fn support_and_mass<T: Real>(z: &[T], anchor: f64, eta: f64, kth: f64) -> (usize, (f64, usize)) {
    const LANES: usize = 8;
    let mut count = [0usize; LANES];
    let mut tied = [0usize; LANES];
    let mut mass = [0.0f64; LANES];
    let mut accumulate = |lane: usize, v: f64| {
        let excess = (v - anchor) + eta;
        let above = excess > 0.0;
        count[lane] += above as usize;
        tied[lane] += (above & (v == kth)) as usize;
        mass[lane] += if above & (v < kth) { excess } else { 0.0 };
    };
    let mut chunks = z.chunks_exact(LANES);
    for chunk in chunks.by_ref() {
        for (lane, &v) in chunk.iter().enumerate() {
            accumulate(lane, v.to_f64());
        }
    }
    for (lane, &v) in chunks.remainder().iter().enumerate() {
        accumulate(lane, v.to_f64());
    }
    (count.iter().sum(), (mass.iter().sum(), tied.iter().sum()))
}

fn sift_down(heap: &mut [f64], mut i: usize) {
    let n = heap.len();
    loop {
        let (l, r) = (2 * i + 1, 2 * i + 2);
        let mut smallest = i;
        if l < n && heap[l] < heap[smallest] {
            smallest = l;
        }
        if r < n && heap[r] < heap[smallest] {
            smallest = r;
        }
        if smallest == i {
            return;
        }
        heap.swap(i, smallest);
        i = smallest;
    }
}

/// Writes Rankmax(z, y) (Definition 4 with margin `eta`) into `out`, checked to sum
/// to k within its rounding bound.
pub fn rankmax<T: Real>(
    z: &[T],
    y: usize,
    k: usize,
    eta: f64,
    out: &mut [T],
    ws: &mut Workspace,
) -> Result<RankmaxState> {
    super::check_row(z, out)?;
    let kf = k as f64;
    // Written as before (a loop the compiler vectorises), then summed as stored, in
    // independent lanes.
    let write = |state: &RankmaxState, out: &mut [T]| {
        for (o, &v) in out.iter_mut().zip(z) {
            *o = T::from_f64(state.prob(v.to_f64()));
        }
        let mut lanes = [0.0f64; 8];
        let mut chunks = out.chunks_exact(8);
        for chunk in chunks.by_ref() {
            for (l, &p) in lanes.iter_mut().zip(chunk) {
                *l += p.to_f64();
            }
        }
        lanes.iter().sum::<f64>() + chunks.remainder().iter().map(|p| p.to_f64()).sum::<f64>()
    };
    let eps_out = super::prefix::output_epsilon::<T>();
    let state = rankmax_state(z, y, k, eta, ws)?;
    let total = write(&state, out);
    // p ≥ 0, so Σ|p| = Σp: the common case needs no second pass.
    if (total - kf).abs() <= super::prefix::output_tolerance(z.len(), kf, total, eps_out) {
        return Ok(state);
    }
    // Off by more than a few ulps: the mass outside the k largest, if it came from the
    // one-pass difference, is summed again directly.
    let state = self::state(z, y, k, eta, true, ws)?;
    let total = write(&state, out);
    // The threshold projections' bound (`output_tolerance`: α = (k − t)/S sums positive
    // terms, as τ does there), plus the rounding of each excess (z_i − anchor) + η:
    // ≤ u(|z_i − anchor| + excess_i), i.e. α·u·|z_i − anchor| in p_i.
    let spread: f64 =
        z.iter().map(|v| v.to_f64()).filter(|&v| state.excess(v) > 0.0).map(|v| (v - state.anchor).abs()).sum();
    let tol = super::prefix::output_tolerance(z.len(), kf, total, eps_out) + 2.0 * f64::EPSILON * state.alpha * spread;
    if (total - kf).abs() <= tol {
        return Ok(state);
    }
    let param = super::prefix::Param { name: "eta", value: eta };
    Err(Error::no_solution(
        "rankmax",
        super::prefix::unresolved_cause::<T>(z.len(), total, tol, super::prefix::Sum::Equal(kf), param),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k1_closed_form() {
        // eq. (15): (z − z_y + 1)_+ / Σ (z − z_y + 1)_+.
        let z = [2.0, 0.5, 1.0, -3.0];
        let mut out = [0.0; 4];
        rankmax(&z, 2, 1, 1.0, &mut out, &mut Workspace::new()).unwrap();
        let w = [2.0, 0.5, 1.0, 0.0];
        let total: f64 = w.iter().sum();
        for (o, v) in out.iter().zip(w) {
            assert!((o - v / total).abs() < 1e-15);
        }
    }

    #[test]
    fn sums_to_k_and_keeps_label() {
        let z: Vec<f64> = (0..50).map(|i| ((i * 7919) % 97) as f64 / 10.0).collect();
        let mut out = vec![0.0; 50];
        for k in [2, 5, 49] {
            for y in [0, 13, 49] {
                rankmax(&z, y, k, 1.0, &mut out, &mut Workspace::new()).unwrap();
                assert!((out.iter().sum::<f64>() - k as f64).abs() < 1e-12, "k={k} y={y}");
                assert!(out[y] > 0.0);
            }
        }
    }
}
