//! A Prox-SDCA problem instance: labels, per-example weights, the dual matrix A, and
//! the duality-gap evaluation shared by the serial and the parallel loops.

use rayon::prelude::*;

use super::loss::{LossWorkspace, SdcaLoss};
use super::model::ScoreModel;
use crate::data::RowBuf;
use crate::{Error, Result};

/// Labels and weights c_i = C · sample_weight_i · class_weight_{y_i} (c_i = 0 drops
/// example i).
#[derive(Debug, Clone)]
pub struct Examples<'a> {
    pub y: &'a [usize],
    pub c: &'a [f64],
}

impl Examples<'_> {
    pub(crate) fn check(&self, n: usize, m: usize) -> Result<()> {
        if self.y.len() != n {
            return Err(Error::input("y", format!("has {} labels for {n} examples", self.y.len())));
        }
        if self.c.len() != n {
            return Err(Error::input("sample_weight", format!("has {} weights for {n} examples", self.c.len())));
        }
        if let Some(&bad) = self.y.iter().find(|&&y| y >= m) {
            return Err(Error::input("y", format!("label {bad} out of range for {m} classes")));
        }
        if self.c.iter().any(|c| !(c.is_finite() && *c >= 0.0)) {
            return Err(Error::input("sample_weight", "weights times C must be finite and >= 0"));
        }
        if n == 0 || self.c.iter().all(|&c| c == 0.0) {
            return Err(Error::input("X", "no example with a positive weight"));
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
    /// (P − D) / max(|P|, |D|), 0 when both are 0 (the zero model is then optimal).
    pub fn relative_gap(&self) -> f64 {
        let scale = self.primal.abs().max(self.dual.abs());
        if scale == 0.0 {
            0.0
        } else {
            (self.primal - self.dual) / scale
        }
    }
}

/// Rows per parallel task in the gap pass. Fixed (not left to work stealing) and the
/// partial sums added in order, so the value does not depend on the thread count.
const GAP_CHUNK: usize = 256;

/// P = ½‖W‖² + Σ c_i L_i and D = Σ dual_i − ½‖W‖², on all threads of the current pool.
///
/// Also marks in `active` the examples worth visiting in the next epochs: all but
/// those with a_i = 0 and zero loss, whose exact step is (almost always) a_i = 0 again.
/// Skipping them is LIBLINEAR's "shrinking"; it never affects correctness because every
/// gap check evaluates all examples and re-activates any that became violated.
pub fn objectives<M: ScoreModel, L: SdcaLoss + ?Sized>(
    model: &M,
    loss: &L,
    ex: &Examples,
    a: &[f64],
    active: &mut [bool],
) -> Result<Objectives> {
    let (n, m) = (model.n_rows(), model.n_classes());
    let parts: Vec<Result<[f64; 3]>> = active
        .par_chunks_mut(GAP_CHUNK)
        .enumerate()
        .map_init(
            || (LossWorkspace::new(), RowBuf::new(), vec![0.0; m]),
            |(ws, buf, s), (chunk, flags)| {
                let mut sums = [0.0f64; 3]; // Σ c L, Σ dual, Σ ⟨a_i, s_i⟩
                let start = chunk * GAP_CHUNK;
                for (i, flag) in (start..(start + GAP_CHUNK).min(n)).zip(flags.iter_mut()) {
                    let c = ex.c[i];
                    *flag = false;
                    if c == 0.0 {
                        continue;
                    }
                    let ai = &a[i * m..(i + 1) * m];
                    model.scores(i, a, s, buf);
                    let li = loss.primal(s, ex.y[i], ws)?;
                    sums[0] += c * li;
                    sums[1] += loss.dual(ai, ex.y[i], c);
                    sums[2] += crate::linalg::dot(ai, s);
                    *flag = li > 0.0 || ai.iter().any(|&v| v != 0.0);
                }
                Ok(sums)
            },
        )
        .collect();
    let mut total = [0.0f64; 3];
    for part in parts {
        let part = part?;
        total.iter_mut().zip(part).for_each(|(t, p)| *t += p);
    }
    let half_w2 = 0.5 * model.sq_norm_w(total[2]);
    Ok(Objectives { primal: half_w2 + total[0], dual: total[1] - half_w2 })
}
