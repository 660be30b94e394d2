//! The kernel functions k(x, y), in scikit-learn's (and LIBSVM's) parametrisation:
//!
//! * `Linear`:  k(x, y) = ⟨x, y⟩
//! * `Rbf`:     k(x, y) = exp(−γ‖x − y‖²),                γ > 0
//! * `Poly`:    k(x, y) = (γ⟨x, y⟩ + coef0)^degree,         γ > 0
//!
//! All three depend on x and y only through ⟨x, y⟩, ‖x‖² and ‖y‖², so the kernel
//! sources compute inner products (the expensive part, blocked and parallel) and finish
//! each entry with [`KernelFunction::from_dot`]. The RBF distance is
//! ‖x‖² + ‖y‖² − 2⟨x, y⟩, clamped at 0 (it can round to a tiny negative number).
//!
//! Linear and RBF kernels are positive semidefinite; `Poly` is for integer degrees and
//! coef0 ≥ 0 (with coef0 < 0 it may not be, as in scikit-learn, whose checks we mirror).

use super::vexp::exp_nonpos_slice;
use crate::{Error, Result};

/// A kernel function (see the module docs for the formulas).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelFunction {
    Linear,
    Rbf { gamma: f64 },
    Poly { gamma: f64, degree: u32, coef0: f64 },
}

/// A kernel as an estimator sets it: the function by the `kernel` option's name with its
/// parameters ([`KernelFunction::named`]), and the column cache's size in MB.
#[derive(Debug, Clone)]
pub struct KernelSettings {
    pub kernel: String,
    pub gamma: f64,
    pub degree: u32,
    pub coef0: f64,
    pub cache_size: f64,
}

impl KernelSettings {
    /// The kernel function, or None for a precomputed Gram matrix.
    pub fn function(&self) -> Result<Option<KernelFunction>> {
        KernelFunction::named(&self.kernel, self.gamma, self.degree, self.coef0)
    }
}

impl KernelFunction {
    /// The kernel named by the `kernel` option ("linear", "rbf", "poly") with
    /// scikit-learn's parameters, checked; None for "precomputed" (the caller's Gram
    /// matrix, no function).
    pub fn named(name: &str, gamma: f64, degree: u32, coef0: f64) -> Result<Option<Self>> {
        let f = match name {
            "precomputed" => return Ok(None),
            "linear" => KernelFunction::Linear,
            "rbf" => KernelFunction::Rbf { gamma },
            "poly" => KernelFunction::Poly { gamma, degree, coef0 },
            other => {
                let expected = "must be 'linear', 'rbf', 'poly' or 'precomputed'";
                return Err(Error::param("kernel", format!("{expected}, got {other:?}")));
            }
        };
        f.check()?;
        Ok(Some(f))
    }

    /// Checks the parameters: γ finite and > 0, coef0 finite, degree ≤ i32::MAX.
    pub fn check(&self) -> Result<()> {
        let gamma_ok = |gamma: f64| {
            if gamma > 0.0 && gamma.is_finite() {
                Ok(())
            } else {
                Err(Error::param("gamma", format!("must be finite and > 0, got {gamma}")))
            }
        };
        match *self {
            KernelFunction::Linear => Ok(()),
            KernelFunction::Rbf { gamma } => gamma_ok(gamma),
            KernelFunction::Poly { gamma, degree, coef0 } => {
                gamma_ok(gamma)?;
                if !coef0.is_finite() {
                    return Err(Error::param("coef0", format!("must be finite, got {coef0}")));
                }
                if i32::try_from(degree).is_err() {
                    return Err(Error::param("degree", format!("must be at most {}, got {degree}", i32::MAX)));
                }
                Ok(())
            }
        }
    }

    /// k(x, y) from ⟨x, y⟩ = `dot`, ‖x‖² = `sq_x` and ‖y‖² = `sq_y`
    /// (= [`Self::finish`] of [`Self::prepare`]: the same value as the kernel sources).
    pub fn from_dot(&self, dot: f64, sq_x: f64, sq_y: f64) -> f64 {
        let mut v = [self.prepare(dot, sq_x, sq_y)];
        self.finish(&mut v);
        v[0]
    }

