"""M3L: max-margin multi-label classification with a label-correlation prior
(Hariharan, Vishwanathan, Varma, *Efficient max-margin multi-label classification
with applications to zero-shot learning*, Machine Learning 2012).

:class:`M3L` learns one scorer per label, f_l(x) = z_l·φ(x), from

    min_Z ½ Σ_lk (R⁻¹)_lk z_l·z_k + C Σ_i Σ_l max(0, 2 − 2 y_il f_l(x_i))    (P2, Hamming loss)

with y_il = ±1 and R an L × L symmetric positive definite matrix of prior label
correlations (R = I: one-vs-all linear SVMs with penalty 2C, paper §3.1). The dual (25)
is solved by SMO along one label at a time with a kernel-column cache shared by all
labels (paper §5.1, Appendix A); labels are predicted where f_l(x) > 0.

Sample weights w_i make the cost per example: C w_i in place of C in P2 (the dual box
0 ≤ α_il ≤ C w_i), so weight 2 is the example duplicated and weight 0 ignores it.

Intercept: like the paper, ``fit_intercept=True`` appends a constant feature
``intercept_scaling`` to φ(x) (the kernel gains intercept_scaling²), so the
intercepts are regularised and correlated through R as the weights are.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin
from sklearn.utils._tags import Tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from toprank import _core
from toprank._docs import fill_doc
from toprank._estimator import DualSolverModel, choice, finite_fit, forget, keep_params
from toprank._limits import check_row_norms
from toprank._options import KERNELS, M3L_SOLVERS, Kernel, M3lProblem, M3lSettings, M3LSolver
from toprank._validation import as_flag as _flag
from toprank._validation import (
    as_jobs,
    canonical_csr,
    indicator_matrix,
    intercept_scaling,
    restores_on_failure,
    sample_weights,
    sparse_structure,
    validate_input,
)
from toprank._validation import bounded_int as _int
from toprank._validation import bounded_real as _real
from toprank.exceptions import InvalidInputError
from toprank.metrics import hamming_loss

__all__ = ["M3L"]


def _indicator(Y: Any, name: str) -> NDArray[np.int8]:
    return np.asarray(indicator_matrix(Y, name).toarray(), dtype=np.int8)


def label_prior(R: Any, n_labels: int) -> NDArray[np.float64]:
    """``R`` checked to be an ``n_labels`` × ``n_labels`` symmetric positive definite
    matrix of prior label correlations (symmetrised; None is the identity), for
    :class:`M3L` and its distributed driver."""
    if R is None:
        return np.eye(n_labels)
    if sp.issparse(R):
        sparse_structure(R, "R")
        R = R.toarray()
    try:
        M = np.asarray(R, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"R: must be a {n_labels} x {n_labels} real matrix or None ({error})") from None
    if M.shape != (n_labels, n_labels):
        raise InvalidInputError(f"R: must be {n_labels} x {n_labels} (one row per label), got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise InvalidInputError("R: must be finite")
    # Relative to R's own scale: an absolute tolerance would pass any R scaled below it.
    if np.max(np.abs(M - M.T)) > 1e-12 * np.max(np.abs(M)):
        raise InvalidInputError("R: must be symmetric (up to rounding)")
    try:
        np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise InvalidInputError("R: must be positive definite (its Cholesky factorisation failed)") from None
    return np.ascontiguousarray((M + M.T) / 2)


@fill_doc
class M3L(DualSolverModel, MultiOutputMixin, ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Max-margin multi-label classifier with a label-correlation prior R.

    M3L learns one scorer per label, f_l(x) = z_l·φ(x), coupled through a symmetric
    positive definite matrix R of prior label correlations: it minimises
    :math:`\\tfrac12 \\sum_{lk} (R^{-1})_{lk}\\, z_l \\cdot z_k + C \\sum_i \\sum_l
    \\max(0, 2 - 2 y_{il} f_l(x_i))` (problem P2 with the Hamming loss, y_il = ±1)
    and predicts the labels with f_l(x) > 0. With R = I it is one-vs-all SVMs.

    Parameters
    ----------
    C : float, default=1.0
        Penalty (> 0) of the Hamming hinge losses (one-vs-all SVMs with penalty 2C
        when R = I). Choose it by cross-validation on a logarithmic grid (the prior
        experiment on the documentation's results page uses 0.01 to 10).
    R : array of shape (n_labels, n_labels) or None, default=None
        Symmetric positive definite prior label correlations; None is the identity.
        E.g. the label correlations of held-out or better-matched data (the paper's
        prior-knowledge experiment, §7.2.2); a larger off-diagonal entry makes the two
        labels' weight vectors more alike.
    kernel : {"linear", "rbf", "poly", "precomputed"}, default="linear"
        k(x, x'): ⟨x, x'⟩, exp(−γ‖x − x'‖²), (γ⟨x, x'⟩ + coef0)^degree, or X is the
        Gram matrix. A kernel fit costs O(n²) kernel evaluations: use it up to some
        10⁴ samples.
    solver : {"auto", "smo", "dcd"}, default="auto"
        "smo": the kernel SMO (any kernel); "dcd": dual coordinate descent with
        shrinking on the explicit weights (linear kernel; dense or CSR X); "auto": dcd
        for the linear kernel, smo otherwise.
    gamma : float or None, default=None
        Kernel coefficient (None: 1 / (n_features · X.var()), scikit-learn's "scale").
    %(kernel_degree)s
    coef0 : float, default=1.0
        Polynomial kernel constant.
    fit_intercept : bool, default=True
        Append the constant feature ``intercept_scaling`` (see the module docs).
    intercept_scaling : float, default=1.0
        Value (> 0) of the constant feature; the intercepts are regularised (and
        coupled through R) as the weights are, less so for a larger value.
    tol : float, default=1e-3
        Stop when every projected gradient of the dual is below ``tol`` in magnitude
        (> 0).
    shrinking : bool, default=True
        DCD: drop variables stuck at a bound between epochs (paper (44)–(45)); all return
        for a verification epoch before stopping.
    max_iter : int, default=100_000
        Outer SMO iterations (label choices), or DCD epochs, at most.
    cache_size : float, default=200
        Kernel-column cache in MB, shared by all labels. Columns are held in single
        precision, as LIBSVM holds them (twice the columns per MB, and faster steps):
        SMO then solves the dual with the kernel matrix rounded entrywise to float32.
    random_state : int, RandomState or None, default=None
        Seeds the DCD visiting order.
    n_jobs : int or None, default=None
        Threads. SMO computes kernel columns on them; DCD solves the labels that ``R``
        couples to no other (with ``R = I``, every label) on them, one label per task.
        The fit is the same on any number of threads.
    keep_dual : bool, default=False
        Keep α as ``dual_coef_`` after a fit (e.g. to recompute the objectives). Off by
        default: the model predicts with ``coef_`` (linear) or the support rows, and α
        would make its size grow with n_samples × n_labels.
    verbose : int, default=0
        Print the objectives every 1000 SMO outer iterations, or at the end of a DCD
        solve (at most a line a second with 1, the first always; every one with 2), and a
        last line with the final status.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples, n_labels)
        α of the dual (25), in [0, C] ([0, C w_i] with sample weights); only with
        ``keep_dual=True``.
    coef_ : ndarray of shape (n_labels, n_features)
        Z with the linear kernel.
    intercept_ : ndarray of shape (n_labels,)
        The intercepts (zeros without ``fit_intercept``).
    classes_ : ndarray
        The labels: the indicator's column indices (multi-label targets) or the sorted
        classes of 1-D targets.
    support_ : ndarray of int
        Training examples with a nonzero dual variable for some label.
    support_vectors_ : ndarray of shape (n_support, n_features)
        Their feature vectors (kernel="rbf"/"poly"), used for prediction.
    solver_ : {"smo", "dcd"}
        The solver that ran (``solver="auto"`` resolved).
    %(n_features_in)s
    n_iter_ : int
        SMO outer iterations, or DCD epochs, run.
    status_ : {"converged", "max_iter", "no_progress", "interrupted"}
        "converged" (every projected gradient below ``tol``) or "max_iter" (the
        iteration budget ran out); see ``toprank._options.FitStatus``.
    primal_objective_ : float
        The primal objective P2 at the returned solution.
    dual_objective_ : float
        The dual objective (25) at the returned solution.
    duality_gap_ : float
        Their relative gap :math:`(P - D) / \\max(|P|, |D|)`.
    history_ : list of toprank.FitProgress
        (n_iter, primal, dual, gap, seconds) every 1000 SMO iterations and at the
        end, or at the end of each DCD pass.

    See Also
    --------
    toprank.MultiLabelSVC : Multi-label ranking losses (hinge, softmax), linear.
    toprank.distributed.fit_cocoa : Linear M3L on data held by Dask workers.
    toprank.metrics.hamming_loss : The error M3L's loss bounds.

    Notes
    -----
    Solvers: ``"smo"`` maximises the dual (25) along one label at a time (the label
    and first variable by the largest projected gradient, the second by the
    second-order gain (30), the exact two-variable box QP, the other labels'
    gradients brought up to date through (34)–(36)), with kernel columns from one LRU
    cache shared by all labels (§5.1, Appendix A). ``"dcd"`` is the paper's §6: dual
    coordinate descent on the explicit weights Z, label by label in a seeded order,
    with per-label active sets shrunk by bounds coupled through the absolute values
    of R ((44)–(45)).
    Both stop when every projected gradient of the dual is below ``tol`` (a KKT
    test, not a gap), or after ``max_iter``, and reach the same optimum.

    Cost: SMO computes O(n) kernel entries per new column and keeps the gradients of
    all n × L dual variables; DCD costs O(nnz(X)) per label per epoch plus the
    coupling through R, and memory O(L·d) for Z and O(n·L) for α.

    References
    ----------
    .. [1] B. Hariharan, S. V. N. Vishwanathan, M. Varma. Efficient max-margin
       multi-label classification with applications to zero-shot learning. Machine
       Learning 88, 2012 (problem P2, §3; the dual (25); SMO, §5 and Appendix A;
       DCD, §6).
    .. [2] B. Hariharan, L. Zelnik-Manor, S. V. N. Vishwanathan, M. Varma. Large scale
       max-margin multi-label classification with priors. ICML 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from toprank import M3L
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(120, 6)) / np.sqrt(6)
    >>> Y = (X @ rng.normal(size=(6, 3)) > 0).astype(int)  # 3 labels, an indicator
    >>> R = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]])  # labels 0, 1 go together
    >>> model = M3L(C=1.0, R=R).fit(X, Y)
    >>> model.solver_, model.status_, model.coef_.shape
    ('dcd', 'converged', (3, 6))
    >>> model.predict(X[:3])
    array([[0, 0, 1],
           [1, 1, 1],
           [1, 0, 0]])
    >>> bool(model.score(X, Y) > 0.9)  # 1 − Hamming loss
    True
    """

    def __init__(
        self,
        C: float = 1.0,
        R: Any = None,
        kernel: Kernel = "linear",
        solver: M3LSolver = "auto",
        gamma: float | None = None,
        degree: int = 3,
        coef0: float = 1.0,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        tol: float = 1e-3,
        shrinking: bool = True,
        max_iter: int = 100_000,
        cache_size: float = 200.0,
        random_state: Any = None,
        n_jobs: int | None = None,
        keep_dual: bool = False,
        verbose: int = 0,
    ) -> None:
        keep_params(self, locals())

    def _encode_targets(self, y: Any, n_samples: int) -> NDArray[np.int8]:
        """The n_samples × n_labels 0/1 matrix to learn: a multi-label indicator as
        given; binary labels as one label (the second class); multiclass labels one-hot
        (M3L with R = I is then one-vs-all)."""
        if y is None:
            raise InvalidInputError("Y: requires y to be passed, but the target y is None")
        if sp.issparse(y):
            sparse_structure(y, "Y")
            if y.shape[1] == 1:  # one label, as the dense (n, 1) indicator
                y = y.toarray()
        else:
            y = np.asarray(y)
        shape = y.shape
        if len(shape) == 2 and shape[1] > 1:
            Y = _indicator(y, "Y")
            self._target_kind = "multilabel"
            # As OneVsRestClassifier: the labels are the indicator's columns.
            self.classes_ = np.arange(Y.shape[1])
            self._target_dtype = np.empty(0, dtype=y.dtype)
        else:
            labels = column_or_1d(y, warn=True)
            check_classification_targets(labels)
            classes = np.unique(labels)
            if classes.size < 2:
                raise InvalidInputError(f"Y: needs at least 2 classes, got one class ({classes.tolist()})")
            self.classes_ = classes
            if classes.size == 2:
                self._target_kind = "binary"
                Y = (labels == classes[1]).astype(np.int8).reshape(-1, 1)
            else:
                self._target_kind = "multiclass"
                Y = (labels[:, None] == classes[None, :]).astype(np.int8)
        if Y.shape[0] != n_samples:
            raise InvalidInputError(f"Y: has {Y.shape[0]} rows but X has {n_samples}")
        return Y

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel == "linear" and self.solver in ("auto", "dcd")
        tags.target_tags.multi_output = True
        tags.classifier_tags.multi_label = True
        return tags

    @restores_on_failure
    def fit(self, X: ArrayLike, y: Any, sample_weight: ArrayLike | None = None) -> M3L:
        """Fit the model.

        %(fit_parameters_X)s
            Training examples (CSR with the linear kernel and solver "dcd" or "auto"), or
            the Gram matrix for ``kernel="precomputed"``.
        y : array-like or sparse matrix
            An n_samples × n_labels 0/1 indicator (dense or sparse), or 1-D class labels
            (binary: one label; multiclass: one-hot).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example multipliers w_i ≥ 0 of C: example i's hinge losses cost C w_i
            (an integer weight is the example repeated that many times; weight 0
            ignores it), both solvers. Uniform weights 1 give the unweighted fit exactly.

        %(fit_returns_raises)s
            If an input or a parameter is out of range (e.g. R not positive definite,
            a label that is never or always on, ``solver="dcd"`` with a kernel),
            naming it.
        """
        C = _real(self.C, "C", low=0.0, strict=True)
        kernel = choice(self.kernel, "kernel", KERNELS)
        tol = _real(self.tol, "tol", low=0.0, strict=True)
        max_iter = _int(self.max_iter, "max_iter", low=1)
        cache = _real(self.cache_size, "cache_size", low=0.0, strict=True)
        scaling = intercept_scaling(self.intercept_scaling)
        fit_intercept = _flag(self.fit_intercept, "fit_intercept")
        keep_dual = _flag(self.keep_dual, "keep_dual")
        Xv = validate_input(
            self,
            X,
            reset=True,
            dtype=[np.float64, np.float32],
            order="C",
            ensure_min_samples=2,
            accept_sparse="csr" if kernel == "linear" else False,
        )
        if sp.issparse(Xv):
            # Duplicate entries summed (scipy's meaning of them): the solvers take each
            # stored entry as it is, so ‖x_i‖² and the coordinate steps came out wrong
            # (10x the epochs to the same answer).
            Xv = canonical_csr(Xv)
        if kernel != "precomputed":
            # Every ‖x_i‖² must be finite: an overflowing one (X ~ 1e300) left the linear
            # solver an all-zero model and the kernel's float32 cache NaN.
            check_row_norms(Xv, np.float64, "the dual's coordinate steps divide by them")
        Y = self._encode_targets(y, Xv.shape[0])
        sw = sample_weights(sample_weight, Xv.shape[0])
        on = Y.sum(axis=0)
        constant = np.flatnonzero((on == 0) | (on == Y.shape[0]))
        if constant.size:
            raise InvalidInputError(
                f"Y: labels {constant.tolist()} are never or always on (one class only): nothing to learn"
            )
        kernel_settings = self._kernel_params(Xv, cache, sw)
        n_labels = Y.shape[1]
        R = label_prior(self.R, n_labels)
        signs = np.ascontiguousarray(2.0 * Y - 1.0)
        shift = scaling**2 if fit_intercept else 0.0
        solver = choice(self.solver, "solver", M3L_SOLVERS)
        if solver == "auto":
            solver = "dcd" if kernel == "linear" else "smo"
        if solver == "dcd" and kernel != "linear":
            raise InvalidInputError(f"solver: 'dcd' solves the linear kernel only, got kernel={kernel!r}")
        if solver == "smo" and sp.issparse(Xv):
            raise InvalidInputError("X: sparse input needs solver='dcd' (or 'auto') with the linear kernel")
        # Hamming: Δ⁺ = 0, Δ⁻ = 2.
        problem = M3lProblem(signs, R, np.zeros_like(signs), np.full_like(signs, 2.0), sw)
        settings = M3lSettings(c=C, tol=tol, max_iter=max_iter, bias=scaling if fit_intercept else None)
        run: dict[str, Any] = dict(n_jobs=as_jobs(self.n_jobs), callback=self._progress("iteration"))
        self.solver_ = solver
        if solver == "dcd":
            settings = replace(settings, seed=self._seed(), shrinking=_flag(self.shrinking, "shrinking"))
        else:
            # A progress report (O(N·L)) every 1000 iterations, kept in history_.
            settings = replace(settings, kernel=kernel_settings, report_every=1000)
        Z, alpha, report, violation = _core.m3l_fit(Xv, problem, settings, **run)
        finite_fit("M3L", primal=report.primal, dual=report.dual)
        if Z is not None:
            forget(self, "support_vectors_", "_beta")
            d = Xv.shape[1]
            self.coef_ = np.ascontiguousarray(Z[:, :d])
            self.intercept_ = Z[:, d] * scaling if fit_intercept else np.zeros(n_labels)
            self.support_ = np.flatnonzero(np.any(alpha != 0, axis=1))
        else:
            forget(self, "coef_", "support_vectors_")
            # f(x) = Σ_i (k(x, x_i) + shift) β_i with β = 2 (y∘α) R  (Z = 2 φ(X) A R, (23)).
            beta = 2.0 * (signs * alpha) @ R
            self.support_ = np.flatnonzero(np.any(alpha != 0, axis=1))
            self._beta = np.ascontiguousarray(beta[self.support_])
            self.intercept_ = shift * beta.sum(axis=0)
            if kernel == "linear":
                self.coef_ = np.ascontiguousarray((np.asarray(Xv, dtype=np.float64)[self.support_].T @ self._beta).T)
            elif kernel != "precomputed":
                self.support_vectors_ = np.ascontiguousarray(Xv[self.support_], dtype=np.float64)
        # Prediction needs no α: coef_, or β on the support rows.
        forget(self, "dual_coef_")
        if keep_dual:
            self.dual_coef_ = alpha
        self._report(
            report,
            "iterations",
            tol,
            lambda: (
                f"Raise max_iter (now {max_iter}) or tol; or lower C or scale X so that ‖x‖ ≈ 1 "
                "(coordinate steps are boxed by C and scaled by ‖x‖²)."
            ),
            stopped_at=("largest projected gradient", violation),
        )
        return self

    def _solver_name(self) -> str:
        return f"M3L ({self.solver_})"

    def _scores(self, X: ArrayLike) -> NDArray[np.float64]:
        check_is_fitted(self)
        Xv = validate_input(
            self,
            X,
            reset=False,
            codes=self.kernel == "linear",
            dtype=[np.float64, np.float32],
            order="C",
            accept_sparse="csr" if self.kernel == "linear" else False,
        )
        if self.kernel == "linear":  # a CompressedMatrix's X̂·Zᵀ from its codes
            return np.asarray(Xv @ self.coef_.T + self.intercept_, dtype=np.float64)
        if self.kernel == "precomputed":
            K = np.asarray(Xv, dtype=np.float64)[:, self.support_]
        elif len(self.support_) == 0:
            # Every dual variable is zero: only the intercept is left.
            return np.zeros((Xv.shape[0], len(self.intercept_))) + self.intercept_
        else:
            K = self._kernel_to_support(Xv)
        return np.asarray(K @ self._beta + self.intercept_)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Compute the label scores f_l(x) of each sample.

        %(kernel_samples_parameter)s

        Returns
        -------
        ndarray of shape (n_samples, n_labels) or (n_samples,)
            The scores f_l(x) per label; (n_samples,) after a binary fit.
        """
        scores = self._scores(X)
        return scores[:, 0] if self._target_kind == "binary" else scores

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict the labels with a positive score f_l(x) > 0.

        %(kernel_samples_parameter)s

        Returns
        -------
        ndarray of shape (n_samples, n_labels) or (n_samples,)
            Multi-label fits: the 0/1 indicator of the labels with f_l(x) > 0, in the
            dtype of the indicator fitted on. Otherwise the class with the largest
            score (multiclass) or of the sign (binary).
        """
        scores = self._scores(X)
        if self._target_kind == "multilabel":
            return (scores > 0).astype(self._target_dtype.dtype)
        classes: NDArray[Any] = np.asarray(self.classes_)
        if self._target_kind == "binary":
            return np.asarray(classes[(scores[:, 0] > 0).astype(int)])
        return np.asarray(classes[np.argmax(scores, axis=1)])

    def score(self, X: ArrayLike, y: Any, sample_weight: Any = None) -> float:
        """Return 1 − the Hamming loss of the predicted label sets (accuracy for 1-D targets).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.
        y : array-like or sparse matrix
            The true labels: an indicator with a column per label of the fit
            (multi-label fits), else class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the accuracy for 1-D targets; not supported for multi-label
            targets.

        Returns
        -------
        float
            The fraction of (example, label) entries predicted right, or the accuracy.
        """
        if self._target_kind != "multilabel":
            return float(super().score(X, y, sample_weight=sample_weight))
        if sample_weight is not None:
            raise InvalidInputError("sample_weight: not supported for multi-label targets")
        Y = _indicator(y, "Y")
        predicted = self.predict(X)
        if Y.shape != predicted.shape:
            raise InvalidInputError(
                f"Y: expected shape {predicted.shape} (one column per label of the fit), got {Y.shape}"
            )
        return 1.0 - hamming_loss(Y, predicted)
