//! Bindings of product quantization: training, encoding, decoding and the products in
//! the compressed domain. Arrays in (float32/float64 data, float32 codebooks, uint8
//! codes), arrays out; every call runs without the GIL on the requested pool. Training
//! and encoding, which can take minutes, stop on Ctrl-C (`monitor.rs`).

use ndarray::{Ix2, Ix3};
use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;

use super::arrays::{array_in, run_detached, to_numpy, with_float_rows};
use super::monitor::{finished, run_interruptible};
use crate::pq::{self, TrainOptions};
use crate::solvers::Monitor;
use crate::threads;

/// The settings of `pq_train`: `toprank.pq.PqSettings`, and the core's k-means options
/// read from its attributes.
pub(crate) struct PqSettings {
    n_subspaces: usize,
    n_bits: u32,
    options: TrainOptions,
}
by_attribute!(PqSettings { n_subspaces, n_bits; options });
by_attribute!(TrainOptions { n_iter, max_points_per_centroid, seed });

/// k-means codebooks of the rows of `x`: (codebooks M × 2^n_bits × dsub float32, the
/// error after each assignment step M × n_iter).
#[pyfunction]
#[pyo3(signature = (x, settings, *, n_jobs=None))]
pub(crate) fn pq_train<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    settings: PqSettings,
    n_jobs: Option<i64>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let (PqSettings { n_subspaces, n_bits, options }, threads) = (settings, threads::resolve(n_jobs)?);
    with_float_rows!(x, "X", |x: T| {
        let d = x.row_len;
        let trained = run_interruptible(py, threads, None, |monitor| {
            pq::train::<T>(x.data, d, n_subspaces, n_bits, &options, monitor.stop_flag())
        })?;
        let trained = finished(trained, "product quantization")?;
        let books = to_numpy(py, trained.codebooks, &[n_subspaces, 1 << n_bits, d / n_subspaces])?;
        Ok((books, to_numpy(py, trained.errors.concat(), &[n_subspaces, options.n_iter])?))
    })
}

/// The codes (n × M uint8) of the rows of `x`.
#[pyfunction]
#[pyo3(signature = (codebooks, x, *, n_jobs=None))]
pub(crate) fn pq_encode<'py>(
    py: Python<'py>,
    codebooks: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let threads = threads::resolve(n_jobs)?;
    let books = array_in::<f32, Ix3>(codebooks, "codebooks")?;
    let books = super::design::codebooks(&books)?;
    with_float_rows!(x, "X", |x: T| {
        books.check_features(x.row_len)?;
        let codes =
            run_interruptible(py, threads, None, |monitor| pq::encode::<T>(&books, x.data, monitor.stop_flag()));
        to_numpy(py, finished(codes?, "product quantization")?, &[x.n_rows, books.n_subspaces()])
    })
}

/// The rows X̂ that `codes` (n × M uint8) stand for: X̂ itself (`b` None; n × d float32),
/// or computed from the codes without decoding, X̂·B (B: d × m; n × m) or, `transposed`,
/// X̂ᵀ·B (B: n × m; d × m), in B's dtype.
#[pyfunction]
#[pyo3(signature = (codebooks, codes, b=None, *, transposed=false, n_jobs=None))]
pub(crate) fn pq_decode<'py>(
    codebooks: &Bound<'py, PyAny>,
    codes: &Bound<'py, PyAny>,
    b: Option<&Bound<'py, PyAny>>,
    transposed: bool,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = codes.py();
    let threads = threads::resolve(n_jobs)?;
    let books = array_in::<f32, Ix3>(codebooks, "codebooks")?;
    let books = super::design::codebooks(&books)?;
    let codes = array_in::<u8, Ix2>(codes, "codes")?;
    let n = codes.shape()[0];
    books.check_code_columns(codes.shape()[1])?;
    let codes = codes.as_slice()?;
    let Some(b) = b else {
        return to_numpy(py, run_detached(py, threads, || pq::decode(&books, codes))?, &[n, books.dim()]);
    };
    with_float_rows!(b, "B", |b: T| {
        let out = run_detached(py, threads, || pq::times::<T>(&books, codes, b.data, b.row_len, transposed))?;
        to_numpy(py, out, &[if transposed { books.dim() } else { n }, b.row_len])
    })
}
