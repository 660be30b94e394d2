//! Kernel M3L by SMO along one label at a time (paper §5.1, Appendix A, Algorithm 1).
//!
//! Problem: the dual D2 (25) of [`super::problem`], a box-constrained concave QP over
//! the N·L variables α_il; optimal when every projected gradient (31) is zero, and the
//! solver stops when all are below `tol` in magnitude.
//!
//! One outer iteration: pick the label l of the largest projected gradient (32) over
//! all N·L variables; then up to L steps on that label, each on the pair (p, q) with
//! p = argmax_i |g̃_il| and q maximising the unconstrained gain (30)/(56)
//!   h_pq = (g_p² K_qq + g_q² K_pp − 2 g_p g_q y_p y_q K_pq) / (8 R_ll (K_pp K_qq − K_pq²))
//! over the j with g̃_jl ≠ 0 and K_pj² < K_pp K_jj (the 2 × 2 block strictly positive
//! definite); the pair's 2-variable box QP (47)–(54) is solved exactly (see
//! [`solve_box_2d`]), or, with no admissible q, the 1-variable one (58). The gradients of
//! label l follow every step (33); the other labels' are brought up to date once per
//! outer iteration through the accumulated u = Σ K_:i y_il δ_il (34)–(36):
//!   g_ik −= 4 R_kl y_ik u_i,
//! so a dense R costs O(N·L) per outer iteration, not per step. Kernel columns come
//! from an LRU cache shared by all labels.

use super::problem::{projected, M3l};
use crate::kernels::{ColumnCache, KernelSource};
use crate::solvers::{Monitor, Progress, Status};
use crate::{Error, Result};

/// Settings of the kernel solver.
#[derive(Debug, Clone, Copy)]
pub struct SmoOptions {
    /// Stop when every |projected gradient| < tol.
    pub tol: f64,
    /// Outer iterations (label choices) at most.
    pub max_iter: usize,
    /// Outer iterations between progress reports (objectives cost O(N·L)).
    pub report_every: usize,
}

/// What a solve returns besides α.
#[derive(Debug, Clone, PartialEq)]
pub struct M3lReport {
    pub status: Status,
    pub iterations: usize,
    pub primal: f64,
    pub dual: f64,
    /// Largest |projected gradient| at the end.
    pub max_violation: f64,
}

/// The exact maximiser of −½ xᵀQx + gᵀx over lo ≤ x ≤ hi for a positive definite 2 × 2 Q.
/// If the unconstrained maximiser Q⁻¹g is outside the box, the maximiser lies on its
/// boundary, i.e. on one of the four edges, where the problem is 1-dimensional and its
/// solution a clamp: the best of the four is returned. (Appendix A's Algorithm 2 tries
/// fewer edges, which is not always optimal.)
pub fn solve_box_2d(q: [f64; 3], g: [f64; 2], lo: [f64; 2], hi: [f64; 2]) -> [f64; 2] {
    let [q11, q12, q22] = q;
    let det = q11 * q22 - q12 * q12;
    let free = [(q22 * g[0] - q12 * g[1]) / det, (q11 * g[1] - q12 * g[0]) / det];
    if (lo[0]..=hi[0]).contains(&free[0]) && (lo[1]..=hi[1]).contains(&free[1]) {
        return free;
    }
    let value = |x: [f64; 2]| -0.5 * (q11 * x[0] * x[0] + 2.0 * q12 * x[0] * x[1] + q22 * x[1] * x[1]) + g[0] * x[0] + g[1] * x[1];
    let mut best = [0.0, 0.0];
    let mut best_value = f64::NEG_INFINITY;
    for x1 in [lo[0], hi[0]] {
        let x = [x1, ((g[1] - q12 * x1) / q22).clamp(lo[1], hi[1])];
        if value(x) > best_value {
            (best, best_value) = (x, value(x));
        }
    }
    for x2 in [lo[1], hi[1]] {
        let x = [((g[0] - q12 * x2) / q11).clamp(lo[0], hi[0]), x2];
        if value(x) > best_value {
            (best, best_value) = (x, value(x));
        }
    }
    best
}

/// The 1-variable step (58): max −½ a x² + b x over [lo, hi] (a ≥ 0).
fn solve_box_1d(a: f64, b: f64, lo: f64, hi: f64) -> f64 {
    if a > 0.0 {
        (b / a).clamp(lo, hi)
    } else if b > 0.0 {
        hi
    } else if b < 0.0 {
        lo
    } else {
        0.0
    }
}

