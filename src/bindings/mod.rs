//! `toprank._core`: thin PyO3 bindings. The projections and losses are one line each in
//! [`row_functions!`]; the solvers have a file each. Docstrings live in the typed facade
//! (`python/toprank`).

/// `FromPyObject` for a struct read by attribute name from a settings object of
/// `toprank._options`: `Type { field, … }` reads each field from the attribute of its
/// name, and the fields after `;` (the core's options structs) from the same object's
/// attributes, so that a core struct is what the binding reads.
macro_rules! by_attribute {
    ($ty:ty { $($field:ident),* $(; $($whole:ident),+)? }) => {
        impl<'a, 'py> pyo3::FromPyObject<'a, 'py> for $ty {
            type Error = pyo3::PyErr;
            fn extract(obj: pyo3::Borrowed<'a, 'py, pyo3::PyAny>) -> pyo3::PyResult<Self> {
                use pyo3::types::PyAnyMethods;
                Ok(Self { $($field: obj.getattr(stringify!($field))?.extract()?,)* $($($whole: obj.extract()?,)+)? })
            }
        }
    };
}

mod arrays;
mod attop;
mod cocoa;
mod design;
mod errors;
mod m3l;
mod monitor;
mod pq;
mod ranker;
mod report;
mod topk_svm;
mod tracenorm;

use pyo3::prelude::*;

use crate::losses::{self, TopKVariant};
use crate::projections as proj;
use crate::threads;
use arrays::with_float_rows;
use errors::invalid;

/// A count the core takes as `usize` (`k`), refused unless positive.
fn positive_count(value: i64, name: &str) -> PyResult<usize> {
    usize::try_from(value)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| invalid(name, format!("must be a positive integer, got {value}")))
}

/// The second argument of a [`row_functions!`] line: labels, or what the named reader
/// of `Rows` makes of it.
macro_rules! second_argument {
    ($rows:ident, $y:ident) => {
        $rows.labels($y)?
    };
    ($rows:ident, $y:ident, $reader:ident) => {
        $rows.$reader($y, stringify!($y))?
    };
}

/// Functions of a float32/float64 row or batch of rows, one line each:
/// `kind name(array[, labels [as reader]][; parameter: type [= default] [=> check], ...]) = kernel;`.
///
/// Each line makes the `#[pyfunction]` `name(array[, labels], parameters..., *,
/// n_jobs=None)`: every `check(value, name)` converts its parameter, `n_jobs` is resolved,
/// the labels (an int for a row, one per row for a batch; or what `Rows::reader` reads,
/// e.g. `as mask`: a boolean mask of the array's shape) are checked against the array,
/// and `kernel` runs on every row through `arrays::{kind}` — `map_rows` (an output row:
/// `|i, row, out, ws|`) or `loss_rows` (the loss, writing the gradient row: `|i, row,
/// grad, ws|`). `register_row_functions` adds them all to the module.
macro_rules! row_functions {
    ($(
        $kind:ident $name:ident($x:ident $(, $y:ident $(as $reader:ident)?)? $(; $($p:ident: $ty:ty $(= $d:tt)? $(=> $check:expr)?),+)?)
            = $kernel:expr;
    )*) => {
        $(
            #[pyfunction]
            #[pyo3(signature = ($x, $($y,)? $($($p $(= $d)?,)+)? *, n_jobs = None))]
            fn $name<'py>(
                py: Python<'py>,
                $x: &Bound<'py, PyAny>,
                $($y: &Bound<'py, PyAny>,)?
                $($($p: $ty,)+)?
                n_jobs: Option<i64>,
            ) -> PyResult<Bound<'py, PyAny>> {
                $($($(let $p = ($check)($p, stringify!($p))?;)?)+)?
                let n_jobs = threads::resolve(n_jobs)?;
                with_float_rows!($x, stringify!($x), |rows: T| {
                    $(let $y = second_argument!(rows, $y $(, $reader)?);)?
                    arrays::$kind(py, &rows, n_jobs, $kernel)
                })
            }
        )*

        fn register_row_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
            Ok(())
        }
    };
}

