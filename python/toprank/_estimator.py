"""What the estimators share, in one place rather than copied or imported from one
another's private names:

* :func:`keep_params` — the ``__init__`` body scikit-learn expects (parameters stored as
  given, validated in ``fit``); :func:`choice` and :func:`kernel_gamma` — option and
  kernel-coefficient validation; :func:`finite_fit` and :func:`forget` — the end of a
  fit (no non-finite solution, no attribute of a previous fit left behind);
* :class:`DualSolverModel` — for the estimators fitted by a dual solver of the core:
  the kernel's settings, the kernel to the support vectors, the seed, the progress
  callback, and the fitted report (``status_``, ``n_iter_``, ``history_`` of
  :class:`FitProgress` records: the same for every such estimator) with its
  convergence warning;
* :class:`SdcaModel` — for the linear and kernel Prox-SDCA estimators (TopKSVC,
  MultiLabelSVC): their common parameters validated, the costs c_i, the warm start's
  and the kept dual rows, the linear model from the core's W, and what to change when
  a fit stops short;
* :class:`ClassScores` — ``predict``, ``predict_topk`` and the probabilities of a
  multiclass estimator, from its class scores;
* :class:`LinePace` — how often ``verbose`` prints (at most a line a second, or every
  line with ``verbose >= 2``), and the ``history_`` records of the estimators without
  a duality gap: :class:`RankerProgress` (RankmaxRanker) and
  :class:`TraceNormProgress` (TraceNormLogisticRegression).

Argument conversion (arrays, numbers, flags) lives in :mod:`toprank._validation`.
"""

from __future__ import annotations

import math
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_random_state
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.metaestimators import available_if

from toprank import _core
from toprank._docs import fill_doc
from toprank._limits import row_sq_norms
from toprank._options import DUAL_LAYOUTS, DualLayout, FitStatus, Kernel, KernelSettings, SdcaLossName, SdcaSettings
from toprank._validation import (
    DEGREE_MAX,
    as_flag,
    as_jobs,
    bounded_int,
    bounded_real,
    intercept_scaling,
    warn_not_converged,
)
from toprank.exceptions import InvalidInputError, NoSolutionError

# The statuses of a dual solver that stopped before its relative duality gap reached tol.
_STOPPED_SHORT: tuple[FitStatus, ...] = ("max_iter", "no_progress")


@fill_doc
class FitProgress(NamedTuple):
    """One progress check of a dual solver, an item of a fitted model's ``history_``.

    The estimators fitted by a dual solver of the core (:class:`~toprank.TopKSVC`,
    :class:`~toprank.MultiLabelSVC`, :class:`~toprank.M3L`, :class:`~toprank.TopPush`,
    :class:`~toprank.TopPushK`, :class:`~toprank.PatMat`) append one record at each
    check of the duality gap: the primal objective P, the dual objective D and their
    relative gap :math:`(P - D) / \\max(|P|, |D|)`, which the fit drives below ``tol``
    (M3L stops on its largest projected gradient instead and records the gap).

    Parameters
    ----------
    n_iter : int
        Iterations run so far: epochs (passes over the data) for TopKSVC and
        MultiLabelSVC, two-coordinate iterations for TopPush / TopPushK / PatMat, SMO
        iterations or DCD epochs for M3L.
    primal : float
        The primal objective P at the current iterate.
    dual : float
        The dual objective D at the current iterate (D ≤ P by weak duality).
    gap : float
        The relative duality gap :math:`(P - D) / \\max(|P|, |D|)`.
    seconds : float
        Seconds since the fit started.

    See Also
    --------
    RankerProgress : The record of :class:`~toprank.RankmaxRanker`'s epochs.
    TraceNormProgress : The record of :class:`~toprank.TraceNormLogisticRegression`'s iterations.

    Examples
    --------
    >>> from toprank import TopKSVC
    %(iris_example)s
    >>> model = TopKSVC(k=2, tol=1e-3, random_state=0).fit(X / 10, y)
    >>> last = model.history_[-1]
    >>> last._fields
    ('n_iter', 'primal', 'dual', 'gap', 'seconds')
    >>> last.n_iter == model.n_iter_, bool(last.gap <= 1e-3), bool(last.dual <= last.primal)
    (True, True, True)
    """

    n_iter: int
    primal: float
    dual: float
    gap: float
    seconds: float


