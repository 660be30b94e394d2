"""Trace-norm regularised multinomial logistic regression by rank-one descent
(Harchaoui, Douze, Paulin, Dudik, Malick, CVPR 2012), on raw, sparse or
product-quantized features.

:class:`TraceNormLogisticRegression` minimises (4)

    J(W, b) = λ1 ‖W‖_σ,1 + λ2 ‖W‖²_F + (1/n) Σ_i log Σ_l exp(s_il − s_iy_i),   S = X W + 1 bᵀ,

or, with sample weights w_i, the weighted mean (1/Σw) Σ_i w_i log Σ_l exp(s_il − s_iy_i)
as the data term (weight 2 is the row duplicated, weight 0 the row ignored),

over W (d × m) and, with ``fit_intercept``, an unpenalised intercept b. The trace norm
‖W‖_σ,1 (the sum of the singular values) makes W low-rank: the classes share a few
directions of the feature space.

Algorithm R1D (§4): W is a non-negative combination Σ_j θ_j u_j v_jᵀ of unit rank-one
atoms (Proposition 1 turns the trace norm into Σ_j θ_j). Each iteration takes the top
singular pair (u, v) of −∇R̃(W), R̃ = λ2‖W‖²_F + R_n (block subspace iteration, warm-started),
and, when it descends (g = λ1 − σ_max < −ε/2), adds the atom u vᵀ with an Armijo step
along it (only the n-vector X u is new: S moves by δ (X u) vᵀ). Every
``subspace_every`` steps, and whenever no atom descends, a subspace step re-optimises W
and b over the span of the atoms found so far, widened by their rotation directions
(−∇R̃ v_j and −∇R̃ᵀu_j: where the gradient would turn each factor of W): W = Q_u C Q_vᵀ with
Q_u, Q_v orthonormal bases of those spans and C free (a small k × k' matrix), by L-BFGS over a
factorisation C = A Bᵀ and then accelerated proximal gradient on C (never touching X; see
the core's ``subspace.rs``). This contains the paper's restricted problem (8) over the weights θ
(C = diag θ in a common basis) and also lets W rotate within the span, without which
rank-one descent crawls near the optimum (measured: thousands of iterations at 1e-7 on
the tests' problems). The step returns W's singular pairs as the atoms (so Σθ = ‖W‖_σ,1),
dropping those the prox zeroed. A point of a regularisation path starts from the previous
point's atoms and gradient: its first step is that subspace step, from weights moved by a
diagonal Newton step and with only the Ritz pairs outside the atoms' spans added (the
atoms' own singular values sit at the previous λ1, above the new one). The fit stops at
ε-optimality (C1)–(C2):

* (C1) σ_max(−∇R̃(W)) ≤ λ1 + ε — no new atom descends by more than ε;
* (C2) abs(⟨∇R̃(W), u_j v_jᵀ⟩ + λ1) ≤ ε for every atom with θ_j > 0, and ‖∇_b‖_∞ ≤ ε,

checked on W's singular pairs as the atoms.

The whole solver runs in Rust without the GIL, one call per fit (``toprank._core``'s
``TraceNormSolver``; the loop, both stages of the subspace step and the stopping rules are
``src/solvers/tracenorm/``); X is a dense float32/float64 array, a CSR matrix or a
:class:`toprank.pq.CompressedMatrix` (train on the codes X̂, predict on raw features).
This module validates, calls the core once and stores the result.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._tags import Tags
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from toprank import _core
from toprank._docs import fill_doc
from toprank._estimator import ClassScores, LinePace, TraceNormProgress
from toprank._limits import check_row_norms
from toprank._validation import as_flag as _flag
from toprank._validation import (
    as_jobs,
    as_real,
    canonical_csr,
    restores_on_failure,
    sample_weights,
    validate_input,
    warn_not_converged,
)
from toprank._validation import bounded_int as _int
from toprank._validation import bounded_real as _real
from toprank.exceptions import InvalidInputError

__all__ = ["TraceNormLogisticRegression", "PathPoint", "tracenorm_path"]

# A warm start's atoms: U (d × r), V (m × r), their weights θ and the intercept b.
_AtomArrays = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]


@fill_doc
class TraceNormLogisticRegression(ClassScores, ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Multinomial logistic regression with trace-norm and Frobenius penalties, by rank-one descent.

    It minimises eq. (4) of Harchaoui et al. (2012),
    :math:`J(W, b) = \\lambda_1 \\|W\\|_{\\sigma,1} + \\lambda_2 \\|W\\|_F^2 +
    \\frac1n \\sum_i \\log \\sum_l \\exp(s_{il} - s_{iy_i})` with S = XW + 1bᵀ: the
    trace norm (the sum of W's singular values) makes W low-rank, so that the classes
    share a few directions of the feature space. The module docs describe the
    algorithm and its stopping rule.

    Parameters
    ----------
    lambda_trace : float, default=1e-3
        The λ1 ≥ 0 weighting the trace norm ‖W‖_σ,1; larger gives lower rank. Choose
        it on validation accuracy along a path (:func:`tracenorm_path`), from a value
        that gives rank 1 downwards.
    lambda_fro : float, default=1e-4
        The λ2 ≥ 0 weighting ‖W‖²_F; > 0 makes the problem strongly convex.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept per class.
    tol : float, default=1e-4
        The ε (> 0) of the stopping rules (C1)–(C2), on the scale of the gradient.
    max_iter : int, default=200
        Rank-one iterations at most (status "max_iter" with a warning when reached).
    subspace_every : int, default=5
        Rank-one steps between subspace steps (re-optimisations over the atoms' span).
    warm_start : bool, default=False
        Start from the previous fit's atoms (same classes and features), e.g. along a
        decreasing sequence of ``lambda_trace``.
    random_state : int, RandomState or None, default=None
        Seeds the start vector of the first singular-pair iteration.
    n_jobs : int or None, default=None
        Threads of the Rust solver (None: one; -1: all cores).
    verbose : int, default=0
        1 prints the objective and σ_max − λ1 at most once a second (the first iteration
        always) and a closing line with the status; 2 prints every iteration.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_features)
        Wᵀ, one row per class.
    intercept_ : ndarray of shape (n_classes,)
        The intercepts b (zeros without ``fit_intercept``).
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted.
    %(n_features_in)s
    rank_ : int
        The rank of W: its singular values above 1e-6 × the largest (smaller ones are
        atoms within the tolerance of zero weight).
    singular_values_ : ndarray
        Every nonzero singular value of W, largest first.
    n_iter_ : int
        Iterations run.
    objective_ : float
        J(W, b) at the solution.
    status_ : {"converged", "max_iter"}
        Whether (C1)–(C2) hold within ``tol``, or ``max_iter`` ran out.
    history_ : list of toprank.TraceNormProgress
        One record (n_iter, objective, sigma, rank, seconds) per iteration.

    See Also
    --------
    tracenorm_path : Fits along a decreasing sequence of λ1, warm-started.
    toprank.TopKSVC : Softmax and top-k losses with a Frobenius penalty only.
    toprank.pq.ProductQuantizer : Compresses X to train on its codes.

    Notes
    -----
    Solver: rank-one descent (R1D, §4 of the paper): each iteration adds the atom
    u vᵀ of the top singular pair of −∇ when it descends, with an Armijo step, and
    every ``subspace_every`` steps re-optimises W and b over the span of the atoms
    (L-BFGS, then accelerated proximal gradient on a small core matrix). It stops at
    ε-optimality: (C1) σ_max(−∇) ≤ λ1 + ε and (C2) every atom's and the intercept's
    gradient within ε — or after ``max_iter`` iterations, with a warning.

    Cost: an iteration is a few products X·u and Xᵀ·G, O(nnz(X) · (m + r)) for m
    classes and rank r, plus the block subspace iteration for the top singular pair;
    on a :class:`~toprank.pq.CompressedMatrix` the products are computed from the
    codes (Harchaoui et al. §4.2). Memory: X in place, the n × m scores and gradient,
    the atoms (d + m)·r.

    References
    ----------
    .. [1] Z. Harchaoui, M. Douze, M. Paulin, M. Dudik, J. Malick. Large-scale image
       classification with trace-norm regularization. CVPR 2012 (the objective,
       eq. (4); R1D, §4 and Proposition 1; the optimality conditions (C1)–(C2);
       training on product-quantized features, §4.2).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank import TraceNormLogisticRegression
    %(iris_example)s
    >>> model = TraceNormLogisticRegression(lambda_trace=0.05, random_state=0).fit(X, y)
    >>> model.status_, model.rank_, model.coef_.shape  # 3 classes, one shared direction
    ('converged', 1, (3, 4))
    >>> model.predict_topk(X[[0, 50, 100]], k=2)
    array([[0, 1],
           [1, 2],
           [2, 1]])
    >>> np.round(model.predict_proba(X[[0]]), 3)
    array([[0.968, 0.032, 0.   ]])
    """

    def __init__(
        self,
        lambda_trace: float = 1e-3,
        lambda_fro: float = 1e-4,
        *,
        fit_intercept: bool = True,
        tol: float = 1e-4,
        max_iter: int = 200,
        subspace_every: int = 5,
        warm_start: bool = False,
        random_state: Any = None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        self.lambda_trace = lambda_trace
        self.lambda_fro = lambda_fro
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.subspace_every = subspace_every
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _validate(self, X: Any, y: Any) -> tuple[Any, NDArray[np.uint32]]:
        from toprank.pq import CompressedMatrix  # noqa: PLC0415

        # The core reads a CompressedMatrix's codes (X̂·B and X̂ᵀ·G from them).
        Xv: Any
        Xv, y = validate_input(
            self, X, y, codes=True, accept_sparse="csr", dtype=[np.float64, np.float32], order="C", ensure_min_samples=2
        )
        if not isinstance(Xv, CompressedMatrix):
            if sp.issparse(Xv):
                Xv = canonical_csr(Xv)
            # The loss's curvature along W scales with ‖x_i‖²: an X of 1e300 otherwise
            # surfaced as "subspace step: no solution (non-finite weights)", or as
            # Python's OverflowError. (Codes decode to float32 values: no overflow.)
            check_row_norms(Xv, np.float64, "the loss's curvature scales with them")
        check_classification_targets(y)
        classes, y_enc = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise InvalidInputError(f"y: needs samples of at least 2 classes, got {len(classes)} class")
        self.classes_ = classes
        return Xv, np.ascontiguousarray(y_enc, dtype=np.uint32)

    @restores_on_failure
    def fit(self, X: Any, y: ArrayLike, sample_weight: ArrayLike | None = None) -> TraceNormLogisticRegression:
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix, CompressedMatrix} of shape (n_samples, n_features)
            Training data: dense, CSR, or a :class:`toprank.pq.CompressedMatrix` (trained
            on its codes).
        %(fit_y_class_labels)s
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example weights w_i ≥ 0 of the loss: the data term becomes
            (1/Σw) Σ_i w_i loss_i (an integer weight is the example repeated that many
            times; weight 0 ignores it). Uniform weights give the unweighted fit exactly.
            With ``fit_intercept``, every class present in y needs some positive weight.

        %(fit_returns_raises)s
            If an input or a parameter is out of range (e.g. fewer than two classes,
            a negative λ, a warm start from other classes or features), naming it.

        Warns
        -----
        ConvergenceWarning
            If ``max_iter`` runs out before (C1)–(C2) hold.
        """
        previous = getattr(self, "_atoms", None) if _flag(self.warm_start, "warm_start") else None
        previous_classes = getattr(self, "classes_", None)
        Xv, y_enc = self._validate(X, y)
        sw = sample_weights(sample_weight, len(y_enc))
        if previous is not None:
            # (Validation has set classes_ and n_features_in_ from the new data; the
            # refusal restores the previous model, as every failed fit does.)
            if (
                previous_classes is None
                or not np.array_equal(previous_classes, self.classes_)
                or previous[0].shape[0] != self.n_features_in_
            ):
                raise InvalidInputError("warm_start: the previous fit has other classes or features; refit without it")
        self._fit_design(Xv, y_enc, sw, previous)
        return self

    def _fit_design(
        self,
        X: Any,
        y_enc: NDArray[np.uint32],
        sample_weight: NDArray[np.float64] | None,
        start: _core.TraceNormFit | _AtomArrays | None,
    ) -> _core.TraceNormFit:
        """R1D in the core on validated data from `start` (a previous fit on the same data
        and weights, or the atoms of any fit); sets the fitted attributes and returns the
        core's fit, which can start the next point of a path."""
        # Types here, ranges in the core (which names the setting): a count only has to be
        # one the core can take (unsigned).
        lambda_trace, tol = as_real(self.lambda_trace, "lambda_trace"), as_real(self.tol, "tol")
        max_iter = _int(self.max_iter, "max_iter", low=0)
        verbose = _int(self.verbose, "verbose", low=0)
        solver = _core.TraceNormSolver(
            lambda_trace,
            as_real(self.lambda_fro, "lambda_fro"),
            fit_intercept=_flag(self.fit_intercept, "fit_intercept"),
            tol=tol,
            max_iter=max_iter,
            subspace_every=_int(self.subspace_every, "subspace_every", low=0),
            seed=int(check_random_state(self.random_state).randint(np.iinfo(np.int64).max, dtype=np.int64)),
        )
        pace = LinePace(verbose)

        def progress(iteration: int, objective: float, sigma: float, margin: float, seconds: float) -> None:
            if pace.due():
                print(
                    f"[TraceNormLogisticRegression] iter {iteration:4d}  objective {objective:.10g}  "
                    f"sigma_max - lambda1 {margin:+.3e}  {seconds:.2f}s",
                    file=sys.stdout,
                    flush=True,
                )

        fit = solver.fit(
            X,
            y_enc,
            sample_weight=sample_weight,
            start=start,
            n_jobs=as_jobs(self.n_jobs),
            callback=progress if verbose else None,
        )
        # Kept for warm starts without Z (n × rank: it would make the pickled model grow with n).
        self._atoms = fit.atoms
        self.coef_ = np.ascontiguousarray(fit.coef.T)
        self.intercept_ = self._atoms[3].copy()
        self.singular_values_ = self._atoms[2].copy()
        self.rank_ = fit.rank
        self.n_iter_ = fit.n_iter
        self.objective_ = fit.objective  # J(W, b) with weights that sum to the trace norm exactly
        self.status_ = fit.status
        self.history_ = [TraceNormProgress(*record) for record in fit.history]
        if verbose:
            print(
                f"[TraceNormLogisticRegression] {fit.status} after {fit.n_iter} iterations  objective "
                f"{fit.objective:.10g}  rank {fit.rank}",
                file=sys.stdout,
                flush=True,
            )
        if fit.status != "converged":
            # (C1)'s margin σ_max(−∇) − λ1 at the last iteration: what tol bounds.
            excess = self.history_[-1].sigma - lambda_trace if self.history_ else float("nan")
            warn_not_converged(
                "TraceNormLogisticRegression",
                fit.status,
                max_iter,
                "iterations",
                excess,
                tol,
                f"Raise max_iter (now {max_iter}) or tol, or standardise X (the rank-one steps "
                "converge slowly on badly scaled features).",
                measure="(C1) margin σ_max(−∇) − λ1",
            )
        return fit

    # --------------------------------------------------------------- prediction

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """Compute the class scores Wᵀx + b of each sample.

        Parameters
        ----------
        X : {array-like, sparse matrix, CompressedMatrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples, n_classes) or (n_samples,)
            Scores, columns in the order of ``classes_``; for two classes the score
            of ``classes_[1]`` minus that of ``classes_[0]``.
        """
        scores = self._scores(X)
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def _scores(self, X: Any) -> NDArray[np.float64]:
        check_is_fitted(self)
        # A CompressedMatrix's X̂·Wᵀ comes from its codes.
        Xv: Any = validate_input(self, X, codes=True, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False)
        return np.asarray(safe_sparse_dot(Xv, self.coef_.T, dense_output=True), dtype=np.float64) + self.intercept_

    def predict_topk(self, X: ArrayLike, k: int | None = 5) -> NDArray[Any]:
        """Predict the k highest-scoring classes of each sample, best first.

        Parameters
        ----------
        X : {array-like, sparse matrix, CompressedMatrix} of shape (n_samples, n_features)
            Samples.
        k : int, default=5
            Classes per sample, 1 ≤ k ≤ n_classes.

        Returns
        -------
        ndarray of shape (n_samples, k)
            Labels from ``classes_``, best first (ties towards the lower class index).
        """
        return super().predict_topk(X, k)


