//! Linear M3L by dual coordinate descent with shrinking (paper §6, after Hsieh et al.
//! 2008).
//!
//! Problem: the dual D2 (25) of [`super::problem`] with K = XXᵀ (X augmented by the
//! constant feature `bias` when an intercept is fitted). The primal Z = 2 Xᵀ A R is kept
//! explicitly, one row z_l per label, so the dual gradient of one variable is
//!   g_pl = b_pl − 2 y_pl z_l·x_p                                   (39)
//! and its exact coordinate step is α_pl ← clip(α_pl + g_pl / (4 R_ll ‖x_p‖²), 0, C_p) (37)
//! (C_p = C·w_p with sample weights).
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

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::problem::{check_tol, label_major, projected, row_major, M3l};
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
///
/// A label that R couples to no other (R_kl = R_lk = 0 for every k ≠ l; with R = I,
/// every label) is a problem of its own: its steps read and write only its own α and
/// z_l, and its orders and shrinking bounds depend on it alone. Such labels are solved
/// whole, one task each, on the current rayon pool (their epochs exactly as the loop
/// over coupled labels would take them, so the result does not depend on the thread
/// count); the coupled labels then run the epoch loop together.
///
/// A label settles when a sweep over all its variables measures every projected
/// gradient below `tol` before that variable's step (LIBLINEAR's rule) and a check at the
/// point after the sweep agrees (`Sweep::max_violation`; the sweep's own steps can leave
/// gradients above `tol`). A coupled label can still be moved by steps of its neighbours
/// below `tol`, so "converged" is only reported once every projected gradient at the
/// returned point is below `tol`; otherwise the solve resumes from it (with the epochs
/// left).
pub fn solve_dcd<D: Design>(
    problem: &M3l<'_>,
    x: &D,
    alpha: &mut [f64],
    options: &DcdOptions,
    monitor: &mut dyn Monitor,
) -> Result<(M3lReport, Vec<f64>)> {
    check_tol(options.tol)?;
    let (mut done, mut pass, mut history) = (0, 0u64, Vec::new());
    loop {
        let budget =
            DcdOptions { max_iter: options.max_iter - done, seed: options.seed.wrapping_add(pass), ..*options };
        let (mut report, z) = solve_dcd_pass(problem, x, alpha, &budget, monitor)?;
        done += report.iterations;
        report.iterations = done;
        // Each pass reports its end; the history counts epochs from the first pass.
        history.extend(report.history.iter().map(|p| Progress { epoch: done, ..*p }));
        if report.status != Status::Converged || report.max_violation < options.tol || done >= options.max_iter {
            if report.status == Status::Converged && report.max_violation >= options.tol {
                report.status = Status::MaxIter;
            }
            report.history = history;
            return Ok((report, z));
        }
        pass += 1;
    }
}

/// One run of the label solvers from `alpha` (see [`solve_dcd`]).
fn solve_dcd_pass<D: Design>(
    problem: &M3l<'_>,
    x: &D,
    alpha: &mut [f64],
    options: &DcdOptions,
    monitor: &mut dyn Monitor,
) -> Result<(M3lReport, Vec<f64>)> {
    let (n, labels) = (problem.n, problem.labels);
    if x.n_rows() != n {
        return Err(Error::input("X", format!("has {} rows, Y has {n}", x.n_rows())));
    }
    problem.check_dual(alpha)?;
    let bias = options.bias;
    let sq_norms = sq_norms_of(x, bias);
    let mut z = primal_of(problem, x, alpha, bias);
    let width = z.len() / labels;
    let columns = LabelMajor::of(problem);
    let sweep = Sweep { problem, y: &columns.y, b: &columns.b, x, bias, sq_norms: &sq_norms, sigma: 1.0 };
    // Label-major α: label l's N variables contiguous, so that labels can be handed out.
    let mut a = label_major(alpha, n, labels);
    let coupled: Vec<bool> = (0..labels)
        .map(|l| (0..labels).any(|k| k != l && (problem.r(k, l) != 0.0 || problem.r(l, k) != 0.0)))
        .collect();
    let started = std::time::Instant::now();

    let stop = monitor.stop_flag();
    let mut outcomes: Vec<(Status, usize)> = a
        .par_chunks_mut(n)
        .zip(z.par_chunks_mut(width))
        .enumerate()
        .filter(|(l, _)| !coupled[*l])
        .map(|(l, (a_l, z_l))| solve_uncoupled_label(&sweep, l, a_l, z_l, options, stop))
        .collect();
    let interrupted = outcomes.iter().any(|&(status, _)| status == Status::Interrupted) || monitor.should_stop();
    if interrupted {
        outcomes.push((Status::Interrupted, 0));
    } else if coupled.contains(&true) {
        outcomes.push(solve_coupled_labels(&sweep, &coupled, &mut a, &mut z, options, monitor));
    }
    let epochs = outcomes.iter().map(|&(_, e)| e).max().unwrap_or(0);
    let status = if outcomes.iter().any(|&(s, _)| s == Status::Interrupted) {
        Status::Interrupted
    } else if outcomes.iter().all(|&(s, _)| s == Status::Converged) {
        Status::Converged
    } else {
        Status::MaxIter
    };
    alpha.copy_from_slice(&row_major(&a, n, labels));
    let scores = training_scores(problem, x, &z, width, bias);
    let (primal, dual) = problem.objectives(alpha, &scores);
    let max_violation = (0..n * labels)
        .map(|idx| {
            projected(alpha[idx], problem.b(idx) - 2.0 * problem.y[idx] * scores[idx], problem.cost(idx / labels)).abs()
        })
        .fold(0.0, f64::max);
    let gap = crate::solvers::relative_gap(primal, dual);
    let progress = Progress { epoch: epochs, primal, dual, gap, elapsed: started.elapsed() };
    monitor.report(&progress);
    Ok((M3lReport { status, iterations: epochs, primal, dual, max_violation, history: vec![progress] }, z))
}

