//! Bindings of the rank-one descent pieces (`crate::solvers::tracenorm`): the products
//! with a dense or CSR X, the multinomial loss and its residual, the rank-one line
//! search, the top singular pair and the subspace step. Float64 arrays in and
//! out (labels uint32); every call runs without the GIL on the requested pool. The
//! product-quantized X uses the `pq_dot` / `pq_tdot` products.

use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::arrays::{run_detached, to_numpy};
use super::design::{with_design, DesignJob};
use super::errors::invalid;
use super::monitor::PyMonitor;
use super::threads;
use crate::data::Design;
use crate::solvers::tracenorm::{self as tn, Direction, Penalties, Scores, Span};

fn matrix<'a>(a: &'a PyReadonlyArray2<'_, f64>, name: &str) -> PyResult<(&'a [f64], usize, usize)> {
    let data = a.as_slice().map_err(|_| invalid(name, "must be a C-contiguous float64 array"))?;
    Ok((data, a.shape()[0], a.shape()[1]))
}

fn vector<'a>(a: &'a PyReadonlyArray1<'_, f64>, name: &str) -> PyResult<&'a [f64]> {
    a.as_slice().map_err(|_| invalid(name, "must be a contiguous float64 array"))
}

fn labels<'a>(y: &'a PyReadonlyArray1<'_, u32>) -> PyResult<&'a [u32]> {
    y.as_slice().map_err(|_| invalid("y", "must be a contiguous uint32 array"))
}

fn penalties(lambda_trace: f64, lambda_fro: f64) -> PyResult<Penalties> {
    if !(lambda_trace >= 0.0 && lambda_trace.is_finite()) {
        return Err(invalid("lambda_trace", format!("must be finite and >= 0, got {lambda_trace}")));
    }
    if !(lambda_fro >= 0.0 && lambda_fro.is_finite()) {
        return Err(invalid("lambda_fro", format!("must be finite and >= 0, got {lambda_fro}")));
    }
    Ok(Penalties { trace: lambda_trace, fro: lambda_fro })
}

struct ProductJob<'a> {
    b: &'a [f64],
    m: usize,
    transpose: bool,
}

impl DesignJob for ProductJob<'_> {
    type Output = (Vec<f64>, usize);
    fn run<D: Design>(self, x: &D, _monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        if self.transpose {
            Ok((tn::xt_times(x, self.b, self.m)?, x.n_features()))
        } else {
            Ok((tn::x_times(x, self.b, self.m)?, x.n_rows()))
        }
    }
}

/// X·B (B: d × m) or, with `transpose`, Xᵀ·B (B: n × m), for a dense or CSR X; float64.
#[pyfunction]
#[pyo3(signature = (x, b, *, transpose=false, n_jobs=None))]
pub(crate) fn tracenorm_product<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    b: PyReadonlyArray2<'py, f64>,
    transpose: bool,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let (data, _, m) = matrix(&b, "B")?;
    let (out, rows) = with_design(x, threads::resolve(n_jobs)?, None, ProductJob { b: data, m, transpose })?;
    to_numpy(py, out, &[rows, m])
}

/// (R_n(S), (P − Y)/n) for scores S (n × m) and labels y.
#[pyfunction]
#[pyo3(signature = (scores, y, *, n_jobs=None))]
pub(crate) fn multinomial_loss<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, u32>,
    n_jobs: Option<i64>,
) -> PyResult<(f64, Bound<'py, PyAny>)> {
    let (s, n, m) = matrix(&scores, "scores")?;
    let y = labels(&y)?;
    let (loss, residual) = run_detached(py, threads::resolve(n_jobs)?, || {
        let scores = Scores::new(s, m, y)?;
        let mut residual = vec![0.0; n * m];
        let loss = tn::loss_and_residual(&scores, &mut residual)?;
        Ok((loss, residual))
    })?;
    Ok((loss, to_numpy(py, residual, &[n, m])?))
}

