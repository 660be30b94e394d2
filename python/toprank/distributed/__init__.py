"""Beyond one machine: CoCoA+ training of :class:`toprank.TopKSVC` and linear
:class:`toprank.M3L` where the data lives (Dask).

:func:`fit_cocoa` trains on data split into K partitions that stay where they are — on
the Dask workers that hold them — by CoCoA+ (Ma, Smith, Jaggi, Jordan, Richtárik, Takáč,
ICML 2015; "adding" aggregation γ = 1 with σ' = K). Each round:

1. W is broadcast; every partition k runs ``local_epochs`` passes of its dual solver
   (Prox-SDCA for TopKSVC, the coordinate descent of M3L) on its own examples against
   its local weights u_k = W + σ'ΔW_k — each step with its curvature scaled by σ' — on
   the worker that holds it, keeping its dual variables there (one call of its
   ``toprank._core.SvcPartition`` / ``M3lPartition``, built there once);
2. ΔW = Σ_k (u_k − W)/σ' is summed on one worker in partition order and becomes the
   next W. With K = 1 (σ' = 1) a round is one serial epoch, bit for bit.

Every ``check_every`` passes (TopKSVC's; every round for M3L) each partition reports its
terms of the objectives at (W, A_k) and the driver forms P and D; TopKSVC stops at a
relative duality gap of ``tol`` (the core's, ``_core.relative_gap``), M3L when every
projected gradient is below ``tol`` — each model's own rule. The dual never decreases
(CoCoA+ Lemma 3). Only W, the local weights and a few scalars move; X and the dual
variables stay on their workers (unless ``gather_dual``).

For TopKSVC with a hinge loss (``"alpha"``, ``"beta"``) the default aggregation
(``"auto"``) is ``"line_search"``: CoCoA with σ' = 1 and the exact step t ∈ [0, 1] along
the combined change, in rounds of a quarter pass (``local_epochs``), where adding takes
steps bounded by the partitions' worst-case interaction. On a noisy 50,000 × 300,
50-class problem (``TopKSVC(k=5)``, C = 1, K = 2 and 4 partitions) these defaults
reached a 1e-3 gap in 260–345 passes, where 200 rounds of adding in whole passes (the
former defaults) ended at gaps of 0.02–0.03; on a centred 4,000 × 30, 8-class problem in
335–355 passes, where adding was at 0.1–0.4 after 200 rounds (a smaller case is in
``tests/test_distributed.py``). With rounds of 1/16 to 1/4 of a pass the line search
needs about the serial number of passes without an intercept, where adding needs two to
ten times as many (``benches/compare/cocoa.py``). The softmax and entropy losses and M3L
aggregate by adding (``aggregation="adding"`` selects it for the hinge losses too). The
default budget of rounds is the estimator's own: ``max_epochs`` passes for TopKSVC,
``max_iter`` epochs for M3L. An intercept (``fit_intercept=True``) is a constant
feature that every example shares, so it couples all partitions: on the benchmark's
dense problem, K = 2 then needs 1.5–1.6 times the serial passes with the line search
(rounds of 1/16 pass) and about ten times as many with adding, against the serial
count without it. Centring the features and fitting without an intercept keeps CoCoA near
the serial count.

Without a client (``client=None``) the same rounds run on local threads (a round
releases the GIL). ``TopKSVC(n_jobs=...)`` does not use them: on one machine its
in-memory CoCoA (rounds of 1,024 examples per block with the exact line search, fused
aggregation, no task overhead) measured faster (``benches/compare/cocoa.py``).

Checkpoints (``checkpoint_every``, ``checkpoint_dir``) write W, every partition's state
(each worker writes its own, so the directory must be shared by the workers) and the
history; a fit called with ``resume=True`` on the same partitions continues from the
last checkpoint — after a lost worker, say — and reaches the same model as an
uninterrupted fit. Visiting orders depend only on (seed, partition, epoch), so runs are
deterministic.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight

from toprank import _core
from toprank._docs import fill_doc
from toprank._estimator import FitProgress
from toprank._options import AGGREGATIONS, Aggregation
from toprank._validation import as_flag, caller_stacklevel, intercept_scaling
from toprank._validation import bounded_int as _int
from toprank._validation import bounded_real as _real
from toprank.distributed import _partitions as tasks
from toprank.distributed._runners import Dask, Local, Placed, Runner, n_features, place
from toprank.exceptions import InvalidInputError
from toprank.m3l import M3L, label_prior
from toprank.svm import TopKSVC

__all__ = ["RoundRecord", "fit_cocoa", "decision_function", "predict"]

_STATE = "state.json"


@dataclass(frozen=True)
@fill_doc
class RoundRecord:
    r"""One check of :func:`fit_cocoa`: the objectives and costs after a round.

    Parameters
    ----------
    round : int
        Rounds run so far (a round is ``local_epochs`` passes of every partition).
    primal : float
        The primal objective P(W) of the model after that round.
    dual : float
        The dual objective D(A), non-decreasing from check to check.
    gap : float
        The relative duality gap (P − D) / max(abs(P), abs(D)), TopKSVC's stopping measure.
    seconds : float
        Wall-clock time since the fit started (resumed fits included).
    bytes_sent : int
        Bytes of W, local weights and scalars moved between workers (and the driver) in
        the rounds since the previous record, from where each array lives (0 on local
        threads).
    max_violation : float or None, default None
        M3L: the largest \|projected gradient\| (its stopping measure); None for TopKSVC.

    See Also
    --------
    fit_cocoa : Returns the list of records.

    Examples
    --------
    %(cocoa_example_fit)s
    >>> record = history[-1]
    >>> bool(record.gap <= 1e-3), bool(record.dual <= record.primal)
    (True, True)
    """

    round: int
    primal: float
    dual: float
    gap: float
    seconds: float
    bytes_sent: int
    max_violation: float | None = None


@dataclass
class _Partition:
    """One partition as the driver sees it: the future of its shard (its data and state,
    on its worker), its size and its worker."""

    shard: Any
    rows: int
    worker: str | None


@dataclass(frozen=True)
class _Rounds:
    """How the fit's rounds run, from its non-empty partitions: σ', the line search, and
    each partition's seed."""

    sigma: float
    line_search: bool
    seeds: list[int]


