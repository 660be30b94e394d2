"""Beyond one machine: CoCoA+ training of :class:`toprank.TopKSVC` on Dask.

:func:`fit_cocoa` trains a linear ``TopKSVC`` on data split into K partitions that stay
where they are — on the Dask workers that hold them — by CoCoA+ (Ma, Smith, Jaggi,
Jordan, Richtárik, Takáč, ICML 2015; "adding" aggregation γ = 1 with σ' = K). Each round:

1. W is broadcast; every partition k runs ``local_epochs`` passes of Prox-SDCA on its own
   examples against its local weights u_k = W + σ'ΔW_k (each step with curvature
   σ'‖x_i‖²), on the worker that holds it, keeping its dual rows A_k there
   (``toprank._core.cocoa_local_round``: one pure function of (X_k, y_k, A_k, W));
2. ΔW = Σ_k (u_k − W)/σ' is summed on one worker in partition order and becomes the
   next W. With K = 1 (σ' = 1) a round is one serial epoch, bit for bit.

Every ``check_every`` rounds (the estimator's) each partition reports its two terms of
the duality gap at (W, A_k) — Σ c_i L_i(W) and Σ D_i(a_i) — and the driver forms
P = ½‖W‖² + Σ_k, D = Σ_k − ½‖W‖²; it stops at the estimator's ``tol``. The dual D never
decreases (CoCoA+ Lemma 3). Only W, the local weights and a few scalars move; X and A
never leave their workers (unless ``gather_dual``).

Without a client (``client=None``) the same rounds run on local threads (the round
releases the GIL), which is how one machine can use it. ``TopKSVC(n_jobs=...)`` itself
trains with the in-memory CoCoA of ``toprank._core`` (an exact line search over the
blocks' combined step for the hinge losses, σ' = #blocks otherwise), which measured
faster than adding on one machine (``benches/compare/distributed.py``).

Checkpoints (``checkpoint_every``, ``checkpoint_dir``) write W, every A_k (each worker
writes its own, so the directory must be shared by the workers) and the history; a fit
called with ``resume=True`` on the same partitions continues from the last checkpoint
— after a lost worker, say — and reaches the same model as an uninterrupted fit.
Visiting orders depend only on (seed, partition, epoch), so runs are deterministic.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight

from toprank import _core
from toprank._validation import bounded_int as _int
from toprank._validation import bounded_real as _real
from toprank.exceptions import InvalidInputError
from toprank.svm import TopKSVC

__all__ = ["RoundRecord", "fit_cocoa", "decision_function", "predict"]

_STATE = "state.json"


@dataclass(frozen=True)
class RoundRecord:
    """One duality-gap check of :func:`fit_cocoa`."""

    round: int
    primal: float
    dual: float
    gap: float
    seconds: float
    #: Bytes of W, local weights and scalars moved between workers (and the driver) in
    #: the rounds since the previous record, from where each array lives.
    bytes_sent: int


@dataclass(frozen=True)
class _Problem:
    """What every task needs besides its partition: the loss and the intercept column."""

    loss: str
    k: int
    smoothing: float
    bias: float | None
    aggregation: str
    local_epochs: float


@dataclass
class _Partition:
    """One partition as the driver sees it: the future of its shard (its data and state,
    on its worker), its size, its worker and its seed."""

    shard: Any
    rows: int
    worker: str | None
    seed: int


# ---------------------------------------------------------------- tasks (run on workers)


def _aligned(a: Any) -> Any:
    """``a`` C-ordered and aligned, as the core reads it: arrays that crossed processes can
    arrive unaligned inside a message buffer (copied only then)."""
    return np.require(a, requirements=["C", "A"])


def _labels(y: Any) -> tuple[NDArray[Any], NDArray[np.int64]]:
    values, counts = np.unique(np.asarray(y).ravel(), return_counts=True)
    return values, counts.astype(np.int64)


class _Shard:
    """A partition on its worker: X_k, y_k, c_k, ‖x_i‖², and A_k, which the rounds update
    in place — so a round costs its own steps, not a copy of A_k. The last round's change
    stays pending until the aggregation's step t commits it (only a line search makes
    t ≠ 1). Every task that touches a shard runs on its worker, and the driver orders
    them through the aggregation's futures (a round needs the previous aggregate, which
    needs every partition's previous round)."""

    def __init__(self, X: Any, y: Any, classes: NDArray[Any], weights: NDArray[np.float64], C: float,
                 bias: float | None) -> None:
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            if X.dtype not in (np.float32, np.float64):
                X = X.astype(np.float64)
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            X.data, X.indices, X.indptr = _aligned(X.data), _aligned(X.indices), _aligned(X.indptr)
            values = X.data
        else:
            X = np.asarray(X)
            if X.dtype not in (np.float32, np.float64):
                X = X.astype(np.float64)
            X = _aligned(X)
            values = X
        if X.ndim != 2:
            raise InvalidInputError(f"X: partitions must be 2-D, got {X.ndim}-D")
        if not np.all(np.isfinite(values)):
            raise InvalidInputError("X: contains NaN or infinity")
        y = np.asarray(y).ravel()
        if len(y) != X.shape[0]:
            raise InvalidInputError(f"y: a partition has {len(y)} labels for {X.shape[0]} rows")
        encoded = np.searchsorted(classes, y)
        if len(y) and (encoded.max() >= len(classes) or np.any(classes[np.minimum(encoded, len(classes) - 1)] != y)):
            raise InvalidInputError("y: a label is missing from the classes")
        self.X, self.y = X, encoded.astype(np.int64)
        self.c: NDArray[np.float64] = _aligned(np.asarray(C * weights[encoded], dtype=np.float64))
        self.sq_norms = _core.cocoa_sq_norms(X, bias=bias)
        self.eligible = int(np.count_nonzero(self.c > 0))
        self.dual = np.zeros((len(y), len(classes)))
        self.pending: tuple[NDArray[np.int64], NDArray[np.float64]] | None = None

    def commit(self, t: float) -> None:
        """A_k ← before + t(after − before) on the rows the last round changed (t = 1 keeps
        them as the round left them: no arithmetic, so K = 1 stays the serial solver)."""
        if self.pending is not None:
            changed, before = self.pending
            self.pending = None
            if t != 1.0 and len(changed):
                self.dual[changed] = before + t * (self.dual[changed] - before)

    def round(self, aggregate: _Aggregate, problem: _Problem, sigma: float, round_index: int, seed: int,
              line_search: bool) -> _Outcome:
        """Round `round_index`: the partition's steps at positions round_index·s … (round_index
        + 1)·s − 1 of its epochs, s = H·n⁺ (at least one; `local_round.rs`)."""
        w, t = _aligned(aggregate[0]), aggregate[1]
        self.commit(t)
        steps = max(1, round(problem.local_epochs * self.eligible)) if self.eligible else 0
        local, changed, before = _core.cocoa_local_round(
            self.X, self.y, self.c, self.sq_norms, self.dual, w, loss=problem.loss, k=problem.k,
            smoothing=problem.smoothing, bias=problem.bias, sigma=sigma, start=round_index * steps, steps=steps,
            seed=seed)
        change = (0.0, 0.0)
        if line_search:
            change = _core.cocoa_dual_change(self.y, self.c, changed, before, self.dual, loss=problem.loss,
                                             k=problem.k, smoothing=problem.smoothing)
            self.pending = (changed, before)
        return _Outcome(local, change)

    def terms(self, aggregate: _Aggregate, problem: _Problem) -> tuple[float, float]:
        """(Σ c_i L_i(W), Σ D_i(a_i)) at the current (W, A_k)."""
        self.commit(aggregate[1])
        return _core.cocoa_partition_terms(self.X, self.y, self.c, self.dual, _aligned(aggregate[0]),
                                           loss=problem.loss, k=problem.k, smoothing=problem.smoothing,
                                           bias=problem.bias)

    def dual_coef(self, aggregate: _Aggregate) -> NDArray[np.float64]:
        self.commit(aggregate[1])
        return self.dual.copy()


