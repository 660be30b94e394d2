//! NumPy arrays in and out, one way each: an argument is read with [`array_in`] (or
//! [`array_exact`], [`indices`]), float32/float64 dispatch is [`with_float`] (and
//! [`with_float_rows`] for a row or a batch of rows), results leave through
//! [`to_numpy`], and a one-row kernel of the core runs on every row with [`map_rows`]
//! or [`loss_rows`] (without the GIL, a panic caught).
//!
//! The core reads arrays as slices: C order, aligned, native byte order. An argument
//! that already is one is borrowed (read-only and memory-mapped arrays included); any
//! other — misaligned, strided, Fortran-ordered, big-endian — is copied once by NumPy.
//! Arrays that crossed a process boundary are routinely misaligned: pickle protocol 5
//! (Dask's out-of-band buffers) places them at any byte offset of a message.

use std::panic::{catch_unwind, AssertUnwindSafe};

use ndarray::{Dimension, IxDyn};
use numpy::{
    Element, IntoPyArray, PyArray, PyArrayDescr, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArray,
    PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use super::errors::{invalid, to_py, InternalError};
use crate::batch::{self, RowMask, Rows};
use crate::projections::Workspace;
use crate::threads;
use crate::Real;

/// `obj` as a NumPy array, or an error naming the argument and the dtype expected.
fn numpy_array<'a, 'py>(
    obj: &'a Bound<'py, PyAny>,
    name: &str,
    expected: &str,
) -> PyResult<&'a Bound<'py, PyUntypedArray>> {
    obj.cast::<PyUntypedArray>().map_err(|_| {
        let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an unknown type".into());
        invalid(name, format!("expected a numpy.ndarray of {expected}, got {type_name}"))
    })
}

/// NumPy's name of a dtype, with its byte order when that is not the native one.
fn dtype_name(dtype: &Bound<'_, PyArrayDescr>) -> String {
    let name = dtype.getattr("name").map(|n| n.to_string()).unwrap_or_else(|_| dtype.to_string());
    match dtype.is_native_byteorder() {
        Some(false) => format!("{name} (big-endian)"),
        _ => name,
    }
}

/// Whether `obj` is an array of 8-byte entries of `kind` (b'f': float64, b'i': int64),
/// else of 4-byte ones (float32, int32; either byte order); anything else is refused
/// naming the argument. The test of [`with_float`] (whose expansions need it visible) and
/// of a CSR matrix's index arrays.
pub(crate) fn is_wide(obj: &Bound<'_, PyAny>, name: &str, kind: u8) -> PyResult<bool> {
    let pair = if kind == b'f' { "float32 or float64" } else { "int32 or int64" };
    let dtype = numpy_array(obj, name, pair)?.dtype();
    match (dtype.kind() == kind, dtype.itemsize()) {
        (true, 8) => Ok(true),
        (true, 4) => Ok(false),
        _ => Err(invalid(name, format!("expected dtype {pair}, got {}", dtype_name(&dtype)))),
    }
}

/// Runs `$body` with the type `$t` set to the element type (f64 or f32) of the float
/// array `$obj`; anything else is refused naming `$name`.
macro_rules! with_float {
    ($obj:expr, $name:expr, |$t:ident| $body:expr) => {
        if $crate::bindings::arrays::is_wide($obj, $name, b'f')? {
            type $t = f64;
            $body
        } else {
            type $t = f32;
            $body
        }
    };
}
pub(crate) use with_float;

/// [`with_float`] that also binds `$rows` to the checked `batch::Rows` of the array
/// (borrowed, never copied).
macro_rules! with_float_rows {
    ($obj:expr, $name:expr, |$rows:ident: $t:ident| $body:expr) => {{
        let (obj, name): (&::pyo3::Bound<'_, ::pyo3::PyAny>, &'static str) = ($obj, $name);
        $crate::bindings::arrays::with_float!(obj, name, |$t| {
            let array = $crate::bindings::arrays::array_in::<$t, ndarray::IxDyn>(obj, name)?;
            let $rows = $crate::bindings::arrays::rows(&array, name)?;
            $body
        })
    }};
}
pub(crate) use with_float_rows;

/// `obj` as an array of `D`'s dimension (or an error naming the argument), and the dtype
/// of `T`.
fn untyped<'a, 'py, T: Element, D: Dimension>(
    obj: &'a Bound<'py, PyAny>,
    name: &str,
) -> PyResult<(&'a Bound<'py, PyUntypedArray>, Bound<'py, PyArrayDescr>)> {
    let want = T::get_dtype(obj.py());
    let arr = numpy_array(obj, name, &dtype_name(&want))?;
    match D::NDIM {
        Some(ndim) if arr.ndim() != ndim => Err(invalid(
            name,
            format!("expected a {ndim}-D array, got a {}-D array of shape {:?}", arr.ndim(), arr.shape()),
        )),
        _ => Ok((arr, want)),
    }
}

/// `arr` (which is `obj`) as the core reads it: `obj` itself when it is C-ordered,
/// aligned and of dtype `want`, else a C-ordered, aligned copy of dtype `want` (native
/// byte order) made by NumPy.
fn readable<'py, T: Element, D: Dimension>(
    obj: &Bound<'py, PyAny>,
    arr: &Bound<'py, PyUntypedArray>,
    name: &str,
    want: &Bound<'py, PyArrayDescr>,
) -> PyResult<Bound<'py, PyArray<T, D>>> {
    let copy = !(arr.dtype().is_equiv_to(want) && arr.is_c_contiguous() && arr.is_aligned());
    // `numpy.require` with "CA": C order and aligned, as `as_slice` needs.
    let source = if copy { obj.py().import("numpy")?.call_method1("require", (obj, want, "CA"))? } else { obj.clone() };
    source.cast_into::<PyArray<T, D>>().map_err(|e| InternalError::new_err(format!("{name}: {e}")))
}