/// Armijo step along W + δ u vᵀ: (δ, R_n at the step, trials). `z` = X u.
#[pyfunction]
#[pyo3(signature = (scores, y, z, v, *, lambda_trace, lambda_fro, u_w_v, loss0, slope, n_jobs=None))]
#[allow(clippy::too_many_arguments)] // keyword-only Python arguments
pub(crate) fn multinomial_line_search(
    py: Python<'_>,
    scores: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, u32>,
    z: PyReadonlyArray1<'_, f64>,
    v: PyReadonlyArray1<'_, f64>,
    lambda_trace: f64,
    lambda_fro: f64,
    u_w_v: f64,
    loss0: f64,
    slope: f64,
    n_jobs: Option<i64>,
) -> PyResult<(f64, f64, usize)> {
    let (s, _, m) = matrix(&scores, "scores")?;
    let (y, z, v) = (labels(&y)?, vector(&z, "z")?, vector(&v, "v")?);
    let penalties = penalties(lambda_trace, lambda_fro)?;
    let step = run_detached(py, threads::resolve(n_jobs)?, || {
        tn::armijo_rank_one(&Scores::new(s, m, y)?, &Direction { z, v, u_w_v }, penalties, loss0, slope)
    })?;
    Ok((step.delta, step.loss, step.trials))
}

/// σ, u, v, the Ritz vectors (b × m) and the iterations, as returned to Python.
type SingularOut<'py> = (f64, Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, usize);

/// (σ, u, v, Ritz vectors (b × m), iterations): the top singular pair of A (d × m) by block
/// subspace iteration from the rows of `start` (k × m, k ≥ 0).
#[pyfunction]
#[pyo3(signature = (a, start, *, block, tol=1e-10, max_iter=1000))]
pub(crate) fn top_singular_pair<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
    start: PyReadonlyArray2<'py, f64>,
    block: usize,
    tol: f64,
    max_iter: usize,
) -> PyResult<SingularOut<'py>> {
    let (data, d, m) = matrix(&a, "A")?;
    let (rows, k, width) = matrix(&start, "start")?;
    if k > 0 && width != m {
        return Err(invalid("start", format!("must have {m} columns, got {width}")));
    }
    let start: Vec<Vec<f64>> = rows.chunks_exact(m.max(1)).take(k).map(<[f64]>::to_vec).collect();
    let pair = run_detached(py, None, || tn::top_singular_pair(data, d, m, &start, block, tol, max_iter))?;
    let b = pair.ritz.len();
    let ritz = pair.ritz.concat();
    Ok((pair.sigma, to_numpy(py, pair.u, &[d])?, to_numpy(py, pair.v, &[m])?, to_numpy(py, ritz, &[b, m])?, pair.iterations))
}

/// (f, ∇_C f, ∇_b f) of the smooth part of the subspace step over the span of the atoms.
#[pyfunction]
#[pyo3(signature = (z, v, c, b, y, *, lambda_fro, n_jobs=None))]
#[allow(clippy::too_many_arguments)] // keyword-only Python arguments
pub(crate) fn tracenorm_span<'py>(
    py: Python<'py>,
    z: PyReadonlyArray2<'py, f64>,
    v: PyReadonlyArray2<'py, f64>,
    c: PyReadonlyArray2<'py, f64>,
    b: PyReadonlyArray1<'py, f64>,
    y: PyReadonlyArray1<'py, u32>,
    lambda_fro: f64,
    n_jobs: Option<i64>,
) -> PyResult<(f64, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let ((z, _, k), (v, m, k_prime), (c, _, _)) = (matrix(&z, "Z")?, matrix(&v, "V")?, matrix(&c, "C")?);
    let (b, labels) = (vector(&b, "b")?, labels(&y)?);
    let lambda_fro = penalties(0.0, lambda_fro)?.fro;
    let span = Span { z, v, k, k_prime, labels, m, lambda_fro };
    let (value, g_c, g_b) = run_detached(py, threads::resolve(n_jobs)?, || tn::span_objective(&span, c, b))?;
    Ok((value, to_numpy(py, g_c, &[k, k_prime])?, to_numpy(py, g_b, &[m])?))
}
