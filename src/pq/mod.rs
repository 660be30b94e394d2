//! Product quantization (Jégou, Douze, Schmid 2011) and matrix products in the
//! compressed domain (Harchaoui et al. 2012, §4.2, Algorithms 1 and 2).
//!
//! A vector of d features is cut into M sub-vectors of dsub = d / M features; each is
//! replaced by the index (one byte) of its nearest centroid among 2^n_bits learnt by
//! k-means on that sub-space. The decoded matrix X̂ (every sub-vector replaced by its
//! centroid) is what the products compute with, exactly: X̂·B from tables of centroid
//! products and lookups, X̂ᵀ·B from bucket sums of B's rows by code and centroid
//! products — without ever forming X̂.

mod codebooks;
mod design;
mod kmeans;
mod nearest;
mod products;

pub use codebooks::{decode, encode, train, Codebooks, TrainOptions, Trained};
pub use design::CodedRows;
pub use products::{dot, tdot, times, Scalar};
