//! The Rankmax cross-entropy (k = 1) summed over all positive labels of one row, in
//! one sweep over the scores.
//!
//! The Rankmax paper trains on (example, label) pairs (§4, Table 1): an example x with
//! positive labels Y contributes Σ_{y∈Y} ℓ(z, y), where (eq. (15), margin η)
//!   ℓ(z, y) = −log Rankmax(z, y)_y = log(S_y / η),   S_y = Σ_i (z_i − T_y)_+,
//!   T_y = z_y − η,
//! and (eq. (16)) ∂ℓ/∂z_i = 1/S_y for every i in the support M_y = {i : z_i > T_y}
//! (y included), minus |M_y|/S_y at i = y. The gradient sums to zero.
//!
//! One call of the single-label loss per y costs O(n·|Y|). Here the thresholds are
//! sorted instead, T_(1) ≤ … ≤ T_(m), m = |Y|: score z_i lies in the supports of exactly
//! the c_i smallest thresholds, c_i = #{j : T_(j) < z_i}. Bucketing the scores by c_i
//! gives every S_(j) by a suffix recursion,
//!   S_(j) = S_(j+1) + N_(j+1)·(T_(j+1) − T_(j)) + Σ_{c_i = j} (z_i − T_(j)),
//!   N_(j) = N_(j+1) + #{i : c_i = j}  (= |M_(j)|),
//! in which every term is ≥ 0 (no cancellation however large the scores), and every
//! ∂L/∂z_i = Σ_{j ≤ c_i} 1/S_(j) by a prefix sum. A score at or below the smallest
//! threshold costs one comparison. The others find c_i through a uniform grid of 4m
//! cells over [T_(1), T_(m)] holding the count of thresholds below each cell's left
//! edge, then step over the (on average < 1) thresholds inside the cell: O(1) expected
//! per score instead of a binary search's chain of log₂ m dependent comparisons, which
//! cost more than the rest of the loss; a cell crowded with thresholds (an outlying
//! positive squeezes the others together) falls back to that binary search. Total
//! O(n + m log m) when the thresholds spread, O(n log m + m log m) at worst.
//!
//! At ties (z_i = T_y exactly) i is outside M_y, as in the single-label loss: one
//! element of the Clarke subdifferential.

use crate::real::Real;
use crate::{Error, Result};

/// Steps a score may walk from its grid cell before bisection takes over.
const MAX_WALK: usize = 8;

/// Scratch space of [`rankmax_loss_multilabel`], reusable across rows.
#[derive(Debug, Default, Clone)]
pub struct SweepWorkspace {
    thresholds: Vec<(f64, u32)>,
    grid: Vec<usize>,
    counts: Vec<usize>,
    excess: Vec<f64>,
    prefix: Vec<f64>,
    bucket: Vec<u32>,
}

impl SweepWorkspace {
    pub fn new() -> Self {
        Self::default()
    }
}

