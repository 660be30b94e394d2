//! Linear M3L by dual coordinate descent with shrinking (paper §6, after Hsieh et al.
//! 2008).
//!
//! Problem: the dual D2 (25) of [`super::problem`] with K = XXᵀ (X augmented by the
//! constant feature `bias` when an intercept is fitted). The primal Z = 2 Xᵀ A R is kept
//! explicitly, one row z_l per label, so the dual gradient of one variable is
//!   g_pl = b_pl − 2 y_pl z_l·x_p                                   (39)
//! and its exact coordinate step is α_pl ← clip(α_pl + g_pl / (4 R_ll ‖x_p‖²), 0, C) (37).
//! Optimal when every projected gradient (31) vanishes; the solver stops when all are
//! below `tol` in magnitude, checked on every variable (shrunk or not) before it stops.
//!
//! Order: epoch e visits the labels in the order of the seeded stream (e, ·) and, within
//! label l, its active variables (in index order) shuffled by the stream (e, l) — a
//! function of (seed, e, l, the active set) alone, so that a CoCoA+ round of one
//! partition (`local_round.rs`) takes the same steps. Steps on label l update z_l at once
//! (40) and accumulate v_l = Σ y_jl δ_jl x_j (43); the other labels get z_k += 2 R_kl v_l
//! (42) when the label is done — every step therefore sees the exact gradient of its
//! variable, and with R = I nothing is deferred at all (one-vs-all DCD, LIBLINEAR's).
//!
//! Shrinking (44)–(45): a variable at a bound whose gradient points out of the box by
//! more than its label's extremal bounds is dropped from that label's active set; the
//! bounds of label l are the extremal projected gradients of the last sweep of every
//! label k, weighted by |R_kl| — labels coupled by R shrink together. A label whose
//! active projected gradients are all below `tol` rests until a label coupled to it
//! moves (with R = I, for good: one-vs-all DCD stops each label on its own, as
//! LIBLINEAR does); a label with shrunk variables first gets them all back for one
//! verifying sweep. The solve ends when every label rests.

use super::problem::{projected, M3l};
use super::smo::M3lReport;
use crate::data::{Design, Row, RowBuf};
use crate::rng::SplitMix64;
use crate::solvers::{Monitor, Progress, Status};
use crate::{Error, Result};

/// Settings of the linear solver.
#[derive(Debug, Clone, Copy)]
pub struct DcdOptions {
    pub tol: f64,
    /// Epochs at most.
    pub max_iter: usize,
    pub seed: u64,
    /// The constant feature's value (intercept), or None.
    pub bias: Option<f64>,
    /// Shrink variables stuck at a bound (44)–(45); without, every epoch visits all.
    pub shrinking: bool,
}

/// z·x for a row (the bias feature last).
fn dot(z: &[f64], row: &Row<'_>, bias: Option<f64>) -> f64 {
    row.dot(z) + bias.map_or(0.0, |s| s * z[z.len() - 1])
}

pub(crate) fn axpy(alpha: f64, row: &Row<'_>, bias: Option<f64>, z: &mut [f64]) {
    row.axpy_into(alpha, z);
    if let Some(s) = bias {
        let last = z.len() - 1;
        z[last] += alpha * s;
    }
}

