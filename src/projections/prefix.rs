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
//! When a problem can bound its threshold from below before solving (the top-k
//! simplex: t ≥ min(x_[k] − r/k, x_[k+1])), even the copy is skipped: one vectorised
//! pass takes the maximum of every block of 16 entries, the bound comes from those
//! maxima, and only the entries above it, in the blocks whose maximum exceeds it, are
//! copied (`solve_largest`). The validity test `t ≥ max(rest)` is unchanged, so a
//! bound that rounding makes too tight costs a second, unfiltered solve, never a
//! wrong answer.
//!
//! Precision: once the partition is known, the threshold is recomputed relative to a
//! pivot entry of the free set M (`p_i = clip((x_i − pivot) − τ, ·)`, with
//! Σ_M (x_i − pivot) summed directly), so thresholds that are not representable next
//! to huge entries still give exact answers: (1e16, −1e16, 0) projects onto the simplex
//! as (1, 0, 0), and onto {0 ≤ p ≤ 1, Σp = 1.5} as (1, 0, 0.5). The partition is
//! searched from prefix sums of absolute values, unless their rounding is not small
//! next to the cap: then x_i − cap would round onto x_i (1e17 under a cap of 1), and
//! the search sums entry by entry relative to the breakpoint's entry instead
//! (`capped_root`). Whatever rounding is left, the output check (`check_output`) raises
//! rather than returning a point off its constraint by more than its proved rounding
//! bound (`output_tolerance`).

use super::Thresholds;
use crate::real::Real;

/// Caller-owned scratch memory: after the first call of a given row length, no
/// projection allocates.
#[derive(Debug, Default, Clone)]
pub struct Workspace {
    pub(crate) values: Vec<f64>,
    pub(crate) prefix_sums: Vec<f64>,
    pub(crate) block_maxima: Vec<f64>,
    /// Rows of a caller that projects (the smoothed top-k hinge's h/γ and its
    /// projection, `crate::losses::topk_hinge`); no projection touches it.
    pub(crate) scratch: Vec<f64>,
}

impl Workspace {
    pub fn new() -> Self {
        Self::default()
    }
    /// A workspace already large enough for rows of length `m`.
    pub fn with_capacity(m: usize) -> Self {
        Workspace {
            values: Vec::with_capacity(m),
            prefix_sums: Vec::with_capacity(m + 1),
            block_maxima: Vec::with_capacity(m.div_ceil(BLOCK)),
            scratch: Vec::new(),
        }
    }
}

/// A copy of one row (or of its entries above a bound) with its `sorted_len` largest
/// entries sorted descending in front.
pub(crate) struct TopPrefix<'w> {
    values: &'w mut Vec<f64>,
    prefix_sums: &'w mut Vec<f64>,
    sorted_len: usize,
    /// The largest copied entry not in the sorted prefix (−∞ when the prefix is all).
    rest_max: f64,
    /// The largest entry of the row that was not copied (−∞ when all were).
    left_out: f64,
}

#[inline]
fn descending(a: &f64, b: &f64) -> std::cmp::Ordering {
    b.total_cmp(a)
}

impl<'w> TopPrefix<'w> {
    /// Copies `x` into the workspace.
    pub(crate) fn load<T: Real>(x: &[T], ws: &'w mut Workspace) -> Self {
        ws.values.clear();
        Self::from_values(x.iter().map(|v| v.to_f64()), ws)
    }

    /// Copies only the entries of `x` above `bound`: the others are known to be zero in
    /// the solution (each problem derives its bound from its KKT conditions), and a
    /// solution whose threshold clears the largest of them is optimal anyway.
    /// `ws.block_maxima` must hold `x`'s [`block_maxima`], unless the row is short
    /// (at most [`SHORT_ROW`] entries: those are scanned whole).
    pub(crate) fn load_above<T: Real>(x: &[T], bound: f64, ws: &'w mut Workspace) -> Self {
        ws.values.clear();
        let left_out = if x.len() <= SHORT_ROW {
            compact_above(x, bound, &mut ws.values)
        } else {
            gather_above(x, &ws.block_maxima, bound, &mut ws.values)
        };
        let mut top = Self::from_values(std::iter::empty(), ws);
        top.left_out = left_out;
        top
    }

    fn from_values(values: impl Iterator<Item = f64>, ws: &'w mut Workspace) -> Self {
        ws.values.extend(values);
        ws.prefix_sums.clear();
        ws.prefix_sums.push(0.0);
        TopPrefix {
            values: &mut ws.values,
            prefix_sums: &mut ws.prefix_sums,
            sorted_len: 0,
            rest_max: f64::INFINITY,
            left_out: f64::NEG_INFINITY,
        }
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
        step: impl FnMut(&[f64], &[f64], f64) -> crate::Result<Option<R>>,
    ) -> crate::Result<R> {
        self.try_solve(first_len, step)?.ok_or_else(|| {
            // The whole row was sorted and the step still asked for more.
            crate::Error::no_solution("threshold search", "the full sorted row did not yield a valid threshold")
        })
    }