class _Model(ABC):
    """What differs between the models: the global checks, the shards and the settings
    they share, how the partitions' terms make (P, D) and the stopping measure, and the
    fitted attributes."""

    kind: str
    model: Any
    settings: tasks.SvcPartitionSettings | tasks.M3lPartitionSettings
    coef_rows: int
    seed: int
    tol: float
    check_every: int
    bias: float | None
    #: The intercept's scaling (its constant feature when fitted).
    scaling: float
    #: The estimator's own budget, in passes over the data (max_epochs, max_iter).
    budget: int

    @abstractmethod
    def shards(self, runner: Runner, placed: list[Placed], rounds: _Rounds) -> list[Any]:
        """The partitions' shards (futures on their workers), built where the data is."""

    @abstractmethod
    def objectives(self, values: list[tuple[float, float, float]], half: float) -> tuple[float, float, float | None]:
        """(P, D, M3L's max violation) from the partitions' terms and ½‖W‖²."""

    @abstractmethod
    def done(self, gap: float, violation: float | None) -> bool:
        """The model's own stopping rule."""

    def finish(
        self,
        runner: Runner,
        parts: list[_Partition],
        W: NDArray[np.float64],
        d: int,
        gather_dual: bool,
        aggregate_future: Any,
    ) -> None:
        """Sets the fitted attributes of the estimator from the final W (and A)."""
        model = self.model
        model.n_features_in_ = d
        model.coef_ = np.ascontiguousarray(W[:, :d])
        model.intercept_ = W[:, d] * self.scaling if self.bias is not None else np.zeros(self.coef_rows)
        if gather_dual:
            model.dual_coef_ = np.concatenate(
                runner.gather([runner.submit(tasks.dual_of, p.shard, aggregate_future, worker=p.worker) for p in parts])
            )
        self.describe(runner, parts, gather_dual)

    @abstractmethod
    def describe(self, runner: Runner, parts: list[_Partition], gather_dual: bool) -> None:
        """The model's own fitted attributes besides W, b and A."""


