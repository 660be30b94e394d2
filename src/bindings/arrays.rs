//! NumPy arrays in, NumPy arrays out: the one path by which every binding takes an array
//! argument ([`array_in`], [`in_place`]), dtype dispatch (float32/float64), shape
//! checks, finiteness checks, and the GIL-free, panic-safe run of a row-batched kernel
//! on the requested thread pool.
//!
//! The core reads arrays as slices: C order, aligned, native byte order. An argument
//! that already is one is borrowed (read-only and memory-mapped arrays included); any
//! other — misaligned, strided, Fortran-ordered, big-endian — is copied once by NumPy.
//! Arrays that crossed a process boundary are routinely misaligned: pickle protocol 5
//! (Dask's out-of-band buffers) places them at any byte offset of a message.

use std::panic::{catch_unwind, AssertUnwindSafe};

use ndarray::Dimension;
use numpy::{
    Element, IntoPyArray, PyArray, PyArrayDescr, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArray,
    PyReadonlyArrayDyn, PyReadwriteArray, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

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
pub(crate) struct Rows<'a, T> {
    pub data: &'a [T],
    pub n_rows: usize,
    pub row_len: usize,
    pub shape: Vec<usize>,
}

impl<T> Rows<'_, T> {
    pub fn is_batch(&self) -> bool {
        self.shape.len() == 2
    }
}

/// Shape of a float input, without touching the data: (is_batch, n_rows, row_len).
pub(crate) fn float_shape(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<(bool, usize, usize)> {
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| {
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

/// The precision of a float argument that the core takes in either one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Float {
    F32,
    F64,
}

/// The precision of `obj`, a float32 or float64 array in either byte order.
pub(crate) fn float_type(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Float> {
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| {
        invalid(name, format!("expected a numpy.ndarray of float32 or float64, got {}", type_name(obj)))
    })?;
    let dtype = arr.dtype();
    match (dtype.kind(), dtype.itemsize()) {
        (b'f', 8) => Ok(Float::F64),
        (b'f', 4) => Ok(Float::F32),
        _ => Err(invalid(name, format!("expected dtype float32 or float64, got {}", dtype_name(&dtype)))),
    }
}

/// NumPy's name of a dtype, with its byte order when that is not the native one.
fn dtype_name(dtype: &Bound<'_, PyArrayDescr>) -> String {
    let name = dtype.getattr("name").map(|n| n.to_string()).unwrap_or_else(|_| dtype.to_string());
    match dtype.is_native_byteorder() {
        Some(false) => format!("{name} (big-endian)"),
        _ => name,
    }
}

/// Whether values of dtype `from` convert to `to` without loss and within their kind
/// (float32 to float64, int32 to int64, uint32 to int64; either byte order).
fn widens(from: &Bound<'_, PyArrayDescr>, to: &Bound<'_, PyArrayDescr>) -> bool {
    let (kind, size) = (from.kind(), from.itemsize());
    let same_kind = kind == to.kind() || (kind == b'u' && to.kind() == b'i' && size < to.itemsize());
    same_kind && size <= to.itemsize()
}

/// `obj` as an array of `D`'s dimension, or an error naming the argument.
fn untyped<'a, 'py, D: Dimension>(
    obj: &'a Bound<'py, PyAny>,
    name: &str,
    want: &Bound<'py, PyArrayDescr>,
) -> PyResult<&'a Bound<'py, PyUntypedArray>> {
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| {
        invalid(name, format!("expected a numpy.ndarray of {}, got {}", dtype_name(want), type_name(obj)))
    })?;
    if let Some(ndim) = D::NDIM {
        if arr.ndim() != ndim {
            return Err(invalid(
                name,
                format!("expected a {ndim}-D array, got a {}-D array of shape {:?}", arr.ndim(), arr.shape()),
            ));
        }
    }
    Ok(arr)
}

/// Whether the core can read `arr` in place as a slice of `want`.
fn readable_in_place(arr: &Bound<'_, PyUntypedArray>, want: &Bound<'_, PyArrayDescr>) -> bool {
    arr.dtype().is_equiv_to(want) && arr.is_c_contiguous() && arr.is_aligned()
}

/// A copy of `obj` in C order, aligned, of dtype `want` (native byte order), by NumPy.
fn aligned_copy<'py>(obj: &Bound<'py, PyAny>, want: &Bound<'py, PyArrayDescr>) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", want)?;
    kwargs.set_item("order", "C")?;
    kwargs.set_item("copy", true)?;
    py.import("numpy")?.getattr("array")?.call((obj,), Some(&kwargs))
}

