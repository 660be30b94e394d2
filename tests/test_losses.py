"""Rankmax projection and the losses of ``toprank.losses`` against independent NumPy references.

The references below are written directly from the papers' formulas and share no code with
the Rust core:

* Rankmax (Kong et al., Proposition 3 / Definition 4): a full argsort, then every candidate
  number t of entries capped at 1 is tried and the consistent one is kept;
* sparsemax (Martins & Astudillo, 2016, Algorithm 1): sort and cumulative sums;
* the top-k hinge losses (Lapin et al.): a direct sort of the m - 1 margins.

Gradients are checked against central finite differences of the library's own loss values.
Everything is seeded and the whole module runs in a few seconds.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from toprank import losses, projections
from toprank.exceptions import InvalidInputError

RNG_SEED = 20240611


# --------------------------------------------------------------------------------------
# Independent references
# --------------------------------------------------------------------------------------


def ref_rankmax(z: np.ndarray, y: int, k: int = 1, eta: float = 1.0) -> tuple[np.ndarray, dict]:
    """Rankmax(z, y) from Proposition 3, O(n log n): full sort, then enumerate t = 0..k-1.

    mu = min(z_y, z_[k]) - eta; s = #{z_i > mu}; for a candidate t (number of entries at
    the cap 1), alpha_t = (k - t) / sum_{i=t+1..s} (z_[i] - mu). t is consistent when the t
    largest entries really are capped (alpha z_[t] - mu >= 1) and the (t+1)-th is not
    (alpha (z_[t+1] - mu) <= 1). p = clip(alpha (z - mu), 0, 1).
    """
    z = np.asarray(z, dtype=np.float64)
    n = z.size
    assert 1 <= k < n
    order = np.argsort(-z, kind="stable")
    zs = z[order]  # descending
    z_k = zs[k - 1]
    mu = min(z[y], z_k) - eta
    d = zs - mu  # d[i] = z_[i+1] - mu, descending
    s = int(np.count_nonzero(d > 0))
    assert s >= k
    # tail[t] = sum_{i=t+1..s} (z_[i] - mu) (1-based ranks), t = 0..s-1
    csum = np.concatenate(([0.0], np.cumsum(d[:s])))
    tol = 1e-12
    chosen = None
    for t in range(min(s, k)):
        alpha = (k - t) / (csum[s] - csum[t])
        top_capped = t == 0 or alpha * d[t - 1] >= 1.0 - tol
        next_free = alpha * d[t] <= 1.0 + tol
        if top_capped and next_free:
            chosen = (t, alpha)
            break
    assert chosen is not None, "reference found no consistent t"
    t, alpha = chosen
    p = np.clip(alpha * (z - mu), 0.0, 1.0)
    # the k-th largest element's identity matters for the gradient (mu depends on it)
    info = {
        "s": s,
        "t": t,
        "alpha": alpha,
        "mu": mu,
        "y_in_topk": bool(z[y] > z_k),
        "kth": int(order[k - 1]),
        # (with a tolerance: when s == k the k-th largest entry sits exactly at the cap)
        "capped": frozenset(int(i) for i in np.flatnonzero(alpha * (z - mu) >= 1.0 - 1e-9)),
        "support": frozenset(int(i) for i in np.flatnonzero(z > mu)),
    }
    return p, info


def ref_sparsemax(z: np.ndarray) -> tuple[np.ndarray, float]:
    """Sparsemax and its threshold tau (Martins & Astudillo, Algorithm 1)."""
    z = np.asarray(z, dtype=np.float64)
    zs = np.sort(z)[::-1]
    cs = np.cumsum(zs)
    ks = np.arange(1, z.size + 1)
    support = 1.0 + ks * zs > cs
    kz = ks[support][-1]
    tau = (cs[kz - 1] - 1.0) / kz
    return np.maximum(z - tau, 0.0), tau


def ref_sparsemax_loss(z: np.ndarray, y: int) -> float:
    z = np.asarray(z, dtype=np.float64)
    _, tau = ref_sparsemax(z)
    S = z > tau
    return float(-z[y] + 0.5 * np.sum(z[S] ** 2 - tau**2) + 0.5)


def ref_softmax_loss(z: np.ndarray, y: int) -> float:
    return float(logsumexp(z) - z[y])


def ref_topk_hinge(s: np.ndarray, y: int, k: int, variant: str) -> float:
    s = np.asarray(s, dtype=np.float64)
    h = 1.0 + np.delete(s, y) - s[y]
    top = np.sort(h)[::-1][:k]
    if variant == "alpha":
        return float(max(0.0, top.sum()) / k)
    return float(np.maximum(top, 0.0).sum() / k)


def crammer_singer(s: np.ndarray, y: int) -> float:
    return float(max(0.0, np.max(1.0 + np.delete(s, y) - s[y])))


# --------------------------------------------------------------------------------------
# Random cases
# --------------------------------------------------------------------------------------


def _rankmax_cases(n_rows: int = 640, seed: int = RNG_SEED):
    """(z, y, k, eta) with n in [2, 60], k in {1, 2, 5, n-1}, continuous and tied z,
    y drawn uniformly, from the top k and from outside the top k."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n_rows):
        n = int(rng.integers(2, 61))
        kind = i % 4
        if kind == 0:
            z = rng.normal(0.0, 1.5, n)
        elif kind == 1:
            z = rng.normal(0.0, 0.3, n)  # large supports
        elif kind == 2:
            z = rng.integers(-3, 4, n) * 0.5  # many ties, also exactly at mu
        else:
            z = rng.normal(0.0, 5.0, n)  # small supports
        k = int(rng.choice([kk for kk in (1, 2, 5, n - 1) if 1 <= kk < n]))
        order = np.argsort(-z, kind="stable")
        which = rng.integers(3)
        if which == 0 or k == n:
            y = int(rng.integers(n))
        elif which == 1:
            y = int(order[rng.integers(k)])  # (one of) the top k
        else:
            y = int(order[rng.integers(k, n)])  # outside the top k
        eta = 1.0 if i % 3 else float(rng.uniform(0.2, 3.0))
        cases.append((z, y, k, eta))
    return cases


