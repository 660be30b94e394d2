//! The multi-label hinge loss for Prox-SDCA (Lapin, Hein, Schiele, "Analysis and
//! Optimization of Loss Functions for Multiclass, Top-k, and Multilabel Classification",
//! TPAMI 2018, §4), optionally Moreau-smoothed.
//!
//! An example has a label set Y (1 ≤ |Y| ≤ m − 1) and the other classes N. With scores s:
//!   L(s; Y) = max{0, 1 + max_{l∈N} s_l − min_{j∈Y} s_j}
//!           = max_{p ∈ B} τ(p) + ⟨p_N, s_N⟩ − ⟨p_Y, s_Y⟩,
//! B = {p_Y ≥ 0, p_N ≥ 0, Σp_Y = Σp_N = τ ≤ 1} the bipartite simplex: zero iff every
//! label outscores every other class by 1. Smoothing γ ≥ 0 subtracts (γ/2)‖p‖² inside
//! the max: L_γ is the Moreau envelope of L in s (1/γ-smooth), γ = 0 the loss itself.
//! (With |Y| = 1 and γ = 0 this is Crammer–Singer, `TopKHinge` with k = 1, alpha; for
//! γ > 0 the two differ: `hinge.rs` smooths in the reduced h = 1 + s_j − s_y of Lapin et
//! al. 2015, without the label's own coordinate.)
//!
//! Dual row (`loss.rs`'s convention c L(s) = max_a d(a) − ⟨s, a⟩): a = (α on Y, −β on N)
//! with α, β ≥ 0, Σα = Σβ = t ≤ c (a = c·(p_Y, −p_N)), so ⟨1, a⟩ = 0, and the dual term
//!   d(a) = −c L*(−a/c) = t − (γ/2c)‖a‖².
//! SDCA step: maximise t − ⟨q, a⟩ − (kii/2)‖a‖² − (γ/2c)‖a‖². As Σα = Σβ = t, write
//! t = ½Σα + ½Σβ; with δ = kii + γ/c the objective is −(δ/2)(‖α − x_Y‖² + ‖β − x_N‖²) +
//! const for
//!   x_Y = (½ − q_Y)/δ,   x_N = (½ + q_N)/δ,
//! so the step is the projection of x onto the bipartite simplex of radius c, bias 0
//! (`projections::bipartite_simplex`). Its optimality conditions are that projection's:
//! α = (x_Y − t_Y)_+, β = (x_N − t_N)_+ with Σα = Σβ = t, and t = c, or t < c and
//! t_Y + t_N = 0 (t = 0 iff max x_Y + max x_N ≤ 0, i.e. the margin holds at q). δ = 0 (or
//! x beyond what a projection of radius c resolves): the linear objective is maximised
//! at a vertex, t = c on the smallest q_Y and the largest q_N if 1 + max q_N − min q_Y
//! > 0, else a = 0 (as `hinge.rs`). Optimality of the whole problem: the duality gap.

use super::loss::{shrunk_list, LossWorkspace, SdcaLoss, MIN_EXTRA_CLASSES};
use crate::losses::multilabel_hinge_and_maximiser as hinge_and_maximiser;
use crate::projections::bipartite_simplex;
use crate::{Error, Result};

/// The multi-label hinge loss, optionally smoothed (`smoothing` γ ≥ 0).
#[derive(Debug, Clone, Copy)]
pub struct MultiLabelHinge {
    pub smoothing: f64,
}

/// Marks the labels `y` (ascending positions) of a row of length m in `mask`.
fn mark(y: &[usize], m: usize, mask: &mut Vec<bool>) {
    mask.clear();
    mask.resize(m, false);
    y.iter().for_each(|&j| mask[j] = true);
}

