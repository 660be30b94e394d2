"""Factorised rankers trained with the Rankmax, softmax or sparsemax cross-entropy
(Kong et al., *Rankmax: an adaptive projection alternative to the softmax function*, §3–4).

:class:`RankmaxRanker` scores every one of n labels for an example x with

    z(x) = (x·U)·Vᵀ + b,      U ∈ ℝ^{d×r},  V ∈ ℝ^{n×r},  b ∈ ℝⁿ,

and minimises, over the training examples i with positive label sets Y_i,

    F = (1/P) Σ_i Σ_{y∈Y_i} ℓ(z(x_i), y) + (α/2)(‖U‖²_F + ‖V‖²_F),   P = Σ_i card(Y_i),

the mean over (example, label) pairs — the training unit of the paper's experiments —
of the cross-entropy ℓ of Rankmax (eq. (14), any k and margin η), softmax or sparsemax,
by minibatch Adagrad or Adam. In a recommender, x is a user (a one-hot row: U holds the
user factors) or a bag of the user's past items, and the labels are the items.

The Rust core computes every minibatch gradient without the GIL, in parallel over
blocks of labels and rows with a fixed summation order: a run is bit-for-bit the same
for any ``n_jobs``. For Rankmax with k = 1, the losses of all positive labels of an
example come from one sweep over its scores (a grid over the thresholds of its
positive labels places each score in O(1) expected time); softmax costs one pass of exp per example, sparsemax
the exact simplex threshold (Michelot's mean rule on the candidates above max z − 1).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._tags import Tags
from sklearn.utils.validation import check_is_fitted

from toprank import _core
from toprank._docs import fill_doc
from toprank._estimator import LinePace, RankerProgress, choice, forget, keep_params
from toprank._limits import check_allocation, check_row_norms
from toprank._options import OPTIMIZERS, RANKER_LOSSES, Optimizer, RankerLoss, RankerSettings
from toprank._validation import as_flag as _flag
from toprank._validation import as_jobs, canonical_csr, indicator_matrix, restores_on_failure, validate_input
from toprank._validation import bounded_int as _int
from toprank._validation import bounded_real as _real
from toprank.exceptions import InvalidInputError
from toprank.metrics import average_precision_at_k
from toprank.recsys import evaluate_recommender

__all__ = ["RankmaxRanker"]

_SEED_MAX = 2**63 - 1
# Rows of scores formed at once by decision_function / recommend.
_SCORE_ELEMENTS = 1 << 24


class _LabelSets:
    """Positive labels per row in CSR form: int64 ``indptr`` and ``indices`` (column
    positions in ``classes``)."""

    def __init__(self, indptr: NDArray[np.int64], indices: NDArray[np.int64]) -> None:
        self.indptr = indptr
        self.indices = indices

    @property
    def n_rows(self) -> int:
        return int(self.indptr.shape[0] - 1)

    def counts(self) -> NDArray[np.int64]:
        return np.diff(self.indptr)

    def indicator(self, n_labels: int) -> sp.csr_matrix:
        data = np.ones(self.indices.shape[0], dtype=np.float32)
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.n_rows, n_labels))


def _hold_out_pairs(sets: _LabelSets, fraction: float, rng: np.random.RandomState) -> tuple[_LabelSets, _LabelSets]:
    """A random ``fraction`` of the (example, label) pairs as validation pairs: (training
    sets, held-out sets), both with every example's row."""
    n_pairs = int(sets.indices.shape[0])
    n_held = int(np.floor(fraction * n_pairs))
    if fraction >= 1.0 or n_held < 1 or n_held >= n_pairs:
        raise InvalidInputError(
            f"validation_fraction: {fraction} of the {n_pairs} (example, label) pairs holds out {n_held}; "
            "it must hold out at least one and keep at least one (or pass validation_data, or "
            "early_stopping=False)"
        )
    held = np.zeros(n_pairs, dtype=bool)
    held[rng.permutation(n_pairs)[:n_held]] = True
    row_of_pair = np.repeat(np.arange(sets.n_rows), sets.counts())

    def part(mask: NDArray[np.bool_]) -> _LabelSets:
        counts = np.bincount(row_of_pair[mask], minlength=sets.n_rows)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return _LabelSets(indptr, sets.indices[mask])

    return part(~held), part(held)