/// An array argument as the core reads it (`as_slice` succeeds): `obj` itself when it is
/// a C-ordered, aligned array of `T` (read-only and memory-mapped ones included), else
/// one C-ordered, aligned copy converted to `T` — from a misaligned, strided,
/// Fortran-ordered or big-endian array, or from a narrower dtype of the same kind
/// (float32 for a float64 argument, int32 for int64). Anything else is refused naming
/// the argument.
pub(crate) fn array_in<'py, T: Element, D: Dimension>(
    obj: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<PyReadonlyArray<'py, T, D>> {
    let py = obj.py();
    let want = T::get_dtype(py);
    let arr = untyped::<D>(obj, name, &want)?;
    let have = arr.dtype();
    if !widens(&have, &want) {
        return Err(invalid(name, format!("expected dtype {}, got {}", dtype_name(&want), dtype_name(&have))));
    }
    let source = if readable_in_place(arr, &want) { obj.clone() } else { aligned_copy(obj, &want)? };
    let typed = source.cast_into::<PyArray<T, D>>().map_err(|e| InternalError::new_err(format!("{name}: {e}")))?;
    typed
        .try_readonly()
        .map_err(|_| invalid(name, "is being updated in place by this call (passed as another argument too)"))
}

/// An array argument the core updates in place: `obj` itself when it is a writeable,
/// C-ordered, aligned array of `T`, else a C-ordered, aligned copy that [`InPlace::finish`]
/// writes back (a misaligned, strided or big-endian array). A read-only array or another
/// dtype is refused naming the argument.
pub(crate) struct InPlace<'py, T: Element, D: Dimension> {
    work: Bound<'py, PyArray<T, D>>,
    /// The caller's array when `work` is a copy of it.
    original: Option<Bound<'py, PyAny>>,
    name: String,
}

pub(crate) fn in_place<'py, T: Element, D: Dimension>(
    obj: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<InPlace<'py, T, D>> {
    let py = obj.py();
    let want = T::get_dtype(py);
    let arr = untyped::<D>(obj, name, &want)?;
    let have = arr.dtype();
    if have.kind() != want.kind() || have.itemsize() != want.itemsize() {
        return Err(invalid(
            name,
            format!("expected dtype {} (it is updated in place), got {}", dtype_name(&want), dtype_name(&have)),
        ));
    }
    if !obj.getattr("flags")?.getattr("writeable")?.extract::<bool>()? {
        return Err(invalid(name, "is read-only, but it is updated in place (pass a writeable copy)"));
    }
    let (work, original) = if readable_in_place(arr, &want) {
        (obj.clone(), None)
    } else {
        (aligned_copy(obj, &want)?, Some(obj.clone()))
    };
    let work = work.cast_into::<PyArray<T, D>>().map_err(|e| InternalError::new_err(format!("{name}: {e}")))?;
    Ok(InPlace { work, original, name: name.to_string() })
}

impl<'py, T: Element, D: Dimension> InPlace<'py, T, D> {
    /// The array to update (drop it before [`InPlace::finish`]).
    pub(crate) fn readwrite(&self) -> PyResult<PyReadwriteArray<'py, T, D>> {
        self.work
            .try_readwrite()
            .map_err(|_| invalid(&self.name, "must be distinct from the call's other array arguments"))
    }

    /// Writes the updated copy back into the caller's array (nothing when it was updated
    /// in place).
    pub(crate) fn finish(self) -> PyResult<()> {
        if let Some(original) = self.original {
            original.py().import("numpy")?.getattr("copyto")?.call1((original, self.work))?;
        }
        Ok(())
    }
}

/// The rows of a checked array (`array_in`): borrowed, never copied.
pub(crate) fn rows<'a, T: Element>(arr: &'a PyReadonlyArrayDyn<'_, T>, name: &str) -> PyResult<Rows<'a, T>> {
    let shape = arr.shape().to_vec();
    let (_, n_rows, row_len) = batch_shape(&shape, name)?;
    if n_rows == 0 || row_len == 0 {
        return Err(invalid(name, format!("is empty (shape {shape:?})")));
    }
    Ok(Rows { data: arr.as_slice()?, n_rows, row_len, shape })
}

