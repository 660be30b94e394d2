"""Tests of :func:`toprank.projections.bipartite_simplex` against independent references.

The problem: min ‖a − x_Y‖² + ‖b − x_N‖² + ρs² s.t. a, b ≥ 0, Σa = Σb = s ≤ r.

* A generic convex solve (cvxpy, CLARABEL) of the problem as written, on a sample of
  small rows.
* For the bulk (≥ 10⁴ rows, m from 2 to 10⁴, ties within and across the two parts)
  an independent NumPy algorithm, different from the library's walk over sorted
  breakpoints: bisection on s of g(s) = t_Y(s) + t_N(s) − ρs, where each simplex
  threshold is t(s) = max_j (Σ_{i≤j} x_(i) − s)/j over the sorted part, vectorised
  over all rows at once.
* The KKT conditions on every row of every test: both parts sum to s ≤ r, each part is
  (x − t)_+ with one threshold per part, and s = 0 iff max x_Y + max x_N ≤ 0, s = r
  only if g(r) ≥ 0, g(s) = 0 in between.
* float32, positive homogeneity across 200 orders of magnitude, batches against rows,
  and every bad argument raising InvalidInputError naming it.
"""

from __future__ import annotations

import math
from typing import Any

import cvxpy as cp
import numpy as np
import pytest

from toprank.exceptions import InvalidInputError
from toprank.projections import bipartite_simplex, topk_simplex

AGREE = 1e-9  # agreement with the NumPy reference, relative to the row's scale
KKT = 1e-10  # KKT residuals, relative to the row's scale


