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

use super::loss::{LossWorkspace, SdcaLoss};
use super::model::LinearModel;
use super::problem::{objectives, Examples};
use super::solver::{drive, epoch_order, SdcaOptions, SdcaReport};
use crate::data::{Design, RowBuf};
use crate::solvers::Monitor;
use crate::{Error, Result};

/// Examples per block between two aggregations.
const ROUND_EXAMPLES: usize = 512;

struct Block {
    /// Local weights u_b.
    u: Vec<f64>,
    /// New dual rows of the examples this block visited in the current round.
    rows: Vec<f64>,
    ws: LossWorkspace,
    buf: RowBuf,
    s: Vec<f64>,
    delta: Vec<f64>,
}

/// CoCoA+ over `n_blocks` blocks on the current rayon pool (see the module docs).
pub fn solve_cocoa<D: Design, L: SdcaLoss + ?Sized>(
    model: &mut LinearModel<D>,
    loss: &L,
    ex: &Examples,
    a: &mut [f64],
    opts: &SdcaOptions,
    n_blocks: usize,
    monitor: &mut dyn Monitor,
) -> Result<SdcaReport> {
    let n = model.design().n_rows();
    let m = super::model::ScoreModel::n_classes(model);
    loss.check(m)?;
    ex.check(n, m)?;
    if n_blocks < 2 {
        return Err(Error::param("n_blocks", "CoCoA+ needs at least 2 blocks"));
    }
    if a.len() != n * m {
        return Err(Error::input("dual_coef", format!("must have {n} x {m} entries, got {}", a.len())));
    }
    // Quadratic duals get the exact line search with σ' = 1; others the safe σ' = B.
    let line_search = loss.dual_is_quadratic();
    let sigma = if line_search { 1.0 } else { n_blocks as f64 };
    let mut total = vec![0.0; model.weights().len()];
    let mut mid = vec![0.0; m];
    let mut order: Vec<usize> = (0..n).filter(|&i| ex.c[i] > 0.0).collect();
    let active = std::cell::RefCell::new(vec![true; n]);
    let width = model.weights().len();
    let mut blocks: Vec<Block> = (0..n_blocks)
        .map(|_| Block {
            u: vec![0.0; width],
            rows: Vec::new(),
            ws: LossWorkspace::new(),
            buf: RowBuf::new(),
            s: vec![0.0; m],
            delta: vec![0.0; m],
        })
        .collect();
    let model_cell = std::cell::RefCell::new(model);
    let a_cell = std::cell::RefCell::new(a);
    drive(
        opts,
        monitor,
        |epoch, monitor| {
            let mut model = model_cell.borrow_mut();
            let mut a = a_cell.borrow_mut();
            epoch_order(&mut order, &active.borrow(), ex, opts, epoch);
            let per_block = order.len().div_ceil(n_blocks);
            let parts: Vec<&[usize]> = order.chunks(per_block.max(1)).collect();
            let rounds = per_block.div_ceil(ROUND_EXAMPLES);
            for round in 0..rounds {
                if monitor.should_stop() {
                    return Ok(true);
                }
                let span = |part: &[usize]| {
                    let lo = (round * ROUND_EXAMPLES).min(part.len());
                    lo..((round + 1) * ROUND_EXAMPLES).min(part.len())
                };
                let (w, model_ref, a_ref) = (model.weights(), &**model, &**a);
                blocks.par_iter_mut().zip(parts.par_iter()).try_for_each(|(block, part)| {
                    block.u.copy_from_slice(w);
                    block.rows.clear();
                    for &i in &part[span(part)] {
                        local_step(model_ref, loss, ex, i, &a_ref[i * m..(i + 1) * m], sigma, block)?;
                    }
                    Ok::<(), Error>(())
                })?;
                // ΔW = Σ_b (u_b − W)/σ', then the step length t along (ΔA, ΔW).
                total.iter_mut().for_each(|t| *t = 0.0);
                for block in &blocks {
                    for ((t, &u), &w0) in total.iter_mut().zip(&block.u).zip(model.weights()) {
                        *t += (u - w0) / sigma;
                    }
                }
                let changes = || {
                    blocks.iter().zip(&parts).flat_map(|(block, part)| {
                        part[span(part)].iter().enumerate().map(move |(k, &i)| (i, &block.rows[k * m..(k + 1) * m]))
                    })
                };
                let t = if line_search {
                    step_length(loss, ex, &a, changes(), model.weights(), &total, &mut mid)
                } else {
                    1.0
                };
                for (i, new) in changes() {
                    a[i * m..(i + 1) * m].iter_mut().zip(new).for_each(|(old, &v)| *old += t * (v - *old));
                }
                crate::linalg::axpy(t, &total, model.weights_mut());
            }
            Ok(false)
        },
        || objectives(&**model_cell.borrow(), loss, ex, &a_cell.borrow(), &mut active.borrow_mut()),
    )
}

