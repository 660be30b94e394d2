//! The top singular pair of −∇R̃(W) (d × m), the steepest atom of rank-one descent
//! (Harchaoui et al. §4.1, step 1 of Algorithm R1D), by block subspace iteration on
//! AᵀA with Rayleigh–Ritz, warm-started from the previous call's Ritz vectors; a full
//! SVD of A is never formed.
//!
//! Why a block: near the optimum the top singular values of −∇R̃ cluster at λ1, one per
//! atom of W ((C2) makes every atom's value λ1), and single-vector power iteration then
//! converges at the rate σ₂/σ₁ ≈ 1 and stalls short of a direction that still descends.
//! Iterating a block of b > rank(W) vectors converges at the rate (σ_{b+1}/σ₁)², with
//! σ_{b+1} well below the cluster.
//!
//! One iteration, V (m × b) orthonormal: Z = Aᵀ(A V) (2dmb), the b × b Rayleigh quotient
//! H = VᵀZ diagonalised by cyclic Jacobi, Ritz vectors V y_k with values λ_k, and the next
//! V = orth(Z y). Stop when the top Ritz pair's residual ‖AᵀA r − λ r‖ ≤ tol·λ (then λ is
//! within tol·λ of an eigenvalue of AᵀA), and σ = √λ, v = r, u = A v/σ.

use crate::rng::SplitMix64;
use crate::{Error, Result};

/// σ, u (d), v (m), the Ritz vectors (b × m, best first: the next call's start) and the
/// iterations used.
#[derive(Debug, Clone, PartialEq)]
pub struct SingularPair {
    pub sigma: f64,
    pub u: Vec<f64>,
    pub v: Vec<f64>,
    pub ritz: Vec<Vec<f64>>,
    pub iterations: usize,
}

fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

/// Orthonormalises `vectors` in order (modified Gram–Schmidt, twice); a vector that
/// vanishes against the previous ones is replaced by a random one.
fn orthonormalize(vectors: &mut [Vec<f64>], rng: &mut SplitMix64) {
    for k in 0..vectors.len() {
        for attempt in 0..4 {
            for _ in 0..2 {
                for j in 0..k {
                    let (done, rest) = vectors.split_at_mut(k);
                    let c = dot(&done[j], &rest[0]);
                    rest[0].iter_mut().zip(&done[j]).for_each(|(x, &q)| *x -= c * q);
                }
            }
            let norm = dot(&vectors[k], &vectors[k]).sqrt();
            if norm > 1e-10 || attempt == 3 {
                vectors[k].iter_mut().for_each(|x| *x /= norm.max(f64::MIN_POSITIVE));
                break;
            }
            vectors[k].iter_mut().for_each(|x| *x = rng.next_f64() - 0.5);
        }
    }
}

