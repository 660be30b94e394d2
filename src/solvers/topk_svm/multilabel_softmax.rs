//! The multi-label softmax (cross-entropy) loss for Prox-SDCA (Lapin, Hein, Schiele,
//! "Analysis and Optimization of Loss Functions for Multiclass, Top-k, and Multilabel
//! Classification", TPAMI 2018, §4).
//!
//! An example has a label set Y (1 ≤ |Y| ≤ m − 1) and u = 1_Y/|Y|, the uniform
//! distribution on it. With scores s:
//!   L(s; Y) = log Σ_j exp(s_j) − (1/|Y|) Σ_{j∈Y} s_j = log Σ_j exp(s_j) − ⟨u, s⟩,
//! the cross-entropy of softmax(s) against u; |Y| = 1 is the softmax loss (`softmax.rs`).
//! Conjugate: c L(s) = max_{p ∈ simplex} c H(p) − ⟨s, c(u − p)⟩ (H the entropy), so in
//! `loss.rs`'s convention the dual row is a = c(u − p) (⟨1, a⟩ = 0) and the dual term
//!   d(a) = c H(p) = −Σ_j z_j log(z_j/c),   z = c p = c u − a
//! (`softmax::entropy_dual`; multiclass: z_y = c − a_y, z_j = −a_j).
//! SDCA step: maximise c H(p) − ⟨q, c(u − p)⟩ − (kii/2) c² ‖u − p‖², i.e. c times
//!   max_{p ∈ simplex} H(p) + ⟨q, p⟩ − (κ/2)‖u − p‖²,   κ = kii·c,
//! softmax.rs's entropic step with κ·e_y replaced by κ·u: strictly concave, p > 0, and
//! the KKT conditions log p_j + κ p_j = q_j + κ u_j − τ give κ p_j = ω(q_j + κ u_j − θ)
//! with θ fixed by Σp = 1 (`softmax::label_set_step`, which returns u − p directly: for
//! large κ, p ≈ u and the difference would cancel). Optimality of the whole problem:
//! the duality gap. No class shrinking: every a_j ≠ 0.

use super::loss::{LossWorkspace, SdcaLoss};
use super::softmax::{check_finite, entropy_dual, label_set_step};
use crate::losses::multilabel_softmax_loss;
use crate::Result;

/// The multi-label softmax loss.
#[derive(Debug, Clone, Copy, Default)]
pub struct MultiLabelSoftmax;

