"""Ranking at the top with kernels (Mácha, Adam, Šmídl 2020): TopPush, TopPushK, Pat&Mat.

These binary classifiers push the positives above a threshold ``t`` that is itself a
function of the scores, so they optimise the top of the ranking rather than accuracy:

    minimise ½‖w‖² + C Σ_{i positive} l(t − f(x_i))

* :class:`TopPush` — ``t`` is the largest negative score;
* :class:`TopPushK` — ``t`` is the mean of the ``K`` largest negative scores;
* :class:`PatMat` — ``t`` is the surrogate top-``tau`` quantile: Σ_{j negative}
  l(f(x_j) − t) = n·tau (n = all training examples, as in the paper).

``l`` is the truncated quadratic (max{0, 1 + θz})² or the hinge max{0, 1 + θz}, θ =
``scale``. The model is f(x) = Σ_i σ_i v_i k(x, x_i) (σ = ±1 by class); the solver
maximises the dual (Theorems 2.1, 2.2) two coordinates at a time (Algorithm 3.1), with
group steps for ties at the coupled bounds, and stops on the relative duality gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._tags import Tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from toprank import _core
from toprank._docs import fill_doc
from toprank._estimator import DualSolverModel, choice, finite_fit, forget
from toprank._options import KERNELS, SURROGATES, AttopMethod, AttopSettings, Kernel, Surrogate
from toprank._validation import as_jobs, restores_on_failure, validate_input
from toprank._validation import bounded_int as _int
from toprank._validation import bounded_real as _real
from toprank.exceptions import InvalidInputError

__all__ = ["PatMat", "TopPush", "TopPushK"]


# Relative margin by which `threshold_` exceeds the method's t (see `fit`).
_TIE = 1e-12


# The parameters as fields: the dataclass writes the __init__ scikit-learn expects (each stored as given).
@dataclass(eq=False, repr=False, kw_only=True)
@fill_doc
class _RankingAtTop(DualSolverModel, ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Shared fitting and prediction of the three methods (see the module docs)."""

    _method: ClassVar[AttopMethod] = "toppushk"

    C: float = 1.0
    surrogate: Surrogate = "quadratic"
    scale: float = 1.0
    kernel: Kernel = "rbf"
    gamma: float | None = None
    degree: int = 3
    coef0: float = 1.0
    pos_label: Any = None
    tol: float = 1e-3
    max_iter: int = 100_000
    check_every: int = 100
    cache_size: float = 1024
    random_state: int | np.random.RandomState | None = None
    n_jobs: int | None = None
    verbose: int = 0

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        # They optimise the top of the ranking, not accuracy: a threshold above most
        # negatives classifies many positives as negative by design.
        tags.classifier_tags.poor_score = True
        return tags

    def _method_params(self) -> tuple[int, float]:
        """(K, tau) for the solver: TopPush's (K = 1) here; TopPushK and PatMat override."""
        return 1, 0.0

    @restores_on_failure
    def fit(self, X: ArrayLike, y: ArrayLike) -> _RankingAtTop:
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (float32/float64 C-ordered arrays are used in place); for
            ``kernel="precomputed"`` the (n_samples, n_samples) Gram matrix (possibly an
            ``np.memmap``).
        y : array-like of shape (n_samples,)
            Two classes; ``pos_label`` (default: the greater label) is the positive one.

        %(fit_returns_raises)s
            If an input or a parameter is out of range (e.g. not exactly two classes,
            ``K`` not below the number of negatives, ``tau`` outside (0, 1)), naming it.
        NoSolutionError
            If the data's scale overflows floating point (the solve ends non-finite).
        """
        choice(self.kernel, "kernel", KERNELS)
        choice(self.surrogate, "surrogate", SURROGATES)
        k, tau = self._method_params()
        C = _real(self.C, "C", low=0.0, strict=True)
        scale = _real(self.scale, "scale", low=0.0, strict=True)
        tol = _real(self.tol, "tol", low=0.0, strict=True)
        max_iter = _int(self.max_iter, "max_iter", low=1)
        check_every = _int(self.check_every, "check_every", low=1)
        cache = _real(self.cache_size, "cache_size", low=0.0, strict=True)
        Xv: Any
        Xv, y = validate_input(self, X, y, dtype=[np.float64, np.float32], order="C", ensure_min_samples=2)
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) != 2:
            raise InvalidInputError(
                f"y: Only binary classification is supported. {type(self).__name__} needs exactly 2 classes, "
                f"got {len(classes)}"
            )
        pos_label = classes[1] if self.pos_label is None else self.pos_label
        if np.ndim(pos_label) != 0 or pos_label not in classes:
            raise InvalidInputError(f"pos_label: {pos_label!r} is not one of the classes {classes.tolist()}")
        positive = np.ascontiguousarray(y == pos_label)
        negatives = int(np.sum(~positive))
        if self._method == "toppushk" and k >= negatives:
            # TopPush is TopPushK with K = 1: its own message must not name a K it lacks.
            if isinstance(self, TopPushK):
                raise InvalidInputError(f"K: must be less than the number of negative examples, {negatives}; got {k}")
            raise InvalidInputError(f"y: {type(self).__name__} needs at least 2 negative examples, got {negatives}")
        settings = AttopSettings(
            method=self._method,
            surrogate=self.surrogate,
            c=C,
            scale=scale,
            kernel=self._kernel_params(Xv, cache),
            tol=tol,
            max_iter=max_iter,
            check_every=check_every,
            seed=self._seed(),
            k=k,
            tau=tau,
        )
        v, _decision, t, report, _cache = _core.attop_fit(
            Xv, positive, settings, n_jobs=as_jobs(self.n_jobs), callback=self._progress("iteration")
        )
        finite_fit(type(self).__name__, primal=report.primal, dual=report.dual, gap=report.gap, threshold=t)
        forget(self, "coef_", "support_vectors_")
        signed = np.where(positive, v, -v)
        self.classes_ = classes
        self.pos_label_ = pos_label
        self.support_ = np.flatnonzero(v != 0)
        self.dual_coef_ = signed[self.support_]
        if self.kernel == "linear":
            self.coef_ = np.asarray(Xv[self.support_], dtype=np.float64).T @ self.dual_coef_
        elif self.kernel != "precomputed":
            self.support_vectors_ = np.ascontiguousarray(Xv[self.support_], dtype=np.float64)
        # At the optimum the top negatives sit exactly on t (TopPush: the largest is t), and
        # recomputed scores differ from the solver's in the last bits: raise t by far more
        # than rounding and far less than any score difference, so ties stay negative.
        self.threshold_ = t + _TIE * (1.0 + abs(t))
        self._report(
            report,
            "iterations",
            tol,
            lambda: (
                f"Raise max_iter (now {max_iter}) or tol, or lower C (the dual's coordinates are boxed by C: a large C "
                "makes more of them move before the gap closes)."
            ),
        )
        return self

    def score_samples(self, X: ArrayLike) -> NDArray[np.float64]:
        """Compute the ranking scores f(x) = Σ_i σ_i v_i k(x, x_i) (eq. (15)).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples (for ``kernel="precomputed"``, their kernel with the training
            samples, shape (n_samples, n_train)).

        Returns
        -------
        ndarray of shape (n_samples,)
            The scores; higher is more positive. Rank by them for precision at the top.
        """
        check_is_fitted(self)
        Xv: Any = validate_input(self, X, dtype=[np.float64, np.float32], reset=False)
        if self.kernel == "linear":
            return np.asarray(np.asarray(Xv, dtype=np.float64) @ self.coef_, dtype=np.float64)
        if self.kernel == "precomputed":
            return np.asarray(np.asarray(Xv, dtype=np.float64)[:, self.support_] @ self.dual_coef_, dtype=np.float64)
        if len(self.support_) == 0:
            return np.zeros(Xv.shape[0])
        return np.asarray(self._kernel_to_support(Xv) @ self.dual_coef_, dtype=np.float64)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Compute f(x) − ``threshold_``, oriented towards ``classes_[1]``.

        scikit-learn's convention: > 0 is a prediction of ``classes_[1]``. The order is
        that of :meth:`score_samples` when ``pos_label`` is ``classes_[1]``, reversed
        otherwise.

        %(dense_kernel_samples_parameter)s

        Returns
        -------
        ndarray of shape (n_samples,)
            The signed margins.
        """
        margin = self.score_samples(X) - self.threshold_
        return margin if self.pos_label_ == self.classes_[1] else -margin

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict ``pos_label`` where f(x) is above the training threshold ``threshold_``.

        %(dense_kernel_samples_parameter)s

        Returns
        -------
        ndarray of shape (n_samples,)
            ``pos_label_`` or the other class, per sample.
        """
        margin = self.score_samples(X) - self.threshold_
        negative = self.classes_[0] if self.classes_[1] == self.pos_label_ else self.classes_[1]
        return np.asarray(np.where(margin > 0, self.pos_label_, negative))


_COMMON_DOC = """
    A binary kernel classifier for ranking at the top: with f(x) = Σ_i σ_i v_i k(x,
    x_i) it minimises :math:`\\tfrac12\\|w\\|^2 + C \\sum_{{i:\\, y_i = +1}}
    l(t - f(x_i))` for the surrogate l and the threshold t of the line above, so that few
    negatives score above the positives: it optimises precision at the top of the
    ranking (at small recall), not accuracy.

    Parameters
    ----------
    {own}C : float, default=1.0
        Weight (> 0) of the positives' surrogate losses. Choose it with the kernel's
        ``gamma`` on a validation set (``experiments/attop_precision.py`` searches C
        in {{0.1, 1, 10}}); a large C makes more dual coordinates move and fits slower.
    surrogate : {{"quadratic", "hinge"}}, default="quadratic"
        Truncated quadratic (max{{0, 1 + θz}})² or hinge max{{0, 1 + θz}}. The
        quadratic one is smooth and usually converges in fewer iterations.
    scale : float, default=1.0
        The θ (> 0) of the surrogate: the slope of the loss in the score margin.
    kernel : {{"rbf", "linear", "poly", "precomputed"}}, default="rbf"
        Gaussian exp(−gamma‖x − x'‖²), linear, polynomial (gamma⟨x, x'⟩ + coef0)^degree,
        or a precomputed Gram matrix. The Gaussian kernel ranks better in the reproduced
        comparison (the documentation's results page: 36 of 36 cells over 10 splits).
    gamma : float, default=None
        Kernel coefficient (> 0); ``None`` means 1 / (n_features · X.var()).
    %(kernel_degree)s
    coef0 : float, default=1.0
        Polynomial kernel constant.
    pos_label : label, default=None
        The positive class; ``None`` takes the greater of the two labels.
    tol : float, default=1e-3
        Stop when the relative duality gap :math:`(P - D) / \\max(|P|, |D|)` is at most tol (> 0).
    max_iter : int, default=100000
        Maximum number of two-coordinate iterations; a fit that runs out warns.
    check_every : int, default=100
        Iterations between two duality-gap checks (a check costs O(n)).
    cache_size : float, default=1024
        Kernel column cache in MB.
    random_state : int, RandomState or None, default=None
        Seeds the starting point and the choice of k in each iteration.
    n_jobs : int or None, default=None
        Threads for the kernel columns and for each iteration's passes over the examples
        (partner scan, choice of k, score update; from n = 16,384). ``None`` is one
        thread, ``-1`` all cores (see "Threads" in the user guide's workflow page).
    %(dual_verbose)s

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two class labels, sorted.
    pos_label_ : label
        The positive class.
    %(n_features_in)s
    support_ : ndarray of int
        Training examples with a nonzero dual variable.
    dual_coef_ : ndarray of shape (n_support,)
        σ_i v_i: α_i of the positives, −β_j of the negatives.
    support_vectors_ : ndarray of shape (n_support, n_features)
        Their feature vectors (kernel="rbf"/"poly").
    coef_ : ndarray of shape (n_features,)
        w (kernel="linear" only).
    threshold_ : float
        The method's threshold t on the training scores, raised by 1e-12·(1 + abs(t)) so that
        training negatives tied at t (TopPush puts the top one there) stay negative
        despite rounding; ``predict`` is ``pos_label`` where ``score_samples`` exceeds it.
    primal_objective_ : float
        The primal objective at the returned solution.
    dual_objective_ : float
        The dual objective at the returned solution.
    duality_gap_ : float
        Their relative gap :math:`(P - D) / \\max(|P|, |D|)`.
    n_iter_ : int
        Two-coordinate iterations run.
    status_ : {{"converged", "max_iter", "no_progress", "interrupted"}}
        ``"converged"``, ``"max_iter"`` (out of iterations), ``"no_progress"`` or
        ``"interrupted"`` (see ``toprank._options.FitStatus``).
    history_ : list of toprank.FitProgress
        (n_iter, primal, dual, gap, seconds) at each gap check: the iterations so far,
        the objectives, their relative gap and the seconds since the start.

    See Also
    --------
    {see_also}
    toprank.metrics.precision_at_recall : The precision at the top these models target.
    toprank.plotting.plot_pr_curves : Precision-recall curves of fitted models.

    Notes
    -----
    Solver: the dual (Theorems 2.1 and 2.2 of the paper) is maximised two coordinates
    at a time (Algorithm 3.1) with the exact step of each update rule; the first
    coordinate is the maximal violating one, and where several β are tied at a
    coupled bound a group step moves them together. It stops when the relative
    duality gap is below ``tol``, or after ``max_iter`` iterations.

    Cost: an iteration is O(n) (a partner scan, the choice of k and the score update,
    vectorised and split over ``n_jobs`` threads) plus two kernel columns of O(n·d)
    each unless the LRU cache holds them; a good fit typically needs a few times n
    iterations. Memory: the n scores and dual variables, and the cache
    (``cache_size`` MB; a precomputed Gram matrix may be an ``np.memmap``).

    References
    ----------
    .. [1] V. Mácha, L. Adam, V. Šmídl. Nonlinear classifiers for ranking problems
       based on kernelized SVM. 2020 (the methods, §2; the duals, Theorems 2.1 and
       2.2; the solver, Algorithm 3.1; the scores, eq. (15)).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank import {name}
    >>> from toprank.metrics import precision_at_recall
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5))
    >>> y = (X[:, 0] + 0.5 * rng.normal(size=200) > 1.0).astype(int)  # 28 positives
    >>> model = {name}({example_args}random_state=0).fit(X, y)
    >>> model.status_
    'converged'
    >>> scores = model.score_samples(X)  # higher is more positive
    >>> float(precision_at_recall(y, scores, 0.2))  # no negative among the top 20 %
    1.0
    >>> model.predict(X[:5])
    array([0, 0, 0, 0, 0])
