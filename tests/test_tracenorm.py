"""Trace-norm multinomial logistic regression: rank-one descent against an independent
convex solve (cvxpy, normNuc), its own optimality conditions (C1)–(C2), the same model
from raw, CSR and decoded-PQ input, the regularisation path, the core solver object, Ctrl-C,
and bad input. (The Rust pieces have their own unit tests in src/solvers/tracenorm/.)"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from _interrupt import interrupt_during
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from toprank import _core
from toprank.exceptions import InvalidInputError
from toprank.pq import CompressedMatrix, ProductQuantizer
from toprank.tracenorm import TraceNormLogisticRegression, tracenorm_path

cp = pytest.importorskip("cvxpy")


def _problem(n=80, d=7, m=5, rank=2, seed=0):
    """Classes from a rank-`rank` W plus noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(d, rank)) @ rng.normal(size=(rank, m))
    y = np.argmax(X @ W + rng.gumbel(size=(n, m)), axis=1)
    return X, y


def _objective(X, y, W, b, lambda_trace, lambda_fro):
    """J(W, b) in NumPy: λ1‖W‖_* + λ2‖W‖²_F + mean(logsumexp(S) − S_y)."""
    S = X @ W + b
    top = S.max(axis=1, keepdims=True)
    lse = top[:, 0] + np.log(np.exp(S - top).sum(axis=1))
    loss = np.mean(lse - S[np.arange(len(y)), y])
    return lambda_trace * np.linalg.svd(W, compute_uv=False).sum() + lambda_fro * np.sum(W * W) + loss


def _reference(X, y, lambda_trace, lambda_fro, fit_intercept=True):
    n, d = X.shape
    m = int(y.max()) + 1
    W, b = cp.Variable((d, m)), cp.Variable(m)
    S = X @ W + (np.ones((n, 1)) @ cp.reshape(b, (1, m), order="C") if fit_intercept else 0)
    Y = np.eye(m)[y]
    loss = (cp.sum(cp.log_sum_exp(S, axis=1)) - cp.sum(cp.multiply(Y, S))) / n
    problem = cp.Problem(cp.Minimize(lambda_trace * cp.normNuc(W) + lambda_fro * cp.sum_squares(W) + loss))
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, max_iter=500)
    return problem.value, W.value, (b.value if fit_intercept else np.zeros(m))


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("lambdas", [(0.05, 0.01), (0.2, 0.0), (0.01, 0.05)])
def test_reaches_the_optimum_of_an_independent_convex_solve(lambdas, fit_intercept):
    X, y = _problem()
    lambda_trace, lambda_fro = lambdas
    model = TraceNormLogisticRegression(
        lambda_trace, lambda_fro, fit_intercept=fit_intercept, tol=1e-9, max_iter=3000
    ).fit(X, y)
    assert model.status_ == "converged"
    value, W_ref, _ = _reference(X, y, lambda_trace, lambda_fro, fit_intercept)
    ours = _objective(X, y, model.coef_.T, model.intercept_, lambda_trace, lambda_fro)
    assert ours == pytest.approx(model.objective_, rel=1e-9)
    assert ours == pytest.approx(value, rel=1e-6)
    # Strong convexity (λ2 > 0) pins W down; with λ2 = 0 only the objective is unique.
    if lambda_fro > 0:
        np.testing.assert_allclose(model.coef_.T, W_ref, atol=2e-3)
    assert model.rank_ == np.linalg.matrix_rank(model.coef_, tol=1e-6)


def test_optimality_conditions_hold_at_the_solution():
    X, y = _problem(n=120, d=9, m=6, seed=1)
    lambda_trace, lambda_fro, tol = 0.05, 0.01, 1e-7
    model = TraceNormLogisticRegression(lambda_trace, lambda_fro, tol=tol, max_iter=2000).fit(X, y)
    W, b = model.coef_.T, model.intercept_
    S = X @ W + b
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    G = X.T @ (P - np.eye(6)[y]) / len(y) + 2 * lambda_fro * W
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
    # (C1): no atom descends by more than tol.
    assert np.linalg.norm(G, 2) <= lambda_trace + tol * 1.01
    # (C2): the atoms of W (its singular pairs) are stationary; the intercept too.
    for j in np.flatnonzero(s > 1e-8 * s[0]):
        assert abs(U[:, j] @ G @ Vt[j] + lambda_trace) <= tol * 1.01
    assert np.abs((P - np.eye(6)[y]).sum(axis=0) / len(y)).max() <= tol
    assert model.rank_ < min(X.shape[1], 6)


