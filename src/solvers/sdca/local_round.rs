//! One round of CoCoA+ on one partition of the examples (Ma, Smith, Jaggi, Jordan,
//! Richtárik, Takáč 2015, *Adding vs. averaging in distributed primal-dual optimization*,
//! Algorithm 1 with γ = 1), the local solver being H passes of Prox-SDCA. A pure
//! function of (partition, A_k, W): a distributed engine runs it where the partition
//! lives (`toprank.distributed.fit_cocoa`), and nothing else of the solve has to be there.
//!
//! Problem (as in `solver.rs`): min_W ½‖W‖²_F + Σ_i c_i L(Wᵀx_i; y_i), dual max_A D(A) with
//! W(A) = Σ_i x_i a_iᵀ. The examples are split into K partitions P_k. Given the broadcast
//! W = W(A), partition k approximately maximises its local subproblem (CoCoA+ (10))
//!   G_k(ΔA_k) = Σ_{i∈P_k} D_i(a_i + Δa_i) − ⟨W, ΔW_k⟩ − (σ'/2)‖ΔW_k‖²,   ΔW_k = Σ_{i∈P_k} x_i Δa_iᵀ,
//! by exact coordinate steps: for example i, with the local weights u = W + σ'ΔW_k, the
//! serial step with scores s = uᵀx_i and curvature σ'‖x_i‖² (`restricted_step` with
//! σ'), then u += σ' x_i Δa_iᵀ. The driver then sets A_k ← A_k + ΔA_k and
//! W ← W + Σ_k ΔW_k. With σ' = K ("adding") Σ_k G_k lower-bounds the change of D
//! (CoCoA+ Lemma 3), so D never decreases, and the rounds converge to the serial
//! optimum (CoCoA+ Theorems 8 and 10).
//!
//! The round returns u = W + σ'ΔW_k; the driver recovers ΔW_k = (u − W)/σ'. With K = 1
//! and σ' = 1 the steps, their order (global epoch e visits the examples in the serial
//! solver's order: `epoch_order` with the same seed) and their arithmetic are the serial
//! solver's, so u is the serial epoch's W bit for bit, and the driver takes W ← u.
//!
//! [`partition_terms`] gives the partition's share of the duality gap at (W, A_k):
//! Σ_{i∈P_k} c_i L_i(W) and Σ_{i∈P_k} D_i(a_i); then P = ½‖W‖² + Σ_k (the first) and
//! D = Σ_k (the second) − ½‖W‖² — one scalar reduce per check.

use super::loss::SdcaLoss;
use super::model::{LinearModel, ScoreModel};
use super::problem::{objective_terms, ActiveSet, Examples};
use super::solver::{epoch_order, prefetch_step, restricted_step, SdcaOptions, StepScratch, POLL_EVERY};
use crate::data::Design;
use crate::solvers::Monitor;
use crate::{Error, Result};

/// Where a partition is in its sequence of epochs: the next step is position `offset`
/// of epoch `epoch`'s visiting order (`epoch_order`, the serial solver's: the examples
/// with c_i > 0 — the active ones when shrinking — shuffled by the epoch's stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// From 1.
    pub epoch: u64,
    pub offset: u64,
}

/// What one round does: `steps` steps from a cursor — H whole passes, or a part of one.
#[derive(Debug, Clone, Copy)]
pub struct RoundOptions {
    /// σ' ≥ 1, the local curvature scaling (K for CoCoA+'s "adding").
    pub sigma: f64,
    pub steps: u64,
    /// The partition's seed (the serial solver's seed when K = 1).
    pub seed: u64,
    /// Visit only the active set's examples, and score each on its listed classes (the
    /// serial solver's shrinking; the set comes from the last gap check).
    pub shrinking: bool,
    /// Record the changed rows and their values before the round ([`Round::changed`],
    /// [`Round::before`]), which only a line search over the round's change needs: a
    /// whole-pass round would copy all of A_k.
    pub record: bool,
}

