"""Tests of :mod:`toprank.attop`: TopPush, TopPushK and Pat&Mat ("Ranking at the top with
kernels", Mácha, Adam, Šmídl 2020), trained in the dual.

The references are independent of the library: cvxpy (CLARABEL) solves the primal
problems, numpy recomputes the primal objective from ``coef_`` / the Gram matrix and the
dual objective from the returned dual variables, and scipy's ``brentq`` solves Pat&Mat's
quantile equation.

Primal (θ = ``scale``, l = surrogate, σ = ±1 by class, n = all training examples):

    min_w ½‖w‖² + C Σ_{i pos} l(t − f(x_i)),   f(x) = Σ_i σ_i v_i k(x, x_i)

* TopPushK: t = mean of the K largest negative scores (TopPush: K = 1);
* Pat&Mat: t solves Σ_{j neg} l(f(x_j) − t) = n·tau;
* l(z) = max(0, 1 + θz)² (quadratic) or max(0, 1 + θz) (hinge).

Dual: D = −½‖w‖² + Σ_{pos} h(α_i) + G(β), Σα = Σβ, v ≥ 0, with
h(a) = a/θ − a²/(4Cθ²) (quadratic) or a/θ with a ≤ Cθ (hinge); TopPushK: G = 0 and
β_j ≤ Σα/K; Pat&Mat: G = Σβ/θ − (√(n·tau)/θ)‖β‖₂ (quadratic) or Σβ/θ − (n·tau/θ)·max β
(hinge).
"""

from __future__ import annotations

import pickle
import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import brentq
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import toprank
from toprank import InvalidInputError, PatMat, TopPush, TopPushK, _core
from toprank._options import AttopSettings, KernelSettings

TIGHT = dict(tol=1e-8, max_iter=2_000_000, check_every=50, random_state=0)


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def problem(n, d, seed, shift=3.0):
    """Two Gaussian classes (~40 % positives) whose means are ``shift`` apart: a problem
    where w = 0 is not optimal (TopPush's trivial solution)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (rng.random(n) < 0.4).astype(np.int64)
    y[:2] = [0, 1]  # both classes present whatever the seed
    X[y == 1] += shift / np.sqrt(d)
    return X, y


def rbf_gram(A, B, gamma):
    sq = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * sq)


def fit_quiet(est, X, y):
    """Fit, silencing ConvergenceWarning (callers assert on the gap themselves)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


# ------------------------------------------------------------ numpy references


def surrogate(z, kind, theta):
    z = np.asarray(z, dtype=np.float64)
    hinge = np.maximum(0.0, 1.0 + theta * z)
    return hinge**2 if kind == "quadratic" else hinge


def method_of(est):
    """(method, K, tau) of an estimator."""
    if isinstance(est, PatMat):
        return "patmat", 1, float(est.tau)
    if isinstance(est, TopPushK):
        return "toppushk", int(est.K), 0.0
    assert isinstance(est, TopPush)
    return "toppushk", 1, 0.0


def ref_threshold(f_neg, n, method, K, tau, kind, theta):
    """The method's threshold t of the negatives' scores (n = all examples)."""
    f_neg = np.asarray(f_neg, dtype=np.float64)
    if method == "toppushk":
        return float(np.sort(f_neg)[::-1][:K].mean())
    target = n * tau

    def g(t):
        return float(surrogate(f_neg - t, kind, theta).sum()) - target

    hi = float(f_neg.max()) + 1.0 / theta  # g(hi) = −n·tau < 0
    lo = hi - (target + 1.0) / theta  # the top negative alone exceeds n·tau
    assert g(lo) > 0 > g(hi)
    return float(brentq(g, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))


def ref_primal(w_sq, f, pos, method, K, tau, kind, theta, C):
    t = ref_threshold(f[~pos], len(f), method, K, tau, kind, theta)
    return 0.5 * w_sq + C * float(surrogate(t - f[pos], kind, theta).sum())


def ref_dual(v, pos, w_sq, method, K, tau, kind, theta, C):
    n = len(v)
    a, b = v[pos], v[~pos]
    if kind == "quadratic":
        h = a / theta - a**2 / (4 * C * theta**2)
    else:
        h = a / theta
    if method == "toppushk":
        G = 0.0
    elif kind == "quadratic":
        G = b.sum() / theta - np.sqrt(n * tau) / theta * np.linalg.norm(b)
    else:
        G = b.sum() / theta - n * tau / theta * b.max()
    return -0.5 * w_sq + float(h.sum()) + float(G)


