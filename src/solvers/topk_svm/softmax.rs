//! The softmax (multinomial logistic) loss for Prox-SDCA (Lapin, Hein, Schiele 2016, §2.2;
//! Shalev-Shwartz and Zhang's Prox-SDCA for smooth losses).
//!
//! Loss: L(s; y) = log Σ_j exp(s_j − s_y) over all m classes (no margin).
//! Dual: z ∈ ℝ^m with z_j = x_j (j ≠ y), z_y = c − ⟨1, x⟩, so z ∈ c·simplex, and
//!   −c L*(x/c) = −Σ_j z_j log(z_j/c)   (0 log 0 = 0).
//! SDCA step: with v_j = q_j − q_y, −⟨q, a⟩ = ⟨v, z^{\y}⟩ and ‖a‖² = ‖z^{\y}‖² + (c − z_y)².
//! In ζ = z/c and κ = kii·c the step is c times
//!   max_{ζ ∈ simplex}  −Σ_j ζ_j log ζ_j + ⟨v, ζ^{\y}⟩ − (κ/2)(‖ζ^{\y}‖² + (1 − ζ_y)²).
//! Strictly concave; the entropy keeps ζ > 0, so only Σζ = 1 is active. KKT (multiplier τ):
//!   log ζ_j + κ ζ_j = v_j − τ  (j ≠ y),     log ζ_y + κ ζ_y = κ − τ,
//! i.e. κ ζ_j = ω(log κ + v_j − τ), ω the Wright omega function (ω + log ω = t).
//! Unknown: σ = logit(s), s = 1 − ζ_y = Σ_{j≠y} ζ_j, so that s = e^{−softplus(−σ)} and
//! log ζ_y = −softplus(σ) are exact at both ends. The y equation gives τ explicitly,
//! τ(σ) = softplus(σ) + κ s, and with θ = τ − log κ the mass condition Σ_{j≠y} ζ_j = s is
//!   Ψ(σ) = log Σ_{j≠y} ω(v_j − θ(σ)) − log κ − log s = 0,
//!   Ψ'(σ) = −r s (1 + κ ζ_y) − ζ_y < 0,   r = Σ ω'/Σ ω ∈ (0, 1],  ω' = ω/(1 + ω).
//! One pass over the classes per evaluation, and no cancellation: κ s is formed directly,
//! never as κ − κζ_y (which loses the non-y mass when κ ~ 1e12). As ω(t) < e^t,
//! Ψ(σ) ≤ lse(v) − σ − κ s, so the root σ_B of σ + κ s(σ) = lse(v) (a scalar equation,
//! exact when every ω(t) ≈ e^t) is a right end; `decreasing_root` runs safeguarded Newton
//! from there (stepping left until Ψ > 0, then bracketed, bisecting when Newton leaves the
//! bracket or stalls). Where ω ≈ e^t, Ψ is linear in σ, so few steps are needed. Then
//! ζ_j = ω(v_j − θ)/κ, rescaled to Σ = s. No root found → `Error::NoSolution`.
//! κ < 1e-17 (including kii = 0): the quadratic moves every log ζ_j by at most 2κ, below
//! half an ulp, so the step is the closed form ζ = softmax(w') with w'_j = v_j, w'_y = 0.

use super::loss::{reduced, single, write_dual_row, LossWorkspace, SdcaLoss};
use crate::{Error, Result};

/// Below this κ = kii·c the step is the closed-form softmax (see the module comment).
pub(super) const KAPPA_NEGLIGIBLE: f64 = 1e-17;
/// Iteration cap of the safeguarded 1-D solvers (Newton converges in a handful; bisection
/// from any finite bracket reaches adjacent floats in fewer than 2100 halvings).
pub(super) const MAX_ITER: usize = 2200;

/// The softmax (cross-entropy) loss.
#[derive(Debug, Clone, Copy, Default)]
pub struct Softmax;

