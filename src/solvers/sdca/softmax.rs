//! The softmax (multinomial logistic) loss for Prox-SDCA (Lapin, Hein, Schiele 2016, §2.2;
//! Shalev-Shwartz and Zhang's Prox-SDCA for smooth losses).
//!
//! Loss:  L(s; y) = log Σ_j exp(s_j − s_y)   (log-sum-exp with the max shift, ln_1p).
//! Dual:  with z ∈ ℝ^m, z_j = x_j (j ≠ y), z_y = c − ⟨1, x⟩, z ≥ 0 (so z ∈ c·simplex),
//!   −c L*(x/c) = −Σ_j z_j log(z_j / c)   (0 log 0 = 0).
//! SDCA step: with v_j = q_j − q_y and K = kii ≥ 0, maximise over z ≥ 0, Σz = c
//!   −Σ_j z_j log(z_j/c) + ⟨v, z^{\y}⟩ − (K/2)‖z^{\y}‖² − (K/2)(c − z_y)².
//! KKT (the entropy keeps z > 0, so only Σz = c is active, multiplier μ): for every j,
//!   log z_j + K z_j = D + w_j,   w_j = v_j (j ≠ y),  w_y = K c,   D = log c − 1 − μ,
//! i.e. z_j = X(D + w_j) with X(θ) = ω(θ + log K)/K = exp(θ − ω(θ + log K)), ω the Wright
//! omega function (ω + log ω = t). X is increasing and convex, so F(D) = Σ_j X(D + w_j) − c
//! is too: Newton from D₀ = log c + Kc − max w (where F ≥ 0) decreases monotonically to the
//! root; `increasing_root` adds a bracket and bisection as a safeguard. K = 0 (or Kc
//! underflowing) is the closed form z = c · softmax(w') with w'_j = v_j, w'_y = 0.
//! Accuracy: the iterate is normalised to Σz = c and x is clipped so that ⟨1, x⟩ ≤ c.

use super::loss::{reduced, write_dual_row, LossWorkspace, SdcaLoss};
use crate::{Error, Result};

/// The softmax (cross-entropy) loss.
#[derive(Debug, Clone, Copy, Default)]
pub struct Softmax;

impl SdcaLoss for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }

    fn check(&self, m: usize) -> Result<()> {
        if m < 2 {
            return Err(Error::input("y", format!("needs at least 2 classes, got {m}")));
        }
        Ok(())
    }

    fn primal(&self, scores: &[f64], y: usize, _ws: &mut LossWorkspace) -> Result<f64> {
        Ok(log_sum_exp_rel(scores, y))
    }

    fn dual(&self, a: &[f64], y: usize, c: f64) -> f64 {
        entropy_dual(a, y, c)
    }

    fn update(&self, q: &[f64], kii: f64, y: usize, c: f64, a: &mut [f64], ws: &mut LossWorkspace) -> Result<()> {
        let LossWorkspace { b, p, .. } = ws;
        reduced(q, y, b, |qj, qy| qj - qy);
        p.resize(b.len(), 0.0);
        softmax_step(b, kii, c, p)?;
        write_dual_row(p, y, a);
        Ok(())
    }
}

/// log Σ_j exp(s_j − s_y), exact for any finite scores (max shift and ln_1p).
pub(super) fn log_sum_exp_rel(s: &[f64], y: usize) -> f64 {
    let (jmax, top) = s.iter().enumerate().fold((0, f64::NEG_INFINITY), |(i, t), (j, &v)| if v > t { (j, v) } else { (i, t) });
    let rest: f64 = s.iter().enumerate().filter(|&(j, _)| j != jmax).map(|(_, &v)| (v - top).exp()).sum();
    (top - s[y]) + rest.ln_1p()
}

/// The entropy dual term −Σ_j z_j log(z_j / c) of a dual row (z_j = −a_j, z_y = c − a_y).
pub(super) fn entropy_dual(a: &[f64], y: usize, c: f64) -> f64 {
    if c <= 0.0 {
        return 0.0;
    }
    let mut h = 0.0;
    for (j, &aj) in a.iter().enumerate() {
        let z = if j == y { c - aj } else { -aj };
        if z > 0.0 {
            h -= z * (z / c).ln();
        }
    }
    h
}

