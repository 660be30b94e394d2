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
use super::step::{Line, Term};
use crate::kernels::{ColumnCache, KernelSource};
use crate::rng::SplitMix64;
use crate::solvers::{Monitor, Progress, Status};
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
    let mut state = State::start(problem, kernel, cache, positive, opts.seed);
    let mut rng = SplitMix64::derive(opts.seed, 1);
    let start = Instant::now();
    let mut history = Vec::new();
    let mut last_dual = f64::NEG_INFINITY;
    let mut partner: Option<usize> = None;
    let mut stalled = false;
    let check = |it: usize, state: &State, history: &mut Vec<Progress>, monitor: &mut dyn Monitor| {
        let obj = problem.objectives(&state.v, &state.f, positive);
        let progress = Progress { epoch: it, primal: obj.primal, dual: obj.dual, gap: obj.relative_gap(), elapsed: start.elapsed() };
        history.push(progress);
        monitor.report(&progress);
        obj
    };
    for it in 1..=opts.max_iter {
        if monitor.should_stop() {
            let obj = check(it - 1, &state, &mut history, monitor);
            return Ok((state.into_solution(), AtTopReport { status: Status::Interrupted, iterations: it - 1, objectives: obj, history }));
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
            } else if obj.dual <= last_dual {
                Some(Status::NoProgress)
            } else if it == opts.max_iter {
                Some(Status::MaxEpochs)
            } else {
                None
            };
            last_dual = obj.dual;
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
    /// The negatives' and the positives' indices, ascending: the partner scan runs one
    /// loop per class, so the class of l is a constant inside each loop.
    pub(super) classes: [Vec<u32>; 2],
}

/// Partners per task of the parallel scan (fixed, so the pick is independent of the
/// thread count; ties go to the smaller index in every order of reduction).
const SCAN_CHUNK: usize = 4096;

/// Below this many partners of a class the scan runs on one thread.
const PARALLEL_SCAN: usize = 16_384;

/// (l, Δ, gain) of the better of two candidate steps; ties to the smaller l.
fn better(a: Option<(usize, f64, f64)>, b: Option<(usize, f64, f64)>) -> Option<(usize, f64, f64)> {
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
    fn start<S: KernelSource + ?Sized>(problem: &'p AtTop, kernel: &S, cache: &mut ColumnCache, positive: &'p [bool], seed: u64) -> Self {
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
        let diag = (0..n).map(|i| kernel.diag(i)).collect();
        let class = |p: bool| (0..n as u32).filter(|&i| positive[i as usize] == p).collect();
        let classes = [class(false), class(true)];
        Self { problem, positive, v, f, diag, sum_alpha: a, sum_beta_sq, betas, mass: problem.quantile_mass(n), classes }
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
                Surrogate::Quadratic => Term { c1: 1.0 / theta, c2: 1.0 / (4.0 * p.c * theta * theta), cap: f64::INFINITY },
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
    fn pair_step(&self, k: usize, l: usize, pl: bool, kkl: f64, terms: &[Term; 2], top: &[(f64, usize); 3]) -> Option<(f64, f64)> {
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
        let terms = [self.term(false), self.term(true)];
        let mut best: Option<(usize, f64)> = None;
        for j in 0..self.v.len() {
            let term = terms[usize::from(self.positive[j])];
            let x = self.v[j];
            let can_move = if self.positive[j] { x < term.cap } else { x > 0.0 };
            if !can_move {
                continue;
            }
            let slope = term.c1 - 2.0 * term.c2 * x;
            // σ_j ∂D/∂v_j = −f_j + σ_j h'_j(v_j).
            let score = if self.positive[j] { slope - self.f[j] } else { -slope - self.f[j] };
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((j, score));
            }
        }
        best.map(|(j, _)| j)
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
        let w2: f64 = (0..n).map(|i| if self.positive[i] { self.v[i] * self.f[i] } else { -self.v[i] * self.f[i] }).sum::<f64>();
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

    /// One iteration with first coordinate k; returns the partner taken, if any.
    fn iterate<S: KernelSource + ?Sized>(&mut self, k: usize, cache: &mut ColumnCache, kernel: &S) -> Option<usize> {
        let top = self.top_betas();
        let terms = [self.term(false), self.term(true)];
        let col_k = cache.get(k, kernel);
        let scan = |list: &[u32], pl: bool| {
            // The first of the largest gains (so ties go to the smaller l, as in `better`).
            let run = |chunk: &[u32]| {
                let (mut best_l, mut best_delta, mut best_gain) = (usize::MAX, 0.0, 0.0);
                for &l in chunk {
                    let l = l as usize;
                    if l == k {
                        continue;
                    }
                    if let Some((delta, gain)) = self.pair_step(k, l, pl, col_k[l], &terms, &top) {
                        if gain > best_gain {
                            (best_l, best_delta, best_gain) = (l, delta, gain);
                        }
                    }
                }
                (best_l != usize::MAX).then_some((best_l, best_delta, best_gain))
            };
            if list.len() >= PARALLEL_SCAN && rayon::current_num_threads() > 1 {
                list.par_chunks(SCAN_CHUNK).map(run).reduce(|| None, better)
            } else {
                run(list)
            }
        };
        let (l, delta, _) = better(scan(&self.classes[1], true), scan(&self.classes[0], false))?;
        let (pk, pl) = (self.positive[k], self.positive[l]);
        let dl = if pk == pl { -delta } else { delta };
        let (col_k, col_l) = cache.get_pair(k, l, kernel);
        let coef = if pk { delta } else { -delta };
        self.f.iter_mut().zip(col_k.iter().zip(col_l)).for_each(|(fi, (&a, &b))| *fi += coef * (a - b));
        self.set(k, self.v[k] + delta);
        self.set(l, self.v[l] + dl);
        Some(l)
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
                assert!(report.objectives.relative_gap() <= 1e-7, "{what}: {:?} {:?}", report.status, report.objectives);
                let duals: Vec<f64> = report.history.iter().map(|p| p.dual).collect();
                assert!(duals.windows(2).all(|w| w[1] >= w[0] - 1e-12 * w[0].abs()), "{what}: dual decreased {duals:?}");
                let sum_alpha: f64 = (0..n).filter(|&i| positive[i]).map(|i| sol.v[i]).sum();
                let sum_beta: f64 = (0..n).filter(|&i| !positive[i]).map(|i| sol.v[i]).sum();
                assert!((sum_alpha - sum_beta).abs() <= 1e-9 * sum_alpha.max(1.0), "{what}: {sum_alpha} vs {sum_beta}");
                assert!(sol.v.iter().all(|&v| v >= 0.0), "{what}: negative dual variable");
                if surrogate == Surrogate::Hinge {
                    assert!((0..n).filter(|&i| positive[i]).all(|i| sol.v[i] <= problem.c * problem.scale * (1.0 + 1e-12)));
                }
                if let Method::TopPushK { k } = method {
                    let cap = sum_alpha / k as f64;
                    assert!((0..n).filter(|&i| !positive[i]).all(|i| sol.v[i] <= cap * (1.0 + 1e-9)), "{what}: β above Σα/K");
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
