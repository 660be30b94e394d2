//! Ranking at the top (Mácha, Adam, Šmídl 2020): the primal and dual problems of
//! TopPushK and Pat&Mat, their thresholds, and the objective values a solver reports.
//!
//! Examples carry a sign σ_i (+1 positive, −1 negative); the dual variables are
//! v = (α on the positives, β on the negatives) and the model is
//!   f(x) = Σ_i σ_i v_i k(x, x_i)                                         (15)
//! so ‖w‖² = Σ_i σ_i v_i f(x_i) and the paper's score vector (16) is s_i = σ_i f(x_i).
//!
//! Primal (surrogate l = truncated quadratic (2) or hinge (3), scale θ):
//!   TopPushK (5):  min ½‖w‖² + C Σ_{i∈P} l(t − f(x_i)),  t = mean of the K largest f on N
//!   Pat&Mat (11):  the same with t the surrogate top-τ quantile: Σ_{j∈N} l(f(x_j) − t) = nτ (10)
//!
//! Dual (Theorems 2.1, 2.2 with the conjugates (23), (24)); both require Σα = Σβ, v ≥ 0:
//!   D = −½‖w‖² + Σ_{i∈P} h(α_i) + G(β)
//!   h(a) = a/θ − a²/(4Cθ²) (quadratic), a/θ with a ≤ Cθ (hinge)
//!   TopPushK:  G = 0 with β_j ≤ Σα/K                                      (7c)
//!   Pat&Mat:   δ maximised out of (12a):
//!              quadratic  G = Σβ/θ − (√(nτ)/θ)‖β‖₂   (δ* = ‖β‖ / (2θ√(nτ)), eq. (32))
//!              hinge      G = Σβ/θ − (nτ/θ) max_j β_j  (δ* = max β / θ)
//! Weak duality P(w(v)) ≥ D(v) holds for every feasible v; the solver stops on the
//! relative gap (P − D) / max(|P|, |D|).

use crate::{Error, Result};

/// The surrogate of the 0-1 loss, l(0) = 1, with scale θ > 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surrogate {
    /// (max{0, 1 + θz})², eq. (2).
    Quadratic,
    /// max{0, 1 + θz}, eq. (3).
    Hinge,
}

impl Surrogate {
    pub fn value(self, z: f64, theta: f64) -> f64 {
        let r = (1.0 + theta * z).max(0.0);
        match self {
            Surrogate::Quadratic => r * r,
            Surrogate::Hinge => r,
        }
    }
}

/// How the threshold t is chosen from the negatives' scores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// t = mean of the K largest negative scores (K = 1: TopPush).
    TopPushK { k: usize },
    /// t = the surrogate top-τ quantile of the negatives, eq. (10).
    PatMat { tau: f64 },
}

/// A ranking-at-the-top problem: method, surrogate, scale θ and C.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtTop {
    pub method: Method,
    pub surrogate: Surrogate,
    pub scale: f64,
    pub c: f64,
}

/// Primal and dual objective at one iterate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtTopObjectives {
    pub primal: f64,
    pub dual: f64,
    /// The threshold t of the primal at this iterate.
    pub threshold: f64,
}

impl AtTopObjectives {
    /// (P − D) / max(|P|, |D|) (see [`crate::solvers::relative_gap`]).
    pub fn relative_gap(&self) -> f64 {
        crate::solvers::relative_gap(self.primal, self.dual)
    }
}

impl AtTop {
    /// The problem named by the estimators' options: `method` "toppushk" (TopPushK with
    /// `k`; K = 1 is TopPush) or "patmat" (Pat&Mat with `tau`), `surrogate` "quadratic" or
    /// "hinge", the scale θ and C (checked with the data by [`AtTop::check`]).
    pub fn named(method: &str, surrogate: &str, k: usize, tau: f64, scale: f64, c: f64) -> Result<Self> {
        let method = match method {
            "toppushk" => Method::TopPushK { k },
            "patmat" => Method::PatMat { tau },
            other => return Err(Error::param("method", format!("must be 'toppushk' or 'patmat', got {other:?}"))),
        };
        let surrogate = match surrogate {
            "quadratic" => Surrogate::Quadratic,
            "hinge" => Surrogate::Hinge,
            other => return Err(Error::param("surrogate", format!("must be 'quadratic' or 'hinge', got {other:?}"))),
        };
        Ok(AtTop { method, surrogate, scale, c })
    }

