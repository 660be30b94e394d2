//! Exact projections onto the sets the top-k losses live on.
//!
//! Every function projects one row `x` into a caller-provided `out` using a
//! caller-owned [`Workspace`] (no allocation once the workspace has grown to the row
//! length) and returns the [`Thresholds`] that describe the solution. Inputs are
//! assumed finite (the Python bindings check); parameters are checked here and bad
//! ones return [`crate::Error`]. Row-batched, parallel versions live in [`crate::batch`].

mod bipartite_simplex;
mod box_simplex;
mod capped_simplex;
mod capped_simplex_entropy;
mod knapsack;
mod prefix;
mod rankmax;
mod simplex;
mod topk_cone;
mod topk_simplex;

pub use bipartite_simplex::{bipartite_simplex, BipartiteThresholds};
pub use box_simplex::box_simplex;
pub use capped_simplex::capped_simplex;
pub use capped_simplex_entropy::capped_simplex_entropy;
pub use knapsack::knapsack;
pub(crate) use prefix::short_top;
pub use prefix::Workspace;
pub use rankmax::{rankmax, rankmax_state, RankmaxState};
pub use simplex::{simplex, sparsemax};
pub use topk_cone::topk_cone;
pub use topk_simplex::topk_simplex;

use crate::real::Real;
use crate::{Error, Result};

/// A threshold projection's solution `p_i = clip((x_i − shift) − lower, 0, upper)`
/// (the knapsack clips to `[lo, upper]`; the entropic projection is
/// `min(1, exp((x_i − shift) − lower))`). `shift` is the row maximum, or 0: keeping
/// it apart lets the threshold stay exact when |x| is large.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub shift: f64,
    pub lower: f64,
    pub upper: f64,
}

impl Thresholds {
    /// The threshold in the row's own coordinates, `shift + lower` (rounded).
    pub fn threshold(&self) -> f64 {
        self.shift + self.lower
    }

    /// Whether the threshold is at least `rest` (the largest entry left out of a
    /// prefix solve), compared as (shift − rest) + lower: `shift + lower` rounds to the
    /// shift next to huge entries, which would admit a threshold just below `rest`.
    pub(crate) fn clears(&self, rest: f64) -> bool {
        (self.shift - rest) + self.lower >= 0.0
    }
}

/// Writes the zero vector (the projection onto a set of radius 0).
pub(crate) fn write_zero<T: Real>(out: &mut [T]) -> Thresholds {
    out.iter_mut().for_each(|o| *o = T::from_f64(0.0));
    Thresholds { shift: 0.0, lower: f64::INFINITY, upper: 0.0 }
}

pub(crate) fn check_row<T: Real>(x: &[T], out: &[T]) -> Result<()> {
    if x.is_empty() {
        return Err(Error::input("x", "must have at least one entry"));
    }
    if out.len() != x.len() {
        return Err(Error::input("out", format!("has length {}, expected {}", out.len(), x.len())));
    }
    Ok(())
}
