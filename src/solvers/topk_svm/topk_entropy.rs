//! The top-k entropy loss for Prox-SDCA (Lapin, Hein, Schiele, "Loss functions for top-k
//! error: analysis and insights", CVPR 2016, §2.3): the softmax conjugate restricted to
//! the top-k simplex Δ_k(1) = {x ≥ 0, ⟨1, x⟩ ≤ 1, x_j ≤ ⟨1, x⟩/k} (x over the j ≠ y).
//!
//! Loss: with u_j = s_j − s_y and H(x) = −Σ x_j log x_j − (1 − Σx) log(1 − Σx),
//!   L(s; y) = max_{x ∈ Δ_k(1)} ⟨u, x⟩ + H(x)      (k = 1: the cap is implied, softmax).
//! Dual term (z_j = x_j, z_y = c − Σx, x ∈ c·Δ_k(1)): −c L*(x/c) = −Σ_j z_j log(z_j/c).
//! SDCA step: the softmax step of `softmax.rs` (ζ = z/c, κ = kii·c, v_j = q_j − q_y)
//!   max −Σ ζ log ζ + ⟨v, ζ^{\y}⟩ − (κ/2)(‖ζ^{\y}‖² + (1 − ζ_y)²) over the simplex,
//! plus the caps ζ_j ≤ ρ := (1 − ζ_y)/k (j ≠ y).
//! KKT (τ for Σζ = 1, μ_j ≥ 0 for the caps, M = Σ μ_j; the cap's gradient in ζ_y is 1/k):
//!   j ∉ U:  log ζ_j + κ ζ_j = v_j − τ              (κζ_j = ω(log κ + v_j − τ), ζ_j ≤ ρ)
//!   j ∈ U:  ζ_j = ρ,  μ_j = v_j − τ − (log ρ + κρ) ≥ 0
//!   y:      log ζ_y + κ ζ_y = κ − τ − M/k,      ζ_y = 1 − kρ.
//! The entropy keeps ζ > 0, so Σ_{j∉U} ζ_j = (k − u)ρ > 0 forces u = |U| < k, except when
//! k = m − 1, where the caps force ζ_j = ρ for every j (τ drops out and the y equation
//! reads σ + κ(k + 1)s/k = log k + ⟨1, v⟩/k). As ζ_j ≤ ρ ⟺ v_j − τ ≤ A := log ρ + κρ,
//! U holds the u largest v_j and every ζ_j = min(ρ, ω(log κ + v_j − τ)/κ).
//! Method, for a candidate u (a = (k − u)/k, V_U = Σ_U v_j): the unknown is σ = logit(kρ)
//! (s = kρ = e^{−softplus(−σ)}, log ζ_y = −softplus(σ): exact at both ends). The y
//! equation gives τ explicitly,
//!   τ(σ) = [softplus(σ) + κ s − V_U/k + (u/k)(log ρ + κρ)] / a,
//! and with θ = τ − log κ the mass condition Σ_{j∉U} ζ_j = (k − u)ρ is
//!   Ψ_u(σ) = log Σ_{j∉U} ω(v_j − θ(σ)) − log(κ(k − u)ρ) = 0,   Ψ_u' = −r θ' − ζ_y < 0
//! (r = Σω'/Σω ∈ (0, 1], θ' > 0): one pass per evaluation, no cancellation. Since
//! ω(t) < e^t, a·Ψ_u(σ) ≤ σ₀ − σ − κ(1 + u/k²)s with σ₀ = log k + a(lse_{∉U} v − log(k − u))
//! plus V_U/k (the κ = 0 root), so the root of σ + κ(1 + u/k²)s(σ) = σ₀ (scalar, exact when
//! every ω ≈ e^t) is a right end for `decreasing_root` (safeguarded Newton, see softmax.rs).
//! Then u passes if v_(u+1) − τ ≤ A ≤ v_(u) − τ (v sorted decreasingly; tolerance 1e-13 of
//! the magnitudes in τ). Output: the u largest v_j get ρ, the others are rescaled to mass
//! exactly (k − u)ρ and clipped at ρ, so it is feasible even at a borderline u. Order:
//! u = 0 (no sort), then a binary search over 1..k−1 on the failed side (TooFew/TooMany;
//! the pattern was monotone in 150 000 random cases), then a linear scan; none →
//! `Error::NoSolution`.
//! κ < 1e-17 (kii = 0): ζ_j = e^{v_j − τ} off U, τ = g_u − log ρ with
//! g_u = log Σ_{j∉U} e^{v_j} − log(k − u), and Ψ is linear in σ:
//!   σ* = log k + a g_u + V_U/k,   u valid ⟺ v_(u+1) ≤ g_u ≤ v_(u),
//! so ζ_j = ρ·min(1, e^{v_j − g_u}) (k = m − 1: σ* = log k + ⟨1, v⟩/k).
//! Primal: the same problem with κ = 0, c = 1, v = u. At its maximiser ⟨u, ζ⟩ + H(ζ) =
//! τ + M/k = −log ζ_y (sum the KKT equations), so L(s; y) = softplus(σ*).

