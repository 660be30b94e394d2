"""A partition on its worker (a "shard": its data and the state the rounds update in
place) for each model CoCoA+ trains, and the tasks the driver sends to it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.utils.multiclass import check_classification_targets

from toprank import _core
from toprank._options import Aggregation, TopKLoss
from toprank._validation import indicator_matrix, sparse_structure
from toprank.exceptions import InvalidInputError

# The aggregation's output, on the aggregating worker: (W, t of the last round).
Aggregate = tuple[NDArray[np.float64], float]
# An active set as arrays (examples 0/1, starts, classes; `problem.rs`'s ActiveSet).
Active = tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.uint32]]


class Outcome(NamedTuple):
    """What a round sends to the aggregation: u_k, and its dual change at t = ½ and 1."""

    local: NDArray[np.float64]
    change: tuple[float, float]


def aligned(a: Any) -> Any:
    """``a`` C-ordered and aligned, as the core reads it in place: arrays that crossed
    processes can arrive unaligned inside a message buffer (copied only then). The core
    takes any layout (copying what it cannot read in place), so this is for the data a
    shard keeps: one copy when the shard is built instead of one per round."""
    return np.require(a, requirements=["C", "A"])


def _writeable(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """State the rounds update in place, as a writeable array: a shard that Dask spilled
    to disk or moved comes back from pickle with its arrays in read-only buffers."""
    return np.require(a, requirements=["C", "A", "W", "O"])


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
    """X_k as the core reads it — C-ordered float32/float64, or canonical CSR — checked finite."""
    if sp.issparse(X):
        sparse_structure(X, "X")
        X = _real_values(sp.csr_matrix(X))
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        X.data, X.indices, X.indptr = aligned(X.data), aligned(X.indices), aligned(X.indptr)
        values = X.data
    else:
        X = aligned(_real_values(np.asarray(X)))
        values = X
    if X.ndim != 2:
        raise InvalidInputError(f"X: partitions must be 2-D, got {X.ndim}-D")
    if not np.all(np.isfinite(values)):
        raise InvalidInputError("X: contains NaN or infinity")
    return X


def _save_npz(path: str, arrays: dict[str, Any]) -> str:
    temporary = path + ".tmp.npz"
    np.savez(temporary, **arrays)
    os.replace(temporary, path)
    return path


# ---------------------------------------------------------------- TopKSVC


@dataclass(frozen=True)
class SvcProblem:
    """What every TopKSVC task needs besides its partition."""

    loss: TopKLoss
    k: int
    smoothing: float
    bias: float | None
    aggregation: Aggregation
    local_epochs: float
    shrinking: bool


class SvcShard:
    """A TopKSVC partition: X_k, y_k, c_k, ‖x_i‖², and A_k, which the rounds update in
    place — so a round costs its own steps, not a copy of A_k. The last round's change
    stays pending until the aggregation's step t commits it (only a line search makes
    t ≠ 1). Every task that touches a shard runs on its worker, and the driver orders
    them through the aggregation's futures (a round needs the previous aggregate, which
    needs every partition's previous round)."""

    def __init__(
        self, X: Any, y: Any, classes: NDArray[Any], weights: NDArray[np.float64], C: float, bias: float | None
    ) -> None:
        self.X = _design(X)
        y = _labels(y)
        if len(y) != self.X.shape[0]:
            raise InvalidInputError(f"y: a partition has {len(y)} labels for {self.X.shape[0]} rows")
        encoded = np.searchsorted(classes, y)
        if len(y) and (encoded.max() >= len(classes) or np.any(classes[np.minimum(encoded, len(classes) - 1)] != y)):
            raise InvalidInputError("y: a label is missing from the classes")
        self.y = encoded.astype(np.int64)
        self.c: NDArray[np.float64] = aligned(np.asarray(C * weights[encoded], dtype=np.float64))
        self.sq_norms = _core.cocoa_sq_norms(self.X, bias=bias)
        self.dual = np.zeros((len(y), len(classes)))
        self.pending: tuple[NDArray[np.int64], NDArray[np.float64]] | None = None
        # Where the next step is (epoch from 1, position in its order), the active set in
        # use (None: everything) and the one the last gap check built, which takes over
        # at the next epoch's start (the serial solver's shrinking, refreshed by checks).
        self.cursor = (1, 0)
        self.active: Active | None = None
        self.next_active: Active | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.dual = _writeable(self.dual)

    def eligible(self) -> int:
        """Examples an epoch visits now: c_i > 0, and active when shrinking."""
        visited = self.c > 0
        if self.active is not None:
            visited &= self.active[0] != 0
        return int(np.count_nonzero(visited))

    def commit(self, t: float) -> None:
        """A_k ← before + t(after − before) on the rows the last round changed (t = 1 keeps
        them as the round left them: no arithmetic, so K = 1 stays the serial solver)."""
        if self.pending is not None:
            changed, before = self.pending
            self.pending = None
            if t != 1.0 and len(changed):
                self.dual[changed] = before + t * (self.dual[changed] - before)

    def round(self, aggregate: Aggregate, problem: SvcProblem, sigma: float, seed: int, line_search: bool) -> Outcome:
        """One round: H·n⁺ steps from the cursor (at least one; `local_round.rs`), n⁺ the
        examples an epoch visits. A new active set takes over at an epoch's start, so a
        round that crosses one runs in two calls, the second continuing the first's u."""
        local, t = aggregate
        self.commit(t)
        if self.next_active is not None and self.cursor[1] == 0:
            self.active, self.next_active = self.next_active, None
        remaining = max(1, round(problem.local_epochs * self.eligible())) if self.eligible() else 0
        changed_parts, before_parts = [], []
        while remaining:
            steps = remaining if self.next_active is None else min(remaining, self.eligible() - self.cursor[1])
            local, changed, before, epoch, offset = _core.cocoa_local_round(
                self.X,
                self.y,
                self.c,
                self.sq_norms,
                self.dual,
                local,
                loss=problem.loss,
                k=problem.k,
                smoothing=problem.smoothing,
                bias=problem.bias,
                sigma=sigma,
                steps=steps,
                seed=seed,
                epoch=self.cursor[0],
                offset=self.cursor[1],
                shrinking=problem.shrinking,
                active=self.active,
                record=line_search,
            )
            self.cursor, remaining = (epoch, offset), remaining - steps
            changed_parts.append(changed)
            before_parts.append(before)
            if self.next_active is not None and offset == 0:
                self.active, self.next_active = self.next_active, None
        change = (0.0, 0.0)
        if line_search:
            changed, before = _first_changes(changed_parts, before_parts, self.dual.shape[1])
            change = _core.cocoa_dual_change(
                self.y, self.c, changed, before, self.dual, loss=problem.loss, k=problem.k, smoothing=problem.smoothing
            )
            self.pending = (changed, before)
        return Outcome(local, change)

    def terms(self, aggregate: Aggregate, problem: SvcProblem) -> tuple[float, float]:
        """(Σ c_i L_i(W), Σ D_i(a_i)) at the current (W, A_k); with shrinking, the active
        set these scores give is the next epoch's."""
        self.commit(aggregate[1])
        loss_sum, dual_sum, active = _core.cocoa_partition_terms(
            self.X,
            self.y,
            self.c,
            self.dual,
            aggregate[0],
            loss=problem.loss,
            k=problem.k,
            smoothing=problem.smoothing,
            bias=problem.bias,
            shrinking=problem.shrinking,
        )
        if problem.shrinking:
            self.next_active = active
        return loss_sum, dual_sum

    def save(self, aggregate: Aggregate, path: str) -> str:
        """A_k, the cursor and the active sets, into one .npz (atomically)."""
        self.commit(aggregate[1])
        arrays: dict[str, Any] = dict(dual=self.dual, cursor=np.array(self.cursor, dtype=np.int64))
        for name, active in (("active", self.active), ("next_active", self.next_active)):
            if active is not None:
                arrays.update({f"{name}_{i}": part for i, part in enumerate(active)})
        return _save_npz(path, arrays)

    def load(self, path: str) -> None:
        with np.load(path) as saved:
            _check_saved(saved["dual"], self.dual.shape, path)
            self.dual[...] = saved["dual"]
            self.cursor = (int(saved["cursor"][0]), int(saved["cursor"][1]))
            self.active, self.next_active = (
                tuple(saved[f"{name}_{i}"] for i in range(3)) if f"{name}_0" in saved else None
                for name in ("active", "next_active")
            )
        self.pending = None

    def dual_coef(self, aggregate: Aggregate) -> NDArray[np.float64]:
        self.commit(aggregate[1])
        return self.dual.copy()

    def weights(self) -> NDArray[np.float64]:
        return self.c


