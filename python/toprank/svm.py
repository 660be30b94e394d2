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
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from toprank import _core
from toprank._docs import fill_doc
from toprank._estimator import ClassScores, SdcaModel, choice, finite_fit, forget, keep_params
from toprank._options import KERNELS, TOPK_LOSSES, DualLayout, Kernel, SdcaProblem, TopKLoss
from toprank._validation import bounded_int as _int
from toprank._validation import bounded_real as _real
from toprank._validation import canonical_csr, restores_on_failure, validate_input
from toprank.exceptions import InvalidInputError
from toprank.pq import CompressedMatrix

__all__ = ["TopKSVC"]


@fill_doc
class TopKSVC(ClassScores, SdcaModel, ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Top-k multiclass SVM and top-k entropy / softmax classifiers, trained by Prox-SDCA.

    A linear (or kernel) multiclass classifier whose loss charges a sample only when
    its true class falls out of the k highest scores, so that it optimises top-k
    accuracy: with scores f = Wᵀx + b it minimises
    :math:`\\tfrac12\\|W\\|_F^2 + C \\sum_i s_i L(f(x_i); y_i)` with the top-k hinge
    α, the top-k hinge β, the softmax or the top-k entropy loss L (module docs), by
    maximising the dual exactly one example at a time until the relative duality gap
    is below ``tol``.

    Parameters
    ----------
    k : int, default=1
        The k of the top-k loss (1 ≤ k < n_classes). ``k=1`` is Crammer–Singer
        (hinge losses) or multinomial logistic regression (``"entropy"``). Use the k
        of the top-k accuracy you will be judged on; a larger k trades top-1 accuracy
        for top-k accuracy (the results page's tables on Letter, Flavia, Fashion-MNIST).
    loss : {"alpha", "beta", "softmax", "entropy"}, default="alpha"
        Top-k hinge α, top-k hinge β, softmax, or top-k entropy (see the module docs).
        β keeps top-1 accuracy close to Crammer–Singer's, α trades more of it for
        top-k; "softmax" and "entropy" also give probabilities (:meth:`predict_proba`).
    C : float, default=1.0
        Inverse regularisation (> 0): primal ½‖W‖² + C Σ_i loss_i (λ = 1/(C n) in
        the paper). Choose it by cross-validation on a logarithmic grid (e.g. 0.01
        to 10); the epochs needed grow with C·max‖x_i‖², so scale X to ‖x‖ ≈ 1 first.
    smoothing : float, default=0.0
        Moreau smoothing γ ≥ 0 of the hinge losses (0: the paper's non-smooth losses;
        ignored by "softmax" and "entropy"). γ > 0 makes the loss 1/γ-smooth and SDCA
        converge linearly; γ ≈ 1 helps a fit that stalls with status "max_iter".
    kernel : {"linear", "rbf", "poly", "precomputed"}, default="linear"
        ``"linear"`` trains an explicit weight matrix on dense or CSR ``X``; the others
        train dual coefficients with scores A·K(x_i, ·) (no intercept). A kernel fit
        costs O(n²) kernel evaluations per epoch: use it up to some 10⁴ samples.
    gamma : float, default=None
        RBF/poly kernel coefficient (> 0); ``None`` means 1 / (n_features · X.var()) as
        in scikit-learn's ``gamma="scale"``.
    %(kernel_degree)s
    coef0 : float, default=1.0
        Polynomial kernel constant: (gamma ⟨x, x'⟩ + coef0)^degree.
    fit_intercept : bool, default=True
        Learn per-class intercepts through a constant feature (linear kernel only).
    intercept_scaling : float, default=1.0
        Value (> 0) of the constant feature; the intercept's regularisation is
        ½‖b‖² / intercept_scaling², so a larger value regularises it less.
    class_weight : dict, "balanced" or None, default=None
        Multiplies C per class, as in scikit-learn (``"balanced"``: inversely
        proportional to the class frequencies).
    tol : float, default=1e-3
        Stop when the relative duality gap :math:`(P - D) / \\max(|P|, |D|)` is at
        most tol (> 0): the primal objective is then within a factor 1 + tol of its
        minimum. Smaller values cost more epochs.
    max_epochs : int, default=1000
        Maximum number of passes over the data; a fit that runs out warns
        (``status_ == "max_iter"``) with what to change.
    %(sdca_check_every)s
    shrinking : bool, default=True
        Between two checks, skip the examples with zero loss and zero dual variables
        and (hinge losses) score only the classes near each example's dual support, as
        LIBLINEAR does; every check re-admits whatever became violated, so the solution
        is the same. Turn off only to compare or debug.
    %(sdca_dual_layout)s
    cache_size : float, default=1024
        Kernel column cache in MB (kernel="rbf"/"poly").
    warm_start : bool, default=False
        Start from the previous fit's dual variables (same data size and classes),
        rescaled to the new C and weights, e.g. along a path of C. The model then
        keeps them as ``dual_coef_`` for the next fit.
    keep_dual : bool, default=False
        Keep the dual variables as ``dual_coef_`` (n_samples × n_classes) after a fit,
        e.g. to recompute the duality gap. Off by default: a linear model predicts with
        ``coef_`` alone, and the dual is most of its size (4.8 of 5.3 MB pickled on
        Fashion-MNIST).
    random_state : int, RandomState or None, default=None
        Seeds the example order of each epoch; an int makes fits reproducible.
    n_jobs : int or None, default=None
        Threads for the duality-gap evaluation and, for n ≥ 10,000 linear problems,
        the parallel (CoCoA+) solver. ``None`` is one thread; negative values count
        back from all cores (joblib style: ``-1`` is all). Results are reproducible for
        a given ``random_state`` and ``n_jobs``.
    %(dual_verbose)s

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
        The class labels, sorted; the columns of :meth:`decision_function`.
    %(n_features_in)s
    dual_coef_ : ndarray or scipy.sparse.csr_array of shape (n_samples, n_classes)
        The dual variables A (sparse where ``dual_layout`` kept them so), only with ``keep_dual=True`` or ``warm_start=True`` (a
        kernel model predicts from the rows of ``support_``, kept privately);
        ``coef_ = Xᵀ dual_coef_`` (plus the intercept column), except after the
        accelerated solver took over a badly scaled problem: then ``coef_`` and
        ``dual_coef_`` are a primal and a dual iterate whose duality gap is
        ``duality_gap_`` (they coincide at the optimum).
    %(sdca_objective_attributes)s
    status_ : {"converged", "max_iter", "no_progress", "interrupted"}
        Why the solver stopped: the tolerance was reached, ``max_epochs`` ran out,
        rounding stopped the progress, or Ctrl-C interrupted it (see
        ``toprank._options.FitStatus``).
    history_ : list of toprank.FitProgress
        (n_iter, primal, dual, gap, seconds) at each gap check: the epochs so far, the
        objectives, their relative gap and the seconds since the start.

    See Also
    --------
    toprank.MultiLabelSVC : The same solver with multi-label losses.
    toprank.TraceNormLogisticRegression : Softmax loss with a low-rank W.
    toprank.distributed.fit_cocoa : The linear model fitted on data held by Dask workers.
    toprank.metrics.top_k_accuracy : The metric the top-k losses target.

    Notes
    -----
    Solver: Prox-SDCA (Lapin, Hein & Schiele 2015, Algorithm 1; Shalev-Shwartz &
    Zhang's proximal stochastic dual coordinate ascent). Each step maximises the dual
    over one example's row exactly, by a biased projection onto the top-k simplex
    (:func:`toprank.projections.topk_simplex`; Proposition 4 of the paper), and
    updates W by a rank-one change. It stops when the relative duality gap is below
    ``tol`` — a certificate: the primal objective is within that factor of the
    optimum — or after ``max_epochs``. A linear problem whose gap falls slowly
    (C·max‖x_i‖² ≥ 4) switches to accelerated Prox-SDCA (Shalev-Shwartz & Zhang
    2016, §4). From n = 10,000 linear examples, ``n_jobs > 1`` runs the parallel
    solver over blocks of examples (CoCoA with an exact line search for the hinge
    losses, CoCoA+ of Ma, Smith, Jaggi et al. 2015 for the smooth ones).

    Cost: an epoch is O(nnz(X) · m) for the linear kernel (one d-vector update per
    class touched) plus a projection of O(m log m) per example, and O(n² · (d + m))
    for the other kernels (a kernel column and n scores per step), less where the LRU
    cache of ``cache_size`` MB holds the columns.
    The number of epochs grows with C·max‖x_i‖² (about 1 is well scaled). Memory:
    X used in place (no copy of C-ordered float32/float64 arrays or CSR), the m × d
    weights, and the n × m dual during the fit (only its nonzeros for the hinge
    losses from 256 classes on, see ``dual_layout``).

    References
    ----------
    .. [1] M. Lapin, M. Hein, B. Schiele. Top-k Multiclass SVM. NIPS 2015 (the top-k
       hinge losses, eq. (3) and (5); Prox-SDCA, Algorithm 1).
    .. [2] M. Lapin, M. Hein, B. Schiele. Loss functions for top-k error: analysis and
       insights. CVPR 2016 (the top-k entropy loss, §2.3).
    .. [3] S. Shalev-Shwartz, T. Zhang. Accelerated proximal stochastic dual coordinate
       ascent for regularized loss minimization. Math. Programming 155, 2016 (ICML
       2014).
    .. [4] C. Ma, V. Smith, M. Jaggi, M. I. Jordan, P. Richtárik, M. Takáč. Adding vs.
       averaging in distributed primal-dual optimization. ICML 2015 (CoCoA+).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank import TopKSVC
    %(iris_example)s
    >>> X = (X - X.mean(axis=0)) / X.std(axis=0) / 2  # ‖x‖ ≈ 1: few epochs
    >>> model = TopKSVC(k=2, C=1.0, random_state=0).fit(X, y)
    >>> model.status_, bool(model.duality_gap_ <= 1e-3)
    ('converged', True)
    >>> model.coef_.shape
    (3, 4)
    >>> model.predict_topk(X[[0, 50, 100]])  # the two best classes, best first
    array([[0, 1],
           [1, 2],
           [2, 1]])
    >>> bool(model.score(X, y) > 0.9)
    True
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
        dual_layout: DualLayout = "auto",
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

    @restores_on_failure
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> TopKSVC:
        """Fit the model.

        %(fit_parameters_X)s
            Training data (float32 and float64 C-ordered arrays and CSR matrices are
            used in place, without a copy); for ``kernel="precomputed"`` the
            (n_samples, n_samples) Gram matrix (dense, possibly a memory map). A
            :class:`toprank.pq.CompressedMatrix` trains on its decoded rows X̂: from
            the codes with ``kernel="linear"`` (memory holds only the codes), decoded
            first with the other kernels; the model then predicts on raw features, or
            on a CompressedMatrix (from its codes with the linear kernel).
        %(fit_y_class_labels)s
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example multipliers of C.

        %(fit_returns_raises)s
            If a parameter or an input is out of range (e.g. ``k ≥ n_classes``, fewer
            than two classes, negative weights), naming it.
        NoSolutionError
            If the data's scale overflows floating point (the solve ends non-finite).

        Warns
        -----
        ConvergenceWarning
            If the fit stops short of ``tol`` (``status_`` "max_iter" or
            "no_progress"), saying what to change.
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

        settings = self._sdca_settings(params, m, self.loss, params["k"])
        problem = SdcaProblem(y_enc.astype(np.int64), c, dual_coef=self._warm_dual(Xv.shape[0], classes, c))
        if self.kernel != "linear":
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
        """Compute the class scores f(x) = Wᵀx + b of each sample.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples (for ``kernel="precomputed"``, their kernel with the training
            samples, shape (n_samples, n_train)); a
            :class:`~toprank.pq.CompressedMatrix` with the linear kernel.

        Returns
        -------
        ndarray of shape (n_samples, n_classes) or (n_samples,)
            Scores, columns in the order of ``classes_``; for two classes, the score
            of ``classes_[1]`` minus that of ``classes_[0]``, shape (n_samples,).
        """
        scores = self._scores(X)
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def _has_proba(self) -> bool:
        # predict_proba and predict_log_proba exist for the losses that model probabilities.
        return self.loss in ("softmax", "entropy")
