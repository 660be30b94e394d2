//! Accelerated Prox-SDCA for linear models: the outer loop of Shalev-Shwartz and
//! Zhang's accelerated proximal SDCA ("Accelerated proximal stochastic dual coordinate
//! ascent for regularized loss minimization", Math. Programming 155, 2016, §4), which
//! the plain solver hands over to when it converges too slowly.
//!
//! Why: SDCA needs epochs in proportion to κ = max_i c_i‖x_i‖² (a step moves W by up
//! to c_i‖x_i‖ along x_i). With κ ≫ 1 — unscaled features, a large C, overlapping
//! classes — the gap of the non-smooth losses falls sublinearly: on 10,000 × 300
//! unscaled rows with 50 overlapping classes (κ ≈ 400, C = 1), plain SDCA is at a
//! relative gap of 0.14 after 275 epochs, this loop at 1e-3 after about 250.
//!
//! Stage t solves, with μ = 1 + κ_p and the prox centre Z_t = (κ_p/μ)·Y_{t−1},
//!     min_W ½‖W − Z_t‖² + Σ_i (c_i/μ) L(Wᵀx_i; y_i),
//! which is (the original objective + (κ_p/2)‖W − Y_{t−1}‖²)/μ up to a constant: the
//! original problem made better conditioned (κ/μ). Its dual rows a_i lie in (c_i/μ)
//! times the loss's dual set and W = Z_t + Σ_i x_i a_iᵀ, so plain SDCA (serial or
//! CoCoA+) solves it unchanged once W starts there; a few epochs per stage suffice.
//! Then Y_t = W_t + β(W_t − W_{t−1}) with β = (1 − √q)/(1 + √q), q = 1/μ (the original
//! problem is 1-strongly convex, the stage problem μ-strongly).
//!
//! The certificate is the original problem's own duality gap. The dual sets scale with
//! c, so μA is dual feasible for the original problem, with W(μA) = μ(W_t − Z_t); the
//! dual terms d(a; c) = −c L*(−a^{\y}/c) are positively homogeneous in (a, c), so
//!     D(μA) = μ Σ_i d(a_i; c_i/μ) − ½μ²‖W_t − Z_t‖²,   P(W_t) = ½‖W_t‖² + μ Σ_i (c_i/μ) L_i,
//! both from the stage solve's own evaluation pass. At the fixed point Y = W* the
//! stage optimum is W* and μ(W* − Z) = W*, so the gap closes. The solve returns W_t and
//! μA. μ = √κ balances the stages' conditioning against the outer rate; if the gap stops
//! improving (stage solves too inexact for the momentum), μ shrinks fourfold and the
//! momentum restarts, down to plain SDCA.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::cocoa::solve_cocoa;
use super::dual::DualRowsMut;
use super::loss::SdcaLoss;
use super::model::{LinearModel, ScoreModel};
use super::problem::{ActiveSet, Examples, Objectives};
use super::solver::{solve_from, SdcaOptions, SdcaReport};
use crate::data::Design;
use crate::solvers::{relative_gap, Monitor, Progress, Status};
use crate::Result;

/// Epochs of plain SDCA before its progress is judged.
const JUDGE_AFTER: usize = 20;
/// Epochs per stage.
const STAGE_EPOCHS: usize = 3;
/// Below this κ_max acceleration has nothing to gain (μ = √κ < 2).
const MIN_CONDITION: f64 = 4.0;
/// Stages without a 1 % better gap before μ shrinks.
const PATIENCE: usize = 10;

/// Linear Prox-SDCA: serial (`blocks` None) or CoCoA+ over `blocks` blocks, switching to
/// the accelerated outer loop when κ_max ≥ 4 and the plain solver's gap did not halve
/// over the last half of its epochs (judged from epoch 20 on). `a` and the model
/// hold the final iterate (see the module docs for what they are after a switch).
pub fn solve_linear<D: Design, L: SdcaLoss + ?Sized, A: DualRowsMut + ?Sized>(
    model: &mut LinearModel<D>,
    loss: &L,
    ex: &Examples,
    a: &mut A,
    opts: &SdcaOptions,
    blocks: Option<usize>,
    monitor: &mut dyn Monitor,
) -> Result<SdcaReport> {
    let start = Instant::now();
    // One shrinking state for the plain solve and every stage: each continues the last
    // on a nearby problem, and a fresh set would make every stage's epochs full passes.
    let mut active = ActiveSet::new(model.n_rows());
    let plain = |model: &mut LinearModel<D>,
                 ex: &Examples,
                 a: &mut A,
                 opts: &SdcaOptions,
                 active: &mut ActiveSet,
                 monitor: &mut dyn Monitor| match blocks {
        Some(b) => solve_cocoa(model, loss, ex, a, opts, b, active, monitor),
        None => solve_from(model, loss, ex, a, opts, active, monitor),
    };
    let condition = (0..model.n_rows()).map(|i| ex.c[i] * model.sq_norm(i)).fold(0.0, f64::max);
    let mut watch =
        Watch { outer: monitor, tol: opts.tol, max_epochs: opts.max_epochs, gaps: Vec::new(), switch: false };
    let judge = condition >= MIN_CONDITION;
    let report = if judge {
        plain(model, ex, a, opts, &mut active, &mut watch)?
    } else {
        plain(model, ex, a, opts, &mut active, &mut *watch.outer)?
    };
    if !watch.switch {
        return Ok(report);
    }
    let done = watch.gaps.last().map_or(0, |&(e, _)| e);
    let mut stages = Stages { model, ex, a, opts, active, start, history: report.history, epochs: done };
    stages.run(condition.sqrt(), watch.outer, plain)
}

