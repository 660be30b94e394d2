//! The machinery every threshold projection below stands on.
//!
//! All of them have solutions of the form `p_i = clip(x_i − t, 0, cap)`: entries
//! below the threshold `t` are zero. So only the largest entries matter. Instead of
//! sorting the whole row (what the papers do) we copy it once, move the `c` largest
//! entries to the front with an O(m) selection, sort only those, and solve the
//! problem exactly on that sorted prefix, treating everything else as zero. The
//! answer is the true optimum iff its threshold satisfies `t ≥ max(rest)` (then the
//! excluded entries meet the KKT condition `p_i = 0 ⇔ x_i ≤ t`); otherwise the prefix
//! grows 4× and we solve again. Typical cost: one copy, one selection, a sort of a
//! few dozen values, O(log c) searches.
//!
//! Precision: once the partition is known, the threshold is recomputed relative to a
//! pivot entry of the free set M (`p_i = clip((x_i − pivot) − τ, ·)`, with
//! Σ_M (x_i − pivot) summed directly), so thresholds that are not representable next
//! to huge entries still give exact answers: (1e16, −1e16, 0) projects onto the simplex
//! as (1, 0, 0), and onto {0 ≤ p ≤ 1, Σp = 1.5} as (1, 0, 0.5).

use super::Thresholds;
use crate::real::Real;

/// Caller-owned scratch memory: after the first call of a given row length, no
/// projection allocates.
#[derive(Debug, Default, Clone)]
pub struct Workspace {
    pub(crate) values: Vec<f64>,
    pub(crate) prefix_sums: Vec<f64>,
}

impl Workspace {
    pub fn new() -> Self {
        Self::default()
    }
    /// A workspace already large enough for rows of length `m`.
    pub fn with_capacity(m: usize) -> Self {
        Workspace { values: Vec::with_capacity(m), prefix_sums: Vec::with_capacity(m + 1) }
    }
}

/// A copy of one row with its `sorted_len` largest entries sorted descending in front.
pub(crate) struct TopPrefix<'w> {
    values: &'w mut Vec<f64>,
    prefix_sums: &'w mut Vec<f64>,
    sorted_len: usize,
    /// The largest entry not in the sorted prefix (−∞ when the prefix is the row).
    rest_max: f64,
}

#[inline]
fn descending(a: &f64, b: &f64) -> std::cmp::Ordering {
    b.total_cmp(a)
}

impl<'w> TopPrefix<'w> {
    /// Copies `x` into the workspace.
    pub(crate) fn load<T: Real>(x: &[T], ws: &'w mut Workspace) -> Self {
        Self::from_values(x.iter().map(|v| v.to_f64()), ws)
    }

    fn from_values(values: impl Iterator<Item = f64>, ws: &'w mut Workspace) -> Self {
        ws.values.clear();
        ws.values.extend(values);
        ws.prefix_sums.clear();
        ws.prefix_sums.push(0.0);
        TopPrefix { values: &mut ws.values, prefix_sums: &mut ws.prefix_sums, sorted_len: 0, rest_max: f64::INFINITY }
    }

    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// The sorted prefix, largest first.
    pub(crate) fn sorted(&self) -> &[f64] {
        &self.values[..self.sorted_len]
    }

    /// `prefix_sums()[j]` = sum of the `j` largest entries, for `j ≤ sorted().len()`.
    pub(crate) fn prefix_sums(&self) -> &[f64] {
        &self.prefix_sums[..=self.sorted_len]
    }

    /// Makes the sorted prefix at least `c` long (clamped to the row length).
    pub(crate) fn extend_to(&mut self, c: usize) {
        let m = self.values.len();
        let c = c.min(m);
        if c <= self.sorted_len && self.sorted_len > 0 {
            return;
        }
        let start = self.sorted_len;
        if c < m {
            // After the selection, values[c] is the largest of values[c..] and
            // everything in values[start..c] is at least as large.
            self.values[start..].select_nth_unstable_by(c - start, descending);
            self.rest_max = self.values[c];
        } else {
            self.rest_max = f64::NEG_INFINITY;
        }
        self.values[start..c].sort_unstable_by(descending);
        let mut acc = self.prefix_sums[start];
        for &v in &self.values[start..c] {
            acc += v;
            self.prefix_sums.push(acc);
        }
        self.sorted_len = c;
    }

