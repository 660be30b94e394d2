//! The dense kernels every solver's inner loop spends its time in: ⟨x, y⟩, the same for
//! one x against four vectors at once, and y += α·x, over `f64`.
//!
//! Wheels are built for baseline x86-64 (SSE2), so on CPUs with AVX2 and FMA we switch
//! at run time to 256-bit fused versions. [`dot4`] is a 1 × 4 register block: x is
//! loaded once per four fused multiply-adds, which lifts score and Gram computations
//! from load-bound towards the FMA rate (about 1.6× [`dot`] per entry).
//!
//! Every lane of [`dot4`] is bit-identical to [`dot`]: both use one fixed summation
//! order (two 4-lane accumulators over chunks of 8 — even and odd halves — added
//! lane-wise, then ((l0 + l1) + (l2 + l3)), then the scalar tail in order), and the
//! choice between the AVX2 and the portable version is made once per process. So a
//! score does not depend on whether it was computed alone or in a block of four, on a
//! class subset or the full set, in the cache or not.

/// ⟨x, y⟩ (equal lengths).
#[inline]
pub fn dot(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA; lengths are equal (asserted).
            return unsafe { x86::dot(x, y) };
        }
    }
    portable::dot(x, y)
}

/// [⟨x, y_0⟩, …, ⟨x, y_3⟩], each bit-identical to [`dot`] (equal lengths).
#[inline]
pub fn dot4(x: &[f64], ys: [&[f64]; 4]) -> [f64; 4] {
    assert!(ys.iter().all(|y| y.len() == x.len()));
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA; lengths are equal (asserted).
            return unsafe { x86::dot4(x, ys) };
        }
    }
    ys.map(|y| portable::dot(x, y))
}

/// y += alpha · x (equal lengths).
#[inline]
pub fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    assert_eq!(x.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    {
        if x.len() >= 8 && has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA; lengths are equal (asserted).
            return unsafe { x86::axpy(alpha, x, y) };
        }
    }
    y.iter_mut().zip(x).for_each(|(yj, &xj)| *yj += alpha * xj);
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx2_fma() -> bool {
    // std caches the CPUID result: this is an atomic load after the first call.
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

mod portable {
    /// The AVX2 order with scalar lanes (eight accumulators), which SSE2 vectorises.
    pub(super) fn dot(x: &[f64], y: &[f64]) -> f64 {
        let split = x.len() - x.len() % 8;
        let mut acc = [0.0f64; 8];
        for (cx, cy) in x[..split].chunks_exact(8).zip(y[..split].chunks_exact(8)) {
            for l in 0..8 {
                acc[l] += cx[l] * cy[l];
            }
        }
        let lanes = [acc[0] + acc[4], acc[1] + acc[5], acc[2] + acc[6], acc[3] + acc[7]];
        let mut s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
        for (a, b) in x[split..].iter().zip(&y[split..]) {
            s += a * b;
        }
        s
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// (lanes of a + b) summed as (l0 + l1) + (l2 + l3).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn reduce(a: __m256d, b: __m256d) -> f64 {
        let mut l = [0.0f64; 4];
        _mm256_storeu_pd(l.as_mut_ptr(), _mm256_add_pd(a, b));
        (l[0] + l[1]) + (l[2] + l[3])
    }

    /// Callers guarantee `y.len() == x.len()`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot(x: &[f64], y: &[f64]) -> f64 {
        let n = x.len();
        let (px, py) = (x.as_ptr(), y.as_ptr());
        let (mut a, mut b) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        let mut i = 0;
        while i + 8 <= n {
            a = _mm256_fmadd_pd(_mm256_loadu_pd(px.add(i)), _mm256_loadu_pd(py.add(i)), a);
            b = _mm256_fmadd_pd(_mm256_loadu_pd(px.add(i + 4)), _mm256_loadu_pd(py.add(i + 4)), b);
            i += 8;
        }
        let mut s = reduce(a, b);
        while i < n {
            s += *px.add(i) * *py.add(i);
            i += 1;
        }
        s
    }

    /// Callers guarantee every `ys[k].len() == x.len()`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot4(x: &[f64], ys: [&[f64]; 4]) -> [f64; 4] {
        let n = x.len();
        let px = x.as_ptr();
        let py = ys.map(|y| y.as_ptr());
        let mut a = [_mm256_setzero_pd(); 4];
        let mut b = [_mm256_setzero_pd(); 4];
        let mut i = 0;
        while i + 8 <= n {
            let x0 = _mm256_loadu_pd(px.add(i));
            let x1 = _mm256_loadu_pd(px.add(i + 4));
            for k in 0..4 {
                a[k] = _mm256_fmadd_pd(x0, _mm256_loadu_pd(py[k].add(i)), a[k]);
                b[k] = _mm256_fmadd_pd(x1, _mm256_loadu_pd(py[k].add(i + 4)), b[k]);
            }
            i += 8;
        }
        let mut s = [0.0; 4];
        for k in 0..4 {
            s[k] = reduce(a[k], b[k]);
            for t in i..n {
                s[k] += *px.add(t) * *py[k].add(t);
            }
        }
        s
    }

    /// Callers guarantee `y.len() == x.len()`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
        let n = x.len();
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        let a = _mm256_set1_pd(alpha);
        let mut i = 0;
        while i + 4 <= n {
            let v = _mm256_fmadd_pd(a, _mm256_loadu_pd(px.add(i)), _mm256_loadu_pd(py.add(i)));
            _mm256_storeu_pd(py.add(i), v);
            i += 4;
        }
        while i < n {
            *py.add(i) += alpha * *px.add(i);
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot4_lanes_equal_dot_bit_for_bit() {
        for n in [0, 1, 7, 8, 9, 16, 23, 100] {
            let v = |s: f64| (0..n).map(|t| ((t as f64 + s) * 0.731).sin()).collect::<Vec<f64>>();
            let (x, y0, y1, y2, y3) = (v(0.0), v(1.0), v(2.0), v(3.0), v(4.0));
            let four = dot4(&x, [&y0, &y1, &y2, &y3]);
            for (k, y) in [&y0, &y1, &y2, &y3].into_iter().enumerate() {
                assert_eq!(four[k].to_bits(), dot(&x, y).to_bits());
                assert_eq!(dot(y, &x).to_bits(), dot(&x, y).to_bits());
                let naive: f64 = x.iter().zip(y).map(|(a, b)| a * b).sum();
                assert!((four[k] - naive).abs() <= 1e-13);
            }
        }
    }

    #[test]
    fn portable_dot_and_axpy_match_naive_loops() {
        for n in [0, 1, 3, 4, 8, 15, 16, 17, 33, 100] {
            let a: Vec<f64> = (0..n).map(|v| (v as f64 * 0.37).sin()).collect();
            let b: Vec<f64> = (0..n).map(|v| 1.0 - v as f64 * 0.1).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((portable::dot(&a, &b) - naive).abs() <= 1e-12 * (1.0 + naive.abs()), "n = {n}");
            let mut y = b.clone();
            axpy(-0.5, &a, &mut y);
            for ((yj, aj), bj) in y.iter().zip(&a).zip(&b) {
                assert!((yj - (bj - 0.5 * aj)).abs() <= 1e-15);
            }
        }
    }
}
