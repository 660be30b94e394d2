//! Bindings of the two CoCoA+ pieces `toprank.distributed` runs where a partition lives:
//! one local round (`solvers::sdca::local_round`) and the partition's terms of the
//! duality gap. Both borrow the partition's X (dense or CSR) without a copy and run
//! without the GIL.

use ndarray::{Ix1, Ix2};
use numpy::{PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::arrays::{array_in, check_finite_small, in_place};
use super::design::{with_design, DesignJob};
use super::errors::invalid;
use super::monitor::PyMonitor;
use super::sdca::{labels_of, make_loss, weights};
use super::threads;
use crate::data::Design;
use crate::solvers::m3l::{self, M3l, M3lRoundOptions};
use crate::solvers::sdca::{self, ActiveSet, Cursor, Examples, LinearModel, RoundOptions, SdcaLoss};

/// The partition's data and the broadcast W.
struct Partition<'a> {
    loss: &'a dyn SdcaLoss,
    y: &'a [usize],
    c: &'a [f64],
    m: usize,
    bias: Option<f64>,
    w: &'a [f64],
}

struct RoundJob<'a> {
    part: Partition<'a>,
    sq_norms: &'a [f64],
    dual: &'a mut [f64],
    active: ActiveSet,
    from: Cursor,
    opts: RoundOptions,
}

impl DesignJob for RoundJob<'_> {
    type Output = Option<sdca::Round>;
    // A round may read a small part of X; each step checks the scores of the row it reads.
    const CHECKS_X_ITSELF: bool = true;
    fn run<D: Design>(self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let p = &self.part;
        let model = LinearModel::with_sq_norms(x, p.m, p.bias, self.sq_norms)?;
        let ex = Examples { y: p.y, c: p.c };
        sdca::local_round(&model, p.loss, &ex, self.dual, p.w, &self.active, self.from, &self.opts, monitor)
    }
}

struct NormsJob {
    bias: Option<f64>,
}

impl DesignJob for NormsJob {
    type Output = Vec<f64>;
    fn run<D: Design>(self, x: &D, _monitor: &mut PyMonitor<'_>) -> crate::Result<Vec<f64>> {
        Ok(LinearModel::sq_norms_of(x, self.bias))
    }
}

struct TermsJob<'a> {
    part: Partition<'a>,
    dual: &'a [f64],
    shrinking: bool,
}

impl DesignJob for TermsJob<'_> {
    type Output = (f64, f64, ActiveSet);
    fn run<D: Design>(self, x: &D, _monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        let p = &self.part;
        let mut model = LinearModel::new(x, p.m, p.bias);
        sdca::partition_terms(&mut model, p.loss, &Examples { y: p.y, c: p.c }, self.dual, p.w, self.shrinking)
    }
}

/// The active set from its three arrays (examples as 0/1 bytes), or everything.
fn active_set(parts: Option<&Bound<'_, PyAny>>, y: &[usize], m: usize) -> PyResult<ActiveSet> {
    let Some(parts) = parts else { return Ok(ActiveSet::new(y.len())) };
    let (examples, starts, classes): (Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>) = parts
        .extract()
        .map_err(|_| invalid("active", "must be a tuple of three arrays (examples, starts, classes)"))?;
    let examples = array_in::<u8, Ix1>(&examples, "active")?.as_slice()?.iter().map(|&v| v != 0).collect();
    let starts = array_in::<i64, Ix1>(&starts, "active")?
        .as_slice()?
        .iter()
        .map(|&v| usize::try_from(v).map_err(|_| invalid("active", "starts must be >= 0")))
        .collect::<PyResult<_>>()?;
    let classes = array_in::<u32, Ix1>(&classes, "active")?.as_slice()?.to_vec();
    ActiveSet::from_parts(examples, starts, classes, y, m).map_err(super::errors::to_py)
}

type ActiveArrays<'py> = (Bound<'py, PyArray1<u8>>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u32>>);

fn active_arrays<'py>(py: Python<'py>, active: &ActiveSet) -> ActiveArrays<'py> {
    let (examples, starts, classes) = active.parts();
    (
        numpy::IntoPyArray::into_pyarray(examples.iter().map(|&b| u8::from(b)).collect::<Vec<u8>>(), py),
        numpy::IntoPyArray::into_pyarray(starts.iter().map(|&s| s as i64).collect::<Vec<i64>>(), py),
        numpy::IntoPyArray::into_pyarray(classes.to_vec(), py),
    )
}

/// A float64 matrix argument of the given shape, checked finite.
fn matrix<'py>(a: &Bound<'py, PyAny>, name: &str, rows: usize, cols: usize) -> PyResult<PyReadonlyArray2<'py, f64>> {
    let a = array_in::<f64, Ix2>(a, name)?;
    if a.shape() != [rows, cols] {
        return Err(invalid(name, format!("must have shape ({rows}, {cols}), got {:?}", a.shape())));
    }
    check_finite_small(a.as_slice()?, name)?;
    Ok(a)
}

