//! Training algorithms. Each solver states its optimisation problem and optimality
//! conditions above its code; all report progress and poll for interruption through a
//! [`Monitor`].

pub mod attop;
pub mod m3l;
mod monitor;
pub mod ranker;
pub mod sdca;
pub mod tracenorm;

pub use monitor::{relative_gap, Monitor, Progress, Silent, Status};
