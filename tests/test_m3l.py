"""M3L: the kernel SMO solver against an independent QP solve of the dual (25), the
one-vs-all equivalence with R = I (paper §3.1), and bad input."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning

from toprank.exceptions import InvalidInputError
from toprank.m3l import M3L

cp = pytest.importorskip("cvxpy")


def _problem(n=14, d=4, labels=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(d, labels))
    Y = (X @ W + 0.5 * rng.normal(size=(n, labels)) > 0).astype(int)
    Y[0] = 1 - Y[1]  # every label on somewhere and off somewhere
    Y[1] = 1 - Y[0]
    return X, Y


def _random_prior(labels, seed):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(labels, labels))
    return B @ B.T / labels + 0.5 * np.eye(labels)


def _dual_reference(K, Y, R, C):
    """max Σ 2α − 2 Σ_lk R_lk α_l·Y_l K Y_k α_k over 0 ≤ α ≤ C (Hamming loss), by cvxpy."""
    n, labels = Y.shape
    S = 2.0 * Y - 1.0
    # vec(A) column by column (label-major): the quadratic is 2 vec(A)ᵀ (R ⊗ K) vec(A).
    H = np.kron(R, K)
    H = (H + H.T) / 2 + 1e-12 * np.eye(n * labels)
    a = cp.Variable(n * labels)
    signs = S.T.reshape(-1)
    objective = cp.Maximize(2 * cp.sum(a) - 2 * cp.quad_form(cp.multiply(signs, a), cp.psd_wrap(H)))
    problem = cp.Problem(objective, [a >= 0, a <= C])
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return problem.value, a.value.reshape(labels, n).T


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("prior", ["identity", "dense"])
def test_smo_reaches_the_qp_optimum_of_the_dual(kernel, prior):
    X, Y = _problem()
    R = np.eye(3) if prior == "identity" else _random_prior(3, 1)
    model = M3L(C=0.7, R=R, kernel=kernel, gamma=0.3, fit_intercept=False, tol=1e-9, max_iter=10**6).fit(X, Y)
    assert model.status_ == "converged"
    K = X @ X.T if kernel == "linear" else np.exp(-0.3 * ((X[:, None] - X[None]) ** 2).sum(-1))
    value, _ = _dual_reference(K, Y, R, 0.7)
    assert model.dual_objective_ == pytest.approx(value, rel=1e-6)
    # Strong duality at the returned point.
    assert model.primal_objective_ == pytest.approx(model.dual_objective_, rel=1e-6)


def test_smo_pairs_copies_of_an_example_with_opposite_signs():
    # Five copies of each of 8 points, labels drawn independently: copies with opposite
    # signs form singular 2 x 2 blocks. Excluded as partners, they left only 1-variable
    # steps that zig-zag between the copies: 100,000 iterations ended at D = 568.
    rng = np.random.default_rng(11)
    X = np.repeat(rng.normal(size=(8, 3)) * 3, 5, axis=0)
    Y = (rng.random((len(X), 3)) > 0.5).astype(int)
    R = _random_prior(3, 1)
    K = (0.5 * X @ X.T + 1.0) ** 3
    model = M3L(kernel="precomputed", C=10.0, R=R, fit_intercept=False, tol=1e-6, max_iter=20000).fit(K, Y)
    assert model.status_ == "converged"
    value, _ = _dual_reference(K, Y, R, 10.0)
    assert model.dual_objective_ == pytest.approx(value, rel=1e-6)


@pytest.mark.parametrize("prior", ["identity", "dense"])
@pytest.mark.parametrize("intercept", [False, True])
def test_smo_and_dcd_agree_on_linear_problems(prior, intercept):
    import scipy.sparse as sp

    X, Y = _problem(n=50, d=6, labels=4, seed=7)
    R = np.eye(4) if prior == "identity" else _random_prior(4, 2)
    kw = dict(C=0.5, R=R, fit_intercept=intercept, tol=1e-9, max_iter=10**6)
    smo = M3L(solver="smo", **kw).fit(X, Y)
    dcd = M3L(solver="dcd", random_state=0, **kw).fit(X, Y)
    sparse = M3L(solver="dcd", random_state=1, **kw).fit(sp.csr_matrix(X), Y)
    assert smo.status_ == dcd.status_ == sparse.status_ == "converged"
    for other in (dcd, sparse):
        assert other.dual_objective_ == pytest.approx(smo.dual_objective_, rel=1e-7)
        np.testing.assert_allclose(other.coef_, smo.coef_, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(other.intercept_, smo.intercept_, rtol=1e-4, atol=1e-5)


def test_kernel_cache_size_does_not_change_the_fit():
    # SMO loads columns ahead of need into free cache slots; with a two-column cache every
    # column is computed alone on its miss and evicted again. Kernel values are the same
    # however they are computed, so the steps, and the fit, must be the same.
    X, Y = _problem(n=150, d=5, labels=6, seed=11)
    kw = dict(C=0.5, kernel="rbf", gamma=0.3, solver="smo", tol=1e-6, max_iter=10**6, keep_dual=True)
    whole = M3L(cache_size=100.0, **kw).fit(X, Y)
    two_columns = M3L(cache_size=2 * 150 * 4 / 2**20, **kw).fit(X, Y)  # columns of float32
    assert whole.status_ == two_columns.status_ == "converged"
    assert whole.n_iter_ == two_columns.n_iter_
    np.testing.assert_array_equal(whole.dual_coef_, two_columns.dual_coef_)


def test_smo_label_order_does_not_change_uncoupled_labels():
    # With R = I every label is a problem of its own, and SMO takes an uncoupled label's
    # outer iterations back to back instead of in the order of (32). That is only a
    # schedule: each label's iterates, hence the fit, must be the same bit for bit
    # whatever order the labels come in.
    X, Y = _problem(n=150, d=5, labels=6, seed=12)
    kw = dict(C=0.5, kernel="rbf", gamma=0.3, solver="smo", tol=1e-6, max_iter=10**6, keep_dual=True)
    model = M3L(**kw).fit(X, Y)
    order = np.array([3, 5, 0, 4, 1, 2])
    permuted = M3L(**kw).fit(X, Y[:, order])
    assert model.status_ == permuted.status_ == "converged"
    assert model.n_iter_ == permuted.n_iter_
    np.testing.assert_array_equal(permuted.dual_coef_, model.dual_coef_[:, order])
    # The turns in a row are bounded: a budget that runs out long before convergence
    # has still moved every label.
    with pytest.warns(ConvergenceWarning):
        budget = M3L(**{**kw, "tol": 1e-12, "max_iter": 6 * 33}).fit(X, Y)
    assert budget.status_ == "max_iter"
    assert np.all(np.abs(budget.dual_coef_).sum(axis=0) > 0)
    # A dense prior couples every label: the order of (32) is then the algorithm's.
    R = _random_prior(6, 3)
    coupled = M3L(R=R, **kw).fit(X, Y)
    coupled_permuted = M3L(R=R[np.ix_(order, order)], **kw).fit(X, Y[:, order])
    assert coupled.dual_objective_ == pytest.approx(coupled_permuted.dual_objective_, rel=1e-6)


def test_dcd_stops_each_label_on_its_own_with_an_identity_prior():
    # With R = I a label whose projected gradients are all below tol rests while the others
    # go on (as LIBLINEAR's one-vs-all stops each label); the result must still meet tol on
    # every variable, and equal the fit of each label alone.
    X, Y = _problem(n=200, d=6, labels=5, seed=4)
    Y[:, 0] = (X[:, 0] > 0).astype(int)  # an easy label that settles early
    kw = dict(C=0.5, fit_intercept=False, solver="dcd", tol=1e-6, max_iter=10**6, random_state=0)
    joint = M3L(**kw).fit(X, Y)
    assert joint.status_ == "converged"
    for label in range(Y.shape[1]):
        alone = M3L(**kw).fit(X, np.column_stack([Y[:, label], 1 - Y[:, label]]))
        np.testing.assert_allclose(joint.coef_[label], alone.coef_[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("sparse", [False, True])
def test_dcd_gives_the_same_fit_on_any_number_of_threads(sparse):
    # Labels that R couples to no other are solved whole, one task each, on the n_jobs
    # pool, and the coupled ones together: each label's steps are its own, so the fit
    # must be the same bit for bit on one thread and on two.
    X, Y = _problem(n=300, d=6, labels=6, seed=7)
    X = sp.csr_matrix(X) if sparse else X
    R = np.eye(6)
    R[1, 4] = R[4, 1] = 0.3  # labels 1 and 4 coupled, the other four on their own
    for prior in (None, R):
        kw = dict(C=0.5, R=prior, solver="dcd", tol=1e-6, max_iter=10**6, random_state=2, keep_dual=True)
        one, two = M3L(n_jobs=1, **kw).fit(X, Y), M3L(n_jobs=2, **kw).fit(X, Y)
        assert one.status_ == two.status_ == "converged"
        assert one.n_iter_ == two.n_iter_
        np.testing.assert_array_equal(one.dual_coef_, two.dual_coef_)
        np.testing.assert_array_equal(one.coef_, two.coef_)
        np.testing.assert_array_equal(one.intercept_, two.intercept_)


@pytest.mark.parametrize("empty_row", [False, True])
def test_identity_prior_is_one_vs_all_with_penalty_2c(empty_row):
    from sklearn.svm import LinearSVC

    X, Y = _problem(n=40, d=5, labels=4, seed=3)
    if empty_row:
        # Its variables have no quadratic term: DCD skipped them, never met tol and never
        # brought back the variables it had shrunk (a wrong model after max_iter).
        X[0] = 0.0
    C = 0.3
    model = M3L(C=C, fit_intercept=False, tol=1e-10, max_iter=10**5, random_state=0).fit(X, Y)
    assert model.status_ == "converged"
    for label in range(Y.shape[1]):
        # LIBLINEAR's own rule (relative projected-gradient spread ≤ tol) cannot reach
        # 1e-12 in floating point; 1e-8 converges and is far tighter than the 1e-4 check.
        svc = LinearSVC(loss="hinge", C=2 * C, fit_intercept=False, tol=1e-8, max_iter=10**7, dual=True, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            svc.fit(X, Y[:, label])
        np.testing.assert_allclose(model.coef_[label], svc.coef_[0], rtol=1e-4, atol=1e-4)


def test_intercept_and_prediction():
    X, Y = _problem(n=60, seed=4)
    model = M3L(C=10.0, kernel="rbf", gamma=0.5, tol=1e-6).fit(X + 3.0, Y)
    assert model.predict(X + 3.0).shape == Y.shape
    assert model.score(X + 3.0, Y) > 0.8
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))


@pytest.mark.parametrize(
    "R,match",
    [
        (np.ones((3, 3)), "^R: must be positive definite"),
        (np.eye(2), "^R: must be 3 x 3"),
        (np.array([[1, 0.5, 0], [0, 1, 0], [0, 0, 1.0]]), "^R: must be symmetric"),
        # Asymmetric at a scale below any absolute tolerance.
        (1e-13 * np.array([[1, 0.5, 0], [0, 1, 0], [0, 0, 1.0]]), "^R: must be symmetric"),
        (np.diag([1.0, np.nan, 1.0]), "^R: must be finite"),
    ],
)
def test_bad_priors_name_r(R, match):
    X, Y = _problem()
    with pytest.raises(InvalidInputError, match=match):
        M3L(R=R).fit(X, Y)


def test_bad_targets_and_data():
    X, Y = _problem()
    Y2 = Y.copy()
    Y2[:, 1] = 1
    with pytest.raises(InvalidInputError, match="never or always on"):
        M3L().fit(X, Y2)
    with pytest.raises(InvalidInputError, match="^Y"):
        M3L().fit(X, Y[:5])
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        M3L().fit(bad, Y)
    with pytest.raises(InvalidInputError, match="^C"):
        M3L(C=0).fit(X, Y)


def test_row_norms_are_checked_in_float64_whatever_the_dtype_of_x():
    # A float32 CSR X of 1e20: its squares (1e40) overflow float32 but not float64, the
    # solver's precision, so it is not refused; 1e300 in float64 is, naming X.
    X, Y = _problem()
    big = sp.csr_matrix((X * 1e20).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a few epochs are enough here
        model = M3L(fit_intercept=False, max_iter=5).fit(big, Y)
    assert np.all(np.isfinite(model.coef_))
    with pytest.raises(InvalidInputError, match=r"^X: the squared norm of row \d+ .* overflows float64"):
        M3L().fit(sp.csr_matrix(X * 1e300), Y)


def test_target_containers_agree_and_score_names_y():
    pd = pytest.importorskip("pandas")
    X, Y = _problem(n=30)
    model = M3L(random_state=0, keep_dual=True).fit(X, Y)
    # One label: a sparse column is the dense (n, 1) indicator.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataConversionWarning)
        one = M3L(random_state=0).fit(X, Y[:, :1]).decision_function(X)
        np.testing.assert_array_equal(M3L(random_state=0).fit(X, sp.csr_matrix(Y[:, :1])).decision_function(X), one)
    # pandas' nullable columns arrive as objects.
    frame = pd.DataFrame(Y).astype("Int64")
    np.testing.assert_array_equal(M3L(random_state=0, keep_dual=True).fit(X, frame).dual_coef_, model.dual_coef_)
    with pytest.raises(InvalidInputError, match=r"^Y: expected shape \(30, 3\)"):
        model.score(X, Y[:, :2])


def test_binary_and_multiclass_targets_are_one_vs_all():
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=150, centers=3, random_state=0)
    model = M3L(C=1.0, tol=1e-6).fit(X, y)
    assert model.decision_function(X).shape == (150, 3)
    assert set(model.predict(X)) <= {0, 1, 2}
    assert model.score(X, y) > 0.9
    binary = M3L(C=1.0, tol=1e-6).fit(X[y < 2], np.where(y[y < 2] == 1, "b", "a"))
    assert binary.decision_function(X[:5]).shape == (5,)
    assert set(binary.predict(X)) <= {"a", "b"}


def test_an_exhausted_budget_warns():
    from sklearn.exceptions import ConvergenceWarning

    X, Y = _problem(n=60, seed=6)
    for solver in ("smo", "dcd"):
        with pytest.warns(
            ConvergenceWarning, match=r"ran out of iterations after 1 iterations.*Raise max_iter \(now 1\)"
        ):
            model = M3L(C=10.0, solver=solver, tol=1e-12, max_iter=1).fit(X, Y)
        assert model.status_ == "max_iter"


def test_verbose_reports_progress(capsys):
    X, Y = _problem(n=60, seed=5)
    model = M3L(C=1.0, kernel="rbf", gamma=0.5, tol=1e-8, verbose=2).fit(X, Y)
    # Reports come every 1000 outer iterations: a short fit may print none, a line
    # printed must carry the objectives; the last line gives the status.
    *reports, last = capsys.readouterr().out.splitlines()
    for line in reports:
        assert line.startswith("[M3L] iteration") and "primal" in line and "dual" in line
    assert last.startswith(f"[M3L] converged after {model.n_iter_} iterations  primal ")


from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

_SW_REASON = (
    "compares decision_function at rtol=1e-7 after fits with the default tol=1e-3 (projected "
    "gradients); tests/test_sample_weight.py proves the two fits differ by no more than their "
    "duality gaps allow (test_m3l_sample_weight_equivalence_holds_to_the_certified_accuracy) and "
    "runs the check itself at tol=1e-10 (test_sklearn_sample_weight_equivalence_tight)"
)


def _expected_failed(est):
    return {
        "check_sample_weight_equivalence_on_dense_data": _SW_REASON,
        "check_sample_weight_equivalence_on_sparse_data": _SW_REASON,
    }


@parametrize_with_checks([M3L(), M3L(solver="smo"), M3L(kernel="rbf", R=None)], expected_failed_checks=_expected_failed)
def test_sklearn_compatible(estimator, check):
    check(estimator)