use super::loss::{reduced, single, write_dual_row, LossWorkspace, SdcaLoss};
use super::softmax::{
    check_finite, decreasing_root, entropy_dual, exp_regime_root, log_mass, max_lse, omega, softplus, KAPPA_NEGLIGIBLE,
};
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

    fn check_params(&self, m: usize) -> Result<()> {
        if self.k == 0 || self.k >= m {
            return Err(Error::param("k", format!("must satisfy 1 <= k <= n_classes - 1 = {}, got {}", m - 1, self.k)));
        }
        Ok(())
    }

    fn primal(&self, scores: &[f64], y: &[usize], ws: &mut LossWorkspace) -> Result<f64> {
        let y = single(y);
        check_finite(scores)?;
        let LossWorkspace { b, p, extra, .. } = ws;
        reduced(scores, y, b, |sj, sy| sj - sy);
        let (_, _, sigma) = closed_form(b, self.k, extra, p)?;
        Ok(softplus(sigma))
    }

    fn dual(&self, a: &[f64], y: &[usize], c: f64) -> f64 {
        entropy_dual(a, y, c)
    }

    fn update(&self, q: &[f64], kii: f64, y: &[usize], c: f64, a: &mut [f64], ws: &mut LossWorkspace) -> Result<()> {
        let y = single(y);
        let LossWorkspace { b, p, extra, .. } = ws;
        reduced(q, y, b, |qj, qy| qj - qy);
        check_finite(b)?;
        let (n, k, kappa) = (b.len(), self.k, kii * c);
        if !(kappa >= 0.0 && kappa.is_finite()) || k == 0 || k > n {
            return Err(Error::no_solution("topk_entropy step", format!("kii·c = {kappa}, k = {k}, m − 1 = {n}")));
        }
        // The u largest v_j are capped at ρ; the others get ρe^{v_j − g} (κ = 0) or ω(v_j − θ)/κ.
        let (u, sigma, g, theta) = if kappa < KAPPA_NEGLIGIBLE {
            let (u, g, sigma) = closed_form(b, k, extra, p)?;
            (u, sigma, g, f64::NAN)
        } else {
            let (u, sigma, theta) = search(b, k, kappa, extra, p)?;
            (u, sigma, f64::NAN, theta)
        };
        let rho = sigmoid(sigma) / k as f64;
        // `extra` holds v sorted decreasingly whenever u > 0.
        let threshold = if u == 0 {
            f64::INFINITY
        } else if u == n {
            f64::NEG_INFINITY
        } else {
            extra[u]
        };
        // Exactly u entries are capped: those above the threshold, then ties in order.
        let above = u - b.iter().filter(|&&v| v > threshold).count();
        let is_capped = |vj: f64, ties: &mut usize| {
            let capped = vj > threshold || (vj == threshold && *ties > 0);
            *ties -= usize::from(capped && vj == threshold);
            capped
        };
        p.resize(n, 0.0);
        let (mut free, mut ties) = (0.0, above);
        for (x, &vj) in p.iter_mut().zip(b.iter()) {
            *x = if is_capped(vj, &mut ties) {
                rho
            } else {
                let f = if kappa < KAPPA_NEGLIGIBLE { rho * (vj - g).exp() } else { omega(vj - theta) / kappa };
                free += f;
                f
            };
        }
        // The uncapped mass is exactly (k − u)ρ (a log-domain error of a few ulps of |v| would
        // otherwise move mass across the cap after normalisation).
        if u < n && free > 0.0 {
            let (scale, mut ties) = ((k - u) as f64 * rho / free, above);
            for (x, &vj) in p.iter_mut().zip(b.iter()) {
                if !is_capped(vj, &mut ties) {
                    *x = (*x * scale).min(rho);
                }
            }
        }
        let total = sigmoid(-sigma) + p.iter().sum::<f64>();
        p.iter_mut().for_each(|x| *x *= c / total);
        write_dual_row(p, y, a);
        Ok(())
    }
}

