//! A Prox-SDCA problem instance: labels, per-example weights, the dual matrix A, and
//! the duality-gap evaluation shared by the serial and the parallel loops.

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::loss::{LossWorkspace, SdcaLoss};
use super::model::ScoreModel;
use crate::data::RowBuf;
use crate::vector_code::{prefetch_entry, prefetch_lines};
use crate::{Error, Result};

/// Labels and weights c_i = C · sample_weight_i · class_weight_{y_i} (c_i = 0 drops
/// example i).
#[derive(Debug, Clone)]
pub struct Examples<'a> {
    pub y: &'a [usize],
    pub c: &'a [f64],
}

impl Examples<'_> {
    /// Starts loading example i's label and weight (a hint).
    pub(crate) fn prefetch(&self, i: usize) {
        prefetch_entry(self.y, i);
        prefetch_entry(self.c, i);
    }

    /// Shapes, labels and weights of a whole problem, which needs an example with c_i > 0.
    pub(crate) fn check(&self, n: usize, m: usize) -> Result<()> {
        self.check_entries(n, m)?;
        if n == 0 || self.c.iter().all(|&c| c == 0.0) {
            return Err(Error::input("X", "no example with a positive weight"));
        }
        Ok(())
    }

    /// Shapes, labels and weights, for any part of a problem (possibly empty).
    pub(crate) fn check_entries(&self, n: usize, m: usize) -> Result<()> {
        if self.y.len() != n {
            return Err(Error::input("y", format!("has {} labels for {n} examples", self.y.len())));
        }
        if self.c.len() != n {
            return Err(Error::input("c", format!("has {} weights for {n} examples", self.c.len())));
        }
        if let Some(&bad) = self.y.iter().find(|&&y| y >= m) {
            return Err(Error::input("y", format!("label {bad} out of range for {m} classes")));
        }
        if let Some(at) = self.c.iter().position(|c| !(c.is_finite() && *c >= 0.0)) {
            let why = "C times the sample and class weights must be finite and >= 0";
            return Err(Error::input("c", format!("{why}, got {} (entry {at})", self.c[at])));
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
    /// means all of them (y is always listed, so a real list is never empty).
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
    /// label, as a step relies on.
    pub fn from_parts(
        examples: Vec<bool>,
        starts: Vec<usize>,
        classes: Vec<u32>,
        y: &[usize],
        m: usize,
    ) -> Result<Self> {
        let n = examples.len();
        let bad = |why: &str| Err(Error::input("active", why.to_string()));
        if y.len() != n || starts.len() != n + 1 || starts[0] != 0 || starts[n] != classes.len() {
            return bad("examples, starts and classes do not fit together");
        }
        for i in 0..n {
            let Some(list) = classes.get(starts[i]..starts[i + 1]) else { return bad("starts must not decrease") };
            let sorted = list.windows(2).all(|w| w[0] < w[1]) && list.iter().all(|&c| (c as usize) < m);
            let holds_label = sorted && list.binary_search(&(y[i] as u32)).is_ok();
            if !list.is_empty() && !holds_label {
                return bad("a class list must be ascending, below the class count and hold its label");
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
pub fn objectives<M: ScoreModel, L: SdcaLoss + ?Sized>(
    model: &M,
    loss: &L,
    ex: &Examples,
    a: &[f64],
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
pub(crate) fn objective_terms<M: ScoreModel, L: SdcaLoss + ?Sized>(
    model: &M,
    loss: &L,
    ex: &Examples,
    a: &[f64],
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
            || (LossWorkspace::new(), RowBuf::new(), vec![0.0; SCORE_BLOCK * m]),
            |(ws, buf, block), (chunk, flags)| {
                if stop.is_some_and(|stop| stop.load(Ordering::Relaxed)) {
                    return Ok(None);
                }
                let mut sums = [0.0f64; 3]; // Σ c L, Σ dual, Σ ⟨a_i, s_i⟩
                let (mut classes, mut lens) = (Vec::new(), Vec::with_capacity(flags.len()));
                let start = chunk * GAP_CHUNK;
                for (lo, flags) in (start..).step_by(SCORE_BLOCK).zip(flags.chunks_mut(SCORE_BLOCK)) {
                    let rows = lo..lo + flags.len();
                    model.scores_block(rows.clone(), a, &mut block[..flags.len() * m], buf);
                    for ((i, flag), s) in rows.zip(flags.iter_mut()).zip(block.chunks_exact(m)) {
                        let c = ex.c[i];
                        let before = classes.len();
                        *flag = false;
                        if c > 0.0 {
                            let ai = &a[i * m..(i + 1) * m];
                            let li = loss.primal(s, ex.y[i], ws)?;
                            sums[0] += c * li;
                            sums[1] += loss.dual(ai, ex.y[i], c);
                            sums[2] += crate::linalg::dot(ai, s);
                            *flag = li > 0.0 || ai.iter().any(|&v| v != 0.0);
                            // A list longer than m/2 saves little scoring and costs memory
                            // (at most a quarter of A's this way): use all classes then.
                            if *flag
                                && shrink_classes
                                && (!loss.active_classes(s, model.sq_norm(i), ex.y[i], c, ai, &mut classes, ws)?
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
        assert!(Examples { y: &y, c: &[1.0, 0.0, 2.0] }.check(3, 3).is_ok());
        for bad in [f64::NAN, f64::INFINITY, -1.0] {
            let err = Examples { y: &y, c: &[1.0, bad, 2.0] }.check(3, 3).unwrap_err().to_string();
            assert!(
                err.starts_with("c: C times the sample and class weights must be finite") && err.ends_with("(entry 1)")
            );
        }
        let err = Examples { y: &y, c: &[0.0; 3] }.check(3, 3).unwrap_err().to_string();
        assert!(err.starts_with("X: no example with a positive weight"), "{err}");
        assert!(Examples { y: &y, c: &[1.0; 3] }.check(3, 2).unwrap_err().to_string().starts_with("y: label 2"));
    }
}
