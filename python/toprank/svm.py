"""Top-k multiclass SVM (Lapin, Hein, Schiele, NIPS 2015) trained by Prox-SDCA.

:class:`TopKSVC` minimises

    ½‖W‖²_F + C Σ_i s_i L(Wᵀx_i + b; y_i)

where ``s_i`` is the sample weight times the class weight of ``y_i`` and ``L`` one of

* ``"alpha"`` — top-k hinge α: (1/k) max{0, Σ_{j≤k} h_[j]}, h_j = 1 + f_j − f_y over j ≠ y;
* ``"beta"``  — top-k hinge β (Usunier): (1/k) Σ_{j≤k} max{0, h_[j]};
* ``"softmax"`` — multinomial logistic loss log Σ_j exp(f_j − f_y);
* ``"entropy"`` — top-k entropy loss (Lapin, Hein, Schiele, CVPR 2016), softmax for k = 1.

``k = 1`` makes both hinge losses the Crammer–Singer loss, so
``TopKSVC(k=1, fit_intercept=False)`` solves the problem of scikit-learn's
``LinearSVC(multi_class="crammer_singer", fit_intercept=False)``. ``smoothing`` γ > 0
replaces the hinge losses by their Moreau envelopes (1/γ-smooth; SDCA then converges
linearly). The solver maximises the dual exactly one example at a time and stops on the
relative duality gap, which it reports.

Intercept: with ``fit_intercept=True`` each example gets a constant extra feature
``intercept_scaling`` whose weights are the intercepts divided by ``intercept_scaling``.
Like LIBLINEAR's bias feature, the intercept is therefore regularised (a term
½‖b‖²/intercept_scaling²); raise ``intercept_scaling`` to regularise it less.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._tags import Tags
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from toprank import _core
from toprank._estimator import ClassScores, SdcaModel, choice, finite_fit, forget, keep_params
from toprank._options import KERNELS, TOPK_LOSSES, Kernel, SdcaProblem, SdcaSettings, TopKLoss
from toprank._validation import bounded_int as _int
from toprank._validation import bounded_real as _real
from toprank._validation import canonical_csr, restores_on_failure, validate_input
from toprank.exceptions import InvalidInputError
from toprank.pq import CompressedMatrix

__all__ = ["TopKSVC"]


class TopKSVC(ClassScores, SdcaModel, ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Top-k multiclass SVM and top-k entropy / softmax classifiers, trained by Prox-SDCA.

    Parameters
    ----------
    k : int, default=1
        The k of the top-k loss (1 ≤ k < n_classes). ``k=1`` is Crammer–Singer
        (hinge losses) or multinomial logistic regression (``"entropy"``).
    loss : {"alpha", "beta", "softmax", "entropy"}, default="alpha"
        Top-k hinge α, top-k hinge β, softmax, or top-k entropy (see the module docs).
    C : float, default=1.0
        Inverse regularisation: primal ½‖W‖² + C Σ_i loss_i (λ = 1/(C n) in the paper).
    smoothing : float, default=0.0
        Moreau smoothing γ ≥ 0 of the hinge losses (0: the paper's non-smooth losses).
    kernel : {"linear", "rbf", "poly", "precomputed"}, default="linear"
        ``"linear"`` trains an explicit weight matrix on dense or CSR ``X``; the others
        train dual coefficients with scores A·K(x_i, ·) (no intercept).
    gamma : float, default=None
        RBF/poly kernel coefficient; ``None`` means 1 / (n_features · X.var()) as in
        scikit-learn's ``gamma="scale"``.
    degree : int, default=3
        Polynomial kernel degree.
    coef0 : float, default=1.0
        Polynomial kernel constant: (gamma ⟨x, x'⟩ + coef0)^degree.
    fit_intercept : bool, default=True
        Learn per-class intercepts through a constant feature (linear kernel only).
    intercept_scaling : float, default=1.0
        Value of the constant feature; the intercept's regularisation is
        ½‖b‖² / intercept_scaling².
    class_weight : dict, "balanced" or None, default=None
        Multiplies C per class, as in scikit-learn.
    tol : float, default=1e-3
        Stop when (P − D) ≤ tol · max(|P|, |D|) (relative duality gap).
    max_epochs : int, default=1000
        Maximum number of passes over the data.
    check_every : int, default=5
        Epochs between two duality-gap checks.
    shrinking : bool, default=True
        Between two checks, skip the examples with zero loss and zero dual variables
        and (hinge losses) score only the classes near each example's dual support, as
        LIBLINEAR does; every check re-admits whatever became violated, so the solution
        is the same. Turn off only to compare or debug.
    cache_size : float, default=1024
        Kernel column cache in MB (kernel="rbf"/"poly").
    warm_start : bool, default=False
        Start from the previous fit's dual variables (same data size and classes),
        rescaled to the new C and weights. The model then keeps them as ``dual_coef_``
        for the next fit.
    keep_dual : bool, default=False
        Keep the dual variables as ``dual_coef_`` (n_samples × n_classes) after a fit,
        e.g. to recompute the duality gap. Off by default: a linear model predicts with
        ``coef_`` alone, and the dual is most of its size (4.8 of 5.3 MB pickled on
        Fashion-MNIST).
    random_state : int, RandomState or None, default=None
        Seeds the example order of each epoch.
    n_jobs : int or None, default=None
        Threads for the duality-gap evaluation and, for n ≥ 10,000 linear problems,
        the parallel (CoCoA+) solver. ``None`` is one thread; negative values count
        back from all cores (joblib style: ``-1`` is all). Results are reproducible for
        a given ``random_state`` and ``n_jobs``.
    verbose : int, default=0
        1 prints a duality-gap check's line at most once a second (the first always)
        and a last line with the final status; 2 prints every check's line.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_features)
        Weights (linear kernel only).
    support_ : ndarray of int
        Training examples with a nonzero dual row (kernels other than linear).
    support_vectors_ : ndarray of shape (n_support, n_features)
        Their feature vectors (kernel="rbf"/"poly"), used for prediction.
    intercept_ : ndarray of shape (n_classes,)
        Intercepts (zeros when ``fit_intercept=False`` or for kernels).
    classes_ : ndarray of shape (n_classes,)
    dual_coef_ : ndarray of shape (n_samples, n_classes)
        The dual variables A, only with ``keep_dual=True`` or ``warm_start=True`` (a
        kernel model predicts from the rows of ``support_``, kept privately);
        ``coef_ = Xᵀ dual_coef_`` (plus the intercept column), except after the
        accelerated solver took over a badly scaled problem: then ``coef_`` and
        ``dual_coef_`` are a primal and a dual iterate whose duality gap is
        ``duality_gap_`` (they coincide at the optimum).
    n_iter_ : int
        Epochs run.
    primal_objective_, dual_objective_ : float
        P(W) and D(A) at the returned solution.
    duality_gap_ : float
        Relative duality gap (P − D) / max(|P|, |D|).
    status_ : {"converged", "max_iter", "no_progress", "interrupted"}
        Why the solver stopped: the tolerance was reached, ``max_epochs`` ran out, or
        rounding stopped the progress (see ``toprank._options.FitStatus``).
    history_ : list of toprank.FitProgress
        (n_iter, primal, dual, gap, seconds) at each gap check: the epochs so far, the
        objectives, their relative gap and the seconds since the start.
    """

    def __init__(
        self,
        k: int = 1,
        loss: TopKLoss = "alpha",
        C: float = 1.0,
        smoothing: float = 0.0,
        kernel: Kernel = "linear",
        gamma: float | None = None,
        degree: int = 3,
        coef0: float = 1.0,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        class_weight: dict[Any, float] | Literal["balanced"] | None = None,
        tol: float = 1e-3,
        max_epochs: int = 1000,
        check_every: int = 5,
        shrinking: bool = True,
        cache_size: float = 1024,
        warm_start: bool = False,
        keep_dual: bool = False,
        random_state: int | np.random.RandomState | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        keep_params(self, locals())

    # ------------------------------------------------------------------ fitting

    def _check_params(self) -> dict[str, Any]:
        choice(self.loss, "loss", TOPK_LOSSES)
        choice(self.kernel, "kernel", KERNELS)
        return {
            "k": _int(self.k, "k", low=1),
            **self._sdca_params(),
            # Checked for every kernel: a bad value is a mistake even where it is unused.
            "cache_size": _real(self.cache_size, "cache_size", low=0.0, strict=True),
        }

    def _is_hinge(self) -> bool:
        return self.loss in ("alpha", "beta")

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel == "linear"
        return tags

    @restores_on_failure
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> TopKSVC:
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (float32 and float64 C-ordered arrays and CSR matrices are
            used in place, without a copy); for ``kernel="precomputed"`` the
            (n_samples, n_samples) Gram matrix (dense, possibly a memory map). A
            :class:`toprank.pq.CompressedMatrix` trains on its decoded rows X̂: from
            the codes with ``kernel="linear"`` (memory holds only the codes), decoded
            first with the other kernels; the model then predicts on raw features, or
            on a CompressedMatrix (from its codes with the linear kernel).
        y : array-like of shape (n_samples,)
            Class labels (at least two distinct).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example multipliers of C.

        Returns
        -------
        self : TopKSVC
        """
        params = self._check_params()
        Xv: Any
        # The linear solver reads a CompressedMatrix's codes (the model is that of X̂);
        # a kernel fit takes X̂ decoded by validate_input.
        Xv, y = validate_input(
            self,
            X,
            y,
            codes=self.kernel == "linear",
            accept_sparse="csr" if self.kernel == "linear" else False,
            dtype=[np.float64, np.float32],
            order="C",
            ensure_min_samples=2,
        )
        coded = Xv if isinstance(Xv, CompressedMatrix) else None
        check_classification_targets(y)
        classes, y_enc = np.unique(y, return_inverse=True)
        m = len(classes)
        if m < 2:
            raise InvalidInputError(f"y: needs samples of at least 2 classes, got {m} class")
        if params["k"] >= m:
            raise InvalidInputError(f"k: must satisfy 1 <= k <= n_classes - 1 = {m - 1}, got {params['k']}")
        if sp.issparse(Xv):
            Xv = canonical_csr(Xv)
        sw = _check_sample_weight(sample_weight, Xv, dtype=np.float64)
        cw = compute_class_weight(self.class_weight, classes=classes, y=y)
        c = self._costs(params["C"], sw, cw[y_enc])

        settings = SdcaSettings(
            n_classes=m,
            loss=self.loss,
            k=params["k"],
            smoothing=params["smoothing"],
            tol=params["tol"],
            max_epochs=params["max_epochs"],
            check_every=params["check_every"],
            seed=self._seed(),
            shrinking=params["shrinking"],
        )
        problem = SdcaProblem(y_enc.astype(np.int64), c, dual_coef=self._warm_dual(Xv.shape[0], classes, c))
        if self.kernel == "linear":
            bias = params["intercept_scaling"] if params["fit_intercept"] else None
            settings = replace(settings, bias=bias)
        else:
            settings = replace(settings, kernel=self._kernel_params(Xv, params["cache_size"]))
        W, dual, report = _core.topk_svm_fit(
            Xv, problem, settings, n_jobs=params["n_jobs"], callback=self._progress("epoch")
        )
        finite_fit("TopKSVC", primal=report.primal, dual=report.dual, gap=report.gap)
        if W is not None:
            forget(self, "support_", "support_vectors_")
            self._linear_model(W, Xv.shape[1], params)
        else:
            forget(self, "coef_", "support_vectors_")
            self.support_ = np.flatnonzero(np.any(dual != 0, axis=1))
            if self.kernel != "precomputed":
                self.support_vectors_ = np.ascontiguousarray(Xv[self.support_], dtype=np.float64)
            self.intercept_ = np.zeros(m)
        self.classes_ = classes
        self._keep_dual(dual, c, params)
        # A kernel model predicts with its support rows (the others are zero).
        forget(self, "_support_dual")
        if self.kernel != "linear":
            self._support_dual = np.ascontiguousarray(dual[self.support_])
        self._report(report, "epochs", params["tol"], lambda: self._advice(Xv if coded is None else None, c, params))
        return self

    # --------------------------------------------------------------- prediction

    def _scores(self, X: ArrayLike) -> NDArray[np.float64]:
        check_is_fitted(self)
        sparse_ok = "csr" if self.kernel == "linear" else False
        Xv: Any = validate_input(
            self, X, codes=self.kernel == "linear", accept_sparse=sparse_ok, dtype=[np.float64, np.float32], reset=False
        )
        if self.kernel == "linear":
            return self._linear_scores(Xv)
        if self.kernel == "precomputed":
            scores = np.asarray(Xv, dtype=np.float64)[:, self.support_] @ self._support_dual
        elif len(self.support_) == 0:
            # Every dual variable is zero (e.g. vanishing sample weights): W = 0.
            scores = np.zeros((Xv.shape[0], len(self.classes_)))
        else:
            scores = self._kernel_to_support(Xv) @ self._support_dual
        return np.asarray(scores, dtype=np.float64)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class scores Wᵀx + b, shape (n_samples, n_classes); (n_samples,) for two classes
        (the score of ``classes_[1]`` minus that of ``classes_[0]``)."""
        scores = self._scores(X)
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def _has_proba(self) -> bool:
        # predict_proba and predict_log_proba exist for the losses that model probabilities.
        return self.loss in ("softmax", "entropy")
