//! Kernel M3L by SMO along one label at a time (paper §5.1, Appendix A, Algorithm 1).
//!
//! Problem: the dual D2 (25) of [`super::problem`], a box-constrained concave QP over
//! the N·L variables α_il; optimal when every projected gradient (31) is zero, and the
//! solver stops when all are below `tol` in magnitude. Each variable's box is
//! [0, C_i] (C_i = C·w_i with sample weights, `M3l::cost`).
//!
//! One outer iteration: pick the label l of the largest projected gradient (32) over
//! all N·L variables (or keep the previous label, for up to 32 iterations in a row,
//! while it violates and no other label is coupled to it through R: same iterates,
//! warmer cache); then up to L steps on that label, each on the pair (p, q) with
//! p = argmax_i |g̃_il| and q maximising the unconstrained gain (30)/(56)
//!   h_pq = (g_p² K_qq + g_q² K_pp − 2 g_p g_q y_p y_q K_pq) / (8 R_ll (K_pp K_qq − K_pq²))
//! over the j with g̃_jl ≠ 0 (the denominator floored at 1e-12·K_pp K_jj, as LIBSVM's τ,
//! so that a singular block — two copies of an example with opposite signs — can pair);
//! the pair's 2-variable box QP (47)–(54) is solved exactly (see [`solve_box_2d`]), or,
//! with no admissible q, the 1-variable one (58). The steps
//! search only label l's free and violating variables (see `SearchSet`), whose
//! gradients follow every step (33); every label k with R_kl ≠ 0 (l included) is
//! brought up to date once per outer iteration through the accumulated
//! u = Σ K_:i y_il δ_il (34)–(36):
//!   g_ik −= 4 R_kl y_ik u_i,
//! so all gradients are exact between outer iterations and a dense R costs O(N·L) per
//! outer iteration, not per step. Kernel columns come from an LRU cache shared by all
//! labels: each is computed once for all L labels, where one-vs-all SVMs compute it
//! once per label. The cache holds them in single precision, as LIBSVM does: the steps
//! wait on reading columns from main memory, and half the bytes made the fit ~20%
//! faster (N = 5,000, L = 50, d = 50) besides holding twice the columns. The problem
//! solved is then D2 with K rounded entrywise to `f32` (its diagonal too): every
//! kernel value the solver uses comes rounded, so the steps stay exact for that K.

use super::problem::{check_tol, label_major, projected, row_major, M3l};
use crate::kernels::{ColumnCache, KernelSource, ShiftedKernel, Stored};
use crate::solvers::{Monitor, Progress, Status};
use crate::vector_code::{first_largest_by, prefetch_lines, widest_vector_code, LANES};
use crate::{Error, Result};

/// Outer iterations a label uncoupled from the others may take in a row (see `solve_smo`).
const STICKY_TURNS: usize = 32;

/// Settings of the kernel solver.
#[derive(Debug, Clone, Copy)]
pub struct SmoOptions {
    /// Stop when every |projected gradient| < tol.
    pub tol: f64,
    /// Outer iterations (label choices) at most.
    pub max_iter: usize,
    /// Outer iterations between progress reports (objectives cost O(N·L)).
    pub report_every: usize,
    /// The constant feature's value (intercept), or None (see [`fit_smo`]).
    pub bias: Option<f64>,
    /// Size of the kernel-column cache in MB.
    pub cache_mb: f64,
}

/// What a solve returns besides α.
#[derive(Debug, Clone, PartialEq)]
pub struct M3lReport {
    pub status: Status,
    pub iterations: usize,
    pub primal: f64,
    pub dual: f64,
    /// Largest |projected gradient| at the end.
    pub max_violation: f64,
    /// Every progress report, in order (iterations counted from the start of the solve),
    /// the last one at the returned point.
    pub history: Vec<Progress>,
}