    /// Parameter and class-count checks (names as the estimators spell them).
    pub fn check(&self, n_pos: usize, n_neg: usize) -> Result<()> {
        if !(self.c > 0.0 && self.c.is_finite()) {
            return Err(Error::param("C", format!("must be finite and > 0, got {}", self.c)));
        }
        if !(self.scale > 0.0 && self.scale.is_finite()) {
            return Err(Error::param("scale", format!("must be finite and > 0, got {}", self.scale)));
        }
        if n_pos == 0 || n_neg == 0 {
            return Err(Error::input("y", format!("needs both classes, got {n_pos} positives and {n_neg} negatives")));
        }
        match self.method {
            Method::TopPushK { k } if k == 0 || k >= n_neg => {
                Err(Error::param("K", format!("must satisfy 1 <= K < number of negatives = {n_neg}, got {k}")))
            }
            Method::PatMat { tau } if !(tau > 0.0 && tau < 1.0) => {
                Err(Error::param("tau", format!("must lie in the open interval (0, 1), got {tau}")))
            }
            _ => Ok(()),
        }
    }

    /// n·τ for Pat&Mat (n = all training examples, as in (10)).
    pub(crate) fn quantile_mass(&self, n: usize) -> f64 {
        match self.method {
            Method::PatMat { tau } => n as f64 * tau,
            Method::TopPushK { .. } => 0.0,
        }
    }

    /// h(a) of one positive's dual variable, −C·l*(a/C), for a in its domain (a ≥ 0, and
    /// a ≤ Cθ for the hinge: the solver's bounds keep it there).
    pub(crate) fn positive_term(&self, a: f64) -> f64 {
        let theta = self.scale;
        match self.surrogate {
            Surrogate::Quadratic => a / theta - a * a / (4.0 * self.c * theta * theta),
            Surrogate::Hinge => a / theta,
        }
    }

    /// The threshold t of the primal from the negatives' scores `neg` (reordered).
    pub fn threshold(&self, neg: &mut [f64], n: usize) -> f64 {
        match self.method {
            Method::TopPushK { k } => {
                // `check` rejects k = 0; clamp anyway so this public method cannot panic.
                let k = k.clamp(1, neg.len().max(1));
                neg.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
                neg[..k].iter().sum::<f64>() / k as f64
            }
            Method::PatMat { .. } => {
                neg.sort_unstable_by(|a, b| b.total_cmp(a));
                surrogate_quantile(neg, self.surrogate, self.scale, self.quantile_mass(n))
            }
        }
    }

    /// P and D at v with decision values f (f_i = f(x_i)); `positive[i]` is σ_i = +1.
    pub fn objectives(&self, v: &[f64], f: &[f64], positive: &[bool]) -> AtTopObjectives {
        let n = v.len();
        let w2: f64 = (0..n).map(|i| if positive[i] { v[i] * f[i] } else { -v[i] * f[i] }).sum::<f64>().max(0.0);
        let mut neg: Vec<f64> = (0..n).filter(|&i| !positive[i]).map(|i| f[i]).collect();
        let t = self.threshold(&mut neg, n);
        let loss: f64 = (0..n).filter(|&i| positive[i]).map(|i| self.surrogate.value(t - f[i], self.scale)).sum();
        let primal = 0.5 * w2 + self.c * loss;
        let alpha_terms: f64 = (0..n).filter(|&i| positive[i]).map(|i| self.positive_term(v[i])).sum();
        let theta = self.scale;
        let beta = (0..n).filter(|&i| !positive[i]).map(|i| v[i]);
        let negative_terms = match self.method {
            Method::TopPushK { .. } => 0.0,
            Method::PatMat { .. } => {
                let nt = self.quantile_mass(n);
                let (sum, sq, max) = beta.fold((0.0, 0.0, 0.0f64), |(s, q, m), b| (s + b, q + b * b, m.max(b)));
                match self.surrogate {
                    Surrogate::Quadratic => sum / theta - nt.sqrt() / theta * sq.sqrt(),
                    Surrogate::Hinge => sum / theta - nt / theta * max,
                }
            }
        };
        AtTopObjectives { primal, dual: -0.5 * w2 + alpha_terms + negative_terms, threshold: t }
    }
}

