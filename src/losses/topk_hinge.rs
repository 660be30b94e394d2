//! Top-k hinge losses (Lapin, Hein, Schiele 2015, eq. (3) and the Usunier variant (5)),
//! with the y-excluded convention of Lapin, Hein, Schiele (2015): over the m − 1 classes j ≠ y,
//! h_j = 1 + s_j − s_y, and
//!   alpha: (1/k) max{0, Σ_{j≤k} h_[j]}      (dual set: the top-k simplex)
//!   beta:  (1/k) Σ_{j≤k} max{0, h_[j]}      (dual set: the box simplex, hi = C/k)
//! k = 1 gives the Crammer–Singer hinge for both. Needs 1 ≤ k ≤ m − 1.

use crate::projections::Workspace;
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

/// The top-k hinge loss of one score row with true class `y`.
pub fn topk_hinge<T: Real>(scores: &[T], y: usize, k: usize, variant: TopKVariant, ws: &mut Workspace) -> Result<f64> {
    let m = scores.len();
    if m < 2 {
        return Err(Error::input("scores", format!("needs at least 2 classes, got {m}")));
    }
    super::check_label(m, y)?;
    if k == 0 || k >= m {
        return Err(Error::param("k", format!("must satisfy 1 <= k <= m - 1 = {}, got {k}", m - 1)));
    }
    let sy = scores[y].to_f64();
    let h = &mut ws.values;
    h.clear();
    // (s_j − s_y) + 1: the difference first, so large scores keep their margin.
    h.extend(scores.iter().enumerate().filter(|&(j, _)| j != y).map(|(_, &s)| (s.to_f64() - sy) + 1.0));
    if k < h.len() {
        h.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    }
    let top = &h[..k];
    let total = match variant {
        TopKVariant::Alpha => top.iter().sum::<f64>().max(0.0),
        TopKVariant::Beta => top.iter().map(|v| v.max(0.0)).sum::<f64>(),
    };
    Ok(total / k as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variants_are_named_exactly() {
        assert_eq!(TopKVariant::new("alpha"), Ok(TopKVariant::Alpha));
        assert_eq!(TopKVariant::new("beta"), Ok(TopKVariant::Beta));
        for bad in ["gamma", "Alpha", " alpha", ""] {
            let err = TopKVariant::new(bad).unwrap_err().to_string();
            assert!(err.starts_with("variant: must be 'alpha' or 'beta', got"), "{err}");
        }
    }
}
