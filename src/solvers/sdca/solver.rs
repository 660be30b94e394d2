//! Prox-SDCA for multiclass losses (Lapin, Hein, Schiele 2015, Algorithm 1; Shalev-Shwartz
//! and Zhang's proximal SDCA).
//!
//! Problem:  min_W ½‖W‖²_F + Σ_i c_i L(Wᵀx_i; y_i)   and its dual max_A D(A) (see `loss.rs`).
//! Each epoch visits the examples in a seeded random order; for example i it computes
//! the scores s = Wᵀx_i, maximises D exactly over the row a_i (the loss's `update`,
//! Proposition 4) and applies the rank-one change W += x_i (a_i − a_i^old)ᵀ. Every step
//! increases D (or leaves it unchanged), so D is monotone; P ≥ D always (weak duality).
//! Optimality: P(W(A)) = D(A). We stop when (P − D) ≤ tol · max(|P|, |D|), checked every
//! `check_every` epochs on all threads.

use std::time::Instant;

use super::loss::{LossWorkspace, SdcaLoss};
use super::model::ScoreModel;
use super::problem::{objectives, Examples, Objectives};
use crate::data::RowBuf;
use crate::rng::SplitMix64;
use crate::solvers::{Monitor, Progress, Status};
use crate::{Error, Result};

/// Solver settings.
#[derive(Debug, Clone, Copy)]
pub struct SdcaOptions {
    /// Relative duality-gap tolerance.
    pub tol: f64,
    pub max_epochs: usize,
    /// Epochs between two duality-gap checks.
    pub check_every: usize,
    pub seed: u64,
    /// Skip examples with a_i = 0 and zero loss between gap checks (see `objectives`).
    pub shrinking: bool,
}

impl SdcaOptions {
    pub(crate) fn check(&self) -> Result<()> {
        if !(self.tol > 0.0 && self.tol.is_finite()) {
            return Err(Error::param("tol", format!("must be finite and > 0, got {}", self.tol)));
        }
        if self.max_epochs == 0 {
            return Err(Error::param("max_epochs", "must be >= 1"));
        }
        if self.check_every == 0 {
            return Err(Error::param("check_every", "must be >= 1"));
        }
        Ok(())
    }
}

/// What a solve did.
#[derive(Debug, Clone)]
pub struct SdcaReport {
    pub status: Status,
    /// Epochs completed.
    pub epochs: usize,
    /// Objectives at the end (always evaluated on the returned iterate).
    pub objectives: Objectives,
    /// Every gap check, in order.
    pub history: Vec<Progress>,
}

/// Examples between two polls of the monitor's stop flag.
pub(crate) const POLL_EVERY: usize = 128;

/// The epoch loop shared by the serial and the parallel solver: run epochs, check the
/// gap every `check_every` epochs (and at the end), report, decide the status.
pub(crate) fn drive(
    opts: &SdcaOptions,
    monitor: &mut dyn Monitor,
    mut epoch: impl FnMut(usize, &mut dyn Monitor) -> Result<bool>,
    mut evaluate: impl FnMut() -> Result<Objectives>,
) -> Result<SdcaReport> {
    opts.check()?;
    let start = Instant::now();
    let mut history = Vec::new();
    let mut last_dual = f64::NEG_INFINITY;
    let mut check = |epochs: usize, history: &mut Vec<Progress>, monitor: &mut dyn Monitor| -> Result<(Objectives, f64)> {
        let obj = evaluate()?;
        let gap = obj.relative_gap();
        let progress = Progress { epoch: epochs, primal: obj.primal, dual: obj.dual, gap, elapsed: start.elapsed() };
        history.push(progress);
        monitor.report(&progress);
        Ok((obj, gap))
    };
    for e in 1..=opts.max_epochs {
        let interrupted = epoch(e, monitor)?;
        if interrupted {
            let (obj, _) = check(e, &mut history, monitor)?;
            return Ok(SdcaReport { status: Status::Interrupted, epochs: e, objectives: obj, history });
        }
        if e % opts.check_every == 0 || e == opts.max_epochs {
            let (obj, gap) = check(e, &mut history, monitor)?;
            let status = if gap <= opts.tol {
                Some(Status::Converged)
            } else if obj.dual <= last_dual {
                // D is monotone in exact arithmetic; a whole check interval without any
                // increase means round-off now dominates the steps.
                Some(Status::NoProgress)
            } else if e == opts.max_epochs {
                Some(Status::MaxEpochs)
            } else {
                None
            };
            last_dual = obj.dual;
            if let Some(status) = status {
                return Ok(SdcaReport { status, epochs: e, objectives: obj, history });
            }
        }
    }
    unreachable!("the last epoch always decides a status")
}

