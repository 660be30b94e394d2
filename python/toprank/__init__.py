"""toprank: learning when only the top of a ranking matters.

A Rust core with a typed Python facade:

* :mod:`toprank.projections` — exact projections onto the simplex, the top-k cone and
  simplex, the box simplex, the (n,k)-simplex (Euclidean and entropic), sparsemax,
  Rankmax, and the continuous quadratic knapsack;
* :mod:`toprank.losses` — Rankmax, softmax and sparsemax cross-entropies with
  gradients, and the top-k hinge losses;
* :mod:`toprank.svm` — :class:`TopKSVC`, the top-k multiclass SVM (and top-k entropy /
  softmax classifiers) trained by Prox-SDCA;
* :mod:`toprank.attop` — :class:`TopPush`, :class:`TopPushK` and :class:`PatMat`,
  kernel classifiers for ranking at the top, trained in the dual;
* :mod:`toprank.m3l` — :class:`M3L`, max-margin multi-label classification with a
  label-correlation prior (kernel SMO with a shared kernel cache);
* :mod:`toprank.multilabel` — :class:`MultiLabelSVC`, the multi-label hinge and softmax
  losses (label rankings) trained by TopKSVC's Prox-SDCA;
* :mod:`toprank.tracenorm` — :class:`TraceNormLogisticRegression`, multinomial logistic
  regression with a trace-norm penalty (low-rank W) by rank-one descent, on raw, sparse
  or product-quantized features, and :func:`tracenorm_path`;
* :mod:`toprank.pq` — product quantization (:class:`~toprank.pq.ProductQuantizer`) and
  products with the decoded matrix computed from the codes
  (:class:`~toprank.pq.CompressedMatrix`);
* :mod:`toprank.ranker` — :class:`RankmaxRanker`, a factorised label ranker (e.g. a
  recommender) trained with the Rankmax, softmax or sparsemax cross-entropy;
* :mod:`toprank.recsys` — the implicit-feedback protocol of the Rankmax paper (split,
  AP@k / accuracy / Recall@k with training items excluded);
* :mod:`toprank.metrics` — top-k accuracy, precision/recall/AP at k, precision at a
  recall level, the precision-recall curve, Hamming loss, rank loss;
* :mod:`toprank.scoring` — those metrics as ``scoring=`` scorers for ``GridSearchCV`` /
  ``cross_val_score``, and top-k predictions from a fitted pipeline;
* :mod:`toprank.plotting` — PR curves and score densities (matplotlib, imported on use);
* :mod:`toprank.distributed` — the linear TopKSVC and M3L fitted by
  CoCoA+ on data held by Dask workers;
* :mod:`toprank.datasets` — loaders of the offline data sets of the experiments;
* :mod:`toprank.exceptions` — :class:`InvalidInputError` (every bad input, naming the
  argument), :class:`InfeasibleError`, :class:`NoSolutionError` and
  :class:`InternalError`.

The estimators fitted by a dual solver (TopKSVC, MultiLabelSVC, M3L, TopPush, TopPushK,
PatMat) report the same way: ``status_`` (``"converged"``, ``"max_iter"``,
``"no_progress"`` or ``"interrupted"``), ``n_iter_``, the objectives and ``history_``, a list of
:class:`FitProgress` records (n_iter, primal, dual, gap, seconds); RankmaxRanker's
``history_`` holds :class:`RankerProgress` records (n_iter, loss, the validation
metrics, seconds), TraceNormLogisticRegression's :class:`TraceNormProgress` records
(n_iter, objective, σ_max(−∇), rank, seconds).

References
----------
- M. Lapin, M. Hein, B. Schiele. Top-k Multiclass SVM. NIPS 2015; and Analysis and
  optimization of loss functions for multiclass, top-k, and multilabel classification.
  IEEE TPAMI 2018.
- V. Mácha, L. Adam, V. Šmídl. Nonlinear classifiers for ranking problems based on
  kernelized SVM. 2020.
- B. Hariharan, S. V. N. Vishwanathan, M. Varma. Efficient max-margin multi-label
  classification with applications to zero-shot learning. Machine Learning 2012.
- Z. Harchaoui, M. Douze, M. Paulin, M. Dudik, J. Malick. Large-scale image
  classification with trace-norm regularization. CVPR 2012.
- W. Kong, W. Krichene, N. Mayoraz, S. Rendle, L. Zhang. Rankmax: an adaptive
  projection alternative to the softmax function. NeurIPS 2020.
- S. Shalev-Shwartz, T. Zhang. Accelerated proximal stochastic dual coordinate
  ascent for regularized loss minimization. Math. Programming 2016.
- C. Ma, V. Smith, M. Jaggi, M. I. Jordan, P. Richtárik, M. Takáč. Adding vs.
  averaging in distributed primal-dual optimization. ICML 2015.

Examples
--------
>>> from sklearn.datasets import load_iris
>>> import toprank
>>> X, y = load_iris(return_X_y=True)
>>> model = toprank.TopKSVC(k=2, random_state=0).fit(X / 10, y)
>>> model.predict_topk(X[:1] / 10)  # the two best classes of the first flower
array([[0, 1]])
"""

from toprank import (
    attop,
    exceptions,
    losses,
    m3l,
    metrics,
    multilabel,
    plotting,
    pq,
    projections,
    ranker,
    recsys,
    scoring,
    svm,
    tracenorm,
)
from toprank._core import __version__
from toprank._estimator import FitProgress, RankerProgress, TraceNormProgress
from toprank.attop import PatMat, TopPush, TopPushK
from toprank.exceptions import InfeasibleError, InternalError, InvalidInputError, NoSolutionError
from toprank.m3l import M3L
from toprank.multilabel import MultiLabelSVC
from toprank.ranker import RankmaxRanker
from toprank.svm import TopKSVC
from toprank.tracenorm import TraceNormLogisticRegression, tracenorm_path

__all__ = [
    "__version__",
    "exceptions",
    "FitProgress",
    "RankerProgress",
    "TraceNormProgress",
    "losses",
    "metrics",
    "scoring",
    "plotting",
    "pq",
    "projections",
    "svm",
    "attop",
    "m3l",
    "M3L",
    "multilabel",
    "MultiLabelSVC",
    "ranker",
    "recsys",
    "RankmaxRanker",
    "TopKSVC",
    "tracenorm",
    "TraceNormLogisticRegression",
    "tracenorm_path",
    "TopPush",
    "TopPushK",
    "PatMat",
    "InvalidInputError",
    "InfeasibleError",
    "NoSolutionError",
    "InternalError",
]
