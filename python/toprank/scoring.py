"""Top-k in the scikit-learn workflow: scorers for ``scoring=`` and top-k predictions
from a fitted :class:`~sklearn.pipeline.Pipeline`.

scikit-learn's ``scoring=`` takes any callable ``scorer(estimator, X, y) -> float``
(greater is better). The scorers here compute a :mod:`toprank.metrics` metric on the
estimator's ``decision_function`` (its ``predict_proba`` where it has no decision
function), so they work on toprank's estimators, on pipelines ending in one, and on any
scikit-learn classifier with those methods::

    from sklearn.model_selection import GridSearchCV
    search = GridSearchCV(pipeline, grid, scoring=toprank.scoring.top_k_accuracy_scorer(5))

* :func:`top_k_accuracy_scorer` — multiclass top-k accuracy, with the estimator's
  ``classes_`` naming the score columns;
* :func:`ranking_scorer` — precision, recall or AP at k of multi-label rankings (``y`` an
  (n, L) indicator matrix), e.g. AP@10 for :class:`~toprank.RankmaxRanker`;
* :func:`predict_topk` — the k best classes of a fitted estimator *or pipeline* (a
  ``Pipeline`` forwards only scikit-learn's own methods, so ``pipe.predict_topk`` does not
  exist).

The scorers are small picklable objects, so ``GridSearchCV(n_jobs=...)`` can ship them
to its workers.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from toprank import metrics
from toprank._docs import fill_doc
from toprank._validation import bounded_int
from toprank.exceptions import InvalidInputError

__all__ = [
    "TopKScorer",
    "top_k_accuracy_scorer",
    "ranking_scorer",
    "predict_topk",
]

RankingMetric = Literal["precision_at_k", "recall_at_k", "average_precision_at_k"]
Metric = Literal["top_k_accuracy", "precision_at_k", "recall_at_k", "average_precision_at_k"]


def _responses(estimator: Any, X: ArrayLike) -> NDArray[Any]:
    """The estimator's scores for ranking: ``decision_function``, else ``predict_proba``."""
    for method in ("decision_function", "predict_proba"):
        if hasattr(estimator, method):
            return np.asarray(getattr(estimator, method)(X))
    raise InvalidInputError(
        f"estimator: {type(estimator).__name__} has neither decision_function nor predict_proba to rank with"
    )


@fill_doc
class TopKScorer:
    """A ``scoring=`` callable: ``metric`` at ``k`` of an estimator's scores.

    Calling it as ``scorer(estimator, X, y)`` returns the metric (greater is better) of
    ``y`` against ``estimator.decision_function(X)`` (or ``predict_proba`` where there is
    no decision function); for top-k accuracy the score columns are named by
    ``estimator.classes_``. Instances are small and picklable, so
    ``GridSearchCV(n_jobs=...)`` can ship them to its workers. Usually made by
    :func:`top_k_accuracy_scorer` or :func:`ranking_scorer`.

    Parameters
    ----------
    metric : {"top_k_accuracy", "precision_at_k", "recall_at_k", "average_precision_at_k"}
        The :mod:`toprank.metrics` function to compute.
    k : int
        How many of the top-ranked classes or labels count, ``>= 1``.

    Attributes
    ----------
    metric : str
        As given.
    k : int
        As given.

    Raises
    ------
    InvalidInputError
        An unknown ``metric``; ``k`` not an integer ``>= 1``.

    See Also
    --------
    top_k_accuracy_scorer, ranking_scorer : The usual ways to make one.
    toprank.metrics.top_k_accuracy : The multiclass metric.

    Examples
    --------
    >>> from toprank.scoring import TopKScorer
    %(iris_pipeline_example)s
    >>> model = make_pipeline(StandardScaler(), TopKSVC(k=1, random_state=0)).fit(X, y)
    >>> scorer = TopKScorer("top_k_accuracy", k=2)
    >>> scorer
    TopKScorer(metric='top_k_accuracy', k=2)
    >>> scorer(model, X, y)
    1.0
    """

    def __init__(self, metric: Metric, k: int) -> None:
        if metric not in ("top_k_accuracy", "precision_at_k", "recall_at_k", "average_precision_at_k"):
            raise InvalidInputError(f"metric: unknown metric {metric!r}")
        self.metric = metric
        self.k = bounded_int(k, "k", low=1)

    def __call__(self, estimator: Any, X: ArrayLike, y: Any) -> float:
        """The metric of ``y`` against the estimator's scores on ``X``.

        Parameters
        ----------
        estimator : object
            A fitted estimator (or pipeline) with ``decision_function`` or
            ``predict_proba``.
        X : array_like or sparse matrix of shape (n_samples, n_features)
            The samples to score.
        y : array_like
            Their labels (top-k accuracy) or an (n_samples, L) indicator matrix / list of
            label sets (the ranking metrics).

        Returns
        -------
        float
            The metric, greater is better.

        Raises
        ------
        InvalidInputError
            The estimator has neither method, or the metric refuses ``y`` and the scores.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from sklearn.naive_bayes import GaussianNB
        >>> from toprank.scoring import TopKScorer
        >>> X, y = load_iris(return_X_y=True)
        >>> model = GaussianNB().fit(X, y)  # any classifier: this one ranks by predict_proba
        >>> TopKScorer("top_k_accuracy", k=2)(model, X, y)
        1.0
        """
        scores = _responses(estimator, X)
        if self.metric == "top_k_accuracy":
            return metrics.top_k_accuracy(y, scores, self.k, labels=getattr(estimator, "classes_", None))
        function = getattr(metrics, self.metric)
        return float(function(y, scores, self.k))

    def __repr__(self) -> str:
        return f"TopKScorer(metric={self.metric!r}, k={self.k})"


