//! NumPy arrays in, NumPy arrays out: dtype dispatch (float32/float64), shape checks,
//! zero-copy views of contiguous inputs (read-only arrays are fine; non-contiguous
//! ones are copied once), finiteness checks, and the GIL-free, panic-safe run of a
//! row-batched kernel on the requested thread pool.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};

use numpy::{Element, IntoPyArray, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::errors::{invalid, to_py, InternalError};
use super::threads;
use crate::projections::Workspace;
use crate::{batch, Error, Real};

/// A kernel applied to every row, writing an output row of the same length.
pub(crate) trait RowMap: Sync {
    fn row<T: Real>(&self, i: usize, x: &[T], out: &mut [T], ws: &mut Workspace) -> crate::Result<()>;
}

/// A kernel returning a scalar per row and writing a gradient row.
pub(crate) trait RowLoss: Sync {
    fn row<T: Real>(&self, i: usize, z: &[T], grad: &mut [T], ws: &mut Workspace) -> crate::Result<f64>;
}

/// A kernel returning a scalar per row.
pub(crate) trait RowValue: Sync {
    fn row<T: Real>(&self, i: usize, z: &[T], ws: &mut Workspace) -> crate::Result<f64>;
}

/// The rows of a 1-D (one row) or 2-D float array, as one row-major slice.
pub(crate) struct Rows<'a, T: Clone> {
    pub data: Cow<'a, [T]>,
    pub n_rows: usize,
    pub row_len: usize,
    pub shape: Vec<usize>,
}

impl<T: Clone> Rows<'_, T> {
    pub fn is_batch(&self) -> bool {
        self.shape.len() == 2
    }
}

/// Shape of a float input, without touching the data: (is_batch, n_rows, row_len).
pub(crate) fn float_shape(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<(bool, usize, usize)> {
    let arr = obj.cast::<numpy::PyUntypedArray>().map_err(|_| {
        invalid(name, format!("expected a numpy.ndarray of float32 or float64, got {}", type_name(obj)))
    })?;
    batch_shape(arr.shape(), name)
}

/// (is_batch, n_rows, row_len) of a 1-D row or a 2-D batch of rows.
fn batch_shape(shape: &[usize], name: &str) -> PyResult<(bool, usize, usize)> {
    match *shape {
        [m] => Ok((false, 1, m)),
        [n, m] => Ok((true, n, m)),
        _ => Err(invalid(name, format!("expected a 1-D array or a 2-D batch of rows, got a {}-D array", shape.len()))),
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an unknown type".into())
}

pub(crate) fn rows<'a, T: Element + Clone>(arr: &'a PyReadonlyArrayDyn<'_, T>, name: &str) -> PyResult<Rows<'a, T>> {
    let shape = arr.shape().to_vec();
    let (_, n_rows, row_len) = batch_shape(&shape, name)?;
    if n_rows == 0 || row_len == 0 {
        return Err(invalid(name, format!("is empty (shape {shape:?})")));
    }
    // Zero-copy only for C order: `as_slice` also accepts Fortran order, whose memory
    // is not row-major. Everything else is copied once, in logical (row-major) order.
    let data = match arr.is_c_contiguous().then(|| arr.as_slice().ok()).flatten() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(arr.as_array().iter().cloned().collect()),
    };
    Ok(Rows { data, n_rows, row_len, shape })
}

/// Checks one row for NaN and infinity. Called per row inside the parallel batch right
/// after the kernel has read the same row (so the check runs on all threads and finds
/// the row in cache); a failed check wins over the kernel's result, which is dropped.
/// The kernels cannot panic or loop on non-finite input, and a panic would be caught.
fn check_finite<T: Real>(row: &[T], index: usize, name: &'static str) -> crate::Result<()> {
    // v·0 is 0 for finite v and NaN otherwise; lane-wise sums vectorise.
    const LANES: usize = 8;
    let mut acc = [0.0f64; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for chunk in chunks.by_ref() {
        for (a, v) in acc.iter_mut().zip(chunk) {
            *a += v.to_f64() * 0.0;
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|v| v.to_f64() * 0.0).sum();
    if acc.iter().sum::<f64>() + tail == 0.0 {
        return Ok(());
    }
    let column = row.iter().position(|v| !v.to_f64().is_finite()).unwrap_or(0);
    Err(Error::InvalidInput { name, reason: format!("contains NaN or infinity (row {index}, column {column})") })
}

/// Runs `work` without the GIL on the requested pool; a panic becomes InternalError.
pub(crate) fn run_detached<R: Send>(
    py: Python<'_>,
    n_jobs: Option<usize>,
    work: impl FnOnce() -> crate::Result<R> + Send,
) -> PyResult<R> {
    caught_to_py(py.detach(|| catch_unwind(AssertUnwindSafe(|| threads::install(n_jobs, work)))))
}

/// Below this many entries a batch runs on the calling thread: waking a pool's
/// sleeping workers costs tens of microseconds, the work of a few thousand entries.
const POOL_WORTHWHILE: usize = 32_768;

/// Runs a row batch without the GIL: `work(true)` on the requested pool, or
/// `work(false)` (serially, on the calling thread) when one thread is asked for or the
/// batch is too small to pay for waking a pool. Either way a panic becomes
/// InternalError, and the rows' results are the same.
pub(crate) fn run_batch<R: Send>(
    py: Python<'_>,
    n_jobs: Option<usize>,
    entries: usize,
    work: impl FnOnce(bool) -> crate::Result<R> + Send,
) -> PyResult<R> {
    if n_jobs == Some(1) || entries < POOL_WORTHWHILE {
        return caught_to_py(py.detach(|| catch_unwind(AssertUnwindSafe(|| work(false)))));
    }
    run_detached(py, n_jobs, || work(true))
}

/// A core result caught with `catch_unwind` as a Python result: errors map through
/// `to_py`, a panic becomes InternalError with the panic message.
pub(crate) fn caught_to_py<R>(outcome: std::thread::Result<crate::Result<R>>) -> PyResult<R> {
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(to_py(err)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(InternalError::new_err(format!("toprank core panicked: {what}")))
        }
    }
}

/// A zeroed output array allocated by NumPy. NumPy's allocator asks the kernel for
/// huge pages on large arrays; a Rust `Vec` of the same size would take one page
/// fault per 4 KiB when first written, which on a VM costs more than the kernels.
fn numpy_zeros<'py, T: Element>(py: Python<'py>, shape: &[usize]) -> Bound<'py, PyArrayDyn<T>> {
    PyArrayDyn::<T>::zeros(py, ndarray::IxDyn(shape), false)
}

