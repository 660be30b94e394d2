"""Projections on long, tied, wide-span and subnormal rows: the reproducers of the
projection precision issue, and constant and tied rows of 1,000 / 10,000 / 100,000
entries for every projection and k in {1, 5, 50}.

Each output is checked by the fuzz harness's independent checker
(``tests/fuzz/checks.py``: feasibility within the library's proved rounding bound and
the KKT threshold form), and, where the answer has a closed form, against it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))

import checks  # noqa: E402

from toprank import projections as P  # noqa: E402
from toprank.exceptions import NoSolutionError  # noqa: E402

EPS = float(np.finfo(np.float64).eps)


def assert_checked(ok_why: tuple[np.ndarray, list[str]]) -> None:
    ok, why = ok_why
    assert ok.all(), why


# ------------------------------------------------------------ issue reproducers


@pytest.mark.parametrize("m", [399, 500, 1000, 5000])
@pytest.mark.parametrize("k", [1, 5, 50])
def test_constant_row_topk_simplex_sdca_step(m: int, k: int) -> None:
    # TopKSVC(loss="alpha") with 400+ classes: its first SDCA step projects a constant
    # row, which raised NoSolutionError (prefix sums of m·0.4 off by ~m²ε).
    x = np.full(m, 0.4)
    p = P.topk_simplex(x, k, r=0.5, rho=1.0)
    # The cone branch (Σp < r): p_i = 0.4/(1 + ρm) for every entry (k ≤ m/... caps inactive).
    np.testing.assert_allclose(p, 0.4 / (1 + m), rtol=1e-13)
    assert_checked(checks.cone_problem(x[None], p[None], k, 1.0, 0.5, EPS, np.float64))
    q = P.topk_cone(x, k, rho=1.0)
    np.testing.assert_allclose(q, 0.4 / (1 + m), rtol=1e-13)


def test_libsdca_long_row() -> None:
    # libsdca's projection test sequence, solvable to 8e-12: raised from 20,000 entries.
    z = np.full(20000, 1.9e-4)
    z[:2] = 0.548
    z[2:40] = np.linspace(1e-3, 5e-4, 38)
    r = 4.286478691638505
    p = P.topk_simplex(z, 4, r=r)
    assert abs(p.sum() - r) <= 1e-13 * r
    assert_checked(checks.cone_problem(z[None], p[None], 4, 0.0, r, EPS, np.float64))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("batched", [False, True])
def test_outlier_of_1e12_gives_the_feasible_optimum(dtype: type, batched: bool) -> None:
    # [.667, .667, 0, 0, 0] was returned: p_i ≤ Σp/3 = .444 violated by 50%. The answer
    # (exact, from eq. (7) with U = the two ones): (0.8, 0.8, 0, 0.4, 0.4).
    x = np.array([1.0, 1.0, -1e12, 0.0, 0.0], dtype=dtype)
    expected = [0.8, 0.8, 0.0, 0.4, 0.4]
    for call in (lambda a: P.topk_cone(a, 3), lambda a: P.topk_simplex(a, 3, r=10.0)):
        p = call(np.stack([x, x]) if batched else x)
        assert p.dtype == dtype
        np.testing.assert_allclose(np.atleast_2d(p), [expected] * (2 if batched else 1), rtol=4 * np.finfo(dtype).eps)


def test_entropy_with_huge_entries_keeps_its_sum() -> None:
    x = np.full(30, 1.175494351e-38)
    x[:4] = [1.7976931348623157e308, 1e300, 1e300, 3.36e16]
    p = P.capped_simplex_entropy(x, 2.0)
    # The maximum is capped, the two 1e300 entries share the rest; Σp was 3.
    np.testing.assert_array_equal(p[:4], [1.0, 0.5, 0.5, 0.0])
    assert p.sum() == 2.0


def test_float32_knapsack_point_that_overflows_raises() -> None:
    # lo = hi = −1e300: the single feasible point −1e300·1 is −inf in float32.
    with pytest.raises(NoSolutionError, match="overflows its output type"):
        P.knapsack(np.zeros((1, 2), np.float32), -1e300, -1e300, -2e300)
    np.testing.assert_array_equal(P.knapsack(np.zeros((1, 2)), -1e300, -1e300, -2e300), [[-1e300, -1e300]])


def test_float32_radius_below_its_resolution_raises_naming_r() -> None:
    # r/m = 7e-302 is zero in float32: zeros were returned (Σp = 0 ≠ r).
    with pytest.raises(NoSolutionError, match=r"r = 1e-300 is below what float32 resolves"):
        P.simplex(np.zeros((1, 15), np.float32), r=1e-300)
    p = P.simplex(np.zeros((1, 15)), r=1e-300)
    assert abs(p.sum() - 1e-300) <= 1e-15 * 1e-300


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda x: P.topk_simplex(x, 2, r=1e-320), "r"),
        (lambda x: P.simplex(x, r=1e-320), "r"),
        (lambda x: P.capped_simplex(x, 1e-320), "k"),
        (lambda x: P.capped_simplex_entropy(x, 1e-320), "k"),
        (lambda x: P.box_simplex(x, hi=1e-320, r=1.0), "hi"),
        (lambda x: P.rankmax(x, 3, 2, eta=5e-324), "eta"),
    ],
    ids=["topk_simplex-r", "simplex-r", "capped-k", "entropy-k", "box-hi", "rankmax-eta"],
)
def test_subnormal_parameters_name_themselves(call: Callable[[np.ndarray], Any], name: str) -> None:
    # A constant row: nothing spans orders of magnitude, the parameter is the cause.
    x = np.full(10, 0.4)
    try:
        p = call(x)
    except NoSolutionError as err:
        assert f"{name} = " in str(err) and "below what float64 resolves" in str(err), str(err)
        assert "orders of magnitude" not in str(err)
        return
    # Or an answer that meets its constraint (a subnormal radius that float64 still holds).
    assert np.all(np.isfinite(p)) and np.all(p >= 0)


# ----------------------------------------------- long constant and tied rows


def _rows(kind: str, m: int) -> np.ndarray:
    if kind == "constant":
        return np.stack([np.full(m, 0.4), np.full(m, -1.3)])
    rng = np.random.default_rng(m)
    levels = np.array([0.7, 0.7 * (1 + 1e-13), -0.2])
    return levels[rng.integers(0, 3, size=(2, m))]


PROJECTIONS: dict[str, Callable[[np.ndarray, int], tuple[np.ndarray, Callable[[np.ndarray, np.ndarray], Any]]]] = {
    "simplex": lambda X, k: (
        P.simplex(X, r=float(k)),
        lambda X, Q: checks.clip_problem(X, Q, 0.0, math.inf, float(k), EPS, np.float64),
    ),
    "sparsemax": lambda X, k: (
        P.sparsemax(X),
        lambda X, Q: checks.clip_problem(X, Q, 0.0, math.inf, 1.0, EPS, np.float64),
    ),
    "knapsack": lambda X, k: (
        P.knapsack(X, -0.1, 0.5, 0.2 * k),
        lambda X, Q: checks.clip_problem(X, Q, -0.1, 0.5, 0.2 * k, EPS, np.float64),
    ),
    "topk_cone": lambda X, k: (
        P.topk_cone(X, k, 1.0),
        lambda X, Q: checks.cone_problem(X, Q, k, 1.0, None, EPS, np.float64),
    ),
    "topk_simplex": lambda X, k: (
        P.topk_simplex(X, k, 0.5, 1.0),
        lambda X, Q: checks.cone_problem(X, Q, k, 1.0, 0.5, EPS, np.float64),
    ),
    "box_simplex": lambda X, k: (
        P.box_simplex(X, 1.0 / k, 1.0, 1.0),
        lambda X, Q: checks.bias_box(X, Q, 1.0 / k, 1.0, 1.0, EPS, np.float64),
    ),
    "capped_simplex": lambda X, k: (
        P.capped_simplex(X, float(k)),
        lambda X, Q: checks.clip_problem(X, Q, 0.0, 1.0, float(k), EPS, np.float64),
    ),
    "capped_simplex_entropy": lambda X, k: (
        P.capped_simplex_entropy(X, float(k)),
        lambda X, Q: checks.entropy_problem(X, Q, float(k), EPS, np.float64),
    ),
    "rankmax": lambda X, k: (
        P.rankmax(X, np.array([0, 1]), k, 1.0),
        lambda X, Q: checks.rankmax_problem(X, Q, np.array([0, 1]), k, 1.0, EPS, np.float64),
    ),
}


@pytest.mark.parametrize("m", [1_000, 10_000, 100_000])
@pytest.mark.parametrize("kind", ["constant", "tied"])
@pytest.mark.parametrize("name", list(PROJECTIONS))
def test_long_constant_and_tied_rows(name: str, kind: str, m: int) -> None:
    X = _rows(kind, m)
    for k in (1, 5, 50):
        Q, check = PROJECTIONS[name](X, k)
        ok, why = check(X, Q)
        assert ok.all(), (name, kind, m, k, why)
        if kind == "constant" and name in ("simplex", "capped_simplex", "capped_simplex_entropy"):
            # Every entry equal: the mass spreads evenly.
            np.testing.assert_allclose(Q, k / m, rtol=1e-13)


def test_box_simplex_all_capped_with_r_equal_to_m_hi() -> None:
    # Found by the fuzz harness: hi·m = r to the last ulp. The free branch (all capped,
    # Σp ≤ r) summed an ulp above r, and the knapsack that takes over then solved on the
    # first 32 entries, whose caps cannot reach r: it returned 32 of the 164 entries at
    # hi and raised NoSolutionError.
    x = np.full(164, 1.9e-4)
    x[:2] = 0.548
    x[2:40] = np.linspace(1e-3, 5e-4, 38)
    x *= 0.9046800706458055
    hi, r = 7.329886714333909e-07, 0.0001202101421150761
    p = P.box_simplex(x, hi, r, 0.5)
    np.testing.assert_array_equal(p, np.full(164, hi))


def test_box_simplex_float32_rounding_of_hi_keeps_the_free_branch() -> None:
    # Found by the fuzz harness: hi = r/5 rounds up in float32, so the five capped
    # entries as stored summed above r; that sent the solve to the knapsack (Σp = r),
    # whose multiplier is negative here, and the two low entries got 2.8e-17 instead of 0.
    x = np.array(
        [
            196.5201873779297,
            -173.21836853027344,
            196.5201873779297,
            196.5201873779297,
            -173.21836853027344,
            196.5201873779297,
            196.5201873779297,
        ],
        dtype=np.float32,
    )
    hi, r = 0.08619759055928236, 0.43098795279641183
    p = P.box_simplex(x, hi, r, 0.03531081300415558)
    np.testing.assert_array_equal(p, np.where(x > 0, np.float32(hi), np.float32(0.0)))
