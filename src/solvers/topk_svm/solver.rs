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
//!
//! Shrinking (`problem::ActiveSet`, refreshed by every check): examples with a_i = 0 and
//! zero loss are skipped, and for losses with sparse dual rows (the top-k hinges) a step
//! scores and changes only the classes near its dual support — with m in the hundreds
//! a step then costs a few rows of W instead of all m. Both are exact steps over a
//! subspace holding the current iterate, so D stays monotone, and the stopping test
//! always evaluates every example and class.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::loss::{LossWorkspace, SdcaLoss};
use super::model::ScoreModel;
use super::problem::{objectives, ActiveSet, Examples, Objectives};
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
    /// Between gap checks, skip examples with a_i = 0 and zero loss, and (losses with
    /// sparse dual rows) score only each example's listed classes (see `ActiveSet`).
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
    /// Objectives at the end, evaluated on the returned iterate — except after an
    /// interruption (NaN): a stop asked for now is not kept waiting by a full
    /// evaluation, which for a kernel model costs about as much as an epoch.
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
    mut evaluate: impl FnMut(Option<&AtomicBool>) -> Result<Option<Objectives>>,
) -> Result<SdcaReport> {
    opts.check()?;
    let start = Instant::now();
    let mut history = Vec::new();
    let (mut last_dual, mut last_gap) = (f64::NEG_INFINITY, f64::INFINITY);
    // None: the monitor's stop flag rose during the evaluation.
    let mut check =
        |epochs: usize, history: &mut Vec<Progress>, monitor: &mut dyn Monitor| -> Result<Option<(Objectives, f64)>> {
            let Some(obj) = evaluate(monitor.stop_flag())? else {
                return Ok(None);
            };
            let gap = obj.relative_gap();
            let progress =
                Progress { epoch: epochs, primal: obj.primal, dual: obj.dual, gap, elapsed: start.elapsed() };
            history.push(progress);
            monitor.report(&progress);
            Ok(Some((obj, gap)))
        };
    let interrupted = |epochs: usize, history: Vec<Progress>| SdcaReport {
        status: Status::Interrupted,
        epochs,
        objectives: Objectives { primal: f64::NAN, dual: f64::NAN },
        history,
    };
    for e in 1..=opts.max_epochs {
        if epoch(e, monitor)? {
            return Ok(interrupted(e, history));
        }
        if e % opts.check_every == 0 || e == opts.max_epochs {
            // The epoch polled last up to POLL_EVERY steps ago; a check takes longer, and
            // polls the monitor's stop flag (if any) itself.
            if monitor.should_stop() {
                return Ok(interrupted(e, history));
            }
            let Some((obj, gap)) = check(e, &mut history, monitor)? else {
                return Ok(interrupted(e, history));
            };
            let status = if gap <= opts.tol {
                Some(Status::Converged)
            } else if obj.dual <= last_dual && gap >= last_gap {
                // D is monotone in exact arithmetic, and so is the gap's trend: a whole
                // check interval in which neither D rose nor the gap closed means
                // round-off now dominates the steps. D alone is not enough: on small
                // problems it reaches its optimum to the last bit of its evaluation while
                // P still converges (libsdca's OR/AND problems: D = 1.5 exactly from
                // epoch 20 on while the gap falls 1e-10 -> 1e-12 -> 1e-14).
                Some(Status::NoProgress)
            } else if e == opts.max_epochs {
                Some(Status::MaxIter)
            } else {
                None
            };
            (last_dual, last_gap) = (obj.dual, gap);
            if let Some(status) = status {
                return Ok(SdcaReport { status, epochs: e, objectives: obj, history });
            }
        }
    }
    unreachable!("the last epoch always decides a status")
}

/// The checks both loops start with: the loss against m, the labels and weights, and
/// the shape of the dual matrix.
pub(crate) fn check_problem<L: SdcaLoss + ?Sized>(
    loss: &L,
    ex: &Examples,
    a: &[f64],
    n: usize,
    m: usize,
) -> Result<()> {
    loss.check(m)?;
    ex.check(n, m)?;
    if a.len() != n * m {
        return Err(Error::input("dual_coef", format!("must have {n} x {m} entries, got {}", a.len())));
    }
    Ok(())
}