def _check_saved(saved: NDArray[Any], expected: tuple[int, ...], path: str) -> None:
    """A checkpoint's dual rows, checked once as they load: the rounds trust them after."""
    if saved.shape != expected:
        raise InvalidInputError(f"resume: {path} holds dual rows of shape {saved.shape}, the partition {expected}")
    if not np.isfinite(saved).all():
        raise InvalidInputError(f"resume: {path} holds NaN or infinite dual values")


def _first_changes(
    changed: list[NDArray[np.int64]], before: list[NDArray[np.float64]], m: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The changed rows of a round run in several calls, each with its row before the
    first call that changed it."""
    if not changed:
        return np.zeros(0, dtype=np.int64), np.zeros((0, m))
    if len(changed) == 1:
        return changed[0], before[0]
    rows, values = np.concatenate(changed), np.concatenate(before).reshape(-1, m)
    _, first = np.unique(rows, return_index=True)
    first.sort()
    return rows[first], values[first]


def class_counts(y: Any) -> tuple[NDArray[Any], NDArray[np.int64]]:
    values, counts = np.unique(_labels(y), return_counts=True)
    return values, counts.astype(np.int64)


# ---------------------------------------------------------------- M3L (linear)


@dataclass(frozen=True)
class M3lProblem:
    """What every M3L task needs besides its partition."""

    R: NDArray[np.float64]
    C: float
    bias: float | None
    local_epochs: int


class M3lShard:
    """A linear M3L partition: X_k, its rows of Y (±1) and of the Hamming losses, ‖x_i‖²,
    and α_k, which the rounds update in place; each round runs H epochs of the dual
    coordinate descent (`m3l/local_round.rs`)."""

    def __init__(self, X: Any, Y: Any, n_labels: int) -> None:
        self.X = _design(X)
        indicator = indicator_matrix(Y, "Y").toarray()
        if indicator.shape != (self.X.shape[0], n_labels):
            raise InvalidInputError(
                f"Y: a partition has shape {indicator.shape}, expected ({self.X.shape[0]}, {n_labels})"
            )
        self.signs = np.ascontiguousarray(2.0 * indicator - 1.0)
        self.delta_plus = np.zeros_like(self.signs)  # Hamming: Δ⁺ = 0, Δ⁻ = 2
        self.delta_minus = np.full_like(self.signs, 2.0)
        self.alpha = np.zeros_like(self.signs)
        self.sq_norms: NDArray[np.float64] | None = None
        self.epoch = 1

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.alpha = _writeable(self.alpha)

    def label_counts(self) -> tuple[int, NDArray[np.int64]]:
        """(rows, per-label count of positives)."""
        return self.signs.shape[0], np.asarray((self.signs > 0).sum(axis=0), dtype=np.int64)

    def round(self, aggregate: Aggregate, problem: M3lProblem, sigma: float, seed: int, line_search: bool) -> Outcome:
        if self.sq_norms is None:
            self.sq_norms = _core.cocoa_sq_norms(self.X, bias=problem.bias)
        local = _core.m3l_cocoa_round(
            self.X,
            self.signs,
            problem.R,
            problem.C,
            self.delta_plus,
            self.delta_minus,
            self.sq_norms,
            self.alpha,
            aggregate[0],
            bias=problem.bias,
            sigma=sigma,
            first_epoch=self.epoch,
            epochs=problem.local_epochs,
            seed=seed,
        )
        self.epoch += problem.local_epochs
        return Outcome(local, (0.0, 0.0))

    def terms(self, aggregate: Aggregate, problem: M3lProblem) -> tuple[float, float, float]:
        """The partition's (P, D) shares and its largest |projected gradient|."""
        return _core.m3l_cocoa_terms(
            self.X,
            self.signs,
            problem.R,
            problem.C,
            self.delta_plus,
            self.delta_minus,
            self.alpha,
            aggregate[0],
            bias=problem.bias,
        )

    def save(self, aggregate: Aggregate, path: str) -> str:
        return _save_npz(path, dict(dual=self.alpha, epoch=np.array([self.epoch], dtype=np.int64)))

    def load(self, path: str) -> None:
        with np.load(path) as saved:
            _check_saved(saved["dual"], self.alpha.shape, path)
            self.alpha[...] = saved["dual"]
            self.epoch = int(saved["epoch"][0])

    def dual_coef(self, aggregate: Aggregate) -> NDArray[np.float64]:
        return self.alpha.copy()


Shard = SvcShard | M3lShard


# ---------------------------------------------------------------- tasks


def make_svc_shard(
    X: Any, y: Any, classes: NDArray[Any], weights: NDArray[np.float64], C: float, bias: float | None
) -> SvcShard:
    return SvcShard(X, y, classes, weights, C, bias)


def make_m3l_shard(X: Any, Y: Any, n_labels: int) -> M3lShard:
    return M3lShard(X, Y, n_labels)


def label_counts(shard: M3lShard) -> tuple[int, NDArray[np.int64]]:
    return shard.label_counts()


def run_round(shard: Shard, aggregate: Aggregate, problem: Any, sigma: float, seed: int, line_search: bool) -> Outcome:
    return shard.round(aggregate, problem, sigma, seed, line_search)


def terms(shard: Shard, aggregate: Aggregate, problem: Any) -> tuple[float, ...]:
    return shard.terms(aggregate, problem)


def dual_of(shard: Shard, aggregate: Aggregate) -> NDArray[np.float64]:
    return shard.dual_coef(aggregate)


def weights_of(shard: SvcShard) -> NDArray[np.float64]:
    return shard.weights()


def save_shard(shard: Shard, aggregate: Aggregate, path: str) -> str:
    return shard.save(aggregate, path)


def load_shard(shard: Shard, path: str) -> None:
    shard.load(path)


def aggregate(previous: Aggregate, sigma: float, line_search: bool, *outcomes: Outcome) -> Aggregate:
    """The next (W, t), from the partitions' local weights in partition order.

    * Adding (CoCoA+): W + Σ_k (u_k − W)/σ', t = 1; with one partition its u itself
      (σ' = 1: the serial epoch's W, which W + (u − W) would round differently).
    * Line search (CoCoA with σ' = 1): ΔW = Σ_k (u_k − W) and t ∈ [0, 1] maximising
      D(A + tΔA) exactly — for the hinge losses D's terms are quadratic along the
      segment, so their values at t = ½ and 1 (summed by the partitions) give
      D(A + tΔA) − D(A) = (α − ⟨W, ΔW⟩) t + (β − ½‖ΔW‖²) t² (as `cocoa.rs`'s `step_length`).
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
    slope = (4.0 * half - one) - float(np.dot(flat_w, flat_d))
    curvature = (2.0 * one - 4.0 * half) - 0.5 * float(np.dot(flat_d, flat_d))
    if curvature < 0:
        t = min(1.0, max(0.0, -slope / (2.0 * curvature)))
    else:
        t = 1.0 if slope + curvature > 0 else 0.0
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