@fill_doc
class RankerProgress(NamedTuple):
    """One epoch of :class:`~toprank.RankmaxRanker`, an item of its ``history_``.

    A stochastic optimiser has no duality gap to report: each record holds the mean
    training loss of the epoch and, when early stopping has a validation set, the
    ranking metrics that decide which epoch's parameters are kept. ``n_iter`` and
    ``seconds`` mean what they mean in :class:`FitProgress`.

    Parameters
    ----------
    n_iter : int
        Epochs run so far.
    loss : float
        Mean training loss per (example, label) pair during the epoch.
    val_ap : float or None
        Validation AP@``eval_k``; None without a validation set (no early stopping, or
        :meth:`~toprank.RankmaxRanker.partial_fit`).
    val_accuracy : float or None
        Validation top-1 accuracy; None without a validation set.
    val_recall : float or None
        Validation Recall@100 (@n_labels when fewer labels); None without a validation
        set.
    seconds : float
        Seconds since the fit (or the :meth:`~toprank.RankmaxRanker.partial_fit` call)
        started.

    %(progress_see_also)s
    TraceNormProgress : The record of :class:`~toprank.TraceNormLogisticRegression`'s iterations.

    Examples
    --------
    >>> import numpy as np
    >>> from toprank import RankmaxRanker
    >>> X = np.eye(20)  # 20 one-hot users
    >>> y = [[u % 5, 5 + u % 3] for u in range(20)]  # two liked items each
    >>> model = RankmaxRanker(n_components=4, n_epochs=3, early_stopping=False, random_state=0)
    >>> record = model.fit(X, y).history_[-1]
    >>> record.n_iter, record.val_ap is None
    (3, True)
    """

    n_iter: int
    loss: float
    val_ap: float | None
    val_accuracy: float | None
    val_recall: float | None
    seconds: float


@fill_doc
class TraceNormProgress(NamedTuple):
    """One iteration of :class:`~toprank.TraceNormLogisticRegression`, an item of its ``history_``.

    A primal method has no dual objective to report: each record holds the objective
    J(W, b) and :math:`\\sigma_{\\max}(-\\nabla)`, the largest singular value of the
    negative gradient of the smooth part, whose excess over λ1 is what ``tol`` bounds
    (optimality condition (C1) of Harchaoui et al. 2012). ``n_iter`` and ``seconds``
    mean what they mean in :class:`FitProgress`.

    Parameters
    ----------
    n_iter : int
        Iterations run so far.
    objective : float
        The objective J(W, b) of eq. (4).
    sigma : float
        The largest singular value σ_max(−∇) of the negative gradient; (C1) holds when
        it is at most λ1 + ``tol``.
    rank : int
        The rank of W.
    seconds : float
        Seconds since the fit started.

    %(progress_see_also)s
    RankerProgress : The record of :class:`~toprank.RankmaxRanker`'s epochs.

    Examples
    --------
    >>> from toprank import TraceNormLogisticRegression
    %(iris_example)s
    >>> model = TraceNormLogisticRegression(lambda_trace=0.05, random_state=0).fit(X, y)
    >>> last = model.history_[-1]
    >>> last._fields
    ('n_iter', 'objective', 'sigma', 'rank', 'seconds')
    >>> last.rank == model.rank_, bool(last.sigma <= model.lambda_trace + model.tol)
    (True, True)
    """

    n_iter: int
    objective: float
    sigma: float
    rank: int
    seconds: float


_Option = TypeVar("_Option", bound=str)


