//! The inner products behind every kernel entry: ⟨x_j, x_i⟩ for one pair, or for one
//! row against four others at once (a 1 × 4 register block: x is loaded once per four
//! fused multiply-adds, which lifts the blocked Gram computation from load-bound
//! towards the FMA rate).
//!
//! Every path of a kernel source must give bit-identical entries (cached and uncached
//! scores agree exactly, and an RBF diagonal is exactly 1), so [`dot1`] and each lane
//! of [`dot4`] use one fixed summation order: on CPUs with AVX2 and FMA, two 4-lane
//! accumulators over chunks of 8 (even and odd halves), combined as
//! (a0 + b0 + ...) lane-wise, then ((l0 + l1) + (l2 + l3)), then the scalar tail in
//! order; elsewhere a plain sequential sum. The choice is made once per process, so
//! all paths agree on a given machine.

use crate::data::Row;

/// ⟨r, y⟩ for a row and a dense `f64` vector of the row's width (or wider).
#[inline(always)]
pub(super) fn row_dot(r: Row, y: &[f64]) -> f64 {
    match r {
        Row::Dense(x) => dot1(x, &y[..x.len()]),
        Row::Sparse { .. } => r.dot(y),
    }
}

/// ⟨x, y⟩ (equal lengths).
#[inline(always)]
pub(super) fn dot1(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA; lengths are equal (asserted).
            return unsafe { x86::dot1(x, y) };
        }
    }
    x.iter().zip(y).fold(0.0, |s, (a, b)| s + a * b)
}

/// [⟨x, y_0⟩, …, ⟨x, y_3⟩], each bit-identical to [`dot1`] (equal lengths).
#[inline(always)]
pub(super) fn dot4(x: &[f64], ys: [&[f64]; 4]) -> [f64; 4] {
    assert!(ys.iter().all(|y| y.len() == x.len()));
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA; lengths are equal (asserted).
            return unsafe { x86::dot4(x, ys) };
        }
    }
    ys.map(|y| x.iter().zip(y).fold(0.0, |s, (a, b)| s + a * b))
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
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
    pub(super) unsafe fn dot1(x: &[f64], y: &[f64]) -> f64 {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot4_lanes_equal_dot1_bit_for_bit() {
        for n in [0, 1, 7, 8, 9, 16, 23, 100] {
            let v = |s: f64| (0..n).map(|t| ((t as f64 + s) * 0.731).sin()).collect::<Vec<f64>>();
            let (x, y0, y1, y2, y3) = (v(0.0), v(1.0), v(2.0), v(3.0), v(4.0));
            let four = dot4(&x, [&y0, &y1, &y2, &y3]);
            for (k, y) in [&y0, &y1, &y2, &y3].into_iter().enumerate() {
                assert_eq!(four[k].to_bits(), dot1(&x, y).to_bits());
                assert_eq!(dot1(y, &x).to_bits(), dot1(&x, y).to_bits());
                let naive: f64 = x.iter().zip(y).map(|(a, b)| a * b).sum();
                assert!((four[k] - naive).abs() <= 1e-13);
            }
        }
    }
}
