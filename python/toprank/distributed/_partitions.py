"""A partition on its worker (a "shard": its arrays and the ``toprank._core`` partition
built from them, which holds the state the rounds update) for each model CoCoA+ trains,
and the tasks the driver sends to it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.utils.multiclass import check_classification_targets

from toprank import _core
from toprank._options import TopKLoss
from toprank._validation import indicator_matrix, sparse_structure
from toprank.exceptions import InvalidInputError

# The aggregation's output, on the aggregating worker: (W, the step t of the last round).
Aggregate = tuple[NDArray[np.float64], float]


class Outcome(NamedTuple):
    """What a round sends to the aggregation: u_k, and its dual change at t = ½ and 1."""

    local: NDArray[np.float64]
    change: tuple[float, float]


def aligned(a: Any) -> Any:
    """``a`` C-ordered and aligned, as the core reads it in place: arrays that crossed
    processes can arrive unaligned inside a message buffer (copied only then). The core
    takes any layout (copying what it cannot read in place), so this is for the X a
    shard keeps: one copy when the shard is built instead of one per round."""
    return np.require(a, requirements=["C", "A"])


def _real_values(X: Any) -> Any:
    """X as float64 unless it already is float32/float64: integers and booleans convert,
    objects only if each is a real number; complex values are refused (their imaginary
    parts would be dropped)."""
    if X.dtype in (np.float32, np.float64):
        return X
    if X.dtype.kind not in "biufO":
        raise InvalidInputError(f"X: expected real numbers, got dtype {X.dtype}")
    try:
        return X.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"X: expected real numbers ({exc})") from None


def _labels(labels: Any) -> NDArray[Any]:
    """A partition's class labels as a 1-D array, checked as TopKSVC.fit checks its y."""
    y: NDArray[Any] = np.asarray(labels)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise InvalidInputError(f"y: expected 1-D class labels, got shape {y.shape}")
    check_classification_targets(y)
    return y


def _design(X: Any) -> Any:
    """X_k as the core reads it in place — C-ordered float32/float64, or canonical CSR
    (the partition checks its values once, as it is built)."""
    if sp.issparse(X):
        sparse_structure(X, "X")
        X = _real_values(sp.csr_matrix(X))
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        X.data, X.indices, X.indptr = aligned(X.data), aligned(X.indices), aligned(X.indptr)
    else:
        X = aligned(_real_values(np.asarray(X)))
    if X.ndim != 2:
        raise InvalidInputError(f"X: partitions must be 2-D, got {X.ndim}-D")
    return X


def _save_npz(path: str, arrays: dict[str, Any]) -> str:
    temporary = path + ".tmp.npz"
    np.savez(temporary, **arrays)
    os.replace(temporary, path)
    return path


# ---------------------------------------------------------------- the shards


@dataclass(frozen=True)
class SvcPartitionSettings:
    """What every TopKSVC partition of a fit shares (read by ``toprank._core.SvcPartition``)."""

    loss: TopKLoss
    k: int
    smoothing: float
    #: The intercept's constant feature (None: no intercept).
    bias: float | None
    n_classes: int
    shrinking: bool
    #: Passes over a partition's examples per round.
    local_epochs: float
    #: σ': the partitions' count when adding, 1 with the line search.
    sigma: float
    line_search: bool


@dataclass(frozen=True)
class M3lPartitionSettings:
    """What every linear M3L partition of a fit shares (read by ``toprank._core.M3lPartition``)."""

    R: NDArray[np.float64]
    C: float
    bias: float | None
    #: Epochs per round.
    local_epochs: int
    sigma: float


Settings = SvcPartitionSettings | M3lPartitionSettings


def _partition(arrays: tuple[Any, ...], settings: Settings, seed: int) -> _core.SvcPartition | _core.M3lPartition:
    if isinstance(settings, SvcPartitionSettings):
        X, y, c = arrays
        return _core.SvcPartition(X, y, c, settings, seed)
    X, indicator = arrays
    signs = 2.0 * indicator - 1.0
    # The Hamming loss: Δ⁺ = 0, Δ⁻ = 2.
    return _core.M3lPartition(X, signs, (np.zeros_like(signs), np.full_like(signs, 2.0)), settings, seed)


class Shard:
    """A partition on its worker: the arrays it was built from — (X_k, y_k as class
    indices, c_k) for TopKSVC, (X_k, its rows of the indicator Y) for M3L — and the
    ``toprank._core`` partition built from them once (checked there, its ‖x_i‖² computed
    there), which holds A_k and the rest of what the rounds update in place. Every task
    that touches a shard runs on its worker, ordered by the aggregation's futures (a round
    needs the previous aggregate, which needs every partition's previous round). Pickled
    (Dask may move a shard or spill it to disk) as its arrays and the partition's state,
    from which it is rebuilt."""

    def __init__(self, arrays: tuple[Any, ...], settings: Settings, seed: int) -> None:
        self.arrays, self.settings, self.seed = arrays, settings, seed
        self.partition = _partition(arrays, settings, seed)

    def __getstate__(self) -> dict[str, Any]:
        # The state as it is, a line search's pending change included.
        return dict(arrays=self.arrays, settings=self.settings, seed=self.seed, state=self.partition.state(None))

    def __setstate__(self, saved: dict[str, Any]) -> None:
        # Pickle hands arrays back in read-only buffers at any offset: X is aligned once here.
        X, *rest = saved["arrays"]
        self.arrays, self.settings, self.seed = (_design(X), *rest), saved["settings"], saved["seed"]
        self.partition = _partition(self.arrays, self.settings, self.seed)
        self.partition.restore(*saved["state"])

    def round(self, aggregate: Aggregate) -> Outcome:
        """A round from the aggregate's W, after its step commits the last round's change."""
        local, change = self.partition.round(*aggregate)
        return Outcome(local, change)

    def terms(self, aggregate: Aggregate) -> tuple[float, float, float]:
        """The partition's terms of the objectives at the aggregate (`cocoa.rs`)."""
        return self.partition.terms(*aggregate)

    def save(self, aggregate: Aggregate, path: str) -> str:
        """The partition's state after the aggregate's step, into one .npz (atomically)."""
        floats, ints = self.partition.state(aggregate[1])
        return _save_npz(path, {**floats, **ints})

    def load(self, path: str) -> None:
        with np.load(path) as saved:
            arrays = dict(saved)
        floats = {name: a for name, a in arrays.items() if a.dtype.kind == "f"}
        ints = {name: a for name, a in arrays.items() if a.dtype.kind != "f"}
        try:
            self.partition.restore(floats, ints)
        except InvalidInputError as exc:
            raise InvalidInputError(f"resume: {path}: {exc}") from None

    def dual_coef(self, aggregate: Aggregate) -> NDArray[np.float64]:
        floats, _ = self.partition.state(aggregate[1])
        width = self.settings.n_classes if isinstance(self.settings, SvcPartitionSettings) else len(self.settings.R)
        return floats["dual"].reshape(-1, width)