/// A float64 vector argument of the given length, checked finite.
fn vector<'py>(a: &Bound<'py, PyAny>, name: &str, len: usize) -> PyResult<PyReadonlyArray1<'py, f64>> {
    let a = array_in::<f64, Ix1>(a, name)?;
    if a.len() != len {
        return Err(invalid(name, format!("must hold {len} values, got {}", a.len())));
    }
    check_finite_small(a.as_slice()?, name)?;
    Ok(a)
}

/// The rows and width of W (`coef`), which fix the classes (or labels); read from the
/// array's shape, so that `matrix` makes the only copy a misaligned W needs.
fn coef_shape(coef: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    match coef.cast::<PyUntypedArray>().map(|a| a.shape().to_vec()).as_deref() {
        Ok(&[rows, cols]) => Ok((rows, cols)),
        _ => Err(invalid("coef", "expected a 2-D numpy.ndarray of float64")),
    }
}

/// The loss, the labels and the shapes every SDCA partition call checks first.
struct Checked {
    loss: Box<dyn SdcaLoss>,
    y: Vec<usize>,
    n: usize,
    m: usize,
    /// Width of W's rows: the features plus the intercept column.
    width: usize,
}

impl Checked {
    fn new(
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        coef: &Bound<'_, PyAny>,
        loss: &str,
        k: usize,
        smoothing: f64,
        bias: Option<f64>,
    ) -> PyResult<Self> {
        let (n, d): (usize, usize) = x.getattr("shape")?.extract()?;
        let y = labels_of(y)?;
        if y.len() != n {
            return Err(invalid("y", format!("has {} labels for {n} rows of X", y.len())));
        }
        Ok(Self {
            loss: make_loss(loss, k, smoothing)?,
            y,
            n,
            m: coef_shape(coef)?.0,
            width: d + usize::from(bias.is_some()),
        })
    }

    fn partition<'a>(&'a self, c: &'a [f64], w: &'a [f64], bias: Option<f64>) -> Partition<'a> {
        Partition { loss: &*self.loss, y: &self.y, c, m: self.m, bias, w }
    }
}

/// ‖x_i‖² (+ bias²) of a partition's rows, which its rounds then take instead of a pass over X.
#[pyfunction]
#[pyo3(signature = (x, *, bias))]
pub(crate) fn cocoa_sq_norms<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bias: Option<f64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let norms = with_design(x, None, None, NormsJob { bias })?;
    Ok(numpy::IntoPyArray::into_pyarray(norms, py))
}

/// One CoCoA+ round on a partition from the cursor (epoch, offset): updates A_k
/// (`dual_coef`) in place and returns (u = W + σ'ΔW_k, the changed rows, their values
/// before the round — both empty unless `record` —, the next cursor's epoch and offset).
#[pyfunction]
#[pyo3(signature = (
    x, y, c, sq_norms, dual_coef, coef, *, loss, k, smoothing, bias, sigma, steps, seed, epoch, offset,
    shrinking=false, active=None, record=true
))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(crate) fn cocoa_local_round<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    c: &Bound<'py, PyAny>,
    sq_norms: &Bound<'py, PyAny>,
    dual_coef: &Bound<'py, PyAny>,
    coef: &Bound<'py, PyAny>,
    loss: &str,
    k: usize,
    smoothing: f64,
    bias: Option<f64>,
    sigma: f64,
    steps: u64,
    seed: u64,
    epoch: u64,
    offset: u64,
    shrinking: bool,
    active: Option<&Bound<'py, PyAny>>,
    record: bool,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray2<f64>>, u64, u64)> {
    let checked = Checked::new(x, y, coef, loss, k, smoothing, bias)?;
    let (n, m, width) = (checked.n, checked.m, checked.width);
    let w = matrix(coef, "coef", m, width)?;
    let c = weights(c)?;
    let sq_norms = vector(sq_norms, "sq_norms", n)?;
    let dual_coef = in_place::<f64, Ix2>(dual_coef, "dual_coef")?;
    let mut dual = dual_coef.readwrite()?;
    if dual.shape() != [n, m] {
        return Err(invalid("dual_coef", format!("must have shape ({n}, {m}), got {:?}", dual.shape())));
    }
    // The dual rows are the partition's own state, written only by rounds and the line
    // search (and checked where a checkpoint loads them): no pass over the n_k × m
    // values per round, which cost 640 rounds × 320 MB at n_k = 400,000, m = 100.
    let dual_slice = dual.as_slice_mut()?;
    let part = checked.partition(c.as_slice()?, w.as_slice()?, bias);
    let active = active_set(active, part.y, m)?;
    let opts = RoundOptions { sigma, steps, seed, shrinking, record };
    let job = RoundJob {
        part,
        sq_norms: sq_norms.as_slice()?,
        dual: dual_slice,
        active,
        from: Cursor { epoch, offset },
        opts,
    };
    // On the calling thread (a round is one sequential pass; the engine runs partitions
    // in parallel — a shared one-thread pool would run them one after the other).
    let round = with_design(x, None, None, job)?
        .ok_or_else(|| super::errors::InternalError::new_err("the round stopped without an interrupt"))?;
    drop(dual);
    dual_coef.finish()?;
    let to_2d = |v: Vec<f64>, rows: usize, cols: usize| -> PyResult<Bound<'py, PyArray2<f64>>> {
        let arr = ndarray::Array2::from_shape_vec((rows, cols), v).map_err(|e| invalid("output", e.to_string()))?;
        Ok(numpy::IntoPyArray::into_pyarray(arr, py))
    };
    let changed: Vec<i64> = round.changed.iter().map(|&i| i as i64).collect();
    let rows = changed.len();
    let changed = numpy::IntoPyArray::into_pyarray(changed, py);
    Ok((to_2d(round.local, m, width)?, changed, to_2d(round.before, rows, m)?, round.end.epoch, round.end.offset))
}

