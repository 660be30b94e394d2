"""RankmaxRanker and the ranker core: gradients, determinism, recovery, contract, bad input."""

from __future__ import annotations

import pickle
import time
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from _interrupt import interrupt_during
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer
from sklearn.utils.estimator_checks import parametrize_with_checks

from toprank import RankerProgress, RankmaxRanker, _core
from toprank._options import RankerSettings
from toprank.exceptions import InvalidInputError, NoSolutionError
from toprank.metrics import average_precision_at_k
from toprank.ranker import _LabelSets, _Training

LOSSES = [("rankmax", 1, 1.0), ("rankmax", 3, 0.5), ("softmax", 1, 1.0), ("sparsemax", 1, 1.0)]


def _labels(rng, n_rows, n_labels, most=3, empty_row=2):
    indptr, indices = [0], []
    for i in range(n_rows):
        count = 0 if i == empty_row else int(rng.integers(1, most + 1))
        indices.extend(sorted(rng.choice(n_labels, size=count, replace=False).tolist()))
        indptr.append(len(indices))
    return np.asarray(indptr, np.int64), np.asarray(indices, np.int64)


def _objective(X, indptr, indices, theta, n_labels, r, loss, k, eta, alpha, n_jobs=None):
    rows = np.arange(X.shape[0], dtype=np.int64)
    settings = RankerSettings(n_labels=n_labels, n_components=r, loss=loss, k=k, eta=eta, alpha=alpha, batch_size=4)
    return _core.RankerProblem(X, _LabelSets(indptr, indices), rows, settings).objective(theta, n_jobs=n_jobs)


# ------------------------------------------------------------------ 1. gradients


@pytest.mark.parametrize("loss,k,eta", LOSSES)
@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_gradient_of_the_full_objective_matches_finite_differences(loss, k, eta, layout):
    rng = np.random.default_rng(1)
    n_rows, d, n_labels, r = 9, 6, 8, 3
    X = rng.normal(size=(n_rows, d)) * (rng.random((n_rows, d)) < 0.6)
    X = sp.csr_matrix(X) if layout == "csr" else X
    indptr, indices = _labels(rng, n_rows, n_labels)
    theta = rng.normal(scale=0.7, size=(d + n_labels) * r + n_labels)
    value, grad = _objective(X, indptr, indices, theta, n_labels, r, loss, k, eta, alpha=0.05)
    h = 1e-6
    fd = np.empty_like(theta)
    for i in range(theta.size):
        step = np.zeros_like(theta)
        step[i] = h
        fp = _objective(X, indptr, indices, theta + step, n_labels, r, loss, k, eta, 0.05)[0]
        fm = _objective(X, indptr, indices, theta - step, n_labels, r, loss, k, eta, 0.05)[0]
        fd[i] = (fp - fm) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
    assert value > 0


def test_objective_is_the_mean_pair_loss_plus_the_penalty():
    # Independent evaluation in NumPy: scores, per-pair softmax cross-entropy, penalty.
    rng = np.random.default_rng(2)
    n_rows, d, n_labels, r = 7, 4, 6, 2
    X = rng.normal(size=(n_rows, d))
    indptr, indices = _labels(rng, n_rows, n_labels)
    theta = rng.normal(size=(d + n_labels) * r + n_labels)
    U = theta[: d * r].reshape(d, r)
    V = theta[d * r : (d + n_labels) * r].reshape(n_labels, r)
    b = theta[(d + n_labels) * r :]
    Z = X @ U @ V.T + b
    lse = np.log(np.exp(Z - Z.max(1, keepdims=True)).sum(1)) + Z.max(1)
    pairs = [(i, y) for i in range(n_rows) for y in indices[indptr[i] : indptr[i + 1]]]
    want = np.mean([lse[i] - Z[i, y] for i, y in pairs]) + 0.5 * 0.1 * (np.sum(U**2) + np.sum(V**2))
    got, _ = _objective(X, indptr, indices, theta, n_labels, r, "softmax", 1, 1.0, alpha=0.1)
    assert got == pytest.approx(want, rel=1e-12)


# ------------------------------------------------------------------ 2. determinism


def _planted(n_users=300, n_items=200, rank=4, per_user=10, seed=0):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(n_users, rank)) @ rng.normal(size=(n_items, rank)).T
    top = np.argsort(-scores, axis=1)[:, :per_user]
    Y = np.zeros((n_users, n_items), dtype=np.int8)
    np.put_along_axis(Y, top, 1, axis=1)
    return sp.identity(n_users, format="csr", dtype=np.float32), Y, scores


