//! Bindings of product quantization: training, encoding, decoding and the products in
//! the compressed domain. Arrays in (float32/float64 data, float32 codebooks, uint8
//! codes), arrays out; every call runs without the GIL on the requested pool. Training
//! and encoding, which can take minutes, stop on Ctrl-C (`monitor.rs`).

use ndarray::{Ix2, Ix3};
use numpy::{PyReadonlyArray2, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::arrays::{array_in, first_non_finite, rows, run_detached, to_numpy, with_float_rows};
use super::errors::{invalid, InternalError};
use super::monitor::run_interruptible;
use super::threads;
use crate::pq::{self, Codebooks, TrainOptions};
use crate::solvers::Monitor;

/// The result of an interruptible run: None only when the stop flag was raised, and
/// then `run_interruptible` has already returned the signal's exception.
fn finished<R>(result: Option<R>) -> PyResult<R> {
    result.ok_or_else(|| InternalError::new_err("product quantization stopped without a pending signal"))
}

/// The codebooks argument (M × 2^bits × dsub float32).
fn books_in<'py>(books: &Bound<'py, PyAny>) -> PyResult<PyReadonlyArray3<'py, f32>> {
    array_in::<f32, Ix3>(books, "codebooks")
}

fn codebooks<'a>(books: &'a PyReadonlyArray3<'_, f32>) -> PyResult<Codebooks<'a>> {
    let [m, ksub, dsub] = <[usize; 3]>::try_from(books.shape()).map_err(|_| invalid("codebooks", "must be 3-D"))?;
    Codebooks::new(books.as_slice()?, m, ksub, dsub).map_err(super::errors::to_py)
}

/// The codes argument (n × M uint8).
fn codes_in<'py>(codes: &Bound<'py, PyAny>) -> PyResult<PyReadonlyArray2<'py, u8>> {
    array_in::<u8, Ix2>(codes, "codes")
}

fn codes<'a>(codes: &'a PyReadonlyArray2<'_, u8>, books: &Codebooks<'_>) -> PyResult<&'a [u8]> {
    if codes.shape()[1] != books.n_subspaces() {
        return Err(invalid(
            "codes",
            format!("must have {} columns (one per sub-space), got {}", books.n_subspaces(), codes.shape()[1]),
        ));
    }
    Ok(codes.as_slice()?)
}

/// k-means codebooks of the rows of `x`: (codebooks M × 2^n_bits × dsub float32, the
/// error after each assignment step M × n_iter).
#[pyfunction]
#[pyo3(signature = (x, *, n_subspaces, n_bits, n_iter, max_points_per_centroid, seed, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn pq_train<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    n_subspaces: usize,
    n_bits: u32,
    n_iter: usize,
    max_points_per_centroid: usize,
    seed: u64,
    n_jobs: Option<i64>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let threads = threads::resolve(n_jobs)?;
    let opts = TrainOptions { n_iter, max_points_per_centroid, seed };
    let (trained, d) = with_float_rows!(x, "X", |x: T| {
        let d = x.row_len;
        let trained = run_interruptible(py, threads, None, |monitor| {
            pq::train::<T>(x.data, d, n_subspaces, n_bits, &opts, monitor.stop_flag())
        })?;
        finished(trained).map(|t| (t, d))
    })?;
    let ksub = 1usize << n_bits;
    let books = to_numpy(py, trained.codebooks, &[n_subspaces, ksub, d / n_subspaces])?;
    let errors: Vec<f64> = trained.errors.concat();
    Ok((books, to_numpy(py, errors, &[n_subspaces, n_iter])?))
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
    let codebooks = books_in(codebooks)?;
    let books = self::codebooks(&codebooks)?;
    let codes = with_float_rows!(x, "X", |x: T| {
        if x.row_len != books.dim() {
            return Err(invalid("X", format!("has {} features, the codebooks {}", x.row_len, books.dim())));
        }
        finished(run_interruptible(py, threads, None, |monitor| pq::encode::<T>(&books, x.data, monitor.stop_flag()))?)
    })?;
    let n = codes.len() / books.n_subspaces();
    to_numpy(py, codes, &[n, books.n_subspaces()])
}

/// X̂ (n × d float32).
#[pyfunction]
#[pyo3(signature = (codebooks, codes, *, n_jobs=None))]
pub(crate) fn pq_decode<'py>(
    py: Python<'py>,
    codebooks: &Bound<'py, PyAny>,
    codes: &Bound<'py, PyAny>,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let threads = threads::resolve(n_jobs)?;
    let codebooks = books_in(codebooks)?;
    let books = self::codebooks(&codebooks)?;
    let codes = codes_in(codes)?;
    let codes = self::codes(&codes, &books)?;
    let out = run_detached(py, threads, || pq::decode(&books, codes))?;
    to_numpy(py, out, &[codes.len() / books.n_subspaces(), books.dim()])
}

/// X̂·B (`transposed` false: B is d × m, the result n × m) or X̂ᵀ·B (B is n × m, the
/// result d × m), in B's dtype.
fn product<'py>(
    py: Python<'py>,
    codebooks: &Bound<'py, PyAny>,
    codes: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    n_jobs: Option<i64>,
    transposed: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let threads = threads::resolve(n_jobs)?;
    let codebooks = books_in(codebooks)?;
    let books = self::codebooks(&codebooks)?;
    let codes = codes_in(codes)?;
    let codes = self::codes(&codes, &books)?;
    let rows = if transposed { books.dim() } else { codes.len() / books.n_subspaces() };
    with_float_rows!(b, "B", |b: T| {
        let m = b.row_len;
        let out = run_detached(py, threads, || {
            if let Some(at) = first_non_finite(b.data) {
                return Err(crate::Error::input(
                    "B",
                    format!("contains NaN or infinity (row {}, column {})", at / m, at % m),
                ));
            }
            if transposed {
                pq::tdot::<T>(&books, codes, b.data, m)
            } else {
                pq::dot::<T>(&books, codes, b.data, m)
            }
        })?;
        to_numpy(py, out, &[rows, m])
    })
}

/// X̂·B (n × m, B's dtype) for B of shape (d, m).
#[pyfunction]
#[pyo3(signature = (codebooks, codes, b, *, n_jobs=None))]
pub(crate) fn pq_dot<'py>(
    py: Python<'py>,
    codebooks: &Bound<'py, PyAny>,
    codes: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    product(py, codebooks, codes, b, n_jobs, false)
}

/// X̂ᵀ·B (d × m, B's dtype) for B of shape (n, m).
#[pyfunction]
#[pyo3(signature = (codebooks, codes, b, *, n_jobs=None))]
pub(crate) fn pq_tdot<'py>(
    py: Python<'py>,
    codebooks: &Bound<'py, PyAny>,
    codes: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    product(py, codebooks, codes, b, n_jobs, true)
}
