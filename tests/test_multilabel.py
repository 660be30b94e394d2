"""Tests of :class:`toprank.MultiLabelSVC` (multi-label hinge and softmax losses by
Prox-SDCA).

References are independent (``tests/multilabel_reference.py``): cvxpy for the optimum,
numpy for the primal and dual objectives; with one label per example the model is
:class:`toprank.TopKSVC`'s (k = 1 Crammer–Singer, softmax), itself tested against
cvxpy and LIBLINEAR in ``tests/test_svm.py``.
"""

from __future__ import annotations

import doctest
import pickle
import warnings

import multilabel_reference as ref
import numpy as np
import pytest
import scipy.sparse as sp
from _sample_weight_check import assert_within_certified_distance, check_fits
from sklearn.base import clone
from sklearn.datasets import make_multilabel_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import label_ranking_loss, make_scorer
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MultiLabelBinarizer, StandardScaler, scale

import toprank
from toprank import MultiLabelSVC, TopKSVC, metrics
from toprank.exceptions import InvalidInputError
from toprank.multilabel import hamming_threshold

TIGHT = dict(tol=1e-10, max_epochs=200_000, check_every=5)


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def problem(n, d, m, seed, density=0.35):
    """Features with structure and label sets of 1..m−1 labels each (a boolean indicator)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(m, d))
    noisy = X @ W.T + rng.normal(scale=1.0, size=(n, m))
    Y = noisy > np.quantile(noisy, 1 - density)
    Y[np.arange(n), np.argmax(noisy, axis=1)] = True
    Y[np.arange(n), np.argmin(noisy, axis=1)] = False
    assert Y.any(axis=1).all() and (~Y).any(axis=1).all()
    return X, Y


def quiet_fit(est, X, Y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, Y, **kw)


# ----------------------------------------------------------------- 1. optimality

_OPT_CASES = [
    # (seed, n, d, m, loss, smoothing, fit_intercept, weighted)
    (0, 40, 3, 4, "hinge", 0.0, False, False),
    (1, 50, 4, 5, "hinge", 0.0, True, True),
    (2, 35, 5, 6, "hinge", 0.0, True, False),
    (3, 40, 3, 4, "hinge", 0.5, True, False),
    (4, 50, 4, 5, "hinge", 1.0, False, True),
    (5, 30, 2, 3, "hinge", 2.0, True, True),
    (6, 40, 3, 4, "softmax", 0.0, True, False),
    (7, 50, 4, 6, "softmax", 0.0, False, True),
    (8, 30, 2, 3, "softmax", 0.0, True, True),
]


@pytest.mark.parametrize("case", _OPT_CASES, ids=lambda c: "-".join(map(str, c)))
def test_optimum_matches_cvxpy(case):
    seed, n, d, m, loss, gamma, fi, weighted = case
    X, Y = problem(n, d, m, seed)
    rng = np.random.default_rng(seed + 100)
    C = float(rng.choice([0.1, 1.0, 5.0]))
    scaling = float(rng.choice([1.0, 2.0])) if fi else 1.0
    sw = rng.uniform(0.0, 2.0, size=n) if weighted else None
    est = MultiLabelSVC(
        loss=loss,
        C=C,
        smoothing=gamma,
        fit_intercept=fi,
        intercept_scaling=scaling,
        random_state=seed,
        keep_dual=True,
        **TIGHT,
    )
    quiet_fit(est, X, Y, sample_weight=sw)
    # Non-smooth hinge: D reaches its optimum to round-off while P(W(A)) may stay a
    # little above (P is only Lipschitz near W*), so "no_progress" at a tiny gap is fine.
    assert est.status_ == "converged" or (loss == "hinge" and gamma == 0 and est.status_ == "no_progress")
    assert est.duality_gap_ < 1e-7
    c = C * (np.ones(n) if sw is None else sw)
    opt, W_opt = ref.cvxpy_optimum(X, Y, c, loss, gamma, fi, scaling)
    assert rel(est.primal_objective_, opt) < 1e-6, (est.primal_objective_, opt)
    # P recomputed from coef_ and intercept_ (numpy; the max-form QP for the smoothed hinge)
    P = ref.primal_objective(est.coef_, est.intercept_, X, Y, c, loss, gamma, scaling)
    assert rel(P, est.primal_objective_) < 1e-7, (P, est.primal_objective_)
    assert est.dual_objective_ <= opt * (1 + 1e-8) + 1e-10  # weak duality
    # The certificate: the returned dual is feasible and its D (recomputed) is within the
    # gap of P, so (W, A) satisfy the optimality conditions up to that gap.
    assert ref.dual_feasibility_violation(est.dual_coef_, Y, c, loss) < 1e-9
    D = ref.dual_objective(est.dual_coef_, ref.augment(X, fi, scaling), Y, c, loss, gamma)
    assert rel(D, est.dual_objective_) < 1e-9 and (P - D) / P < 1e-7
    # ½‖W‖² makes P 1-strongly convex: ‖W − W*‖² ≤ 2 (P(W) − P*).
    W = np.c_[est.coef_, est.intercept_ / scaling] if fi else est.coef_
    radius = np.sqrt(2 * max(P - opt, 0.0) + 2e-9 * abs(opt))
    assert np.linalg.norm(W - W_opt) <= radius + 1e-6, (np.linalg.norm(W - W_opt), radius)
    if not fi:
        np.testing.assert_array_equal(est.intercept_, np.zeros(m))


@pytest.mark.parametrize(
    "loss,gamma,fi,scaling",
    [("hinge", 0.0, True, 1.0), ("hinge", 0.7, True, 3.0), ("softmax", 0.0, False, 1.0), ("softmax", 0.0, True, 2.0)],
)
def test_reported_gap_recomputed(loss, gamma, fi, scaling):
    X, Y = problem(90, 5, 6, seed=21)
    rng = np.random.default_rng(0)
    sw = rng.uniform(0.0, 2.0, size=90)
    sw[:5] = 0.0
    C = 0.7
    est = MultiLabelSVC(
        loss=loss,
        C=C,
        smoothing=gamma,
        fit_intercept=fi,
        intercept_scaling=scaling,
        tol=1e-12,
        max_epochs=4,
        check_every=1,
        random_state=3,
        keep_dual=True,
    )
    quiet_fit(est, X, Y, sample_weight=sw)
    assert est.status_ == "max_iter" and est.n_iter_ == 4
    c = C * sw
    A = est.dual_coef_
    assert A.shape == (90, 6)
    # W = Aᵀ X̃ (with the intercept column)
    Xa = ref.augment(X, fi, scaling)
    W = A.T @ Xa
    np.testing.assert_allclose(est.coef_, W[:, :5], rtol=1e-10, atol=1e-12)
    if fi:
        np.testing.assert_allclose(est.intercept_, W[:, 5] * scaling, rtol=1e-10, atol=1e-12)
    # dual rows: feasible, zero for zero-weight examples, each summing to 0
    assert ref.dual_feasibility_violation(A, Y, c, loss) < 1e-10
    assert np.all(A[sw == 0] == 0)
    np.testing.assert_allclose(A.sum(axis=1), 0, atol=1e-12)
    P = ref.primal_objective(est.coef_, est.intercept_, X, Y, c, loss, gamma, scaling)
    D = ref.dual_objective(A, Xa, Y, c, loss, gamma)
    assert rel(P, est.primal_objective_) < 1e-8
    assert rel(D, est.dual_objective_) < 1e-9
    gap = (P - D) / max(abs(P), abs(D))
    assert gap > 1e-6  # not converged: the comparison is meaningful
    assert abs(gap - est.duality_gap_) < 1e-7 * gap + 1e-12
    last = est.history_[-1]
    assert (last.n_iter, last.primal, last.dual, last.gap) == (
        est.n_iter_,
        est.primal_objective_,
        est.dual_objective_,
        est.duality_gap_,
    )


@pytest.mark.parametrize("loss,gamma", [("hinge", 0.0), ("hinge", 1.0), ("softmax", 0.0)])
def test_history_dual_monotone(loss, gamma):
    X, Y = problem(120, 6, 5, seed=8)
    X = 0.5 * X / np.sqrt((X * X).sum(axis=1).max())
    est = quiet_fit(
        MultiLabelSVC(loss=loss, smoothing=gamma, C=2.0, tol=1e-9, max_epochs=200, check_every=1, random_state=0),
        X,
        Y,
    )
    h = np.array([record[:4] for record in est.history_])
    dual = h[:, 2]
    # exact coordinate maximisation: D never decreases (up to the round-off of its evaluation)
    assert np.all(np.diff(dual) >= -1e-12 * np.abs(dual[1:])), np.diff(dual).min()
    assert np.all(h[:, 1] >= h[:, 2] - 1e-12 * np.abs(h[:, 1]))  # weak duality


# ------------------------------------- 2. one label per example is TopKSVC's problem


@pytest.mark.parametrize(
    "loss,topk", [("hinge", dict(k=1, loss="alpha")), ("softmax", dict(loss="softmax"))], ids=["hinge", "softmax"]
)
@pytest.mark.parametrize("fi", [False, True])
def test_one_label_per_example_equals_topksvc(loss, topk, fi):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 4))
    y = np.argmax(X[:, :3] @ rng.normal(size=(3, 4)) + rng.normal(size=(80, 4)), axis=1)
    kw = dict(C=0.8, fit_intercept=fi, intercept_scaling=1.5, random_state=0, tol=1e-13, max_epochs=500_000)
    svc = quiet_fit(TopKSVC(**topk, **kw), X, y)
    # The non-smooth hinge without intercept stops with "no_progress" near 2e-9.
    assert svc.duality_gap_ < 1e-8
    assert np.linalg.norm(svc.coef_) > 0.1  # real structure: W = 0 is not optimal
    # 1-D labels, label sets of one label, and the one-hot indicator: the same problem
    for targets in (y, [{int(label)} for label in y], np.eye(4, dtype=int)[y]):
        est = quiet_fit(MultiLabelSVC(loss=loss, **kw), X, targets)
        assert est.duality_gap_ < 1e-8
        assert rel(est.primal_objective_, svc.primal_objective_) < 1e-8
        scale_w = np.linalg.norm(np.c_[svc.coef_, svc.intercept_])
        err = np.linalg.norm(np.c_[est.coef_ - svc.coef_, est.intercept_ - svc.intercept_]) / scale_w
        assert err < 1e-6, err
    # 1-D labels predict classes, as TopKSVC does
    est = quiet_fit(MultiLabelSVC(loss=loss, **kw), X, y)
    np.testing.assert_array_equal(est.predict(X), svc.predict(X))
    assert est.score(X, y) == svc.score(X, y)


# ----------------------------------------------------- 3. the thresholding rule


def _training_hamming(scores, Y, t, weights):
    pred = scores > t
    pred[np.arange(len(scores)), np.argmax(scores, axis=1)] = True
    return float(np.sum(weights[:, None] * (pred != Y)))


@pytest.mark.parametrize("weighted", [False, True])
def test_threshold_minimises_training_hamming_loss(weighted):
    rng = np.random.default_rng(5)
    scores = rng.integers(-4, 5, size=(60, 7)).astype(float)  # many ties
    Y = rng.random((60, 7)) < 0.3
    weights = rng.uniform(0.0, 2.0, 60) if weighted else np.ones(60)
    t = hamming_threshold(scores, sp.csr_matrix(Y), weights)
    best = _training_hamming(scores, Y, t, weights)
    # every threshold that changes the prediction: the distinct scores, and beyond them
    for candidate in [np.inf, -np.inf, *np.unique(scores), *(np.unique(scores) - 0.5)]:
        assert best <= _training_hamming(scores, Y, candidate, weights) + 1e-12
    # a midpoint between two scores, never a score itself
    assert t not in set(np.unique(scores).tolist())


def test_threshold_hand_examples():
    scores = np.array([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0]])
    one = np.ones(2)
    # label 1 relevant in both rows: predicted from threshold 1.5 (between 2 and 1)
    assert hamming_threshold(scores, sp.csr_matrix([[1, 1, 0], [1, 1, 0]]), one) == 1.5
    # only the top labels relevant: nothing else is predicted
    assert hamming_threshold(scores, sp.csr_matrix([[1, 0, 0], [1, 0, 0]]), one) == np.inf
    # every label relevant
    assert hamming_threshold(scores, sp.csr_matrix(np.ones((2, 3))), one) == -np.inf
    # a tie (one loss either way): the higher threshold, fewer labels
    assert hamming_threshold(scores, sp.csr_matrix([[1, 1, 0], [1, 0, 0]]), one) == np.inf
    # weights decide it
    assert hamming_threshold(scores, sp.csr_matrix([[1, 1, 0], [1, 0, 0]]), np.array([2.0, 1.0])) == 1.5
    # adjacent floats: the cut stays between them
    tight = np.array([[2.0, 1.0, np.nextafter(1.0, 0.0)]])
    t = hamming_threshold(tight, sp.csr_matrix([[1, 1, 0]]), np.ones(1))
    assert tight[0, 2] <= t < tight[0, 1]


def test_predict_is_threshold_plus_top_label():
    X, Y = problem(150, 6, 8, seed=9)
    est = MultiLabelSVC(C=1.0, random_state=0).fit(X, Y)
    scores = est.decision_function(X)
    expected = scores > est.threshold_
    expected[np.arange(150), np.argmax(scores, axis=1)] = True
    pred = est.predict(X)
    np.testing.assert_array_equal(pred, expected)
    assert pred.dtype == Y.dtype and pred.shape == Y.shape
    assert pred.any(axis=1).all()
    # the fitted threshold is the best single threshold on the training set
    ones = np.ones(150)
    best = _training_hamming(scores, Y, est.threshold_, ones)
    assert all(best <= _training_hamming(scores, Y, t, ones) for t in [np.inf, *np.unique(scores)])
    assert est.score(X, Y) == 1.0 - metrics.hamming_loss(Y, pred)
    # far new rows predict at least their top label too
    assert est.predict(100 * X[:5]).sum(axis=1).min() >= 1


def test_learns_rankings_better_than_chance():
    X, Y = make_multilabel_classification(n_samples=300, n_features=10, n_classes=8, random_state=0)
    keep = (Y.sum(axis=1) > 0) & (Y.sum(axis=1) < 8)
    X, Y = scale(X[keep]), Y[keep]
    for loss in ("hinge", "softmax"):
        est = MultiLabelSVC(loss=loss, C=0.1, random_state=0).fit(X[:200], Y[:200])
        scores = est.decision_function(X[200:])
        assert metrics.rank_loss(Y[200:], scores) < 0.25
        assert metrics.precision_at_k(Y[200:], scores, 1) > 0.6
        assert est.score(X[200:], Y[200:]) > 0.75


# ------------------------------------------------------------ 4. input formats


@pytest.fixture(scope="module")
def fmt_problem():
    X, Y = problem(100, 8, 5, seed=11)
    X[np.abs(X) < 0.8] = 0.0  # some sparsity
    est = MultiLabelSVC(smoothing=0.5, random_state=7, tol=1e-10, max_epochs=50_000).fit(X, Y)
    return X, Y, est


def _same_model(est, want, tol):
    err = np.linalg.norm(np.c_[est.coef_ - want.coef_, est.intercept_ - want.intercept_])
    assert err / np.linalg.norm(np.c_[want.coef_, want.intercept_]) < tol, err
    assert rel(est.primal_objective_, want.primal_objective_) < tol


@pytest.mark.parametrize("kind", ["float32", "csr", "csr_array", "fortran", "compressed"])
def test_x_formats_same_model(fmt_problem, kind):
    X, Y, want = fmt_problem
    tol = 1e-6
    if kind == "float32":
        Xk, tol = X.astype(np.float32), 1e-4
    elif kind == "csr":
        Xk = sp.csr_matrix(X)
    elif kind == "csr_array":
        Xk = sp.csr_array(X)
    elif kind == "fortran":
        Xk = np.asfortranarray(X)
    else:
        from toprank.pq import ProductQuantizer

        Xk = ProductQuantizer(n_subspaces=2, n_bits=4, random_state=0).fit(X).compress(X)
        X = np.asarray(Xk, dtype=np.float64)  # the model is that of the decoded rows
        want = clone(want).fit(X, Y)
        tol = 1e-5
    est = clone(want).fit(Xk, Y)
    _same_model(est, want, tol)
    np.testing.assert_allclose(est.decision_function(Xk), want.decision_function(X), rtol=10 * tol, atol=10 * tol)


def test_y_formats_same_model(fmt_problem):
    X, Y, want = fmt_problem
    names = np.array(["art", "bio", "cs", "econ", "math"])
    sets = [set(names[row]) for row in Y]
    for targets in (Y.astype(np.int8), Y.astype(float), sp.csr_matrix(Y), sp.csr_array(Y.astype(int)), sets):
        est = clone(want).fit(X, targets)
        _same_model(est, want, 1e-12)
    est = clone(want).fit(X, sets)
    assert est.classes_.tolist() == names.tolist()
    assert est.predict(X).dtype == np.int64
    np.testing.assert_array_equal(est.predict(X), want.predict(X))
    np.testing.assert_array_equal(est.predict_topk(X, 2), names[want.predict_topk(X, 2)])
    assert est.score(X, sets) == want.score(X, Y) == est.score(X, Y)
    # MultiLabelBinarizer's reading of the same sets
    binarizer = MultiLabelBinarizer().fit(sets)
    np.testing.assert_array_equal(binarizer.classes_, est.classes_)
    np.testing.assert_array_equal(binarizer.transform(sets), Y)
    # a label set given as a list, a tuple or an array, with a duplicate
    mixed = [
        list(s) if i % 3 == 0 else tuple(s) + tuple(s)[:1] if i % 3 == 1 else np.array(sorted(s))
        for i, s in enumerate(sets)
    ]
    _same_model(clone(want).fit(X, mixed), want, 1e-12)


def test_label_sets_of_mixed_labels_and_unseen_score_labels(fmt_problem):
    X, Y, want = fmt_problem
    est = clone(want).fit(X, [set(np.flatnonzero(row) * 10) for row in Y])
    assert est.classes_.tolist() == [0, 10, 20, 30, 40] and est.classes_.dtype.kind == "i"
    with pytest.raises(InvalidInputError, match=r"^y: label 7 of example 0 is not one of the labels of the fit"):
        est.score(X, [{7}] + [{0}] * (len(X) - 1))


def test_predict_proba_softmax_only(fmt_problem):
    X, Y, _ = fmt_problem
    est = MultiLabelSVC(loss="softmax", random_state=0).fit(X, Y)
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.log(proba), est.predict_log_proba(X), atol=1e-12)
    np.testing.assert_array_equal(
        np.argsort(-proba, axis=1, kind="stable"), np.argsort(-est.decision_function(X), axis=1, kind="stable")
    )
    hinge = MultiLabelSVC().fit(X, Y)
    assert not hasattr(hinge, "predict_proba") and not hasattr(MultiLabelSVC(), "predict_log_proba")
    with pytest.raises(AttributeError):
        hinge.predict_proba(X)


def test_predict_topk(fmt_problem):
    X, _, est = fmt_problem
    scores = est.decision_function(X)
    top = est.predict_topk(X, 3)
    np.testing.assert_array_equal(top, np.argsort(-scores, axis=1, kind="stable")[:, :3])
    with pytest.raises(InvalidInputError, match="^k: "):
        est.predict_topk(X)  # no k of its own
    with pytest.raises(InvalidInputError, match="^k: "):
        est.predict_topk(X, 6)


# -------------------------------------------------------------- 5. bad input


def _bad_fits():
    X, Y = problem(20, 3, 4, seed=1)
    Y_none = Y.copy()
    Y_none[3] = False
    Y_all = Y.copy()
    Y_all[5] = True
    X_nan = X.copy()
    X_nan[2, 1] = np.nan
    Y_nan = Y.astype(float)
    Y_nan[0, 0] = np.nan
    return {
        "an example without a label": (
            lambda: MultiLabelSVC().fit(X, Y_none),
            r"^y: 1 example\(s\) have no label \(the first is example 3\)",
        ),
        "an example with every label": (
            lambda: MultiLabelSVC().fit(X, Y_all),
            r"^y: 1 example\(s\) have every label \(the first is example 5\)",
        ),
        "an empty label set": (
            lambda: MultiLabelSVC().fit(X, [{0}, {1}] * 9 + [{0}, set()]),
            r"^y: .*no label \(the first is example 19\)",
        ),
        "NaN in X": (lambda: MultiLabelSVC().fit(X_nan, Y), r"NaN"),
        "NaN in the indicator": (lambda: MultiLabelSVC().fit(X, Y_nan), r"^y: expected only 0/1 values"),
        "NaN as a label": (lambda: MultiLabelSVC().fit(X, [{0.0}] * 19 + [{np.nan}]), r"^y: a label set contains NaN"),
        "indicator not 0/1": (lambda: MultiLabelSVC().fit(X, 2 * Y.astype(int)), r"^y: expected only 0/1 values"),
        "too few rows of Y": (lambda: MultiLabelSVC().fit(X, Y[:-1]), r"^y: has 19 examples but X has 20"),
        "too few label sets": (lambda: MultiLabelSVC().fit(X, [{0, 1}] * 19), r"^y: has 19 examples but X has 20"),
        "one label only": (
            lambda: MultiLabelSVC().fit(X, np.zeros(20, dtype=int)),
            r"^y: needs samples of at least 2 classes",
        ),
        "label sets and labels mixed": (
            lambda: MultiLabelSVC().fit(X, [{0}] * 19 + [1]),
            r"^y: a list must hold one label set per example",
        ),
        "unhashable labels": (
            lambda: MultiLabelSVC().fit(X, [[[0]]] * 20),
            r"^y: the labels of example 0 must be hashable",
        ),
        "labels of two types": (lambda: MultiLabelSVC().fit(X, [{0, "a"}] * 20), r"^y: the labels cannot be sorted"),
        "Y is None": (lambda: MultiLabelSVC().fit(X, None), r"^y: requires y to be passed"),
        "3-D Y": (lambda: MultiLabelSVC().fit(X, np.zeros((20, 2, 2))), r"^y: "),
        "malformed sparse Y": (lambda: MultiLabelSVC().fit(X, _malformed(Y)), r"^y\.indices: "),
        "loss": (lambda: MultiLabelSVC(loss="alpha").fit(X, Y), r"^loss: must be one of \('hinge', 'softmax'\)"),
        "C": (lambda: MultiLabelSVC(C=0.0).fit(X, Y), r"^C: "),
        "smoothing": (lambda: MultiLabelSVC(smoothing=-1.0).fit(X, Y), r"^smoothing: "),
        "tol": (lambda: MultiLabelSVC(tol=np.nan).fit(X, Y), r"^tol: "),
        "max_epochs": (lambda: MultiLabelSVC(max_epochs=0).fit(X, Y), r"^max_epochs: "),
        "warm_start": (lambda: MultiLabelSVC(warm_start="yes").fit(X, Y), r"^warm_start: "),
        "intercept_scaling": (lambda: MultiLabelSVC(intercept_scaling=1e300).fit(X, Y), r"^intercept_scaling: "),
        "negative weight": (
            lambda: MultiLabelSVC().fit(X, Y, sample_weight=-np.ones(20)),
            r"^sample_weight: must be >= 0",
        ),
        "zero weights": (
            lambda: MultiLabelSVC().fit(X, Y, sample_weight=np.zeros(20)),
            r"^sample_weight: ",
        ),
        "weights' length": (lambda: MultiLabelSVC().fit(X, Y, sample_weight=np.ones(3)), r"^sample_weight: "),
        "predict's features": (lambda: MultiLabelSVC().fit(X, Y).predict(X[:, :2]), r"features"),
        "score's labels": (lambda: MultiLabelSVC().fit(X, Y).score(X, Y[:, :3]), r"^y: expected shape \(20, 4\)"),
        "score's weights": (
            lambda: MultiLabelSVC().fit(X, Y).score(X, Y, sample_weight=np.ones(20)),
            r"^sample_weight: ",
        ),
    }


def _malformed(Y):
    csr = sp.csr_matrix(Y)
    csr.indices[0] = 10**6
    return csr


@pytest.mark.parametrize("case", list(_bad_fits()))
def test_bad_input_raises_naming_the_argument(case):
    call, match = _bad_fits()[case]
    with pytest.raises(ValueError, match=match):
        call()


def test_a_failed_fit_leaves_the_model_as_it_was():
    X, Y = problem(30, 3, 4, seed=2)
    est = MultiLabelSVC(random_state=0).fit(X, Y)
    coef, threshold = est.coef_.copy(), est.threshold_
    bad = Y.copy()
    bad[0] = False
    with pytest.raises(InvalidInputError):
        est.fit(X, bad)
    np.testing.assert_array_equal(est.coef_, coef)
    assert est.threshold_ == threshold


# ------------------------------------------- 6. fitting options and the report


def test_sample_weight_two_equals_duplicate():
    X, Y = problem(50, 4, 5, seed=31)
    sw = np.ones(50)
    sw[:10] = 2.0
    kw = dict(smoothing=0.5, random_state=0, tol=1e-12, max_epochs=100_000)
    a = MultiLabelSVC(**kw).fit(X, Y, sample_weight=sw)
    b = MultiLabelSVC(**kw).fit(np.vstack([X, X[:10]]), np.vstack([Y, Y[:10]]))
    _same_model(a, b, 1e-6)
    assert a.threshold_ == pytest.approx(b.threshold_, rel=1e-5)


def test_warm_start_along_C():
    X, Y = problem(150, 5, 6, seed=61)
    kw = dict(smoothing=0.5, tol=1e-10, max_epochs=100_000, random_state=0)
    warm = MultiLabelSVC(C=1.0, warm_start=True, **kw).fit(X, Y)
    warm.set_params(C=1.3).fit(X, Y)
    cold = MultiLabelSVC(C=1.3, **kw).fit(X, Y)
    _same_model(warm, cold, 1e-5)
    assert warm.n_iter_ < cold.n_iter_, (warm.n_iter_, cold.n_iter_)
    assert warm.history_[0].dual > cold.history_[0].dual
    assert ref.dual_feasibility_violation(warm.dual_coef_, Y, np.full(150, 1.3), "hinge") < 1e-10
    # other label sets (same shape): the old dual is not theirs, so the fit starts cold
    other = np.roll(Y, 1, axis=0)
    warm.fit(X, other)
    cold = MultiLabelSVC(C=1.3, **kw).fit(X, other)
    np.testing.assert_array_equal(warm.coef_, cold.coef_)
    assert warm.n_iter_ == cold.n_iter_


def test_keep_dual_and_lean_model():
    X, Y = problem(60, 4, 5, seed=3)
    lean = MultiLabelSVC(random_state=0).fit(X, Y)
    assert not hasattr(lean, "dual_coef_")
    kept = MultiLabelSVC(random_state=0, keep_dual=True).fit(X, Y)
    assert kept.dual_coef_.shape == (60, 5)
    np.testing.assert_array_equal(kept.coef_, lean.coef_)


def test_status_and_convergence_warning():
    X, Y = problem(100, 5, 5, seed=2)
    with pytest.warns(ConvergenceWarning, match=r"MultiLabelSVC stopped with status 'max_iter'.*max_epochs"):
        est = MultiLabelSVC(tol=1e-14, max_epochs=3, check_every=1, random_state=0).fit(X, Y)
    assert est.status_ == "max_iter" and est.n_iter_ == 3 and len(est.history_) == 3
    assert all(type(record) is toprank.FitProgress for record in est.history_)


def test_verbose_prints_progress(capsys):
    X, Y = problem(60, 4, 4, seed=5)
    MultiLabelSVC(verbose=2, tol=1e-9, check_every=1, random_state=0).fit(X, Y)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[MultiLabelSVC] epoch ")
    assert lines[-1].startswith("[MultiLabelSVC] converged after ")


def test_reproducible_with_random_state_and_threads():
    X, Y = problem(200, 6, 7, seed=6)
    a = MultiLabelSVC(random_state=3, n_jobs=2).fit(X, Y)
    b = MultiLabelSVC(random_state=3, n_jobs=2).fit(X, Y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


# ------------------------------------------------ 7. the scikit-learn contract

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

_MULTILABEL_CHECKS = (
    "check_classifiers_multilabel_representation_invariance",
    "check_classifiers_multilabel_output_format_predict",
    "check_classifiers_multilabel_output_format_predict_proba",
    "check_classifiers_multilabel_output_format_decision_function",
)
_UNLABELED_REASON = (
    "fits make_multilabel_classification(allow_unlabeled=True) targets, which have examples without a "
    "label: the losses compare an example's labels with its other labels, so such an example is refused "
    "(test_sklearn_multilabel_checks_pass_without_unlabeled_examples runs the checks' assertions on the "
    "same data without them)"
)
_SW_REASON = (
    "compares decision_function at rtol=1e-7 after fits with the default tol=1e-3 (relative duality gap); "
    "test_sample_weight_equivalence_holds_to_the_certified_accuracy shows the two fits differ by no more than "
    "their duality gaps allow, and test_sample_weight_two_equals_duplicate the equivalence at a tight tol"
)
_CHECKED = [MultiLabelSVC(), MultiLabelSVC(loss="softmax")]


def _expected_failed(estimator):
    failed = dict.fromkeys(_MULTILABEL_CHECKS, _UNLABELED_REASON)
    failed.update(
        check_sample_weight_equivalence_on_dense_data=_SW_REASON,
        check_sample_weight_equivalence_on_sparse_data=_SW_REASON,
    )
    return failed


@parametrize_with_checks(_CHECKED, expected_failed_checks=_expected_failed)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("estimator", _CHECKED, ids=repr)
def test_sample_weight_equivalence_holds_to_the_certified_accuracy(estimator, sparse):
    # Why scikit-learn's check fails, proved on its own data as for TopKSVC
    # (tests/_sample_weight_check.py), the gaps recomputed by the reference from coef_,
    # intercept_ and dual_coef_.
    X, fits = check_fits(estimator, sparse)
    params = estimator.get_params()
    gaps = []
    for fit, Xf, yf, c in fits:
        c = params["C"] * c
        Yf = np.eye(3, dtype=bool)[yf]
        P = ref.primal_objective(fit.coef_, fit.intercept_, Xf, Yf, c, params["loss"], params["smoothing"])
        D = ref.dual_objective(fit.dual_coef_, ref.augment(Xf, True), Yf, c, params["loss"], params["smoothing"])
        assert fit.duality_gap_ <= params["tol"] and 0 <= P - D <= params["tol"] * P * (1 + 1e-9)
        gaps.append(P - D)
    assert_within_certified_distance(fits, X, np.linalg.norm(ref.augment(X, True), axis=1), gaps)


def _checks_data():
    """The targets of scikit-learn's multi-label checks (sklearn.utils.estimator_checks)."""
    X, Y = make_multilabel_classification(
        n_samples=100, n_features=2, n_classes=5, n_labels=3, length=50, allow_unlabeled=True, random_state=0
    )
    return scale(X), Y