/// `out` = x_Y = (½ − v_Y)·scale on the labels, x_N = (½ + v_N)·scale elsewhere; returns
/// max |out|.
fn bipartite_point(v: &[f64], mask: &[bool], scale: f64, out: &mut Vec<f64>) -> f64 {
    out.clear();
    out.extend(v.iter().zip(mask).map(|(&vj, &label)| (if label { 0.5 - vj } else { 0.5 + vj }) * scale));
    out.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

impl SdcaLoss for MultiLabelHinge {
    fn name(&self) -> &'static str {
        "multilabel_hinge"
    }

    fn check_params(&self, _m: usize) -> Result<()> {
        if !(self.smoothing >= 0.0 && self.smoothing.is_finite()) {
            return Err(Error::param("smoothing", format!("must be finite and >= 0, got {}", self.smoothing)));
        }
        Ok(())
    }

    fn multi_label(&self) -> bool {
        true
    }

    fn dual_is_quadratic(&self) -> bool {
        true
    }

    fn primal(&self, scores: &[f64], y: &[usize], ws: &mut LossWorkspace) -> Result<f64> {
        let LossWorkspace { b, mask, projection, .. } = ws;
        mark(y, scores.len(), mask);
        // L_γ(s) = max_{p ∈ B} ⟨h, p⟩ − (γ/2)‖p‖²: the loss module's computation, which
        // `toprank.losses.multilabel_hinge` returns too.
        hinge_and_maximiser(scores, mask, self.smoothing, b, projection)
    }

    fn dual(&self, a: &[f64], y: &[usize], c: f64) -> f64 {
        if c == 0.0 {
            return 0.0;
        }
        let t: f64 = y.iter().map(|&j| a[j]).sum();
        if self.smoothing == 0.0 {
            return t;
        }
        t - self.smoothing / (2.0 * c) * a.iter().map(|v| v * v).sum::<f64>()
    }

    fn update(&self, q: &[f64], kii: f64, y: &[usize], c: f64, a: &mut [f64], ws: &mut LossWorkspace) -> Result<()> {
        let LossWorkspace { b, p, mask, projection, .. } = ws;
        let m = q.len();
        mark(y, m, mask);
        let delta = kii + self.smoothing / c;
        let largest = bipartite_point(q, mask, if delta > 0.0 { 1.0 / delta } else { 1.0 }, b);
        p.resize(m, 0.0);
        if delta > 0.0 && largest < 1e12 * c {
            bipartite_simplex(b, mask, c, 0.0, p, projection)?;
        } else {
            // δ = 0 (kii = 0, γ = 0): the step maximises the linear ⟨x, (α, β)⟩, at the
            // vertex t = c on the largest x_Y and x_N if their sum is positive (the same
            // for x·δ, δ > 0). The vertex is also the step when max|x| ≥ 1e12·c: the
            // quadratic term is then below the linear one's rounding (as `hinge.rs`).
            vertex(b, mask, c, p);
        }
        for ((aj, &pj), &label) in a.iter_mut().zip(p.iter()).zip(mask.iter()) {
            *aj = if label { pj } else { -pj };
        }
        Ok(())
    }

    fn shrinks_classes(&self) -> bool {
        true
    }

    /// As `TopKHinge::active_classes`: β = (x_N − t_N)_+ with x_N increasing in q_N, so
    /// a class of N is zero in the exact step iff q_l is at most a threshold, which the
    /// largest q of the zero classes of N in that step, q_z, bounds from below. Keep the
    /// labels, both supports (current and stepped) and the classes of N with q_l ≥ q_z
    /// − `CLASS_MARGIN` (with many labels at most a budget of them, `loss::shrunk_list`);
    /// the step restricted to any such list that still holds a class of N is the exact
    /// step over it.
    fn active_classes(
        &self,
        s: &[f64],
        kii: f64,
        y: &[usize],
        c: f64,
        a: &[f64],
        out: &mut Vec<u32>,
        ws: &mut LossWorkspace,
    ) -> Result<bool> {
        let m = s.len();
        let mut scratch = std::mem::take(&mut ws.extra);
        scratch.resize(2 * m, 0.0);
        let (q, stepped) = scratch.split_at_mut(m);
        q.iter_mut().zip(s.iter().zip(a)).for_each(|(qj, (&sj, &aj))| *qj = sj - kii * aj);
        stepped.copy_from_slice(a);
        let result = self.update(q, kii, y, c, stepped, ws);
        // `update` left the labels marked in ws.mask.
        let label = &ws.mask;
        let top_zero =
            (0..m).filter(|&j| !label[j] && stepped[j] == 0.0).map(|j| q[j]).fold(f64::NEG_INFINITY, f64::max);
        let keep = |j: usize| label[j] || a[j] != 0.0 || stepped[j] != 0.0;
        let kept = shrunk_list(q, keep, (top_zero, CLASS_MARGIN, MIN_EXTRA_CLASSES), &mut ws.b, out);
        ws.extra = scratch;
        result.map(|()| kept < m && kept > y.len())
    }
}

/// How far (in score units: the hinge margin is 1) below the step's N-side threshold a
/// class may lie and still be kept by class shrinking. Smaller than `hinge.rs`'s 0.5:
/// with m = 100 labels most of the ~95 other classes crowd just below the threshold, and
/// 0.5 keeps a third of them. On 20,000 × 256 synthetic rows (m = 100, ~5 labels each,
/// C = 0.1, 1, 10) margins from 0.5 down to 0.02 took the same epochs to a gap of 1e-3,
/// while a step's classes fell from ~33 to ~11 at 0.1 (CPU time −20 to −40 %).
const CLASS_MARGIN: f64 = 0.1;

