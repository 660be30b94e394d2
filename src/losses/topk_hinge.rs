//! Top-k hinge losses (Lapin, Hein, Schiele 2015, eq. (3) and the Usunier variant (5)),
//! with the y-excluded convention of Lapin, Hein, Schiele (2015): over the m − 1 classes j ≠ y,
//! h_j = 1 + s_j − s_y, and
//!   alpha: (1/k) max{0, Σ_{j≤k} h_[j]}      (dual set: the top-k simplex)
//!   beta:  (1/k) Σ_{j≤k} max{0, h_[j]}      (dual set: the box simplex, hi = C/k)
//! k = 1 gives the Crammer–Singer hinge for both. Needs 1 ≤ k ≤ m − 1.
//!
//! Both are L(h) = max_{p ∈ S} ⟨h, p⟩ over their dual set S (Prop. 2 and 5 of the paper);
//! the smoothing γ ≥ 0 of the top-k SVM subtracts (γ/2)‖p‖² inside the max (the Moreau
//! envelope of L, 1/γ-smooth), and the maximiser p is the gradient with respect to h.

use crate::projections::{box_simplex, short_top, topk_simplex, Workspace};
use crate::real::Real;
use crate::{Error, Result};

/// Which top-k hinge loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopKVariant {
    Alpha,
    Beta,
}

impl TopKVariant {
    /// The variant named by the `variant` option: "alpha" or "beta".
    pub fn new(name: &str) -> Result<Self> {
        match name {
            "alpha" => Ok(TopKVariant::Alpha),
            "beta" => Ok(TopKVariant::Beta),
            other => Err(Error::param("variant", format!("must be 'alpha' or 'beta', got {other:?}"))),
        }
    }
}

impl TopKVariant {
    /// Projects `b` onto r·S with bias `rho` into `out`, S the variant's dual set: the
    /// top-k simplex Δ_k(1) (alpha), the box simplex {0 ≤ p ≤ 1/k, Σp ≤ 1} (beta).
    pub(crate) fn project(
        self,
        k: usize,
        b: &[f64],
        r: f64,
        rho: f64,
        out: &mut [f64],
        ws: &mut Workspace,
    ) -> Result<()> {
        match self {
            TopKVariant::Alpha => topk_simplex(b, k, r, rho, out, ws).map(|_| ()),
            TopKVariant::Beta => box_simplex(b, r / k as f64, r, rho, out, ws).map(|_| ()),
        }
    }
}

/// The top-k hinge loss of one score row with true class `y`, smoothed by `smoothing`
/// (γ ≥ 0; 0 is the loss itself), and its gradient with respect to the scores in `grad`.
///
/// L_γ(h) = max_{p ∈ S} ⟨h, p⟩ − (γ/2)‖p‖² (S the variant's dual set, `TopKVariant::project`)
/// is attained at p = Π_S(h/γ) for γ > 0, which is its gradient with respect to h
/// (Danskin); at γ = 0 a maximising vertex of S (1/k on the k largest h_j, where they
/// count) is an element of the subdifferential. Through h_j = 1 + s_j − s_y:
/// ∂L/∂s_j = p_j for j ≠ y and ∂L/∂s_y = −Σ_j p_j.
pub fn topk_hinge<T: Real>(
    scores: &[T],
    y: usize,
    k: usize,
    variant: TopKVariant,
    smoothing: f64,
    grad: &mut [T],
    ws: &mut Workspace,
) -> Result<f64> {
    crate::projections::check_row(scores, grad)?;
    let mut scratch = std::mem::take(&mut ws.scratch);
    let loss = hinge::<T, true>(scores, y, k, variant, smoothing, &mut scratch, ws);
    if loss.is_ok() {
        let p = &scratch[scores.len() - 1..];
        let (before, after) = grad.split_at_mut(y);
        before.iter_mut().zip(p).for_each(|(g, &v)| *g = T::from_f64(v));
        after[1..].iter_mut().zip(&p[y..]).for_each(|(g, &v)| *g = T::from_f64(v));
        after[0] = T::from_f64(-p.iter().sum::<f64>());
    }
    ws.scratch = scratch;
    loss
}