    /// [`TopPrefix::solve`], or `None` when every copied entry is sorted and the step
    /// still asks for more.
    fn try_solve<R>(
        &mut self,
        first_len: usize,
        mut step: impl FnMut(&[f64], &[f64], f64) -> crate::Result<Option<R>>,
    ) -> crate::Result<Option<R>> {
        let m = self.len();
        if m == 0 {
            // A bound at or above every entry left nothing to solve on.
            return Ok(None);
        }
        let mut c = first_len.clamp(1, m);
        loop {
            self.extend_to(c);
            let rest = self.rest_max.max(self.left_out);
            if let Some(answer) = step(self.sorted(), self.prefix_sums(), rest)? {
                return Ok(Some(answer));
            }
            if self.sorted_len >= m {
                return Ok(None);
            }
            c = self.sorted_len.saturating_mul(4).max(self.sorted_len + 1);
        }
    }
}

/// Solves a threshold problem over `x` on growing sorted prefixes (see
/// [`TopPrefix::solve`]), first over only the entries above `zero_below`, a lower
/// bound on the threshold that the problem guarantees (`−∞`: none; otherwise, for a
/// row longer than [`SHORT_ROW`], `ws.block_maxima` must hold `x`'s [`block_maxima`]),
/// if at most half of the blocks hold entries above it (always for a short row). When the bound is not tight enough for the step
/// (rounding at the bound), the whole row is loaded.
pub(crate) fn solve_largest<T: Real, R>(
    x: &[T],
    zero_below: f64,
    first_len: usize,
    ws: &mut Workspace,
    mut step: impl FnMut(&[f64], &[f64], f64) -> crate::Result<Option<R>>,
) -> crate::Result<R> {
    // Filter long rows only when the bound leaves out most blocks; otherwise walking the
    // blocks costs more than the copy and selection it saves. A short row is always
    // filtered: one pass over it costs less than sorting it, and the threshold searches
    // then run over the few entries that can be positive.
    let blocks_above = || ws.block_maxima.iter().filter(|&&b| b > zero_below).count();
    if zero_below > f64::NEG_INFINITY && (x.len() <= SHORT_ROW || 2 * blocks_above() <= ws.block_maxima.len()) {
        if let Some(answer) = TopPrefix::load_above(x, zero_below, ws).try_solve(first_len, &mut step)? {
            return Ok(answer);
        }
    }
    TopPrefix::load(x, ws).solve(first_len, step)
}

/// Entries per block of the row summaries below.
pub(crate) const BLOCK: usize = 16;

/// The maximum of each block of `BLOCK` consecutive entries of `x` (the last block may
/// be shorter), computed lane-wise so that it vectorises. One cheap pass that lets the
/// filters skip the blocks holding no candidate without a branch per entry.
pub(crate) fn block_maxima<T: Real>(x: &[T], maxima: &mut Vec<f64>) {
    maxima.clear();
    maxima.extend(x.chunks(BLOCK).map(block_max));
}

/// The largest entry of a block of at most `BLOCK` entries.
#[inline]
fn block_max<T: Real>(block: &[T]) -> f64 {
    if block.len() < BLOCK {
        return block.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v.to_f64()));
    }
    let mut lanes = [f64::NEG_INFINITY; BLOCK / 2];
    for (lane, m) in lanes.iter_mut().enumerate() {
        let (a, b) = (block[lane].to_f64(), block[lane + BLOCK / 2].to_f64());
        *m = if a > b { a } else { b };
    }
    lanes.iter().fold(f64::NEG_INFINITY, |m, &v| if v > m { v } else { m })
}

/// Rows of at most this many entries are filtered by exact order statistics found in
/// one scan ([`short_order_statistics`]) instead of block maxima: the SDCA steps of
/// problems with few classes project such rows, where sorting the whole row and
/// searching it cost several times the scan.
pub(crate) const SHORT_ROW: usize = 64;

/// The most order statistics [`short_order_statistics`] tracks (j + 1 ≤ this).
pub(crate) const TRACKED: usize = 8;