/// The exact maximiser of −½ xᵀQx + gᵀx over lo ≤ x ≤ hi for a positive semidefinite
/// 2 × 2 Q with q11, q22 > 0. If Q is definite and its unconstrained maximiser Q⁻¹g lies
/// in the box, that is the answer; otherwise a maximiser lies on the boundary (for a
/// singular Q too: the objective is then constant or unbounded along Q's null space),
/// i.e. on one of the four edges, where the problem is 1-dimensional and its solution a
/// clamp: the best of the four is returned. (Appendix A's Algorithm 2 tries fewer edges,
/// which is not always optimal.)
pub fn solve_box_2d(q: [f64; 3], g: [f64; 2], lo: [f64; 2], hi: [f64; 2]) -> [f64; 2] {
    let [q11, q12, q22] = q;
    let det = q11 * q22 - q12 * q12;
    let free = [(q22 * g[0] - q12 * g[1]) / det, (q11 * g[1] - q12 * g[0]) / det];
    // det ≤ 0 (singular, or a hair indefinite from the kernel's rounding): Q⁻¹g is no
    // maximiser (it may be a saddle point inside the box).
    if det > 0.0 && (lo[0]..=hi[0]).contains(&free[0]) && (lo[1]..=hi[1]).contains(&free[1]) {
        return free;
    }
    let value = |x: [f64; 2]| {
        -0.5 * (q11 * x[0] * x[0] + 2.0 * q12 * x[0] * x[1] + q22 * x[1] * x[1]) + g[0] * x[0] + g[1] * x[1]
    };
    let mut best = [0.0, 0.0];
    let mut best_value = f64::NEG_INFINITY;
    for x1 in [lo[0], hi[0]] {
        let x = [x1, ((g[1] - q12 * x1) / q22).clamp(lo[1], hi[1])];
        if value(x) > best_value {
            (best, best_value) = (x, value(x));
        }
    }
    for x2 in [lo[1], hi[1]] {
        let x = [((g[0] - q12 * x2) / q11).clamp(lo[0], hi[0]), x2];
        if value(x) > best_value {
            (best, best_value) = (x, value(x));
        }
    }
    best
}

/// The 1-variable step (58): max −½ a x² + b x over [lo, hi] (a ≥ 0).
fn solve_box_1d(a: f64, b: f64, lo: f64, hi: f64) -> f64 {
    if a > 0.0 {
        (b / a).clamp(lo, hi)
    } else if b > 0.0 {
        hi
    } else if b < 0.0 {
        lo
    } else {
        0.0
    }
}

/// The variables of one label that an outer iteration's steps search and move (shrinking),
/// as contiguous copies. All gradients are exact at the start of an outer iteration; a
/// variable at a bound whose gradient points out of the box (projected gradient 0) can be
/// neither the first nor the second variable now, so it is left out for this iteration's
/// few steps. The catch-up through u keeps its gradient exact, so it is searched again as
/// soon as it violates, and convergence is still decided on every variable (the
/// per-label violations).
///
/// A step reads the pair's kernel columns only at the searched positions (two gathers)
/// and keeps u there, so it costs O(|searched|); u over all N, which only the catch-up
/// needs, is formed once per outer iteration from the moved variables' net steps.
/// (Measured at N = 5,000, L = 50, d = 50: with u over all N updated every step, that
/// pass and the gather of u for (33) took a third of the fit; this way the fit is 3–6%
/// faster, as the two column gathers, which wait on main memory, now dominate a step.)
struct SearchSet {
    index: Vec<usize>,
    a: Vec<f64>,
    /// The label's gradients at the start of the iteration; `g` = these − coef·y·u.
    g_start: Vec<f64>,
    g: Vec<f64>,
    y: Vec<f64>,
    diag: Vec<f64>,
    /// The upper bounds C_i of the searched variables.
    cap: Vec<f64>,
    /// The projected gradients (31) of `g`.
    projected: Vec<f64>,
    /// u = Σ K_:i y_il δ_il of this iteration's steps, at the searched positions.
    u: Vec<f64>,
    /// Σ y δ of this iteration's steps per searched position, whether a position has
    /// moved, and the positions moved (each once, in the order of their first move).
    net: Vec<f64>,
    has_moved: Vec<bool>,
    moved: Vec<usize>,
    /// The pair's kernel columns at the searched positions, and the gains (56).
    k_p: Vec<f64>,
    k_q: Vec<f64>,
    gain: Vec<f64>,
}

impl SearchSet {
    fn with_capacity(n: usize) -> Self {
        let v = || Vec::with_capacity(n);
        Self {
            index: Vec::with_capacity(n),
            a: v(),
            g_start: v(),
            g: v(),
            y: v(),
            diag: v(),
            cap: v(),
            projected: v(),
            u: v(),
            net: v(),
            has_moved: Vec::with_capacity(n),
            moved: Vec::new(),
            k_p: v(),
            k_q: v(),
            gain: v(),
        }
    }

