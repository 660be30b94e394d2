//! The one error type of the crate. Every failure a caller can cause or meet has a
//! variant; the Python bindings map them to exceptions in exactly one place
//! (`bindings/errors.rs`).

/// Errors of the toprank core.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is outside its domain (`k` out of range, a negative radius...).
    #[error("{name}: {reason}")]
    InvalidParameter { name: &'static str, reason: String },

    /// The input data are unusable (empty, wrong shape, NaN or infinity...).
    #[error("{name}: {reason}")]
    InvalidInput { name: &'static str, reason: String },

    /// The constraint set is empty for these parameters (e.g. `m·lo > r` in a knapsack).
    #[error("{name}: infeasible constraints: {reason}")]
    Infeasible { name: &'static str, reason: String },

    /// An exact search found no partition satisfying the optimality conditions.
    /// With exact arithmetic this cannot happen; it signals a numerical breakdown,
    /// and we refuse to return a wrong answer silently.
    #[error("{problem}: no solution satisfies the optimality conditions ({detail})")]
    NoSolution { problem: &'static str, detail: String },
}

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn param(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidParameter { name, reason: reason.into() }
    }
    pub(crate) fn input(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidInput { name, reason: reason.into() }
    }
    pub(crate) fn no_solution(problem: &'static str, detail: impl Into<String>) -> Self {
        Error::NoSolution { problem, detail: detail.into() }
    }
}
