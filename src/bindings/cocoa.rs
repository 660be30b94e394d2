//! CoCoA+ where the data lives (`toprank.distributed`): `SvcPartition`, `M3lPartition` (the
//! core's `topk_svm::Partition`, `m3l::local_round::Partition`), built once where the rows are
//! (X checked once, then read in place without the GIL); the core's step and relative gap.

use std::collections::BTreeMap;

use ndarray::{Ix1, Ix2, IxDyn};
use numpy::{Element, IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::arrays::{array_in, indices};
use super::design::{with_design, DesignJob};
use super::errors::{invalid, to_py, InternalError};
use super::monitor::PyMonitor;
use crate::data::Design;
use crate::solvers::m3l::{local_round as m3l, M3lRoundOptions};
use crate::solvers::topk_svm::{self, LinearModel, NamedArrays, PartitionRound, SdcaLoss};

type Obj<'py> = Bound<'py, PyAny>;
type Rows<'py> = Bound<'py, PyArray2<f64>>;
type State<'py> = (BTreeMap<String, Bound<'py, PyArray1<f64>>>, BTreeMap<String, Bound<'py, PyArray1<i64>>>);
type Given<'py> = BTreeMap<String, Obj<'py>>;

/// `toprank.distributed._partitions.SvcPartitionSettings`, read by attribute.
#[derive(FromPyObject)]
struct SvcPartitionSettings {
    loss: String,
    k: usize,
    smoothing: f64,
    bias: Option<f64>,
    n_classes: usize,
    shrinking: bool,
    local_epochs: f64,
    sigma: f64,
    line_search: bool,
}

/// `toprank.distributed._partitions.M3lPartitionSettings`, read by attribute.
#[derive(FromPyObject)]
struct M3lPartitionSettings<'py> {
    #[pyo3(attribute("R"))]
    r: Obj<'py>,
    #[pyo3(attribute("C"))]
    c: f64,
    bias: Option<f64>,
    local_epochs: u64,
    sigma: f64,
}

/// ‖x_i‖² (+ bias²) of a partition's rows, after X's one check for NaN and infinity.
struct NormsJob(Option<f64>);

impl DesignJob for NormsJob {
    type Output = Vec<f64>;
    fn run<D: Design>(self, x: &D, _monitor: &mut PyMonitor<'_>) -> crate::Result<Vec<f64>> {
        Ok(LinearModel::sq_norms_of(x, self.0))
    }
}

enum Part<'a> {
    Svc(&'a mut topk_svm::Partition, &'a dyn SdcaLoss),
    M3l(&'a mut m3l::Partition),
}

/// A round (true: u and its dual change at t = ½, 1) or the gap terms (false) from W.
struct Call<'a>(Part<'a>, &'a [f64], bool);

impl DesignJob for Call<'_> {
    type Output = Option<(Vec<f64>, [f64; 3])>;
    // X was checked when the partition was built.
    const CHECKS_X_ITSELF: bool = true;
    fn run<D: Design>(self, x: &D, monitor: &mut PyMonitor<'_>) -> crate::Result<Self::Output> {
        Ok(match self {
            Call(Part::Svc(part, l), w, true) => part.round(x, l, w, monitor)?.map(|(u, (h, o))| (u, [h, o, 0.0])),
            Call(Part::Svc(part, l), w, false) => Some((Vec::new(), part.terms(x, l, w).map(|(a, b)| [a, b, 0.0])?)),
            Call(Part::M3l(part), z, true) => part.round(x, z, monitor)?.map(|u| (u, [0.0; 3])),
            Call(Part::M3l(part), z, false) => Some((Vec::new(), part.terms(x, z)?.into())),
        })
    }
}

/// `part`'s call on its rows `x` from W (`coef`, with `rows` rows; the core checks the rest).
fn on_rows(x: &Py<PyAny>, coef: &Obj<'_>, rows: usize, part: Part<'_>, round: bool) -> PyResult<(Vec<f64>, [f64; 3])> {
    let w = array_in::<f64, Ix2>(coef, "coef")?;
    if w.shape()[0] != rows {
        return Err(invalid("coef", format!("must have {rows} rows, got {}", w.shape()[0])));
    }
    let stopped = || InternalError::new_err("the round stopped without an interrupt");
    with_design(x.bind(coef.py()), None, None, Call(part, w.as_slice()?, round))?.ok_or_else(stopped)
}

/// Both partition objects' methods around their constructor (`$rows`: W's rows).
macro_rules! partition_methods {
    ($class:ident, $rows:ident, $($new:tt)*) => {
        #[pymethods]
        impl $class {
            $($new)*

            /// After committing the last round's change by the driver's `step`, a round from W
            /// (`coef`): (u = W + σ'ΔW_k, with a line search its dual change at t = ½ and 1).
            fn round<'py>(&mut self, py: Python<'py>, coef: &Obj<'py>, step: f64) -> PyResult<(Rows<'py>, (f64, f64))> {
                let (local, [half, one, _]) = self.call(coef, step, true)?;
                Ok((rows_out(py, local, self.part.$rows())?, (half, one)))
            }

            /// After the step's commit, the gap terms at (W, A_k): TopKSVC's (Σ c_i L_i(W),
            /// Σ D_i(a_i), 0), M3L's shares of (P, D) and its largest |projected gradient|.
            fn terms(&mut self, coef: &Obj<'_>, step: f64) -> PyResult<(f64, f64, f64)> {
                Ok(self.call(coef, step, false)?.1.into())
            }

            /// The core's `to_named` arrays (floats, ints), after the step's commit unless None.
            fn state<'py>(&mut self, py: Python<'py>, step: Option<f64>) -> PyResult<State<'py>> {
                step.map_or(Ok(()), |t| self.part.commit(t)).map_err(to_py)?;
                let named = self.part.to_named();
                Ok((arrays_out(py, named.floats), arrays_out(py, named.ints)))
            }

            /// The state from `state()`'s arrays, checked once by the core.
            fn restore(&mut self, floats: Given<'_>, ints: Given<'_>) -> PyResult<()> {
                self.part.restore(NamedArrays { floats: arrays_in(floats)?, ints: arrays_in(ints)? }).map_err(to_py)
            }
        }
    };
}