/// Returns Σ_{y∈labels} ℓ(z, y) for the k = 1 Rankmax cross-entropy with margin `eta`
/// and writes its gradient with respect to `z` into `grad`. Repeated labels count
/// once per occurrence (as repeated pairs would).
pub fn rankmax_loss_multilabel<T: Real>(
    z: &[T],
    labels: &[u32],
    eta: f64,
    grad: &mut [T],
    ws: &mut SweepWorkspace,
) -> Result<f64> {
    crate::projections::check_row(z, grad)?;
    if !(eta > 0.0 && eta.is_finite()) {
        return Err(Error::param("eta", format!("must be finite and > 0, got {eta}")));
    }
    let n = z.len();
    if labels.is_empty() {
        grad.iter_mut().for_each(|g| *g = T::from_f64(0.0));
        return Ok(0.0);
    }
    let thresholds = &mut ws.thresholds;
    thresholds.clear();
    for &y in labels {
        let zy = z.get(y as usize).ok_or_else(|| Error::param("y", format!("label {y} out of range [0, {n})")))?;
        thresholds.push((zy.to_f64() - eta, y));
    }
    thresholds.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let m = thresholds.len();
    let lowest = thresholds[0].0;

    let highest = thresholds[m - 1].0;

    // The grid: grid[g] = #{j : T_(j) < T_(1) + g·width}, g = 0..=cells.
    let cells = 4 * m;
    let span = highest - lowest;
    let scale = if span > 0.0 { cells as f64 / span } else { 0.0 };
    let grid = &mut ws.grid;
    grid.clear();
    let mut below = 0;
    for g in 0..=cells {
        let edge = lowest + g as f64 / scale;
        while below < m && thresholds[below].0 < edge {
            below += 1;
        }
        grid.push(if span > 0.0 { below } else { 0 });
    }

    // Bucket the scores: c_i and the excess over the bucket's own threshold.
    let (counts, excess, bucket) = (&mut ws.counts, &mut ws.excess, &mut ws.bucket);
    counts.clear();
    counts.resize(m + 1, 0);
    excess.clear();
    excess.resize(m + 1, 0.0);
    bucket.resize(n, 0);
    // Scores above every threshold (all of them early in training) sum in registers:
    // a shared bucket in memory would chain every add through a store and a load.
    let (mut top_count, mut top_excess) = (0usize, 0.0f64);
    for (i, &v) in z.iter().enumerate() {
        let v = v.to_f64();
        if v <= lowest {
            bucket[i] = 0;
            continue;
        }
        if v > highest {
            bucket[i] = m as u32;
            top_count += 1;
            top_excess += v - highest;
            continue;
        }
        if v.is_nan() {
            return Err(Error::input("z", "contains NaN (the model diverged: lower learning_rate)"));
        }
        // The cell's count is exact up to the thresholds inside the cell and the
        // rounding of the cell index; short walks make c = #{j : T_(j) < v} exact, and a
        // crowded cell (thresholds bunched by an outlier) falls back to bisection.
        let mut c = grid[(((v - lowest) * scale) as usize).min(cells)];
        let mut steps = 0;
        while c < m && thresholds[c].0 < v && steps < MAX_WALK {
            c += 1;
            steps += 1;
        }
        while c > 0 && thresholds[c - 1].0 >= v && steps < MAX_WALK {
            c -= 1;
            steps += 1;
        }
        if steps == MAX_WALK {
            c = thresholds.partition_point(|&(t, _)| t < v);
        }
        bucket[i] = c as u32;
        counts[c] += 1;
        excess[c] += v - thresholds[c - 1].0;
    }
    counts[m] += top_count;
    excess[m] += top_excess;

    // Suffix recursion for S_(j) and N_(j); excess[j] becomes S_(j), counts[j] N_(j).
    let (mut mass, mut members) = (0.0f64, 0usize);
    for j in (1..=m).rev() {
        if j < m {
            mass += members as f64 * (thresholds[j].0 - thresholds[j - 1].0);
        }
        mass += excess[j];
        members += counts[j];
        excess[j] = mass;
        counts[j] = members;
    }

    let prefix = &mut ws.prefix;
    prefix.clear();
    prefix.push(0.0);
    let mut loss = 0.0;
    for j in 1..=m {
        // S_(j) ≥ η > 0 in exact arithmetic (the label itself has excess η); rounding
        // of z_y − η can make it 0 for tiny η, and the caller rejects the non-finite loss.
        let s = excess[j];
        loss += (s / eta).ln();
        prefix.push(prefix[j - 1] + 1.0 / s);
    }
    // prefix[0] = 0: scores in no support get a zero gradient.
    for (g, &c) in grad.iter_mut().zip(bucket.iter()) {
        *g = T::from_f64(prefix[c as usize]);
    }
    for (j, &(_, y)) in thresholds.iter().enumerate() {
        let y = y as usize;
        grad[y] = T::from_f64(grad[y].to_f64() - counts[j + 1] as f64 / excess[j + 1]);
    }
    Ok(loss)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::rankmax_loss;
    use crate::projections::Workspace;
    use crate::rng::SplitMix64;

    /// The sweep equals the sum of the single-label losses (eq. (14)/(16)) over labels.
    fn check_against_single(z: &[f64], labels: &[u32], eta: f64) {
        let n = z.len();
        let mut grad = vec![0.0; n];
        let loss = rankmax_loss_multilabel(z, labels, eta, &mut grad, &mut SweepWorkspace::new()).unwrap();
        let (mut want, mut want_grad, mut g) = (0.0, vec![0.0; n], vec![0.0; n]);
        for &y in labels {
            want += rankmax_loss(z, y as usize, 1, eta, &mut g, &mut Workspace::new()).unwrap();
            want_grad.iter_mut().zip(&g).for_each(|(a, b)| *a += b);
        }
        let scale = 1.0 + want.abs();
        assert!((loss - want).abs() <= 1e-12 * scale, "{loss} vs {want}");
        for (a, b) in grad.iter().zip(&want_grad) {
            assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{grad:?} vs {want_grad:?}");
        }
        assert!(grad.iter().sum::<f64>().abs() < 1e-10 * labels.len() as f64);
    }

    #[test]
    fn equals_the_sum_of_single_label_losses() {
        let mut rng = SplitMix64::new(3);
        for trial in 0..200 {
            let n = 2 + rng.below(60);
            let spread = [0.1, 1.0, 10.0, 1e4][trial % 4];
            // Scores on a coarse grid too, so that ties and z_i = T_y occur.
            let z: Vec<f64> = (0..n)
                .map(|_| if trial % 3 == 0 { rng.below(7) as f64 * 0.5 } else { (rng.next_f64() - 0.5) * spread })
                .collect();
            let m = 1 + rng.below(n.min(12));
            let labels: Vec<u32> = (0..m).map(|_| rng.below(n) as u32).collect();
            for eta in [0.5, 1.0, 2.0] {
                check_against_single(&z, &labels, eta);
            }
        }
    }

    #[test]
    fn huge_scores_keep_the_masses_exact() {
        // Offsets of 1e12 would destroy Σz − N·T; the recursion only adds non-negative terms.
        let z: Vec<f64> = (0..50).map(|i| 1e12 + (i % 7) as f64 * 0.25).collect();
        check_against_single(&z, &[0, 3, 10, 49], 1.0);
    }

    #[test]
    fn an_outlying_positive_crowds_one_cell_and_bisection_takes_over() {
        // 40 positives within 1e-3 of each other and one 100 above them: the 40
        // thresholds share a grid cell of width ~0.6.
        let mut z: Vec<f64> = (0..300).map(|i| (i % 50) as f64 * 2e-5).collect();
        z[7] = 100.0;
        let labels: Vec<u32> = (0..40).chain([7]).collect();
        check_against_single(&z, &labels, 1.0);
    }

    #[test]
    fn nan_scores_raise_instead_of_indexing_out_of_bounds() {
        let z = [0.5f64, f64::NAN, 0.2, 0.7];
        let mut g = [0.0; 4];
        let err = rankmax_loss_multilabel(&z, &[0, 3], 1.0, &mut g, &mut SweepWorkspace::new()).unwrap_err();
        assert!(err.to_string().contains("NaN"), "{err}");
    }

    #[test]
    fn no_labels_is_zero_and_bad_labels_raise() {
        let z = [1.0f32, 2.0, 3.0];
        let mut g = [9.0f32; 3];
        assert_eq!(rankmax_loss_multilabel(&z, &[], 1.0, &mut g, &mut SweepWorkspace::new()).unwrap(), 0.0);
        assert_eq!(g, [0.0; 3]);
        assert!(rankmax_loss_multilabel(&z, &[3], 1.0, &mut g, &mut SweepWorkspace::new()).is_err());
        assert!(rankmax_loss_multilabel(&z, &[0], 0.0, &mut g, &mut SweepWorkspace::new()).is_err());
    }
}