/// The Wright omega function: the solution ω > 0 of ω + ln ω = t, for every t
/// (ω(−∞) = 0, ω(+∞) = +∞). Initial guess e^t (t ≤ −37, already exact), ln(1 + e^t)
/// (t ≤ 1) or t − ln t (t > 1), refined by Fritsch–Shafer–Crowley steps (fourth order;
/// Lawrence, Corless, Jeffrey 2012, Algorithm 917).
pub(super) fn wright_omega(t: f64) -> f64 {
    if t.is_nan() || t == f64::INFINITY {
        return t;
    }
    if t < -37.0 {
        // ω = e^{t − ω} with ω < 1e-16: e^t is exact to rounding.
        return t.exp();
    }
    let mut w = if t > 1.0 { t - t.ln() } else { t.exp().ln_1p() };
    for _ in 0..8 {
        let r = (t - w) - w.ln();
        let w1 = 1.0 + w;
        let qq = 2.0 * w1 * (w1 + 2.0 / 3.0 * r);
        let eps = r / w1 * (1.0 + r / (qq - 2.0 * r));
        w *= 1.0 + eps;
        if eps.abs() <= 4.0 * f64::EPSILON {
            break;
        }
    }
    w
}

/// X(θ) = the solution x > 0 of ln x + K x = θ, with `ln_k` = ln K (−∞ when K = 0).
/// Returns (x, ln x, ω = K x); dX/dθ = x / (1 + ω).
#[inline]
pub(super) fn solve_log_linear(theta: f64, kii: f64, ln_k: f64) -> (f64, f64, f64) {
    let w = wright_omega(theta + ln_k);
    let lx = theta - w;
    let x = if w < 1.0 { lx.exp() } else { w / kii };
    (x, lx, w)
}

/// A root of an increasing function, given as x ↦ (F(x), F'(x)), by Newton's method from
/// x0 inside a bracket [lo, hi] (F(lo) < 0 < F(hi)) that is grown by doubling steps while
/// one side is unknown; bisection whenever Newton leaves the bracket or stalls (|F| not
/// halved). Converges to the last representable digits; None on NaN or no convergence.
pub(super) fn increasing_root(mut f: impl FnMut(f64) -> (f64, f64), x0: f64) -> Option<f64> {
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    let (mut x, mut step, mut prev) = (x0, 1.0, f64::INFINITY);
    for _ in 0..500 {
        let (fx, dfx) = f(x);
        if fx.is_nan() {
            return None;
        }
        if fx == 0.0 {
            return Some(x);
        }
        if fx > 0.0 {
            hi = x;
        } else {
            lo = x;
        }
        let newton = x - fx / dfx;
        let next = if newton.is_finite() && newton > lo && newton < hi && fx.abs() <= 0.5 * prev {
            newton
        } else if lo.is_finite() && hi.is_finite() {
            0.5 * (lo + hi)
        } else {
            step *= 2.0;
            if fx > 0.0 {
                x - step
            } else {
                x + step
            }
        };
        prev = fx.abs();
        let tol = 4.0 * f64::EPSILON * (1.0 + x.abs());
        if (next - x).abs() <= tol || hi - lo <= tol {
            return Some(next);
        }
        x = next;
    }
    None
}

/// Scales z = (x, z_y) to Σz = c, then makes sure ⟨1, x⟩ ≤ c despite rounding.
pub(super) fn normalise(x: &mut [f64], zy: f64, c: f64) -> Result<()> {
    let total = zy + x.iter().sum::<f64>();
    if !(total > 0.0 && total.is_finite()) {
        return Err(Error::no_solution("entropy SDCA step", format!("the step has total mass {total}")));
    }
    x.iter_mut().for_each(|v| *v *= c / total);
    let s: f64 = x.iter().sum();
    if s > c {
        x.iter_mut().for_each(|v| *v *= c / s);
    }
    Ok(())
}