    /// Keeps the variables of one label (α, g, y over its N examples) that are free, or
    /// at a bound with a gradient that does not point out of the box (bounds [0, caps_i]).
    fn shrink_to_label(&mut self, a: &[f64], g: &[f64], y: &[f64], diag: &[f64], caps: &[f64]) {
        self.index.clear();
        self.a.clear();
        self.g_start.clear();
        self.y.clear();
        self.diag.clear();
        self.cap.clear();
        for i in 0..a.len() {
            let (ai, gi, c) = (a[i], g[i], caps[i]);
            if (ai <= 0.0 && gi < 0.0) || (ai >= c && gi > 0.0) {
                continue;
            }
            self.index.push(i);
            self.a.push(ai);
            self.g_start.push(gi);
            self.y.push(y[i]);
            self.diag.push(diag[i]);
            self.cap.push(c);
        }
        self.g.clone_from(&self.g_start);
        let searched = self.index.len();
        self.moved.clear();
        for values in [&mut self.u, &mut self.net] {
            values.clear();
            values.resize(searched, 0.0);
        }
        self.has_moved.clear();
        self.has_moved.resize(searched, false);
        self.projected.clear();
        self.projected.extend(self.a.iter().zip(&self.g).zip(&self.cap).map(|((&a, &g), &c)| projected(a, g, c)));
    }

    /// (position, |projected gradient|) of the most violating searched variable.
    fn most_violating(&self) -> (f64, Option<usize>) {
        first_largest(&self.projected, true)
    }

    /// The position of the partner q of the first variable p with the largest gain (56)
    ///   h_pq = (g_p² K_qq + g_q² K_pp − 2 g_p g_q y_p y_q K_pq) / (8 R_ll (K_pp K_qq − K_pq²))
    /// among the other searched variables that can move (projected gradient ≠ 0), the
    /// denominator floored (see the module docs); None if there is none. The gains are
    /// formed in a branch-free pass (vectorisable: the divisions pipeline) and then
    /// compared.
    fn best_partner(&mut self, jp: usize, column_p: &[f32], gp: f64, yp: f64, kpp: f64, r_ll: f64) -> Option<usize> {
        gather_at(column_p, &self.index, &mut self.k_p);
        self.gain.resize(self.index.len(), 0.0);
        // p with itself is a singular block too (its numerator is 0 only up to rounding):
        // out of the partners while the gains are formed.
        let projected_p = std::mem::replace(&mut self.projected[jp], 0.0);
        partner_gains(self, [gp, yp, kpp, r_ll]);
        self.projected[jp] = projected_p;
        first_largest(&self.gain, false).1
    }

    /// After a step that moved the first variable (position jp) by y_p δ_p = `step_p` and,
    /// if given, the second (jq, its kernel column) by `step_q`: u += K_p step_p +
    /// K_q step_q at the searched positions, their gradients to g_start − coef·y·u (33),
    /// and the most violating one, as [`Self::most_violating`].
    fn follow(
        &mut self,
        (jp, step_p): (usize, f64),
        second: Option<(usize, &[f32], f64)>,
        coef: f64,
    ) -> (f64, Option<usize>) {
        self.record(jp, step_p);
        let step_q = match second {
            Some((jq, column_q, step_q)) => {
                self.record(jq, step_q);
                gather_at(column_q, &self.index, &mut self.k_q);
                step_q
            }
            None => 0.0,
        };
        // Without a second variable K_q is whatever the last step left, times 0.
        self.k_q.resize(self.index.len(), 0.0);
        move_and_follow(self, [step_p, step_q, coef]);
        self.most_violating()
    }

    fn record(&mut self, j: usize, step: f64) {
        if !self.has_moved[j] {
            self.has_moved[j] = true;
            self.moved.push(j);
        }
        self.net[j] += step;
    }

    /// u over all N: Σ K_:i (net step of i) over the variables moved this iteration,
    /// two columns per pass. The columns were read by the steps, so they are cached
    /// unless the cache holds fewer than the moved ones (then they are computed again).
    fn accumulate<S: KernelSource + ?Sized>(&self, u: &mut [f64], cache: &mut ColumnCache<f32>, kernel: &S) {
        u.iter_mut().for_each(|v| *v = 0.0);
        for pair in self.moved.chunks(2) {
            let (ip, sp) = (self.index[pair[0]], self.net[pair[0]]);
            match pair.get(1) {
                Some(&jq) => {
                    let (column_p, column_q) = cache.get_pair(ip, self.index[jq], kernel);
                    add_columns(u, column_p, sp, Some(column_q), self.net[jq]);
                }
                None => add_columns(u, cache.get(ip, kernel), sp, None, 0.0),
            }
        }
    }

    /// Writes the searched α back into the label's N values.
    fn store_alpha(&self, a: &mut [f64]) {
        for (&i, &v) in self.index.iter().zip(&self.a) {
            a[i] = v;
        }
    }
}

