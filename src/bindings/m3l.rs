//! Binding of the M3L fit: the problem's arrays in (checked by the core, `M3l::new`), one
//! core call without the GIL (`solvers::m3l::Fit`: kernel SMO on the kernel of the
//! settings, or a precomputed Gram matrix, not copied, when they have one, else linear
//! DCD on a dense or CSR design) and the arrays, a `FitReport` and the largest
//! |projected gradient| out.

use ndarray::{Ix1, Ix2};
use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;

use super::arrays::array_in;
use super::design::{with_model, KernelSettings};
use super::report::{fitted, FitReport};
use crate::solvers::m3l::{Fit, M3l, M3lOptions};
use crate::threads;

/// `toprank._options.M3lSettings`: C, the kernel (None: linear DCD) and the core's
/// options of either solver, read from its attributes.
pub(crate) struct M3lSettings {
    c: f64,
    kernel: Option<KernelSettings>,
    options: M3lOptions,
}
by_attribute!(M3lSettings { c, kernel; options });
by_attribute!(M3lOptions { tol, max_iter, bias, seed, shrinking, report_every });

/// `toprank._options.M3lProblem`, read by attribute: Y (±1, n × L), the label prior R
/// (L × L), the losses Δ⁺ and Δ⁻ (n × L) and the examples' weights of C (checked by the
/// core, `M3l::new` and `M3l::with_weights`).
#[derive(FromPyObject)]
pub(crate) struct M3lProblem<'py> {
    y: Bound<'py, PyAny>,
    r: Bound<'py, PyAny>,
    delta_plus: Bound<'py, PyAny>,
    delta_minus: Bound<'py, PyAny>,
    sample_weight: Option<Bound<'py, PyAny>>,
}

/// A fit's arrays and report (`report::Fitted`) and the largest |projected gradient|.
type M3lFitted<'py> = (Option<Bound<'py, PyAny>>, Bound<'py, PyAny>, FitReport, f64);

/// M3L on `problem` from α = 0. With `settings.kernel`, kernel SMO on `x`'s kernel (or
/// `x` as the Gram matrix for kernel="precomputed"); without, linear DCD with shrinking
/// on `x` (dense or CSR). Returns (Z: n_labels × (n_features [+ 1]), None for SMO;
/// dual_coef; report; the largest |projected gradient|).
#[pyfunction]
#[pyo3(signature = (x, problem, settings, *, n_jobs=None, callback=None))]
pub(crate) fn m3l_fit<'py>(
    x: &Bound<'py, PyAny>,
    problem: M3lProblem<'py>,
    settings: M3lSettings,
    n_jobs: Option<i64>,
    callback: Option<Py<PyAny>>,
) -> PyResult<M3lFitted<'py>> {
    let threads = threads::resolve(n_jobs)?;
    let read = |(a, name)| array_in::<f64, Ix2>(a, name);
    let p = &problem;
    let [y, r, plus, minus] = [(&p.y, "Y"), (&p.r, "R"), (&p.delta_plus, "loss"), (&p.delta_minus, "loss")].map(read);
    let (y, r, plus, minus) = (y?, r?, plus?, minus?);
    let (n, labels) = (y.shape()[0], y.shape()[1]);
    let weights = p.sample_weight.as_ref().map(|w| array_in::<f64, Ix1>(w, "sample_weight")).transpose()?;
    let m3l = M3l::new(n, labels, y.as_slice()?, r.as_slice()?, settings.c, plus.as_slice()?, minus.as_slice()?)?
        .with_weights(weights.as_ref().map(|w| w.as_slice()).transpose()?)?;
    let (kernel, options) = (settings.kernel.as_ref(), settings.options);
    let job = Fit { problem: m3l, options, cache_mb: kernel.map_or(0.0, |k| k.cache_size) };
    let out = with_model(x, kernel, threads, callback, job)?;
    let violation = out.2.max_violation;
    let (coef, dual, report) = fitted(x.py(), out, labels)?;
    Ok((coef, dual, report, violation))
}