@pytest.mark.parametrize("loss", ["rankmax", "softmax", "sparsemax"])
def test_one_and_two_threads_reach_the_same_model(loss):
    X, Y, _ = _planted()
    fits = [
        RankmaxRanker(n_components=8, loss=loss, n_epochs=3, early_stopping=False, random_state=3, n_jobs=jobs).fit(
            X, Y
        )
        for jobs in (1, 2)
    ]
    assert [h.loss for h in fits[0].history_] == [h.loss for h in fits[1].history_]
    np.testing.assert_array_equal(fits[0].label_factors_, fits[1].label_factors_)
    np.testing.assert_array_equal(fits[0].feature_factors_, fits[1].feature_factors_)


def test_random_state_reproduces_and_changes_the_run():
    X, Y, _ = _planted()
    a = RankmaxRanker(n_components=8, n_epochs=2, random_state=0).fit(X, Y)
    b = RankmaxRanker(n_components=8, n_epochs=2, random_state=0).fit(X, Y)
    c = RankmaxRanker(n_components=8, n_epochs=2, random_state=1).fit(X, Y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert not np.array_equal(a.decision_function(X), c.decision_function(X))


# ------------------------------------------------------------------ 3. learning


@pytest.mark.parametrize("loss,optimizer", [("rankmax", "adagrad"), ("softmax", "adam"), ("sparsemax", "adagrad")])
def test_planted_low_rank_ranking_is_recovered(loss, optimizer):
    X, Y, _ = _planted()
    lr = 0.1 if optimizer == "adagrad" else 0.02
    model = RankmaxRanker(
        n_components=16,
        loss=loss,
        optimizer=optimizer,
        learning_rate=lr,
        alpha=0.0,
        batch_size=32,
        n_epochs=60,
        early_stopping=False,
        random_state=0,
    ).fit(X, Y)
    assert model.score(X, Y) >= 0.9
    # (Not toward 0: with 10 positives per row, sparsemax's best is p = 1/10 on each,
    # a pair loss of ½ − ½·‖p‖² = 0.45.)
    losses = [h.loss for h in model.history_]
    assert losses[-1] < losses[0]


def test_early_stopping_keeps_the_best_epoch():
    X, Y, _ = _planted()
    model = RankmaxRanker(n_components=8, learning_rate=0.5, n_epochs=40, n_iter_no_change=2, random_state=0)
    model.fit(X, Y)
    scores = [h.val_ap for h in model.history_]
    assert model.best_epoch_ == 1 + int(np.argmax(scores))
    assert model.n_iter_ <= 40 and model.n_iter_ - model.best_epoch_ <= 2


def test_held_out_pairs_keep_every_user_in_training():
    # One-hot users: holding out whole users would leave their factors untrained; the
    # default split holds out pairs, so validation AP rises well above a random ranking.
    X, Y, _ = _planted()
    model = RankmaxRanker(
        n_components=16, learning_rate=0.1, batch_size=32, n_epochs=30, n_iter_no_change=5, alpha=0.0, random_state=0
    ).fit(X, Y)
    assert max(h.val_ap for h in model.history_) > 0.5


def test_a_diverging_or_failed_fit_leaves_the_estimator_as_it_was():
    from sklearn.exceptions import NotFittedError

    from toprank.exceptions import NoSolutionError

    X, Y, _ = _planted(n_users=60, n_items=30)
    model = RankmaxRanker(n_components=4, learning_rate=1e30, optimizer="adam", early_stopping=False, random_state=0)
    with pytest.raises(NoSolutionError, match="learning_rate"):
        model.fit(X * 1e15, Y)  # 1e20 is refused up front: its squares overflow float32
    with pytest.raises(NotFittedError):
        model.decision_function(X)
    model.set_params(learning_rate=0.1).fit(X, Y)
    before = model.decision_function(X)
    with pytest.raises(InvalidInputError):
        model.fit(X[:, :5], Y[:10])
    # The previous model, whole (as every estimator of the package keeps it).
    assert model.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(model.decision_function(X), before)


def test_validation_data_with_exclusion_is_used():
    X, Y, _ = _planted()
    train = Y.copy()
    train[:, ::2] = 0
    valid = Y - train
    model = RankmaxRanker(n_components=8, n_epochs=3, random_state=0)
    model.fit(X, train, validation_data=(X, valid, train))
    assert len(model.history_) == 3 and all(h.val_ap is not None for h in model.history_)
    # The recorded score of the kept epoch is AP@10 of the validation items with the
    # training items excluded.
    scores = model.decision_function(X).astype(np.float64)
    scores[train.astype(bool)] = -np.inf
    has = valid.sum(1) > 0
    best = max(h.val_ap for h in model.history_)
    assert best == pytest.approx(average_precision_at_k(valid[has], np.nan_to_num(scores[has], neginf=-1e30), 10))


def test_recommend_excludes_and_orders():
    X, Y, _ = _planted(n_users=50, n_items=40)
    model = RankmaxRanker(n_components=4, n_epochs=2, early_stopping=False, random_state=0).fit(X, Y)
    scores = model.decision_function(X)
    top = model.recommend(X, n=5)
    np.testing.assert_array_equal(top, np.argsort(-scores, axis=1, kind="stable")[:, :5])
    seen = [set(np.flatnonzero(row)) for row in Y]
    top = model.recommend(X, n=5, exclude=seen)
    assert all(not (set(row) & s) for row, s in zip(top, seen))
    masked = np.where(Y.astype(bool), -np.inf, scores)
    np.testing.assert_array_equal(top, np.argsort(-masked, axis=1, kind="stable")[:, :5])


def test_label_sets_name_the_labels():
    X = np.eye(6, dtype=np.float64)
    Y = [{"a", "b"}, {"b"}, {"c"}, {"a"}, {"c", "d"}, {"d"}]
    model = RankmaxRanker(n_components=2, n_epochs=2, early_stopping=False, random_state=0).fit(X, Y)
    assert list(model.classes_) == ["a", "b", "c", "d"]
    assert set(model.recommend(X, n=2).ravel()) <= {"a", "b", "c", "d"}
    assert 0.0 <= model.score(X, Y) <= 1.0


def test_numeric_labels_are_sorted_by_value_and_mixed_or_nan_labels_are_refused():
    X = np.eye(6, dtype=np.float64)
    model = RankmaxRanker(n_components=2, n_epochs=1, early_stopping=False, random_state=0)
    # int, float and NumPy integer labels are one kind: ordered by value, not by type.
    assert model.fit(X, [2.5, 1, np.int64(3), 1, 2.5, 3]).classes_.tolist() == [1.0, 2.5, 3.0]
    assert set(model.recommend(X, n=1).ravel()) <= {1.0, 2.5, 3.0}
    with pytest.raises(InvalidInputError, match="Y: labels must be all strings or all real numbers"):
        model.fit(X, [1, "a", 1, "a", 1, "a"])
    with pytest.raises(InvalidInputError, match="Y: labels must be finite"):
        model.fit(X, [1.0, np.nan, 1.0, 2.0, 1.0, 2.0])


def test_verbose_prints_a_line_per_epoch(capsys):
    X, Y, _ = _planted(n_users=60, n_items=30)
    # verbose=2: every epoch's line (verbose=1 paces them: tests/test_verbose.py).
    model = RankmaxRanker(n_components=4, n_epochs=3, verbose=2, random_state=0).fit(X, Y)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("[RankmaxRanker] epoch")]
    assert len(lines) == 3 and "val AP@10" in lines[0]
    assert lines[-1].endswith(f"done: best epoch {model.best_epoch_}")


