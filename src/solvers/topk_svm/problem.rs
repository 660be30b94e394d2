//! A Prox-SDCA problem instance: labels, per-example weights, the dual matrix A, and
//! the duality-gap evaluation shared by the serial and the parallel loops.

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::dual::DualRows;
use super::loss::{LossWorkspace, SdcaLoss};
use super::model::ScoreModel;
use crate::data::RowBuf;
use crate::vector_code::{prefetch_entry, prefetch_lines};
use crate::{Error, Result};

/// Labels and weights c_i = C · sample_weight_i · class_weight_{y_i} (c_i = 0 drops
/// example i).
///
/// Each example has a label set Y_i, ascending: one label for the multiclass losses
/// (`starts` None, `y[i]` example i's label), or any nonempty proper subset of the
/// classes for the multi-label ones (`SdcaLoss::multi_label`), given as the flat labels
/// `y` and n + 1 offsets `starts`: example i's labels are `y[starts[i]..starts[i + 1]]`.
#[derive(Debug, Clone)]
pub struct Examples<'a> {
    /// The labels, one per example or flat (see `starts`).
    pub y: &'a [usize],
    /// Offsets of each example's labels in `y`; None: one label per example.
    pub starts: Option<&'a [usize]>,
    pub c: &'a [f64],
}

impl<'a> Examples<'a> {
    /// One label per example: example i's label is `y[i]`.
    pub fn new(y: &'a [usize], c: &'a [f64]) -> Self {
        Self { y, starts: None, c }
    }

    /// Label sets: example i's labels are `y[starts[i]..starts[i + 1]]` (checked by the
    /// solvers: ascending, in range, and as many as the loss allows).
    pub fn with_label_sets(y: &'a [usize], starts: &'a [usize], c: &'a [f64]) -> Self {
        Self { y, starts: Some(starts), c }
    }

    /// The same labels with other weights.
    pub(crate) fn with_weights<'b>(&self, c: &'b [f64]) -> Examples<'b>
    where
        'a: 'b,
    {
        Examples { y: self.y, starts: self.starts, c }
    }

    /// Example i's labels, ascending.
    #[inline]
    pub fn labels(&self, i: usize) -> &'a [usize] {
        match self.starts {
            None => std::slice::from_ref(&self.y[i]),
            Some(starts) => &self.y[starts[i]..starts[i + 1]],
        }
    }

    /// Starts loading example i's label and weight (a hint).
    pub(crate) fn prefetch(&self, i: usize) {
        prefetch_entry(self.starts.unwrap_or(self.y), i);
        prefetch_entry(self.c, i);
    }

    /// Shapes, labels and weights of a whole problem, which needs an example with c_i > 0.
    pub(crate) fn check(&self, n: usize, m: usize, multi_label: bool) -> Result<()> {
        self.check_entries(n, m, multi_label)?;
        if n == 0 || self.c.iter().all(|&c| c == 0.0) {
            return Err(Error::input("X", "no example with a positive weight"));
        }
        Ok(())
    }

    /// Shapes, labels and weights, for any part of a problem (possibly empty). A
    /// multiclass loss (`multi_label` false) takes exactly one label per example; a
    /// multi-label one 1 ≤ |Y_i| ≤ m − 1 labels, strictly ascending: an example needs
    /// a label to rank on top and a class to rank below it.
    pub(crate) fn check_entries(&self, n: usize, m: usize, multi_label: bool) -> Result<()> {
        match self.starts {
            None if self.y.len() != n => {
                return Err(Error::input("y", format!("has {} labels for {n} examples", self.y.len())));
            }
            None => {
                if let Some(&bad) = self.y.iter().find(|&&y| y >= m) {
                    return Err(Error::input("y", format!("label {bad} out of range for {m} classes")));
                }
            }
            Some(starts) => self.check_label_sets(starts, n, m, multi_label)?,
        }
        if self.c.len() != n {
            return Err(Error::input("c", format!("has {} weights for {n} examples", self.c.len())));
        }
        if let Some(at) = self.c.iter().position(|c| !(c.is_finite() && *c >= 0.0)) {
            let why = "C times the sample and class weights must be finite and >= 0";
            return Err(Error::input("c", format!("{why}, got {} (entry {at})", self.c[at])));
        }
        Ok(())
    }

    /// The offsets and every example's label set (see [`Examples::check_entries`]).
    fn check_label_sets(&self, starts: &[usize], n: usize, m: usize, multi_label: bool) -> Result<()> {
        if starts.len() != n + 1 {
            return Err(Error::input(
                "label_starts",
                format!("must hold n + 1 = {} offsets, got {}", n + 1, starts.len()),
            ));
        }
        if starts[0] != 0 || starts[n] != self.y.len() {
            let why = format!("must start at 0 and end at the number of labels {}", self.y.len());
            return Err(Error::input("label_starts", format!("{why}, got {} and {}", starts[0], starts[n])));
        }
        if let Some(i) = starts.windows(2).position(|w| w[1] < w[0]) {
            return Err(Error::input("label_starts", format!("must not decrease, but entry {} < entry {i}", i + 1)));
        }
        for i in 0..n {
            let labels = &self.y[starts[i]..starts[i + 1]];
            if let Some(&bad) = labels.iter().find(|&&l| l >= m) {
                return Err(Error::input("y", format!("label {bad} of example {i} out of range for {m} classes")));
            }
            if let Some(w) = labels.windows(2).find(|w| w[1] <= w[0]) {
                let why = if w[0] == w[1] { format!("lists label {} twice", w[0]) } else { "is not ascending".into() };
                return Err(Error::input(
                    "y",
                    format!("example {i}'s label set {why}; labels must be strictly ascending"),
                ));
            }
            let count = labels.len();
            if !multi_label && count != 1 {
                let why = "a multiclass loss takes exactly one label per example";
                return Err(Error::input("y", format!("example {i} has {count} labels; {why}")));
            }
            if count == 0 {
                return Err(Error::input("y", format!("example {i} has no label")));
            }
            if count == m {
                return Err(Error::input("y", format!("example {i} has all {m} labels: nothing ranks below them")));
            }
        }
        Ok(())
    }
}