def top_k_accuracy_scorer(k: int = 5) -> TopKScorer:
    """Scorer of multiclass top-k accuracy (:func:`toprank.metrics.top_k_accuracy`).

    Parameters
    ----------
    k : int, default 5
        A sample counts as correct when its class is among its k highest scores.

    Returns
    -------
    TopKScorer
        Usable as ``scoring=`` in ``cross_val_score``, ``GridSearchCV`` and friends.

    Raises
    ------
    InvalidInputError
        ``k`` not an integer ``>= 1``.

    See Also
    --------
    ranking_scorer : The multi-label ranking metrics.
    toprank.metrics.top_k_accuracy : The metric.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.model_selection import cross_val_score
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from toprank import TopKSVC
    >>> from toprank.scoring import top_k_accuracy_scorer
    >>> X, y = load_iris(return_X_y=True)
    >>> model = make_pipeline(StandardScaler(), TopKSVC(k=1, random_state=0))
    >>> np.round(cross_val_score(model, X, y, cv=3, scoring=top_k_accuracy_scorer(1)), 2)
    array([1.  , 0.98, 0.96])
    """
    return TopKScorer("top_k_accuracy", k)


def ranking_scorer(metric: RankingMetric = "average_precision_at_k", k: int = 10) -> TopKScorer:
    """Scorer of a multi-label ranking metric at k.

    One of :func:`toprank.metrics.precision_at_k`, :func:`~toprank.metrics.recall_at_k`
    or :func:`~toprank.metrics.average_precision_at_k` (AP@k, the metric of
    :meth:`toprank.RankmaxRanker.score` and of recommendation papers).

    Parameters
    ----------
    metric : {"precision_at_k", "recall_at_k", "average_precision_at_k"}, default "average_precision_at_k"
        The metric.
    k : int, default 10
        How many top-ranked labels per sample are judged.

    Returns
    -------
    TopKScorer
        Usable as ``scoring=``; ``y`` is an (n, L) indicator matrix.

    Raises
    ------
    InvalidInputError
        ``metric`` not one of the three; ``k`` not an integer ``>= 1``.

    See Also
    --------
    top_k_accuracy_scorer : The multiclass metric.

    Examples
    --------
    >>> import numpy as np
    >>> from toprank import MultiLabelSVC
    >>> from toprank.scoring import ranking_scorer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 10))
    >>> S = X @ rng.normal(size=(10, 6))
    >>> Y = (S >= np.sort(S, axis=1)[:, [-2]]).astype(int)  # each row's 2 best of 6 labels
    >>> model = MultiLabelSVC(random_state=0).fit(X, Y)
    >>> ranking_scorer("precision_at_k", k=2)(model, X, Y)
    0.98
    """
    if metric not in ("precision_at_k", "recall_at_k", "average_precision_at_k"):
        raise InvalidInputError(f"metric: must be a ranking metric, got {metric!r}")
    return TopKScorer(metric, k)


@fill_doc
def predict_topk(model: Any, X: ArrayLike, k: int | None = None) -> NDArray[Any]:
    """The k highest-scoring classes per sample of a fitted estimator or pipeline.

    A ``Pipeline`` forwards only scikit-learn's own methods, so ``pipe.predict_topk``
    does not exist: this function applies the pipeline's transforms and calls its final
    step's ``predict_topk``.

    Parameters
    ----------
    model : estimator or sklearn.pipeline.Pipeline
        Fitted. A pipeline's steps before the last transform ``X``; its last step must
        have ``predict_topk`` (every toprank classifier does).
    X : array-like of shape (n_samples, n_features)
        Samples.
    k : int, optional
        Passed to the final estimator's ``predict_topk`` (which defaults to its own k).

    Returns
    -------
    ndarray of shape (n_samples, k)
        Class labels, best first.

    Raises
    ------
    InvalidInputError
        The final step has no ``predict_topk``; or the estimator's own errors (``k``
        out of range, ``X`` of the wrong width).

    See Also
    --------
    toprank.svm.TopKSVC.predict_topk : The method this calls (for TopKSVC).

    Examples
    --------
    >>> from toprank.scoring import predict_topk
    %(iris_pipeline_example)s
    >>> pipe = make_pipeline(StandardScaler(), TopKSVC(k=2, random_state=0)).fit(X, y)
    >>> predict_topk(pipe, X[[0, 100]], k=2)
    array([[0, 1],
           [2, 1]])
    """
    final = model
    steps = getattr(model, "steps", None)
    if steps is not None:
        for _, transform in steps[:-1]:
            if transform is not None and transform != "passthrough":
                X = transform.transform(X)
        final = steps[-1][1]
    if not hasattr(final, "predict_topk"):
        raise InvalidInputError(f"model: {type(final).__name__} has no predict_topk")
    return np.asarray(final.predict_topk(X) if k is None else final.predict_topk(X, k))