row_functions! {
    map_rows simplex(x; r: f64 = 1.0, inequality: bool = false)
        = |_, x, out, ws| proj::simplex(x, r, inequality, out, ws);
    map_rows knapsack(x; lo: f64, hi: f64, r: f64) = |_, x, out, ws| proj::knapsack(x, lo, hi, r, out, ws);
    map_rows topk_cone(x; k: i64 => positive_count, rho: f64 = 0.0)
        = |_, x, out, ws| proj::topk_cone(x, k, rho, out, ws);
    map_rows topk_simplex(x; k: i64 => positive_count, r: f64 = 1.0, rho: f64 = 0.0)
        = |_, x, out, ws| proj::topk_simplex(x, k, r, rho, out, ws);
    map_rows bipartite_simplex(x, positive as mask; r: f64 = 1.0, rho: f64 = 0.0)
        = |i, x, out, ws| proj::bipartite_simplex(x, &positive[i], r, rho, out, ws);
    map_rows box_simplex(x; hi: f64, r: f64 = 1.0, rho: f64 = 0.0)
        = |_, x, out, ws| proj::box_simplex(x, hi, r, rho, out, ws);
    map_rows capped_simplex(x; k: f64) = |_, x, out, ws| proj::capped_simplex(x, k, out, ws);
    map_rows capped_simplex_entropy(x; k: f64) = |_, x, out, ws| proj::capped_simplex_entropy(x, k, out, ws);
    map_rows sparsemax(z) = |_, z, out, ws| proj::sparsemax(z, out, ws);
    map_rows rankmax(z, y; k: i64 = 1 => positive_count, eta: f64 = 1.0)
        = |i, z, out, ws| proj::rankmax(z, y[i], k, eta, out, ws);
    loss_rows rankmax_loss(z, y; k: i64 = 1 => positive_count, eta: f64 = 1.0)
        = |i, z, grad, ws| losses::rankmax_loss(z, y[i], k, eta, grad, ws);
    loss_rows softmax_loss(z, y) = |i, z, grad, _| losses::softmax_loss(z, y[i], grad);
    loss_rows multilabel_hinge(scores, y as mask; smoothing: f64 = 0.0)
        = |i, scores, grad, ws| losses::multilabel_hinge(scores, &y[i], smoothing, grad, ws);
    loss_rows multilabel_softmax_loss(z, y as mask) = |i, z, grad, _| losses::multilabel_softmax_loss(z, &y[i], grad);
    loss_rows sparsemax_loss(z, y) = |i, z, grad, ws| losses::sparsemax_loss(z, y[i], grad, ws);
    loss_rows topk_hinge(scores, y; k: i64 => positive_count,
        variant: &str = "alpha" => |v, _| TopKVariant::new(v), smoothing: f64 = 0.0)
        = |i, scores, grad, ws| losses::topk_hinge(scores, y[i], k, variant, smoothing, grad, ws);
}

/// Adds the solvers' functions and classes to the module.
macro_rules! register {
    ($m:ident: $($function:path),+; $($class:ty),+) => {
        $($m.add_function(wrap_pyfunction!($function, $m)?)?;)+
        $($m.add_class::<$class>()?;)+
    };
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    register_row_functions(m)?;
    register!(m: attop::attop_fit, cocoa::cocoa_step_length, cocoa::relative_gap, design::kernel_cross, m3l::m3l_fit,
        pq::pq_train, pq::pq_encode, pq::pq_decode, topk_svm::topk_svm_fit;
        cocoa::SvcPartition, cocoa::M3lPartition, ranker::RankerProblem, report::FitReport, tracenorm::TraceNormSolver, tracenorm::TraceNormFit);
    Ok(())
}