/// The t solving Σ_j l(u_j − t) = mass (the surrogate quantile (10)) for scores `u`
/// sorted in decreasing order and mass > 0.
///
/// Term j is active while t < b_j = u_j + 1/θ; the left side is continuous and strictly
/// decreasing where positive, so the root is unique. Find the largest m with
/// F(b_m) = Σ_{j<m} l(u_j − b_m) ≤ mass: the root lies in [b_{m+1}, b_m] where exactly
/// the first m terms are active, and there the equation is linear (hinge) or quadratic
/// (truncated quadratic) in r = t − b_m ≤ 0, solved with the pivot b_m for accuracy.
pub(crate) fn surrogate_quantile(u: &[f64], surrogate: Surrogate, theta: f64, mass: f64) -> f64 {
    let inv = 1.0 / theta;
    // F(b_j) from running sums of y_i = u_i − u_0 ≤ 0 (differences b_i − b_j = y_i − y_j are
    // then formed from numbers of the scores' spread, not of their magnitude).
    let (mut s, mut q) = (0.0f64, 0.0f64);
    let mut m = 1;
    for (j, &uj) in u.iter().enumerate().skip(1) {
        let (yj, prev) = (uj - u[0], u[j - 1] - u[0]);
        s += prev;
        q += prev * prev;
        let jf = j as f64;
        let at = match surrogate {
            Surrogate::Hinge => theta * (s - jf * yj),
            Surrogate::Quadratic => theta * theta * (q - 2.0 * yj * s + jf * yj * yj).max(0.0),
        };
        if at > mass {
            break;
        }
        m = j + 1;
    }
    let pivot = u[m - 1] + inv;
    let (mut sx, mut qx) = (0.0, 0.0);
    for &uj in &u[..m] {
        let x = uj + inv - pivot;
        sx += x;
        qx += x * x;
    }
    let mf = m as f64;
    let r = match surrogate {
        Surrogate::Hinge => (sx - mass / theta) / mf,
        Surrogate::Quadratic => {
            let c = qx - mass / (theta * theta);
            (sx - (sx * sx - mf * c).max(0.0).sqrt()) / mf
        }
    };
    pivot + r.min(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_are_named() {
        let top = AtTop::named("toppushk", "hinge", 3, 0.2, 1.5, 2.0).unwrap();
        assert_eq!(top, AtTop { method: Method::TopPushK { k: 3 }, surrogate: Surrogate::Hinge, scale: 1.5, c: 2.0 });
        let pat = AtTop::named("patmat", "quadratic", 3, 0.2, 1.0, 1.0).unwrap();
        assert_eq!((pat.method, pat.surrogate), (Method::PatMat { tau: 0.2 }, Surrogate::Quadratic));
        let err = |m, s| AtTop::named(m, s, 1, 0.1, 1.0, 1.0).unwrap_err().to_string();
        assert!(err("toppush", "hinge").starts_with("method: must be 'toppushk' or 'patmat', got"));
        assert!(err("patmat", "square").starts_with("surrogate: must be 'quadratic' or 'hinge', got"));
    }

    /// The quantile solves its equation for both surrogates, whatever the mass.
    #[test]
    fn surrogate_quantile_solves_its_equation() {
        let mut u: Vec<f64> = (0..40).map(|i| ((i * 37 % 17) as f64 * 0.31).sin() * 3.0).collect();
        u.sort_unstable_by(|a, b| b.total_cmp(a));
        for surrogate in [Surrogate::Hinge, Surrogate::Quadratic] {
            for theta in [0.5, 1.0, 3.0] {
                for mass in [0.01, 0.7, 2.0, 9.0, 150.0] {
                    let t = surrogate_quantile(&u, surrogate, theta, mass);
                    let lhs: f64 = u.iter().map(|&x| surrogate.value(x - t, theta)).sum();
                    assert!((lhs - mass).abs() <= 1e-9 * mass.max(1.0), "{surrogate:?} θ={theta} mass={mass}: {lhs}");
                }
            }
        }
    }
}
