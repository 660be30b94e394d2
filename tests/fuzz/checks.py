"""Independent feasibility and optimality checks of ``toprank.projections`` and
``toprank.losses`` outputs, vectorised over the rows of a batch.

Every check takes the input rows ``X`` (float64, n × m, the values the library saw:
float32 inputs are widened exactly), the output rows ``P`` (float64 view of what was
returned), the parameters, and ``eps_out`` (the ε of the output dtype), and returns a
boolean array (one entry per row: the row passes) and a reason per failing row.

Feasibility uses the library's documented rounding bound (``src/projections/prefix.rs``,
``output_tolerance``, proved there), with Σ|p| + m·|lo| as the mass L:

    |Σp − target| ≤ 8·(m + 4)·ε·(|target| + L) + ε_out·L.

Optimality is checked through the threshold form of each problem's KKT conditions,
independently of how the library finds the threshold: p = clip(x − t, lo, hi) holds
iff the interval of thresholds consistent with every entry (entries at lo need
t ≥ x_i − lo, at hi t ≤ x_i − hi, free ones fix t = x_i − p_i) is non-empty, up to the
rounding of those differences; the cone problems add the equation of their multiplier
(Lapin et al. Lemma 3), the entropic projection a common c_i = x_i − log p_i, Rankmax a
common slope α_y = p_i / (z_i − μ_y).
"""

from __future__ import annotations

import math

import numpy as np

EPS = float(np.finfo(np.float64).eps)
# Arithmetic on subnormal numbers rounds absolutely, by up to half of this per operation.
SUBNORMAL = float(np.finfo(np.float64).smallest_subnormal)


def output_tolerance(m: int, target: np.ndarray | float, mass: np.ndarray, eps_out: float) -> np.ndarray:
    """The library's proved bound on |Σp − target| (see the module docstring)."""
    return 8.0 * (m + 4.0) * EPS * (np.abs(target) + mass) + eps_out * mass


def row_sums(P: np.ndarray) -> np.ndarray:
    # Pairwise summation: its own rounding, log2(m)·ε·Σ|p|, is far below the tolerance.
    return P.sum(axis=1)