def assert_dual_feasible(v, pos, method, K, kind, theta, C):
    a, b = v[pos], v[~pos]
    assert np.all(v >= 0), v.min()
    sa, sb = a.sum(), b.sum()
    assert abs(sa - sb) <= 1e-10 * max(1.0, sa), (sa, sb)
    if kind == "hinge":
        assert a.max() <= C * theta * (1 + 1e-12), (a.max(), C * theta)
    if method == "toppushk":
        assert b.max() <= sa / K * (1 + 1e-12) + 1e-15, (b.max(), sa / K)


def full_dual(est, pos):
    """v (α on positives, β on negatives) in example order from support_/dual_coef_."""
    v = np.zeros(len(pos))
    sigma = np.where(pos, 1.0, -1.0)
    v[est.support_] = sigma[est.support_] * est.dual_coef_
    return v


def cvxpy_optimum(F, pos, method, K, tau, kind, theta, C):
    """The primal optimum on the feature map F (rows = φ(x_i)), by CLARABEL."""
    n, r = F.shape
    w = cp.Variable(r)
    s = F @ w
    sp, sn = s[pos], s[~pos]
    if kind == "quadratic":

        def loss(z):
            return cp.square(cp.pos(1 + theta * z))
    else:

        def loss(z):
            return cp.pos(1 + theta * z)

    if method == "toppushk":
        t = cp.sum_largest(sn, K) / K
        cons = []
    else:
        t = cp.Variable()
        cons = [cp.sum(loss(sn - t)) <= n * tau]
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(loss(t - sp))), cons)
    # Tight tolerances; CLARABEL can fail on the ill-conditioned Cholesky features of an
    # RBF Gram matrix at 1e-12, so loosen them (still far below the 1e-5 comparisons).
    for tol in (1e-12, 1e-10, 1e-9):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "Solution may be inaccurate"
                prob.solve(solver="CLARABEL", tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol)
        except cp.error.SolverError:
            continue
        if prob.status == cp.OPTIMAL:
            return float(prob.value)
    raise AssertionError(f"cvxpy reference failed: {prob.status}")


# ------------------------------------------------- 1. optimality (linear kernel)

_METHODS = {
    "toppush": lambda: TopPush(),
    "toppushk2": lambda: TopPushK(K=2),
    "toppushk3": lambda: TopPushK(K=3),
    "patmat0.05": lambda: PatMat(tau=0.05),
    "patmat0.2": lambda: PatMat(tau=0.2),
}
# (seed, n, d, C, scale)
_PROBLEMS = [(0, 50, 4, 0.5, 1.0), (1, 60, 5, 2.0, 0.7)]


@pytest.mark.parametrize("kind", ["quadratic", "hinge"])
@pytest.mark.parametrize("name", list(_METHODS))
@pytest.mark.parametrize("prob", _PROBLEMS, ids=lambda p: f"seed{p[0]}")
def test_linear_optimum_matches_cvxpy_and_duality(prob, name, kind):
    seed, n, d, C, theta = prob
    X, y = problem(n, d, seed)
    pos = y == 1
    est = _METHODS[name]().set_params(kernel="linear", surrogate=kind, C=C, scale=theta, **TIGHT)
    method, K, tau = method_of(est)
    fit_quiet(est, X, y)
    assert est.status_ in ("converged", "no_progress"), est.status_
    assert 0 <= est.duality_gap_ <= 1e-6, est.duality_gap_

    opt = cvxpy_optimum(X, pos, method, K, tau, kind, theta, C)
    assert rel(est.primal_objective_, opt) < 1e-5, (est.primal_objective_, opt)
    # a weak dual bound of the reference optimum
    assert est.dual_objective_ <= opt * (1 + 1e-7)

    # the dual variables: feasible, and w = Σ σ_i v_i x_i is coef_
    v = full_dual(est, pos)
    assert np.all(v[est.support_] > 0)
    assert_dual_feasible(v, pos, method, K, kind, theta, C)
    sigma = np.where(pos, 1.0, -1.0)
    w = X.T @ (sigma * v)
    np.testing.assert_allclose(est.coef_, w, rtol=1e-10, atol=1e-12)
    assert np.linalg.norm(w) > 0.1  # not the trivial w = 0

    # P from coef_ and the method's threshold; D from v
    f = X @ est.coef_
    w_sq = float(w @ w)
    P = ref_primal(w_sq, f, pos, method, K, tau, kind, theta, C)
    D = ref_dual(v, pos, w_sq, method, K, tau, kind, theta, C)
    assert rel(P, est.primal_objective_) < 1e-9, (P, est.primal_objective_)
    assert rel(D, est.dual_objective_) < 1e-9, (D, est.dual_objective_)
    assert P - D >= -1e-9 * abs(P)
    gap = (P - D) / max(abs(P), abs(D))
    assert abs(gap - est.duality_gap_) <= 1e-9, (gap, est.duality_gap_)
    assert gap <= 1e-6
    # strong duality: D at the returned v is the reference optimum as well
    assert rel(D, opt) < 1e-5, (D, opt)
    # the threshold is the method's threshold of the training scores
    assert est.threshold_ == pytest.approx(ref_threshold(f[~pos], n, method, K, tau, kind, theta), rel=1e-8, abs=1e-9)