/// `column` at the searched positions `index`, into `out`. The column usually comes from
/// main memory, and a gather at sorted indices is a pattern the hardware prefetcher does
/// not follow, so all of its lines are requested first (measured with f64 columns at
/// N = 5,000, L = 50, d = 50: the fit took 1.64 s instead of 1.79 s).
fn gather_at(column: &[f32], index: &[usize], out: &mut Vec<f64>) {
    prefetch_lines(column);
    out.clear();
    out.extend(index.iter().map(|&q| f64::from(column[q])));
}

widest_vector_code! {
    /// g −= coef·y∘u (35) on one label's N variables, with their upper bounds `caps`;
    /// returns the largest |projected gradient| (31) of the label. With a dense R every
    /// label catches up after every outer iteration, so this is the O(N·L) part of an
    /// iteration; the maximum is kept in lanes so that the loop vectorises.
    fn catch_up(g: &mut [f64], a: &[f64], y: &[f64], u: &[f64], caps: &[f64], coef: f64) -> f64 {
        // Whole chunks of LANES zipped together, so that the loop has no bounds checks and
        // vectorises (indexed, it ran scalar at 3.6 ns a variable: two thirds of a dense-R fit).
        let follow = |g: &mut f64, a: f64, y: f64, u: f64, c: f64| {
            *g -= coef * y * u;
            projected(a, *g, c).abs()
        };
        let mut lanes = [0.0f64; LANES];
        let mut g_chunks = g.chunks_exact_mut(LANES);
        let (a_chunks, y_chunks, u_chunks) = (a.chunks_exact(LANES), y.chunks_exact(LANES), u.chunks_exact(LANES));
        let c_chunks = caps.chunks_exact(LANES);
        let (a_rest, y_rest, u_rest, c_rest) =
            (a_chunks.remainder(), y_chunks.remainder(), u_chunks.remainder(), c_chunks.remainder());
        for ((((g, a), y), u), c) in (&mut g_chunks).zip(a_chunks).zip(y_chunks).zip(u_chunks).zip(c_chunks) {
            for t in 0..LANES {
                let v = follow(&mut g[t], a[t], y[t], u[t], c[t]);
                lanes[t] = if v > lanes[t] { v } else { lanes[t] };
            }
        }
        let mut worst = lanes.iter().copied().fold(0.0, f64::max);
        for ((((g, &a), &y), &u), &c) in
            g_chunks.into_remainder().iter_mut().zip(a_rest).zip(y_rest).zip(u_rest).zip(c_rest)
        {
            worst = worst.max(follow(g, a, y, u, c));
        }
        worst
    }
}

widest_vector_code! {
    /// [`first_largest_by`] of the values.
    fn first_largest_value(values: &[f64]) -> Option<(usize, f64)> {
        first_largest_by(values, 0.0, |v| v)
    }
}

widest_vector_code! {
    /// [`first_largest_by`] of the magnitudes.
    fn first_largest_magnitude(values: &[f64]) -> Option<(usize, f64)> {
        first_largest_by(values, 0.0, f64::abs)
    }
}

/// (the largest v_j (|v_j| when `absolute`), its first position), or (0, None) when no
/// value is above 0 — what a scan keeping the first strict maximum returns, in two
/// vectorised passes instead of one compare-and-branch per value.
fn first_largest(values: &[f64], absolute: bool) -> (f64, Option<usize>) {
    let found = if absolute { first_largest_magnitude(values) } else { first_largest_value(values) };
    found.map_or((0.0, None), |(at, top)| (top, Some(at)))
}

// The loops of a step below read and write the search set's arrays (passed whole, split
// by field inside) and are compiled for the widest vector unit the CPU has (the baseline
// build is SSE2): measured at N = 5,000, L = 50, d = 50, the fit took 2.0 s
// instead of 2.36 s. Without FMA contraction the values are the same on every path.

