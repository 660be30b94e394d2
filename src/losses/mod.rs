//! Losses on score vectors: value and gradient with respect to the scores, one row at
//! a time (row-batched versions in [`crate::batch`]).

mod multilabel;
mod rankmax;
mod rankmax_sweep;
mod softmax;
mod sparsemax;
mod topk_hinge;

pub(crate) use multilabel::hinge_and_maximiser as multilabel_hinge_and_maximiser;
pub use multilabel::{multilabel_hinge, multilabel_softmax_loss};
pub use rankmax::rankmax_loss;
pub use rankmax_sweep::{rankmax_loss_multilabel, SweepWorkspace};
pub use softmax::softmax_loss;
pub use sparsemax::sparsemax_loss;
pub(crate) use topk_hinge::hinge;
pub use topk_hinge::{topk_hinge, TopKVariant};

use crate::{Error, Result};

pub(crate) fn check_label(n: usize, y: usize) -> Result<()> {
    if y >= n {
        return Err(Error::param("y", format!("label {y} out of range [0, {n})")));
    }
    Ok(())
}