@pytest.mark.parametrize("estimator", _CHECKED, ids=repr)
def test_sklearn_multilabel_checks_pass_without_unlabeled_examples(estimator):
    X, Y = _checks_data()
    # Why the checks fail: their training rows include examples without a label...
    counts = Y[:75].sum(axis=1)
    assert np.any(counts == 0)
    with pytest.raises(InvalidInputError, match="have no label"):
        clone(estimator).fit(X[:75], Y[:75])
    # ... and with those examples left out, what the checks assert holds.
    keep = (Y.sum(axis=1) > 0) & (Y.sum(axis=1) < 5)
    X, Y = X[keep], Y[keep]
    X_train, Y_train, X_test = X[:-25], Y[:-25], X[-25:]
    model = clone(estimator).set_params(random_state=0)
    pred = model.fit(X_train, Y_train).predict(X_test)
    assert isinstance(pred, np.ndarray) and pred.shape == (25, 5) and pred.dtype == Y.dtype
    decision = model.decision_function(X_test)
    assert decision.shape == (25, 5) and decision.dtype.kind == "f"
    if hasattr(model, "predict_proba"):
        proba = model.predict_proba(X_test)
        assert proba.shape == (25, 5) and proba.dtype.kind == "f" and np.all((0 < proba) & (proba < 1))
    # Representation invariance: a list of arrays of the indicator's rows is, as in
    # toprank.metrics, a list of label sets, whose labels are the values 0 and 1, so
    # it is another problem; the indicator as an array is the same one.
    same = clone(model).fit(X_train, np.asarray(Y_train.tolist())).predict(X_test)
    np.testing.assert_array_equal(same, pred)
    with pytest.raises(InvalidInputError, match="every label"):
        clone(model).fit(X_train, list(Y_train))