/// Maximises D2 from `alpha` (N × L, feasible) in place; returns the report and Z
/// (L rows of width d, or d + 1 with the bias feature last).
pub fn solve_dcd<D: Design>(
    problem: &M3l<'_>,
    x: &D,
    alpha: &mut [f64],
    options: &DcdOptions,
    monitor: &mut dyn Monitor,
) -> Result<(M3lReport, Vec<f64>)> {
    let (n, labels, c) = (problem.n, problem.labels, problem.c);
    if x.n_rows() != n {
        return Err(Error::input("X", format!("has {} rows, Y has {n}", x.n_rows())));
    }
    if alpha.len() != n * labels || alpha.iter().any(|&a| !(0.0..=c).contains(&a)) {
        return Err(Error::input("dual_coef", format!("must hold {n} x {labels} values in [0, C]")));
    }
    let bias = options.bias;
    let sq_norms = sq_norms_of(x, bias);
    let mut z = primal_of(problem, x, alpha, bias);
    let sweep = Sweep { problem, x, bias, sq_norms: &sq_norms, sigma: 1.0 };

    let mut active: Vec<Vec<usize>> = (0..labels).map(|_| (0..n).collect()).collect();
    // Extremal projected gradients (ascent convention) of each label's last sweep.
    let mut extremes = SweepStats::new(labels);
    let (mut upper, mut lower) = (vec![f64::INFINITY; labels], vec![f64::NEG_INFINITY; labels]);
    // A label is settled when its last sweep over all its variables found every
    // |projected gradient| below tol and no label coupled to it through R has moved by
    // more since (so its gradients are, to within tol, those it was settled with).
    // Settled labels are not swept — LIBLINEAR's one-vs-all likewise stops each label at
    // its own tolerance — and the solve ends when every label is settled.
    let mut settled = vec![false; labels];
    let mut label_order = Vec::with_capacity(labels);
    let started = std::time::Instant::now();
    let mut status = Status::MaxEpochs;
    let mut epochs = 0;
    while epochs < options.max_iter {
        if monitor.should_stop() {
            status = Status::Interrupted;
            break;
        }
        epochs += 1;
        sweep.label_order(&mut label_order, options.seed, epochs as u64);
        let mut stats = SweepStats::new(labels);
        let mut returned = vec![false; labels];
        for &l in &label_order {
            // An epoch is N·L steps: stop between labels when asked.
            if monitor.should_stop() {
                status = Status::Interrupted;
                break;
            }
            if settled[l] {
                continue;
            }
            let set = &mut active[l];
            sweep.example_order(set, options.seed, epochs as u64, l);
            let bounds = options.shrinking.then(|| (lower[l], upper[l]));
            let whole = set.len() == n;
            let moved = sweep.label(l, set, bounds, alpha, &mut z, &mut stats);
            (extremes.max[l], extremes.min[l]) = (stats.max[l], stats.min[l]);
            let within_tol = stats.max[l].max(-stats.min[l]) < options.tol;
            if within_tol {
                if whole {
                    settled[l] = true;
                } else {
                    // Verify on every variable of the label before it rests.
                    *set = (0..n).collect();
                    (upper[l], lower[l], returned[l]) = (f64::INFINITY, f64::NEG_INFINITY, true);
                }
            }
            // Steps of a label within tol are as small as the ones a converged epoch takes
            // everywhere; only larger ones wake the labels coupled to it.
            if moved && !within_tol {
                (0..labels).filter(|&k| k != l && problem.r(k, l) != 0.0).for_each(|k| settled[k] = false);
            }
        }
        if status == Status::Interrupted {
            break;
        }
        if !settled.contains(&false) {
            status = Status::Converged;
            break;
        }
        // (44)–(45): next epoch's bounds, coupled through |R|; a bound that does not
        // exclude anything (no variable beyond it) shrinks nothing. A label just
        // returned to its whole set keeps it for one sweep.
        for l in (0..labels).filter(|&l| !returned[l]) {
            let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
            for k in 0..labels {
                let w = problem.r(k, l).abs();
                if w != 0.0 && extremes.max[k].is_finite() {
                    hi = hi.max(w * extremes.max[k]);
                    lo = lo.min(w * extremes.min[k]);
                }
            }
            upper[l] = if hi > 0.0 { hi } else { f64::INFINITY };
            lower[l] = if lo < 0.0 { lo } else { f64::NEG_INFINITY };
        }
    }
    let width = z.len() / labels;
    let scores = training_scores(problem, x, &z, width, bias);
    let (primal, dual) = problem.objectives(alpha, &scores);
    let max_violation = (0..n * labels)
        .map(|idx| projected(alpha[idx], problem.b(idx) - 2.0 * problem.y[idx] * scores[idx], c).abs())
        .fold(0.0, f64::max);
    monitor.report(&Progress { epoch: epochs, primal, dual, gap: crate::solvers::relative_gap(primal, dual), elapsed: started.elapsed() });
    Ok((M3lReport { status, iterations: epochs, primal, dual, max_violation }, z))
}