    /// Solves a problem on growing prefixes: `step` returns `Some(answer)` when the
    /// answer is valid for the whole row, `None` when it needs a longer prefix.
    pub(crate) fn solve<R>(
        &mut self,
        first_len: usize,
        mut step: impl FnMut(&[f64], &[f64], f64) -> crate::Result<Option<R>>,
    ) -> crate::Result<R> {
        let m = self.len();
        let mut c = first_len.clamp(1, m.max(1));
        loop {
            self.extend_to(c);
            let (d, p, rest) = (self.sorted(), self.prefix_sums(), self.rest_max);
            if let Some(answer) = step(d, p, rest)? {
                return Ok(answer);
            }
            if self.sorted_len >= m {
                // The whole row was sorted and the step still asked for more.
                return Err(crate::Error::no_solution(
                    "threshold search",
                    "the full sorted row did not yield a valid threshold",
                ));
            }
            c = self.sorted_len.saturating_mul(4).max(self.sorted_len + 1);
        }
    }
}

/// `F(t) = Σ_i clip(d_i − t, 0, cap)` over a descending-sorted `d` with prefix sums `p`.
/// `cap` may be `+∞`.
#[inline]
pub(crate) fn capped_sum(d: &[f64], p: &[f64], cap: f64, t: f64) -> f64 {
    let j = d.partition_point(|&v| v > t);
    let u = if cap.is_finite() { d[..j].partition_point(|&v| v - cap >= t) } else { 0 };
    let capped = if u > 0 { u as f64 * cap } else { 0.0 };
    capped + (p[j] - p[u]) - (j - u) as f64 * t
}