/// Eigenvalues (descending) and eigenvectors (columns of the returned row-major b × b) of
/// the symmetric `h` by cyclic Jacobi rotations.
fn symmetric_eigen(mut h: Vec<f64>, b: usize) -> (Vec<f64>, Vec<f64>) {
    let mut q = vec![0.0; b * b];
    (0..b).for_each(|i| q[i * b + i] = 1.0);
    let scale = h.iter().map(|x| x * x).sum::<f64>().sqrt().max(f64::MIN_POSITIVE);
    for _sweep in 0..100 {
        let off: f64 = (0..b)
            .flat_map(|i| (0..b).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| h[i * b + j].powi(2))
            .sum();
        if off.sqrt() <= 1e-15 * scale {
            break;
        }
        for p in 0..b {
            for r in p + 1..b {
                let apr = h[p * b + r];
                if apr.abs() <= 1e-300 {
                    continue;
                }
                let theta = (h[r * b + r] - h[p * b + p]) / (2.0 * apr);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..b {
                    let (hkp, hkr) = (h[k * b + p], h[k * b + r]);
                    h[k * b + p] = c * hkp - s * hkr;
                    h[k * b + r] = s * hkp + c * hkr;
                }
                for k in 0..b {
                    let (hpk, hrk) = (h[p * b + k], h[r * b + k]);
                    h[p * b + k] = c * hpk - s * hrk;
                    h[r * b + k] = s * hpk + c * hrk;
                }
                for k in 0..b {
                    let (qkp, qkr) = (q[k * b + p], q[k * b + r]);
                    q[k * b + p] = c * qkp - s * qkr;
                    q[k * b + r] = s * qkp + c * qkr;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..b).collect();
    order.sort_by(|&i, &j| h[j * b + j].total_cmp(&h[i * b + i]));
    let values = order.iter().map(|&i| h[i * b + i]).collect();
    let vectors = (0..b * b).map(|idx| q[(idx / b) * b + order[idx % b]]).collect();
    (values, vectors)
}

/// The top singular pair of `a` (d × m, row-major) by subspace iteration with a block of
/// `block` vectors (at least 1, at most m), started from `start` (any number of m-vectors,
/// e.g. the previous Ritz vectors; random vectors fill the block).
pub fn top_singular_pair(
    a: &[f64],
    d: usize,
    m: usize,
    start: &[Vec<f64>],
    block: usize,
    tol: f64,
    max_iter: usize,
) -> Result<SingularPair> {
    if d == 0 || m == 0 || d.checked_mul(m) != Some(a.len()) {
        return Err(Error::input("A", format!("must hold {d} x {m} values, both positive")));
    }
    if start.iter().any(|v| v.len() != m || v.iter().any(|x| !x.is_finite())) {
        return Err(Error::input("start", format!("start vectors must hold {m} finite values")));
    }
    if a.iter().any(|v| !v.is_finite()) {
        return Err(Error::no_solution("power iteration", "the gradient has non-finite entries"));
    }
    // The iteration works with AᵀA, whose entries square A's: scaled to a largest entry
    // of 1, A of any magnitude (entries of 1e100 or 1e-200) neither overflows nor
    // underflows; σ scales back linearly.
    let scale = a.iter().fold(0.0f64, |s, v| s.max(v.abs()));
    let scaled: Vec<f64>;
    let a = if scale > 0.0 && scale != 1.0 {
        scaled = a.iter().map(|v| v / scale).collect();
        &scaled[..]
    } else {
        a
    };
    let b = block.clamp(1, m);
    let mut rng = SplitMix64::new(0x5eed);
    let mut basis: Vec<Vec<f64>> = start.iter().take(b).cloned().collect();
    while basis.len() < b {
        basis.push((0..m).map(|_| rng.next_f64() - 0.5).collect());
    }
    orthonormalize(&mut basis, &mut rng);
    let apply = |v: &[f64]| -> Vec<f64> {
        // AᵀA v
        let av: Vec<f64> = a.chunks_exact(m).map(|row| dot(row, v)).collect();
        let mut out = vec![0.0; m];
        for (&s, row) in av.iter().zip(a.chunks_exact(m)) {
            out.iter_mut().zip(row).for_each(|(o, &x)| *o += s * x);
        }
        out
    };
    let mut iterations = 0;
    let (lambda, ritz) = loop {
        iterations += 1;
        let images: Vec<Vec<f64>> = basis.iter().map(|v| apply(v)).collect();
        let mut h = vec![0.0; b * b];
        for i in 0..b {
            for j in 0..b {
                h[i * b + j] = 0.5 * (dot(&basis[i], &images[j]) + dot(&basis[j], &images[i]));
            }
        }
        let (values, y) = symmetric_eigen(h, b);
        let combine = |vs: &[Vec<f64>], k: usize| -> Vec<f64> {
            let mut out = vec![0.0; m];
            for (j, v) in vs.iter().enumerate() {
                out.iter_mut().zip(v).for_each(|(o, &x)| *o += y[j * b + k] * x);
            }
            out
        };
        let ritz: Vec<Vec<f64>> = (0..b).map(|k| combine(&basis, k)).collect();
        let top_image = combine(&images, 0);
        let lambda = values[0].max(0.0);
        let residual = top_image.iter().zip(&ritz[0]).map(|(&z, &r)| (z - lambda * r).powi(2)).sum::<f64>().sqrt();
        if residual <= tol * lambda || lambda == 0.0 || iterations >= max_iter.max(1) {
            break (lambda, ritz);
        }
        basis = (0..b).map(|k| combine(&images, k)).collect();
        orthonormalize(&mut basis, &mut rng);
    };
    let sigma = lambda.sqrt();
    let mut v = ritz[0].clone();
    let norm = dot(&v, &v).sqrt();
    v.iter_mut().for_each(|x| *x /= norm.max(f64::MIN_POSITIVE));
    let mut u: Vec<f64> = a.chunks_exact(m).map(|row| dot(row, &v)).collect();
    let u_norm = dot(&u, &u).sqrt();
    if u_norm > 0.0 {
        u.iter_mut().for_each(|x| *x /= u_norm);
    } else {
        u[0] = 1.0;
    }
    let sigma = if u_norm > 0.0 { u_norm } else { sigma };
    Ok(SingularPair { sigma: sigma * if scale > 0.0 { scale } else { 1.0 }, u, v, ritz, iterations })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_top_pair_of_a_known_spectrum() {
        // A = 3 a bᵀ + 1 c eᵀ with orthonormal a ⟂ c, b ⟂ e.
        let (d, m) = (6, 4);
        let s = 1.0 / 2f64.sqrt();
        let (a, c) = ([s, s, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
        let (b, e) = ([0.0, s, -s, 0.0], [1.0, 0.0, 0.0, 0.0]);
        let mat: Vec<f64> = (0..d * m).map(|idx| 3.0 * a[idx / m] * b[idx % m] + c[idx / m] * e[idx % m]).collect();
        for block in [1, 2, 4] {
            let pair = top_singular_pair(&mat, d, m, &[vec![1.0, 0.3, 0.2, 0.1]], block, 1e-13, 1000).unwrap();
            assert!((pair.sigma - 3.0).abs() < 1e-10, "{block}: {}", pair.sigma);
            let align = dot(&pair.u, &a) * dot(&pair.v, &b);
            assert!((align - 1.0).abs() < 1e-9);
        }
        assert_eq!(top_singular_pair(&vec![0.0; d * m], d, m, &[], 2, 1e-9, 10).unwrap().sigma, 0.0);
        // Entries whose squares overflow (or underflow): σ scales with them.
        for scale in [1e100, 1e-200] {
            let scaled: Vec<f64> = mat.iter().map(|v| v * scale).collect();
            let pair = top_singular_pair(&scaled, d, m, &[], 2, 1e-13, 1000).unwrap();
            assert!((pair.sigma / scale - 3.0).abs() < 1e-10, "{scale}: {}", pair.sigma);
        }
    }

    #[test]
    fn a_block_finds_the_top_value_behind_a_cluster() {
        // Singular values 1, 1, 1, 1.001 (a cluster at 1 as at R1D's optimum) plus small ones;
        // the start lies in the cluster's span.
        let (d, m) = (8, 6);
        let sv = [1.0, 1.0, 1.0, 1.001, 0.2, 0.1];
        let mat: Vec<f64> = (0..d * m).map(|idx| if idx / m == idx % m { sv[idx % m] } else { 0.0 }).collect();
        let start = vec![vec![1.0, 1.0, 1.0, 1e-6, 0.0, 0.0]];
        let pair = top_singular_pair(&mat, d, m, &start, 5, 1e-12, 10_000).unwrap();
        assert!((pair.sigma - 1.001).abs() < 1e-9, "{}", pair.sigma);
    }
}
