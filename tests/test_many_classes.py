"""Many classes, end to end: every estimator with classes or labels trains at the scale
the other test files never reach (TopKSVC at 1,000 and 10,000 classes, M3L at 1,000
labels, TraceNormLogisticRegression at 1,000 classes, RankmaxRanker at 100,000 labels),
and what it reports — primal and dual objectives, duality gap, history — is recomputed
here from its coefficients and dual variables by the NumPy references of
``tests/_many_classes_reference.py``, which never call toprank. The dual variables are
checked to lie in their sets.

The data include what broke at scale before: a block of identical examples with
different labels, a block of identical examples with the same label, a zero row and
constant rows (their first SDCA step projects a constant vector).

Tolerances: a reported objective is a float64 sum over n·m terms of size O(1) formed in
another order (blocked, multi-threaded) than the reference's, so the two differ by a
few hundred ulps of the total at most; rel=1e-9 leaves three orders of magnitude of
margin for that and still catches any error in a formula (a wrong loss, a missing 1/γ
or a mis-scaled intercept moves the objective by 1e-3 or more). Looser tolerances are
justified where they are used (float32 scores, the ranker's float32 parameters).
"""

from __future__ import annotations

import warnings

import _many_classes_reference as ref
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from toprank import M3L, RankmaxRanker, TopKSVC, TraceNormLogisticRegression
from toprank.exceptions import InvalidInputError

# A reported objective against the reference's (see the module docstring).
OBJECTIVE_RTOL = 1e-9
# Dual variables in their sets: the solver's projections are exact to a few ulps of c_i.
DUAL_SET_TOL = 1e-9