/// L_γ of one row (see [`topk_hinge`]) and, with `MAXIMISER`, its gradient with
/// respect to h, the maximiser p over the classes j ≠ y in order, left in
/// `scratch[m − 1..]` (`scratch` holds h or h/γ before it). The one computation of the
/// loss: Prox-SDCA's primal (`crate::solvers::topk_svm::TopKHinge`) calls it too,
/// without `MAXIMISER` — at γ = 0 it then stops at the sum of the k largest margins,
/// which a gap check evaluates at every example.
pub(crate) fn hinge<T: Real, const MAXIMISER: bool>(
    scores: &[T],
    y: usize,
    k: usize,
    variant: TopKVariant,
    smoothing: f64,
    scratch: &mut Vec<f64>,
    ws: &mut Workspace,
) -> Result<f64> {
    let m = scores.len();
    if m < 2 {
        return Err(Error::input("scores", format!("needs at least 2 classes, got {m}")));
    }
    super::check_label(m, y)?;
    if k == 0 || k >= m {
        return Err(Error::param("k", format!("must satisfy 1 <= k <= m - 1 = {}, got {k}", m - 1)));
    }
    if !(smoothing >= 0.0 && smoothing.is_finite()) {
        return Err(Error::param("smoothing", format!("must be finite and >= 0, got {smoothing}")));
    }
    let sy = scores[y].to_f64();
    scratch.clear();
    scratch.resize(2 * (m - 1), 0.0);
    let (h, p) = scratch.split_at_mut(m - 1);
    // (s_j − s_y) + 1: the difference first, so large scores keep their margin.
    let margins = scores.iter().enumerate().filter(|&(j, _)| j != y).map(|(_, &s)| (s.to_f64() - sy) + 1.0);
    h.iter_mut().zip(margins).for_each(|(hj, v)| *hj = v);
    // L_γ ≤ L ≤ L_γ + γ/2 (‖p‖ ≤ 1 on S): a γ below the rounding of the scores leaves
    // L itself, and h/γ would be beyond what a projection of radius 1 resolves.
    let largest = scores.iter().fold(0.0f64, |m, s| m.max(s.to_f64().abs())) + 1.0;
    if smoothing > 1e-12 * largest {
        let gamma = smoothing;
        h.iter_mut().for_each(|v| *v /= gamma);
        variant.project(k, h, 1.0, 0.0, p, ws)?;
        let (hp, pp) = h.iter().zip(p.iter()).fold((0.0, 0.0), |(hp, pp), (&b, &p)| (hp + gamma * b * p, pp + p * p));
        return Ok(hp - 0.5 * gamma * pp);
    }
    let (total, kth) = k_largest_sum(h, k, variant, &mut ws.values);
    if !MAXIMISER {
        return Ok(total / k as f64);
    }
    // The vertex: 1/k on the k largest h_j (those tied with the k-th in index order),
    // for alpha where their sum is positive, for beta where h_j itself is.
    let counts = |v: f64| match variant {
        TopKVariant::Alpha => total > 0.0,
        TopKVariant::Beta => v > 0.0,
    };
    let mut ties = k - h.iter().filter(|&&v| v > kth).count();
    for (pj, &v) in p.iter_mut().zip(h.iter()) {
        let chosen = v > kth
            || (v == kth && ties > 0 && {
                ties -= 1;
                true
            });
        *pj = if chosen && counts(v) { 1.0 / k as f64 } else { 0.0 };
    }
    Ok(total / k as f64)
}