class _Outcome(NamedTuple):
    """What a round sends to the aggregation: u_k, and its dual change at t = ½ and 1."""

    local: NDArray[np.float64]
    change: tuple[float, float]


# The aggregation's output, on the aggregating worker: (W, t of the last round).
_Aggregate = tuple[NDArray[np.float64], float]


def _make_shard(X: Any, y: Any, classes: NDArray[Any], weights: NDArray[np.float64], C: float,
                bias: float | None) -> _Shard:
    return _Shard(X, y, classes, weights, C, bias)


def _round(shard: _Shard, aggregate: _Aggregate, problem: _Problem, sigma: float, round_index: int, seed: int,
           line_search: bool) -> _Outcome:
    return shard.round(aggregate, problem, sigma, round_index, seed, line_search)


def _terms(shard: _Shard, aggregate: _Aggregate, problem: _Problem) -> tuple[float, float]:
    return shard.terms(aggregate, problem)


def _dual_of(shard: _Shard, aggregate: _Aggregate) -> NDArray[np.float64]:
    return shard.dual_coef(aggregate)


def _weights_of(shard: _Shard) -> NDArray[np.float64]:
    return shard.c


def _load_dual(shard: _Shard, path: str) -> None:
    shard.dual[...] = np.load(path)
    shard.pending = None


