//! Runtime selection of the widest vector instructions for straight-line loops.
//!
//! The wheel is built for baseline x86-64 (SSE2). A loop that LLVM can vectorize is
//! compiled again with AVX2 and with AVX-512 enabled, and the widest the CPU supports is
//! chosen at each call (`is_x86_feature_detected!` caches its answer). Only the vector
//! width changes: no fused multiply-add is enabled, so every version gives bit-for-bit
//! the same results.

/// `widest_vector_code! { /// docs
///     pub(crate) fn name(args) -> Ret { body } }` defines `name`, whose body is compiled
/// three times (baseline, AVX2, AVX-512) and dispatched at run time. A generic kernel
/// names its parameters twice, as declared and as passed:
/// `fn name[T: Scalar, const W: usize][T, W](args) -> Ret { body }`.
macro_rules! widest_vector_code {
    ($(#[$attr:meta])* $vis:vis fn $name:ident [$($gen:tt)*] [$($par:tt)*] ($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$attr])*
        $vis fn $name<$($gen)*>($($arg: $ty),*) -> $ret {
            #[inline(always)]
            fn generic<$($gen)*>($($arg: $ty),*) -> $ret $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx2,avx")]
                unsafe fn avx512<$($gen)*>($($arg: $ty),*) -> $ret {
                    generic::<$($par)*>($($arg),*)
                }
                #[target_feature(enable = "avx2,avx")]
                unsafe fn avx2<$($gen)*>($($arg: $ty),*) -> $ret {
                    generic::<$($par)*>($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports the features `avx512` is compiled for.
                    return unsafe { avx512::<$($par)*>($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above, for `avx2`.
                    return unsafe { avx2::<$($par)*>($($arg),*) };
                }
            }
            generic::<$($par)*>($($arg),*)
        }
    };
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$attr])*
        $vis fn $name($($arg: $ty),*) -> $ret {
            #[inline(always)]
            fn generic($($arg: $ty),*) -> $ret $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx2,avx")]
                unsafe fn avx512($($arg: $ty),*) -> $ret {
                    generic($($arg),*)
                }
                #[target_feature(enable = "avx2,avx")]
                unsafe fn avx2($($arg: $ty),*) -> $ret {
                    generic($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports the features `avx512` is compiled for.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above, for `avx2`.
                    return unsafe { avx2($($arg),*) };
                }
            }
            generic($($arg),*)
        }
    };
}

pub(crate) use widest_vector_code;

/// Lanes of [`largest_by`] and of other running maxima: independent partial results, so
/// that the loop vectorises (8 f64 = one AVX-512 register).
pub(crate) const LANES: usize = 8;

/// The largest key(v) over `values` (f64::NEG_INFINITY for none; a NaN is never taken),
/// as a running maximum per lane: one max per value, which vectorises when inlined into
/// a `widest_vector_code!` body.
#[inline(always)]
pub(crate) fn largest_by(values: &[f64], key: impl Fn(f64) -> f64) -> f64 {
    let larger = |best: f64, x: f64| if x > best { x } else { best };
    let mut lane_best = [f64::NEG_INFINITY; LANES];
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for j in 0..LANES {
            lane_best[j] = larger(lane_best[j], key(chunk[j]));
        }
    }
    tail.iter().map(|&x| key(x)).chain(lane_best).fold(f64::NEG_INFINITY, larger)
}

/// The first index of the largest key(v) if it is above `floor` (strictly), and that
/// key: what a scan keeping the first strict maximum finds, in two passes of which the
/// second (the index) runs only when the maximum beats `floor`.
#[inline(always)]
pub(crate) fn first_largest_by(values: &[f64], floor: f64, key: impl Fn(f64) -> f64) -> Option<(usize, f64)> {
    let top = largest_by(values, &key);
    if top > floor {
        values.iter().position(|&x| key(x) == top).map(|at| (at, top))
    } else {
        None
    }
}

/// Asks the CPU to start loading the cache line of `values[i]` (a hint).
#[inline]
pub(crate) fn prefetch_entry<T>(values: &[T], i: usize) {
    prefetch_lines(&values[i..=i]);
}

/// Asks the CPU to start loading every cache line of `values` now. For a column read
/// from main memory at positions too scattered for the hardware prefetcher to follow
/// (a gather at sorted indices), the loads then overlap instead of waiting one by one.
#[inline]
pub(crate) fn prefetch_lines<T>(values: &[T]) {
    #[cfg(target_arch = "x86_64")]
    for line in values.chunks((64 / std::mem::size_of::<T>()).max(1)) {
        // SAFETY: a prefetch is only a hint, and the address is inside a live slice.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line.as_ptr().cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}