/// This epoch's visiting order: the examples with c_i > 0 (only the active ones when
/// shrinking) in index order, shuffled by the epoch's own seeded stream — a function of
/// (seed, epoch, the examples) alone, so a CoCoA+ round can start at any epoch
/// (`local_round`). Shared by every loop.
pub(crate) fn epoch_order(order: &mut Vec<usize>, active: &ActiveSet, ex: &Examples, opts: &SdcaOptions, epoch: usize) {
    order.clear();
    order.extend((0..active.examples.len()).filter(|&i| (!opts.shrinking || active.examples[i]) && ex.c[i] > 0.0));
    SplitMix64::derive(opts.seed, epoch as u64).shuffle(order);
}

/// A shrinking state handed to a solve must cover its examples.
pub(crate) fn check_active(active: &ActiveSet, n: usize) -> Result<()> {
    if active.examples.len() != n {
        return Err(Error::input("active", format!("covers {} examples, the problem has {n}", active.examples.len())));
    }
    Ok(())
}

/// ‖x_i‖² (k(x_i, x_i) for kernels) is every step's curvature: finite inputs whose
/// squares overflow would reach the projections as NaN.
pub(crate) fn check_curvatures<M: ScoreModel + ?Sized>(model: &M) -> Result<()> {
    match (0..model.n_rows()).find(|&i| !model.sq_norm(i).is_finite()) {
        Some(i) => Err(Error::input(
            "X",
            format!("the squared norm of row {i} overflows float64; rescale X (or intercept_scaling)"),
        )),
        None => Ok(()),
    }
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
    let mut active = ActiveSet::new(model.n_rows());
    solve_from(model, loss, ex, a, opts, &mut active, monitor)
}

/// [`solve`] starting from a shrinking state `active` (left as the last check rebuilt
/// it), for solves that continue one another on nearby problems (the accelerated
/// stages): a fresh set would make each one's first epochs full passes.
pub(crate) fn solve_from<M: ScoreModel, L: SdcaLoss + ?Sized>(
    model: &mut M,
    loss: &L,
    ex: &Examples,
    a: &mut [f64],
    opts: &SdcaOptions,
    active: &mut ActiveSet,
    monitor: &mut dyn Monitor,
) -> Result<SdcaReport> {
    let (n, m) = (model.n_rows(), model.n_classes());
    check_problem(loss, ex, a, n, m)?;
    check_curvatures(&*model)?;
    check_active(active, n)?;
    let mut order: Vec<usize> = (0..n).filter(|&i| ex.c[i] > 0.0).collect();
    let active = std::cell::RefCell::new(active);
    let mut step = StepScratch::new(m);
    let all: Vec<u32> = (0..m as u32).collect();
    let model_cell = std::cell::RefCell::new(model);
    let a_cell = std::cell::RefCell::new(a);
    drive(
        opts,
        monitor,
        |epoch, monitor| {
            let mut model = model_cell.borrow_mut();
            let mut a = a_cell.borrow_mut();
            let active = active.borrow();
            epoch_order(&mut order, &active, ex, opts, epoch);
            for (visited, &i) in order.iter().enumerate() {
                if visited % POLL_EVERY == 0 && monitor.should_stop() {
                    return Ok(true);
                }
                if let Some(&next) = order.get(visited + 1) {
                    prefetch_step(&**model, ex, &active, &a[next * m..(next + 1) * m], next);
                }
                let classes = active.classes(i).unwrap_or(&all);
                sdca_step(&mut **model, loss, ex, i, classes, &mut a, &mut step)?;
            }
            Ok(false)
        },
        |stop| {
            objectives(
                &**model_cell.borrow(),
                loss,
                ex,
                &a_cell.borrow(),
                &mut active.borrow_mut(),
                opts.shrinking,
                stop,
            )
        },
    )
}

