//! The interface between Prox-SDCA and a multiclass loss.
//!
//! Conventions (Lapin, Hein, Schiele 2015, Theorem 1 and Proposition 4, with
//! λ = 1/(C n) folded into per-example weights c_i = C · sample_weight_i · class_weight_{y_i}):
//!
//!   primal  P(W) = ½‖W‖² + Σ_i c_i L(Wᵀx_i; y_i)
//!   dual    D(A) = Σ_i −c_i L*(−a_i^{\y}/c_i) − ½‖W(A)‖²,   W(A) = Σ_i x_i a_iᵀ,
//!
//! where a_i ∈ ℝ^m has a_{y_i,i} = ⟨1, x⟩ and a_i^{\y} = −x for x in c_i times the dual
//! set of the loss (so ⟨1, a_i⟩ = 0). A loss provides its primal value, the dual term
//! −c L*(x/c), and the exact maximiser of D over a_i with every other a_j fixed.
//!
//! Every method takes the example's labels `y` as an ascending slice of positions in
//! the score row it is given: one label for the multiclass losses ([`single`] reads
//! it), a label set Y ⊂ {0..m−1} with 1 ≤ |Y| ≤ m − 1 for the multi-label ones
//! (`multi_label`; conventions in `multilabel_hinge.rs`, `multilabel_softmax.rs`: there
//! a_i is c_i times the negated gradient of the loss at its maximiser, so ⟨1, a_i⟩ = 0
//! and c L(s) = max_a −c L*(−a/c) − ⟨s, a⟩ as above).

use super::problem::MANY_CLASSES;
use super::{MultiLabelHinge, MultiLabelSoftmax, Softmax, TopKEntropy, TopKHinge};
use crate::losses::TopKVariant;
use crate::projections::Workspace;
use crate::{Error, Result};

/// Scratch vectors of length m − 1 (and the projection workspace) for one thread.
#[derive(Debug, Default, Clone)]
pub struct LossWorkspace {
    pub(crate) b: Vec<f64>,
    pub(crate) p: Vec<f64>,
    pub(crate) extra: Vec<f64>,
    /// Which entries of a row are labels (the multi-label hinge's projection).
    pub(crate) mask: Vec<bool>,
    pub(crate) projection: Workspace,
}

impl LossWorkspace {
    pub fn new() -> Self {
        Self::default()
    }
}

/// A loss that Prox-SDCA can optimise.
pub trait SdcaLoss: Send + Sync {
    /// Human-readable name (progress lines, errors).
    fn name(&self) -> &'static str;

    /// Checks the number of classes m (every loss needs 2) and the loss's own parameters
    /// against it ([`SdcaLoss::check_params`]).
    fn check(&self, m: usize) -> Result<()> {
        if m < 2 {
            return Err(Error::input("y", format!("needs at least 2 classes, got {m}")));
        }
        self.check_params(m)
    }

    /// Checks the loss's own parameters (k, smoothing) against m ≥ 2. Default: none.
    fn check_params(&self, _m: usize) -> Result<()> {
        Ok(())
    }

    /// Whether an example may have several labels (1 ≤ |Y_i| ≤ m − 1); otherwise each
    /// has exactly one. The solvers check the labels against it (`Examples::check`).
    fn multi_label(&self) -> bool {
        false
    }

    /// Whether the dual term is (at most) quadratic in a, so the parallel solver may use
    /// an exact line search (see `cocoa.rs`).
    fn dual_is_quadratic(&self) -> bool {
        false
    }

    /// The primal loss L(s; y) of one score row (without the weight c_i).
    fn primal(&self, scores: &[f64], y: &[usize], ws: &mut LossWorkspace) -> Result<f64>;

    /// The dual term −c · L*(x / c) of a feasible dual row `a` (a_y = ⟨1, x⟩, a^{\y} = −x).
    fn dual(&self, a: &[f64], y: &[usize], c: f64) -> f64;

    /// Maximises D(A) over the row a_i = `a` with every other row fixed:
    ///   max_a  −c L*(x/c) − ⟨q, a⟩ − (kii/2)‖a‖²
    /// where q = Wᵀx_i − kii·a_i^{old} are the scores without example i's own
    /// contribution and kii = ⟨x_i, x_i⟩ (> 0, or ≥ 0 for smooth losses). Overwrites `a`.
    fn update(&self, q: &[f64], kii: f64, y: &[usize], c: f64, a: &mut [f64], ws: &mut LossWorkspace) -> Result<()>;

    /// Whether [`SdcaLoss::active_classes`] can shrink (losses with sparse dual rows).
    fn shrinks_classes(&self) -> bool {
        false
    }

    /// Class shrinking (see `problem::ActiveSet`): appends to `out`, in ascending order,
    /// the classes the next steps of an example should score and may change — its labels,
    /// every class with a_j ≠ 0, and those close enough to enter the dual support — given its
    /// full scores s = Wᵀx_i, kii, c and dual row a; returns Ok(false) (after appending
    /// anything) when every class must stay. The rest keep a_j = 0 until the next
    /// check, so a loss may shrink only if its update, restricted to any class subset
    /// holding the top k + 1 classes, is still its exact step over that subset.
    /// Default: never (smooth losses keep every a_j ≠ 0).
    #[allow(clippy::too_many_arguments)]
    fn active_classes(
        &self,
        _s: &[f64],
        _kii: f64,
        _y: &[usize],
        _c: f64,
        _a: &[f64],
        _out: &mut Vec<u32>,
        _ws: &mut LossWorkspace,
    ) -> Result<bool> {
        Ok(false)
    }
}

