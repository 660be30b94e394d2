//! Binding of the Prox-SDCA fit: the design matrix (dense, CSR or product-quantized
//! codes), or the kernel when the settings have one, in; one core call without the GIL
//! (`solvers::topk_svm::Fit`, linear or kernel); the arrays and a `FitReport` out.

use ndarray::Ix1;
use pyo3::prelude::*;

use super::arrays::{array_in, indices};
use super::design::{with_model, KernelSettings};
use super::report::{fitted, initial_sdca_dual, Fitted};
use super::threads;
use crate::solvers::topk_svm::{Examples, Fit, SdcaOptions, Settings};

/// `toprank._options.SdcaSettings`: the kernel (None: a linear fit) and the core's
/// settings and options, read from its attributes.
pub(crate) struct SdcaSettings {
    kernel: Option<KernelSettings>,
    fit: Settings,
}
by_attribute!(SdcaSettings { kernel; fit });
by_attribute!(Settings { n_classes, loss, k, smoothing, bias, parallel, dual_layout; options });
by_attribute!(SdcaOptions { tol, max_epochs, check_every, seed, shrinking });

/// `toprank._options.SdcaProblem`, read by attribute: the labels `y` (one per example,
/// or with `label_starts`, n + 1 offsets, label sets: example i's labels are
/// `y[label_starts[i]:label_starts[i + 1]]`, for the multi-label losses), the examples'
/// weights `c` and the dual rows to start from (`dual_coef`; None: a cold start).
#[derive(FromPyObject)]
pub(crate) struct SdcaProblem<'py> {
    y: Bound<'py, PyAny>,
    c: Bound<'py, PyAny>,
    label_starts: Option<Bound<'py, PyAny>>,
    dual_coef: Option<Bound<'py, PyAny>>,
}

/// Prox-SDCA fit (see `toprank.svm.TopKSVC`, `toprank.multilabel.MultiLabelSVC`) of
/// `problem`. Without `settings.kernel`, linear on `x`: dense, CSR, or the `codes` and
/// `codebooks` of a `toprank.pq.CompressedMatrix`; with one, on its kernel of the dense
/// `x`, or on `x` as the n × n Gram matrix for kernel="precomputed" (any C-contiguous
/// float array, e.g. an `np.memmap`; not copied). Returns (coef, None for a kernel fit;
/// dual_coef; report).
#[pyfunction]
#[pyo3(signature = (x, problem, settings, *, n_jobs=None, callback=None))]
pub(crate) fn topk_svm_fit<'py>(
    x: &Bound<'py, PyAny>,
    problem: SdcaProblem<'py>,
    settings: SdcaSettings,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<Fitted<'py>> {
    let threads = threads::resolve(n_jobs)?;
    let (y, c) = (indices::<usize>(&problem.y, "y")?, array_in::<f64, Ix1>(&problem.c, "c")?);
    let starts = problem.label_starts.as_ref().map(|starts| indices::<usize>(starts, "label_starts")).transpose()?;
    let (kernel, m) = (settings.kernel.as_ref(), settings.fit.n_classes);
    // n: one label each, or one label set between consecutive offsets (the core checks
    // the offsets, labels and weights against X's rows).
    let (examples, n) = match &starts {
        Some(starts) => (Examples::with_label_sets(&y, starts, c.as_slice()?), starts.len().saturating_sub(1)),
        None => (Examples::new(&y, c.as_slice()?), y.len()),
    };
    let dual = initial_sdca_dual(problem.dual_coef.as_ref(), n, m)?;
    let job = Fit::new(&settings.fit, examples, dual, kernel.map_or(0.0, |k| k.cache_size))?;
    fitted(x.py(), with_model(x, kernel, threads, callback, job)?, m)
}