/// Starts loading what the step on example i reads at scattered addresses: its row of
/// X and squared norm, its dual row `a_row`, label, weight and class list. Examples
/// are visited in a shuffled order, which the hardware prefetcher cannot follow; issued
/// one step ahead, the loads overlap the current step (Fashion-MNIST epochs 20-25 %
/// faster).
pub(crate) fn prefetch_step<M: ScoreModel + ?Sized>(
    model: &M,
    ex: &Examples,
    active: &ActiveSet,
    a_row: &[f64],
    i: usize,
) {
    model.prefetch_row(i);
    crate::vector_code::prefetch_lines(a_row);
    ex.prefetch(i);
    active.prefetch(i);
}

/// Per-thread buffers of one SDCA step: scores, the restricted dual row, the change
/// of a_i (full length, zero outside the step's classes between steps).
pub(crate) struct StepScratch {
    pub(crate) s: Vec<f64>,
    pub(crate) row: Vec<f64>,
    pub(crate) delta: Vec<f64>,
    full: Vec<f64>,
    pub(crate) ws: LossWorkspace,
    pub(crate) buf: RowBuf,
}

impl StepScratch {
    pub(crate) fn new(m: usize) -> Self {
        Self {
            s: vec![0.0; m],
            row: vec![0.0; m],
            delta: vec![0.0; m],
            full: vec![0.0; m],
            ws: LossWorkspace::new(),
            buf: RowBuf::new(),
        }
    }
}

/// One exact coordinate step on example i over the classes `classes` (ascending, with
/// y_i; all m without class shrinking): returns after W and a_i are updated.
fn sdca_step<M: ScoreModel + ?Sized, L: SdcaLoss + ?Sized>(
    model: &mut M,
    loss: &L,
    ex: &Examples,
    i: usize,
    classes: &[u32],
    a: &mut [f64],
    t: &mut StepScratch,
) -> Result<()> {
    let (m, k) = (model.n_classes(), classes.len());
    model.class_scores_mut(i, a, classes, &mut t.s[..k], &mut t.full, &mut t.buf);
    let kii = model.sq_norm(i);
    let ai = &mut a[i * m..(i + 1) * m];
    if restricted_step(loss, ex, i, classes, kii, 1.0, ai, t)? {
        model.apply(i, &t.delta, &mut t.buf);
    }
    classes.iter().for_each(|&c| t.delta[c as usize] = 0.0);
    Ok(())
}

