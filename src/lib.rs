//! # toprank
//!
//! Learning when only the top of a ranking matters. This crate is the pure-Rust core
//! of the `toprank` Python package: exact projections onto the top-k simplex and
//! cone, the box simplex, the capped ((n,k)-) simplex, sparsemax and Rankmax; the
//! losses built on them; and row-parallel drivers. Everything works on plain slices
//! with caller-owned workspaces, so solvers can call it in their inner loops.
//!
//! The Python bindings (`toprank._core`) are compiled only with the `python` feature.

pub mod batch;
pub mod data;
mod huge_pages;
pub mod linalg;
mod error;
pub mod pq;
pub mod kernels;
pub mod losses;
pub mod projections;
mod real;
mod rng;
mod vector_code;
pub mod solvers;

pub use error::{Error, Result};
pub use real::Real;

#[cfg(feature = "python")]
mod bindings;