impl RoundOptions {
    fn check(&self, from: &Cursor) -> Result<()> {
        if !(self.sigma >= 1.0 && self.sigma.is_finite()) {
            return Err(Error::param("sigma", format!("must be finite and >= 1, got {}", self.sigma)));
        }
        if from.epoch == 0 {
            return Err(Error::param("epoch", "epochs are numbered from 1"));
        }
        Ok(())
    }
}

/// The checks of a partition: W's shape, A_k's shape and feasibility of the labels and
/// weights. Unlike a whole problem, a partition may be empty or hold only zero weights.
fn check_partition<D: Design, L: SdcaLoss + ?Sized>(
    model: &LinearModel<'_, D>,
    loss: &L,
    ex: &Examples,
    a: &[f64],
    w: &[f64],
) -> Result<()> {
    let (n, m) = (model.design().n_rows(), model.all_classes().len());
    loss.check(m)?;
    ex.check_entries(n, m)?;
    if a.len() != n * m {
        return Err(Error::input("dual_coef", format!("must have {n} x {m} entries, got {}", a.len())));
    }
    if w.len() != m * model.row_width() {
        return Err(Error::input("coef", format!("must have {m} x {} entries, got {}", model.row_width(), w.len())));
    }
    if w.iter().any(|v| !v.is_finite()) {
        return Err(Error::input("coef", "must be finite"));
    }
    Ok(())
}

/// What a round returns besides A_k, which it updates in place.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// u = W + σ'ΔW_k (m × dw).
    pub local: Vec<f64>,
    /// The examples whose dual rows the round changed, in the order first changed.
    pub changed: Vec<usize>,
    /// Their rows before the round (|changed| × m): what a line search needs to scale
    /// the round's change, at the cost of the round's own steps instead of a copy of A_k.
    pub before: Vec<f64>,
    /// Where the next round starts (an epoch's end is the next epoch's start).
    pub end: Cursor,
}

/// Runs one round on the partition whose examples `model` holds, from the broadcast
/// weights `w` (m × dw, class-major) and the cursor `from`; updates A_k (`a`, n_k × m)
/// in place, or returns `None` if the monitor asked to stop (A_k is then partly updated:
/// the caller drops the fit, a round being all or nothing).
#[allow(clippy::too_many_arguments)]
pub fn local_round<D: Design, L: SdcaLoss + ?Sized>(
    model: &LinearModel<'_, D>,
    loss: &L,
    ex: &Examples,
    a: &mut [f64],
    w: &[f64],
    active: &ActiveSet,
    from: Cursor,
    opts: &RoundOptions,
    monitor: &mut dyn Monitor,
) -> Result<Option<Round>> {
    opts.check(&from)?;
    check_partition(model, loss, ex, a, w)?;
    let (n, m) = (model.design().n_rows(), model.all_classes().len());
    if active.examples.len() != n {
        return Err(Error::input("active", format!("must describe {n} examples")));
    }
    let all = model.all_classes();
    let mut round = Round { local: w.to_vec(), changed: Vec::new(), before: Vec::new(), end: from };
    let u = &mut round.local;
    let mut step = StepScratch::new(m);
    let mut order = Vec::with_capacity(n);
    let mut recorded = if opts.record { vec![false; n] } else { Vec::new() };
    let mut old = if opts.record { vec![0.0; m] } else { Vec::new() };
    let order_opts =
        SdcaOptions { tol: 1.0, max_epochs: 1, check_every: 1, seed: opts.seed, shrinking: opts.shrinking };
    let Cursor { mut epoch, mut offset } = from;
    epoch_order(&mut order, active, ex, &order_opts, epoch as usize);
    if order.is_empty() {
        return Ok(Some(round));
    }
    let (mut remaining, mut visited) = (opts.steps, 0usize);
    while remaining > 0 {
        if offset as usize >= order.len() {
            (epoch, offset) = (epoch + 1, 0);
            epoch_order(&mut order, active, ex, &order_opts, epoch as usize);
        }
        let first = offset as usize;
        let last = (first as u64 + remaining).min(order.len() as u64) as usize;
        for (j, &i) in order[first..last].iter().enumerate() {
            if visited % POLL_EVERY == 0 && monitor.should_stop() {
                return Ok(None);
            }
            visited += 1;
            if let Some(&next) = order.get(first + j + 1) {
                prefetch_step(model, ex, active, &a[next * m..(next + 1) * m], next);
            }
            let classes = active.classes(i).unwrap_or(all);
            let k = classes.len();
            model.scores_with(u, i, classes, &mut step.s[..k], &mut step.buf);
            // u is finite (checked, and kept so by finite steps), so a score is finite
            // unless row i of X is not (or the product overflows): the check that spares
            // the caller a pass over all of X for a round that reads a part of it.
            if step.s[..k].iter().any(|s| !s.is_finite()) {
                return Err(Error::input(
                    "X",
                    format!("row {i} contains NaN or infinity, or its scores overflow float64"),
                ));
            }
            let ai = &mut a[i * m..(i + 1) * m];
            // The row before its first change in this round, when the round records.
            let first_change = opts.record && !recorded[i];
            if first_change {
                old.copy_from_slice(ai);
            }
            if restricted_step(loss, ex, i, classes, model.sq_norm(i), opts.sigma, ai, &mut step)? {
                model.apply_with(u, i, &step.delta, opts.sigma, &mut step.buf);
                if first_change {
                    recorded[i] = true;
                    round.changed.push(i);
                    round.before.extend_from_slice(&old);
                }
            }
            classes.iter().for_each(|&c| step.delta[c as usize] = 0.0);
        }
        remaining -= (last - first) as u64;
        offset = last as u64;
    }
    round.end =
        if offset as usize >= order.len() { Cursor { epoch: epoch + 1, offset: 0 } } else { Cursor { epoch, offset } };
    Ok(Some(round))
}

