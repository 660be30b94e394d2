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
//!
//! [`Partition`] is what a partition keeps between rounds (A_k, the cursor, the active
//! sets, the last round's change until the driver's step commits it): one call per round
//! and one per check, whatever the round crosses.

use std::collections::BTreeMap;

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
    ex.check_entries(n, m, loss.multi_label())?;
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
                prefetch_step(model, ex, active, next);
                crate::vector_code::prefetch_lines(&a[next * m..(next + 1) * m]);
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
    let n = ex.c.len();
    ex.check_entries(n, m, loss.multi_label())?;
    if a.len() != n * m || before.len() != changed.len() * m || changed.iter().any(|&i| i >= n) {
        return Err(Error::input("changed", format!("rows must be < {n}, with {m} values each before the round")));
    }
    let (mut half, mut one) = (0.0, 0.0);
    let mut mid = vec![0.0; m];
    for (&i, a0) in changed.iter().zip(before.chunks_exact(m.max(1))) {
        let a1 = &a[i * m..(i + 1) * m];
        let (y, c) = (ex.labels(i), ex.c[i]);
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

/// How a [`Partition`]'s rounds run, fixed for a fit.
#[derive(Debug, Clone, Copy)]
pub struct PartitionRound {
    /// σ' ≥ 1 (K for CoCoA+'s adding, 1 for the line search).
    pub sigma: f64,
    /// H, passes over the examples an epoch visits per round (a round takes at least
    /// one step).
    pub local_epochs: f64,
    /// The partition's seed (the serial solver's seed when K = 1).
    pub seed: u64,
    pub shrinking: bool,
    /// The driver steps by t ∈ [0, 1] along the combined change
    /// ([`step_length`](super::step_length)): each round reports its dual change at
    /// t = ½ and 1 and keeps its changed rows until [`Partition::commit`].
    pub line_search: bool,
    /// The constant feature of the intercept, if any.
    pub bias: Option<f64>,
}

/// What a partition's round sends to the driver: u = W + σ'ΔW_k and, with a line
/// search, the round's dual change at t = ½ and 1.
pub type Outcome = (Vec<f64>, (f64, f64));

/// What a partition's rounds update.
#[derive(Debug, Clone)]
struct PartitionState {
    /// A_k, n_k × m row-major.
    dual: Vec<f64>,
    /// Where the next round starts.
    cursor: Cursor,
    /// The active set the rounds use (everything unless shrinking).
    active: ActiveSet,
    /// The set the last gap check built: it takes over at the next epoch's start (the
    /// serial solver's shrinking, refreshed by its checks).
    next_active: Option<ActiveSet>,
    /// The rows the last round changed (with a line search) and their values before it,
    /// |changed| × m, until the driver's step commits the change.
    changed: Vec<usize>,
    before: Vec<f64>,
}

/// A partition's state as named arrays (its checkpoint's layout): float arrays hold rows
/// of one value per class (or label), integer arrays are flat.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamedArrays {
    pub floats: BTreeMap<String, Vec<f64>>,
    pub ints: BTreeMap<String, Vec<i64>>,
}

impl NamedArrays {
    /// The integers `name` (group `what` in errors) as indices; empty when absent.
    pub(crate) fn take_indices(&mut self, name: &str, what: &'static str) -> Result<Vec<usize>> {
        let values = self.ints.remove(name).unwrap_or_default().into_iter();
        values.map(|v| usize::try_from(v).map_err(|_| Error::input(what, format!("must be >= 0, got {v}")))).collect()
    }

    /// The active set `{name}_0` (examples as 0/1), `_1` (starts), `_2` (classes), if
    /// there is one (checked by [`ActiveSet::from_parts`]).
    fn take_active(&mut self, name: &str, ex: &Examples, m: usize) -> Result<Option<ActiveSet>> {
        let Some(examples) = self.ints.remove(&format!("{name}_0")) else { return Ok(None) };
        let starts = self.take_indices(&format!("{name}_1"), "active")?;
        let classes = self.take_indices(&format!("{name}_2"), "active")?;
        let classes =
            classes.into_iter().map(|c| u32::try_from(c).map_err(|_| Error::input("active", "class too large")));
        let examples = examples.iter().map(|&v| v != 0).collect();
        ActiveSet::from_parts(examples, starts, classes.collect::<Result<_>>()?, ex, m).map(Some)
    }
}