/// Watches the plain solver's checks and stops it when its gap falls too slowly.
struct Watch<'m> {
    outer: &'m mut dyn Monitor,
    tol: f64,
    max_epochs: usize,
    gaps: Vec<(usize, f64)>,
    switch: bool,
}

impl Watch<'_> {
    /// Whether the gap failed to halve over the last half of the epochs: slower than the
    /// O(1/t) of non-smooth SDCA at its best, while linear convergence (well-conditioned
    /// or smooth problems) gains orders of magnitude there. Independent of tol, so a tight
    /// tol on a problem that converges fast keeps the plain solver.
    fn too_slow(&self) -> bool {
        let &(epoch, gap) = self.gaps.last().expect("called after a check");
        if epoch < JUDGE_AFTER || gap <= self.tol || epoch + STAGE_EPOCHS >= self.max_epochs {
            return false;
        }
        self.gaps.iter().find(|&&(e, _)| 2 * e >= epoch && e < epoch).is_some_and(|&(_, earlier)| earlier < 2.0 * gap)
    }
}

impl Monitor for Watch<'_> {
    fn report(&mut self, progress: &Progress) {
        self.outer.report(progress);
        self.gaps.push((progress.epoch, progress.gap));
        self.switch = self.too_slow();
    }
    fn should_stop(&mut self) -> bool {
        self.switch || self.outer.should_stop()
    }
    fn stop_flag(&self) -> Option<&AtomicBool> {
        self.outer.stop_flag()
    }
}

/// Forwards stop requests, not the stage solves' own (shifted) progress.
struct Quiet<'m>(&'m mut dyn Monitor);

impl Monitor for Quiet<'_> {
    fn should_stop(&mut self) -> bool {
        self.0.should_stop()
    }
    fn stop_flag(&self) -> Option<&AtomicBool> {
        self.0.stop_flag()
    }
}

/// The accelerated outer loop's state.
struct Stages<'s, 'm, D: Design, A: DualRowsMut + ?Sized> {
    model: &'s mut LinearModel<'m, D>,
    ex: &'s Examples<'s>,
    a: &'s mut A,
    opts: &'s SdcaOptions,
    active: ActiveSet,
    start: Instant,
    history: Vec<Progress>,
    epochs: usize,
}

