//! What every fit returns besides its arrays: one report type with the solvers' one
//! status vocabulary (`crate::solvers::Status`) and one history record, built here from
//! every core report (`solvers::Report`); and the dual fits' warm start in and arrays out.

use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;

use super::arrays::{array_in, to_numpy};
use super::errors::to_py;
use crate::solvers::{relative_gap, Report};

/// The end of a solve: why it stopped, the iterations (epochs) run, the objectives and
/// their relative gap at the returned iterate, and every progress check as (iteration,
/// primal, dual, relative gap, seconds).
#[pyclass(module = "toprank._core", frozen, get_all)]
pub(crate) struct FitReport {
    status: String,
    n_iter: usize,
    primal: f64,
    dual: f64,
    gap: f64,
    history: Vec<(usize, f64, f64, f64, f64)>,
}

impl<R: Report> From<&R> for FitReport {
    fn from(report: &R) -> Self {
        let (status, n_iter, primal, dual, history) = report.summary();
        let history = history.iter().map(|p| (p.epoch, p.primal, p.dual, p.gap, p.elapsed.as_secs_f64())).collect();
        let (status, gap) = (status.as_str().to_owned(), relative_gap(primal, dual));
        Self { status, n_iter, primal, dual, gap, history }
    }
}

/// The dual rows a fit starts from (`solvers::initial_dual`): zeros, or `dual_coef`,
/// which the core checks to be n × m and finite.
pub(crate) fn initial_dual(dual_coef: Option<&Bound<'_, PyAny>>, n: usize, m: usize) -> PyResult<Vec<f64>> {
    let given = dual_coef.map(|a| array_in::<f64, ndarray::IxDyn>(a, "dual_coef")).transpose()?;
    let given = given.as_ref().map(|a| Ok::<_, PyErr>((a.as_slice()?, a.shape()))).transpose()?;
    crate::solvers::initial_dual(given, n, m).map_err(to_py)
}

/// A dual fit's result for Python: the weights (m × width: one row per class or label;
/// None for a kernel fit), the dual rows (n × m) and the report.
pub(crate) type Fitted<'py> = (Option<Bound<'py, PyAny>>, Bound<'py, PyAny>, FitReport);

pub(crate) fn fitted<'py, R: Report>(
    py: Python<'py>,
    (coef, dual, report): crate::solvers::Fitted<R>,
    m: usize,
) -> PyResult<Fitted<'py>> {
    let matrix = |values: Vec<f64>, rows_are_m: bool| {
        let other = values.len().checked_div(m).unwrap_or(0);
        to_numpy(py, values, &if rows_are_m { [m, other] } else { [other, m] })
    };
    let coef = coef.map(|w| matrix(w, true)).transpose()?;
    Ok((coef, matrix(dual, false)?, FitReport::from(&report)))
}