def keep_params(estimator: Any, arguments: dict[str, Any]) -> None:
    """Stores each of an ``__init__``'s ``arguments`` (its ``locals()``) unchanged as the
    attribute of its name, as scikit-learn's ``get_params``, ``set_params`` and ``clone``
    expect; validation waits for ``fit``."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def choice(value: Any, name: str, options: tuple[_Option, ...]) -> _Option:
    """A string option, one of ``options`` (the values of its ``Literal`` type in
    ``toprank._options``); anything else raises naming ``name``."""
    if not isinstance(value, str) or value not in options:
        raise InvalidInputError(f"{name}: must be one of {options}, got {value!r}")
    return value


def kernel_gamma(kernel: Kernel, gamma: Any, X: Any, sample_weight: NDArray[np.float64] | None = None) -> float:
    """The kernel coefficient: ``gamma`` validated, or for ``None`` scikit-learn's
    ``gamma="scale"``, 1 / (n_features · X.var()) (1 for linear/precomputed kernels). With
    sample weights (not all equal) the variance is the weighted one, each row counted w_i
    times: the value of X with its rows repeated, so that weight 2 stays the row duplicated."""
    if kernel in ("precomputed", "linear"):
        return 1.0
    if gamma is None:
        with np.errstate(over="ignore"):
            values = np.asarray(X, dtype=np.float64)
            # Weights out of range (negative, NaN, all 0) are refused by the solver, naming them.
            usable = sample_weight is not None and bool(np.all(sample_weight >= 0) and np.sum(sample_weight) > 0)
            if sample_weight is None or not usable or np.all(sample_weight == sample_weight[0]):
                var = float(values.var())
            else:
                mean = float(np.average(values.mean(axis=1), weights=sample_weight))
                var = float(np.average(((values - mean) ** 2).mean(axis=1), weights=sample_weight))
        if not math.isfinite(var):
            raise InvalidInputError(
                "X: its variance overflows float64, so gamma=None ('scale') cannot be computed; rescale X or set gamma"
            )
        if var == 0:
            return 1.0
        scale = 1.0 / (int(X.shape[1]) * var)
        if not math.isfinite(scale):
            raise InvalidInputError(
                f"X: its variance ({var:.3g}) is so small that gamma=None ('scale') overflows; rescale X or set gamma"
            )
        return scale
    return bounded_real(gamma, "gamma", low=0.0, strict=True)


def finite_fit(estimator: str, **values: float) -> None:
    """Raises when a solve ends with a non-finite objective, gap or threshold: the data's
    scale overflowed float64 (or a float32 kernel cache), and the model would be NaN or
    zero where no warning would say so."""
    bad = {name: value for name, value in values.items() if not math.isfinite(float(value))}
    if bad:
        found = ", ".join(f"{name} = {value}" for name, value in bad.items())
        raise NoSolutionError(
            f"{estimator}: the solve ended with non-finite values ({found}): the data's scale "
            "overflows floating point; rescale X (or the kernel's parameters)"
        )


def forget(estimator: Any, *names: str) -> None:
    """Removes fitted attributes that the new fit does not set (those of another kernel),
    so that none outlives a refit."""
    for name in names:
        vars(estimator).pop(name, None)


class DualSolverModel:
    """What the estimators fitted by one of the core's dual solvers share: the kernel's
    arguments at fit and the kernel to the support vectors at prediction, the solver's
    seed and progress callback, and the fitted report with its convergence warning."""

    kernel: Kernel
    gamma: float | None
    degree: int
    coef0: float
    random_state: Any
    n_jobs: int | None
    verbose: int
    support_vectors_: NDArray[np.float64]
    _gamma: float
    n_iter_: int
    primal_objective_: float
    dual_objective_: float
    duality_gap_: float
    status_: FitStatus
    history_: list[FitProgress]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    def _kernel_params(
        self, X: Any, cache_size: float, sample_weight: NDArray[np.float64] | None = None
    ) -> KernelSettings:
        """The kernel of a fit on ``X`` (weighted by ``sample_weight``, see
        :func:`kernel_gamma`), validated, with a column cache of ``cache_size`` MB; the
        resolved gamma is kept as ``_gamma`` for prediction. A precomputed ``X`` must be
        the square Gram matrix of the training set."""
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise InvalidInputError(f"X: a precomputed kernel must be square, got shape {X.shape}")
        self._gamma = kernel_gamma(self.kernel, self.gamma, X, sample_weight)
        return KernelSettings(
            kernel=self.kernel,
            gamma=self._gamma,
            degree=bounded_int(self.degree, "degree", low=1, high=DEGREE_MAX),
            coef0=bounded_real(self.coef0, "coef0", low=-np.inf, strict=False),
            cache_size=cache_size,
        )

    def _kernel_to_support(self, X: Any) -> NDArray[np.float64]:
        """k(x, s) between the rows of ``X`` and the fitted ``support_vectors_`` (rbf/poly
        kernels), with the parameters of the fit."""
        return np.asarray(
            _core.kernel_cross(
                np.ascontiguousarray(X, dtype=np.float64),
                self.support_vectors_,
                KernelSettings(self.kernel, self._gamma, int(self.degree), float(self.coef0)),
                n_jobs=as_jobs(self.n_jobs),
            )
        )

    def _seed(self) -> int:
        """The core's 31-bit seed, drawn from ``random_state`` as scikit-learn would."""
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _progress(self, unit: str) -> Callable[[int, float, float, float, float], None] | None:
        """The solver's callback at each gap check (step, primal, dual, gap, seconds): a
        line on stdout where ``verbose`` (see :class:`LinePace`), else None (the core
        then makes no call)."""
        if not self.verbose:
            return None
        pace = LinePace(self.verbose)
        name = type(self).__name__

        def line(step: int, primal: float, dual: float, gap: float, seconds: float) -> None:
            if pace.due():
                _print_progress(name, unit, step, primal, dual, gap, seconds)

        return line

    def _report(
        self,
        report: _core.FitReport,
        unit: str,
        tol: float,
        budget_advice: Callable[[], str],
        stopped_at: tuple[str, float] | None = None,
    ) -> None:
        """Stores the fitted ``report`` (``n_iter_`` in ``unit``, the objectives, the
        gap, ``status_``, ``history_``) and warns, at the caller's line, when the solve
        stopped short of ``tol``: out of its budget (``budget_advice()`` says what to
        change, from the estimator, which knows its problem), or without progress
        (rounding dominates: only a larger tol helps). ``stopped_at`` names the solver's
        stopping measure and its final value when that is not the relative duality gap."""
        self.n_iter_ = report.n_iter
        self.primal_objective_ = report.primal
        self.dual_objective_ = report.dual
        self.duality_gap_ = report.gap
        self.status_ = report.status
        self.history_ = [FitProgress(*record) for record in report.history]
        if self.verbose:
            seconds = f"  {self.history_[-1].seconds:.2f}s" if self.history_ else ""
            _print_line(
                f"[{type(self).__name__}] {self.status_} after {self.n_iter_} {unit}  primal "
                f"{self.primal_objective_:.8g}  dual {self.dual_objective_:.8g}  gap {self.duality_gap_:.3e}{seconds}"
            )
        if self.status_ not in _STOPPED_SHORT:
            return
        measure, value = stopped_at or ("relative duality gap", self.duality_gap_)
        advice = (
            f"Set tol at or above the gap reached ({value:.1g})." if self.status_ == "no_progress" else budget_advice()
        )
        warn_not_converged(self._solver_name(), self.status_, self.n_iter_, unit, value, tol, advice, measure=measure)

    def _solver_name(self) -> str:
        """What the convergence warning calls the fit (the estimator, or with its solver)."""
        return type(self).__name__