class _Svc(_Model):
    kind = "TopKSVC"

    def __init__(self, model: TopKSVC, local_epochs: float, aggregation: Aggregation) -> None:
        self.model = model
        self.params = model._check_params()
        if model.kernel != "linear":
            raise InvalidInputError(f"estimator: fit_cocoa trains kernel='linear' only, got kernel={model.kernel!r}")
        self.scaling = self.params["intercept_scaling"]
        self.bias = self.scaling if self.params["fit_intercept"] else None
        self.local_epochs = float(local_epochs)
        self.seed = int(check_random_state(model.random_state).randint(np.iinfo(np.int32).max))
        self.tol = self.params["tol"]
        # TopKSVC checks every check_every passes; a check is itself a pass.
        self.check_every = max(1, round(self.params["check_every"] / local_epochs))
        self.budget = self.params["max_epochs"]
        self.aggregation = aggregation

    def shards(self, runner: Runner, placed: list[Placed], rounds: _Rounds) -> list[Any]:
        # Classes and class weights over all partitions (only the labels' counts move).
        counted = runner.gather([runner.submit(tasks.class_counts, yk, worker=w) for _, yk, _, w in placed])
        classes = np.unique(np.concatenate([values for values, _ in counted]))
        counts = np.zeros(len(classes), dtype=np.int64)
        for values, n_values in counted:
            counts[np.searchsorted(classes, values)] += n_values
        m = len(classes)
        if m < 2:
            raise InvalidInputError(f"y: needs samples of at least 2 classes, got {m} class")
        if self.params["k"] >= m:
            raise InvalidInputError(f"k: must satisfy 1 <= k <= n_classes - 1 = {m - 1}, got {self.params['k']}")
        weights = compute_class_weight(self.model.class_weight, classes=classes, y=np.repeat(classes, counts))
        self.classes, self.coef_rows = classes, m
        # C and the class weights enter each shard's c_k, not the settings: a checkpoint
        # written with others must not be resumed (see _fingerprint).
        self.costs = dict(C=float(self.params["C"]), class_weights=[float(w) for w in weights])
        p = self.params
        self.settings = tasks.SvcPartitionSettings(
            self.model.loss,
            p["k"],
            p["smoothing"],
            self.bias,
            m,
            p["shrinking"],
            self.local_epochs,
            rounds.sigma,
            rounds.line_search,
        )
        costs = p["C"] * weights
        return [
            runner.submit(tasks.make_svc_shard, xk, yk, classes, costs, self.settings, seed, worker=w)
            for (xk, yk, _, w), seed in zip(placed, rounds.seeds)
        ]

    def objectives(self, values: list[tuple[float, float, float]], half: float) -> tuple[float, float, float | None]:
        # P = ½‖W‖² + Σ_k Σ c_i L_i(W), D = Σ_k Σ D_i(a_i) − ½‖W‖² (`local_round.rs`).
        return half + sum(v[0] for v in values), sum(v[1] for v in values) - half, None

    def done(self, gap: float, violation: float | None) -> bool:
        return gap <= self.tol

    def describe(self, runner: Runner, parts: list[_Partition], gather_dual: bool) -> None:
        self.model.classes_ = self.classes
        if gather_dual:
            self.model._c = np.concatenate(
                runner.gather([runner.submit(tasks.weights_of, p.shard, worker=p.worker) for p in parts])
            )


class _M3l(_Model):
    kind = "M3L"

    def __init__(self, model: M3L, local_epochs: float) -> None:
        self.model = model
        if model.kernel != "linear" or model.solver not in ("auto", "dcd"):
            raise InvalidInputError(
                f"estimator: fit_cocoa trains the linear M3L (dual coordinate descent), got "
                f"kernel={model.kernel!r}, solver={model.solver!r}"
            )
        if float(local_epochs) != int(local_epochs) or local_epochs < 1:
            raise InvalidInputError(f"local_epochs: M3L rounds run whole epochs, got {local_epochs}")
        self.C = _real(model.C, "C", low=0.0, strict=True)
        self.tol = _real(model.tol, "tol", low=0.0, strict=True)
        scaling = intercept_scaling(model.intercept_scaling)
        self.scaling, self.bias = scaling, (scaling if as_flag(model.fit_intercept, "fit_intercept") else None)
        self.local_epochs = int(local_epochs)
        self.seed = int(check_random_state(model.random_state).randint(np.iinfo(np.int32).max))
        self.check_every = 1
        self.budget = _int(model.max_iter, "max_iter", low=1)

    def shards(self, runner: Runner, placed: list[Placed], rounds: _Rounds) -> list[Any]:
        widths = runner.gather([runner.submit(_label_width, yk, worker=w) for _, yk, _, w in placed])
        if len(set(widths)) != 1:
            raise InvalidInputError(f"Y: partitions have different label counts {sorted(set(widths))}")
        labels = widths[0]
        R = label_prior(self.model.R, labels)
        self.settings = tasks.M3lPartitionSettings(R, self.C, self.bias, self.local_epochs, rounds.sigma)
        futures = [
            runner.submit(tasks.make_m3l_shard, xk, yk, self.settings, seed, worker=w)
            for (xk, yk, _, w), seed in zip(placed, rounds.seeds)
        ]
        counted = runner.gather(
            [runner.submit(tasks.label_counts, f, worker=w) for f, (_, _, _, w) in zip(futures, placed)]
        )
        rows = sum(r for r, _ in counted)
        on = np.sum([c for _, c in counted], axis=0)
        constant = np.flatnonzero((on == 0) | (on == rows))
        if constant.size:
            raise InvalidInputError(
                f"Y: labels {constant.tolist()} are never or always on (one class only): nothing to learn"
            )
        self.coef_rows = labels
        return futures

    def objectives(self, values: list[tuple[float, float, float]], half: float) -> tuple[float, float, float | None]:
        return sum(v[0] for v in values), sum(v[1] for v in values), max(v[2] for v in values)

    def done(self, gap: float, violation: float | None) -> bool:
        return violation is not None and violation < self.tol

    def describe(self, runner: Runner, parts: list[_Partition], gather_dual: bool) -> None:
        model = self.model
        model._target_kind = "multilabel"
        model.classes_ = np.arange(self.coef_rows)
        model._target_dtype = np.empty(0, dtype=np.int64)
        model.solver_ = "dcd"
        if gather_dual:
            model.support_ = np.flatnonzero(np.any(model.dual_coef_ != 0, axis=1))