RANKMAX_CASES = _rankmax_cases()


def test_rankmax_cases_cover_the_interesting_regimes():
    in_top = out_top = ties = capped = 0
    for z, y, k, eta in RANKMAX_CASES:
        _, info = ref_rankmax(z, y, k, eta)
        in_top += info["y_in_topk"]
        out_top += not info["y_in_topk"]
        ties += np.unique(z).size < z.size
        capped += info["t"] > 0
    assert len(RANKMAX_CASES) >= 500
    assert min(in_top, out_top, ties, capped) >= 50


# --------------------------------------------------------------------------------------
# 1. Rankmax projection
# --------------------------------------------------------------------------------------


def test_rankmax_matches_sort_based_reference():
    worst = 0.0
    for z, y, k, eta in RANKMAX_CASES:
        p = projections.rankmax(z, y, k=k, eta=eta)
        p_ref, _ = ref_rankmax(z, y, k, eta)
        assert p.shape == z.shape and p.dtype == np.float64
        err = float(np.max(np.abs(p - p_ref)))
        worst = max(worst, err)
        assert err <= 1e-10, (z.tolist(), y, k, eta, p.tolist(), p_ref.tolist())
    assert worst <= 1e-10


def test_rankmax_is_in_the_n_k_simplex_and_keeps_y():
    for z, y, k, eta in RANKMAX_CASES:
        p = projections.rankmax(z, y, k=k, eta=eta)
        assert abs(p.sum() - k) <= 1e-10, (z.tolist(), y, k, eta)
        assert np.all(p >= 0.0) and np.all(p <= 1.0)
        assert p[y] > 0.0
        # support = {z_i > mu}, monotone in z
        order = np.argsort(z, kind="stable")
        assert np.all(np.diff(p[order]) >= -1e-12)


