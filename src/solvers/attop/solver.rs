//! Two-coordinate dual ascent for ranking at the top (Mácha, Adam, Šmídl 2020,
//! Algorithm 3.1) on any kernel.
//!
//! Problem: the duals (7) (TopPushK) and (12) (Pat&Mat) as written in `objective.rs`.
//! Each iteration picks the first coordinate k — the maximal violating one of LIBSVM's
//! working-set selection, or, with probability `reuse`, the previous partner, whose
//! kernel column is still cached (the paper picks k at random) — scans every partner l
//! in O(n) for the exact step of update rules (17) (`step.rs`), takes the pair with the
//! largest dual gain and updates v and the decision values f with the two kernel columns
//! K_·k, K_·l:
//!   f ← f + σ_kΔ (K_·k − K_·l).
//! When no pair improves, and at every check, two moves that change many coordinates at
//! once follow: the best rescaling v ← ρv, and a group step for the β tied at a coupled
//! bound (TopPushK's cap Σα/K, Pat&Mat-hinge's max β; `group.rs`). Without them the pair
//! steps stall at such ties with the gap open.
//! The coupled bounds need Σα (kept in O(1)) and the largest β other than the moved ones
//! (an ordered set of β: O(log n) per step); Pat&Mat's δ* needs Σβ² (O(1)).
//!
//! Optimality: weak duality P(w(v)) ≥ D(v) for every feasible v; every step raises D (or
//! leaves it), and the loop stops when (P − D) ≤ tol · max(|P|, |D|), evaluated every
//! `check_every` iterations in O(n) (plus a sort for Pat&Mat's threshold) from f.
//! Where two-coordinate moves cannot raise D although the gap is open (D stalls), the
//! status says `no_progress` instead of pretending convergence.

use std::collections::BTreeSet;

use rayon::prelude::*;
use std::time::Instant;

use super::objective::{AtTop, AtTopObjectives, Method, Surrogate};
use super::scan::{self, scan_partners, PartnerClass, ScanConstants};
use super::step::{Line, Term};
use crate::kernels::{ColumnCache, KernelJob, KernelSource};
use crate::rng::SplitMix64;
use crate::solvers::{Monitor, Progress, Report, Status};
use crate::{Error, Result};

/// Solver settings.
#[derive(Debug, Clone, Copy)]
pub struct AtTopOptions {
    /// Relative duality-gap tolerance.
    pub tol: f64,
    pub max_iter: usize,
    /// Iterations between two gap checks.
    pub check_every: usize,
    pub seed: u64,
    /// Probability of taking the last partner as the next k.
    pub reuse: f64,
}

/// What a solve did.
#[derive(Debug, Clone)]
pub struct AtTopReport {
    pub status: Status,
    pub iterations: usize,
    pub objectives: AtTopObjectives,
    pub history: Vec<Progress>,
}

/// The solution: dual variables (α on positives, β on negatives, in example order) and
/// the decision values f(x_i) on the training examples.
#[derive(Debug, Clone)]
pub struct AtTopSolution {
    pub v: Vec<f64>,
    pub f: Vec<f64>,
}