def reproducer(n, d, m, seed=0):
    """The data of the reported failure (TopKSVC(loss="alpha") on 400+ classes), verbatim."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(m, d))
    y = rng.integers(0, m, n)
    X = (0.35 * c[y] + rng.standard_normal((n, d))) / 8
    return X, y


def hard(n, d, m, seed=0):
    """The reproducer's distribution with every class present (n ≥ m; its first m labels
    are 0..m−1, set before X is drawn so the rest of the stream is unchanged), then ties
    and constant rows: rows 0–15 one point under 16 different labels, row 24 zero, rows
    25–29 constant, rows 30–31 and 32–33 two points of norm 10 (the others' is ~1) under
    two labels each (the two classes then share nearly all the probability, where the
    top-k entropy's caps bind), and the last 8 rows one point under one label (among the
    n − m rows of random labels, so no class loses its only example)."""
    assert n >= m + 8
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(m, d))
    y = rng.integers(0, m, n)
    y[:m] = np.arange(m)
    X = (0.35 * c[y] + rng.standard_normal((n, d))) / 8
    X[1:16] = X[0]
    X[24] = 0.0
    X[25:30] = 0.05
    for row in (30, 32):
        point = rng.normal(size=d)
        X[row : row + 2] = 10.0 * point / np.linalg.norm(point)
    X[-8:] = X[-8]
    y[-8:] = y[-8]
    return X, y


def fit_quietly(estimator, *args, **kwargs):
    """Fit, failing on any ConvergenceWarning (every fit here must converge) but not on
    scikit-learn's "more classes than half the samples" hint."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%")
        return estimator.fit(*args, **kwargs)


# ------------------------------------------------------------- the references


def test_reference_losses_against_cvxpy():
    # The smoothed top-k hinge losses and the top-k entropy loss of the reference are
    # closed forms; here they meet a generic convex solver (the max form of each loss)
    # on small rows, a constant row and a row of ties included.
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(0)
    for r, k, scale in [(7, 1, 1.0), (12, 3, 3.0), (30, 5, 0.3)]:
        H = rng.normal(size=(4, r)) * scale
        H[0] = 0.4
        H[1, : r // 2] = H[1, 0]
        for variant in ("alpha", "beta"):
            for gamma in (0.5, 1.0):
                expected = []
                for h in H:
                    p = cp.Variable(r)
                    cap = k * p <= cp.sum(p) if variant == "alpha" else p <= 1.0 / k
                    problem = cp.Problem(
                        cp.Maximize(h @ p - gamma / 2 * cp.sum_squares(p)), [p >= 0, cp.sum(p) <= 1, cap]
                    )
                    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
                    expected.append(problem.value)
                np.testing.assert_allclose(ref.hinge_rows(H, k, variant, gamma), expected, rtol=1e-7, atol=1e-9)
        if k > 1:
            expected = []
            for v in H:
                x = cp.Variable(r)
                total = cp.sum(x)
                problem = cp.Problem(
                    cp.Maximize(v @ x + cp.sum(cp.entr(x)) + cp.entr(1 - total)), [x >= 0, total <= 1, k * x <= total]
                )
                problem.solve(solver=cp.CLARABEL)
                expected.append(problem.value)
            np.testing.assert_allclose(ref.entropy_rows(H, k)[0], expected, rtol=1e-6, atol=1e-7)
    # Wide rows go through the certified top-K shortcut: the same values as whole rows.
    H = rng.normal(size=(20, 3000)) * 0.3
    for variant in ("alpha", "beta"):
        for k in (1, 5):
            xp, pp, _ = ref._project_rows(H, k, variant, H.shape[1])
            np.testing.assert_allclose(ref.hinge_rows(H, k, variant, 1.0), xp - 0.5 * pp, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------- TopKSVC


def accelerated(clf):
    """Whether a linear fit handed over to accelerated SDCA: its gap checks then come
    every stage (3 epochs) instead of every check_every epochs."""
    steps = np.diff([0] + [h[0] for h in clf.history_])
    if clf.n_iter_ == clf.max_epochs:
        steps = steps[:-1]  # the last check comes at max_epochs, whatever the stride
    return bool(np.any(steps != clf.check_every))


def check_svc(clf, X, y, *, sample_weight=None, K=None):
    """Recompute P, D and the gap of a fitted TopKSVC (C, loss, k, smoothing from its
    parameters) and check them, its history, W(A) and the dual sets."""
    yi = np.searchsorted(clf.classes_, y)
    n, m = len(yi), len(clf.classes_)
    c = clf.C * (np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64))
    A = clf.dual_coef_
    # The hinge losses' dual rows are kept sparse on linear fits from 256 classes on.
    kept_sparse = clf.dual_layout == "sparse" or (
        clf.dual_layout == "auto" and K is None and clf.loss in ("alpha", "beta") and m >= 256
    )
    assert sp.issparse(A) == kept_sparse
    A = A.toarray() if kept_sparse else A
    assert A.shape == (n, m) and np.all(np.isfinite(A))
    loss, k, gamma = clf.loss, clf.k, float(clf.smoothing)
    live = c > 0  # examples of weight 0 add nothing to P
    if K is None:
        # W(A) = Xᵀ A, with the intercept column of the constant feature intercept_scaling = 1.
        WA = np.asarray(X.T @ A)
        bA = A.sum(axis=0)
        # Plain SDCA keeps coef_ = W(A); after the hand-over to accelerated SDCA (badly
        # scaled rows: the far points here), coef_ and dual_coef_ are a primal and a dual
        # iterate, and P is evaluated at the one, D at the other.
        if not accelerated(clf):
            np.testing.assert_allclose(clf.coef_.T, WA, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(WA).max()))
            np.testing.assert_allclose(clf.intercept_, bA, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(bA).max()))
        regulariser = 0.5 * (np.sum(clf.coef_**2) + np.sum(clf.intercept_**2))
        dual_norm = 0.5 * (np.sum(WA**2) + np.sum(bA**2))
        losses = ref.svc_losses(X[live], yi[live], clf.coef_, clf.intercept_, loss, k, gamma)
    else:
        KA = K @ A
        regulariser = dual_norm = 0.5 * float(np.sum(A * KA))
        losses = ref.svc_losses(None, yi[live], A, None, loss, k, gamma, K=K[live])
    P = regulariser + float(c[live] @ losses)
    assert np.all(A[~live] == 0), "examples of weight 0 must keep a zero dual row"
    D = ref.svc_dual_terms(A[live], yi[live], c[live], loss, gamma) - dual_norm
    assert clf.primal_objective_ == pytest.approx(P, rel=OBJECTIVE_RTOL)
    assert clf.dual_objective_ == pytest.approx(D, rel=OBJECTIVE_RTOL)
    gap = (P - D) / max(abs(P), abs(D))
    assert -1e-12 <= gap <= clf.tol, f"recomputed relative gap {gap:.3g} (reported {clf.duality_gap_:.3g})"
    assert clf.duality_gap_ == pytest.approx(gap, rel=1e-5, abs=1e-12)
    assert ref.svc_dual_violation(A[live], yi[live], c[live], loss, k) <= DUAL_SET_TOL
    epoch, primal, dual, rel_gap, _ = clf.history_[-1]
    assert (epoch, primal, dual, rel_gap) == (clf.n_iter_, clf.primal_objective_, clf.dual_objective_, clf.duality_gap_)
    return P, D