/// 1/(1 + e^{−σ}) through softplus (exact relative accuracy at both ends).
fn sigmoid(sigma: f64) -> f64 {
    (-softplus(-sigma)).exp()
}

/// Sorts v decreasingly into `sorted` and fills suffix[i] = log Σ_{j ≥ i} e^{v_(j)}
/// (accumulated from the smallest: no cancellation).
fn sort_with_suffix(v: &[f64], sorted: &mut Vec<f64>, suffix: &mut Vec<f64>) {
    sorted.clear();
    sorted.extend_from_slice(v);
    sorted.sort_unstable_by(|x, z| z.total_cmp(x));
    let n = v.len();
    suffix.resize(n, 0.0);
    suffix[n - 1] = sorted[n - 1];
    for i in (0..n - 1).rev() {
        suffix[i] = sorted[i] + (suffix[i + 1] - sorted[i]).exp().ln_1p();
    }
}

/// κ = 0: returns (u, g_u, σ*) of the optimal capped count u (module comment), g = −∞ when
/// every coordinate is capped (k = m − 1). u = 0 needs only max v and lse(v); otherwise v
/// is sorted into `sorted` (and `suffix` is scratch).
fn closed_form(v: &[f64], k: usize, sorted: &mut Vec<f64>, suffix: &mut Vec<f64>) -> Result<(usize, f64, f64)> {
    let (n, kf) = (v.len(), k as f64);
    if k == n {
        return Ok((n, f64::NEG_INFINITY, kf.ln() + v.iter().sum::<f64>() / kf));
    }
    let (vmax, lse) = max_lse(v);
    let g = lse - kf.ln();
    if k == 1 || vmax <= g + 1e-13 * (1.0 + g.abs() + vmax.abs()) {
        return Ok((0, g, lse));
    }
    sort_with_suffix(v, sorted, suffix);
    let mut vu = sorted[0];
    for u in 1..k {
        let g = suffix[u] - ((k - u) as f64).ln();
        let tol = 1e-13 * (1.0 + g.abs() + sorted[u].abs() + sorted[u - 1].abs());
        if sorted[u] <= g + tol && g <= sorted[u - 1] + tol {
            return Ok((u, g, kf.ln() + (1.0 - u as f64 / kf) * g + vu / kf));
        }
        vu += sorted[u];
    }
    Err(Error::no_solution("topk_entropy", format!("no capped count u < k = {k} satisfies the KKT conditions")))
}

/// Whether a candidate u passes the KKT test (or which way it fails).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    Valid,
    /// An uncapped coordinate exceeds the cap: u is too small.
    TooFew,
    /// A capped coordinate has μ_j < 0: u is too large.
    TooMany,
}

/// κ > 0: returns (u, σ, θ) of the optimal capped count u (θ = NaN when k = m − 1, where every
/// coordinate is capped). u = 0 first (no sorting), then a binary search over 1..k−1 on
/// the direction of the failed test, then (never needed in our tests) a linear scan.
fn search(v: &[f64], k: usize, kappa: f64, sorted: &mut Vec<f64>, suffix: &mut Vec<f64>) -> Result<(usize, f64, f64)> {
    let (n, kf) = (v.len(), k as f64);
    if k == n {
        // φ(σ) = −σ + log k + V/k − κ(k + 1)ρ, slope ≤ −1: the same scalar equation.
        let sigma = exp_regime_root(kf.ln() + v.iter().sum::<f64>() / kf, kappa * (kf + 1.0) / kf)?;
        return Ok((n, sigma, f64::NAN));
    }
    let (vmax, lse) = max_lse(v);
    let (sigma, theta, fit) = Candidate { rest: v, vmax, lse, vu: 0.0, last_capped: f64::NAN, u: 0 }.solve(k, kappa)?;
    if k == 1 || fit == Fit::Valid {
        return Ok((0, sigma, theta)); // k = 1: the cap ζ_j ≤ 1 − ζ_y is implied.
    }
    sort_with_suffix(v, sorted, suffix);
    let candidate = |u: usize| Candidate {
        rest: &sorted[u..],
        vmax: sorted[u],
        lse: suffix[u],
        vu: sorted[..u].iter().sum(),
        last_capped: sorted[u - 1],
        u,
    };
    let (mut lo, mut hi) = (1, k - 1);
    while lo <= hi {
        let mid = (lo + hi) / 2;
        match candidate(mid).solve(k, kappa)? {
            (sigma, theta, Fit::Valid) => return Ok((mid, sigma, theta)),
            (_, _, Fit::TooFew) => lo = mid + 1,
            (_, _, Fit::TooMany) => hi = mid - 1,
        }
    }
    for u in 1..k {
        if let (sigma, theta, Fit::Valid) = candidate(u).solve(k, kappa)? {
            return Ok((u, sigma, theta));
        }
    }
    Err(Error::no_solution(
        "topk_entropy step",
        format!("no capped count u satisfies the KKT conditions (k = {k}, kii·c = {kappa})"),
    ))
}

