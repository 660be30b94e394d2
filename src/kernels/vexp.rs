//! e^t over a slice of t ≤ 0, vectorised: the RBF kernel's exp(−γ‖x − y‖²) costs as
//! much as a 16-dimensional inner product when taken from libm one value at a time.
//!
//! Method (fdlibm's argument reduction with a Taylor polynomial): t = k·ln2 + r with
//! k = round(t / ln2) and |r| ≤ ln2/2, where r = (t − k·ln2_hi) − k·ln2_lo (k·ln2_hi is
//! exact); e^r by its Taylor polynomial of degree 13 (truncation < 5e-18) in Horner form
//! with fused multiply-adds; 2^k built in the exponent bits. Error ≤ 2 ulp for
//! t ∈ [−708, 0]; below −708 the result is 0 (true values < 3.4e-308).
//!
//! Written without branches or calls, so that compiled with AVX2 + FMA (chosen at run
//! time) it vectorises; every element gets the same operation sequence whatever its
//! position, so results do not depend on slice lengths. CPUs without FMA use libm's exp.

/// Below this, e^t is taken as 0.
const MIN_ARG: f64 = -708.0;

/// In place: v[i] ← e^{v[i]} for v[i] ≤ 0 (see the module docs).
pub(crate) fn exp_nonpos_slice(v: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA.
            return unsafe { exp_fma(v) };
        }
    }
    v.iter_mut().for_each(|x| *x = if *x < MIN_ARG { 0.0 } else { x.exp() });
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_fma(v: &mut [f64]) {
    v.iter_mut().for_each(|x| *x = exp_nonpos(*x));
}

/// e^t for t ≤ 0 (needs hardware FMA to be fast: `mul_add` is a libm call otherwise).
#[inline(always)]
fn exp_nonpos(t: f64) -> f64 {
    // fdlibm's split of ln 2: the high part has 32 significant bits, so k·LN2_HI is exact.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    // Adding 1.5·2⁵² rounds to an integer, which then sits in the low mantissa bits.
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    // 1/j! for j = 13 down to 2.
    const C: [f64; 12] = [
        1.0 / 6_227_020_800.0,
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
    ];
    let u = t.max(MIN_ARG);
    let kf = u.mul_add(std::f64::consts::LOG2_E, SHIFT);
    let k = kf - SHIFT; // an integer in [−1022, 0]
    let r = k.mul_add(-LN2_LO, k.mul_add(-LN2_HI, u));
    let mut p = C[0];
    for c in &C[1..] {
        p = p.mul_add(r, *c);
    }
    p = p.mul_add(r, 1.0);
    p = p.mul_add(r, 1.0);
    // The low 12 bits of kf's representation are k mod 4096; k + 1023 ∈ [1, 1023] is the
    // biased exponent of 2^k.
    let scale = f64::from_bits(kf.to_bits().wrapping_add(1023) << 52);
    if t < MIN_ARG {
        0.0
    } else {
        p * scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_libm_within_two_ulp() {
        let mut t: Vec<f64> = (0..20_000).map(|i| -(i as f64) * 0.0357).collect();
        t.extend([0.0, -0.0, -1e-300, -0.5 * std::f64::consts::LN_2, -708.0, -708.3, -745.0, -1e6, f64::NEG_INFINITY]);
        let mut v = t.clone();
        exp_nonpos_slice(&mut v);
        for (&x, &e) in t.iter().zip(&v) {
            let want = x.exp();
            if x < MIN_ARG {
                assert_eq!(e, 0.0);
            } else {
                assert!((e - want).abs() <= 4.5e-16 * want, "exp({x}) = {e}, libm {want}");
            }
        }
        assert_eq!(v[20_000], 1.0);
        // Independent of position and slice length.
        for (i, &x) in t.iter().enumerate().step_by(37) {
            let mut one = [x];
            exp_nonpos_slice(&mut one);
            assert_eq!(one[0].to_bits(), v[i].to_bits());
        }
    }
}