/// Σ_i [D_i(a_i + ½Δa_i) − D_i(a_i)] and Σ_i [D_i(a_i + Δa_i) − D_i(a_i)] over the
/// examples a round changed (`changed`, their rows `before` it; A_k after it in `a`):
/// the round's dual change at t = ½ and t = 1. For a loss whose dual terms are quadratic
/// along a segment (the hinge losses) these two give D(A + tΔA) for every t, which the
/// driver maximises over t ∈ [0, 1] (CoCoA with a line search, as `cocoa.rs`'s
/// `step_length`).
pub fn dual_change<L: SdcaLoss + ?Sized>(
    loss: &L,
    ex: &Examples,
    changed: &[usize],
    before: &[f64],
    a: &[f64],
    m: usize,
) -> Result<(f64, f64)> {
    let n = ex.y.len();
    ex.check_entries(n, m)?;
    if a.len() != n * m || before.len() != changed.len() * m || changed.iter().any(|&i| i >= n) {
        return Err(Error::input("changed", format!("rows must be < {n}, with {m} values each before the round")));
    }
    let (mut half, mut one) = (0.0, 0.0);
    let mut mid = vec![0.0; m];
    for (&i, a0) in changed.iter().zip(before.chunks_exact(m.max(1))) {
        let a1 = &a[i * m..(i + 1) * m];
        let (y, c) = (ex.y[i], ex.c[i]);
        mid.iter_mut().zip(a0.iter().zip(a1)).for_each(|(h, (&o, &v))| *h = 0.5 * (o + v));
        let d0 = loss.dual(a0, y, c);
        half += loss.dual(&mid, y, c) - d0;
        one += loss.dual(a1, y, c) - d0;
    }
    Ok((half, one))
}