def _label_width(Y: Any) -> int:
    shape = getattr(Y, "shape", None)
    if shape is None or len(shape) != 2:
        raise InvalidInputError("Y: M3L partitions take an n_k × n_labels indicator matrix")
    return int(shape[1])


@fill_doc
def fit_cocoa(
    client: Any,
    estimator: TopKSVC | M3L,
    X: Any,
    y: Any,
    *,
    tol: float | None = None,
    max_rounds: int | None = None,
    local_epochs: float | None = None,
    aggregation: Aggregation = "auto",
    checkpoint_every: int | None = None,
    checkpoint_dir: str | None = None,
    resume: bool = False,
    gather_dual: bool = True,
    threads: int | None = None,
) -> tuple[Any, list[RoundRecord]]:
    """Train a linear TopKSVC or M3L by CoCoA+ where the data lives.

    The estimator is a :class:`~toprank.TopKSVC` or a :class:`~toprank.M3L` whose
    parameters define the problem; the module docs describe the rounds.

    Parameters
    ----------
    client : dask.distributed.Client or None
        Where to run. ``None`` runs the partitions on ``threads`` local threads.
    estimator : TopKSVC or M3L
        Its parameters define the problem; a fitted clone is returned. TopKSVC: ``k``,
        ``loss``, ``C``, ``smoothing``, ``fit_intercept``, ``intercept_scaling``,
        ``class_weight``, ``shrinking``, ``check_every``, ``tol``, ``random_state``,
        ``verbose``; ``kernel="linear"``, no ``sample_weight``. M3L: ``C``, ``R``,
        ``fit_intercept``, ``intercept_scaling``, ``tol``, ``random_state``, ``verbose``;
        the linear kernel, the Hamming loss, Y a multi-label indicator matrix (its
        ``shrinking`` does not apply: the rounds do not shrink).
    X : dask array (n × d, chunked by rows) or list of arrays / CSR matrices
        The partitions: a dask array's row chunks, or the list's items. Partitions
        stay on the workers holding them (a list is scattered round-robin first).
    y : dask array, list of arrays, or array
        Labels (TopKSVC) or an n × L indicator matrix (M3L): a dask array aligned with
        X's row chunks, a list of per-partition labels, or one array.
    tol : float, optional
        Overrides the estimator's ``tol`` (its stopping rule is kept).
    max_rounds : int, optional
        Rounds at most (status ``"max_iter"`` and a ConvergenceWarning if reached).
        Default: the estimator's budget in passes over the data — TopKSVC's
        ``max_epochs``, M3L's ``max_iter`` — divided by ``local_epochs``.
    local_epochs : float, optional
        H, passes of each partition over its examples per round. TopKSVC also takes a
        fraction (H·n_k steps, at least one): on dense data whose partitions interact
        strongly, CoCoA needs rounds of a small part of an epoch. Default: 1/4 with the
        line search over several partitions (about the serial number of passes, where
        whole passes needed up to four times as many), else 1. TopKSVC's gap is checked every
        ``check_every`` passes, i.e. every ``check_every / local_epochs`` rounds.
    aggregation : {"auto", "adding", "line_search"}, default "auto"
        ``"adding"``: CoCoA+ with σ' = K (any loss). ``"line_search"`` (TopKSVC with a
        hinge loss): CoCoA with σ' = 1 and the exact step t ∈ [0, 1] along the combined
        change — as bold as the partitions' changes allow, where adding is bounded by
        their worst-case interaction. ``"auto"`` (the default): the line search for the
        hinge losses, adding otherwise. With one partition all are the serial solver.
    checkpoint_every : int, optional
        Write a checkpoint every that many rounds (at a check).
    checkpoint_dir : str, optional
        The directory of the checkpoints, shared by the workers (each writes its
        partitions' state there); needed with ``checkpoint_every`` or ``resume``.
    resume : bool, default False
        Continue from the checkpoint in ``checkpoint_dir`` (same partitions and
        parameters).
    gather_dual : bool, default True
        Gather the dual variables into ``dual_coef_`` at the end; with False they stay
        where they were and the model has no ``dual_coef_`` (it predicts from ``coef_``).
    threads : int, optional
        Local threads when ``client`` is None (default: the partitions' count).

    Returns
    -------
    estimator : TopKSVC or M3L
        A fitted clone of ``estimator`` (``coef_``, ``intercept_`` and, with
        ``gather_dual``, ``dual_coef_``), solved to the estimator's own stopping rule
        like a serial fit.
    history : list of RoundRecord
        One record per check.

    Raises
    ------
    InvalidInputError
        ``estimator`` not a TopKSVC or M3L, or with a kernel other than linear;
        ``aggregation`` unknown or ``"line_search"`` with a loss other than the hinges
        (or for M3L); ``checkpoint_every`` / ``resume`` without ``checkpoint_dir``; ``X``
        not a list without a client; partitions with mismatched widths or labels; a
        parameter out of range.

    Warns
    -----
    ConvergenceWarning
        The budget of rounds ran out before ``tol`` was reached.

    See Also
    --------
    decision_function, predict : Scoring a dask array with the fitted model.
    toprank.TopKSVC : The serial (and in-memory parallel) solver.

    Notes
    -----
    Per round each partition costs ``local_epochs`` passes over its n_k examples (O(n_k ·
    nnz per row · classes) for TopKSVC); the network carries W and the local weights,
    O(d · classes) per partition and round, never X or the dual variables.

    References
    ----------
    .. [1] C. Ma, V. Smith, M. Jaggi, M. I. Jordan, P. Richtárik, M. Takáč. *Adding vs.
       Averaging in Distributed Primal-Dual Optimization.* ICML 2015 (CoCoA+; Lemma 3:
       the dual never decreases).
    .. [2] S. Shalev-Shwartz, T. Zhang. *Accelerated Proximal Stochastic Dual Coordinate
       Ascent for Regularized Loss Minimization.* Mathematical Programming 2016
       (Prox-SDCA, the local solver of TopKSVC).

    Examples
    --------
    On local threads, two partitions:

    %(cocoa_example_fit)s
    >>> model.coef_.shape, round(model.score(X, y), 3)
    ((3, 8), 0.873)

    With a ``dask.distributed.Client`` the partitions are the row chunks of a dask array
    (or a list of futures) and stay on their workers::

        model, history = fit_cocoa(client, TopKSVC(k=5), X_dask, y_dask)
    """
    resume, gather_dual = as_flag(resume, "resume"), as_flag(gather_dual, "gather_dual")
    if threads is not None:
        threads = _int(threads, "threads", low=1)
    if aggregation not in AGGREGATIONS:
        raise InvalidInputError(f"aggregation: must be 'auto', 'adding' or 'line_search', got {aggregation!r}")
    if isinstance(estimator, TopKSVC):
        hinge = estimator.loss in ("alpha", "beta")
        if aggregation == "auto":
            aggregation = "line_search" if hinge else "adding"
        if aggregation == "line_search" and not hinge:
            raise InvalidInputError(
                f"aggregation: 'line_search' needs a hinge loss ('alpha' or 'beta'), got loss={estimator.loss!r}"
            )
        # One partition is the serial solver, whose rounds are whole passes.
        short = aggregation == "line_search" and _partition_count(X) > 1
        local_epochs = _local_epochs(local_epochs, 0.25 if short else 1.0)
        spec: _Model = _Svc(clone(estimator), local_epochs, aggregation)
    elif isinstance(estimator, M3L):
        if aggregation == "auto":
            aggregation = "adding"
        if aggregation != "adding":
            raise InvalidInputError(f"aggregation: M3L rounds aggregate by adding, got {aggregation!r}")
        local_epochs = _local_epochs(local_epochs, 1.0)
        spec = _M3l(clone(estimator), local_epochs)
    else:
        raise InvalidInputError(f"estimator: must be a TopKSVC or an M3L, got {type(estimator).__name__}")
    if tol is not None:
        spec.tol = _real(tol, "tol", low=0.0, strict=True)
    if max_rounds is None:
        max_rounds = max(1, math.ceil(spec.budget / local_epochs))
    max_rounds = _int(max_rounds, "max_rounds", low=1)
    if checkpoint_every is not None:
        checkpoint_every = _int(checkpoint_every, "checkpoint_every", low=1)
        if checkpoint_dir is None:
            raise InvalidInputError("checkpoint_dir: needed with checkpoint_every")
    if resume and checkpoint_dir is None:
        raise InvalidInputError("checkpoint_dir: needed with resume=True")
    if client is None and not isinstance(X, (list, tuple)):
        raise InvalidInputError("X: without a client, must be a list of partitions")
    runner: Runner = Dask(client) if client is not None else Local(threads or max(1, len(X)))
    try:
        return _fit(
            runner, client, spec, X, y, max_rounds, aggregation, checkpoint_every, checkpoint_dir, resume, gather_dual
        )
    finally:
        runner.close()