def _indicator_sets(Y: Any, name: str) -> tuple[_LabelSets, int]:
    """A 0/1 indicator matrix (dense or sparse) as label sets and its width."""
    M = indicator_matrix(Y, name)
    return _LabelSets(M.indptr.astype(np.int64), M.indices.astype(np.int64)), int(M.shape[1])


def _encode_sets(rows: list[list[Any]], classes: NDArray[Any], name: str) -> _LabelSets:
    lookup = {label: position for position, label in enumerate(classes.tolist())}
    indptr = [0]
    indices: list[int] = []
    for row in rows:
        try:
            positions = sorted({lookup[label] for label in row})
        except KeyError as exc:
            raise InvalidInputError(
                f"{name}: label {exc.args[0]!r} is not one of classes_ (the labels of fit, or of the first "
                "partial_fit and its classes)"
            ) from None
        indices.extend(positions)
        indptr.append(len(indices))
    return _LabelSets(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64))


def _label_classes(rows: list[list[Any]], name: str) -> NDArray[Any]:
    """The sorted distinct labels of ``rows``: all strings or all real numbers (NumPy
    would turn a mix into strings, and 1 would then no longer find its class), no NaN
    (it is not equal to itself, so no row could find its class)."""
    labels = [label for row in rows for label in row]
    if all(isinstance(v, str) for v in labels):
        return np.unique(np.asarray(labels, dtype=str))
    if not all(isinstance(v, (int, float, np.integer, np.floating)) for v in labels):
        kinds = sorted({type(v).__name__ for v in labels})
        raise InvalidInputError(
            f"{name}: labels must be all strings or all real numbers, got a mix of {', '.join(kinds)}"
        )
    classes = np.unique(np.asarray(labels))
    if classes.dtype.kind == "f" and not np.isfinite(classes).all():
        raise InvalidInputError(f"{name}: labels must be finite, got {classes[~np.isfinite(classes)][0]}")
    return classes


def _classes_argument(classes: ArrayLike) -> NDArray[Any]:
    """partial_fit's ``classes``: the sorted distinct labels."""
    return _label_classes([np.asarray(classes, dtype=object).ravel().tolist()], "classes")


def _as_rows_of_labels(Y: Any, name: str) -> list[list[Any]] | None:
    """``Y`` as a list of label lists (from 1-D labels or a sequence of label sets), or
    None for an indicator matrix (a 2-D NumPy array or a scipy.sparse matrix)."""
    if sp.issparse(Y):
        return None
    if isinstance(Y, np.ndarray) and Y.dtype != object:
        if Y.ndim == 2:
            return None
        if Y.ndim == 1:
            return [[label] for label in Y.tolist()]
        raise InvalidInputError(
            f"{name}: expected labels (1-D), label sets or an indicator matrix, got shape {Y.shape}"
        )
    if not isinstance(Y, Iterable) or isinstance(Y, (str, bytes)):
        raise InvalidInputError(f"{name}: expected labels, label sets or an indicator matrix, got {type(Y).__name__}")
    rows = list(Y)
    if all(isinstance(row, Iterable) and not isinstance(row, (str, bytes)) for row in rows):
        return [list(row) for row in rows]
    if any(isinstance(row, Iterable) and not isinstance(row, (str, bytes)) for row in rows):
        raise InvalidInputError(f"{name}: mixes single labels and label sets")
    return [[label] for label in rows]


@dataclass(eq=False)
class _Training:
    """The optimiser's state that ``_core.RankerProblem.epoch`` starts from and returns updated
    (as new arrays): θ, the two moments and the step count."""

    theta: NDArray[np.float32]
    first: NDArray[np.float32]
    second: NDArray[np.float32]
    steps: int


