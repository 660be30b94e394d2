//! Long solves from Python: progress lines through a Python callable, and Ctrl-C.
//!
//! CPython runs signal handlers only on its main thread, and a solve with `n_jobs` set
//! runs on a rayon worker. So the solve runs on a helper thread while the calling
//! thread (without the GIL) polls `check_signals` every 50 ms; a pending
//! KeyboardInterrupt (or any exception from a signal handler) sets an atomic flag that
//! the solver's [`Monitor`] reads between examples, and is re-raised after the solve.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pyo3::prelude::*;

use super::arrays::caught_to_py;
use super::errors::InternalError;
use crate::solvers::{Monitor, Progress};
use crate::threads;

const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Forwards progress to a Python callable; stops when asked to by the signal poller or
/// when the callable raised (its exception is re-raised after the solve).
pub(crate) struct PyMonitor<'a> {
    callback: Option<Py<PyAny>>,
    stop: &'a AtomicBool,
    pub(crate) error: Option<PyErr>,
}

impl Monitor for PyMonitor<'_> {
    fn report(&mut self, p: &Progress) {
        if let (None, Some(cb)) = (&self.error, &self.callback) {
            let args = (p.epoch, p.primal, p.dual, p.gap, p.elapsed.as_secs_f64());
            self.error = Python::attach(|py| cb.call1(py, args)).err();
        }
    }

    fn should_stop(&mut self) -> bool {
        self.error.is_some() || self.stop.load(Ordering::Relaxed)
    }

    fn stop_flag(&self) -> Option<&AtomicBool> {
        Some(self.stop)
    }
}

/// The result of a run that gives None only when its monitor asked it to stop, and then
/// [`run_interruptible`] has already returned the signal's exception: None here is a bug.
pub(crate) fn finished<R>(result: Option<R>, what: &str) -> PyResult<R> {
    result.ok_or_else(|| InternalError::new_err(format!("{what} stopped without a pending signal")))
}

/// Runs `work` without the GIL on the requested pool, interruptible by Ctrl-C: a
/// signal exception or an exception raised by `callback` wins over the result; a Rust
/// error becomes its Python exception; a panic becomes InternalError.
pub(crate) fn run_interruptible<R: Send>(
    py: Python<'_>,
    n_jobs: Option<usize>,
    callback: Option<Py<PyAny>>,
    work: impl FnOnce(&mut PyMonitor<'_>) -> crate::Result<R> + Send,
) -> PyResult<R> {
    let stop = AtomicBool::new(false);
    let (outcome, signal) = py.detach(|| {
        std::thread::scope(|scope| {
            // The solver says when it is done, so a short solve returns at once instead
            // of at the next poll.
            let (done, finished) = std::sync::mpsc::channel::<()>();
            let stop = &stop;
            let solver = scope.spawn(move || {
                let mut monitor = PyMonitor { callback, stop, error: None };
                let result = catch_unwind(AssertUnwindSafe(|| threads::install(n_jobs, || work(&mut monitor))));
                let _ = done.send(());
                (result, monitor.error)
            });
            let mut signal = None;
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(SIGNAL_POLL) {
                if signal.is_none() {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        signal = Some(e);
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            }
            (solver.join(), signal)
        })
    });
    if let Some(err) = signal {
        return Err(err);
    }
    let (result, callback_error) = outcome.map_err(|_| InternalError::new_err("toprank solver thread failed"))?;
    callback_error.map_or_else(|| caught_to_py(result), Err)
}