pub(crate) fn to_numpy<'py, T: Element>(py: Python<'py>, data: Vec<T>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let array = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), data)
        .map_err(|e| InternalError::new_err(format!("output shape: {e}")))?;
    Ok(array.into_pyarray(py).into_any())
}

/// Dispatches on the dtype of `$obj`, binding `$rows` to the checked `Rows<T>`.
macro_rules! with_float_rows {
    ($obj:expr, $name:expr, |$rows:ident : $t:ident| $body:expr) => {{
        let obj: &Bound<'_, PyAny> = $obj;
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'_, f64>>() {
            type $t = f64;
            let $rows = rows(&a, $name)?;
            $body
        } else if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'_, f32>>() {
            type $t = f32;
            let $rows = rows(&a, $name)?;
            $body
        } else {
            float_shape(obj, $name)?;
            let dtype = obj.getattr("dtype").and_then(|d| d.str()).map(|s| s.to_string()).unwrap_or_default();
            Err(invalid($name, format!("expected dtype float32 or float64, got {dtype}")))
        }
    }};
}
pub(crate) use with_float_rows;

/// `kernel` on every row of `x`; returns an array of x's shape and dtype.
pub(crate) fn map_rows<'py, K: RowMap>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    name: &'static str,
    n_jobs: Option<usize>,
    kernel: &K,
) -> PyResult<Bound<'py, PyAny>> {
    with_float_rows!(x, name, |rows: T| {
        let data: &[T] = &rows.data;
        let row_len = rows.row_len;
        let out = numpy_zeros::<T>(py, &rows.shape);
        {
            let mut guard = out.readwrite();
            let out_slice = guard.as_slice_mut().map_err(|e| InternalError::new_err(e.to_string()))?;
            run_batch(py, n_jobs, data.len(), |parallel| {
                batch::map_rows(data, row_len, out_slice, parallel, |i, r, o, ws| {
                    let result = kernel.row(i, r, o, ws);
                    check_finite(r, i, name)?;
                    result
                })
            })?;
        }
        Ok(out.into_any())
    })
}