/// A candidate capped count u: `rest` holds the v_j off U (max `vmax`, log-sum-exp `lse`),
/// `vu` = Σ_U v_j and `last_capped` the smallest v_j in U (NaN when u = 0).
struct Candidate<'a> {
    rest: &'a [f64],
    vmax: f64,
    lse: f64,
    vu: f64,
    last_capped: f64,
    u: usize,
}

impl Candidate<'_> {
    /// Solves Ψ_u(σ) = 0 (module comment); returns σ, θ and the KKT verdict.
    fn solve(&self, k: usize, kappa: f64) -> Result<(f64, f64, Fit)> {
        let (kf, ln_kappa, u) = (k as f64, kappa.ln(), self.u);
        let (a, uk) = ((k - u) as f64 / kf, u as f64 / kf);
        let ln_free = ((k - u) as f64).ln();
        // τ(σ) from the y equation; lr = log ρ.
        let tau_of = |sigma: f64, lr: f64, rho: f64| {
            (softplus(sigma) + kappa * sigmoid(sigma) - self.vu / kf + uk * (lr + kappa * rho)) / a
        };
        let psi = |sigma: f64| {
            let (s, zy) = (sigmoid(sigma), sigmoid(-sigma));
            let (lr, rho) = (-softplus(-sigma) - kf.ln(), s / kf);
            let (lm, r) = log_mass(self.rest, self.vmax, self.lse, tau_of(sigma, lr, rho) - ln_kappa);
            let dtheta = (s * (1.0 + kappa * zy) + uk * zy * (1.0 + kappa * rho)) / a;
            Ok((lm - ln_kappa - ln_free - lr, -r * dtheta - zy))
        };
        let sigma0 = kf.ln() + a * (self.lse - ln_free) + self.vu / kf; // the κ = 0 root
        let sigma = decreasing_root(psi, exp_regime_root(sigma0, kappa * (1.0 + uk / kf))?)?;
        let (lr, rho) = (-softplus(-sigma) - kf.ln(), sigmoid(sigma) / kf);
        let (tau, cap) = (tau_of(sigma, lr, rho), lr + kappa * rho);
        // τ is a difference of terms as large as |v| (divided by a): scale the test by them.
        let size = (softplus(sigma) + kappa * sigmoid(sigma) + self.vu.abs() / kf + uk * (lr.abs() + kappa * rho)) / a;
        let tol = 1e-13 * (1.0 + size + cap.abs() + self.vmax.abs());
        let fit = if self.vmax - tau > cap + tol {
            Fit::TooFew
        } else if self.last_capped - tau < cap - tol {
            Fit::TooMany
        } else {
            Fit::Valid
        };
        Ok((sigma, tau - ln_kappa, fit))
    }
}

#[cfg(test)]
mod tests {
    use super::super::softmax::tests::{objective, reference_step, uniform};
    use super::super::softmax::Softmax;
    use super::*;
    use crate::rng::SplitMix64;

    /// A random point of Δ_k(1) (mixed with the uniform vector until the caps hold).
    fn random_feasible(n: usize, k: usize, rng: &mut SplitMix64) -> Vec<f64> {
        let mut x: Vec<f64> = (0..n).map(|_| -uniform(rng).max(1e-300).ln()).collect();
        let s: f64 = x.iter().sum();
        x.iter_mut().for_each(|t| *t /= s);
        let top = x.iter().fold(0.0f64, |t, &v| t.max(v));
        let mix = if top > 1.0 / k as f64 { (top - 1.0 / k as f64) / (top - 1.0 / n as f64) } else { 0.0 };
        let mix = mix + (1.0 - mix) * uniform(rng) * uniform(rng);
        let mass = uniform(rng);
        x.iter_mut().for_each(|t| *t = mass * ((1.0 - mix) * *t + mix / n as f64));
        x
    }