/// The partition's terms of the duality gap at (W, A_k): (Σ c_i L_i(W), Σ D_i(a_i)), and
/// the active set of the serial solver's check (examples, starts, classes; class lists
/// only with `shrinking`).
#[pyfunction]
#[pyo3(signature = (x, y, c, dual_coef, coef, *, loss, k, smoothing, bias, shrinking=false, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn cocoa_partition_terms<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    c: &Bound<'py, PyAny>,
    dual_coef: &Bound<'py, PyAny>,
    coef: &Bound<'py, PyAny>,
    loss: &str,
    k: usize,
    smoothing: f64,
    bias: Option<f64>,
    shrinking: bool,
    n_jobs: Option<i64>,
) -> PyResult<(f64, f64, ActiveArrays<'py>)> {
    let threads = threads::resolve(n_jobs)?;
    let checked = Checked::new(x, y, coef, loss, k, smoothing, bias)?;
    let w = matrix(coef, "coef", checked.m, checked.width)?;
    let dual = matrix(dual_coef, "dual_coef", checked.n, checked.m)?;
    let c = weights(c)?;
    let part = checked.partition(c.as_slice()?, w.as_slice()?, bias);
    let job = TermsJob { part, dual: dual.as_slice()?, shrinking };
    let (loss_sum, dual_sum, active) = with_design(x, threads, None, job)?;
    Ok((loss_sum, dual_sum, active_arrays(py, &active)))
}

/// A round's dual change at t = ½ and t = 1 (`solvers::sdca::dual_change`), for the
/// line search over the combined step.
#[pyfunction]
#[pyo3(signature = (y, c, changed, before, dual_coef, *, loss, k, smoothing))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn cocoa_dual_change(
    py: Python<'_>,
    y: &Bound<'_, PyAny>,
    c: &Bound<'_, PyAny>,
    changed: &Bound<'_, PyAny>,
    before: &Bound<'_, PyAny>,
    dual_coef: &Bound<'_, PyAny>,
    loss: &str,
    k: usize,
    smoothing: f64,
) -> PyResult<(f64, f64)> {
    let loss = make_loss(loss, k, smoothing)?;
    if !loss.dual_is_quadratic() {
        return Err(invalid("loss", "the line search needs a loss with quadratic dual terms (the hinge losses)"));
    }
    let y = labels_of(y)?;
    let m = coef_cols(dual_coef, "dual_coef")?;
    let dual = matrix(dual_coef, "dual_coef", y.len(), m)?;
    let rows = array_in::<i64, Ix1>(changed, "changed")?
        .as_slice()?
        .iter()
        .map(|&i| usize::try_from(i).map_err(|_| invalid("changed", "must be >= 0")))
        .collect::<PyResult<Vec<_>>>()?;
    let before = matrix(before, "before", rows.len(), m)?;
    let c = weights(c)?;
    let (c, before, dual) = (c.as_slice()?, before.as_slice()?, dual.as_slice()?);
    let loss = &*loss;
    super::arrays::run_detached(py, None, || sdca::dual_change(loss, &Examples { y: &y, c }, &rows, before, dual, m))
}