/// (44)–(45) for one label: the shrinking bounds from the weighted extremal projected
/// gradients of the labels coupled to it (itself included); a bound that does not
/// exclude anything (no variable beyond it) shrinks nothing.
fn shrinking_bounds(weighted: impl Iterator<Item = (f64, f64, f64)>) -> (f64, f64) {
    let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
    for (w, max, min) in weighted {
        if w != 0.0 && max.is_finite() {
            hi = hi.max(w * max);
            lo = lo.min(w * min);
        }
    }
    (if lo < 0.0 { lo } else { f64::NEG_INFINITY }, if hi > 0.0 { hi } else { f64::INFINITY })
}

/// The epochs of one label coupled to no other (see [`solve_dcd`]), on its α (`a_l`, N
/// values) and z_l, until it settles (a sweep over all its variables within tol), the
/// budget runs out, or `stop` is raised. Returns the status and the epochs taken.
fn solve_uncoupled_label<D: Design>(
    sweep: &Sweep<'_, D>,
    l: usize,
    a_l: &mut [f64],
    z_l: &mut [f64],
    options: &DcdOptions,
    stop: Option<&AtomicBool>,
) -> (Status, usize) {
    let n = a_l.len();
    let weight = sweep.problem.r(l, l).abs();
    let mut set: Vec<usize> = (0..n).collect();
    let (mut lower, mut upper) = (f64::NEG_INFINITY, f64::INFINITY);
    let mut epochs = 0;
    while epochs < options.max_iter {
        if stop.is_some_and(|flag| flag.load(Ordering::Relaxed)) {
            return (Status::Interrupted, epochs);
        }
        epochs += 1;
        sweep.example_order(&mut set, options.seed, epochs as u64, l);
        let whole = set.len() == n;
        let swept = sweep.label(l, &mut set, options.shrinking.then_some((lower, upper)), a_l, z_l, None);
        if swept.max.max(-swept.min) < options.tol {
            if whole && sweep.max_violation(l, a_l, z_l) < options.tol {
                return (Status::Converged, epochs);
            }
            // Verify on every variable of the label before it rests.
            set = (0..n).collect();
            (lower, upper) = (f64::NEG_INFINITY, f64::INFINITY);
        } else {
            (lower, upper) = shrinking_bounds(std::iter::once((weight, swept.max, swept.min)));
        }
    }
    (Status::MaxIter, epochs)
}

