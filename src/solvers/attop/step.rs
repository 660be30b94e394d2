//! The exact two-coordinate step of Algorithm 3.1 (update rules (17), Theorem 3.1 and
//! Appendices C–D), derived here once for every method and surrogate.
//!
//! A step moves v_k by Δ and v_l by ∓Δ so that Σα = Σβ still holds: −Δ when k and l
//! are in the same class (rules (17a), (17c)), +Δ when k is positive and l negative
//! (rule (17b)). In every case w moves by Δ·σ_k(φ(x_k) − φ(x_l)), so along the step
//!   −½‖w‖² changes by −½qΔ² − gΔ,  q = K_kk + K_ll − 2K_kl,  g = σ_k (f_k − f_l),
//! and each moved coordinate adds its own concave term of the dual (see `objective.rs`):
//! c1·x − c2·x² on [0, cap] (h for α; Pat&Mat's quadratic β term with δ held fixed,
//! the paper's treatment in C.2, with δ re-maximised after the step). So the 1-D problem
//!   max φ(Δ) = −½aΔ² − bΔ  on [lb, ub]
//! has the closed form Δ* = clip(−b/a, lb, ub) (27) — the paper's γ and bounds, which we
//! derive rather than copy (Theorem D.1's bounds are printed with min/max swapped).
//! TopPushK (K ≥ 2) adds the coupling β_j ≤ Σα/K (7c) to the bounds, using the
//! largest β other than the moved ones. Pat&Mat with the hinge adds −(nτ/θ)·max_j β_j,
//! which makes φ concave piecewise quadratic: we take the best of its candidate maxima
//! (the stationary point of each piece, the pieces' crossings and the bounds).

/// One coordinate's concave dual term c1·x − c2·x² on [0, cap] (cap may be ∞).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Term {
    pub c1: f64,
    pub c2: f64,
    pub cap: f64,
}

/// The 1-D problem of one candidate pair, built up term by term.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line {
    /// Curvature a ≥ 0 and slope b of −φ: φ(Δ) = −½aΔ² − bΔ (+ the max term).
    pub a: f64,
    pub b: f64,
    pub lb: f64,
    pub ub: f64,
}

impl Line {
    pub(crate) fn new(q: f64, g: f64) -> Self {
        Self { a: q.max(0.0), b: g, lb: f64::NEG_INFINITY, ub: f64::INFINITY }
    }

    /// Coordinate x moves by s·Δ (s ≠ 0; ±1 for the pair steps) under `term`.
    #[inline]
    pub(crate) fn add(&mut self, term: Term, x: f64, s: f64) {
        self.a += 2.0 * term.c2 * s * s;
        self.b += s * (2.0 * term.c2 * x - term.c1);
        self.bound_coordinate(x, s, term.cap);
    }

    /// 0 ≤ x + sΔ ≤ cap.
    #[inline]
    pub(crate) fn bound_coordinate(&mut self, x: f64, s: f64, cap: f64) {
        if s > 0.0 {
            self.lb = self.lb.max(-x / s);
            self.ub = self.ub.min((cap - x) / s);
        } else {
            self.lb = self.lb.max((cap - x) / s);
            self.ub = self.ub.min(-x / s);
        }
    }

    #[inline]
    pub(crate) fn bound(&mut self, lb: f64, ub: f64) {
        self.lb = self.lb.max(lb);
        self.ub = self.ub.min(ub);
    }

    /// The maximiser of −½aΔ² − bΔ on [lb, ub] and its gain over Δ = 0; `None` when the
    /// interval is empty or the step is zero.
    #[inline]
    pub(crate) fn solve(&self) -> Option<(f64, f64)> {
        if self.lb > self.ub {
            return None;
        }
        // Round-off can leave a bound a hair on the wrong side of 0 (e.g. −x for x ≈ 0).
        let (lb, ub) = (self.lb.min(0.0), self.ub.max(0.0));
        let delta = if self.a > 0.0 {
            (-self.b / self.a).max(lb).min(ub)
        } else if self.b < 0.0 {
            ub
        } else if self.b > 0.0 {
            lb
        } else {
            0.0
        };
        if delta == 0.0 || !delta.is_finite() {
            return None;
        }
        let gain = -0.5 * self.a * delta * delta - self.b * delta;
        (gain > 0.0).then_some((delta, gain))
    }