    fn assert_feasible(a: &[f64], y: usize, c: f64, k: usize) {
        let s = a[y];
        assert!(a.iter().all(|v| v.is_finite()) && s <= c * (1.0 + 1e-14), "{a:?}");
        for (j, &v) in a.iter().enumerate().filter(|&(j, _)| j != y) {
            assert!(v <= 0.0 && -v <= s / k as f64 * (1.0 + 1e-12) + 1e-300, "j {j}: {a:?}, k {k}");
        }
    }

    #[test]
    fn check_validates_k_and_m() {
        assert!(TopKEntropy { k: 1 }.check(1).is_err());
        assert!(TopKEntropy { k: 0 }.check(5).is_err());
        assert!(matches!(TopKEntropy { k: 5 }.check(5), Err(Error::InvalidParameter { name: "k", .. })));
        assert!(TopKEntropy { k: 4 }.check(5).is_ok() && TopKEntropy { k: 1 }.check(2).is_ok());
    }

    #[test]
    fn update_is_the_exact_maximiser() {
        let mut ws = LossWorkspace::new();
        let mut rng = SplitMix64::new(5);
        let mut capped_cases = 0;
        for m in [2, 3, 7] {
            for k in 1..m {
                let loss = TopKEntropy { k };
                for kii in [0.0, 0.3, 5.0] {
                    for c in [1e-3, 1.0, 50.0] {
                        for (trial, spread) in [1.0, 4.0, 12.0].into_iter().enumerate() {
                            let y = trial % m;
                            let q: Vec<f64> = (0..m).map(|_| spread * (2.0 * uniform(&mut rng) - 1.0)).collect();
                            let mut a = vec![0.0; m];
                            loss.update(&q, kii, &[y], c, &mut a, &mut ws).unwrap();
                            assert_feasible(&a, y, c, k);
                            let capped = (0..m).filter(|&j| j != y && -a[j] >= a[y] / k as f64 * (1.0 - 1e-9)).count();
                            capped_cases += usize::from(k > 1 && capped > 0 && k < m - 1);
                            let best = objective(&loss, &q, kii, &[y], c, &a);
                            let scale = best.abs() + c;
                            let mut v = Vec::new();
                            reduced(&q, y, &mut v, |qj, qy| qj - qy);
                            let x: Vec<f64> = reference_step(&v, kii * c, Some(k)).iter().map(|t| c * t).collect();
                            let mut r = vec![0.0; m];
                            write_dual_row(&x, y, &mut r);
                            let generic = objective(&loss, &q, kii, &[y], c, &r);
                            assert!(
                                (generic - best).abs() <= 1e-9 * scale,
                                "m {m} k {k} K {kii} c {c} q {q:?}: {best} vs {generic}"
                            );
                            for i in 0..100 {
                                let x: Vec<f64> = random_feasible(m - 1, k, &mut rng).iter().map(|t| c * t).collect();
                                let mut b = vec![0.0; m];
                                write_dual_row(&x, y, &mut b);
                                let w = [1.0, 1e-3, 1e-6][i % 3];
                                b.iter_mut().zip(&a).for_each(|(bj, aj)| *bj = w * *bj + (1.0 - w) * aj);
                                assert!(objective(&loss, &q, kii, &[y], c, &b) <= best + 1e-13 * scale);
                            }
                        }
                    }
                }
            }
        }
        assert!(capped_cases >= 10, "only {capped_cases} cases exercised the caps");
    }