@fill_doc
class RankmaxRanker(BaseEstimator):  # type: ignore[misc]
    """Factorised label ranker trained with the Rankmax (or softmax / sparsemax) cross-entropy.

    It scores every label for an example x with a low-rank model,
    :math:`z(x) = (x U) V^\\top + b`, and minimises the mean cross-entropy of its
    (example, positive label) pairs plus :math:`\\tfrac{\\alpha}{2}(\\|U\\|_F^2 +
    \\|V\\|_F^2)` by minibatch Adagrad or Adam. Rankmax (Kong et al. 2020) replaces the
    softmax by an adaptive projection onto the simplex, which gives mass only to the
    labels scoring near the positive one: a loss for the top of the ranking, e.g. a
    recommender's (x a one-hot user or a bag of past items, the labels the items).

    Parameters
    ----------
    n_components : int, default=64
        Rank r of the factorisation z(x) = (x·U)·Vᵀ + b. Larger r fits more and costs
        O(r) per score; choose it on validation AP.
    loss : {"rankmax", "softmax", "sparsemax"}, default="rankmax"
        The cross-entropy of each (example, label) pair: Rankmax (eq. (14)), the
        softmax's, or sparsemax's (Martins & Astudillo 2016).
    k : int, default=1
        Rankmax's k: the projection is onto the (n, k)-simplex (1 ≤ k < n_labels).
        k = 1 is the paper's standard-simplex Rankmax (eq. (15)), and the fastest.
    eta : float, default=1.0
        Rankmax's margin η > 0 (the labels within η of the anchor score get mass):
        smaller η concentrates the loss on fewer labels near the top.
    alpha : float, default=1e-4
        L2 strength α ≥ 0 on U and V (the biases b are not penalised).
    learning_rate : float, default=0.05
        Step size (> 0) of the optimiser. Lower it if the training loss in
        ``history_`` rises or a fit fails with diverging scores.
    optimizer : {"adagrad", "adam"}, default="adagrad"
        Minibatch update rule: Adagrad (Duchi, Hazan, Singer 2011) or Adam (Kingma, Ba
        2015; β = (0.9, 0.999)), ε = 1e-8, on the minibatch gradient of the objective.
    batch_size : int, default=256
        Examples per minibatch (each contributes all of its positive labels).
    n_epochs : int, default=20
        Maximum number of passes over the training examples.
    early_stopping : bool, default=True
        Keep the parameters of the epoch with the best validation AP@``eval_k`` and stop
        after ``n_iter_no_change`` epochs without improvement. The validation set is
        ``validation_data`` given to :meth:`fit`, else a random ``validation_fraction``
        of the (example, label) pairs, held out of training (see :meth:`fit`).
    validation_fraction : float, default=0.1
        Share of the (example, label) pairs held out when ``early_stopping`` and no
        ``validation_data``; it must hold out at least one pair and keep one.
    n_iter_no_change : int, default=3
        Patience of early stopping, in epochs.
    eval_k : int, default=10
        The k of the validation AP@k (the paper reports AP@10).
    init_scale : float, default=0.1
        Standard deviation (≥ 0) of the Gaussian initialisation of U and V (b starts
        at 0).
    random_state : int, RandomState or None, default=None
        Seeds the initialisation, the validation split and the example order.
    n_jobs : int or None, default=None
        Threads of the Rust core (None: one; -1: all cores; results do not depend on it).
    verbose : int, default=0
        1 prints an epoch's line (training loss, validation AP@k, seconds) at most once a
        second, the first and the last epoch's always; 2 prints every epoch's line.

    Attributes
    ----------
    classes_ : ndarray of shape (n_labels,)
        The labels, in column order of :meth:`decision_function`.
    feature_factors_ : ndarray of shape (n_features, n_components), float32
        U.
    label_factors_ : ndarray of shape (n_labels, n_components), float32
        V.
    label_bias_ : ndarray of shape (n_labels,), float32
        b.
    history_ : list of toprank.RankerProgress
        Per epoch (n_iter, loss, val_ap, val_accuracy, val_recall, seconds): the epochs
        so far, the mean training loss per pair during the epoch, the validation
        AP@``eval_k``, top-1 accuracy and Recall@100 (@n_labels when fewer; None
        without early stopping, and for :meth:`partial_fit`'s epochs) and the seconds
        since the fit started (since the call started, for :meth:`partial_fit`).
    n_iter_ : int
        Epochs run.
    best_epoch_ : int
        The epoch whose parameters were kept (the last one without early stopping).
    n_features_in_ : int
        Number of features seen in fit.

    See Also
    --------
    toprank.projections.rankmax : The Rankmax projection itself.
    toprank.losses.rankmax_loss : The Rankmax cross-entropy and its gradient.
    toprank.recsys.evaluate_recommender : The paper's protocol (AP@k, Recall@k).

    Notes
    -----
    Solver: minibatch Adagrad (Duchi, Hazan & Singer 2011) or Adam (Kingma & Ba
    2015), ε = 1e-8, for ``n_epochs`` passes over the examples in a seeded random
    order, or until early stopping: the parameters of the epoch with the best
    validation AP@``eval_k`` are kept after ``n_iter_no_change`` epochs without
    improvement. There is no convergence certificate; ``history_`` records the loss
    and the validation metrics of each epoch.

    Cost: an epoch scores every label for every example, O(n · (nnz(x)·r + L·r))
    for n examples and L labels, plus the loss: one sweep of an example's L scores
    for Rankmax with k = 1 (the (n, k)-simplex projection for k > 1), a pass of exp
    for softmax, the simplex threshold for sparsemax. The Rust core computes each
    minibatch's gradient in parallel over blocks of labels and rows without the GIL,
    bit for bit the same on any ``n_jobs``. Memory: the float32 parameters
    ((d + L)·r + L values) and the optimiser's two moments, checked before the fit.

    References
    ----------
    .. [1] W. Kong, W. Krichene, N. Mayoraz, S. Rendle, L. Zhang. Rankmax: an
       adaptive projection alternative to the softmax function. NeurIPS 2020 (the
       projection, §3.2 and eq. (11)–(13); the loss, eq. (14); k = 1, eq. (15); the
       experiments, §4).
    .. [2] A. Martins, R. Astudillo. From softmax to sparsemax: a sparse model of
       attention and multi-label classification. ICML 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from toprank import RankmaxRanker
    >>> X = np.eye(40)  # 40 users, one-hot
    >>> y = [[u % 4, 4 + u % 4, 8 + u % 4] for u in range(40)]  # 3 of 12 items each, 4 tastes
    >>> model = RankmaxRanker(n_components=4, learning_rate=0.2, n_epochs=30,
    ...                       early_stopping=False, random_state=0).fit(X, y)
    >>> model.n_iter_, model.decision_function(X).shape
    (30, (40, 12))
    >>> np.sort(model.recommend(X[:2], n=3), axis=1)  # each user's 3 best items
    array([[0, 4, 8],
           [1, 5, 9]])
    >>> float(model.score(X, y))  # mean AP@eval_k of the training rankings
    1.0
    """

    history_: list[RankerProgress]

    def __init__(
        self,
        n_components: int = 64,
        loss: RankerLoss = "rankmax",
        k: int = 1,
        eta: float = 1.0,
        alpha: float = 1e-4,
        learning_rate: float = 0.05,
        optimizer: Optimizer = "adagrad",
        batch_size: int = 256,
        n_epochs: int = 20,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        n_iter_no_change: int = 3,
        eval_k: int = 10,
        init_scale: float = 0.1,
        random_state: Any = None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        keep_params(self, locals())

    # ------------------------------------------------------------------ inputs

    def _check_params(self) -> dict[str, Any]:
        return {
            "n_components": _int(self.n_components, "n_components", low=1),
            "loss": choice(self.loss, "loss", RANKER_LOSSES),
            "k": _int(self.k, "k", low=1),
            "eta": _real(self.eta, "eta", low=0.0, strict=True),
            "alpha": _real(self.alpha, "alpha", low=0.0, strict=False),
            "learning_rate": _real(self.learning_rate, "learning_rate", low=0.0, strict=True),
            "optimizer": choice(self.optimizer, "optimizer", OPTIMIZERS),
            "batch_size": _int(self.batch_size, "batch_size", low=1),
            "n_epochs": _int(self.n_epochs, "n_epochs", low=1),
            "early_stopping": _flag(self.early_stopping, "early_stopping"),
            "validation_fraction": _real(self.validation_fraction, "validation_fraction", low=0.0, strict=True),
            "n_iter_no_change": _int(self.n_iter_no_change, "n_iter_no_change", low=1),
            "eval_k": _int(self.eval_k, "eval_k", low=1),
            "init_scale": _real(self.init_scale, "init_scale", low=0.0, strict=False),
            "n_jobs": as_jobs(self.n_jobs),
        }

    def _check_X(self, X: Any, *, reset: bool) -> Any:
        Xv = validate_input(
            self,
            X,
            reset=reset,
            accept_sparse="csr",
            dtype=[np.float32, np.float64],
            order="C",
            ensure_min_samples=1,
        )
        if sp.issparse(Xv):
            Xv = canonical_csr(Xv)
        return Xv

    def _fit_targets(self, Y: Any, n_samples: int) -> _LabelSets:
        if Y is None:
            raise InvalidInputError("Y: requires y to be passed, but the target y is None")
        rows = _as_rows_of_labels(Y, "Y")
        if rows is None:
            sets, n_labels = _indicator_sets(Y, "Y")
            self.classes_ = np.arange(n_labels)
        else:
            self.classes_ = _label_classes(rows, "Y")
            sets = _encode_sets(rows, self.classes_, "Y")
        if sets.n_rows != n_samples:
            raise InvalidInputError(f"Y: has {sets.n_rows} rows but X has {n_samples}")
        n_labels = len(self.classes_)
        if n_labels < 2:
            raise InvalidInputError(f"Y: needs at least 2 labels (one class is not a ranking), got {n_labels}")
        if sets.indices.shape[0] == 0:
            raise InvalidInputError("Y: no example has a positive label")
        return sets

    def _targets(self, Y: Any, n_samples: int, name: str) -> _LabelSets:
        """Targets of a fitted model, mapped onto ``classes_``."""
        rows = _as_rows_of_labels(Y, name)
        if rows is None:
            sets, width = _indicator_sets(Y, name)
            if width != len(self.classes_):
                raise InvalidInputError(
                    f"{name}: indicator has {width} columns, the model has {len(self.classes_)} labels"
                )
        else:
            sets = _encode_sets(rows, self.classes_, name)
        if sets.n_rows != n_samples:
            raise InvalidInputError(f"{name}: has {sets.n_rows} rows but X has {n_samples}")
        return sets

    # ------------------------------------------------------------------ fit

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags

    def fit(self, X: ArrayLike, y: Any, *, validation_data: tuple[Any, ...] | None = None) -> RankmaxRanker:
        """Train on examples ``X`` with positive labels ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Example features (e.g. one-hot users, or bags of past items).
        y : indicator matrix of shape (n_samples, n_labels), sequence of label sets, or 1-D labels
            Y, the positive labels of each example. An indicator (a 2-D NumPy array or a
            scipy.sparse matrix of 0/1) names the labels by column; a sequence of
            iterables is read as label sets and 1-D labels as one label per example,
            and ``classes_`` is then the sorted union of the labels.
        validation_data : tuple (X_val, Y_val) or (X_val, Y_val, exclude_val), optional
            Validation examples for early stopping instead of held-out pairs;
            ``exclude_val`` (indicator or label sets) lists labels never to rank for a row
            (e.g. its training items, as in the paper's protocol).

        %(fit_returns)s

        Notes
        -----
        Without ``validation_data``, early stopping holds out a random
        ``validation_fraction`` of the (example, label) pairs — not of the examples, so
        that with one-hot users every user keeps training pairs — and scores the
        rankings of all examples against their held-out labels, each example's
        training labels excluded. A failed or interrupted fit leaves the estimator as it
        was (fitted or not).
        """
        return self._fit(X, y, validation_data)

    @restores_on_failure
    def _fit(self, X: ArrayLike, y: Any, validation_data: tuple[Any, ...] | None) -> RankmaxRanker:
        p = self._check_params()
        Xv = self._check_X(X, reset=True)
        self._check_scale(Xv)
        sets = self._fit_targets(y, Xv.shape[0])
        rng = check_random_state(self.random_state)
        self._check_size(Xv.shape[1], p)
        n_labels = len(self.classes_)

        val = None
        if p["early_stopping"]:
            if validation_data is not None:
                val = self._validation_set(validation_data)
            else:
                sets, held = _hold_out_pairs(sets, p["validation_fraction"], rng)
                val = (Xv, held.indicator(n_labels), sets.indicator(n_labels))

        training = self._initial_training(Xv.shape[1], p, rng)
        rows = np.arange(Xv.shape[0], dtype=np.int64)
        problem = _core.RankerProblem(Xv, sets, rows, self._settings(p))
        history: list[RankerProgress] = []
        best_score, best_theta, best_epoch, stale = -np.inf, training.theta, 0, 0
        start = time.perf_counter()
        pace = LinePace(self.verbose)
        for epoch in range(1, p["n_epochs"] + 1):
            seed = int(rng.randint(0, np.iinfo(np.int32).max))
            training, loss = self._epoch(problem, training, seed, p["n_jobs"])
            self._set_parameters(training.theta)
            metrics: tuple[float | None, float | None, float | None] = (None, None, None)
            if val is not None:
                metrics = self._validation_metrics(val, p["eval_k"])
                if metrics[0] > best_score:
                    best_score, best_theta, best_epoch, stale = metrics[0], training.theta, epoch, 0
                else:
                    stale += 1
            else:
                best_epoch = epoch
            record = RankerProgress(epoch, loss, *metrics, time.perf_counter() - start)
            history.append(record)
            stop = val is not None and stale >= p["n_iter_no_change"]
            if self.verbose and (stop or epoch == p["n_epochs"]):
                self._progress(record, f"  done: {'early stop, ' if stop else ''}best epoch {best_epoch}")
            elif self.verbose and pace.due():
                self._progress(record)
            if stop:
                break
        if val is not None:
            self._set_parameters(best_theta)
        # A fit starts over: no optimiser state of an earlier partial_fit outlives it.
        forget(self, "_training", "_rng")
        self.history_ = history
        self.n_iter_ = len(history)
        self.best_epoch_ = best_epoch
        return self

    @restores_on_failure
    def partial_fit(self, X: ArrayLike, y: Any, classes: ArrayLike | None = None) -> RankmaxRanker:
        """Run one epoch of the optimiser over ``X`` and ``y``, continuing from the previous call.

        For data that arrive, or fit in memory, a chunk at a time.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Example features, with the columns of the first call.
        y : indicator matrix of shape (n_samples, n_labels), sequence of label sets, or 1-D labels
            As in :meth:`fit`; every label must be one of ``classes_``.
        classes : array-like of shape (n_labels,), optional
            Every label of all the calls, given on the first call (as to scikit-learn's
            ``partial_fit``) when ``y`` holds labels that its first chunk may not all
            show; without it, the labels of the first ``y`` are all there are (an
            indicator's columns, or the labels it holds). Later calls may repeat them.

        Returns
        -------
        RankmaxRanker
            The updated estimator, ``self``.

        Notes
        -----
        The first call on an unfitted model draws U and V; later calls continue θ, the
        optimiser's moments and its step count, so that calls over a dataset's chunks
        make the epochs of :meth:`fit` over it (without early stopping: there is no
        validation set; ``n_epochs`` and the early-stopping parameters do not apply).
        On a model fitted by :meth:`fit`, the first call continues from its factors
        with fresh moments (a fit keeps no optimiser state). Each call appends one
        record to ``history_``.
        """
        p = self._check_params()
        first = not hasattr(self, "classes_")
        Xv = self._check_X(X, reset=first)
        self._check_scale(Xv)
        if first:
            self._start_classes(y, classes, Xv.shape[1], p)
        elif classes is not None and not np.array_equal(_classes_argument(classes), self.classes_):
            raise InvalidInputError(f"classes: must be the {len(self.classes_)} labels of the model (classes_)")
        sets = self._targets(y, Xv.shape[0], "y")
        if sets.indices.shape[0] == 0:
            raise InvalidInputError("y: no example has a positive label")
        if not hasattr(self, "_training"):
            self._rng = check_random_state(self.random_state)
            if first:
                self._training = self._initial_training(Xv.shape[1], p, self._rng)
            else:
                theta = np.concatenate(
                    [self.feature_factors_.ravel(), self.label_factors_.ravel(), self.label_bias_]
                ).astype(np.float32)
                self._training = _Training(theta, np.zeros_like(theta), np.zeros_like(theta), 0)
        start = time.perf_counter()
        seed = int(self._rng.randint(0, np.iinfo(np.int32).max))
        rows = np.arange(Xv.shape[0], dtype=np.int64)
        problem = _core.RankerProblem(Xv, sets, rows, self._settings(p))
        self._training, loss = self._epoch(problem, self._training, seed, p["n_jobs"])
        self._set_parameters(self._training.theta)
        record = RankerProgress(self.n_iter_ + 1, loss, None, None, None, time.perf_counter() - start)
        self.history_.append(record)
        self.n_iter_ = self.best_epoch_ = record.n_iter
        if self.verbose:
            self._progress(record)
        return self

    def _start_classes(self, y: Any, classes: ArrayLike | None, d: int, p: dict[str, Any]) -> None:
        """The labels of a first partial_fit: ``classes`` or an indicator's columns."""
        rows = _as_rows_of_labels(y, "y")
        if classes is not None:
            self.classes_ = _classes_argument(classes)
        elif rows is None:
            self.classes_ = np.arange(_indicator_sets(y, "y")[1])
        else:
            self.classes_ = _label_classes(rows, "y")
        if len(self.classes_) < 2:
            raise InvalidInputError(
                f"classes: needs at least 2 labels (one class is not a ranking), got {len(self.classes_)}"
            )
        self._check_size(d, p)
        self.history_, self.n_iter_, self.best_epoch_ = [], 0, 0

    def _check_scale(self, Xv: Any) -> None:
        # The model is float32, and training squares values proportional to X: an X of
        # 1e300 otherwise surfaced as "the scores diverged: lower learning_rate".
        check_row_norms(
            Xv, np.float32, "the model is float32, and its training squares scores and gradients that scale with X"
        )

    def _check_size(self, d: int, p: dict[str, Any]) -> None:
        """k against the labels, and the memory of θ and the optimiser's state."""
        n_labels, r = len(self.classes_), p["n_components"]
        if p["loss"] == "rankmax" and p["k"] >= n_labels:
            raise InvalidInputError(f"k: must satisfy 1 <= k < n_labels = {n_labels}, got {p['k']}")
        # θ, the optimiser's two moments (float32 each) and θ's float64 initial draw.
        check_allocation(
            "n_components",
            r,
            20 * ((d + n_labels) * r + n_labels),
            f"the parameters, (n_features + n_labels) x n_components + n_labels = ({d} + {n_labels}) x "
            f"{r} + {n_labels} values, with the optimiser's state",
        )

    def _initial_training(self, d: int, p: dict[str, Any], rng: np.random.RandomState) -> _Training:
        """θ drawn as the paper does (U, V Gaussian of ``init_scale``, b = 0), zero moments."""
        n_labels, r = len(self.classes_), p["n_components"]
        theta = np.zeros((d + n_labels) * r + n_labels, dtype=np.float32)
        with np.errstate(over="ignore"):
            theta[: (d + n_labels) * r] = rng.normal(0.0, p["init_scale"], (d + n_labels) * r)
        if not bool(np.all(np.isfinite(theta))):
            raise InvalidInputError(
                f"init_scale: {p['init_scale']!r} draws factors beyond float32, the model's "
                "precision; use a scale near 1 or below"
            )
        self._theta_shape = (d, n_labels, r)
        return _Training(theta, np.zeros_like(theta), np.zeros_like(theta), 0)

    def _settings(self, p: dict[str, Any]) -> RankerSettings:
        return RankerSettings(
            n_labels=len(self.classes_),
            n_components=p["n_components"],
            loss=p["loss"],
            k=p["k"],
            eta=p["eta"],
            alpha=p["alpha"],
            optimizer=p["optimizer"],
            learning_rate=p["learning_rate"],
            batch_size=p["batch_size"],
        )

    @staticmethod
    def _epoch(
        problem: _core.RankerProblem, training: _Training, seed: int, n_jobs: int | None
    ) -> tuple[_Training, float]:
        """One epoch of the core on ``problem`` from ``training`` (left as it was), its
        examples in the order of ``seed``: the new state, and the mean training loss per
        (example, label) pair."""
        state, (loss, _batches, _stopped) = problem.epoch(training, seed, n_jobs=n_jobs)
        return _Training(*state), loss

    def _set_parameters(self, theta: NDArray[np.float32]) -> None:
        d, n, r = self._theta_shape
        self.feature_factors_ = theta[: d * r].reshape(d, r).copy()
        self.label_factors_ = theta[d * r : (d + n) * r].reshape(n, r).copy()
        self.label_bias_ = theta[(d + n) * r :].copy()

    def _validation_set(self, data: tuple[Any, ...]) -> tuple[Any, Any, Any]:
        if not isinstance(data, tuple) or len(data) not in (2, 3):
            raise InvalidInputError("validation_data: expected a tuple (X_val, Y_val) or (X_val, Y_val, exclude_val)")
        Xval = self._check_X(data[0], reset=False)
        n_labels = len(self.classes_)
        Yval = self._targets(data[1], Xval.shape[0], "validation_data").indicator(n_labels)
        exclude = None
        if len(data) == 3 and data[2] is not None:
            exclude = self._targets(data[2], Xval.shape[0], "validation_data").indicator(n_labels)
        return Xval, Yval, exclude

    def _validation_metrics(self, val: tuple[Any, Any, Any], k: int) -> tuple[float, float, float]:
        """(AP@k, top-1 accuracy, Recall@100) of the current parameters on ``val``."""
        Xval, Yval, exclude = val
        n_labels = len(self.classes_)
        # AP@k with k ≥ n_labels equals AP@n_labels: nothing is ranked below n.
        k_ap, k_recall = min(k, n_labels), min(100, n_labels)
        metrics = evaluate_recommender(self, Xval, Yval, exclude=exclude, k_ap=k_ap, k_recall=k_recall)
        return float(metrics[f"ap@{k_ap}"]), float(metrics["accuracy"]), float(metrics[f"recall@{k_recall}"])

    def _progress(self, record: RankerProgress, status: str = "") -> None:
        """The line of an epoch (``verbose``: see :class:`toprank._estimator.LinePace`)."""
        val = (
            f"  val AP@{self.eval_k} {record.val_ap:.4f}  accuracy {record.val_accuracy:.4f}  "
            f"recall {record.val_recall:.4f}"
            if record.val_ap is not None
            else ""
        )
        print(
            f"[RankmaxRanker] epoch {record.n_iter:4d}  loss {record.loss:.6f}{val}  {record.seconds:.2f}s{status}",
            file=sys.stdout,
            flush=True,
        )

    # ------------------------------------------------------------------ predict

    def _scores(self, Xv: Any) -> NDArray[np.float32]:
        with np.errstate(over="ignore", invalid="ignore"):
            hidden = np.asarray(Xv @ self.feature_factors_, dtype=np.float32)
            scores = np.asarray(hidden @ self.label_factors_.T + self.label_bias_, dtype=np.float32)
        if not bool(np.isfinite(scores).all()):
            raise InvalidInputError("X: its scores overflow float32 (the model's precision); rescale X")
        return scores

    def decision_function(self, X: ArrayLike) -> NDArray[np.float32]:
        """Compute the scores z(x) = (x·U)·Vᵀ + b of every label.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Example features.

        Returns
        -------
        ndarray of shape (n_samples, n_labels), float32
            Scores, columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        return self._scores(self._check_X(X, reset=False))

    def recommend(self, X: ArrayLike, n: int = 10, exclude: Any = None) -> NDArray[Any]:
        """Recommend the ``n`` best-scored labels of each row, best first.

        Ties go to the lower column first.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Example features (e.g. one-hot users).
        n : int, default=10
            Labels per row (1 ≤ n ≤ n_labels minus the most excluded in any row).
        exclude : indicator matrix or sequence of label sets, optional
            Labels never to recommend for a row (e.g. the items a user already has).

        Returns
        -------
        ndarray of shape (n_samples, n)
            Labels from ``classes_``.
        """
        check_is_fitted(self)
        Xv = self._check_X(X, reset=False)
        n_labels = len(self.classes_)
        count = _int(n, "n", low=1)
        ex = None if exclude is None else self._targets(exclude, Xv.shape[0], "exclude").indicator(n_labels)
        most_excluded = 0 if ex is None else int(np.diff(ex.indptr).max(initial=0))
        if count > n_labels - most_excluded:
            raise InvalidInputError(f"n: must be <= {n_labels - most_excluded} (labels left after exclusion), got {n}")
        out = np.empty((Xv.shape[0], count), dtype=np.int64)
        step = max(1, _SCORE_ELEMENTS // n_labels)
        for lo in range(0, Xv.shape[0], step):
            hi = min(lo + step, Xv.shape[0])
            scores = self._scores(Xv[lo:hi])
            if ex is not None:
                block = ex[lo:hi].tocoo()
                scores[block.row, block.col] = -np.inf
            # A stable sort: descending score, ties by ascending column.
            out[lo:hi] = np.argsort(-scores, axis=1, kind="stable")[:, :count]
        return np.asarray(self.classes_[out])

    def score(self, X: ArrayLike, y: Any) -> float:
        """Return the mean AP@``eval_k`` of the rankings of ``X`` against the positive labels ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Example features.
        y : indicator matrix, sequence of label sets, or 1-D labels
            The positive labels of each row, among ``classes_``; rows without
            positives are skipped.

        Returns
        -------
        float
            The mean average precision at ``eval_k``, in [0, 1].
        """
        check_is_fitted(self)
        Xv = self._check_X(X, reset=False)
        sets = self._targets(y, Xv.shape[0], "Y")
        scores = self._scores(Xv).astype(np.float64)
        return average_precision_at_k(sets.indicator(len(self.classes_)), scores, min(self.eval_k, scores.shape[1]))