def _fit(
    runner: Runner,
    client: Any,
    spec: _Model,
    X: Any,
    y: Any,
    max_rounds: int,
    aggregation: Aggregation,
    checkpoint_every: int | None,
    checkpoint_dir: str | None,
    resume: bool,
    gather_dual: bool,
) -> tuple[Any, list[RoundRecord]]:
    placed = place(runner, client, X, y)
    d = n_features(X)
    # Seeds by position among the non-empty partitions: empty ones change nothing.
    sizes = [rows for _, _, rows, _ in placed]
    seeds = [_partition_seed(spec.seed, sum(r > 0 for r in sizes[:k])) for k in range(len(sizes))]
    K = sum(r > 0 for r in sizes)
    line_search = aggregation == "line_search" and K > 1
    sigma = 1.0 if line_search else float(max(K, 1))
    shards = spec.shards(runner, placed, _Rounds(sigma, line_search, seeds))
    runner.gather(shards)  # the partitions' own checks raise here
    parts = [_Partition(shard, rows, worker) for shard, (_, _, rows, worker) in zip(shards, placed)]
    active = [p for p in parts if p.rows > 0]
    width = d + (spec.bias is not None)

    history: list[RoundRecord] = []
    start_round = 0
    w_value = np.zeros((spec.coef_rows, width))
    fingerprint = _fingerprint(spec, parts)
    if resume and checkpoint_dir is not None and os.path.exists(os.path.join(checkpoint_dir, _STATE)):
        start_round, history, w_value = _read_checkpoint(checkpoint_dir, fingerprint)
        runner.gather(
            [
                runner.submit(
                    tasks.load_shard, p.shard, os.path.join(checkpoint_dir, f"partition_{k}.npz"), worker=p.worker
                )
                for k, p in enumerate(parts)
            ]
        )
    aggregator = active[0].worker if active else None
    current = runner.put((w_value, 1.0), aggregator)
    w_bytes = w_value.nbytes
    # Per round: every local u_k not on the aggregator's worker, and W to every other
    # worker; per check, a few scalars per partition and ‖W‖² to the driver. Locally
    # nothing moves.
    remote = {p.worker for p in active if p.worker != aggregator}
    local_mode = isinstance(runner, Local)
    round_bytes = 0 if local_mode else sum(w_bytes for p in active if p.worker != aggregator) + len(remote) * w_bytes
    check_bytes = 0 if local_mode else 24 * K + 8

    started = time.perf_counter() - (history[-1].seconds if history else 0.0)
    moved, status, last_dual = 0, "max_iter", -np.inf if not history else history[-1].dual
    rounds_done = start_round
    for r in range(start_round, max_rounds):
        outcomes = [runner.submit(tasks.run_round, p.shard, current, worker=p.worker) for p in active]
        current = runner.submit(tasks.aggregate, current, sigma, line_search, *outcomes, worker=aggregator)
        moved += round_bytes
        rounds_done = r + 1
        last = rounds_done == max_rounds
        if rounds_done % spec.check_every and not last:
            continue
        values_f = [runner.submit(tasks.terms, p.shard, current, worker=p.worker) for p in active]
        *values, half = runner.gather(values_f + [runner.submit(tasks.half_sq_norm, current, worker=aggregator)])
        moved += check_bytes
        primal, dual, violation = spec.objectives(values, half)
        gap = _core.relative_gap(primal, dual)
        record = RoundRecord(rounds_done, primal, dual, gap, time.perf_counter() - started, moved, violation)
        history.append(record)
        moved = 0
        if spec.model.verbose:
            print(
                f"[fit_cocoa] round {rounds_done:5d}  primal {primal:.8g}  dual {dual:.8g}  gap {gap:.3e}  "
                f"{record.seconds:.2f}s  {record.bytes_sent / 1e6:.2f} MB",
                file=sys.stdout,
                flush=True,
            )
        if checkpoint_every is not None and checkpoint_dir is not None and rounds_done % checkpoint_every == 0:
            _write_checkpoint(runner, checkpoint_dir, parts, current, rounds_done, history, fingerprint)
        if spec.done(gap, violation):
            status = "converged"
            break
        if dual <= last_dual:
            status = "no_progress"
            break
        last_dual = dual
        if last:
            break

    W = runner.gather([runner.submit(tasks.coef_of, current, worker=aggregator)])[0]
    spec.finish(runner, parts, W, d, gather_dual, current)
    model = spec.model
    final = history[-1]
    model.n_iter_ = rounds_done
    model.primal_objective_, model.dual_objective_ = final.primal, final.dual
    if isinstance(model, TopKSVC):
        model.duality_gap_ = final.gap
        model.history_ = [FitProgress(h.round, h.primal, h.dual, h.gap, h.seconds) for h in history]
    model.status_ = status
    if status != "converged":
        warnings.warn(
            _advice(spec, status, final, rounds_done, max_rounds, K, aggregation),
            ConvergenceWarning,
            stacklevel=caller_stacklevel(),
        )
    return model, history