/// Lower bounds (B_j, B_{j+1}) on x_[j] and x_[j+1] (B_0 = +∞), for the threshold bound
/// of a problem, or `None` (do not filter).
///
/// A short row (at most [`SHORT_ROW`] entries) gets its exact order statistics
/// ([`short_order_statistics`]). A longer one the j-th and (j+1)-th largest of its
/// block maxima, left in `ws.block_maxima` for [`solve_largest`]: j blocks hold an
/// entry ≥ B_j, so B_j ≤ x_[j], from a summary of m/16 values. `None` when the row is
/// at most `2·first_len` long, where the first prefix sorts most of it anyway, or when
/// j is half the blocks or more (the bound would leave out too few of them).
pub(crate) fn order_statistic_bounds<T: Real>(
    x: &[T],
    j: usize,
    first_len: usize,
    ws: &mut Workspace,
) -> Option<(f64, f64)> {
    if x.len() <= SHORT_ROW {
        return short_order_statistics(x, j);
    }
    if x.len() <= 2 * first_len || 2 * j >= x.len().div_ceil(BLOCK) {
        return None;
    }
    block_maxima(x, &mut ws.block_maxima);
    let top = &mut ws.values;
    top.clear();
    top.extend_from_slice(&ws.block_maxima);
    let (larger, &mut next, _) = top.select_nth_unstable_by(j, |a, b| b.total_cmp(a));
    Some((larger.iter().fold(f64::INFINITY, |m, &v| m.min(v)), next))
}

/// (x_[j], x_[j+1]) exactly (x_[0] = +∞), from [`short_top`]; `None` when j + 1 exceeds
/// [`TRACKED`] or the row's length.
pub(crate) fn short_order_statistics<T: Real>(x: &[T], j: usize) -> Option<(f64, f64)> {
    let top = short_top(x, j + 1)?;
    Some((if j == 0 { f64::INFINITY } else { top[j - 1] }, top[j]))
}

/// The n largest entries of a short row in descending order (then −∞), by one scan that
/// keeps them sorted. `None` when n exceeds [`TRACKED`] or the row's length, or the row
/// is longer than [`SHORT_ROW`].
pub(crate) fn short_top<T: Real>(x: &[T], n: usize) -> Option<[f64; TRACKED]> {
    if n == 0 || n > TRACKED || n > x.len() || x.len() > SHORT_ROW {
        return None;
    }
    #[cfg(test)]
    if tests::UNFILTERED.with(|off| off.get()) {
        return None;
    }
    Some(match n {
        1 => largest::<T, 1>(x),
        2 => largest::<T, 2>(x),
        3 => largest::<T, 3>(x),
        4 => largest::<T, 4>(x),
        5 => largest::<T, 5>(x),
        6 => largest::<T, 6>(x),
        7 => largest::<T, 7>(x),
        _ => largest::<T, 8>(x),
    })
}

/// The N largest entries of `x`, descending (then −∞), each entry passed down a chain
/// of N compare-exchanges: no branch (whether an entry enters the top is as
/// unpredictable as the data, and would mispredict about N·ln(m/N) times per row).
#[inline]
fn largest<T: Real, const N: usize>(x: &[T]) -> [f64; TRACKED] {
    let mut top = [f64::NEG_INFINITY; N];
    for &v in x {
        let mut v = v.to_f64();
        for slot in top.iter_mut() {
            let (hi, lo) = if v > *slot { (v, *slot) } else { (*slot, v) };
            *slot = hi;
            v = lo;
        }
    }
    let mut out = [f64::NEG_INFINITY; TRACKED];
    out[..N].copy_from_slice(&top);
    out
}

/// The threshold bound of `p = clip(x − t, 0, cap)` with Σp ≤ total: if K entries at
/// the cap already exceed the total, then t ≥ x_[K] − cap (otherwise the K largest
/// entries would all be capped). From [`order_statistic_bounds`]; `−∞` when they give
/// none.
pub(crate) fn capped_zero_below<T: Real>(x: &[T], cap: f64, total: f64, first_len: usize, ws: &mut Workspace) -> f64 {
    let fit = (total / cap).floor();
    if fit >= x.len() as f64 {
        return f64::NEG_INFINITY;
    }
    // The smallest K with K·cap > total, checked in floating point.
    let over = (fit as usize..=x.len()).find(|&c| c as f64 * cap > total);
    match over.and_then(|c| order_statistic_bounds(x, c - 1, first_len, ws)) {
        Some((_, kth)) => kth - cap,
        None => f64::NEG_INFINITY,
    }
}

