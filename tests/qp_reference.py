"""Independent reference solutions for the projections in :mod:`toprank.projections`.

Every Euclidean projection is solved as a generic quadratic program with
``quadprog.solve_qp`` (Goldfarb–Idnani), which knows nothing of thresholds, sorting or
the structure of the sets:

    minimize ½ pᵀGp − aᵀp  s.t.  Cᵀp ≥ b  (the first ``meq`` rows equalities),

with G = 2(I + ρ·11ᵀ) and a = 2x for the objective ‖p − x‖² + ρ(Σp)².

All sets except the (n,k)-simplex are positively homogeneous, so the reference is
solved on the normalised problem (x, r, lo, hi divided by a scale σ), which gives
quadprog a well-conditioned problem whatever the magnitude, and multiplied back.

Constraint sets whose active constraints are necessarily linearly dependent (where
the dual active-set method may report "constraints are inconsistent") are reduced by
construction instead of being skipped:

* Σp = 0 with p ≥ 0, lo = hi, r = m·lo or r = m·hi, Σp = m with p ≤ 1: the feasible
  set is a single point;
* the top-k cone with k = m is the ray {c·1, c ≥ 0} (the m constraints p_i ≤ Σp/m
  are dependent), so it is solved as a 1-variable QP in c.

The entropic projection is not a QP; its reference is a bisection, to machine
precision, on c in p_i = min(1, exp(x_i − c)).
"""

from __future__ import annotations

import math

import numpy as np
import quadprog


class ReferenceFailure(RuntimeError):
    """quadprog could not solve the reference problem (counted by the tests)."""


def qp_project(
    x: np.ndarray,
    rho: float = 0.0,
    eq: list[tuple[np.ndarray, float]] | None = None,
    ineq: list[tuple[np.ndarray, float]] | None = None,
) -> np.ndarray:
    """argmin ‖p − x‖² + ρ(Σp)² s.t. ⟨a, p⟩ = b for (a, b) in eq, ⟨c, p⟩ ≥ d for (c, d) in ineq."""
    x = np.asarray(x, dtype=np.float64)
    m = x.size
    G = 2.0 * (np.eye(m) + rho * np.ones((m, m)))
    a = 2.0 * x
    rows = list(eq or []) + list(ineq or [])
    if not rows:
        return np.linalg.solve(G, a)
    C = np.column_stack([np.asarray(c, dtype=np.float64) for c, _ in rows])
    b = np.array([float(v) for _, v in rows])
    try:
        sol = quadprog.solve_qp(G, a, C, b, len(eq or []))
    except ValueError as exc:  # "constraints are inconsistent, no solution"
        raise ReferenceFailure(str(exc)) from exc
    return np.asarray(sol[0], dtype=np.float64)


def _scale(*values: float) -> float:
    s = max(abs(float(v)) for v in values)
    return s if s > 0.0 else 1.0


def _nonneg(m: int) -> list[tuple[np.ndarray, float]]:
    eye = np.eye(m)
    return [(eye[i], 0.0) for i in range(m)]


def _upper(m: int, hi: float) -> list[tuple[np.ndarray, float]]:
    eye = np.eye(m)
    return [(-eye[i], -hi) for i in range(m)]


def _lower(m: int, lo: float) -> list[tuple[np.ndarray, float]]:
    eye = np.eye(m)
    return [(eye[i], lo) for i in range(m)]


def _cone(m: int, k: int) -> list[tuple[np.ndarray, float]]:
    """Σp/k − p_i ≥ 0."""
    rows = []
    for i in range(m):
        c = np.full(m, 1.0 / k)
        c[i] -= 1.0
        rows.append((c, 0.0))
    return rows


def simplex(x: np.ndarray, r: float = 1.0, inequality: bool = False) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    m = x.size
    if r == 0.0:
        return np.zeros(m)
    s = _scale(np.abs(x).max(), r)
    xs, rs = x / s, r / s
    ones = np.ones(m)
    if inequality:
        p = qp_project(xs, ineq=_nonneg(m) + [(-ones, -rs)])
    else:
        p = qp_project(xs, eq=[(ones, rs)], ineq=_nonneg(m))
    return p * s