/// Primal and dual objective at the current iterate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objectives {
    pub primal: f64,
    pub dual: f64,
}

impl Objectives {
    /// (P − D) / max(|P|, |D|) (see [`crate::solvers::relative_gap`]).
    pub fn relative_gap(&self) -> f64 {
        crate::solvers::relative_gap(self.primal, self.dual)
    }
}

/// The fewest classes at which class shrinking bounds its lists (`SdcaLoss::active_classes`)
/// and the first gap check comes after epoch 1 (`solver::early_check`): below, a step's
/// scoring costs little next to its projection, and short lists save less than an extra
/// check costs (UCI Letter, m = 26: lists within the margin are a few classes anyway).
pub const MANY_CLASSES: usize = 256;

/// Rows per parallel task in the gap pass. Fixed (not left to work stealing) and the
/// partial sums added in order, so the value does not depend on the thread count.
const GAP_CHUNK: usize = 256;

/// Rows scored together in the gap pass ([`ScoreModel::scores_block`]).
const SCORE_BLOCK: usize = 64;

/// What the epochs between two gap checks visit (LIBLINEAR's "shrinking", refreshed by
/// every gap check from the full scores): the examples worth a step, and for each of
/// them the classes worth scoring.
///
/// * An example with a_i = 0 and zero loss is skipped: its exact step is (almost
///   always) a_i = 0 again.
/// * Class shrinking (losses whose dual rows are sparse, see
///   [`SdcaLoss::active_classes`]): a step then scores and changes only the listed
///   classes, keeping a_ij = 0 for the others — an exact step over a subspace that
///   contains the current row, so D still never decreases.
///
/// Neither affects correctness: every gap check evaluates all examples and all classes
/// and re-activates whatever became violated; the solver stops only on the full gap.
#[derive(Debug, Clone)]
pub struct ActiveSet {
    pub(crate) examples: Vec<bool>,
    /// Example i's classes are `classes[starts[i]..starts[i + 1]]`; an empty range
    /// means all of them (the labels are always listed, so a real list is never empty).
    starts: Vec<usize>,
    classes: Vec<u32>,
}

