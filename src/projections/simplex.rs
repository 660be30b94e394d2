//! Euclidean projection onto the simplex (and sparsemax).
//!
//! Problem:  min_p ½‖p − x‖²  s.t.  p ≥ 0,  Σp = r      (or Σp ≤ r).
//! KKT: p_i = (x_i − t)_+ with Σ_i (x_i − t)_+ = r. For the inequality version the
//! multiplier t must be ≥ 0, so p = x_+ whenever Σ x_+ ≤ r.
//! Sparsemax (Martins & Astudillo 2016; the k = 1 case of the (n,k)-simplex, Rankmax
//! paper eq. (8) with α = 1) is the projection with r = 1.

use super::prefix::{block_maxima, check_resolved, gather_above, write_checked, Param, Sum, Workspace};
use super::Thresholds;
use crate::real::Real;
use crate::vector_code::largest_by;
use crate::{Error, Result};

/// Projects `x` onto `{p ≥ 0, Σp = r}` (`Σp ≤ r` when `inequality`), writing `out`.
pub fn simplex<T: Real>(x: &[T], r: f64, inequality: bool, out: &mut [T], ws: &mut Workspace) -> Result<Thresholds> {
    super::check_row(x, out)?;
    if !(r >= 0.0 && r.is_finite()) {
        return Err(Error::param("r", format!("must be finite and >= 0, got {r}")));
    }
    check_resolved("simplex", "r", r)?;
    if inequality {
        let positive_sum: f64 = x.iter().map(|v| v.to_f64().max(0.0)).sum();
        if positive_sum <= r {
            let th = Thresholds { shift: 0.0, lower: 0.0, upper: f64::INFINITY };
            write_checked("simplex", x, &th, 0.0, out, Sum::AtMost(r), Param { name: "r", value: r })?;
            return Ok(th);
        }
    }
    if r == 0.0 {
        return Ok(super::write_zero(out));
    }
    let th = simplex_threshold(x, r, ws)?;
    write_checked("simplex", x, &th, 0.0, out, Sum::Equal(r), Param { name: "r", value: r })?;
    Ok(th)
}

/// The threshold `t` with `Σ (x_i − t)_+ = r` (`r > 0`).
///
/// The largest entry gets p_max = x_max − t ≤ r, so t ≥ x_max − r and only entries
/// above x_max − r can be in the support: one pass finds the maximum of every block
/// of 16 entries, a second collects those candidates from the blocks whose maximum
/// exceeds the bound. On them, Michelot's mean rule (1986): with C the current
/// candidates, τ = (Σ_C x − r)/|C| is at most the final threshold, so every entry ≤ τ
/// is outside the support and leaves C; τ only rises, and when no entry leaves, C is the
/// support and τ the threshold (Σ_C (x − τ) = r with every x ∈ C above τ: the KKT
/// conditions). Each pass is one branch-light sweep over the shrinking C, so a row
/// whose entries all lie within r of the maximum (small logits) costs a few passes
/// over n values, not a sort. Values are shifted by x_max, so sums carry no large
/// offset; τ is kept as that shift plus a small lower part.
pub(crate) fn simplex_threshold<T: Real>(x: &[T], r: f64, ws: &mut Workspace) -> Result<Thresholds> {
    block_maxima(x, &mut ws.block_maxima);
    let top = largest_by(&ws.block_maxima, |v| v);
    let candidates = &mut ws.values;
    candidates.clear();
    // A bound a few ulps below x_max − r, so that rounding cannot drop a support entry
    // (the slack in two terms: |x_max| + r may overflow).
    let slack = 4.0 * f64::EPSILON * top.abs() + 4.0 * f64::EPSILON * r;
    gather_above(x, &ws.block_maxima, (top - r) - slack, candidates);
    candidates.iter_mut().for_each(|v| *v -= top);
    let (mut len, mut sum) = (candidates.len(), candidates.iter().sum::<f64>());
    while len > 0 {
        let tau = (sum - r) / len as f64;
        let (mut kept, mut kept_sum, mut smallest) = (0, 0.0, 0.0f64);
        for i in 0..len {
            let d = candidates[i];
            if d > tau {
                candidates[kept] = d;
                kept += 1;
                kept_sum += d;
                smallest = smallest.min(d);
            }
        }
        if kept == len {
            // The support is final. τ from Σd carries m ulps of Σ|d| ≤ m·max p; summed
            // relative to the smallest support entry, every term lies in [0, p_i] and τ
            // carries m ulps of Σp = r instead (the proof above `output_tolerance`):
            // a long row of near-equal entries would otherwise miss its sum.
            let above: f64 = candidates[..len].iter().map(|&d| d - smallest).sum();
            let lower = smallest + (above - r) / len as f64;
            return Ok(Thresholds { shift: top, lower, upper: f64::INFINITY });
        }
        (len, sum) = (kept, kept_sum);
    }
    // The maximum (d = 0) always exceeds τ = (Σd − r)/|C| < 0, so C never empties.
    Err(Error::no_solution("simplex", "the support became empty"))
}

/// Sparsemax: the projection of `z` onto the probability simplex.
pub fn sparsemax<T: Real>(z: &[T], out: &mut [T], ws: &mut Workspace) -> Result<Thresholds> {
    simplex(z, 1.0, false, out, ws)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_projections() {
        let mut ws = Workspace::new();
        let mut out = [0.0f64; 3];
        simplex(&[0.5, 0.2, -1.0], 1.0, false, &mut out, &mut ws).unwrap();
        let expected = [0.65, 0.35, 0.0];
        for (a, b) in out.iter().zip(expected) {
            assert!((a - b).abs() < 1e-15, "{out:?}");
        }
        simplex(&[0.5, 0.2, -1.0], 1.0, true, &mut out, &mut ws).unwrap();
        assert_eq!(out, [0.5, 0.2, 0.0]);
        sparsemax(&[3.0, 1.0, 1.0], &mut out, &mut ws).unwrap();
        assert_eq!(out, [1.0, 0.0, 0.0]);
    }

    #[test]
    fn long_rows_need_prefix_growth() {
        // All entries equal: the support is the whole row, far beyond the first prefix.
        let x = vec![0.25f64; 1000];
        let mut out = vec![0.0; 1000];
        simplex(&x, 1.0, false, &mut out, &mut Workspace::new()).unwrap();
        assert!(out.iter().all(|&v| (v - 1e-3).abs() < 1e-15));
    }

    /// r/m below float32's smallest positive number: the zeros written do not sum to r.
    #[test]
    fn radius_below_float32_resolution_raises() {
        let mut out = [0.0f32; 15];
        let err = simplex(&[0.0f32; 15], 1e-300, false, &mut out, &mut Workspace::new()).unwrap_err();
        assert!(err.to_string().contains("r = 1e-300 is below what float32 resolves"), "{err}");
        let err = simplex(&[0.0f64; 15], 1e-320, false, &mut [0.0; 15], &mut Workspace::new()).unwrap_err();
        assert!(err.to_string().contains("r = 1e-320 is below what float64 resolves"), "{err}");
    }
}
