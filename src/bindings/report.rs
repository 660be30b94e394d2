//! What every fit returns besides its arrays: one report type with the solvers' one
//! status vocabulary (`crate::solvers::Status`) and one history record, built here from
//! every core report (`solvers::Report`); and the dual fits' warm start in and arrays out.

use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;

use super::arrays::{array_in, indices, to_numpy};
use super::errors::to_py;
use crate::solvers::topk_svm::{DualMatrix, SparseDual};
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

/// A Prox-SDCA fit's dual rows to start from: None (a cold start), or `dual_coef`, a
/// dense n × m array ([`initial_dual`]) or a SciPy CSR matrix of that shape, read as
/// its `indptr`, `indices` and `data`; the core checks either.
pub(crate) fn initial_sdca_dual(
    dual_coef: Option<&Bound<'_, PyAny>>,
    n: usize,
    m: usize,
) -> PyResult<Option<DualMatrix>> {
    let Some(given) = dual_coef else {
        return Ok(None);
    };
    if !given.hasattr("indptr")? {
        return initial_dual(Some(given), n, m).map(|values| Some(DualMatrix::Dense(values)));
    }
    let shape: (usize, usize) = given.getattr("shape")?.extract()?;
    if shape != (n, m) {
        return Err(to_py(crate::Error::input("dual_coef", format!("must have shape ({n}, {m}), got {shape:?}"))));
    }
    let indptr = indices::<usize>(&given.getattr("indptr")?, "dual_coef")?;
    let classes = indices::<usize>(&given.getattr("indices")?, "dual_coef")?;
    let data = array_in::<f64, ndarray::Ix1>(&given.getattr("data")?, "dual_coef")?;
    let dual = SparseDual::from_csr(&indptr, &classes, data.as_slice()?, n, m).map_err(to_py)?;
    Ok(Some(DualMatrix::Sparse(dual)))
}

/// A dual fit's result for Python: the weights (m × width: one row per class or label;
/// None for a kernel fit), the dual rows (n × m: an array, or a SciPy CSR array where
/// the fit kept them sparse) and the report.
pub(crate) type Fitted<'py> = (Option<Bound<'py, PyAny>>, Bound<'py, PyAny>, FitReport);

/// Dual rows as Python receives them.
pub(crate) trait DualOut {
    fn into_python(self, py: Python<'_>, m: usize) -> PyResult<Bound<'_, PyAny>>;
}

impl DualOut for Vec<f64> {
    fn into_python(self, py: Python<'_>, m: usize) -> PyResult<Bound<'_, PyAny>> {
        let n = self.len().checked_div(m).unwrap_or(0);
        to_numpy(py, self, &[n, m])
    }
}

impl DualOut for DualMatrix {
    fn into_python(self, py: Python<'_>, m: usize) -> PyResult<Bound<'_, PyAny>> {
        match self {
            DualMatrix::Dense(values) => values.into_python(py, m),
            DualMatrix::Sparse(dual) => {
                let (indptr, classes, data) = dual.into_csr();
                let (n, nnz) = (indptr.len() - 1, classes.len());
                let arrays =
                    (to_numpy(py, data, &[nnz])?, to_numpy(py, classes, &[nnz])?, to_numpy(py, indptr, &[n + 1])?);
                py.import("scipy.sparse")?.getattr("csr_array")?.call1((arrays, (n, m)))
            }
        }
    }
}

pub(crate) fn fitted<'py, R: Report, A: DualOut>(
    py: Python<'py>,
    (coef, dual, report): crate::solvers::Fitted<R, A>,
    m: usize,
) -> PyResult<Fitted<'py>> {
    let coef = coef
        .map(|w| {
            let width = w.len().checked_div(m).unwrap_or(0);
            to_numpy(py, w, &[m, width])
        })
        .transpose()?;
    Ok((coef, dual.into_python(py, m)?, FitReport::from(&report)))
}