/// Appends the entries of `x` above `bound` to `out` (in row order), visiting only the
/// blocks whose maximum (from [`block_maxima`]) exceeds it, and returns the largest
/// entry that was not appended (−∞ if none). Entries are compacted without a branch
/// per entry: whether an entry qualifies is as unpredictable as the data.
pub(crate) fn gather_above<T: Real>(x: &[T], maxima: &[f64], bound: f64, out: &mut Vec<f64>) -> f64 {
    let mut left_out = f64::NEG_INFINITY;
    for (block, &max) in x.chunks(BLOCK).zip(maxima) {
        if max <= bound {
            left_out = left_out.max(max);
            continue;
        }
        left_out = left_out.max(compact_above(block, bound, out));
    }
    left_out
}

/// Appends the entries of `x` above `bound` to `out` (in row order) and returns the
/// largest of the others (−∞ if none), without a branch per entry.
fn compact_above<T: Real>(x: &[T], bound: f64, out: &mut Vec<f64>) -> f64 {
    let start = out.len();
    out.resize(start + x.len(), 0.0);
    let (mut len, mut below) = (start, f64::NEG_INFINITY);
    for &v in x {
        let v = v.to_f64();
        out[len] = v;
        len += (v > bound) as usize;
        below = if v <= bound && v > below { v } else { below };
    }
    out.truncate(len);
    below
}

/// The length of the prefix of `d` on which `holds` is true (it must be true on a prefix
/// and false after it, as `partition_point` requires). A short `d` is counted without
/// branches: a binary search over a few entries mispredicts about every other step,
/// and the SDCA steps of problems with few classes project rows of a handful of entries.
#[inline]
fn leading(d: &[f64], holds: impl Fn(f64) -> bool) -> usize {
    if d.len() <= 32 {
        d.iter().map(|&v| usize::from(holds(v))).sum()
    } else {
        d.partition_point(|&v| holds(v))
    }
}

