//! The top-k entropy loss for Prox-SDCA (Lapin, Hein, Schiele, "Loss functions for top-k
//! error: analysis and insights", CVPR 2016, §2.3): the softmax conjugate restricted to
//! the top-k simplex.
//!
//! With u_j = s_j − s_y (j ≠ y), Δ_k(1) = {x ≥ 0, ⟨1, x⟩ ≤ 1, x_j ≤ ⟨1, x⟩/k} and
//! H(x) = −Σ x_j log x_j − (1 − ⟨1, x⟩) log(1 − ⟨1, x⟩):
//!   L(s; y) = max_{x ∈ Δ_k(1)} ⟨u, x⟩ + H(x)          (k = 1 is the softmax loss).
//! Dual term (z_j = x_j, z_y = c − ⟨1, x⟩, x ∈ c·Δ_k): −c L*(x/c) = −Σ_j z_j log(z_j/c).
//! SDCA step: the softmax step (see `softmax.rs`, v_j = q_j − q_y, K = kii) with the extra
//! constraints x_j ≤ s/k, s = ⟨1, x⟩ = c − z_y.
//! KKT (multipliers μ for Σz = c, β_j ≥ 0 for the caps, B = Σβ, C₀ = log c − 1 − μ):
//!   log z_y + K z_y = C₀ + Kc,
//!   log x_j + K x_j = C₀ + B/k + v_j − β_j      (j ≠ y),   β_j (x_j − s/k) = 0.
//! The entropy keeps x > 0, so the capped set U (x_j = r := s/k, |U| = u) has u < k unless
//! k = m − 1, where the caps force x_j = r for all j. For u < k, eliminating B gives the
//! level D = C₀ + B/k = [k C₀ − u φ(r) + Σ_U v_j]/(k − u), φ(r) = log r + K r, and
//!   x_j = X(D + v_j) (j ∉ U),  (k − u) r = Σ_{j∉U} x_j,  β_j = D + v_j − φ(r) ≥ 0 (j ∈ U),
//! with X(θ) the solution of log x + K x = θ. So U holds the u largest v_j, every x_j is
//! min(X(D + v_j), r), and a candidate u is optimal iff
//!   D + v_[u] ≥ φ(r) ≥ D + v_[u+1]        (v sorted decreasingly, 1-based).
//! Method: for u = 0, 1, … (k = m − 1: only u = k), parametrise by D: r, φ(r), C₀ =
//! D + (u(φ − D) − Σ_U v)/k and z_y = X(C₀ + Kc) all increase with D, so
//! F(D) = z_y + k r − c is increasing with a unique root (safeguarded Newton, exact
//! derivative, log-domain sums); accept the first u that passes the KKT test, else error.
//! For k = m − 1 the unknown is ρ = log r with C₀ = φ(r) − ⟨1, v⟩/k. Primal: the step with
//! K = 0, c = 1, v = u, whose optimal value is −C₀ = −log z_y (−log(1 − s) when s < ½).

use super::loss::{reduced, write_dual_row, LossWorkspace, SdcaLoss};
use super::softmax::{entropy_dual, increasing_root, log_sum_exp_rel, normalise, softmax_step, solve_log_linear};
use crate::{Error, Result};

/// The top-k entropy loss; k = 1 is the softmax loss.
#[derive(Debug, Clone, Copy)]
pub struct TopKEntropy {
    pub k: usize,
}

