//! CoCoA+ where the data lives (`toprank.distributed`): `SvcPartition` and `M3lPartition`,
//! Python's two constructors of one class around the core's `solvers::partition::Partition`,
//! built once where the rows are (X checked once, then read in place without the GIL);
//! the core's step and relative gap.

use std::collections::BTreeMap;

use ndarray::{Ix1, Ix2, IxDyn};
use numpy::{Element, IntoPyArray, PyArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::arrays::{array_in, indices, to_numpy};
use super::design::with_design;
use super::monitor::finished;
use crate::solvers::m3l::M3lRoundOptions;
use crate::solvers::partition::{self, Build, Call, SvcSettings};
use crate::solvers::topk_svm::{self, NamedArrays};

type Obj<'py> = Bound<'py, PyAny>;
type State<'py> = (BTreeMap<String, Bound<'py, PyArray1<f64>>>, BTreeMap<String, Bound<'py, PyArray1<i64>>>);
type Given<'py> = BTreeMap<String, Obj<'py>>;
/// What a partition class's constructor returns: the class on its `Partition`.
type Init<T> = PyResult<PyClassInitializer<T>>;

// `toprank.distributed._partitions.SvcPartitionSettings`.
by_attribute!(SvcSettings { loss, k, smoothing, bias, n_classes, shrinking, local_epochs, sigma, line_search });

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

/// A partition on its rows X, with the methods the driver calls (`SvcPartition` and
/// `M3lPartition` build it).
#[pyclass(module = "toprank._core", subclass)]
pub(crate) struct Partition {
    x: Py<PyAny>,
    part: partition::Partition,
}

impl Partition {
    fn built(x: &Obj<'_>, build: Build) -> PyResult<Self> {
        Ok(Self { part: with_design(x, None, None, build)?, x: x.clone().unbind() })
    }

    /// After committing the last round's change by `step`, the call on the rows from W
    /// (`coef`, with a row per class or label; checked by the core).
    /// Returns W's shape, which u has.
    fn call(&mut self, coef: &Obj<'_>, step: f64, round: bool) -> PyResult<(Vec<f64>, [f64; 3], [usize; 2])> {
        self.part.commit(step)?;
        let w = array_in::<f64, Ix2>(coef, "coef")?;
        let call = Call { part: &mut self.part, w: w.as_slice()?, w_rows: w.shape()[0], round };
        let (u, terms) = finished(with_design(self.x.bind(coef.py()), None, None, call)?, "the round")?;
        Ok((u, terms, [w.shape()[0], w.shape()[1]]))
    }
}

#[pymethods]
impl Partition {
    /// After committing the last round's change by the driver's `step`, a round from W
    /// (`coef`): (u = W + σ'ΔW_k, with a line search its dual change at t = ½ and 1).
    fn round<'py>(&mut self, py: Python<'py>, coef: &Obj<'py>, step: f64) -> PyResult<(Obj<'py>, (f64, f64))> {
        let (local, [half, one, _], shape) = self.call(coef, step, true)?;
        Ok((to_numpy(py, local, &shape)?, (half, one)))
    }

    /// After the step's commit, the gap terms at (W, A_k): TopKSVC's (Σ c_i L_i(W),
    /// Σ D_i(a_i), 0), M3L's shares of (P, D) and its largest |projected gradient|.
    fn terms(&mut self, coef: &Obj<'_>, step: f64) -> PyResult<(f64, f64, f64)> {
        Ok(self.call(coef, step, false)?.1.into())
    }

    /// The core's `to_named` arrays (floats, ints), after the step's commit unless None.
    fn state<'py>(&mut self, py: Python<'py>, step: Option<f64>) -> PyResult<State<'py>> {
        step.map_or(Ok(()), |t| self.part.commit(t))?;
        let named = self.part.to_named();
        Ok((arrays_out(py, named.floats), arrays_out(py, named.ints)))
    }

    /// The state from `state()`'s arrays, checked once by the core.
    fn restore(&mut self, floats: Given<'_>, ints: Given<'_>) -> PyResult<()> {
        Ok(self.part.restore(NamedArrays { floats: arrays_in(floats)?, ints: arrays_in(ints)? })?)
    }
}

/// A TopKSVC partition on its rows X.
#[pyclass(module = "toprank._core", extends = Partition)]
pub(crate) struct SvcPartition;

#[pymethods]
impl SvcPartition {
    /// X (dense or CSR), y (class indices), c (C times the examples' weights).
    #[new]
    fn new(x: &Obj<'_>, y: &Obj<'_>, c: &Obj<'_>, settings: SvcSettings, seed: u64) -> Init<Self> {
        let (y, c) = (indices(y, "y")?, array_in::<f64, Ix1>(c, "c")?.as_slice()?.to_vec());
        let build = Build::svc(y, c, &settings, seed)?;
        Ok(PyClassInitializer::from(Partition::built(x, build)?).add_subclass(Self))
    }
}

/// A linear M3L partition on its rows X.
#[pyclass(module = "toprank._core", extends = Partition)]
pub(crate) struct M3lPartition;

#[pymethods]
impl M3lPartition {
    /// X (dense or CSR), Y (±1) and the losses `delta` (Δ⁺, Δ⁻), n × L each.
    #[new]
    fn new(x: &Obj<'_>, y: &Obj<'_>, delta: [Obj<'_>; 2], settings: M3lPartitionSettings<'_>, seed: u64) -> Init<Self> {
        let (s, labels, [plus, minus]) = (settings, array_in::<f64, Ix2>(y, "Y")?.shape()[1], &delta);
        let [y, r, plus, minus] = [(y, "Y"), (&s.r, "R"), (plus, "loss"), (minus, "loss")].map(|(a, n)| flat(a, n));
        let opts = M3lRoundOptions { sigma: s.sigma, first_epoch: 1, epochs: s.local_epochs, seed, bias: s.bias };
        let build = Build::M3l(labels, [y?, r?, plus?, minus?], s.c, opts);
        Ok(PyClassInitializer::from(Partition::built(x, build)?).add_subclass(Self))
    }
}

/// An array argument, flattened (converted as `array_in` does).
fn flat<T: Element + Copy>(value: &Obj<'_>, name: &str) -> PyResult<Vec<T>> {
    Ok(array_in::<T, IxDyn>(value, name)?.as_slice()?.to_vec())
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