@pytest.fixture(scope="module")
def reproducer_1000():
    return reproducer(3000, 64, 1000)


@pytest.mark.parametrize("smoothing", [0.0, 1.0])
@pytest.mark.parametrize("k", [1, 5])
def test_alpha_trains_on_the_reproducer_at_1000_classes(reproducer_1000, k, smoothing):
    # The acceptance case: the reproducer verbatim, C = 1, default tol. On the unfixed
    # code the first SDCA step raises NoSolutionError from topk_simplex.
    X, y = reproducer_1000
    clf = fit_quietly(
        TopKSVC(loss="alpha", k=k, smoothing=smoothing, C=1.0, random_state=0, n_jobs=1, keep_dual=True), X, y
    )
    assert clf.status_ == "converged" and len(clf.classes_) == len(np.unique(y)) > 900
    check_svc(clf, X, y)


@pytest.fixture(scope="module")
def hard_1000():
    return hard(1200, 64, 1000)


# (loss, k, smoothing, input, dtype, n_jobs): every loss, k ∈ {1, 5}, smoothing ∈ {0, 1}
# for the hinge losses, dense and CSR, float64 and float32, 1 and 2 threads.
_SVC_CASES = [
    ("alpha", 1, 0.0, "dense", np.float64, 2),
    ("alpha", 5, 1.0, "csr", np.float64, 1),
    ("alpha", 5, 0.0, "dense", np.float32, 1),
    ("beta", 1, 0.0, "dense", np.float64, 1),
    ("beta", 5, 0.0, "dense", np.float64, 2),
    ("beta", 1, 1.0, "csr", np.float32, 2),
    ("beta", 5, 1.0, "dense", np.float64, 1),
    ("softmax", 1, 0.0, "dense", np.float64, 2),
    ("softmax", 1, 0.0, "csr", np.float32, 1),
    ("entropy", 5, 0.0, "dense", np.float64, 1),
    ("entropy", 5, 0.0, "csr", np.float32, 2),
]


@pytest.mark.parametrize("loss,k,smoothing,layout,dtype,n_jobs", _SVC_CASES)
def test_topksvc_at_1000_classes_with_ties_and_constant_rows(hard_1000, loss, k, smoothing, layout, dtype, n_jobs):
    X, y = hard_1000
    X = X.astype(dtype)
    Xin = sp.csr_matrix(X) if layout == "csr" else X
    clf = fit_quietly(
        TopKSVC(loss=loss, k=k, smoothing=smoothing, C=1.0, random_state=0, n_jobs=n_jobs, keep_dual=True), Xin, y
    )
    assert clf.status_ == "converged" and len(clf.classes_) == 1000
    # The reference scores X (float32 values read exactly) in float64, as the solver does.
    check_svc(clf, Xin.astype(np.float64), y)
    if loss == "entropy":
        # Not the softmax fit in disguise: the top-k caps bind somewhere.
        S = np.asarray(X @ clf.coef_.T, dtype=np.float64) + clf.intercept_
        V = ref.without_label(S, np.searchsorted(clf.classes_, y)) - S[np.arange(len(y)), y][:, None]
        assert np.any(ref.entropy_rows(V, k)[0] < ref.entropy_rows(V, 1)[0] - 1e-9)