/// Whether every value is finite: v·0 is 0 for finite v and NaN otherwise, and
/// lane-wise sums vectorise.
fn all_finite<T: Real>(values: &[T]) -> bool {
    const LANES: usize = 8;
    let mut acc = [0.0f64; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in chunks.by_ref() {
        for (a, v) in acc.iter_mut().zip(chunk) {
            *a += v.to_f64() * 0.0;
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|v| v.to_f64() * 0.0).sum();
    acc.iter().sum::<f64>() + tail == 0.0
}

/// The position of the first NaN or infinity in `values`, searched in parallel on the
/// current pool.
pub(crate) fn first_non_finite<T: Real>(values: &[T]) -> Option<usize> {
    const BLOCK: usize = 4096;
    values
        .par_chunks(BLOCK)
        .enumerate()
        .find_first(|(_, block)| !all_finite(block))
        .map(|(b, block)| b * BLOCK + block.iter().position(|v| !v.to_f64().is_finite()).unwrap_or(0))
}

/// Checks a row-major matrix (`row_len` values per row) for NaN and infinity on the
/// current pool; the error names the first bad entry's row and column.
pub(crate) fn check_finite_rows<T: Real>(data: &[T], row_len: usize, name: &'static str) -> crate::Result<()> {
    match first_non_finite(data) {
        None => Ok(()),
        Some(at) => {
            let row_len = row_len.max(1);
            Err(Error::input(name, format!("contains NaN or infinity (row {}, column {})", at / row_len, at % row_len)))
        }
    }
}

/// Checks a small array argument for NaN and infinity (on the calling thread).
pub(crate) fn check_finite_small(values: &[f64], name: &str) -> PyResult<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(at) => Err(invalid(name, format!("contains NaN or infinity (entry {at} in C order)"))),
    }
}

/// Checks one row for NaN and infinity. Called per row inside the parallel batch right
/// after the kernel has read the same row (so the check runs on all threads and finds
/// the row in cache); a failed check wins over the kernel's result, which is dropped.
/// The kernels cannot panic or loop on non-finite input, and a panic would be caught.
fn check_finite<T: Real>(row: &[T], index: usize, name: &'static str) -> crate::Result<()> {
    if all_finite(row) {
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
        match $crate::bindings::arrays::float_type(obj, $name)? {
            $crate::bindings::arrays::Float::F64 => {
                type $t = f64;
                let a = $crate::bindings::arrays::array_in::<f64, ndarray::IxDyn>(obj, $name)?;
                let $rows = rows(&a, $name)?;
                $body
            }
            $crate::bindings::arrays::Float::F32 => {
                type $t = f32;
                let a = $crate::bindings::arrays::array_in::<f32, ndarray::IxDyn>(obj, $name)?;
                let $rows = rows(&a, $name)?;
                $body
            }
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
        let data: &[T] = rows.data;
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
        let data: &[T] = rows.data;
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
        let loss = if rows.is_batch() {
            to_numpy(py, loss, &[n_rows])?
        } else {
            loss[0].to_f64().into_pyobject(py)?.into_any()
        };
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
        let data: &[T] = rows.data;
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
pub(crate) fn labels(y: &Bound<'_, PyAny>, z: &Bound<'_, PyAny>, z_name: &str) -> PyResult<Vec<usize>> {
    let (is_batch, n_rows, row_len) = float_shape(z, z_name)?;
    if n_rows == 0 || row_len == 0 {
        return Err(invalid(z_name, "is empty"));
    }
    let raw: Vec<i64> = if is_batch {
        if y.cast::<PyUntypedArray>().is_err() {
            return Err(invalid("y", format!("expected a 1-D int64 array with one label per row of {z_name}")));
        }
        let arr = array_in::<i64, ndarray::Ix1>(y, "y")?;
        if arr.len() != n_rows {
            return Err(invalid("y", format!("has {} labels but {z_name} has {n_rows} rows", arr.len())));
        }
        arr.as_slice()?.to_vec()
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