/// Solves the dual of `problem` on the examples of `kernel`, `positive[i]` giving the
/// class of example i. Starts from a small feasible point (Algorithm 3.1, step 1).
pub fn solve_attop<S: KernelSource + ?Sized>(
    problem: &AtTop,
    kernel: &S,
    cache: &mut ColumnCache,
    positive: &[bool],
    opts: &AtTopOptions,
    monitor: &mut dyn Monitor,
) -> Result<(AtTopSolution, AtTopReport)> {
    let n = kernel.n();
    if positive.len() != n {
        return Err(Error::input("y", format!("has {} labels for {n} examples", positive.len())));
    }
    let n_pos = positive.iter().filter(|&&p| p).count();
    problem.check(n_pos, n - n_pos)?;
    if !(opts.tol > 0.0 && opts.tol.is_finite()) {
        return Err(Error::param("tol", format!("must be finite and > 0, got {}", opts.tol)));
    }
    if opts.max_iter == 0 {
        return Err(Error::param("max_iter", "must be >= 1"));
    }
    if opts.check_every == 0 {
        return Err(Error::param("check_every", "must be >= 1"));
    }
    if !(0.0..=1.0).contains(&opts.reuse) {
        return Err(Error::param("reuse", format!("must lie in [0, 1], got {}", opts.reuse)));
    }
    let mut state = State::start(problem, kernel, cache, positive, opts.seed);
    let mut rng = SplitMix64::derive(opts.seed, 1);
    let start = Instant::now();
    let mut history = Vec::new();
    let (mut last_dual, mut last_gap) = (f64::NEG_INFINITY, f64::INFINITY);
    let mut partner: Option<usize> = None;
    let mut stalled = false;
    let check = |it: usize, state: &State, history: &mut Vec<Progress>, monitor: &mut dyn Monitor| {
        let obj = problem.objectives(&state.v, &state.f, positive);
        let progress = Progress {
            epoch: it,
            primal: obj.primal,
            dual: obj.dual,
            gap: obj.relative_gap(),
            elapsed: start.elapsed(),
        };
        history.push(progress);
        monitor.report(&progress);
        obj
    };
    for it in 1..=opts.max_iter {
        if monitor.should_stop() {
            let obj = check(it - 1, &state, &mut history, monitor);
            return Ok((
                state.into_solution(),
                AtTopReport { status: Status::Interrupted, iterations: it - 1, objectives: obj, history },
            ));
        }
        // After a scan that found no step, k is random until one does: the maximal
        // violating coordinate ignores the coupled bounds and would be picked again.
        let k = if stalled {
            rng.below(n)
        } else {
            let reuse = partner.filter(|_| rng.next_f64() < opts.reuse);
            reuse.or_else(|| state.most_violating()).unwrap_or_else(|| rng.below(n))
        };
        partner = state.iterate(k, cache, kernel);
        stalled = partner.is_none();
        if stalled || it % opts.check_every == 0 {
            state.rescale();
            state.group_iterate(cache, kernel);
        }
        if it % opts.check_every == 0 || it == opts.max_iter {
            let obj = check(it, &state, &mut history, monitor);
            let status = if obj.relative_gap() <= opts.tol {
                Some(Status::Converged)
            } else if obj.dual <= last_dual && obj.relative_gap() >= last_gap {
                // Neither D rose nor the gap closed over a check interval (D alone can sit
                // at its optimum to the last bit while P still converges).
                Some(Status::NoProgress)
            } else if it == opts.max_iter {
                Some(Status::MaxIter)
            } else {
                None
            };
            (last_dual, last_gap) = (obj.dual, obj.relative_gap());
            if let Some(status) = status {
                return Ok((state.into_solution(), AtTopReport { status, iterations: it, objectives: obj, history }));
            }
        }
    }
    unreachable!("the last iteration always decides a status")
}

/// The iterate and its bookkeeping.
pub(super) struct State<'p> {
    pub(super) problem: &'p AtTop,
    pub(super) positive: &'p [bool],
    pub(super) v: Vec<f64>,
    pub(super) f: Vec<f64>,
    pub(super) diag: Vec<f64>,
    pub(super) sum_alpha: f64,
    pub(super) sum_beta_sq: f64,
    /// β of the negatives ordered by value (bits of β ≥ 0, index), kept only where the
    /// largest β matters (TopPushK with K ≥ 2, Pat&Mat with the hinge).
    pub(super) betas: Option<BTreeSet<(u64, u32)>>,
    /// n·τ (Pat&Mat).
    pub(super) mass: f64,
    /// σ_i = ±1, the class of each example as a number: the partner scan selects the
    /// class constants by it lane by lane (`scan.rs`).
    pub(super) sigma: Vec<i8>,
    /// Whether the kernel's diagonal is constant (the Gaussian kernel).
    pub(super) uniform_diag: bool,
    /// The split of the examples over the pool's threads (`ranges`), fixed for a solve.
    pub(super) split: Vec<std::ops::Range<usize>>,
}

/// Below this many examples the O(n) passes of an iteration run on one thread.
const PARALLEL_PASSES: usize = 16_384;

/// The examples split into one contiguous range per thread of the current pool (a whole
/// multiple of the vector lanes long), or one range for small n. Each range stays with
/// one thread from pass to pass as far as rayon allows, so its part of f, v and the
/// diagonal stays in that core's cache. The picks do not depend on the split: the
/// largest value wins and ties go to the smaller index in every order of reduction.
fn ranges(n: usize) -> Vec<std::ops::Range<usize>> {
    let threads = rayon::current_num_threads();
    if n < PARALLEL_PASSES || threads < 2 {
        return std::iter::once(0..n).collect();
    }
    let len = n.div_ceil(threads).next_multiple_of(8);
    (0..n).step_by(len).map(|start| start..(start + len).min(n)).collect()
}

