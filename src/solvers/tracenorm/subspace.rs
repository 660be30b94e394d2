//! The subspace step of rank-one descent (Harchaoui et al. §4.1, "subspace
//! acceleration"), over the span of the atoms found so far.
//!
//! The paper's restricted problem (8) re-optimises the weights θ ≥ 0 of the atoms
//! u_j v_jᵀ. We optimise over the larger set {Q_u C Q_vᵀ}, Q_u (d × k) and Q_v (m × k')
//! orthonormal bases of span{u_j} and span{v_j} (widened by the atoms' rotation
//! directions, see `descent.rs`) and C (k × k') free: every Σ θ_j u_j v_jᵀ is in it, and it
//! also lets W rotate within the span, which the weights alone cannot (rank-one descent
//! with (8) alone crawls near the optimum). With orthonormal bases ‖W‖_σ,1 = ‖C‖_σ,1 and
//! ‖W‖_F = ‖C‖_F, so the step solves
//!   min_{C, b} λ1 ‖C‖_σ,1 + λ2 ‖C‖²_F + R_n(Z C Q_vᵀ + 1 bᵀ),    Z = X Q_u (n × k),
//! without touching X again. [`span_objective`] evaluates the smooth part
//!   f(C, b) = λ2 ‖C‖²_F + R_n(Z C Q_vᵀ + 1 bᵀ)
//! and its gradient, with Res = (P − Y)/n the residual of the scores (rows c_i (p_i − y_i)
//! with sample weights, `multinomial.rs`):
//!   ∇_C f = 2λ2 C + Zᵀ Res Q_v,    ∇_b f = Resᵀ 1.
//! An evaluation is one fused pass over blocks of rows that stay in cache (the block's
//! scores Z_B (C Q_vᵀ) + 1bᵀ, its softmax residual, and its Z_Bᵀ Res_B and Res_Bᵀ 1):
//! 4·n·k·m flops and n·m exponentials, no n × m array in memory.
//!
//! [`span_step`] solves it in two stages, both on f and ∇f:
//!
//! 1. L-BFGS (`lbfgs.rs`) over a factorisation C = A Bᵀ with r = #atoms columns, using
//!    ‖C‖_σ,1 = min_{A Bᵀ = C} ½(‖A‖²_F + ‖B‖²_F) (Srebro, Rennie, Jaakkola, NIPS 2004): the
//!    problem becomes smooth, and a quasi-Newton method gets close in tens of evaluations
//!    where proximal gradient needs hundreds (measured on the benchmark: 229 against 893
//!    evaluations per fit). It starts from the balanced factors A = Q_uᵀU diag√θ,
//!    B = Q_vᵀV diag√θ and stops at ‖∇‖_∞ ≤ gtol/10.
//! 2. Accelerated proximal gradient (FISTA, Beck & Teboulle 2009, with the gradient restart
//!    of O'Donoghue & Candès 2015) on C itself (the convex problem) from there, until the
//!    gradient mapping is below gtol: it sets exactly to zero the singular values that
//!    should vanish (the factorised problem only shrinks them) and certifies the result,
//!    as stage 1 is non-convex and could stop short. The prox of λ1‖·‖_σ,1 is the
//!    soft-thresholded SVD of the small k × k' matrix (`small.rs`). Its first iteration is at
//!    stage 1's result, where stage 1's last evaluation (its accepted step) already left ∇f:
//!    that gradient is taken over, one evaluation fewer per step (of about 11 per point of
//!    the benchmark's path, whose stage 2 usually stops at its first iteration).
//!
//! With an intercept, both stages run on the centred Z̃ = Z − 1z̄ᵀ: Z C Q_vᵀ + 1bᵀ =
//! Z̃ C Q_vᵀ + 1(b + Q_v Cᵀz̄)ᵀ, the same problem with the mean moved into the unpenalised
//! intercept. Uncentred, a large mean couples C with b: the L-BFGS stalls and the prox step
//! 1/‖Z‖² shrinks (features with an offset of 50 times their spread ran to max_iter far
//! from the optimum). The step returns W = Q_u C Q_vᵀ as its singular pairs (the rank can
//! drop).

