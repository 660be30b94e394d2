"""Fuzz harness for ``toprank.projections`` and ``toprank.losses``.

Seeded adversarial generators (constant, tied, near-tied, ulp-tied, wide-span
1e-300..1e300, ±1e12 outliers, denormal, huge, the long rows of libsdca's projection
tests) produce batches of rows of length m = 1 … 100,000 in float64 and float32, with
random k, r, ρ, bounds. Every batch goes through the batched API (and, where a row
raises, the single-row API); every output row is checked by ``checks.py`` (feasibility
within the library's proved rounding bound, and the KKT threshold form of each
problem), and a sample of small rows against the generic QP solutions of
``tests/qp_reference.py``.

``NoSolutionError`` is accepted only for rows this harness classifies as unresolvable
(a parameter or the answer's entries subnormal or overflowing the dtype, or a row whose
largest entry exceeds the answer's scale by more than float64 resolves: m·ε·max|x| >
1e-4·scale); any other exception, or a failed check, is a failure printed with a
minimal reproducer (the single row and the call).

    python tests/fuzz/fuzz_projections.py --rows 10000000          # the long run
    python tests/fuzz/fuzz_projections.py --rows 20000 --seed 1    # a quick one
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import checks  # noqa: E402
import qp_reference as ref  # noqa: E402

from toprank import losses as L  # noqa: E402
from toprank import projections as P  # noqa: E402
from toprank.exceptions import NoSolutionError  # noqa: E402

EPS = checks.EPS
TINY = float(np.finfo(np.float64).tiny)

KINDS = ("normal", "constant", "tied", "near_tied", "ulp_tied", "wide", "outlier", "denormal", "huge", "libsdca")
# The conditions of checks.py that are constraints of the set (the rest are optimality).
FEASIBILITY = {"bounds", "sum", "sum <= r", "cap p_i <= sum/k", "not finite"}
# Kinds whose rows are well conditioned (never allowed to raise, compared with the QP).
WELL = {"normal", "constant", "tied", "near_tied", "ulp_tied", "libsdca"}


# --------------------------------------------------------------------------- rows


def make_rows(rng: np.random.Generator, kind: str, n: int, m: int) -> np.ndarray:
    """n rows of length m of a kind (float64)."""
    scale = float(10.0 ** rng.uniform(-6, 6))
    if kind == "normal":
        return rng.normal(size=(n, m)) * scale
    if kind == "constant":
        return np.repeat(rng.choice([-1.0, 1.0], size=(n, 1)) * rng.uniform(0.05, 1.0, size=(n, 1)) * scale, m, axis=1)
    if kind in ("tied", "near_tied", "ulp_tied"):
        levels = rng.normal(size=(n, 3)) * scale
        X = np.take_along_axis(levels, rng.integers(0, int(rng.integers(1, 4)), size=(n, m)), axis=1)
        if kind == "near_tied":
            X = X * (1.0 + 10.0 ** rng.uniform(-15, -11) * rng.normal(size=(n, m)))
        elif kind == "ulp_tied":
            X = X + np.spacing(X) * rng.integers(-4, 5, size=(n, m))
        return X
    if kind == "wide":
        return rng.choice([-1.0, 1.0], size=(n, m)) * 10.0 ** rng.uniform(-300, 300, size=(n, m))
    if kind == "outlier":
        X = rng.normal(size=(n, m))
        X[rng.random(size=(n, m)) < min(0.5, 2.0 / m)] = rng.choice([-1e12, 1e12])
        return X
    if kind == "denormal":
        X = rng.normal(size=(n, m)) * 1e-310
        X[rng.random(size=(n, m)) < 0.2] = 0.0
        return X
    if kind == "huge":
        return rng.normal(size=(n, m)) * 10.0 ** rng.uniform(290, 307)
    if kind == "libsdca":
        # libsdca's long projection test rows: two large entries, a short slope, a long
        # constant tail (a solvable problem the prefix sums of absolute values lost).
        X = np.full((n, m), 1.9e-4)
        X[:, :2] = 0.548
        j = min(38, max(m - 2, 0))
        if j:
            X[:, 2 : 2 + j] = np.linspace(1e-3, 5e-4, j)
        return X * rng.uniform(0.5, 2.0, size=(n, 1))
    raise AssertionError(kind)


def as_dtype(X: np.ndarray, dtype: type) -> np.ndarray:
    if dtype is np.float32:
        big = float(np.finfo(np.float32).max)
        return np.clip(X, -big, big).astype(np.float32)
    return X


# ----------------------------------------------------------------------- problems


@dataclass
class Problem:
    name: str
    params: Callable[[np.random.Generator, int, float], dict[str, Any]]
    call: Callable[..., Any]
    check: Callable[..., tuple[np.ndarray, list[str]]]
    scale: Callable[[dict[str, Any], np.ndarray], np.ndarray]  # the answer's scale, per row
    reference: Callable[..., np.ndarray] | None = None
    min_m: int = 1


def _radius(rng: np.random.Generator, size: float) -> float:
    u = rng.random()
    if u < 0.03:
        return float(10.0 ** rng.uniform(-320, -308))  # subnormal: must raise, naming r
    if u < 0.06:
        return float(10.0 ** rng.uniform(300, 308))
    return min(float(size * 10.0 ** rng.uniform(-3, 3)), 1e308)


def _rho(rng: np.random.Generator) -> float:
    return float(rng.choice([0.0, 0.5, 1.0, 10.0 ** rng.uniform(-3, 3)]))


def _k(rng: np.random.Generator, m: int) -> int:
    return int(rng.choice([1, min(5, m), min(50, m), max(m - 1, 1), m, rng.integers(1, m + 1)]))


def _top(X: np.ndarray) -> np.ndarray:
    return np.abs(X).max(axis=1)


def _simplex_check(X, Pm, p, eps, dt):
    if p["inequality"]:
        return checks.simplex_inequality(X, Pm, p["r"], eps, dt)
    return checks.clip_problem(X, Pm, 0.0, math.inf, p["r"], eps, dt)


def _row_scale_x(X: np.ndarray, k: int) -> np.ndarray:
    topk = -np.sort(-X, axis=1)[:, :k]
    return np.maximum(np.abs(topk).max(axis=1), 1e-300)


PROBLEMS: list[Problem] = [
    Problem(
        "simplex",
        lambda rng, m, s: {"r": _radius(rng, s), "inequality": bool(rng.random() < 0.3)},
        lambda X, p: P.simplex(X, p["r"], p["inequality"]),
        _simplex_check,
        lambda p, X: np.full(X.shape[0], p["r"]),
        lambda x, p: ref.simplex(x, p["r"], p["inequality"]),
    ),
    Problem(
        "sparsemax",
        lambda rng, m, s: {},
        lambda X, p: P.sparsemax(X),
        lambda X, Pm, p, eps, dt: checks.clip_problem(X, Pm, 0.0, math.inf, 1.0, eps, dt),
        lambda p, X: np.ones(X.shape[0]),
        lambda x, p: ref.simplex(x, 1.0),
    ),
    Problem(
        "knapsack",
        # Bounds of the rows' size, kept below 1e300/m so that m·hi stays finite.
        lambda rng, m, s: (
            lambda s, f: (lambda lo, w: {"lo": lo, "hi": lo + w, "r": m * (lo + f * w)})(
                float(s * rng.uniform(-1, 0.5)), float(s * 10.0 ** rng.uniform(-3, 1))
            )
        )(min(s, 1e299 / m), float(rng.uniform(0, 1))),
        lambda X, p: P.knapsack(X, p["lo"], p["hi"], p["r"]),
        lambda X, Pm, p, eps, dt: checks.clip_problem(X, Pm, p["lo"], p["hi"], p["r"], eps, dt),
        lambda p, X: np.full(X.shape[0], max(abs(p["hi"] - p["lo"]), 1e-300)),
        lambda x, p: ref.knapsack(x, p["lo"], p["hi"], p["r"]),
    ),
    Problem(
        "topk_cone",
        lambda rng, m, s: {"k": _k(rng, m), "rho": _rho(rng)},
        lambda X, p: P.topk_cone(X, p["k"], p["rho"]),
        lambda X, Pm, p, eps, dt: checks.cone_problem(X, Pm, p["k"], p["rho"], None, eps, dt),
        lambda p, X: _row_scale_x(X, p["k"]) / (1.0 + p["rho"] * p["k"]),
        lambda x, p: ref.topk_cone(x, p["k"], p["rho"]),
    ),
    Problem(
        "topk_simplex",
        lambda rng, m, s: {"k": _k(rng, m), "r": _radius(rng, s), "rho": _rho(rng)},
        lambda X, p: P.topk_simplex(X, p["k"], p["r"], p["rho"]),
        lambda X, Pm, p, eps, dt: checks.cone_problem(X, Pm, p["k"], p["rho"], p["r"], eps, dt),
        lambda p, X: np.minimum(p["r"], _row_scale_x(X, p["k"]) / (1.0 + p["rho"] * p["k"])) / p["k"],
        lambda x, p: ref.topk_simplex(x, p["k"], p["r"], p["rho"]),
    ),
    Problem(
        "box_simplex",
        lambda rng, m, s: (lambda k, r: {"hi": r / k, "r": r, "rho": _rho(rng)})(_k(rng, m), _radius(rng, s)),
        lambda X, p: P.box_simplex(X, p["hi"], p["r"], p["rho"]),
        lambda X, Pm, p, eps, dt: checks.bias_box(X, Pm, p["hi"], p["r"], p["rho"], eps, dt),
        lambda p, X: np.full(X.shape[0], p["hi"]),
        lambda x, p: ref.box_simplex(x, p["hi"], p["r"], p["rho"]),
    ),
    Problem(
        "capped_simplex",
        lambda rng, m, s: {"k": float(min(m, rng.choice([1.0, 0.5, 2.5, rng.uniform(0, m) or 0.5, m])))},
        lambda X, p: P.capped_simplex(X, p["k"]),
        lambda X, Pm, p, eps, dt: checks.clip_problem(X, Pm, 0.0, 1.0, p["k"], eps, dt),
        lambda p, X: np.full(X.shape[0], min(1.0, p["k"])),
        lambda x, p: ref.capped_simplex(x, p["k"]),
    ),
    Problem(
        "capped_simplex_entropy",
        lambda rng, m, s: {"k": float(min(m, rng.choice([1.0, 0.5, 2.5, rng.uniform(0, m) or 0.5, m])))},
        lambda X, p: P.capped_simplex_entropy(X, p["k"]),
        lambda X, Pm, p, eps, dt: checks.entropy_problem(X, Pm, p["k"], eps, dt),
        lambda p, X: np.full(X.shape[0], 1.0),
    ),
    Problem(
        "rankmax",
        lambda rng, m, s: {"k": int(rng.integers(1, m)), "eta": _radius(rng, s)},
        lambda X, p: P.rankmax(X, p["y"], p["k"], p["eta"]),
        lambda X, Pm, p, eps, dt: checks.rankmax_problem(X, Pm, p["y"], p["k"], p["eta"], eps, dt),
        lambda p, X: np.full(X.shape[0], p["eta"]),
        min_m=2,
    ),
]


# -------------------------------------------------------------------------- losses


def check_losses(rng: np.random.Generator, X: np.ndarray, dtype: type) -> tuple[np.ndarray, list[str], str]:
    """One loss per call: the gradient's probability part must pass its projection's
    check, the value its closed form."""
    n, m = X.shape
    y = rng.integers(0, m, size=n)
    which = str(rng.choice(["softmax_loss", "sparsemax_loss", "rankmax_loss", "topk_hinge"]))
    Xd = as_dtype(X, dtype)
    X64 = Xd.astype(np.float64)
    eps = float(np.finfo(dtype).eps)
    rows = np.arange(n)
    if which == "softmax_loss":
        loss, grad = L.softmax_loss(Xd, y)
        q = grad.astype(np.float64)
        q[rows, y] += 1.0
        top = X64.max(axis=1, keepdims=True)
        e = np.exp(X64 - top)
        ref_q = e / e.sum(axis=1, keepdims=True)
        ref_loss = top[:, 0] + np.log(e.sum(axis=1)) - X64[rows, y]
        ok = np.abs(q - ref_q).max(axis=1) <= 4 * eps + 8 * (m + 4) * EPS
        ok &= np.abs(np.asarray(loss, np.float64) - ref_loss) <= 4 * eps * np.abs(ref_loss) + 1e-12 * (
            1 + np.abs(top[:, 0]) + np.abs(X64[rows, y])
        )
        return ok, _loss_calls(which, X64, y, ~ok, "softmax mismatch", dtype), which
    if which == "sparsemax_loss":
        loss, grad = L.sparsemax_loss(Xd, y)
        q = grad.astype(np.float64)
        q[rows, y] += 1.0
        ok, why = checks.clip_problem(X64, q, 0.0, math.inf, 1.0, eps + EPS, dtype)
        zy = X64[rows, y]
        value = (q * (X64 - zy[:, None])).sum(axis=1) - 0.5 * (q * q).sum(axis=1) + 0.5
        spread = (q * np.abs(X64 - zy[:, None])).sum(axis=1)
        good = np.abs(np.asarray(loss, np.float64) - np.maximum(value, 0.0)) <= 8 * (m + 4) * (EPS + eps) * (1 + spread)
        return ok & good, _loss_calls(which, X64, y, ~(ok & good), "sparsemax projection or loss value", dtype), which
    if which == "rankmax_loss":
        if m < 2:
            return np.ones(n, bool), [], which
        k = int(rng.integers(1, m))
        loss, grad = L.rankmax_loss(Xd, y, k)
        p = P.rankmax(Xd, y, k).astype(np.float64)
        ref_loss = -np.log(np.minimum(1.0, p[rows, y]))
        # The loss is stored in the input dtype.
        ok = np.abs(np.asarray(loss, np.float64) - ref_loss) <= 1e-9 * (1 + np.abs(ref_loss)) + 4 * eps * (
            1 + np.abs(ref_loss)
        )
        g = grad.astype(np.float64)
        ok &= np.abs(g.sum(axis=1)) <= 8 * (m + 4) * (EPS + eps) * np.abs(g).sum(axis=1) + 1e-300
        return ok, _loss_calls(which, X64, y, ~ok, "rankmax loss/gradient", dtype, k=k), which
    if m < 2:
        return np.ones(n, bool), [], which
    k = int(rng.integers(1, m))
    variant = str(rng.choice(["alpha", "beta"]))
    loss = np.asarray(L.topk_hinge(Xd, y, k, variant)[0], np.float64)
    h = (X64 - X64[rows, y][:, None]) + 1.0
    h[rows, y] = -np.inf
    top = -np.sort(-h, axis=1)[:, :k]
    ref_loss = (np.maximum(top.sum(axis=1), 0.0) if variant == "alpha" else np.maximum(top, 0.0).sum(axis=1)) / k
    ok = np.abs(loss - ref_loss) <= 8 * (k + 4) * EPS * (np.abs(top).sum(axis=1) / k + 1) + 4 * eps * np.abs(ref_loss)
    return ok, _loss_calls(which, X64, y, ~ok, f"topk_hinge {variant}", dtype, k=k, variant=variant), which


def _loss_calls(
    name: str, X: np.ndarray, y: np.ndarray, failed: np.ndarray, reason: str, dtype: type, **args: Any
) -> list[str]:
    """One reproducer per failed row: the reason and the call that shows it."""
    calls = []
    for i in np.flatnonzero(failed):
        row = X[i]
        data = (
            f"np.array([{row.tolist()!r}], dtype=np.{dtype.__name__})"
            if row.size <= 100
            else f"<m={row.size}: max {row.max()!r}, min {row.min()!r}>"
        )
        extra = "".join(f", {key}={value!r}" for key, value in args.items())
        calls.append(f"{reason}: toprank.losses.{name}({data}, np.array([{int(y[i])}]){extra})")
    return calls


# ---------------------------------------------------------------------- the driver


@dataclass
class Stats:
    rows: Counter
    raised: Counter
    referenced: Counter
    failures: list[str]


def unresolvable(problem: Problem, X: np.ndarray, params: dict[str, Any], dtype: type) -> np.ndarray:
    """Rows whose answer float64 (and the output dtype) cannot resolve."""
    n, m = X.shape
    info = np.finfo(dtype)
    scale = np.asarray(problem.scale(params, X), dtype=np.float64)
    values = [abs(v) for k, v in params.items() if isinstance(v, float) and v != 0.0]
    bad = np.zeros(n, dtype=bool)
    if any(v < TINY for v in values) or any(v > 1e300 for v in values):
        bad[:] = True
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        # The answer's entries subnormal, or overflowing the output dtype.
        bad |= scale / m < float(info.tiny) * 1e3
        bad |= scale * m > float(info.max) * 1e-3
        top = _top(X)
        bad |= top > float(info.max) * 1e-3
        bad |= m * EPS * top > 1e-4 * scale
        # Rows containing subnormal entries, or differences beyond float64's range.
        nonzero = np.abs(X) > 0
        bad |= (nonzero & (np.abs(X) < TINY)).any(axis=1)
        bad |= (X.max(axis=1) - X.min(axis=1)) > 1e300
    return bad


def reproducer(problem: Problem, row: np.ndarray, params: dict[str, Any], dtype: type, extra: str = "") -> str:
    args = {k: v for k, v in params.items() if k != "y"}
    y = ""
    if "y" in params:
        y = f", y={int(np.asarray(params['y']).ravel()[0])}"
    if row.size <= 100:
        data = f"np.array({row.tolist()!r}, dtype=np.{dtype.__name__})"
    else:
        values, counts = np.unique(row, return_counts=True)
        data = (
            f"<m={row.size}: {len(values)} distinct values, e.g. {values[:3].tolist()} ×{counts[:3].tolist()}; "
            f"max {row.max()!r}, min {row.min()!r}>"
        )
    return f"toprank.projections.{problem.name}({data}{y}, **{args!r})  # {extra}"


def run_batch(
    rng: np.random.Generator,
    problem: Problem,
    kind: str,
    n: int,
    m: int,
    dtype: type,
    stats: Stats,
    reference_rows: int,
) -> None:
    X = as_dtype(make_rows(rng, kind, n, m), dtype)
    X64 = X.astype(np.float64)
    size = float(np.median(np.abs(X64))) or 1.0
    params = problem.params(rng, m, size)
    if problem.name == "rankmax":
        params["y"] = rng.integers(0, m, size=n)
    key = f"{problem.name}/{kind}/{dtype.__name__}"
    eps = float(np.finfo(dtype).eps)
    allowed = unresolvable(problem, X64, params, dtype)
    try:
        out = problem.call(X, params)
        raised = np.zeros(n, dtype=bool)
    except NoSolutionError:
        # Find the rows that raise, one at a time.
        out = np.zeros_like(X)
        raised = np.zeros(n, dtype=bool)
        for i in range(n):
            p1 = dict(params)
            if "y" in p1:
                p1["y"] = int(params["y"][i])
            try:
                out[i] = problem.call(X[i], p1)
            except NoSolutionError as err:
                raised[i] = True
                if not allowed[i]:
                    stats.failures.append(
                        f"{key}: NoSolutionError on a resolvable row: {err}\n    "
                        + reproducer(problem, X64[i], p1, dtype)
                    )
            except Exception as err:  # noqa: BLE001 — any other error is a finding
                raised[i] = True
                stats.failures.append(
                    f"{key}: {type(err).__name__}: {err}\n    " + reproducer(problem, X64[i], p1, dtype)
                )
    except Exception as err:  # noqa: BLE001
        stats.failures.append(
            f"{key}: {type(err).__name__} from the batch: {err}\n    " + reproducer(problem, X64[0], params, dtype)
        )
        stats.rows[key] += n
        return
    if out.dtype != X.dtype or out.shape != X.shape:
        stats.failures.append(f"{key}: output dtype/shape {out.dtype}{out.shape} for input {X.dtype}{X.shape}")
    stats.rows[key] += n
    stats.raised[key] += int(raised.sum())
    keep = ~raised
    if not keep.any():
        return
    ok, why = problem.check(
        X64[keep],
        out[keep].astype(np.float64),
        params if "y" not in params else {**params, "y": params["y"][keep]},
        eps,
        dtype,
    )
    # Rows the harness calls unresolvable (a subnormal parameter, entries beyond what
    # float64 resolves) must still be feasible; their optimality is not resolved.
    failed = [
        (i, reason)
        for i, reason in zip(np.flatnonzero(keep)[~ok], why)
        if not allowed[i] or any(r in FEASIBILITY for r in reason.split(", "))
    ]
    for i, reason in failed[:3]:
        p1 = dict(params)
        if "y" in p1:
            p1["y"] = int(params["y"][i])
        stats.failures.append(
            f"{key}: {reason}\n    " + reproducer(problem, X64[i], p1, dtype) + f"\n    got {out[i].tolist()[:12]!r}"
        )
    # A sample of small, well-conditioned rows against the generic QP.
    if problem.reference is not None and kind in WELL and m <= 12 and dtype is np.float64:
        for i in np.flatnonzero(keep & ~allowed)[:reference_rows]:
            p1 = dict(params)
            if any(isinstance(v, float) and (abs(v) < 1e-200 or abs(v) > 1e200) for v in p1.values()):
                continue
            try:
                expected = problem.reference(X64[i], p1)
            except ref.ReferenceFailure:
                continue
            sigma = max(float(np.abs(X64[i]).max()), *(abs(v) for v in p1.values() if isinstance(v, float)), 1e-300)
            if problem.name in ("capped_simplex",):
                sigma = 1.0
            err = float(np.abs(out[i] - expected).max())
            stats.referenced[key] += 1
            if not err <= 1e-7 * sigma:
                stats.failures.append(
                    f"{key}: differs from the QP by {err:.3e} (σ = {sigma:.3e})\n    "
                    + reproducer(problem, X64[i], p1, dtype)
                    + f"\n    got {out[i].tolist()!r}\n    QP  {expected.tolist()!r}"
                )


def pick_m(rng: np.random.Generator, max_m: int) -> int:
    u = rng.random()
    if u < 0.6:
        m = int(rng.integers(1, 17))
    elif u < 0.9:
        m = int(rng.integers(17, 257))
    elif u < 0.985:
        m = int(10 ** rng.uniform(math.log10(257), 4))
    else:
        m = int(rng.choice([1_000, 10_000, 100_000, int(10 ** rng.uniform(4, 5))]))
    return max(1, min(m, max_m))


def fuzz(
    rows: int,
    seed: int,
    max_m: int = 100_000,
    reference_rows: int = 2,
    verbose: bool = True,
    elements_per_batch: int = 400_000,
) -> Stats:
    """Runs until `rows` rows have been processed; returns the counts and failures."""
    rng = np.random.default_rng(seed)
    stats = Stats(Counter(), Counter(), Counter(), [])
    done = 0
    start = time.monotonic()
    last = start
    while done < rows:
        m = pick_m(rng, max_m)
        n = max(1, min(rows - done, 1024, elements_per_batch // m))
        kind = str(rng.choice(KINDS))
        dtype = np.float32 if rng.random() < 0.25 else np.float64
        if rng.random() < 0.12:
            X = make_rows(rng, kind, n, max(m, 1))
            state = rng.bit_generator.state
            try:
                _, why, which = check_losses(rng, X, dtype)
            except NoSolutionError as err:
                # Allowed only where the scores' differences overflow float64.
                wide = as_dtype(X, dtype).astype(np.float64)
                span = wide.max(axis=1) - wide.min(axis=1)
                limit = 1e-3 * float(np.finfo(dtype).max)
                which, why = "loss", []
                stats.raised[f"{which}/{kind}/{dtype.__name__}"] += n
                if not (np.abs(wide).max() > limit or (span > limit).any()):
                    stats.failures.append(
                        f"{which}/{kind}: NoSolutionError on finite differences: {err} (rng state {state!r})"
                    )
            except Exception as err:  # noqa: BLE001
                which, why = "loss", []
                stats.failures.append(f"loss/{kind}: {type(err).__name__}: {err} (rng state {state!r})")
            key = f"{which}/{kind}/{dtype.__name__}"
            stats.rows[key] += n
            stats.failures.extend(f"{key}: {call}" for call in why[:3])
        else:
            problem = PROBLEMS[int(rng.integers(len(PROBLEMS)))]
            if m < problem.min_m:
                m = problem.min_m
            run_batch(rng, problem, kind, n, m, dtype, stats, reference_rows)
        done += n
        if verbose and time.monotonic() - last > 30:
            last = time.monotonic()
            print(f"  {done:,} rows, {len(stats.failures)} failures, {last - start:.0f} s", flush=True)
    return stats


def summary(stats: Stats) -> str:
    by_problem: Counter = Counter()
    by_kind: Counter = Counter()
    raised: Counter = Counter()
    for key, n in stats.rows.items():
        name, kind, _ = key.split("/")
        by_problem[name] += n
        by_kind[kind] += n
    for key, n in stats.raised.items():
        raised[key.split("/")[0]] += n
    lines = [
        f"rows: {sum(stats.rows.values()):,}  QP-checked rows: {sum(stats.referenced.values()):,}  "
        f"failures: {len(stats.failures)}",
        "per function (rows / NoSolutionError on unresolvable rows):",
    ]
    for name, n in sorted(by_problem.items()):
        lines.append(f"  {name:24s} {n:>12,}  {raised[name]:>9,}")
    lines.append("per generator (rows):")
    for kind, n in sorted(by_kind.items()):
        lines.append(f"  {kind:24s} {n:>12,}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-m", type=int, default=100_000)
    parser.add_argument("--reference-rows", type=int, default=4, help="QP-checked rows per small batch")
    args = parser.parse_args(argv)
    start = time.monotonic()
    stats = fuzz(args.rows, args.seed, args.max_m, args.reference_rows)
    print(f"seed {args.seed}, {time.monotonic() - start:.0f} s")
    print(summary(stats))
    for failure in stats.failures[:40]:
        print("FAIL", failure)
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