/// The partition's terms of the duality gap at (W, A_k): (Σ c_i L_i(W), Σ D_i(a_i)), on
/// the current rayon pool, summed in a fixed order (the serial gap pass's), and the
/// active set the serial solver's check would build from the same scores (class lists
/// only if `shrink_classes`).
pub fn partition_terms<D: Design, L: SdcaLoss + ?Sized>(
    model: &mut LinearModel<'_, D>,
    loss: &L,
    ex: &Examples,
    a: &[f64],
    w: &[f64],
    shrink_classes: bool,
) -> Result<(f64, f64, ActiveSet)> {
    check_partition(model, loss, ex, a, w)?;
    model.weights_mut().copy_from_slice(w);
    let mut active = ActiveSet::new(model.design().n_rows());
    let [loss_sum, dual_sum, _] = objective_terms(&*model, loss, ex, a, &mut active, shrink_classes, None)?
        .expect("an evaluation without a stop flag runs to the end");
    Ok((loss_sum, dual_sum, active))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::losses::TopKVariant;
    use crate::rng::SplitMix64;
    use crate::solvers::sdca::{objectives, solve, TopKHinge};
    use crate::solvers::Silent;

    fn problem(n: usize, d: usize, m: usize, seed: u64) -> (Vec<f64>, Vec<usize>) {
        let mut rng = SplitMix64::new(seed);
        let y: Vec<usize> = (0..n).map(|_| rng.below(m)).collect();
        let x = y
            .iter()
            .flat_map(|&yi| (0..d).map(move |j| (yi * d + j) as f64))
            .map(|t| (t * 0.37).sin() + rng.next_f64() - 0.5)
            .collect();
        (x, y)
    }

    /// Rounds from a cursor, each continuing where the last ended.
    struct Stepper<'a, D: Design> {
        model: LinearModel<'a, D>,
        a: Vec<f64>,
        w: Vec<f64>,
        cursor: Cursor,
    }

    impl<'a, D: Design> Stepper<'a, D> {
        fn new(x: &'a D, m: usize, bias: Option<f64>) -> Self {
            let model = LinearModel::new(x, m, bias);
            let (a, w) = (vec![0.0; x.n_rows() * m], vec![0.0; model.weights().len()]);
            Self { model, a, w, cursor: Cursor { epoch: 1, offset: 0 } }
        }

        /// Also checks that a round without recording changes A and u the same way.
        fn round<L: SdcaLoss>(
            &mut self,
            loss: &L,
            ex: &Examples,
            active: &ActiveSet,
            steps: u64,
            shrinking: bool,
        ) -> Round {
            let opts = RoundOptions { sigma: 1.0, steps, seed: 9, shrinking, record: true };
            let mut unrecorded_a = self.a.clone();
            let unrecorded_opts = RoundOptions { record: false, ..opts };
            let unrecorded = local_round(
                &self.model,
                loss,
                ex,
                &mut unrecorded_a,
                &self.w,
                active,
                self.cursor,
                &unrecorded_opts,
                &mut Silent,
            );
            let round =
                local_round(&self.model, loss, ex, &mut self.a, &self.w, active, self.cursor, &opts, &mut Silent)
                    .unwrap()
                    .unwrap();
            let unrecorded = unrecorded.unwrap().unwrap();
            assert!(unrecorded.changed.is_empty() && unrecorded.before.is_empty());
            assert_eq!((&unrecorded.local, unrecorded.end, &unrecorded_a), (&round.local, round.end, &self.a));
            (self.w, self.cursor) = (round.local.clone(), round.end);
            round
        }
    }

    /// K = 1, σ' = 1: rounds are the serial solver's steps, bit for bit — without
    /// shrinking in rounds of any length (straddling epochs too), and with shrinking in
    /// rounds of whole epochs whose active set comes from the same gap checks.
    #[test]
    fn one_partition_is_the_serial_solver() {
        let (n, d, m) = (120, 4, 5);
        let (x, y) = problem(n, d, m, 3);
        let c = vec![0.8; n];
        let ex = Examples { y: &y, c: &c };
        let rows = DenseRows::new(&x, n, d).unwrap();
        let epochs = 7;
        for (k, shrinking) in [(2, false), (1, true), (2, true)] {
            let loss = TopKHinge { k, variant: TopKVariant::Alpha, smoothing: 0.0 };
            let check_every = if shrinking { 2 } else { 1000 };
            let mut serial = LinearModel::new(&rows, m, Some(1.0));
            let mut a_serial = vec![0.0; n * m];
            let opts = SdcaOptions { tol: 1e-300, max_epochs: epochs, check_every, seed: 9, shrinking };
            solve(&mut serial, &loss, &ex, &mut a_serial, &opts, &mut Silent).unwrap();

            let mut local = Stepper::new(&rows, m, Some(1.0));
            let mut active = ActiveSet::new(n);
            if shrinking {
                for epoch in 1..=epochs {
                    let eligible = (0..n).filter(|&i| active.examples[i] && c[i] > 0.0).count() as u64;
                    local.round(&loss, &ex, &active, eligible, true);
                    assert_eq!(local.cursor, Cursor { epoch: epoch as u64 + 1, offset: 0 });
                    if epoch % check_every == 0 {
                        active =
                            partition_terms(&mut local.model, &loss, &ex, &local.a, &local.w.clone(), true).unwrap().2;
                    }
                }
            } else {
                let total = (epochs * n) as u64;
                let mut done = 0;
                for round in 0.. {
                    if done >= total {
                        break;
                    }
                    let steps = (if round < 3 { n as u64 } else { 77 }).min(total - done);
                    local.round(&loss, &ex, &active, steps, false);
                    done += steps;
                }
            }
            assert!(local.w.iter().zip(serial.weights()).all(|(p, q)| p.to_bits() == q.to_bits()), "k={k} {shrinking}");
            assert!(local.a.iter().zip(&a_serial).all(|(p, q)| p.to_bits() == q.to_bits()), "k={k} {shrinking}");
            // And the partition's gap terms are the serial gap pass's.
            let w = local.w.clone();
            let (loss_sum, dual_sum, _) = partition_terms(&mut local.model, &loss, &ex, &local.a, &w, false).unwrap();
            let half = 0.5 * crate::linalg::dot(&w, &w);
            let whole =
                objectives(&serial, &loss, &ex, &a_serial, &mut ActiveSet::new(n), false, None).unwrap().unwrap();
            assert_eq!((half + loss_sum).to_bits(), whole.primal.to_bits());
            assert_eq!((dual_sum - half).to_bits(), whole.dual.to_bits());
        }
    }

    /// K = 3 partitions with σ' = 3: D never decreases from round to round, and the
    /// rounds reach the serial optimum.
    #[test]
    fn partitions_with_adding_reach_the_serial_optimum() {
        let (n, d, m) = (150, 5, 6);
        let (x, y) = problem(n, d, m, 7);
        let c = vec![0.5; n];
        let rows = DenseRows::new(&x, n, d).unwrap();
        let loss = TopKHinge { k: 1, variant: TopKVariant::Beta, smoothing: 0.5 };
        let mut serial = LinearModel::new(&rows, m, None);
        let mut a_serial = vec![0.0; n * m];
        let opts = SdcaOptions { tol: 1e-12, max_epochs: 5000, check_every: 5, seed: 1, shrinking: false };
        let optimum = solve(&mut serial, &loss, &Examples { y: &y, c: &c }, &mut a_serial, &opts, &mut Silent).unwrap();

        let cuts = [0, 40, 41, 150]; // a tiny partition among them
        let parts: Vec<(Vec<f64>, usize)> =
            cuts.windows(2).map(|r| (x[r[0] * d..r[1] * d].to_vec(), r[1] - r[0])).collect();
        let mut duals: Vec<Vec<f64>> = parts.iter().map(|(_, rows)| vec![0.0; rows * m]).collect();
        let mut w = vec![0.0; m * d];
        let mut last = f64::NEG_INFINITY;
        for round in 0..4000 {
            let mut next = w.clone();
            let (mut loss_total, mut dual_total) = (0.0, 0.0);
            for (k, ((xk, rows), a)) in parts.iter().zip(duals.iter_mut()).enumerate() {
                let design = DenseRows::new(xk, *rows, d).unwrap();
                let ex = Examples { y: &y[cuts[k]..cuts[k + 1]], c: &c[cuts[k]..cuts[k + 1]] };
                let mut model = LinearModel::new(&design, m, None);
                let (l, dl, _) = partition_terms(&mut model, &loss, &ex, a, &w, false).unwrap();
                (loss_total, dual_total) = (loss_total + l, dual_total + dl);
                let ro = RoundOptions {
                    sigma: 3.0,
                    steps: *rows as u64,
                    seed: 100 + k as u64,
                    shrinking: false,
                    record: true,
                };
                let from = Cursor { epoch: round as u64 + 1, offset: 0 };
                let u = local_round(&model, &loss, &ex, a, &w, &ActiveSet::new(*rows), from, &ro, &mut Silent)
                    .unwrap()
                    .unwrap()
                    .local;
                next.iter_mut().zip(u.iter().zip(&w)).for_each(|(t, (&u, &w))| *t += (u - w) / 3.0);
            }
            let half = 0.5 * crate::linalg::dot(&w, &w);
            let dual = dual_total - half;
            assert!(dual >= last - 1e-12 * dual.abs(), "round {round}: D fell from {last} to {dual}");
            last = dual;
            w = next;
            if crate::solvers::relative_gap(half + loss_total, dual) < 1e-10 {
                break;
            }
        }
        let p = optimum.objectives.primal;
        assert!((last - p).abs() <= 1e-8 * p.abs(), "CoCoA+ D = {last}, serial P = {p}");
    }

    /// A round lists every example it changed, once, with its row before the round.
    #[test]
    fn round_records_the_rows_it_changed() {
        let (n, d, m) = (60, 3, 4);
        let (x, y) = problem(n, d, m, 5);
        let c = vec![1.0; n];
        let ex = Examples { y: &y, c: &c };
        let rows = DenseRows::new(&x, n, d).unwrap();
        let loss = TopKHinge { k: 1, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let all = ActiveSet::new(n);
        let mut local = Stepper::new(&rows, m, None);
        local.round(&loss, &ex, &all, 60, false);
        let start = local.a.clone();
        // 2.5 epochs: examples repeat within the round.
        let round = local.round(&loss, &ex, &all, 150, false);
        assert_eq!(round.end, Cursor { epoch: 4, offset: 30 });
        let mut seen = vec![false; n];
        for (&i, before) in round.changed.iter().zip(round.before.chunks_exact(m)) {
            assert!(!seen[i], "example {i} listed twice");
            seen[i] = true;
            assert_eq!(before, &start[i * m..(i + 1) * m]);
        }
        for i in (0..n).filter(|&i| !seen[i]) {
            assert_eq!(&local.a[i * m..(i + 1) * m], &start[i * m..(i + 1) * m], "example {i} changed unlisted");
        }
        assert!(!round.changed.is_empty());
        let (half, one) = dual_change(&loss, &ex, &round.changed, &round.before, &local.a, m).unwrap();
        assert!(half.is_finite() && one.is_finite());
    }

    #[test]
    fn empty_partition_returns_the_broadcast_weights() {
        let rows = DenseRows::new(&[] as &[f64], 0, 3).unwrap();
        let model = LinearModel::new(&rows, 4, Some(1.0));
        let loss = TopKHinge { k: 1, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let ex = Examples { y: &[], c: &[] };
        let w: Vec<f64> = (0..16).map(f64::from).collect();
        let ro = RoundOptions { sigma: 2.0, steps: 10, seed: 0, shrinking: true, record: true };
        let (all, from) = (ActiveSet::new(0), Cursor { epoch: 1, offset: 0 });
        assert_eq!(
            local_round(&model, &loss, &ex, &mut [], &w, &all, from, &ro, &mut Silent).unwrap().unwrap().local,
            w
        );
        let bad = RoundOptions { sigma: 0.5, ..ro };
        assert!(local_round(&model, &loss, &ex, &mut [], &w, &all, from, &bad, &mut Silent).is_err());
        assert!(local_round(&model, &loss, &ex, &mut [], &w[1..], &all, from, &ro, &mut Silent).is_err());
        assert!(local_round(&model, &loss, &ex, &mut [], &w, &ActiveSet::new(3), from, &ro, &mut Silent).is_err());
    }
}