    /// The same with the extra term −c·max(m0, p1 + r1Δ, p2 + r2Δ) (Pat&Mat, hinge):
    /// pieces given as (p, r) pairs, m0 = the largest β not moved (slope 0).
    pub(crate) fn solve_with_max(&self, c: f64, pieces: &[(f64, f64)]) -> Option<(f64, f64)> {
        if self.lb > self.ub {
            return None;
        }
        let (lb, ub) = (self.lb.min(0.0), self.ub.max(0.0));
        let top = |d: f64| pieces.iter().map(|&(p, r)| p + r * d).fold(f64::NEG_INFINITY, f64::max);
        let phi = |d: f64| -0.5 * self.a * d * d - self.b * d - c * top(d);
        let mut candidates = [0.0f64; 12];
        let mut len = 0;
        let mut push = |d: f64| {
            if d.is_finite() && len < candidates.len() {
                candidates[len] = d.max(lb).min(ub);
                len += 1;
            }
        };
        push(lb);
        push(ub);
        for (i, &(p, r)) in pieces.iter().enumerate() {
            if self.a > 0.0 {
                push(-(self.b + c * r) / self.a);
            }
            for &(p2, r2) in &pieces[i + 1..] {
                if r != r2 {
                    push((p2 - p) / (r - r2));
                }
            }
        }
        let base = phi(0.0);
        let (mut best, mut gain) = (0.0, 0.0);
        for &d in &candidates[..len] {
            let g = phi(d) - base;
            if g > gain {
                (best, gain) = (d, g);
            }
        }
        (best != 0.0).then_some((best, gain))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both solvers agree with a fine grid search on random 1-D problems: never worse, and
    /// better by at most what the grid's spacing (< 1e-4) can miss at a kink (|φ'| ≤ 4).
    #[test]
    fn closed_forms_match_a_grid_search() {
        let mut rng = crate::rng::SplitMix64::new(9);
        let mut unif = || rng.next_f64();
        for _ in 0..300 {
            let line = Line { a: 2.0 * unif(), b: 2.0 * unif() - 1.0, lb: -unif(), ub: unif() };
            let c = unif();
            let pieces = [(unif(), 0.0), (unif(), 1.0), (unif(), -1.0)];
            let grid = |f: &dyn Fn(f64) -> f64| {
                (0..=20_000)
                    .map(|i| line.lb + (line.ub - line.lb) * i as f64 / 20_000.0)
                    .map(f)
                    .fold(f64::NEG_INFINITY, f64::max)
            };
            let quad = |d: f64| -0.5 * line.a * d * d - line.b * d;
            let best = grid(&quad);
            let gain = line.solve().map_or(0.0, |(_, g)| g);
            // No kinks: the grid misses a smooth maximum by at most a·spacing² / 8.
            assert!(gain >= best.max(0.0) - 1e-12 && gain <= best.max(0.0) + 1e-8, "{line:?}: {gain} vs {best}");
            let top = |d: f64| pieces.iter().map(|&(p, r)| p + r * d).fold(f64::NEG_INFINITY, f64::max);
            let with_max = |d: f64| quad(d) - c * (top(d) - top(0.0));
            let best = grid(&with_max);
            let gain = line.solve_with_max(c, &pieces).map_or(0.0, |(_, g)| g);
            assert!(gain >= best.max(0.0) - 1e-12 && gain <= best.max(0.0) + 4e-4, "{line:?} c={c}: {gain} vs {best}");
        }
    }
}