/// The softmax SDCA step over the reduced vector v (v_j = q_j − q_y, j ≠ y): writes the
/// maximiser x = z^{\y} (see the module comment).
pub(super) fn softmax_step(v: &[f64], kii: f64, c: f64, x: &mut [f64]) -> Result<()> {
    let kc = kii * c;
    if kc < 1e-18 {
        // K = 0 (or K c below rounding): z = c · softmax(v, 0); the quadratic term moves
        // the optimum by a relative O(K c).
        let top = v.iter().fold(0.0f64, |t, &vj| t.max(vj));
        for (xj, &vj) in x.iter_mut().zip(v) {
            *xj = (vj - top).exp();
        }
        return normalise(x, (-top).exp(), c);
    }
    let ln_k = kii.ln();
    let wmax = v.iter().fold(kc, |t, &vj| t.max(vj));
    let eval = |d: f64| {
        let (zy, _, oy) = solve_log_linear(d + kc, kii, ln_k);
        let (mut f, mut df) = (zy - c, zy / (1.0 + oy));
        for &vj in v {
            let (xj, _, oj) = solve_log_linear(d + vj, kii, ln_k);
            f += xj;
            df += xj / (1.0 + oj);
        }
        (f, df)
    };
    let d = increasing_root(eval, c.ln() + kc - wmax)
        .ok_or_else(|| Error::no_solution("softmax SDCA step", format!("no root of the mass equation (kii = {kii}, c = {c})")))?;
    for (xj, &vj) in x.iter_mut().zip(v) {
        *xj = solve_log_linear(d + vj, kii, ln_k).0;
    }
    normalise(x, solve_log_linear(d + kc, kii, ln_k).0, c)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn objective<L: SdcaLoss>(loss: &L, q: &[f64], kii: f64, y: usize, c: f64, a: &[f64]) -> f64 {
        let qa: f64 = q.iter().zip(a).map(|(q, a)| q * a).sum();
        let aa: f64 = a.iter().map(|v| v * v).sum();
        loss.dual(a, y, c) - qa - 0.5 * kii * aa
    }

    /// The Frank–Wolfe gap max_{x' ∈ c·Δ_k} ⟨∇Φ(x), x' − x⟩ at the step's x: an upper bound
    /// on (optimal − attained) objective, since the objective is concave.
    pub(crate) fn frank_wolfe_gap(q: &[f64], kii: f64, y: usize, c: f64, a: &[f64], k: usize) -> f64 {
        let s = a[y];
        let zy = c - s;
        let mut g: Vec<f64> = Vec::new();
        let mut gx = 0.0;
        for (j, &aj) in a.iter().enumerate().filter(|&(j, _)| j != y) {
            let x = -aj;
            let gj = (zy / x).ln() + (q[j] - q[y]) - kii * (x + s);
            gx += gj * x;
            g.push(gj);
        }
        g.sort_by(|a, b| b.total_cmp(a));
        let top: f64 = g[..k].iter().sum();
        c * (top / k as f64).max(0.0) - gx
    }

    pub(crate) fn uniform(rng: &mut crate::rng::SplitMix64) -> f64 {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn wright_omega_solves_its_equation() {
        let mut t = -700.0;
        while t < 1e300 {
            let w = wright_omega(t);
            assert!(w > 0.0 && w.is_finite(), "t = {t}");
            let res = (w - t) + w.ln();
            assert!(res.abs() <= 4.0 * f64::EPSILON * t.abs().max(1.0), "t = {t}, residual {res}");
            t = if t < -1.0 {
                t / 1.37
            } else if t < 1.0 {
                t + 0.173
            } else {
                t * 1.93
            };
        }
        for t in [-745.0, -740.0, -720.5] {
            assert_eq!(wright_omega(t), f64::exp(t));
        }
        assert_eq!(wright_omega(1.0), 1.0);
        assert!((wright_omega(1e300) - 1e300).abs() <= 1e285);
        assert_eq!(wright_omega(f64::NEG_INFINITY), 0.0);
    }

    /// Mirror ascent (entropic steps 1/(1 + Kc), linear rate) on the full z: a generic solve.
    fn mirror_ascent(q: &[f64], kii: f64, y: usize, c: f64) -> Vec<f64> {
        let m = q.len();
        let mut lz = vec![(c / m as f64).ln(); m];
        let eta = 1.0 / (1.0 + kii * c);
        for _ in 0..40000 {
            let z: Vec<f64> = lz.iter().map(|l| l.exp()).collect();
            for j in 0..m {
                let grad = if j == y { kii * (c - z[y]) } else { q[j] - q[y] - kii * z[j] };
                lz[j] = (1.0 - eta) * lz[j] + eta * (c.ln() + grad);
            }
            let top = lz.iter().fold(f64::NEG_INFINITY, |t, &l| t.max(l));
            let lse = top + lz.iter().map(|l| (l - top).exp()).sum::<f64>().ln();
            let mut moved = 0.0f64;
            for (l, old) in lz.iter_mut().zip(&z) {
                *l += c.ln() - lse;
                moved = moved.max((*l - old.ln()).abs());
            }
            if moved < 1e-15 {
                break;
            }
        }
        let mut a: Vec<f64> = lz.iter().map(|l| -l.exp()).collect();
        a[y] = 0.0;
        a[y] = -a.iter().sum::<f64>();
        a
    }

    #[test]
    fn update_is_the_exact_maximiser() {
        let mut ws = LossWorkspace::new();
        let mut rng = crate::rng::SplitMix64::new(11);
        for m in [2, 3, 7] {
            for kii in [0.0, 0.3, 5.0] {
                for c in [1e-3, 1.0, 50.0] {
                    let y = m / 2;
                    let q: Vec<f64> = (0..m).map(|_| 4.0 * uniform(&mut rng) - 2.0).collect();
                    let mut a = vec![0.0; m];
                    Softmax.update(&q, kii, y, c, &mut a, &mut ws).unwrap();
                    let best = objective(&Softmax, &q, kii, y, c, &a);
                    let scale = 1.0 + best.abs();
                    let gap = frank_wolfe_gap(&q, kii, y, c, &a, 1);
                    assert!(gap <= 1e-10 * scale, "m {m} K {kii} c {c}: gap {gap}");
                    let generic = objective(&Softmax, &q, kii, y, c, &mirror_ascent(&q, kii, y, c));
                    assert!((generic - best).abs() <= 1e-9 * scale, "m {m} K {kii} c {c}: {best} vs {generic}");
                    for _ in 0..300 {
                        let mut x: Vec<f64> = (0..m - 1).map(|_| uniform(&mut rng)).collect();
                        let s: f64 = x.iter().sum::<f64>() / (c * uniform(&mut rng));
                        x.iter_mut().for_each(|v| *v /= s);
                        let mut b = vec![0.0; m];
                        write_dual_row(&x, y, &mut b);
                        assert!(objective(&Softmax, &q, kii, y, c, &b) <= best + 1e-12 * scale);
                    }
                }
            }
        }
    }

    #[test]
    fn primal_is_log_sum_exp_and_fenchel_young_holds() {
        let mut ws = LossWorkspace::new();
        let s = [0.3f64, -1.2, 2.5, 0.0];
        for y in 0..4 {
            let direct = s.iter().map(|v| (v - s[y]).exp()).sum::<f64>().ln();
            let l = Softmax.primal(&s, y, &mut ws).unwrap();
            assert!((l - direct).abs() <= 1e-15 * direct.abs().max(1.0));
            for c in [1e-3, 1.0, 50.0] {
                // With q = s and K = 0 the step attains c L(s) = max_x −c L*(x/c) − ⟨s, a⟩.
                let mut a = vec![0.0; 4];
                Softmax.update(&s, 0.0, y, c, &mut a, &mut ws).unwrap();
                let fy = objective(&Softmax, &s, 0.0, y, c, &a);
                assert!((fy - c * l).abs() <= 1e-13 * c * l.max(1.0), "{fy} vs {}", c * l);
            }
        }
        let tiny = Softmax.primal(&[40.0, 0.0], 0, &mut ws).unwrap();
        assert!((tiny / (-40.0f64).exp() - 1.0).abs() < 1e-14);
    }

    #[test]
    fn extreme_inputs_stay_finite_and_feasible() {
        let mut ws = LossWorkspace::new();
        let rows: [&[f64]; 5] = [&[1e6, -1e6], &[-1e6, 1e6], &[1e6, 1e6, -1e6], &[0.0, 0.0, 0.0, 0.0], &[-1e6, 3.0, 3.0, 1e6]];
        for q in rows {
            let m = q.len();
            for y in [0, m - 1] {
                assert!(Softmax.primal(q, y, &mut ws).unwrap().is_finite());
                for kii in [0.0, 1e-12, 0.3, 1e6] {
                    for c in [1e-6, 1.0, 1e6] {
                        let mut a = vec![0.0; m];
                        Softmax.update(q, kii, y, c, &mut a, &mut ws).unwrap();
                        assert!(a.iter().all(|v| v.is_finite()), "{q:?} {kii} {c}: {a:?}");
                        assert!(a[y] <= c && a.iter().enumerate().all(|(j, &v)| j == y || v <= 0.0));
                        assert!(Softmax.dual(&a, y, c).is_finite());
                        if q.iter().all(|&v| v == 0.0) {
                            // Ties: every x_j (j ≠ y) is the same.
                            let x0 = a[if y == 0 { 1 } else { 0 }];
                            assert!(a.iter().enumerate().all(|(j, &v)| j == y || (v - x0).abs() <= 1e-14 * x0.abs()));
                        }
                    }
                }
            }
        }
    }
}