/// This epoch's visiting order: the examples with c_i > 0 (only the active ones when
/// shrinking), shuffled by the epoch's own seeded stream. Shared by both loops.
pub(crate) fn epoch_order(order: &mut Vec<usize>, active: &[bool], ex: &Examples, opts: &SdcaOptions, epoch: usize) {
    if opts.shrinking {
        order.clear();
        order.extend((0..active.len()).filter(|&i| active[i] && ex.c[i] > 0.0));
    }
    SplitMix64::derive(opts.seed, epoch as u64).shuffle(order);
}

/// Serial Prox-SDCA. `a` is the n × m dual matrix (row-major), zero or a feasible warm
/// start whose W the model already holds. Returns when converged, out of epochs,
/// stalled or interrupted; `a` and the model hold the final iterate.
pub fn solve<M: ScoreModel, L: SdcaLoss + ?Sized>(
    model: &mut M,
    loss: &L,
    ex: &Examples,
    a: &mut [f64],
    opts: &SdcaOptions,
    monitor: &mut dyn Monitor,
) -> Result<SdcaReport> {
    let (n, m) = (model.n_rows(), model.n_classes());
    loss.check(m)?;
    ex.check(n, m)?;
    if a.len() != n * m {
        return Err(Error::input("dual_coef", format!("must have {n} x {m} entries, got {}", a.len())));
    }
    let mut order: Vec<usize> = (0..n).filter(|&i| ex.c[i] > 0.0).collect();
    let active = std::cell::RefCell::new(vec![true; n]);
    let mut ws = LossWorkspace::new();
    let mut buf = RowBuf::new();
    let (mut s, mut old) = (vec![0.0; m], vec![0.0; m]);
    let model_cell = std::cell::RefCell::new(model);
    let a_cell = std::cell::RefCell::new(a);
    drive(
        opts,
        monitor,
        |epoch, monitor| {
            let mut model = model_cell.borrow_mut();
            let mut a = a_cell.borrow_mut();
            epoch_order(&mut order, &active.borrow(), ex, opts, epoch);
            for (visited, &i) in order.iter().enumerate() {
                if visited % POLL_EVERY == 0 && monitor.should_stop() {
                    return Ok(true);
                }
                sdca_step(&mut **model, loss, ex, i, &mut a, &mut s, &mut old, &mut ws, &mut buf)?;
            }
            Ok(false)
        },
        || objectives(&**model_cell.borrow(), loss, ex, &a_cell.borrow(), &mut active.borrow_mut()),
    )
}

/// One exact coordinate step on example i: returns after W and a_i are updated.
#[allow(clippy::too_many_arguments)]
fn sdca_step<M: ScoreModel + ?Sized, L: SdcaLoss + ?Sized>(
    model: &mut M,
    loss: &L,
    ex: &Examples,
    i: usize,
    a: &mut [f64],
    s: &mut [f64],
    old: &mut [f64],
    ws: &mut LossWorkspace,
    buf: &mut RowBuf,
) -> Result<()> {
    let m = s.len();
    model.scores_mut(i, a, s, buf);
    let kii = model.sq_norm(i);
    let ai = &mut a[i * m..(i + 1) * m];
    old.copy_from_slice(ai);
    // q = s − kii·a_i^old: the scores without example i's own contribution.
    s.iter_mut().zip(ai.iter()).for_each(|(sj, &aj)| *sj -= kii * aj);
    loss.update(s, kii, ex.y[i], ex.c[i], ai, ws)?;
    let mut changed = false;
    for (o, &new) in old.iter_mut().zip(ai.iter()) {
        *o = new - *o;
        changed |= *o != 0.0;
    }
    if changed {
        model.apply(i, old, buf);
    }
    Ok(())
}