def _advice(
    spec: _Model, status: str, final: RoundRecord, rounds: int, max_rounds: int, K: int, aggregation: Aggregation
) -> str:
    """The ConvergenceWarning's message: where the fit stopped, and what to change."""
    measure = (
        f"a relative duality gap of {final.gap:.3g}"
        if final.max_violation is None
        else f"a projected gradient of {final.max_violation:.3g}"
    )
    if status == "no_progress":
        return (
            f"fit_cocoa stopped after {rounds} rounds at {measure} (tol={spec.tol}): the dual objective no "
            "longer increases, so rounding at this scale bounds the attainable accuracy; raise tol."
        )
    advice = ["raise max_rounds (each round is local_epochs passes) or tol"]
    if K > 1 and isinstance(spec, _Svc):
        if aggregation == "adding" and spec.model.loss in ("alpha", "beta"):
            advice.append(
                "use aggregation='line_search', which steps as far as the partitions' changes allow "
                "where 'adding' (σ' = K) is bounded by their worst-case interaction"
            )
        elif aggregation == "line_search" and spec.settings.local_epochs > 1 / 16:
            advice.append(
                f"use shorter rounds (local_epochs={spec.settings.local_epochs / 4:g}): with rounds of 1/16 "
                "to 1/4 of a pass the line search needs about the serial number of passes"
            )
    if K > 1 and spec.bias is not None:
        advice.append("centre X and fit without an intercept: its constant feature couples every partition")
    return (
        f"fit_cocoa stopped after {rounds} rounds (max_rounds={max_rounds}) at {measure} (tol={spec.tol}); "
        + "; or ".join(advice)
        + "."
    )