impl<D: Design, A: DualRowsMut + ?Sized> Stages<'_, '_, D, A> {
    fn run(
        &mut self,
        mut mu: f64,
        monitor: &mut dyn Monitor,
        plain: impl Fn(
            &mut LinearModel<D>,
            &Examples,
            &mut A,
            &SdcaOptions,
            &mut ActiveSet,
            &mut dyn Monitor,
        ) -> Result<SdcaReport>,
    ) -> Result<SdcaReport> {
        // Entering: W = X^T A (plain SDCA's pair), Y = W. The stage variables are A/μ,
        // Z = (1 − 1/μ)·W, so W = Z + X^T A/μ stays where it is.
        let mut w_prev = self.model.weights().to_vec();
        let mut centre: Vec<f64> = w_prev.iter().map(|&w| (1.0 - 1.0 / mu) * w).collect();
        self.a.map_values(|v| v / mu);
        let (mut best, mut since_best) = (f64::INFINITY, 0);
        // The stage problem's weights c_i/μ, rescaled only when μ changes.
        let mut stage_c: Vec<f64> = self.ex.c.iter().map(|&c| c / mu).collect();
        let mut stage = 0u64;
        let last = loop {
            stage += 1;
            let ex = self.ex.with_weights(&stage_c);
            let epochs = STAGE_EPOCHS.min(self.opts.max_epochs - self.epochs);
            let seed = self.opts.seed ^ stage.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let inner = SdcaOptions { max_epochs: epochs, check_every: epochs, seed, ..*self.opts };
            let report = plain(self.model, &ex, self.a, &inner, &mut self.active, &mut Quiet(monitor))?;
            self.epochs += report.epochs;
            if report.status == Status::Interrupted {
                self.a.map_values(|v| v * mu);
                let nan = Objectives { primal: f64::NAN, dual: f64::NAN };
                return Ok(self.report(Status::Interrupted, nan));
            }
            let obj = self.certificate(&report.objectives, &centre, mu);
            let gap = relative_gap(obj.primal, obj.dual);
            let progress =
                Progress { epoch: self.epochs, primal: obj.primal, dual: obj.dual, gap, elapsed: self.start.elapsed() };
            self.history.push(progress);
            monitor.report(&progress);
            if gap <= self.opts.tol {
                break (Status::Converged, obj);
            }
            if self.epochs >= self.opts.max_epochs {
                break (Status::MaxIter, obj);
            }
            if gap < 0.99 * best {
                (best, since_best) = (gap, 0);
            } else {
                since_best += 1;
            }
            let w = self.model.weights().to_vec();
            if since_best >= PATIENCE {
                // The stage solves are too inexact for this μ: a smaller one, momentum restarted.
                let smaller = mu / 4.0;
                if smaller < 2.0 {
                    // Plain SDCA from here: A ← μA, W = X^T(μA) = μ(W − Z).
                    self.a.map_values(|v| v * mu);
                    for (wv, &z) in self.model.weights_mut().iter_mut().zip(&centre) {
                        *wv = mu * (*wv - z);
                    }
                    let rest = SdcaOptions { max_epochs: self.opts.max_epochs - self.epochs, ..*self.opts };
                    let shifted = &mut Shifted { outer: monitor, by: self.epochs };
                    let report = plain(self.model, self.ex, self.a, &rest, &mut self.active, shifted)?;
                    self.epochs += report.epochs;
                    self.history.extend(
                        report.history.iter().map(|p| Progress { epoch: p.epoch + self.epochs - report.epochs, ..*p }),
                    );
                    return Ok(SdcaReport {
                        status: report.status,
                        epochs: self.epochs,
                        objectives: report.objectives,
                        history: std::mem::take(&mut self.history),
                    });
                }
                // X^T A scales by μ/μ' with A; the new centre is (1 − 1/μ')·W.
                let ratio = mu / smaller;
                self.a.map_values(|v| v * ratio);
                let new_centre: Vec<f64> = w.iter().map(|&wv| (1.0 - 1.0 / smaller) * wv).collect();
                for ((wv, &z), &z_new) in self.model.weights_mut().iter_mut().zip(&centre).zip(&new_centre) {
                    *wv = z_new + ratio * (*wv - z);
                }
                stage_c.iter_mut().for_each(|c| *c *= ratio);
                (centre, mu, w_prev, since_best, best) = (new_centre, smaller, w, 0, f64::INFINITY);
                continue;
            }
            // Y = W_t + β(W_t − W_{t−1}); the centre moves to (1 − 1/μ)·Y, and W with it
            // (W − Z = X^T A is the stage's own variable).
            let q = (1.0 / mu).sqrt();
            let beta = (1.0 - q) / (1.0 + q);
            for (((wv, wp), z), &wt) in
                self.model.weights_mut().iter_mut().zip(w_prev.iter_mut()).zip(centre.iter_mut()).zip(&w)
            {
                let y = wt + beta * (wt - *wp);
                let z_new = (1.0 - 1.0 / mu) * y;
                *wv += z_new - *z;
                *z = z_new;
                *wp = wt;
            }
        };
        let (status, obj) = last;
        self.a.map_values(|v| v * mu);
        Ok(self.report(status, obj))
    }

    /// The original problem's P(W_t) and D(μA) from a stage solve's evaluation (which
    /// assumed W = X^T A: its P − ½‖W‖² is the stage loss sum, its D + ½‖W‖² the stage
    /// dual terms).
    fn certificate(&self, stage: &Objectives, centre: &[f64], mu: f64) -> Objectives {
        let w = self.model.weights();
        let half_w2 = 0.5 * crate::linalg::dot(w, w);
        let dist2: f64 = w.iter().zip(centre).map(|(&wv, &z)| (wv - z) * (wv - z)).sum();
        Objectives {
            primal: half_w2 + mu * (stage.primal - half_w2),
            dual: mu * (stage.dual + half_w2) - 0.5 * mu * mu * dist2,
        }
    }

    fn report(&mut self, status: Status, objectives: Objectives) -> SdcaReport {
        SdcaReport { status, epochs: self.epochs, objectives, history: std::mem::take(&mut self.history) }
    }
}