@fill_doc
@dataclass
class PathPoint:
    """One model of a regularisation path, as :func:`tracenorm_path` returns it.

    The fitted model of one λ1 of the path with what it cost and, when the path was
    given validation data, how well it ranks there.

    Parameters
    ----------
    lambda_trace : float
        The λ1 of this point.
    lambda_fro : float
        The λ2 (the same for every point).
    model : TraceNormLogisticRegression
        The model fitted at this point (a copy: the next point does not change it).
    objective : float
        J(W, b) at the solution.
    rank : int
        The rank of W.
    n_iter : int
        Iterations run at this point.
    seconds : float
        Seconds the point's fit took.
    validation_topk : dict of int to float, default={}
        Top-k accuracy on the validation data for each k of ``topk`` (empty without
        validation data).

    See Also
    --------
    tracenorm_path : Returns a list of these.

    Examples
    --------
    %(tracenorm_path_example)s
    >>> point = tracenorm_path(X, y, [0.05], random_state=0)[0]
    >>> point.lambda_trace, point.rank, point.model.rank_
    (0.05, 1, 1)
    """

    lambda_trace: float
    lambda_fro: float
    model: TraceNormLogisticRegression
    objective: float
    rank: int
    n_iter: int
    seconds: float
    validation_topk: dict[int, float] = field(default_factory=dict)


