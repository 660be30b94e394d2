//! Rankmax-trained factorised rankers (Kong et al., the Rankmax paper §3–4): scores
//! z(x) = (x·U)·Vᵀ + b over n labels, trained by minibatch Adagrad or Adam on the
//! Rankmax, softmax or sparsemax cross-entropy summed over each example's positive
//! labels. The objective and its gradient are stated in [`objective`]; a fit's problem,
//! its epochs and objective in [`Problem`].

mod label_loss;
mod objective;
mod optimizer;
mod problem;
mod trainer;

pub use label_loss::{label_loss, LabelLoss, LossScratch};
pub use objective::{add_data_gradient, objective, Labels, Param, Scratch, Shape, CHUNK_ELEMENTS};
pub use optimizer::{apply_update, Optimizer, OptimizerState};
pub use problem::{Epoch, Objective, Problem, Settings};
pub use trainer::{train_epoch, EpochReport, TrainOptions};