@pytest.mark.parametrize("loss,k,n_jobs", [("alpha", 5, 1), ("beta", 1, 2)])
def test_sparse_and_dense_dual_layouts_fit_the_same_model(hard_1000, loss, k, n_jobs):
    # At 1,000 classes "auto" keeps the hinge's dual rows sparse: the fit (serial, n <
    # 10,000; its gap checks on 1 or 2 threads) and a warm start along a path of C take
    # the dense layout's steps — the same coefficients, epochs and dual rows — while
    # storing a tenth of A or less. (CoCoA+ and the accelerated solver: Rust tests.)
    X, y = hard_1000
    fits = {}
    for layout in ("dense", "auto"):
        est = TopKSVC(loss=loss, k=k, C=1.0, random_state=0, n_jobs=n_jobs, dual_layout=layout, warm_start=True)
        fit_quietly(est, X, y)
        first = (est.coef_.copy(), est.n_iter_, est.dual_coef_.copy())
        fit_quietly(est.set_params(C=2.0), X, y)
        fits[layout] = (first, (est.coef_, est.n_iter_, est.dual_coef_))
    for (coef, epochs, dense), (coef_s, epochs_s, sparse) in zip(fits["dense"], fits["auto"]):
        assert isinstance(dense, np.ndarray) and sp.issparse(sparse) and sparse.format == "csr"
        np.testing.assert_array_equal(coef, coef_s)
        assert epochs == epochs_s
        np.testing.assert_array_equal(dense, sparse.toarray())
        assert sparse.nnz == np.count_nonzero(dense) < dense.size / 10


def test_dual_layout_is_checked():
    X, y = hard(300, 8, 5)
    with pytest.raises(InvalidInputError, match="dual_layout"):
        TopKSVC(dual_layout="compressed").fit(X, y)
    with pytest.raises(InvalidInputError, match="dual_layout.*kernel='linear'"):
        TopKSVC(kernel="rbf", dual_layout="sparse").fit(X, y)
    # Few classes: "auto" keeps A dense; "sparse" on request.
    assert isinstance(TopKSVC(keep_dual=True).fit(X, y).dual_coef_, np.ndarray)
    assert sp.issparse(TopKSVC(keep_dual=True, dual_layout="sparse").fit(X, y).dual_coef_)


@pytest.fixture(scope="module")
def kernel_1000():
    X, y = hard(1010, 16, 1000, seed=1)
    gamma = 1.0 / (X.shape[1] * X.var())
    sq = np.sum(X * X, axis=1)
    K = np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0.0))
    return X, y, gamma, K


@pytest.mark.parametrize(
    "loss,k,smoothing,kernel",
    [
        ("alpha", 5, 1.0, "precomputed"),
        ("beta", 1, 1.0, "rbf"),
        ("softmax", 1, 0.0, "rbf"),
        ("entropy", 5, 0.0, "precomputed"),
    ],
)
def test_kernel_topksvc_at_1000_classes(kernel_1000, loss, k, smoothing, kernel):
    X, y, gamma, K = kernel_1000
    clf = TopKSVC(
        loss=loss, k=k, smoothing=smoothing, kernel=kernel, gamma=gamma, C=1.0, random_state=0, n_jobs=2, keep_dual=True
    )
    fit_quietly(clf, K if kernel == "precomputed" else X, y)
    assert clf.status_ == "converged" and len(clf.classes_) == 1000
    # K is formed here in float64 from ‖x‖² + ‖x'‖² − 2⟨x, x'⟩ (rounding ~1e-15 per entry,
    # far inside the objective tolerance).
    check_svc(clf, X, y, K=K)


