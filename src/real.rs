//! The floating-point element types the kernels accept. Data may be `f32` (half the
//! memory) or `f64`; all thresholds and sums are computed in `f64`.

/// An element type of input and output arrays.
pub trait Real: Copy + Send + Sync + PartialOrd + std::fmt::Debug + 'static {
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
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
}
