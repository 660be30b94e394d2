//! The two dense kernels every solver's inner loop spends its time in: ⟨a, b⟩ and
//! y += α·x over `f64`. Wheels are built for baseline x86-64 (SSE2), so on CPUs with
//! AVX2 and FMA we switch at run time to 256-bit fused versions (4–8× the scalar rate
//! on the Wᵀx_i of Prox-SDCA). Both versions sum in the same fixed lane order within
//! their own variant, so results are reproducible on a given machine.

/// ⟨a, b⟩ over the common length of `a` and `b` (callers pass equal lengths).
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    {
        if a.len() >= 16 && has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { x86::dot_avx2(a, b) };
        }
    }
    dot_portable(a, b)
}

/// y += alpha · x over the common length.
#[inline]
pub fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    debug_assert_eq!(x.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    {
        if x.len() >= 16 && has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { x86::axpy_avx2(alpha, x, y) };
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

/// Four independent accumulators let the compiler vectorise without reassociating one sum.
fn dot_portable(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let split = a.len() - a.len() % 4;
    for (ca, cb) in a[..split].chunks_exact(4).zip(b[..split].chunks_exact(4)) {
        for l in 0..4 {
            acc[l] += ca[l] * cb[l];
        }
    }
    let tail: f64 = a[split..].iter().zip(&b[split..]).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Sixteen lanes in four 256-bit accumulators, FMA; then the scalar tail.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot_avx2(a: &[f64], b: &[f64]) -> f64 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = [_mm256_setzero_pd(); 4];
        let mut i = 0;
        while i + 16 <= n {
            for (l, acc_l) in acc.iter_mut().enumerate() {
                let x = _mm256_loadu_pd(pa.add(i + 4 * l));
                let y = _mm256_loadu_pd(pb.add(i + 4 * l));
                *acc_l = _mm256_fmadd_pd(x, y, *acc_l);
            }
            i += 16;
        }
        while i + 4 <= n {
            acc[0] = _mm256_fmadd_pd(_mm256_loadu_pd(pa.add(i)), _mm256_loadu_pd(pb.add(i)), acc[0]);
            i += 4;
        }
        let sum = _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3]));
        let mut lanes = [0.0f64; 4];
        _mm256_storeu_pd(lanes.as_mut_ptr(), sum);
        let mut total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
        while i < n {
            total += *pa.add(i) * *pb.add(i);
            i += 1;
        }
        total
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn axpy_avx2(alpha: f64, x: &[f64], y: &mut [f64]) {
        let n = x.len().min(y.len());
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
    fn kernels_match_naive_loops() {
        for n in [0, 1, 3, 4, 15, 16, 17, 33, 100] {
            let a: Vec<f64> = (0..n).map(|v| (v as f64 * 0.37).sin()).collect();
            let b: Vec<f64> = (0..n).map(|v| 1.0 - v as f64 * 0.1).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() <= 1e-12 * (1.0 + naive.abs()), "n = {n}");
            let mut y = b.clone();
            axpy(-0.5, &a, &mut y);
            for ((yj, aj), bj) in y.iter().zip(&a).zip(&b) {
                assert!((yj - (bj - 0.5 * aj)).abs() <= 1e-15);
            }
        }
    }
}