@pytest.fixture(scope="module")
def classes_10000():
    # 10,000 classes need 10,000 rows, one per class, but a Crammer–Singer solve over
    # 10,000 examples at m = 10,000 takes minutes on 2 cores (measured: 100 epochs, over
    # 80 s with 1,000 of them weighted). So only a random 300 of them carry weight
    # (sample_weight 1, the others 0): every class exists — W has 10,000 rows and every
    # SDCA step projects 9,999 entries — at the cost of ~340 examples per epoch.
    X, y = hard(10_008, 16, 10_000)
    weight = np.zeros(len(y))
    weight[np.random.default_rng(1).permutation(len(y))[:300]] = 1.0
    weight[:30] = weight[-8:] = 1.0  # the ties and constant rows
    return X, y, weight


@pytest.mark.parametrize("smoothing", [0.0, 1.0])
@pytest.mark.parametrize("k", [1, 5])
def test_alpha_at_10000_classes(classes_10000, k, smoothing):
    X, y, weight = classes_10000
    # check_every=10: a gap check scores all 10,008 rows against 10,000 classes, the
    # epochs only the weighted ones; the default tol is kept.
    clf = TopKSVC(
        loss="alpha", k=k, smoothing=smoothing, C=1.0, check_every=10, random_state=0, n_jobs=2, keep_dual=True
    )
    fit_quietly(clf, X, y, sample_weight=weight)
    assert clf.status_ == "converged" and len(clf.classes_) == 10_000
    check_svc(clf, X, y, sample_weight=weight)


def test_nonconvergence_at_many_classes_warns_with_the_gap():
    # A budget too small to converge: the warning must say why and what to change.
    X, y = hard(1500, 64, 1000)
    with pytest.warns(ConvergenceWarning) as caught:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%")
            clf = TopKSVC(
                loss="beta", k=5, C=1.0, tol=1e-12, max_epochs=2, check_every=1, random_state=0, n_jobs=1
            ).fit(X, y)
    message = str(next(w.message for w in caught if issubclass(w.category, ConvergenceWarning)))
    assert clf.status_ == "max_iter"
    assert "max_epochs" in message and f"{clf.duality_gap_:.3g}" in message and "tol=1e-12" in message
    reported_gap = (clf.primal_objective_ - clf.dual_objective_) / clf.primal_objective_
    assert reported_gap == pytest.approx(clf.duality_gap_, rel=1e-9)


# --------------------------------------------------------------------------- M3L


def _multilabel_1000(n=1500, d=64, labels=1000):
    """The reproducer's distribution over 1,000 classes, each example tagged with its
    class and, for half of them, the next class too (so labels l and l + 1 co-occur)."""
    X, y = hard(n, d, labels, seed=2)
    Y = np.zeros((n, labels), dtype=np.int8)
    Y[np.arange(n), y] = 1
    pairs = np.random.default_rng(3).random(n) < 0.5
    Y[np.flatnonzero(pairs), (y[pairs] + 1) % labels] = 1
    return X, Y


@pytest.fixture(scope="module")
def multilabel_1000():
    return _multilabel_1000()


def check_m3l(model, X, Y, R):
    Xaug = np.hstack([np.asarray(X, dtype=np.float64), np.ones((X.shape[0], 1))])  # intercept_scaling = 1
    signs = 2.0 * Y - 1.0
    alpha = model.dual_coef_
    C = model.C
    assert alpha.shape == Y.shape and alpha.min() >= 0 and alpha.max() <= C * (1 + 1e-12)
    Z = np.hstack([model.coef_, model.intercept_[:, None]])
    P, D, F, B = ref.m3l_objectives(Xaug, signs, alpha, Z, R, C)
    # (23): Z = 2 Xaugᵀ (Y∘α) R.
    np.testing.assert_allclose(Z, 2.0 * (B @ R).T, rtol=1e-9, atol=1e-9 * np.abs(Z).max())
    assert model.primal_objective_ == pytest.approx(P, rel=OBJECTIVE_RTOL)
    assert model.dual_objective_ == pytest.approx(D, rel=OBJECTIVE_RTOL)
    assert P >= D - 1e-9 * abs(P)
    # Converged: every projected gradient of the dual, g = 2 − 2 y∘F, below tol.
    g = 2.0 - 2.0 * signs * F
    projected = np.where(alpha <= 0, np.maximum(g, 0.0), np.where(alpha >= C, np.maximum(-g, 0.0), np.abs(g)))
    # (The slack covers rounding in F, ~1e-13.)
    worst = tuple(int(i) for i in np.unravel_index(np.argmax(projected), projected.shape))
    assert projected.max() <= model.tol + 1e-9, (
        f"status {model.status_!r}, but the projected gradient of α{worst} (= {alpha[worst]:.3g}) at the returned "
        f"point is {projected.max():.3g} > tol = {model.tol}"
    )
    return P, D