class SdcaModel(DualSolverModel, ABC):
    """What the Prox-SDCA estimators (:class:`~toprank.TopKSVC`,
    :class:`~toprank.MultiLabelSVC`) share beyond :class:`DualSolverModel`: their common
    parameters validated and the core's settings made of them, the costs c_i of the
    examples, the dual rows a warm start begins from and those a model keeps, the linear
    model from the core's W, and the advice of a fit that stopped short. Each estimator
    says whether its loss is a (smoothable) hinge loss, ``_is_hinge``."""

    C: float
    smoothing: float
    fit_intercept: bool
    intercept_scaling: float
    tol: float
    max_epochs: int
    check_every: int
    shrinking: bool
    dual_layout: DualLayout
    warm_start: bool
    keep_dual: bool
    classes_: NDArray[Any]
    coef_: NDArray[np.float64]
    intercept_: NDArray[np.float64]
    dual_coef_: NDArray[np.float64] | sp.csr_array
    _c: NDArray[np.float64]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # The linear fits take CSR rows; a kernel needs dense ones.
        tags.input_tags.sparse = self.kernel == "linear"
        return tags

    @abstractmethod
    def _is_hinge(self) -> bool:
        """Whether the loss is a hinge loss (its fits stall without smoothing; see
        :meth:`_advice`)."""

    def _sdca_params(self) -> dict[str, Any]:
        """The parameters every Prox-SDCA estimator has, validated (each error names its
        parameter)."""
        return {
            "C": bounded_real(self.C, "C", low=0.0, strict=True),
            "smoothing": bounded_real(self.smoothing, "smoothing", low=0.0, strict=False),
            "tol": bounded_real(self.tol, "tol", low=0.0, strict=True),
            "max_epochs": bounded_int(self.max_epochs, "max_epochs", low=1),
            "check_every": bounded_int(self.check_every, "check_every", low=1),
            "shrinking": as_flag(self.shrinking, "shrinking"),
            "dual_layout": choice(self.dual_layout, "dual_layout", DUAL_LAYOUTS),
            "fit_intercept": as_flag(self.fit_intercept, "fit_intercept"),
            "warm_start": as_flag(self.warm_start, "warm_start"),
            "keep_dual": as_flag(self.keep_dual, "keep_dual"),
            "intercept_scaling": intercept_scaling(self.intercept_scaling),
            "n_jobs": as_jobs(self.n_jobs),
        }

    def _sdca_settings(self, params: dict[str, Any], n_classes: int, loss: SdcaLossName, k: int = 1) -> SdcaSettings:
        """The core's settings of a fit from the validated ``params`` and a seed drawn
        from ``random_state``: the stopping rule, the loss and, for a linear fit, the
        constant feature of the intercept (None without one). A kernel fit adds its
        ``kernel``."""
        linear_intercept = self.kernel == "linear" and params["fit_intercept"]
        return SdcaSettings(
            n_classes=n_classes,
            loss=loss,
            k=k,
            smoothing=params["smoothing"],
            tol=params["tol"],
            max_epochs=params["max_epochs"],
            check_every=params["check_every"],
            seed=self._seed(),
            shrinking=params["shrinking"],
            bias=params["intercept_scaling"] if linear_intercept else None,
            dual_layout=params["dual_layout"],
        )

    @staticmethod
    def _costs(
        C: float, sample_weight: NDArray[np.float64], factor: NDArray[np.float64] | None = None
    ) -> NDArray[np.float64]:
        """c_i = C · sample_weight_i (· ``factor``_i, e.g. a class weight): each example's
        weight in the primal. Negative weights, or none positive, are refused."""
        if np.any(sample_weight < 0):
            raise InvalidInputError("sample_weight: must be >= 0")
        c = C * sample_weight if factor is None else C * sample_weight * factor
        c = np.ascontiguousarray(c, dtype=np.float64)
        if not np.any(c > 0):
            raise InvalidInputError("sample_weight: every example has weight 0")
        return c

    def _linear_model(self, W: NDArray[np.float64], n_features: int, params: dict[str, Any]) -> None:
        """``coef_`` and ``intercept_`` from the core's W (m × (d + 1) with the constant
        feature, whose weights are the intercepts divided by ``intercept_scaling``)."""
        self.coef_ = np.ascontiguousarray(W[:, :n_features])
        if params["fit_intercept"]:
            self.intercept_ = W[:, n_features] * params["intercept_scaling"]
        else:
            self.intercept_ = np.zeros(W.shape[0])

    def _linear_scores(self, Xv: Any) -> NDArray[np.float64]:
        """Wᵀx + b of the validated rows ``Xv``: dense, CSR, or a CompressedMatrix's X̂·Wᵀ
        from its codes."""
        return np.asarray(safe_sparse_dot(Xv, self.coef_.T, dense_output=True) + self.intercept_, dtype=np.float64)

    def _advice(self, Xv: Any, c: NDArray[np.float64], params: dict[str, Any]) -> str:
        """What to change when a fit stops short of tol, and why: SDCA's epochs grow with
        max_i c_i·k(x_i, x_i) (each step moves W by up to c_i·‖x_i‖ along x_i), about 1
        on well-scaled data."""
        budget = f"raise max_epochs (now {params['max_epochs']}) or tol"
        smooth = (
            " or set smoothing > 0 (the smoothed hinge converges linearly)"
            if self._is_hinge() and params["smoothing"] == 0
            else ""
        )
        curvature = self._max_curvature(Xv, params)
        if curvature is None or not math.isfinite(curvature):
            return f"Otherwise {budget}; lower C{smooth}."
        worst = float(np.max(c)) * curvature
        if worst <= 10.0:
            return f"C·max‖x_i‖² is {worst:.3g}, which is well scaled: {budget}{smooth}."
        return (
            f"The problem is badly scaled for the dual method: C·max‖x_i‖² reaches {worst:.3g}, and the "
            "epochs SDCA needs grow in proportion to it (about 1 is well scaled). Scale X so that "
            "‖x‖ ≈ 1 (e.g. StandardScaler, then divide by √n_features), lower C"
            f"{smooth}; otherwise {budget}."
        )

    def _max_curvature(self, Xv: Any, params: dict[str, Any]) -> float | None:
        """max_i k(x_i, x_i), the largest step curvature (None where it is not cheap to know)."""
        if Xv is None:
            return None
        if self.kernel == "precomputed":
            return float(np.max(np.diagonal(Xv)))
        if self.kernel == "rbf":
            return 1.0
        with np.errstate(over="ignore"):
            largest = float(np.max(row_sq_norms(Xv)))
            if self.kernel == "poly":
                return float((self._gamma * largest + abs(float(self.coef0))) ** int(self.degree))
            if params["fit_intercept"]:
                largest += params["intercept_scaling"] ** 2
        return largest

    def _keep_dual(
        self,
        dual: NDArray[np.float64] | sp.csr_array,
        c: NDArray[np.float64],
        params: dict[str, Any],
        targets: Any = None,
    ) -> None:
        """Keeps the n × m dual (an array, or a CSR array where the core kept it sparse), with the weights (and ``targets``) it was fitted for, only
        where the next fit starts from it or it was asked for: a linear model predicts
        with ``coef_`` alone, so its size is O(m·d), not O(n·m)."""
        forget(self, "dual_coef_", "_c", "_dual_targets")
        if params["warm_start"] or params["keep_dual"]:
            self.dual_coef_ = dual
            self._c = c
            if targets is not None:
                self._dual_targets = targets

    def _warm_dual(
        self, n: int, classes: NDArray[Any], c: NDArray[np.float64], targets: Any = None
    ) -> NDArray[np.float64] | sp.csr_array | None:
        """The previous fit's dual rows, rescaled to the new costs ``c``, where
        ``warm_start`` is set and the fit has the same size and ``classes`` (and, where
        given, ``targets``, compared with ``np.array_equal`` item by item); else None."""
        if not (as_flag(self.warm_start, "warm_start") and hasattr(self, "dual_coef_")):
            return None
        old = self.dual_coef_
        if old.shape != (n, len(classes)) or not np.array_equal(self.classes_, classes):
            return None
        if targets is not None:
            kept = getattr(self, "_dual_targets", None)
            if kept is None or len(kept) != len(targets):
                return None
            if not all(np.array_equal(a, b) for a, b in zip(kept, targets)):
                return None
        # The dual sets scale with c_i, so rescaling each row keeps it feasible.
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(self._c > 0, c / self._c, 0.0)
        if isinstance(old, np.ndarray):
            return np.ascontiguousarray(old * ratio[:, None])
        scaled = old.copy()  # a CSR array: scale each row's stored values
        scaled.data *= np.repeat(ratio, np.diff(old.indptr))
        return scaled


