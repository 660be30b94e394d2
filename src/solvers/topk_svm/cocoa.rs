//! Parallel Prox-SDCA: CoCoA/CoCoA+ (Jaggi et al. 2014; Ma, Smith, Jaggi et al. 2015) with
//! exact local SDCA steps and, for quadratic duals, an exact line search.
//!
//! Each epoch the (active) examples are shuffled and split into B blocks, one per
//! thread. A round lets every block run SDCA steps on its next H examples against a
//! local copy u_b = W + σ'·ΔW_b with the curvature kii replaced by σ'·kii (for example
//! i: the loss's exact update with q = u_bᵀx_i − σ'·kii·a_i); then the blocks' changes
//! are combined: (A, W) ← (A, W) + t·(ΔA, Σ_b ΔW_b).
//! * Losses whose dual terms are quadratic (the hinge losses): σ' = 1 and t maximises
//!   D exactly along the segment (`step_length`). t = 1/B is CoCoA's averaging, which
//!   converges; the line search does at least as well each round, so D never decreases
//!   and the iterates converge to the serial optimum. When the blocks' changes barely
//!   interact, t ≈ 1 and a round is worth B serial rounds.
//! * Other losses: σ' = B and t = 1 (CoCoA+ "adding"), safe by CoCoA+ Lemma 4.
//!
//! The stopping rule (relative duality gap ≤ tol over all examples) is the serial one.
//!
//! Reproducibility: the partition, orders and sums depend only on the seed and B, never
//! on thread timing.

use rayon::prelude::*;

use super::dual::{DisjointRows, DualRowsMut};
use super::loss::SdcaLoss;
use super::model::{LinearModel, ScoreModel};
use super::problem::{objectives, ActiveSet, Examples};
use super::solver::{
    check_active, check_curvatures, check_problem, drive, early_check, epoch_order, prefetch_step, restricted_step,
    SdcaOptions, SdcaReport, StepScratch,
};
use crate::data::Design;
use crate::solvers::Monitor;
use crate::{Error, Result};

/// Examples per block between two aggregations.
const ROUND_EXAMPLES: usize = 1024;

/// Entries of W per task of the parallel aggregation (fixed: sums do not depend on the
/// thread count).
const AGGREGATE_CHUNK: usize = 4096;

struct Block {
    /// Local weights u_b.
    u: Vec<f64>,
    /// The dual rows, as they were before the block's latest round, of that round's
    /// examples. The steps write the new rows into A; a round whose t is below 1 pulls
    /// them back to old + t·(new − old) at the start of the next round or in `flush`.
    old_rows: Vec<f64>,
    step: StepScratch,
    /// Midpoint row for the line search.
    mid: Vec<f64>,
    /// This round's Σ D_i(a_i + ½Δa_i) − D_i(a_i) and Σ D_i(a_i + Δa_i) − D_i(a_i) over
    /// the block's examples (the dual terms of the line search, see `step_length`).
    dual_half: f64,
    dual_one: f64,
    /// The positions in the block's part of the examples of its latest round.
    span: std::ops::Range<usize>,
}