def test_ctrl_c_stops_a_long_epoch():
    n_users, n_items = 3000, 20000
    X = sp.identity(n_users, format="csr", dtype=np.float32)
    Y = sp.random(n_users, n_items, density=0.005, format="csr", random_state=0, data_rvs=np.ones)
    # An epoch budget for ~4 s uninterrupted: a fit that ignores Ctrl-C fails the test
    # instead of running for minutes.
    started = time.perf_counter()
    RankmaxRanker(n_components=64, n_epochs=1, early_stopping=False, random_state=0).fit(X, Y)
    per_epoch = time.perf_counter() - started
    model = RankmaxRanker(n_components=64, n_epochs=int(4.0 / per_epoch) + 2, early_stopping=False, random_state=0)
    interrupt_during(lambda: model.fit(X, Y))


# ------------------------------------------------------------------ 4. contract and bad input


def test_pickle_clone_pipeline_and_grid_search():
    X, Y, _ = _planted(n_users=80, n_items=30)
    model = RankmaxRanker(n_components=4, n_epochs=2, early_stopping=False, random_state=0).fit(X, Y)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))
    assert clone(model).get_params() == model.get_params()
    pipe = make_pipeline(Normalizer(), RankmaxRanker(n_components=4, n_epochs=2, early_stopping=False, random_state=0))
    pipe.fit(X, Y)
    assert pipe.decision_function(X).shape == (80, 30)
    search = GridSearchCV(
        RankmaxRanker(n_components=4, n_epochs=2, early_stopping=False, random_state=0),
        {"learning_rate": [0.01, 0.1]},
        cv=2,
    ).fit(X.toarray(), Y)
    assert search.best_params_["learning_rate"] in (0.01, 0.1)