/// A TopKSVC partition on its rows X.
#[pyclass(module = "toprank._core")]
pub(crate) struct SvcPartition {
    x: Py<PyAny>,
    loss: Box<dyn SdcaLoss>,
    part: topk_svm::Partition,
}

partition_methods!(
    SvcPartition,
    n_classes,
    /// X (dense or CSR), y (class indices), c (C times the examples' weights).
    #[new]
    fn new(x: &Obj<'_>, y: &Obj<'_>, c: &Obj<'_>, settings: SvcPartitionSettings, seed: u64) -> PyResult<Self> {
        let (s, y, c) = (settings, indices(y, "y")?, array_in::<f64, Ix1>(c, "c")?.as_slice()?.to_vec());
        let (sigma, local_epochs, shrinking, line_search) = (s.sigma, s.local_epochs, s.shrinking, s.line_search);
        let opts = PartitionRound { sigma, local_epochs, seed, shrinking, line_search, bias: s.bias };
        let loss = topk_svm::named_loss(&s.loss, s.k, s.smoothing).map_err(to_py)?;
        let sq_norms = with_design(x, None, None, NormsJob(s.bias))?;
        let part = topk_svm::Partition::new(&*loss, y, c, sq_norms, s.n_classes, opts).map_err(to_py)?;
        Ok(Self { x: x.clone().unbind(), loss, part })
    }
);

impl SvcPartition {
    fn call(&mut self, coef: &Obj<'_>, step: f64, round: bool) -> PyResult<(Vec<f64>, [f64; 3])> {
        self.part.commit(step).map_err(to_py)?;
        on_rows(&self.x, coef, self.part.n_classes(), Part::Svc(&mut self.part, &*self.loss), round)
    }
}

/// A linear M3L partition on its rows X.
#[pyclass(module = "toprank._core")]
pub(crate) struct M3lPartition {
    x: Py<PyAny>,
    part: m3l::Partition,
}

partition_methods!(
    M3lPartition,
    labels,
    /// X (dense or CSR), Y (±1) and the losses `delta` (Δ⁺, Δ⁻), n × L each.
    #[new]
    fn new(
        x: &Obj<'_>,
        y: &Obj<'_>,
        delta: [Obj<'_>; 2],
        settings: M3lPartitionSettings<'_>,
        seed: u64,
    ) -> PyResult<Self> {
        let (s, labels, [plus, minus]) = (settings, array_in::<f64, Ix2>(y, "Y")?.shape()[1], &delta);
        let [y, r, plus, minus] = [(y, "Y"), (&s.r, "R"), (plus, "loss"), (minus, "loss")].map(|(a, n)| flat(a, n));
        let opts = M3lRoundOptions { sigma: s.sigma, first_epoch: 1, epochs: s.local_epochs, seed, bias: s.bias };
        let sq_norms = with_design(x, None, None, NormsJob(s.bias))?;
        let part = m3l::Partition::new(labels, [y?, r?, plus?, minus?], s.c, sq_norms, opts).map_err(to_py)?;
        Ok(Self { x: x.clone().unbind(), part })
    }
);

impl M3lPartition {
    fn call(&mut self, coef: &Obj<'_>, step: f64, round: bool) -> PyResult<(Vec<f64>, [f64; 3])> {
        self.part.commit(step).map_err(to_py)?;
        on_rows(&self.x, coef, self.part.labels(), Part::M3l(&mut self.part), round)
    }
}

/// An array argument, flattened (converted as `array_in` does).
fn flat<T: Element + Copy>(value: &Obj<'_>, name: &str) -> PyResult<Vec<T>> {
    Ok(array_in::<T, IxDyn>(value, name)?.as_slice()?.to_vec())
}

/// `rows` rows (row-major) as a 2-D array.
fn rows_out(py: Python<'_>, values: Vec<f64>, rows: usize) -> PyResult<Rows<'_>> {
    let cols = values.len().checked_div(rows).unwrap_or(0);
    values.into_pyarray(py).reshape([rows, cols])
}

fn arrays_out<T: Element>(py: Python<'_>, named: BTreeMap<String, Vec<T>>) -> BTreeMap<String, Bound<'_, PyArray1<T>>> {
    named.into_iter().map(|(name, values)| (name, values.into_pyarray(py))).collect()
}

fn arrays_in<T: Element + Copy>(named: Given<'_>) -> PyResult<BTreeMap<String, Vec<T>>> {
    named.into_iter().map(|(name, value)| Ok((name.clone(), flat(&value, &name)?))).collect()
}

/// The line search's step t ∈ [0, 1] from the partitions' summed dual changes at t = ½
/// and 1 and ⟨W, ΔW⟩, ‖ΔW‖² (`solvers::topk_svm::step_length`).
#[pyfunction]
pub(crate) fn cocoa_step_length(dual_half: f64, dual_one: f64, w_dw: f64, dw_dw: f64) -> f64 {
    topk_svm::step_length(dual_half, dual_one, w_dw, dw_dw)
}

/// (P − D) / max(|P|, |D|), every dual solver's stopping measure (`solvers::relative_gap`).
#[pyfunction]
pub(crate) fn relative_gap(primal: f64, dual: f64) -> f64 {
    crate::solvers::relative_gap(primal, dual)
}