/// `kernel` on every row of `z`: (loss, gradient); a float and a 1-D array for 1-D
/// input, an (n,) and an (n, m) array for a batch.
pub(crate) fn loss_rows<'py, K: RowLoss>(
    py: Python<'py>,
    z: &Bound<'py, PyAny>,
    name: &'static str,
    n_jobs: Option<usize>,
    kernel: &K,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    with_float_rows!(z, name, |rows: T| {
        let data: &[T] = &rows.data;
        let (n_rows, row_len) = (rows.n_rows, rows.row_len);
        let grad = numpy_zeros::<T>(py, &rows.shape);
        let loss = {
            let mut guard = grad.readwrite();
            let grad_slice = guard.as_slice_mut().map_err(|e| InternalError::new_err(e.to_string()))?;
            run_batch(py, n_jobs, data.len(), |parallel| {
                let mut loss = vec![T::from_f64(0.0); n_rows];
                batch::loss_rows(data, row_len, &mut loss, grad_slice, parallel, |i, r, g, ws| {
                    let result = kernel.row(i, r, g, ws);
                    check_finite(r, i, name)?;
                    result
                })?;
                Ok(loss)
            })?
        };
        let loss = if rows.is_batch() { to_numpy(py, loss, &[n_rows])? } else { loss[0].to_f64().into_pyobject(py)?.into_any() };
        Ok((loss, grad.into_any()))
    })
}

/// `kernel` on every row of `z`: a float for 1-D input, an (n,) array for a batch.
pub(crate) fn value_rows<'py, K: RowValue>(
    py: Python<'py>,
    z: &Bound<'py, PyAny>,
    name: &'static str,
    n_jobs: Option<usize>,
    kernel: &K,
) -> PyResult<Bound<'py, PyAny>> {
    with_float_rows!(z, name, |rows: T| {
        let data: &[T] = &rows.data;
        let (n_rows, row_len) = (rows.n_rows, rows.row_len);
        let values = run_batch(py, n_jobs, data.len(), |parallel| {
            let mut values = vec![T::from_f64(0.0); n_rows];
            batch::reduce_rows(data, row_len, &mut values, parallel, |i, r, ws| {
                let result = kernel.row(i, r, ws);
                check_finite(r, i, name)?;
                result
            })?;
            Ok(values)
        })?;
        if rows.is_batch() {
            to_numpy(py, values, &[n_rows])
        } else {
            Ok(values[0].to_f64().into_pyobject(py)?.into_any())
        }
    })
}

/// Labels for the rows of `z`: an int for a 1-D `z`, an int64 array of length n for
/// a batch; each in [0, row_len).
pub(crate) fn labels(
    y: &Bound<'_, PyAny>,
    z: &Bound<'_, PyAny>,
    z_name: &str,
) -> PyResult<Vec<usize>> {
    let (is_batch, n_rows, row_len) = float_shape(z, z_name)?;
    if n_rows == 0 || row_len == 0 {
        return Err(invalid(z_name, "is empty"));
    }
    let raw: Vec<i64> = if is_batch {
        let arr = y.extract::<numpy::PyReadonlyArray1<'_, i64>>().map_err(|_| {
            invalid("y", format!("expected a 1-D int64 array with one label per row of {z_name}"))
        })?;
        if arr.len() != n_rows {
            return Err(invalid("y", format!("has {} labels but {z_name} has {n_rows} rows", arr.len())));
        }
        arr.as_array().iter().copied().collect()
    } else {
        vec![y.extract::<i64>().map_err(|_| invalid("y", format!("expected an int label for a 1-D {z_name}")))?]
    };
    raw.iter()
        .enumerate()
        .map(|(row, &label)| {
            usize::try_from(label).ok().filter(|&l| l < row_len).ok_or_else(|| {
                let at = if is_batch { format!(" at row {row}") } else { String::new() };
                invalid("y", format!("label {label}{at} out of range [0, {row_len})"))
            })
        })
        .collect()
}