@pytest.mark.parametrize(
    "change,name",
    [
        (dict(loss="hinge"), "loss"),
        (dict(k=0), "k"),
        (dict(k=30), "k"),
        (dict(eta=0.0), "eta"),
        (dict(alpha=-1.0), "alpha"),
        (dict(learning_rate=float("nan")), "learning_rate"),
        (dict(optimizer="sgd"), "optimizer"),
        (dict(batch_size=0), "batch_size"),
        (dict(n_components=0), "n_components"),
        (dict(n_epochs=1.5), "n_epochs"),
        (dict(validation_fraction=1.0), "validation_fraction"),
        (dict(n_jobs=0), "n_jobs"),
    ],
)
def test_bad_parameters_name_themselves(change, name):
    X, Y, _ = _planted(n_users=40, n_items=30)
    with pytest.raises(InvalidInputError, match=f"^{name}"):
        RankmaxRanker(**change).fit(X, Y)


def test_bad_data_names_the_argument():
    X, Y, _ = _planted(n_users=40, n_items=30)
    est = RankmaxRanker(n_components=2, n_epochs=1, early_stopping=False)
    bad = X.toarray()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(bad, Y)
    with pytest.raises(InvalidInputError, match="^Y"):
        est.fit(X, Y[:10])
    with pytest.raises(InvalidInputError, match="^Y"):
        est.fit(X, Y * 2)
    with pytest.raises(InvalidInputError, match="^Y"):
        est.fit(X, np.zeros_like(Y))
    with pytest.raises(InvalidInputError, match="^Y"):
        est.fit(X, np.zeros(40, dtype=int))  # one class
    with pytest.raises(InvalidInputError, match="^Y"):
        est.fit(X, None)
    with pytest.raises(InvalidInputError, match="^validation_fraction"):
        RankmaxRanker(n_epochs=1).fit(X[:5], np.array([0, 1, 0, 1, 0]))  # 5 pairs: none held out
    fitted = est.fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        fitted.decision_function(np.ones((3, 7)))
    with pytest.raises(InvalidInputError, match="^exclude"):
        fitted.recommend(X, n=3, exclude=Y[:5])
    with pytest.raises(InvalidInputError, match="^n"):
        fitted.recommend(X, n=31)
    with pytest.raises(InvalidInputError, match="^Y"):
        fitted.score(X, [{"unknown"}] * 40)


@pytest.mark.parametrize("scale", [1e300, 1e20])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_an_x_too_large_for_the_float32_model_is_named(scale, sparse):
    # It used to surface as "the scores diverged: lower learning_rate" (or a panic in
    # Rankmax's sweep on infinite scores), blaming the step size for the data's scale.
    X, Y, _ = _planted(n_users=40, n_items=30)
    X = X.astype(np.float64) * scale if sparse else X.toarray().astype(np.float64) * scale
    for loss in ("rankmax", "softmax"):
        with pytest.raises(InvalidInputError, match=r"^X: the squared norm of row 0 .* overflows float32 .*rescale X"):
            RankmaxRanker(loss=loss, n_components=2, n_epochs=1, early_stopping=False, random_state=0).fit(X, Y)


def test_n_components_beyond_memory_names_the_bytes():
    X, Y, _ = _planted(n_users=40, n_items=30)
    model = RankmaxRanker(n_components=2**31, n_epochs=1, early_stopping=False, random_state=0)
    with pytest.raises(
        InvalidInputError, match=r"^n_components: 2147483648 needs .*iB \(\d+ bytes\) for the parameters"
    ):
        model.fit(X, Y)


