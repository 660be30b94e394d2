//! The partner scan of Algorithm 3.1 as straight-line arithmetic over contiguous arrays.
//!
//! For a fixed first coordinate k, every partner l needs the exact step of `step.rs`:
//!   a = max(q, 0) + 2c₂(k) + 2c₂(l),  q = K_kk + K_ll − 2K_kl
//!   b = σ_k(f_k − f_l) + (2c₂(k)v_k − c₁(k)) + s_l(2c₂(l)v_l − c₁(l)),  s_l = −σ_kσ_l
//!   [lb, ub] = the boxes of v_k + Δ and v_l + s_lΔ (and TopPushK's coupled cap),
//!   Δ = clip(−b/a, min(lb, 0), max(ub, 0)),  gain = −½aΔ² − bΔ.
//! Everything but f_l, v_l, K_ll, K_kl and the class σ_l is the same for all l, so the
//! scan is a branch-free loop over the arrays f, v, diag, K_·k and σ (one byte per
//! example; diag is skipped when constant): the class only selects between two sets of
//! constants. LLVM turns such a loop into vector code, built
//! for the widest instructions the CPU has (`vector_code.rs`). Every build gives
//! bit-for-bit the results of [`super::solver::State::pair_step`]
//! (tested), which stays the reference and handles what the lanes leave out: l = k, the
//! one negative whose own β is the largest (TopPushK, k positive), and the whole scan of
//! Pat&Mat with the hinge (its max term is piecewise; `Line::solve_with_max`).

use crate::vector_code::{first_largest_by, widest_vector_code};

/// The per-class constants of the partner's dual term and of the coupled bounds.
#[derive(Debug, Clone, Copy)]
pub(super) struct PartnerClass {
    /// 2c₂ and c₁ of the partner's term, its cap, and s_l (−1: same class as k).
    pub two_c2: f64,
    pub c1: f64,
    pub cap: f64,
    pub s: f64,
    /// TopPushK's extra bounds of this class of partner, as lb = lb0 + lb1·v_l and
    /// ub = (ub0 + ub1·v_l) / ub_div (±∞ where there are none).
    pub lb0: f64,
    pub lb1: f64,
    pub ub0: f64,
    pub ub1: f64,
    pub ub_div: f64,
}

/// What a scan for one k needs besides the arrays.
#[derive(Debug, Clone, Copy)]
pub(super) struct ScanConstants {
    /// K_kk, f_k and σ_k.
    pub diag_k: f64,
    pub f_k: f64,
    pub sign_k: f64,
    /// 2c₂(k) and the k part of b: 2c₂(k)v_k − c₁(k).
    pub two_c2_k: f64,
    pub b_k: f64,
    /// The box of v_k + Δ: [−v_k, cap_k − v_k].
    pub lb_k: f64,
    pub ub_k: f64,
    /// Partner constants: [negative, positive].
    pub class: [PartnerClass; 2],
    /// Whether TopPushK's coupled bounds apply (K ≥ 2).
    pub coupled: bool,
    /// Whether every K_ll equals K_kk (the Gaussian kernel), so the diagonal is not read.
    pub uniform_diag: bool,
}

#[inline(always)]
fn max(x: f64, y: f64) -> f64 {
    if x > y {
        x
    } else {
        y
    }
}

#[inline(always)]
fn min(x: f64, y: f64) -> f64 {
    if x < y {
        x
    } else {
        y
    }
}

/// (Δ, gain) of one partner; gain 0 where `pair_step` gives no step. The operations and
/// their order are those of `Line::{new, add, bound, solve}`.
#[inline(always)]
fn lane<const COUPLED: bool>(c: &ScanConstants, f_l: f64, v_l: f64, diag_l: f64, k_kl: f64, sigma_l: i8) -> (f64, f64) {
    // Each constant is selected by the class separately, which keeps the loop free of
    // branches (a select per lane, not a jump).
    let pos = sigma_l > 0;
    let pick = |neg: f64, posv: f64| if pos { posv } else { neg };
    let (neg, posc) = (&c.class[0], &c.class[1]);
    let two_c2 = pick(neg.two_c2, posc.two_c2);
    let c1 = pick(neg.c1, posc.c1);
    let cap = pick(neg.cap, posc.cap);
    let s = pick(neg.s, posc.s);
    let q = c.diag_k + diag_l - 2.0 * k_kl;
    let a = max(q, 0.0) + c.two_c2_k + two_c2;
    let b = c.sign_k * (c.f_k - f_l) + c.b_k + s * (two_c2 * v_l - c1);
    // The box of v_l + sΔ: s = +1 → [−v_l, cap − v_l]; s = −1 → [v_l − cap, v_l].
    let (lb_l, ub_l) = if s > 0.0 { (-v_l, cap - v_l) } else { (-(cap - v_l), v_l) };
    let mut lb = max(c.lb_k, lb_l);
    let mut ub = min(c.ub_k, ub_l);
    if COUPLED {
        let lb0 = pick(neg.lb0, posc.lb0);
        let lb1 = pick(neg.lb1, posc.lb1);
        let ub0 = pick(neg.ub0, posc.ub0);
        let ub1 = pick(neg.ub1, posc.ub1);
        let ub_div = pick(neg.ub_div, posc.ub_div);
        lb = max(lb, lb0 + lb1 * v_l);
        ub = min(ub, (ub0 + ub1 * v_l) / ub_div);
    }
    let empty = lb > ub;
    let (lo, hi) = (min(lb, 0.0), max(ub, 0.0));
    let delta = if a > 0.0 {
        min(max(-b / a, lo), hi)
    } else if b < 0.0 {
        hi
    } else if b > 0.0 {
        lo
    } else {
        0.0
    };
    let gain = -0.5 * a * delta * delta - b * delta;
    // `Line::solve` also rejects Δ = 0 and an infinite Δ, but neither can give gain > 0:
    // Δ = 0 gives ±0 or NaN, an infinite Δ (a = 0 only) −∞ or NaN.
    let valid = !empty && gain > 0.0;
    (delta, if valid { gain } else { 0.0 })
}