/// The epoch loop over the labels marked `coupled` (α label-major); the others are
/// left alone. Returns the status and the epochs taken.
fn solve_coupled_labels<D: Design>(
    sweep: &Sweep<'_, D>,
    coupled: &[bool],
    a: &mut [f64],
    z: &mut [f64],
    options: &DcdOptions,
    monitor: &mut dyn Monitor,
) -> (Status, usize) {
    let (problem, n) = (sweep.problem, sweep.problem.n);
    let labels = problem.labels;
    let width = z.len() / labels;
    let mut active: Vec<Vec<usize>> =
        (0..labels).map(|l| if coupled[l] { (0..n).collect() } else { Vec::new() }).collect();
    // Extremal projected gradients (ascent convention) of each label's last sweep.
    let mut extremes = vec![LabelSweep::default(); labels];
    let (mut upper, mut lower) = (vec![f64::INFINITY; labels], vec![f64::NEG_INFINITY; labels]);
    // A label is settled when its last sweep over all its variables found every
    // |projected gradient| below tol and no label coupled to it through R has moved by
    // more since (so its gradients are, to within tol, those it was settled with).
    // Settled labels are not swept, and the loop ends when every label is settled.
    let mut settled: Vec<bool> = coupled.iter().map(|&c| !c).collect();
    let mut label_order = Vec::with_capacity(labels);
    let mut pending = Vec::new();
    let mut epochs = 0;
    while epochs < options.max_iter {
        if monitor.should_stop() {
            return (Status::Interrupted, epochs);
        }
        epochs += 1;
        sweep.label_order(&mut label_order, options.seed, epochs as u64);
        let mut returned = vec![false; labels];
        for &l in &label_order {
            // An epoch is N·L steps: stop between labels when asked.
            if monitor.should_stop() {
                return (Status::Interrupted, epochs);
            }
            if settled[l] {
                continue;
            }
            let set = &mut active[l];
            sweep.example_order(set, options.seed, epochs as u64, l);
            let bounds = options.shrinking.then(|| (lower[l], upper[l]));
            let whole = set.len() == n;
            let swept = sweep.label_and_coupled(l, set, bounds, &mut a[l * n..(l + 1) * n], z, &mut pending);
            extremes[l] = swept;
            let within_tol = swept.max.max(-swept.min) < options.tol;
            if within_tol {
                if whole && sweep.max_violation(l, &a[l * n..(l + 1) * n], &z[l * width..(l + 1) * width]) < options.tol
                {
                    settled[l] = true;
                } else {
                    // Verify on every variable of the label before it rests.
                    *set = (0..n).collect();
                    (upper[l], lower[l], returned[l]) = (f64::INFINITY, f64::NEG_INFINITY, true);
                }
            }
            // Steps of a label within tol are as small as the ones a converged epoch takes
            // everywhere; only larger ones wake the labels coupled to it.
            if swept.moved && !within_tol {
                (0..labels).filter(|&k| k != l && problem.r(k, l) != 0.0).for_each(|k| settled[k] = false);
            }
        }
        if !settled.contains(&false) {
            return (Status::Converged, epochs);
        }
        // Next epoch's bounds, coupled through |R|. A label just returned to its whole
        // set keeps it for one sweep.
        for l in (0..labels).filter(|&l| coupled[l] && !returned[l]) {
            (lower[l], upper[l]) =
                shrinking_bounds((0..labels).map(|k| (problem.r(k, l).abs(), extremes[k].max, extremes[k].min)));
        }
    }
    (Status::MaxIter, epochs)
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

/// y and b = Δ⁻ − Δ⁺ of a problem, label-major (entry l·N + i): a label's sweep reads
/// them at shuffled examples, within its own N values instead of L apart. With the
/// label-major α that makes three N × L copies (24 bytes a variable), as SMO keeps;
/// they took the epochs of a 5,000 × 50 problem with 50 labels from ~13 ms to ~6 ms
/// (R = I) and from ~12 ms to ~9 ms (dense R).
pub(crate) struct LabelMajor {
    pub(crate) y: Vec<f64>,
    pub(crate) b: Vec<f64>,
}

impl LabelMajor {
    pub(crate) fn of(problem: &M3l<'_>) -> Self {
        let (n, labels) = (problem.n, problem.labels);
        // b label-major straight from the margins, without a row-major N × L copy first.
        let b = (0..labels).flat_map(|l| (0..n).map(move |i| problem.b(i * labels + l))).collect();
        Self { y: label_major(problem.y, n, labels), b }
    }
}

/// What one label's sweep did: whether a variable moved, and the extremal projected
/// gradients (ascent convention) it saw, which bound the next sweep's shrinking.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LabelSweep {
    pub(crate) moved: bool,
    pub(crate) max: f64,
    pub(crate) min: f64,
}

impl Default for LabelSweep {
    /// A label not swept yet: no extremes.
    fn default() -> Self {
        Self { moved: false, max: f64::NEG_INFINITY, min: f64::INFINITY }
    }
}