# ---------------------------------------------------------------- tasks


def make_svc_shard(
    X: Any, y: Any, classes: NDArray[Any], costs: NDArray[np.float64], settings: SvcPartitionSettings, seed: int
) -> Shard:
    """A TopKSVC partition: its labels as indices into ``classes`` and c_i = ``costs``
    (C times the class weight) of its class."""
    X, y = _design(X), _labels(y)
    encoded = np.searchsorted(classes, y)
    if len(y) and (encoded.max() >= len(classes) or np.any(classes[np.minimum(encoded, len(classes) - 1)] != y)):
        raise InvalidInputError("y: a label is missing from the classes")
    return Shard((X, encoded.astype(np.int64), aligned(costs[encoded])), settings, seed)


def make_m3l_shard(X: Any, Y: Any, settings: M3lPartitionSettings, seed: int) -> Shard:
    """A linear M3L partition: X_k and its rows of the indicator matrix Y."""
    X, labels = _design(X), len(settings.R)
    indicator = indicator_matrix(Y, "Y").toarray()
    if indicator.shape != (X.shape[0], labels):
        raise InvalidInputError(f"Y: a partition has shape {indicator.shape}, expected ({X.shape[0]}, {labels})")
    return Shard((X, indicator), settings, seed)


def class_counts(y: Any) -> tuple[NDArray[Any], NDArray[np.int64]]:
    values, counts = np.unique(_labels(y), return_counts=True)
    return values, counts.astype(np.int64)


def label_counts(shard: Shard) -> tuple[int, NDArray[np.int64]]:
    """(rows, per-label count of positives) of an M3L partition."""
    indicator = shard.arrays[1]
    return indicator.shape[0], np.asarray((indicator > 0).sum(axis=0), dtype=np.int64)


def run_round(shard: Shard, aggregate: Aggregate) -> Outcome:
    return shard.round(aggregate)


def terms(shard: Shard, aggregate: Aggregate) -> tuple[float, float, float]:
    return shard.terms(aggregate)


def dual_of(shard: Shard, aggregate: Aggregate) -> NDArray[np.float64]:
    return shard.dual_coef(aggregate)


def weights_of(shard: Shard) -> NDArray[np.float64]:
    """A TopKSVC partition's c_k."""
    return np.asarray(shard.arrays[2])


def save_shard(shard: Shard, aggregate: Aggregate, path: str) -> str:
    return shard.save(aggregate, path)


def load_shard(shard: Shard, path: str) -> None:
    shard.load(path)


def aggregate(previous: Aggregate, sigma: float, line_search: bool, *outcomes: Outcome) -> Aggregate:
    """The next (W, t), from the partitions' local weights in partition order.

    * Adding (CoCoA+): W + Σ_k (u_k − W)/σ', t = 1; with one partition its u itself
      (σ' = 1: the serial epoch's W, which W + (u − W) would round differently).
    * Line search (CoCoA with σ' = 1): ΔW = Σ_k (u_k − W) and the core's exact step
      t ∈ [0, 1] along it (``_core.cocoa_step_length``, from the partitions' summed dual
      changes at t = ½ and 1 and ⟨W, ΔW⟩, ‖ΔW‖²).
    """
    w = previous[0]
    if len(outcomes) == 1 and sigma == 1.0 and not line_search:
        return outcomes[0].local, 1.0
    total = np.zeros_like(w)
    for outcome in outcomes:
        total += outcome.local - w
    if not line_search:
        return w + total / sigma, 1.0
    half = sum(o.change[0] for o in outcomes)
    one = sum(o.change[1] for o in outcomes)
    flat_w, flat_d = w.ravel(), total.ravel()
    t = _core.cocoa_step_length(half, one, float(np.dot(flat_w, flat_d)), float(np.dot(flat_d, flat_d)))
    return (w + total if t == 1.0 else w + t * total), t


def coef_of(current: Aggregate) -> NDArray[np.float64]:
    return current[0]


def half_sq_norm(current: Aggregate) -> float:
    w = current[0].ravel()
    return 0.5 * float(np.dot(w, w))


def save_array(value: NDArray[np.float64], path: str) -> str:
    temporary = path + ".tmp.npy"
    np.save(temporary, value)
    os.replace(temporary, path)
    return path