impl SdcaLoss for TopKEntropy {
    fn name(&self) -> &'static str {
        "topk_entropy"
    }

    fn check(&self, m: usize) -> Result<()> {
        if m < 2 {
            return Err(Error::input("y", format!("needs at least 2 classes, got {m}")));
        }
        if self.k == 0 || self.k >= m {
            return Err(Error::param("k", format!("must satisfy 1 <= k <= n_classes - 1 = {}, got {}", m - 1, self.k)));
        }
        Ok(())
    }

    fn primal(&self, scores: &[f64], y: usize, ws: &mut LossWorkspace) -> Result<f64> {
        if self.k == 1 {
            return Ok(log_sum_exp_rel(scores, y));
        }
        let LossWorkspace { b, p, extra, .. } = ws;
        reduced(scores, y, b, |sj, sy| sj - sy);
        p.resize(b.len(), 0.0);
        let c0 = topk_entropy_step(b, extra, self.k, 0.0, 1.0, p)?;
        let s: f64 = p.iter().sum();
        Ok(if s < 0.5 { -(-s).ln_1p() } else { -c0 })
    }

    fn dual(&self, a: &[f64], y: usize, c: f64) -> f64 {
        entropy_dual(a, y, c)
    }

    fn update(&self, q: &[f64], kii: f64, y: usize, c: f64, a: &mut [f64], ws: &mut LossWorkspace) -> Result<()> {
        let LossWorkspace { b, p, extra, .. } = ws;
        reduced(q, y, b, |qj, qy| qj - qy);
        p.resize(b.len(), 0.0);
        if self.k == 1 {
            softmax_step(b, kii, c, p)?;
        } else {
            topk_entropy_step(b, extra, self.k, kii, c, p)?;
        }
        write_dual_row(p, y, a);
        Ok(())
    }
}

/// The state at level D for u capped classes (see the module comment).
struct Level {
    f: f64,
    df: f64,
    r: f64,
    phi: f64,
    c0: f64,
}

/// Evaluates F(D) = z_y + k r − c and its derivative for the candidate with the u largest
/// entries of `sorted` (decreasing) capped, u < k.
fn level(d: f64, sorted: &[f64], u: usize, k: usize, kii: f64, ln_k: f64, c: f64) -> Level {
    let (kf, kmu) = (k as f64, (k - u) as f64);
    let sum_capped: f64 = sorted[..u].iter().sum();
    // Log-domain sums over the uncapped classes, relative to the largest (sorted[u]).
    let l0 = solve_log_linear(d + sorted[u], kii, ln_k).1;
    let (mut w, mut dw, mut sx, mut dsx) = (0.0f64, 0.0, 0.0, 0.0);
    for &vj in &sorted[u..] {
        let (xj, lj, oj) = solve_log_linear(d + vj, kii, ln_k);
        let e = (lj - l0).exp();
        w += e;
        dw += e / (1.0 + oj);
        sx += xj;
        dsx += xj / (1.0 + oj);
    }
    let r = sx / kmu;
    let dr = dsx / kmu;
    let phi = l0 + w.ln() - kmu.ln() + kii * r;
    let dphi = dw / w + kii * dr;
    let c0 = d + (u as f64 * (phi - d) - sum_capped) / kf;
    let dc0 = (kmu + u as f64 * dphi) / kf;
    let (zy, _, oy) = solve_log_linear(c0 + kii * c, kii, ln_k);
    Level { f: zy + kf * r - c, df: zy / (1.0 + oy) * dc0 + kf * dr, r, phi, c0 }
}

/// The top-k entropy SDCA step (k ≥ 2) over the reduced vector v; writes the maximiser x
/// and returns C₀ (−C₀ is the optimal value when K = 0 and c = 1). `sorted` is scratch.
fn topk_entropy_step(v: &[f64], sorted: &mut Vec<f64>, k: usize, kii: f64, c: f64, x: &mut [f64]) -> Result<f64> {
    let n = v.len();
    let ln_k = kii.ln();
    let kf = k as f64;
    sorted.clear();
    sorted.extend_from_slice(v);
    sorted.sort_unstable_by(|a, b| b.total_cmp(a));
    let fail = |detail: String| Error::no_solution("top-k entropy SDCA step", detail);
    if k == n {
        // The caps force x_j = r for every j: one unknown ρ = log r.
        let mean = sorted.iter().sum::<f64>() / kf;
        let eval = |rho: f64| {
            let r = rho.exp();
            let (zy, _, oy) = solve_log_linear(rho + kii * r - mean + kii * c, kii, ln_k);
            (zy + kf * r - c, zy / (1.0 + oy) * (1.0 + kii * r) + kf * r)
        };
        let rho = increasing_root(eval, (c / kf).ln()).ok_or_else(|| fail(format!("k = m - 1, kii = {kii}, c = {c}")))?;
        let r = rho.exp();
        let c0 = rho + kii * r - mean;
        x.iter_mut().for_each(|xj| *xj = r);
        normalise(x, solve_log_linear(c0 + kii * c, kii, ln_k).0, c)?;
        return Ok(c0);
    }
    for u in 0..k {
        // F > 0 once the largest uncapped x reaches (k − u) c / k.
        let cap = (k - u) as f64 * c / kf;
        let d0 = cap.ln() + kii * cap - sorted[u];
        let Some(d) = increasing_root(
            |d| {
                let l = level(d, sorted, u, k, kii, ln_k, c);
                (l.f, l.df)
            },
            d0,
        ) else {
            return Err(fail(format!("no root for {u} capped classes (kii = {kii}, c = {c})")));
        };
        let l = level(d, sorted, u, k, kii, ln_k, c);
        let tol = 1e-11 * (1.0 + d.abs() + l.phi.abs() + sorted[u].abs() + sorted[0].abs());
        let uncapped_ok = d + sorted[u] <= l.phi + tol;
        let capped_ok = u == 0 || d + sorted[u - 1] >= l.phi - tol;
        if uncapped_ok && capped_ok {
            for (xj, &vj) in x.iter_mut().zip(v) {
                *xj = solve_log_linear(d + vj, kii, ln_k).0.min(l.r);
            }
            normalise(x, solve_log_linear(l.c0 + kii * c, kii, ln_k).0, c)?;
            return Ok(l.c0);
        }
    }
    Err(fail(format!("no capped set satisfies the KKT conditions (k = {k}, kii = {kii}, c = {c})")))
}