def test_the_core_rejects_inconsistent_arrays():
    X = np.eye(4)
    indptr, indices = np.array([0, 1, 2, 3, 4], np.int64), np.array([0, 1, 2, 3], np.int64)
    theta = np.zeros((4 + 4) * 2 + 4)
    rows = np.arange(4, dtype=np.int64)
    settings = RankerSettings(n_labels=4, n_components=2, loss="rankmax", k=1, eta=1.0, alpha=0.0)
    sets = _LabelSets(indptr, indices)
    with pytest.raises(InvalidInputError, match="^theta"):
        _core.RankerProblem(X, sets, rows, settings).objective(theta[:-1])
    with pytest.raises(InvalidInputError, match="^Y"):
        _core.RankerProblem(X, _LabelSets(indptr, np.array([0, 1, 2, 9], np.int64)), rows, settings).objective(theta)
    with pytest.raises(InvalidInputError, match="^rows"):
        _core.RankerProblem(X, sets, np.array([0, 7], np.int64), settings).objective(theta)
    with pytest.raises(InvalidInputError, match="^k"):
        _core.RankerProblem(X, sets, rows, replace(settings, k=4)).objective(theta)
    state = np.zeros(theta.size, np.float32)
    adam = replace(settings, loss="softmax", optimizer="adam", learning_rate=0.1, batch_size=2)
    with pytest.raises(InvalidInputError, match="^first"):
        _core.RankerProblem(X, sets, rows, adam).epoch(_Training(theta, state, state, 0), 0)


@pytest.mark.parametrize("loss", ["rankmax", "softmax", "sparsemax"])
@pytest.mark.parametrize("steps, remedy", [(0, "init_scale"), (7, "learning_rate")])
def test_infinite_scores_in_the_core_raise_naming_the_remedies(loss, steps, remedy):
    # X of 1e39 and float32 factors of 1: x·U overflows float32. Rankmax's sweep
    # panicked on the infinite scores (an InternalError); the others blamed `z` or the
    # learning rate. Before the optimiser's first step, the initial draw is to blame.
    X = np.full((4, 4), 1e39)
    indptr, indices = np.array([0, 1, 2, 3, 4], np.int64), np.array([0, 1, 2, 3], np.int64)
    theta = np.ones((4 + 4) * 2 + 4, np.float32)
    first, second = np.zeros_like(theta), np.zeros_like(theta)
    settings = RankerSettings(
        n_labels=4,
        n_components=2,
        loss=loss,
        k=1,
        eta=1.0,
        alpha=0.0,
        optimizer="adam",
        learning_rate=0.1,
        batch_size=2,
    )
    with pytest.raises(NoSolutionError, match=f"overflow .*lower {remedy}, or rescale X"):
        sets, rows = _LabelSets(indptr, indices), np.arange(4, dtype=np.int64)
        _core.RankerProblem(X, sets, rows, settings).epoch(_Training(theta, first, second, steps), 0)


def test_an_init_scale_too_large_for_float32_is_named():
    X, Y, _ = _planted(n_users=40, n_items=30)
    params = dict(n_components=2, n_epochs=1, early_stopping=False, random_state=0)
    with pytest.raises(InvalidInputError, match=r"^init_scale: 1e\+40 draws factors beyond float32"):
        RankmaxRanker(init_scale=1e40, **params).fit(X, Y)
    # Finite factors whose scores overflow: this blamed learning_rate.
    with pytest.raises(NoSolutionError, match="initial parameters overflow .*lower init_scale"):
        RankmaxRanker(init_scale=1e20, **params).fit(X, Y)