/// The loss's exact step on a_i over `classes`, given their scores in `t.s` and the
/// curvature σ'·kii: writes the new values into `ai` and new − old into `t.delta` at
/// the listed classes; returns whether anything changed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn restricted_step<L: SdcaLoss + ?Sized>(
    loss: &L,
    ex: &Examples,
    i: usize,
    classes: &[u32],
    kii: f64,
    sigma: f64,
    ai: &mut [f64],
    t: &mut StepScratch,
) -> Result<bool> {
    let k = classes.len();
    let (s, row) = (&mut t.s[..k], &mut t.row[..k]);
    // Every class list holds the label (`SdcaLoss::active_classes`).
    let y = classes.binary_search(&(ex.y[i] as u32)).expect("the class list holds y_i");
    // q = s − σ'kii·a_i^old: the scores without example i's own contribution.
    for ((r, sj), &c) in row.iter_mut().zip(s.iter_mut()).zip(classes) {
        *r = ai[c as usize];
        *sj -= sigma * kii * *r;
    }
    loss.update(s, sigma * kii, y, ex.c[i], row, &mut t.ws)?;
    let mut changed = false;
    for (&new, &c) in row.iter().zip(classes) {
        let old = &mut ai[c as usize];
        t.delta[c as usize] = new - *old;
        changed |= new != *old;
        *old = new;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::losses::TopKVariant;
    use crate::solvers::topk_svm::{solve_cocoa, LinearModel, TopKHinge};
    use crate::solvers::{Silent, Status};

    /// A stop asked for during an epoch, or between an epoch and its gap check, returns
    /// at once: no evaluation (with a kernel it costs about an epoch) and no report.
    #[test]
    fn an_interruption_skips_the_gap_check() {
        struct StopAfter(usize);
        impl Monitor for StopAfter {
            fn report(&mut self, _: &Progress) {}
            fn should_stop(&mut self) -> bool {
                self.0 = self.0.saturating_sub(1);
                self.0 == 0
            }
        }
        let opts = SdcaOptions { tol: 1e-9, max_epochs: 10, check_every: 1, seed: 0, shrinking: false };
        // (true, 3): epoch 1, its check, then epoch 2 stops; (false, 2): epoch 1's check,
        // then epoch 2's check stops before evaluating.
        for (stop_in_epoch, polls) in [(true, 3), (false, 2)] {
            let evaluations = std::cell::Cell::new(0);
            let report = drive(
                &opts,
                &mut StopAfter(polls),
                // Epochs poll once; a stop seen in an epoch ends it, else the check polls.
                |_, monitor| Ok(stop_in_epoch && monitor.should_stop()),
                |_| {
                    evaluations.set(evaluations.get() + 1);
                    // A rising dual with a wide gap: no other status ends the run.
                    Ok(Some(Objectives { primal: 1e3, dual: evaluations.get() as f64 }))
                },
            )
            .unwrap();
            assert_eq!(report.status, Status::Interrupted);
            assert!(report.objectives.primal.is_nan() && report.objectives.dual.is_nan());
            assert_eq!(evaluations.get(), report.history.len());
            assert_eq!((report.history.len(), report.epochs), (1, 2), "stop in epoch: {stop_in_epoch}");
        }
    }

    fn uniform(rng: &mut SplitMix64) -> f64 {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// n examples around m random centres in d dimensions (overlapping: many classes
    /// compete near the top, as in the many-class problems class shrinking is for).
    fn problem(n: usize, d: usize, m: usize, seed: u64) -> (Vec<f64>, Vec<usize>) {
        let mut rng = SplitMix64::new(seed);
        let centres: Vec<f64> = (0..m * d).map(|_| 2.0 * uniform(&mut rng) - 1.0).collect();
        let y: Vec<usize> = (0..n).map(|_| rng.below(m)).collect();
        let x = y
            .iter()
            .flat_map(|&yi| (0..d).map(move |j| yi * d + j))
            .map(|t| centres[t] + (2.0 * uniform(&mut rng) - 1.0))
            .collect();
        (x, y)
    }

    /// A stop raised while a gap check runs ends the evaluation (None) and the solve
    /// (interrupted, no report of that check); without the flag the check completes.
    #[test]
    fn a_stop_flag_ends_a_running_gap_check() {
        use std::sync::atomic::Ordering;
        struct Flagged(AtomicBool);
        impl Monitor for Flagged {
            fn stop_flag(&self) -> Option<&AtomicBool> {
                Some(&self.0)
            }
        }
        let (n, d, m) = (600, 5, 4);
        let (x, y) = problem(n, d, m, 4);
        let c = vec![0.7; n];
        let ex = Examples { y: &y, c: &c };
        let rows = DenseRows::new(&x, n, d).unwrap();
        let loss = TopKHinge { k: 1, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let model = LinearModel::new(&rows, m, None);
        let a = vec![0.0; n * m];
        let raised = AtomicBool::new(true);
        assert!(objectives(&model, &loss, &ex, &a, &mut ActiveSet::new(n), false, Some(&raised)).unwrap().is_none());
        raised.store(false, Ordering::Relaxed);
        assert!(objectives(&model, &loss, &ex, &a, &mut ActiveSet::new(n), false, Some(&raised)).unwrap().is_some());
        // Through the solver: should_stop never says so, only the flag (raised from the start).
        let mut model = LinearModel::new(&rows, m, None);
        let mut a = vec![0.0; n * m];
        let opts = SdcaOptions { tol: 1e-12, max_epochs: 5, check_every: 1, seed: 2, shrinking: true };
        let report = solve(&mut model, &loss, &ex, &mut a, &opts, &mut Flagged(AtomicBool::new(true))).unwrap();
        assert_eq!((report.status, report.epochs, report.history.len()), (Status::Interrupted, 1, 0));
    }

    /// The class lists of a gap check keep every class the exact full step would
    /// change: the step restricted to them equals the full step (to rounding, 1e-12) at
    /// every example of a partly solved problem, for both losses, k and smoothing.
    #[test]
    fn restricted_step_at_a_check_equals_the_full_step() {
        let (n, d, m) = (300, 5, 12);
        let (x, y) = problem(n, d, m, 4);
        let c = vec![0.7; n];
        let ex = Examples { y: &y, c: &c };
        let rows = DenseRows::new(&x, n, d).unwrap();
        for variant in [TopKVariant::Alpha, TopKVariant::Beta] {
            for (k, smoothing) in [(1, 0.0), (2, 0.0), (3, 0.5)] {
                let loss = TopKHinge { k, variant, smoothing };
                let mut model = LinearModel::new(&rows, m, None);
                let mut a = vec![0.0; n * m];
                let opts = SdcaOptions { tol: 1e-12, max_epochs: 3, check_every: 3, seed: 2, shrinking: true };
                solve(&mut model, &loss, &ex, &mut a, &opts, &mut Silent).unwrap();
                let mut active = ActiveSet::new(n);
                objectives(&model, &loss, &ex, &a, &mut active, true, None).unwrap().unwrap();
                assert!(active.mean_classes(m) < m as f64, "{variant:?} k={k}: nothing shrunk");
                let all: Vec<u32> = (0..m as u32).collect();
                let (mut full, mut part) = (StepScratch::new(m), StepScratch::new(m));
                let mut buf = RowBuf::new();
                for i in (0..n).filter(|&i| active.examples[i]) {
                    let kii = model.sq_norm(i);
                    let classes = active.classes(i).unwrap_or(&all);
                    let (mut a_full, mut a_part) = (a[i * m..(i + 1) * m].to_vec(), a[i * m..(i + 1) * m].to_vec());
                    model.scores_with(model.weights(), i, &all, &mut full.s, &mut buf);
                    model.scores_with(model.weights(), i, classes, &mut part.s[..classes.len()], &mut buf);
                    restricted_step(&loss, &ex, i, &all, kii, 1.0, &mut a_full, &mut full).unwrap();
                    restricted_step(&loss, &ex, i, classes, kii, 1.0, &mut a_part, &mut part).unwrap();
                    for (u, v) in a_full.iter().zip(&a_part) {
                        assert!((u - v).abs() <= 1e-12, "{variant:?} k={k} example {i}: {a_full:?} vs {a_part:?}");
                    }
                }
            }
        }
    }

    /// With and without shrinking (examples and classes), serial and CoCoA: the same
    /// optimum, and the dual never decreases between checks.
    #[test]
    fn shrinking_and_cocoa_reach_the_same_optimum() {
        let (n, d, m) = (150, 5, 10);
        let (x, y) = problem(n, d, m, 11);
        let c = vec![0.5; n];
        let ex = Examples { y: &y, c: &c };
        let rows = DenseRows::new(&x, n, d).unwrap();
        for (k, variant, smoothing) in [(1, TopKVariant::Alpha, 0.0), (3, TopKVariant::Beta, 0.3)] {
            let loss = TopKHinge { k, variant, smoothing };
            let mut primal = Vec::new();
            for (shrinking, blocks) in [(false, 1), (true, 1), (true, 2), (true, 3)] {
                let opts = SdcaOptions { tol: 1e-7, max_epochs: 20_000, check_every: 2, seed: 5, shrinking };
                let mut model = LinearModel::new(&rows, m, Some(1.0));
                let mut a = vec![0.0; n * m];
                let report = if blocks == 1 {
                    solve(&mut model, &loss, &ex, &mut a, &opts, &mut Silent).unwrap()
                } else {
                    solve_cocoa(&mut model, &loss, &ex, &mut a, &opts, blocks, &mut ActiveSet::new(n), &mut Silent)
                        .unwrap()
                };
                let tail: Vec<_> =
                    report.history.iter().rev().take(4).map(|p| (p.epoch, p.primal, p.dual, p.gap)).collect();
                assert_eq!(report.status, Status::Converged, "shrinking {shrinking}, {blocks} blocks {tail:?}");
                let duals: Vec<f64> = report.history.iter().map(|p| p.dual).collect();
                assert!(duals.windows(2).all(|w| w[1] >= w[0] - 1e-9 * w[0].abs()), "dual decreased: {duals:?}");
                primal.push(report.objectives.primal);
            }
            for p in &primal {
                assert!((p - primal[0]).abs() <= 2e-7 * primal[0], "{primal:?}");
            }
        }
    }
}