/// The number of columns of a 2-D array argument (from its shape: no copy).
fn coef_cols(a: &Bound<'_, PyAny>, name: &str) -> PyResult<usize> {
    match a.cast::<PyUntypedArray>().map(|a| a.shape().to_vec()).as_deref() {
        Ok(&[_, cols]) => Ok(cols),
        _ => Err(invalid(name, "expected a 2-D numpy.ndarray of float64")),
    }
}

/// The partition's M3L problem (its rows of Y (±1) and of the losses, and R, C) over the
/// arrays of `super::m3l::M3lArrays`.
fn m3l_partition<'a>(arrays: &'a super::m3l::M3lArrays<'_>, c: f64) -> PyResult<M3l<'a>> {
    if arrays.n == 0 {
        return Err(invalid("Y", "an empty partition takes no round"));
    }
    arrays.problem(c)
}

struct M3lRoundJob<'a> {
    problem: M3l<'a>,
    alpha: &'a mut [f64],
    z: &'a [f64],
    sq_norms: &'a [f64],
    opts: M3lRoundOptions,
}

impl DesignJob for M3lRoundJob<'_> {
    type Output = Option<Vec<f64>>;
    fn run<D: Design>(self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        m3l::local_round(&self.problem, x, self.alpha, self.z, self.sq_norms, &self.opts, monitor)
    }
}

struct M3lTermsJob<'a> {
    problem: M3l<'a>,
    alpha: &'a [f64],
    z: &'a [f64],
    bias: Option<f64>,
}

impl DesignJob for M3lTermsJob<'_> {
    type Output = (f64, f64, f64);
    fn run<D: Design>(self, x: &D, _monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        m3l::partition_terms(&self.problem, x, self.alpha, self.z, self.bias)
    }
}

/// One CoCoA+ round of linear M3L on a partition (`solvers::m3l::local_round`): updates
/// α_k (`dual_coef`) in place and returns u = Z + σ'ΔZ_k.
#[pyfunction]
#[pyo3(signature = (x, y, r, c, delta_plus, delta_minus, sq_norms, dual_coef, coef, *, bias, sigma, first_epoch, epochs, seed))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn m3l_cocoa_round<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    r: &Bound<'py, PyAny>,
    c: f64,
    delta_plus: &Bound<'py, PyAny>,
    delta_minus: &Bound<'py, PyAny>,
    sq_norms: &Bound<'py, PyAny>,
    dual_coef: &Bound<'py, PyAny>,
    coef: &Bound<'py, PyAny>,
    bias: Option<f64>,
    sigma: f64,
    first_epoch: u64,
    epochs: u64,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let arrays = super::m3l::M3lArrays::new(y, r, delta_plus, delta_minus)?;
    let problem = m3l_partition(&arrays, c)?;
    let (labels, width) = coef_shape(coef)?;
    let z = matrix(coef, "coef", labels, width)?;
    let sq_norms = vector(sq_norms, "sq_norms", problem.n)?;
    let dual_coef = in_place::<f64, Ix2>(dual_coef, "dual_coef")?;
    let mut alpha = dual_coef.readwrite()?;
    let opts = M3lRoundOptions { sigma, first_epoch, epochs, seed, bias };
    let job =
        M3lRoundJob { problem, alpha: alpha.as_slice_mut()?, z: z.as_slice()?, sq_norms: sq_norms.as_slice()?, opts };
    let local = with_design(x, None, None, job)?
        .ok_or_else(|| super::errors::InternalError::new_err("the round stopped without an interrupt"))?;
    drop(alpha);
    dual_coef.finish()?;
    let arr = ndarray::Array2::from_shape_vec((labels, width), local).map_err(|e| invalid("output", e.to_string()))?;
    Ok(numpy::IntoPyArray::into_pyarray(arr, py))
}

/// The partition's share of M3L's (P, D) at (Z, α_k) and its largest |projected gradient|.
#[pyfunction]
#[pyo3(signature = (x, y, r, c, delta_plus, delta_minus, dual_coef, coef, *, bias))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn m3l_cocoa_terms(
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    r: &Bound<'_, PyAny>,
    c: f64,
    delta_plus: &Bound<'_, PyAny>,
    delta_minus: &Bound<'_, PyAny>,
    dual_coef: &Bound<'_, PyAny>,
    coef: &Bound<'_, PyAny>,
    bias: Option<f64>,
) -> PyResult<(f64, f64, f64)> {
    let arrays = super::m3l::M3lArrays::new(y, r, delta_plus, delta_minus)?;
    let problem = m3l_partition(&arrays, c)?;
    let (labels, width) = coef_shape(coef)?;
    let z = matrix(coef, "coef", labels, width)?;
    let alpha = matrix(dual_coef, "dual_coef", problem.n, problem.labels)?;
    with_design(x, None, None, M3lTermsJob { problem, alpha: alpha.as_slice()?, z: z.as_slice()?, bias })
}