/// An array argument as the core reads it (`as_slice` succeeds): borrowed when it is a
/// C-ordered, aligned array of `T` (read-only and memory-mapped ones included), else one
/// copy converted to `T` — from a misaligned, strided, Fortran-ordered or big-endian
/// array, or from a narrower dtype of the same kind (float32 for a float64 argument,
/// int32 or uint32 for int64). Anything else is refused naming the argument.
pub(crate) fn array_in<'py, T: Element, D: Dimension>(
    obj: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<PyReadonlyArray<'py, T, D>> {
    let (arr, want) = untyped::<T, D>(obj, name)?;
    let have = arr.dtype();
    let (kind, size) = (have.kind(), have.itemsize());
    let same_kind = kind == want.kind() || (kind == b'u' && want.kind() == b'i' && size < want.itemsize());
    if !(same_kind && size <= want.itemsize()) {
        return Err(invalid(name, format!("expected dtype {}, got {}", dtype_name(&want), dtype_name(&have))));
    }
    readable::<T, D>(obj, arr, name, &want)?
        .try_readonly()
        .map_err(|_| invalid(name, "is being written by another call (a Rust extension borrowed it)"))
}

/// [`array_in`] for an argument that must have `T`'s dtype exactly (in either byte
/// order): state that goes back to the caller in the dtype of another argument, which a
/// conversion would change.
pub(crate) fn array_exact<'py, T: Element, D: Dimension>(
    obj: &Bound<'py, PyAny>,
    name: &str,
    like: &str,
) -> PyResult<PyReadonlyArray<'py, T, D>> {
    let (arr, want) = untyped::<T, D>(obj, name)?;
    if arr.dtype().kind() != want.kind() || arr.dtype().itemsize() != want.itemsize() {
        let (want, have) = (dtype_name(&want), dtype_name(&arr.dtype()));
        return Err(invalid(name, format!("expected dtype {want} (the dtype of {like}), got {have}")));
    }
    array_in(obj, name)
}

/// A 1-D integer array (int64, or a narrower integer dtype) as indices of type `I`; an
/// entry that is negative or does not fit `I` is refused naming the argument.
pub(crate) fn indices<I: TryFrom<i64>>(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<I>> {
    let a = array_in::<i64, ndarray::Ix1>(obj, name)?;
    let index = |(at, &v): (usize, &i64)| {
        I::try_from(v).map_err(|_| invalid(name, format!("entry {at} ({v}) is not an index: negative or too large")))
    };
    a.as_slice()?.iter().enumerate().map(index).collect()
}

/// A core result caught with `catch_unwind` as a Python result: errors map through
/// `to_py`, a panic becomes InternalError with the panic message.
pub(crate) fn caught_to_py<R>(outcome: std::thread::Result<crate::Result<R>>) -> PyResult<R> {
    match outcome {
        Ok(result) => result.map_err(to_py),
        Err(panic) => {
            let what =
                panic.downcast_ref::<String>().map(String::as_str).or_else(|| panic.downcast_ref::<&str>().copied());
            Err(InternalError::new_err(format!("toprank core panicked: {}", what.unwrap_or("unknown panic"))))
        }
    }
}

/// Runs `work` without the GIL on the requested pool; a panic becomes InternalError.
pub(crate) fn run_detached<R: Send>(
    py: Python<'_>,
    n_jobs: Option<usize>,
    work: impl FnOnce() -> crate::Result<R> + Send,
) -> PyResult<R> {
    caught_to_py(py.detach(|| catch_unwind(AssertUnwindSafe(|| threads::install(n_jobs, work)))))
}

/// `data` (row-major) as a NumPy array of `shape`.
pub(crate) fn to_numpy<'py, T: Element>(py: Python<'py>, data: Vec<T>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let array = ndarray::ArrayD::from_shape_vec(IxDyn(shape), data)
        .map_err(|e| InternalError::new_err(format!("output shape: {e}")))?;
    Ok(array.into_pyarray(py).into_any())
}

