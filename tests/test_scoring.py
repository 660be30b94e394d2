"""toprank.scoring: top-k scorers in GridSearchCV / cross_val_score, and top-k predictions
from a fitted Pipeline (issue 36, acceptance 1's workflow)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.metrics import top_k_accuracy_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

import toprank
from toprank import metrics, scoring


def _classes(n: int = 600, d: int = 12, m: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(m, d))
    y = rng.integers(0, m, n)
    return 3.0 * (0.6 * centres[y] + rng.standard_normal((n, d))) + 5.0, y


def test_grid_search_over_a_pipeline_with_a_top5_scorer() -> None:
    X, y = _classes()
    pipe = Pipeline([("scale", StandardScaler()), ("svc", toprank.TopKSVC(random_state=0))])
    grid = {"svc__C": [0.1, 1.0], "svc__k": [1, 5]}
    search = GridSearchCV(pipe, grid, scoring=scoring.top_k_accuracy_scorer(5), cv=KFold(3), n_jobs=2)
    search.fit(X, y)
    assert set(search.best_params_) == {"svc__C", "svc__k"}
    # The scorer's value is scikit-learn's top-5 accuracy of the pipeline's scores.
    best = search.best_estimator_
    expected = top_k_accuracy_score(y, best.decision_function(X), k=5, labels=best.classes_)
    assert scoring.top_k_accuracy_scorer(5)(best, X, y) == pytest.approx(expected, abs=0)
    # ... and the search's mean is that of the folds, each recomputed here.
    folds = []
    for train, test in KFold(3).split(X):
        model = pipe.set_params(**search.best_params_).fit(X[train], y[train])
        folds.append(top_k_accuracy_score(y[test], model.decision_function(X[test]), k=5, labels=model.classes_))
    assert search.best_score_ == pytest.approx(np.mean(folds), abs=1e-12)


def test_cross_val_score_with_ap_at_10_for_the_ranker() -> None:
    rng = np.random.default_rng(1)
    n, d, L = 300, 20, 40
    X = rng.standard_normal((n, d))
    Y = (X @ rng.standard_normal((d, L)) + rng.standard_normal((n, L)) > 2.0).astype(np.float64)
    Y[np.arange(n), rng.integers(0, L, n)] = 1.0  # every row has a positive
    ranker = toprank.RankmaxRanker(n_components=8, n_epochs=3, early_stopping=False, eval_k=10, random_state=0)
    values = cross_val_score(ranker, X, Y, scoring=scoring.ranking_scorer("average_precision_at_k", 10), cv=KFold(3))
    assert values.shape == (3,) and np.all((values > 0) & (values <= 1))
    fitted = ranker.fit(X, Y)
    # The AP@10 scorer is the ranker's own score() (AP@eval_k).
    assert scoring.ranking_scorer("average_precision_at_k", 10)(fitted, X, Y) == pytest.approx(
        fitted.score(X, Y), abs=1e-12
    )


def test_ranking_scorers_match_the_metrics() -> None:
    rng = np.random.default_rng(2)
    Y = (rng.random((50, 15)) < 0.3).astype(int)
    Y[:, 0] = 1

    class Fixed:
        def decision_function(self, X: np.ndarray) -> np.ndarray:
            return X

    S = rng.standard_normal((50, 15))
    for name in ("precision_at_k", "recall_at_k", "average_precision_at_k"):
        assert scoring.ranking_scorer(name, 4)(Fixed(), S, Y) == getattr(metrics, name)(Y, S, 4)
    with pytest.raises(toprank.InvalidInputError, match="metric: must be a ranking metric, got 'top_k_accuracy'"):
        scoring.ranking_scorer("top_k_accuracy", 4)  # type: ignore[arg-type]


def test_predict_topk_through_a_pipeline() -> None:
    X, y = _classes()
    pipe = make_pipeline(StandardScaler(), toprank.TopKSVC(k=3, random_state=0)).fit(X, y)
    svc = pipe[-1]
    direct = svc.predict_topk(pipe[0].transform(X))
    assert np.array_equal(scoring.predict_topk(pipe, X), direct)
    assert np.array_equal(scoring.predict_topk(pipe, X, k=2), direct[:, :2])
    assert np.array_equal(scoring.predict_topk(svc, pipe[0].transform(X)), direct)
    with pytest.raises(toprank.InvalidInputError, match="model: StandardScaler has no predict_topk"):
        scoring.predict_topk(make_pipeline(StandardScaler()).fit(X), X)


def test_scorers_pickle_and_refuse_bad_settings() -> None:
    scorer = scoring.top_k_accuracy_scorer(3)
    again = pickle.loads(pickle.dumps(scorer))
    assert repr(again) == "TopKScorer(metric='top_k_accuracy', k=3)"
    with pytest.raises(toprank.InvalidInputError, match="k: "):
        scoring.top_k_accuracy_scorer(0)
    with pytest.raises(toprank.InvalidInputError, match="metric: unknown metric 'ndcg'"):
        scoring.TopKScorer("ndcg", 3)  # type: ignore[arg-type]
    with pytest.raises(toprank.InvalidInputError, match="estimator: object has neither"):
        scorer(object(), np.zeros((2, 2)), np.array([0, 1]))