/// (l, Δ, gain) of the better of two candidate steps; ties to the smaller l.
pub(super) fn better(a: Option<(usize, f64, f64)>, b: Option<(usize, f64, f64)>) -> Option<(usize, f64, f64)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.2 > x.2 || (y.2 == x.2 && y.0 < x.0) { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

fn key(b: f64) -> u64 {
    if b > 0.0 {
        b.to_bits()
    } else {
        0
    }
}

impl<'p> State<'p> {
    /// A feasible start with few nonzeros (so f costs a few kernel columns): α_p = a on
    /// one positive and β = a spread evenly over K negatives (TopPushK; β ≤ Σα/K holds
    /// with equality) or ⌈nτ⌉ + 1 (Pat&Mat), with a = Cθ/2 (inside the hinge box).
    fn start<S: KernelSource + ?Sized>(
        problem: &'p AtTop,
        kernel: &S,
        cache: &mut ColumnCache,
        positive: &'p [bool],
        seed: u64,
    ) -> Self {
        let n = positive.len();
        let mut rng = SplitMix64::derive(seed, 0);
        let pos: Vec<usize> = (0..n).filter(|&i| positive[i]).collect();
        let mut neg: Vec<usize> = (0..n).filter(|&i| !positive[i]).collect();
        rng.shuffle(&mut neg);
        let a = 0.5 * problem.c * problem.scale;
        let mut v = vec![0.0; n];
        v[pos[rng.below(pos.len())]] = a;
        // Pat&Mat: over ⌈nτ⌉ + 1 negatives, where the max/norm penalty on β is small
        // enough for the first steps to pay (a single β would cost nτ·β/θ at once).
        let spread = match problem.method {
            Method::TopPushK { k } => k,
            Method::PatMat { .. } => (problem.quantile_mass(n).ceil() as usize + 1).min(neg.len()),
        };
        neg[..spread].iter().for_each(|&j| v[j] = a / spread as f64);
        let mut f = vec![0.0; n];
        for j in (0..n).filter(|&j| v[j] != 0.0) {
            let col = cache.get(j, kernel);
            let coef = if positive[j] { v[j] } else { -v[j] };
            f.iter_mut().zip(col).for_each(|(fi, &kij)| *fi += coef * kij);
        }
        let needs_order = matches!(
            (problem.method, problem.surrogate),
            (Method::TopPushK { k: 2.. }, _) | (Method::PatMat { .. }, Surrogate::Hinge)
        );
        let betas = needs_order.then(|| (0..n).filter(|&j| !positive[j]).map(|j| (key(v[j]), j as u32)).collect());
        let sum_beta_sq = (0..n).filter(|&j| !positive[j]).map(|j| v[j] * v[j]).sum();
        let diag: Vec<f64> = (0..n).map(|i| kernel.diag(i)).collect();
        let sigma = positive.iter().map(|&p| if p { 1 } else { -1 }).collect();
        let uniform_diag = diag.windows(2).all(|w: &[f64]| w[0] == w[1]);
        Self {
            problem,
            positive,
            v,
            f,
            diag,
            sum_alpha: a,
            sum_beta_sq,
            betas,
            mass: problem.quantile_mass(n),
            sigma,
            uniform_diag,
            split: ranges(n),
        }
    }

    fn into_solution(self) -> AtTopSolution {
        AtTopSolution { v: self.v, f: self.f }
    }

    /// The three largest β with their indices, largest first ((0, usize::MAX) where there
    /// are fewer negatives or no order is kept).
    fn top_betas(&self) -> [(f64, usize); 3] {
        let mut out = [(0.0, usize::MAX); 3];
        if let Some(set) = &self.betas {
            for (slot, &(bits, j)) in out.iter_mut().zip(set.iter().rev()) {
                *slot = (f64::from_bits(bits), j as usize);
            }
        }
        out
    }

    /// The dual term of a positive's or a negative's coordinate (see `step.rs`); the
    /// same for every coordinate of a class, so scans compute it once.
    pub(super) fn term(&self, positive: bool) -> Term {
        let p = self.problem;
        let theta = p.scale;
        if positive {
            return match p.surrogate {
                Surrogate::Quadratic => {
                    Term { c1: 1.0 / theta, c2: 1.0 / (4.0 * p.c * theta * theta), cap: f64::INFINITY }
                }
                Surrogate::Hinge => Term { c1: 1.0 / theta, c2: 0.0, cap: p.c * theta },
            };
        }
        match (p.method, p.surrogate) {
            (Method::TopPushK { .. }, _) => Term { c1: 0.0, c2: 0.0, cap: f64::INFINITY },
            (Method::PatMat { .. }, Surrogate::Hinge) => Term { c1: 1.0 / theta, c2: 0.0, cap: f64::INFINITY },
            (Method::PatMat { .. }, Surrogate::Quadratic) => {
                if self.sum_beta_sq > 0.0 {
                    // −β²/(4δθ²) at the current δ* = ‖β‖/(2θ√(nτ)) (the paper's C.2).
                    let delta = self.sum_beta_sq.sqrt() / (2.0 * theta * self.mass.sqrt());
                    Term { c1: 1.0 / theta, c2: 1.0 / (4.0 * delta * theta * theta), cap: f64::INFINITY }
                } else {
                    // β = 0: the exact term is (1 − √(nτ))·β/θ for the one β that moves.
                    Term { c1: (1.0 - self.mass.sqrt()) / theta, c2: 0.0, cap: f64::INFINITY }
                }
            }
        }
    }

    /// The best step of pair (k, l), l of class `pl`: (Δ, gain).
    #[inline(always)]
    fn pair_step(
        &self,
        k: usize,
        l: usize,
        pl: bool,
        kkl: f64,
        terms: &[Term; 2],
        top: &[(f64, usize); 3],
    ) -> Option<(f64, f64)> {
        let pk = self.positive[k];
        let sign_k = if pk { 1.0 } else { -1.0 };
        let q = self.diag[k] + self.diag[l] - 2.0 * kkl;
        let mut line = Line::new(q, sign_k * (self.f[k] - self.f[l]));
        let sl = if pk == pl { -1.0 } else { 1.0 };
        line.add(terms[usize::from(pk)], self.v[k], 1.0);
        line.add(terms[usize::from(pl)], self.v[l], sl);
        let largest_other = |skip: [usize; 2]| top.iter().find(|(_, j)| !skip.contains(j)).map_or(0.0, |&(b, _)| b);
        match self.problem.method {
            Method::TopPushK { k: kk } if kk >= 2 => {
                let kf = kk as f64;
                if pk != pl {
                    // Rule (17b): Σα grows by Δ; the moved β and every other must stay ≤ Σα/K.
                    let m = if pk { l } else { k };
                    let cap_grow = (self.sum_alpha - kf * self.v[m]) / (kf - 1.0);
                    line.bound(kf * largest_other([m, usize::MAX]) - self.sum_alpha, cap_grow);
                } else if !pk {
                    // Rule (17c): both β stay ≤ Σα/K.
                    let cap = self.sum_alpha / kf;
                    line.bound(self.v[l] - cap, cap - self.v[k]);
                }
                line.solve()
            }
            Method::PatMat { .. } if self.problem.surrogate == Surrogate::Hinge && !(pk && pl) => {
                let c = self.mass / self.problem.scale;
                let mut pieces = [(largest_other([k, l]), 0.0), (0.0, 0.0), (0.0, 0.0)];
                let mut len = 1;
                if !pk {
                    pieces[len] = (self.v[k], 1.0);
                    len += 1;
                }
                if !pl {
                    pieces[len] = (self.v[l], sl);
                    len += 1;
                }
                line.solve_with_max(c, &pieces[..len])
            }
            _ => line.solve(),
        }
    }

    /// The first coordinate of LIBSVM's maximal violating pair (Fan, Chen, Lin 2005,
    /// WSS 1) for max D s.t. Σ σ_i v_i = 0: the i that can move towards σ_i (a positive
    /// up, a negative down) with the largest σ_i ∂D/∂v_i. The partner scan then picks
    /// the best exact step with it (second-order, as WSS 2). Coupled bounds are only
    /// approximated here; the exact step and the group steps handle them.
    fn most_violating(&self) -> Option<usize> {
        let terms = [self.term(false), self.term(true)].map(|t| (t.c1, 2.0 * t.c2, t.cap));
        let first_largest = |a: Option<(usize, f64)>, b: Option<(usize, f64)>| match (a, b) {
            (Some(x), Some(y)) => Some(if y.1 > x.1 || (y.1 == x.1 && y.0 < x.0) { y } else { x }),
            (x, None) => x,
            (None, y) => y,
        };
        let pass = |r: std::ops::Range<usize>| {
            scan::most_violating(&terms, r.start, &self.f[r.clone()], &self.v[r.clone()], &self.sigma[r])
        };
        self.split.par_iter().cloned().map(pass).reduce(|| None, first_largest).map(|(i, _)| i)
    }

    /// Σα and Σβ² recomputed exactly: steps update them by differences, and δ* (Pat&Mat)
    /// must see the current ‖β‖, not one with accumulated round-off. O(n), at every check.
    fn resync(&mut self) {
        let (mut sum_alpha, mut sum_beta_sq) = (0.0, 0.0);
        for (&x, &p) in self.v.iter().zip(self.positive) {
            if p {
                sum_alpha += x;
            } else {
                sum_beta_sq += x * x;
            }
        }
        (self.sum_alpha, self.sum_beta_sq) = (sum_alpha, sum_beta_sq);
    }

    /// The scaling move v ← ρv (f ← ρf) with the best ρ ≥ 0: it keeps Σα = Σβ and the
    /// coupled bounds (β ≤ Σα/K is scale-invariant), and changes every variable at once,
    /// which two-coordinate steps cannot do when several β are tied at a coupled bound.
    /// Along it the dual is −½Aρ² + Bρ (the β terms of Pat&Mat are homogeneous).
    fn rescale(&mut self) {
        self.resync();
        let p = self.problem;
        let theta = p.scale;
        let n = self.v.len();
        let w2: f64 =
            (0..n).map(|i| if self.positive[i] { self.v[i] * self.f[i] } else { -self.v[i] * self.f[i] }).sum::<f64>();
        let (mut a, mut b) = (w2.max(0.0), 0.0);
        let mut rho_max = f64::INFINITY;
        let (mut sum_beta, mut max_beta) = (0.0, 0.0f64);
        for i in 0..n {
            let x = self.v[i];
            if self.positive[i] {
                b += x / theta;
                match p.surrogate {
                    Surrogate::Quadratic => a += x * x / (2.0 * p.c * theta * theta),
                    Surrogate::Hinge if x > 0.0 => rho_max = rho_max.min(p.c * theta / x),
                    Surrogate::Hinge => {}
                }
            } else {
                sum_beta += x;
                max_beta = max_beta.max(x);
            }
        }
        if let Method::PatMat { .. } = p.method {
            b += sum_beta / theta
                - match p.surrogate {
                    Surrogate::Quadratic => self.mass.sqrt() * self.sum_beta_sq.sqrt() / theta,
                    Surrogate::Hinge => self.mass * max_beta / theta,
                };
        }
        if a <= 0.0 {
            return;
        }
        // Never towards v = 0: from there no step of the coupled problems pays (all β tied
        // at 0); a stalled iterate shrinks at most by half per move instead.
        let rho = (b / a).clamp(0.5, 2.0).min(rho_max);
        let gain = -0.5 * a * (rho * rho - 1.0) + b * (rho - 1.0);
        if !(gain > 0.0 && rho.is_finite() && rho > 0.0) {
            return;
        }
        self.v.iter_mut().for_each(|x| *x *= rho);
        self.f.iter_mut().for_each(|x| *x *= rho);
        self.sum_alpha *= rho;
        self.sum_beta_sq *= rho * rho;
        if let Some(set) = &mut self.betas {
            *set = (0..n).filter(|&j| !self.positive[j]).map(|j| (key(self.v[j]), j as u32)).collect();
        }
    }

    /// v_j ← x (clamped at 0) with the bookkeeping of Σα, Σβ² and the order of β.
    pub(super) fn set(&mut self, j: usize, x: f64) {
        let (old, new) = (self.v[j], x.max(0.0));
        self.v[j] = new;
        if self.positive[j] {
            self.sum_alpha += new - old;
        } else {
            self.sum_beta_sq = (self.sum_beta_sq + new * new - old * old).max(0.0);
            if let Some(set) = &mut self.betas {
                set.remove(&(key(old), j as u32));
                set.insert((key(new), j as u32));
            }
        }
    }

    /// What the vector scan needs for first coordinate k (`scan.rs`): the constants of
    /// `pair_step` that do not depend on the partner.
    fn scan_constants(&self, k: usize, terms: &[Term; 2], top: &[(f64, usize); 3]) -> ScanConstants {
        let pk = self.positive[k];
        let term_k = terms[usize::from(pk)];
        let (x_k, sign_k) = (self.v[k], f64::from(self.sigma[k]));
        let coupled = matches!(self.problem.method, Method::TopPushK { k: 2.. });
        let kf = match self.problem.method {
            Method::TopPushK { k } => k as f64,
            Method::PatMat { .. } => 1.0,
        };
        let largest_other = |skip: usize| top.iter().find(|&&(_, j)| j != skip).map_or(0.0, |&(b, _)| b);
        let (inf, sum_alpha) = (f64::INFINITY, self.sum_alpha);
        let class = |pl: bool| {
            let term = terms[usize::from(pl)];
            let none = (-inf, 0.0, inf, 0.0, 1.0);
            // The extra bounds of `pair_step` as lb0 + lb1·v_l and (ub0 + ub1·v_l)/ub_div.
            let (lb0, lb1, ub0, ub1, ub_div) = match (pk, pl) {
                _ if !coupled => none,
                // Rule (17b), k positive: m = l; its own β is excluded from the largest
                // other only when it is the largest (that l is scanned by `pair_step`).
                (true, false) => (kf * largest_other(usize::MAX) - sum_alpha, 0.0, sum_alpha, -kf, kf - 1.0),
                // Rule (17b), k negative: m = k, the same for every partner.
                (false, true) => (kf * largest_other(k) - sum_alpha, 0.0, sum_alpha - kf * x_k, 0.0, kf - 1.0),
                // Rule (17c): both β stay ≤ Σα/K.
                (false, false) => (-(sum_alpha / kf), 1.0, sum_alpha / kf - x_k, 0.0, 1.0),
                (true, true) => none,
            };
            PartnerClass {
                two_c2: 2.0 * term.c2,
                c1: term.c1,
                cap: term.cap,
                s: if pk == pl { -1.0 } else { 1.0 },
                lb0,
                lb1,
                ub0,
                ub1,
                ub_div,
            }
        };
        ScanConstants {
            diag_k: self.diag[k],
            f_k: self.f[k],
            sign_k,
            two_c2_k: 2.0 * term_k.c2,
            b_k: 2.0 * term_k.c2 * x_k - term_k.c1,
            lb_k: -x_k,
            ub_k: term_k.cap - x_k,
            class: [class(false), class(true)],
            coupled,
            uniform_diag: self.uniform_diag,
        }
    }

    /// The best partner l of k in `range`: the vector scan between the partners it leaves
    /// to `pair_step` (l = k; TopPushK with k positive: the negative holding the largest
    /// β), which are scanned one by one. Pat&Mat with the hinge runs `pair_step` for all.
    fn scan_range(
        &self,
        k: usize,
        range: std::ops::Range<usize>,
        col_k: &[f64],
        terms: &[Term; 2],
        top: &[(f64, usize); 3],
    ) -> Option<(usize, f64, f64)> {
        let one_by_one = |l: usize| {
            if l == k {
                return None;
            }
            self.pair_step(k, l, self.positive[l], col_k[l], terms, top).map(|(delta, gain)| (l, delta, gain))
        };
        if matches!((self.problem.method, self.problem.surrogate), (Method::PatMat { .. }, Surrogate::Hinge)) {
            return range.filter_map(one_by_one).fold(None, |best, c| better(best, Some(c)));
        }
        let c = self.scan_constants(k, terms, top);
        let mut special = [k, if c.coupled && self.positive[k] { top[0].1 } else { usize::MAX }];
        special.sort_unstable();
        let mut best = None;
        let mut from = range.start;
        for s in special.into_iter().filter(|s| range.contains(s)).chain([range.end]) {
            if from < s {
                let r = from..s;
                let found = scan_partners(
                    &c,
                    from,
                    &self.f[r.clone()],
                    &self.v[r.clone()],
                    &self.diag[r.clone()],
                    &col_k[r.clone()],
                    &self.sigma[r],
                );
                best = better(best, found);
            }
            if s < range.end {
                best = better(best, one_by_one(s));
            }
            from = s + 1;
        }
        best
    }

    /// One iteration with first coordinate k; returns the partner taken, if any.
    fn iterate<S: KernelSource + ?Sized>(&mut self, k: usize, cache: &mut ColumnCache, kernel: &S) -> Option<usize> {
        let top = self.top_betas();
        let terms = [self.term(false), self.term(true)];
        let col_k = cache.get(k, kernel);
        let (l, delta, _) = self
            .split
            .par_iter()
            .map(|r| self.scan_range(k, r.clone(), col_k, &terms, &top))
            .reduce(|| None, better)?;
        let (pk, pl) = (self.positive[k], self.positive[l]);
        let dl = if pk == pl { -delta } else { delta };
        let (col_k, col_l) = cache.get_pair(k, l, kernel);
        let coef = if pk { delta } else { -delta };
        let len = self.split[0].len().max(1);
        self.f.par_chunks_mut(len).zip(col_k.par_chunks(len).zip(col_l.par_chunks(len))).for_each(|(f, (a, b))| {
            scan::add_scaled_difference(f, coef, a, b);
        });
        self.set(k, self.v[k] + delta);
        self.set(l, self.v[l] + dl);
        Some(l)
    }
}

impl Report for AtTopReport {
    fn summary(&self) -> (Status, usize, f64, f64, &[Progress]) {
        (self.status, self.iterations, self.objectives.primal, self.objectives.dual, &self.history)
    }
}

/// A fit's settings as the estimator gives them: the problem by name ([`AtTop::named`]:
/// the method and surrogate, C, the scale, K and τ) and the solver's options.
#[derive(Debug, Clone)]
pub struct Settings {
    pub method: String,
    pub surrogate: String,
    pub c: f64,
    pub scale: f64,
    pub k: usize,
    pub tau: f64,
    pub options: AtTopOptions,
}

/// One fit as the estimator runs it: [`solve_attop`] on a kernel, its columns cached in
/// `cache_mb` MB; the solution, the report and the cache's (hits, misses).
pub struct Fit<'a> {
    problem: AtTop,
    positive: &'a [bool],
    options: AtTopOptions,
    cache_mb: f64,
}