def _aggregate(aggregate: _Aggregate, sigma: float, line_search: bool, *outcomes: _Outcome) -> _Aggregate:
    """The next (W, t), from the partitions' local weights in partition order.

    * Adding (CoCoA+): W + Σ_k (u_k − W)/σ', t = 1; with one partition its u itself
      (σ' = 1: the serial epoch's W, which W + (u − W) would round differently).
    * Line search (CoCoA with σ' = 1): ΔW = Σ_k (u_k − W) and t ∈ [0, 1] maximising
      D(A + tΔA) exactly — for the hinge losses D's terms are quadratic along the
      segment, so their values at t = ½ and 1 (summed by the partitions) give
      D(A + tΔA) − D(A) = (α − ⟨W, ΔW⟩) t + (β − ½‖ΔW‖²) t² (as `cocoa.rs`'s `step_length`).
    """
    w = aggregate[0]
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


def _coef_of(aggregate: _Aggregate) -> NDArray[np.float64]:
    return aggregate[0]


def _half_sq_norm(aggregate: _Aggregate) -> float:
    w = aggregate[0].ravel()
    return 0.5 * float(np.dot(w, w))


def _save(value: NDArray[np.float64], path: str) -> str:
    temporary = path + ".tmp.npy"
    np.save(temporary, value)
    os.replace(temporary, path)
    return path


# ---------------------------------------------------------------- where tasks run


