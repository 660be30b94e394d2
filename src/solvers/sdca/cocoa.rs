//! Parallel Prox-SDCA: CoCoA+ (Ma, Smith, Jaggi et al. 2015) with exact local SDCA steps.
//!
//! Each epoch the examples are shuffled and split into B blocks, one per thread. A round
//! lets every block run SDCA steps on its next H examples against a local copy
//! u_b = W + σ'·ΔW_b, with the curvature kii replaced by σ'·kii; then the changes are
//! added: W ← W + Σ_b ΔW_b. With σ' = B ("adding" aggregation) each local problem is a
//! lower bound on the dual increase of its own changes, so D(A) never decreases and the
//! iterates converge to the same optimum as serial SDCA (CoCoA+ Theorem 2); the stopping
//! rule (relative duality gap ≤ tol) is the same. For example i in block b, the local
//! step is the loss's exact update with q = u_bᵀx_i − σ'·kii·a_i and curvature σ'·kii.
//!
//! Reproducibility: the partition, orders and sums depend only on the seed and B, never
//! on thread timing.

use rayon::prelude::*;

use super::loss::{LossWorkspace, SdcaLoss};
use super::model::LinearModel;
use super::problem::{objectives, Examples};
use super::solver::{drive, SdcaOptions, SdcaReport};
use crate::data::{Design, RowBuf};
use crate::rng::SplitMix64;
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
    let sigma = n_blocks as f64;
    let mut order: Vec<usize> = (0..n).filter(|&i| ex.c[i] > 0.0).collect();
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
            SplitMix64::derive(opts.seed, epoch as u64).shuffle(&mut order);
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
                // Write the new dual rows back and add the blocks' changes (u_b − W)/σ'.
                let mut total = vec![0.0; width];
                for (block, part) in blocks.iter().zip(&parts) {
                    for (k, &i) in part[span(part)].iter().enumerate() {
                        a[i * m..(i + 1) * m].copy_from_slice(&block.rows[k * m..(k + 1) * m]);
                    }
                    for ((t, &u), &w0) in total.iter_mut().zip(&block.u).zip(model.weights()) {
                        *t += (u - w0) / sigma;
                    }
                }
                model.weights_mut().iter_mut().zip(&total).for_each(|(w, t)| *w += t);
            }
            Ok(false)
        },
        || objectives(&**model_cell.borrow(), loss, ex, &a_cell.borrow()),
    )
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