widest_vector_code! {
    /// search.gain[j] = h_pj of (56) for the first variable [g_p, y_p, K_pp, R_ll], or 0
    /// where j cannot move or either diagonal entry is 0.
    /// Branch-free, so that it vectorises (the divisions pipeline).
    fn partner_gains(search: &mut SearchSet, first: [f64; 4]) -> () {
        let [gp, yp, kpp, r_ll] = first;
        let gp_yp = gp * yp;
        let SearchSet { k_p, diag, g, y, projected, gain, .. } = search;
        for (j, h) in gain.iter_mut().enumerate() {
            let (kpq, kqq, gq) = (k_p[j], diag[j], g[j]);
            // A (near) singular block, e.g. two copies of one example with opposite signs,
            // has its gain floored as LIBSVM's τ does: the box QP is still solved exactly
            // (on its edges), and such a pair is often the only step that moves both
            // copies at once (1-variable steps zig-zag between them).
            let (det, floor) = (kpp * kqq - kpq * kpq, 1e-12 * kpp * kqq);
            let det = if det > floor { det } else { floor };
            let value = (gp * gp * kqq + gq * gq * kpp - 2.0 * gp_yp * gq * y[j] * kpq) / (8.0 * r_ll * det);
            let admissible = projected[j] != 0.0 && kpp > 0.0 && kqq > 0.0;
            *h = if admissible { value } else { 0.0 };
        }
    }
}

widest_vector_code! {
    /// u += s_p K_:p + s_q K_:q (the second column optional).
    fn add_columns(u: &mut [f64], column_p: &[f32], step_p: f64, column_q: Option<&[f32]>, step_q: f64) -> () {
        match column_q {
            None => u.iter_mut().zip(column_p).for_each(|(u, &kp)| *u += f64::from(kp) * step_p),
            Some(column_q) => u
                .iter_mut()
                .zip(column_p.iter().zip(column_q))
                .for_each(|(u, (&kp, &kq))| *u += f64::from(kp) * step_p + f64::from(kq) * step_q),
        }
    }
}

widest_vector_code! {
    /// u += K_p s_p + K_q s_q, g = g_start − coef·y∘u and its projected gradient (31), for
    /// [s_p, s_q, coef], over the searched positions (each within its own bounds).
    fn move_and_follow(search: &mut SearchSet, steps: [f64; 3]) -> () {
        let [step_p, step_q, coef] = steps;
        let SearchSet { u, g, projected: pg, g_start, y, a, k_p, k_q, cap, .. } = search;
        let len = u.len();
        let (g, pg, g_start, y, a, k_p, k_q, cap) = (&mut g[..len], &mut pg[..len], &g_start[..len], &y[..len], &a[..len], &k_p[..len], &k_q[..len], &cap[..len]);
        for j in 0..len {
            u[j] += k_p[j] * step_p + k_q[j] * step_q;
            g[j] = g_start[j] - coef * y[j] * u[j];
            pg[j] = projected(a[j], g[j], cap[j]);
        }
    }
}

/// Kernel columns loaded ahead of need, in one blocked computation: a column computed
/// alone on its miss costs a pass over X, where a block of columns reads X once for all
/// of them (measured at N = 5,000, d = 500: the 5,000 columns took 1.7 s one by one).
/// The guesses are the searched variables that violate most, the likely first variables
/// of the next steps; they only go into free slots of the cache, so no column is evicted
/// for a guess. (Every kernel value is the same however it is computed.)
struct Lookahead {
    /// Most columns per load: at most 64, and at most ~2²⁷ multiply-adds (~10–50 ms: a
    /// load runs between steps, so this also bounds how long an interrupt waits).
    budget: usize,
    scratch: Vec<usize>,
}

impl Lookahead {
    fn new<S: KernelSource + ?Sized>(kernel: &S) -> Self {
        let budget = ((1usize << 27) / (kernel.n() * kernel.entry_work()).max(1)).min(64);
        Self { budget, scratch: Vec::new() }
    }

    /// Loads column `needed` (if given and missing) together with the columns of the
    /// most violating searched variables (ties to the lower position, as
    /// [`SearchSet::most_violating`] breaks them), as many as the budget and the free
    /// slots allow. Does nothing when `needed` is cached already, or when fewer than two
    /// columns would be loaded (then a miss computes its own column, as without this).
    fn load<S: KernelSource + ?Sized>(
        &mut self,
        needed: Option<usize>,
        search: &SearchSet,
        cache: &mut ColumnCache<f32>,
        kernel: &S,
    ) {
        let count = self.budget.min(cache.capacity() - cache.len());
        if count < 2 || needed.is_some_and(|i| cache.contains(i)) {
            return;
        }
        let candidates = &mut self.scratch;
        candidates.clear();
        candidates.extend((0..search.index.len()).filter(|&j| {
            let i = search.index[j];
            search.projected[j] != 0.0 && Some(i) != needed && !cache.contains(i)
        }));
        let guesses = count - usize::from(needed.is_some());
        if candidates.len() > guesses {
            let projected = &search.projected;
            candidates.select_nth_unstable_by(guesses, |&a, &b| {
                projected[b].abs().total_cmp(&projected[a].abs()).then(a.cmp(&b))
            });
            candidates.truncate(guesses);
        }
        candidates.iter_mut().for_each(|j| *j = search.index[*j]);
        candidates.extend(needed);
        cache.prefetch(candidates, kernel);
    }
}

