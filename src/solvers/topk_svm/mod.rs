//! Prox-SDCA for top-k multiclass SVMs and related losses, and their multi-label
//! counterparts (Lapin, Hein, Schiele 2015 and 2018; conventions in `loss.rs`).

mod accelerated;
mod cocoa;
mod dual;
mod fit;
mod hinge;
mod kernel_model;
mod local_round;
mod loss;
mod model;
mod multilabel_hinge;
mod multilabel_softmax;
mod problem;
mod softmax;
mod solver;
mod topk_entropy;

pub use accelerated::solve_linear;
pub use cocoa::{solve_cocoa, step_length};
pub use dual::{
    DisjointRows, DualLayout, DualMatrix, DualRows, DualRowsMut, SparseDual, SparseRow, SPARSE_MIN_CLASSES,
};
pub use fit::{fit_linear, Fit, Settings};
pub use hinge::TopKHinge;
pub use kernel_model::KernelModel;
pub use local_round::{
    dual_change, local_round, partition_terms, Cursor, NamedArrays, Partition, PartitionRound, Round, RoundOptions,
};
pub use loss::{named_loss, LossWorkspace, SdcaLoss};
pub use model::{LinearModel, ScoreModel};
pub use multilabel_hinge::MultiLabelHinge;
pub use multilabel_softmax::MultiLabelSoftmax;
pub use problem::{objectives, ActiveSet, Examples, Objectives};
pub use softmax::Softmax;
pub use solver::{sdca_step, solve, SdcaOptions, SdcaReport, StepScratch};
pub use topk_entropy::TopKEntropy;
