//! M3L, max-margin multi-label learning with a label-correlation prior
//! (Hariharan, Vishwanathan, Varma, Machine Learning 2012): the problem and its dual in
//! [`problem`], the kernel SMO solver in [`smo`] (with the intercept as a kernel shift,
//! [`fit_smo`]), the linear dual coordinate descent with shrinking in [`dcd`], and the
//! fit of either from one set of options, [`Fit`].

pub mod dcd;
mod fit;
pub mod local_round;
pub mod problem;
pub mod smo;

pub use dcd::{solve_dcd, DcdOptions};
pub use fit::{Fit, M3lOptions};
pub use local_round::{local_round, partition_sq_norms, partition_terms, M3lRoundOptions};
pub use problem::{projected, M3l};
pub use smo::{fit_smo, scores_from_gradient, solve_box_2d, solve_smo, M3lReport, SmoOptions};