@fill_doc
def tracenorm_path(
    X: Any,
    y: ArrayLike,
    lambdas_trace: ArrayLike,
    lambda_fro: float = 1e-4,
    *,
    validation_data: tuple[Any, ArrayLike] | None = None,
    topk: Sequence[int] = (1, 5),
    sample_weight: ArrayLike | None = None,
    **params: Any,
) -> list[PathPoint]:
    """Fit :class:`TraceNormLogisticRegression` along a sequence of λ1, each fit warm-started.

    The values of ``lambdas_trace`` are taken from the largest (the lowest rank) to the
    smallest, each fit starting from the previous one's atoms and gradient, so that the
    whole path costs little more than its last point.

    Parameters
    ----------
    X : {array-like, sparse matrix, CompressedMatrix} of shape (n_samples, n_features)
        Training data, as for :meth:`TraceNormLogisticRegression.fit`.
    %(fit_y_class_labels)s
    lambdas_trace : array-like of float
        The λ1 values (≥ 0, at least one), in any order.
    lambda_fro : float, default=1e-4
        The λ2, the same at every point.
    validation_data : tuple (X_val, y_val), default=None
        Data on which each point's top-k accuracies are measured.
    topk : sequence of int, default=(1, 5)
        The k of those accuracies (each capped at the number of classes).
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the examples of (X, y) at every point, as in
        :meth:`TraceNormLogisticRegression.fit`.
    **params : dict
        Other parameters of :class:`TraceNormLogisticRegression` (``tol``,
        ``max_iter``, ``random_state``, ...; not ``lambda_trace``).

    Returns
    -------
    list of PathPoint
        One point per λ1, in decreasing order of λ1, with the fitted model, its
        objective, rank, iterations and seconds and, with ``validation_data``, its
        top-k accuracies there.

    Raises
    ------
    InvalidInputError
        If ``lambdas_trace`` is empty, not one-dimensional or holds a negative or
        non-numeric value, if ``lambda_trace`` is passed, or if ``validation_data`` is
        not a pair of equal lengths.

    See Also
    --------
    TraceNormLogisticRegression : The model of each point.

    Examples
    --------
    %(tracenorm_path_example)s
    >>> path = tracenorm_path(X, y, [0.01, 0.1], validation_data=(X, y), topk=(1, 2), random_state=0)
    >>> [point.lambda_trace for point in path]  # largest first
    [0.1, 0.01]
    >>> [point.model.status_ for point in path]
    ['converged', 'converged']
    >>> sorted(path[0].validation_topk), path[0].validation_topk[2]
    ([1, 2], 1.0)
    """
    if "lambda_trace" in params:
        raise InvalidInputError("lambda_trace: a path takes its values from lambdas_trace, not lambda_trace")
    if np.asarray(lambdas_trace).dtype.kind not in "iuf":
        raise InvalidInputError(f"lambdas_trace: must be a sequence of real numbers, got {lambdas_trace!r}")
    try:
        values = np.asarray(lambdas_trace, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"lambdas_trace: must be a sequence of numbers ({error})") from None
    if values.ndim != 1:
        raise InvalidInputError(f"lambdas_trace: must be one-dimensional, got shape {values.shape}")
    # Checked before the first fit: the core would refuse a bad value only at its point of
    # the path, naming lambda_trace.
    lambdas = sorted((_real(float(v), "lambdas_trace", low=0.0, strict=False) for v in values), reverse=True)
    if not lambdas:
        raise InvalidInputError("lambdas_trace: needs at least one value")
    model = TraceNormLogisticRegression(lambda_fro=lambda_fro, warm_start=True, **params)
    Xv, y_enc = model._validate(X, y)
    sw = sample_weights(sample_weight, len(y_enc))
    if validation_data is not None:
        if not (isinstance(validation_data, (tuple, list)) and len(validation_data) == 2):
            raise InvalidInputError("validation_data: must be a pair (X_val, y_val)")
        X_val, y_val = validation_data
        y_val = column_or_1d(y_val)
        if len(y_val) != (X_val.shape[0] if hasattr(X_val, "shape") else len(X_val)):
            raise InvalidInputError("validation_data: X_val and y_val have different lengths")
    points: list[PathPoint] = []
    fit: _core.TraceNormFit | None = None
    for lam in lambdas:
        started = time.perf_counter()
        # Each point starts from the last one's atoms and, if it converged, from its
        # gradient, which does not depend on λ1 (so the first iteration needs no pass over X).
        fit = model.set_params(lambda_trace=lam)._fit_design(Xv, y_enc, sw, fit)
        seconds = time.perf_counter() - started
        point = PathPoint(lam, float(lambda_fro), _copy(model), model.objective_, model.rank_, model.n_iter_, seconds)
        if validation_data is not None:
            scores_order = np.argsort(-model._scores(X_val), axis=1, kind="stable")
            truth = np.asarray(y_val)
            for k in topk:
                kk = min(_int(k, "topk", low=1), len(model.classes_))
                point.validation_topk[int(k)] = float(
                    np.mean(np.any(model.classes_[scores_order[:, :kk]] == truth[:, None], axis=1))
                )
        points.append(point)
    return points


def _copy(model: TraceNormLogisticRegression) -> TraceNormLogisticRegression:
    import copy  # noqa: PLC0415

    return copy.deepcopy(model)
