"""Multi-label top-of-ranking losses (Lapin, Hein, Schiele, *Analysis and Optimization
of Loss Functions for Multiclass, Top-k, and Multilabel Classification*, TPAMI 2018)
trained by Prox-SDCA, the solver of :class:`toprank.TopKSVC`.

:class:`MultiLabelSVC` learns one linear scorer per label, s = Wᵀx + b, by minimising

    ½‖W‖²_F + C Σ_i w_i L(Wᵀx_i + b; Y_i)

where Y_i is the set of example i's relevant labels (at least one, at most m − 1; N_i are the
others), ``w_i`` its sample weight, and L

* ``"hinge"`` — the multi-label hinge, L(s, Y) = max{0, 1 + max_{l∈N} s_l − min_{j∈Y} s_j}:
  zero exactly when every relevant label outscores every irrelevant one by 1, and at
  least 1 whenever one pair is misordered, so it bounds the example's rank loss
  (:func:`toprank.metrics.rank_loss`). ``smoothing`` γ > 0 replaces it by its Moreau
  envelope (1/γ-smooth; SDCA then converges linearly), as for TopKSVC's hinge losses;
* ``"softmax"`` — the multi-label cross-entropy, L(s, Y) = log Σ_j exp(s_j) −
  mean_{j∈Y} s_j: the cross-entropy between the softmax of the scores and the
  uniform distribution on Y.

With one label per example both are TopKSVC's losses for k = 1: Crammer–Singer
(``TopKSVC(k=1, loss="alpha")``) and multinomial logistic regression
(``TopKSVC(loss="softmax")``), which the tests check.

Targets: an (n, m) 0/1 indicator matrix (dense or scipy.sparse; ``classes_`` is then
0..m−1, the columns), or a list of n label sets — each a set, list or tuple of hashable
labels, read as :class:`sklearn.preprocessing.MultiLabelBinarizer` reads them
(``classes_`` the sorted distinct labels). As in :mod:`toprank.metrics`, **a list or
tuple of sequences is always read as label sets**: pass ``np.asarray(y)`` to have a
nested list of 0/1 read as an indicator matrix. A 1-D array of class labels (one per
example) is the multiclass problem with those losses; the model then predicts classes,
as :class:`toprank.TopKSVC` does.

Prediction: :meth:`MultiLabelSVC.predict` returns the labels scoring above one
threshold, ``threshold_``, fitted on the training set to minimise its Hamming loss, and
always each example's top label, so that no prediction is empty, as no training
example is (see ``hamming_threshold`` in this module).

Intercept: as in TopKSVC, ``fit_intercept=True`` appends a constant feature
``intercept_scaling`` whose weights are the intercepts divided by it, so the intercepts
are regularised (½‖b‖²/intercept_scaling²).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal, NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._tags import Tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d

from toprank import _core
from toprank._docs import fill_doc
from toprank._estimator import ClassScores, SdcaModel, choice, finite_fit, forget, keep_params
from toprank._options import MULTILABEL_LOSSES, DualLayout, Kernel, MultiLabelLoss, SdcaLossName, SdcaProblem
from toprank._validation import (
    canonical_csr,
    indicator_matrix,
    restores_on_failure,
    sample_weights,
    sparse_structure,
    validate_input,
)
from toprank.exceptions import InternalError, InvalidInputError
from toprank.metrics import hamming_loss
from toprank.pq import CompressedMatrix

__all__ = ["MultiLabelSVC"]

# The core's name of each loss.
_CORE_LOSS: dict[MultiLabelLoss, SdcaLossName] = {"hinge": "multilabel_hinge", "softmax": "multilabel_softmax"}


class _Targets(NamedTuple):
    """A fit's targets as the core takes them: each example's label columns, ascending,
    ``labels[starts[i]:starts[i + 1]]``; the ``classes`` naming the columns, whether they
    are label sets (``"multilabel"``) or one class per example (``"multiclass"``), and
    the dtype ``predict`` returns a multi-label indicator in (that of the indicator fitted
    on; int64 for label sets)."""

    kind: Literal["multilabel", "multiclass"]
    classes: NDArray[Any]
    starts: NDArray[np.int64]
    labels: NDArray[np.int64]
    dtype: np.dtype[Any]


def _is_label_sets(y: Any) -> bool:
    """Whether ``y`` is a list or tuple of label sets (each a non-string iterable); a list
    of scalars is one class label per example, and a mixture is refused."""
    if not isinstance(y, (list, tuple)) or not y:
        return False
    sets = [isinstance(row, Iterable) and not isinstance(row, (str, bytes)) for row in y]
    if all(sets):
        return True
    if any(sets):
        first = sets.index(False) if sets[0] else sets.index(True)
        raise InvalidInputError(
            f"y: a list must hold one label set per example or one class label per example, not both "
            f"(example 0 is a {type(y[0]).__name__}, example {first} a {type(y[first]).__name__})"
        )
    return False


def _label_sets(y: Any, classes: NDArray[Any] | None = None) -> tuple[NDArray[Any], Any]:
    """A list of label sets as (``classes``, boolean CSR indicator over them): ``classes``
    given (a fitted model's), or the sorted distinct labels, as MultiLabelBinarizer
    finds them. Duplicates within a set are ignored."""
    sets: list[set[Any]] = []
    for i, row in enumerate(y):
        try:
            sets.append(set(row))
        except TypeError as exc:
            raise InvalidInputError(f"y: the labels of example {i} must be hashable ({exc})") from None
    if classes is None:
        union: set[Any] = set().union(*sets)
        if any(label != label for label in union):  # NaN is the one label unequal to itself
            raise InvalidInputError("y: a label set contains NaN")
        try:
            ordered = sorted(union)
        except TypeError as exc:
            raise InvalidInputError(f"y: the labels cannot be sorted ({exc}); use labels of one type") from None
        typed = np.asarray(ordered) if ordered else np.empty(0)
        if typed.ndim == 1 and typed.dtype != object and len(typed) == len(ordered):
            classes = typed
        else:  # e.g. tuples as labels: one object per label, as MultiLabelBinarizer keeps them
            classes = np.empty(len(ordered), dtype=object)
            classes[:] = ordered
    index = {label: j for j, label in enumerate(classes.tolist())}
    starts = np.zeros(len(sets) + 1, dtype=np.int64)
    columns: list[int] = []
    for i, labels in enumerate(sets):
        try:
            columns.extend(sorted(index[label] for label in labels))
        except KeyError as exc:
            raise InvalidInputError(
                f"y: label {exc.args[0]!r} of example {i} is not one of the labels of the fit"
            ) from None
        starts[i + 1] = len(columns)
    data = np.ones(len(columns), dtype=np.bool_)
    indicator = sp.csr_matrix((data, np.asarray(columns, dtype=np.int64), starts), shape=(len(sets), len(classes)))
    return classes, indicator


def _targets(y: Any, n_samples: int) -> _Targets:
    """The targets of a fit on ``n_samples`` examples, each with at least one label and
    not every label (the losses compare relevant with irrelevant labels)."""
    if y is None:
        raise InvalidInputError("y: requires y to be passed, but the target y is None")
    kind: Literal["multilabel", "multiclass"] = "multilabel"
    if _is_label_sets(y):
        classes, indicator = _label_sets(y)
        dtype = np.dtype(np.int64)
    else:
        if sp.issparse(y):
            sparse_structure(y, "y")
            dense = y.toarray() if y.shape[1] == 1 else None  # one column: class labels, as dense
        else:
            try:
                dense = np.asarray(y)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"y: cannot be converted to an array ({exc})") from None
        if dense is not None and dense.ndim > 2:
            raise InvalidInputError(
                f"y: expected an indicator matrix, label sets or 1-D class labels, got shape {dense.shape}"
            )
        if dense is None or (dense.ndim == 2 and dense.shape[1] > 1):
            indicator = indicator_matrix(y, "y")
            classes = np.arange(indicator.shape[1])
            # predict answers in the indicator's dtype (pandas' nullable columns: int64).
            given = np.dtype(y.dtype if dense is None else dense.dtype)
            dtype = given if given.kind in "biuf" else np.dtype(np.int64)
        else:
            kind = "multiclass"
            # scikit-learn's checks of class labels (NaN, continuous values), with its messages.
            single = column_or_1d(check_array(dense, ensure_2d=False, dtype=None, input_name="y"), warn=True)
            check_classification_targets(single)
            classes, encoded = np.unique(single, return_inverse=True)
            if len(classes) < 2:
                raise InvalidInputError(f"y: needs samples of at least 2 classes, got {len(classes)} class")
            indicator = sp.csr_matrix(
                (np.ones(len(single), dtype=np.bool_), encoded.ravel(), np.arange(len(single) + 1)),
                shape=(len(single), len(classes)),
            )
            dtype = np.dtype(np.int64)
    if indicator.shape[0] != n_samples:
        raise InvalidInputError(f"y: has {indicator.shape[0]} examples but X has {n_samples}")
    m = indicator.shape[1]
    if m < 2:
        raise InvalidInputError(f"y: needs at least 2 labels, got {m}")
    counts = np.diff(indicator.indptr)
    for bad, what in ((counts == 0, "no label"), (counts == m, "every label")):
        rows = np.flatnonzero(bad)
        if rows.size:
            raise InvalidInputError(
                f"y: {rows.size} example(s) have {what} (the first is example {rows[0]}); the losses compare "
                "each example's relevant labels with its irrelevant ones, so each needs at least one of both"
            )
    return _Targets(
        kind,
        classes,
        np.ascontiguousarray(indicator.indptr, dtype=np.int64),
        np.ascontiguousarray(indicator.indices, dtype=np.int64),
        dtype,
    )


def hamming_threshold(scores: NDArray[np.float64], relevant: Any, weights: NDArray[np.float64]) -> float:
    """The score threshold t minimising the (``weights``-weighted) Hamming loss of the
    prediction "label l of example i iff s_il > t, or l is i's top label" against the
    boolean indicator ``relevant``.

    The top labels are predicted whatever t is, so the others decide: sorted by
    decreasing score, the prediction grows a block of tied scores at a time, each entry
    adding its weight to the loss if irrelevant and removing it if relevant. Of the
    cuts with the least loss, the first (the highest threshold: the fewest labels) is
    taken, and t is the midpoint between the lowest score predicted and the highest
    not, so that the training prediction is the same however the scores round; +inf
    when predicting the top labels alone is best, −inf when predicting every label is."""
    n, m = scores.shape
    others = np.ones((n, m), dtype=np.bool_)
    others[np.arange(n), np.argmax(scores, axis=1)] = False
    s = scores[others]
    order = np.argsort(-s, kind="stable")
    s = s[order]
    is_relevant = np.asarray(relevant.toarray(), dtype=np.bool_)[others][order]
    w = np.repeat(weights, m - 1)[order]
    # loss[q] − loss[0]: the change of the loss when the first q entries are predicted.
    loss = np.concatenate(([0.0], np.cumsum(np.where(is_relevant, -w, w))))
    cuts = np.concatenate(([0], np.flatnonzero(s[1:] != s[:-1]) + 1, [s.size]))
    best = int(cuts[np.argmin(loss[cuts])])
    if best == 0:
        return math.inf
    if best == s.size:
        return -math.inf
    lowest_in, highest_out = float(s[best - 1]), float(s[best])
    t = lowest_in / 2 + highest_out / 2
    # Adjacent floats: the midpoint rounds onto one of them; s > highest_out keeps the cut.
    return t if highest_out <= t < lowest_in else highest_out


@fill_doc
class MultiLabelSVC(ClassScores, SdcaModel, ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Linear multi-label classifier with the multi-label hinge or softmax loss, by Prox-SDCA.

    It learns one linear scorer per label, s = Wᵀx + b, that ranks each example's
    relevant labels above its irrelevant ones, by minimising
    :math:`\\tfrac12\\|W\\|_F^2 + C \\sum_i w_i L(W^\\top x_i + b; Y_i)` with the
    multi-label hinge :math:`\\max\\{0, 1 + \\max_{l \\notin Y} s_l - \\min_{j \\in Y} s_j\\}`
    or the multi-label cross-entropy (module docs), then predicts the labels scoring
    above one threshold fitted for the least training Hamming loss.

    Parameters
    ----------
    loss : {"hinge", "softmax"}, default="hinge"
        The multi-label hinge (Moreau-smoothed by ``smoothing``) or the multi-label
        softmax cross-entropy (see the module docs).
    C : float, default=1.0
        Inverse regularisation (> 0): primal ½‖W‖² + C Σ_i w_i L_i. Choose it by
        cross-validation on a logarithmic grid; as for TopKSVC, the epochs grow with
        C·max‖x_i‖², so scale X to ‖x‖ ≈ 1.
    smoothing : float, default=0.0
        Moreau smoothing γ ≥ 0 of the hinge loss (0: the non-smooth loss; ignored by
        the softmax loss, which is smooth). On noisy data the non-smooth hinge's
        optimum can be W = 0 (all scores tied; the documentation's results page shows why);
        γ ≈ 1, or the softmax loss, then ranks far better.
    fit_intercept : bool, default=True
        Learn per-label intercepts through a constant feature.
    intercept_scaling : float, default=1.0
        Value of the constant feature; the intercepts' regularisation is
        ½‖b‖² / intercept_scaling².
    tol : float, default=1e-3
        Stop when the relative duality gap :math:`(P - D) / \\max(|P|, |D|)` is at most tol (> 0).
    max_epochs : int, default=1000
        Maximum number of passes over the data; a fit that runs out warns.
    %(sdca_check_every)s
    shrinking : bool, default=True
        Between two checks, skip the examples with zero loss and zero dual variables
        (and, for the hinge, score only the labels near each example's dual support);
        every check re-admits whatever became violated, so the solution is the same.
    %(sdca_dual_layout)s
    warm_start : bool, default=False
        Start from the previous fit's dual variables when the new fit has the same
        examples' label sets (and classes), e.g. along a path of C; the model then keeps
        them as ``dual_coef_`` for the next fit.
    keep_dual : bool, default=False
        Keep the dual variables as ``dual_coef_`` (n_samples × n_labels) after a fit;
        the model predicts with ``coef_`` alone.
    random_state : int, RandomState or None, default=None
        Seeds the example order of each epoch.
    n_jobs : int or None, default=None
        Threads for the duality-gap evaluation and, for large problems, the parallel
        solver, as in :class:`toprank.TopKSVC`. ``None`` is one thread; ``-1`` all.
    %(dual_verbose)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_labels,)
        The labels: the indicator's column indices, the sorted labels of label sets, or
        the classes of 1-D targets.
    coef_ : ndarray of shape (n_labels, n_features)
        The weights W (one row per label).
    intercept_ : ndarray of shape (n_labels,)
        The intercepts b; zeros when ``fit_intercept=False``.
    %(n_features_in)s
    threshold_ : float
        The score threshold of :meth:`predict`, fitted on the training set (multi-label
        targets only; see ``toprank.multilabel.hamming_threshold``): the one of least
        training Hamming loss, possibly ±inf.
    dual_coef_ : ndarray or scipy.sparse.csr_array of shape (n_samples, n_labels)
        The dual variables A (``coef_ = Xᵀ A`` with the intercept column; sparse where
        ``dual_layout`` kept them so), only with
        ``keep_dual=True`` or ``warm_start=True``.
    %(sdca_objective_attributes)s
    status_ : {"converged", "max_iter", "no_progress", "interrupted"}
        Why the solver stopped (see ``toprank._options.FitStatus``).
    history_ : list of toprank.FitProgress
        (n_iter, primal, dual, gap, seconds) at each gap check.

    See Also
    --------
    toprank.TopKSVC : The same solver for one class per example (top-k losses).
    toprank.M3L : Multi-label SVMs with a label-correlation prior and kernels.
    toprank.metrics.rank_loss : The ranking quality the hinge loss bounds.
    toprank.metrics.hamming_loss : The error :meth:`score` reports.

    Notes
    -----
    Solver: :class:`~toprank.TopKSVC`'s Prox-SDCA, whose step for an example is a
    projection onto the bipartite simplex (hinge;
    :func:`toprank.projections.bipartite_simplex`) or an exact maximisation of the
    cross-entropy's dual (softmax). It stops when the relative duality gap is below
    ``tol`` or after ``max_epochs``, and switches to the accelerated or the parallel
    solver as TopKSVC does. The threshold ``threshold_`` is fitted after the solve in
    O(n·m log(n·m)).

    Cost: an epoch is O(nnz(X) · m) plus O(m log m) per example for the step;
    memory is X in place, the m × d weights and the n × m dual during the fit (its
    nonzeros only for the hinge from 256 labels on, see ``dual_layout``).

    On noisy data the non-smooth hinge's optimum can be W = 0 (all scores tied); the
    smoothed hinge (``smoothing`` ≈ 1) or the softmax loss then rank far better.

    References
    ----------
    .. [1] M. Lapin, M. Hein, B. Schiele. Analysis and optimization of loss functions
       for multiclass, top-k, and multilabel classification. IEEE TPAMI 40(7), 2018
       (the multi-label losses and their Prox-SDCA steps, §4).
    .. [2] S. Shalev-Shwartz, T. Zhang. Accelerated proximal stochastic dual coordinate
       ascent for regularized loss minimization. Math. Programming 155, 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from toprank import MultiLabelSVC
    >>> angles = np.radians([0, 60, 120, 180, 240, 300])  # six examples on a circle
    >>> X = np.c_[np.cos(angles), np.sin(angles)]
    >>> y = [{"sport"}, {"sport", "news"}, {"news"}, {"news", "tech"}, {"tech"}, {"tech", "sport"}]
    >>> model = MultiLabelSVC(C=10.0, random_state=0).fit(X, y)
    >>> model.classes_.tolist()
    ['news', 'sport', 'tech']
    >>> model.predict_topk(X[[0, 2, 4]], k=1).tolist()
    [['sport'], ['news'], ['tech']]
    >>> model.predict(X).tolist()  # the training label sets; columns in the order of classes_
    [[0, 1, 0], [1, 1, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1], [0, 1, 1]]
    """

    # Linear only; DualSolverModel reads the kernel (no precomputed Gram matrix here).
    kernel: Kernel = "linear"

    def __init__(
        self,
        loss: MultiLabelLoss = "hinge",
        C: float = 1.0,
        smoothing: float = 0.0,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        tol: float = 1e-3,
        max_epochs: int = 1000,
        check_every: int = 5,
        shrinking: bool = True,
        dual_layout: DualLayout = "auto",
        warm_start: bool = False,
        keep_dual: bool = False,
        random_state: int | np.random.RandomState | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        keep_params(self, locals())

    def _is_hinge(self) -> bool:
        return bool(self.loss == "hinge")

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        return tags

    @restores_on_failure
    def fit(self, X: ArrayLike, y: Any, sample_weight: ArrayLike | None = None) -> MultiLabelSVC:
        """Fit the model.

        %(fit_parameters_X)s
            Training data: float32 and float64 C-ordered arrays and CSR matrices are
            used in place; a :class:`toprank.pq.CompressedMatrix` trains from its codes
            on its decoded rows.
        y : indicator matrix, list of label sets, or 1-D class labels
            An (n_samples, n_labels) 0/1 indicator (dense or sparse), a list of n label
            sets, or one class label per example (see the module docs). Every example
            needs at least one label and at least one label it does not have.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example multipliers w_i ≥ 0 of C (weight 2 is the example repeated).

        %(fit_returns_raises)s
            If an input or a parameter is out of range, e.g. an example with no label
            or with every label, naming it.
        """
        loss = choice(self.loss, "loss", MULTILABEL_LOSSES)
        params = self._sdca_params()
        Xv: Any = validate_input(
            self, X, codes=True, accept_sparse="csr", dtype=[np.float64, np.float32], order="C", ensure_min_samples=2
        )
        if sp.issparse(Xv):
            Xv = canonical_csr(Xv)
        n = int(Xv.shape[0])
        targets = _targets(y, n)
        sw = sample_weights(sample_weight, n)
        weights = np.ones(n) if sw is None else sw
        c = self._costs(params["C"], weights)
        settings = self._sdca_settings(params, len(targets.classes), _CORE_LOSS[loss])
        label_sets = (targets.starts, targets.labels)
        problem = SdcaProblem(
            targets.labels, c, label_starts=targets.starts, dual_coef=self._warm_dual(n, targets.classes, c, label_sets)
        )
        W, dual, report = _core.topk_svm_fit(
            Xv, problem, settings, n_jobs=params["n_jobs"], callback=self._progress("epoch")
        )
        finite_fit("MultiLabelSVC", primal=report.primal, dual=report.dual, gap=report.gap)
        if W is None:  # the core returns W for every linear fit
            raise InternalError("MultiLabelSVC: the linear Prox-SDCA fit returned no weights")
        self._linear_model(W, int(Xv.shape[1]), params)
        self.classes_ = targets.classes
        self._target_kind = targets.kind
        self._target_dtype = targets.dtype
        forget(self, "threshold_")
        if targets.kind == "multilabel":
            relevant = sp.csr_matrix(
                (np.ones(targets.labels.size, dtype=np.bool_), targets.labels, targets.starts),
                shape=(n, len(targets.classes)),
            )
            self.threshold_ = hamming_threshold(self._linear_scores(Xv), relevant, weights)
        self._keep_dual(dual, c, params, label_sets)
        coded = isinstance(Xv, CompressedMatrix)
        self._report(report, "epochs", params["tol"], lambda: self._advice(None if coded else Xv, c, params))
        return self

    # --------------------------------------------------------------- prediction

    def _scores(self, X: ArrayLike) -> NDArray[np.float64]:
        check_is_fitted(self)
        Xv: Any = validate_input(self, X, codes=True, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False)
        return self._linear_scores(Xv)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Compute the label scores s = Wᵀx + b of each sample.

        %(coded_samples_parameter)s

        Returns
        -------
        ndarray of shape (n_samples, n_labels) or (n_samples,)
            Scores, columns in the order of ``classes_``; after a fit on 1-D targets
            of two classes, (n_samples,): the score of ``classes_[1]`` minus that of
            ``classes_[0]``, as scikit-learn's binary classifiers give it.
        """
        scores = self._scores(X)
        if self._target_kind == "multiclass" and scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict the labels of each sample: those scoring above ``threshold_``.

        Label l of x is predicted iff s_l(x) > ``threshold_``, or l is x's top label
        (the highest score; the lowest column index among ties), so every row predicts
        at least one label, as every training example has one.
        ``[set(model.classes_[row.astype(bool)]) for row in model.predict(X)]`` gives
        the predicted label sets.

        %(coded_samples_parameter)s

        Returns
        -------
        ndarray of shape (n_samples, n_labels) or (n_samples,)
            Multi-label fits: the 0/1 indicator of the predicted labels, in the dtype of
            the indicator fitted on (int64 after label sets). After a fit on 1-D
            targets: the class with the highest score, shape (n_samples,).
        """
        scores = self._scores(X)
        top = np.argmax(scores, axis=1)
        if self._target_kind == "multiclass":
            return np.asarray(self.classes_[top])
        predicted = scores > self.threshold_
        predicted[np.arange(len(top)), top] = True
        return predicted.astype(self._target_dtype)

    def score(self, X: ArrayLike, y: Any, sample_weight: ArrayLike | None = None) -> float:
        """Return 1 − the Hamming loss of :meth:`predict` (accuracy after 1-D targets).

        As :meth:`toprank.M3L.score`. Ranking quality is
        :func:`toprank.metrics.rank_loss` of :meth:`decision_function`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.
        y : indicator matrix, list of label sets, or 1-D class labels
            The true labels: an indicator with a column per label of the fit, or a list
            of label sets among ``classes_`` (multi-label fits); class labels after a
            fit on 1-D targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the accuracy after a fit on 1-D targets; not supported for
            multi-label targets.

        Returns
        -------
        float
            The fraction of (example, label) entries predicted right (multi-label
            fits), or the accuracy.
        """
        check_is_fitted(self)
        if self._target_kind == "multiclass":
            return float(super().score(X, y, sample_weight=sample_weight))
        if sample_weight is not None:
            raise InvalidInputError("sample_weight: not supported for multi-label targets")
        if _is_label_sets(y):
            _, truth = _label_sets(y, self.classes_)
        else:
            truth = indicator_matrix(y, "y")
        predicted = self.predict(X)
        if truth.shape != predicted.shape:
            raise InvalidInputError(
                f"y: expected shape {predicted.shape} (one row per example, a column per label of the fit), "
                f"got {truth.shape}"
            )
        return 1.0 - hamming_loss(truth, predicted)

    def _has_proba(self) -> bool:
        # The softmax loss models p = softmax(s): a distribution over the labels.
        return bool(self.loss == "softmax")
