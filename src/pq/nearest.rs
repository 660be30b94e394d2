//! Nearest-centroid search in one sub-space, for encoding and k-means's assignments.
//!
//! ‖x − c‖² = ‖x‖² − 2·x·c + ‖c‖², so the nearest centroid minimises ½‖c‖² − x·c: with
//! the centroids stored transposed (dsub × ksub), that is ksub values built by dsub
//! passes of `value[c] −= x_t · C[t, c]` over contiguous memory — vector code — and a
//! vectorized first-argmin, instead of ksub short scalar distance loops. The expansion
//! rounds differently from the direct distance (by ~1e-16 of ‖c‖²), so of two centroids
//! at equal distance up to that rounding either may be chosen.

use crate::vector_code::widest_vector_code;

/// One sub-space's centroids, prepared for [`CentroidTable::nearest`].
#[derive(Debug, Clone)]
pub(super) struct CentroidTable {
    ksub: usize,
    dsub: usize,
    /// C transposed: `transposed[t · ksub + c] = C[c, t]`.
    transposed: Vec<f64>,
    /// ½‖c‖².
    half_norms: Vec<f64>,
}

impl CentroidTable {
    /// From centroids in row-major order (ksub × dsub).
    pub(super) fn new(centroids: &[f64], dsub: usize) -> Self {
        let ksub = centroids.len() / dsub;
        let mut transposed = vec![0.0; ksub * dsub];
        for (c, row) in centroids.chunks_exact(dsub).enumerate() {
            for (t, &v) in row.iter().enumerate() {
                transposed[t * ksub + c] = v;
            }
        }
        let half_norms = centroids.chunks_exact(dsub).map(|row| 0.5 * row.iter().map(|v| v * v).sum::<f64>()).collect();
        Self { ksub, dsub, transposed, half_norms }
    }

    /// The index of the centroid nearest to `x` (ties to the smaller index); `scratch`
    /// holds ksub values.
    pub(super) fn nearest(&self, x: &[f64], scratch: &mut [f64]) -> usize {
        debug_assert_eq!(x.len(), self.dsub);
        nearest_in(&self.transposed, &self.half_norms, x, &mut scratch[..self.ksub])
    }
}

widest_vector_code! {
    /// argmin over c of half_norms[c] − Σ_t x_t · transposed[t·ksub + c].
    fn nearest_in(transposed: &[f64], half_norms: &[f64], x: &[f64], value: &mut [f64]) -> usize {
        let ksub = value.len();
        value.copy_from_slice(&half_norms[..ksub]);
        // Chunks of CHUNK centroids stay in registers over all t (one load per centroid
        // coordinate instead of a load and a store of the value as well).
        let full = ksub - ksub % CHUNK;
        for c0 in (0..full).step_by(CHUNK) {
            let mut acc: [f64; CHUNK] = value[c0..c0 + CHUNK].try_into().expect("a full chunk");
            for (t, &xt) in x.iter().enumerate() {
                let column: &[f64; CHUNK] = transposed[t * ksub + c0..t * ksub + c0 + CHUNK].try_into().expect("a full chunk");
                for j in 0..CHUNK {
                    acc[j] -= xt * column[j];
                }
            }
            value[c0..c0 + CHUNK].copy_from_slice(&acc);
        }
        for (t, &xt) in x.iter().enumerate() {
            let column = &transposed[t * ksub + full..(t + 1) * ksub];
            for (v, &c) in value[full..].iter_mut().zip(column) {
                *v -= xt * c;
            }
        }
        first_smallest(value)
    }
}

/// Lanes of the argmin.
const LANES: usize = 8;

/// Centroids whose values are accumulated in registers together (4 AVX-512 registers).
const CHUNK: usize = 32;

/// The first index of the smallest value (a running minimum per lane with its index kept
/// as f64, so every select is between f64 vectors; then the lanes merged).
#[inline(always)]
fn first_smallest(values: &[f64]) -> usize {
    let mut lane_min = [f64::INFINITY; LANES];
    let mut lane_at = [f64::INFINITY; LANES];
    let mut at: [f64; LANES] = std::array::from_fn(|j| j as f64);
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for j in 0..LANES {
            let take = chunk[j] < lane_min[j];
            lane_min[j] = if take { chunk[j] } else { lane_min[j] };
            lane_at[j] = if take { at[j] } else { lane_at[j] };
            at[j] += LANES as f64;
        }
    }
    let body = values.len() - tail.len();
    let mut best = (f64::INFINITY, usize::MAX);
    let candidates = lane_min.iter().zip(&lane_at).filter(|(_, &a)| a.is_finite()).map(|(&v, &a)| (v, a as usize));
    for (v, i) in candidates.chain(tail.iter().enumerate().map(|(i, &v)| (v, body + i))) {
        if v < best.0 || (v == best.0 && i < best.1) {
            best = (v, i);
        }
    }
    // Only NaN values (never from finite data) leave no candidate.
    if best.1 == usize::MAX {
        0
    } else {
        best.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The same centroid as the direct distances, up to rounding at near-ties, for
    /// sizes that are and are not multiples of the lanes, and the first of exact ties.
    #[test]
    fn nearest_matches_direct_distances() {
        let mut rng = SplitMix64::new(8);
        for &(ksub, dsub) in &[(256, 8), (16, 3), (13, 5), (2, 1)] {
            let centroids: Vec<f64> = (0..ksub * dsub).map(|_| rng.next_f64()).collect();
            let table = CentroidTable::new(&centroids, dsub);
            let mut scratch = vec![0.0; ksub];
            for _ in 0..200 {
                let x: Vec<f64> = (0..dsub).map(|_| rng.next_f64()).collect();
                let dist = |c: usize| -> f64 { x.iter().zip(&centroids[c * dsub..(c + 1) * dsub]).map(|(a, b)| (a - b) * (a - b)).sum() };
                let chosen = table.nearest(&x, &mut scratch);
                let best = (0..ksub).map(dist).fold(f64::INFINITY, f64::min);
                assert!(dist(chosen) <= best + 1e-12, "ksub {ksub}: {} vs {best}", dist(chosen));
            }
        }
        // Exact ties: duplicated centroids go to the smaller index.
        let centroids = [1.0, 0.0, 1.0, 0.0, 0.5, 0.5];
        let table = CentroidTable::new(&centroids, 2);
        assert_eq!(table.nearest(&[0.9, 0.1], &mut [0.0; 3]), 0);
    }
}