/// Reports a continued solve's checks with its epochs counted from `by`.
struct Shifted<'m> {
    outer: &'m mut dyn Monitor,
    by: usize,
}

impl Monitor for Shifted<'_> {
    fn report(&mut self, progress: &Progress) {
        self.outer.report(&Progress { epoch: progress.epoch + self.by, ..*progress });
    }
    fn should_stop(&mut self) -> bool {
        self.outer.should_stop()
    }
    fn stop_flag(&self) -> Option<&AtomicBool> {
        self.outer.stop_flag()
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

    /// Overlapping Gaussian classes with unscaled features: κ_max = max ‖x_i‖² ≈ 2d at C = 1.
    fn badly_scaled(n: usize, d: usize, m: usize) -> (Vec<f64>, Vec<usize>) {
        let mut rng = SplitMix64::derive(7, 0);
        let mut gauss = || {
            let (u, v) = (rng.next_f64().max(1e-300), rng.next_f64());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let centres: Vec<f64> = (0..m * d).map(|_| gauss()).collect();
        let y: Vec<usize> = (0..n).map(|i| (i * 7919) % m).collect();
        let x = (0..n * d).map(|t| 0.1 * centres[y[t / d] * d + t % d] + gauss()).collect();
        (x, y)
    }

    /// After the switch, the reported objectives are the original problem's P(W) and
    /// D(A) of the returned pair, recomputed here from scratch: D from a model rebuilt as
    /// W(A) = Σ x_i a_iᵀ, P from the returned weights; and their gap certifies tol.
    #[test]
    fn the_accelerated_certificate_is_the_original_problems_gap() {
        let (n, d, m) = (1500, 30, 6);
        let (x, y) = badly_scaled(n, d, m);
        let design = DenseRows::new(&x, n, d).unwrap();
        let c = vec![1.0; n];
        let ex = Examples::new(&y, &c);
        let loss = TopKHinge { k: 2, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let opts = SdcaOptions { tol: 1e-3, max_epochs: 60, check_every: 5, seed: 3, shrinking: true };
        for blocks in [None, Some(2)] {
            let mut model = LinearModel::new(&design, m, Some(1.0));
            let mut a = vec![0.0; n * m];
            let report = solve_linear(&mut model, &loss, &ex, &mut a, &opts, blocks, &mut Silent).unwrap();
            assert_eq!(report.status, Status::Converged, "{blocks:?}");
            // The switch happened: stages of 3 epochs after the plain checks every 5.
            assert!(report.history.iter().any(|p| p.epoch % 5 != 0), "{blocks:?}");
            let mut rebuilt = LinearModel::new(&design, m, Some(1.0));
            let mut buf = crate::data::RowBuf::new();
            for (i, ai) in a.chunks(m).enumerate() {
                rebuilt.apply(i, ai, &mut buf);
            }
            let mut active = ActiveSet::new(n);
            let dual = objectives(&rebuilt, &loss, &ex, &a, &mut active, false, None).unwrap().unwrap().dual;
            let primal = objectives(&model, &loss, &ex, &a, &mut active, false, None).unwrap().unwrap().primal;
            assert!(
                (dual - report.objectives.dual).abs() <= 1e-9 * dual.abs(),
                "{blocks:?}: {dual} vs {:?}",
                report.objectives
            );
            assert!((primal - report.objectives.primal).abs() <= 1e-9 * primal.abs(), "{blocks:?}");
            assert!(relative_gap(primal, dual) <= opts.tol);
        }
    }

    /// Well-scaled rows (κ_max < 4) never leave the plain solver: the same iterates.
    #[test]
    fn well_scaled_problems_keep_the_plain_solver() {
        let (n, d, m) = (400, 10, 4);
        let (mut x, y) = badly_scaled(n, d, m);
        x.iter_mut().for_each(|v| *v /= 10.0);
        let design = DenseRows::new(&x, n, d).unwrap();
        let c = vec![1.0; n];
        let ex = Examples::new(&y, &c);
        let loss = TopKHinge { k: 1, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let opts = SdcaOptions { tol: 1e-12, max_epochs: 40, check_every: 5, seed: 1, shrinking: true };
        let (mut m1, mut m2) = (LinearModel::new(&design, m, None), LinearModel::new(&design, m, None));
        let (mut a1, mut a2) = (vec![0.0; n * m], vec![0.0; n * m]);
        solve_linear(&mut m1, &loss, &ex, &mut a1, &opts, None, &mut Silent).unwrap();
        solve(&mut m2, &loss, &ex, &mut a2, &opts, &mut Silent).unwrap();
        assert_eq!(a1, a2);
        assert_eq!(m1.weights(), m2.weights());
    }
}
