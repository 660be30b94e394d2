//! Top-k hinge losses for Prox-SDCA (Lapin, Hein, Schiele 2015, §2–3, §5), optionally
//! Moreau-smoothed.
//!
//! With h_j = 1 + s_j − s_y over the m − 1 classes j ≠ y (the convention of
//! `crate::losses::topk_hinge`, which computes the primal loss L_γ for both):
//!   alpha: L(h) = (1/k) max{0, Σ_{j≤k} h_[j]} = max_{p ∈ Δ_k(1)} ⟨h, p⟩        (eq. (3), Prop. 2)
//!   beta:  L(h) = (1/k) Σ_{j≤k} max{0, h_[j]} = max_{p ∈ Δ̃_k(1)} ⟨h, p⟩       (eq. (5), Prop. 5, (9))
//! with Δ_k(r) = {p ≥ 0, Σp ≤ r, p_j ≤ Σp/k} and Δ̃_k(r) = {0 ≤ p ≤ r/k, Σp ≤ r}.
//! Smoothing γ ≥ 0 subtracts (γ/2)‖p‖² inside the max: L_γ is the Moreau envelope of
//! L (1/γ-smooth), its conjugate is L*(p) + (γ/2)‖p‖², and γ = 0 is the paper's loss.
//!
//! Dual term (x = −a^{\y} ∈ c·S):  −c L*(x/c) = ⟨1, x⟩ − (γ/2c)‖x‖².
//! SDCA step (Proposition 4, generalised to γ): with v = q^{\y} + (1 − q_y)1 and
//! δ = kii + γ/c, the maximiser over a_i is x = argmin ‖b − x‖² + ρ⟨1, x⟩² over c·S with
//!   b = v/δ,  ρ = kii/δ,
//! i.e. the biased projection of the foundation (ρ = 1 when γ = 0). Optimality of the
//! whole problem: the duality gap P − D = ‖W‖² + Σ_i c_i L_i − dual_i is 0.

use super::loss::{shrunk_list, single, write_dual_row, LossWorkspace, SdcaLoss, MIN_EXTRA_CLASSES};
use crate::losses::{hinge, TopKVariant};
use crate::{Error, Result};

/// A top-k hinge loss ("alpha" or "beta"), optionally smoothed.
#[derive(Debug, Clone, Copy)]
pub struct TopKHinge {
    pub k: usize,
    pub variant: TopKVariant,
    pub smoothing: f64,
}