    /// First stage of an entry, per value: Linear ⟨x, y⟩; RBF −γ·max(0, ‖x‖² + ‖y‖² −
    /// 2⟨x, y⟩); Poly γ⟨x, y⟩ + coef0.
    #[inline(always)]
    pub fn prepare(&self, dot: f64, sq_x: f64, sq_y: f64) -> f64 {
        match *self {
            KernelFunction::Linear => dot,
            KernelFunction::Rbf { gamma } => -gamma * (sq_x + sq_y - 2.0 * dot).max(0.0),
            KernelFunction::Poly { gamma, coef0, .. } => gamma * dot + coef0,
        }
    }

    /// Second stage, in place over a slice of [`Self::prepare`]d values: identity, exp
    /// (vectorised, see `vexp.rs`), or the integer power.
    pub fn finish(&self, v: &mut [f64]) {
        match *self {
            KernelFunction::Linear => {}
            KernelFunction::Rbf { .. } => exp_nonpos_slice(v),
            // `check` guarantees degree fits an i32.
            KernelFunction::Poly { degree, .. } => v.iter_mut().for_each(|x| *x = x.powi(degree as i32)),
        }
    }

    /// k(x, y) for two dense vectors (a reference evaluation; the sources never use it).
    pub fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(u, v)| u * v).sum::<f64>();
        match *self {
            KernelFunction::Rbf { gamma } => {
                (-gamma * x.iter().zip(y).map(|(u, v)| (u - v) * (u - v)).sum::<f64>()).exp()
            }
            _ => self.from_dot(dot(x, y), dot(x, x), dot(y, y)),
        }
    }

    /// Short name (`"linear"`, `"rbf"`, `"poly"`), as scikit-learn spells the `kernel` argument.
    pub fn name(&self) -> &'static str {
        match self {
            KernelFunction::Linear => "linear",
            KernelFunction::Rbf { .. } => "rbf",
            KernelFunction::Poly { .. } => "poly",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked() {
        assert!(KernelFunction::Linear.check().is_ok());
        assert!(KernelFunction::Rbf { gamma: 0.5 }.check().is_ok());
        for gamma in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(KernelFunction::Rbf { gamma }.check().is_err());
            assert!(KernelFunction::Poly { gamma, degree: 2, coef0: 1.0 }.check().is_err());
        }
        assert!(KernelFunction::Poly { gamma: 1.0, degree: 3, coef0: f64::NAN }.check().is_err());
        assert!(KernelFunction::Poly { gamma: 1.0, degree: u32::MAX, coef0: 0.0 }.check().is_err());
        assert!(KernelFunction::Poly { gamma: 1.0, degree: 0, coef0: 0.0 }.check().is_ok());
    }

    #[test]
    fn kernels_are_named_and_checked() {
        assert_eq!(KernelFunction::named("precomputed", f64::NAN, 0, 0.0), Ok(None));
        assert_eq!(KernelFunction::named("linear", 0.0, 3, 1.0), Ok(Some(KernelFunction::Linear)));
        assert_eq!(KernelFunction::named("rbf", 0.5, 3, 1.0), Ok(Some(KernelFunction::Rbf { gamma: 0.5 })));
        let poly = KernelFunction::Poly { gamma: 2.0, degree: 4, coef0: 0.5 };
        assert_eq!(KernelFunction::named("poly", 2.0, 4, 0.5), Ok(Some(poly)));
        let err = KernelFunction::named("gaussian", 1.0, 3, 1.0).unwrap_err().to_string();
        assert!(err.starts_with("kernel: must be 'linear', 'rbf', 'poly' or 'precomputed'"), "{err}");
        assert!(KernelFunction::named("rbf", -1.0, 3, 1.0).unwrap_err().to_string().starts_with("gamma:"));
    }

    #[test]
    fn formulas() {
        let (x, y) = ([1.0, 2.0, -1.0], [0.5, -1.0, 3.0]);
        assert_eq!(KernelFunction::Linear.eval(&x, &y), 0.5 - 2.0 - 3.0);
        let rbf = KernelFunction::Rbf { gamma: 0.1 };
        let d2: f64 = 0.25 + 9.0 + 16.0;
        assert!((rbf.eval(&x, &y) - (-0.1 * d2).exp()).abs() < 1e-15);
        assert!((rbf.from_dot(-4.5, 6.0, 10.25) - (-0.1 * d2).exp()).abs() < 1e-15);
        assert_eq!(rbf.from_dot(1.0, 1.0, 1.0 - 1e-17), 1.0); // clamped distance
        let poly = KernelFunction::Poly { gamma: 0.5, degree: 3, coef0: 1.0 };
        assert!((poly.eval(&x, &y) - (0.5f64 * -4.5 + 1.0).powi(3)).abs() < 1e-15);
    }
}