/// Maximises D2 from `alpha` (N × L, feasible; zeros for a cold start), in place.
/// Returns the report; the training scores F = 2 K A R can be read from the gradient
/// (F = y∘(b − g)/2), which is what the objectives use.
pub fn solve_smo<S: KernelSource + ?Sized>(
    problem: &M3l<'_>,
    kernel: &S,
    cache: &mut ColumnCache,
    alpha: &mut [f64],
    options: &SmoOptions,
    monitor: &mut dyn Monitor,
) -> Result<M3lReport> {
    let (n, labels, c) = (problem.n, problem.labels, problem.c);
    if kernel.n() != n || cache.n() != n {
        return Err(Error::input("kernel", format!("must be {n} x {n}")));
    }
    if alpha.len() != n * labels || alpha.iter().any(|&a| !(0.0..=c).contains(&a)) {
        return Err(Error::input("dual_coef", format!("must hold {n} x {labels} values in [0, C]")));
    }
    let y = problem.y;
    // g = b − 2 y∘F with F = 2 K A R: start from the warm α by whole columns.
    let mut grad: Vec<f64> = (0..n * labels).map(|idx| problem.b(idx)).collect();
    {
        let mut a_r = vec![0.0; labels];
        for p in 0..n {
            let row = &alpha[p * labels..(p + 1) * labels];
            if row.iter().all(|&a| a == 0.0) {
                continue;
            }
            // (A R)_p,k = Σ_l y_pl α_pl R_lk
            a_r.iter_mut().for_each(|v| *v = 0.0);
            for (l, &a) in row.iter().enumerate() {
                if a != 0.0 {
                    let ya = y[p * labels + l] * a;
                    for (k, v) in a_r.iter_mut().enumerate() {
                        *v += ya * problem.r(l, k);
                    }
                }
            }
            let column = cache.get(p, kernel);
            for i in 0..n {
                let kip = column[i];
                for k in 0..labels {
                    grad[i * labels + k] -= 4.0 * y[i * labels + k] * kip * a_r[k];
                }
            }
        }
    }
    let diag: Vec<f64> = (0..n).map(|i| kernel.diag(i)).collect();
    // The steps scan one label's N variables at a time: work on label-major copies
    // (entry k·N + i), so those scans are contiguous instead of L apart.
    let (mut a, mut g, yt) = (label_major(alpha, n, labels), label_major(&grad, n, labels), label_major(y, n, labels));
    let started = std::time::Instant::now();
    let mut accumulated = vec![0.0; n];
    let mut status = Status::MaxEpochs;
    let mut iterations = 0;
    // The largest |projected gradient| of each label, kept current: a label's entry is
    // recomputed whenever its gradients change (its own steps, or the catch-up below),
    // so choosing the label costs O(L), not a pass over all N·L variables.
    let label_violation = |k: usize, a: &[f64], g: &[f64]| {
        a[k * n..(k + 1) * n].iter().zip(&g[k * n..(k + 1) * n]).map(|(&a, &g)| projected(a, g, c).abs()).fold(0.0, f64::max)
    };
    let mut violation: Vec<f64> = (0..labels).map(|k| label_violation(k, &a, &g)).collect();
    while iterations < options.max_iter {
        if monitor.should_stop() {
            status = Status::Interrupted;
            break;
        }
        // (32): the label holding the largest projected gradient.
        let (mut worst, mut label) = (0.0f64, 0);
        for (k, &v) in violation.iter().enumerate() {
            if v > worst {
                (worst, label) = (v, k);
            }
        }
        if worst < options.tol {
            status = Status::Converged;
            break;
        }
        iterations += 1;
        let l = label;
        let r_ll = problem.r(l, l);
        accumulated.iter_mut().for_each(|u| *u = 0.0);
        for _ in 0..labels {
            let (mut gp_abs, mut p) = (0.0f64, usize::MAX);
            for i in 0..n {
                let v = projected(a[l * n + i], g[l * n + i], c).abs();
                if v > gp_abs {
                    (gp_abs, p) = (v, i);
                }
            }
            if p == usize::MAX || gp_abs < options.tol {
                break;
            }
            let ip = l * n + p;
            let (gp, yp, kpp) = (g[ip], yt[ip], diag[p]);
            // Second variable: the largest unconstrained gain (56).
            let column_p = cache.get(p, kernel);
            let (mut best_gain, mut q) = (0.0f64, usize::MAX);
            for j in 0..n {
                let ij = l * n + j;
                if j == p || projected(a[ij], g[ij], c) == 0.0 {
                    continue;
                }
                let kpj = column_p[j];
                let det = kpp * diag[j] - kpj * kpj;
                if det <= 1e-12 * kpp * diag[j] {
                    continue;
                }
                let gj = g[ij];
                let gain = (gp * gp * diag[j] + gj * gj * kpp - 2.0 * gp * gj * yp * yt[ij] * kpj) / (8.0 * r_ll * det);
                if gain > best_gain {
                    (best_gain, q) = (gain, j);
                }
            }
            if q == usize::MAX {
                let delta = solve_box_1d(4.0 * kpp * r_ll, gp, -a[ip], c - a[ip]);
                a[ip] = (a[ip] + delta).clamp(0.0, c);
                let column_p = cache.get(p, kernel);
                let (gl, yl) = (&mut g[l * n..(l + 1) * n], &yt[l * n..(l + 1) * n]);
                for i in 0..n {
                    let d = column_p[i] * yp * delta;
                    gl[i] -= 4.0 * r_ll * yl[i] * d;
                    accumulated[i] += d;
                }
            } else {
                let iq = l * n + q;
                let (column_p, column_q) = cache.get_pair(p, q, kernel);
                let kpq = column_p[q];
                let yq = yt[iq];
                let delta = solve_box_2d(
                    [4.0 * kpp * r_ll, 4.0 * kpq * r_ll * yp * yq, 4.0 * diag[q] * r_ll],
                    [gp, g[iq]],
                    [-a[ip], -a[iq]],
                    [c - a[ip], c - a[iq]],
                );
                a[ip] = (a[ip] + delta[0]).clamp(0.0, c);
                a[iq] = (a[iq] + delta[1]).clamp(0.0, c);
                let (gl, yl) = (&mut g[l * n..(l + 1) * n], &yt[l * n..(l + 1) * n]);
                for i in 0..n {
                    let d = column_p[i] * yp * delta[0] + column_q[i] * yq * delta[1];
                    gl[i] -= 4.0 * r_ll * yl[i] * d;
                    accumulated[i] += d;
                }
            }
        }
        // (35): the other labels catch up with this label's changes.
        for k in (0..labels).filter(|&k| k != l) {
            let r_kl = problem.r(k, l);
            if r_kl != 0.0 {
                let mut worst = 0.0f64;
                for (i, &u) in accumulated.iter().enumerate() {
                    let idx = k * n + i;
                    g[idx] -= 4.0 * r_kl * yt[idx] * u;
                    worst = worst.max(projected(a[idx], g[idx], c).abs());
                }
                violation[k] = worst;
            }
        }
        violation[l] = label_violation(l, &a, &g);
        if options.report_every > 0 && iterations % options.report_every == 0 {
            let (primal, dual) = problem.objectives(&row_major(&a, n, labels), &scores_from_gradient(problem, &row_major(&g, n, labels)));
            let gap = crate::solvers::relative_gap(primal, dual);
            monitor.report(&Progress { epoch: iterations, primal, dual, gap, elapsed: started.elapsed() });
        }
    }
    alpha.copy_from_slice(&row_major(&a, n, labels));
    let grad = row_major(&g, n, labels);
    let scores = scores_from_gradient(problem, &grad);
    let (primal, dual) = problem.objectives(alpha, &scores);
    let max_violation = grad.iter().zip(alpha.iter()).map(|(&g, &a)| projected(a, g, c).abs()).fold(0.0, f64::max);
    Ok(M3lReport { status, iterations, primal, dual, max_violation })
}

