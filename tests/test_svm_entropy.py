"""TopKSVC with the softmax and top-k entropy losses."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from toprank.svm import TopKSVC


def blobs(n: int = 200, d: int = 5, m: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = 1.5 * rng.standard_normal((m, d))
    y = rng.integers(0, m, n)
    return centers[y] + rng.standard_normal((n, d)), y


def test_softmax_equals_multinomial_logistic_regression() -> None:
    # Same objective: ½‖W‖² + C Σ_i log Σ_j exp(w_jᵀx_i − w_yᵀx_i).
    X, y = blobs()
    ours = TopKSVC(loss="softmax", C=1.0, fit_intercept=False, tol=1e-10, max_epochs=10_000, random_state=0).fit(X, y)
    ref = LogisticRegression(C=1.0, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(X, y)
    assert ours.status_ == "converged"
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=0, atol=1e-4 * np.abs(ref.coef_).max())
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-5)


def test_entropy_k1_is_softmax_and_larger_k_converge() -> None:
    X, y = blobs()
    soft = TopKSVC(loss="softmax", tol=1e-9, random_state=0).fit(X, y)
    ent1 = TopKSVC(loss="entropy", k=1, tol=1e-9, random_state=0).fit(X, y)
    assert ent1.primal_objective_ == pytest.approx(soft.primal_objective_, rel=1e-7)
    previous = np.inf
    for k in (1, 2, 3):
        est = TopKSVC(loss="entropy", k=k, tol=1e-8, random_state=0).fit(X, y)
        assert est.status_ == "converged" and 0 <= est.duality_gap_ <= 1e-8
        # Δ_k shrinks as k grows, so the top-k entropy loss (a max over it) decreases.
        assert est.primal_objective_ <= previous + 1e-9
        previous = est.primal_objective_
        proba = est.predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_softmax_parallel_reaches_serial_optimum() -> None:
    from toprank import _core
    from toprank._options import SdcaProblem, SdcaSettings

    X, y = blobs(n=400)
    c = np.ones(len(y))
    kw = dict(n_classes=4, loss="softmax", k=1, smoothing=0.0, tol=1e-10, max_epochs=20_000, check_every=5, seed=1)
    _, _, serial = _core.topk_svm_fit(X, SdcaProblem(y.astype(np.int64), c), SdcaSettings(**kw, parallel=False))
    _, _, parallel = _core.topk_svm_fit(
        X, SdcaProblem(y.astype(np.int64), c), SdcaSettings(**kw, parallel=True), n_jobs=2
    )
    assert parallel.primal == pytest.approx(serial.primal, rel=1e-8)
