//! The fit as the estimator runs it, from one set of options: kernel SMO ([`fit_smo`],
//! the intercept as a kernel shift) on a kernel, linear DCD with shrinking
//! ([`solve_dcd`]) on a design, both from α = 0.

use super::dcd::{solve_dcd, DcdOptions};
use super::problem::M3l;
use super::smo::{fit_smo, M3lReport, SmoOptions};
use crate::data::{Design, DesignJob};
use crate::kernels::{KernelJob, KernelSource};
use crate::solvers::{Fitted, Monitor, Progress, Report, Status};
use crate::Result;

/// The settings of either solver.
#[derive(Debug, Clone, Copy)]
pub struct M3lOptions {
    pub tol: f64,
    /// SMO's outer iterations, DCD's epochs, at most.
    pub max_iter: usize,
    /// The constant feature's value (intercept), or None.
    pub bias: Option<f64>,
    /// DCD's epochs' order.
    pub seed: u64,
    /// DCD's shrinking.
    pub shrinking: bool,
    /// SMO's outer iterations between progress reports.
    pub report_every: usize,
}

/// One fit of `problem` from α = 0 (SMO's kernel columns cached in `cache_mb` MB):
/// Z (L × (d [+ 1 for the bias feature]); None for SMO), α (N × L) and the report.
pub struct Fit<'a> {
    pub problem: M3l<'a>,
    pub options: M3lOptions,
    pub cache_mb: f64,
}

impl Fit<'_> {
    fn cold_start(&self) -> Result<Vec<f64>> {
        crate::solvers::initial_dual(None, self.problem.n, self.problem.labels)
    }
}

impl Report for M3lReport {
    fn summary(&self) -> (Status, usize, f64, f64, &[Progress]) {
        (self.status, self.iterations, self.primal, self.dual, &self.history)
    }
}

impl KernelJob for Fit<'_> {
    type Output = Fitted<M3lReport>;
    fn run<S: KernelSource + ?Sized>(self, source: &S, monitor: &mut dyn Monitor) -> Result<Self::Output> {
        let (o, mut alpha) = (self.options, self.cold_start()?);
        let opts = SmoOptions {
            tol: o.tol,
            max_iter: o.max_iter,
            report_every: o.report_every,
            bias: o.bias,
            cache_mb: self.cache_mb,
        };
        let report = fit_smo(&self.problem, source, &mut alpha, &opts, monitor)?;
        Ok((None, alpha, report))
    }
}

impl DesignJob for Fit<'_> {
    type Output = Fitted<M3lReport>;
    fn run<D: Design>(self, x: &D, monitor: &mut dyn Monitor) -> Result<Self::Output> {
        let (o, mut alpha) = (self.options, self.cold_start()?);
        let opts = DcdOptions { tol: o.tol, max_iter: o.max_iter, seed: o.seed, bias: o.bias, shrinking: o.shrinking };
        let (report, z) = solve_dcd(&self.problem, x, &mut alpha, &opts, monitor)?;
        Ok((Some(z), alpha, report))
    }
}