/// An N × L row-major matrix as L × N (label-major).
fn label_major(m: &[f64], n: usize, labels: usize) -> Vec<f64> {
    let mut t = vec![0.0; n * labels];
    for (i, row) in m.chunks_exact(labels).enumerate() {
        for (k, &v) in row.iter().enumerate() {
            t[k * n + i] = v;
        }
    }
    t
}

/// The inverse of [`label_major`].
fn row_major(t: &[f64], n: usize, labels: usize) -> Vec<f64> {
    let mut m = vec![0.0; n * labels];
    for (k, column) in t.chunks_exact(n).enumerate() {
        for (i, &v) in column.iter().enumerate() {
            m[i * labels + k] = v;
        }
    }
    m
}

/// F = y∘(b − g)/2 (g = b − 2 y∘F, y = ±1).
pub fn scores_from_gradient(problem: &M3l<'_>, grad: &[f64]) -> Vec<f64> {
    grad.iter().enumerate().map(|(idx, &g)| problem.y[idx] * (problem.b(idx) - g) / 2.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn box_2d_matches_a_grid_search() {
        let mut rng = SplitMix64::new(5);
        for _ in 0..300 {
            let (a, b, d) = (rng.next_f64() * 3.0 + 0.1, rng.next_f64() * 2.0 - 1.0, rng.next_f64() * 3.0 + 0.1);
            let q12 = b * (a * d).sqrt() * 0.95;
            let g = [rng.next_f64() * 6.0 - 3.0, rng.next_f64() * 6.0 - 3.0];
            let lo = [-rng.next_f64(), -rng.next_f64()];
            let hi = [rng.next_f64(), rng.next_f64()];
            let x = solve_box_2d([a, q12, d], g, lo, hi);
            let value = |x: [f64; 2]| -0.5 * (a * x[0] * x[0] + 2.0 * q12 * x[0] * x[1] + d * x[1] * x[1]) + g[0] * x[0] + g[1] * x[1];
            let mut best = f64::NEG_INFINITY;
            for s in 0..=200 {
                for t in 0..=200 {
                    let p = [lo[0] + (hi[0] - lo[0]) * s as f64 / 200.0, lo[1] + (hi[1] - lo[1]) * t as f64 / 200.0];
                    best = best.max(value(p));
                }
            }
            assert!(value(x) >= best - 1e-9, "{x:?}");
            assert!((lo[0]..=hi[0]).contains(&x[0]) && (lo[1]..=hi[1]).contains(&x[1]));
        }
    }
}