"""


# The parameters as fields: the dataclass writes the __init__ scikit-learn expects (each stored as given).
@fill_doc
@dataclass(eq=False, repr=False)
class TopPushK(_RankingAtTop):
    __doc__ = "TopPushK: push the positives above the mean of the K highest-scoring negatives.\n" + _COMMON_DOC.format(
        own="K : int, default=5\n        Number of top negatives (1 ≤ K < number of negatives): larger K makes the\n"
        "        threshold less sensitive to one outlying negative than TopPush's.\n    ",
        see_also="TopPush : TopPushK with K = 1.\n    PatMat : The threshold at a quantile of the negatives.",
        name="TopPushK",
        example_args="K=5, ",
    )

    K: int = 5

    def _method_params(self) -> tuple[int, float]:
        return _int(self.K, "K", low=1), 0.0


@fill_doc
class TopPush(_RankingAtTop):
    __doc__ = (
        "TopPush: push the positives above the highest-scoring negative (TopPushK with K = 1).\n"
        + _COMMON_DOC.format(
            own="",
            see_also="TopPushK : The threshold at the mean of the K top negatives.\n"
            "    PatMat : The threshold at a quantile of the negatives.",
            name="TopPush",
            example_args="",
        )
    )


# The parameters as fields: the dataclass writes the __init__ scikit-learn expects (each stored as given).
@fill_doc
@dataclass(eq=False, repr=False)
class PatMat(_RankingAtTop):
    __doc__ = (
        "Pat&Mat: push the positives above the surrogate top-tau quantile of the negatives.\n"
        + _COMMON_DOC.format(
            own="tau : float, default=0.01\n        Quantile level in (0, 1): the fraction of the examples the threshold\n"
            "        aims to leave above it. Use the fraction at the top you care about.\n    ",
            see_also="TopPush : The threshold at the top negative.\n"
            "    TopPushK : The threshold at the mean of the K top negatives.",
            name="PatMat",
            example_args="tau=0.05, ",
        )
    )

    _method = "patmat"

    tau: float = 0.01

    def _method_params(self) -> tuple[int, float]:
        tau = _real(self.tau, "tau", low=0.0, strict=True)
        if tau >= 1.0:
            raise InvalidInputError(f"tau: must lie in the open interval (0, 1), got {self.tau!r}")
        return 1, tau