impl ActiveSet {
    /// Everything active.
    pub fn new(n: usize) -> Self {
        Self { examples: vec![true; n], starts: vec![0; n + 1], classes: Vec::new() }
    }

    /// Rebuilt from [`ActiveSet::parts`] (a CoCoA+ partition keeps its set between
    /// calls): every list must be strictly ascending, below `m` and hold its example's
    /// labels (those of `ex`, already checked), as a step relies on.
    pub fn from_parts(
        examples: Vec<bool>,
        starts: Vec<usize>,
        classes: Vec<u32>,
        ex: &Examples,
        m: usize,
    ) -> Result<Self> {
        let n = examples.len();
        let bad = |why: &str| Err(Error::input("active", why.to_string()));
        if ex.c.len() != n || starts.len() != n + 1 || starts[0] != 0 || starts[n] != classes.len() {
            return bad("examples, starts and classes do not fit together");
        }
        for i in 0..n {
            let Some(list) = classes.get(starts[i]..starts[i + 1]) else { return bad("starts must not decrease") };
            let sorted = list.windows(2).all(|w| w[0] < w[1]) && list.iter().all(|&c| (c as usize) < m);
            let holds_labels = sorted && ex.labels(i).iter().all(|&l| list.binary_search(&(l as u32)).is_ok());
            if !list.is_empty() && !holds_labels {
                return bad("a class list must be ascending, below the class count and hold its labels");
            }
        }
        Ok(Self { examples, starts, classes })
    }

    /// (examples, starts, classes): the set as plain arrays.
    pub fn parts(&self) -> (&[bool], &[usize], &[u32]) {
        (&self.examples, &self.starts, &self.classes)
    }

    /// Starts loading where example i's class list is (a hint).
    pub(crate) fn prefetch(&self, i: usize) {
        prefetch_lines(&self.starts[i..i + 2]);
    }

    /// Example i's class list (ascending), or `None` for all classes.
    #[inline]
    pub fn classes(&self, i: usize) -> Option<&[u32]> {
        let range = self.starts[i]..self.starts[i + 1];
        (!range.is_empty()).then(|| &self.classes[range])
    }

    /// Mean number of classes a step scores over the active examples (m when nothing
    /// is shrunk).
    #[cfg(test)]
    pub(crate) fn mean_classes(&self, m: usize) -> f64 {
        let active = (0..self.examples.len()).filter(|&i| self.examples[i]);
        let (count, total) =
            active.fold((0usize, 0usize), |(c, t), i| (c + 1, t + self.classes(i).map_or(m, <[u32]>::len)));
        if count == 0 {
            m as f64
        } else {
            total as f64 / count as f64
        }
    }
}

/// P = ½‖W‖² + Σ c_i L_i and D = Σ dual_i − ½‖W‖², on all threads of the current pool.
///
/// Also rebuilds `active` (see [`ActiveSet`]); class lists only if `shrink_classes`.
/// `None` if `stop` was raised meanwhile (polled per chunk of examples; `active` is then
/// partly rebuilt, and the solve is over).
pub fn objectives<M: ScoreModel, L: SdcaLoss + ?Sized, A: DualRows + ?Sized>(
    model: &M,
    loss: &L,
    ex: &Examples,
    a: &A,
    active: &mut ActiveSet,
    shrink_classes: bool,
    stop: Option<&AtomicBool>,
) -> Result<Option<Objectives>> {
    let Some([loss_sum, dual_sum, inner]) = objective_terms(model, loss, ex, a, active, shrink_classes, stop)? else {
        return Ok(None);
    };
    let half_w2 = 0.5 * model.sq_norm_w(inner);
    Ok(Some(Objectives { primal: half_w2 + loss_sum, dual: dual_sum - half_w2 }))
}