/// The loss named by `TopKSVC`'s `loss` option: top-k hinge α or β (Moreau-smoothed by
/// `smoothing`), softmax, or top-k entropy; for label sets the multi-label hinge
/// (smoothed likewise) or the multi-label softmax, which have no k (it is ignored). The
/// one list of the losses' names: a new loss is added here (and to `SdcaLossName` in
/// `python/toprank/_options.py`, and `TopKLoss` there if `TopKSVC` offers it).
pub fn named_loss(name: &str, k: usize, smoothing: f64) -> Result<Box<dyn SdcaLoss>> {
    let hinge = |variant| -> Box<dyn SdcaLoss> { Box::new(TopKHinge { k, variant, smoothing }) };
    Ok(match name {
        "alpha" => hinge(TopKVariant::Alpha),
        "beta" => hinge(TopKVariant::Beta),
        "softmax" => Box::new(Softmax),
        "entropy" => Box::new(TopKEntropy { k }),
        "multilabel_hinge" => Box::new(MultiLabelHinge { smoothing }),
        "multilabel_softmax" => Box::new(MultiLabelSoftmax),
        other => {
            let expected = "must be 'alpha', 'beta', 'softmax', 'entropy', 'multilabel_hinge' or 'multilabel_softmax'";
            return Err(Error::param("loss", format!("{expected}, got {other:?}")));
        }
    })
}

/// The label of a multiclass loss's example (the solvers checked it has exactly one).
#[inline]
pub(crate) fn single(y: &[usize]) -> usize {
    debug_assert_eq!(y.len(), 1, "a multiclass loss gets one label per example");
    y[0]
}

/// Writes the dual row from the reduced vector x over the classes j ≠ y.
pub(crate) fn write_dual_row(x: &[f64], y: usize, a: &mut [f64]) {
    let mut total = 0.0;
    let mut src = x.iter();
    for (j, aj) in a.iter_mut().enumerate() {
        if j != y {
            let v = *src.next().expect("x has m - 1 entries");
            *aj = -v;
            total += v;
        }
    }
    a[y] = total;
}

/// Fills `out` with `f(q_j, q_y)` over the classes j ≠ y (the reduced vectors of
/// Proposition 4 all have this form).
pub(crate) fn reduced(q: &[f64], y: usize, out: &mut Vec<f64>, f: impl Fn(f64, f64) -> f64) {
    let qy = q[y];
    out.clear();
    out.extend(q.iter().enumerate().filter(|&(j, _)| j != y).map(|(_, &qj)| f(qj, qy)));
}

/// The fewest classes a shrunk list keeps above its cut, with many classes ([`shrunk_list`]).
pub(crate) const MIN_EXTRA_CLASSES: usize = 8;

/// Class shrinking's list for one example (`SdcaLoss::active_classes`): appends to `out`,
/// ascending, the classes `keep` holds (labels and supports) and those with q_j ≥ cut,
/// cut = `top` − `margin` (`top`: the highest q of the step's zero classes); with
/// `MANY_CLASSES` or more, of the classes above the cut only the highest `budget`, twice
/// the kept ones and at least `min_budget`. There the margin alone would keep every
/// class whenever the scores crowd (1,000 classes of CNN-like features span ~0.6).
/// Returns the list's length. `scratch` holds the scores above the cut.
pub(crate) fn shrunk_list(
    q: &[f64],
    keep: impl Fn(usize) -> bool,
    (top, margin, min_budget): (f64, f64, usize),
    scratch: &mut Vec<f64>,
    out: &mut Vec<u32>,
) -> usize {
    let m = q.len();
    let mut cut = top - margin;
    if m >= MANY_CLASSES {
        let budget = (2 * (0..m).filter(|&j| keep(j)).count()).max(min_budget);
        scratch.clear();
        scratch.extend((0..m).filter(|&j| !keep(j) && q[j] >= cut).map(|j| q[j]));
        if scratch.len() > budget {
            let (_, &mut kth, _) = scratch.select_nth_unstable_by(budget - 1, |u, v| v.total_cmp(u));
            cut = kth;
        }
    }
    let before = out.len();
    out.extend((0..m).filter(|&j| keep(j) || q[j] >= cut).map(|j| j as u32));
    out.len() - before
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_losses_are_named_once() {
        let names = |name| named_loss(name, 2, 0.0).map(|loss| loss.name());
        assert_eq!(names("alpha"), Ok(TopKHinge { k: 2, variant: TopKVariant::Alpha, smoothing: 0.0 }.name()));
        assert_eq!(names("beta"), Ok(TopKHinge { k: 2, variant: TopKVariant::Beta, smoothing: 0.0 }.name()));
        assert_eq!(names("softmax"), Ok(Softmax.name()));
        assert_eq!(names("entropy"), Ok(TopKEntropy { k: 2 }.name()));
        assert_eq!(names("multilabel_hinge"), Ok(MultiLabelHinge { smoothing: 0.0 }.name()));
        assert_eq!(names("multilabel_softmax"), Ok(MultiLabelSoftmax.name()));
        let multi = |name| named_loss(name, 2, 0.0).unwrap().multi_label();
        assert!(multi("multilabel_hinge") && multi("multilabel_softmax"));
        assert!(["alpha", "beta", "softmax", "entropy"].iter().all(|&name| !multi(name)));
        let err = names("alhpa").unwrap_err().to_string();
        let expected = "must be 'alpha', 'beta', 'softmax', 'entropy', 'multilabel_hinge' or 'multilabel_softmax'";
        assert!(err.starts_with(&format!("loss: {expected}, got \"alhpa\"")), "{err}");
    }
}
