"""Fitted models keep what they predict with, not the solver's O(n·m) state: a linear
TopKSVC or M3L has no ``dual_coef_`` unless ``keep_dual=True`` (or, for TopKSVC,
``warm_start=True``, whose next fit starts from it), and a kernel model keeps the dual
rows of its support only."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from toprank import M3L, TopKSVC
from toprank.exceptions import InvalidInputError


def _problem(n: int, d: int = 40, m: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((m, d))
    y = rng.integers(0, m, n)
    X = (centres[y] + 2.0 * rng.standard_normal((n, d))) / np.sqrt(d)
    return X, y


def _quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def _size(model) -> int:
    return len(pickle.dumps(model))


def test_a_linear_model_pickles_in_size_of_its_weights_not_its_rows():
    # Same features and classes, ten times the rows: the same pickle up to a few bytes
    # (a fixed epoch budget gives both the same history length).
    kw = dict(k=2, max_epochs=5, check_every=5, random_state=0)
    small = _quiet_fit(TopKSVC(**kw), *_problem(2_000))
    large = _quiet_fit(TopKSVC(**kw), *_problem(20_000))
    assert not hasattr(small, "dual_coef_") and not hasattr(large, "dual_coef_")
    assert abs(_size(large) - _size(small)) < 2_000
    # W is 8 × 40 float64 (2.5 KB): the rest is the estimator's parameters and report.
    assert _size(large) < large.coef_.nbytes + 8_000
    # The dual of the large fit alone is 20,000 × 8 float64 = 1.3 MB.
    kept = _quiet_fit(TopKSVC(keep_dual=True, **kw), *_problem(20_000))
    assert kept.dual_coef_.shape == (20_000, 8)
    assert _size(kept) > _size(large) + kept.dual_coef_.nbytes
    # Keeping it changes nothing else.
    np.testing.assert_array_equal(kept.coef_, large.coef_)
    np.testing.assert_array_equal(kept.intercept_, large.intercept_)


def test_a_warm_start_keeps_the_dual_and_is_still_warm():
    X, y = _problem(3_000, seed=1)
    kw = dict(k=2, C=1.0, tol=1e-4, check_every=1, random_state=0)
    cold = TopKSVC(**kw).fit(X, y)
    assert cold.status_ == "converged" and not hasattr(cold, "dual_coef_")
    model = TopKSVC(warm_start=True, **kw).fit(X, y)
    assert model.n_iter_ == cold.n_iter_ and model.dual_coef_.shape == (3_000, 8)
    # The refit at a nearby C starts from the rescaled dual: far fewer epochs than a cold one.
    model.set_params(C=1.1).fit(X, y)
    recold = TopKSVC(**{**kw, "C": 1.1}).fit(X, y)
    assert model.status_ == recold.status_ == "converged"
    assert model.n_iter_ < recold.n_iter_ / 2
    assert model.primal_objective_ == pytest.approx(recold.primal_objective_, rel=1e-3)
    # Without warm_start the next fit drops it again.
    model.set_params(warm_start=False).fit(X, y)
    assert not hasattr(model, "dual_coef_") and not hasattr(model, "_c")


@pytest.mark.parametrize("kernel", ["rbf", "precomputed"])
def test_a_kernel_model_keeps_the_dual_rows_of_its_support_only(kernel):
    # Well separated classes: most examples end with zero loss and a zero dual row.
    rng = np.random.default_rng(2)
    y = rng.integers(0, 8, 300)
    X = 3.0 * rng.standard_normal((8, 5))[y] + 0.3 * rng.standard_normal((300, 5))
    Xin = X @ X.T if kernel == "precomputed" else X
    kw = dict(k=2, kernel=kernel, tol=1e-4, random_state=0)
    lean = _quiet_fit(TopKSVC(**kw), Xin, y)
    full = _quiet_fit(TopKSVC(keep_dual=True, **kw), Xin, y)
    assert not hasattr(lean, "dual_coef_")
    assert 0 < len(lean.support_) < 100
    np.testing.assert_array_equal(full.dual_coef_[np.setdiff1d(np.arange(300), full.support_)], 0.0)
    np.testing.assert_array_equal(lean.decision_function(Xin), full.decision_function(Xin))
    assert _size(lean) < _size(full) - 8 * 8 * (300 - len(lean.support_))


def test_m3l_keeps_alpha_only_when_asked():
    X, y = _problem(500, d=6, m=4, seed=3)
    Y = np.eye(4, dtype=int)[y]
    Y[::3, 0] = 1
    for kw in (dict(), dict(kernel="rbf")):
        lean = M3L(random_state=0, **kw).fit(X, Y)
        full = M3L(random_state=0, keep_dual=True, **kw).fit(X, Y)
        assert not hasattr(lean, "dual_coef_") and full.dual_coef_.shape == (500, 4)
        np.testing.assert_array_equal(lean.decision_function(X), full.decision_function(X))
    # A refit without keep_dual leaves no α of the previous fit behind.
    full.set_params(keep_dual=False).fit(X, Y)
    assert not hasattr(full, "dual_coef_")


@pytest.mark.parametrize("estimator", [TopKSVC, M3L])
def test_keep_dual_must_be_a_flag(estimator):
    X, y = _problem(40, d=3, m=3)
    with pytest.raises(InvalidInputError, match="^keep_dual: "):
        estimator(keep_dual="yes").fit(X, y)


def test_a_linear_model_of_fashion_mnist_pickles_within_0_2_mb():
    datasets = pytest.importorskip("toprank.datasets")
    try:
        # Fetched into the cache when absent, as tests/test_datasets.py does.
        data = datasets.load_fashion_mnist(subset="train")
    except (FileNotFoundError, datasets.DownloadError) as exc:
        pytest.skip(f"Fashion-MNIST is absent and could not be fetched: {exc}")
    # The size does not depend on how far the solve went: two epochs keep the test short.
    model = _quiet_fit(TopKSVC(max_epochs=2, check_every=1, random_state=0), data.data, data.target)
    size = _size(model)
    assert size <= 0.2 * 2**20, f"{size} bytes"
    assert model.coef_.shape == (10, 784)
