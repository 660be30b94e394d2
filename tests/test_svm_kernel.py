"""Kernel TopKSVC: precomputed linear Gram == linear model; RBF/poly fit and predict."""

import numpy as np
import pytest
import scipy.sparse as sp

from toprank import InvalidInputError
from toprank.svm import TopKSVC


def blobs(n: int = 90, d: int = 4, m: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = 2.0 * rng.standard_normal((m, d))
    y = rng.integers(0, m, n)
    return centers[y] + rng.standard_normal((n, d)), y


@pytest.mark.parametrize("loss,k,smoothing", [("alpha", 1, 0.0), ("alpha", 2, 0.0), ("beta", 2, 1.0)])
def test_precomputed_linear_gram_equals_linear_model(loss: str, k: int, smoothing: float) -> None:
    X, y = blobs()
    kw = dict(k=k, loss=loss, smoothing=smoothing, C=0.5, tol=1e-10, max_epochs=50_000, random_state=0)
    lin = TopKSVC(fit_intercept=False, **kw).fit(X, y)
    pre = TopKSVC(kernel="precomputed", **kw).fit(X @ X.T, y)
    assert pre.primal_objective_ == pytest.approx(lin.primal_objective_, rel=1e-6)
    # The linear model's W and the kernel model's scores agree on new points.
    Z = blobs(seed=1)[0]
    np.testing.assert_allclose(pre.decision_function(Z @ X.T), lin.decision_function(Z), rtol=1e-4, atol=1e-4)


def test_linear_kernel_via_data_equals_precomputed() -> None:
    X, y = blobs()
    a = TopKSVC(kernel="poly", degree=1, gamma=1.0, coef0=0.0, C=0.5, tol=1e-10, max_epochs=50_000, random_state=0).fit(
        X, y
    )
    b = TopKSVC(kernel="precomputed", C=0.5, tol=1e-10, max_epochs=50_000, random_state=0).fit(X @ X.T, y)
    assert a.primal_objective_ == pytest.approx(b.primal_objective_, rel=1e-6)


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_rbf_and_poly_fit_predict(kernel: str) -> None:
    X, y = blobs(n=150)
    est = TopKSVC(kernel=kernel, C=1.0, tol=1e-4, random_state=0).fit(X, y)
    assert est.status_ == "converged" and est.duality_gap_ <= 1e-4
    assert est.score(X, y) > 0.8
    assert est.predict_topk(X[:5], k=2).shape == (5, 2)
    assert est.support_vectors_.shape[0] == len(est.support_) > 0


def test_rbf_gamma_scale_matches_scikit_learn_convention() -> None:
    X, y = blobs()
    est = TopKSVC(kernel="rbf", random_state=0).fit(X, y)
    assert est._gamma == pytest.approx(1.0 / (X.shape[1] * X.var()))


def test_kernel_bad_inputs() -> None:
    X, y = blobs()
    with pytest.raises((TypeError, ValueError)):
        TopKSVC(kernel="precomputed").fit(sp.csr_matrix(X @ X.T), y)
    with pytest.raises(InvalidInputError, match="square"):
        TopKSVC(kernel="precomputed").fit(X @ X.T[:, :50], y)
    with pytest.raises(ValueError, match="gamma"):
        TopKSVC(kernel="rbf", gamma=-1.0).fit(X, y)
    asym = X @ X.T
    asym[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric|X"):
        TopKSVC(kernel="precomputed").fit(asym, y)