def test_pickle_clone_and_grid_search(fmt_problem):
    X, Y, est = fmt_problem
    again = pickle.loads(pickle.dumps(est))
    for method in ("predict", "decision_function"):
        np.testing.assert_array_equal(getattr(again, method)(X), getattr(est, method)(X))
    assert again.threshold_ == est.threshold_
    assert clone(est).get_params() == est.get_params() and not hasattr(clone(est), "coef_")
    search = GridSearchCV(
        make_pipeline(StandardScaler(), MultiLabelSVC(random_state=0)),
        {"multilabelsvc__C": [0.1, 1.0], "multilabelsvc__loss": ["hinge", "softmax"]},
        cv=3,
    ).fit(X, Y)
    assert search.best_estimator_.predict(X).shape == Y.shape
    # C chosen by the rank loss of decision_function, as the comparison does
    scorer = make_scorer(label_ranking_loss, greater_is_better=False, response_method="decision_function")
    ranking = GridSearchCV(MultiLabelSVC(random_state=0), {"C": [0.1, 1.0]}, scoring=scorer, cv=KFold(3)).fit(X, Y)
    best = clone(ranking.best_estimator_)
    losses = [metrics.rank_loss(Y[te], best.fit(X[tr], Y[tr]).decision_function(X[te])) for tr, te in KFold(3).split(X)]
    assert ranking.best_score_ == pytest.approx(-np.mean(losses), rel=1e-12)