impl SdcaLoss for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }

    fn primal(&self, scores: &[f64], y: &[usize], _ws: &mut LossWorkspace) -> Result<f64> {
        let y = single(y);
        check_finite(scores)?;
        let (jmax, top) = scores
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(i, t), (j, &s)| if s > t { (j, s) } else { (i, t) });
        let rest: f64 = scores.iter().enumerate().filter(|&(j, _)| j != jmax).map(|(_, &s)| (s - top).exp()).sum();
        Ok((top - scores[y]) + rest.ln_1p())
    }

    fn dual(&self, a: &[f64], y: &[usize], c: f64) -> f64 {
        entropy_dual(a, y, c)
    }

    fn update(&self, q: &[f64], kii: f64, y: &[usize], c: f64, a: &mut [f64], ws: &mut LossWorkspace) -> Result<()> {
        let y = single(y);
        let LossWorkspace { b, p, .. } = ws;
        reduced(q, y, b, |qj, qy| qj - qy);
        p.resize(b.len(), 0.0);
        let zy = softmax_step(b, kii * c, p)?;
        let total = zy + p.iter().sum::<f64>();
        p.iter_mut().for_each(|x| *x *= c / total);
        write_dual_row(p, y, a);
        Ok(())
    }
}

pub(super) fn check_finite(v: &[f64]) -> Result<()> {
    match v.iter().find(|x| !x.is_finite()) {
        Some(x) => Err(Error::no_solution("entropy SDCA loss", format!("non-finite score {x}"))),
        None => Ok(()),
    }
}

/// −Σ_j z_j log(z_j/c) of a dual row a = c·u − z over the label set y (ascending),
/// u = 1_y/|y|: z_j = c/|y| − a_j on the labels, −a_j elsewhere (multiclass: z_y = c −
/// a_y). A z/c that underflows to 0 contributes 0 (|z log(z/c)| < 1e-300 there), never
/// −0·∞.
pub(super) fn entropy_dual(a: &[f64], y: &[usize], c: f64) -> f64 {
    if c <= 0.0 {
        return 0.0;
    }
    let share = c / y.len() as f64;
    let mut labels = y.iter().peekable();
    a.iter().enumerate().fold(0.0, |h, (j, &aj)| {
        let z = if labels.next_if_eq(&&j).is_some() { share - aj } else { -aj };
        let r = z / c;
        if r > 0.0 {
            h - z * r.ln()
        } else {
            h
        }
    })
}

/// log(1 + e^x) without overflow or cancellation.
pub(super) fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

/// The Wright omega function ω(t) = W₀(e^t), the solution ω > 0 of ω + log ω = t.
/// Initial guess: the series of W(e^t) in e^t (t < −2), the series about t = 1 (ω(1) = 1,
/// up to t = 3) or t − log t + log t / t; then Fritsch–Shafer–Crowley steps (fourth order;
/// Lawrence, Corless, Jeffrey 2012, Algorithm 917), written without overflow.
pub(super) fn omega(t: f64) -> f64 {
    if t < -40.0 {
        // ω = e^{t − ω} with ω < 5e-18: e^t is exact to rounding (and underflows to 0).
        return t.exp();
    }
    if t > 1e18 || t.is_nan() {
        // ω = t − log t + O(log t / t): the correction is below an ulp (and ∞ stays ∞).
        return if t.is_finite() { t - t.ln() } else { t };
    }
    let mut w = if t < -2.0 {
        let x = t.exp();
        x * (1.0 - x * (1.0 - 1.5 * x))
    } else if t <= 3.0 {
        let d = t - 1.0;
        1.0 + d * (0.5 + d * (1.0 / 16.0 - d * (1.0 / 192.0 + d * (1.0 / 3072.0 - d * 13.0 / 61440.0))))
    } else {
        let l = t.ln();
        t - l + l / t
    };
    // Two steps: the initial relative error is below 4%, and each step raises it to the
    // fourth power (the unit test checks the residual over the whole range).
    for _ in 0..2 {
        let r = (t - w) - w.ln();
        let w1 = 1.0 + w;
        let e = r / w1;
        let base = 1.0 + 2.0 * e / 3.0;
        w *= 1.0 + e * (base - e / (2.0 * w1)) / (base - e / w1);
    }
    w
}