impl SdcaLoss for TopKHinge {
    fn name(&self) -> &'static str {
        match self.variant {
            TopKVariant::Alpha => "alpha",
            TopKVariant::Beta => "beta",
        }
    }

    fn check_params(&self, m: usize) -> Result<()> {
        if self.k == 0 || self.k >= m {
            return Err(Error::param("k", format!("must satisfy 1 <= k <= n_classes - 1 = {}, got {}", m - 1, self.k)));
        }
        if !(self.smoothing >= 0.0 && self.smoothing.is_finite()) {
            return Err(Error::param("smoothing", format!("must be finite and >= 0, got {}", self.smoothing)));
        }
        Ok(())
    }

    fn dual_is_quadratic(&self) -> bool {
        true
    }

    fn primal(&self, scores: &[f64], y: &[usize], ws: &mut LossWorkspace) -> Result<f64> {
        // L_γ(h) = max_p ⟨h, p⟩ − (γ/2)‖p‖², attained at p = Π_S(h/γ): the loss module's
        // computation, which `toprank.losses.topk_hinge` returns too.
        hinge::<f64, false>(scores, single(y), self.k, self.variant, self.smoothing, &mut ws.b, &mut ws.projection)
    }

    fn dual(&self, a: &[f64], y: &[usize], c: f64) -> f64 {
        let y = single(y);
        if c == 0.0 {
            return 0.0;
        }
        if self.smoothing == 0.0 {
            return a[y];
        }
        let sq: f64 = a.iter().enumerate().filter(|&(j, _)| j != y).map(|(_, v)| v * v).sum();
        a[y] - self.smoothing / (2.0 * c) * sq
    }

    fn update(&self, q: &[f64], kii: f64, y: &[usize], c: f64, a: &mut [f64], ws: &mut LossWorkspace) -> Result<()> {
        let y = single(y);
        let LossWorkspace { b, p, projection, .. } = ws;
        let delta = kii + self.smoothing / c;
        // b = v/δ with v_j = q_j + (1 − q_y) over j ≠ y (v itself when δ = 0), and its
        // largest magnitude, in one pass over the two runs of classes around y (no
        // branch per class: the SDCA step of a problem with few classes is this short).
        let shift = 1.0 - q[y];
        b.resize(q.len() - 1, 0.0);
        p.resize(b.len(), 0.0);
        let (before, after) = b.split_at_mut(y);
        // Two plain loops (they vectorise; one over the chained runs does not). One
        // division, then a product per class: b_j is within an ulp of v_j/δ, which the
        // projection's rounding bounds absorb, and m divisions cost more than the rest
        // of the row's build in the steps of problems with few classes.
        let scale = if delta > 0.0 { 1.0 / delta } else { 1.0 };
        let fill = |out: &mut [f64], q: &[f64]| {
            out.iter_mut().zip(q).for_each(|(bj, &qj)| *bj = (qj + shift) * scale);
        };
        fill(before, &q[..y]);
        fill(after, &q[y + 1..]);
        let largest = if delta > 0.0 { largest_magnitude(b) } else { f64::INFINITY };
        if largest < 1e12 * c {
            self.variant.project(self.k, b, c, kii / delta, p, projection)?;
        } else {
            // x_i = 0 and γ = 0: the step maximises the linear ⟨v, x⟩ over c·S. A vertex
            // does: c/k on the k largest v_j if that sum (alpha) or those v_j (beta) are
            // positive (the same for b = v/δ, δ > 0). The example then contributes
            // nothing to W. The same vertex is the step when x_i is merely tiny
            // (max|v|/δ ≥ 1e12·c): the quadratic term is then below the linear one's
            // rounding, and b too large for a projection of radius c to resolve (the
            // ulps of its entries reach 2e-4·c).
            top_k_vertex(b, self.k, self.variant, c, p);
        }
        write_dual_row(p, y, a);
        Ok(())
    }

    fn shrinks_classes(&self) -> bool {
        true
    }

    /// The projections onto the dual sets have the form x = clip(b − t, 0, cap) with
    /// b = v/δ and v_j = q_j + 1 − q_y (q = s − kii·a, the scores without example i's
    /// own contribution), so a class is zero in the exact step iff v_j ≤ t. Take that
    /// step on a scratch row: every zero class l has v_l ≤ t, and the largest of them,
    /// v_z, bounds t from below. Keep y, both supports (current and stepped), and every
    /// class with v_l ≥ v_z − `CLASS_MARGIN` — with `MANY_CLASSES` or more, at most the
    /// `budget` highest of them (twice as many as the support, at least 2k and
    /// `MIN_EXTRA_CLASSES`): a dropped class lies below the threshold by the margin or by
    /// more than the budget's classes do, so it stays zero until score differences drift
    /// that far — and the next check re-admits it if they do.
    fn active_classes(
        &self,
        s: &[f64],
        kii: f64,
        labels: &[usize],
        c: f64,
        a: &[f64],
        out: &mut Vec<u32>,
        ws: &mut LossWorkspace,
    ) -> Result<bool> {
        let (m, y) = (s.len(), single(labels));
        let mut scratch = std::mem::take(&mut ws.extra);
        scratch.resize(2 * m, 0.0);
        let (q, stepped) = scratch.split_at_mut(m);
        q.iter_mut().zip(s.iter().zip(a)).for_each(|(qj, (&sj, &aj))| *qj = sj - kii * aj);
        stepped.copy_from_slice(a);
        let result = self.update(q, kii, labels, c, stepped, ws);
        // Only differences of v matter: compare q directly.
        let in_support = |j: usize| j == y || a[j] != 0.0 || stepped[j] != 0.0;
        let top_zero = (0..m).filter(|&j| !in_support(j)).map(|j| q[j]).fold(f64::NEG_INFINITY, f64::max);
        let budget = (2 * self.k).max(MIN_EXTRA_CLASSES);
        let kept = shrunk_list(q, in_support, (top_zero, CLASS_MARGIN, budget), &mut ws.b, out);
        ws.extra = scratch;
        // A list needs more than k classes for the restricted step (k < its m − 1 + 1).
        result.map(|()| kept < m && kept > self.k)
    }
}

/// How far (in score units: the hinge margin is 1) below the step's threshold a class
/// may lie and still be kept by class shrinking. Late in a solve score differences move
/// by ~0.01–0.1 per epoch; a class that rises faster is re-admitted at the next check.
const CLASS_MARGIN: f64 = 0.5;

/// max_j |v_j| (0 for an empty row), in independent lanes: one running maximum would
/// wait on each comparison in turn.
fn largest_magnitude(v: &[f64]) -> f64 {
    const LANES: usize = 4;
    let mut lanes = [0.0f64; LANES];
    let mut chunks = v.chunks_exact(LANES);
    for chunk in chunks.by_ref() {
        for (m, &x) in lanes.iter_mut().zip(chunk) {
            let a = x.abs();
            *m = if a > *m { a } else { *m };
        }
    }
    let rest = chunks.remainder().iter().fold(0.0f64, |m, &x| m.max(x.abs()));
    lanes.iter().fold(rest, |m, &x| m.max(x))
}

