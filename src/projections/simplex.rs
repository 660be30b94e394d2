//! Euclidean projection onto the simplex (and sparsemax).
//!
//! Problem:  min_p ½‖p − x‖²  s.t.  p ≥ 0,  Σp = r      (or Σp ≤ r).
//! KKT: p_i = (x_i − t)_+ with Σ_i (x_i − t)_+ = r. For the inequality version the
//! multiplier t must be ≥ 0, so p = x_+ whenever Σ x_+ ≤ r.
//! Sparsemax (Martins & Astudillo 2016; the k = 1 case of the (n,k)-simplex, Rankmax
//! paper eq. (8) with α = 1) is the projection with r = 1.

use super::prefix::{capped_root, check_sum, row_max, write_clipped, TopPrefix, Workspace};
use super::Thresholds;
use crate::real::Real;
use crate::{Error, Result};

/// Projects `x` onto `{p ≥ 0, Σp = r}` (`Σp ≤ r` when `inequality`), writing `out`.
pub fn simplex<T: Real>(
    x: &[T],
    r: f64,
    inequality: bool,
    out: &mut [T],
    ws: &mut Workspace,
) -> Result<Thresholds> {
    super::check_row(x, out)?;
    if !(r >= 0.0 && r.is_finite()) {
        return Err(Error::param("r", format!("must be finite and >= 0, got {r}")));
    }
    if inequality {
        let positive_sum: f64 = x.iter().map(|v| v.to_f64().max(0.0)).sum();
        if positive_sum <= r {
            let th = Thresholds { shift: 0.0, lower: 0.0, upper: f64::INFINITY };
            write_clipped(x, &th, 0.0, out);
            return Ok(th);
        }
    }
    if r == 0.0 {
        return Ok(super::write_zero(out));
    }
    let th = simplex_threshold(x, r, ws)?;
    check_sum("simplex", write_clipped(x, &th, 0.0, out), r, 0.0)?;
    Ok(th)
}

/// The threshold `t` with `Σ (x_i − t)_+ = r` (`r > 0`).
///
/// The largest entry gets p_max = x_max − t ≤ r, so t ≥ x_max − r and only entries
/// above x_max − r can be in the support: one pass finds the maximum, a second
/// collects those candidates (usually a handful), and the exact threshold is solved
/// on them alone. No selection, no verification needed.
pub(crate) fn simplex_threshold<T: Real>(x: &[T], r: f64, ws: &mut Workspace) -> Result<Thresholds> {
    let mut candidates = TopPrefix::load_above(x, row_max(x) - r, ws);
    candidates.solve(usize::MAX, |d, p, _| Ok(Some(capped_root(d, p, f64::INFINITY, 0.0, r))))
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
}