impl SdcaLoss for MultiLabelSoftmax {
    fn name(&self) -> &'static str {
        "multilabel_softmax"
    }

    fn multi_label(&self) -> bool {
        true
    }

    fn primal(&self, scores: &[f64], y: &[usize], ws: &mut LossWorkspace) -> Result<f64> {
        check_finite(scores)?;
        let LossWorkspace { p, mask, .. } = ws;
        mask.clear();
        mask.resize(scores.len(), false);
        y.iter().for_each(|&j| mask[j] = true);
        p.resize(scores.len(), 0.0);
        // The loss module's computation (`toprank.losses.multilabel_softmax_loss`).
        multilabel_softmax_loss(scores, mask, p)
    }

    fn dual(&self, a: &[f64], y: &[usize], c: f64) -> f64 {
        entropy_dual(a, y, c)
    }

    fn update(&self, q: &[f64], kii: f64, y: &[usize], c: f64, a: &mut [f64], ws: &mut LossWorkspace) -> Result<()> {
        let LossWorkspace { b, p, mask, .. } = ws;
        check_finite(q)?;
        // Only differences of q matter: shift its largest entry to 0.
        let top = q.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        b.clear();
        b.extend(q.iter().map(|&qj| qj - top));
        mask.clear();
        mask.resize(q.len(), false);
        y.iter().for_each(|&j| mask[j] = true);
        p.resize(q.len(), 0.0);
        label_set_step(b, mask, y.len(), kii * c, p)?;
        a.iter_mut().zip(p.iter()).for_each(|(aj, &dj)| *aj = c * dj);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::topk_svm::softmax::tests::{objective, uniform};
    use crate::solvers::topk_svm::Softmax;

    /// A random point of c times the dual set: a = c(u − p), p in the simplex.
    fn feasible(rng: &mut crate::rng::SplitMix64, y: &[usize], m: usize, c: f64) -> Vec<f64> {
        let p: Vec<f64> = (0..m).map(|_| uniform(rng).powi(3)).collect();
        let total: f64 = p.iter().sum();
        let share = 1.0 / y.len() as f64;
        (0..m).map(|j| c * (if y.contains(&j) { share } else { 0.0 } - p[j] / total)).collect()
    }

    /// The step is the exact maximiser: no feasible random point, nor one between it and
    /// the step, does better; with one label it is the softmax step.
    #[test]
    fn update_is_the_exact_maximiser() {
        let mut ws = LossWorkspace::new();
        let mut rng = crate::rng::SplitMix64::new(17);
        let m = 7;
        let sets: [&[usize]; 4] = [&[0], &[4], &[1, 2, 5], &[0, 1, 2, 3, 4, 6]];
        for y in sets {
            for kii in [0.0, 1e-20, 0.3, 5.0, 1e9] {
                for c in [1e-3, 1.0, 50.0] {
                    for spread in [1.0, 8.0] {
                        let q: Vec<f64> = (0..m).map(|_| spread * (2.0 * uniform(&mut rng) - 1.0)).collect();
                        let mut a = vec![0.0; m];
                        MultiLabelSoftmax.update(&q, kii, y, c, &mut a, &mut ws).unwrap();
                        let share = c / y.len() as f64;
                        assert!(a.iter().sum::<f64>().abs() <= 1e-13 * c, "{a:?}");
                        for (j, &aj) in a.iter().enumerate() {
                            let upper = if y.contains(&j) { share } else { 0.0 };
                            assert!(aj <= upper, "{y:?} kii {kii} c {c}: a_{j} = {aj} above {upper}");
                        }
                        let best = objective(&MultiLabelSoftmax, &q, kii, y, c, &a);
                        let scale = best.abs() + c + q.iter().zip(&a).map(|(q, a)| (q * a).abs()).sum::<f64>();
                        if y.len() == 1 {
                            let mut b = vec![0.0; m];
                            Softmax.update(&q, kii, y, c, &mut b, &mut ws).unwrap();
                            for (u, v) in a.iter().zip(&b) {
                                assert!((u - v).abs() <= 1e-12 * c, "{q:?} kii {kii} c {c}: {a:?} vs {b:?}");
                            }
                        }
                        for i in 0..400 {
                            let mut b = feasible(&mut rng, y, m, c);
                            let w = [1e-6, 1e-3, 1.0][i % 3];
                            b.iter_mut().zip(&a).for_each(|(bj, aj)| *bj = w * *bj + (1.0 - w) * aj);
                            let other = objective(&MultiLabelSoftmax, &q, kii, y, c, &b);
                            assert!(other <= best + 1e-13 * scale, "{y:?} kii {kii} c {c}: {other} > {best}");
                        }
                    }
                }
            }
        }
    }

    /// For large κ (p ≈ u) the step still resolves u − p: the objective's gradient along
    /// the simplex is zero to rounding, which κu − ω(·) computed by difference would miss.
    #[test]
    fn large_curvature_keeps_the_step_accurate() {
        let mut ws = LossWorkspace::new();
        let (y, m, c) = ([1usize, 3, 4], 6, 1.0);
        let q = [0.7, -0.2, 1.5, 0.1, -1.0, 0.4];
        for kii in [1e6, 1e10, 1e13] {
            let mut a = vec![0.0; m];
            MultiLabelSoftmax.update(&q, kii, &y, c, &mut a, &mut ws).unwrap();
            // Stationarity: the objective's gradient in a_j, log p_j + 1 − q_j − kii·a_j,
            // is the same for every j (the multiplier of ⟨1, a⟩ = 0).
            let share = 1.0 / 3.0;
            let grads: Vec<f64> = (0..m)
                .map(|j| {
                    let p = if y.contains(&j) { share - a[j] / c } else { -a[j] / c };
                    p.ln() - q[j] - kii * a[j]
                })
                .collect();
            let spread = grads.iter().fold(f64::NEG_INFINITY, |t, &g| t.max(g))
                - grads.iter().fold(f64::INFINITY, |t, &g| t.min(g));
            assert!(spread <= 1e-6, "kii {kii}: {grads:?}");
            assert!(a.iter().all(|v| v.is_finite()) && a.iter().enumerate().all(|(j, &v)| y.contains(&j) || v < 0.0));
        }
    }

    /// The primal value is log Σ exp − mean over the labels, and the step at kii = 0,
    /// c = 1 attains it (Fenchel–Young).
    #[test]
    fn primal_is_the_conjugate_of_the_dual_term() {
        let mut ws = LossWorkspace::new();
        let s = [0.3f64, -1.2, 2.5, 0.0, 0.9];
        for y in [&[2usize][..], &[0, 4], &[1, 2, 3]] {
            let lse = s.iter().map(|v| v.exp()).sum::<f64>().ln();
            let direct = lse - y.iter().map(|&j| s[j]).sum::<f64>() / y.len() as f64;
            let l = MultiLabelSoftmax.primal(&s, y, &mut ws).unwrap();
            assert!((l - direct).abs() <= 1e-14 * direct.abs().max(1.0), "{l} vs {direct}");
            let mut a = vec![0.0; 5];
            MultiLabelSoftmax.update(&s, 0.0, y, 1.0, &mut a, &mut ws).unwrap();
            let fy = objective(&MultiLabelSoftmax, &s, 0.0, y, 1.0, &a);
            assert!((fy - l).abs() <= 1e-14 * l.max(1.0), "{fy} vs {l}");
            if y.len() == 1 {
                assert_eq!(l, Softmax.primal(&s, y, &mut ws).unwrap());
            }
        }
        assert!(MultiLabelSoftmax.primal(&[f64::NAN, 0.0], &[0], &mut ws).is_err());
        assert!(MultiLabelSoftmax.update(&[f64::NAN, 0.0], 1.0, &[0], 1.0, &mut [0.0; 2], &mut ws).is_err());
    }

    /// Far-apart scores, curvatures and weights: the step stays finite, feasible, and no
    /// worse than the points towards p = u (a = 0).
    #[test]
    fn extreme_inputs_stay_finite_and_feasible() {
        let mut ws = LossWorkspace::new();
        let rows: [&[f64]; 6] =
            [&[1e6, -1e6], &[-1e6, 1e6, 0.0], &[1e6, 1e6, -1e6], &[0.0; 4], &[-1e6, 3.0, 3.0, 1e6], &[5.0, 5.0]];
        for q in rows {
            let m = q.len();
            for y in [vec![0], vec![m - 1], (0..m - 1).collect::<Vec<_>>()] {
                assert!(MultiLabelSoftmax.primal(q, &y, &mut ws).unwrap().is_finite());
                for kii in [0.0, 1e-20, 1e-12, 0.3, 1e6, 1e15] {
                    for c in [1e-6, 1.0, 1e6] {
                        let mut a = vec![0.0; m];
                        MultiLabelSoftmax.update(q, kii, &y, c, &mut a, &mut ws).unwrap();
                        let share = c / y.len() as f64;
                        let feasible = a.iter().enumerate().all(|(j, &v)| {
                            v.is_finite() && v <= if y.contains(&j) { share * (1.0 + 1e-15) } else { 0.0 }
                        });
                        assert!(feasible && a.iter().sum::<f64>().abs() <= 1e-12 * c, "{q:?} {y:?} {kii} {c}: {a:?}");
                        assert!(MultiLabelSoftmax.dual(&a, &y, c).is_finite());
                        let best = objective(&MultiLabelSoftmax, q, kii, &y, c, &a);
                        let tol = 1e-12 * (best.abs() + c + q.iter().zip(&a).map(|(q, a)| (q * a).abs()).sum::<f64>());
                        for w in [1e-6, 1e-3, 0.5] {
                            let b: Vec<f64> = a.iter().map(|&v| (1.0 - w) * v).collect();
                            let other = objective(&MultiLabelSoftmax, q, kii, &y, c, &b);
                            assert!(other <= best + tol, "{q:?} {y:?} {kii} {c}: {other} > {best}");
                        }
                    }
                }
            }
        }
    }
}