/// The hinge's sum over the k largest margins h_j (alpha: their sum, clipped at 0;
/// beta: the sum of their positive parts) and the k-th largest (−∞ when k = m − 1:
/// every margin counts). A short row (at most `SHORT_ROW` margins, k ≤ `TRACKED`: the
/// classes of an SDCA gap check on few classes, at every example) gets its k largest
/// by one compare-exchange scan and sums them largest first; a longer one by a
/// selection in `values`. The margins are finite: every caller checks its rows.
fn k_largest_sum(h: &[f64], k: usize, variant: TopKVariant, values: &mut Vec<f64>) -> (f64, f64) {
    let sum = |top: &[f64]| match variant {
        TopKVariant::Alpha => top.iter().sum::<f64>().max(0.0),
        TopKVariant::Beta => top.iter().map(|v| v.max(0.0)).sum::<f64>(),
    };
    let every = k >= h.len();
    if let Some(top) = short_top(h, k) {
        return (sum(&top[..k]), if every { f64::NEG_INFINITY } else { top[k - 1] });
    }
    values.clear();
    values.extend_from_slice(h);
    let kth = if every {
        f64::NEG_INFINITY
    } else {
        values.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
        values[k - 1]
    };
    (sum(&values[..k]), kth)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The k largest margins' sum and the k-th largest, by the scan (short rows) and by
    /// the selection (long ones), against a full sort: rows of 1 to 70 margins (across
    /// `SHORT_ROW`), Gaussian and with many ties, every k the scan tracks and a few
    /// beyond.
    #[test]
    fn the_k_largest_margins_match_a_sort() {
        let mut rng = crate::rng::SplitMix64::new(17);
        let mut values = Vec::new();
        for len in 1..=70 {
            for ties in [false, true] {
                let h: Vec<f64> = (0..len)
                    .map(|_| if ties { rng.below(4) as f64 - 1.5 } else { rng.next_f64() * 4.0 - 2.0 })
                    .collect();
                let mut sorted = h.clone();
                sorted.sort_by(|a, b| b.total_cmp(a));
                for k in (1..=len).filter(|&k| k <= 10 || k == len) {
                    for variant in [TopKVariant::Alpha, TopKVariant::Beta] {
                        let (total, kth) = k_largest_sum(&h, k, variant, &mut values);
                        let want = match variant {
                            TopKVariant::Alpha => sorted[..k].iter().sum::<f64>().max(0.0),
                            TopKVariant::Beta => sorted[..k].iter().map(|v| v.max(0.0)).sum::<f64>(),
                        };
                        let mass: f64 = sorted[..k].iter().map(|v| v.abs()).sum();
                        assert!((total - want).abs() <= 2.0 * k as f64 * f64::EPSILON * mass, "{h:?} k {k}");
                        let want_kth = if k == len { f64::NEG_INFINITY } else { sorted[k - 1] };
                        assert_eq!(kth, want_kth, "{h:?} k {k}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_variants_are_named_exactly() {
        assert_eq!(TopKVariant::new("alpha"), Ok(TopKVariant::Alpha));
        assert_eq!(TopKVariant::new("beta"), Ok(TopKVariant::Beta));
        for bad in ["gamma", "Alpha", " alpha", ""] {
            let err = TopKVariant::new(bad).unwrap_err().to_string();
            assert!(err.starts_with("variant: must be 'alpha' or 'beta', got"), "{err}");
        }
    }

    /// The smoothed loss is differentiable: central differences agree with the gradient,
    /// which sums to zero.
    #[test]
    fn smoothed_gradient_matches_central_differences() {
        let mut ws = Workspace::new();
        let mut rng = crate::rng::SplitMix64::new(11);
        let mut normal = || 2.0 * ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) - 1.0;
        for variant in [TopKVariant::Alpha, TopKVariant::Beta] {
            for (k, gamma) in [(1, 0.3), (2, 1.0), (3, 0.05)] {
                let s: Vec<f64> = (0..6).map(|_| 2.0 * normal()).collect();
                let mut grad = vec![0.0; 6];
                topk_hinge(&s, 4, k, variant, gamma, &mut grad, &mut ws).unwrap();
                assert!(grad.iter().sum::<f64>().abs() < 1e-14);
                let mut scratch = vec![0.0; 6];
                for j in 0..6 {
                    let mut at = |d: f64| {
                        let mut t = s.clone();
                        t[j] += d;
                        topk_hinge(&t, 4, k, variant, gamma, &mut scratch, &mut ws).unwrap()
                    };
                    let fd = (at(1e-6) - at(-1e-6)) / 2e-6;
                    assert!((fd - grad[j]).abs() < 1e-6, "{variant:?} k={k} γ={gamma} j={j}: {fd} vs {}", grad[j]);
                }
            }
        }
    }

    /// The unsmoothed gradient is a subgradient: L(t) ≥ L(s) + ⟨g, t − s⟩ for any t.
    #[test]
    fn unsmoothed_gradient_is_a_subgradient() {
        let mut ws = Workspace::new();
        let mut rng = crate::rng::SplitMix64::new(5);
        let mut unif = || 2.0 * ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) - 1.0;
        for variant in [TopKVariant::Alpha, TopKVariant::Beta] {
            for k in 1..5 {
                // Ties included: scores on a coarse grid.
                let s: Vec<f64> = (0..5).map(|_| (4.0 * unif()).round() / 2.0).collect();
                let mut g = vec![0.0; 5];
                let at_s = topk_hinge(&s, 1, k, variant, 0.0, &mut g, &mut ws).unwrap();
                let mut scratch = vec![0.0; 5];
                for _ in 0..200 {
                    let t: Vec<f64> = s.iter().map(|v| v + unif()).collect();
                    let at_t = topk_hinge(&t, 1, k, variant, 0.0, &mut scratch, &mut ws).unwrap();
                    let linear: f64 = g.iter().zip(t.iter().zip(&s)).map(|(g, (t, s))| g * (t - s)).sum();
                    assert!(at_t >= at_s + linear - 1e-12, "{variant:?} k={k}");
                }
            }
        }
    }
}