/// The step t ∈ [0, 1] maximising D(A + tΔA) for a loss whose dual terms are
/// quadratic along the segment (so three evaluations, at t = 0, ½, 1, give them exactly):
///   D(A + tΔA) − D(A) = (α − ⟨W, ΔW⟩) t + (β − ½‖ΔW‖²) t².
/// Every point of the segment is feasible (the dual sets are convex).
fn step_length<'r, L: SdcaLoss + ?Sized>(
    loss: &L,
    ex: &Examples,
    a: &[f64],
    changes: impl Iterator<Item = (usize, &'r [f64])>,
    w: &[f64],
    dw: &[f64],
    mid: &mut [f64],
) -> f64 {
    let m = mid.len();
    let (mut f_half, mut f_one) = (0.0, 0.0);
    for (i, new) in changes {
        let (old, y, c) = (&a[i * m..(i + 1) * m], ex.y[i], ex.c[i]);
        mid.iter_mut().zip(old.iter().zip(new)).for_each(|(h, (&o, &v))| *h = 0.5 * (o + v));
        let d0 = loss.dual(old, y, c);
        f_half += loss.dual(mid, y, c) - d0;
        f_one += loss.dual(new, y, c) - d0;
    }
    let slope = (4.0 * f_half - f_one) - crate::linalg::dot(w, dw);
    let curvature = (2.0 * f_one - 4.0 * f_half) - 0.5 * crate::linalg::dot(dw, dw);
    if curvature < 0.0 {
        (-slope / (2.0 * curvature)).clamp(0.0, 1.0)
    } else if slope + curvature > 0.0 {
        1.0
    } else {
        0.0
    }
}

/// One σ'-scaled SDCA step of example i in a block; appends the new a_i to `block.rows`.
fn local_step<D: Design, L: SdcaLoss + ?Sized>(
    model: &LinearModel<D>,
    loss: &L,
    ex: &Examples,
    i: usize,
    a_old: &[f64],
    sigma: f64,
    block: &mut Block,
) -> Result<()> {
    let kii = super::model::ScoreModel::sq_norm(model, i);
    model.scores_with(&block.u, i, &mut block.s, &mut block.buf);
    block.s.iter_mut().zip(a_old).for_each(|(sj, &aj)| *sj -= sigma * kii * aj);
    let start = block.rows.len();
    block.rows.extend_from_slice(a_old);
    let ai = &mut block.rows[start..];
    loss.update(&block.s, sigma * kii, ex.y[i], ex.c[i], ai, &mut block.ws)?;
    let mut changed = false;
    for ((d, &new), &old) in block.delta.iter_mut().zip(ai.iter()).zip(a_old) {
        *d = new - old;
        changed |= *d != 0.0;
    }
    if changed {
        model.apply_with(&mut block.u, i, &block.delta, sigma, &mut block.buf);
    }
    Ok(())
}