/// A maximiser of the linear ⟨x_Y, α⟩ + ⟨x_N, β⟩ over c·B: c on the first largest x_Y
/// and on the first largest x_N if their sum is positive, else 0.
fn vertex(x: &[f64], label: &[bool], c: f64, out: &mut [f64]) {
    let (mut top_y, mut top_n) = (None::<usize>, None::<usize>);
    for (j, (&v, &is_label)) in x.iter().zip(label).enumerate() {
        let top = if is_label { &mut top_y } else { &mut top_n };
        if top.is_none_or(|t| v > x[t]) {
            *top = Some(j);
        }
    }
    out.iter_mut().for_each(|o| *o = 0.0);
    if let (Some(jy), Some(jn)) = (top_y, top_n) {
        if x[jy] + x[jn] > 0.0 {
            (out[jy], out[jn]) = (c, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::TopKVariant;
    use crate::solvers::topk_svm::softmax::tests::{objective, uniform};
    use crate::solvers::topk_svm::TopKHinge;

    /// A random feasible dual row: α on Y and β on N with equal sums t ∈ [0, c].
    fn feasible(rng: &mut crate::rng::SplitMix64, label: &[bool], c: f64) -> Vec<f64> {
        let t = c * uniform(rng);
        let mut a: Vec<f64> = label.iter().map(|_| uniform(rng) * uniform(rng)).collect();
        for side in [true, false] {
            let total: f64 = a.iter().zip(label).filter(|(_, &l)| l == side).map(|(v, _)| v).sum();
            let sign = if side { 1.0 } else { -1.0 };
            a.iter_mut().zip(label).filter(|(_, &l)| l == side).for_each(|(v, _)| *v *= sign * t / total);
        }
        a
    }

    /// The step is the exact maximiser: no feasible random point (nor a point between
    /// it and the step) does better, for several label sets, curvatures, weights and γ.
    #[test]
    fn update_maximises_the_coordinate_objective() {
        let mut ws = LossWorkspace::new();
        let mut rng = crate::rng::SplitMix64::new(5);
        let m = 7;
        let sets: [&[usize]; 4] = [&[0], &[3], &[1, 2, 5], &[0, 1, 2, 3, 4, 6]];
        for y in sets {
            let label: Vec<bool> = (0..m).map(|j| y.contains(&j)).collect();
            for smoothing in [0.0, 0.6] {
                let loss = MultiLabelHinge { smoothing };
                for (kii, c) in [(0.8, 1.3), (0.0, 0.7), (5.0, 0.05), (1e-3, 20.0)] {
                    for spread in [0.3, 2.0] {
                        let q: Vec<f64> = (0..m).map(|_| spread * (2.0 * uniform(&mut rng) - 1.0)).collect();
                        let mut a = vec![0.0; m];
                        loss.update(&q, kii, y, c, &mut a, &mut ws).unwrap();
                        let t: f64 = y.iter().map(|&j| a[j]).sum();
                        assert!(t <= c * (1.0 + 1e-15) && a.iter().sum::<f64>().abs() <= 1e-14 * c.max(1.0));
                        assert!(a.iter().zip(&label).all(|(&v, &l)| if l { v >= 0.0 } else { v <= 0.0 }));
                        let best = objective(&loss, &q, kii, y, c, &a);
                        let tol = 1e-12 * (best.abs() + c);
                        for i in 0..1000 {
                            let mut b = feasible(&mut rng, &label, c);
                            if i % 2 == 0 {
                                // Close to the step: a convex combination is feasible.
                                b.iter_mut().zip(&a).for_each(|(bj, aj)| *bj = 1e-3 * *bj + (1.0 - 1e-3) * aj);
                            }
                            let other = objective(&loss, &q, kii, y, c, &b);
                            assert!(other <= best + tol, "{y:?} γ {smoothing} kii {kii}: {other} > {best}");
                        }
                    }
                }
            }
        }
    }

    /// The primal value is the loss (γ = 0) and its Moreau envelope (γ > 0), and the
    /// step at kii = 0, c = 1 attains it: L_γ(s) = max_a d(a) − ⟨s, a⟩ (Fenchel–Young).
    #[test]
    fn primal_is_the_conjugate_of_the_dual_term() {
        let mut ws = LossWorkspace::new();
        let s = [0.3, -1.2, 2.5, 0.0, 0.9];
        for y in [&[2usize][..], &[0, 4], &[1, 3]] {
            let low = y.iter().map(|&j| s[j]).fold(f64::INFINITY, f64::min);
            let high = (0..5).filter(|j| !y.contains(j)).map(|j| s[j]).fold(f64::NEG_INFINITY, f64::max);
            let direct = (1.0 + high - low).max(0.0);
            assert_eq!(MultiLabelHinge { smoothing: 0.0 }.primal(&s, y, &mut ws).unwrap(), direct);
            for smoothing in [0.0, 0.3, 4.0] {
                let loss = MultiLabelHinge { smoothing };
                let l = loss.primal(&s, y, &mut ws).unwrap();
                // kii = 0 with γ > 0 is a proper step (δ = γ/c); with γ = 0 the vertex.
                let mut a = vec![0.0; 5];
                loss.update(&s, 0.0, y, 1.0, &mut a, &mut ws).unwrap();
                let fy = objective(&loss, &s, 0.0, y, 1.0, &a);
                assert!((fy - l).abs() <= 1e-14 * l.max(1.0), "{y:?} γ {smoothing}: {fy} vs {l}");
                assert!(l <= direct && direct <= l + smoothing, "{y:?} γ {smoothing}: {l} vs {direct}");
            }
        }
        let err = MultiLabelHinge { smoothing: 0.0 }.primal(&[f64::NAN, 0.0], &[0], &mut ws).unwrap_err();
        assert!(err.to_string().contains("non-finite score"), "{err}");
    }

    /// One label and γ = 0: the step is Crammer–Singer's (the top-k hinge with k = 1).
    #[test]
    fn one_label_steps_are_crammer_singer_steps() {
        let mut ws = LossWorkspace::new();
        let mut rng = crate::rng::SplitMix64::new(9);
        let cs = TopKHinge { k: 1, variant: TopKVariant::Alpha, smoothing: 0.0 };
        for trial in 0..200 {
            let m = 2 + trial % 9;
            let y = [trial % m];
            let q: Vec<f64> = (0..m).map(|_| 3.0 * (2.0 * uniform(&mut rng) - 1.0)).collect();
            let (kii, c) = (0.1 + 2.0 * uniform(&mut rng), 0.1 + uniform(&mut rng));
            let (mut a, mut b) = (vec![0.0; m], vec![0.0; m]);
            MultiLabelHinge { smoothing: 0.0 }.update(&q, kii, &y, c, &mut a, &mut ws).unwrap();
            cs.update(&q, kii, &y, c, &mut b, &mut ws).unwrap();
            for (u, v) in a.iter().zip(&b) {
                assert!((u - v).abs() <= 1e-13 * c, "{q:?} kii {kii} c {c}: {a:?} vs {b:?}");
            }
        }
    }

    /// Far-apart scores, zero or huge curvatures and weights: the step stays finite and
    /// feasible and no worse than a = 0 or a random feasible row.
    #[test]
    fn extreme_inputs_stay_finite_and_feasible() {
        let mut ws = LossWorkspace::new();
        let mut rng = crate::rng::SplitMix64::new(2);
        let rows: [&[f64]; 5] = [&[1e6, -1e6], &[-1e6, 1e6, 0.0], &[1e9, 1e9, -1e9], &[0.0; 4], &[-1e6, 3.0, 3.0, 1e6]];
        for q in rows {
            let m = q.len();
            for y in [vec![0], vec![m - 1], (0..m - 1).collect::<Vec<_>>()] {
                let label: Vec<bool> = (0..m).map(|j| y.contains(&j)).collect();
                for smoothing in [0.0, 0.5] {
                    let loss = MultiLabelHinge { smoothing };
                    assert!(loss.primal(q, &y, &mut ws).unwrap().is_finite());
                    for kii in [0.0, 1e-20, 0.3, 1e6] {
                        for c in [1e-6, 1.0, 1e6] {
                            let mut a = vec![0.0; m];
                            loss.update(q, kii, &y, c, &mut a, &mut ws).unwrap();
                            let t: f64 = y.iter().map(|&j| a[j]).sum();
                            let signs =
                                a.iter().zip(&label).all(|(&v, &l)| v.is_finite() && (v >= 0.0) == l || v == 0.0);
                            assert!(signs && t <= c * (1.0 + 1e-15), "{q:?} {y:?} {kii} {c}: {a:?}");
                            let best = objective(&loss, q, kii, &y, c, &a);
                            let tol =
                                1e-12 * (best.abs() + c + q.iter().zip(&a).map(|(q, a)| (q * a).abs()).sum::<f64>());
                            for b in [vec![0.0; m], feasible(&mut rng, &label, c)] {
                                assert!(objective(&loss, q, kii, &y, c, &b) <= best + tol, "{q:?} {y:?} {kii} {c}");
                            }
                        }
                    }
                }
            }
        }
    }
}