/// `F(t) = Σ_i clip(d_i − t, 0, cap)` over a descending-sorted `d` with prefix sums `p`.
/// `cap` may be `+∞`.
#[inline]
pub(crate) fn capped_sum(d: &[f64], p: &[f64], cap: f64, t: f64) -> f64 {
    let j = leading(d, |v| v > t);
    let u = if cap.is_finite() { leading(&d[..j], |v| v - cap >= t) } else { 0 };
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
/// `u·cap + Σ_{u≤i<j} d_i − (j − u)·t = a·t + b`, which is solved relative to a pivot
/// entry (d_u, the first free one; without free entries one next to the bracket; see
/// the module docs). Returns `t = shift + lower` with `upper = cap`.
pub(crate) fn capped_root(d: &[f64], p: &[f64], cap: f64, a: f64, b: f64) -> Thresholds {
    // h from the prefix sums carries a few ulps of the largest entries. When that is not
    // small next to the cap (entries ~1e16 under a cap of 1), d_i − cap rounds onto d_i,
    // an entry's two breakpoints coincide and the bracket lands on the wrong side; so
    // h is then summed entry by entry relative to the breakpoint's entry from the
    // start. Otherwise a linear solve that falls outside its bracket is the sign that a
    // rounded h misplaced the bracket (two entries closer than that rounding, one
    // capped, one not); then the bracket is searched again the same way.
    let c = d.len();
    let coarse = cap.is_finite() && c > 0 && c as f64 * f64::EPSILON * d[0].abs().max(d[c - 1].abs()) > 1e-6 * cap;
    match capped_root_in_bracket(d, p, cap, a, b, coarse) {
        (_, true) if !coarse => capped_root_in_bracket(d, p, cap, a, b, true).0,
        (th, _) => th,
    }
}

/// [`capped_root`] with h evaluated from the prefix sums (`exact_h` false) or entry by
/// entry relative to each breakpoint's entry (O(c) per evaluation): there
/// clip((d_l − d_i) + cap, ·) keeps the cap's digits, as the output does. Also returns
/// whether the linear solve fell outside its bracket (and was clamped to it).
fn capped_root_in_bracket(d: &[f64], p: &[f64], cap: f64, a: f64, b: f64, exact_h: bool) -> (Thresholds, bool) {
    let c = d.len();
    // h(t) = F(t) − a·t − b at the breakpoint t = d_i − offset (offset 0 or cap).
    let h = |i: usize, offset: f64| -> f64 {
        if exact_h {
            let base = d[i];
            let sum: f64 = d.iter().map(|&v| ((v - base) + offset).max(0.0).min(cap)).sum();
            sum - a * base + a * offset - b
        } else {
            let t = d[i] - offset;
            capped_sum(d, p, cap, t) - a * t - b
        }
    };
    // First index whose breakpoint lies at or below the root (h ≥ 0 there).
    let first_at_or_below = |offset: f64| -> usize {
        let (mut lo, mut hi) = (0usize, c);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if h(mid, offset) < 0.0 {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let j = first_at_or_below(0.0);
    let u = if cap.is_finite() { first_at_or_below(cap).min(j) } else { 0 };
    // The root's bracket between consecutive breakpoints, relative to a pivot entry next
    // to it — the last (smallest) free one, so that every free d_i − pivot lies in
    // [0, p_i] and their sum carries no more than m ulps of Σp (the proof above
    // `output_tolerance`; the largest free entry would give m ulps of m·max p: a long
    // row of near-equal entries lost its sum); else (no free entries, a = 0: any t in
    // the bracket works) the smallest capped or the largest zero one: an entry d_i − cap
    // next to a huge d_i rounds, (d_i − pivot) − cap does not, so the entries land
    // exactly on 0 and the cap.
    let pivot = if j > u {
        d[j - 1]
    } else if a > 0.0 {
        0.0
    } else if u > 0 {
        d[u - 1]
    } else if j < c {
        d[j]
    } else {
        0.0
    };
    let mut lo = if j < c { d[j] - pivot } else { f64::NEG_INFINITY };
    let mut hi = if j > 0 { d[j - 1] - pivot } else { f64::INFINITY };
    if cap.is_finite() {
        if u < c {
            lo = lo.max((d[u] - pivot) - cap);
        }
        if u > 0 {
            hi = hi.min((d[u - 1] - pivot) - cap);
        }
    }
    let capped = if u > 0 { u as f64 * cap } else { 0.0 };
    let offset = if j > u {
        let free_sum: f64 = d[u..j].iter().map(|&v| v - pivot).sum();
        (capped + free_sum - a * pivot - b) / ((j - u) as f64 + a)
    } else if a > 0.0 {
        (capped - b) / a
    } else {
        // No free entries: the sum is constant on the bracket and any t in it works;
        // take one away from its ends, where rounding could free an entry.
        match (lo.is_finite(), hi.is_finite()) {
            (true, true) => 0.5 * (lo + hi),
            (false, true) => hi - cap.min(hi.abs().max(1.0)),
            (true, false) => lo + 1.0 + lo.abs(),
            (false, false) => 0.0,
        }
    };
    // Rounding may push the linear solve a hair outside its bracket (or, for ties a
    // few ulps apart, invert the bracket itself: then there is nothing to clamp to).
    // `max`/`min` rather than `clamp`, which panics on NaN bounds.
    let clamped = lo <= hi && !(offset >= lo && offset <= hi);
    let offset = if lo <= hi { offset.max(lo).min(hi) } else { offset };
    (Thresholds { shift: pivot, lower: offset, upper: cap }, clamped)
}

/// What writing a projection saw, for [`check_output`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Written {
    /// The sum of the entries as written (rounded to the output type), in f64.
    pub total: f64,
    /// Every entry fits the output's type (a float32 output can overflow where the
    /// float64 computation did not; a float64 one overflows only if the total does).
    pub fits: bool,
}

/// Writes `clip((x_i − shift) − lower, lo, upper)` into `out`.
#[inline]
pub(crate) fn write_clipped<T: Real>(x: &[T], th: &super::Thresholds, lo: f64, out: &mut [T]) -> Written {
    let (shift, lower, upper) = (th.shift, th.lower, th.upper);
    // Branch-free (whether an entry is clipped is unpredictable), and summed in
    // independent lanes: one running sum would wait on each addition in turn. The sum
    // is of the entries as stored, so that a float32 output is checked as returned.
    let clip = |v: T| T::from_f64(((v.to_f64() - shift) - lower).max(lo).min(upper));
    let mut lanes = [0.0f64; BLOCK];
    let mut out_blocks = out.chunks_exact_mut(BLOCK);
    let mut x_blocks = x.chunks_exact(BLOCK);
    for (o, v) in out_blocks.by_ref().zip(x_blocks.by_ref()) {
        for lane in 0..BLOCK {
            let p = clip(v[lane]);
            lanes[lane] += p.to_f64();
            o[lane] = p;
        }
    }
    let mut total = lanes.iter().sum::<f64>();
    for (o, &v) in out_blocks.into_remainder().iter_mut().zip(x_blocks.remainder()) {
        let p = clip(v);
        total += p.to_f64();
        *o = p;
    }
    let fits = T::as_f64_slice(out).is_some() || out.iter().all(|o| o.to_f64().is_finite());
    Written { total, fits }
}

/// The unit of rounding of the output type `T` (ε of float64 or float32).
pub(crate) fn output_epsilon<T: Real>() -> f64 {
    if T::as_f64_slice(&[]).is_some() {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    }
}

/// The proved bound on |Σp̂ − target| for the output p̂ (as stored, length m) of a
/// threshold projection, with L = Σ|p̂_i| + m·|lo| (lo the lower clip; 0 but for the
/// knapsack) and ε_out the output type's ε:
///
/// ```text
/// |Σp̂ − target| ≤ 8·(m + 4)·ε·(|target| + L) + ε_out·L.
/// ```
///
/// Proof (u = ε/2; γ_n = nu/(1 − nu) ≤ (n + 1)u). Every solver writes
/// p_i = clip((x_i − pivot) − τ, lo, hi) where the pivot is an entry of the free set
/// M = {lo < p_i < hi}, the one nearest lo (the smallest free entry; the simplex uses
/// the row maximum, see (1)), and τ solves its partition's sum equation,
/// τ = (Σ_M (x_i − pivot) + Σ_{i∉M} b_i − target)/|M| (b_i the bound entry i is fixed
/// at; `topk_cone.rs` shows the cone's s obeys the same estimate).
/// (1) For i ∈ M, x_i − pivot = p_i − p_pivot with p_pivot − lo ≤ p_i − lo, so
///     |x_i − pivot| ≤ |p_i| + 2|lo|; each is rounded once and their sum with the b_i
///     costs γ_m: the numerator of τ is within (γ_m + u)(|target| + 3L) of its exact
///     value, and |M|·(error of τ) — how far the exact Σ clip(·) at the computed τ is
///     from the target — is at most (γ_m + 2u)(|target| + 3L). (The simplex shifts by
///     the maximum, its candidates lie within r = target of it: |x_i − max| ≤ |target|,
///     and rounding those differences adds m·u·|target|.)
/// (2) Each entry is two subtractions off its exact value at the computed τ: ≤
///     u(|x_i − pivot| + |p_i|) ≤ 2u(|p_i| + |lo|) (an entry clipped away from its
///     bound is exact; one within that distance of it is off by no more): ≤ 2uL.
/// (3) Storing in the output type moves each entry by ≤ u_out|p_i|: ≤ u_out·L.
/// (4) The lane sum of the m stored entries is within γ_m·L of its exact value.
///
/// In all ≤ (2γ_m + 5u)(|target| + 3L) + m·u·|target| + u_out·L, which is at most
/// (3.5m + 11)·ε·(|target| + L) + ε_out·L: about half the tolerance; the other half
/// covers partitions decided at ties within rounding (an entry on the wrong side of a
/// tie moves the sum by its own rounding). The bound is relative (scale-free): an
/// output off by more did not solve its problem, whatever the reason, and is never
/// returned.
pub(crate) fn output_tolerance(m: usize, target: f64, mass: f64, eps_out: f64) -> f64 {
    8.0 * (m as f64 + 4.0) * f64::EPSILON * (target.abs() + mass) + eps_out * mass
}

/// The parameter that sets a projection's sum constraint, named when it cannot be met.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Param {
    pub name: &'static str,
    pub value: f64,
}

/// The last line of defence of the threshold projections: the output `out` (as
/// stored) must be finite and satisfy its sum constraint — Σp = target
/// (`Sum::Equal`), or Σp ≤ target (`Sum::AtMost`) — within [`output_tolerance`]
/// (its mass Σ|p̂| is summed in a second pass only when |Σp̂| in its place does not
/// already vouch for the sum).
/// Otherwise this raises `NoSolution` naming the cause: an output that overflows its
/// type, a parameter so small that the entries are subnormal in the output type
/// (e.g. r = 1e-300 with float32), or a row spanning more orders of magnitude than
/// float64 resolves around the threshold.
pub(crate) fn check_output<T: Real>(
    problem: &'static str,
    out: &[T],
    lo: f64,
    written: Written,
    sum: Sum,
    param: Param,
) -> crate::Result<()> {
    let Written { total, fits } = written;
    let target = sum.target();
    // A non-finite target (a cone whose sum overflowed) would excuse any total below.
    if !(total.is_finite() && fits && target.is_finite()) {
        return Err(crate::Error::no_solution(
            problem,
            format!(
                "the projection overflows its output type (its entries sum to {total:e}, its constraint to {target:e}); \
                 rescale x or the bounds"
            ),
        ));
    }
    let excess = match sum {
        Sum::Equal(_) => (total - target).abs(),
        Sum::AtMost(_) => total - target,
    };
    // The common case, without a second pass: |Σp̂| ≤ Σ|p̂|, so the tolerance with |Σp̂|
    // in place of the mass is at most the real one.
    let eps_out = output_epsilon::<T>();
    if excess <= output_tolerance(out.len(), target, total.abs(), eps_out) {
        return Ok(());
    }
    let mass = out.iter().map(|v| v.to_f64().abs()).sum::<f64>() + out.len() as f64 * lo.abs();
    let tol = output_tolerance(out.len(), target, mass, eps_out);
    if excess <= tol {
        return Ok(());
    }
    Err(crate::Error::no_solution(problem, unresolved_cause::<T>(out.len(), total, tol, sum, param)))
}

/// Refuses a subnormal parameter (0 < |value| < 2.2e-308): arithmetic there rounds
/// absolutely, not relatively, so no rounding bound like [`output_tolerance`] can hold
/// for a projection whose entries are of that size (Σp ≤ r = 1.2e-314 was missed by
/// the rounding of r/k alone).
pub(crate) fn check_resolved(problem: &'static str, name: &'static str, value: f64) -> crate::Result<()> {
    if value != 0.0 && value.abs() < f64::MIN_POSITIVE {
        return Err(crate::Error::no_solution(
            problem,
            format!(
                "{name} = {value:e} is below what float64 resolves (subnormal: it carries no relative precision); \
                 rescale x and {name}"
            ),
        ));
    }
    Ok(())
}

/// [`write_clipped`], then [`check_output`] on what it wrote.
pub(crate) fn write_checked<T: Real>(
    problem: &'static str,
    x: &[T],
    th: &super::Thresholds,
    lo: f64,
    out: &mut [T],
    sum: Sum,
    param: Param,
) -> crate::Result<()> {
    let written = write_clipped(x, th, lo, out);
    check_output(problem, out, lo, written, sum, param)
}

/// Why a projection's output misses its sum constraint `sum` by more than `tol`.
pub(crate) fn unresolved_cause<T: Real>(m: usize, total: f64, tol: f64, sum: Sum, param: Param) -> String {
    let target = sum.target();
    let (dtype, smallest) = if T::as_f64_slice(&[]).is_some() {
        ("float64", f64::MIN_POSITIVE)
    } else {
        ("float32", f32::MIN_POSITIVE as f64)
    };
    let found = format!(
        "the projection sums to {total:e} where it must sum to {} {target:e} (rounding bound {tol:.1e})",
        sum.relation()
    );
    // Subnormal entries carry an absolute, not a relative, rounding: the parameter, not
    // the data, is out of range.
    let per_entry = target.abs() / m as f64;
    if param.name == "x" && target != 0.0 && per_entry < smallest {
        return format!("{found}: the entries of x are so small that the projection's (about {per_entry:.1e}) are subnormal in {dtype}; rescale x");
    }
    if (target != 0.0 && per_entry < smallest) || (param.value != 0.0 && param.value.abs() < f64::MIN_POSITIVE) {
        return format!(
            "{found}: {} = {:e} is below what {dtype} resolves (the entries, about {per_entry:.1e}, are subnormal); \
             rescale x and {}",
            param.name, param.value, param.name
        );
    }
    format!("{found}: x spans more orders of magnitude than float64 resolves around the threshold; rescale or clip x")
}

/// The sum constraint a projection's output is checked against.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sum {
    Equal(f64),
    AtMost(f64),
}

