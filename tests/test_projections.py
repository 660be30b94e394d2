"""Tests of toprank.projections against independent reference solutions.

* Every projection is compared with a generic QP solution (quadprog, see
  ``qp_reference.py``) on ≥ 500 random rows per function (m ≤ 40): ties, repeated
  entries, k = 1, m − 1, m, ρ ∈ {0, 0.5, 1}, radii r below, at and beyond the point
  where Σp ≤ r starts to bind, and magnitudes 1e-8 … 1e6 (the whole row, r, lo and
  hi scaled by a log-uniform factor σ; agreement required to 1e-7·σ).
* The (n,k)-simplex (Euclidean and entropic) is not homogeneous: p ∈ [0, 1] whatever
  the size of x, so it is compared absolutely (1e-7); the entropic projection against a
  bisection on its threshold.
* Each solution is also checked for feasibility (1e-10·σ; for the (n,k)-simplex
  1e-10·max(1, k) plus the rounding floor 16·m·eps·max|x| of p_i = x_i − t), for the
  threshold form of its KKT conditions, and (ρ = 0) for idempotence.
* Row batches equal row-by-row calls bit for bit, for any n_jobs; float32 agrees with
  float64; read-only and non-contiguous inputs equal contiguous copies.
* Hand-computed examples and argument errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import qp_reference as ref

from toprank import projections as P
from toprank.exceptions import InfeasibleError, InvalidInputError

AGREE = 1e-7  # reference agreement, relative to the scale σ
FEAS = 1e-10  # feasibility, relative to σ
KKT = 1e-9  # KKT threshold form, relative to σ
N_CASES = 1000  # random rows per (function, ρ) group
MAX_REPORTED = 5
EPS = float(np.finfo(np.float64).eps)
SEED = 0  # offset of every Generator seed below (fixed; changed only for longer soak runs)

RHOS = (0.0, 0.5, 1.0)

# --------------------------------------------------------------------------- inputs

ROW_KINDS = (
    "normal",
    "ties_levels",  # a few distinct values, each repeated
    "ties_rounded",  # normal values rounded to multiples of 0.5
    "ties_top",  # the largest value repeated at random positions
    "near_ties",  # a few levels perturbed by 1e-15 … 1e-11 (relative)
    "ulp_ties",  # a few levels, entries a few ulps apart
    "constant",
    "nonpositive",
    "sparse",  # mostly very negative, a few positive entries
    "spread",  # entries spanning several orders of magnitude within the row
    "uniform_pos",
    "zeros",
)


def random_row(rng: np.random.Generator, m: int, kind: str) -> np.ndarray:
    """A row with max|x| = 1 (or all zeros), of the given kind."""
    if kind == "normal":
        x = rng.normal(size=m)
    elif kind == "ties_levels":
        levels = rng.normal(size=int(rng.integers(1, 4)))
        x = rng.choice(levels, size=m)
    elif kind == "ties_rounded":
        x = np.round(rng.normal(size=m) * 2.0) / 2.0
        if not x.any():
            x[0] = 1.0
    elif kind == "ties_top":
        x = rng.normal(size=m)
        n_top = int(rng.integers(1, m + 1))
        x[rng.choice(m, size=n_top, replace=False)] = x.max()
    elif kind == "near_ties":
        levels = rng.normal(size=int(rng.integers(1, 4)))
        x = rng.choice(levels, size=m) * (1.0 + 10.0 ** rng.uniform(-15.0, -11.0) * rng.normal(size=m))
    elif kind == "ulp_ties":
        levels = rng.normal(size=int(rng.integers(1, 4)))
        x = rng.choice(levels, size=m)
        x = x + np.spacing(x) * rng.integers(-4, 5, size=m)
    elif kind == "constant":
        x = np.full(m, rng.choice([-1.0, 1.0]) * rng.uniform(0.1, 1.0))
    elif kind == "nonpositive":
        x = -np.abs(rng.normal(size=m))
        if rng.random() < 0.5:
            x[rng.integers(m)] = 0.0
    elif kind == "sparse":
        x = rng.normal(size=m) - 4.0
        n_pos = int(rng.integers(1, min(m, 4) + 1))
        x[rng.choice(m, size=n_pos, replace=False)] = rng.uniform(0.0, 2.0, size=n_pos)
    elif kind == "spread":
        x = rng.normal(size=m) * 10.0 ** rng.uniform(-6.0, 0.0, size=m)
    elif kind == "uniform_pos":
        x = rng.uniform(0.0, 1.0, size=m)
    elif kind == "zeros":
        return np.zeros(m)
    else:  # pragma: no cover
        raise AssertionError(kind)
    top = np.abs(x).max()
    return x / top if top > 0 else x


def random_scale(rng: np.random.Generator) -> float:
    """Log-uniform on [1e-8, 1e6]."""
    return float(10.0 ** rng.uniform(-8.0, 6.0))


def random_m(rng: np.random.Generator) -> int:
    # Lean towards small rows (more ties and boundary cases), up to 40.
    return int(rng.choice([rng.integers(1, 6), rng.integers(1, 41)]))


def pick_k(rng: np.random.Generator, m: int, i: int) -> int:
    """Cycles through k = 1, m − 1, m and a random k."""
    choice = i % 4
    if choice == 0:
        return 1
    if choice == 1:
        return max(m - 1, 1)
    if choice == 2:
        return m
    return int(rng.integers(1, m + 1))


def pick_k_real(rng: np.random.Generator, m: int, i: int) -> float:
    """Positive k ≤ m for the (n,k)-simplex: 1, m − 1, m, fractional."""
    choice = i % 5
    if choice == 0:
        return 1.0
    if choice == 1:
        return float(max(m - 1, 1))
    if choice == 2:
        return float(m)
    if choice == 3:
        return float(rng.uniform(0.0, m)) or 0.5 * m
    return float(min(m, rng.choice([0.3, 0.5, 1.5, 2.5])))


# ------------------------------------------------------------------------- checks


@dataclass
class Report:
    """Collects mismatches of one randomized test and fails with a readable summary."""

    name: str
    checked: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)
    max_err: float = 0.0

    def fail(self, what: str, x: np.ndarray, params: dict[str, Any], detail: str) -> None:
        self.failures.append(f"{what}: x={x.tolist()!r}, params={params!r}: {detail}")

    def finish(self, min_checked: int = 500) -> None:
        print(
            f"{self.name}: {self.checked} checked, {self.skipped} reference skips, "
            f"max |p − p_ref|/σ = {self.max_err:.2e}"
        )
        assert self.skipped < 0.01 * max(self.checked + self.skipped, 1), (
            f"{self.name}: {self.skipped} reference failures out of {self.checked + self.skipped}"
        )
        assert not self.failures, (
            f"{self.name}: {len(self.failures)} failures in {self.checked} cases, e.g.\n"
            + "\n".join(self.failures[:MAX_REPORTED])
        )
        assert self.checked >= min_checked, f"{self.name}: only {self.checked} cases checked"


def clip_threshold_interval(x: np.ndarray, p: np.ndarray, lo: float, hi: float, tol: float) -> tuple[float, float]:
    """The interval of t with p = clip(x − t, lo, hi) (each entry to within tol).

    Entries at lo need t ≥ x_i − lo, entries at hi need t ≤ x_i − hi, free entries fix
    t = x_i − p_i. Returns (low, high); empty (low > high + 2 tol) if p has no such form.
    """
    at_lo = p <= lo + tol
    at_hi = (p >= hi - tol) & ~at_lo if math.isfinite(hi) else np.zeros_like(at_lo)
    free = ~(at_lo | at_hi)
    lows = [x[at_lo] - lo, x[free] - p[free]]
    highs = [x[at_hi] - hi, x[free] - p[free]]
    low = max((float(v.max()) for v in lows if v.size), default=-math.inf)
    high = min((float(v.min()) for v in highs if v.size), default=math.inf)
    return low, high


def check_agreement(
    report: Report, what: str, x: np.ndarray, params: dict[str, Any], p: np.ndarray, p_ref: np.ndarray, sigma: float
) -> None:
    err = float(np.abs(p - p_ref).max()) / sigma
    report.max_err = max(report.max_err, err)
    if not err <= AGREE:
        report.fail(
            what,
            x,
            params,
            f"|p − p_ref|/σ = {err:.3e} (σ = {sigma!r})\n   got      {p.tolist()!r}\n   expected {p_ref.tolist()!r}",
        )


def check_feasible(
    report: Report, x: np.ndarray, params: dict[str, Any], violations: dict[str, float], sigma: float
) -> None:
    for name, v in violations.items():
        if not v <= FEAS * sigma:
            report.fail("infeasible", x, params, f"{name} violated by {v!r} (σ = {sigma!r})")


def check_idempotent(
    report: Report, x: np.ndarray, params: dict[str, Any], p: np.ndarray, again: np.ndarray, sigma: float
) -> None:
    err = float(np.abs(again - p).max())
    if not err <= FEAS * sigma:
        report.fail("not idempotent", x, params, f"|P(P(x)) − P(x)| = {err!r} (σ = {sigma!r})")


def cone_kkt_ok(x: np.ndarray, p: np.ndarray, k: int, rho: float, sum_active: bool, tol: float) -> tuple[bool, str]:
    """KKT of min ‖p − x‖² + ρ(Σp)² s.t. 0 ≤ p_i ≤ s/k (and Σp ≤ r when sum_active).

    p = clip(x − t, 0, s/k) with g(t) = t − ρs + (1/k)Σ_U (x_i − t − s/k) = λ, where
    λ = 0 (sum constraint inactive) or λ ≥ 0 (Σp = r).
    """
    s = float(p.sum())
    cap = s / k
    if s <= tol:
        return True, "p = 0 (left to the QP comparison)"
    low, high = clip_threshold_interval(x, p, 0.0, cap, tol)
    if low > high + 2 * tol:
        return False, f"no threshold t: [{low!r}, {high!r}]"
    u_mask = p >= cap - tol
    u = int(u_mask.sum())
    sum_u = float(x[u_mask].sum())

    def g(t: float) -> float:
        return t - rho * s + (sum_u - u * t - u * cap) / k

    slope = 1.0 - u / k
    ends = [v for v in (low, high) if math.isfinite(v)]
    if sum_active:
        # Need some t in [low, high] with g(t) ≥ −tol.
        if slope > 0 and not math.isfinite(high):
            return True, ""
        if slope < 0 and not math.isfinite(low):
            return True, ""
        best = max(g(t) for t in ends) if ends else g(0.0)
        return best >= -tol * max(1.0, u / k), f"λ = {best!r} < 0"
    if abs(slope) < 1e-12:
        val = g(ends[0]) if ends else g(0.0)
        return abs(val) <= tol * max(1.0, u / k), f"g = {val!r} ≠ 0 with |U| = k"
    t_star = (rho * s - (sum_u - u * cap) / k) / slope
    ok = low - 4 * tol / abs(slope) <= t_star <= high + 4 * tol / abs(slope)
    return ok, f"t* = {t_star!r} outside [{low!r}, {high!r}]"


# ----------------------------------------------------------- randomized: simplex


@pytest.mark.parametrize("inequality", [False, True])
def test_simplex_matches_qp(inequality: bool) -> None:
    rng = np.random.default_rng(SEED + 1000 + inequality)
    report = Report(f"simplex(inequality={inequality})")
    for i in range(N_CASES):
        m = random_m(rng)
        kind = ROW_KINDS[i % len(ROW_KINDS)]
        scale = random_scale(rng)
        x = random_row(rng, m, kind) * scale
        pos = float(np.maximum(x, 0).sum())
        regime = (i // len(ROW_KINDS)) % 5
        if regime == 0:  # binding (for the inequality)
            r = pos * rng.uniform(0.05, 0.95) if pos > 0 else scale * rng.uniform(0.1, 2)
        elif regime == 1:  # not binding
            r = pos * rng.uniform(1.05, 5.0) + scale * rng.uniform(0.0, 0.1)
        elif regime == 2:  # exactly at the transition Σp = Σx₊
            r = pos
        elif regime == 3:
            r = scale * 10.0 ** rng.uniform(-3.0, 1.5)
        else:
            r = 0.0 if i % 3 == 0 else scale * rng.uniform(0.0, 1.0)
        params = dict(r=r, inequality=inequality)
        sigma = max(scale, r)
        try:
            p = P.simplex(x, r, inequality)
        except Exception as exc:  # noqa: BLE001
            report.fail("raised", x, params, repr(exc))
            continue
        try:
            p_ref = ref.simplex(x, r, inequality)
        except ref.ReferenceFailure:
            report.skipped += 1
            continue
        report.checked += 1
        check_agreement(report, "QP mismatch", x, params, p, p_ref, sigma)
        s = float(p.sum())
        check_feasible(
            report,
            x,
            params,
            {
                "p >= 0": -float(p.min()),
                "sum": (s - r) if inequality else abs(s - r),
            },
            sigma,
        )
        # KKT: p = max(x − t, 0) for one t; t ≥ 0 for Σp ≤ r, t = 0 unless Σp = r.
        tol = KKT * sigma
        low, high = clip_threshold_interval(x, p, 0.0, math.inf, tol)
        if low > high + 2 * tol:
            report.fail("KKT", x, params, f"no t with p = (x − t)₊: [{low!r}, {high!r}]")
        elif inequality:
            if high < -tol:
                report.fail("KKT", x, params, f"multiplier t ≤ {high!r} < 0")
            if s < r - tol and not (low - 2 * tol <= 0.0 <= high + 2 * tol):
                report.fail("KKT", x, params, f"Σp = {s!r} < r but t ∉ [{low!r}, {high!r}] ∌ 0")
        again = P.simplex(p, r, inequality)
        check_idempotent(report, x, params, p, again, sigma)
    report.finish()


def test_sparsemax_matches_qp_and_simplex() -> None:
    rng = np.random.default_rng(SEED + 1010)
    report = Report("sparsemax")
    for i in range(N_CASES):
        m = random_m(rng)
        x = random_row(rng, m, ROW_KINDS[i % len(ROW_KINDS)]) * random_scale(rng)
        p = P.sparsemax(x)
        if not np.array_equal(p, P.simplex(x, 1.0)):
            report.fail("sparsemax ≠ simplex(z, 1)", x, {}, f"{p.tolist()!r}")
        sigma = max(1.0, float(np.abs(x).max()))
        report.checked += 1
        check_agreement(report, "QP mismatch", x, {}, p, ref.simplex(x, 1.0), sigma)
        check_feasible(report, x, {}, {"p >= 0": -float(p.min()), "sum": abs(float(p.sum()) - 1.0)}, sigma)
    report.finish()


# ---------------------------------------------------------- randomized: knapsack


def test_knapsack_matches_qp() -> None:
    rng = np.random.default_rng(SEED + 1020)
    report = Report("knapsack")
    for i in range(2 * N_CASES):
        m = random_m(rng)
        scale = random_scale(rng)
        x = random_row(rng, m, ROW_KINDS[i % len(ROW_KINDS)]) * scale
        lo = scale * rng.uniform(-1.0, 0.5)
        width_kind = (i // len(ROW_KINDS)) % 6
        if width_kind == 0:
            hi = lo
        elif width_kind == 1:
            hi = lo + scale * 1e-9
        else:
            hi = lo + scale * rng.uniform(0.0, 2.0)
        frac_kind = (i // (6 * len(ROW_KINDS))) % 4
        frac = [rng.uniform(0.0, 1.0), 0.0, 1.0, rng.choice([1e-6, 1.0 - 1e-6])][frac_kind]
        r = m * lo + frac * m * (hi - lo)
        if frac == 1.0:
            r = m * hi
        params = dict(lo=lo, hi=hi, r=r)
        sigma = max(scale, abs(lo), abs(hi), abs(r) / m)
        try:
            p = P.knapsack(x, lo, hi, r)
        except Exception as exc:  # noqa: BLE001
            report.fail("raised", x, params, repr(exc))
            continue
        try:
            p_ref = ref.knapsack(x, lo, hi, r)
        except ref.ReferenceFailure:
            report.skipped += 1
            continue
        report.checked += 1
        check_agreement(report, "QP mismatch", x, params, p, p_ref, sigma)
        check_feasible(
            report,
            x,
            params,
            {
                "p >= lo": float((lo - p).max()),
                "p <= hi": float((p - hi).max()),
                "sum": abs(float(p.sum()) - r),
            },
            sigma,
        )
        if hi > lo:
            tol = KKT * sigma
            low, high = clip_threshold_interval(x, p, lo, hi, tol)
            if low > high + 2 * tol:
                report.fail("KKT", x, params, f"no t with p = clip(x − t, lo, hi): [{low!r}, {high!r}]")
        check_idempotent(report, x, params, p, P.knapsack(p, lo, hi, r), sigma)
    report.finish()


# ------------------------------------------------------------ randomized: top-k


@pytest.mark.parametrize("rho", RHOS)
def test_topk_cone_matches_qp(rho: float) -> None:
    rng = np.random.default_rng(SEED + 1030 + int(10 * rho))
    report = Report(f"topk_cone(rho={rho})")
    for i in range(N_CASES):
        m = random_m(rng)
        k = pick_k(rng, m, i)
        scale = random_scale(rng)
        x = random_row(rng, m, ROW_KINDS[(i // 4) % len(ROW_KINDS)]) * scale
        params = dict(k=k, rho=rho)
        try:
            p = P.topk_cone(x, k, rho)
        except Exception as exc:  # noqa: BLE001
            report.fail("raised", x, params, repr(exc))
            continue
        try:
            p_ref = ref.topk_cone(x, k, rho)
        except ref.ReferenceFailure:
            report.skipped += 1
            continue
        report.checked += 1
        sigma = scale
        check_agreement(report, "QP mismatch", x, params, p, p_ref, sigma)
        s = float(p.sum())
        check_feasible(report, x, params, {"p >= 0": -float(p.min()), "p_i <= Σp/k": float(p.max()) - s / k}, sigma)
        ok, why = cone_kkt_ok(x, p, k, rho, False, KKT * sigma)
        if not ok:
            report.fail("KKT", x, params, why)
        if rho == 0.0:
            check_idempotent(report, x, params, p, P.topk_cone(p, k, rho), sigma)
    report.finish()


@pytest.mark.parametrize("long_rows", [False, True])
@pytest.mark.parametrize("rho", RHOS)
def test_topk_simplex_matches_qp(rho: float, long_rows: bool) -> None:
    # Long rows with k ≤ m/4 − 4 take the filtered path (only the entries above a
    # bound from the block maxima are sorted), including its fall-back on ties.
    rng = np.random.default_rng(SEED + 1040 + int(10 * rho) + 7 * long_rows)
    report = Report(f"topk_simplex(rho={rho}, long_rows={long_rows})")
    for i in range(N_CASES // 4 if long_rows else N_CASES):
        if long_rows:
            m = int(rng.integers(65, 161))
            k = pick_k(rng, m // 4 - 4, i) if i % 8 else m - 1
        else:
            m = random_m(rng)
            k = pick_k(rng, m, i)
        scale = random_scale(rng)
        x = random_row(rng, m, ROW_KINDS[(i // 4) % len(ROW_KINDS)]) * scale
        try:
            cone_sum = float(ref.topk_cone(x, k, rho).sum())
        except ref.ReferenceFailure:
            report.skipped += 1
            continue
        if cone_sum <= 1e-9 * scale:  # the cone projection is 0 (QP round-off aside)
            cone_sum = 0.0
        regime = (i // (4 * len(ROW_KINDS))) % 4
        if regime == 0:  # Σp ≤ r binds
            r = cone_sum * rng.uniform(0.05, 0.95) if cone_sum > 0 else scale * rng.uniform(0.1, 1.0)
        elif regime == 1:  # does not bind
            r = cone_sum * rng.uniform(1.05, 5.0) + scale * rng.uniform(0.0, 0.1)
        elif regime == 2:  # exactly at the transition
            r = cone_sum if cone_sum > 0 else scale
        else:
            r = 0.0 if i % 50 == 3 else scale * 10.0 ** rng.uniform(-3.0, 1.5)
        params = dict(k=k, r=r, rho=rho)
        sigma = max(scale, r)
        try:
            p = P.topk_simplex(x, k, r, rho)
        except Exception as exc:  # noqa: BLE001
            report.fail("raised", x, params, repr(exc))
            continue
        try:
            p_ref = ref.topk_simplex(x, k, r, rho)
        except ref.ReferenceFailure:
            report.skipped += 1
            continue
        report.checked += 1
        check_agreement(report, "QP mismatch", x, params, p, p_ref, sigma)
        s = float(p.sum())
        check_feasible(
            report,
            x,
            params,
            {
                "p >= 0": -float(p.min()),
                "p_i <= Σp/k": float(p.max()) - s / k,
                "Σp <= r": s - r,
            },
            sigma,
        )
        ok, why = cone_kkt_ok(x, p, k, rho, s >= r - KKT * sigma, KKT * sigma)
        if not ok:
            report.fail("KKT", x, params, why)
        if rho == 0.0:
            check_idempotent(report, x, params, p, P.topk_simplex(p, k, r, rho), sigma)
    report.finish(min_checked=200 if long_rows else 500)


@pytest.mark.parametrize("long_rows", [False, True])
@pytest.mark.parametrize("rho", RHOS)
def test_box_simplex_matches_qp(rho: float, long_rows: bool) -> None:
    # Long rows whose caps fill up within a few entries take the filtered path.
    rng = np.random.default_rng(SEED + 1050 + int(10 * rho) + 7 * long_rows)
    report = Report(f"box_simplex(rho={rho}, long_rows={long_rows})")
    for i in range(N_CASES // 4 if long_rows else N_CASES):
        m = int(rng.integers(65, 161)) if long_rows else random_m(rng)
        scale = random_scale(rng)
        x = random_row(rng, m, ROW_KINDS[i % len(ROW_KINDS)]) * scale
        hi_kind = (i // len(ROW_KINDS)) % 5
        if hi_kind == 0:  # the top-k Usunier set: hi = r/k (r chosen below, rescaled after)
            hi = None
        elif hi_kind == 1:
            hi = scale * rng.uniform(0.01, 0.3)
        elif hi_kind == 2:
            hi = scale * rng.uniform(1.0, 3.0)  # the box does not bind
        elif hi_kind == 3:
            hi = scale * 10.0 ** rng.uniform(-3.0, 1.0)
        else:
            hi = 0.0 if i % 7 == 0 else scale * rng.uniform(0.0, 1.0)
        if hi is None:
            k = pick_k(rng, m // 4 - 4 if long_rows else m, i // 5)
            r0 = scale * rng.uniform(0.1, 2.0)
            hi = r0 / k
        try:
            box_sum = float(ref.box_simplex(x, hi, None, rho).sum())
        except ref.ReferenceFailure:
            report.skipped += 1
            continue
        if box_sum <= 1e-9 * scale:  # the box projection is 0 (QP round-off aside)
            box_sum = 0.0
        regime = (i // (5 * len(ROW_KINDS))) % 4
        if regime == 0:
            r = box_sum * rng.uniform(0.05, 0.95) if box_sum > 0 else scale * rng.uniform(0.1, 1.0)
        elif regime == 1:
            r = box_sum * rng.uniform(1.05, 5.0) + scale * rng.uniform(0.0, 0.1)
        elif regime == 2:
            r = box_sum if box_sum > 0 else scale
        else:
            r = scale * 10.0 ** rng.uniform(-3.0, 1.5)
        params = dict(hi=hi, r=r, rho=rho)
        sigma = max(scale, hi, r)
        try:
            p = P.box_simplex(x, hi, r, rho)
        except Exception as exc:  # noqa: BLE001
            report.fail("raised", x, params, repr(exc))
            continue
        try:
            p_ref = ref.box_simplex(x, hi, r, rho)
        except ref.ReferenceFailure:
            report.skipped += 1
            continue
        report.checked += 1
        check_agreement(report, "QP mismatch", x, params, p, p_ref, sigma)
        s = float(p.sum())
        check_feasible(
            report,
            x,
            params,
            {
                "p >= 0": -float(p.min()),
                "p <= hi": float(p.max()) - hi,
                "Σp <= r": s - r,
            },
            sigma,
        )
        if hi > 0 and r > 0:
            # KKT: p = clip(x − t, 0, hi), λ = t − ρs ≥ 0, λ = 0 unless Σp = r.
            tol = KKT * sigma
            low, high = clip_threshold_interval(x, p, 0.0, hi, tol)
            if low > high + 2 * tol:
                report.fail("KKT", x, params, f"no t with p = clip(x − t, 0, hi): [{low!r}, {high!r}]")
            elif high < rho * s - 2 * tol:
                report.fail("KKT", x, params, f"λ = t − ρs < 0: t ≤ {high!r}, ρs = {rho * s!r}")
            elif s < r - tol and not (low - 2 * tol <= rho * s <= high + 2 * tol):
                report.fail("KKT", x, params, f"Σp < r but t = ρs = {rho * s!r} ∉ [{low!r}, {high!r}]")
        if rho == 0.0:
            check_idempotent(report, x, params, p, P.box_simplex(p, hi, r, rho), sigma)
    report.finish(min_checked=200 if long_rows else 500)


# ------------------------------------------------------ randomized: (n,k)-simplex


def rounding_floor(x: np.ndarray) -> float:
    """The (n,k)-simplex is not homogeneous: p ∈ [0, 1] whatever the size of x, and
    p_i = x_i − t (or exp(x_i − c)) loses ~eps·max|x| per entry to the rounding of the
    threshold. Σp is feasible to 1e-10·max(1, k) plus this floor (16 m eps max|x|)."""
    return 16.0 * x.size * EPS * float(np.abs(x).max())


@pytest.mark.parametrize("long_rows", [False, True])
def test_capped_simplex_matches_qp(long_rows: bool) -> None:
    # Long rows with k ≤ m/4 − 4 take the filtered path.
    rng = np.random.default_rng(SEED + 1060 + 7 * long_rows)
    report = Report(f"capped_simplex(long_rows={long_rows})")
    for i in range(N_CASES // 2 if long_rows else 2 * N_CASES):
        m = int(rng.integers(65, 161)) if long_rows else random_m(rng)
        k = pick_k_real(rng, m // 4 - 4 if long_rows else m, i)
        scale = random_scale(rng)
        x = random_row(rng, m, ROW_KINDS[(i // 5) % len(ROW_KINDS)]) * scale
        params = dict(k=k)
        try:
            p = P.capped_simplex(x, k)
        except Exception as exc:  # noqa: BLE001
            report.fail("raised", x, params, repr(exc))
            continue
        try:
            p_ref = ref.capped_simplex(x, k)
        except ref.ReferenceFailure:
            report.skipped += 1
            continue
        report.checked += 1
        # The bounds [0, 1] fix the scale of p: compare absolutely.
        sigma = 1.0
        check_agreement(report, "QP mismatch", x, params, p, p_ref, sigma)
        feas_scale = max(1.0, k) + rounding_floor(x) / FEAS
        check_feasible(
            report,
            x,
            params,
            {
                "p >= 0": -float(p.min()),
                "p <= 1": float(p.max()) - 1.0,
                "sum": abs(float(p.sum()) - k),
            },
            feas_scale,
        )
        if k < m:
            tol = KKT * max(1.0, float(np.abs(x).max()))
            low, high = clip_threshold_interval(x, p, 0.0, 1.0, tol)
            if low > high + 2 * tol:
                report.fail("KKT", x, params, f"no t with p = clip(x − t, 0, 1): [{low!r}, {high!r}]")
        # P(x) is feasible only up to its sum error, which the second projection corrects.
        slack = abs(float(p.sum()) - k) / FEAS
        check_idempotent(report, x, params, p, P.capped_simplex(p, k), feas_scale + slack)
    report.finish(min_checked=400 if long_rows else 500)


def test_capped_simplex_entropy_matches_bisection() -> None:
    rng = np.random.default_rng(SEED + 1070)
    report = Report("capped_simplex_entropy")
    for i in range(2 * N_CASES):
        m = random_m(rng)
        k = pick_k_real(rng, m, i)
        scale = random_scale(rng)
        x = random_row(rng, m, ROW_KINDS[(i // 5) % len(ROW_KINDS)]) * scale
        params = dict(k=k)
        try:
            p = P.capped_simplex_entropy(x, k)
        except Exception as exc:  # noqa: BLE001
            report.fail("raised", x, params, repr(exc))
            continue
        p_ref, _ = ref.capped_simplex_entropy(x, k)
        report.checked += 1
        check_agreement(report, "bisection mismatch", x, params, p, p_ref, 1.0)
        check_feasible(
            report,
            x,
            params,
            {
                "p >= 0": -float(p.min()),
                "p <= 1": float(p.max()) - 1.0,
                "sum": abs(float(p.sum()) - k),
            },
            max(1.0, k) + rounding_floor(x) / FEAS,
        )
        # KKT: p_i = min(1, exp(x_i − c)) for one c.
        tol = 1e-10 * max(1.0, float(np.abs(x).max()))
        uncapped = (p < 1.0 - 1e-12) & (p > 1e-280)
        if uncapped.any():
            cs = x[uncapped] - np.log(p[uncapped])
            c = float(np.median(cs))
            if float(np.ptp(cs)) > tol:
                report.fail("KKT", x, params, f"x_i − log p_i not constant: spread {float(np.ptp(cs))!r}")
            capped = p >= 1.0 - 1e-12
            if capped.any() and float(x[capped].min()) < c - tol:
                report.fail("KKT", x, params, f"capped entry x = {float(x[capped].min())!r} < c = {c!r}")
            zero = p == 0.0
            if zero.any() and float(x[zero].max()) - c > -700.0:
                report.fail("KKT", x, params, f"p_i = 0 but x_i − c = {float(x[zero].max()) - c!r}")
        if k == 1.0:
            e = np.exp(x - x.max())
            softmax = e / e.sum()
            check_agreement(report, "softmax mismatch", x, params, p, softmax, 1e-2)  # 1e-9 absolute
    report.finish()


# --------------------------------------------------------- batching, dtypes, layout

Config = tuple[str, Callable[..., np.ndarray], Callable[[int, float], dict[str, Any]], bool]

# (id, function, params(m, scale), positively homogeneous)
CONFIGS: list[Config] = [
    ("simplex", P.simplex, lambda m, s: dict(r=0.7 * s), True),
    ("simplex_ineq", P.simplex, lambda m, s: dict(r=0.7 * s, inequality=True), True),
    ("sparsemax", P.sparsemax, lambda m, s: {}, False),
    ("knapsack", P.knapsack, lambda m, s: dict(lo=-0.2 * s, hi=0.5 * s, r=m * s * (-0.2 + 0.4 * 0.7)), True),
    ("topk_cone", P.topk_cone, lambda m, s: dict(k=min(3, m), rho=0.5), True),
    ("topk_cone_k1", P.topk_cone, lambda m, s: dict(k=1), True),
    ("topk_simplex", P.topk_simplex, lambda m, s: dict(k=min(3, m), r=1.0 * s, rho=1.0), True),
    ("topk_simplex_km", P.topk_simplex, lambda m, s: dict(k=m, r=0.5 * s), True),
    ("box_simplex", P.box_simplex, lambda m, s: dict(hi=0.3 * s, r=1.0 * s, rho=0.5), True),
    ("capped_simplex", P.capped_simplex, lambda m, s: dict(k=min(2.5, m)), False),
    ("capped_simplex_entropy", P.capped_simplex_entropy, lambda m, s: dict(k=min(2.5, m)), False),
]
CONFIG_IDS = [c[0] for c in CONFIGS]


def batch_rows(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """n rows of mixed kinds and magnitudes 0.1 … 10."""
    rows = [random_row(rng, m, ROW_KINDS[i % len(ROW_KINDS)]) * 10.0 ** rng.uniform(-1, 1) for i in range(n)]
    return np.array(rows)


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("shape", [(6000, 8), (800, 40), (300, 200), (37, 1), (1, 13)])
def test_batch_equals_rows_and_threads(config: Config, shape: tuple[int, int]) -> None:
    _, func, make_params, _ = config
    n, m = shape
    rng = np.random.default_rng(SEED + 2000 + n + m)
    x = batch_rows(rng, n, m)
    params = make_params(m, 1.0)
    batch = func(x, **params)
    assert batch.shape == x.shape and batch.dtype == np.float64
    rows = np.array([func(row, **params) for row in x])
    assert np.array_equal(batch, rows)
    for n_jobs in (1, 2, -1):
        assert np.array_equal(func(x, **params, n_jobs=n_jobs), batch), f"n_jobs={n_jobs}"
    # The same for float32.
    x32 = x.astype(np.float32)
    b32 = func(x32, **params, n_jobs=1)
    assert b32.dtype == np.float32
    assert np.array_equal(func(x32, **params, n_jobs=2), b32)
    assert np.array_equal(np.array([func(row, **params) for row in x32]), b32)


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_float32_agrees_with_float64(config: Config) -> None:
    _, func, make_params, homogeneous = config
    rng = np.random.default_rng(SEED + 3000)
    for scale in (1e-8, 1e-3, 1.0, 1e3, 1e6):
        s = scale if homogeneous else 1.0
        for m in (1, 2, 5, 17, 40):
            x = batch_rows(rng, 50, m) * scale
            x32 = x.astype(np.float32)
            params = make_params(m, s)
            p32 = func(x32, **params)
            assert p32.dtype == np.float32 and p32.shape == x.shape
            sigma = 10.0 * s if homogeneous else 1.0
            # Same (rounded) input in float64: only the float32 output rounding differs.
            err = float(np.abs(p32.astype(np.float64) - func(x32.astype(np.float64), **params)).max())
            assert err <= 1e-4 * sigma, f"scale={scale}, m={m}: |p32 − p64| = {err!r}"
            # The original float64 input (its float32 rounding moves a homogeneous problem by
            # ~6e-8·σ; the (n,k)-simplex only for x of order 1, its output scale).
            if homogeneous or scale <= 1.0:
                err = float(np.abs(p32.astype(np.float64) - func(x, **params)).max())
                assert err <= 1e-4 * sigma, f"scale={scale}, m={m}: |p32 − p64(x)| = {err!r}"
            # And 1-D float32 input.
            assert P.simplex(x32[0]).dtype == np.float32


def layouts(rng: np.random.Generator, m: int) -> dict[str, np.ndarray]:
    big = batch_rows(rng, 12, 2 * m)
    base = big[:, :m].copy()
    ro = base.copy()
    ro.setflags(write=False)
    ro_strided = big[:, ::2]
    ro_strided.setflags(write=False)
    row_ro = base[0].copy()
    row_ro.setflags(write=False)
    return {
        "read-only": ro,
        "column-step-2": big[:, ::2],
        "row-step-2": big[::2, :m],
        "read-only-strided": ro_strided,
        "fortran-ordered": np.asfortranarray(base),
        "transposed": np.ascontiguousarray(base.T).T,
        "reversed-columns": big[:, ::-1][:, :m],
        "1d-step-2": big[0, ::2],
        "1d-column": big[:, 3],
        "1d-read-only": row_ro,
        "1d-reversed": base[1, ::-1],
    }


LAYOUTS = list(layouts(np.random.default_rng(0), 3))


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("name", LAYOUTS)
def test_layouts_equal_contiguous_copies(config: Config, name: str) -> None:
    _, func, make_params, _ = config
    rng = np.random.default_rng(SEED + 4000)
    arr = layouts(rng, 9)[name]
    before = arr.copy()
    params = make_params(arr.shape[-1], 1.0)
    got = func(arr, **params)
    want = func(np.ascontiguousarray(arr), **params)
    np.testing.assert_array_equal(arr, before)  # the input is untouched
    assert got.shape == arr.shape
    assert np.array_equal(got, want), f"{name}: got\n{got!r}\nexpected\n{want!r}"
    # float32 too.
    arr32 = arr.astype(np.float32, order="K")
    if not arr.flags.writeable:
        arr32.setflags(write=False)
    assert np.array_equal(func(arr32, **params), func(np.ascontiguousarray(arr32), **params)), name


def test_fortran_view_of_float32_and_2d_column_vector() -> None:
    x = np.asfortranarray(np.array([[1.0, 0.0, 0.5], [1.0, 0.2, 0.0]], dtype=np.float32))
    assert np.array_equal(P.simplex(x), P.simplex(np.ascontiguousarray(x)))
    col = np.array([[0.3], [-0.2], [5.0]])  # (n, 1): each row has one entry
    np.testing.assert_array_equal(P.simplex(col, 2.0), [[2.0], [2.0], [2.0]])


# ----------------------------------------------------------- hand-computed examples


def expect(got: np.ndarray, expected: Any, *scales: float) -> None:
    """got equals the exact expected output up to a few ulps of the problem's magnitude
    (max|x| and the parameters given): 4·m·eps·max(1, scales)."""
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape and got.dtype == np.float64
    atol = 4.0 * got.shape[-1] * EPS * max([1.0, *map(abs, scales)])
    np.testing.assert_allclose(got, expected, rtol=0.0, atol=atol)


def test_simplex_examples() -> None:
    expect(P.simplex(np.array([0.5, 0.2, -1.0])), [0.65, 0.35, 0.0])
    expect(P.simplex(np.array([0.5, 0.2, -1.0]), inequality=True), [0.5, 0.2, 0.0])
    expect(P.simplex(np.array([3.0, 1.0]), 2.0, inequality=True), [2.0, 0.0], 3.0)
    expect(P.simplex(np.array([1.0, 1.0, 1.0, 1.0])), [0.25] * 4)
    expect(P.simplex(np.array([-5.0]), 3.0), [3.0], 5.0)
    np.testing.assert_array_equal(P.simplex(np.array([2.0, -1.0]), 0.0), [0.0, 0.0])
    expect(P.sparsemax(np.array([3.0, 1.0, 1.0])), [1.0, 0.0, 0.0], 3.0)
    expect(P.sparsemax(np.array([0.0, 0.0])), [0.5, 0.5])
    # t = 1/3: (1, 0.5, 0.5, −1) − 1/3 → (2/3, 1/6, 1/6, 0).
    expect(P.sparsemax(np.array([1.0, 0.5, 0.5, -1.0])), [2 / 3, 1 / 6, 1 / 6, 0.0])
    expect(P.sparsemax(np.array([[3.0, 1.0, 1.0], [0.0, 0.0, 0.0]])), [[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]], 3.0)
    # Scaled: simplex(c·x, c·r) = c·simplex(x, r).
    expect(P.simplex(np.array([0.5, 0.2, -1.0]) * 1e6, 1e6), [0.65e6, 0.35e6, 0.0], 1e6)
    expect(P.simplex(np.array([0.5, 0.2, -1.0]) * 1e-8, 1e-8) * 1e8, [0.65, 0.35, 0.0])


def test_knapsack_examples() -> None:
    expect(P.knapsack(np.array([2.0, 0.0, -1.0, 5.0]), 0.0, 1.0, 2.0), [1.0, 0.0, 0.0, 1.0], 5.0)
    # t = 0.2: (0.1, −0.1, 0).
    expect(P.knapsack(np.array([0.3, 0.1, 0.2]), -1.0, 1.0, 0.0), [0.1, -0.1, 0.0])
    np.testing.assert_array_equal(P.knapsack(np.array([7.0, -3.0]), 0.5, 0.5, 1.0), [0.5, 0.5])
    expect(P.knapsack(np.array([7.0, -3.0]), -1.0, 2.0, 4.0), [2.0, 2.0], 7.0)
    expect(P.knapsack(np.array([7.0, -3.0]), -1.0, 2.0, -2.0), [-1.0, -1.0], 7.0)
    # Interior: t = 1, (1, 2, 3) → (0, 1, 2) inside [−5, 5].
    expect(P.knapsack(np.array([1.0, 2.0, 3.0]), -5.0, 5.0, 3.0), [0.0, 1.0, 2.0], 5.0)


def test_knapsack_infeasible() -> None:
    x = np.array([0.1, 0.2, 0.3])
    with pytest.raises(InfeasibleError):
        P.knapsack(x, 0.0, 1.0, 3.5)  # m·hi < r
    with pytest.raises(InfeasibleError):
        P.knapsack(x, 0.5, 1.0, 1.0)  # m·lo > r
    with pytest.raises(InfeasibleError):
        P.knapsack(x, 1.0, 0.0, 1.5)  # lo > hi
    with pytest.raises(InfeasibleError):
        P.knapsack(np.zeros((2, 3)), 0.0, 1.0, -0.1)
    assert issubclass(InfeasibleError, InvalidInputError) and issubclass(InvalidInputError, ValueError)


def test_topk_cone_examples() -> None:
    # Lemma 4: the two largest sum to ≤ 0 → 0.
    np.testing.assert_array_equal(P.topk_cone(np.array([1.0, -2.0, -3.0]), 2), [0.0, 0.0, 0.0])
    expect(P.topk_cone(np.array([5.0, 5.0, -10.0]), 2), [5.0, 5.0, 0.0], 10.0)
    # p = (b + c, b, c) minimising (b + c − 3)² + (b − 1)² + c²: c = 2/3, b = 5/3.
    expect(P.topk_cone(np.array([3.0, 1.0, 0.0]), 2), [7 / 3, 5 / 3, 2 / 3], 3.0)
    # k = 1: the cone is the orthant; ρ = 1: p = (x − ρΣp)₊ → p₁ = 1 − p₁ = 1/2.
    expect(P.topk_cone(np.array([1.0, -1.0]), 1), [1.0, 0.0])
    expect(P.topk_cone(np.array([1.0, -1.0]), 1, 1.0), [0.5, 0.0])
    # k = m: p = c·1 with c = max(Σx, 0) / (m (1 + ρm)) = 3 / 7.5.
    expect(P.topk_cone(np.array([3.0, 1.0, -1.0]), 3, 0.5), [3 / 7.5] * 3, 3.0)
    np.testing.assert_array_equal(P.topk_cone(np.array([3.0, 1.0, -5.0]), 3), [0.0] * 3)
    np.testing.assert_array_equal(P.topk_cone(np.array([-2.0]), 1), [0.0])
    expect(P.topk_cone(np.array([2.0]), 1, 1.0), [1.0], 2.0)


def test_topk_simplex_examples() -> None:
    x = np.array([3.0, 1.0, 0.0])
    expect(P.topk_simplex(x, 2, 1.0), [0.5, 0.5, 0.0], 3.0)
    expect(P.topk_simplex(x, 2, 10.0), [7 / 3, 5 / 3, 2 / 3], 10.0)
    np.testing.assert_array_equal(P.topk_simplex(x, 2, 0.0), [0.0, 0.0, 0.0])
    # k = 1, ρ = 0: the simplex with Σp ≤ r.
    expect(P.topk_simplex(np.array([0.5, 0.2, -1.0]), 1, 1.0), [0.5, 0.2, 0.0])
    expect(P.topk_simplex(np.array([0.5, 0.2, -1.0]), 1, 0.5), [0.4, 0.1, 0.0])
    # k = m = 2, ρ = 1: p = c·1 minimising 2(c − 1)² + 4c² → c = 1/3 (sum 2/3 < r = 1) …
    expect(P.topk_simplex(np.array([1.0, 1.0]), 2, 1.0, 1.0), [1 / 3, 1 / 3])
    # … and with r = 0.5 the sum binds: c = 1/4.
    expect(P.topk_simplex(np.array([1.0, 1.0]), 2, 0.5, 1.0), [0.25, 0.25])


def test_box_simplex_examples() -> None:
    expect(P.box_simplex(np.array([0.2, 0.9, -1.0]), 0.5, 10.0), [0.2, 0.5, 0.0], 10.0)
    # Σp = r = 0.6: t = 0.1.
    expect(P.box_simplex(np.array([0.2, 0.9, -1.0]), 0.5, 0.6), [0.1, 0.5, 0.0])
    # ρ = 1, inactive sum: p = 1 − s each, s = 2(1 − s) → p = 1/3.
    expect(P.box_simplex(np.array([1.0, 1.0]), 10.0, 10.0, 1.0), [1 / 3, 1 / 3], 10.0)
    np.testing.assert_array_equal(P.box_simplex(np.array([1.0, 1.0]), 0.0, 10.0), [0.0, 0.0])
    np.testing.assert_array_equal(P.box_simplex(np.array([-1.0, -2.0]), 1.0, 1.0, 0.5), [0.0, 0.0])


def test_capped_simplex_examples() -> None:
    expect(P.capped_simplex(np.array([5.0, 4.0, 0.0, -1.0]), 2), [1.0, 1.0, 0.0, 0.0], 5.0)
    expect(P.capped_simplex(np.zeros(4), 4), [1.0] * 4)
    expect(P.capped_simplex(np.zeros(4), 1.5), [0.375] * 4)
    # One capped entry, t = 0.1: (1, 0.4, 0.1, 0).
    expect(P.capped_simplex(np.array([3.0, 0.5, 0.2, -5.0]), 1.5), [1.0, 0.4, 0.1, 0.0], 5.0)
    # k = 1 is sparsemax.
    z = np.array([0.3, 1.2, -0.4, 1.0])
    expect(P.capped_simplex(z, 1.0), P.sparsemax(z))


def test_capped_simplex_entropy_examples() -> None:
    x = np.array([1.0, 2.0, 3.0])
    expect(P.capped_simplex_entropy(x, 1.0), np.exp(x) / np.exp(x).sum(), 3.0)
    expect(P.capped_simplex_entropy(np.array([0.0, 0.0, math.log(2.0)]), 1.0), [0.25, 0.25, 0.5])
    expect(P.capped_simplex_entropy(np.array([1000.0, 0.0, 0.0]), 2.0), [1.0, 0.5, 0.5], 1000.0)
    expect(P.capped_simplex_entropy(np.array([-3.0, 7.0]), 2.0), [1.0, 1.0], 7.0)
    # Fractional k, uniform x: p = k/m.
    expect(P.capped_simplex_entropy(np.full(4, 5.0), 1.5), [0.375] * 4, 5.0)
    # Large magnitudes do not overflow.
    expect(P.capped_simplex_entropy(np.array([1e6, 1e6, -1e6]), 1.0), [0.5, 0.5, 0.0], 1e6)


@pytest.mark.parametrize(
    ("x", "k", "expected"),
    [
        # k = m: the only feasible point is p = 1.
        ([1e6, 1e6 + 1.9e-6], 2.0, [1.0, 1.0]),
        # The two largest must be capped (the third has exp(0 − c) = 0 for any c ≥ 1e6 − 700).
        ([1e6, 1e6 + 1.9e-6, 0.0], 2.0, [1.0, 1.0, 0.0]),
        ([1e5, 1e5 + 1.9e-7, 1e5 + 1e-7], 3.0, [1.0, 1.0, 1.0]),
        # The same near tie far below the largest entry (large spread rather than magnitude).
        ([0.0, -1e6, -1e6 + 1.9e-6], 3.0, [1.0, 1.0, 1.0]),
        ([0.0, -1e6, -1e6 + 1.9e-6, -2e6], 3.0, [1.0, 1.0, 1.0, 0.0]),
        # k = m with a near tie far below the maximum: p = 1 (must not raise).
        ([0.0, -999999.9999999985, -999999.9999999977, -1000000.0000000044], 4.0, [1.0] * 4),
        ([0.0, -999999.9999999985, -999999.9999999977, -1000000.0000000044, -3e6], 4.0, [1.0] * 4 + [0.0]),
    ],
)
def test_capped_simplex_entropy_near_ties_at_large_magnitude(x: list[float], k: float, expected: list[float]) -> None:
    p = P.capped_simplex_entropy(np.array(x), k)
    np.testing.assert_allclose(p, expected, rtol=0, atol=1e-7)
    assert abs(float(p.sum()) - k) <= 1e-10 * k + 16 * len(x) * EPS * max(abs(v) for v in x)


_BOX_HI = 0.05111796279384088


@pytest.mark.parametrize(
    ("func", "x", "args", "expected"),
    [
        # Entries a few ulps apart: the threshold's bracket must not collapse (k = 1, ρ = 0:
        # the simplex with Σp ≤ 0.1, all mass on the largest entry).
        (P.topk_simplex, [0.2, 0.1999999999999999, 0.19999999999999996, 1.0], (1, 0.1, 0.0), [0.0, 0.0, 0.0, 0.1]),
        (P.topk_simplex, [0.2, 0.19999999999999996, 0.2, 1.0], (1, 0.1, 0.0), [0.0, 0.0, 0.0, 0.1]),
        # Four near-equal entries at the cap hi = r/4, the two small ones at 0.
        (
            P.box_simplex,
            [
                0.09322455444291684,
                0.5880743042383856,
                0.5880743042383829,
                0.09322455444291679,
                0.5880743042383857,
                0.5880743042383871,
            ],
            (_BOX_HI, 0.2044718511753635, 0.0),
            [0.0, _BOX_HI, _BOX_HI, 0.0, _BOX_HI, _BOX_HI],
        ),
    ],
    ids=["topk_simplex-ulp-ties", "topk_simplex-ulp-ties-2", "box_simplex-ulp-ties"],
)
def test_ulp_ties_regressions(
    func: Callable[..., np.ndarray], x: list[float], args: tuple[float, ...], expected: list[float]
) -> None:
    expect(func(np.array(x), *args), expected, 1.0)


@pytest.mark.parametrize(
    ("func", "x", "args", "expected"),
    [
        # A cap below an ulp of the entries: x_i − cap rounds onto x_i, so the entry's two
        # breakpoints coincide unless the bracket is searched relative to the entries.
        (P.knapsack, [1e20], (0.0, 1.0, 0.3), [0.3]),
        (P.knapsack, [1e17, 0.0], (0.0, 1.0, 0.5), [0.5, 0.0]),
        (P.knapsack, [1e16] * 5, (0.0, 1.0, 2.0), [0.4] * 5),
        (P.capped_simplex, [1e17], (0.5,), [0.5]),
        (P.capped_simplex, [1e17, 0.0], (0.5,), [0.5, 0.0]),
        (P.box_simplex, [1e17, 0.0], (1.0, 0.5), [0.5, 0.0]),
        # A bias so large that the answer is 1e20 times smaller than x (Lemma 3, case 2,
        # and the box simplex's free branch): the zero vector is not the projection.
        (P.topk_cone, [1e17, 1e17, 0.0], (2, 1e20), [2e17 / (1 + 2e20) / 2] * 2 + [0.0]),
        (P.topk_simplex, [1e17, 1e17, 0.0], (2, 1.0, 1e20), [2e17 / (1 + 2e20) / 2] * 2 + [0.0]),
        (P.box_simplex, [1e17, 1e17, 0.0], (1.0, 1.0, 1e20), [2e17 / (1 + 2e20) / 2] * 2 + [0.0]),
        (P.topk_cone, [3.3e9, 2.9e9, 1e9, -5.0], (3, 1e9), [7.2e9 / (1 + 3e9) / 3] * 3 + [0.0]),
        # Two entries 6e-11 apart next to one 1.5e6: the prefix sums cannot tell whether
        # the lower one reaches its cap (it does: all three are capped). From a Top-k
        # SVM fit (loss "beta", k = 3).
        (
            P.box_simplex,
            [8650.372222479604, 1497900.3444136549, 8650.372222479666, -39790.27782266605],
            (1 / 3, 1.0),
            [1 / 3, 1 / 3, 1 / 3, 0.0],
        ),
        # The cone's Lemma 3 case 2 holding only within its tolerance (x_[2] a hair above
        # x_[1] − s): case 3 resolves the five entries just above the threshold (exact
        # values from a rational solve). From a smoothed Top-k SVM fit, which raised.
        (
            P.topk_cone,
            [0.9999928528753902] * 4 + [1.9999892793037015, 0.9999928528753902],
            (1, 0.9999964264303978),
            [5.586722522380966e-13] * 4 + [0.99999642642887, 5.586722522380966e-13],
        ),
        # Ties at x_[k] under a bias of 1e12: each entry 3.3e-13 (rational solve), not 0.
        (P.topk_cone, [1.0, 1.0, 1.0], (2, 1e12), [3.333333333332222e-13] * 3),
    ],
    ids=[
        "knapsack-one-entry",
        "knapsack-two",
        "knapsack-ties",
        "capped-one-entry",
        "capped-two",
        "box-two",
        "cone-huge-rho",
        "topk-simplex-huge-rho",
        "box-huge-rho",
        "cone-case-2-rounding",
        "box-close-pair",
        "cone-case-2-within-tolerance",
        "cone-ties-huge-rho",
    ],
)
def test_rounding_next_to_large_entries(
    func: Callable[..., np.ndarray], x: list[float], args: tuple[float, ...], expected: list[float]
) -> None:
    # atol: entries ~1e-12 next to entries ~1 carry the rounding of their difference.
    np.testing.assert_allclose(func(np.array(x), *args), expected, rtol=1e-11, atol=1e-15)


def test_parameter_errors() -> None:
    x = np.array([0.3, -0.2, 0.5])
    bad: list[Callable[[], object]] = [
        lambda: P.topk_cone(x, 0),
        lambda: P.topk_cone(x, 4),
        lambda: P.topk_simplex(x, 4),
        lambda: P.topk_cone(x, 2, -0.5),
        lambda: P.topk_simplex(x, 2, -1.0),
        lambda: P.box_simplex(x, -1.0),
        lambda: P.box_simplex(x, 1.0, -1.0),
        lambda: P.simplex(x, -1.0),
        lambda: P.capped_simplex(x, 0.0),
        lambda: P.capped_simplex(x, 3.5),
        lambda: P.capped_simplex_entropy(x, 3.5),
        lambda: P.simplex(np.array([0.1, np.nan])),
        lambda: P.simplex(np.array([np.inf, 0.0])),
        lambda: P.simplex(np.zeros((0,))),
        lambda: P.simplex(np.zeros((2, 2, 2))),
        lambda: P.simplex(np.array([1, 2, 3])),
        lambda: P.simplex(x, n_jobs=0),
    ]
    for call in bad:
        with pytest.raises(InvalidInputError):
            call()
    with pytest.raises(TypeError):
        P.simplex(x, 1.0, False, 2)  # type: ignore[call-arg]  # n_jobs is keyword-only


def test_top_k_sum_within_rounding_projects_to_zero() -> None:
    """A Prox-SDCA step of TopKSVC(k=3, C=1) on standardised UCI Letter raised
    NoSolutionError: its three largest entries sum to 6e-17 next to entries of 1e-2, within
    that sum's rounding. The projection of such a row is 0 (see topk_cone.rs)."""
    x = np.array(
        [-0.04250811293296436, -0.04917850434701467, -0.059452850183945846, -0.04554985141438565]
        + [-0.08134368591842575, -0.05356692590942799, -0.014302203168030325, 0.01794012841832441]
        + [-0.008970064209162187, -0.008970064209162187, -0.00897006420916219, -0.11197142706556074]
        + [-0.04312768245158548, -0.008970064209162187, -0.017180580667267596, -0.03270036946708888]
        + [-0.07124898015705339, -0.0613617831398264, -0.07435334410230375, -0.008970064209162158]
        + [-0.05123238551916627, -0.0574073010163171, -0.06420331978299394, -0.024935420475265004]
        + [-0.08478982327014521]
    )
    for rho in (0.0, 1.0):
        assert not P.topk_cone(x, k=3, rho=rho).any()
        assert not P.topk_simplex(x, k=3, r=1.0, rho=rho).any()
