//! Limited-memory BFGS (Nocedal 1980; Liu & Nocedal 1989, Algorithm 7.4–7.5 of Nocedal &
//! Wright, *Numerical Optimization*, 2nd ed.) for the smooth, unconstrained stage of the
//! subspace step (`subspace.rs`): a few hundred variables, an objective that costs a pass
//! over n × k numbers, tens to hundreds of evaluations per solve.
//!
//! Written here rather than taken from a crate: the solve needs exactly the stopping rules
//! the stage had under SciPy's L-BFGS-B (which it replaces): stop when ‖∇f‖_∞ ≤ `gtol`
//! (`pgtol`), after `max_iter` iterations (`maxiter`) or `max_evals` evaluations
//! (`maxfun`), when a step no longer lowers f at all (`ftol = 0`), or when the line search
//! fails; keep `memory` correction pairs (`maxcor`). The crates we looked at (argmin,
//! liblbfgs ports) bring a framework of traits and their own stopping rules for
//! ~150 lines of code.
//!
//! Search direction: the two-loop recursion with H₀ = (sᵀy / yᵀy) I from the newest pair;
//! the first step (no pairs yet) has length 1/‖∇f‖₂, as L-BFGS-B's. Step length: the
//! strong Wolfe conditions with c₁ = 10⁻³ and c₂ = 0.9 (L-BFGS-B's `ftol` and `gtol` of its
//! line search), by bracketing and zoom with safeguarded cubic interpolation (Nocedal &
//! Wright Algorithms 3.5–3.6), at most 20 evaluations per search. A pair with
//! sᵀy ≤ ε yᵀy is not stored (it would make H indefinite), as L-BFGS-B skips it.

use std::collections::VecDeque;

use crate::Result;

/// Stopping rules and memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub memory: usize,
    pub gtol: f64,
    pub max_iter: usize,
    pub max_evals: usize,
}

/// What the minimiser returns: the best point found and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Minimum {
    pub x: Vec<f64>,
    pub value: f64,
    pub iterations: usize,
    pub evaluations: usize,
}

/// f and ∇f at a point, or `None` when the caller asks to stop (Ctrl-C).
pub type Evaluation = Option<(f64, Vec<f64>)>;

const C1: f64 = 1e-3;
const C2: f64 = 0.9;
const SEARCH_EVALS: usize = 20;

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn along(x: &[f64], d: &[f64], step: f64) -> Vec<f64> {
    x.iter().zip(d).map(|(x, d)| x + step * d).collect()
}

/// One evaluated trial point of a line search.
struct Trial {
    step: f64,
    value: f64,
    slope: f64,
    gradient: Vec<f64>,
}

/// How a line search ended.
enum Search {
    Found(Trial),
    Failed,
    Stopped,
}

