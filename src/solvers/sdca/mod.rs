//! Prox-SDCA for top-k multiclass SVMs and related losses (DESIGN §3.2).

mod cocoa;
mod hinge;
mod loss;
mod model;
mod problem;
mod solver;

pub use cocoa::solve_cocoa;
pub use hinge::TopKHinge;
pub use loss::{LossWorkspace, SdcaLoss};
pub use model::{LinearModel, ScoreModel};
pub use problem::{objectives, Examples, Objectives};
pub use solver::{solve, SdcaOptions, SdcaReport};
