"""What the estimators share: option and kernel parameters, the solver's seed, the
fitted report and its convergence warning, progress lines, and the predictions every
multiclass scorer derives from its class scores (top-k classes, probabilities).

Argument conversion (arrays, numbers, flags) lives in :mod:`toprank._validation`; this
module holds what is about an estimator rather than one argument, so that no estimator
module imports another's private names.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import Any, TypedDict, TypeVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if

from toprank import _core
from toprank._validation import DEGREE_MAX, as_jobs, bounded_int, bounded_real, warn_not_converged
from toprank.exceptions import InvalidInputError

# The statuses of a dual solver that stopped before its relative duality gap reached tol.
STOPPED_SHORT = ("max_epochs", "no_progress")


def choice(value: Any, name: str, options: tuple[str, ...]) -> str:
    """A string option, one of ``options``; anything else raises naming ``name``."""
    if not isinstance(value, str) or value not in options:
        raise InvalidInputError(f"{name}: must be one of {options}, got {value!r}")
    return value


def kernel_gamma(kernel: str, gamma: Any, X: Any) -> float:
    """The kernel coefficient: ``gamma`` validated, or for ``None`` scikit-learn's
    ``gamma="scale"``, 1 / (n_features · X.var()) (1 for linear/precomputed kernels)."""
    if kernel in ("precomputed", "linear"):
        return 1.0
    if gamma is None:
        with np.errstate(over="ignore"):
            var = float(np.asarray(X, dtype=np.float64).var())
        if not math.isfinite(var):
            raise InvalidInputError("X: its variance overflows float64, so gamma=None ('scale') cannot be computed; "
                                    "rescale X or set gamma")
        if var == 0:
            return 1.0
        scale = 1.0 / (int(X.shape[1]) * var)
        if not math.isfinite(scale):
            raise InvalidInputError(f"X: its variance ({var:.3g}) is so small that gamma=None ('scale') overflows; "
                                    "rescale X or set gamma")
        return scale
    return bounded_real(gamma, "gamma", low=0.0, strict=True)


class KernelArgs(TypedDict):
    """The kernel's keyword arguments to the core's kernel solvers."""

    kernel: str
    gamma: float
    degree: int
    coef0: float


def kernel_params(estimator: Any, X: Any) -> KernelArgs:
    """The core's kernel arguments (``kernel``, ``gamma``, ``degree``, ``coef0``) of a
    kernel fit on ``X``, validated; the resolved gamma is kept as ``estimator._gamma`` for
    prediction. A precomputed ``X`` must be the square Gram matrix of the training set."""
    kernel = estimator.kernel
    if kernel == "precomputed" and X.shape[0] != X.shape[1]:
        raise InvalidInputError(f"X: a precomputed kernel must be square, got shape {X.shape}")
    estimator._gamma = kernel_gamma(kernel, estimator.gamma, X)
    return KernelArgs(kernel=kernel, gamma=estimator._gamma,
                      degree=bounded_int(estimator.degree, "degree", low=1, high=DEGREE_MAX),
                      coef0=bounded_real(estimator.coef0, "coef0", low=-np.inf, strict=False))


def kernel_to_support(estimator: Any, X: Any) -> NDArray[np.float64]:
    """k(x, s) between the rows of ``X`` and the fitted ``support_vectors_`` (rbf/poly
    kernels), with the parameters of the fit."""
    return np.asarray(_core.kernel_cross(np.ascontiguousarray(X, dtype=np.float64), estimator.support_vectors_,
                                         kernel=estimator.kernel, gamma=estimator._gamma, degree=int(estimator.degree),
                                         coef0=float(estimator.coef0), n_jobs=as_jobs(estimator.n_jobs)))


def solver_seed(random_state: Any) -> int:
    """The core's 31-bit seed, drawn from ``random_state`` as scikit-learn would."""
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def store_dual_report(estimator: Any, result: dict[str, Any], steps: str) -> None:
    """The fitted report of a dual solver: ``n_iter_`` (from ``result[steps]``),
    ``primal_objective_``, ``dual_objective_``, ``duality_gap_``, ``status_``, ``history_``."""
    estimator.n_iter_ = int(result[steps])
    estimator.primal_objective_ = float(result["primal"])
    estimator.dual_objective_ = float(result["dual"])
    estimator.duality_gap_ = float(result["gap"])
    estimator.status_ = str(result["status"])
    estimator.history_ = list(result["history"])


