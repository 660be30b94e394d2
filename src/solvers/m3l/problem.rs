//! The M3L problem (Hariharan, Vishwanathan, Varma: *Efficient max-margin multi-label
//! classification*), in the form both solvers share.
//!
//! Data: N examples, L labels, y_il ∈ {±1}, a label-correlation prior R (L × L,
//! symmetric positive definite) and a decomposable loss Δ (5) given per (i, l) by
//! Δ⁺_il = Δ_l(y_i, y_il) and Δ⁻_il = Δ_l(y_i, −y_il) (Hamming: Δ⁺ = 0, Δ⁻ = 2).
//!
//! Primal P2 (11)–(14), with Z = [z_1 … z_L] and scores f_il = z_l·φ(x_i):
//!   min_Z ½ Σ_lk R⁻¹_lk z_l·z_k + C Σ_il max(Δ⁺_il, Δ⁻_il − 2 y_il f_il).
//! Dual D2 (25), with A = Y∘α and K the kernel matrix:
//!   max_{0 ≤ α ≤ C} Σ_il b_il α_il − 2 Σ_lk R_lk α_l·Y_l K Y_k α_k,   b = Δ⁻ − Δ⁺,
//! linked by (23): Z = 2 φ(X) A R, so F = 2 K A R. In terms of F the quadratic term is
//! Σ_il α_il y_il f_il, which gives every objective from (α, F) alone:
//!   D = Σ b∘α − Σ α∘y∘F,    P = Σ α∘y∘F + C Σ max(Δ⁺, Δ⁻ − 2 y∘F),
//! and the dual gradient (29) g = b − 2 y∘F. Optimality (KKT of the box QP): every
//! projected gradient (31) vanishes — g_il = 0 where 0 < α_il < C, g_il ≤ 0 at α_il = 0,
//! g_il ≥ 0 at α_il = C — and then P = D.
//!
//! With R = I and the Hamming loss the problem splits into L binary SVMs with penalty
//! 2C (§3.1): one-vs-all.
//!
//! Sample weights w_i make the cost per example, C_i = C·w_i in place of C everywhere
//! above: the loss term C Σ_i w_i Σ_l max(…), the dual box 0 ≤ α_il ≤ C_i and its
//! projected gradients (so weight 2 is the example duplicated, weight 0 forces α_i = 0:
//! the example is ignored). [`M3l::cost`] gives C_i.

use crate::{Error, Result};

/// The data of an M3L dual, row-major N × L arrays.
#[derive(Debug, Clone, Copy)]
pub struct M3l<'a> {
    pub n: usize,
    pub labels: usize,
    /// y_il ∈ {−1, +1}.
    pub y: &'a [f64],
    /// R, L × L.
    pub r: &'a [f64],
    pub c: f64,
    /// Δ⁺_il.
    pub delta_plus: &'a [f64],
    /// Δ⁻_il.
    pub delta_minus: &'a [f64],
    /// The examples' weights w_i (None: all 1), checked by [`M3l::with_weights`].
    pub weights: Option<&'a [f64]>,
}

impl<'a> M3l<'a> {
    /// Checks shapes, signs and R (symmetric with a positive diagonal; positive
    /// definiteness is the caller's Cholesky check).
    pub fn new(
        n: usize,
        labels: usize,
        y: &'a [f64],
        r: &'a [f64],
        c: f64,
        delta_plus: &'a [f64],
        delta_minus: &'a [f64],
    ) -> Result<Self> {
        let size = n.checked_mul(labels).ok_or_else(|| Error::input("Y", "too large"))?;
        if n == 0 || labels == 0 {
            return Err(Error::input("Y", "needs at least one example and one label"));
        }
        if y.len() != size || delta_plus.len() != size || delta_minus.len() != size {
            return Err(Error::input("Y", format!("Y and the losses must hold {n} x {labels} values")));
        }
        if y.iter().any(|&v| v != 1.0 && v != -1.0) {
            return Err(Error::input("Y", "entries must be -1 or +1"));
        }
        if r.len() != labels * labels {
            return Err(Error::input("R", format!("must be {labels} x {labels}")));
        }
        for l in 0..labels {
            // An infinite diagonal entry would pass a test of the sign alone.
            if !(r[l * labels + l] > 0.0 && r[l * labels + l].is_finite()) {
                return Err(Error::input("R", "must be finite with a positive diagonal (positive definite)"));
            }
            for k in 0..l {
                let (a, b) = (r[l * labels + k], r[k * labels + l]);
                if !a.is_finite() || (a - b).abs() > 1e-12 * (1.0 + a.abs()) {
                    return Err(Error::input("R", "must be finite and symmetric"));
                }
            }
        }
        if !(c > 0.0 && c.is_finite()) {
            return Err(Error::param("C", format!("must be finite and > 0, got {c}")));
        }
        if delta_plus.iter().chain(delta_minus).any(|v| !v.is_finite())
            || delta_plus.iter().zip(delta_minus).any(|(p, m)| p > m)
        {
            return Err(Error::input("loss", "Δ must be finite with Δ(y_i, −y_il) ≥ Δ(y_i, y_il)"));
        }
        Ok(Self { n, labels, y, r, c, delta_plus, delta_minus, weights: None })
    }

