//! The design matrix X from Python, whatever its storage: a float32/float64 NumPy array,
//! a scipy CSR matrix (float32/float64 data, int32/int64 indices) or product-quantized
//! rows (an object with `codes` and `codebooks`, decoded row by row), taken through
//! `arrays::array_in` (borrowed when C-ordered and aligned, else copied once) and handed
//! to a solver job of the core (`data::DesignJob`) that runs without the GIL (Ctrl-C and
//! progress as in `monitor.rs`); or the kernel of dense examples under a
//! `toprank._options.KernelSettings` (or X as a precomputed Gram matrix) to a
//! `kernels::KernelJob`. The core's jobs check X for NaN and infinity first, on the job's
//! pool.

use ndarray::{Ix1, Ix2, Ix3};
use numpy::{Element, PyReadonlyArray2, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::arrays::{array_in, is_wide, run_detached, to_numpy, with_float};
use super::errors::invalid;
use super::monitor::run_interruptible;
use crate::data::CsrIndex;
pub(crate) use crate::data::DesignJob;
use crate::kernels::cross_kernel;
pub(crate) use crate::kernels::{KernelJob, KernelSettings};
use crate::pq::Codebooks;
use crate::threads;
use crate::Real;

// `toprank._options.KernelSettings`.
by_attribute!(KernelSettings { kernel, gamma, degree, coef0, cache_size });

/// A dense X as the core reads it: (values, rows, columns).
fn dense<'a, T: Element>(x: &'a PyReadonlyArray2<'_, T>) -> PyResult<(&'a [T], usize, usize)> {
    Ok((x.as_slice()?, x.shape()[0], x.shape()[1]))
}

/// The codebooks argument (M × 2^bits × dsub float32), read from its checked array.
pub(crate) fn codebooks<'a>(books: &'a PyReadonlyArray3<'_, f32>) -> PyResult<Codebooks<'a>> {
    let shape = books.shape();
    Ok(Codebooks::new(books.as_slice()?, shape[0], shape[1], shape[2])?)
}

fn run_csr<T: Real + Element, I: CsrIndex + Element, J: DesignJob>(
    x: &Bound<'_, PyAny>,
    n_features: usize,
    threads: Option<usize>,
    callback: Option<Py<PyAny>>,
    job: J,
) -> PyResult<J::Output> {
    let data = array_in::<T, Ix1>(&x.getattr("data")?, "X")?;
    let indices = array_in::<I, Ix1>(&x.getattr("indices")?, "X")?;
    let indptr = array_in::<I, Ix1>(&x.getattr("indptr")?, "X")?;
    let csr = (indptr.as_slice()?, indices.as_slice()?, data.as_slice()?);
    run_interruptible(x.py(), threads, callback, |monitor| job.on_csr(csr, n_features, monitor))
}

/// Runs `job` on X on the requested pool, interruptible, with progress to `callback`.
pub(crate) fn with_design<J: DesignJob>(
    x: &Bound<'_, PyAny>,
    threads: Option<usize>,
    callback: Option<Py<PyAny>>,
    job: J,
) -> PyResult<J::Output> {
    if x.hasattr("codes")? && x.hasattr("codebooks")? {
        // Product-quantized rows, such as a `toprank.pq.CompressedMatrix`'s.
        let codes = array_in::<u8, Ix2>(&x.getattr("codes")?, "X")?;
        let books = array_in::<f32, Ix3>(&x.getattr("codebooks")?, "codebooks")?;
        let (codes, books) = (codes.as_slice()?, codebooks(&books)?);
        return run_interruptible(x.py(), threads, callback, |monitor| job.on_coded(books, codes, monitor));
    }
    if !x.hasattr("indptr")? {
        return with_float!(x, "X", |T| {
            let x_array = array_in::<T, Ix2>(x, "X")?;
            let (data, n, d) = dense(&x_array)?;
            run_interruptible(x.py(), threads, callback, |monitor| job.on_dense(data, n, d, monitor))
        });
    }
    let (_, d): (usize, usize) = x.getattr("shape")?.extract()?;
    // The CSR index type: int64 if either index array is, else int32.
    if is_wide(&x.getattr("indices")?, "X", b'i')? | is_wide(&x.getattr("indptr")?, "X", b'i')? {
        with_float!(&x.getattr("data")?, "X", |T| run_csr::<T, i64, J>(x, d, threads, callback, job))
    } else {
        with_float!(&x.getattr("data")?, "X", |T| run_csr::<T, i32, J>(x, d, threads, callback, job))
    }
}

/// Runs `job` on the kernel of the dense examples `x` under `kernel`, or on `x` itself
/// as a precomputed (checked finite and symmetric) Gram matrix for kernel="precomputed".
/// `x` is a float32/float64 array (a C-ordered `np.memmap` is read in place).
pub(crate) fn with_kernel<J: KernelJob>(
    x: &Bound<'_, PyAny>,
    kernel: &KernelSettings,
    threads: Option<usize>,
    callback: Option<Py<PyAny>>,
    job: J,
) -> PyResult<J::Output> {
    let function = kernel.function()?;
    with_float!(x, "X", |T| {
        let x_array = array_in::<T, Ix2>(x, "X")?;
        let (data, rows, cols) = dense(&x_array)?;
        run_interruptible(x.py(), threads, callback, |monitor| job.on_rows(data, (rows, cols), function, monitor))
    })
}

/// Runs a job that fits either model on X: on the design ([`with_design`]) when `kernel`
/// is None, else on the kernel ([`with_kernel`]).
pub(crate) fn with_model<J, R>(
    x: &Bound<'_, PyAny>,
    kernel: Option<&KernelSettings>,
    threads: Option<usize>,
    callback: Option<Py<PyAny>>,
    job: J,
) -> PyResult<R>
where
    J: DesignJob<Output = R> + KernelJob<Output = R>,
{
    match kernel {
        None => with_design(x, threads, callback, job),
        Some(kernel) => with_kernel(x, kernel, threads, callback, job),
    }
}

/// K(z_r, x_j) for all test rows r and training rows j (`x`, "X_fit"): the (n_z, n_x)
/// cross kernel that kernel models predict with (`kernels::cross_kernel`).
#[pyfunction]
#[pyo3(signature = (z, x, kernel, *, n_jobs=None))]
pub(crate) fn kernel_cross<'py>(
    z: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    kernel: KernelSettings,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let f = kernel.function()?.ok_or_else(|| invalid("kernel", "a precomputed kernel has no cross kernel"))?;
    let (z, x) = (array_in::<f64, Ix2>(z, "X")?, array_in::<f64, Ix2>(x, "X_fit")?);
    let ((zs, nz, zd), (xs, nx, d)) = (dense(&z)?, dense(&x)?);
    let out = run_detached(z.py(), threads::resolve(n_jobs)?, || cross_kernel(zs, zd, xs, d, f))?;
    to_numpy(z.py(), out, &[nz, nx])
}