/// A partition of a CoCoA+ fit where its rows live (`toprank.distributed` keeps one on
/// the worker that holds them): its labels (one per example: the distributed fit has no
/// label sets yet), weights and ‖x_i‖², how its rounds run, and its state. Each call takes the partition's X (the rows of those norms) and the loss.
#[derive(Debug, Clone)]
pub struct Partition {
    y: Vec<usize>,
    c: Vec<f64>,
    sq_norms: Vec<f64>,
    m: usize,
    opts: PartitionRound,
    state: PartitionState,
}

impl Partition {
    /// A_k = 0 over the examples (y, c) of the rows whose ‖x_i‖² (+ bias²) are `sq_norms`.
    pub fn new<L: SdcaLoss + ?Sized>(
        loss: &L,
        y: Vec<usize>,
        c: Vec<f64>,
        sq_norms: Vec<f64>,
        m: usize,
        opts: PartitionRound,
    ) -> Result<Self> {
        let n = sq_norms.len();
        loss.check(m)?;
        Examples::new(&y, &c).check_entries(n, m, loss.multi_label())?;
        if !(opts.local_epochs > 0.0 && opts.local_epochs.is_finite()) {
            return Err(Error::param("local_epochs", format!("must be finite and > 0, got {}", opts.local_epochs)));
        }
        if opts.line_search && !loss.dual_is_quadratic() {
            return Err(Error::param("aggregation", "the line search needs a loss with quadratic dual terms (hinge)"));
        }
        let size = n.checked_mul(m).ok_or_else(|| Error::input("y", "too many examples times classes"))?;
        let state = PartitionState {
            dual: vec![0.0; size],
            cursor: Cursor { epoch: 1, offset: 0 },
            active: ActiveSet::new(n),
            next_active: None,
            changed: Vec::new(),
            before: Vec::new(),
        };
        Ok(Self { y, c, sq_norms, m, opts, state })
    }

    pub fn labels(&self) -> &[usize] {
        &self.y
    }

    pub fn n_classes(&self) -> usize {
        self.m
    }

    /// The state as named arrays: `dual` (A_k) and `before` (the rows the last round
    /// changed, as they were before it, until committed) as rows of m values; `cursor`
    /// (epoch, offset), `changed`, and each active set's parts ([`ActiveSet::parts`]):
    /// `active_0` its examples as 0/1, `active_1` its starts, `active_2` its classes, and
    /// `next_active_*` likewise when a check built one.
    pub fn to_named(&self) -> NamedArrays {
        let (state, mut named) = (&self.state, NamedArrays::default());
        let ints = |values: &[usize]| -> Vec<i64> { values.iter().map(|&v| v as i64).collect() };
        named.floats.extend([("dual".into(), state.dual.clone()), ("before".into(), state.before.clone())]);
        let cursor = [state.cursor.epoch, state.cursor.offset].map(|v| v as usize);
        named.ints.extend([("cursor".into(), ints(&cursor)), ("changed".into(), ints(&state.changed))]);
        for (name, set) in [("active", Some(&state.active)), ("next_active", state.next_active.as_ref())] {
            if let Some((examples, starts, classes)) = set.map(ActiveSet::parts) {
                named.ints.insert(format!("{name}_0"), examples.iter().map(|&b| i64::from(b)).collect());
                named.ints.insert(format!("{name}_1"), ints(starts));
                named.ints.insert(format!("{name}_2"), classes.iter().map(|&c| i64::from(c)).collect());
            }
        }
        named
    }