    /// The problem with example i's cost C·w_i (n weights, finite, ≥ 0, not all 0); with
    /// None, the problem itself (every weight 1).
    pub fn with_weights(self, weights: Option<&'a [f64]>) -> Result<Self> {
        let Some(weights) = weights else { return Ok(self) };
        if weights.len() != self.n {
            return Err(Error::input(
                "sample_weight",
                format!("must hold one weight per example ({}), got {}", self.n, weights.len()),
            ));
        }
        if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) {
            return Err(Error::input("sample_weight", "must be finite and >= 0"));
        }
        if !weights.iter().any(|&w| w > 0.0) {
            return Err(Error::input("sample_weight", "every example has weight 0"));
        }
        if weights.iter().any(|&w| !(self.c * w).is_finite()) {
            return Err(Error::input("sample_weight", "C times a weight overflows"));
        }
        Ok(Self { weights: Some(weights), ..self })
    }

    /// C_i, the upper bound of example i's dual variables (C without weights).
    #[inline]
    pub fn cost(&self, i: usize) -> f64 {
        match self.weights {
            None => self.c,
            Some(w) => self.c * w[i],
        }
    }

    /// C_i of every example.
    pub fn costs(&self) -> Vec<f64> {
        (0..self.n).map(|i| self.cost(i)).collect()
    }

    /// α (N × L) within its box 0 ≤ α_il ≤ C_i (C times the weight), named `dual_coef`
    /// otherwise.
    pub(crate) fn check_dual(&self, alpha: &[f64]) -> Result<()> {
        let labels = self.labels;
        if alpha.len() != self.n * labels
            || alpha.iter().enumerate().any(|(idx, &a)| !(0.0..=self.cost(idx / labels)).contains(&a))
        {
            return Err(Error::input("dual_coef", format!("must hold {} x {labels} values in [0, C]", self.n)));
        }
        Ok(())
    }

    #[inline]
    pub fn r(&self, l: usize, k: usize) -> f64 {
        self.r[l * self.labels + k]
    }

    /// b_il = Δ⁻_il − Δ⁺_il, the linear term of the dual.
    #[inline]
    pub fn b(&self, idx: usize) -> f64 {
        self.delta_minus[idx] - self.delta_plus[idx]
    }

    /// (P, D) from the dual variables α and the training scores F (see the module docs).
    pub fn objectives(&self, alpha: &[f64], scores: &[f64]) -> (f64, f64) {
        let (mut fit, mut linear, mut loss) = (0.0, 0.0, 0.0);
        for idx in 0..self.n * self.labels {
            let yf = self.y[idx] * scores[idx];
            fit += alpha[idx] * yf;
            linear += self.b(idx) * alpha[idx];
            let hinge = self.delta_plus[idx].max(self.delta_minus[idx] - 2.0 * yf);
            // Without weights C multiplies the sum once, as ever (the same rounding).
            loss += match self.weights {
                None => hinge,
                Some(w) => w[idx / self.labels] * hinge,
            };
        }
        (fit + self.c * loss, linear - fit)
    }
}

/// The stopping tolerance of both solvers: every |projected gradient| below it.
pub(crate) fn check_tol(tol: f64) -> Result<()> {
    if tol > 0.0 && tol.is_finite() {
        Ok(())
    } else {
        Err(Error::param("tol", format!("must be finite and > 0, got {tol}")))
    }
}

