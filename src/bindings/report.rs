//! What every fit returns besides its arrays: one report type with the solvers' one
//! status vocabulary (`crate::solvers::Status`) and one history record, built here from
//! the core's reports.

use pyo3::prelude::*;

use crate::solvers::attop::AtTopReport;
use crate::solvers::m3l::M3lReport;
use crate::solvers::sdca::SdcaReport;
use crate::solvers::{relative_gap, Progress, Status};

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

impl FitReport {
    fn new(status: Status, n_iter: usize, primal: f64, dual: f64, history: &[Progress]) -> Self {
        let history = history.iter().map(|p| (p.epoch, p.primal, p.dual, p.gap, p.elapsed.as_secs_f64())).collect();
        let gap = relative_gap(primal, dual);
        Self { status: status.as_str().to_owned(), n_iter, primal, dual, gap, history }
    }
}

impl From<&SdcaReport> for FitReport {
    fn from(r: &SdcaReport) -> Self {
        Self::new(r.status, r.epochs, r.objectives.primal, r.objectives.dual, &r.history)
    }
}

impl From<&AtTopReport> for FitReport {
    fn from(r: &AtTopReport) -> Self {
        Self::new(r.status, r.iterations, r.objectives.primal, r.objectives.dual, &r.history)
    }
}

impl From<&M3lReport> for FitReport {
    fn from(r: &M3lReport) -> Self {
        Self::new(r.status, r.iterations, r.primal, r.dual, &r.history)
    }
}