    /// Replaces the state by [`to_named`](Self::to_named)'s arrays from elsewhere (a
    /// checkpoint, a transfer; without `changed`, `before` or an active set: nothing
    /// pending, everything active), checked once: the rounds trust A_k after.
    pub fn restore(&mut self, mut named: NamedArrays) -> Result<()> {
        let (n, m) = (self.y.len(), self.m);
        let [epoch, offset] = named.take_indices("cursor", "cursor")?[..] else {
            return Err(Error::input("cursor", "must hold (epoch, offset)"));
        };
        let ex = Examples::new(&self.y, &self.c);
        let active = named.take_active("active", &ex, m)?.unwrap_or_else(|| ActiveSet::new(n));
        let next_active = named.take_active("next_active", &ex, m)?;
        let changed = named.take_indices("changed", "changed")?;
        let [dual, before] = ["dual", "before"].map(|name| named.floats.remove(name).unwrap_or_default());
        if dual.len() != n * m || dual.iter().any(|v| !v.is_finite()) {
            return Err(Error::input("dual", format!("must hold {n} x {m} finite values")));
        }
        if epoch == 0 {
            return Err(Error::input("cursor", "epochs are numbered from 1"));
        }
        if changed.iter().any(|&i| i >= n) || before.len() != changed.len() * m || before.iter().any(|v| !v.is_finite())
        {
            return Err(Error::input("changed", format!("rows must be < {n}, with {m} finite values each")));
        }
        let cursor = Cursor { epoch: epoch as u64, offset: offset as u64 };
        self.state = PartitionState { dual, cursor, active, next_active, changed, before };
        Ok(())
    }

    /// Scales the last round's change by the driver's step: A_k ← before + t(after −
    /// before) on its rows. t = 1 leaves them as the round did (no arithmetic: with one
    /// partition the rounds stay the serial solver's, bit for bit).
    pub fn commit(&mut self, t: f64) -> Result<()> {
        if !(0.0..=1.0).contains(&t) {
            return Err(Error::param("step", format!("must be in [0, 1], got {t}")));
        }
        let (state, m) = (&mut self.state, self.m);
        if t != 1.0 {
            for (&i, old) in state.changed.iter().zip(state.before.chunks_exact(m.max(1))) {
                let row = &mut state.dual[i * m..(i + 1) * m];
                row.iter_mut().zip(old).for_each(|(a, &o)| *a = o + t * (*a - o));
            }
        }
        state.changed.clear();
        state.before.clear();
        Ok(())
    }

    /// One round from the broadcast W (`w`, after the last round's
    /// [`commit`](Self::commit)): H·n⁺ steps rounded half to even (at least one; n⁺ the
    /// examples an epoch visits) from the cursor. A new active set takes over at an
    /// epoch's start, so a round that crosses one runs as two [`local_round`]s, the second
    /// continuing the first's u. Returns u = W + σ'ΔW_k and, with a line search, the
    /// round's dual change at t = ½ and 1 ([`dual_change`]; zeros otherwise); `None` if the
    /// monitor asked to stop.
    pub fn round<D: Design, L: SdcaLoss + ?Sized>(
        &mut self,
        x: &D,
        loss: &L,
        w: &[f64],
        monitor: &mut dyn Monitor,
    ) -> Result<Option<Outcome>> {
        let model = LinearModel::with_sq_norms(x, self.m, self.opts.bias, &self.sq_norms)?;
        let (ex, opts, m, state) = (Examples::new(&self.y, &self.c), &self.opts, self.m, &mut self.state);
        state.at_epoch_start();
        let eligible = state.visited(&ex, opts.shrinking);
        let mut remaining =
            if eligible == 0 { 0 } else { ((opts.local_epochs * eligible as f64).round_ties_even() as u64).max(1) };
        let mut local = w.to_vec();
        let mut first = vec![false; if opts.line_search { self.y.len() } else { 0 }];
        let (mut changed, mut before) = (Vec::new(), Vec::new());
        while remaining > 0 {
            let steps = match state.next_active {
                Some(_) => remaining.min(state.visited(&ex, opts.shrinking).saturating_sub(state.cursor.offset)),
                None => remaining,
            };
            let (sigma, seed, shrinking, record) = (opts.sigma, opts.seed, opts.shrinking, opts.line_search);
            let call = RoundOptions { sigma, steps, seed, shrinking, record };
            let from = state.cursor;
            let Some(round) =
                local_round(&model, loss, &ex, &mut state.dual, &local, &state.active, from, &call, monitor)?
            else {
                return Ok(None);
            };
            // Each row with its values before the first call that changed it.
            for (&i, row) in round.changed.iter().zip(round.before.chunks_exact(m.max(1))) {
                if !std::mem::replace(&mut first[i], true) {
                    changed.push(i);
                    before.extend_from_slice(row);
                }
            }
            (local, state.cursor, remaining) = (round.local, round.end, remaining - steps);
            state.at_epoch_start();
        }
        if !opts.line_search {
            return Ok(Some((local, (0.0, 0.0))));
        }
        let change = dual_change(loss, &ex, &changed, &before, &state.dual, m)?;
        (state.changed, state.before) = (changed, before);
        Ok(Some((local, change)))
    }

