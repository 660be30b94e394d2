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
//! in the facade (L-BFGS over a factorisation C = A Bᵀ, then accelerated proximal
//! gradient on C, whose prox is the soft-thresholded SVD of the small k × k' matrix).
//! This file evaluates the smooth part
//!   f(C, b) = λ2 ‖C‖²_F + R_n(Z C Q_vᵀ + 1 bᵀ)
//! and its gradient, with Res = (P − Y)/n the residual of the scores:
//!   ∇_C f = 2λ2 C + Zᵀ Res Q_v,    ∇_b f = Resᵀ 1.
//! An evaluation is one fused pass over blocks of rows that stay in cache (the block's
//! scores Z_B (C Q_vᵀ) + 1bᵀ, its softmax residual, and its Z_Bᵀ Res_B and Res_Bᵀ 1):
//! 4·n·k·m flops and n·m exponentials, no n × m array in memory; X is not touched.

use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use super::multinomial::{block_loss_and_residual, check_labels, finite, BLOCK_ROWS};
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
    if k == 0 || kp == 0 {
        return Err(Error::input("span", "the bases must hold at least one vector each"));
    }
    check_labels(span.labels, m)?;
    if c.iter().chain(b).any(|v| !v.is_finite()) {
        return Err(Error::no_solution("subspace step", "non-finite weights or intercept"));
    }
    let shape = |e: ndarray::ShapeError| Error::input("span", e.to_string());
    let v = ArrayView2::from_shape((m, kp), span.v).map_err(shape)?;
    let c_view = ArrayView2::from_shape((k, kp), c).map_err(shape)?;
    // M = C Q_vᵀ (k × m): the scores of row i are z_i M + b.
    let weights = c_view.dot(&v.t());
    // One fused pass per block of rows, in cache: scores, softmax residual, and the
    // block's Zᵀ Res (k × m) and Resᵀ 1; the block sums are added in block order so the
    // value does not depend on the thread count.
    let inv_n = 1.0 / n as f64;
    let blocks: Vec<(f64, Vec<f64>)> = span
        .z
        .par_chunks(BLOCK_ROWS * k)
        .zip(span.labels.par_chunks(BLOCK_ROWS))
        .map(|(z_rows, labels)| -> Result<(f64, Vec<f64>)> {
            let rows = labels.len();
            let z_block = ArrayView2::from_shape((rows, k), z_rows).map_err(shape)?;
            let mut scores = Array2::from_shape_fn((rows, m), |(_, l)| b[l]);
            general_mat_mul(1.0, &z_block, &weights, 1.0, &mut scores);
            let mut residual = Array2::zeros((rows, m));
            let (scores, residual_rows) = (scores.as_slice(), residual.as_slice_mut());
            let (Some(scores), Some(residual_rows)) = (scores, residual_rows) else {
                return Err(Error::input("span", "block arrays must be contiguous"));
            };
            let loss = block_loss_and_residual(scores, labels, m, inv_n, residual_rows);
            // [Z_Bᵀ Res_B (k × m) ; Res_Bᵀ 1 (1 × m)]
            let mut sums = Array2::zeros((k + 1, m));
            general_mat_mul(1.0, &z_block.t(), &residual, 0.0, &mut sums.slice_mut(ndarray::s![..k, ..]));
            sums.row_mut(k).assign(&residual.sum_axis(ndarray::Axis(0)));
            Ok((loss, sums.into_raw_vec_and_offset().0))
        })
        .collect::<Result<_>>()?;
    let mut loss = 0.0;
    let mut sums = vec![0.0; (k + 1) * m];
    for (block_loss, block_sums) in &blocks {
        loss += block_loss;
        sums.iter_mut().zip(block_sums).for_each(|(s, &v)| *s += v);
    }
    let loss = finite(loss * inv_n, "loss")?;
    // ∇_C f = 2λ2 C + (Zᵀ Res) Q_v.
    let z_res = ArrayView2::from_shape((k, m), &sums[..k * m]).map_err(shape)?;
    let mut grad_c = c_view.to_owned() * (2.0 * span.lambda_fro);
    general_mat_mul(1.0, &z_res, &v, 1.0, &mut grad_c);
    let value = span.lambda_fro * c.iter().map(|x| x * x).sum::<f64>() + loss;
    Ok((value, grad_c.into_raw_vec_and_offset().0, sums[k * m..].to_vec()))
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