/// The checked rows of an array argument (`array_in`): borrowed, never copied.
pub(crate) fn rows<'a, T: Real + Element>(
    arr: &'a PyReadonlyArrayDyn<'_, T>,
    name: &'static str,
) -> PyResult<Rows<'a, T>> {
    Ok(Rows::new(arr.as_slice()?, arr.shape(), name)?)
}

impl<T: Real + Element> Rows<'_, T> {
    /// Labels for these rows: an int for a 1-D array, an int64 array with one label per
    /// row for a batch; each in [0, row_len) (`batch::labels`).
    pub(crate) fn labels(&self, y: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
        let (batch, name, n_rows) = (self.shape.len() == 2, self.name, self.n_rows);
        let raw = if batch {
            if y.cast::<PyUntypedArray>().is_err() {
                return Err(invalid("y", format!("expected a 1-D int64 array with one label per row of {name}")));
            }
            array_in::<i64, ndarray::Ix1>(y, "y")?.as_slice()?.to_vec()
        } else {
            vec![y.extract::<i64>().map_err(|_| invalid("y", format!("expected an int label for a 1-D {name}")))?]
        };
        Ok(batch::labels(&raw, (name, n_rows, self.row_len), batch)?)
    }

    /// A boolean mask of these rows' shape (`batch::Rows::mask_of`), the argument `arg`
    /// (`positive` of the bipartite simplex, the label sets `y` of the multi-label
    /// losses), read like any array argument and copied once (a byte per entry) so that it
    /// outlives the borrow.
    pub(crate) fn mask(&self, obj: &Bound<'_, PyAny>, arg: &'static str) -> PyResult<RowMask> {
        let arr = array_in::<bool, IxDyn>(obj, arg)?;
        Ok(self.mask_of(arr.as_slice()?.to_vec(), arr.shape(), arg)?)
    }

    /// Runs `work(parallel)` without the GIL, in parallel on the requested pool or
    /// serially where the core says a pool is not worth it (`batch::on_pool`).
    fn run<R: Send>(
        &self,
        py: Python<'_>,
        n_jobs: Option<usize>,
        work: impl FnOnce(bool) -> crate::Result<R> + Send,
    ) -> PyResult<R> {
        run_detached(py, None, || batch::on_pool(self.data.len(), n_jobs, work))
    }

    /// A zeroed array of the rows' shape and dtype, filled by `fill`. NumPy allocates it:
    /// its allocator asks the kernel for huge pages on large arrays, where a Rust `Vec`
    /// would take one page fault per 4 KiB when first written — on a VM more than the
    /// kernels cost.
    fn filled<'py, R>(
        &self,
        py: Python<'py>,
        fill: impl FnOnce(&mut [T]) -> PyResult<R>,
    ) -> PyResult<(R, Bound<'py, PyAny>)> {
        let out = PyArrayDyn::<T>::zeros(py, IxDyn(self.shape), false);
        let result = fill(out.readwrite().as_slice_mut()?)?;
        Ok((result, out.into_any()))
    }
}

/// `f` on every row of `x`, writing an output row: an array of x's shape and dtype.
pub(crate) fn map_rows<'py, T: Real + Element, R>(
    py: Python<'py>,
    x: &Rows<'_, T>,
    n_jobs: Option<usize>,
    f: impl Fn(usize, &[T], &mut [T], &mut Workspace) -> crate::Result<R> + Sync,
) -> PyResult<Bound<'py, PyAny>> {
    let ((), out) = x.filled(py, |out| x.run(py, n_jobs, |parallel| x.map(out, parallel, &f)))?;
    Ok(out)
}

/// `f` on every row of `z`, writing the gradient row and returning the loss: the tuple
/// (the losses: a float for a 1-D array, an (n,) array for a batch; the gradient: an
/// array of z's shape and dtype).
pub(crate) fn loss_rows<'py, T: Real + Element>(
    py: Python<'py>,
    z: &Rows<'_, T>,
    n_jobs: Option<usize>,
    f: impl Fn(usize, &[T], &mut [T], &mut Workspace) -> crate::Result<f64> + Sync,
) -> PyResult<Bound<'py, PyAny>> {
    let (losses, grad) = z.filled(py, |grad| z.run(py, n_jobs, |parallel| z.losses(grad, parallel, &f)))?;
    let losses = match z.shape.len() {
        2 => to_numpy(py, losses, &[z.n_rows])?,
        _ => losses[0].to_f64().into_pyobject(py)?.into_any(),
    };
    Ok((losses, grad).into_pyobject(py)?.into_any())
}