def random_rows(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """n rows of length m, half of them rounded to quarters (ties within and across the
    parts), with masks holding at least one positive and one negative entry."""
    x = rng.normal(size=(n, m)) * rng.choice([0.3, 1.0, 3.0], size=(n, 1)) + rng.normal(size=(n, 1))
    rounded = rng.random(n) < 0.5
    x[rounded] = np.round(x[rounded] * 4) / 4
    positive = rng.random((n, m)) < rng.uniform(0.05, 0.6, size=(n, 1))
    positive[:, 0] = True
    positive[:, 1] = False
    columns = rng.permuted(np.tile(np.arange(m), (n, 1)), axis=1)
    positive = np.take_along_axis(positive, columns, axis=1)
    return x, positive


def part_threshold(x: np.ndarray, part: np.ndarray, s: np.ndarray) -> np.ndarray:
    """t(s) = max_j (Σ_{i≤j} x_(i) − s)/j over each row's entries in ``part``."""
    d = np.sort(np.where(part, x, -np.inf), axis=1)[:, ::-1]
    valid = np.isfinite(d)
    cums = np.cumsum(np.where(valid, d, 0.0), axis=1)
    j = np.arange(1, x.shape[1] + 1)
    return np.max(np.where(valid, (cums - s[:, None]) / j, -np.inf), axis=1)


def reference(x: np.ndarray, positive: np.ndarray, r: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """The projection by bisection on s (see the module docs), to the last bit of s."""
    top = np.max(np.where(positive, x, -np.inf), axis=1) + np.max(np.where(positive, -np.inf, x), axis=1)
    n_pos, n_neg = positive.sum(1), (~positive).sum(1)
    # The largest entry of a part is at least s/|part|, so t_Y(s) ≤ max x_Y − s/|Y|: g is
    # negative beyond this bound.
    bound = np.maximum(top, 0.0) / (1.0 / n_pos + 1.0 / n_neg + rho)
    lo, hi = np.zeros(len(x)), np.minimum(bound * (1 + 1e-12), r)

    def g(s: np.ndarray) -> np.ndarray:
        return part_threshold(x, positive, s) + part_threshold(x, ~positive, s) - rho * s

    at_r = g(hi) >= 0
    for _ in range(2100):
        mid = (lo + hi) / 2
        if np.all((mid == lo) | (mid == hi)):
            break
        up = g(mid) > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    s = np.where(top <= 0, 0.0, np.where(at_r, hi, (lo + hi) / 2))
    t = np.where(positive, part_threshold(x, positive, s)[:, None], part_threshold(x, ~positive, s)[:, None])
    return np.maximum(x - t, 0.0)


def check_kkt(x: np.ndarray, positive: np.ndarray, r: np.ndarray, rho: np.ndarray, p: np.ndarray, tol: float) -> None:
    """The KKT conditions of the module docs on every row, to ``tol`` of the row's scale."""
    scale = np.maximum(np.max(np.abs(x), axis=1), 1e-300)
    slack = tol * scale * x.shape[1]
    assert np.all(p >= 0)
    s_pos, s_neg = np.where(positive, p, 0).sum(1), np.where(positive, 0, p).sum(1)
    assert np.all(np.abs(s_pos - s_neg) <= slack), "the parts' sums differ"
    assert np.all(s_pos <= r + slack), "the sum exceeds r"
    thresholds = []
    for part in (positive, ~positive):
        support = part & (p > 0)
        shifted = np.where(support, x - p, np.nan)
        with np.errstate(all="ignore"):
            t = np.nanmax(np.where(support.any(1)[:, None], shifted, -np.inf), axis=1)
            spread = t - np.nanmin(np.where(support.any(1)[:, None], shifted, np.inf), axis=1)
        has = support.any(1)
        assert np.all(spread[has] <= slack[has]), "a part's support has no common threshold"
        off = part & (p == 0)
        assert np.all(np.where(off & has[:, None], x - t[:, None], -np.inf) <= slack[:, None]), "an entry above t is 0"
        thresholds.append(t)
    zero = s_pos == 0
    top = np.max(np.where(positive, x, -np.inf), 1) + np.max(np.where(positive, -np.inf, x), 1)
    unforced = zero & (r > 0)
    assert np.all(top[unforced] <= slack[unforced]), "zero answer although r > 0 and max x_Y + max x_N > 0"
    assert np.all(top[~zero] > -slack[~zero])
    g = thresholds[0] + thresholds[1] - rho * s_pos
    at_r = ~zero & (s_pos >= r - slack)
    inside = ~zero & ~at_r
    assert np.all(g[at_r] >= -slack[at_r] * (1 + rho[at_r])), "the radius' multiplier is negative"
    assert np.all(np.abs(g[inside]) <= slack[inside] * (1 + rho[inside])), "g(s) ≠ 0 inside (0, r)"


def project_rows(x: np.ndarray, positive: np.ndarray, r: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Row by row with each row's own r and rho (the batch takes one of each)."""
    return np.stack([bipartite_simplex(x[i], positive[i], r[i], rho[i]) for i in range(len(x))])


def parameters(rng: np.random.Generator, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Radii below, near and beyond where Σ ≤ r binds (and none), and ρ ∈ {0, 0.5, 1}."""
    n = len(x)
    r = rng.choice([0.0, 0.05, 0.5, 1.0, 3.0, 30.0], size=n) * np.abs(x).max(1)
    r[rng.random(n) < 0.15] = math.inf
    return r, rng.choice([0.0, 0.5, 1.0], size=n)


@pytest.mark.parametrize("m", [2, 3, 5, 10, 40])
def test_agrees_with_the_bisection_reference_on_10_000_rows(m: int) -> None:
    """2 000 rows per length, 10⁴ in all, each with its own r and rho."""
    rng = np.random.default_rng(37 + m)
    x, positive = random_rows(rng, 2000, m)
    r, rho = parameters(rng, x)
    p = project_rows(x, positive, r, rho)
    check_kkt(x, positive, r, rho, p, KKT)
    expected = reference(x, positive, r, rho)
    scale = np.abs(x).max(1, keepdims=True)
    bad = np.abs(p - expected) > AGREE * scale
    assert not bad.any(), f"{bad.any(1).sum()} rows differ, first {np.flatnonzero(bad.any(1))[:5]}"


@pytest.mark.parametrize("m", [1000, 10_000])
def test_long_rows(m: int) -> None:
    """Long rows (ties included) batched, for each rho and a radius that binds or not."""
    rng = np.random.default_rng(m)
    x, positive = random_rows(rng, 6, m)
    for r, rho in [(1.0, 1.0), (math.inf, 0.0), (50.0, 0.5)]:
        p = bipartite_simplex(x, positive, r, rho, n_jobs=2)
        rs, rhos = np.full(len(x), r), np.full(len(x), rho)
        check_kkt(x, positive, rs, rhos, p, KKT)
        expected = reference(x, positive, rs, rhos)
        np.testing.assert_allclose(p, expected, rtol=0, atol=AGREE * np.abs(x).max())


def test_agrees_with_cvxpy() -> None:
    """The problem as written, solved by a generic conic solver, on 60 small rows (its
    objective value, and the point to the solver's accuracy)."""
    rng = np.random.default_rng(2018)
    x, positive = random_rows(rng, 60, 7)
    r, rho = parameters(rng, x)
    p = project_rows(x, positive, r, rho)
    for i in range(len(x)):
        a, b = cp.Variable(int(positive[i].sum())), cp.Variable(int((~positive[i]).sum()))
        constraints = [a >= 0, b >= 0, cp.sum(a) == cp.sum(b)]
        if math.isfinite(r[i]):
            constraints.append(cp.sum(a) <= r[i])
        objective = cp.sum_squares(a - x[i][positive[i]]) + cp.sum_squares(b - x[i][~positive[i]])
        problem = cp.Problem(cp.Minimize(objective + rho[i] * cp.square(cp.sum(a))), constraints)
        problem.solve(solver=cp.CLARABEL)
        assert problem.status == cp.OPTIMAL
        # The interior-point solution is accurate to ~1e-5 at degenerate (tied) rows;
        # its objective value is much sharper: ours must be no worse.
        ours = np.sum((p[i] - x[i]) ** 2) + rho[i] * np.sum(p[i][positive[i]]) ** 2
        assert ours <= problem.value + 1e-8 * (1 + abs(problem.value))
        np.testing.assert_allclose(p[i][positive[i]], a.value, atol=1e-4)
        np.testing.assert_allclose(p[i][~positive[i]], b.value, atol=1e-4)


def test_known_answers() -> None:
    # One entry per side: a = b = s minimising (s − 2)² + (s − 1)² + s².
    assert bipartite_simplex(np.array([2.0, 1.0]), np.array([True, False]), math.inf, 1.0).tolist() == [1.0, 1.0]
    assert bipartite_simplex(np.array([2.0, 1.0]), np.array([True, False]), 0.5, 1.0).tolist() == [0.5, 0.5]
    # max x_Y + max x_N ≤ 0: zero; r = 0: zero.
    x, positive = np.array([1.0, -1.0, -3.0]), np.array([True, False, False])
    assert bipartite_simplex(x, positive, 1.0).tolist() == [0.0, 0.0, 0.0]
    assert bipartite_simplex(-x, positive, 0.0).tolist() == [0.0, 0.0, 0.0]
    # A constant row: each part spreads s evenly, t_Y = 1 − s/2 and t_N = 1 − s/3, so
    # g(s) = 2 − s/2 − s/3 − s = 0 at s = 12/11 (rho = 1).
    p = bipartite_simplex(np.ones(5), np.array([True, True, False, False, False]), math.inf, 1.0)
    np.testing.assert_allclose(p, [6 / 11, 6 / 11, 4 / 11, 4 / 11, 4 / 11], rtol=1e-15)


@pytest.mark.parametrize("rho", [0.0, 0.5, 1.0])
def test_one_label_is_the_top_1_simplex(rho: float) -> None:
    """|Y| = 1: a = s and (s − x_y)² = s² − 2⟨x_y·1, b⟩ + const, so the negative part is
    the top-1 simplex projection of x_N + x_y with bias 1 + rho (issue 37's multiclass
    consistency check, against an independent implementation)."""
    rng = np.random.default_rng(11)
    x = np.round(rng.normal(size=(300, 9)) * 4) / 4
    y = rng.integers(0, 9, size=300)
    positive = np.arange(9) == y[:, None]
    for r in [0.5, 2.0, math.inf]:
        p = bipartite_simplex(x, positive, r, rho)
        x_neg = x[~positive].reshape(300, 8) + x[positive][:, None]
        b = topk_simplex(x_neg, 1, min(r, 1e300), 1.0 + rho)
        np.testing.assert_allclose(p[~positive].reshape(300, 8), b, rtol=0, atol=1e-12)
        np.testing.assert_allclose(p[positive], b.sum(1), rtol=0, atol=1e-12)


def test_float32_homogeneity_and_batches() -> None:
    rng = np.random.default_rng(5)
    x, positive = random_rows(rng, 400, 12)
    p = bipartite_simplex(x, positive, 1.0, 1.0)
    # A batch equals its rows, and any number of threads gives the same bits.
    assert np.array_equal(p, project_rows(x, positive, np.ones(400), np.ones(400)))
    assert np.array_equal(p, bipartite_simplex(x, positive, 1.0, 1.0, n_jobs=2))
    p32 = bipartite_simplex(x.astype(np.float32), positive, 1.0, 1.0)
    assert p32.dtype == np.float32
    np.testing.assert_allclose(p32, p, atol=2e-6)
    # P(cx, cr) = c·P(x, r) for the same rho, at every scale float64 resolves.
    for c in [1e-150, 1e-8, 1e8, 1e150]:
        np.testing.assert_allclose(bipartite_simplex(c * x, positive, c, 1.0), c * p, rtol=1e-12, atol=1e-12 * c)


def test_entries_spanning_many_orders_of_magnitude() -> None:
    x = np.array([[1e12, 3.0, -1e-9, 1e-300, -1e12, 2.5], [1e-6, 1e-3, 1e2, -1e5, 7.0, 1e-12]])
    positive = np.array([[True, False, True, False, False, True], [True, True, False, False, True, False]])
    for r, rho in [(10.0, 1.0), (math.inf, 0.0), (1e13, 0.5)]:
        p = bipartite_simplex(x, positive, r, rho)
        rs, rhos = np.full(2, r), np.full(2, rho)
        check_kkt(x, positive, rs, rhos, p, 1e-13)
        np.testing.assert_allclose(p, reference(x, positive, rs, rhos), rtol=1e-12, atol=1e-12)


BAD: list[tuple[dict[str, Any], str]] = [
    ({"x": np.array([1.0, np.nan, 0.0])}, r"^x: contains NaN"),
    ({"x": np.array([[1.0, 2.0, 0.0], [1.0, 2.0, np.inf]]), "positive": np.eye(2, 3, dtype=bool)}, r"^x: .*row 1"),
    ({"x": np.array([np.inf, 1.0, 0.0])}, r"^x: contains NaN or infinity \(row 0, column 0\)"),
    ({"x": np.array([np.nan, np.nan, 1.0]), "positive": np.array([False, True, True])}, r"^x: contains NaN"),
    ({"r": -1.0}, r"^r: must be >= 0"),
    ({"r": math.nan}, r"^r: must be >= 0"),
    ({"rho": -0.5}, r"^rho: must be finite and >= 0"),
    ({"rho": math.inf}, r"^rho: must be finite and >= 0"),
    ({"positive": np.array([False, False, False])}, r"^positive: marks no entry"),
    ({"positive": np.array([True, True, True])}, r"^positive: marks every entry"),
    ({"positive": np.array([True, False])}, r"^positive: has shape \[2\] but x has shape \[3\]"),
    ({"positive": np.array([1, 0, 0])}, r"^positive: expected dtype bool, got int64"),
    ({"x": np.array([1, 2, 3])}, r"^x: expected dtype float32 or float64"),
    ({"x": np.zeros((0, 3)), "positive": np.zeros((0, 3), dtype=bool)}, r"^x: is empty"),
    ({"r": "1"}, r"^r: expected a real number"),
    ({"x": np.ones((1, 1, 3)), "positive": np.ones((1, 1, 3), dtype=bool)}, r"^x: expected a 1-D array or a 2-D"),
    ({"positive": [True, False, False, True]}, r"^positive: has shape \[4\] but x has shape \[3\]"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_input_names_the_argument(change: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"x": np.array([1.0, 2.0, 0.5]), "positive": np.array([True, False, False])}
    args.update(change)
    with pytest.raises(InvalidInputError, match=message):
        bipartite_simplex(**args)
