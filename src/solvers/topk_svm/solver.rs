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

use super::dual::{DualRows, DualRowsMut};
use super::loss::{LossWorkspace, SdcaLoss};
use super::model::ScoreModel;
use super::problem::{objectives, ActiveSet, Examples, Objectives, MANY_CLASSES};
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
    early_check: bool,
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
        if e % opts.check_every == 0 || e == opts.max_epochs || (early_check && e == 1) {
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

/// Whether the first gap check comes after epoch 1 instead of `check_every`: with class
/// shrinking on many classes. A check builds the class lists (`ActiveSet`) that let a
/// step score a few dozen classes instead of all m (m = 1,000 CNN-like features: ~130
/// of 1,000); waiting `check_every` epochs for them costs that many epochs at full
/// width, the early check one evaluation, about an epoch's scoring.
pub(crate) fn early_check<L: SdcaLoss + ?Sized>(loss: &L, opts: &SdcaOptions, m: usize) -> bool {
    opts.shrinking && opts.check_every > 1 && m >= MANY_CLASSES && loss.shrinks_classes()
}

/// The checks both loops start with: the loss against m, the labels and weights, and
/// the shape of the dual matrix.
pub(crate) fn check_problem<L: SdcaLoss + ?Sized, A: DualRows + ?Sized>(
    loss: &L,
    ex: &Examples,
    a: &A,
    n: usize,
    m: usize,
) -> Result<()> {
    loss.check(m)?;
    ex.check(n, m, loss.multi_label())?;
    a.check_shape(n, m)
}

/// A model whose scores read all of A (a kernel model) needs it dense.
pub(crate) fn check_layout<M: ScoreModel + ?Sized, A: DualRows + ?Sized>(model: &M, a: &A) -> Result<()> {
    if model.reads_dual() && a.dense().is_none() {
        return Err(Error::param("dual_layout", "a kernel model reads all of A, which must be stored dense"));
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
pub fn solve<M: ScoreModel, L: SdcaLoss + ?Sized, A: DualRowsMut + ?Sized>(
    model: &mut M,
    loss: &L,
    ex: &Examples,
    a: &mut A,
    opts: &SdcaOptions,
    monitor: &mut dyn Monitor,
) -> Result<SdcaReport> {
    let mut active = ActiveSet::new(model.n_rows());
    solve_from(model, loss, ex, a, opts, &mut active, monitor)
}

/// [`solve`] starting from a shrinking state `active` (left as the last check rebuilt
/// it), for solves that continue one another on nearby problems (the accelerated
/// stages): a fresh set would make each one's first epochs full passes.
pub(crate) fn solve_from<M: ScoreModel, L: SdcaLoss + ?Sized, A: DualRowsMut + ?Sized>(
    model: &mut M,
    loss: &L,
    ex: &Examples,
    a: &mut A,
    opts: &SdcaOptions,
    active: &mut ActiveSet,
    monitor: &mut dyn Monitor,
) -> Result<SdcaReport> {
    let (n, m) = (model.n_rows(), model.n_classes());
    check_problem(loss, ex, a, n, m)?;
    check_layout(&*model, a)?;
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
        early_check(loss, opts, m),
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
                    prefetch_step(&**model, ex, &active, next);
                    a.prefetch(next, m);
                }
                let classes = active.classes(i).unwrap_or(&all);
                sdca_step(&mut **model, loss, ex, i, classes, &mut **a, &mut step)?;
            }
            Ok(false)
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

/// Starts loading what the step on example i reads at scattered addresses: its row of
/// X and squared norm, label, weight and class list (and, by the caller, its dual
/// row). Examples are visited in a shuffled order, which the hardware prefetcher
/// cannot follow; issued one step ahead, the loads overlap the current step
/// (Fashion-MNIST epochs 20-25 % faster).
pub(crate) fn prefetch_step<M: ScoreModel + ?Sized>(model: &M, ex: &Examples, active: &ActiveSet, i: usize) {
    model.prefetch_row(i);
    ex.prefetch(i);
    active.prefetch(i);
}

/// Per-thread buffers of one SDCA step: scores, the restricted dual row, the change
/// of a_i (full length, zero outside the step's classes between steps), the labels'
/// positions in the step's class list, a sparse dual row made dense (m zeros between
/// steps, `DualRowsMut::update_row`).
pub struct StepScratch {
    pub(crate) s: Vec<f64>,
    pub(crate) row: Vec<f64>,
    pub(crate) delta: Vec<f64>,
    labels: Vec<usize>,
    full: Vec<f64>,
    pub(crate) dense_row: Vec<f64>,
    pub(crate) ws: LossWorkspace,
    pub(crate) buf: RowBuf,
}

impl StepScratch {
    /// Buffers for problems with `m` classes.
    pub fn new(m: usize) -> Self {
        Self {
            s: vec![0.0; m],
            row: vec![0.0; m],
            delta: vec![0.0; m],
            labels: Vec::new(),
            full: vec![0.0; m],
            dense_row: vec![0.0; m],
            ws: LossWorkspace::new(),
            buf: RowBuf::new(),
        }
    }
}

/// One exact coordinate step on example i over the classes `classes` (ascending, with
/// its labels; all m without class shrinking): returns after W and a_i are updated.
/// Public for the step's benchmark (`benches/sdca.rs`); the solvers call it per example.
pub fn sdca_step<M: ScoreModel + ?Sized, L: SdcaLoss + ?Sized, A: DualRowsMut + ?Sized>(
    model: &mut M,
    loss: &L,
    ex: &Examples,
    i: usize,
    classes: &[u32],
    a: &mut A,
    t: &mut StepScratch,
) -> Result<()> {
    let (m, k) = (model.n_classes(), classes.len());
    model.class_scores_mut(i, a.dense().unwrap_or(&[]), classes, &mut t.s[..k], &mut t.full, &mut t.buf);
    let kii = model.sq_norm(i);
    let mut dense_row = std::mem::take(&mut t.dense_row);
    let changed = a.update_row(i, m, &mut dense_row, |ai| restricted_step(loss, ex, i, classes, kii, 1.0, ai, t));
    t.dense_row = dense_row;
    if changed? {
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
    // The labels' positions in the list: the labels themselves when it has every class,
    // else found in it (every class list holds the labels, `SdcaLoss::active_classes`).
    let labels = ex.labels(i);
    t.labels.clear();
    if k == ai.len() {
        t.labels.extend_from_slice(labels);
    } else {
        let position = |&l: &usize| classes.binary_search(&(l as u32)).expect("the class list holds the labels");
        t.labels.extend(labels.iter().map(position));
    }
    // q = s − σ'kii·a_i^old: the scores without example i's own contribution.
    let curvature = sigma * kii;
    if k == ai.len() {
        // Every class listed (no class shrinking): the same arithmetic on whole rows,
        // without the indirection through the list.
        row.copy_from_slice(ai);
        s.iter_mut().zip(row.iter()).for_each(|(sj, &r)| *sj -= curvature * r);
        loss.update(s, curvature, &t.labels, ex.c[i], row, &mut t.ws)?;
        let mut changed = false;
        for ((d, old), &new) in t.delta[..k].iter_mut().zip(ai.iter_mut()).zip(row.iter()) {
            *d = new - *old;
            changed |= new != *old;
            *old = new;
        }
        return Ok(changed);
    }
    for ((r, sj), &c) in row.iter_mut().zip(s.iter_mut()).zip(classes) {
        *r = ai[c as usize];
        *sj -= curvature * *r;
    }
    loss.update(s, curvature, &t.labels, ex.c[i], row, &mut t.ws)?;
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
    use crate::data::{DenseRows, Design};
    use crate::losses::TopKVariant;
    use crate::solvers::topk_svm::{solve_cocoa, LinearModel, MultiLabelHinge, MultiLabelSoftmax, Softmax, TopKHinge};
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
                false,
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
        let ex = Examples::new(&y, &c);
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
        let ex = Examples::new(&y, &c);
        let rows = DenseRows::new(&x, n, d).unwrap();
        for variant in [TopKVariant::Alpha, TopKVariant::Beta] {
            for (k, smoothing) in [(1, 0.0), (2, 0.0), (3, 0.5)] {
                let loss = TopKHinge { k, variant, smoothing };
                assert_restricted_steps_are_exact(&loss, &ex, &rows, m, &format!("{variant:?} k={k}"));
            }
        }
    }

    /// After three epochs, the class lists of a gap check shrink something, and the
    /// step restricted to each example's list equals its full step.
    fn assert_restricted_steps_are_exact<L: SdcaLoss>(
        loss: &L,
        ex: &Examples,
        rows: &DenseRows<f64>,
        m: usize,
        what: &str,
    ) {
        let n = rows.n_rows();
        let mut model = LinearModel::new(rows, m, None);
        let mut a = vec![0.0; n * m];
        let opts = SdcaOptions { tol: 1e-12, max_epochs: 3, check_every: 3, seed: 2, shrinking: true };
        solve(&mut model, loss, ex, &mut a, &opts, &mut Silent).unwrap();
        let mut active = ActiveSet::new(n);
        objectives(&model, loss, ex, &a, &mut active, true, None).unwrap().unwrap();
        assert!(active.mean_classes(m) < m as f64, "{what}: nothing shrunk");
        let all: Vec<u32> = (0..m as u32).collect();
        let (mut full, mut part) = (StepScratch::new(m), StepScratch::new(m));
        let mut buf = RowBuf::new();
        for i in (0..n).filter(|&i| active.examples[i]) {
            let kii = model.sq_norm(i);
            let classes = active.classes(i).unwrap_or(&all);
            let (mut a_full, mut a_part) = (a[i * m..(i + 1) * m].to_vec(), a[i * m..(i + 1) * m].to_vec());
            model.scores_with(model.weights(), i, &all, &mut full.s, &mut buf);
            model.scores_with(model.weights(), i, classes, &mut part.s[..classes.len()], &mut buf);
            restricted_step(loss, ex, i, &all, kii, 1.0, &mut a_full, &mut full).unwrap();
            restricted_step(loss, ex, i, classes, kii, 1.0, &mut a_part, &mut part).unwrap();
            for (u, v) in a_full.iter().zip(&a_part) {
                assert!((u - v).abs() <= 1e-12, "{what} example {i}: {a_full:?} vs {a_part:?}");
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
        let ex = Examples::new(&y, &c);
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

    /// Many classes (m = 260 ≥ `MANY_CLASSES`): with shrinking the first check
    /// comes after epoch 1 and builds class lists far shorter than m; serial and CoCoA
    /// fits with and without shrinking reach the same optimum, and the dual never falls.
    #[test]
    fn many_classes_check_early_and_shrink_to_the_same_optimum() {
        let (n, d, m) = (150, 6, 260);
        let (x, y) = problem(n, d, m, 17);
        let c = vec![1.0; n];
        let ex = Examples::new(&y, &c);
        let rows = DenseRows::new(&x, n, d).unwrap();
        let loss = TopKHinge { k: 5, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let opts = SdcaOptions { tol: 1e-5, max_epochs: 5_000, check_every: 5, seed: 3, shrinking: true };
        let fits = solve_all_ways(&loss, &ex, &rows, m, opts, &ALL_WAYS);
        for ((shrinking, blocks), (report, _)) in ALL_WAYS.iter().zip(&fits) {
            assert_eq!(report.status, Status::Converged, "shrinking {shrinking}, {blocks} blocks");
            assert_eq!(report.history[0].epoch, if *shrinking { 1 } else { 5 });
            assert!(report.history.iter().skip(1).all(|p| p.epoch % 5 == 0 || p.epoch == report.epochs));
            let duals: Vec<f64> = report.history.iter().map(|p| p.dual).collect();
            assert!(duals.windows(2).all(|w| w[1] >= w[0] - 1e-9 * w[0].abs()), "dual decreased: {duals:?}");
            let primal = report.objectives.primal;
            assert!((primal - fits[0].0.objectives.primal).abs() <= 2e-5 * primal.abs());
        }
        // The lists a check builds from the optimum: a few dozen of the 260 classes.
        let mut model = LinearModel::new(&rows, m, Some(1.0));
        let mut buf = RowBuf::new();
        fits[0].1.chunks_exact(m).enumerate().for_each(|(i, ai)| model.apply(i, ai, &mut buf));
        let mut active = ActiveSet::new(n);
        objectives(&model, &loss, &ex, &fits[0].1, &mut active, true, None).unwrap();
        let mean = active.mean_classes(m);
        assert!(mean < m as f64 / 4.0, "mean list length {mean}");
    }

    /// n examples with label sets of 1 to 4 of m classes (flat labels and offsets), each
    /// around the sum of its labels' random centres in d dimensions.
    fn label_set_problem(n: usize, d: usize, m: usize, seed: u64) -> (Vec<f64>, Vec<usize>, Vec<usize>) {
        let mut rng = SplitMix64::new(seed);
        let centres: Vec<f64> = (0..m * d).map(|_| 2.0 * uniform(&mut rng) - 1.0).collect();
        let (mut x, mut y, mut starts) = (Vec::with_capacity(n * d), Vec::new(), vec![0]);
        for _ in 0..n {
            let mut labels: Vec<usize> = (0..1 + rng.below(4)).map(|_| rng.below(m)).collect();
            labels.sort_unstable();
            labels.dedup();
            x.extend((0..d).map(|t| labels.iter().map(|&l| centres[l * d + t]).sum::<f64>() + uniform(&mut rng) - 0.5));
            y.extend_from_slice(&labels);
            starts.push(y.len());
        }
        (x, y, starts)
    }

    /// Serial without and with shrinking, and CoCoA over 2 and 3 blocks with it.
    const ALL_WAYS: [(bool, usize); 4] = [(false, 1), (true, 1), (true, 2), (true, 3)];

    /// The fits `ways` (shrinking, blocks: 1 for the serial solver).
    fn solve_all_ways<L: SdcaLoss>(
        loss: &L,
        ex: &Examples,
        rows: &DenseRows<f64>,
        m: usize,
        opts: SdcaOptions,
        ways: &[(bool, usize)],
    ) -> Vec<(SdcaReport, Vec<f64>)> {
        let n = rows.n_rows();
        ways.iter()
            .copied()
            .map(|(shrinking, blocks)| {
                let opts = SdcaOptions { shrinking, ..opts };
                let mut model = LinearModel::new(rows, m, Some(1.0));
                let mut a = vec![0.0; n * m];
                let report = if blocks == 1 {
                    solve(&mut model, loss, ex, &mut a, &opts, &mut Silent).unwrap()
                } else {
                    solve_cocoa(&mut model, loss, ex, &mut a, &opts, blocks, &mut ActiveSet::new(n), &mut Silent)
                        .unwrap()
                };
                (report, a)
            })
            .collect()
    }

    /// With one label per example, given as label sets, the multi-label hinge (γ = 0) and
    /// softmax take the steps of Crammer–Singer (the top-k hinge, k = 1) and of the
    /// softmax loss: the same iterates, to rounding, serially and by CoCoA. (Without
    /// class shrinking: the two hinges keep classes by different margins, and a step over
    /// fewer classes is another exact step.)
    #[test]
    fn one_label_fits_are_the_multiclass_fits() {
        let (n, d, m) = (150, 5, 6);
        let (x, y) = problem(n, d, m, 21);
        let (c, starts): (Vec<f64>, Vec<usize>) = (vec![0.8; n], (0..=n).collect());
        let rows = DenseRows::new(&x, n, d).unwrap();
        let (single, sets) = (Examples::new(&y, &c), Examples::with_label_sets(&y, &starts, &c));
        let opts = SdcaOptions { tol: 1e-14, max_epochs: 12, check_every: 4, seed: 3, shrinking: true };
        let cs = TopKHinge { k: 1, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let ways = [(false, 1), (false, 2), (false, 3)];
        let pairs = [
            (
                solve_all_ways(&cs, &single, &rows, m, opts, &ways),
                solve_all_ways(&MultiLabelHinge { smoothing: 0.0 }, &sets, &rows, m, opts, &ways),
            ),
            (
                solve_all_ways(&Softmax, &single, &rows, m, opts, &ALL_WAYS),
                solve_all_ways(&MultiLabelSoftmax, &sets, &rows, m, opts, &ALL_WAYS),
            ),
        ];
        for (loss, (multiclass, multilabel)) in ["hinge", "softmax"].iter().zip(pairs) {
            for (way, ((r1, a1), (r2, a2))) in multiclass.iter().zip(&multilabel).enumerate() {
                assert_eq!(r1.epochs, r2.epochs, "{loss} way {way}");
                assert!(a1.iter().any(|&v| v != 0.0));
                for (u, v) in a1.iter().zip(a2) {
                    assert!((u - v).abs() <= 1e-10, "{loss} way {way}: {u} vs {v}");
                }
                let (p1, p2) = (r1.objectives.primal, r2.objectives.primal);
                assert!((p1 - p2).abs() <= 1e-10 * p1, "{loss} way {way}: {p1} vs {p2}");
            }
        }
    }

    /// Label sets: both losses (the hinge also smoothed) converge to a relative gap of
    /// 1e-9 (see below) serially, with shrinking and by CoCoA, to the same optimum, the dual never
    /// decreasing; the hinge's dual rows are α ≥ 0 on the labels, −β ≤ 0 elsewhere,
    /// Σα = Σβ ≤ c, and its shrunk steps are exact.
    #[test]
    fn label_set_fits_converge_every_way() {
        let (n, d, m) = (160, 6, 8);
        let (x, y, starts) = label_set_problem(n, d, m, 5);
        let c: Vec<f64> = (0..n).map(|i| 0.3 + 0.1 * (i % 5) as f64).collect();
        let rows = DenseRows::new(&x, n, d).unwrap();
        let ex = Examples::with_label_sets(&y, &starts, &c);
        // The hinge to 1e-7 (as the multiclass hinges in `shrinking_and_cocoa_reach_the_same_optimum`):
        // its dual reaches its optimum to the rounding of its evaluation (1e-15) while
        // P, not smooth, is then still ~1e-9 above it; the smooth losses to 1e-9.
        let losses: [(&dyn SdcaLoss, &str, f64); 3] = [
            (&MultiLabelHinge { smoothing: 0.0 }, "hinge", 1e-7),
            (&MultiLabelHinge { smoothing: 0.4 }, "smoothed hinge", 1e-9),
            (&MultiLabelSoftmax, "softmax", 1e-9),
        ];
        for (loss, what, tol) in losses {
            let opts = SdcaOptions { tol, max_epochs: 20_000, check_every: 2, seed: 7, shrinking: true };
            let fits = solve_all_ways(&Dyn(loss), &ex, &rows, m, opts, &ALL_WAYS);
            let primal = fits[0].0.objectives.primal;
            for (way, (report, a)) in fits.iter().enumerate() {
                let tail: Vec<_> = report.history.iter().rev().take(3).map(|p| (p.epoch, p.gap)).collect();
                assert_eq!(report.status, Status::Converged, "{what} way {way}: {tail:?}");
                let duals: Vec<f64> = report.history.iter().map(|p| p.dual).collect();
                assert!(duals.windows(2).all(|w| w[1] >= w[0] - 1e-9 * w[0].abs()), "{what} way {way}: {duals:?}");
                let p = report.objectives.primal;
                assert!((p - primal).abs() <= 3.0 * tol * primal, "{what} way {way}: {p} vs {primal}");
                if what != "softmax" {
                    for (i, ai) in a.chunks(m).enumerate() {
                        let labels = ex.labels(i);
                        let t: f64 = labels.iter().map(|&j| ai[j]).sum();
                        let signs = (0..m).all(|j| if labels.contains(&j) { ai[j] >= 0.0 } else { ai[j] <= 0.0 });
                        assert!(signs && t <= c[i] * (1.0 + 1e-12) && ai.iter().sum::<f64>().abs() <= 1e-12, "{ai:?}");
                    }
                }
            }
        }
        assert_restricted_steps_are_exact(&MultiLabelHinge { smoothing: 0.0 }, &ex, &rows, m, "multi-label hinge");
        assert_restricted_steps_are_exact(&MultiLabelHinge { smoothing: 0.4 }, &ex, &rows, m, "smoothed");
    }

    /// Label sets over many labels (m = 260 ≥ `MANY_CLASSES`): the multi-label hinge
    /// checks after epoch 1 with shrinking, its lists bounded by `loss::shrunk_list`, and
    /// every way reaches the same optimum.
    #[test]
    fn many_labels_check_early_and_shrink_to_the_same_optimum() {
        let (n, d, m) = (50, 4, 260);
        let (x, y, starts) = label_set_problem(n, d, m, 9);
        let c = vec![1.0; n];
        let rows = DenseRows::new(&x, n, d).unwrap();
        let ex = Examples::with_label_sets(&y, &starts, &c);
        let loss = MultiLabelHinge { smoothing: 0.0 };
        let opts = SdcaOptions { tol: 1e-4, max_epochs: 5_000, check_every: 5, seed: 3, shrinking: true };
        let ways = [(false, 1), (true, 1), (true, 2)];
        let fits = solve_all_ways(&loss, &ex, &rows, m, opts, &ways);
        for ((shrinking, blocks), (report, _)) in ways.iter().zip(&fits) {
            assert_eq!(report.status, Status::Converged, "shrinking {shrinking}, {blocks} blocks");
            assert_eq!(report.history[0].epoch, if *shrinking { 1 } else { 5 });
            let primal = report.objectives.primal;
            assert!((primal - fits[0].0.objectives.primal).abs() <= 2e-4 * primal.abs());
        }
    }

    /// A stored sparse (`SparseDual`), the solvers take the dense layout's steps: on many
    /// classes, serial with and without shrinking and CoCoA over 2 blocks, for the top-k
    /// hinges and the multi-label hinge, the same reports, dual rows and weights.
    #[test]
    fn sparse_and_dense_duals_take_the_same_steps() {
        use crate::solvers::topk_svm::{DualRows, SparseDual};
        let (n, d, m) = (120, 6, 260);
        let (x, y) = problem(n, d, m, 21);
        let (xl, yl, starts) = label_set_problem(n, d, m, 22);
        let c = vec![1.0; n];
        let (rows, label_rows) = (DenseRows::new(&x, n, d).unwrap(), DenseRows::new(&xl, n, d).unwrap());
        let (multiclass, label_sets) = (Examples::new(&y, &c), Examples::with_label_sets(&yl, &starts, &c));
        let alpha = TopKHinge { k: 5, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let beta = TopKHinge { k: 3, variant: TopKVariant::Beta, smoothing: 0.3 };
        let multi = MultiLabelHinge { smoothing: 0.0 };
        let cases: [(&dyn SdcaLoss, &Examples, &DenseRows<f64>); 3] =
            [(&alpha, &multiclass, &rows), (&beta, &multiclass, &rows), (&multi, &label_sets, &label_rows)];
        for (loss, ex, rows) in cases {
            for (shrinking, blocks) in [(false, 1), (true, 1), (true, 2)] {
                let opts = SdcaOptions { tol: 1e-6, max_epochs: 60, check_every: 5, seed: 7, shrinking };
                let (mut dense_model, mut sparse_model) =
                    (LinearModel::new(rows, m, Some(1.0)), LinearModel::new(rows, m, Some(1.0)));
                let mut dense = vec![0.0; n * m];
                let mut sparse = SparseDual::zeros(n, m).unwrap();
                let (dense_report, sparse_report) = if blocks == 1 {
                    (
                        solve(&mut dense_model, &Dyn(loss), ex, &mut dense, &opts, &mut Silent).unwrap(),
                        solve(&mut sparse_model, &Dyn(loss), ex, &mut sparse, &opts, &mut Silent).unwrap(),
                    )
                } else {
                    (
                        solve_cocoa(
                            &mut dense_model,
                            &Dyn(loss),
                            ex,
                            &mut dense,
                            &opts,
                            blocks,
                            &mut ActiveSet::new(n),
                            &mut Silent,
                        )
                        .unwrap(),
                        solve_cocoa(
                            &mut sparse_model,
                            &Dyn(loss),
                            ex,
                            &mut sparse,
                            &opts,
                            blocks,
                            &mut ActiveSet::new(n),
                            &mut Silent,
                        )
                        .unwrap(),
                    )
                };
                let what = format!("{} shrinking {shrinking}, {blocks} blocks", loss.name());
                let trace = |r: &SdcaReport| r.history.iter().map(|p| (p.epoch, p.primal, p.dual)).collect::<Vec<_>>();
                assert_eq!(trace(&dense_report), trace(&sparse_report), "{what}");
                assert_eq!(dense_model.weights(), sparse_model.weights(), "{what}");
                let mut scratch = vec![0.0; m];
                for i in 0..n {
                    assert_eq!(dense.row(i, m, &mut []), sparse.row(i, m, &mut scratch), "{what} row {i}");
                }
                // Sparse indeed: a few dozen entries per row at most, of 260.
                assert!(sparse.nnz() < n * m / 4, "{what}: {} nonzeros", sparse.nnz());
            }
        }
    }

    /// A `&dyn SdcaLoss` as a sized loss (the helpers above are generic).
    struct Dyn<'a>(&'a dyn SdcaLoss);

    impl SdcaLoss for Dyn<'_> {
        fn name(&self) -> &'static str {
            self.0.name()
        }
        fn check(&self, m: usize) -> Result<()> {
            self.0.check(m)
        }
        fn multi_label(&self) -> bool {
            self.0.multi_label()
        }
        fn dual_is_quadratic(&self) -> bool {
            self.0.dual_is_quadratic()
        }
        fn primal(&self, s: &[f64], y: &[usize], ws: &mut LossWorkspace) -> Result<f64> {
            self.0.primal(s, y, ws)
        }
        fn dual(&self, a: &[f64], y: &[usize], c: f64) -> f64 {
            self.0.dual(a, y, c)
        }
        fn update(
            &self,
            q: &[f64],
            kii: f64,
            y: &[usize],
            c: f64,
            a: &mut [f64],
            ws: &mut LossWorkspace,
        ) -> Result<()> {
            self.0.update(q, kii, y, c, a, ws)
        }
        fn shrinks_classes(&self) -> bool {
            self.0.shrinks_classes()
        }
        fn active_classes(
            &self,
            s: &[f64],
            kii: f64,
            y: &[usize],
            c: f64,
            a: &[f64],
            out: &mut Vec<u32>,
            ws: &mut LossWorkspace,
        ) -> Result<bool> {
            self.0.active_classes(s, kii, y, c, a, out, ws)
        }
    }

    /// Bad label sets are refused naming `y` (or `label_starts`) and the example; a
    /// multiclass loss takes one label each.
    #[test]
    fn bad_label_sets_are_refused() {
        let (n, d, m) = (4, 2, 5);
        let x = vec![0.5; n * d];
        let rows = DenseRows::new(&x, n, d).unwrap();
        let c = vec![1.0; n];
        let opts = SdcaOptions { tol: 1e-6, max_epochs: 2, check_every: 1, seed: 0, shrinking: true };
        let fit = |loss: &dyn SdcaLoss, y: &[usize], starts: &[usize]| {
            let mut model = LinearModel::new(&rows, m, None);
            let mut a = vec![0.0; n * m];
            let ex = Examples::with_label_sets(y, starts, &c);
            solve(&mut model, &Dyn(loss), &ex, &mut a, &opts, &mut Silent).map(|_| ()).map_err(|e| e.to_string())
        };
        let hinge = MultiLabelHinge { smoothing: 0.0 };
        let cases: [(&[usize], &[usize], &str); 8] = [
            (&[0, 1, 2, 3, 4], &[0, 1, 2, 4, 5], ""),
            (&[0, 1, 2, 4], &[0, 1, 2, 2, 4], "y: example 2 has no label"),
            (&[0, 0, 1, 2, 3, 4, 1], &[0, 1, 6, 6, 7], "y: example 1 has all 5 labels: nothing ranks below them"),
            (&[0, 2, 2, 3], &[0, 1, 3, 3, 4], "y: example 1's label set lists label 2 twice"),
            (&[0, 3, 2, 3], &[0, 1, 3, 3, 4], "y: example 1's label set is not ascending"),
            (&[0, 1, 5, 3], &[0, 1, 3, 3, 4], "y: label 5 of example 1 out of range for 5 classes"),
            (&[0, 1, 2], &[0, 1, 2, 3], "label_starts: must hold n + 1 = 5 offsets, got 4"),
            (&[0, 1, 2, 3], &[0, 2, 1, 3, 4], "label_starts: must not decrease, but entry 2 < entry 1"),
        ];
        for (y, starts, expected) in cases {
            match fit(&hinge, y, starts) {
                Ok(()) => assert!(expected.is_empty(), "{y:?} {starts:?} passed"),
                Err(err) => assert!(!expected.is_empty() && err.starts_with(expected), "{err}"),
            }
        }
        let err = fit(&hinge, &[0, 1, 2, 3], &[1, 2, 3, 4, 4]).unwrap_err();
        assert!(err.starts_with("label_starts: must start at 0 and end at the number of labels 4"), "{err}");
        let err = fit(&Softmax, &[0, 1, 2, 3, 4], &[0, 1, 2, 4, 5]).unwrap_err();
        assert!(err.starts_with("y: example 2 has 2 labels; a multiclass loss takes exactly one"), "{err}");
        assert!(fit(&Softmax, &[0, 1, 2, 3], &[0, 1, 2, 3, 4]).is_ok());
        // One label each (no offsets) is a valid multi-label problem.
        let mut model = LinearModel::new(&rows, m, None);
        let (y, mut a) = ([0, 4, 2, 1], vec![0.0; n * m]);
        assert!(solve(&mut model, &hinge, &Examples::new(&y, &c), &mut a, &opts, &mut Silent).is_ok());
    }
}
