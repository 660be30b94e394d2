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
mod error;
mod huge_pages;
pub mod kernels;
pub mod linalg;
pub mod losses;
pub mod pq;
pub mod projections;
mod real;
mod rng;
pub mod solvers;
pub mod threads;
mod vector_code;

pub use error::{Error, Result};
pub use real::Real;

#[cfg(feature = "python")]
mod bindings;