/// Minimises f from `x0`; `f` returns (f(x), ∇f(x)).
pub fn minimize(mut f: impl FnMut(&[f64]) -> Result<Evaluation>, x0: Vec<f64>, options: &Options) -> Result<Minimum> {
    let mut evaluations = 1;
    let Some((mut value, mut gradient)) = f(&x0)? else {
        return Ok(Minimum { value: f64::NAN, x: x0, iterations: 0, evaluations });
    };
    let mut x = x0;
    let mut pairs: VecDeque<(Vec<f64>, Vec<f64>, f64)> = VecDeque::new();
    let mut iterations = 0;
    let inf_norm = |g: &[f64]| g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    while inf_norm(&gradient) > options.gtol && iterations < options.max_iter && evaluations < options.max_evals {
        iterations += 1;
        let mut direction = two_loop(&gradient, &pairs);
        let mut slope = dot(&gradient, &direction);
        if slope >= 0.0 || slope.is_nan() {
            // Rounding made H's direction point uphill: restart from steepest descent.
            pairs.clear();
            direction = gradient.iter().map(|g| -g).collect();
            slope = -dot(&gradient, &gradient);
        }
        let first = if pairs.is_empty() { 1.0 / dot(&direction, &direction).sqrt() } else { 1.0 };
        let budget = SEARCH_EVALS.min(options.max_evals - evaluations);
        let trial = match search(&mut f, &x, &direction, (value, slope), first, budget, &mut evaluations)? {
            Search::Found(trial) => trial,
            Search::Stopped => break,
            Search::Failed if !pairs.is_empty() => {
                // The quasi-Newton model misled the search: drop it once and retry.
                pairs.clear();
                iterations -= 1;
                continue;
            }
            Search::Failed => break,
        };
        let next = along(&x, &direction, trial.step);
        let s: Vec<f64> = next.iter().zip(&x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = trial.gradient.iter().zip(&gradient).map(|(a, b)| a - b).collect();
        let (sy, yy) = (dot(&s, &y), dot(&y, &y));
        let decrease = value - trial.value;
        (x, value, gradient) = (next, trial.value, trial.gradient);
        if sy > f64::EPSILON * yy {
            if pairs.len() == options.memory.max(1) {
                pairs.pop_front();
            }
            pairs.push_back((s, y, 1.0 / sy));
        }
        if decrease <= 0.0 || decrease.is_nan() {
            // No decrease at all (SciPy's ftol = 0): rounding has the last word.
            break;
        }
    }
    Ok(Minimum { x, value, iterations, evaluations })
}

/// −H ∇f by the two-loop recursion over the stored (s, y, 1/sᵀy), oldest first.
fn two_loop(gradient: &[f64], pairs: &VecDeque<(Vec<f64>, Vec<f64>, f64)>) -> Vec<f64> {
    let mut q: Vec<f64> = gradient.iter().map(|g| -g).collect();
    let mut alphas = Vec::with_capacity(pairs.len());
    for (s, y, rho) in pairs.iter().rev() {
        let alpha = rho * dot(s, &q);
        q.iter_mut().zip(y).for_each(|(q, y)| *q -= alpha * y);
        alphas.push(alpha);
    }
    if let Some((s, y, _)) = pairs.back() {
        let gamma = dot(s, y) / dot(y, y);
        q.iter_mut().for_each(|q| *q *= gamma);
    }
    for ((s, y, rho), alpha) in pairs.iter().zip(alphas.iter().rev()) {
        let beta = rho * dot(y, &q);
        q.iter_mut().zip(s).for_each(|(q, s)| *q += (alpha - beta) * s);
    }
    q
}

/// The minimiser of the cubic through (a, fa, da) and (b, fb, db), kept inside the middle
/// 80 % of the interval (bisection when the cubic has no minimiser there).
fn interpolate(lo: &Trial, hi: &Trial) -> f64 {
    let (a, b) = (lo.step, hi.step);
    let d1 = lo.slope + hi.slope - 3.0 * (lo.value - hi.value) / (a - b);
    let root = d1 * d1 - lo.slope * hi.slope;
    let width = (b - a).abs();
    let (left, right) = (a.min(b) + 0.1 * width, a.max(b) - 0.1 * width);
    if root >= 0.0 {
        let d2 = (b - a).signum() * root.sqrt();
        let step = b - (b - a) * (hi.slope + d2 - d1) / (hi.slope - lo.slope + 2.0 * d2);
        if step.is_finite() && step >= left && step <= right {
            return step;
        }
    }
    0.5 * (a + b)
}

/// A step along `direction` satisfying the strong Wolfe conditions, at most `budget`
/// evaluations; when they run out, the best step with sufficient decrease found so far.
/// The second argument after `direction` is (f, its slope along `direction`) at `x`.
fn search(
    f: &mut impl FnMut(&[f64]) -> Result<Evaluation>,
    x: &[f64],
    direction: &[f64],
    (value, slope): (f64, f64),
    first: f64,
    budget: usize,
    evaluations: &mut usize,
) -> Result<Search> {
    let spent = std::cell::Cell::new(0);
    let mut evaluate = |step: f64| -> Result<Option<Trial>> {
        spent.set(spent.get() + 1);
        *evaluations += 1;
        Ok(f(&along(x, direction, step))?.map(|(v, g)| Trial {
            step,
            value: v,
            slope: dot(&g, direction),
            gradient: g,
        }))
    };
    let armijo = |t: &Trial| t.value <= value + C1 * t.step * slope;
    let curvature = |t: &Trial| t.slope.abs() <= -C2 * slope;
    let origin = Trial { step: 0.0, value, slope, gradient: Vec::new() };
    let (mut lo, mut hi);
    let mut previous = origin;
    let mut step = first;
    // Bracketing.
    loop {
        if spent.get() >= budget {
            return Ok(if previous.step > 0.0 { Search::Found(previous) } else { Search::Failed });
        }
        let Some(trial) = evaluate(step)? else { return Ok(Search::Stopped) };
        if !armijo(&trial) || (previous.step > 0.0 && trial.value >= previous.value) {
            (lo, hi) = (previous, trial);
            break;
        }
        if curvature(&trial) {
            return Ok(Search::Found(trial));
        }
        if trial.slope >= 0.0 {
            (lo, hi) = (trial, previous);
            break;
        }
        step = 4.0 * trial.step;
        previous = trial;
    }
    // Zoom: `lo` satisfies sufficient decrease and has the lowest value so far.
    while spent.get() < budget {
        let step = interpolate(&lo, &hi);
        let Some(trial) = evaluate(step)? else { return Ok(Search::Stopped) };
        if !armijo(&trial) || trial.value >= lo.value {
            hi = trial;
            continue;
        }
        if curvature(&trial) {
            return Ok(Search::Found(trial));
        }
        if trial.slope * (hi.step - lo.step) >= 0.0 {
            hi = lo;
        }
        lo = trial;
    }
    Ok(if lo.step > 0.0 { Search::Found(lo) } else { Search::Failed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimises_the_rosenbrock_function_to_the_gradient_tolerance() {
        let rosenbrock = |x: &[f64]| -> Result<Evaluation> {
            let (a, b) = (x[0], x[1]);
            let value = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
            let gradient = vec![-2.0 * (1.0 - a) - 400.0 * a * (b - a * a), 200.0 * (b - a * a)];
            Ok(Some((value, gradient)))
        };
        let options = Options { memory: 10, gtol: 1e-10, max_iter: 1000, max_evals: 15_000 };
        let result = minimize(rosenbrock, vec![-1.2, 1.0], &options).unwrap();
        assert!((result.x[0] - 1.0).abs() < 1e-8 && (result.x[1] - 1.0).abs() < 1e-8, "{result:?}");
        assert!(result.iterations < 100, "{result:?}");
        // A budget of iterations stops it early, at a point no worse than the start.
        let short = minimize(rosenbrock, vec![-1.2, 1.0], &Options { max_iter: 3, ..options }).unwrap();
        assert_eq!(short.iterations, 3);
        assert!(short.value < 24.2);
    }

    #[test]
    fn a_stop_request_returns_the_current_point() {
        let mut calls = 0;
        let quadratic = |x: &[f64]| -> Result<Evaluation> {
            calls += 1;
            Ok((calls < 3).then(|| (x[0] * x[0], vec![2.0 * x[0]])))
        };
        let options = Options { memory: 5, gtol: 1e-12, max_iter: 100, max_evals: 100 };
        let result = minimize(quadratic, vec![3.0], &options).unwrap();
        assert!(result.evaluations <= 3);
    }
}