/// The width of Z's rows: the features, and the bias feature last when there is one.
pub(crate) fn primal_width<D: Design>(x: &D, bias: Option<f64>) -> usize {
    x.n_features() + usize::from(bias.is_some())
}

/// ‖x_i‖² (+ bias²) for every row.
pub(crate) fn sq_norms_of<D: Design>(x: &D, bias: Option<f64>) -> Vec<f64> {
    let mut buf = RowBuf::new();
    (0..x.n_rows()).map(|i| x.row(i, &mut buf).sq_norm() + bias.map_or(0.0, |s| s * s)).collect()
}

/// Z = 2 Xᵀ A R (L rows of width d [+ 1]) for α.
pub(crate) fn primal_of<D: Design>(problem: &M3l<'_>, x: &D, alpha: &[f64], bias: Option<f64>) -> Vec<f64> {
    let (labels, y) = (problem.labels, problem.y);
    let width = primal_width(x, bias);
    let mut buf = RowBuf::new();
    let mut z = vec![0.0; labels * width];
    for p in 0..problem.n {
        let row = x.row(p, &mut buf);
        for l in 0..labels {
            let a = alpha[p * labels + l];
            if a != 0.0 {
                for k in 0..labels {
                    let r_kl = problem.r(k, l);
                    if r_kl != 0.0 {
                        axpy(2.0 * r_kl * y[p * labels + l] * a, &row, bias, &mut z[k * width..(k + 1) * width]);
                    }
                }
            }
        }
    }
    z
}

/// The extremal projected gradients of an epoch: per label (for shrinking), and overall.
pub(crate) struct SweepStats {
    pub(crate) max: Vec<f64>,
    pub(crate) min: Vec<f64>,
}

impl SweepStats {
    pub(crate) fn new(labels: usize) -> Self {
        Self { max: vec![f64::NEG_INFINITY; labels], min: vec![f64::INFINITY; labels] }
    }
}

/// The coordinate steps of one label, shared by the serial solver and CoCoA+ rounds: the
/// exact step (37) with curvature σ'·4R_ll‖x_p‖² against the weights `z` (the local
/// u = Z + σ'ΔZ_k of a round; Z itself when σ' = 1), which move by σ' times the step's
/// change of Z = 2 Xᵀ A R.
pub(crate) struct Sweep<'a, D: Design> {
    pub(crate) problem: &'a M3l<'a>,
    pub(crate) x: &'a D,
    pub(crate) bias: Option<f64>,
    pub(crate) sq_norms: &'a [f64],
    pub(crate) sigma: f64,
}