/// Solves `Σ_i clip(d_i − t, 0, cap) = a·t + b` for `t` (`a ≥ 0`, so the left side
/// minus the right is non-increasing in `t`), exactly, over a sorted prefix.
///
/// The breakpoints of the left side are the `d_i` (an entry enters the support) and
/// the `d_i − cap` (an entry reaches the cap). Two binary searches, one over each
/// sorted list, bracket the root between consecutive breakpoints; there the support
/// `j` and the capped count `u` are fixed and the equation is linear:
/// `u·cap + Σ_{u≤i<j} d_i − (j − u)·t = a·t + b`, which is solved relative to the
/// pivot d_u (see the module docs). Returns `t = shift + lower` with `upper = cap`.
pub(crate) fn capped_root(d: &[f64], p: &[f64], cap: f64, a: f64, b: f64) -> Thresholds {
    let h = |t: f64| capped_sum(d, p, cap, t) - a * t - b;
    let c = d.len();
    // First index whose breakpoint lies at or below the root (h ≥ 0 there).
    let first_at_or_below = |bp: &dyn Fn(usize) -> f64| -> usize {
        let (mut lo, mut hi) = (0usize, c);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if h(bp(mid)) < 0.0 {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let j = first_at_or_below(&|i| d[i]);
    let mut lo = if j < c { d[j] } else { f64::NEG_INFINITY };
    let mut hi = if j > 0 { d[j - 1] } else { f64::INFINITY };
    let u = if cap.is_finite() {
        let u = first_at_or_below(&|i| d[i] - cap).min(j);
        if u < c {
            lo = lo.max(d[u] - cap);
        }
        if u > 0 {
            hi = hi.min(d[u - 1] - cap);
        }
        u
    } else {
        0
    };
    let capped = if u > 0 { u as f64 * cap } else { 0.0 };
    let (pivot, offset) = if j > u {
        let pivot = d[u];
        let free_sum: f64 = d[u..j].iter().map(|&v| v - pivot).sum();
        (pivot, (capped + free_sum - a * pivot - b) / ((j - u) as f64 + a))
    } else if a > 0.0 {
        (0.0, (capped - b) / a)
    } else {
        // No free entries: the sum is constant on the bracket and any t in it works;
        // take one away from its ends, where rounding could free an entry.
        let t = match (lo.is_finite(), hi.is_finite()) {
            (true, true) => 0.5 * (lo + hi),
            (false, true) => hi - cap.min(hi.abs().max(1.0)),
            (true, false) => lo + 1.0 + lo.abs(),
            (false, false) => 0.0,
        };
        (0.0, t)
    };
    // Rounding may push the linear solve a hair outside its bracket (or, for ties a
    // few ulps apart, invert the bracket itself: then there is nothing to clamp to).
    // `max`/`min` rather than `clamp`, which panics on NaN bounds.
    let offset = if lo <= hi { offset.max(lo - pivot).min(hi - pivot) } else { offset };
    Thresholds { shift: pivot, lower: offset, upper: cap }
}

/// The largest entry of a row.
#[inline]
pub(crate) fn row_max<T: Real>(x: &[T]) -> f64 {
    x.iter().fold(f64::NEG_INFINITY, |a, &v| {
        let v = v.to_f64();
        if v > a {
            v
        } else {
            a
        }
    })
}

/// The sum of a written projection and the rounding noise that sum may carry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Written {
    pub total: f64,
    /// A bound on the rounding error of `total`: a few ulps of |x_i| + |shift| + |lower|
    /// per free entry (the data carry that much representation error; clipped entries
    /// are exact).
    pub noise: f64,
}

/// Writes `clip((x_i − shift) − lower, lo, upper)` into `out`.
#[inline]
pub(crate) fn write_clipped<T: Real>(x: &[T], th: &super::Thresholds, lo: f64, out: &mut [T]) -> Written {
    let (shift, lower, upper) = (th.shift, th.lower, th.upper);
    let (mut total, mut free_magnitude, mut free) = (0.0, 0.0, 0usize);
    for (o, &v) in out.iter_mut().zip(x) {
        let v = v.to_f64();
        let raw = (v - shift) - lower;
        // Branch-free: whether an entry is clipped is unpredictable.
        let p = raw.max(lo).min(upper);
        let is_free = (raw > lo) & (raw < upper);
        free_magnitude += if is_free { v.abs() } else { 0.0 };
        free += is_free as usize;
        total += p;
        *o = T::from_f64(p);
    }
    let per_free = shift.abs() + lower.abs();
    Written { total, noise: 4.0 * f64::EPSILON * (free_magnitude + free as f64 * per_free) }
}

/// The last line of defence of the equality-constrained projections: the output must
/// sum to its target up to rounding. It can only fail when the row spans more orders
/// of magnitude than float64 resolves around the threshold (e.g. |x| ~ 1e20 with
/// bounds ~1); then we raise instead of returning an infeasible point.
pub(crate) fn check_sum(problem: &'static str, written: Written, target: f64, bound_scale: f64) -> crate::Result<()> {
    let total = written.total;
    if (total - target).abs() <= 1e-12 * (target.abs() + bound_scale) + written.noise {
        return Ok(());
    }
    Err(crate::Error::no_solution(
        problem,
        format!(
            "the projection sums to {total} instead of {target}: x spans more orders of magnitude than float64 \
             resolves around the threshold; rescale or clip x"
        ),
    ))
}

/// A tolerance for the optimality checks of a search over sorted values: a few
/// hundred ulps of the magnitudes involved.
#[inline]
pub(crate) fn check_tolerance(scale: f64) -> f64 {
    1e-12 * scale.max(f64::MIN_POSITIVE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_grows_and_stays_sorted() {
        let x: Vec<f64> = (0..100).map(|i| ((i * 37) % 101) as f64).collect();
        let mut ws = Workspace::new();
        let mut tp = TopPrefix::load(&x, &mut ws);
        tp.extend_to(5);
        assert_eq!(tp.sorted(), &[100.0, 99.0, 98.0, 97.0, 96.0]);
        assert_eq!(tp.rest_max, 95.0);
        tp.extend_to(20);
        assert_eq!(tp.sorted().len(), 20);
        assert!(tp.sorted().windows(2).all(|w| w[0] >= w[1]));
        assert_eq!(tp.prefix_sums()[20], (81..=100).sum::<i32>() as f64);
        tp.extend_to(1000);
        assert_eq!(tp.rest_max, f64::NEG_INFINITY);
    }

    #[test]
    fn capped_root_solves_knapsack_and_simplex() {
        let d = [3.0, 1.0, 0.5, -1.0];
        let p = [0.0, 3.0, 4.0, 4.5, 3.5];
        // Simplex with r = 1: t = 2, p = (1, 0, 0, 0).
        let t = capped_root(&d, &p, f64::INFINITY, 0.0, 1.0).threshold();
        assert!((t - 2.0).abs() < 1e-15);
        // Capped at 0.5 with sum 1: the two largest entries are capped.
        let t = capped_root(&d, &p, 0.5, 0.0, 1.0).threshold();
        assert!((capped_sum(&d, &p, 0.5, t) - 1.0).abs() < 1e-14);
    }
}