impl<'a> Fit<'a> {
    /// The fit under `s` of the examples labelled by `positive`.
    pub fn new(s: &Settings, positive: &'a [bool], cache_mb: f64) -> Result<Self> {
        let problem = AtTop::named(&s.method, &s.surrogate, s.k, s.tau, s.scale, s.c)?;
        Ok(Self { problem, positive, options: s.options, cache_mb })
    }
}

impl KernelJob for Fit<'_> {
    type Output = (AtTopSolution, AtTopReport, (u64, u64));
    fn run<S: KernelSource + ?Sized>(self, source: &S, monitor: &mut dyn Monitor) -> Result<Self::Output> {
        let mut cache = ColumnCache::new(source.n(), self.cache_mb)?;
        let (solution, report) = solve_attop(&self.problem, source, &mut cache, self.positive, &self.options, monitor)?;
        Ok((solution, report, (cache.hits(), cache.misses())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::kernels::{DataKernel, KernelFunction};
    use crate::solvers::Silent;

    /// Two overlapping Gaussian classes in d dimensions (positives shifted by 0.7).
    fn problem(n: usize, d: usize, seed: u64) -> (Vec<f64>, Vec<bool>) {
        let mut rng = SplitMix64::new(seed);
        let positive: Vec<bool> = (0..n).map(|i| i % 5 < 2).collect();
        let x = (0..n * d)
            .map(|t| {
                let (u1, u2) = (rng.next_f64().max(1e-300), rng.next_f64());
                (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos() + if positive[t / d] { 0.7 } else { 0.0 }
            })
            .collect();
        (x, positive)
    }

    /// Every method and surrogate closes the duality gap on a problem with ties at the
    /// coupled bounds (TopPushK's cap, Pat&Mat's max), the dual never decreases between
    /// checks, and the returned point is feasible: Σα = Σβ, v ≥ 0 and the bounds hold.
    #[test]
    fn every_method_closes_the_gap_and_stays_feasible() {
        let (n, d) = (60, 4);
        let (x, positive) = problem(n, d, 3);
        let rows = DenseRows::new(&x, n, d).unwrap();
        let kernel = DataKernel::new(&rows, KernelFunction::Linear).unwrap();
        for method in [Method::TopPushK { k: 1 }, Method::TopPushK { k: 3 }, Method::PatMat { tau: 0.1 }] {
            for surrogate in [Surrogate::Quadratic, Surrogate::Hinge] {
                let problem = AtTop { method, surrogate, scale: 1.3, c: 0.7 };
                let mut cache = ColumnCache::new(n, 10.0).unwrap();
                let opts = AtTopOptions { tol: 1e-7, max_iter: 200_000, check_every: 50, seed: 2, reuse: 0.5 };
                let (sol, report) = solve_attop(&problem, &kernel, &mut cache, &positive, &opts, &mut Silent).unwrap();
                let what = format!("{method:?} {surrogate:?}");
                assert!(
                    report.objectives.relative_gap() <= 1e-7,
                    "{what}: {:?} {:?}",
                    report.status,
                    report.objectives
                );
                let duals: Vec<f64> = report.history.iter().map(|p| p.dual).collect();
                assert!(
                    duals.windows(2).all(|w| w[1] >= w[0] - 1e-12 * w[0].abs()),
                    "{what}: dual decreased {duals:?}"
                );
                let sum_alpha: f64 = (0..n).filter(|&i| positive[i]).map(|i| sol.v[i]).sum();
                let sum_beta: f64 = (0..n).filter(|&i| !positive[i]).map(|i| sol.v[i]).sum();
                assert!((sum_alpha - sum_beta).abs() <= 1e-9 * sum_alpha.max(1.0), "{what}: {sum_alpha} vs {sum_beta}");
                assert!(sol.v.iter().all(|&v| v >= 0.0), "{what}: negative dual variable");
                if surrogate == Surrogate::Hinge {
                    assert!((0..n)
                        .filter(|&i| positive[i])
                        .all(|i| sol.v[i] <= problem.c * problem.scale * (1.0 + 1e-12)));
                }
                if let Method::TopPushK { k } = method {
                    let cap = sum_alpha / k as f64;
                    assert!(
                        (0..n).filter(|&i| !positive[i]).all(|i| sol.v[i] <= cap * (1.0 + 1e-9)),
                        "{what}: β above Σα/K"
                    );
                }
                // f is maintained incrementally; it must equal K(σ ⊙ v).
                let mut col = vec![0.0; n];
                let mut exact = vec![0.0; n];
                for j in (0..n).filter(|&j| sol.v[j] != 0.0) {
                    kernel.column_into(j, &mut col);
                    let coef = if positive[j] { sol.v[j] } else { -sol.v[j] };
                    exact.iter_mut().zip(&col).for_each(|(e, &c)| *e += coef * c);
                }
                for (a, b) in sol.f.iter().zip(&exact) {
                    assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{what}: f drifted: {a} vs {b}");
                }
            }
        }
    }

    /// The vector scan (`scan.rs`) picks bit for bit the partner, step and gain of
    /// `pair_step` run over every l, for every k, and the maximal violating coordinate,
    /// on states with zeros, ties at the box and the coupled cap, and several tied
    /// largest β (n not a multiple of the lanes).
    #[test]
    fn vector_scan_equals_pair_step() {
        let (n, d) = (203, 3);
        let (x, positive) = problem(n, d, 5);
        let rows = DenseRows::new(&x, n, d).unwrap();
        let mut rng = SplitMix64::new(17);
        // The Gaussian kernel's diagonal is constant (not read by the scan), the linear one's is not.
        for function in [KernelFunction::Rbf { gamma: 0.3 }, KernelFunction::Linear] {
            let kernel = DataKernel::new(&rows, function).unwrap();
            for method in [Method::TopPushK { k: 1 }, Method::TopPushK { k: 4 }, Method::PatMat { tau: 0.05 }] {
                for surrogate in [Surrogate::Quadratic, Surrogate::Hinge] {
                    let problem = AtTop { method, surrogate, scale: 1.3, c: 0.7 };
                    let mut cache = ColumnCache::new(n, 10.0).unwrap();
                    let mut state = State::start(&problem, &kernel, &mut cache, &positive, 3);
                    for trial in 0..4 {
                        for (j, &p) in positive.iter().enumerate() {
                            let cap = state.term(p).cap.min(1.0);
                            let x = match rng.below(4) {
                                0 => 0.0,
                                1 => cap,
                                _ => rng.next_f64() * cap,
                            };
                            state.set(j, x);
                            state.f[j] = 2.0 * rng.next_f64() - 1.0;
                        }
                        if let Method::TopPushK { k } = method {
                            // Several β exactly at the cap Σα/K (trial 0: none).
                            let cap = state.sum_alpha / k as f64;
                            (0..n).filter(|&j| !positive[j]).take(trial).for_each(|j| state.set(j, cap));
                        }
                        let top = state.top_betas();
                        let terms = [state.term(false), state.term(true)];
                        // The maximal violating coordinate, one by one.
                        let violation = |j: usize| {
                            let (term, x) = (terms[usize::from(positive[j])], state.v[j]);
                            let slope = term.c1 - 2.0 * term.c2 * x;
                            let movable = if positive[j] { x < term.cap } else { x > 0.0 };
                            movable.then(|| if positive[j] { slope - state.f[j] } else { -slope - state.f[j] })
                        };
                        let first_largest = (0..n).filter_map(|j| violation(j).map(|s| (j, s))).fold(
                            None,
                            |best: Option<(usize, f64)>, (j, s)| {
                                if best.is_none_or(|(_, b)| s > b) {
                                    Some((j, s))
                                } else {
                                    best
                                }
                            },
                        );
                        assert_eq!(
                            state.most_violating(),
                            first_largest.map(|(j, _)| j),
                            "{method:?} {surrogate:?} trial {trial}"
                        );
                        for k in 0..n {
                            let col_k = cache.get(k, &kernel).to_vec();
                            let vector = state.scan_range(k, 0..n, &col_k, &terms, &top);
                            let scalar = (0..n)
                                .filter(|&l| l != k)
                                .filter_map(|l| {
                                    state.pair_step(k, l, positive[l], col_k[l], &terms, &top).map(|(dl, g)| (l, dl, g))
                                })
                                .fold(None, |best, c| better(best, Some(c)));
                            let bits =
                                |r: Option<(usize, f64, f64)>| r.map(|(l, dl, g)| (l, dl.to_bits(), g.to_bits()));
                            assert_eq!(
                                bits(vector),
                                bits(scalar),
                                "{function:?} {method:?} {surrogate:?} trial {trial} k {k}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Parameters and labels are checked before any work.
    #[test]
    fn bad_parameters_are_rejected() {
        let (x, positive) = problem(10, 2, 1);
        let rows = DenseRows::new(&x, 10, 2).unwrap();
        let kernel = DataKernel::new(&rows, KernelFunction::Linear).unwrap();
        let opts = AtTopOptions { tol: 1e-3, max_iter: 10, check_every: 5, seed: 0, reuse: 0.0 };
        let run = |method, c, scale, labels: &[bool]| {
            let problem = AtTop { method, surrogate: Surrogate::Hinge, scale, c };
            let mut cache = ColumnCache::new(10, 1.0).unwrap();
            solve_attop(&problem, &kernel, &mut cache, labels, &opts, &mut Silent).map(|_| ())
        };
        let err = |r: Result<()>| r.unwrap_err().to_string();
        assert!(err(run(Method::TopPushK { k: 6 }, 1.0, 1.0, &positive)).starts_with("K:"));
        assert!(err(run(Method::PatMat { tau: 1.0 }, 1.0, 1.0, &positive)).starts_with("tau:"));
        assert!(err(run(Method::TopPushK { k: 1 }, 0.0, 1.0, &positive)).starts_with("C:"));
        assert!(err(run(Method::TopPushK { k: 1 }, 1.0, -1.0, &positive)).starts_with("scale:"));
        assert!(err(run(Method::TopPushK { k: 1 }, 1.0, 1.0, &[true; 10])).starts_with("y:"));
        assert!(err(run(Method::TopPushK { k: 1 }, 1.0, 1.0, &[true; 3])).starts_with("y:"));
    }
}