/// log Σ_j ω(v_j − θ) and r = Σ ω'/Σ ω ∈ (0, 1] (ω' = ω/(1 + ω)), given max v and
/// lse(v). If every t_j = v_j − θ is below −40, ω = e^t to rounding and the sum is
/// lse(v) − θ in closed form (no underflow, r = 1).
pub(super) fn log_mass(v: &[f64], vmax: f64, lse: f64, theta: f64) -> (f64, f64) {
    if vmax - theta < -40.0 {
        return (lse - theta, 1.0);
    }
    let (s, d) = v.iter().fold((0.0, 0.0), |(s, d), &vj| {
        let o = omega(vj - theta);
        (s + o, d + o / (1.0 + o))
    });
    (s.ln(), d / s)
}

/// (max v, log Σ e^{v_j}) of a nonempty slice.
pub(super) fn max_lse(v: &[f64]) -> (f64, f64) {
    let vmax = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (vmax, vmax + v.iter().map(|&x| (x - vmax).exp()).sum::<f64>().ln())
}

/// The root of a strictly decreasing f (σ ↦ (f, f')) given a point `hi` with f(hi) ≤ 0:
/// safeguarded Newton; while no point with f > 0 is known, steps left are taken as they
/// come (doubling if Newton fails), then bisection whenever Newton leaves the bracket or
/// |f| does not halve. Stops when the Newton step is below 4 ulps of σ.
pub(super) fn decreasing_root(f: impl FnMut(f64) -> Result<(f64, f64)>, hi: f64) -> Result<f64> {
    root_between(f, f64::NEG_INFINITY, hi, hi)
}

/// [`decreasing_root`] from `start` in a known bracket [lo, hi] (f(lo) ≥ 0 ≥ f(hi); lo
/// may be −∞).
pub(super) fn root_between(mut f: impl FnMut(f64) -> Result<(f64, f64)>, lo: f64, hi: f64, start: f64) -> Result<f64> {
    let (mut lo, mut hi, mut x) = (lo, hi, start);
    let (mut step, mut prev) = (1.0, f64::INFINITY);
    for _ in 0..MAX_ITER {
        let (fx, dfx) = f(x)?;
        if !(fx.is_finite() && dfx < 0.0) {
            return Err(Error::no_solution("entropy SDCA step", format!("f({x}) = {fx}, f' = {dfx}")));
        }
        if fx == 0.0 {
            return Ok(x);
        }
        if fx > 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        let newton = x - fx / dfx;
        let tol = 4.0 * f64::EPSILON * x.abs().max(1.0);
        if (newton - x).abs() <= tol || hi - lo <= tol {
            return Ok(x);
        }
        x = if newton > lo && newton < hi && fx.abs() <= 0.5 * prev {
            newton
        } else if lo.is_finite() {
            0.5 * (lo + hi)
        } else {
            step *= 2.0;
            hi - step
        };
        prev = fx.abs();
    }
    Err(Error::no_solution("entropy SDCA step", "the mass equation did not converge"))
}

/// The root of σ + w·sigmoid(σ) = target (w ≥ 0; slope ≥ 1, so it lies in
/// [target − w, target]): the right end for the mass equations, which is their exact root
/// when every ω is in its exponential regime.
pub(super) fn exp_regime_root(target: f64, w: f64) -> Result<f64> {
    decreasing_root(
        |s| {
            let (p, q) = ((-softplus(-s)).exp(), (-softplus(s)).exp());
            Ok((target - s - w * p, -1.0 - w * p * q))
        },
        target,
    )
}

