//! Ranking at the top with kernels (Mácha, Adam, Šmídl 2020): TopPush,
//! TopPushK and Pat&Mat, solved in the dual by two-coordinate ascent (Algorithm 3.1).

mod group;
mod objective;
mod scan;
mod solver;
mod step;

pub use objective::{AtTop, AtTopObjectives, Method, Surrogate};
pub use solver::{solve_attop, AtTopOptions, AtTopReport, AtTopSolution, Fit, Settings};