use ndarray::linalg::general_mat_mul;
use ndarray::{concatenate, Array1, Array2, ArrayView2, Axis};
use rayon::prelude::*;

use super::descent::Atoms;
use super::lbfgs;
use super::multinomial::{
    block_loss_and_residual, check_labels, check_weights_len, finite, scale_total, Penalties, BLOCK_ROWS,
};
use super::products::Products;
use super::small::{columns, orthonormal_basis, orthonormal_extension, spectral_norm, thin_svd};
use crate::solvers::Monitor;
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
    /// The rows' normalised weights c_i (None: the plain mean).
    pub weights: Option<&'a [f64]>,
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
    check_weights_len(span.weights, n)?;
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
        .enumerate()
        .map(|(block, (z_rows, labels))| -> Result<(f64, Vec<f64>)> {
            let rows = labels.len();
            let first = block * BLOCK_ROWS;
            let row_weights = span.weights.map(|c| &c[first..first + rows]);
            let z_block = ArrayView2::from_shape((rows, k), z_rows).map_err(shape)?;
            let mut scores = Array2::from_shape_fn((rows, m), |(_, l)| b[l]);
            general_mat_mul(1.0, &z_block, &weights, 1.0, &mut scores);
            let mut residual = Array2::zeros((rows, m));
            let (scores, residual_rows) = (scores.as_slice(), residual.as_slice_mut());
            let (Some(scores), Some(residual_rows)) = (scores, residual_rows) else {
                return Err(Error::input("span", "block arrays must be contiguous"));
            };
            let loss = block_loss_and_residual(scores, labels, m, (inv_n, row_weights), residual_rows);
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
    let loss = finite(scale_total(loss, inv_n, span.weights), "loss")?;
    // ∇_C f = 2λ2 C + (Zᵀ Res) Q_v.
    let z_res = ArrayView2::from_shape((k, m), &sums[..k * m]).map_err(shape)?;
    let mut grad_c = c_view.to_owned() * (2.0 * span.lambda_fro);
    general_mat_mul(1.0, &z_res, &v, 1.0, &mut grad_c);
    let value = span.lambda_fro * c.iter().map(|x| x * x).sum::<f64>() + loss;
    Ok((value, grad_c.into_raw_vec_and_offset().0, sums[k * m..].to_vec()))
}

/// Orthonormal bases Q_u (d × k), Q_v (m × k') of a subspace step, and Z = X Q_u.
#[derive(Debug, Clone)]
pub struct Bases {
    pub qu: Array2<f64>,
    pub qv: Array2<f64>,
    pub z: Array2<f64>,
}

/// `a` with each nonzero column scaled to unit length (zero columns dropped).
fn unit_columns(a: ArrayView2<'_, f64>) -> Array2<f64> {
    let keep: Vec<usize> = (0..a.ncols()).filter(|&j| a.column(j).dot(&a.column(j)) > 0.0).collect();
    let mut out = a.select(Axis(1), &keep);
    for mut column in out.columns_mut() {
        let norm = column.dot(&column).sqrt();
        column /= norm;
    }
    out
}

/// X·B as an n × k array (no pass over X for k = 0).
pub(crate) fn times<P: Products + ?Sized>(x: &P, b: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
    let (n, k) = (x.n_rows(), b.ncols());
    if k == 0 {
        return Ok(Array2::zeros((n, 0)));
    }
    let b = b.as_standard_layout();
    let out = x.times(b.as_slice().ok_or_else(|| Error::input("B", "must be contiguous"))?, k)?;
    Array2::from_shape_vec((n, k), out).map_err(|e| Error::input("X", e.to_string()))
}

impl Bases {
    /// The bases of span(U) + span(rotations_u) and span(V) + span(rotations_v), and Z = X Q_u
    /// (one pass over X).
    pub fn of<P: Products + ?Sized>(
        x: &P,
        (u, v): (ArrayView2<'_, f64>, ArrayView2<'_, f64>),
        (rotations_u, rotations_v): (ArrayView2<'_, f64>, ArrayView2<'_, f64>),
    ) -> Result<Self> {
        let join = |a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>| -> Result<Array2<f64>> {
            let b = unit_columns(b);
            concatenate(Axis(1), &[a, b.view()]).map_err(|e| Error::input("span", e.to_string()))
        };
        let qu = orthonormal_basis(join(u, rotations_u)?.view())?;
        let qv = orthonormal_basis(join(v, rotations_v)?.view())?;
        let z = times(x, qu.view())?;
        Ok(Self { qu, qv, z })
    }

    /// [`Bases::of`] the atoms `known` and the atoms (u, v), reusing the known atoms' Z = X U
    /// when U has orthonormal columns (W's singular pairs, as every subspace step and every
    /// converged fit returns them): Q_u = [U, Q₂] with Q₂ a basis of the other directions'
    /// part outside span(U), so only X Q₂ is a new pass over X (at a point of a path, about
    /// half of Q_u is the previous point's atoms).
    pub fn around<P: Products + ?Sized>(
        x: &P,
        known: &Atoms,
        (u, v): (ArrayView2<'_, f64>, ArrayView2<'_, f64>),
        (rotations_u, rotations_v): (ArrayView2<'_, f64>, ArrayView2<'_, f64>),
    ) -> Result<Self> {
        let join = |a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>| {
            concatenate(Axis(1), &[a, b]).map_err(|e| Error::input("span", e.to_string()))
        };
        let (all_u, all_v) = (join(known.u.view(), u)?, join(known.v.view(), v)?);
        let gram = known.u.t().dot(&known.u) - Array2::<f64>::eye(known.u.ncols());
        if known.z.dim() != (x.n_rows(), known.u.ncols()) || gram.iter().any(|e| e.abs() > 1e-12) {
            return Self::of(x, (all_u.view(), all_v.view()), (rotations_u, rotations_v));
        }
        let qv = orthonormal_basis(join(all_v.view(), unit_columns(rotations_v).view())?.view())?;
        let others = join(unit_columns(u).view(), unit_columns(rotations_u).view())?;
        let outside = orthonormal_extension(known.u.view(), others.view())?;
        let z = join(known.z.view(), times(x, outside.view())?.view())?;
        Ok(Self { qu: join(known.u.view(), outside.view())?, qv, z })
    }
}

/// The problem and precision of one subspace step.
#[derive(Debug, Clone, Copy)]
pub struct StepOptions {
    pub penalties: Penalties,
    pub fit_intercept: bool,
    /// The gradient mapping of stage 2 at which the step stops.
    pub gtol: f64,
    /// Iterations of each stage at most.
    pub max_steps: usize,
}

/// The subspace step from `atoms` (which lie in the bases' span): min over C, b of
/// λ1‖C‖_σ,1 + λ2‖C‖²_F + R_n(Z C Q_vᵀ + 1bᵀ) (module docs). Returns W = Q_u C Q_vᵀ as its
/// singular pairs, with their Z = X u_j from the bases' Z. A stop request (Ctrl-C) ends the
/// stages early with the point reached.
pub fn span_step<M: Monitor + ?Sized>(
    atoms: &Atoms,
    bases: &Bases,
    (labels, weights): (&[u32], Option<&[f64]>),
    options: &StepOptions,
    monitor: &mut M,
) -> Result<Atoms> {
    if atoms.theta.is_empty() {
        return Ok(atoms.clone());
    }
    let k = bases.z.ncols();
    let m = bases.qv.nrows();
    let mean = if options.fit_intercept {
        bases.z.mean_axis(Axis(0)).unwrap_or_else(|| Array1::zeros(k))
    } else {
        Array1::zeros(k)
    };
    let centred = (&bases.z - &mean).as_standard_layout().into_owned();
    let qv = bases.qv.as_standard_layout().into_owned();
    let span = Span {
        z: centred.as_slice().ok_or_else(|| Error::input("span", "Z must be contiguous"))?,
        v: qv.as_slice().ok_or_else(|| Error::input("span", "Q_v must be contiguous"))?,
        k,
        k_prime: qv.ncols(),
        labels,
        weights,
        m,
        lambda_fro: options.penalties.fro,
    };
    // The coefficients of the atoms in the bases, and the start's intercept on the centred Z.
    let (a_u, a_v) = (bases.qu.t().dot(&atoms.u), bases.qv.t().dot(&atoms.v));
    let shift = (&mean.dot(&a_u) * &atoms.theta).dot(&atoms.v.t());
    let stage1 = factored_descent(&span, (&a_u, &a_v), &atoms.theta, &(&atoms.b + &shift), options, monitor)?;
    let (c, b) = proximal_descent(&span, &centred, stage1, options, monitor)?;
    let b = &b - &mean.dot(&c).dot(&bases.qv.t());
    if c.iter().chain(b.iter()).any(|v| !v.is_finite()) {
        return Err(Error::no_solution("subspace step", "non-finite weights"));
    }
    let svd = thin_svd(c.view())?;
    // The prox leaves exact zeros; re-factorising C shows them as rounding (≈1e-16 · the
    // largest), which must not become atoms.
    let keep = svd.above(1e-12);
    let (p, q) = (columns(&svd.u, &keep), columns(&svd.v, &keep));
    Ok(Atoms {
        u: bases.qu.dot(&p),
        v: bases.qv.dot(&q),
        theta: keep.iter().map(|&j| svd.s[j]).collect(),
        b,
        z: bases.z.dot(&p),
    })
}

/// (∇_C f, ∇_b f) at a point (C, b) of a subspace step.
type SpanGradient = (Vec<f64>, Vec<f64>);

/// Stage 1: L-BFGS on ½λ1(‖A‖² + ‖B‖²) + f(A Bᵀ, b) from A = a_u diag√θ, B = a_v diag√θ;
/// returns (C, b) and, when the last evaluation was at that point (the usual end: a line
/// search's accepted step), ∇f there, which stage 2's first iteration would recompute.
fn factored_descent<M: Monitor + ?Sized>(
    span: &Span<'_>,
    (a_u, a_v): (&Array2<f64>, &Array2<f64>),
    theta: &Array1<f64>,
    b: &Array1<f64>,
    options: &StepOptions,
    monitor: &mut M,
) -> Result<(Array2<f64>, Array1<f64>, Option<SpanGradient>)> {
    let (k, kp, r, m) = (span.k, span.k_prime, theta.len(), span.m);
    let root = theta.mapv(f64::sqrt);
    let (sizes_a, sizes_b) = (k * r, kp * r);
    let split = |x: &[f64]| -> (Array2<f64>, Array2<f64>, Array1<f64>) {
        let a = Array2::from_shape_vec((k, r), x[..sizes_a].to_vec()).unwrap_or_else(|_| Array2::zeros((k, r)));
        let bb = Array2::from_shape_vec((kp, r), x[sizes_a..sizes_a + sizes_b].to_vec())
            .unwrap_or_else(|_| Array2::zeros((kp, r)));
        let intercept = if options.fit_intercept { Array1::from(x[sizes_a + sizes_b..].to_vec()) } else { b.clone() };
        (a, bb, intercept)
    };
    let lambda_trace = options.penalties.trace;
    // The last point evaluated, with ∇_C f and ∇_b f there.
    let mut last: Option<(Vec<f64>, SpanGradient)> = None;
    let value_and_gradient = |x: &[f64]| -> Result<lbfgs::Evaluation> {
        if monitor.should_stop() {
            return Ok(None);
        }
        let (a, bb, intercept) = split(x);
        let c = a.dot(&bb.t()).as_standard_layout().into_owned();
        let (value, g_c, g_b) = span_objective(span, c.as_slice().unwrap_or(&[]), intercept.as_slice().unwrap_or(&[]))?;
        let g_c = Array2::from_shape_vec((k, kp), g_c).map_err(|e| Error::input("span", e.to_string()))?;
        let value =
            value + 0.5 * lambda_trace * (a.iter().map(|v| v * v).sum::<f64>() + bb.iter().map(|v| v * v).sum::<f64>());
        let grad_a = g_c.dot(&bb) + &a * lambda_trace;
        let grad_b = g_c.t().dot(&a) + &bb * lambda_trace;
        let mut gradient: Vec<f64> = grad_a.iter().chain(grad_b.iter()).copied().collect();
        if options.fit_intercept {
            gradient.extend_from_slice(&g_b);
        }
        last = Some((x.to_vec(), (g_c.into_raw_vec_and_offset().0, g_b)));
        Ok(Some((value, gradient)))
    };
    let start_a = a_u * &root;
    let start_b = a_v * &root;
    let mut x0: Vec<f64> = start_a.iter().chain(start_b.iter()).copied().collect();
    if options.fit_intercept {
        x0.extend(b.iter());
    }
    debug_assert_eq!(x0.len(), sizes_a + sizes_b + if options.fit_intercept { m } else { 0 });
    let lbfgs_options =
        lbfgs::Options { memory: 20, gtol: options.gtol / 10.0, max_iter: options.max_steps, max_evals: 15_000 };
    let result = lbfgs::minimize(value_and_gradient, x0, &lbfgs_options)?;
    let (a, bb, intercept) = split(&result.x);
    // The same x gives the same C and b bit for bit, so the gradient is exactly stage 2's.
    let gradient = last.and_then(|(x, gradient)| (x == result.x).then_some(gradient));
    Ok((a.dot(&bb.t()), intercept, gradient))
}

/// The prox of t‖·‖_σ,1: the singular values of `a` soft-thresholded by t.
fn shrink(a: &Array2<f64>, threshold: f64) -> Result<Array2<f64>> {
    let svd = thin_svd(a.view())?;
    let s = Array1::from_iter(svd.s.iter().map(|s| (s - threshold).max(0.0)));
    Ok((&svd.u * &s).dot(&svd.v.t()).as_standard_layout().into_owned())
}

/// Stage 2: FISTA with gradient-based restart on C (prox: the soft-thresholded SVD) and b,
/// until the gradient mapping is below gtol (or max_steps steps); returns (C, b). `known`
/// is ∇f at the start (C, b), if stage 1 computed it.
fn proximal_descent<M: Monitor + ?Sized>(
    span: &Span<'_>,
    centred: &Array2<f64>,
    (mut c, mut b, mut known): (Array2<f64>, Array1<f64>, Option<SpanGradient>),
    options: &StepOptions,
    monitor: &mut M,
) -> Result<(Array2<f64>, Array1<f64>)> {
    let Penalties { trace: lambda_trace, fro: lambda_fro } = options.penalties;
    // Step sizes from Lipschitz bounds: the softmax Hessian is ≤ I/2, and scaling the
    // blocks by twice their own bounds covers the cross terms. The data term's curvature
    // in C is that of Z̃ with its rows scaled by √c_i (c_i = 1/n without weights).
    let z_curvature = match span.weights {
        None => spectral_norm(centred.view())?.powi(2) / span.labels.len() as f64,
        Some(c) => {
            let root = c.iter().map(|c| c.sqrt()).collect::<Array1<f64>>();
            spectral_norm((centred * &root.insert_axis(Axis(1))).view())?.powi(2)
        }
    };
    let step_c = 1.0 / (2.0 * lambda_fro + z_curvature);
    let step_b = 1.0;
    let (mut y_c, mut y_b, mut t) = (c.clone(), b.clone(), 1.0f64);
    let max_abs = |a: &mut dyn Iterator<Item = f64>| a.fold(0.0f64, |m, v| m.max(v.abs()));
    for _ in 0..options.max_steps {
        if monitor.should_stop() {
            break;
        }
        // The first iteration is at the start, where stage 1 may have left ∇f.
        let (g_c, g_b) = match known.take() {
            Some(gradient) => gradient,
            None => {
                let y_c_rows = y_c.as_standard_layout();
                let (_, g_c, g_b) =
                    span_objective(span, y_c_rows.as_slice().unwrap_or(&[]), y_b.as_slice().unwrap_or(&[]))?;
                (g_c, g_b)
            }
        };
        let g_c = Array2::from_shape_vec(y_c.dim(), g_c).map_err(|e| Error::input("span", e.to_string()))?;
        let c_new = shrink(&(&y_c - &(&g_c * step_c)), lambda_trace * step_c)?;
        let b_new = if options.fit_intercept { &y_b - &(Array1::from(g_b) * step_b) } else { y_b.clone() };
        let mapping = (max_abs(&mut c_new.iter().zip(y_c.iter()).map(|(a, b)| a - b)) / step_c)
            .max(max_abs(&mut b_new.iter().zip(y_b.iter()).map(|(a, b)| a - b)) / step_b);
        if mapping <= options.gtol {
            return Ok((c_new, b_new));
        }
        // Restart the momentum when it points against the last step (O'Donoghue–Candès).
        let against = ((&y_c - &c_new) * (&c_new - &c)).sum() + ((&y_b - &b_new) * (&b_new - &b)).sum();
        if against > 0.0 {
            t = 1.0;
        }
        let t_next = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
        let momentum = (t - 1.0) / t_next;
        y_c = &c_new + &((&c_new - &c) * momentum);
        y_b = &b_new + &((&b_new - &b) * momentum);
        (c, b, t) = (c_new, b_new, t_next);
    }
    Ok((c, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::rng::SplitMix64;
    use crate::solvers::tracenorm::products::Rows;
    use crate::solvers::tracenorm::small::thin_qr;
    use crate::solvers::Silent;

    #[test]
    fn bases_around_known_atoms_reuse_their_z_and_span_what_bases_of_spans() {
        let (n, d, m) = (60, 7, 5);
        let mut rng = SplitMix64::new(4);
        let mut random = |rows: usize, cols: usize| Array2::from_shape_fn((rows, cols), |_| rng.next_f64() - 0.5);
        let data = random(n, d).into_raw_vec_and_offset().0;
        let design = DenseRows::new(&data, n, d).unwrap();
        let x = Rows(&design);
        // Known atoms with orthonormal U and V and their Z, a new atom and two rotations.
        let (u, v) = (thin_qr(random(d, 2).view()).0, thin_qr(random(m, 2).view()).0);
        let z = times(&x, u.view()).unwrap();
        let known = Atoms { u, v, theta: Array1::from(vec![1.0, 0.5]), b: Array1::zeros(m), z };
        let (new_u, new_v, rot_u, rot_v) = (random(d, 1), random(m, 1), random(d, 2), random(m, 2));
        let rotations = (rot_u.view(), rot_v.view());
        let around = Bases::around(&x, &known, (new_u.view(), new_v.view()), rotations).unwrap();
        let join = |a: &Array2<f64>, b: &Array2<f64>| concatenate(Axis(1), &[a.view(), b.view()]).unwrap();
        let (all_u, all_v) = (join(&known.u, &new_u), join(&known.v, &new_v));
        let of = Bases::of(&x, (all_u.view(), all_v.view()), rotations).unwrap();
        let close = |a: &Array2<f64>, b: &Array2<f64>| a.dim() == b.dim() && (a - b).iter().all(|e| e.abs() < 1e-12);
        let projector = |q: &Array2<f64>| q.dot(&q.t());
        assert!(close(&projector(&around.qu), &projector(&of.qu)) && close(&projector(&around.qv), &projector(&of.qv)));
        assert!(close(&around.qu.t().dot(&around.qu), &Array2::eye(around.qu.ncols())));
        assert!(close(&around.z, &times(&x, around.qu.view()).unwrap()));
        // The known atoms come first, with their own Z.
        assert_eq!(around.qu.slice(ndarray::s![.., ..2]), known.u);
        assert_eq!(around.z.slice(ndarray::s![.., ..2]), known.z);
        // Atoms whose U is not orthonormal: the bases of `Bases::of`.
        let u = &known.u * 2.0;
        let skewed = Atoms { z: times(&x, u.view()).unwrap(), u, ..known.clone() };
        let around = Bases::around(&x, &skewed, (new_u.view(), new_v.view()), rotations).unwrap();
        let all_u = join(&skewed.u, &new_u);
        let of = Bases::of(&x, (all_u.view(), all_v.view()), rotations).unwrap();
        assert_eq!((around.qu, around.qv, around.z), (of.qu, of.qv, of.z));
    }

    #[test]
    fn stage_two_starts_from_the_gradient_stage_one_left_at_its_result() {
        let (n, m, k, kp) = (200, 4, 3, 3);
        let mut rng = SplitMix64::new(12);
        let z: Vec<f64> = (0..n * k).map(|_| rng.next_f64() - 0.5).collect();
        let v = thin_qr(Array2::from_shape_fn((m, kp), |_| rng.next_f64() - 0.5).view()).0;
        let v_rows = v.as_standard_layout().into_owned().into_raw_vec_and_offset().0;
        let labels: Vec<u32> = (0..n).map(|i| (i * 5 % m) as u32).collect();
        let span = Span { z: &z, v: &v_rows, k, k_prime: kp, labels: &labels, weights: None, m, lambda_fro: 0.01 };
        let penalties = Penalties { trace: 0.02, fro: 0.01 };
        let options = StepOptions { penalties, fit_intercept: true, gtol: 1e-6, max_steps: 200 };
        let a_u = Array2::from_shape_fn((k, 2), |(i, j)| if i == j { 1.0 } else { 0.0 });
        let a_v = a_u.clone();
        let (theta, b) = (Array1::from(vec![0.5, 0.2]), Array1::zeros(m));
        let (c, b, known) = factored_descent(&span, (&a_u, &a_v), &theta, &b, &options, &mut Silent).unwrap();
        // The gradient handed over is ∇f at the (C, b) returned, exactly.
        let c_rows = c.as_standard_layout().into_owned();
        let (_, g_c, g_b) = span_objective(&span, c_rows.as_slice().unwrap(), b.as_slice().unwrap()).unwrap();
        assert_eq!(known, Some((g_c, g_b)));
        // Stage 2 from it ends where it ends recomputing it.
        let centred = Array2::from_shape_vec((n, k), z.clone()).unwrap();
        let from_known =
            proximal_descent(&span, &centred, (c.clone(), b.clone(), known), &options, &mut Silent).unwrap();
        let recomputed = proximal_descent(&span, &centred, (c, b, None), &options, &mut Silent).unwrap();
        assert_eq!(from_known, recomputed);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let (n, m, k, kp) = (300, 4, 3, 2);
        let mut rng = SplitMix64::new(9);
        let z: Vec<f64> = (0..n * k).map(|_| rng.next_f64() - 0.5).collect();
        let v: Vec<f64> = (0..m * kp).map(|_| rng.next_f64() - 0.5).collect();
        let labels: Vec<u32> = (0..n).map(|i| (i * 7 % m) as u32).collect();
        let span = Span { z: &z, v: &v, k, k_prime: kp, labels: &labels, weights: None, m, lambda_fro: 0.1 };
        let c: Vec<f64> = (0..k * kp).map(|_| 2.0 * rng.next_f64() - 1.0).collect();
        let b = vec![0.1, -0.2, 0.0, 0.3];
        let (_, g_c, g_b) = span_objective(&span, &c, &b).unwrap();
        let h = 1e-6;
        for j in 0..k * kp {
            let (mut up, mut down) = (c.clone(), c.clone());
            up[j] += h;
            down[j] -= h;
            let fd =
                (span_objective(&span, &up, &b).unwrap().0 - span_objective(&span, &down, &b).unwrap().0) / (2.0 * h);
            assert!((fd - g_c[j]).abs() < 1e-8, "{fd} vs {}", g_c[j]);
        }
        for l in 0..m {
            let (mut up, mut down) = (b.clone(), b.clone());
            up[l] += h;
            down[l] -= h;
            let fd =
                (span_objective(&span, &c, &up).unwrap().0 - span_objective(&span, &c, &down).unwrap().0) / (2.0 * h);
            assert!((fd - g_b[l]).abs() < 1e-8);
        }
        assert!(span_objective(&span, &c[1..], &b).is_err());
    }
}