/// The coordinate steps of one label, shared by the serial solver and CoCoA+ rounds: the
/// exact step (37) with curvature σ'·4R_ll‖x_p‖² against the weights `z` (the local
/// u = Z + σ'ΔZ_k of a round; Z itself when σ' = 1), which move by σ' times the step's
/// change of Z = 2 Xᵀ A R.
pub(crate) struct Sweep<'a, D: Design> {
    pub(crate) problem: &'a M3l<'a>,
    /// y and b = Δ⁻ − Δ⁺ label-major (see [`LabelMajor`]).
    pub(crate) y: &'a [f64],
    pub(crate) b: &'a [f64],
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

    /// The largest |projected gradient| of label l's variables at (α_l, z_l), with no step.
    ///
    /// A sweep measures each gradient before that variable's own step (LIBLINEAR's rule),
    /// so the steps after it can leave it above tol (3.5e-3 at tol 1e-3 was seen): a label
    /// settles only when this check, one pass of dot products, also holds.
    pub(crate) fn max_violation(&self, l: usize, alpha_l: &[f64], z_l: &[f64]) -> f64 {
        let n = self.problem.n;
        let (y_l, b_l) = (&self.y[l * n..(l + 1) * n], &self.b[l * n..(l + 1) * n]);
        let mut buf = RowBuf::new();
        (0..n)
            .map(|p| {
                let g = b_l[p] - 2.0 * y_l[p] * dot(z_l, &self.x.row(p, &mut buf), self.bias);
                projected(alpha_l[p], g, self.problem.cost(p)).abs()
            })
            .fold(0.0, f64::max)
    }

    /// Steps on label l over `set` (in order), on its α (`alpha_l`, N values) and z_l;
    /// with shrinking `bounds` = (lower, upper), a variable stuck at a bound beyond them
    /// leaves the set. `pending`, when given, accumulates v_l = Σ y δ x (43) for the
    /// labels coupled to l.
    pub(crate) fn label(
        &self,
        l: usize,
        set: &mut Vec<usize>,
        bounds: Option<(f64, f64)>,
        alpha_l: &mut [f64],
        z_l: &mut [f64],
        mut pending: Option<&mut [f64]>,
    ) -> LabelSweep {
        let (problem, bias, sigma) = (self.problem, self.bias, self.sigma);
        let n = problem.n;
        let (y_l, b_l) = (&self.y[l * n..(l + 1) * n], &self.b[l * n..(l + 1) * n]);
        let r_ll = problem.r(l, l);
        let mut buf = RowBuf::new();
        let mut swept = LabelSweep::default();
        let mut s = 0;
        while s < set.len() {
            let p = set[s];
            if let Some(&next) = set.get(s + 1) {
                // Variable (next, l)'s α, label and margin, at a shuffled position.
                self.x.prefetch_row(next);
                for values in [&*alpha_l, y_l, b_l] {
                    crate::vector_code::prefetch_entry(values, next);
                }
                crate::vector_code::prefetch_entry(self.sq_norms, next);
            }
            let row = self.x.row(p, &mut buf);
            let (yp, bp, c) = (y_l[p], b_l[p], problem.cost(p));
            let g = bp - 2.0 * yp * dot(z_l, &row, bias);
            let a = alpha_l[p];
            // Shrink a variable stuck at a bound beyond the label's extremal gradients.
            if let Some((lower, upper)) = bounds {
                if a <= 0.0 && g < lower || a >= c && g > upper {
                    set.swap_remove(s);
                    continue;
                }
            }
            let pg = projected(a, g, c);
            swept.max = swept.max.max(pg);
            swept.min = swept.min.min(pg);
            s += 1;
            if pg == 0.0 {
                continue;
            }
            let new = if self.sq_norms[p] == 0.0 {
                // x_p = 0 (an empty row without intercept): the dual is linear in this
                // variable, so its maximum is the bound the gradient points to (the limit
                // of the step below as ‖x_p‖ → 0). Z does not move.
                if g > 0.0 {
                    c
                } else {
                    0.0
                }
            } else {
                (a + g / (sigma * 4.0 * r_ll * self.sq_norms[p])).clamp(0.0, c)
            };
            let delta = new - a;
            if delta != 0.0 {
                alpha_l[p] = new;
                let step = yp * delta;
                axpy(sigma * 2.0 * r_ll * step, &row, bias, z_l);
                if let Some(v) = pending.as_deref_mut() {
                    axpy(step, &row, bias, v);
                }
                swept.moved = true;
            }
        }
        swept
    }

    /// [`Self::label`] on the whole Z (L rows), then (42): every label k coupled to l
    /// catches up, z_k += σ'·2 R_kl v_l. `pending` is scratch for v_l.
    pub(crate) fn label_and_coupled(
        &self,
        l: usize,
        set: &mut Vec<usize>,
        bounds: Option<(f64, f64)>,
        alpha_l: &mut [f64],
        z: &mut [f64],
        pending: &mut Vec<f64>,
    ) -> LabelSweep {
        let labels = self.problem.labels;
        let width = z.len() / labels;
        // v_l (43) is needed only by labels coupled to l; with R = I it would be a
        // second axpy per step for nothing.
        let coupled = (0..labels).any(|k| k != l && self.problem.r(k, l) != 0.0);
        pending.clear();
        pending.resize(if coupled { width } else { 0 }, 0.0);
        let swept = self.label(
            l,
            set,
            bounds,
            alpha_l,
            &mut z[l * width..(l + 1) * width],
            coupled.then_some(&mut pending[..]),
        );
        if swept.moved && coupled {
            for k in (0..labels).filter(|&k| k != l) {
                let r_kl = self.problem.r(k, l);
                if r_kl != 0.0 {
                    for (zk, &v) in z[k * width..(k + 1) * width].iter_mut().zip(pending.iter()) {
                        *zk += self.sigma * 2.0 * r_kl * v;
                    }
                }
            }
        }
        swept
    }
}