/// CoCoA+ over `n_blocks` blocks on the current rayon pool (see the module docs),
/// starting from the shrinking state `active` (`ActiveSet::new(n)`, or the state a
/// previous solve on a nearby problem left: see `solver::solve_from`). On Err, `a` may
/// hold part of a round's steps, out of step with the model's W: discard both.
#[allow(clippy::too_many_arguments)]
pub fn solve_cocoa<D: Design, L: SdcaLoss + ?Sized, A: DualRowsMut + ?Sized>(
    model: &mut LinearModel<D>,
    loss: &L,
    ex: &Examples,
    a: &mut A,
    opts: &SdcaOptions,
    n_blocks: usize,
    active: &mut ActiveSet,
    monitor: &mut dyn Monitor,
) -> Result<SdcaReport> {
    let n = model.design().n_rows();
    let m = model.n_classes();
    check_problem(loss, ex, a, n, m)?;
    check_curvatures(&*model)?;
    check_active(active, n)?;
    if n_blocks < 2 {
        return Err(Error::param("n_blocks", "CoCoA+ needs at least 2 blocks"));
    }
    // Quadratic duals get the exact line search with σ' = 1; others the safe σ' = B.
    let line_search = loss.dual_is_quadratic();
    let sigma = if line_search { 1.0 } else { n_blocks as f64 };
    let mut total = vec![0.0; model.weights().len()];
    let mut order: Vec<usize> = (0..n).filter(|&i| ex.c[i] > 0.0).collect();
    let active = std::cell::RefCell::new(active);
    let width = model.weights().len();
    let mut blocks: Vec<Block> = (0..n_blocks)
        .map(|_| Block {
            u: vec![0.0; width],
            old_rows: Vec::new(),
            step: StepScratch::new(m),
            mid: vec![0.0; m],
            dual_half: 0.0,
            dual_one: 0.0,
            span: 0..0,
        })
        .collect();
    let model_cell = std::cell::RefCell::new(model);
    let a_cell = std::cell::RefCell::new(a);
    drive(
        opts,
        early_check(loss, opts, m),
        monitor,
        |epoch, monitor| {
            let mut model = model_cell.borrow_mut();
            let mut a = a_cell.borrow_mut();
            let active = active.borrow();
            epoch_order(&mut order, &active, ex, opts, epoch);
            // W leaves the model for the epoch (the blocks only need the design from it).
            let mut w = std::mem::take(&mut model.w);
            let setup = Epoch { model: &**model, loss, ex, active: &active, sigma, line_search };
            let result = setup.epoch(&order, &mut blocks, &a.disjoint(m), &mut w, &mut total, monitor);
            model.w = w;
            result
        },
        |stop| {
            objectives(
                &**model_cell.borrow(),
                loss,
                ex,
                &**a_cell.borrow(),
                &mut active.borrow_mut(),
                opts.shrinking,
                stop,
            )
        },
    )
}

/// What every round of an epoch shares.
struct Epoch<'r, D: Design, L: SdcaLoss + ?Sized> {
    model: &'r LinearModel<'r, D>,
    loss: &'r L,
    ex: &'r Examples<'r>,
    active: &'r ActiveSet,
    sigma: f64,
    line_search: bool,
}