#[cfg(test)]
mod tests {
    use super::super::softmax::tests::{frank_wolfe_gap, objective, uniform};
    use super::super::softmax::Softmax;
    use super::*;

    #[test]
    fn check_rejects_bad_k() {
        assert!(TopKEntropy { k: 0 }.check(4).is_err());
        assert!(TopKEntropy { k: 4 }.check(4).is_err());
        assert!(TopKEntropy { k: 1 }.check(1).is_err());
        assert!(TopKEntropy { k: 3 }.check(4).is_ok());
    }

    /// Exact maximiser: Frank–Wolfe certificate (concave objective) and random feasible points.
    #[test]
    fn update_is_the_exact_maximiser() {
        let mut ws = LossWorkspace::new();
        let mut rng = crate::rng::SplitMix64::new(5);
        let mut capped_seen = 0;
        for m in [2, 3, 7] {
            for k in 1..m {
                let loss = TopKEntropy { k };
                for kii in [0.0, 0.3, 5.0] {
                    for c in [1e-3, 1.0, 50.0] {
                        let y = m / 2;
                        let mut q: Vec<f64> = (0..m).map(|_| 4.0 * uniform(&mut rng) - 2.0).collect();
                        q[(y + 1) % m] += 3.0; // one dominant class, so caps bind
                        let mut a = vec![0.0; m];
                        loss.update(&q, kii, y, c, &mut a, &mut ws).unwrap();
                        let best = objective(&loss, &q, kii, y, c, &a);
                        let scale = 1.0 + best.abs();
                        let s = a[y];
                        let cap = s / k as f64;
                        assert!(a.iter().enumerate().all(|(j, &v)| j == y || (v <= 0.0 && -v <= cap * (1.0 + 1e-12))));
                        if k > 1 && a.iter().any(|&v| (-v - cap).abs() <= 1e-12 * cap) {
                            capped_seen += 1;
                        }
                        let gap = frank_wolfe_gap(&q, kii, y, c, &a, k);
                        assert!(gap <= 1e-10 * scale, "m {m} k {k} K {kii} c {c}: gap {gap}");
                        for _ in 0..300 {
                            let mut x: Vec<f64> = (0..m - 1).map(|_| uniform(&mut rng)).collect();
                            let t: f64 = x.iter().sum::<f64>() / (c * uniform(&mut rng));
                            x.iter_mut().for_each(|v| *v /= t);
                            let total: f64 = x.iter().sum();
                            if x.iter().any(|&v| v > total / k as f64) {
                                continue;
                            }
                            let mut b = vec![0.0; m];
                            write_dual_row(&x, y, &mut b);
                            assert!(objective(&loss, &q, kii, y, c, &b) <= best + 1e-12 * scale);
                        }
                    }
                }
            }
        }
        assert!(capped_seen > 20, "the caps were active in only {capped_seen} cases");
    }

