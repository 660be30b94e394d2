//! How a solver talks to its caller while it runs: progress reports at each duality-gap
//! check, and a cheap, frequent question "should I stop?" (Ctrl-C from Python, a time
//! budget...). Kept as a trait so the core has no idea Python exists.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Why a solver stopped: one vocabulary for every solver (`status_` of every estimator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The relative duality gap fell below the tolerance.
    Converged,
    /// The iteration budget (`max_iter`, or `max_epochs` for Prox-SDCA) ran out first.
    MaxIter,
    /// The dual objective stopped increasing before the gap closed (round-off floor).
    NoProgress,
    /// The monitor asked to stop (e.g. KeyboardInterrupt).
    Interrupted,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Converged => "converged",
            Status::MaxIter => "max_iter",
            Status::NoProgress => "no_progress",
            Status::Interrupted => "interrupted",
        }
    }
}

/// The stopping measure of every dual solver: (P − D) / max(|P|, |D|), 0 when both
/// vanish (the zero model is then optimal).
pub fn relative_gap(primal: f64, dual: f64) -> f64 {
    let scale = primal.abs().max(dual.abs());
    if scale == 0.0 {
        0.0
    } else {
        (primal - dual) / scale
    }
}

/// One duality-gap check.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    pub epoch: usize,
    pub primal: f64,
    pub dual: f64,
    /// Relative duality gap (P − D) / max(|P|, |D|).
    pub gap: f64,
    pub elapsed: Duration,
}

/// Receives progress and decides about early stops.
pub trait Monitor {
    /// Called at every gap check.
    fn report(&mut self, _progress: &Progress) {}
    /// Polled often (every few milliseconds of work); `true` stops the solver.
    fn should_stop(&mut self) -> bool {
        false
    }
    /// The flag behind `should_stop`, if there is one, for work that polls from several
    /// threads at once and cannot call `should_stop` (`&mut`): a parallel duality-gap
    /// evaluation, which with a kernel costs about an epoch.
    fn stop_flag(&self) -> Option<&AtomicBool> {
        None
    }
}

/// What every solver's report says, read the same way whatever the solver (the one report
/// type of the bindings is built from it).
pub trait Report {
    /// Why the solver stopped, the iterations (epochs) run, the primal and dual objectives
    /// at the returned iterate, and every progress check.
    fn summary(&self) -> (Status, usize, f64, f64, &[Progress]);
}

/// A monitor that never reports and never stops.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Monitor for Silent {}