impl<D: Design, L: SdcaLoss + ?Sized> Epoch<'_, D, L> {
    /// One epoch over `order` (this epoch's shuffled examples), split into one part per
    /// block. Returns whether the monitor asked to stop; (A, W) are consistent
    /// (W = XᵀA) whenever it returns Ok. On Err the solve is abandoned.
    ///
    /// Round r's combination (A, W) += t·(ΔA, ΔW) is applied lazily, fused into round
    /// r + 1's two parallel passes — one over the blocks (u_b = W + tΔW, the block's
    /// rows of round r, then its local steps) and one over W by chunks (W += tΔW, then
    /// the new ΔW and its inner products) — so a round has no serial O(round) or O(W)
    /// work. `pending` holds t while round r's rows in A are still its full steps and its
    /// ΔW in `total`.
    fn epoch(
        &self,
        order: &[usize],
        blocks: &mut [Block],
        rows: &DisjointRows,
        w: &mut [f64],
        total: &mut [f64],
        monitor: &mut dyn Monitor,
    ) -> Result<bool> {
        // Exactly one part per block (sizes differ by at most one), so every block's u_b
        // and line-search terms belong to this round.
        let (len, b) = (order.len(), blocks.len());
        let parts: Vec<&[usize]> = (0..b).map(|k| &order[k * len / b..(k + 1) * len / b]).collect();
        let mut pending: Option<f64> = None;
        for round in 0..len.div_ceil(b).div_ceil(ROUND_EXAMPLES) {
            if monitor.should_stop() {
                self.flush(pending, &parts, blocks, rows, w, total);
                return Ok(true);
            }
            let (w_now, dw) = (&*w, &*total);
            blocks.par_iter_mut().zip(parts.par_iter()).try_for_each(|(block, part)| {
                match pending {
                    Some(t) => {
                        block.u.iter_mut().zip(w_now.iter().zip(dw)).for_each(|(u, (&w, &d))| *u = advanced(w, t, d));
                        self.commit(block, part, rows, t);
                    }
                    None => block.u.copy_from_slice(w_now),
                }
                block.old_rows.clear();
                block.span = span(part, round);
                (block.dual_half, block.dual_one) = (0.0, 0.0);
                let examples = &part[block.span.clone()];
                for (j, &i) in examples.iter().enumerate() {
                    if let Some(&next) = examples.get(j + 1) {
                        prefetch_step(self.model, self.ex, self.active, next);
                        // SAFETY: `next` is in this block's part: no other thread writes it.
                        unsafe { rows.prefetch(next) };
                    }
                    self.local_step(i, rows, block)?;
                }
                Ok::<(), Error>(())
            })?;
            // W += t_prev ΔW_prev, then ΔW = Σ_b (u_b − W)/σ' with ⟨W, ΔW⟩ and ‖ΔW‖².
            let locals: Vec<&[f64]> = blocks.iter().map(|b| &b.u[..]).collect();
            let products: Vec<[f64; 2]> = w
                .par_chunks_mut(AGGREGATE_CHUNK)
                .zip(total.par_chunks_mut(AGGREGATE_CHUNK))
                .enumerate()
                .map(|(chunk, (w, dw))| {
                    if let Some(t) = pending {
                        w.iter_mut().zip(dw.iter()).for_each(|(w, &d)| *w = advanced(*w, t, d));
                    }
                    let lo = chunk * AGGREGATE_CHUNK;
                    for (j, d) in dw.iter_mut().enumerate() {
                        *d = locals.iter().map(|u| u[lo + j] - w[j]).sum::<f64>() / self.sigma;
                    }
                    [crate::linalg::dot(w, dw), crate::linalg::dot(dw, dw)]
                })
                .collect();
            // Summed in chunk and block order: t does not depend on the thread count.
            let (w_dw, dw_dw) = products.iter().fold((0.0, 0.0), |(p, q), v| (p + v[0], q + v[1]));
            pending = Some(if self.line_search {
                // Summed in block order: t does not depend on thread timing.
                let (f_half, f_one) = blocks.iter().fold((0.0, 0.0), |(h, o), b| (h + b.dual_half, o + b.dual_one));
                step_length(f_half, f_one, w_dw, dw_dw)
            } else {
                1.0
            });
        }
        self.flush(pending, &parts, blocks, rows, w, total);
        Ok(false)
    }

    /// Applies a pending combination: every block's rows, and W += tΔW.
    fn flush(
        &self,
        pending: Option<f64>,
        parts: &[&[usize]],
        blocks: &mut [Block],
        rows: &DisjointRows,
        w: &mut [f64],
        total: &[f64],
    ) {
        if let Some(t) = pending {
            blocks.par_iter_mut().zip(parts.par_iter()).for_each(|(block, part)| self.commit(block, part, rows, t));
            w.par_chunks_mut(AGGREGATE_CHUNK)
                .zip(total.par_chunks(AGGREGATE_CHUNK))
                .for_each(|(w, dw)| w.iter_mut().zip(dw).for_each(|(w, &d)| *w = advanced(*w, t, d)));
        }
    }

    /// a_i ← old_i + t (a_i − old_i) for the examples of the block's last round. Nothing
    /// to do at t = 1, the usual case: A already holds the full steps (and the A rows
    /// of a past round, long evicted from the cache, are not read again).
    fn commit(&self, block: &mut Block, part: &[usize], rows: &DisjointRows, t: f64) {
        if t == 1.0 {
            return;
        }
        let m = self.model.n_classes();
        let scratch = &mut block.step.dense_row;
        for (&i, old) in part[block.span.clone()].iter().zip(block.old_rows.chunks_exact(m)) {
            let pull_back = |ai: &mut [f64]| {
                // Only the step's classes can have changed.
                for &c in self.active.classes(i).unwrap_or(self.model.all_classes()) {
                    let c = c as usize;
                    ai[c] = old[c] + t * (ai[c] - old[c]);
                }
                Ok(true)
            };
            // SAFETY: parts are disjoint, so no other thread touches row i meanwhile.
            unsafe { rows.update_row(i, scratch, pull_back) }.expect("pulling a row back does not fail");
        }
    }

    /// One σ'-scaled SDCA step of example i (its row of A in `rows`, which only this
    /// block's thread touches); appends the old row to `block.old_rows` and, for the
    /// line search, adds its dual-term changes at t = ½ and 1.
    fn local_step(&self, i: usize, rows: &DisjointRows, block: &mut Block) -> Result<()> {
        let model = self.model;
        let classes = self.active.classes(i).unwrap_or(model.all_classes());
        let k = classes.len();
        model.scores_with(&block.u, i, classes, &mut block.step.s[..k], &mut block.step.buf);
        let mut scratch = std::mem::take(&mut block.step.dense_row);
        // SAFETY: parts are disjoint, so no other thread touches row i.
        let changed = unsafe { rows.update_row(i, &mut scratch, |ai| self.step_row(i, classes, ai, block)) };
        block.step.dense_row = scratch;
        classes.iter().for_each(|&c| block.step.delta[c as usize] = 0.0);
        changed.map(|_| ())
    }

    /// [`Epoch::local_step`] on the dense row `ai` (scores in `block.step.s`).
    fn step_row(&self, i: usize, classes: &[u32], ai: &mut [f64], block: &mut Block) -> Result<bool> {
        let (model, ex, step) = (self.model, self.ex, &mut block.step);
        let start = block.old_rows.len();
        block.old_rows.extend_from_slice(ai);
        let a_old = &block.old_rows[start..];
        let changed = restricted_step(self.loss, ex, i, classes, model.sq_norm(i), self.sigma, ai, step)?;
        if changed {
            model.apply_with(&mut block.u, i, &step.delta, self.sigma, &mut step.buf);
            if self.line_search {
                let (y, c) = (ex.labels(i), ex.c[i]);
                block.mid.iter_mut().zip(a_old.iter().zip(ai.iter())).for_each(|(h, (&o, &v))| *h = 0.5 * (o + v));
                let d0 = self.loss.dual(a_old, y, c);
                block.dual_half += self.loss.dual(&block.mid, y, c) - d0;
                block.dual_one += self.loss.dual(ai, y, c) - d0;
            }
        }
        Ok(changed)
    }
}

