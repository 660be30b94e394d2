//! `toprank._core`: thin PyO3 bindings. Each function extracts its arguments, checks
//! scalar parameters once, and hands the arrays to a row kernel of the core that runs
//! without the GIL (`arrays.rs`). Docstrings live in the typed facade (`python/toprank`).

mod arrays;
mod attop;
mod cocoa;
mod design;
mod errors;
mod m3l;
mod monitor;
mod pq;
mod ranker;
mod sdca;
mod threads;
mod tracenorm;

use pyo3::prelude::*;

use crate::losses::{self, TopKVariant};
use crate::projections::{self as proj, Workspace};
use crate::Real;
use arrays::{labels, loss_rows, map_rows, value_rows, RowLoss, RowMap, RowValue};
use errors::invalid;

fn positive_count(value: i64, name: &str) -> PyResult<usize> {
    usize::try_from(value)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| invalid(name, format!("must be a positive integer, got {value}")))
}

/// Defines a `RowMap` kernel struct from a closure-like body over one row.
macro_rules! row_map {
    ($name:ident { $($field:ident : $ty:ty),* } |$self_:ident, $i:ident, $x:ident, $out:ident, $ws:ident| $body:expr) => {
        struct $name { $($field: $ty),* }
        impl RowMap for $name {
            fn row<T: Real>(&$self_, $i: usize, $x: &[T], $out: &mut [T], $ws: &mut Workspace) -> crate::Result<()> {
                let _ = $i;
                $body.map(|_| ())
            }
        }
    };
}

row_map!(
    Simplex { r: f64, inequality: bool } | self,
    i,
    x,
    out,
    ws | proj::simplex(x, self.r, self.inequality, out, ws)
);
row_map!(
    Knapsack { lo: f64, hi: f64, r: f64 } | self,
    i,
    x,
    out,
    ws | proj::knapsack(x, self.lo, self.hi, self.r, out, ws)
);
row_map!(TopKCone { k: usize, rho: f64 } | self, i, x, out, ws | proj::topk_cone(x, self.k, self.rho, out, ws));
row_map!(
    TopKSimplex { k: usize, r: f64, rho: f64 } | self,
    i,
    x,
    out,
    ws | proj::topk_simplex(x, self.k, self.r, self.rho, out, ws)
);
row_map!(
    BoxSimplex { hi: f64, r: f64, rho: f64 } | self,
    i,
    x,
    out,
    ws | proj::box_simplex(x, self.hi, self.r, self.rho, out, ws)
);
row_map!(CappedSimplex { k: f64 } | self, i, x, out, ws | proj::capped_simplex(x, self.k, out, ws));
row_map!(CappedSimplexEntropy { k: f64 } | self, i, x, out, ws | proj::capped_simplex_entropy(x, self.k, out, ws));
row_map!(Rankmax { y: Vec<usize>, k: usize, eta: f64 } |self, i, x, out, ws| proj::rankmax(x, self.y[i], self.k, self.eta, out, ws));

#[pyfunction]
#[pyo3(signature = (x, r=1.0, inequality=false, *, n_jobs=None))]
fn simplex<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    r: f64,
    inequality: bool,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    map_rows(py, x, "x", threads::resolve(n_jobs)?, &Simplex { r, inequality })
}

#[pyfunction]
#[pyo3(signature = (x, lo, hi, r, *, n_jobs=None))]
fn knapsack<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    lo: f64,
    hi: f64,
    r: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    map_rows(py, x, "x", threads::resolve(n_jobs)?, &Knapsack { lo, hi, r })
}

#[pyfunction]
#[pyo3(signature = (x, k, rho=0.0, *, n_jobs=None))]
fn topk_cone<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    k: i64,
    rho: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let k = positive_count(k, "k")?;
    map_rows(py, x, "x", threads::resolve(n_jobs)?, &TopKCone { k, rho })
}