/// Kernel M3L as the estimator fits it: like the paper, an intercept is the constant
/// feature `options.bias` appended to φ(x), which adds bias² to every kernel entry, so
/// SMO runs on K + bias² (K itself without one), with a fresh column cache of
/// `options.cache_mb` MB.
pub fn fit_smo<S: KernelSource + ?Sized>(
    problem: &M3l<'_>,
    kernel: &S,
    alpha: &mut [f64],
    options: &SmoOptions,
    monitor: &mut dyn Monitor,
) -> Result<M3lReport> {
    check_tol(options.tol)?;
    let shift = options.bias.map_or(0.0, |b| b * b);
    if !shift.is_finite() {
        return Err(Error::param("intercept_scaling", format!("its square must be finite, got {shift}")));
    }
    let source = &ShiftedKernel { inner: kernel, shift };
    let mut cache = ColumnCache::new(source.n(), options.cache_mb)?;
    solve_smo(problem, source, &mut cache, alpha, options, monitor)
}

/// Maximises D2 from `alpha` (N × L, feasible; zeros for a cold start), in place.
/// Returns the report; the training scores F = 2 K A R can be read from the gradient
/// (F = y∘(b − g)/2), which is what the objectives use.
pub fn solve_smo<S: KernelSource + ?Sized>(
    problem: &M3l<'_>,
    kernel: &S,
    cache: &mut ColumnCache<f32>,
    alpha: &mut [f64],
    options: &SmoOptions,
    monitor: &mut dyn Monitor,
) -> Result<M3lReport> {
    let (n, labels) = (problem.n, problem.labels);
    if kernel.n() != n || cache.n() != n {
        return Err(Error::input("kernel", format!("must be {n} x {n}")));
    }
    problem.check_dual(alpha)?;
    // Every example's upper bound C_i, shared by its L variables.
    let caps = problem.costs();
    let y = problem.y;
    // g = b − 2 y∘F with F = 2 K A R: start from the warm α by whole columns.
    let mut grad: Vec<f64> = (0..n * labels).map(|idx| problem.b(idx)).collect();
    {
        let mut a_r = vec![0.0; labels];
        for p in 0..n {
            let row = &alpha[p * labels..(p + 1) * labels];
            if row.iter().all(|&a| a == 0.0) {
                continue;
            }
            // (A R)_p,k = Σ_l y_pl α_pl R_lk
            a_r.iter_mut().for_each(|v| *v = 0.0);
            for (l, &a) in row.iter().enumerate() {
                if a != 0.0 {
                    let ya = y[p * labels + l] * a;
                    for (k, v) in a_r.iter_mut().enumerate() {
                        *v += ya * problem.r(l, k);
                    }
                }
            }
            let column = cache.get(p, kernel);
            for i in 0..n {
                let kip = f64::from(column[i]);
                for k in 0..labels {
                    grad[i * labels + k] -= 4.0 * y[i * labels + k] * kip * a_r[k];
                }
            }
        }
    }
    let diag: Vec<f64> = (0..n).map(|i| f32::rounded(kernel.diag(i))).collect();
    // Label-major copies (entry k·N + i), so that one label's N variables are contiguous.
    let (mut a, mut g, yt) = (label_major(alpha, n, labels), label_major(&grad, n, labels), label_major(y, n, labels));
    let started = std::time::Instant::now();
    let mut accumulated = vec![0.0; n];
    let mut search = SearchSet::with_capacity(n);
    let mut lookahead = Lookahead::new(kernel);
    let mut status = Status::MaxIter;
    let (mut iterations, mut history) = (0, Vec::new());
    // The largest |projected gradient| of each label, kept current: a label's entry is
    // recomputed whenever its gradients change (the catch-up below), so choosing the
    // label costs O(L), not a pass over all N·L variables.
    let mut violation: Vec<f64> = (0..labels)
        .map(|k| {
            a[k * n..(k + 1) * n]
                .iter()
                .zip(&g[k * n..(k + 1) * n])
                .zip(&caps)
                .map(|((&a, &g), &c)| projected(a, g, c).abs())
                .fold(0.0, f64::max)
        })
        .collect();
    // A label l with R_kl = 0 for every k ≠ l is a problem of its own: its steps and
    // catch-ups read and write only its own variables, so its iterates are the same
    // whenever its outer iterations run. Taking up to STICKY_TURNS of them back to back,
    // instead of interleaved with other labels' by (32), reuses its kernel columns while
    // they are still in the processor's cache (N = 5,000, L = 50, d = 50, R = I: the same
    // 3,247 outer iterations, 9% faster); the bound keeps every label progressing when
    // `max_iter` runs out first.
    let uncoupled: Vec<bool> = (0..labels).map(|l| (0..labels).all(|k| k == l || problem.r(k, l) == 0.0)).collect();
    let (mut previous, mut turns): (Option<usize>, usize) = (None, 0);
    while iterations < options.max_iter {
        if monitor.should_stop() {
            status = Status::Interrupted;
            break;
        }
        // (32): the label holding the largest projected gradient; but a label that no
        // other label is coupled to keeps the turn while it violates, for up to
        // STICKY_TURNS iterations in a row (see `uncoupled`).
        let (mut worst, mut l) = (0.0f64, 0);
        for (k, &v) in violation.iter().enumerate() {
            if v > worst {
                (worst, l) = (v, k);
            }
        }
        if worst < options.tol {
            status = Status::Converged;
            break;
        }
        if let Some(last) = previous.filter(|&k| uncoupled[k] && violation[k] >= options.tol && turns < STICKY_TURNS) {
            l = last;
        }
        turns = if previous == Some(l) { turns + 1 } else { 1 };
        previous = Some(l);
        iterations += 1;
        let r_ll = problem.r(l, l);
        search.shrink_to_label(&a[l * n..(l + 1) * n], &g[l * n..(l + 1) * n], &yt[l * n..(l + 1) * n], &diag, &caps);
        lookahead.load(None, &search, cache, kernel);
        let (mut gp_abs, mut first) = search.most_violating();
        for _ in 0..labels {
            if gp_abs < options.tol {
                break;
            }
            let Some(jp) = first else { break };
            let p = search.index[jp];
            let (gp, yp, kpp) = (search.g[jp], search.y[jp], diag[p]);
            // Second variable: the largest unconstrained gain (56) among the searched ones.
            lookahead.load(Some(p), &search, cache, kernel);
            let column_p = cache.get(p, kernel);
            let second = search.best_partner(jp, column_p, gp, yp, kpp, r_ll);
            // The step: the pair's exact 2-variable box QP, or the 1-variable one (58);
            // then u and the searched gradients follow it (33), which gives the next p.
            let (old_p, cap_p) = (search.a[jp], search.cap[jp]);
            let coef = 4.0 * r_ll;
            match second {
                None => {
                    let delta = solve_box_1d(4.0 * kpp * r_ll, gp, -old_p, cap_p - old_p);
                    search.a[jp] = (old_p + delta).clamp(0.0, cap_p);
                    (gp_abs, first) = search.follow((jp, yp * (search.a[jp] - old_p)), None, coef);
                }
                Some(jq) => {
                    let q = search.index[jq];
                    lookahead.load(Some(q), &search, cache, kernel);
                    let column_q = cache.get(q, kernel);
                    let (old_q, yq, cap_q) = (search.a[jq], search.y[jq], search.cap[jq]);
                    let delta = solve_box_2d(
                        [4.0 * kpp * r_ll, 4.0 * search.k_p[jq] * r_ll * yp * yq, 4.0 * search.diag[jq] * r_ll],
                        [gp, search.g[jq]],
                        [-old_p, -old_q],
                        [cap_p - old_p, cap_q - old_q],
                    );
                    search.a[jp] = (old_p + delta[0]).clamp(0.0, cap_p);
                    search.a[jq] = (old_q + delta[1]).clamp(0.0, cap_q);
                    let (step_p, step_q) = (yp * (search.a[jp] - old_p), yq * (search.a[jq] - old_q));
                    (gp_abs, first) = search.follow((jp, step_p), Some((jq, column_q, step_q)), coef);
                }
            }
        }
        search.store_alpha(&mut a[l * n..(l + 1) * n]);
        search.accumulate(&mut accumulated, cache, kernel);
        // (35): every label with R_kl ≠ 0, l included, catches up with the accumulated
        // u = Σ K_:i y_il δ_il, so all gradients are exact again between iterations.
        for k in 0..labels {
            let r_kl = problem.r(k, l);
            if r_kl != 0.0 {
                let (gk, ak, yk) = (&mut g[k * n..(k + 1) * n], &a[k * n..(k + 1) * n], &yt[k * n..(k + 1) * n]);
                violation[k] = catch_up(gk, ak, yk, &accumulated, &caps, 4.0 * r_kl);
            }
        }
        if options.report_every > 0 && iterations % options.report_every == 0 {
            let (primal, dual) = problem
                .objectives(&row_major(&a, n, labels), &scores_from_gradient(problem, &row_major(&g, n, labels)));
            let gap = crate::solvers::relative_gap(primal, dual);
            let progress = Progress { epoch: iterations, primal, dual, gap, elapsed: started.elapsed() };
            monitor.report(&progress);
            history.push(progress);
        }
    }
    alpha.copy_from_slice(&row_major(&a, n, labels));
    let grad = row_major(&g, n, labels);
    let scores = scores_from_gradient(problem, &grad);
    let (primal, dual) = problem.objectives(alpha, &scores);
    // The history ends at the returned point, as every solver's does.
    if !matches!(history.last(), Some(p) if p.epoch == iterations) {
        let gap = crate::solvers::relative_gap(primal, dual);
        let progress = Progress { epoch: iterations, primal, dual, gap, elapsed: started.elapsed() };
        monitor.report(&progress);
        history.push(progress);
    }
    let max_violation =
        (0..n * labels).map(|idx| projected(alpha[idx], grad[idx], caps[idx / labels]).abs()).fold(0.0, f64::max);
    Ok(M3lReport { status, iterations, primal, dual, max_violation, history })
}