class _Local:
    """Runs the tasks on local threads (no Dask): futures of concurrent.futures."""

    def __init__(self, threads: int) -> None:
        self.pool = ThreadPoolExecutor(max_workers=threads)

    def submit(self, fn: Callable[..., Any], *args: Any, worker: str | None = None) -> Future[Any]:
        # Every argument future was submitted before this task, so with first-in first-out
        # threads it is running or done: waiting on it cannot deadlock.
        def resolved() -> Any:
            return fn(*(a.result() if isinstance(a, Future) else a for a in args))

        return self.pool.submit(resolved)

    def gather(self, futures: Sequence[Any]) -> list[Any]:
        return [f.result() if isinstance(f, Future) else f for f in futures]

    def put(self, value: Any, worker: str | None = None) -> Any:
        return value

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class _Dask:
    """Runs each task on the worker named (dask.distributed futures)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def submit(self, fn: Callable[..., Any], *args: Any, worker: str | None = None) -> Any:
        return self.client.submit(fn, *args, workers=None if worker is None else [worker], allow_other_workers=False,
                                  pure=False)

    def gather(self, futures: Sequence[Any]) -> list[Any]:
        return list(self.client.gather(list(futures)))

    def put(self, value: Any, worker: str | None = None) -> Any:
        # In a list: scatter would split a tuple into one future per item.
        return self.client.scatter([value], workers=None if worker is None else [worker], hash=False)[0]

    def close(self) -> None:
        pass


def _placed_partitions(runner: _Dask | _Local, client: Any, X: Any, y: Any) -> list[tuple[Any, Any, int, str | None]]:
    """(X_k, y_k, rows, worker) per partition, X_k and y_k where they live."""
    if hasattr(X, "to_delayed") and hasattr(X, "chunks"):  # a dask array
        if client is None:
            raise InvalidInputError("X: a dask array needs a dask client")
        if X.ndim != 2:
            raise InvalidInputError(f"X: must be 2-D, got {X.ndim}-D")
        X = X.rechunk({1: X.shape[1]})
        y = y.rechunk((X.chunks[0],)) if hasattr(y, "rechunk") else None
        if y is None:
            raise InvalidInputError("y: must be a dask array aligned with X when X is one")
        from distributed import wait  # noqa: PLC0415 (the optional extra)

        x_futures = client.compute(list(X.to_delayed().ravel()))
        y_futures = client.compute(list(y.to_delayed().ravel()))
        wait(x_futures + y_futures)  # type: ignore[no-untyped-call]
        located = client.who_has(x_futures)
        return [(xf, yf, rows, sorted(located[xf.key])[0]) for xf, yf, rows in zip(x_futures, y_futures, X.chunks[0])]
    if not isinstance(X, (list, tuple)) or not X:
        raise InvalidInputError("X: must be a dask array or a non-empty list of partitions (arrays or CSR matrices)")
    if isinstance(y, (list, tuple)):
        ys = list(y)
    else:
        y_all = np.asarray(y).ravel()
        edges = np.cumsum([0] + [part.shape[0] for part in X])
        if edges[-1] != len(y_all):
            raise InvalidInputError(f"y: has {len(y_all)} labels for {edges[-1]} rows")
        ys = [y_all[a:b] for a, b in zip(edges[:-1], edges[1:])]
    if len(ys) != len(X):
        raise InvalidInputError(f"y: {len(ys)} label partitions for {len(X)} partitions of X")
    workers: list[str | None] = sorted(client.scheduler_info()["workers"]) if client is not None else [None]
    placed = []
    for k, (part, labels) in enumerate(zip(X, ys)):
        if getattr(part, "ndim", 2) != 2:
            raise InvalidInputError("X: every partition must be 2-D")
        worker = workers[k % len(workers)]
        placed.append((runner.put(part, worker), runner.put(np.asarray(labels), worker), int(part.shape[0]), worker))
    return placed


# ---------------------------------------------------------------- the driver


def fit_cocoa(
    client: Any,
    estimator: TopKSVC,
    X: Any,
    y: Any,
    *,
    tol: float | None = None,
    max_rounds: int = 100,
    local_epochs: float = 1.0,
    aggregation: str = "adding",
    checkpoint_every: int | None = None,
    checkpoint_dir: str | None = None,
    resume: bool = False,
    gather_dual: bool = True,
    threads: int | None = None,
) -> tuple[TopKSVC, list[RoundRecord]]:
    """Train a linear :class:`~toprank.TopKSVC` by CoCoA+ where the data lives.

    Parameters
    ----------
    client : dask.distributed.Client or None
        Where to run. ``None`` runs the partitions on ``threads`` local threads.
    estimator : TopKSVC
        Its parameters (``k``, ``loss``, ``C``, ``smoothing``, ``fit_intercept``,
        ``intercept_scaling``, ``class_weight``, ``check_every``, ``tol``,
        ``random_state``, ``verbose``) define the problem; a fitted clone is returned.
        ``kernel`` must be ``"linear"``; ``sample_weight`` is not supported.
    X : dask array (n × d, chunked by rows) or list of arrays / CSR matrices
        The partitions: a dask array's row chunks, or the list's items. Partitions
        stay on the workers holding them (a list is scattered round-robin first).
    y : dask array aligned with X's row chunks, list of label arrays, or one array
    tol : float, optional
        Relative duality gap to stop at (default: the estimator's ``tol``).
    max_rounds : int
        Rounds at most (status ``"max_rounds"`` and a ConvergenceWarning if reached).
    local_epochs : float
        H, passes of each partition over its examples per round; a fraction makes
        shorter rounds (H·n_k steps, at least one): on dense data whose partitions
        interact strongly, CoCoA needs rounds of a small part of an epoch.
    aggregation : {"adding", "line_search"}
        ``"adding"``: CoCoA+ with σ' = K (any loss). ``"line_search"``: CoCoA with
        σ' = 1 and the exact step t ∈ [0, 1] along the combined change (the hinge
        losses ``"alpha"``/``"beta"``); a step is as bold as the partitions' changes
        allow, where adding is bounded by their worst-case interaction. With one
        partition both are the serial solver.
    checkpoint_every, checkpoint_dir :
        Write a checkpoint every that many rounds into that directory (shared by the
        workers).
    resume : bool
        Continue from the checkpoint in ``checkpoint_dir`` (same partitions and
        parameters).
    gather_dual : bool
        Gather the dual rows into ``dual_coef_`` (n × m) at the end; with False they stay
        where they were and the model has no ``dual_coef_`` (it predicts from ``coef_``).
    threads : int, optional
        Local threads when ``client`` is None (default: the partitions' count).

    Returns
    -------
    (estimator, history) : the fitted TopKSVC, and one :class:`RoundRecord` per check.
    """
    if not isinstance(estimator, TopKSVC):
        raise InvalidInputError(f"estimator: must be a TopKSVC, got {type(estimator).__name__}")
    model = clone(estimator)
    params = model._check_params()
    if model.kernel != "linear":
        raise InvalidInputError(f"estimator: fit_cocoa trains kernel='linear' only, got kernel={model.kernel!r}")
    stop_gap = params["tol"] if tol is None else float(tol)
    if not (stop_gap > 0 and np.isfinite(stop_gap)):
        raise InvalidInputError(f"tol: must be finite and > 0, got {tol}")
    max_rounds = _int(max_rounds, "max_rounds", low=1)
    local_epochs = _real(local_epochs, "local_epochs", low=0.0, strict=True)
    if aggregation not in ("adding", "line_search"):
        raise InvalidInputError(f"aggregation: must be 'adding' or 'line_search', got {aggregation!r}")
    if aggregation == "line_search" and model.loss not in ("alpha", "beta"):
        raise InvalidInputError(f"aggregation: 'line_search' needs a hinge loss ('alpha' or 'beta'), got loss={model.loss!r}")
    if checkpoint_every is not None:
        checkpoint_every = _int(checkpoint_every, "checkpoint_every", low=1)
        if checkpoint_dir is None:
            raise InvalidInputError("checkpoint_dir: needed with checkpoint_every")
    if resume and checkpoint_dir is None:
        raise InvalidInputError("checkpoint_dir: needed with resume=True")

    if client is None and not isinstance(X, (list, tuple)):
        raise InvalidInputError("X: without a client, must be a list of partitions")
    runner: _Dask | _Local = _Dask(client) if client is not None else _Local(threads or max(1, len(X)))
    try:
        return _fit(runner, client, model, params, X, y, stop_gap, max_rounds, local_epochs, aggregation,
                    checkpoint_every, checkpoint_dir, resume, gather_dual)
    finally:
        runner.close()


def _fit(runner: _Dask | _Local, client: Any, model: TopKSVC, params: dict[str, Any], X: Any, y: Any, stop_gap: float,
         max_rounds: int, local_epochs: float, aggregation: str, checkpoint_every: int | None,
         checkpoint_dir: str | None, resume: bool, gather_dual: bool) -> tuple[TopKSVC, list[RoundRecord]]:
    placed = _placed_partitions(runner, client, X, y)
    d = _n_features(X)

    # Classes and class weights over all partitions (only the labels' counts move).
    counted = runner.gather([runner.submit(_labels, yk, worker=w) for _, yk, _, w in placed])
    classes = np.unique(np.concatenate([values for values, _ in counted]))
    counts = np.zeros(len(classes), dtype=np.int64)
    for values, n_values in counted:
        counts[np.searchsorted(classes, values)] += n_values
    m = len(classes)
    if m < 2:
        raise InvalidInputError(f"y: needs samples of at least 2 classes, got {m} class")
    if params["k"] >= m:
        raise InvalidInputError(f"k: must satisfy 1 <= k <= n_classes - 1 = {m - 1}, got {params['k']}")
    y_for_weights = np.repeat(classes, counts)
    weights = compute_class_weight(model.class_weight, classes=classes, y=y_for_weights)

    seed = int(check_random_state(model.random_state).randint(np.iinfo(np.int32).max))
    bias = params["intercept_scaling"] if model.fit_intercept else None
    parts: list[_Partition] = []
    for xk, yk, rows, worker in placed:
        shard = runner.submit(_make_shard, xk, yk, classes, weights, params["C"], bias, worker=worker)
        # Seeds by position among the non-empty partitions: empty ones change nothing.
        parts.append(_Partition(shard, rows, worker, _partition_seed(seed, sum(p.rows > 0 for p in parts))))
    runner.gather([p.shard for p in parts])  # the partitions' own checks raise here
    active = [p for p in parts if p.rows > 0]
    K = len(active)
    line_search = aggregation == "line_search" and K > 1
    sigma = 1.0 if line_search else float(max(K, 1))
    problem = _Problem(model.loss, params["k"], params["smoothing"], bias, aggregation, float(local_epochs))
    width = d + (bias is not None)

    history: list[RoundRecord] = []
    start_round = 0
    w_value = np.zeros((m, width))
    if resume and checkpoint_dir is not None and os.path.exists(os.path.join(checkpoint_dir, _STATE)):
        start_round, history, w_value = _read_checkpoint(checkpoint_dir, parts, classes, seed, problem)
        runner.gather([runner.submit(_load_dual, p.shard, os.path.join(checkpoint_dir, f"dual_{k}.npy"),
                                     worker=p.worker) for k, p in enumerate(parts)])
    aggregator = active[0].worker if active else None
    aggregate = runner.put((w_value, 1.0), aggregator)
    w_bytes = w_value.nbytes
    # Per round: every local u_k not on the aggregator's worker, and W to every other
    # worker; per check, two scalars per partition and ‖W‖² to the driver. Locally nothing moves.
    remote = {p.worker for p in active if p.worker != aggregator}
    local_mode = isinstance(runner, _Local)
    round_bytes = 0 if local_mode else sum(w_bytes for p in active if p.worker != aggregator) + len(remote) * w_bytes
    check_bytes = 0 if local_mode else 16 * K + 8

    check_every = params["check_every"]
    started = time.perf_counter() - (history[-1].seconds if history else 0.0)
    moved, status, last_dual = 0, "max_rounds", -np.inf if not history else history[-1].dual
    rounds_done = start_round
    for r in range(start_round, max_rounds):
        outcomes = [runner.submit(_round, p.shard, aggregate, problem, sigma, r, p.seed, line_search, worker=p.worker)
                    for p in active]
        aggregate = runner.submit(_aggregate, aggregate, sigma, line_search, *outcomes, worker=aggregator)
        moved += round_bytes
        rounds_done = r + 1
        last = rounds_done == max_rounds
        if rounds_done % check_every and not last:
            continue
        terms = [runner.submit(_terms, p.shard, aggregate, problem, worker=p.worker) for p in active]
        *values, half = runner.gather(terms + [runner.submit(_half_sq_norm, aggregate, worker=aggregator)])
        moved += check_bytes
        primal = half + sum(v[0] for v in values)
        dual = sum(v[1] for v in values) - half
        gap = _relative_gap(primal, dual)
        record = RoundRecord(rounds_done, primal, dual, gap, time.perf_counter() - started, moved)
        history.append(record)
        moved = 0
        if model.verbose:
            print(f"[fit_cocoa] round {rounds_done:5d}  primal {primal:.8g}  dual {dual:.8g}  gap {gap:.3e}  "
                  f"{record.seconds:.2f}s  {record.bytes_sent / 1e6:.2f} MB", file=sys.stdout, flush=True)
        if checkpoint_every is not None and checkpoint_dir is not None and rounds_done % checkpoint_every == 0:
            _write_checkpoint(runner, checkpoint_dir, parts, aggregate, rounds_done, history, classes, seed, problem)
        if gap <= stop_gap:
            status = "converged"
            break
        if dual <= last_dual:
            status = "no_progress"
            break
        last_dual = dual
        if last:
            break

    W = runner.gather([runner.submit(_coef_of, aggregate, worker=aggregator)])[0]
    model.classes_ = classes
    model.n_features_in_ = d
    model.coef_ = np.ascontiguousarray(W[:, :d])
    model.intercept_ = W[:, d] * params["intercept_scaling"] if bias is not None else np.zeros(m)
    if gather_dual:
        model.dual_coef_ = np.concatenate(runner.gather([runner.submit(_dual_of, p.shard, aggregate, worker=p.worker)
                                                         for p in parts]))
        model._c = np.concatenate(runner.gather([runner.submit(_weights_of, p.shard, worker=p.worker) for p in parts]))
    model.n_iter_ = rounds_done
    final = history[-1]
    model.primal_objective_, model.dual_objective_, model.duality_gap_ = final.primal, final.dual, final.gap
    model.status_ = status
    model.history_ = [(h.round, h.primal, h.dual, h.gap, h.seconds) for h in history]
    if status != "converged":
        warnings.warn(f"fit_cocoa stopped with status {status!r} after {rounds_done} rounds at a relative duality gap "
                      f"of {final.gap:.3g} (tol={stop_gap}); increase max_rounds or tol.", ConvergenceWarning, stacklevel=3)
    return model, history


def _n_features(X: Any) -> int:
    if hasattr(X, "chunks"):
        return int(X.shape[1])
    widths = {int(part.shape[1]) for part in X}
    if len(widths) != 1:
        raise InvalidInputError(f"X: partitions have different feature counts {sorted(widths)}")
    return widths.pop()


def _partition_seed(seed: int, k: int) -> int:
    """The k-th non-empty partition's seed; the first keeps the estimator's own, so one
    partition is the serial solver."""
    return (seed + k * 0x9E3779B97F4A7C15) % (1 << 64)


def _relative_gap(primal: float, dual: float) -> float:
    scale = max(abs(primal), abs(dual))
    return 0.0 if scale == 0 else (primal - dual) / scale


def _fingerprint(parts: Sequence[_Partition], classes: NDArray[Any], seed: int, problem: _Problem) -> dict[str, Any]:
    return dict(rows=[p.rows for p in parts], classes=[str(c) for c in classes], seed=seed, problem=asdict(problem))


def _write_checkpoint(runner: _Dask | _Local, directory: str, parts: Sequence[_Partition], aggregate: Any,
                      rounds: int, history: list[RoundRecord], classes: NDArray[Any], seed: int,
                      problem: _Problem) -> None:
    """Each worker writes its own A_k; the driver writes W and, last, the state (so a
    checkpoint is complete whenever the state names it)."""
    os.makedirs(directory, exist_ok=True)
    duals = [runner.submit(_dual_of, p.shard, aggregate, worker=p.worker) for p in parts]
    writes = [runner.submit(_save, dual, os.path.join(directory, f"dual_{k}.npy"), worker=p.worker)
              for k, (dual, p) in enumerate(zip(duals, parts))]
    w = runner.submit(_coef_of, aggregate)
    writes.append(runner.submit(_save, w, os.path.join(directory, "coef.npy")))
    runner.gather(writes)
    state = dict(round=rounds, history=[asdict(h) for h in history], **_fingerprint(parts, classes, seed, problem))
    temporary = os.path.join(directory, _STATE + ".tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(state, f)
    os.replace(temporary, os.path.join(directory, _STATE))


def _read_checkpoint(directory: str, parts: Sequence[_Partition], classes: NDArray[Any], seed: int,
                     problem: _Problem) -> tuple[int, list[RoundRecord], NDArray[np.float64]]:
    with open(os.path.join(directory, _STATE), encoding="utf-8") as f:
        state = json.load(f)
    expected = _fingerprint(parts, classes, seed, problem)
    for name, value in expected.items():
        if state.get(name) != json.loads(json.dumps(value)):
            raise InvalidInputError(f"resume: the checkpoint in {directory!r} has other {name} than this fit")
    history = [RoundRecord(**h) for h in state["history"]]
    return int(state["round"]), history, np.load(os.path.join(directory, "coef.npy"))


# ---------------------------------------------------------------- prediction on dask arrays


def decision_function(estimator: TopKSVC, X: Any) -> Any:
    """``estimator.decision_function`` over the row chunks of a dask array (map_blocks)."""
    X = X.rechunk({1: X.shape[1]})
    width = len(estimator.classes_)
    return X.map_blocks(_block_scores, estimator, dtype=np.float64, chunks=(X.chunks[0], (width,)))


def predict(estimator: TopKSVC, X: Any) -> Any:
    """``estimator.predict`` over the row chunks of a dask array (map_blocks)."""
    X = X.rechunk({1: X.shape[1]})
    return X.map_blocks(_block_predict, estimator, dtype=estimator.classes_.dtype, drop_axis=1)


def _block_scores(block: Any, estimator: TopKSVC) -> NDArray[np.float64]:
    scores = np.asarray(estimator._scores(block))
    return scores


def _block_predict(block: Any, estimator: TopKSVC) -> NDArray[Any]:
    return np.asarray(estimator.predict(block))