    #[test]
    fn k1_is_softmax_and_primal_is_the_conjugate_formula() {
        let mut ws = LossWorkspace::new();
        let mut rng = SplitMix64::new(9);
        for m in [2, 3, 7] {
            for trial in 0..20 {
                let y = trial % m;
                let s: Vec<f64> = (0..m).map(|_| 6.0 * (2.0 * uniform(&mut rng) - 1.0)).collect();
                let soft = Softmax.primal(&s, &[y], &mut ws).unwrap();
                assert!(
                    (TopKEntropy { k: 1 }.primal(&s, &[y], &mut ws).unwrap() - soft).abs() <= 1e-14 * soft.max(1.0)
                );
                for kii in [0.0, 2.0] {
                    let (mut a1, mut a2) = (vec![0.0; m], vec![0.0; m]);
                    TopKEntropy { k: 1 }.update(&s, kii, &[y], 0.7, &mut a1, &mut ws).unwrap();
                    Softmax.update(&s, kii, &[y], 0.7, &mut a2, &mut ws).unwrap();
                    assert!(a1.iter().zip(&a2).all(|(p, q)| (p - q).abs() <= 1e-14), "{a1:?} vs {a2:?}");
                }
                let u: Vec<f64> = s.iter().enumerate().filter(|&(j, _)| j != y).map(|(_, v)| v - s[y]).collect();
                for k in 1..m {
                    let loss = TopKEntropy { k };
                    let l = loss.primal(&s, &[y], &mut ws).unwrap();
                    // Fenchel–Young equality at the maximiser (the step with q = s, K = 0, c = 1).
                    let mut a = vec![0.0; m];
                    loss.update(&s, 0.0, &[y], 1.0, &mut a, &mut ws).unwrap();
                    let fy = objective(&loss, &s, 0.0, &[y], 1.0, &a);
                    assert!((fy - l).abs() <= 1e-13 * l.max(1.0), "m {m} k {k}: {fy} vs {l}");
                    let x = reference_step(&u, 0.0, Some(k));
                    let h = |x: &[f64]| {
                        let t: f64 = x.iter().sum();
                        x.iter().zip(&u).map(|(&p, &uj)| p * uj - if p > 0.0 { p * p.ln() } else { 0.0 }).sum::<f64>()
                            - (1.0 - t) * (1.0 - t).ln()
                    };
                    assert!((h(&x) - l).abs() <= 1e-10 * l.max(1.0), "m {m} k {k}: {} vs {l}", h(&x));
                    for _ in 0..100 {
                        assert!(h(&random_feasible(m - 1, k, &mut rng)) <= l + 1e-13 * l.max(1.0));
                    }
                    if k == m - 1 {
                        let mean = u.iter().sum::<f64>() / k as f64;
                        assert!((l - softplus((k as f64).ln() + mean)).abs() <= 1e-14 * l.max(1.0));
                    }
                }
            }
        }
    }

    #[test]
    fn extreme_inputs_stay_finite_and_feasible() {
        let mut ws = LossWorkspace::new();
        let rows: [&[f64]; 7] = [
            &[1e6, -1e6],
            &[-1e6, 1e6],
            &[1e6, 1e6, -1e6],
            &[0.0; 5],
            &[-1e6, 3.0, 3.0, 1e6, 1e6],
            &[5.0, 5.0, 5.0, -5.0],
            &[1e6, 1e6, 1e6, 1e6, 0.0],
        ];
        for q in rows {
            let m = q.len();
            for k in 1..m {
                let loss = TopKEntropy { k };
                for y in [0, m - 1] {
                    assert!(loss.primal(q, &[y], &mut ws).unwrap().is_finite());
                    for kii in [0.0, 1e-20, 1e-12, 0.3, 1e6] {
                        for c in [1e-6, 1.0, 1e6] {
                            let mut a = vec![0.0; m];
                            loss.update(q, kii, &[y], c, &mut a, &mut ws)
                                .unwrap_or_else(|e| panic!("{q:?} k {k} y {y} K {kii} c {c}: {e}"));
                            assert_feasible(&a, y, c, k);
                            assert!(loss.dual(&a, &[y], c).is_finite());
                            let best = objective(&loss, q, kii, &[y], c, &a);
                            for w in [1e-6, 1e-3, 0.5] {
                                let b: Vec<f64> = a.iter().map(|aj| (1.0 - w) * aj).collect();
                                let other = objective(&loss, q, kii, &[y], c, &b);
                                // Rounding of ⟨q, a⟩ (|q| up to 1e6) bounds what can be resolved.
                                let tol = 1e-12
                                    * (best.abs() + c + q.iter().zip(&a).map(|(q, a)| (q * a).abs()).sum::<f64>());
                                assert!(
                                    other <= best + tol,
                                    "{q:?} k {k} y {y} K {kii} c {c} w {w}: {other} > {best}, a = {a:?}"
                                );
                            }
                        }
                    }
                    // The closed form (K = 0) and the general path (tiny K c) agree.
                    let (mut a0, mut a1) = (vec![0.0; m], vec![0.0; m]);
                    loss.update(q, 0.0, &[y], 1.0, &mut a0, &mut ws).unwrap();
                    loss.update(q, 1e-12, &[y], 1.0, &mut a1, &mut ws).unwrap();
                    assert!(a0.iter().zip(&a1).all(|(p, r)| (p - r).abs() <= 1e-10), "{q:?} k {k}: {a0:?} vs {a1:?}");
                }
            }
        }
        assert!(TopKEntropy { k: 1 }.update(&[f64::INFINITY, 0.0], 1.0, &[0], 1.0, &mut [0.0; 2], &mut ws).is_err());
    }
}