#[pyfunction]
#[pyo3(signature = (x, k, r=1.0, rho=0.0, *, n_jobs=None))]
fn topk_simplex<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    k: i64,
    r: f64,
    rho: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let k = positive_count(k, "k")?;
    map_rows(py, x, "x", threads::resolve(n_jobs)?, &TopKSimplex { k, r, rho })
}

#[pyfunction]
#[pyo3(signature = (x, hi, r=1.0, rho=0.0, *, n_jobs=None))]
fn box_simplex<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    hi: f64,
    r: f64,
    rho: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    map_rows(py, x, "x", threads::resolve(n_jobs)?, &BoxSimplex { hi, r, rho })
}

#[pyfunction]
#[pyo3(signature = (x, k, *, n_jobs=None))]
fn capped_simplex<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    k: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    map_rows(py, x, "x", threads::resolve(n_jobs)?, &CappedSimplex { k })
}

#[pyfunction]
#[pyo3(signature = (x, k, *, n_jobs=None))]
fn capped_simplex_entropy<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    k: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    map_rows(py, x, "x", threads::resolve(n_jobs)?, &CappedSimplexEntropy { k })
}

#[pyfunction]
#[pyo3(signature = (z, *, n_jobs=None))]
fn sparsemax<'py>(py: Python<'py>, z: &Bound<'py, PyAny>, n_jobs: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
    map_rows(py, z, "z", threads::resolve(n_jobs)?, &Simplex { r: 1.0, inequality: false })
}

#[pyfunction]
#[pyo3(signature = (z, y, k=1, eta=1.0, *, n_jobs=None))]
fn rankmax<'py>(
    py: Python<'py>,
    z: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    k: i64,
    eta: f64,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let k = positive_count(k, "k")?;
    let y = labels(y, z, "z")?;
    map_rows(py, z, "z", threads::resolve(n_jobs)?, &Rankmax { y, k, eta })
}

struct RankmaxLoss {
    y: Vec<usize>,
    k: usize,
    eta: f64,
}
impl RowLoss for RankmaxLoss {
    fn row<T: Real>(&self, i: usize, z: &[T], grad: &mut [T], ws: &mut Workspace) -> crate::Result<f64> {
        losses::rankmax_loss(z, self.y[i], self.k, self.eta, grad, ws)
    }
}

struct SoftmaxLoss {
    y: Vec<usize>,
}
impl RowLoss for SoftmaxLoss {
    fn row<T: Real>(&self, i: usize, z: &[T], grad: &mut [T], _ws: &mut Workspace) -> crate::Result<f64> {
        losses::softmax_loss(z, self.y[i], grad)
    }
}

struct SparsemaxLoss {
    y: Vec<usize>,
}
impl RowLoss for SparsemaxLoss {
    fn row<T: Real>(&self, i: usize, z: &[T], grad: &mut [T], ws: &mut Workspace) -> crate::Result<f64> {
        losses::sparsemax_loss(z, self.y[i], grad, ws)
    }
}

struct TopKHinge {
    y: Vec<usize>,
    k: usize,
    variant: TopKVariant,
}
impl RowValue for TopKHinge {
    fn row<T: Real>(&self, i: usize, scores: &[T], ws: &mut Workspace) -> crate::Result<f64> {
        losses::topk_hinge(scores, self.y[i], self.k, self.variant, ws)
    }
}

type LossAndGrad<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>);

#[pyfunction]
#[pyo3(signature = (z, y, k=1, eta=1.0, *, n_jobs=None))]
fn rankmax_loss<'py>(
    py: Python<'py>,
    z: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    k: i64,
    eta: f64,
    n_jobs: Option<i64>,
) -> PyResult<LossAndGrad<'py>> {
    let k = positive_count(k, "k")?;
    let y = labels(y, z, "z")?;
    loss_rows(py, z, "z", threads::resolve(n_jobs)?, &RankmaxLoss { y, k, eta })
}