/// The softmax step in ζ-coordinates: writes ζ_j (j ≠ y) into `zeta`, returns ζ_y.
pub(super) fn softmax_step(v: &[f64], kappa: f64, zeta: &mut [f64]) -> Result<f64> {
    check_finite(v)?;
    if !(kappa >= 0.0 && kappa.is_finite()) {
        return Err(Error::no_solution("softmax step", format!("kii·c = {kappa}")));
    }
    if kappa < KAPPA_NEGLIGIBLE {
        let top = v.iter().fold(0.0f64, |t, &x| t.max(x));
        let zy = (-top).exp();
        let mut total = zy;
        for (z, &vj) in zeta.iter_mut().zip(v) {
            *z = (vj - top).exp();
            total += *z;
        }
        zeta.iter_mut().for_each(|z| *z /= total);
        return Ok(zy / total);
    }
    let ((vmax, lse), ln_kappa) = (max_lse(v), kappa.ln());
    let theta_of = |sigma: f64| softplus(sigma) + kappa * (-softplus(-sigma)).exp() - ln_kappa;
    let sigma = decreasing_root(
        |sigma| {
            let (s, zy) = ((-softplus(-sigma)).exp(), (-softplus(sigma)).exp());
            let (lm, r) = log_mass(v, vmax, lse, theta_of(sigma));
            Ok((lm - ln_kappa + softplus(-sigma), -r * s * (1.0 + kappa * zy) - zy))
        },
        exp_regime_root(lse, kappa)?,
    )?;
    let theta = theta_of(sigma);
    let mut mass = 0.0;
    for (z, &vj) in zeta.iter_mut().zip(v) {
        *z = omega(vj - theta) / kappa;
        mass += *z;
    }
    // Make Σ_{j≠y} ζ_j = s = 1 − ζ_y exact (the root is exact to a few ulps of σ).
    let s = (-softplus(-sigma)).exp();
    if mass > 0.0 && mass.is_finite() {
        zeta.iter_mut().for_each(|z| *z *= s / mass);
    }
    Ok((-softplus(sigma)).exp())
}