class LinePace:
    """How often ``verbose`` prints a progress line: ``verbose=1`` at most one line a
    second (the first always; the estimator prints its last, with the final status, on
    its own), so that a solver checking its progress hundreds of times a second does not
    flood the output; ``verbose >= 2`` every line."""

    #: Seconds between two lines at verbose=1.
    INTERVAL = 1.0

    def __init__(self, verbose: int) -> None:
        self.every_line = verbose >= 2
        self.next_line = -math.inf

    def due(self) -> bool:
        """Whether a line may print now (and, if so, the clock restarts)."""
        if self.every_line:
            return True
        now = time.monotonic()
        if now < self.next_line:
            return False
        self.next_line = now + self.INTERVAL
        return True


def _print_line(text: str) -> None:
    print(text, file=sys.stdout, flush=True)


def _print_progress(
    estimator: str, unit: str, step: int, primal: float, dual: float, gap: float, seconds: float
) -> None:
    _print_line(f"[{estimator}] {unit} {step:7d}  primal {primal:.8g}  dual {dual:.8g}  gap {gap:.3e}  {seconds:.2f}s")


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
    # Each estimator's own method: the class scores of X (validated there).
    _scores: Callable[[ArrayLike], NDArray[np.float64]]

    def _has_proba(self) -> bool:
        return True

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict the class of each sample: the one with the highest score.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples, as accepted by ``fit`` (for ``kernel="precomputed"``, the kernel
            between them and the training samples, shape (n_samples, n_train)).

        Returns
        -------
        ndarray of shape (n_samples,)
            One of ``classes_`` per sample (ties go to the lower class index).
        """
        scores = self._scores(X)
        return np.asarray(self.classes_[np.argmax(scores, axis=1)])

    @fill_doc
    def predict_topk(self, X: ArrayLike, k: int | None = None) -> NDArray[Any]:
        """Predict the k highest-scoring classes of each sample, best first.

        %(samples_parameter)s
        k : int, default=None
            Classes per sample, 1 ≤ k ≤ n_classes. None takes the ``k`` the model was
            trained for (its ``k`` parameter); a model without one needs it given.

        Returns
        -------
        ndarray of shape (n_samples, k)
            Labels from ``classes_``, best first; ties are broken towards the lower
            class index.

        Raises
        ------
        InvalidInputError
            If ``k`` is out of range, or None for a model without a ``k`` parameter.
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
    @fill_doc  # under _if_proba: a class-level fill_doc does not see through its descriptor
    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Predict class probabilities, the softmax of the class scores.

        Offered for the losses that model probabilities (``loss="softmax"`` or
        ``"entropy"``; MultiLabelSVC's ``"softmax"``, then a distribution over the
        labels; TraceNormLogisticRegression's logistic loss): p = softmax(Wᵀx + b).

        %(samples_parameter)s

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Each row sums to 1; columns in the order of ``classes_``.
        """
        return _softmax_rows(self._scores(X))

    @_if_proba
    @fill_doc
    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Predict the logarithm of the class probabilities of :meth:`predict_proba`.

        Computed from the scores directly (log-sum-exp), so a probability too small
        for float64 still has a finite logarithm.

        %(samples_parameter)s

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Log-probabilities; columns in the order of ``classes_``.
        """
        scores = self._scores(X)
        scores -= scores.max(axis=1, keepdims=True)
        return np.asarray(scores - np.log(np.exp(scores).sum(axis=1, keepdims=True)))