#[pyfunction]
#[pyo3(signature = (z, y, *, n_jobs=None))]
fn softmax_loss<'py>(
    py: Python<'py>,
    z: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    n_jobs: Option<i64>,
) -> PyResult<LossAndGrad<'py>> {
    let y = labels(y, z, "z")?;
    loss_rows(py, z, "z", threads::resolve(n_jobs)?, &SoftmaxLoss { y })
}

#[pyfunction]
#[pyo3(signature = (z, y, *, n_jobs=None))]
fn sparsemax_loss<'py>(
    py: Python<'py>,
    z: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    n_jobs: Option<i64>,
) -> PyResult<LossAndGrad<'py>> {
    let y = labels(y, z, "z")?;
    loss_rows(py, z, "z", threads::resolve(n_jobs)?, &SparsemaxLoss { y })
}

#[pyfunction]
#[pyo3(signature = (scores, y, k, variant="alpha", *, n_jobs=None))]
fn topk_hinge<'py>(
    py: Python<'py>,
    scores: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    k: i64,
    variant: &str,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let k = positive_count(k, "k")?;
    let variant = match variant {
        "alpha" => TopKVariant::Alpha,
        "beta" => TopKVariant::Beta,
        other => return Err(invalid("variant", format!("must be 'alpha' or 'beta', got {other:?}"))),
    };
    let y = labels(y, scores, "scores")?;
    value_rows(py, scores, "scores", threads::resolve(n_jobs)?, &TopKHinge { y, k, variant })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(simplex, m)?)?;
    m.add_function(wrap_pyfunction!(knapsack, m)?)?;
    m.add_function(wrap_pyfunction!(topk_cone, m)?)?;
    m.add_function(wrap_pyfunction!(topk_simplex, m)?)?;
    m.add_function(wrap_pyfunction!(box_simplex, m)?)?;
    m.add_function(wrap_pyfunction!(capped_simplex, m)?)?;
    m.add_function(wrap_pyfunction!(capped_simplex_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(sparsemax, m)?)?;
    m.add_function(wrap_pyfunction!(rankmax, m)?)?;
    m.add_function(wrap_pyfunction!(rankmax_loss, m)?)?;
    m.add_function(wrap_pyfunction!(softmax_loss, m)?)?;
    m.add_function(wrap_pyfunction!(sparsemax_loss, m)?)?;
    m.add_function(wrap_pyfunction!(topk_hinge, m)?)?;
    m.add_function(wrap_pyfunction!(attop::attop_fit, m)?)?;
    m.add_class::<cocoa::SvcPartition>()?;
    m.add_class::<cocoa::M3lPartition>()?;
    m.add_function(wrap_pyfunction!(cocoa::cocoa_step_length, m)?)?;
    m.add_function(wrap_pyfunction!(cocoa::relative_gap, m)?)?;
    m.add_function(wrap_pyfunction!(pq::pq_train, m)?)?;
    m.add_function(wrap_pyfunction!(pq::pq_encode, m)?)?;
    m.add_function(wrap_pyfunction!(pq::pq_decode, m)?)?;
    m.add_function(wrap_pyfunction!(pq::pq_dot, m)?)?;
    m.add_function(wrap_pyfunction!(pq::pq_tdot, m)?)?;
    m.add_function(wrap_pyfunction!(m3l::m3l_fit_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(m3l::m3l_fit_linear, m)?)?;
    m.add_function(wrap_pyfunction!(ranker::ranker_epoch, m)?)?;
    m.add_function(wrap_pyfunction!(ranker::ranker_objective, m)?)?;
    m.add_function(wrap_pyfunction!(sdca::sdca_fit_linear, m)?)?;
    m.add_function(wrap_pyfunction!(sdca::sdca_fit_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(sdca::kernel_cross, m)?)?;
    m.add_class::<tracenorm::TraceNormSolver>()?;
    m.add_class::<tracenorm::TraceNormFit>()?;
    Ok(())
}
