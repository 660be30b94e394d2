//! Lloyd's k-means on the points of one sub-space.
//!
//! Problem: min over centroids c_1..c_k and assignments a(i) of E = Σ_i ‖x_i − c_a(i)‖².
//! Each iteration assigns every point to its nearest centroid (ties to the smaller
//! index), records E, and moves every centroid to the mean of its points. A centroid
//! left without points is moved onto the point farthest from its own centroid (one point
//! per empty centroid, farthest first), as faiss does in spirit: that point's error
//! drops to 0 and no other point's error grows, so E never increases from one
//! assignment to the next (tested). Start: k distinct points drawn at random (seeded),
//! faiss's initialisation.

use std::sync::atomic::{AtomicBool, Ordering};

use super::nearest::CentroidTable;
use crate::rng::SplitMix64;

/// Points assigned between two looks at the stop flag: a few milliseconds of work with
/// 256 centroids, so that Ctrl-C is seen promptly however large the sample is.
const POLL_POINTS: usize = 4096;

/// Squared Euclidean distance of two points of the same dimension.
#[inline]
fn distance2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// k-means of `points` (n × dim, row-major, n ≥ k): the centroids (k × dim) and the
/// error E after each of the `n_iter` assignment steps; None as soon as `stop` is
/// raised (polled every [`POLL_POINTS`] points).
pub(super) fn kmeans(
    points: &[f64],
    dim: usize,
    k: usize,
    n_iter: usize,
    seed: u64,
    stop: Option<&AtomicBool>,
) -> Option<(Vec<f64>, Vec<f64>)> {
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let n = points.len() / dim;
    debug_assert!(n >= k && k >= 1);
    let mut rng = SplitMix64::new(seed);
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    let mut centroids: Vec<f64> =
        order[..k].iter().flat_map(|&i| points[i * dim..(i + 1) * dim].iter().copied()).collect();
    let mut assignment = vec![0usize; n];
    let mut distance = vec![0.0f64; n];
    // Grown as the steps run: reserving n_iter up front aborts the process (allocation
    // failure is not a panic) when a caller asks for, say, 2⁴⁰ steps.
    let mut errors = Vec::with_capacity(n_iter.min(1 << 12));
    let mut sums = vec![0.0f64; k * dim];
    let mut counts = vec![0usize; k];
    for _ in 0..n_iter {
        let table = CentroidTable::new(&centroids, dim);
        let mut scratch = table.scratch();
        let mut error = 0.0;
        for (i, x) in points.chunks_exact(dim).enumerate() {
            if i % POLL_POINTS == 0 && stopped() {
                return None;
            }
            let c = table.nearest(x, &mut scratch);
            let d = distance2(x, &centroids[c * dim..(c + 1) * dim]);
            assignment[i] = c;
            distance[i] = d;
            error += d;
        }
        errors.push(error);
        sums.iter_mut().for_each(|s| *s = 0.0);
        counts.iter_mut().for_each(|c| *c = 0);
        for (x, &c) in points.chunks_exact(dim).zip(&assignment) {
            counts[c] += 1;
            sums[c * dim..(c + 1) * dim].iter_mut().zip(x).for_each(|(s, &v)| *s += v);
        }
        let empty: Vec<usize> = (0..k).filter(|&c| counts[c] == 0).collect();
        for c in (0..k).filter(|&c| counts[c] > 0) {
            let inv = 1.0 / counts[c] as f64;
            centroids[c * dim..(c + 1) * dim]
                .iter_mut()
                .zip(&sums[c * dim..(c + 1) * dim])
                .for_each(|(m, &s)| *m = s * inv);
        }
        if !empty.is_empty() {
            // The farthest points, one per empty centroid (ties to the smaller index).
            let mut far: Vec<usize> = (0..n).collect();
            far.sort_by(|&a, &b| distance[b].total_cmp(&distance[a]).then(a.cmp(&b)));
            for (&c, &i) in empty.iter().zip(&far) {
                if distance[i] > 0.0 {
                    centroids[c * dim..(c + 1) * dim].copy_from_slice(&points[i * dim..(i + 1) * dim]);
                }
            }
        }
    }
    Some((centroids, errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// E never increases (random points, many seeds), and two separated clusters are
    /// found from every start, including two starting centroids in the same cluster.
    #[test]
    fn error_decreases_and_separated_clusters_are_found() {
        let mut rng = SplitMix64::new(3);
        let (k, dim) = (8, 3);
        let points: Vec<f64> = (0..400 * dim).map(|_| rng.next_f64()).collect();
        for seed in 0..20 {
            let (centroids, errors) = kmeans(&points, dim, k, 30, seed, None).unwrap();
            assert!(errors.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)), "seed {seed}: {errors:?}");
            assert_eq!(centroids.len(), k * dim);
        }
        let two: Vec<f64> = (0..40).map(|i| if i < 20 { 0.01 * i as f64 } else { 10.0 + 0.01 * i as f64 }).collect();
        let scatter = |lo: usize, hi: usize| {
            let mean = two[lo..hi].iter().sum::<f64>() / (hi - lo) as f64;
            two[lo..hi].iter().map(|x| (x - mean).powi(2)).sum::<f64>()
        };
        let optimum = scatter(0, 20) + scatter(20, 40);
        for seed in 0..20 {
            let (_, errors) = kmeans(&two, 1, 2, 10, seed, None).unwrap();
            assert!((errors.last().unwrap() - optimum).abs() <= 1e-9 * optimum, "seed {seed}: {errors:?} vs {optimum}");
        }
    }

    /// With many duplicates, empty clusters are re-seeded without raising E.
    #[test]
    fn empty_clusters_are_reseeded() {
        let mut points = vec![0.0; 40];
        points.extend((0..10).map(|i| i as f64));
        let (centroids, errors) = kmeans(&points, 1, 6, 10, 1, None).unwrap();
        assert!(errors.windows(2).all(|w| w[1] <= w[0]), "{errors:?}");
        let mut used: Vec<f64> = centroids.clone();
        used.sort_by(f64::total_cmp);
        used.dedup();
        assert!(used.len() >= 5, "{centroids:?}");
    }

    /// A raised stop flag ends the run at once, however many steps were asked for.
    #[test]
    fn a_raised_stop_flag_ends_the_run() {
        let points: Vec<f64> = (0..100).map(f64::from).collect();
        assert!(kmeans(&points, 1, 4, usize::MAX, 0, Some(&AtomicBool::new(true))).is_none());
        assert!(kmeans(&points, 1, 4, 3, 0, Some(&AtomicBool::new(false))).is_some());
    }
}