def test_rankmax_k1_closed_form_eq15():
    rng = np.random.default_rng(RNG_SEED + 1)
    for _ in range(300):
        n = int(rng.integers(2, 61))
        z = rng.normal(0, 1.5, n) if rng.random() < 0.7 else rng.integers(-3, 4, n) * 0.5
        y = int(rng.integers(n))
        num = np.maximum(z - z[y] + 1.0, 0.0)
        np.testing.assert_allclose(projections.rankmax(z, y), num / num.sum(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(projections.rankmax(z, y, k=1), num / num.sum(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("gamma", [1e-3, 0.37, 2.5, 1e3])
def test_rankmax_scale_invariance(gamma):
    for z, y, k, _ in RANKMAX_CASES[::5]:
        np.testing.assert_allclose(
            projections.rankmax(gamma * z, y, k=k, eta=gamma),
            projections.rankmax(z, y, k=k),
            rtol=0,
            atol=1e-10,
        )


def test_rankmax_shift_invariance():
    for z, y, k, eta in RANKMAX_CASES[::5]:
        np.testing.assert_allclose(
            projections.rankmax(z + 7.25, y, k=k, eta=eta), projections.rankmax(z, y, k=k, eta=eta), atol=1e-10, rtol=0
        )


def _exact_rankmax(z: np.ndarray, y: int, k: int, eta: float) -> np.ndarray:
    """Proposition 3 in exact rational arithmetic (the floats in z and eta are exact rationals)."""
    from fractions import Fraction

    zf = [Fraction(float(v)) for v in z]
    zs = sorted(zf, reverse=True)
    mu = min(zf[y], zs[k - 1]) - Fraction(float(eta))
    d = [v - mu for v in zs]
    s = sum(1 for v in d if v > 0)
    for t in range(min(s, k)):
        alpha = Fraction(k - t) / sum(d[t:s])
        if (t == 0 or alpha * d[t - 1] >= 1) and alpha * d[t] <= 1:
            return np.array([float(min(Fraction(1), max(Fraction(0), alpha * (v - mu)))) for v in zf])
    raise AssertionError("no consistent t")


def test_rankmax_ill_conditioned_against_exact_arithmetic():
    # scores from 1e-6 to 1e6 in scale, eta from 1e-5 to 1e5, large offsets: the float
    # reference above would need looser tolerances, the exact one does not.
    rng = np.random.default_rng(RNG_SEED + 20)
    for i in range(60):
        n = int(rng.integers(2, 25))
        scale = 10.0 ** rng.uniform(-6, 6)
        z = rng.normal(0.0, scale, n) if i % 2 else rng.integers(-2, 3, n) * scale
        if i % 5 == 0:
            z = z + 1e6 * scale
        k = int(rng.integers(1, n))
        y = int(rng.integers(n))
        eta = float(10.0 ** rng.uniform(-5, 5)) * scale
        p = projections.rankmax(z, y, k=k, eta=eta)
        np.testing.assert_allclose(
            p, _exact_rankmax(z, y, k, eta), rtol=0, atol=1e-9, err_msg=str((z.tolist(), y, k, eta))
        )
        assert abs(p.sum() - k) <= 1e-9 * k


def test_rankmax_hand_example():
    # z = [3, 1, 0.2, -1, 2], y = 1, k = 2: mu = min(1, 2) - 1 = 0, s = 4, t = 0,
    # alpha = 2 / (3 + 2 + 1 + 0.2)
    z = np.array([3.0, 1.0, 0.2, -1.0, 2.0])
    alpha = 2.0 / 6.2
    expected = np.clip(alpha * z, 0, 1)
    np.testing.assert_allclose(projections.rankmax(z, 1, k=2), expected, rtol=0, atol=1e-15)
    loss, grad = losses.rankmax_loss(z, 1, k=2)
    assert loss == pytest.approx(-np.log(alpha), rel=1e-14)
    np.testing.assert_allclose(grad, [1 / 6.2, -3 / 6.2, 1 / 6.2, 0.0, 1 / 6.2], rtol=1e-14, atol=1e-15)


# --------------------------------------------------------------------------------------
# 2. Loss values and gradients
# --------------------------------------------------------------------------------------

H = 1e-6


def _fd_grad(f, z: np.ndarray, coords) -> np.ndarray:
    g = np.full(z.size, np.nan)
    for i in coords:
        e = np.zeros_like(z)
        e[i] = H
        g[i] = (f(z + e) - f(z - e)) / (2 * H)
    return g


def _assert_grad_close(fd: np.ndarray, g: np.ndarray, mask: np.ndarray, ctx) -> None:
    # relative error, with a floor of 1e-3 on the scale so exact zeros compare absolutely
    rel = np.abs(fd[mask] - g[mask]) / np.maximum(np.abs(g[mask]), 1e-3)
    assert np.all(rel < 1e-5), (ctx, float(rel.max()), fd.tolist(), g.tolist())


def _rankmax_signature(z, y, k, eta):
    _, info = ref_rankmax(z, y, k, eta)
    return (info["s"], info["t"], info["y_in_topk"], info["kth"], info["capped"], info["support"])


def _continuous_rankmax_points(k: int, want_in_top: bool, count: int, rng):
    """Random continuous (tie-free) points with z_y in / not in the top k."""
    pts = []
    while len(pts) < count:
        n = int(rng.integers(max(k + 1, 3), 41))
        z = rng.normal(0.0, float(rng.choice([0.5, 1.5, 3.0])), n)
        order = np.argsort(-z)
        y = int(order[rng.integers(k)]) if want_in_top else int(order[rng.integers(k, n)])
        eta = float(rng.choice([1.0, 0.5, 2.0]))
        pts.append((z, y, k, eta))
    return pts


@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("in_top", [True, False], ids=["y_in_topk", "y_not_in_topk"])
def test_rankmax_loss_gradient_finite_differences(k, in_top):
    rng = np.random.default_rng(RNG_SEED + 10 * k + in_top)
    checked = 0
    uncapped_rows = 0
    strictly_above_kth = 0  # mu = z_[k] - eta depends on another coordinate than y
    for z, y, k_, eta in _continuous_rankmax_points(k, in_top, 40, rng):
        loss, grad = losses.rankmax_loss(z, y, k=k_, eta=eta)
        assert isinstance(loss, float)
        assert grad.shape == z.shape and grad.dtype == np.float64
        # gradient of a shift-invariant loss sums to zero
        assert abs(grad.sum()) <= 1e-12 * max(1.0, np.abs(grad).sum()), (z.tolist(), y, k_, eta)
        sig = _rankmax_signature(z, y, k_, eta)
        p_ref, _ = ref_rankmax(z, y, k_, eta)
        uncapped_rows += p_ref[y] < 1.0
        strictly_above_kth += bool(p_ref[y] < 1.0 and sig[2])

        def f(v, y=y, k_=k_, eta=eta):
            return losses.rankmax_loss(v, y, k=k_, eta=eta)[0]

        # only the coordinates whose ±H perturbation keeps the same piece of the
        # piecewise-smooth loss (same support, capped set, k-th element, y rank)
        mask = np.zeros(z.size, dtype=bool)
        for i in range(z.size):
            e = np.zeros_like(z)
            e[i] = H
            mask[i] = _rankmax_signature(z + e, y, k_, eta) == sig == _rankmax_signature(z - e, y, k_, eta)
        assert mask.mean() >= 0.8, "too many kinks for a random continuous point"
        fd = _fd_grad(f, z, np.flatnonzero(mask))
        _assert_grad_close(fd, grad, mask, (z.tolist(), y, k_, eta))
        checked += int(mask.sum())
    assert checked >= 200
    assert uncapped_rows >= 10
    if in_top and k > 1:
        assert strictly_above_kth >= 5


def test_rankmax_loss_value_matches_reference():
    for z, y, k, eta in RANKMAX_CASES:
        loss, grad = losses.rankmax_loss(z, y, k=k, eta=eta)
        p_ref, _ = ref_rankmax(z, y, k, eta)
        expected = -np.log(min(1.0, p_ref[y]))
        assert loss == pytest.approx(expected, rel=1e-10, abs=1e-10), (z.tolist(), y, k, eta)
        assert loss >= 0.0
        assert abs(grad.sum()) <= 1e-10 * max(1.0, np.abs(grad).sum())


def test_rankmax_loss_k1_matches_paper_eq15_16():
    # loss = log sum (z_i - z_y + 1)_+, gradient (16): -(s - 1) p_y at y, p_y on the support
    rng = np.random.default_rng(RNG_SEED + 2)
    for _ in range(200):
        n = int(rng.integers(2, 50))
        z = rng.normal(0, 1.5, n)
        y = int(rng.integers(n))
        plus = np.maximum(z - z[y] + 1.0, 0.0)
        loss, grad = losses.rankmax_loss(z, y)
        assert loss == pytest.approx(np.log(plus.sum()), rel=1e-12, abs=1e-13)
        p_y = 1.0 / plus.sum()
        expected = np.where(plus > 0, p_y, 0.0)
        expected[y] = -(np.count_nonzero(plus > 0) - 1) * p_y
        np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-15)


def test_rankmax_loss_zero_when_y_is_capped():
    # y far above everything else with k = 2: p_y = 1, loss 0, zero gradient
    z = np.array([10.0, 0.0, 0.1, -0.3, 0.2])
    p = projections.rankmax(z, 0, k=2)
    assert p[0] == 1.0
    loss, grad = losses.rankmax_loss(z, 0, k=2)
    assert loss == 0.0
    np.testing.assert_array_equal(grad, np.zeros(5))


# Three clusters of scores a few ulps apart (the fuzz harness's `ulp_tied` rows, seed 7):
# the 26 largest lie within 2e-15 of each other, several exactly equal.
_ULP_TIED_ROW = np.array(
    [
        -13.53578531137575,
        -8.685883569358149,
        -8.685883569358156,
        -8.685883569358152,
        1.9173635083384089,
        1.917363508338407,
        1.9173635083384075,
        -8.685883569358154,
        -13.53578531137575,
        1.9173635083384075,
        1.9173635083384077,
        1.9173635083384089,
        -8.685883569358163,
        1.9173635083384077,
        -13.535785311375749,
        -8.68588356935816,
        -13.535785311375754,
        -13.53578531137575,
        -8.685883569358156,
        -13.535785311375758,
        -13.535785311375756,
        -8.685883569358161,
        -8.685883569358161,
        -13.535785311375749,
        1.9173635083384077,
        -13.53578531137575,
        -8.68588356935816,
        1.9173635083384077,
        -8.68588356935816,
        -8.68588356935816,
        1.9173635083384082,
        -13.535785311375749,
        1.9173635083384089,
        1.9173635083384077,
        -8.685883569358156,
        -13.535785311375758,
        1.9173635083384075,
        1.9173635083384086,
        1.917363508338408,
        1.9173635083384077,
        1.9173635083384075,
        1.9173635083384082,
        -8.685883569358149,
        1.9173635083384086,
        -8.68588356935816,
        1.9173635083384086,
        1.9173635083384082,
        -8.685883569358154,
        1.9173635083384084,
        1.917363508338408,
        -13.535785311375752,
        -13.535785311375754,
        -13.535785311375758,
        -8.685883569358158,
        -8.685883569358161,
        1.9173635083384084,
        -8.685883569358156,
        1.9173635083384086,
        -13.535785311375756,
        1.9173635083384073,
        -8.685883569358156,
        -8.685883569358154,
    ]
)


@pytest.mark.parametrize("k", [1, 5, 25, 26, 27, 40])
def test_rankmax_loss_gradient_sums_to_zero_on_ulp_tied_scores(k):
    # With k = 26 the capped scores end inside a run of equal scores: the state caps them
    # by rank, and the gradient once gave M's step only to the scores strictly below the
    # smallest capped one (y = 5: entries -0.8 and 0.2, summing to -0.6).
    z = _ULP_TIED_ROW
    for y in range(z.size):
        loss, grad = losses.rankmax_loss(z, y, k=k)
        p_y = projections.rankmax(z, y, k=k)[y]
        assert abs(loss + np.log(min(1.0, p_y))) <= 1e-12, (k, y)
        assert abs(grad.sum()) <= 1e-12 * max(1.0, np.abs(grad).sum()), (k, y, grad[grad != 0])
        if loss > 0:
            assert grad[y] < 0, (k, y)


def _continuous_points(count, rng, n_max=40, scale_choices=(0.5, 1.5, 3.0)):
    for _ in range(count):
        n = int(rng.integers(2, n_max + 1))
        z = rng.normal(0.0, float(rng.choice(scale_choices)), n)
        yield z, int(rng.integers(n))


def test_softmax_loss_value_and_gradient():
    rng = np.random.default_rng(RNG_SEED + 3)
    for z, y in _continuous_points(120, rng):
        loss, grad = losses.softmax_loss(z, y)
        assert isinstance(loss, float)
        assert loss == pytest.approx(ref_softmax_loss(z, y), rel=1e-12, abs=1e-13)
        expected = np.exp(z - logsumexp(z))
        expected[y] -= 1.0
        np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-15)
        assert abs(grad.sum()) <= 1e-12
        fd = _fd_grad(lambda v, y=y: losses.softmax_loss(v, y)[0], z, range(z.size))
        _assert_grad_close(fd, grad, np.ones(z.size, bool), (z.tolist(), y))


def test_softmax_loss_is_numerically_stable():
    z = np.array([1000.0, 999.0, -1000.0, 998.5])
    loss, grad = losses.softmax_loss(z, 1)
    assert np.isfinite(loss) and np.all(np.isfinite(grad))
    assert loss == pytest.approx(ref_softmax_loss(z, 1), rel=1e-12)
    loss2, grad2 = losses.softmax_loss(z - 1000.0, 1)
    assert loss == pytest.approx(loss2, rel=1e-12)
    np.testing.assert_allclose(grad, grad2, atol=1e-15)
    # far below: loss ~ 2000, no overflow
    loss3, _ = losses.softmax_loss(z, 2)
    assert loss3 == pytest.approx(ref_softmax_loss(z, 2), rel=1e-12)


def test_sparsemax_loss_value_and_gradient():
    rng = np.random.default_rng(RNG_SEED + 4)
    checked = 0
    for z, y in _continuous_points(150, rng):
        loss, grad = losses.sparsemax_loss(z, y)
        assert isinstance(loss, float)
        assert loss == pytest.approx(ref_sparsemax_loss(z, y), rel=1e-12, abs=1e-12), (z.tolist(), y)
        assert loss >= -1e-12
        p, _ = ref_sparsemax(z)
        expected = p.copy()
        expected[y] -= 1.0
        np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(projections.sparsemax(z), p, rtol=0, atol=1e-12)
        assert abs(grad.sum()) <= 1e-12
        support = ref_sparsemax(z)[0] > 0
        mask = np.zeros(z.size, dtype=bool)
        for i in range(z.size):
            e = np.zeros_like(z)
            e[i] = H
            mask[i] = np.array_equal(ref_sparsemax(z + e)[0] > 0, support) and np.array_equal(
                ref_sparsemax(z - e)[0] > 0, support
            )
        fd = _fd_grad(lambda v, y=y: losses.sparsemax_loss(v, y)[0], z, np.flatnonzero(mask))
        _assert_grad_close(fd, grad, mask, (z.tolist(), y))
        checked += int(mask.sum())
    assert checked >= 1000


def test_sparsemax_loss_zero_at_confident_correct_prediction():
    # z_y exceeds every other score by >= 1: sparsemax = e_y and the loss is 0
    z = np.array([0.0, 3.0, 1.5, -2.0])
    loss, grad = losses.sparsemax_loss(z, 1)
    assert loss == pytest.approx(0.0, abs=1e-15)
    np.testing.assert_allclose(grad, np.zeros(4), atol=1e-15)


# --------------------------------------------------------------------------------------
# 3. Top-k hinge
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["alpha", "beta"])
def test_topk_hinge_matches_reference(variant):
    rng = np.random.default_rng(RNG_SEED + 5)
    for i in range(300):
        m = int(rng.integers(2, 41))
        s = rng.normal(0.0, float(rng.choice([0.2, 1.0, 3.0])), m) if i % 3 else rng.integers(-2, 3, m) * 0.5
        y = int(rng.integers(m))
        for k in sorted({1, m - 1, int(rng.integers(1, m))}):
            got, _ = losses.topk_hinge(s, y, k, variant)
            assert isinstance(got, float)
            assert got == pytest.approx(ref_topk_hinge(s, y, k, variant), rel=1e-12, abs=1e-12), (
                s.tolist(),
                y,
                k,
                variant,
            )


def test_topk_hinge_default_variant_is_alpha():
    rng = np.random.default_rng(RNG_SEED + 6)
    s = rng.normal(size=12)
    assert losses.topk_hinge(s, 3, 4)[0] == losses.topk_hinge(s, 3, 4, variant="alpha")[0]


def test_topk_hinge_alpha_and_beta_differ_when_margins_mix_signs():
    # h = 1 + s_j - s_y over j != y = [1.5, -0.5, -2.0]; k = 2: alpha = max(0, 1.0)/2, beta = 1.5/2
    s = np.array([1.0, 1.5, -0.5, -2.0])
    assert losses.topk_hinge(s, 0, 2, "alpha")[0] == pytest.approx(0.5)
    assert losses.topk_hinge(s, 0, 2, "beta")[0] == pytest.approx(0.75)
    # k = 3: alpha = max(0, -1)/3 = 0, beta = 1.5/3
    assert losses.topk_hinge(s, 0, 3, "alpha")[0] == pytest.approx(0.0)
    assert losses.topk_hinge(s, 0, 3, "beta")[0] == pytest.approx(0.5)


@pytest.mark.parametrize("variant", ["alpha", "beta"])
def test_topk_hinge_k1_is_crammer_singer(variant):
    rng = np.random.default_rng(RNG_SEED + 7)
    for _ in range(200):
        m = int(rng.integers(2, 30))
        s = rng.normal(0.0, 1.5, m)
        y = int(rng.integers(m))
        assert losses.topk_hinge(s, y, 1, variant)[0] == pytest.approx(crammer_singer(s, y), rel=1e-13, abs=1e-14)


def test_topk_hinge_batch_returns_one_loss_per_row():
    rng = np.random.default_rng(RNG_SEED + 8)
    S = rng.normal(size=(25, 9))
    Y = rng.integers(0, 9, 25)
    for variant in ("alpha", "beta"):
        out, grad = losses.topk_hinge(S, Y, 3, variant)
        assert grad.shape == S.shape
        assert out.shape == (25,) and out.dtype == np.float64
        np.testing.assert_allclose(out, [ref_topk_hinge(S[i], Y[i], 3, variant) for i in range(25)], rtol=1e-12)


def ref_hinge_vertex(s: np.ndarray, y: int, k: int, variant: str) -> np.ndarray:
    """A subgradient of the unsmoothed loss at s, away from ties: 1/k on the k largest
    margins h_j (alpha: if their sum is positive; beta: those that are positive), through
    h_j = 1 + s_j − s_y."""
    h = 1.0 + s - s[y]
    h[y] = -np.inf
    top = np.argsort(-h)[:k]
    p = np.zeros_like(s)
    if variant == "alpha":
        if h[top].sum() > 0:
            p[top] = 1.0 / k
    else:
        p[top[h[top] > 0]] = 1.0 / k
    p[y] = -p.sum()
    return p


@pytest.mark.parametrize("variant", ["alpha", "beta"])
def test_topk_hinge_gradient_is_the_vertex_away_from_ties(variant):
    rng = np.random.default_rng(RNG_SEED + 21)
    for _ in range(200):
        m = int(rng.integers(2, 25))
        s, y = rng.normal(0.0, 1.5, m), int(rng.integers(m))
        k = int(rng.integers(1, m))
        loss, grad = losses.topk_hinge(s, y, k, variant)
        np.testing.assert_allclose(grad, ref_hinge_vertex(s, y, k, variant), rtol=0, atol=1e-15)
        assert loss == pytest.approx(float(grad @ (s - s[y] + 1.0) - grad[y]), abs=1e-12)


@pytest.mark.parametrize("variant", ["alpha", "beta"])
@pytest.mark.parametrize("gamma", [0.05, 0.5, 3.0])
def test_smoothed_topk_hinge_matches_the_qp_and_its_gradient_the_differences(variant, gamma):
    from svm_reference import margins, smoothed_loss

    rng = np.random.default_rng(RNG_SEED + 22)
    n, m, k = 12, 7, 3
    S, Y = rng.normal(0.0, 1.0, (n, m)), rng.integers(0, m, n)
    loss, grad = losses.topk_hinge(S, Y, k, variant, smoothing=gamma)
    # The QP of the top-k SVM's reference (the max form, solved by cvxpy).
    np.testing.assert_allclose(loss, smoothed_loss(margins(S, Y), variant, k, gamma), atol=1e-7)
    unsmoothed, _ = losses.topk_hinge(S, Y, k, variant)
    assert np.all(loss <= unsmoothed + 1e-15) and np.all(loss >= unsmoothed - gamma / 2 - 1e-15)
    # L_γ is differentiable: central differences agree with the gradient.
    eps = 1e-6
    for j in range(m):
        step = np.zeros(m)
        step[j] = eps
        up, _ = losses.topk_hinge(S + step, Y, k, variant, smoothing=gamma)
        down, _ = losses.topk_hinge(S - step, Y, k, variant, smoothing=gamma)
        np.testing.assert_allclose((up - down) / (2 * eps), grad[:, j], atol=1e-6)
    np.testing.assert_allclose(grad.sum(axis=1), 0.0, atol=1e-14)


def test_topk_hinge_smoothing_is_checked():
    for bad in (-0.1, np.inf, np.nan):
        with pytest.raises(InvalidInputError, match=r"^smoothing:"):
            losses.topk_hinge(np.array([0.0, 1.0, 2.0]), 0, 1, smoothing=bad)


@pytest.mark.parametrize("gamma", [0.0, 0.05, 0.5, 3.0])
def test_multilabel_losses_match_the_reference_and_their_gradients_the_differences(gamma):
    from multilabel_reference import losses as reference

    rng = np.random.default_rng(RNG_SEED + 23)
    n, m = 12, 7
    S = rng.normal(0.0, 1.0, (n, m))
    Y = rng.random((n, m)) < 0.35
    Y[np.arange(n), rng.integers(0, m, n)] = True  # a label in every row
    Y[:, 0] &= ~Y[:, 1:].all(axis=1)  # and a class that is not one
    # The multi-label SVM's reference: the direct formula, or the max form by cvxpy.
    loss, grad = losses.multilabel_hinge(S, Y, smoothing=gamma)
    np.testing.assert_allclose(loss, reference(S, Y, "hinge", gamma), atol=1e-7)
    soft, soft_grad = losses.multilabel_softmax_loss(S, Y.astype(int))
    np.testing.assert_allclose(soft, reference(S, Y, "softmax"), rtol=1e-13)
    eps = 1e-6
    for j in range(m):
        step = np.zeros(m)
        step[j] = eps
        for f, g in ((lambda v: losses.multilabel_softmax_loss(v, Y)[0], soft_grad),) + (
            ((lambda v: losses.multilabel_hinge(v, Y, smoothing=gamma)[0], grad),) if gamma > 0 else ()
        ):
            np.testing.assert_allclose((f(S + step) - f(S - step)) / (2 * eps), g[:, j], atol=1e-6)
    np.testing.assert_allclose(grad.sum(axis=1), 0.0, atol=1e-14)
    np.testing.assert_allclose(soft_grad.sum(axis=1), 0.0, atol=1e-14)
    # One row as the batch's row; float32 stays float32.
    row_loss, row_grad = losses.multilabel_hinge(S[3], Y[3], smoothing=gamma)
    assert row_loss == pytest.approx(loss[3], abs=1e-15) and np.array_equal(row_grad, grad[3])
    loss32, grad32 = losses.multilabel_hinge(S.astype(np.float32), Y, smoothing=gamma)
    assert loss32.dtype == grad32.dtype == np.float32


def test_multilabel_losses_refuse_bad_label_sets():
    s = np.array([[0.0, 1.0, 2.0]])
    for bad, match in [
        (np.array([[False, False, False]]), "no label"),
        (np.array([[True, True, True]]), "every class"),
        (np.array([[2, 0, 0]]), "0/1"),
        (np.array([True, False, False]), "shape"),
    ]:
        for f in (losses.multilabel_hinge, losses.multilabel_softmax_loss):
            with pytest.raises(InvalidInputError, match=rf"^y:.*{match}"):
                f(s, bad)
    with pytest.raises(InvalidInputError, match=r"^smoothing:"):
        losses.multilabel_hinge(s, np.array([[True, False, False]]), smoothing=-1.0)
    y = np.array([[True, False, False]])
    for f, name in ((losses.multilabel_hinge, "scores"), (losses.multilabel_softmax_loss, "z")):
        for bad in (np.array([[0.0, np.nan, 1.0]]), np.array([[0, 1, 2]]), np.zeros((1, 1, 3)), np.zeros((1, 0))):
            with pytest.raises(InvalidInputError, match=rf"^{name}:"):
                f(bad, y if bad.shape == (1, 3) else np.zeros(bad.shape, dtype=bool))


# --------------------------------------------------------------------------------------
# 4. Batches, threads, float32
# --------------------------------------------------------------------------------------


def _batch(rng, n_rows=64, m=17, ties=False):
    Z = rng.normal(0.0, 1.5, (n_rows, m))
    if ties:
        Z[::3] = rng.integers(-3, 4, (Z[::3].shape)) * 0.5
    Y = rng.integers(0, m, n_rows)
    return Z, Y


# (name, call(Z, Y, **kw)) with the output being an array or a (loss, grad) tuple
BATCH_FUNCS = {
    "rankmax_k1": lambda Z, Y, **kw: projections.rankmax(Z, Y, **kw),
    "rankmax_k5": lambda Z, Y, **kw: projections.rankmax(Z, Y, k=5, eta=0.7, **kw),
    "rankmax_loss_k1": lambda Z, Y, **kw: losses.rankmax_loss(Z, Y, **kw),
    "rankmax_loss_k2": lambda Z, Y, **kw: losses.rankmax_loss(Z, Y, k=2, **kw),
    "rankmax_loss_k5": lambda Z, Y, **kw: losses.rankmax_loss(Z, Y, 5, 1.3, **kw),
    "softmax_loss": lambda Z, Y, **kw: losses.softmax_loss(Z, Y, **kw),
    "sparsemax_loss": lambda Z, Y, **kw: losses.sparsemax_loss(Z, Y, **kw),
    "topk_hinge_alpha": lambda Z, Y, **kw: losses.topk_hinge(Z, Y, 3, **kw),
    "topk_hinge_beta": lambda Z, Y, **kw: losses.topk_hinge(Z, Y, 3, "beta", **kw),
    "topk_hinge_alpha_k_m-1": lambda Z, Y, **kw: losses.topk_hinge(Z, Y, Z.shape[-1] - 1, "alpha", **kw),
}


def _parts(out):
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("name", list(BATCH_FUNCS))
@pytest.mark.parametrize("ties", [False, True])
def test_batch_equals_row_by_row(name, ties):
    f = BATCH_FUNCS[name]
    Z, Y = _batch(np.random.default_rng(RNG_SEED + 9), ties=ties)
    batched = _parts(f(Z, Y))
    rows = [_parts(f(Z[i], int(Y[i]))) for i in range(Z.shape[0])]
    for j, part in enumerate(batched):
        stacked = np.array([r[j] for r in rows])
        assert part.shape == stacked.shape
        assert part.dtype == np.float64
        np.testing.assert_array_equal(part, stacked)


@pytest.mark.parametrize("name", list(BATCH_FUNCS))
def test_n_jobs_does_not_change_results(name):
    f = BATCH_FUNCS[name]
    Z, Y = _batch(np.random.default_rng(RNG_SEED + 11), n_rows=301, m=23, ties=True)
    ref = _parts(f(Z, Y, n_jobs=1))
    for n_jobs in (2, -1, None):
        for a, b in zip(ref, _parts(f(Z, Y, n_jobs=n_jobs))):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", list(BATCH_FUNCS))
def test_1d_inputs_accept_numpy_integer_labels(name):
    f = BATCH_FUNCS[name]
    Z, Y = _batch(np.random.default_rng(RNG_SEED + 12), n_rows=3)
    for i in range(3):
        a = _parts(f(Z[i], int(Y[i])))
        for y in (np.int64(Y[i]), np.int32(Y[i]), np.uint8(Y[i])):
            for u, v in zip(a, _parts(f(Z[i], y))):
                np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("name", list(BATCH_FUNCS))
def test_float32_in_float32_out(name):
    f = BATCH_FUNCS[name]
    Z, Y = _batch(np.random.default_rng(RNG_SEED + 13), n_rows=80)
    Z32 = Z.astype(np.float32)
    out32 = _parts(f(Z32, Y))
    out64 = _parts(f(Z32.astype(np.float64), Y))
    for a, b in zip(out32, out64):
        assert a.dtype == np.float32, a.dtype
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    # 1-D float32: arrays stay float32, scalar losses are Python floats
    for i in range(5):
        row32 = _parts(f(Z32[i], int(Y[i])))
        row64 = _parts(f(Z32[i].astype(np.float64), int(Y[i])))
        for a, b in zip(row32, row64):
            if isinstance(b, float):
                assert isinstance(a, float)
                assert a == pytest.approx(b, rel=1e-4, abs=1e-6)
            else:
                assert a.dtype == np.float32
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_rankmax_float32_reference_and_simplex_constraint():
    for z, y, k, eta in RANKMAX_CASES[::4]:
        z32 = z.astype(np.float32)
        p = projections.rankmax(z32, y, k=k, eta=eta)
        assert p.dtype == np.float32
        p_ref, _ = ref_rankmax(z32.astype(np.float64), y, k, eta)
        np.testing.assert_allclose(p, p_ref, rtol=1e-4, atol=1e-6)
        assert abs(float(p.astype(np.float64).sum()) - k) <= 1e-4 * k
        assert p[y] > 0


def test_losses_batch_shapes():
    Z, Y = _batch(np.random.default_rng(RNG_SEED + 14), n_rows=7, m=6)
    for f in (losses.softmax_loss, losses.sparsemax_loss, losses.rankmax_loss):
        loss, grad = f(Z, Y)
        assert loss.shape == (7,) and grad.shape == (7, 6)
        assert loss.dtype == grad.dtype == np.float64
    assert projections.rankmax(Z, Y, k=2).shape == (7, 6)
