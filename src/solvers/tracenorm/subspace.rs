//! The subspace step of rank-one descent (Harchaoui et al. §4.1, "subspace
//! acceleration"), over the span of the atoms found so far.
//!
//! The paper's restricted problem (8) re-optimises the weights θ ≥ 0 of the atoms
//! u_j v_jᵀ. We optimise over the larger set {Q_u C Q_vᵀ}, Q_u (d × k) and Q_v (m × k')
//! orthonormal bases of span{u_j} and span{v_j} and C (k × k') free: every Σ θ_j u_j v_jᵀ
//! is in it, and it also lets W rotate within the span, which the weights alone cannot
//! (rank-one descent with (8) alone crawls near the optimum). With orthonormal bases
//! ‖W‖_σ,1 = ‖C‖_σ,1 and ‖W‖_F = ‖C‖_F, so the step solves
//!   min_{C, b} λ1 ‖C‖_σ,1 + λ2 ‖C‖²_F + R_n(Z C Q_vᵀ + 1 bᵀ),    Z = X Q_u (n × k),
//! by accelerated proximal gradient in the facade (the prox is the soft-thresholded SVD
//! of the small k × k' matrix C). This file evaluates the smooth part
//!   f(C, b) = λ2 ‖C‖²_F + R_n(Z C Q_vᵀ + 1 bᵀ)
//! and its gradient, with Res = (P − Y)/n the residual of the scores:
//!   ∇_C f = 2λ2 C + Zᵀ Res Q_v,    ∇_b f = Resᵀ 1.
//! An evaluation costs three thin products (n × k × k', n × k' × m, and back) and one
//! pass of the loss; X is not touched.

use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};

use super::multinomial::{loss_and_residual, Scores};
use crate::{Error, Result};

/// The fixed data of one subspace solve.
#[derive(Debug, Clone, Copy)]
pub struct Span<'a> {
    /// Z = X Q_u, n × k.
    pub z: &'a [f64],
    /// Q_v, m × k'.
    pub v: &'a [f64],
    pub k: usize,
    pub k_prime: usize,
    pub labels: &'a [u32],
    pub m: usize,
    pub lambda_fro: f64,
}

/// f(C, b), ∇_C f (k × k'), ∇_b f (m).
pub fn span_objective(span: &Span<'_>, c: &[f64], b: &[f64]) -> Result<(f64, Vec<f64>, Vec<f64>)> {
    let (n, m, k, kp) = (span.labels.len(), span.m, span.k, span.k_prime);
    if span.z.len() != n * k || span.v.len() != m * kp || c.len() != k * kp {
        return Err(Error::input("span", format!("Z must be {n} x {k}, Q_v {m} x {kp} and C {k} x {kp}")));
    }
    if b.len() != m {
        return Err(Error::input("intercept", format!("must hold {m} values")));
    }
    if c.iter().chain(b).any(|v| !v.is_finite()) {
        return Err(Error::no_solution("subspace step", "non-finite weights or intercept"));
    }
    let shape = |e: ndarray::ShapeError| Error::input("span", e.to_string());
    let z = ArrayView2::from_shape((n, k), span.z).map_err(shape)?;
    let v = ArrayView2::from_shape((m, kp), span.v).map_err(shape)?;
    let c_view = ArrayView2::from_shape((k, kp), c).map_err(shape)?;
    let mut zc = Array2::zeros((n, kp));
    general_mat_mul(1.0, &z, &c_view, 0.0, &mut zc);
    let mut scores = Array2::from_shape_fn((n, m), |(_, l)| b[l]);
    general_mat_mul(1.0, &zc, &v.t(), 1.0, &mut scores);
    let scores = scores.into_raw_vec_and_offset().0;
    let mut residual = vec![0.0; n * m];
    let loss = loss_and_residual(&Scores::new(&scores, m, span.labels)?, &mut residual)?;
    let residual = ArrayView2::from_shape((n, m), &residual).map_err(shape)?;
    let mut res_v = Array2::zeros((n, kp));
    general_mat_mul(1.0, &residual, &v, 0.0, &mut res_v);
    let mut grad_c = c_view.to_owned() * (2.0 * span.lambda_fro);
    general_mat_mul(1.0, &z.t(), &res_v, 1.0, &mut grad_c);
    let value = span.lambda_fro * c.iter().map(|x| x * x).sum::<f64>() + loss;
    let grad_b = residual.sum_axis(ndarray::Axis(0)).to_vec();
    Ok((value, grad_c.into_raw_vec_and_offset().0, grad_b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn gradient_matches_finite_differences() {
        let (n, m, k, kp) = (300, 4, 3, 2);
        let mut rng = SplitMix64::new(9);
        let z: Vec<f64> = (0..n * k).map(|_| rng.next_f64() - 0.5).collect();
        let v: Vec<f64> = (0..m * kp).map(|_| rng.next_f64() - 0.5).collect();
        let labels: Vec<u32> = (0..n).map(|i| (i * 7 % m) as u32).collect();
        let span = Span { z: &z, v: &v, k, k_prime: kp, labels: &labels, m, lambda_fro: 0.1 };
        let c: Vec<f64> = (0..k * kp).map(|_| 2.0 * rng.next_f64() - 1.0).collect();
        let b = vec![0.1, -0.2, 0.0, 0.3];
        let (_, g_c, g_b) = span_objective(&span, &c, &b).unwrap();
        let h = 1e-6;
        for j in 0..k * kp {
            let (mut up, mut down) = (c.clone(), c.clone());
            up[j] += h;
            down[j] -= h;
            let fd = (span_objective(&span, &up, &b).unwrap().0 - span_objective(&span, &down, &b).unwrap().0) / (2.0 * h);
            assert!((fd - g_c[j]).abs() < 1e-8, "{fd} vs {}", g_c[j]);
        }
        for l in 0..m {
            let (mut up, mut down) = (b.clone(), b.clone());
            up[l] += h;
            down[l] -= h;
            let fd = (span_objective(&span, &c, &up).unwrap().0 - span_objective(&span, &c, &down).unwrap().0) / (2.0 * h);
            assert!((fd - g_b[l]).abs() < 1e-8);
        }
        assert!(span_objective(&span, &c[1..], &b).is_err());
    }
}
