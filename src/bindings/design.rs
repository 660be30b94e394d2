//! The design matrix X from Python, whatever its storage: a C-contiguous float32/float64
//! NumPy array or a scipy CSR matrix (float32/float64 data, int32/int64 indices), borrowed
//! without a copy and handed to a solver job that runs without the GIL (Ctrl-C and
//! progress as in `monitor.rs`).

use numpy::{Element, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::errors::invalid;
use super::monitor::{run_interruptible, PyMonitor};
use crate::data::{CsrIndex, CsrRows, DenseRows, Design};
use crate::Real;

/// Work that runs on X, generic over the design's type.
pub(crate) trait DesignJob: Send {
    type Output: Send;
    fn run<D: Design>(self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output>;
}

fn run_csr<T: Real + Element, I: CsrIndex + Element, J: DesignJob>(
    x: &Bound<'_, PyAny>,
    n_features: usize,
    threads: Option<usize>,
    callback: Option<Py<PyAny>>,
    job: J,
) -> PyResult<J::Output> {
    let data = x.getattr("data")?.extract::<PyReadonlyArray1<'_, T>>()?;
    let indices = x.getattr("indices")?.extract::<PyReadonlyArray1<'_, I>>()?;
    let indptr = x.getattr("indptr")?.extract::<PyReadonlyArray1<'_, I>>()?;
    let (data, indices, indptr) = (data.as_slice()?, indices.as_slice()?, indptr.as_slice()?);
    run_interruptible(x.py(), threads, callback, |monitor| {
        job.run(&CsrRows::new(indptr, indices, data, n_features)?, monitor)
    })
}

fn run_dense<T: Real + Element, J: DesignJob>(
    x: &Bound<'_, PyAny>,
    threads: Option<usize>,
    callback: Option<Py<PyAny>>,
    job: J,
) -> PyResult<J::Output> {
    let arr = x.extract::<PyReadonlyArray2<'_, T>>()?;
    let (n, d) = (arr.shape()[0], arr.shape()[1]);
    let data = arr.as_slice().map_err(|_| invalid("X", "must be C-contiguous (the facade copies other layouts)"))?;
    run_interruptible(x.py(), threads, callback, |monitor| job.run(&DenseRows::new(data, n, d)?, monitor))
}

/// Runs `job` on X on the requested pool, interruptible, with progress to `callback`.
pub(crate) fn with_design<J: DesignJob>(
    x: &Bound<'_, PyAny>,
    threads: Option<usize>,
    callback: Option<Py<PyAny>>,
    job: J,
) -> PyResult<J::Output> {
    if x.hasattr("indptr")? {
        let (_, d): (usize, usize) = x.getattr("shape")?.extract()?;
        let dtype = x.getattr("data")?.getattr("dtype")?.str()?.to_string();
        let itype = x.getattr("indices")?.getattr("dtype")?.str()?.to_string();
        match (dtype.as_str(), itype.as_str()) {
            ("float64", "int32") => run_csr::<f64, i32, J>(x, d, threads, callback, job),
            ("float64", "int64") => run_csr::<f64, i64, J>(x, d, threads, callback, job),
            ("float32", "int32") => run_csr::<f32, i32, J>(x, d, threads, callback, job),
            ("float32", "int64") => run_csr::<f32, i64, J>(x, d, threads, callback, job),
            _ => Err(invalid("X", format!("sparse data must be float32/float64 with int32/int64 indices, got {dtype}/{itype}"))),
        }
    } else {
        match x.getattr("dtype")?.str()?.to_string().as_str() {
            "float64" => run_dense::<f64, J>(x, threads, callback, job),
            "float32" => run_dense::<f32, J>(x, threads, callback, job),
            other => Err(invalid("X", format!("must be float32 or float64, got {other}"))),
        }
    }
}

/// Work that runs on a kernel matrix, generic over where its columns come from.
pub(crate) trait KernelJob: Send {
    type Output: Send;
    fn run<S: crate::kernels::KernelSource + ?Sized>(self, source: &S, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output>;
}

/// Runs `job` on the kernel of the dense examples `x` under `function`, or on `x` itself
/// as a precomputed (checked symmetric) Gram matrix when `function` is None. `x` is a
/// C-contiguous float32/float64 array (an `np.memmap` works: it is not copied).
pub(crate) fn with_kernel<J: KernelJob>(
    x: &Bound<'_, PyAny>,
    function: Option<crate::kernels::KernelFunction>,
    threads: Option<usize>,
    callback: Option<Py<PyAny>>,
    job: J,
) -> PyResult<J::Output> {
    fn run<T: Real + Element, J: KernelJob>(
        x: &Bound<'_, PyAny>,
        function: Option<crate::kernels::KernelFunction>,
        threads: Option<usize>,
        callback: Option<Py<PyAny>>,
        job: J,
    ) -> PyResult<J::Output> {
        let arr = x.extract::<PyReadonlyArray2<'_, T>>()?;
        let (rows, cols) = (arr.shape()[0], arr.shape()[1]);
        let data = arr.as_slice().map_err(|_| invalid("X", "must be C-contiguous (the facade copies other layouts)"))?;
        run_interruptible(x.py(), threads, callback, |monitor| match function {
            None => {
                let gram = crate::kernels::PrecomputedKernel::new(data, rows, cols)?;
                gram.check_symmetric(1e-6)?;
                job.run(&gram, monitor)
            }
            Some(f) => {
                let design = DenseRows::new(data, rows, cols)?;
                job.run(&crate::kernels::DataKernel::new(&design, f)?, monitor)
            }
        })
    }
    match x.getattr("dtype")?.str()?.to_string().as_str() {
        "float64" => run::<f64, J>(x, function, threads, callback, job),
        "float32" => run::<f32, J>(x, function, threads, callback, job),
        other => Err(invalid("X", format!("must be float32 or float64, got {other}"))),
    }
}