/// W + tΔW for one entry, in plain (unfused) arithmetic: the blocks' copies u_b and the
/// aggregated W are computed by this one function, so they agree bit for bit and
/// u_b − W is exactly the block's own change.
#[inline]
fn advanced(w: f64, t: f64, dw: f64) -> f64 {
    w + t * dw
}

/// The examples of `part` in round `round`.
fn span(part: &[usize], round: usize) -> std::ops::Range<usize> {
    let lo = (round * ROUND_EXAMPLES).min(part.len());
    lo..((round + 1) * ROUND_EXAMPLES).min(part.len())
}

/// The step t ∈ [0, 1] maximising D(A + tΔA) for a loss whose dual terms are quadratic
/// along the segment, so that their changes at t = ½ and t = 1 (`dual_half`, `dual_one`,
/// summed over the changed examples) give them exactly:
///   D(A + tΔA) − D(A) = (α − ⟨W, ΔW⟩) t + (β − ½‖ΔW‖²) t²,
/// α = 4·dual_half − dual_one, β = 2·dual_one − 4·dual_half. Every point of the segment
/// is feasible (the dual sets are convex). Also the step of `toprank.distributed`'s line
/// search, over the partitions' rounds (`local_round.rs`).
pub fn step_length(dual_half: f64, dual_one: f64, w_dw: f64, dw_dw: f64) -> f64 {
    let slope = (4.0 * dual_half - dual_one) - w_dw;
    let curvature = (2.0 * dual_one - 4.0 * dual_half) - 0.5 * dw_dw;
    if curvature < 0.0 {
        (-slope / (2.0 * curvature)).clamp(0.0, 1.0)
    } else if slope + curvature > 0.0 {
        1.0
    } else {
        0.0
    }
}
