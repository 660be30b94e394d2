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
    assert "status 'max_epochs': it ran out of epochs after 5 epochs" in text
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