impl Sum {
    pub(crate) fn target(self) -> f64 {
        match self {
            Sum::Equal(t) | Sum::AtMost(t) => t,
        }
    }
    fn relation(self) -> &'static str {
        match self {
            Sum::Equal(_) => "=",
            Sum::AtMost(_) => "<=",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Set by the tests that compare a short row's filtered solve with the general
        /// (unfiltered) one.
        pub(super) static UNFILTERED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// The exact order statistics of a short row, ties included, against a sort.
    #[test]
    fn short_order_statistics_are_the_sorted_entries() {
        let mut rng = crate::rng::SplitMix64::new(5);
        for len in 1..=SHORT_ROW {
            // Few distinct values: many ties.
            let x: Vec<f64> = (0..len).map(|_| rng.below(5) as f64 - 2.0).collect();
            let mut sorted = x.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            for j in 0..len.min(TRACKED) {
                let kth = if j == 0 { f64::INFINITY } else { sorted[j - 1] };
                assert_eq!(short_order_statistics(&x, j), Some((kth, sorted[j])), "len {len} j {j}");
            }
            assert_eq!(short_order_statistics(&x, len), None);
        }
        assert_eq!(short_order_statistics(&[0.0; 20], TRACKED), None);
    }

    type Projection<'a> = dyn Fn(&[f64], &mut [f64], &mut Workspace) -> crate::Result<Thresholds> + 'a;

    /// A short row's filtered solve against the general one (the whole row sorted) for
    /// every length 1..=SHORT_ROW, on rows of an SDCA step's shape (a few entries
    /// above zero), Gaussian rows, ties, all-equal rows, and rows whose bound is an
    /// entry: k from 1 to m, ρ = 0, ½, 1, radii from binding to loose.
    #[test]
    fn short_rows_filtered_equal_the_general_path() {
        use crate::projections::{box_simplex, capped_simplex, topk_simplex};
        let mut rng = crate::rng::SplitMix64::new(9);
        let mut normal = move || {
            let (u, v) = (rng.next_f64().max(1e-300), rng.next_f64());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let (mut ws, mut filtered, mut general) = (Workspace::new(), Vec::new(), Vec::new());
        let mut solve = |x: &[f64], project: &Projection<'_>| {
            filtered.resize(x.len(), 0.0);
            general.resize(x.len(), 0.0);
            let a = project(x, &mut filtered, &mut ws);
            UNFILTERED.with(|off| off.set(true));
            let b = project(x, &mut general, &mut ws);
            UNFILTERED.with(|off| off.set(false));
            assert_eq!(a.is_ok(), b.is_ok(), "{x:?}: {a:?} vs {b:?}");
            let scale = x.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            for (i, (f, g)) in filtered.iter().zip(&general).enumerate() {
                assert!((f - g).abs() <= 4.0 * f64::EPSILON * scale, "{x:?} entry {i}: {f} vs {g}");
            }
        };
        for m in 1..=SHORT_ROW {
            for family in 0..5 {
                let x: Vec<f64> = match family {
                    0 => (0..m).map(|_| 0.3 * normal() - 0.4).collect(),
                    1 => (0..m).map(|_| normal()).collect(),
                    2 => (0..m).map(|_| (normal() * 2.0).round() * 0.25).collect(),
                    3 => vec![0.7; m],
                    _ => (0..m).map(|i| if i % 3 == 0 { 1.0 } else { 0.5 }).collect(),
                };
                for k in (1..=m).filter(|&k| k <= 9 || k + 1 >= m) {
                    for rho in [0.0, 0.5, 1.0] {
                        for r in [0.05, 1.0, 30.0] {
                            solve(&x, &|x, out, ws| topk_simplex(x, k, r, rho, out, ws));
                            solve(&x, &|x, out, ws| box_simplex(x, r / k as f64, r, rho, out, ws));
                        }
                    }
                    solve(&x, &|x, out, ws| capped_simplex(x, k as f64 - 0.5, out, ws));
                }
            }
        }
    }

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

    /// The branch-free count of a short prefix is `partition_point`, ties and
    /// thresholds on the entries included, on both sides of the length cut-off.
    #[test]
    fn leading_counts_what_partition_point_finds() {
        for len in [0, 1, 2, 7, 31, 32, 33, 40] {
            // Descending, with runs of ties.
            let d: Vec<f64> = (0..len).map(|i| ((len - i) / 3) as f64 * 0.5).collect();
            for t in [-1.0, 0.0, 0.25, 0.5, 1.0, 3.0, 100.0] {
                assert_eq!(leading(&d, |v| v > t), d.partition_point(|&v| v > t), "len {len} t {t}");
                assert_eq!(leading(&d, |v| v - 0.5 >= t), d.partition_point(|&v| v - 0.5 >= t), "len {len} t {t}");
            }
        }
    }

    /// A cap below an ulp of the entries: 1e17 − 1 rounds to 1e17, yet the bracket and
    /// the threshold (relative to the pivot) come out exact.
    #[test]
    fn capped_root_resolves_a_cap_below_an_ulp_of_the_entries() {
        let d = [1e17, 1e17, 0.0];
        let p = [0.0, 1e17, 2e17, 2e17];
        // Σ clip(d − t, 0, 1) = 0.5: both large entries free at 0.25.
        let th = capped_root(&d, &p, 1.0, 0.0, 0.5);
        assert_eq!(((1e17 - th.shift) - th.lower, (0.0 - th.shift) - th.lower), (0.25, -1e17 - 0.25));
        // Σ clip(d − t, 0, 1) = t/ρ with ρ = 1e20: free at 2e17/(1 + 2e20)/2 each.
        let th = capped_root(&d, &p, 1.0, 1e-20, 0.0);
        let expected = 2e17 / (1.0 + 2e20) / 2.0;
        assert!(((1e17 - th.shift) - th.lower - expected).abs() <= 1e-15 * expected);
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

    /// The output bound grows with the number of terms and is relative to the target
    /// and the output's mass (scale-free).
    #[test]
    fn output_tolerance_is_relative_and_grows_with_m() {
        let small = output_tolerance(10, 1.0, 1.0, f64::EPSILON);
        assert!(output_tolerance(1000, 1.0, 1.0, f64::EPSILON) > 50.0 * small);
        assert_eq!(output_tolerance(10, 1e-200, 1e-200, f64::EPSILON), small * 1e-200);
    }
}
