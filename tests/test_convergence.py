"""Stopping rules and convergence warnings: tiny problems reach tight tolerances, and a
fit that stops short says so at the caller's line with what to change and why."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import toprank
from toprank.exceptions import InvalidInputError

# libsdca's solver tests: the two-bit truth tables.
_BITS = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
_TABLES = {"or": [0, 1, 1, 1], "and": [0, 0, 0, 1], "xor": [0, 1, 1, 0]}


@pytest.mark.parametrize("table", sorted(_TABLES))
@pytest.mark.parametrize("loss", ["alpha", "beta", "softmax"])
@pytest.mark.parametrize("seed", range(4))
def test_truth_tables_reach_a_tight_tol(table, loss, seed):
    # The dual reaches its optimum to the last bit while the primal still converges
    # (gap 1e-10 -> 1e-12 -> 1e-14 with D fixed): that is progress, not a stall.
    clf = toprank.TopKSVC(k=1, loss=loss, tol=1e-13, max_epochs=10_000, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf.fit(_BITS, np.array(_TABLES[table]))
    assert clf.status_ == "converged"
    assert clf.duality_gap_ <= 1e-13
    assert clf.primal_objective_ >= clf.dual_objective_ - 1e-12 * abs(clf.primal_objective_)


def _badly_scaled(n=400, d=30, m=6, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(m, d))
    y = rng.integers(0, m, n)
    return 0.1 * centres[y] + rng.standard_normal((n, d)), y  # ‖x‖² ≈ 30, classes overlap


def test_warning_points_at_the_caller_and_names_the_cause():
    X, y = _badly_scaled()
    with pytest.warns(ConvergenceWarning) as record:
        toprank.TopKSVC(k=2, C=10.0, max_epochs=5, check_every=5, random_state=0).fit(X, y)
    (warning,) = [w for w in record if issubclass(w.category, ConvergenceWarning)]
    assert warning.filename == __file__  # not toprank/_validation.py (the fit's wrapper)
    text = str(warning.message)
    assert "status 'max_iter': it ran out of epochs after 5 epochs" in text
    assert "C·max‖x_i‖²" in text and "badly scaled" in text
    assert "StandardScaler" in text and "smoothing" in text and "max_epochs" in text


def test_well_scaled_problem_is_told_to_raise_the_budget():
    X, y = _badly_scaled()
    X = X / np.sqrt((X * X).sum(axis=1).max())
    with pytest.warns(ConvergenceWarning, match="well scaled: raise max_epochs") as record:
        toprank.TopKSVC(k=2, max_epochs=1, check_every=1, tol=1e-12, random_state=0).fit(X, y)
    assert all(w.filename == __file__ for w in record)


def test_toppush_warning_points_at_the_caller():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 5))
    y = (X[:, 0] + 0.5 * rng.standard_normal(200) > 0).astype(int)
    with pytest.warns(ConvergenceWarning, match="ran out of iterations") as record:
        toprank.TopPush(max_iter=3, check_every=1, tol=1e-12).fit(X, y)
    assert all(w.filename == __file__ for w in record)


def test_cache_size_is_checked_for_every_kernel():
    X, y = _badly_scaled(n=30)
    with pytest.raises(InvalidInputError, match="cache_size"):
        toprank.TopKSVC(kernel="linear", cache_size=-1).fit(X, y)


# ------------------------------------------------- badly scaled problems: acceleration


def _alpha_loss(scores, y, k):
    """Top-k hinge α: (1/k) max{0, Σ_{j≤k} h_[j]}, h_j = 1 + s_j − s_y over j ≠ y."""
    h = 1.0 + scores - scores[np.arange(len(y)), y][:, None]
    h[np.arange(len(y)), y] = -np.inf
    top = -np.sort(-h, axis=1)[:, :k]
    return np.maximum(0.0, top.sum(axis=1)) / k


def _certified_gap(clf, X, y, k):
    """(P(coef_, intercept_) − D(dual_coef_)) / P recomputed in NumPy: the dual rows must
    lie in c·Δ_k (α's dual set) and W(A) = Σ_i x̃_i a_iᵀ over x̃ = [x, 1] (intercept_scaling 1)."""
    A = clf.dual_coef_
    n, m = A.shape
    rows = np.arange(n)
    x_minus = -A.copy()
    x_minus[rows, y] = 0.0  # the vector x = −a^{\y}
    total = x_minus.sum(axis=1)
    assert np.all(x_minus >= -1e-12)
    assert np.all(x_minus <= total[:, None] / k + 1e-9)
    assert np.all(total <= 1.0 + 1e-9)  # C = 1, no weights
    assert np.allclose(A[rows, y], total, rtol=1e-12, atol=1e-12)
    Xt = np.hstack([X, np.ones((n, 1))])
    W_dual = A.T @ Xt
    dual = A[rows, y].sum() - 0.5 * np.sum(W_dual * W_dual)
    W = np.hstack([clf.coef_, clf.intercept_[:, None]])
    primal = 0.5 * np.sum(W * W) + _alpha_loss(X @ clf.coef_.T + clf.intercept_, y, k).sum()
    assert primal == pytest.approx(clf.primal_objective_, rel=1e-9)
    assert dual == pytest.approx(clf.dual_objective_, rel=1e-9)
    return (primal - dual) / primal


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_badly_scaled_problem_converges_by_default(n_jobs):
    # ‖x‖² ≈ 40 at C = 1 with overlapping classes: plain SDCA's gap falls slowly (0.66
    # after 20 epochs, converged after 95 on one thread); the accelerated outer loop,
    # which takes over at epoch 20, converges after 32.
    rng = np.random.default_rng(5)
    n, d, m = 3000, 40, 8
    centres = rng.normal(size=(m, d))
    y = rng.integers(0, m, n)
    X = 0.1 * centres[y] + rng.standard_normal((n, d))
    clf = toprank.TopKSVC(k=2, max_epochs=60, random_state=0, n_jobs=n_jobs, keep_dual=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf.fit(X, y)
    assert clf.status_ == "converged"
    assert _certified_gap(clf, X, y, 2) <= clf.tol
    epochs = [h[0] for h in clf.history_]
    assert epochs == sorted(epochs) and epochs[-1] == clf.n_iter_
