"""M3L (multi-label SVM with a label-correlation prior R) against one-vs-all LIBLINEAR and
LIBSVM, and the cost of a dense R against R = I, in one process.

    python benches/compare/m3l.py --write BENCHMARKS.md [--quick] [--n N] [--labels L] [--features D]

Data: ``sklearn.datasets.make_multilabel_classification`` (about 3 labels per example,
seeded), ``--n`` training and ``--n // 5`` held-out examples, the features standardised
with the training means and deviations; labels never or always on in the training set
are dropped (and counted). C = 0.5 for M3L, so one-vs-all has penalty 2C = 1 (the
scikit-learn default). Every compared fit is single-threaded (``n_jobs=1``; LIBLINEAR and
LIBSVM are single-threaded; NumPy's BLAS pools are pinned to one thread); (a) also times
M3L's DCD on 2 threads, which must give the same fit bit for bit. Times are the best of
``--repeats`` and include the estimators' input validation on both sides.

* **(a) Linear, R = I** — ``M3L(solver="dcd", fit_intercept=False, tol=T)`` against
  ``LinearSVC(loss="hinge", C=2C, fit_intercept=False, dual=True, tol=T)`` fitted once
  per label (times summed). With R = I the two problems are the same: M3L's α ∈ [0, C]
  is half of the SVM dual variable and its gradient 2 − 2y f twice the SVM's 1 − y f, so
  M3L's rule "every |projected gradient| < T" is "every SVM projected gradient < T/2",
  while LIBLINEAR stops when max PG − min PG < T (SVM scale, over the active variables)
  — roughly the same test, which is why the same T is used on both sides. Same answer:
  the one-vs-all primal Σ_l ½‖w_l‖² + 2C Σ_i max(0, 1 − y_il w_l·x_i) is computed here in
  NumPy from each side's weights; the two must agree to 1e-3 (relative), and each is
  also compared with M3L's dual objective, a certified lower bound on the optimum.
  Target: M3L / LIBLINEAR ≤ 1.0.
* **(b) RBF kernel** — for each d in ``--kernel-features`` (default 50, 120, 250 and 500;
  the paper's data sets have d = 120 to 47,236): the data of (a), embedded isometrically in
  d dimensions when d > ``--features`` (x ↦ Qᵀx with orthonormal Q: the same kernel
  matrix, so the same problems and solutions, with kernel entries d / ``--features``
  times as costly), γ = 1/``--features``: ``M3L(kernel="rbf", solver="smo", fit_intercept=False)`` against
  ``SVC(kernel="rbf", C=2C, gamma=same)`` per label, same cache size. SVC has an
  unregularised bias, so the problems differ: only times are compared, with held-out
  Hamming loss as a sanity check. Same accuracy: SVC runs at its default tol 1e-3 (its
  maximal violating pair gap, SVM scale); both sides' relative duality gaps (P − D)/P,
  summed over the labels, are computed here in NumPy from each side's dual coefficients
  (SVC's with its bias), and M3L is timed at the first tol of 1e-3, 5e-4, … (on its own
  scale, twice the SVM's) whose gap is at most SVC's. (A pair gap of 1e-3 bounds every
  variable's violation by 5e-4 about the best bias: M3L at 2e-3, every SVM-scale
  violation below 1e-3, stopped at about twice SVC's duality gap.) When ``--svc-labels`` is below the
  number of labels, SVC is timed on that many labels (once) and its time extrapolated
  linearly to all of them (said in the table); by default it runs on all of them.
  Target: SVC / M3L ≥ 10, judged where kernel entries cost what they cost in the paper's
  ≥ 10× cases (d ≥ ``JUDGED_FROM_D`` = 250; its Table 1: Animals with Attributes, d = 252,
  11.5–15×; RCV1, sparse d = 47,236, 7–13×). Smaller d is reported, not judged: there the
  shared cache saves little (the paper has 2.5–4× on Media Mill, d = 120), and the ratio
  is set by the SMO steps that both sides take.
* **(c) Dense R vs R = I** — the same data and settings with R = I and with a dense
  random SPD R (unit diagonal, off-diagonal entries up to about ±0.3): seconds per SMO
  outer iteration (RBF) over a whole solve to tol 1e-3, and per DCD epoch (linear) over
  early epochs (tol tiny, fixed budgets). The per-iteration time is (t(M2) − t(M1)) /
  (M2 − M1) between two fits, so that the setup (validation, kernel diagonal) cancels.
  Target: dense / identity ≤ 2.

The results replace the section between ``<!-- m3l:begin -->`` and ``<!-- m3l:end -->``
of the given file (appended if absent); the section is always printed.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import functools  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from sections import command_line, machine, publish, timed, verdict  # noqa: E402
from sklearn.datasets import make_multilabel_classification  # noqa: E402
from sklearn.metrics.pairwise import rbf_kernel  # noqa: E402
from sklearn.svm import SVC, LinearSVC  # noqa: E402

from toprank.m3l import M3L  # noqa: E402

BEGIN, END = "<!-- m3l:begin -->", "<!-- m3l:end -->"
C = 0.5  # M3L's C: one-vs-all penalty 2C = 1
# (b)'s 10x target is judged from this d up: the paper's own >= 10x RBF cases (Table 1) have costly
# kernel entries (d = 252 dense, 47,236 sparse); at d = 120 it reports 2.5-4x.
JUDGED_FROM_D = 250


def data(
    n: int, labels: int, features: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Standardised synthetic multi-label data: (X, Y, X_test, Y_test, dropped labels)."""
    n_test = max(n // 5, 100)
    X, Y = make_multilabel_classification(
        n_samples=n + n_test, n_features=features, n_classes=labels, n_labels=3, allow_unlabeled=True, random_state=seed
    )
    X = X.astype(np.float64)
    mean, std = X[:n].mean(axis=0), X[:n].std(axis=0)
    X = (X - mean) / np.where(std > 0, std, 1.0)
    on = Y[:n].sum(axis=0)
    keep = (on > 0) & (on < n)
    Y = Y[:, keep].astype(np.int64)
    return (
        np.ascontiguousarray(X[:n]),
        np.ascontiguousarray(Y[:n]),
        np.ascontiguousarray(X[n:]),
        np.ascontiguousarray(Y[n:]),
        int((~keep).sum()),
    )


def ova_primal(X: np.ndarray, Y: np.ndarray, W: np.ndarray) -> float:
    """Σ_l ½‖w_l‖² + 2C Σ_i max(0, 1 − y_il w_l·x_i), y = ±1."""
    S = 2.0 * Y - 1.0
    return float(0.5 * np.sum(W * W) + 2 * C * np.maximum(0.0, 1.0 - S * (X @ W.T)).sum())


def liblinear_ova(X: np.ndarray, Y: np.ndarray, tol: float) -> tuple[np.ndarray, int]:
    W, iters = [], 0
    for label in range(Y.shape[1]):
        clf = LinearSVC(
            loss="hinge", C=2 * C, fit_intercept=False, dual=True, tol=tol, max_iter=1_000_000, random_state=0
        ).fit(X, Y[:, label])
        W.append(clf.coef_[0])
        iters = max(iters, int(np.max(clf.n_iter_)))
    return np.array(W), iters


def linear_rows(X: np.ndarray, Y: np.ndarray, tols: list[float], repeats: int, failures: list[str]) -> list[str]:
    rows = []
    for tol in tols:
        t_m, m = timed(
            lambda tol=tol: M3L(
                C=C, solver="dcd", fit_intercept=False, tol=tol, max_iter=1_000_000, random_state=0, n_jobs=1
            ).fit(X, Y),
            repeats,
        )
        t_l, (W, lib_iter) = timed(lambda tol=tol: liblinear_ova(X, Y, tol), repeats)
        # Two threads: the labels (uncoupled with R = I) as tasks of the pool; the same fit.
        t_2, m2 = timed(
            lambda tol=tol: M3L(
                C=C, solver="dcd", fit_intercept=False, tol=tol, max_iter=1_000_000, random_state=0, n_jobs=2
            ).fit(X, Y),
            repeats,
        )
        same_fit = np.array_equal(m.coef_, m2.coef_) and np.array_equal(m.dual_coef_, m2.dual_coef_)
        if not same_fit:
            failures.append(f"(a) tol {tol:g}: M3L DCD on 2 threads differs from 1 thread")
        p_m, p_l = ova_primal(X, Y, m.coef_), ova_primal(X, Y, W)
        bound = m.dual_objective_
        diff = abs(p_m - p_l) / max(abs(p_m), abs(p_l))
        same = diff <= 1e-3
        if not same:
            failures.append(f"(a) tol {tol:g}: the one-vs-all primals differ by {diff:.2e} relative (> 1e-3)")
        if abs(p_m - m.primal_objective_) > 1e-6 * abs(p_m):
            failures.append(
                f"(a) tol {tol:g}: M3L's primal_objective_ {m.primal_objective_:.8g} is not the "
                f"one-vs-all primal of its coef_ {p_m:.8g}"
            )
        ratio = t_m / t_l
        rows.append(
            f"| {tol:g} | {t_m:.3f} s ({m.status_}, {m.n_iter_} epochs) | {t_l:.3f} s (≤ {lib_iter} epochs per "
            f"label) | {p_m:.6g} (+{(p_m - bound) / abs(bound):.1e}) | {p_l:.6g} (+{(p_l - bound) / abs(bound):.1e}) | "
            f"{diff:.1e} {'ok' if same else '**> 1e-3**'} | {ratio:.2f} | {verdict(ratio <= 1.0, '<= 1.0')} | "
            f"{t_2:.3f} s ({t_m / t_2:.2f}× 1 thread; {'the same fit' if same_fit else '**a different fit**'}) |"
        )
    return rows


def hamming(Y: np.ndarray, P: np.ndarray) -> tuple[float, float]:
    return float(np.mean(Y != P)), float(np.mean(np.all(Y == P, axis=1)))


# M3L's first tol in (b), on its scale (projected gradients 2 − 2yf); halved until its
# relative duality gap is at most SVC's (the first one is enough at the default sizes).
M3L_KERNEL_TOL = 1e-3


def relative_gap(K: np.ndarray, Y: np.ndarray, models: list[tuple[np.ndarray, float]]) -> float:
    """(P − D)/P summed over labels l < len(models), each model (β_l, b_l) an SVM with penalty
    2C in its dual form: P = Σ_l ½β_lᵀKβ_l + 2C Σ_i max(0, 1 − y_il((Kβ_l)_i + b_l)),
    D = Σ_l Σ_i |β_il| − ½β_lᵀKβ_l (y ∈ {−1, 1}; β_l = y_l∘α_l with α_l ∈ [0, 2C])."""
    primal = dual = 0.0
    for label, (beta, bias) in enumerate(models):
        y = np.where(Y[:, label] > 0, 1.0, -1.0)
        f = K @ beta
        quad = float(beta @ f)
        primal += 0.5 * quad + 2 * C * float(np.maximum(0.0, 1.0 - y * (f + bias)).sum())
        dual += float(np.abs(beta).sum()) - 0.5 * quad
    return (primal - dual) / primal


def svc_duals(svcs: list[SVC], n: int) -> list[tuple[np.ndarray, float]]:
    """Each SVC's (β, b) over all n training points (β = y∘α, 0 off the support)."""
    out = []
    for svc in svcs:
        beta = np.zeros(n)
        # dual_coef_ is y∘α with y = +1 for classes_[1], the label's "on" (Y > 0).
        beta[svc.support_] = svc.dual_coef_[0]
        out.append((beta, float(svc.intercept_[0])))
    return out


def m3l_duals(m: M3L, Y: np.ndarray, labels: int) -> list[tuple[np.ndarray, float]]:
    """M3L's per-label (β, 0) for R = I: the SVM with penalty 2C, β_l = 2 y_l∘α_l (α ∈ [0, C])."""
    return [(2.0 * np.asarray(m.dual_coef_[:, j]) * np.where(Y[:, j] > 0, 1.0, -1.0), 0.0) for j in range(labels)]


def kernel_row(
    n: int, labels: int, base: int, features: int, svc_labels: int, cache: float, repeats: int, failures: list[str]
) -> str:
    """One row of (b): M3L SMO against SVC one-vs-all on the `base`-dimensional data, embedded
    isometrically in `features` dimensions when that is larger (x ↦ Qᵀx, Q with orthonormal
    columns: the same distances, so the same kernel matrix and the same problems, with each
    kernel entry `features / base` times as costly)."""
    X, Y, Xt, Yt, _ = data(n, labels, base)
    L, gamma = Y.shape[1], 1.0 / base
    K = rbf_kernel(X, gamma=gamma)
    if features > base:
        Q = np.linalg.qr(np.random.default_rng(7).normal(size=(features, base)))[0]
        X, Xt = np.ascontiguousarray(X @ Q.T), np.ascontiguousarray(Xt @ Q.T)
    sub = min(svc_labels, L) if svc_labels > 0 else L

    def svc_fit() -> tuple[list[SVC], float]:
        models, seconds = [], 0.0
        for label in range(sub):
            t = time.perf_counter()
            models.append(SVC(kernel="rbf", C=2 * C, gamma=gamma, tol=1e-3, cache_size=cache).fit(X, Y[:, label]))
            seconds += time.perf_counter() - t
        return models, seconds

    # SVC's minutes-long fits at large d are timed once; their spread is far below the ratio's margin.
    t_s, (svcs, _) = timed(svc_fit, 1 if sub < L or features > 100 else repeats)
    t_all = t_s * L / sub
    gap_s = relative_gap(K, Y, svc_duals(svcs, n))

    def m3l_fit(tol: float) -> M3L:
        return M3L(
            C=C,
            kernel="rbf",
            solver="smo",
            gamma=gamma,
            fit_intercept=False,
            tol=tol,
            max_iter=10_000_000,
            cache_size=cache,
            n_jobs=1,
        ).fit(X, Y)

    # M3L at the first tol whose relative duality gap (on SVC's labels) is at most SVC's.
    tol = M3L_KERNEL_TOL
    while True:
        t_m, m = timed(functools.partial(m3l_fit, tol), repeats)
        gap_m = relative_gap(K, Y, m3l_duals(m, Y, sub))
        if gap_m <= gap_s or tol < M3L_KERNEL_TOL / 100:
            break
        tol /= 2
    if gap_m > gap_s:
        failures.append(
            f"(b) d = {features}: M3L stopped less accurate than SVC (relative duality gap {gap_m:.2e} "
            f"against {gap_s:.2e})"
        )
    P_m = (m.decision_function(Xt) > 0).astype(int)
    P_s = np.column_stack([s.predict(Xt) for s in svcs])
    hm_sub, _ = hamming(Yt[:, :sub], P_m[:, :sub])
    hs_sub, _ = hamming(Yt[:, :sub], P_s)
    h0 = float(np.mean(Yt[:, :sub] != 0))
    if not np.isfinite(m.primal_objective_) or m.status_ != "converged":
        failures.append(f"(b) d = {features}: M3L SMO did not converge: status {m.status_}")
    if hm_sub > max(2 * hs_sub, hs_sub + 0.02):
        failures.append(f"(b) d = {features}: M3L's held-out Hamming loss {hm_sub:.4f} is far above SVC's {hs_sub:.4f}")
    n_sv = int(sum(s.support_.size for s in svcs))
    svc_time = f"{t_s:.2f} s on {sub} labels → **{t_all:.1f} s** (× {L}/{sub})" if sub < L else f"**{t_all:.1f} s**"
    ratio = t_all / t_m
    target = (
        verdict(ratio >= 10, ">= 10x")
        if features >= JUDGED_FROM_D
        else f"not judged (d < {JUDGED_FROM_D}; paper at d = 120: 2.5–4x)"
    )
    return (
        f"| {features} | {L} | **{t_m:.2f} s** (tol {tol:g}, {m.status_}, {m.n_iter_} outer iterations) | "
        f"{svc_time} | {gap_m:.2e} / {gap_s:.2e} | {n_sv / sub:.0f} | {hm_sub:.4f} / {hs_sub:.4f} "
        f"(all-negative {h0:.4f}) | **{ratio:.1f}x** | {target} |"
    )


def dense_prior(L: int, seed: int = 3) -> np.ndarray:
    """A dense random SPD correlation matrix: G Gᵀ/(4L) + I scaled to unit diagonal."""
    G = np.random.default_rng(seed).normal(size=(L, L))
    S = G @ G.T / (4 * L) + np.eye(L)
    d = np.sqrt(np.diag(S))
    return np.ascontiguousarray(S / np.outer(d, d))


def per_iteration(
    make: Callable[[int, float], M3L],
    X: np.ndarray,
    Y: np.ndarray,
    budgets: tuple[int, int | None],
    tol: float,
    repeats: int,
) -> tuple[float, M3L]:
    """Seconds per iteration between two fits, (t2 − t1) / (M2 − M1), so that the setup (validation,
    kernel diagonal) cancels: the first stopped after M1 iterations, the second after M2 with tol tiny,
    or, with M2 None, solved to `tol` (its iterations are M2: every phase of a solve then counts as
    often as it runs)."""
    (m1, m2), best, last = budgets, float("inf"), None

    def second() -> M3L:
        return make(m2, 1e-12) if m2 is not None else make(10**7, tol)

    # One fit untimed first: the first fit in a process also pays for faulting in the
    # cache's fresh pages (about 0.1 s for 200 MB), which would land in t1 only and
    # make the difference, and so the per-iteration time, too small.
    timed(lambda: make(m1, 1e-12).fit(X, Y), 1)
    for _ in range(repeats):
        t1, _ = timed(lambda: make(m1, 1e-12).fit(X, Y), 1)
        t2, last = timed(lambda: second().fit(X, Y), 1)
        best = min(best, (t2 - t1) / (last.n_iter_ - m1))
    assert isinstance(last, M3L), "repeats must be >= 1"
    return best, last


def prior_rows(
    X: np.ndarray,
    Y: np.ndarray,
    gamma: float,
    cache: float,
    dcd_budgets: tuple[int, int],
    repeats: int,
    failures: list[str],
) -> tuple[list[str], float]:
    L = Y.shape[1]
    R = dense_prior(L)
    off = np.abs(R[~np.eye(L, dtype=bool)])
    rows = []

    def smo(prior: np.ndarray | None) -> Callable[[int, float], M3L]:
        return lambda it, tol: M3L(
            C=C,
            R=prior,
            kernel="rbf",
            solver="smo",
            gamma=gamma,
            fit_intercept=False,
            tol=tol,
            max_iter=it,
            cache_size=cache,
            n_jobs=1,
        )

    def dcd(prior: np.ndarray | None) -> Callable[[int, float], M3L]:
        return lambda it, tol: M3L(
            C=C, R=prior, solver="dcd", fit_intercept=False, tol=tol, max_iter=it, random_state=0, n_jobs=1
        )

    budgets: tuple[int, int | None]
    for name, budgets, make in (
        ("SMO outer iteration (RBF)", (5, None), smo),
        ("DCD epoch (linear)", dcd_budgets, dcd),
    ):
        t_i, m_i = per_iteration(make(None), X, Y, budgets, 1e-3, repeats)
        t_r, m_r = per_iteration(make(R), X, Y, budgets, 1e-3, repeats)
        for tag, m in (("R = I", m_i), ("dense R", m_r)):
            complete = m.status_ == "converged" if budgets[1] is None else m.n_iter_ == budgets[1]
            if not complete or not np.isfinite(m.primal_objective_):
                failures.append(
                    f"(c) {name}, {tag}: {m.status_} after {m.n_iter_} iterations; the "
                    "per-iteration time is not comparable"
                )
        ratio = t_r / t_i
        if t_i <= 0 or t_r <= 0:
            failures.append(f"(c) {name}: a per-iteration time is not positive (timing noise; raise the budgets)")
            ratio = float("inf")
        span = (
            f"{budgets[0]} → whole solve to tol 1e-3 ({m_i.n_iter_} / {m_r.n_iter_})"
            if budgets[1] is None
            else f"{budgets[0]} → {budgets[1]}"
        )
        rows.append(
            f"| {name} | {span} | {t_i * 1e3:.3f} ms | {t_r * 1e3:.3f} ms | "
            f"{ratio:.2f} | {verdict(ratio <= 2.0, '<= 2x')} |"
        )
    return rows, float(off.max())


def section(
    args: argparse.Namespace,
    shape: str,
    load: str,
    dropped: int,
    a: list[str],
    b: list[str],
    c: list[str],
    r_max: float,
    gamma: float,
    cache: float,
) -> str:
    return (
        "\n".join(
            [
                BEGIN,
                "## M3L multi-label (linear DCD and kernel SMO)",
                "",
                f"Command: `{command_line()}`. Machine: {load}. Data: "
                f"`make_multilabel_classification` (seed 0, about 3 labels per example), {shape}, standardised"
                f"{f', {dropped} constant labels dropped' if dropped else ''}. C = {C:g} (one-vs-all penalty 2C = "
                f"{2 * C:g}), no intercept on the M3L side, single-threaded everywhere but (a)'s last column, best of "
                f"{args.repeats}.",
                "",
                '(a) Linear, R = I: `M3L(solver="dcd", fit_intercept=False, tol=T)` against one-vs-all LIBLINEAR '
                '`LinearSVC(loss="hinge", C=2C, fit_intercept=False, dual=True, tol=T, max_iter=10⁶)` (one fit per label, '
                "times summed) — the same problem. Objectives: the one-vs-all primal computed in NumPy from each side's "
                "weights, in brackets its excess over M3L's dual objective (a lower bound on the optimum). M3L's tol is on "
                "its projected gradient 2 − 2yf (twice the SVM's), LIBLINEAR's on max PG − min PG of the SVM dual, so the "
                "same T is about the same test:",
                "",
                "| T | M3L DCD | LIBLINEAR one-vs-all | primal, M3L | primal, LIBLINEAR | relative difference | "
                "M3L / LIBLINEAR | target | M3L DCD, `n_jobs=2` (the labels as tasks; not a target) |",
                "|---|---|---|---|---|---|---|---|---|",
                *a,
                "",
                f"(b) RBF kernel exp(−{1 / args.features:.4g}‖x − x'‖²), R = I, N = {args.n:,}, on the data of (a) and on "
                f"the same data embedded isometrically in d dimensions (x ↦ Qᵀx, Q with orthonormal columns: the same "
                f"kernel matrix, hence the same problems and solutions, with each kernel entry d/{args.features} times as "
                "costly, like the higher-dimensional descriptors of the paper's data sets, d = 120 to 47,236): "
                '`M3L(kernel="rbf", '
                f'solver="smo", fit_intercept=False, tol=T, cache_size={cache:g})` against '
                f'`SVC(kernel="rbf", C=2C, gamma=same, tol=1e-3, cache_size={cache:g})` per label. SVC fits an '
                "unregularised bias, so the problems differ. Same accuracy: each side's relative duality gap (P − D)/P over "
                "the labels, computed in NumPy from its dual coefficients; T is the first of 1e-3, 5e-4, … whose gap is at "
                "most SVC's (M3L's tol is on its projected gradients, twice the SVM's; SVC's on its maximal violating pair, "
                "whose gap of 1e-3 bounds each variable's violation by 5e-4 about the best bias). Held-out Hamming loss as "
                "a sanity check. "
                "Best of the repeats for M3L; SVC once when d > 100. The 10× target is judged from "
                f"d = {JUDGED_FROM_D} up, where kernel entries cost what they cost in the paper's own ≥ 10× cases (its "
                "Table 1: 11.5–15× on Animals with Attributes, d = 252; 7–13× on RCV1, sparse); smaller d is reported, "
                "not judged (the paper: 2.5–4× on Media Mill, d = 120; why, below the table):",
                "",
                "| d | L | M3L SMO | SVC one-vs-all | relative duality gap, M3L / SVC | SVC support vectors per label | "
                "held-out Hamming, M3L / SVC | SVC / M3L | target |",
                "|---|---|---|---|---|---|---|---|---|",
                *b,
                "",
                "Why the ratio grows with d: SVC computes every kernel column it needs once per label (its cache is its "
                "own), each column N d-dimensional distances, while M3L's cache is shared, so each column is computed once "
                "for all L labels (here all N columns are needed; M3L computes them in blocks of up to 64, which read X "
                "once per block). At d = 50 that saving is small next to the SMO steps themselves, whose cost is reading "
                "kernel columns from the 100 MB of cached columns (single precision, as LIBSVM holds them; `perf record -e "
                "cpu-clock` at d = 50, shares of the whole process: gathering the pair's two columns at the searched "
                "variables, about 27%; u over all N once per outer iteration, 8%; updating u, the searched gradients and "
                "their projections, 6%; the largest violation and gain, 7%; the gains (56), 5%; the kernel columns "
                "themselves, 9%; an uncoupled label takes up to 32 outer iterations in a row, so that its columns are "
                "read while still in the processor's cache, 9% faster than the order of (32)), so M3L is only several "
                "times faster; as d grows, "
                "the kernel work SVC repeats L times dominates its time. The paper's own RBF ratios (its Table 1) grow the "
                "same way with the cost of a kernel entry: 2.5–4× on Media Mill (d = 120), 3.5–6× on Siam (sparse), "
                "7–13× on RCV1 (sparse) and 11.5–15× on Animals with Attributes (d = 252). The steps search only the free and "
                "violating variables of a "
                "label (shrinking; all gradients are brought up to date once per outer iteration), about 40% of N here.",
                "",
                f"(c) Dense random SPD R (unit diagonal, largest |off-diagonal| {r_max:.2f}) against R = I, same data and "
                "settings; per iteration = (t(M2) − t(M1)) / (M2 − M1) between a fit stopped after M1 iterations and one "
                "after M2 (the setup cancels). SMO over its whole solve (M2 = its iterations to tol 1e-3, the phases of a "
                "solve counted as often as they run: an uncoupled label takes up to 32 turns in a row, so with R = I a "
                "fixed budget would end in later, cheaper phases than with a dense R). DCD over early epochs, tol tiny so "
                "that neither stops (with R = I, DCD stops each label on its own, so late epochs visit only the unsettled "
                "labels, which a dense R, coupling them all, cannot):",
                "",
                "| per | iterations M1 → M2 (R = I / dense R) | R = I | dense R | dense / I | target |",
                "|---|---|---|---|---|---|",
                *c,
                "",
                END,
            ]
        )
        + "\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 500, L = 10 (smoke test)")
    parser.add_argument("--n", type=int, default=5_000, help="training examples")
    parser.add_argument("--labels", type=int, default=50)
    parser.add_argument("--features", type=int, default=50, help="dimensions of (a) and (c)")
    parser.add_argument("--kernel-features", default="50,120,250,500", help="dimensions of (b), comma-separated")
    parser.add_argument("--tols", default="0.1,0.01", help="tolerances of (a), comma-separated")
    parser.add_argument(
        "--svc-labels",
        type=int,
        default=0,
        help="labels SVC is timed on in (b), its time extrapolated to all (0: all labels)",
    )
    parser.add_argument("--cache", type=float, default=500.0, help="kernel cache (MB) of both sides in (b), (c)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="abc", help="parts to run (debugging)")
    parser.add_argument("--write", metavar="PATH")
    args = parser.parse_args()
    if args.quick:
        args.n, args.labels, args.repeats, args.kernel_features = 500, 10, 1, "50"
    load = machine()
    X, Y, Xt, Yt, dropped = data(args.n, args.labels, args.features)
    gamma = 1.0 / X.shape[1]
    shape = (
        f"N = {X.shape[0]:,} training + {Xt.shape[0]:,} held-out examples, L = {Y.shape[1]} labels, "
        f"d = {X.shape[1]} features, {Y.sum(axis=1).mean():.2f} labels per example"
    )
    failures: list[str] = []
    a = linear_rows(X, Y, [float(t) for t in args.tols.split(",")], args.repeats, failures) if "a" in args.only else []
    b = (
        [
            kernel_row(args.n, args.labels, args.features, d, args.svc_labels, args.cache, args.repeats, failures)
            for d in (int(v) for v in args.kernel_features.split(","))
        ]
        if "b" in args.only
        else []
    )
    c, r_max = (
        prior_rows(X, Y, gamma, args.cache, (20, 60) if args.quick else (20, 80), args.repeats, failures)
        if "c" in args.only
        else ([], 0.0)
    )
    text = section(args, shape, load, dropped, a, b, c, r_max, gamma, args.cache)
    return publish(text, failures, args.write, BEGIN, END)


if __name__ == "__main__":
    raise SystemExit(main())
