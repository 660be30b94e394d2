//! Kernels for the dual solvers (kernel top-k SVM, TopPush/Pat&Mat, M3L): the kernel
//! functions, the sources of kernel columns (computed from a design matrix, or a
//! precomputed — possibly memory-mapped — Gram matrix), and an LRU column cache.
//!
//! * [`KernelFunction`]: linear, RBF exp(−γ‖x−y‖²), polynomial (γ⟨x,y⟩ + coef0)^degree
//!   (scikit-learn's conventions).
//! * [`KernelSource`]: `n`, `diag`, `column_into` (serial, thread-safe),
//!   `entries_into` (part of a column), `columns_into` (several columns, parallel).
//!   Implemented by [`DataKernel`] (any [`crate::data::Design`]: dense `f32`/`f64`
//!   or CSR; blocked Gram columns) and [`PrecomputedKernel`] (borrowed n × n buffer).
//! * [`ColumnCache`]: LRU cache of columns with LIBSVM's `cache_size` budget in MB.
//!
//! All paths of a source produce bit-identical entries, so results do not depend on
//! whether a column came from the cache, on block sizes or on the thread count.

mod cache;
mod data_kernel;
mod function;
mod precomputed;
mod shifted;
mod source;
pub(crate) mod vexp;

pub use cache::{ColumnCache, Stored};
pub use data_kernel::{cross_kernel, DataKernel};
pub use function::{KernelFunction, KernelSettings};
pub use precomputed::PrecomputedKernel;
pub use shifted::ShiftedKernel;
pub use source::{KernelJob, KernelSource};