/// A maximiser of the linear ⟨v, x⟩ over c·S (S the alpha or beta dual set).
fn top_k_vertex(v: &[f64], k: usize, variant: TopKVariant, c: f64, out: &mut [f64]) {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&i, &j| v[j].total_cmp(&v[i]));
    out.iter_mut().for_each(|o| *o = 0.0);
    let top = &order[..k];
    match variant {
        TopKVariant::Alpha => {
            if top.iter().map(|&j| v[j]).sum::<f64>() > 0.0 {
                top.iter().for_each(|&j| out[j] = c / k as f64);
            }
        }
        TopKVariant::Beta => top.iter().filter(|&&j| v[j] > 0.0).for_each(|&j| out[j] = c / k as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objective(loss: &TopKHinge, q: &[f64], kii: f64, y: usize, c: f64, a: &[f64]) -> f64 {
        let qa: f64 = q.iter().zip(a).map(|(q, a)| q * a).sum();
        let aa: f64 = a.iter().map(|v| v * v).sum();
        loss.dual(a, &[y], c) - qa - 0.5 * kii * aa
    }

    /// The step is the exact maximiser: no feasible random perturbation does better.
    #[test]
    fn update_maximises_the_coordinate_objective() {
        let mut ws = LossWorkspace::new();
        let mut rng = crate::rng::SplitMix64::new(3);
        let mut unif = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        for variant in [TopKVariant::Alpha, TopKVariant::Beta] {
            for smoothing in [0.0, 0.7] {
                for k in 1..4 {
                    let loss = TopKHinge { k, variant, smoothing };
                    let (m, y, c, kii) = (5, 2, 1.3, 0.8);
                    let q: Vec<f64> = (0..m).map(|_| 2.0 * unif() - 1.0).collect();
                    let mut a = vec![0.0; m];
                    loss.update(&q, kii, &[y], c, &mut a, &mut ws).unwrap();
                    let best = objective(&loss, &q, kii, y, c, &a);
                    for _ in 0..2000 {
                        // A random feasible point: scale a random nonnegative x into c·S.
                        let mut x: Vec<f64> = (0..m - 1).map(|_| unif()).collect();
                        let s: f64 = x.iter().sum();
                        let scale = c * unif() / s;
                        x.iter_mut().for_each(|v| *v *= scale);
                        let s: f64 = x.iter().sum();
                        let cap = match variant {
                            TopKVariant::Alpha => s / k as f64,
                            TopKVariant::Beta => c / k as f64,
                        };
                        if x.iter().any(|&v| v > cap) {
                            continue;
                        }
                        let mut b = vec![0.0; m];
                        write_dual_row(&x, y, &mut b);
                        assert!(objective(&loss, &q, kii, y, c, &b) <= best + 1e-12);
                    }
                }
            }
        }
    }
    /// Scores of 1,000 classes all within the margin (as CNN-like features give): the
    /// list keeps the label, the support and the 2·|support| highest zero classes, not
    /// all m; with a spread wider than the margin, the margin alone decides.
    #[test]
    fn class_lists_keep_a_budget_beyond_the_support() {
        let mut ws = LossWorkspace::new();
        let mut rng = crate::rng::SplitMix64::new(11);
        let (m, y, c, kii) = (1000, 7, 1.0, 1.0);
        for variant in [TopKVariant::Alpha, TopKVariant::Beta] {
            let loss = TopKHinge { k: 5, variant, smoothing: 0.0 };
            for spread in [0.3, 30.0] {
                let s: Vec<f64> =
                    (0..m).map(|_| spread * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64).collect();
                let a = vec![0.0; m];
                let mut stepped = a.clone();
                loss.update(&s, kii, &[y], c, &mut stepped, &mut ws).unwrap();
                let support = (0..m).filter(|&j| j == y || stepped[j] != 0.0).count();
                let mut list = Vec::new();
                assert!(loss.active_classes(&s, kii, &[y], c, &a, &mut list, &mut ws).unwrap());
                assert!(list.windows(2).all(|w| w[0] < w[1]) && list.contains(&(y as u32)));
                assert!((0..m).filter(|&j| stepped[j] != 0.0).all(|j| list.contains(&(j as u32))));
                let budget = (2 * support).max(2 * loss.k).max(MIN_EXTRA_CLASSES);
                assert!(list.len() <= support + budget, "{variant:?} spread {spread}: {} classes", list.len());
                // Every dropped class scores at most as high as every kept one but the label.
                let kept_low =
                    list.iter().filter(|&&j| j as usize != y).map(|&j| s[j as usize]).fold(f64::INFINITY, f64::min);
                let dropped_high =
                    (0..m).filter(|j| !list.contains(&(*j as u32))).map(|j| s[j]).fold(f64::MIN, f64::max);
                assert!(dropped_high <= kept_low || spread > 1.0);
            }
        }
    }
}