def _partition_count(X: Any) -> int:
    """The non-empty partitions of X (a dask array's row chunks of unknown size count)."""
    chunks = getattr(X, "chunks", None)
    if chunks is not None and hasattr(X, "to_delayed"):
        return sum(not (size == 0) for size in chunks[0])
    if isinstance(X, (list, tuple)):
        return sum(getattr(part, "shape", (1,))[0] != 0 for part in X)
    return 1


def _local_epochs(value: float | None, default: float) -> float:
    """Passes over the local data per round: far beyond any use (1e9 ran for hours, in
    rounds an interrupt cannot reach), and 1e300 overflows the step count."""
    if value is None:
        return default
    local_epochs = _real(value, "local_epochs", low=0.0, strict=True)
    if local_epochs > 1e4:
        raise InvalidInputError(f"local_epochs: must be at most 10000 passes per round, got {value}")
    return local_epochs


def _partition_seed(seed: int, k: int) -> int:
    """The k-th non-empty partition's seed; the first keeps the estimator's own, so one
    partition is the serial solver."""
    return (seed + k * 0x9E3779B97F4A7C15) % (1 << 64)


def _fingerprint(spec: _Model, parts: Sequence[_Partition]) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: the partitions, the seed, the settings
    and the costs the shards carry (TopKSVC's C and class weights)."""
    settings = {
        name: (value.tolist() if isinstance(value, np.ndarray) else value)
        for name, value in asdict(spec.settings).items()
    }
    labels = [str(c) for c in getattr(spec, "classes", range(spec.coef_rows))]
    # Through JSON and back: the form a checkpoint's state compares as.
    plain: dict[str, Any] = json.loads(
        json.dumps(
            dict(
                model=spec.kind,
                rows=[p.rows for p in parts],
                labels=labels,
                seed=spec.seed,
                settings=settings,
                costs=getattr(spec, "costs", None),
            )
        )
    )
    return plain


def _write_checkpoint(
    runner: Runner,
    directory: str,
    parts: Sequence[_Partition],
    current: Any,
    rounds: int,
    history: list[RoundRecord],
    fingerprint: dict[str, Any],
) -> None:
    """Each worker writes its own partition's state; the driver writes W and, last, the
    state (so a checkpoint is complete whenever the state names it)."""
    os.makedirs(directory, exist_ok=True)
    writes = [
        runner.submit(
            tasks.save_shard, p.shard, current, os.path.join(directory, f"partition_{k}.npz"), worker=p.worker
        )
        for k, p in enumerate(parts)
    ]
    w = runner.submit(tasks.coef_of, current)
    writes.append(runner.submit(tasks.save_array, w, os.path.join(directory, "coef.npy")))
    runner.gather(writes)
    state = dict(round=rounds, history=[asdict(h) for h in history], **fingerprint)
    temporary = os.path.join(directory, _STATE + ".tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(state, f)
    os.replace(temporary, os.path.join(directory, _STATE))


def _read_checkpoint(directory: str, fingerprint: dict[str, Any]) -> tuple[int, list[RoundRecord], NDArray[np.float64]]:
    with open(os.path.join(directory, _STATE), encoding="utf-8") as f:
        state = json.load(f)
    for name, value in fingerprint.items():
        if state.get(name) != value:
            raise InvalidInputError(f"resume: the checkpoint in {directory!r} has other {name} than this fit")
    history = [RoundRecord(**h) for h in state["history"]]
    return int(state["round"]), history, np.load(os.path.join(directory, "coef.npy"))


# ---------------------------------------------------------------- prediction on dask arrays


@fill_doc
def decision_function(estimator: TopKSVC | M3L, X: Any) -> Any:
    """The estimator's ``decision_function`` over the row chunks of a dask array.

    Each chunk is scored where it lives (``map_blocks``); nothing is computed until the
    result is.

    Parameters
    ----------
    %(cocoa_fitted_estimator)s
    X : dask.array.Array of shape (n, d)
        The rows to score, chunked by rows (the columns are rechunked into one).

    Returns
    -------
    dask.array.Array of float64, shape (n, n_classes) or (n, n_labels)
        Every class's (TopKSVC) or label's (M3L) score, chunked as ``X``'s rows.

    See Also
    --------
    predict : The predicted classes or label sets.
    fit_cocoa : Trains where the data lives.

    Examples
    --------
    %(cocoa_example_fit)s
    %(cocoa_example_dask)s
    >>> from toprank.distributed import decision_function
    >>> scores = decision_function(model, X_dask)
    >>> scores.shape, scores.chunks
    ((300, 3), ((100, 100, 100), (3,)))
    >>> bool(np.allclose(scores.compute(), model.decision_function(X)))
    True
    """
    X = X.rechunk({1: X.shape[1]})
    width = len(estimator.classes_) if isinstance(estimator, TopKSVC) else estimator.coef_.shape[0]
    return X.map_blocks(_block_scores, estimator, dtype=np.float64, chunks=(X.chunks[0], (width,)))


@fill_doc
def predict(estimator: TopKSVC | M3L, X: Any) -> Any:
    """The estimator's ``predict`` over the row chunks of a dask array.

    Parameters
    ----------
    %(cocoa_fitted_estimator)s
    X : dask.array.Array of shape (n, d)
        The rows to predict, chunked by rows.

    Returns
    -------
    dask.array.Array
        Shape (n,) of class labels (TopKSVC, and M3L fitted on multiclass labels), or
        (n, n_labels) of 0/1 label sets (M3L fitted on an indicator matrix).

    See Also
    --------
    decision_function : The scores.

    Examples
    --------
    %(cocoa_example_fit)s
    %(cocoa_example_dask)s
    >>> from toprank.distributed import predict
    >>> bool(np.array_equal(predict(model, X_dask).compute(), model.predict(X)))
    True
    """
    X = X.rechunk({1: X.shape[1]})
    if isinstance(estimator, M3L) and estimator._target_kind == "multilabel":
        return X.map_blocks(
            _block_predict,
            estimator,
            dtype=estimator._target_dtype.dtype,
            chunks=(X.chunks[0], (estimator.coef_.shape[0],)),
        )
    return X.map_blocks(_block_predict, estimator, dtype=np.asarray(estimator.classes_).dtype, drop_axis=1)


def _block_scores(block: Any, estimator: TopKSVC | M3L) -> NDArray[np.float64]:
    return np.asarray(estimator._scores(block))


def _block_predict(block: Any, estimator: TopKSVC | M3L) -> NDArray[Any]:
    return np.asarray(estimator.predict(block))