/// F = y∘(b − g)/2 (g = b − 2 y∘F, y = ±1).
pub fn scores_from_gradient(problem: &M3l<'_>, grad: &[f64]) -> Vec<f64> {
    grad.iter().enumerate().map(|(idx, &g)| problem.y[idx] * (problem.b(idx) - g) / 2.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The first strict maximum, one compare per value (the reference for `first_largest`).
    fn scan(values: &[f64], absolute: bool) -> (f64, Option<usize>) {
        let (mut top, mut at) = (0.0f64, None);
        for (j, &v) in values.iter().enumerate() {
            let v = if absolute { v.abs() } else { v };
            if v > top {
                (top, at) = (v, Some(j));
            }
        }
        (top, at)
    }

    #[test]
    fn first_largest_is_the_first_strict_maximum() {
        let mut rng = SplitMix64::new(9);
        for len in [0, 1, 7, 8, 9, 31, 100] {
            for absolute in [false, true] {
                // Few distinct values, so that ties are common; NaN and negatives too.
                let values: Vec<f64> = (0..len)
                    .map(|_| match (rng.next_f64() * 6.0) as usize {
                        0 => f64::NAN,
                        1 => -2.0,
                        2 => 0.0,
                        k => k as f64 - 3.5,
                    })
                    .collect();
                assert_eq!(first_largest(&values, absolute), scan(&values, absolute), "{values:?} {absolute}");
            }
        }
        assert_eq!(first_largest(&[-1.0, 0.0], false), (0.0, None));
        assert_eq!(first_largest(&[-1.0, 0.0], true), (1.0, Some(0)));
    }

    #[test]
    fn box_2d_matches_a_grid_search() {
        let mut rng = SplitMix64::new(5);
        for _ in 0..300 {
            let (a, b, d) = (rng.next_f64() * 3.0 + 0.1, rng.next_f64() * 2.0 - 1.0, rng.next_f64() * 3.0 + 0.1);
            // Definite blocks, and singular ones (two copies of an example).
            let q12 = if rng.next_f64() < 0.3 { (a * d).sqrt().copysign(b) } else { b * (a * d).sqrt() * 0.95 };
            let g = [rng.next_f64() * 6.0 - 3.0, rng.next_f64() * 6.0 - 3.0];
            let lo = [-rng.next_f64(), -rng.next_f64()];
            let hi = [rng.next_f64(), rng.next_f64()];
            let x = solve_box_2d([a, q12, d], g, lo, hi);
            let value = |x: [f64; 2]| {
                -0.5 * (a * x[0] * x[0] + 2.0 * q12 * x[0] * x[1] + d * x[1] * x[1]) + g[0] * x[0] + g[1] * x[1]
            };
            let mut best = f64::NEG_INFINITY;
            for s in 0..=200 {
                for t in 0..=200 {
                    let p = [lo[0] + (hi[0] - lo[0]) * s as f64 / 200.0, lo[1] + (hi[1] - lo[1]) * t as f64 / 200.0];
                    best = best.max(value(p));
                }
            }
            assert!(value(x) >= best - 1e-9, "{x:?}");
            assert!((lo[0]..=hi[0]).contains(&x[0]) && (lo[1]..=hi[1]).contains(&x[1]));
        }
    }
}