def test_m3l_at_1000_labels_one_vs_all_on_1_and_2_threads(multilabel_1000):
    X, Y = multilabel_1000
    one = fit_quietly(M3L(C=1.0, random_state=0, n_jobs=1, keep_dual=True), X, Y)
    two = fit_quietly(M3L(C=1.0, random_state=0, n_jobs=2, keep_dual=True), X, Y)
    assert one.status_ == two.status_ == "converged" and one.solver_ == "dcd"
    # README: DCD solves uncoupled labels as tasks, the same fit bit for bit on any threads.
    np.testing.assert_array_equal(one.dual_coef_, two.dual_coef_)
    check_m3l(two, X, Y, np.eye(Y.shape[1]))


def test_m3l_at_1000_labels_with_coupled_pairs_float32_csr(multilabel_1000):
    X, Y = multilabel_1000
    X32 = sp.csr_matrix(X.astype(np.float32))
    # Labels 2j and 2j + 1 correlated (0.5): DCD solves 500 coupled pairs together.
    R = np.kron(np.eye(Y.shape[1] // 2), np.array([[1.0, 0.5], [0.5, 1.0]]))
    model = fit_quietly(M3L(C=1.0, R=R, random_state=0, n_jobs=2, keep_dual=True), X32, Y)
    assert model.status_ == "converged" and model.solver_ == "dcd"
    # The reference reads the float32 values exactly in float64, as the solver does.
    check_m3l(model, X32.toarray().astype(np.float64), Y, R)


def test_m3l_at_1000_labels_out_of_iterations_warns_why(multilabel_1000):
    X, Y = multilabel_1000
    with pytest.warns(
        ConvergenceWarning,
        match=r"M3L \(dcd\) stopped with status 'max_iter': it ran out of "
        r"iterations after 1 iterations, at a largest projected gradient of "
        r"[0-9.e+-]+ \(tol=0.001\)\. Raise max_iter \(now 1\)",
    ):
        model = M3L(C=1.0, max_iter=1, random_state=0, n_jobs=2, keep_dual=True).fit(X, Y)
    assert model.status_ == "max_iter"
    # Objectives are still those of the returned point.
    Xaug = np.hstack([X, np.ones((len(X), 1))])
    Z = np.hstack([model.coef_, model.intercept_[:, None]])
    P, D, _, _ = ref.m3l_objectives(Xaug, 2.0 * Y - 1.0, model.dual_coef_, Z, np.eye(Y.shape[1]), 1.0)
    assert model.primal_objective_ == pytest.approx(P, rel=OBJECTIVE_RTOL)
    assert model.dual_objective_ == pytest.approx(D, rel=OBJECTIVE_RTOL)


def test_m3l_kernel_smo_at_1000_labels():
    X, Y = _multilabel_1000(n=1010, d=16)
    model = fit_quietly(M3L(C=1.0, kernel="linear", solver="smo", fit_intercept=True, n_jobs=2, keep_dual=True), X, Y)
    assert model.status_ == "converged" and model.solver_ == "smo"
    # SMO solves the dual with K rounded to float32 (its kernel cache; README): its P and
    # D are those of that K, and coef_ is rebuilt from α in float64, so they match the
    # reference's only to float32 precision of K.
    Xaug = np.hstack([X, np.ones((len(X), 1))])
    signs = 2.0 * Y - 1.0
    Z = np.hstack([model.coef_, model.intercept_[:, None]])
    P, D, _, _ = ref.m3l_objectives(Xaug, signs, model.dual_coef_, Z, np.eye(Y.shape[1]), 1.0)
    assert model.primal_objective_ == pytest.approx(P, rel=1e-5)
    assert model.dual_objective_ == pytest.approx(D, rel=1e-5)
    assert 0 <= model.dual_coef_.min() and model.dual_coef_.max() <= 1.0


# ------------------------------------------------------------------- trace norm


@pytest.fixture(scope="module")
def tracenorm_1000():
    X, y = hard(2000, 64, 1000, seed=4)
    return X, y


def _lambda_max(X, y, m):
    """σ_max of the loss gradient at W = 0 with the intercept at the log class priors:
    the smallest λ1 with W = 0 optimal."""
    prior = np.bincount(y, minlength=m) / len(y)
    P = np.tile(prior, (len(y), 1))
    P[np.arange(len(y)), y] -= 1.0
    return float(np.linalg.norm(X.T @ P / len(y), 2))


@pytest.mark.parametrize("layout,dtype,n_jobs", [("dense", np.float64, 1), ("csr", np.float32, 2)])
def test_tracenorm_at_1000_classes(tracenorm_1000, layout, dtype, n_jobs):
    X, y = tracenorm_1000
    X = X.astype(dtype)
    lambda_trace, lambda_fro = 0.7 * _lambda_max(X.astype(np.float64), y, 1000), 1e-4
    Xin = sp.csr_matrix(X) if layout == "csr" else X
    model = fit_quietly(
        TraceNormLogisticRegression(lambda_trace=lambda_trace, lambda_fro=lambda_fro, random_state=0, n_jobs=n_jobs),
        Xin,
        y,
    )
    assert model.status_ == "converged" and len(model.classes_) == 1000
    W = model.coef_.T
    J, G, gb = ref.tracenorm_objective(X.astype(np.float64), y, W, model.intercept_, lambda_trace, lambda_fro)
    assert model.objective_ == pytest.approx(J, rel=OBJECTIVE_RTOL)
    assert model.history_[-1].objective == pytest.approx(J, rel=OBJECTIVE_RTOL)
    assert all(a.objective >= b.objective - 1e-12 * abs(J) for a, b in zip(model.history_, model.history_[1:]))
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
    np.testing.assert_allclose(s[: len(model.singular_values_)], model.singular_values_, rtol=1e-8, atol=1e-12)
    assert 0 < model.rank_ < 64
    # ε-optimality (C1)–(C2) at tol, from the reference's own gradient. The slack covers
    # rounding in the gradient, summed over n = 3,000 rows (~1e-13).
    slack = 1e-9
    assert np.linalg.norm(G, 2) <= lambda_trace + model.tol + slack  # (C1)
    atoms = len(model.singular_values_)
    atom_grad = np.einsum("dj,dm,jm->j", U[:, :atoms], G, Vt[:atoms]) + lambda_trace
    assert np.abs(atom_grad).max() <= model.tol + slack  # (C2) on W's singular pairs
    assert np.abs(gb).max() <= model.tol + slack  # (C2) on the intercept


def test_tracenorm_at_1000_classes_out_of_iterations_warns_why(tracenorm_1000):
    X, y = tracenorm_1000
    lambda_trace = 0.1 * _lambda_max(X, y, 1000)
    with pytest.warns(
        ConvergenceWarning,
        match=r"stopped with status 'max_iter': it ran out of iterations after 1 "
        r"iterations, at a \(C1\) margin σ_max\(−∇\) − λ1 of [0-9.e+-]+ "
        r"\(tol=0.0001\)\. Raise max_iter",
    ):
        model = TraceNormLogisticRegression(lambda_trace=lambda_trace, max_iter=1, random_state=0).fit(X, y)
    assert model.status_ == "max_iter"
    J, _, _ = ref.tracenorm_objective(X, y, model.coef_.T, model.intercept_, lambda_trace, 1e-4)
    assert model.objective_ == pytest.approx(J, rel=OBJECTIVE_RTOL)


# ------------------------------------------------------------------------ ranker


N_LABELS = 100_000


@pytest.fixture(scope="module")
def ranker_data():
    """64 users (one-hot, CSR) with 1–8 positives each among 100,000 labels, half of
    them from a shared popular pool (so labels repeat and scores separate)."""
    rng = np.random.default_rng(5)
    users = 64
    popular = rng.choice(N_LABELS, size=50, replace=False)
    rows = []
    for _ in range(users):
        count = int(rng.integers(1, 9))
        mine = set(rng.choice(popular, size=count // 2, replace=False).tolist())
        mine |= set(rng.choice(N_LABELS, size=count - len(mine), replace=False).tolist())
        rows.append(sorted(mine))
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    indices = np.concatenate(rows).astype(np.int64)
    Y = sp.csr_matrix((np.ones(len(indices), dtype=np.float32), indices, indptr), shape=(users, N_LABELS))
    X = sp.identity(users, format="csr", dtype=np.float32)
    return X, Y


def _data_loss(model, X, Y, loss, k, eta):
    """Mean over the (user, label) pairs of ℓ(z(x), y) at the model's parameters, z = x·U·Vᵀ + b
    formed in float64 from the float32 factors."""
    U = model.feature_factors_.astype(np.float64)
    V = model.label_factors_.astype(np.float64)
    b = model.label_bias_.astype(np.float64)
    total = 0.0
    for rows in ref.chunks(X.shape[0], 32):
        Z = ref.dense_rows(X, rows) @ U @ V.T + b
        block = Y[rows]
        total += ref.ranker_pair_losses(Z, block.indptr, block.indices, loss, k, eta)
    return total / Y.nnz


@pytest.mark.parametrize(
    "loss,k,n_jobs", [("rankmax", 1, 2), ("rankmax", 5, 1), ("softmax", 1, 2), ("sparsemax", 1, 2)]
)
def test_ranker_at_100000_labels(ranker_data, loss, k, n_jobs):
    X, Y = ranker_data
    kw = dict(
        n_components=8,
        loss=loss,
        k=k,
        eta=1.0,
        learning_rate=0.5,
        batch_size=X.shape[0],
        early_stopping=False,
        init_scale=0.5,
        random_state=0,
        n_jobs=n_jobs,
    )
    # One minibatch per epoch: an epoch's reported loss is the data loss at the
    # parameters the previous epoch ended with, i.e. those of the fit one epoch shorter
    # (the same seeds, so the same steps).
    short = RankmaxRanker(n_epochs=2, **kw).fit(X, Y)
    full = RankmaxRanker(n_epochs=3, **kw).fit(X, Y)
    assert full.label_factors_.shape == (N_LABELS, 8) and np.all(np.isfinite(full.label_factors_))
    assert [h.n_iter for h in full.history_] == [1, 2, 3] and full.best_epoch_ == 3
    assert [h.loss for h in short.history_] == [h.loss for h in full.history_[:2]]
    # The factors are float32 and the core forms the scores in float32: each score carries
    # a relative rounding of ~6e-8, which moves a loss of size O(1)–O(10) by ~1e-6 at
    # most, so 1e-5 relative is float32-tight and far below any formula error.
    assert full.history_[2].loss == pytest.approx(_data_loss(short, X, Y, loss, k, 1.0), rel=1e-5)
    # Training descends.
    assert full.history_[2].loss < full.history_[0].loss


def test_ranker_at_100000_labels_dense_float64_features_threads_agree(ranker_data):
    # Dense float64 features (16 random ones per user) instead of one-hot users, and
    # minibatches of 64: a fit is the same bit for bit on 1 and 2 threads.
    _, Y = ranker_data
    X = np.random.default_rng(6).normal(size=(Y.shape[0], 16))
    kw = dict(
        n_components=8,
        loss="rankmax",
        k=1,
        learning_rate=0.2,
        batch_size=64,
        n_epochs=2,
        early_stopping=False,
        random_state=0,
    )
    one = RankmaxRanker(n_jobs=1, **kw).fit(X, Y)
    two = RankmaxRanker(n_jobs=2, **kw).fit(X, Y)
    np.testing.assert_array_equal(one.label_factors_, two.label_factors_)
    assert [h.loss for h in one.history_] == [h.loss for h in two.history_]
    assert one.history_[-1].loss < one.history_[0].loss