def warn_if_stopped_short(estimator: Any, unit: str, tol: float, budget_advice: Callable[[], str]) -> None:
    """The ConvergenceWarning of a dual fit (see :func:`store_dual_report`) that stopped
    short of ``tol``: out of its budget (``budget_advice()`` says what to change, from the
    estimator, which knows its problem), or without progress (rounding dominates: only a
    larger tol helps)."""
    if estimator.status_ not in STOPPED_SHORT:
        return
    advice = (f"Set tol at or above the gap reached ({estimator.duality_gap_:.1g})."
              if estimator.status_ == "no_progress" else budget_advice())
    warn_not_converged(type(estimator).__name__, estimator.status_, estimator.n_iter_, unit, estimator.duality_gap_,
                       tol, advice)


def _print_progress(estimator: str, unit: str, step: int, primal: float, dual: float, gap: float,
                    seconds: float) -> None:
    print(f"[{estimator}] {unit} {step:7d}  primal {primal:.8g}  dual {dual:.8g}  gap {gap:.3e}  {seconds:.2f}s",
          file=sys.stdout, flush=True)


def progress(estimator: Any, unit: str) -> Callable[[int, float, float, float, float], None] | None:
    """The solver's callback at each gap check (step, primal, dual, gap, seconds): a line
    on stdout where ``estimator.verbose``, else None (the core then skips the call)."""
    return functools.partial(_print_progress, type(estimator).__name__, unit) if estimator.verbose else None


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _if_proba(method: _Method) -> _Method:
    """scikit-learn's ``available_if(_has_proba)``, typed: the method exists (for
    ``hasattr`` and meta-estimators) only where the model gives probabilities."""
    return cast(_Method, available_if(lambda self: self._has_proba())(method))


def _softmax_rows(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each row's softmax, in place (shifted by the row's maximum: no overflow)."""
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    return scores


class ClassScores:
    """``predict``, ``predict_topk``, ``predict_proba`` and ``predict_log_proba`` of a
    multiclass estimator, from its class scores ``_scores(X)`` (n_samples × n_classes,
    columns in the order of ``classes_``). Probabilities are the softmax of the scores,
    offered where ``_has_proba()`` is true (losses that model them)."""

    classes_: NDArray[Any]

    def _scores(self, X: ArrayLike) -> NDArray[np.float64]:
        raise NotImplementedError

    def _has_proba(self) -> bool:
        return True

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """The class with the highest score."""
        scores = self._scores(X)
        return np.asarray(self.classes_[np.argmax(scores, axis=1)])

    def predict_topk(self, X: ArrayLike, k: int | None = None) -> NDArray[Any]:
        """The k highest-scoring classes per sample, best first; shape (n_samples, k).

        ``k`` defaults to the ``k`` the model was trained for (its ``k`` parameter); a
        model without one needs it given. Ties are broken towards the lower class index.
        """
        scores = self._scores(X)
        if k is None:
            k = getattr(self, "k", None)
            if k is None:
                raise InvalidInputError(f"k: {type(self).__name__} is not trained for a k; pass k")
        kk = bounded_int(k, "k", low=1)
        if kk > scores.shape[1]:
            raise InvalidInputError(f"k: must be <= n_classes = {scores.shape[1]}, got {kk}")
        order = np.argsort(-scores, axis=1, kind="stable")[:, :kk]
        return np.asarray(self.classes_[order])

    @_if_proba
    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities softmax(Wᵀx + b), shape (n_samples, n_classes)."""
        return _softmax_rows(self._scores(X))

    @_if_proba
    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Logarithm of :meth:`predict_proba`."""
        scores = self._scores(X)
        scores -= scores.max(axis=1, keepdims=True)
        return np.asarray(scores - np.log(np.exp(scores).sum(axis=1, keepdims=True)))