    #[test]
    fn k1_is_softmax_and_fenchel_young_holds() {
        let mut ws = LossWorkspace::new();
        let s = [0.3f64, -1.2, 2.5, 0.0, 1.9];
        for y in 0..s.len() {
            let soft = Softmax.primal(&s, y, &mut ws).unwrap();
            assert_eq!(TopKEntropy { k: 1 }.primal(&s, y, &mut ws).unwrap(), soft);
            let (mut a, mut b) = (vec![0.0; 5], vec![0.0; 5]);
            TopKEntropy { k: 1 }.update(&s, 0.7, y, 2.0, &mut a, &mut ws).unwrap();
            Softmax.update(&s, 0.7, y, 2.0, &mut b, &mut ws).unwrap();
            assert_eq!(a, b);
            let mut prev = soft;
            for k in 1..s.len() {
                let loss = TopKEntropy { k };
                let l = loss.primal(&s, y, &mut ws).unwrap();
                assert!(l <= prev + 1e-15 && l > 0.0, "L_k decreases in k");
                prev = l;
                for c in [1e-3, 1.0, 50.0] {
                    // With q = s and K = 0 the step attains c L(s) = max −c L*(x/c) − ⟨s, a⟩.
                    loss.update(&s, 0.0, y, c, &mut a, &mut ws).unwrap();
                    let fy = objective(&loss, &s, 0.0, y, c, &a);
                    assert!((fy - c * l).abs() <= 1e-13 * c * l.max(1.0), "k {k}: {fy} vs {}", c * l);
                }
            }
            // k = m − 1: all x_j equal, L = log(1 + (m − 1) exp(mean u)).
            let mean = s.iter().map(|v| v - s[y]).sum::<f64>() / 4.0;
            let want = (4.0 * mean.exp()).ln_1p();
            let got = TopKEntropy { k: 4 }.primal(&s, y, &mut ws).unwrap();
            assert!((got - want).abs() <= 1e-14 * want.max(1.0), "{got} vs {want}");
        }
        // Tiny losses keep their relative accuracy (uncapped, and k = m − 1).
        let tiny = TopKEntropy { k: 2 }.primal(&[40.0, 0.0, 0.0, 0.0], 0, &mut ws).unwrap();
        let want = (3.0 * (-40.0f64).exp()).ln_1p();
        assert!((tiny / want - 1.0).abs() < 1e-13, "{tiny} vs {want}");
        let tiny = TopKEntropy { k: 2 }.primal(&[40.0, 0.0, -1.0], 0, &mut ws).unwrap();
        let want = (2.0 * (-40.5f64).exp()).ln_1p();
        assert!((tiny / want - 1.0).abs() < 1e-13, "{tiny} vs {want}");
    }

    #[test]
    fn extreme_inputs_stay_finite_and_feasible() {
        let mut ws = LossWorkspace::new();
        let rows: [&[f64]; 6] = [
            &[1e6, -1e6, 0.0],
            &[-1e6, 1e6, 1e6],
            &[1e6, 1e6, -1e6, 5.0],
            &[0.0; 5],
            &[-1e6, 3.0, 3.0, 1e6, 2.0],
            &[7.0, 7.0, 7.0],
        ];
        for q in rows {
            let m = q.len();
            for k in 1..m {
                let loss = TopKEntropy { k };
                for y in [0, m - 1] {
                    let l = loss.primal(q, y, &mut ws).unwrap();
                    assert!(l.is_finite() && l >= 0.0, "{q:?} k {k} y {y}: {l}");
                    for kii in [0.0, 1e-12, 0.3, 1e6] {
                        for c in [1e-6, 1.0, 1e6] {
                            let mut a = vec![0.0; m];
                            loss.update(q, kii, y, c, &mut a, &mut ws).unwrap();
                            assert!(a.iter().all(|v| v.is_finite()), "{q:?} k {k} {kii} {c}: {a:?}");
                            let cap = a[y] / k as f64 * (1.0 + 1e-12);
                            assert!(a[y] <= c && a.iter().enumerate().all(|(j, &v)| j == y || (v <= 0.0 && -v <= cap)));
                            assert!(loss.dual(&a, y, c).is_finite());
                        }
                    }
                }
            }
        }
    }
}