/// The entropic step of a label set (`multilabel_softmax.rs`; with one label, the step
/// of [`softmax_step`] computed another way): the p in the simplex maximising
///   H(p) + ⟨v, p⟩ − (κ/2)‖u − p‖²,   u = 1_Y/|Y| (Y: the entries `label` marks),
/// written as d = u − p into `d` (so d_j = −p_j off the labels). KKT (multiplier τ):
/// log p_j + κ p_j = w_j − τ, w_j = v_j + κ u_j, so κ p_j = ω(w_j − θ) with θ = τ − log κ,
/// and θ is the root of the mass condition Σ_j ω(w_j − θ) = κ. Unknown θ; per entry,
/// e_j = κ(u_j − p_j) = κu_j − ω_j, which for a label is also (ω + log ω = t)
///   e_j = (θ − v_j) + log ω_j,
/// the form without cancellation when κu_j is large (p_j ≈ u_j, where κu_j − ω_j would
/// lose the difference); the smaller of the two error bounds picks the form. The mass
/// condition is G(θ) = log(κ / Σω) = log1p(Σ_j e_j / Σ_j ω_j) = 0, G' = Σω'/Σω > 0
/// (ω' = ω/(1 + ω)): linear in θ where every ω ≈ e^t, nearly so where the labels' ω ≈
/// t. Bracket: ω(t) < e^t gives G > 0 at θ_A = lse(w) − log κ; the label of least v, at
/// θ_L = min_Y v − log(κ/|Y|), has ω = κ/|Y| and the other labels more, so G ≤ 0 there.
/// Safeguarded Newton ([`root_between`]) from θ_A (exact in the exponential regime) when
/// κ/|Y| ≤ 1, else from θ_L (close when p ≈ u). Then p off the labels is ω_j/κ and
/// d_j = e_j/κ ≤ u_j on them, and the labels' part of the rounding residual
/// Σd = Σ_Y d − Σ_N p is moved onto their p in proportion (it keeps p ≥ 0 and the d_j
/// accurate). κ below [`KAPPA_NEGLIGIBLE`]: p = softmax(v), as in [`softmax_step`].
pub(super) fn label_set_step(v: &[f64], label: &[bool], n_labels: usize, kappa: f64, d: &mut [f64]) -> Result<()> {
    check_finite(v)?;
    if !(kappa >= 0.0 && kappa.is_finite()) {
        return Err(Error::no_solution("multilabel softmax step", format!("kii·c = {kappa}")));
    }
    let share = 1.0 / n_labels as f64;
    if kappa < KAPPA_NEGLIGIBLE {
        let top = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = v.iter().map(|&vj| (vj - top).exp()).sum();
        for ((dj, &vj), &is_label) in d.iter_mut().zip(v).zip(label) {
            let p = (vj - top).exp() / total;
            *dj = if is_label { share - p } else { -p };
        }
        return Ok(());
    }
    let ku = kappa * share;
    // (e_j, ω_j) of an entry at θ.
    let entry = |vj: f64, is_label: bool, theta: f64| -> (f64, f64) {
        if !is_label {
            let o = omega(vj - theta);
            return (-o, o);
        }
        let o = omega((vj + ku) - theta);
        let (direct, log_o) = (ku - o, o.ln());
        let e = if ku.max(o) <= (theta - vj).abs() + log_o.abs() { direct } else { (theta - vj) + log_o };
        (e, o)
    };
    let ln_kappa = kappa.ln();
    let mass = |theta: f64| -> Result<(f64, f64)> {
        let (mut e, mut total, mut slope) = (0.0, 0.0, 0.0);
        for (&vj, &is_label) in v.iter().zip(label) {
            let (ej, o) = entry(vj, is_label, theta);
            e += ej;
            total += o;
            slope += o / (1.0 + o);
        }
        let ratio = e / total;
        // log1p is exact near the root; far below it (Σω ≫ κ) the quotient is safe.
        let g = if ratio > -0.5 { ratio.ln_1p() } else { ln_kappa - total.ln() };
        Ok((-g, -slope / total))
    };
    let (_, lse) = max_lse_shifted(v, label, ku);
    let hi = lse - ln_kappa;
    let lowest = v.iter().zip(label).filter(|(_, &l)| l).map(|(&vj, _)| vj).fold(f64::INFINITY, f64::min);
    let lo = (lowest - ku.ln()).min(hi);
    let theta = root_between(mass, lo, hi, if ku <= 1.0 { hi } else { lo })?;
    let (mut labels_d, mut others_p, mut labels_p) = (0.0, 0.0, 0.0);
    for ((dj, &vj), &is_label) in d.iter_mut().zip(v).zip(label) {
        let (e, o) = entry(vj, is_label, theta);
        if is_label {
            *dj = (e / kappa).min(share);
            labels_d += *dj;
            labels_p += share - *dj;
        } else {
            *dj = -(o / kappa);
            others_p += o / kappa;
        }
    }
    // Σ_Y d = Σ_N p exactly up to rounding: the labels' p absorbs the residual.
    let residual = labels_d - others_p;
    if labels_p > 0.0 && residual != 0.0 {
        for (dj, _) in d.iter_mut().zip(label).filter(|(_, &l)| l) {
            *dj -= residual * (share - *dj) / labels_p;
        }
    }
    Ok(())
}