def test_raw_csr_and_compressed_inputs_give_the_same_model():
    rng = np.random.default_rng(3)
    X, y = _problem(n=300, d=8, m=4, seed=3)
    X = X + 0.1 * rng.normal(size=X.shape)
    pq = ProductQuantizer(n_subspaces=4, n_bits=4, n_iter=6, random_state=0).fit(X)
    codes = pq.encode(X)
    decoded = pq.decode(codes).astype(np.float64)
    models = [
        TraceNormLogisticRegression(0.02, 0.01, tol=1e-9, max_iter=2000, random_state=0).fit(data, y)
        for data in (decoded, sp.csr_matrix(decoded), CompressedMatrix(pq, codes), decoded.astype(np.float32))
    ]
    for other in models[1:]:
        assert other.status_ == "converged"
        np.testing.assert_allclose(other.coef_, models[0].coef_, atol=1e-6)
        assert other.objective_ == pytest.approx(models[0].objective_, rel=1e-9)
    # Predicting on codes or on raw features: the same model, other inputs.
    np.testing.assert_allclose(
        models[2].decision_function(CompressedMatrix(pq, codes)), models[0].decision_function(decoded), atol=1e-5
    )


def test_results_do_not_depend_on_the_thread_count():
    X, y = _problem(n=2000, d=20, m=6, seed=4)
    a = TraceNormLogisticRegression(0.01, 0.001, random_state=0, n_jobs=1).fit(X, y)
    b = TraceNormLogisticRegression(0.01, 0.001, random_state=0, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_iter_ == b.n_iter_


def test_path_is_warm_started_and_lowers_rank_with_lambda():
    X, y = _problem(n=300, d=10, m=8, rank=3, seed=5)
    X_val, y_val = _problem(n=200, d=10, m=8, rank=3, seed=5)
    lambdas = np.geomspace(0.2, 0.002, 5)
    path = tracenorm_path(X, y, lambdas, lambda_fro=1e-3, validation_data=(X_val, y_val), topk=(1, 3), tol=1e-6)
    assert [p.lambda_trace for p in path] == sorted(lambdas, reverse=True)
    ranks = [p.rank for p in path]
    assert ranks[0] < ranks[-1] and ranks[0] <= 2
    for p in path:
        cold = TraceNormLogisticRegression(p.lambda_trace, 1e-3, tol=1e-6).fit(X, y)
        assert p.objective == pytest.approx(cold.objective_, rel=1e-6)
        assert 0 <= p.validation_topk[1] <= p.validation_topk[3] <= 1


def test_estimator_contract():
    X, y = _problem(n=150, d=6, m=4)
    labels = np.array(["a", "b", "c", "d"])[y]
    model = TraceNormLogisticRegression(0.01, 0.001).fit(X, labels)
    assert set(model.predict(X)) <= set(labels)
    assert model.predict_proba(X).sum(axis=1) == pytest.approx(1.0)
    assert model.predict_topk(X, k=2).shape == (150, 2)
    np.testing.assert_array_equal(model.predict_topk(X, k=1)[:, 0], model.predict(X))
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))
    clone(model).fit(X, labels)
    pipe = make_pipeline(StandardScaler(), TraceNormLogisticRegression(0.01, 0.001)).fit(X, labels)
    assert pipe.score(X, labels) > 0.5
    grid = GridSearchCV(TraceNormLogisticRegression(lambda_fro=0.001), {"lambda_trace": [0.1, 0.01]}, cv=2).fit(X, y)
    assert grid.best_params_["lambda_trace"] in (0.1, 0.01)
    warm = TraceNormLogisticRegression(0.01, 0.001, warm_start=True).fit(X, y)
    n_cold = warm.n_iter_
    warm.fit(X, y)
    assert warm.n_iter_ <= max(2, n_cold // 2)


def test_features_with_an_offset_reach_the_same_optimum():
    # The intercept is unpenalised, so X + 50 has the same optimal W (the intercept takes
    # the shift). Uncentred, the subspace step's mean couples W with b: this fit ran to
    # max_iter with J 0.9 % above the optimum.
    X, y = _problem(n=300, d=20, m=6, seed=8)
    kw = dict(lambda_trace=0.01, lambda_fro=1e-4, tol=1e-5, random_state=0)
    centred = TraceNormLogisticRegression(**kw).fit(X, y)
    shifted = TraceNormLogisticRegression(**kw).fit(X + 50.0, y)
    assert shifted.status_ == "converged"
    assert shifted.objective_ == pytest.approx(centred.objective_, rel=1e-5)
    np.testing.assert_allclose(shifted.decision_function(X + 50.0), centred.decision_function(X), atol=5e-2)


def test_a_refused_warm_start_leaves_the_model_whole():
    X, y = _problem(n=120, d=6, m=3)
    model = TraceNormLogisticRegression(0.01, 0.001, warm_start=True).fit(X, y)
    before = model.predict(X)
    relabelled = np.array(["a", "b", "c"])[np.unique(y, return_inverse=True)[1]]
    for X_new, y_new in [(X, relabelled), (np.hstack([X, X]), y)]:
        with pytest.raises(InvalidInputError, match="warm_start"):
            model.fit(X_new, y_new)
        np.testing.assert_array_equal(model.classes_, np.unique(y))
        assert model.n_features_in_ == X.shape[1]
        np.testing.assert_array_equal(model.predict(X), before)


def test_pickled_model_does_not_grow_with_the_training_set():
    sizes = []
    for n in (100, 4000):
        X, y = _problem(n=n, d=6, m=4)
        model = TraceNormLogisticRegression(0.01, 0.001, warm_start=True).fit(X, y)
        sizes.append(len(pickle.dumps(model)))
        # A warm start from the unpickled model recomputes what was not kept.
        again = pickle.loads(pickle.dumps(model))
        assert again.fit(X, y).objective_ == pytest.approx(model.objective_, rel=1e-6)
    assert sizes[1] < sizes[0] + 1000


@pytest.mark.parametrize(
    "params, data, message",
    [
        (dict(lambda_trace=-1.0), None, "lambda_trace"),
        (dict(lambda_fro=np.nan), None, "lambda_fro"),
        (dict(tol=0.0), None, "tol"),
        (dict(max_iter=0), None, "max_iter"),
        (dict(max_iter=-1), None, "max_iter"),
        (dict(subspace_every=0), None, "subspace_every"),
        (dict(lambda_trace="0.1"), None, "lambda_trace"),
        (dict(), "nan", "NaN"),
        (dict(), "one_class", "y"),
        (dict(), "short_y", "inconsistent numbers of samples"),
    ],
)
def test_bad_input_raises_naming_the_argument(params, data, message):
    X, y = _problem(n=30)
    if data == "nan":
        X[3, 2] = np.nan
    elif data == "one_class":
        y = np.zeros_like(y)
    elif data == "short_y":
        y = y[:-1]
    with pytest.raises((InvalidInputError, ValueError), match=message):
        TraceNormLogisticRegression(**params).fit(X, y)


@pytest.mark.parametrize("scale", [1e300, 1e160, 1e154])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_an_x_whose_squares_overflow_is_named(scale, sparse):
    # These raised "subspace step: no solution (non-finite weights or intercept)", or
    # Python's bare OverflowError (34, 'Numerical result out of range') at 1e154.
    X, y = _problem(n=30)
    X = X * scale
    with pytest.raises(InvalidInputError, match=r"^X: the squared norm of row \d+ .* overflows float64 .*rescale X"):
        TraceNormLogisticRegression().fit(sp.csr_matrix(X) if sparse else X, y)


def _solver(**changes):
    settings = dict(fit_intercept=True, tol=1e-4, max_iter=100, subspace_every=5, seed=0)
    lambdas = changes.pop("lambdas", (0.01, 0.001))
    return _core.TraceNormSolver(*lambdas, **{**settings, **changes})


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(lambdas=(-1.0, 0.0)), "^lambda_trace:"),
        (dict(lambdas=(0.0, np.inf)), "^lambda_fro:"),
        (dict(tol=0.0), "^tol:"),
        (dict(tol=np.nan), "^tol:"),
        (dict(max_iter=0), "^max_iter:"),
        (dict(subspace_every=0), "^subspace_every:"),
    ],
)
def test_the_core_solver_names_a_bad_setting(changes, message):
    with pytest.raises(InvalidInputError, match=message):
        _solver(**changes)


