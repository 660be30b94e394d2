//! Bindings of the rank-one descent pieces (`crate::solvers::tracenorm`): the products
//! with a dense or CSR X, the multinomial loss and its residual, the rank-one line
//! search, the top singular pair and the subspace step. Float64 arrays in and
//! out (labels uint32); every call runs without the GIL on the requested pool. The
//! product-quantized X uses the `pq_dot` / `pq_tdot` products.

use ndarray::{Ix1, Ix2};
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::arrays::{array_in, check_finite_small, first_non_finite, run_detached, to_numpy};
use super::design::{with_design, DesignJob};
use super::errors::invalid;
use super::monitor::PyMonitor;
use super::threads;
use crate::data::Design;
use crate::solvers::tracenorm::{self as tn, Direction, Penalties, Scores, Span};

/// A float64 matrix argument. Non-finite scores, atoms or weights are the solver's
/// divergence, which the core reports as NoSolutionError (`multinomial.rs`'s `finite`).
fn matrix<'py>(a: &Bound<'py, PyAny>, name: &str) -> PyResult<(PyReadonlyArray2<'py, f64>, usize, usize)> {
    let a = array_in::<f64, Ix2>(a, name)?;
    let (rows, cols) = (a.shape()[0], a.shape()[1]);
    Ok((a, rows, cols))
}

/// A float64 vector argument.
fn vector<'py>(a: &Bound<'py, PyAny>, name: &str) -> PyResult<PyReadonlyArray1<'py, f64>> {
    array_in::<f64, Ix1>(a, name)
}

fn labels<'py>(y: &Bound<'py, PyAny>) -> PyResult<PyReadonlyArray1<'py, u32>> {
    array_in::<u32, Ix1>(y, "y")
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
    // Every entry of X·B reads a whole row of X, every entry of Xᵀ·B a whole column, and
    // B is finite: the product is finite exactly when X is (barring overflow).
    const CHECKS_X_ITSELF: bool = true;
    fn run<D: Design>(self, x: &D, _monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let (out, rows) = if self.transpose {
            (tn::xt_times(x, self.b, self.m)?, x.n_features())
        } else {
            (tn::x_times(x, self.b, self.m)?, x.n_rows())
        };
        if let Some(at) = first_non_finite(&out) {
            let (what, index) = if self.transpose { ("column", at / self.m.max(1)) } else { ("row", at / self.m.max(1)) };
            return Err(crate::Error::input("X", format!("contains NaN or infinity, or overflows float64 ({what} {index})")));
        }
        Ok((out, rows))
    }
}

/// X·B (B: d × m) or, with `transpose`, Xᵀ·B (B: n × m), for a dense or CSR X; float64.
#[pyfunction]
#[pyo3(signature = (x, b, *, transpose=false, n_jobs=None))]
pub(crate) fn tracenorm_product<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    transpose: bool,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let (b, _, m) = matrix(b, "B")?;
    // Checked here: the product's own check would blame X for a non-finite B.
    check_finite_small(b.as_slice()?, "B")?;
    let (out, rows) = with_design(x, threads::resolve(n_jobs)?, None, ProductJob { b: b.as_slice()?, m, transpose })?;
    to_numpy(py, out, &[rows, m])
}

/// (R_n(S), (P − Y)/n) for scores S (n × m) and labels y.
#[pyfunction]
#[pyo3(signature = (scores, y, *, n_jobs=None))]
pub(crate) fn multinomial_loss<'py>(
    py: Python<'py>,
    scores: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    n_jobs: Option<i64>,
) -> PyResult<(f64, Bound<'py, PyAny>)> {
    let (scores, n, m) = matrix(scores, "scores")?;
    let (s, y) = (scores.as_slice()?, labels(y)?);
    let y = y.as_slice()?;
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
    scores: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    z: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    lambda_trace: f64,
    lambda_fro: f64,
    u_w_v: f64,
    loss0: f64,
    slope: f64,
    n_jobs: Option<i64>,
) -> PyResult<(f64, f64, usize)> {
    let (scores, _, m) = matrix(scores, "scores")?;
    let (y, z, v) = (labels(y)?, vector(z, "z")?, vector(v, "v")?);
    let (s, y, z, v) = (scores.as_slice()?, y.as_slice()?, z.as_slice()?, v.as_slice()?);
    // The search's loss changes skip a NaN score (its largest-score folds do), so it
    // would return a step for them.
    check_finite_small(s, "scores")?;
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
    a: &Bound<'py, PyAny>,
    start: &Bound<'py, PyAny>,
    block: usize,
    tol: f64,
    max_iter: usize,
) -> PyResult<SingularOut<'py>> {
    let (a, d, m) = matrix(a, "A")?;
    let (start, k, width) = matrix(start, "start")?;
    let (data, rows) = (a.as_slice()?, start.as_slice()?);
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
    z: &Bound<'py, PyAny>,
    v: &Bound<'py, PyAny>,
    c: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    lambda_fro: f64,
    n_jobs: Option<i64>,
) -> PyResult<(f64, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let ((z, _, k), (v, m, k_prime), (c, _, _)) = (matrix(z, "Z")?, matrix(v, "V")?, matrix(c, "C")?);
    let (b, y) = (vector(b, "b")?, labels(y)?);
    let (z, v, c, b, labels) = (z.as_slice()?, v.as_slice()?, c.as_slice()?, b.as_slice()?, y.as_slice()?);
    let lambda_fro = penalties(0.0, lambda_fro)?.fro;
    let span = Span { z, v, k, k_prime, labels, m, lambda_fro };
    let (value, g_c, g_b) = run_detached(py, threads::resolve(n_jobs)?, || tn::span_objective(&span, c, b))?;
    Ok((value, to_numpy(py, g_c, &[k, k_prime])?, to_numpy(py, g_b, &[m])?))
}