/// (max w, log Σ e^{w_j}) of w_j = v_j + `ku` on the labels, v_j elsewhere.
fn max_lse_shifted(v: &[f64], label: &[bool], ku: f64) -> (f64, f64) {
    let w = |(&vj, &l): (&f64, &bool)| if l { vj + ku } else { vj };
    let wmax = v.iter().zip(label).map(w).fold(f64::NEG_INFINITY, f64::max);
    (wmax, wmax + v.iter().zip(label).map(|pair| (w(pair) - wmax).exp()).sum::<f64>().ln())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::solvers::topk_svm) fn objective<L: SdcaLoss>(
        loss: &L,
        q: &[f64],
        kii: f64,
        y: &[usize],
        c: f64,
        a: &[f64],
    ) -> f64 {
        let qa: f64 = q.iter().zip(a).map(|(q, a)| q * a).sum();
        loss.dual(a, y, c) - qa - 0.5 * kii * a.iter().map(|v| v * v).sum::<f64>()
    }

    pub(in crate::solvers::topk_svm) fn uniform(rng: &mut crate::rng::SplitMix64) -> f64 {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An independent solve of the step in x = ζ^{\y} (ζ_y = 1 − Σx eliminated):
    /// max H(x) + ⟨v, x⟩ − (κ/2)(‖x‖² + (Σx)²) [s.t. x_j ≤ Σx/k] by damped Newton on the
    /// log-barrier problem, barrier weight 1e-1 → 1e-13. k = n: x_j = s/n, bisection on s.
    pub(in crate::solvers::topk_svm) fn reference_step(v: &[f64], kappa: f64, k: Option<usize>) -> Vec<f64> {
        let n = v.len();
        let nf = n as f64;
        if k == Some(n) {
            let mean = v.iter().sum::<f64>() / nf;
            let slope = |s: f64| (nf * (1.0 - s) / s).ln() + mean - kappa * s * (1.0 + 1.0 / nf);
            let (mut lo, mut hi) = (0.0f64, 1.0f64);
            for _ in 0..3000 {
                let mid = 0.5 * (lo + hi);
                if mid <= lo || mid >= hi {
                    break;
                }
                *(if slope(mid) > 0.0 { &mut lo } else { &mut hi }) = mid;
            }
            return vec![0.5 * (lo + hi) / nf; n];
        }
        let kf = k.map(|k| k as f64);
        let value = |x: &[f64], mu: f64| {
            let s: f64 = x.iter().sum();
            if x.iter().any(|&t| t <= 0.0) || s >= 1.0 || kf.is_some_and(|kf| x.iter().any(|&t| s / kf - t <= 0.0)) {
                return f64::NEG_INFINITY;
            }
            let mut f = -(1.0 - s) * (1.0 - s).ln() - 0.5 * kappa * s * s;
            for (&xj, &vj) in x.iter().zip(v) {
                f += -xj * xj.ln() + vj * xj - 0.5 * kappa * xj * xj + kf.map_or(0.0, |kf| mu * (s / kf - xj).ln());
            }
            f
        };
        let mut x = vec![0.5 / nf; n];
        let mut mu = 0.1;
        loop {
            for _ in 0..200 {
                let s: f64 = x.iter().sum();
                let ib: Vec<f64> = x.iter().map(|&t| kf.map_or(0.0, |kf| 1.0 / (s / kf - t))).collect();
                let (sb, sb2) = (ib.iter().sum::<f64>(), ib.iter().map(|b| b * b).sum::<f64>());
                let kf = kf.unwrap_or(1.0);
                let mut g: Vec<f64> = (0..n)
                    .map(|j| ((1.0 - s) / x[j]).ln() + v[j] - kappa * (x[j] + s) + mu * (sb / kf - ib[j]))
                    .collect();
                let mut h: Vec<Vec<f64>> = (0..n)
                    .map(|j| {
                        (0..n)
                            .map(|l| {
                                let d = if j == l { 1.0 / x[j] + kappa + mu * ib[j] * ib[j] } else { 0.0 };
                                d + 1.0 / (1.0 - s)
                                    + kappa
                                    + mu * (sb2 / (kf * kf) - (ib[j] * ib[j] + ib[l] * ib[l]) / kf)
                            })
                            .collect()
                    })
                    .collect();
                let g0 = g.clone();
                // Gaussian elimination with partial pivoting: h d = g.
                for col in 0..n {
                    let piv = (col..n).max_by(|&a, &b| h[a][col].abs().total_cmp(&h[b][col].abs())).unwrap();
                    h.swap(col, piv);
                    g.swap(col, piv);
                    let (pivot_row, pivot_g) = (h[col].clone(), g[col]);
                    for (hr, gr) in h.iter_mut().zip(g.iter_mut()).skip(col + 1) {
                        let f = hr[col] / pivot_row[col];
                        hr.iter_mut().zip(&pivot_row).skip(col).for_each(|(a, b)| *a -= f * b);
                        *gr -= f * pivot_g;
                    }
                }
                let mut d = vec![0.0; n];
                for row in (0..n).rev() {
                    d[row] = (g[row] - (row + 1..n).map(|l| h[row][l] * d[l]).sum::<f64>()) / h[row][row];
                }
                let dec: f64 = g0.iter().zip(&d).map(|(a, b)| a * b).sum();
                if dec <= 1e-24 {
                    break;
                }
                let f0 = value(&x, mu);
                let mut step = 1.0;
                loop {
                    let xn: Vec<f64> = x.iter().zip(&d).map(|(a, b)| a + step * b).collect();
                    if value(&xn, mu) >= f0 + 0.25 * step * dec - 1e-15 * f0.abs() {
                        x = xn;
                        break;
                    }
                    step *= 0.5;
                    if step < 1e-20 {
                        break; // No progress left at this precision.
                    }
                }
                if step < 1e-20 {
                    break;
                }
            }
            if k.is_none() || mu < 1e-12 {
                return x;
            }
            mu *= 0.01;
        }
    }

    #[test]
    fn omega_solves_its_equation() {
        let mut t = -745.0;
        while t < 1e300 {
            let w = omega(t);
            assert!(w >= 0.0 && w.is_finite(), "t = {t}");
            if t < -40.0 {
                assert_eq!(w, t.exp());
            } else {
                let res = (w - t) + w.ln();
                assert!(res.abs() <= 4.0 * f64::EPSILON * t.abs().max(1.0), "t = {t}, residual {res}");
            }
            t = if t < -1.0 {
                t / 1.13
            } else if t < 1.0 {
                t + 0.0173
            } else {
                t * 1.37
            };
        }
        assert_eq!(omega(1.0), 1.0);
        assert!((omega(0.0) - 0.567_143_290_409_783_8).abs() <= 2e-16);
        assert_eq!(omega(1e300), 1e300);
        assert_eq!(omega(f64::NEG_INFINITY), 0.0);
        assert_eq!(omega(f64::INFINITY), f64::INFINITY);
    }

    #[test]
    fn update_is_the_exact_maximiser() {
        let mut ws = LossWorkspace::new();
        let mut rng = crate::rng::SplitMix64::new(11);
        for m in [2, 3, 7] {
            for kii in [0.0, 0.3, 5.0] {
                for c in [1e-3, 1.0, 50.0] {
                    for trial in 0..3 {
                        let (y, spread) = (trial % m, [1.0, 3.0, 8.0][trial]);
                        let q: Vec<f64> = (0..m).map(|_| spread * (2.0 * uniform(&mut rng) - 1.0)).collect();
                        let mut a = vec![0.0; m];
                        Softmax.update(&q, kii, &[y], c, &mut a, &mut ws).unwrap();
                        let best = objective(&Softmax, &q, kii, &[y], c, &a);
                        let scale = best.abs() + c;
                        let mut v = Vec::new();
                        reduced(&q, y, &mut v, |qj, qy| qj - qy);
                        let x: Vec<f64> = reference_step(&v, kii * c, None).iter().map(|t| c * t).collect();
                        let mut r = vec![0.0; m];
                        write_dual_row(&x, y, &mut r);
                        let generic = objective(&Softmax, &q, kii, &[y], c, &r);
                        assert!((generic - best).abs() <= 1e-9 * scale, "m {m} K {kii} c {c}: {best} vs {generic}");
                        for i in 0..200 {
                            let mut x: Vec<f64> = (0..m - 1).map(|_| uniform(&mut rng)).collect();
                            let s: f64 = x.iter().sum::<f64>() / (c * uniform(&mut rng));
                            x.iter_mut().for_each(|t| *t /= s);
                            let mut b = vec![0.0; m];
                            write_dual_row(&x, y, &mut b);
                            // Every other point also moves only slightly away from the step.
                            let w = if i % 2 == 0 { 1e-4 } else { 1.0 };
                            b.iter_mut().zip(&a).for_each(|(bj, aj)| *bj = w * *bj + (1.0 - w) * aj);
                            assert!(objective(&Softmax, &q, kii, &[y], c, &b) <= best + 1e-13 * scale);
                        }
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
            let l = Softmax.primal(&s, &[y], &mut ws).unwrap();
            assert!((l - direct).abs() <= 1e-15 * direct.abs().max(1.0));
            // q = s, K = 0, c = 1: the step attains L(s) = max_x −L*(x) − ⟨s, a⟩.
            let mut a = vec![0.0; 4];
            Softmax.update(&s, 0.0, &[y], 1.0, &mut a, &mut ws).unwrap();
            let fy = objective(&Softmax, &s, 0.0, &[y], 1.0, &a);
            assert!((fy - l).abs() <= 1e-14 * l.max(1.0), "{fy} vs {l}");
        }
        let tiny = Softmax.primal(&[40.0, 0.0], &[0], &mut ws).unwrap();
        assert!((tiny / (-40.0f64).exp() - 1.0).abs() < 1e-14);
        assert!(Softmax.primal(&[f64::NAN, 0.0], &[0], &mut ws).is_err());
    }

    #[test]
    fn extreme_inputs_stay_finite_and_feasible() {
        let mut ws = LossWorkspace::new();
        let rows: [&[f64]; 6] =
            [&[1e6, -1e6], &[-1e6, 1e6], &[1e6, 1e6, -1e6], &[0.0; 4], &[-1e6, 3.0, 3.0, 1e6], &[5.0, 5.0]];
        for q in rows {
            let m = q.len();
            for y in [0, m - 1] {
                assert!(Softmax.primal(q, &[y], &mut ws).unwrap().is_finite());
                for kii in [0.0, 1e-20, 1e-12, 0.3, 1e6] {
                    for c in [1e-6, 1.0, 1e6] {
                        let mut a = vec![0.0; m];
                        Softmax.update(q, kii, &[y], c, &mut a, &mut ws).unwrap();
                        assert!(a.iter().all(|v| v.is_finite()), "{q:?} {kii} {c}: {a:?}");
                        assert!(a[y] <= c * (1.0 + 1e-15) && a.iter().enumerate().all(|(j, &v)| j == y || v <= 0.0));
                        assert!(Softmax.dual(&a, &[y], c).is_finite());
                        let best = objective(&Softmax, q, kii, &[y], c, &a);
                        let tol = 1e-12 * (best.abs() + c + q.iter().zip(&a).map(|(q, a)| (q * a).abs()).sum::<f64>());
                        let mut b = vec![0.0; m];
                        for w in [1e-6, 1e-3, 0.5] {
                            // Towards the vertex x = 0 (a = 0), which is feasible.
                            b.iter_mut().zip(&a).for_each(|(bj, aj)| *bj = (1.0 - w) * aj);
                            assert!(objective(&Softmax, q, kii, &[y], c, &b) <= best + tol);
                        }
                        if q.iter().all(|&v| v == q[0]) {
                            let x0 = a[if y == 0 { 1 } else { 0 }];
                            assert!(a.iter().enumerate().all(|(j, &v)| j == y || (v - x0).abs() <= 1e-14 * x0.abs()));
                        }
                    }
                }
            }
        }
        assert!(Softmax.update(&[f64::NAN, 0.0], 1.0, &[0], 1.0, &mut [0.0; 2], &mut ws).is_err());
        // A subnormal z with z/c underflowing to 0 must not give −0·∞.
        assert!(Softmax.dual(&[50.0, -5e-323, -50.0], &[0], 1e6).is_finite());
    }
}