def test_the_core_solver_refuses_bad_data_and_starts():
    X, y = _problem(n=40, d=5, m=3)
    y = y.astype(np.uint32)
    fit = _solver().fit(X, y)
    assert fit.status == "converged" and fit.coef.shape == (5, 3)
    with pytest.raises(InvalidInputError, match="^y:"):
        _solver().fit(X, y[:-1])
    with pytest.raises(InvalidInputError, match="^y:"):
        _solver().fit(X, np.zeros(40, dtype=np.uint32))
    with pytest.raises(InvalidInputError, match="^X:"):
        _solver().fit(np.full((40, 5), np.nan), y)
    u, v, theta, b = fit.atoms
    np.testing.assert_allclose((u * theta) @ v.T, fit.coef, atol=1e-12)
    with pytest.raises(InvalidInputError, match="^warm_start:"):
        _solver().fit(X, y, start=(u[:-1], v, theta, b))
    with pytest.raises(InvalidInputError, match="^warm_start:"):
        _solver().fit(X, y, start=(u, v, -theta, b))
    with pytest.raises(InvalidInputError, match="^start:"):
        _solver().fit(X, y, start="atoms")
    # A previous fit on the same data (with its gradient) or its atoms alone: the same optimum.
    for start in (fit, fit.atoms):
        again = _solver(lambdas=(0.005, 0.001)).fit(X, y, start=start)
        assert again.objective == pytest.approx(_solver(lambdas=(0.005, 0.001)).fit(X, y).objective, rel=1e-6)