/// The projected gradient (31) of a variable in [0, C] (C > 0): g clamped to [0, ∞) at
/// the lower bound, to (−∞, 0] at the upper one. Written as selects of the clamp's ends,
/// which compile to vector blends: the loops over whole labels that call it vectorise
/// (with the branches of an if-else chain they ran scalar).
#[inline(always)]
pub fn projected(alpha: f64, g: f64, c: f64) -> f64 {
    let lowest = if alpha <= 0.0 { 0.0 } else { f64::NEG_INFINITY };
    let highest = if alpha >= c { 0.0 } else { f64::INFINITY };
    let g = if g < lowest { lowest } else { g };
    if g > highest {
        highest
    } else {
        g
    }
}

/// An N × L row-major matrix as L × N (label-major).
pub(crate) fn label_major(m: &[f64], n: usize, labels: usize) -> Vec<f64> {
    let mut t = vec![0.0; n * labels];
    for (i, row) in m.chunks_exact(labels).enumerate() {
        for (k, &v) in row.iter().enumerate() {
            t[k * n + i] = v;
        }
    }
    t
}

/// The inverse of [`label_major`].
pub(crate) fn row_major(t: &[f64], n: usize, labels: usize) -> Vec<f64> {
    let mut m = vec![0.0; n * labels];
    for (k, column) in t.chunks_exact(n).enumerate() {
        for (i, &v) in column.iter().enumerate() {
            m[i * labels + k] = v;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::{projected, M3l};

    /// R is checked finite by the problem itself (a binding checked it for the CoCoA+
    /// partitions, and an infinite diagonal passed `M3l::new`).
    #[test]
    fn r_must_be_finite() {
        let (y, losses) = ([1.0, -1.0, -1.0, 1.0], [0.0; 4]);
        let plus_two = [2.0; 4];
        let ok = M3l::new(2, 2, &y, &[1.0, 0.5, 0.5, 1.0], 1.0, &losses, &plus_two);
        assert!(ok.is_ok());
        for r in [[f64::INFINITY, 0.0, 0.0, 1.0], [1.0, f64::NAN, f64::NAN, 1.0], [1.0, 0.0, f64::INFINITY, 1.0]] {
            let err = M3l::new(2, 2, &y, &r, 1.0, &losses, &plus_two).unwrap_err().to_string();
            assert!(err.starts_with("R: must be finite"), "{r:?}: {err}");
        }
    }

    /// Weights are checked and name `sample_weight`; example i's cost is C·w_i, in the box
    /// and in the primal's loss term.
    #[test]
    fn weights_make_the_cost_per_example() {
        let (y, plus, minus, r) = ([1.0, -1.0, -1.0, 1.0], [0.0; 4], [2.0; 4], [1.0, 0.0, 0.0, 1.0]);
        let plain = M3l::new(2, 2, &y, &r, 0.5, &plus, &minus).unwrap();
        for bad in [&[1.0, -1.0][..], &[1.0, f64::NAN], &[0.0, 0.0], &[1.0], &[1.0, f64::INFINITY]] {
            let err = plain.with_weights(Some(bad)).unwrap_err().to_string();
            assert!(err.starts_with("sample_weight:"), "{bad:?}: {err}");
        }
        let weights = [3.0, 0.0];
        let weighted = plain.with_weights(Some(&weights)).unwrap();
        assert_eq!((weighted.cost(0), weighted.cost(1), plain.cost(1)), (1.5, 0.0, 0.5));
        assert_eq!(plain.with_weights(None).unwrap().cost(1), 0.5);
        assert!(weighted.check_dual(&[1.5, 0.2, 0.0, 0.0]).is_ok());
        assert!(weighted.check_dual(&[0.0, 0.0, 0.1, 0.0]).is_err());
        // At F = 0 every hinge is 2: P = Σ_i C w_i · 2 L.
        let (primal, _) = weighted.objectives(&[0.0; 4], &[0.0; 4]);
        assert_eq!(primal, 0.5 * 3.0 * 2.0 * 2.0);
    }

    #[test]
    fn projected_gradient_is_the_clamp_of_31() {
        let c = 0.7;
        for alpha in [0.0, -0.0, 1e-300, 0.35, c - 1e-16, c, 0.9] {
            for g in [-2.5, -1e-300, -0.0, 0.0, 1e-300, 3.0, f64::INFINITY, f64::NEG_INFINITY] {
                let expected = if alpha <= 0.0 {
                    g.max(0.0)
                } else if alpha >= c {
                    g.min(0.0)
                } else {
                    g
                };
                // Signed zeros may differ; both are "no violation".
                assert!(projected(alpha, g, c) == expected, "alpha {alpha} g {g}");
            }
        }
    }
}