/// Values per block: a block's values are computed in one vectorizable loop, then
/// searched for the largest.
const BLOCK: usize = 256;

/// The best partner in `offset + 0 .. offset + f.len()`: (l, Δ, gain), the first of the
/// largest gains, or `None` when no partner improves.
#[inline(always)]
fn scan_blocks<const COUPLED: bool, const UNIFORM_DIAG: bool>(
    c: &ScanConstants,
    offset: usize,
    f: &[f64],
    v: &[f64],
    diag: &[f64],
    col: &[f64],
    sigma: &[i8],
) -> Option<(usize, f64, f64)> {
    // A copy by value: its fields become registers. Selecting between two fields behind
    // a reference compiles to a gather from memory per lane instead.
    let c = *c;
    let c = &c;
    let len = f.len();
    let diag = if UNIFORM_DIAG { &[][..] } else { &diag[..len] };
    let (v, col, sigma) = (&v[..len], &col[..len], &sigma[..len]);
    let mut best: Option<(usize, f64, f64)> = None;
    let mut gain = [0.0f64; BLOCK];
    let mut delta = [0.0f64; BLOCK];
    for start in (0..len).step_by(BLOCK) {
        let m = BLOCK.min(len - start);
        let block = start..start + m;
        let (f, v, diag, col, sigma) = (
            &f[block.clone()],
            &v[block.clone()],
            if UNIFORM_DIAG { diag } else { &diag[block.clone()] },
            &col[block.clone()],
            &sigma[block],
        );
        for i in 0..m {
            // A constant diagonal (the Gaussian kernel's 1) is not read: one array less
            // to stream.
            let diag_l = if UNIFORM_DIAG { c.diag_k } else { diag[i] };
            (delta[i], gain[i]) = lane::<COUPLED>(c, f[i], v[i], diag_l, col[i], sigma[i]);
        }
        // Blocks come in index order: a later block must beat the best strictly.
        if let Some((at, g)) = first_largest_by(&gain[..m], best.map_or(0.0, |(_, _, g)| g), |x| x) {
            best = Some((offset + start + at, delta[at], g));
        }
    }
    best
}

widest_vector_code! {
    /// The best partner among the contiguous examples `offset ..` (the slices all start
    /// at `offset` and have the same length; `diag` is not read when
    /// `c.uniform_diag`).
    pub(super) fn scan_partners(c: &ScanConstants, offset: usize, f: &[f64], v: &[f64], diag: &[f64], col: &[f64], sigma: &[i8]) -> Option<(usize, f64, f64)> {
        match (c.coupled, c.uniform_diag) {
            (true, true) => scan_blocks::<true, true>(c, offset, f, v, diag, col, sigma),
            (true, false) => scan_blocks::<true, false>(c, offset, f, v, diag, col, sigma),
            (false, true) => scan_blocks::<false, true>(c, offset, f, v, diag, col, sigma),
            (false, false) => scan_blocks::<false, false>(c, offset, f, v, diag, col, sigma),
        }
    }
}

widest_vector_code! {
    /// The first coordinate of the maximal violating pair (see `State::most_violating`):
    /// the first i with the largest σ_i ∂D/∂v_i among those that can move towards σ_i,
    /// with the dual terms [negative, positive] given as (c₁, 2c₂, cap), among the
    /// examples `offset ..`: (i, σ_i ∂D/∂v_i).
    pub(super) fn most_violating(terms: &[(f64, f64, f64); 2], offset: usize, f: &[f64], v: &[f64], sigma: &[i8]) -> Option<(usize, f64)> {
        let len = f.len();
        let (v, sigma) = (&v[..len], &sigma[..len]);
        let [(c1_neg, two_c2_neg, _), (c1_pos, two_c2_pos, cap_pos)] = *terms;
        let mut best: Option<(usize, f64)> = None;
        let mut score = [0.0f64; BLOCK];
        for start in (0..len).step_by(BLOCK) {
            let m = BLOCK.min(len - start);
            let (f, v, sigma) = (&f[start..start + m], &v[start..start + m], &sigma[start..start + m]);
            for i in 0..m {
                let pos = sigma[i] > 0;
                let x = v[i];
                let slope = if pos { c1_pos - two_c2_pos * x } else { c1_neg - two_c2_neg * x };
                // σ_i ∂D/∂v_i = −f_i + σ_i h'_i(v_i); a positive can move up below its cap,
                // a negative down above 0.
                let value = if pos { slope - f[i] } else { -slope - f[i] };
                let can_move = if pos { x < cap_pos } else { x > 0.0 };
                score[i] = if can_move { value } else { f64::NEG_INFINITY };
            }
            if let Some((at, x)) = first_largest_by(&score[..m], best.map_or(f64::NEG_INFINITY, |(_, y)| y), |x| x) {
                best = Some((offset + start + at, x));
            }
        }
        best
    }
}

widest_vector_code! {
    /// f ← f + coef·(a − b): the scores after a step, from the two kernel columns.
    pub(super) fn add_scaled_difference(f: &mut [f64], coef: f64, a: &[f64], b: &[f64]) -> () {
        let len = f.len();
        let (a, b) = (&a[..len], &b[..len]);
        for i in 0..len {
            f[i] += coef * (a[i] - b[i]);
        }
    }
}