def test_a_fit_stops_on_ctrl_c():

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 100))
    y = rng.integers(0, 40, size=20000)
    interrupt_during(lambda: TraceNormLogisticRegression(1e-5, 0.0, tol=1e-12, max_iter=100000).fit(X, y))


@pytest.mark.parametrize(
    "lambdas, message",
    [([], "at least one"), ([[0.1]], "one-dimensional"), (["a"], "numbers"), ([0.1, -1.0], "lambdas_trace")],
)
def test_bad_path_lambdas_raise(lambdas, message):
    X, y = _problem(n=30)
    with pytest.raises(InvalidInputError, match=message):
        tracenorm_path(X, y, lambdas)


def test_predicting_on_wrong_features_raises():
    X, y = _problem(n=60)
    model = TraceNormLogisticRegression(0.01, 0.001).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])
    with pytest.raises(InvalidInputError, match="k"):
        model.predict_topk(X, k=10)


from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

_SW_REASON = (
    "compares predict_proba at rtol=1e-7 after a fit with the default tol=1e-4, whose stopping rule "
    "(C1)-(C2) bounds the gradient between an atom and the directions off the atoms only to "
    "sqrt(2 lambda_trace tol); tests/test_sample_weight.py shows on the check's data that the two fits "
    "differ by about sqrt(tol) and reach one model as tol shrinks "
    "(test_tracenorm_sample_weight_equivalence_fails_at_the_default_tol_only_by_its_precision), "
    "checks weights against duplicated rows at tol=1e-10 and runs the check itself at a tight tol"
)


def _expected_failed(est):
    if est.lambda_fro == 0.0:
        return {}  # passes as it is
    return {
        "check_sample_weight_equivalence_on_dense_data": _SW_REASON,
        "check_sample_weight_equivalence_on_sparse_data": _SW_REASON,
    }


@parametrize_with_checks(
    [TraceNormLogisticRegression(), TraceNormLogisticRegression(0.1, 0.0, fit_intercept=False)],
    expected_failed_checks=_expected_failed,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