@parametrize_with_checks([RankmaxRanker(n_components=4, n_epochs=3)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ------------------------------------------------------------------ 5. partial_fit and history_


def test_partial_fit_calls_continue_the_optimiser_as_fit_does():
    # Calls over the whole data are fit's epochs without early stopping, bit for bit: θ,
    # both moments and the step count carry over (a fresh Adam state per call would not
    # give the same parameters), and the seeds come from one random_state stream.
    X, Y, _ = _planted(n_users=120, n_items=60)
    params = dict(n_components=6, optimizer="adam", learning_rate=0.02, early_stopping=False, random_state=4)
    fitted = RankmaxRanker(n_epochs=3, **params).fit(X, Y)
    model = RankmaxRanker(**params)
    for _ in range(3):
        model.partial_fit(X, Y)
    np.testing.assert_array_equal(model.feature_factors_, fitted.feature_factors_)
    np.testing.assert_array_equal(model.label_factors_, fitted.label_factors_)
    np.testing.assert_array_equal(model.label_bias_, fitted.label_bias_)
    assert [h.loss for h in model.history_] == [h.loss for h in fitted.history_]
    assert [h.n_iter for h in model.history_] == [1, 2, 3] and model.n_iter_ == model.best_epoch_ == 3
    assert all(isinstance(h, RankerProgress) and h.val_ap is None for h in model.history_)
    # fit starts over: the optimiser state of partial_fit does not outlive it.
    model.set_params(n_epochs=3).fit(X, Y)
    assert not hasattr(model, "_training")
    np.testing.assert_array_equal(model.label_factors_, fitted.label_factors_)


def test_partial_fit_over_chunks_reaches_the_quality_of_fit():
    # Users described by noisy bags of features (not one-hot: every chunk trains U),
    # the data streamed in four chunks per pass.
    rng = np.random.default_rng(5)
    n_users, d, n_items, rank = 800, 30, 80, 4
    latent = rng.normal(size=(n_users, rank))
    X = latent @ rng.normal(size=(rank, d)) + 0.3 * rng.normal(size=(n_users, d))
    top = np.argsort(-(latent @ rng.normal(size=(n_items, rank)).T), axis=1)[:, :5]
    Y = np.zeros((n_users, n_items), dtype=np.int8)
    np.put_along_axis(Y, top, 1, axis=1)
    train, test = slice(0, 600), slice(600, None)
    params = dict(n_components=8, learning_rate=0.05, batch_size=32, early_stopping=False, random_state=0)
    fitted = RankmaxRanker(n_epochs=15, **params).fit(X[train], Y[train])
    streamed = RankmaxRanker(**params)
    for _ in range(15):
        for lo in range(0, 600, 150):
            streamed.partial_fit(X[lo : lo + 150], Y[lo : lo + 150])
    assert streamed.n_iter_ == 60
    chance = average_precision_at_k(Y[test], rng.normal(size=Y[test].shape), 10)
    ap_fit, ap_streamed = fitted.score(X[test], Y[test]), streamed.score(X[test], Y[test])
    assert ap_fit > chance + 0.3
    assert ap_streamed == pytest.approx(ap_fit, abs=0.05)


def test_partial_fit_labels_and_features():
    X = np.eye(6)
    sets = [{"a", "b"}, {"b"}, {"c"}, {"a"}, {"c", "d"}, {"d"}]
    model = RankmaxRanker(n_components=2, random_state=0)
    with pytest.raises(InvalidInputError, match="^classes: labels must be all strings or all real numbers"):
        model.partial_fit(X, sets, classes=["a", 1])
    assert not hasattr(model, "classes_")  # the failed call left no half-started model
    # Without classes, the first chunk's labels are all there are.
    assert list(clone(model).partial_fit(X[:3], sets[:3]).classes_) == ["a", "b", "c"]
    model.partial_fit(X[:3], sets[:3], classes=["d", "c", "b", "a"])
    assert list(model.classes_) == ["a", "b", "c", "d"]
    model.partial_fit(X[3:], sets[3:])
    model.partial_fit(X[3:], sets[3:], classes=["a", "b", "c", "d"])
    with pytest.raises(InvalidInputError, match="^y: label 'e' is not one of classes_"):
        model.partial_fit(X[:1], [{"e"}])
    with pytest.raises(InvalidInputError, match="^classes: must be the 4 labels of the model"):
        model.partial_fit(X[:1], [{"a"}], classes=["a", "b", "c"])
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(np.eye(7)[:2], [{"a"}, {"b"}])
    assert model.n_iter_ == 3
    # An indicator's columns are the labels.
    indicator = RankmaxRanker(n_components=2, random_state=0).partial_fit(X, np.eye(6, 4, dtype=int))
    assert list(indicator.classes_) == [0, 1, 2, 3]
    with pytest.raises(InvalidInputError, match="^y: indicator has 3 columns"):
        indicator.partial_fit(X, np.eye(6, 3, dtype=int))


def test_partial_fit_after_fit_continues_from_its_factors():
    X, Y, _ = _planted(n_users=120, n_items=60)
    params = dict(n_components=6, learning_rate=0.1, early_stopping=False, random_state=1)
    model = RankmaxRanker(n_epochs=10, **params).fit(X, Y)
    before = model.score(X, Y)
    model.partial_fit(X, Y)
    assert model.n_iter_ == 11 and len(model.history_) == 11
    assert model.score(X, Y) > before - 0.05
    # A model started from scratch scores near chance after one epoch.
    assert RankmaxRanker(**params).partial_fit(X, Y).score(X, Y) < before - 0.2