    /// The partition's terms of the duality gap at (W, A_k) ([`partition_terms`]); with
    /// shrinking, the active set their scores give takes over at the next epoch's start.
    pub fn terms<D: Design, L: SdcaLoss + ?Sized>(&mut self, x: &D, loss: &L, w: &[f64]) -> Result<(f64, f64)> {
        let mut model = LinearModel::with_sq_norms(x, self.m, self.opts.bias, &self.sq_norms)?;
        let ex = Examples::new(&self.y, &self.c);
        let (loss_sum, dual_sum, active) =
            partition_terms(&mut model, loss, &ex, &self.state.dual, w, self.opts.shrinking)?;
        if self.opts.shrinking {
            self.state.next_active = Some(active);
        }
        Ok((loss_sum, dual_sum))
    }
}

impl PartitionState {
    /// Examples an epoch visits (as `epoch_order`): c_i > 0, and active when shrinking.
    fn visited(&self, ex: &Examples, shrinking: bool) -> u64 {
        let visits = |(&active, &c): (&bool, &f64)| (!shrinking || active) && c > 0.0;
        self.active.examples.iter().zip(ex.c).filter(|&pair| visits(pair)).count() as u64
    }

    /// At an epoch's start, the active set the last check built takes over.
    fn at_epoch_start(&mut self) {
        if self.cursor.offset == 0 {
            if let Some(next) = self.next_active.take() {
                self.active = next;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::losses::TopKVariant;
    use crate::rng::SplitMix64;
    use crate::solvers::topk_svm::{objectives, solve, TopKHinge};
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
        let ex = Examples::new(&y, &c);
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
        let optimum = solve(&mut serial, &loss, &Examples::new(&y, &c), &mut a_serial, &opts, &mut Silent).unwrap();

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
                let ex = Examples::new(&y[cuts[k]..cuts[k + 1]], &c[cuts[k]..cuts[k + 1]]);
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
        let ex = Examples::new(&y, &c);
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
        for (&i, before) in round.changed.iter().zip(round.before.chunks_exact(m.max(1))) {
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
        let ex = Examples::new(&[], &[]);
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

    fn partition(x: &DenseRows<'_, f64>, y: &[usize], m: usize, opts: PartitionRound) -> Partition {
        let loss = TopKHinge { k: 2, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let sq_norms = LinearModel::sq_norms_of(x, opts.bias);
        Partition::new(&loss, y.to_vec(), vec![0.8; y.len()], sq_norms, m, opts).unwrap()
    }

    /// A partition's rounds with K = 1 are the serial solver's epochs, bit for bit: in
    /// rounds of a quarter pass, and in whole passes with shrinking (the active set of
    /// every other check taking over at the next epoch's start).
    #[test]
    fn partition_rounds_are_the_serial_solver() {
        let (n, d, m) = (120, 4, 5);
        let (x, y) = problem(n, d, m, 3);
        let (c, rows) = (vec![0.8; n], DenseRows::new(&x, n, d).unwrap());
        let loss = TopKHinge { k: 2, variant: TopKVariant::Alpha, smoothing: 0.0 };
        for (local_epochs, shrinking) in [(0.25, false), (1.0, true)] {
            let opts = SdcaOptions { tol: 1e-300, max_epochs: 7, check_every: 2, seed: 9, shrinking };
            let mut serial = LinearModel::new(&rows, m, Some(1.0));
            let mut a = vec![0.0; n * m];
            solve(&mut serial, &loss, &Examples::new(&y, &c), &mut a, &opts, &mut Silent).unwrap();

            let round =
                PartitionRound { sigma: 1.0, local_epochs, seed: 9, shrinking, line_search: false, bias: Some(1.0) };
            let mut part = partition(&rows, &y, m, round);
            let mut w = vec![0.0; m * (d + 1)];
            for r in 1..=(7.0 / local_epochs) as usize {
                w = part.round(&rows, &loss, &w, &mut Silent).unwrap().unwrap().0;
                if shrinking && r % 2 == 0 {
                    part.terms(&rows, &loss, &w).unwrap();
                }
            }
            assert!(w.iter().zip(serial.weights()).all(|(p, q)| p.to_bits() == q.to_bits()), "{local_epochs}");
            let dual = &part.to_named().floats["dual"];
            assert!(dual.iter().zip(&a).all(|(p, q)| p.to_bits() == q.to_bits()), "{local_epochs}");
        }
    }

    /// The state a partition exports — mid-epoch, with a pending line-search change and
    /// both active sets — restores into a new partition that continues bit for bit, and
    /// the driver's step scales exactly the pending change.
    #[test]
    fn partition_state_restores_and_commits() {
        let (n, d, m) = (90, 3, 4);
        let (x, y) = problem(n, d, m, 11);
        let rows = DenseRows::new(&x, n, d).unwrap();
        let loss = TopKHinge { k: 2, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let round =
            PartitionRound { sigma: 1.0, local_epochs: 0.7, seed: 4, shrinking: true, line_search: true, bias: None };
        let mut part = partition(&rows, &y, m, round);
        let mut w = vec![0.0; m * d];
        for _ in 0..3 {
            part.commit(1.0).unwrap();
            w = part.round(&rows, &loss, &w, &mut Silent).unwrap().unwrap().0;
            part.terms(&rows, &loss, &w).unwrap();
        }
        let named = part.to_named();
        assert!(!named.ints["changed"].is_empty() && named.ints.contains_key("next_active_0"));
        let mut copy = partition(&rows, &y, m, round);
        copy.restore(named.clone()).unwrap();
        assert_eq!(copy.to_named(), named);

        // A_k ← before + t(after − before) on the changed rows, nothing elsewhere.
        part.commit(0.25).unwrap();
        let (after, committed) = (&named.floats["dual"], &part.to_named().floats["dual"]);
        let mut expected = after.clone();
        for (&i, old) in named.ints["changed"].iter().zip(named.floats["before"].chunks_exact(m)) {
            let i = i as usize;
            for (j, &o) in old.iter().enumerate() {
                expected[i * m + j] = o + 0.25 * (after[i * m + j] - o);
            }
        }
        assert_eq!(committed, &expected);
        copy.commit(0.25).unwrap();
        for part in [&mut part, &mut copy] {
            let u = part.round(&rows, &loss, &w, &mut Silent).unwrap().unwrap();
            part.commit(0.5).unwrap();
            let terms = part.terms(&rows, &loss, &u.0).unwrap();
            assert!(terms.0.is_finite() && terms.1.is_finite());
        }
        assert_eq!(part.to_named(), copy.to_named());

        assert!(part.commit(1.5).is_err() && part.commit(f64::NAN).is_err());
        let mut bad = named.clone();
        bad.floats.get_mut("dual").unwrap()[5] = f64::NAN;
        assert!(copy.restore(bad).is_err());
        let mut bad = named.clone();
        bad.ints.insert("cursor".into(), vec![0, 0]);
        assert!(copy.restore(bad).is_err());
        let mut bad = named;
        bad.ints.insert("changed".into(), vec![n as i64]);
        assert!(copy.restore(bad).is_err());
    }
}