def _masked_max(A: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.where(mask, A, -np.inf).max(axis=1)


def _masked_min(A: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.where(mask, A, np.inf).min(axis=1)


def threshold_interval(
    X: np.ndarray, P: np.ndarray, lo: float, hi: np.ndarray | float, lo_out: float, hi_out: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, scale): the thresholds t with p = clip(x − t, lo, hi) entrywise.

    ``lo_out``/``hi_out`` are the bounds as stored in the output dtype (a clipped entry
    equals them exactly). ``scale`` bounds |x_i| over the entries that set low and high.
    """
    hi = np.broadcast_to(np.asarray(hi, dtype=np.float64).reshape(-1, 1) if np.ndim(hi) else hi, (X.shape[0], 1))
    hi_out = np.broadcast_to(
        np.asarray(hi_out, dtype=np.float64).reshape(-1, 1) if np.ndim(hi_out) else hi_out, (X.shape[0], 1)
    )
    at_lo = P <= lo_out
    at_hi = (P >= hi_out) & ~at_lo
    free = ~(at_lo | at_hi)
    with np.errstate(invalid="ignore", over="ignore"):
        t_free = X - P
        low = np.maximum(_masked_max(X - lo, at_lo), _masked_max(t_free, free))
        high = np.minimum(_masked_min(X - hi, at_hi), _masked_min(t_free, free))
    finite = lambda v: np.where(np.isfinite(v), np.abs(v), 0.0)  # noqa: E731
    scale = finite(low) + finite(high) + abs(lo) + finite(hi[:, 0]) + _masked_max(np.abs(X), free).clip(0.0)
    return low, high, scale


def _sum_ok(
    P: np.ndarray,
    target: np.ndarray | float,
    eps_out: float,
    lo: float = 0.0,
    at_most: bool = False,
    extra: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = P.shape[1]
    total = row_sums(P)
    mass = np.abs(P).sum(axis=1) + m * abs(lo)
    tol = output_tolerance(m, target, mass, eps_out) + extra
    excess = total - target if at_most else np.abs(total - target)
    return excess <= tol, total, tol


def _result(ok: np.ndarray, reasons: dict[str, np.ndarray]) -> tuple[np.ndarray, list[str]]:
    """Combine named per-row conditions into (ok, reason per failing row)."""
    all_ok = ok.copy()
    for cond in reasons.values():
        all_ok &= cond
    why = []
    for i in np.flatnonzero(~all_ok):
        why.append(", ".join(name for name, cond in reasons.items() if not cond[i]) or "not finite")
    return all_ok, why


def _kkt_tol(m: int, scale: np.ndarray, P: np.ndarray, eps_out: float, sum_tol: np.ndarray) -> np.ndarray:
    # The differences x_i − p_i round by ε|x_i|, the stored entries by ε_out|p_i|, and the
    # threshold may be off by the sum's own tolerance (spread over at least one entry).
    return 4.0 * EPS * scale + 2.0 * eps_out * np.abs(P).max(axis=1) + sum_tol + 16.0 * (m + 4) * SUBNORMAL


def clip_problem(
    X: np.ndarray, P: np.ndarray, lo: float, hi: float, target: float, eps_out: float, dtype: type
) -> tuple[np.ndarray, list[str]]:
    """p = clip(x − t, lo, hi) with Σp = target (simplex, knapsack, capped simplex)."""
    m = X.shape[1]
    with np.errstate(over="ignore"):
        lo_out, hi_out = float(dtype(lo)), float(dtype(hi)) if math.isfinite(hi) else hi
    finite = np.isfinite(P).all(axis=1)
    bounds = (P >= lo_out).all(axis=1) & (P <= hi_out).all(axis=1)
    sum_ok, _, tol = _sum_ok(P, target, eps_out, lo=lo)
    low, high, scale = threshold_interval(X, P, lo, hi, lo_out, hi_out)
    kkt = low <= high + _kkt_tol(m, scale, P, eps_out, tol)
    return _result(finite, {"bounds": bounds, "sum": sum_ok, "threshold form": kkt})


def simplex_inequality(
    X: np.ndarray, P: np.ndarray, r: float, eps_out: float, dtype: type
) -> tuple[np.ndarray, list[str]]:
    """p = (x − t)_+ with t ≥ 0, Σp ≤ r, and t = 0 unless Σp = r."""
    return bias_box(X, P, math.inf, r, 0.0, eps_out, dtype)


def bias_box(
    X: np.ndarray, P: np.ndarray, hi: float, r: float, rho: float, eps_out: float, dtype: type
) -> tuple[np.ndarray, list[str]]:
    """box_simplex: p = clip(x − t, 0, hi), t = ρs + λ, λ ≥ 0, λ(s − r) = 0, s = Σp ≤ r."""
    m = X.shape[1]
    with np.errstate(over="ignore"):
        hi_out = float(dtype(hi)) if math.isfinite(hi) else hi
    finite = np.isfinite(P).all(axis=1)
    bounds = (P >= 0.0).all(axis=1) & (P <= hi_out).all(axis=1)
    at_r, s, tol = _sum_ok(P, r, eps_out)
    below, _, _ = _sum_ok(P, r, eps_out, at_most=True)
    low, high, scale = threshold_interval(X, P, 0.0, hi, 0.0, hi_out)
    # ρs carries ρ times the rounding of the stored entries.
    ttol = _kkt_tol(m, scale + rho * np.abs(s), P, eps_out, tol * max(rho, 1.0)) + rho * eps_out * np.abs(P).sum(axis=1)
    form = low <= high + ttol
    bias = rho * s
    # λ = t − ρs ≥ 0 for some t in [low, high]; λ = 0 (ρs in the interval) unless s = r.
    multiplier = np.where(at_r, high + ttol >= bias, (low - ttol <= bias) & (bias <= high + ttol))
    return _result(finite, {"bounds": bounds, "sum <= r": below, "threshold form": form, "multiplier": multiplier})


def cone_problem(
    X: np.ndarray, P: np.ndarray, k: int, rho: float, r: float | None, eps_out: float, dtype: type
) -> tuple[np.ndarray, list[str]]:
    """topk_cone (r None) and topk_simplex: p = clip(x − t, 0, s/k), s = Σp (≤ r), with
    g(t) = t − ρs + (1/k) Σ_U (x_i − t − s/k) = λ, λ = 0 (cone, or Σp < r) or λ ≥ 0
    (Σp = r); p = 0 iff the k largest entries sum to ≤ 0 (Lemma 4)."""
    n, m = X.shape
    finite = np.isfinite(P).all(axis=1)
    s = row_sums(P)
    mass = np.abs(P).sum(axis=1)
    tol = output_tolerance(m, s, mass, eps_out)
    pmax = P.max(axis=1)
    cap_ok = (P >= 0.0).all(axis=1) & (pmax <= s / k + tol / k + eps_out * pmax)
    if r is not None:
        below = s - r <= output_tolerance(m, r, mass, eps_out)
        at_r = np.abs(s - r) <= output_tolerance(m, r, mass, eps_out)
    else:
        below = np.ones(n, dtype=bool)
        at_r = np.zeros(n, dtype=bool)
    # Entries at the cap equal the row's maximum exactly (they are all written as the cap).
    cap = pmax
    full = pmax >= s / k - tol / k - 2.0 * eps_out * pmax
    at_cap = (P == pmax[:, None]) & full[:, None] & (pmax[:, None] > 0)
    low, high, scale = threshold_interval(X, P, 0.0, np.where(full, cap, np.inf), 0.0, np.where(full, cap, np.inf))
    ttol = _kkt_tol(m, scale, P, eps_out, tol)
    form = low <= high + ttol
    u = at_cap.sum(axis=1)
    sum_u = np.where(at_cap, X, 0.0).sum(axis=1)
    abs_u = np.where(at_cap, np.abs(X), 0.0).sum(axis=1)
    slope = 1.0 - u / k

    def g(t: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            return t - rho * s + (sum_u - u * t - u * cap) / k

    gtol = (
        8.0 * (m + 4.0) * EPS * (np.abs(low) + np.abs(high) + rho * s + (abs_u + u * cap) / k)
        + ttol * (1 + u / k)
        + rho * (tol + eps_out * mass)
    )
    lo_t = np.where(np.isfinite(low), low - ttol, -1e308)
    hi_t = np.where(np.isfinite(high), high + ttol, 1e308)
    g_lo, g_hi = g(lo_t), g(hi_t)
    # g is non-decreasing in t (slope 1 − u/k ≥ 0): a root (or λ ≥ 0) in [lo_t, hi_t].
    root = (g_lo <= gtol) & (g_hi >= -gtol)
    nonneg = g_hi >= -gtol
    multiplier = np.where(at_r, nonneg, root)
    # p = 0: Lemma 4 instead (the k largest entries sum to ≤ 0, up to their rounding).
    zero = s == 0.0
    topk = -np.sort(-X, axis=1)[:, :k]
    lemma4 = topk.sum(axis=1) <= 4.0 * (k + 2) * EPS * np.abs(topk).sum(axis=1)
    if r is not None:
        lemma4 |= r == 0.0
    multiplier = np.where(zero, lemma4, multiplier | (slope < 0))
    form = np.where(zero, True, form)
    return _result(
        finite, {"cap p_i <= sum/k": cap_ok, "sum <= r": below, "threshold form": form, "multiplier": multiplier}
    )


def entropy_problem(
    X: np.ndarray, P: np.ndarray, k: float, eps_out: float, dtype: type
) -> tuple[np.ndarray, list[str]]:
    """p = min(1, exp(x − c)), Σp = k; the library's bound adds the exponent's rounding
    (``entropy_tolerance`` in ``capped_simplex_entropy.rs``)."""
    n, m = X.shape
    finite = np.isfinite(P).all(axis=1)
    bounds = (P >= 0.0).all(axis=1) & (P <= 1.0).all(axis=1)
    # Subnormal entries have lost their relative precision: only normal ones fix c.
    free = (P >= float(np.finfo(dtype).tiny)) & (P < 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.where(P > 0, np.log(np.where(P > 0, P, 1.0)), -np.inf)
        c = X - logp
    c_min, c_max = _masked_min(c, free), _masked_max(c, free)
    entropy = -np.where(P > 0, P * np.where(P > 0, logp, 0.0), 0.0).sum(axis=1)
    c_abs = np.where(np.isfinite(c_max), np.abs(c_max), 0.0)
    sum_extra = 2.0 * EPS * (entropy + k * (2.0 * c_abs + m + 4.0))
    sum_ok, _, _ = _sum_ok(P, k, eps_out, extra=sum_extra)
    # c_i common to the free entries, to the rounding of x_i − log p_i and of p_i itself.
    ctol = 4.0 * EPS * _masked_max(np.abs(X) + np.abs(logp), free).clip(0.0) + 2.0 * eps_out + 16.0 * (m + 4.0) * EPS
    has_free = free.any(axis=1)
    common = ~has_free | (c_max - c_min <= ctol)
    # Capped entries lie at or above c; zero ones underflowed (x − c below the log of the
    # smallest positive number of the dtype).
    c_ref = np.where(has_free, c_min, _masked_min(X, P >= 1.0))
    capped = P >= 1.0
    capped_ok = _masked_min(X, capped) >= c_ref - ctol - 4 * EPS * np.abs(c_ref)
    small = (P < float(np.finfo(dtype).tiny)) & (P < 1.0)
    zero_ok = _masked_max(X, small) - np.where(has_free, c_max, c_ref) <= math.log(float(np.finfo(dtype).tiny)) + 1.0
    zero_ok |= ~small.any(axis=1)
    return _result(
        finite,
        {"bounds": bounds, "sum": sum_ok, "common c": common, "capped above c": capped_ok, "zeros underflow": zero_ok},
    )


def rankmax_problem(
    Z: np.ndarray, P: np.ndarray, y: np.ndarray, k: int, eta: float, eps_out: float, dtype: type
) -> tuple[np.ndarray, list[str]]:
    """Rankmax (Kong et al. Definition 4): p = clip(α(z − μ), 0, 1), Σp = k, μ = min(z_y, z_[k]) − η."""
    n, m = Z.shape
    rows = np.arange(n)
    finite = np.isfinite(P).all(axis=1)
    bounds = (P >= 0.0).all(axis=1) & (P <= 1.0).all(axis=1)
    zk = -np.partition(-Z, k - 1, axis=1)[:, k - 1]
    anchor = np.minimum(Z[rows, y], zk)
    with np.errstate(over="ignore", invalid="ignore"):
        excess = (Z - anchor[:, None]) + eta
        free = (P > 0.0) & (P < 1.0)
        alpha = np.where(free, P / np.where(excess > 0, excess, 1.0), np.nan)
    a_min, a_max = _masked_min(alpha, free), _masked_max(alpha, free)
    spread_terms = np.where(excess > 0, np.abs(Z - anchor[:, None]), 0.0)
    ex_tol = 4.0 * EPS * (spread_terms + np.abs(excess)) / np.where(excess > 0, excess, 1.0)
    rel = 16.0 * (m + 4.0) * EPS + 2.0 * eps_out + 2.0 * _masked_max(ex_tol, free).clip(0.0)
    has_free = free.any(axis=1)
    common = ~has_free | (a_max - a_min <= rel * a_max)
    a_ref = np.where(has_free, a_max, np.inf)
    # A zero entry is outside the support, or its exact value α(z_i − μ) ≤ k·excess_i/S
    # (S the uncapped mass) underflows float64: then 0 is its correctly rounded value
    # (η = 1e-309 next to scores 1e200 apart leaves even the label at 0).
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mass = np.where((excess > 0) & (P < 1.0), excess, 0.0).sum(axis=1)
        underflow = (k * excess / mass[:, None] < 2.0 * SUBNORMAL) | (excess <= 0)
    zero = (P == 0.0) & ~underflow
    support_ok = _masked_max(excess, zero) <= 4.0 * EPS * _masked_max(spread_terms + eta, zero).clip(0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        capped_ok = _masked_min(a_ref[:, None] * excess, P >= 1.0) >= 1.0 - rel
    label_ok = (P[rows, y] > 0.0) | underflow[rows, y]
    extra = 2.0 * EPS * np.where(np.isfinite(a_ref), a_ref, 0.0) * spread_terms.sum(axis=1)
    sum_ok, _, _ = _sum_ok(P, float(k), eps_out, extra=extra)
    return _result(
        finite,
        {
            "bounds": bounds,
            "sum": sum_ok,
            "common alpha": common,
            "support": support_ok,
            "capped": capped_ok,
            "label in support": label_ok,
        },
    )