impl<D: Design> Sweep<'_, D> {
    /// Epoch e's label order: 0..L shuffled by the stream (e, ·).
    pub(crate) fn label_order(&self, order: &mut Vec<usize>, seed: u64, epoch: u64) {
        order.clear();
        order.extend(0..self.problem.labels);
        SplitMix64::derive(seed, epoch * (self.problem.labels as u64 + 1)).shuffle(order);
    }

    /// Label l's visiting order in epoch e: `set` in index order, shuffled by the stream (e, l).
    pub(crate) fn example_order(&self, set: &mut [usize], seed: u64, epoch: u64, l: usize) {
        set.sort_unstable();
        SplitMix64::derive(seed, epoch * (self.problem.labels as u64 + 1) + l as u64 + 1).shuffle(set);
    }

    /// Steps on label l over `set` (in order); with shrinking `bounds` = (lower, upper),
    /// a variable stuck at a bound beyond them leaves the set. Then (42): the other labels
    /// catch up with label l. Returns whether any variable moved.
    pub(crate) fn label(&self, l: usize, set: &mut Vec<usize>, bounds: Option<(f64, f64)>, alpha: &mut [f64], z: &mut [f64], stats: &mut SweepStats) -> bool {
        let (problem, bias, sigma) = (self.problem, self.bias, self.sigma);
        let (labels, c, y) = (problem.labels, problem.c, problem.y);
        let width = z.len() / labels;
        let r_ll = problem.r(l, l);
        // v_l (43) is needed only by labels coupled to l; with R = I it would be a
        // second axpy per step for nothing.
        let coupled = (0..labels).any(|k| k != l && problem.r(k, l) != 0.0);
        let mut pending = if coupled { vec![0.0; width] } else { Vec::new() };
        let mut buf = RowBuf::new();
        let mut moved = false;
        let mut s = 0;
        while s < set.len() {
            let p = set[s];
            if let Some(&next) = set.get(s + 1) {
                // Variables (next, l) sit `labels` apart in memory, at shuffled rows.
                self.x.prefetch_row(next);
                problem.prefetch(next * labels + l);
                crate::vector_code::prefetch_entry(alpha, next * labels + l);
                crate::vector_code::prefetch_entry(self.sq_norms, next);
            }
            let idx = p * labels + l;
            let row = self.x.row(p, &mut buf);
            let g = problem.b(idx) - 2.0 * y[idx] * dot(&z[l * width..(l + 1) * width], &row, bias);
            let a = alpha[idx];
            // Shrink a variable stuck at a bound beyond the label's extremal gradients.
            if let Some((lower, upper)) = bounds {
                if a <= 0.0 && g < lower || a >= c && g > upper {
                    set.swap_remove(s);
                    continue;
                }
            }
            let pg = projected(a, g, c);
            stats.max[l] = stats.max[l].max(pg);
            stats.min[l] = stats.min[l].min(pg);
            s += 1;
            if pg == 0.0 {
                continue;
            }
            let new = if self.sq_norms[p] == 0.0 {
                // x_p = 0 (an empty row without intercept): the dual is linear in this
                // variable, so its maximum is the bound the gradient points to (the limit
                // of the step below as ‖x_p‖ → 0). Z does not move.
                if g > 0.0 { c } else { 0.0 }
            } else {
                (a + g / (sigma * 4.0 * r_ll * self.sq_norms[p])).clamp(0.0, c)
            };
            let delta = new - a;
            if delta != 0.0 {
                alpha[idx] = new;
                let step = y[idx] * delta;
                axpy(sigma * 2.0 * r_ll * step, &row, bias, &mut z[l * width..(l + 1) * width]);
                if coupled {
                    axpy(step, &row, bias, &mut pending);
                }
                moved = true;
            }
        }
        if moved && coupled {
            for k in (0..labels).filter(|&k| k != l) {
                let r_kl = problem.r(k, l);
                if r_kl != 0.0 {
                    for (zk, &v) in z[k * width..(k + 1) * width].iter_mut().zip(&pending) {
                        *zk += sigma * 2.0 * r_kl * v;
                    }
                }
            }
        }
        moved
    }
}

/// F = X Zᵀ on the training rows.
pub(crate) fn training_scores<D: Design>(problem: &M3l<'_>, x: &D, z: &[f64], width: usize, bias: Option<f64>) -> Vec<f64> {
    let labels = problem.labels;
    let mut buf = RowBuf::new();
    let mut scores = vec![0.0; problem.n * labels];
    for i in 0..problem.n {
        let row = x.row(i, &mut buf);
        for l in 0..labels {
            scores[i * labels + l] = dot(&z[l * width..(l + 1) * width], &row, bias);
        }
    }
    scores
}
