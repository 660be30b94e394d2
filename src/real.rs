//! The floating-point element types the kernels accept. Data may be `f32` (half the
//! memory) or `f64`; all thresholds and sums are computed in `f64`.

/// An element type of input and output arrays.
pub trait Real: Copy + Send + Sync + PartialOrd + std::fmt::Debug + 'static {
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    /// The slice itself when the element type is `f64` (lets readers skip a copy).
    fn as_f64_slice(x: &[Self]) -> Option<&[f64]>;
}

impl Real for f64 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn as_f64_slice(x: &[Self]) -> Option<&[f64]> {
        Some(x)
    }
}

impl Real for f32 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn as_f64_slice(_: &[Self]) -> Option<&[f64]> {
        None
    }
}