@pytest.mark.parametrize("method,K,tau", [("toppushk", 1, 0.0), ("toppushk", 3, 0.0), ("patmat", 1, 0.1)])
@pytest.mark.parametrize("kind", ["quadratic", "hinge"])
def test_core_attop_fit_result(method, K, tau, kind):
    """The low-level result: v ≥ 0 in example order, decision = f on the training points,
    threshold of decision, P/D/gap consistent and recomputable (RBF Gram)."""
    X, y = problem(40, 3, seed=5)
    pos = y == 1
    gamma, C, theta = 0.4, 0.8, 1.5
    settings = AttopSettings(
        method=method,
        surrogate=kind,
        c=C,
        scale=theta,
        kernel=KernelSettings("rbf", gamma=gamma, degree=3, coef0=0.0, cache_size=10.0),
        tol=1e-8,
        max_iter=1_000_000,
        check_every=50,
        seed=3,
        k=K,
        tau=tau,
    )
    v, decision, threshold, r, cache = _core.attop_fit(np.ascontiguousarray(X), np.ascontiguousarray(pos), settings)
    assert isinstance(r, _core.FitReport) and r.status in ("converged", "no_progress") and cache[1] > 0
    assert v.shape == (40,)
    assert_dual_feasible(v, pos, method, K, kind, theta, C)
    G = rbf_gram(X, X, gamma)
    sv = np.where(pos, v, -v)
    f = G @ sv
    np.testing.assert_allclose(decision, f, rtol=1e-9, atol=1e-10)
    w_sq = float(sv @ G @ sv)
    P = ref_primal(w_sq, f, pos, method, K, tau, kind, theta, C)
    D = ref_dual(v, pos, w_sq, method, K, tau, kind, theta, C)
    assert rel(P, r.primal) < 1e-8 and rel(D, r.dual) < 1e-8, (P, r.primal, D, r.dual)
    assert r.gap == pytest.approx((P - D) / max(abs(P), abs(D)), abs=1e-9)
    assert 0 <= r.gap <= 1e-6
    assert threshold == pytest.approx(ref_threshold(f[~pos], 40, method, K, tau, kind, theta), abs=1e-8)
    hist = r.history
    assert len(hist) >= 1 and hist[-1][0] == r.n_iter
    assert [h[0] for h in hist] == sorted(h[0] for h in hist)
    assert hist[-1][1] == pytest.approx(r.primal) and hist[-1][2] == pytest.approx(r.dual)


# ----------------------------------------------------------- 2. RBF kernel


def _rbf_case(seed):
    X, y = problem(45, 3, seed)
    gamma = 0.5
    return X, y, gamma, rbf_gram(X, X, gamma)