/// F = X Zᵀ on the training rows.
pub(crate) fn training_scores<D: Design>(
    problem: &M3l<'_>,
    x: &D,
    z: &[f64],
    width: usize,
    bias: Option<f64>,
) -> Vec<f64> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::rng::SplitMix64;

    /// A monitor whose stop flag is raised from the start, or never.
    struct Raised(AtomicBool);

    impl Monitor for Raised {
        fn should_stop(&mut self) -> bool {
            self.0.load(Ordering::Relaxed)
        }

        fn stop_flag(&self) -> Option<&AtomicBool> {
            Some(&self.0)
        }
    }

    /// 120 examples, 6 labels; R couples labels 1–3 and 3–4, the others are uncoupled.
    fn fit(threads: usize, stop: bool) -> (M3lReport, Vec<f64>, Vec<f64>) {
        let (n, d, labels) = (120, 4, 6);
        let mut rng = SplitMix64::new(8);
        let x: Vec<f64> = (0..n * d).map(|_| rng.next_f64() - 0.5).collect();
        let y: Vec<f64> = (0..n * labels)
            .map(|t| if x[(t / labels) * d + t % d] + 0.2 * (rng.next_f64() - 0.5) > 0.0 { 1.0 } else { -1.0 })
            .collect();
        let mut r = vec![0.0; labels * labels];
        (0..labels).for_each(|l| r[l * labels + l] = 1.0);
        for (l, k, v) in [(1, 3, 0.2), (3, 4, -0.15)] {
            (r[l * labels + k], r[k * labels + l]) = (v, v);
        }
        let (plus, minus) = (vec![0.0; n * labels], vec![2.0; n * labels]);
        let problem = M3l::new(n, labels, &y, &r, 0.6, &plus, &minus).unwrap();
        let design = DenseRows::new(&x, n, d).unwrap();
        let options = DcdOptions { tol: 1e-8, max_iter: 10_000, seed: 5, bias: Some(1.0), shrinking: true };
        let mut alpha = vec![0.0; n * labels];
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let (report, z) = pool
            .install(|| solve_dcd(&problem, &design, &mut alpha, &options, &mut Raised(AtomicBool::new(stop))))
            .unwrap();
        (report, alpha, z)
    }

    /// Uncoupled labels are solved as tasks of the pool; their steps are their own, so
    /// the fit is the same bit for bit on one thread and on three.
    #[test]
    fn the_fit_does_not_depend_on_the_thread_count() {
        let (one, alpha_one, z_one) = fit(1, false);
        let (three, alpha_three, z_three) = fit(3, false);
        assert_eq!(one.status, Status::Converged);
        // The same report but for the seconds its history records.
        let untimed = |r: &M3lReport| M3lReport {
            history: r.history.iter().map(|p| Progress { elapsed: Default::default(), ..*p }).collect(),
            ..r.clone()
        };
        assert_eq!(untimed(&one), untimed(&three));
        assert!(alpha_one.iter().zip(&alpha_three).all(|(a, b)| a.to_bits() == b.to_bits()));
        assert!(z_one.iter().zip(&z_three).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    /// A raised stop flag stops the uncoupled labels' tasks and the coupled loop alike.
    #[test]
    fn a_raised_stop_flag_interrupts_the_solve() {
        let (report, alpha, _) = fit(2, true);
        assert_eq!(report.status, Status::Interrupted);
        assert_eq!(report.iterations, 0);
        assert!(alpha.iter().all(|&a| a == 0.0));
    }
}
