//! The one place where core errors become Python exceptions.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::Error;

/// The exceptions of `toprank.exceptions`: each `Name(Base): "docstring";` is created,
/// and `register` adds them all to the module.
macro_rules! exceptions {
    ($($name:ident($base:ty): $doc:literal;)+) => {
        $(create_exception!(toprank.exceptions, $name, $base, $doc);)+

        pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add(stringify!($name), m.py().get_type::<$name>())?;)+
            Ok(())
        }
    };
}

exceptions! {
    InvalidInputError(PyValueError):
        "Bad input: a wrong shape, dtype or value, or a parameter out of range. The message starts with the argument's name.";
    InfeasibleError(InvalidInputError):
        "The constraint set is empty for these parameters (for example m*lo > r in a knapsack).";
    NoSolutionError(PyRuntimeError):
        "An exact search found no solution satisfying the optimality conditions (a numerical breakdown; never silently ignored).";
    InternalError(PyRuntimeError): "A bug in toprank's Rust core (a caught panic). Please report it.";
}

/// Converts a core error to the matching Python exception.
pub(crate) fn to_py(err: Error) -> PyErr {
    let message = err.to_string();
    match err {
        Error::Infeasible { .. } => InfeasibleError::new_err(message),
        Error::NoSolution { .. } => NoSolutionError::new_err(message),
        _ => InvalidInputError::new_err(message),
    }
}

/// `?` on a core result in a binding: the core's error as its Python exception.
impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        to_py(err)
    }
}

/// An input error naming the argument.
pub(crate) fn invalid(name: &str, reason: impl std::fmt::Display) -> PyErr {
    InvalidInputError::new_err(format!("{name}: {reason}"))
}