@pytest.mark.parametrize("kind", ["quadratic", "hinge"])
@pytest.mark.parametrize("name", ["toppush", "toppushk3", "patmat0.2"])
def test_rbf_optimum_matches_cvxpy_on_cholesky_features(name, kind):
    X, y, gamma, G = _rbf_case(seed=11)
    pos = y == 1
    C, theta = 1.0, 1.0
    est = _METHODS[name]().set_params(kernel="rbf", gamma=gamma, surrogate=kind, C=C, scale=theta, **TIGHT)
    method, K, tau = method_of(est)
    fit_quiet(est, X, y)
    assert est.duality_gap_ <= 1e-6
    L = np.linalg.cholesky(G + 1e-10 * np.eye(len(G)))
    opt = cvxpy_optimum(L, pos, method, K, tau, kind, theta, C)
    assert rel(est.primal_objective_, opt) < 1e-5, (est.primal_objective_, opt)
    # the dual recomputed with the Gram matrix agrees as well
    v = full_dual(est, pos)
    assert_dual_feasible(v, pos, method, K, kind, theta, C)
    sv = np.where(pos, v, -v)
    w_sq = float(sv @ G @ sv)
    D = ref_dual(v, pos, w_sq, method, K, tau, kind, theta, C)
    assert rel(D, est.dual_objective_) < 1e-8
    assert rel(D, opt) < 1e-5
    np.testing.assert_allclose(est.score_samples(X), G @ sv, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(est.support_vectors_, X[est.support_])


@pytest.mark.parametrize("kind", ["quadratic", "hinge"])
@pytest.mark.parametrize("name", ["toppush", "toppushk3", "patmat0.2"])
def test_precomputed_rbf_equals_rbf(name, kind):
    X, y, gamma, G = _rbf_case(seed=12)
    kw = dict(surrogate=kind, C=0.7, **TIGHT)
    a = fit_quiet(_METHODS[name]().set_params(kernel="rbf", gamma=gamma, **kw), X, y)
    b = fit_quiet(_METHODS[name]().set_params(kernel="precomputed", **kw), G, y)
    assert a.duality_gap_ <= 1e-6 and b.duality_gap_ <= 1e-6
    assert rel(a.primal_objective_, b.primal_objective_) < 1e-6
    assert a.threshold_ == pytest.approx(b.threshold_, abs=1e-4)
    Z = np.random.default_rng(99).normal(size=(30, X.shape[1])) + 0.5
    Gz = rbf_gram(Z, X, gamma)
    np.testing.assert_allclose(a.score_samples(Z), b.score_samples(Gz), atol=1e-4)
    np.testing.assert_array_equal(a.predict(Z), b.predict(Gz))
    np.testing.assert_allclose(a.decision_function(Z), b.decision_function(Gz), atol=1e-4)
    assert not hasattr(b, "support_vectors_")


def test_poly_kernel_equals_precomputed_poly_gram():
    X, y = problem(40, 3, seed=13)
    gamma, coef0, degree = 0.3, 1.0, 2
    G = (gamma * X @ X.T + coef0) ** degree
    kw = dict(C=0.5, **TIGHT)
    a = fit_quiet(TopPushK(K=2, kernel="poly", gamma=gamma, coef0=coef0, degree=degree, **kw), X, y)
    b = fit_quiet(TopPushK(K=2, kernel="precomputed", **kw), G, y)
    assert a.duality_gap_ <= 1e-6 and b.duality_gap_ <= 1e-6
    assert rel(a.primal_objective_, b.primal_objective_) < 1e-6


def test_linear_kernel_equals_precomputed_linear_gram():
    X, y = problem(50, 4, seed=14)
    kw = dict(tau=0.1, C=0.5, **TIGHT)
    a = fit_quiet(PatMat(kernel="linear", **kw), X, y)
    b = fit_quiet(PatMat(kernel="precomputed", **kw), X @ X.T, y)
    assert rel(a.primal_objective_, b.primal_objective_) < 1e-6
    Z = np.random.default_rng(7).normal(size=(20, 4))
    np.testing.assert_allclose(a.score_samples(Z), b.score_samples(Z @ X.T), atol=1e-4)


def test_default_gamma_is_one_over_d_var():
    X, y = problem(40, 3, seed=15)
    est = TopPush(tol=1e-4, random_state=0).fit(X, y)
    assert est._gamma == pytest.approx(1.0 / (X.shape[1] * X.var()))
    G = rbf_gram(X, X, 1.0 / (X.shape[1] * X.var()))
    b = fit_quiet(TopPush(kernel="precomputed", tol=1e-4, random_state=0), G, y)
    np.testing.assert_allclose(est.score_samples(X), b.score_samples(G), atol=1e-2)


# ---------------------------------------------------------------- 3. float32


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("name", ["toppushk2", "patmat0.05"])
def test_float32_same_model_as_float64(name, kernel):
    X, y = problem(50, 4, seed=21)
    X32 = X.astype(np.float32)
    kw = dict(kernel=kernel, gamma=0.5 if kernel == "rbf" else None, **TIGHT)
    a = fit_quiet(_METHODS[name]().set_params(**kw), X32, y)
    b = fit_quiet(_METHODS[name]().set_params(**kw), X32.astype(np.float64), y)
    assert a.duality_gap_ <= 1e-6 and b.duality_gap_ <= 1e-6
    assert rel(a.primal_objective_, b.primal_objective_) < 1e-5
    assert a.threshold_ == pytest.approx(b.threshold_, abs=1e-3)
    np.testing.assert_allclose(a.score_samples(X32), b.score_samples(X32), atol=1e-3)
    assert a.score_samples(X32).dtype == np.float64
    # float32 data is close to the float64 original: the model is too
    c = fit_quiet(_METHODS[name]().set_params(**kw), X, y)
    assert rel(a.primal_objective_, c.primal_objective_) < 1e-5


# ----------------------------------------------- 4. threshold and predictions


@pytest.mark.parametrize("kind", ["quadratic", "hinge"])
@pytest.mark.parametrize("name", ["toppush", "toppushk2", "toppushk3", "patmat0.05", "patmat0.2"])
def test_threshold_is_the_methods_threshold_of_training_scores(name, kind):
    X, y = problem(60, 4, seed=31, shift=2.0)
    est = _METHODS[name]().set_params(surrogate=kind, scale=1.3, C=0.8, tol=1e-5, random_state=0)
    fit_quiet(est, X, y)  # the default RBF kernel
    method, K, tau = method_of(est)
    neg = y == 0
    f = est.score_samples(X)
    if method == "toppushk":
        assert est.threshold_ == pytest.approx(np.sort(f[neg])[::-1][:K].mean(), rel=1e-8, abs=1e-8)
    else:
        # Σ_neg l(f_j − t) = n·tau
        lhs = surrogate(f[neg] - est.threshold_, kind, 1.3).sum()
        assert lhs == pytest.approx(len(y) * tau, rel=1e-8)
        assert est.threshold_ == pytest.approx(ref_threshold(f[neg], len(y), method, K, tau, kind, 1.3), abs=1e-8)
    # predict: pos_label exactly where the score is above the threshold
    Z = np.vstack([X, np.random.default_rng(1).normal(size=(40, 4))])
    s = est.score_samples(Z)
    pred = est.predict(Z)
    np.testing.assert_array_equal(pred, np.where(s > est.threshold_, 1, 0))
    df = est.decision_function(Z)
    np.testing.assert_allclose(df, s - est.threshold_, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(df > 0, pred == est.classes_[1])
    # the model ranks: most positives above the threshold, few negatives
    assert np.mean(est.predict(X)[y == 1] == 1) > 0.7
    assert np.mean(est.predict(X)[neg] == 1) < 0.3


@pytest.mark.parametrize("name", ["toppushk2", "patmat0.2"])
def test_pos_label_smaller_class(name):
    X, y = problem(50, 3, seed=41)
    labels = np.where(y == 1, "b", "a")  # classes_ = ["a", "b"]
    kw = dict(C=0.5, kernel="linear", **TIGHT)
    # "a" (the negatives of problem()) is the positive class: pushed to the top
    est = fit_quiet(_METHODS[name]().set_params(pos_label="a", **kw), X, labels)
    assert est.pos_label_ == "a" and list(est.classes_) == ["a", "b"]
    s = est.score_samples(X)
    assert s[labels == "a"].mean() > s[labels == "b"].mean()
    pred = est.predict(X)
    np.testing.assert_array_equal(pred, np.where(s > est.threshold_, "a", "b"))
    assert set(pred) == {"a", "b"}
    df = est.decision_function(X)
    np.testing.assert_allclose(df, est.threshold_ - s, atol=1e-12)  # oriented towards classes_[1]
    np.testing.assert_array_equal(df > 0, pred == "b")
    # same problem as relabelling: "a" → the greater label with the default pos_label
    flipped = np.where(labels == "a", "z", "b")  # classes_ = ["b", "z"], default pos_label "z"
    ref = fit_quiet(_METHODS[name]().set_params(**kw), X, flipped)
    assert ref.pos_label_ == "z"
    assert rel(est.primal_objective_, ref.primal_objective_) < 1e-6
    np.testing.assert_allclose(est.score_samples(X), ref.score_samples(X), atol=1e-4)
    assert est.threshold_ == pytest.approx(ref.threshold_, abs=1e-4)
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-4)


def test_toppushk_with_K1_is_toppush():
    X, y = problem(50, 4, seed=43)
    for kind in ("quadratic", "hinge"):
        a = fit_quiet(TopPush(surrogate=kind, tol=1e-6, random_state=0), X, y)
        b = fit_quiet(TopPushK(K=1, surrogate=kind, tol=1e-6, random_state=0), X, y)
        np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
        assert a.threshold_ == b.threshold_ and a.primal_objective_ == b.primal_objective_
        f = a.score_samples(X)
        assert a.threshold_ == pytest.approx(f[y == 0].max(), abs=1e-8)


def test_toppush_predicts_no_training_negative_as_positive():
    # TopPush's threshold is the largest negative training score: no training negative is
    # above it, so none may be predicted positive.
    offenders = []
    for seed in range(4):
        X, y = problem(50, 4, seed)
        for kernel in ("linear", "rbf"):
            for kind in ("quadratic", "hinge"):
                est = fit_quiet(TopPush(kernel=kernel, surrogate=kind, tol=1e-6, random_state=0), X, y)
                n_bad = int(np.sum(est.predict(X)[y == 0] == 1))
                if n_bad:
                    excess = float(est.score_samples(X)[y == 0].max() - est.threshold_)
                    offenders.append((seed, kernel, kind, n_bad, excess))
    assert offenders == []


def test_pos_label_changes_the_negatives_counted_by_K():
    X, y = problem(30, 3, seed=42)
    n1 = int((y == 1).sum())
    TopPushK(K=n1 - 1, pos_label=0, tol=1e-3).fit(X, y)  # negatives are the n1 ones
    with pytest.raises(InvalidInputError, match="^K: "):
        TopPushK(K=n1, pos_label=0).fit(X, y)


# ------------------------------------------------------------- 5. bad input


def _xy(n=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.r_[np.zeros(12), np.ones(n - 12)].astype(np.int64)
    return X, y


def _bad(est, match, X=None, y=None):
    X0, y0 = _xy()
    X = X0 if X is None else X
    y = y0 if y is None else y
    with pytest.raises(InvalidInputError, match=match):
        est.fit(X, y)


def test_invalid_input_error_is_value_error():
    assert issubclass(InvalidInputError, ValueError)
    assert toprank.InvalidInputError is toprank.exceptions.InvalidInputError


@pytest.mark.parametrize("cls", [TopPush, TopPushK, PatMat])
def test_bad_labels(cls):
    X, y = _xy()
    est = cls(K=2) if cls is TopPushK else cls()
    _bad(est, "^y: ", y=np.zeros(20, dtype=np.int64))  # one class
    _bad(est, "^y: ", y=np.arange(20) % 3)  # three classes
    _bad(est.set_params(pos_label=5), "^pos_label: ")
    _bad(est.set_params(pos_label="a"), "^pos_label: ")


@pytest.mark.parametrize("tau", [0, 0.0, 1, 1.0, -0.1, 1.5, float("nan"), float("inf")])
def test_bad_tau(tau):
    _bad(PatMat(tau=tau), "^tau: ")


@pytest.mark.parametrize("K", [12, 13, 100, 0, -1])
def test_bad_K(K):
    _bad(TopPushK(K=K), "^K: ")  # 12 negatives: 1 ≤ K ≤ 11


def test_largest_valid_K_fits():
    X, y = _xy()
    est = TopPushK(K=11, tol=1e-4, random_state=0).fit(X, y)
    f = est.score_samples(X)
    assert est.threshold_ == pytest.approx(np.sort(f[y == 0])[::-1][:11].mean(), abs=1e-8)


@pytest.mark.parametrize("cls", [TopPush, PatMat])
def test_bad_params(cls):
    _bad(cls(C=0.0), "^C: ")
    _bad(cls(C=-1.0), "^C: ")
    _bad(cls(C=float("nan")), "^C: ")
    _bad(cls(scale=0.0), "^scale: ")
    _bad(cls(scale=-2.0), "^scale: ")
    _bad(cls(surrogate="logistic"), "^surrogate: ")
    _bad(cls(surrogate="Hinge"), "^surrogate: ")
    _bad(cls(kernel="sigmoid"), "^kernel: ")
    _bad(cls(kernel=None), "^kernel: ")
    _bad(cls(tol=0.0), "^tol: ")
    _bad(cls(max_iter=0), "^max_iter: ")
    _bad(cls(check_every=0), "^check_every: ")
    _bad(cls(gamma=-1.0), "^gamma: ")
    _bad(cls(n_jobs=0), "n_jobs")


def test_bad_data():
    X, y = _xy()
    _bad(TopPush(kernel="precomputed"), "^X: .*square", X=(X @ X.T)[:, :15])
    Xn = X.copy()
    Xn[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TopPush().fit(Xn, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        TopPush().fit(X, y[:-1])
    est = TopPush(kernel="linear", tol=1e-4).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        est.score_samples(Xn)


def test_not_fitted():
    from sklearn.exceptions import NotFittedError

    X, _ = _xy()
    for method in ("predict", "decision_function", "score_samples"):
        with pytest.raises(NotFittedError):
            getattr(PatMat(), method)(X)


# ------------------------------------------------- 6. scikit-learn contract


@parametrize_with_checks([TopPush(), TopPushK(K=2), PatMat(tau=0.1)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


@pytest.fixture(scope="module")
def fitted():
    X, y = problem(60, 4, seed=51, shift=2.0)
    labels = np.array(["neg", "pos"])[y]
    models = [
        TopPush(tol=1e-6, random_state=0),
        TopPushK(K=3, kernel="linear", tol=1e-6, random_state=0),
        PatMat(tau=0.1, surrogate="hinge", tol=1e-6, random_state=0),
    ]
    return [fit_quiet(m, X, labels) for m in models], X, labels


def test_pickle_roundtrip(fitted):
    models, X, labels = fitted
    Z = np.vstack([X, np.random.default_rng(3).normal(size=(20, 4))])
    for est in models:
        est2 = pickle.loads(pickle.dumps(est))
        np.testing.assert_array_equal(est2.predict(Z), est.predict(Z))
        np.testing.assert_array_equal(est2.score_samples(Z), est.score_samples(Z))
        np.testing.assert_array_equal(est2.decision_function(Z), est.decision_function(Z))
        for attr in ("support_", "dual_coef_", "classes_"):
            np.testing.assert_array_equal(getattr(est2, attr), getattr(est, attr))
        assert est2.threshold_ == est.threshold_ and est2.history_ == est.history_
        assert est2.status_ == est.status_ and est2.pos_label_ == est.pos_label_


def test_clone_and_random_state_reproducible(fitted):
    models, X, labels = fitted
    for est in models:
        c = clone(est)
        assert c.get_params() == est.get_params()
        assert not hasattr(c, "dual_coef_")
        fit_quiet(c, X, labels)
        np.testing.assert_array_equal(c.support_, est.support_)
        np.testing.assert_array_equal(c.dual_coef_, est.dual_coef_)
        assert c.n_iter_ == est.n_iter_ and c.threshold_ == est.threshold_


@pytest.mark.parametrize("name", ["toppush", "patmat0.2"])
def test_random_state_and_n_jobs_give_identical_fits(name):
    X, y = problem(50, 4, seed=52)
    fits = [
        fit_quiet(_METHODS[name]().set_params(tol=1e-6, random_state=rs, n_jobs=nj), X, y)
        for rs, nj in [(3, None), (3, None), (3, 1), (3, 2), (np.random.RandomState(3), None)]
    ]
    for other in fits[1:]:
        np.testing.assert_array_equal(other.support_, fits[0].support_)
        np.testing.assert_array_equal(other.dual_coef_, fits[0].dual_coef_)
        assert other.primal_objective_ == fits[0].primal_objective_


def test_pipeline_and_grid_search():
    X, y = problem(60, 4, seed=53, shift=2.5)
    X = X * np.array([1e3, 1.0, 1e-2, 10.0])
    pipe = make_pipeline(StandardScaler(), PatMat(tau=0.2, tol=1e-6, random_state=0))
    fit_quiet(pipe, X, y)
    Xs = StandardScaler().fit_transform(X)
    manual = fit_quiet(PatMat(tau=0.2, tol=1e-6, random_state=0), Xs, y)
    np.testing.assert_array_equal(pipe[-1].dual_coef_, manual.dual_coef_)
    np.testing.assert_array_equal(pipe.predict(X), manual.predict(Xs))
    assert pipe.score(X, y) > 0.7
    grid = GridSearchCV(
        Pipeline([("s", StandardScaler()), ("m", TopPushK(K=2, tol=1e-4, random_state=0))]), {"m__C": [0.1, 1.0]}, cv=2
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        grid.fit(X, y)
    assert grid.best_params_["m__C"] in (0.1, 1.0)
    assert len(grid.cv_results_["mean_test_score"]) == 2
    assert grid.predict(X).shape == (60,)
    assert grid.best_estimator_[-1].C == grid.best_params_["m__C"]


def test_verbose_prints_progress(capsys):
    X, y = problem(50, 4, seed=54)
    # verbose=2: every check's line (verbose=1 paces them: tests/test_verbose.py), then the status.
    est = TopPushK(K=2, tol=1e-8, check_every=20, verbose=2, random_state=0)
    fit_quiet(est, X, y)
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == len(est.history_) + 1 and len(est.history_) >= 2
    assert lines[-1].startswith(f"[TopPushK] {est.status_} after {est.n_iter_} iterations")
    for ln, (it, primal, dual, _gap, _) in zip(lines, est.history_):
        low = ln.lower()
        assert ln.startswith("[TopPushK]") and "primal" in low and "dual" in low and "gap" in low
        toks = ln.replace("s", " ").split()
        nums = []
        for tok in toks:
            try:
                nums.append(float(tok))
            except ValueError:
                pass
        assert it in nums
        assert any(rel(x, primal) < 1e-6 for x in nums) and any(rel(x, dual) < 1e-6 for x in nums)
    capsys.readouterr()
    fit_quiet(TopPushK(K=2, tol=1e-8, check_every=20, random_state=0), X, y)
    assert capsys.readouterr().out == ""  # silent by default


def test_convergence_warning_when_out_of_iterations():
    X, y = problem(50, 4, seed=55)
    with pytest.warns(ConvergenceWarning, match="status .max_iter."):
        est = PatMat(tau=0.1, tol=1e-12, max_iter=10, check_every=5, random_state=0).fit(X, y)
    assert est.status_ == "max_iter" and est.n_iter_ <= 10
    assert est.duality_gap_ > 1e-12


def test_parallel_partner_scan_matches_one_thread():
    # Above 16,384 partners per class the scan runs in parallel chunks; the pick (largest
    # gain, ties to the smaller index) must not depend on the thread count.
    rng = np.random.default_rng(5)
    n = 40_000
    X = rng.normal(size=(n, 3))
    pos = np.ascontiguousarray(rng.random(n) < 0.5)
    X[pos] += 0.8
    settings = AttopSettings(
        method="toppushk",
        surrogate="quadratic",
        c=1.0,
        scale=1.0,
        kernel=KernelSettings("rbf", gamma=0.5, degree=3, coef0=0.0),
        tol=1e-12,
        max_iter=40,
        check_every=20,
        seed=3,
    )
    one = _core.attop_fit(X, pos, settings, n_jobs=1)
    two = _core.attop_fit(X, pos, settings, n_jobs=2)
    assert one[3].n_iter == two[3].n_iter == 40
    assert np.count_nonzero(one[0]) > 2
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])


@pytest.mark.parametrize("params", [{"K": 2**70}, {"max_iter": 2**64}, {"check_every": 2**64}, {"degree": 2**64}])
def test_oversized_integers_name_the_argument(params):
    X, y = problem(30, 3, seed=1)
    name = next(iter(params))
    with pytest.raises(InvalidInputError, match=f"^{name}: "):
        TopPushK(**params).fit(X, y)


def test_memmapped_precomputed_kernel(tmp_path):
    # A Gram matrix larger than RAM would live in a memory map: it is read in place.
    X, y = problem(50, 4, seed=2)
    G = rbf_gram(X, X, 0.3)
    mm = np.memmap(tmp_path / "gram.f64", dtype=np.float64, mode="w+", shape=G.shape)
    mm[:] = G
    mm.flush()
    ro = np.memmap(tmp_path / "gram.f64", dtype=np.float64, mode="r", shape=G.shape)
    a = fit_quiet(PatMat(tau=0.1, kernel="precomputed", **TIGHT), G, y)
    b = fit_quiet(PatMat(tau=0.1, kernel="precomputed", **TIGHT), ro, y)
    assert b.primal_objective_ == pytest.approx(a.primal_objective_, rel=1e-12)
    np.testing.assert_array_equal(a.predict(G), b.predict(ro))