/// The example sums of [`objectives`]: Σ c_i L_i, Σ dual_i and Σ ⟨a_i, Wᵀx_i⟩ (= ‖W‖² when
/// W = W(A)), added over fixed chunks in order; rebuilds `active` the same way. `None`
/// if `stop` was raised meanwhile (see [`objectives`]).
pub(crate) fn objective_terms<M: ScoreModel, L: SdcaLoss + ?Sized, A: DualRows + ?Sized>(
    model: &M,
    loss: &L,
    ex: &Examples,
    a: &A,
    active: &mut ActiveSet,
    shrink_classes: bool,
    stop: Option<&AtomicBool>,
) -> Result<Option<[f64; 3]>> {
    let m = model.n_classes();
    type Part = ([f64; 3], Vec<u32>, Vec<u32>); // sums, class lists, list lengths
    let parts: Vec<Result<Option<Part>>> = active
        .examples
        .par_chunks_mut(GAP_CHUNK)
        .enumerate()
        .map_init(
            || (LossWorkspace::new(), RowBuf::new(), vec![0.0; SCORE_BLOCK * m], vec![0.0; m]),
            |(ws, buf, block, dense_row), (chunk, flags)| {
                if stop.is_some_and(|stop| stop.load(Ordering::Relaxed)) {
                    return Ok(None);
                }
                let mut sums = [0.0f64; 3]; // Σ c L, Σ dual, Σ ⟨a_i, s_i⟩
                let (mut classes, mut lens) = (Vec::new(), Vec::with_capacity(flags.len()));
                let start = chunk * GAP_CHUNK;
                for (lo, flags) in (start..).step_by(SCORE_BLOCK).zip(flags.chunks_mut(SCORE_BLOCK)) {
                    let rows = lo..lo + flags.len();
                    model.scores_block(rows.clone(), a.dense().unwrap_or(&[]), &mut block[..flags.len() * m], buf);
                    for ((i, flag), s) in rows.zip(flags.iter_mut()).zip(block.chunks_exact(m)) {
                        let c = ex.c[i];
                        let before = classes.len();
                        *flag = false;
                        if c > 0.0 {
                            let ai = a.row(i, m, dense_row);
                            let labels = ex.labels(i);
                            let li = loss.primal(s, labels, ws)?;
                            sums[0] += c * li;
                            sums[1] += loss.dual(ai, labels, c);
                            sums[2] += crate::linalg::dot(ai, s);
                            *flag = li > 0.0 || ai.iter().any(|&v| v != 0.0);
                            // A list longer than m/2 saves little scoring and costs memory
                            // (at most a quarter of A's this way): use all classes then.
                            if *flag
                                && shrink_classes
                                && (!loss.active_classes(s, model.sq_norm(i), labels, c, ai, &mut classes, ws)?
                                    || 2 * (classes.len() - before) > m)
                            {
                                classes.truncate(before);
                            }
                        }
                        lens.push((classes.len() - before) as u32);
                    }
                }
                Ok(Some((sums, classes, lens)))
            },
        )
        .collect();
    let mut total = [0.0f64; 3];
    active.classes.clear();
    active.starts.clear();
    active.starts.push(0);
    for part in parts {
        let Some((sums, classes, lens)) = part? else {
            return Ok(None);
        };
        total.iter_mut().zip(sums).for_each(|(t, p)| *t += p);
        active.classes.extend_from_slice(&classes);
        for len in lens {
            let last = *active.starts.last().expect("starts begins with 0");
            active.starts.push(last + len as usize);
        }
    }
    Ok(Some(total))
}

#[cfg(test)]
mod tests {
    use super::Examples;

    /// The weights are the core's to check (the bindings checked them finite before).
    #[test]
    fn weights_must_be_finite_and_nonnegative() {
        let y = [0, 1, 2];
        assert!(Examples::new(&y, &[1.0, 0.0, 2.0]).check(3, 3, false).is_ok());
        for bad in [f64::NAN, f64::INFINITY, -1.0] {
            let err = Examples::new(&y, &[1.0, bad, 2.0]).check(3, 3, false).unwrap_err().to_string();
            assert!(
                err.starts_with("c: C times the sample and class weights must be finite") && err.ends_with("(entry 1)")
            );
        }
        let err = Examples::new(&y, &[0.0; 3]).check(3, 3, false).unwrap_err().to_string();
        assert!(err.starts_with("X: no example with a positive weight"), "{err}");
        assert!(Examples::new(&y, &[1.0; 3]).check(3, 2, false).unwrap_err().to_string().starts_with("y: label 2"));
    }
}