def knapsack(x: np.ndarray, lo: float, hi: float, r: float) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    m = x.size
    if lo == hi or r == m * lo:
        return np.full(m, lo)
    if r == m * hi:
        return np.full(m, hi)
    s = _scale(np.abs(x).max(), lo, hi, r / m)
    xs = x / s
    p = qp_project(xs, eq=[(np.ones(m), r / s)], ineq=_lower(m, lo / s) + _upper(m, hi / s))
    return p * s


def _ray_qp(x: np.ndarray, rho: float, r: float | None) -> np.ndarray:
    """p = c·1 (the top-k cone for k = m): a QP in the single variable c ≥ 0 (m·c ≤ r)."""
    m = x.size
    # ‖c1 − x‖² + ρ m² c² = (m + ρ m²) c² − 2 c Σx + const.
    G = np.array([[2.0 * (m + rho * m * m)]])
    a = np.array([2.0 * x.sum()])
    cols, b = [np.array([1.0])], [0.0]
    if r is not None:
        cols.append(np.array([-float(m)]))
        b.append(-r)
    try:
        c = quadprog.solve_qp(G, a, np.column_stack(cols), np.array(b), 0)[0][0]
    except ValueError as exc:
        raise ReferenceFailure(str(exc)) from exc
    return np.full(m, c)


def topk_cone(x: np.ndarray, k: int, rho: float = 0.0) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    m = x.size
    s = _scale(np.abs(x).max())
    xs = x / s
    if k == m:
        return _ray_qp(xs, rho, None) * s
    return qp_project(xs, rho=rho, ineq=_nonneg(m) + _cone(m, k)) * s


def topk_simplex(x: np.ndarray, k: int, r: float = 1.0, rho: float = 0.0) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    m = x.size
    if r == 0.0:
        return np.zeros(m)
    s = _scale(np.abs(x).max(), r)
    xs, rs = x / s, r / s
    if k == m:
        return _ray_qp(xs, rho, rs) * s
    p = qp_project(xs, rho=rho, ineq=_nonneg(m) + _cone(m, k) + [(-np.ones(m), -rs)])
    return p * s


def box_simplex(x: np.ndarray, hi: float, r: float | None = 1.0, rho: float = 0.0) -> np.ndarray:
    """``r=None``: without the sum constraint (only 0 ≤ p ≤ hi)."""
    x = np.asarray(x, dtype=np.float64)
    m = x.size
    if hi == 0.0 or r == 0.0:
        return np.zeros(m)
    s = _scale(np.abs(x).max(), hi, 0.0 if r is None else r)
    xs, his = x / s, hi / s
    ineq = _nonneg(m) + _upper(m, his)
    if r is not None:
        ineq.append((-np.ones(m), -r / s))
    return qp_project(xs, rho=rho, ineq=ineq) * s


def capped_simplex(x: np.ndarray, k: float) -> np.ndarray:
    """Not homogeneous (the bounds are 0 and 1); solved on x − max(x) (Σp = k is fixed,
    so a shift of x does not change the solution)."""
    x = np.asarray(x, dtype=np.float64)
    m = x.size
    if k == m:
        return np.ones(m)
    xs = x - x.max()
    return qp_project(xs, eq=[(np.ones(m), float(k))], ineq=_nonneg(m) + _upper(m, 1.0))


def capped_simplex_entropy(x: np.ndarray, k: float) -> tuple[np.ndarray, float]:
    """(p, c) with p_i = min(1, exp(x_i − c)) and Σp = k, c found by bisection to
    machine precision (f(c) = Σ min(1, exp(x_i − c)) is non-increasing, f(min x) = m ≥ k,
    f(max x + log(m/k)) ≤ k)."""
    x = np.asarray(x, dtype=np.float64)
    m = x.size

    def capped_exp(c: float) -> np.ndarray:
        with np.errstate(over="ignore"):  # exp overflow → inf → capped at 1
            return np.minimum(1.0, np.exp(x - c))

    def f(c: float) -> float:
        return float(capped_exp(c).sum())

    lo, hi = float(x.min()), float(x.max()) + math.log(m / k)
    if f(lo) <= k:  # k = m: every entry capped
        return capped_exp(lo), lo
    for _ in range(4000):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if f(mid) > k:
            lo = mid
        else:
            hi = mid
    c = lo if abs(f(lo) - k) <= abs(f(hi) - k) else hi
    return capped_exp(c), c