def test_tags():
    tags = MultiLabelSVC().__sklearn_tags__()
    assert tags.classifier_tags.multi_label and tags.input_tags.sparse
    assert not tags.target_tags.multi_output  # binary outputs only, not multiclass per output


def test_docstring_example_runs():
    # The repository collects no doctests; the class's Examples are run here.
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(MultiLabelSVC, "MultiLabelSVC", globs={}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 4 and result.failed == 0


# ------------------------------------------------------------- at users' scale


def _many_labels_problem(n=1500, d=30, m=1000, seed=7):
    """1,000 labels, ~5 per example with Zipf-like popularity; float32 rows whose norms
    span three orders of magnitude, 40 all-zero rows and 40 rows repeated (tied)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-1.5, 1.5, size=(n, 1))
    X[:40] = 0.0
    X[40:80] = X[80]
    popularity = 1.0 / np.arange(1, m + 1)
    Y = np.zeros((n, m), dtype=bool)
    for i in range(n):
        Y[i, rng.choice(m, size=1 + rng.poisson(4), replace=False, p=popularity / popularity.sum())] = True
    return X.astype(np.float32), Y


@pytest.mark.parametrize("loss", ["hinge", "softmax"])
def test_thousand_labels_constant_tied_and_wide_rows_are_certified(loss):
    # The fit on float32 data with 1,000 labels, zero and repeated rows and row norms over
    # three decades reaches its tol, and the reference recomputes its certificate: P from
    # coef_ and intercept_, a feasible dual, and D within the reported gap.
    X, Y = _many_labels_problem()
    est = quiet_fit(MultiLabelSVC(loss=loss, C=0.001, keep_dual=True, random_state=0, max_epochs=5000), X, Y)
    assert est.status_ == "converged", (est.status_, est.n_iter_, est.duality_gap_)
    c = np.full(len(Y), 0.001)
    Xd = X.astype(np.float64)
    # The hinge's dual rows are kept sparse from 256 labels on.
    assert sp.issparse(est.dual_coef_) == (loss == "hinge")
    A = est.dual_coef_.toarray() if loss == "hinge" else est.dual_coef_
    P = ref.primal_objective(est.coef_, est.intercept_, Xd, Y, c, loss)
    D = ref.dual_objective(A, ref.augment(Xd, True), Y, c, loss)
    assert rel(P, est.primal_objective_) < 1e-6 and rel(D, est.dual_objective_) < 1e-6, (P, D)
    assert ref.dual_feasibility_violation(A, Y, c, loss) < 1e-9
    assert 0 <= (P - D) / P <= 1e-3 * (1 + 1e-6)
    scores = est.decision_function(X)
    assert np.isfinite(scores).all() and scores.dtype == np.float64
    # Tied rows score alike; the all-zero rows score the intercepts.
    np.testing.assert_allclose(scores[40:80], np.broadcast_to(scores[80], (40, Y.shape[1])), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(scores[:40], np.broadcast_to(est.intercept_, (40, Y.shape[1])), atol=1e-12)
