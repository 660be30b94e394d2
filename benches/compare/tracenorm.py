"""Trace-norm multinomial logistic regression: toprank's rank-one descent against a
proximal-gradient baseline with an exact SVD prox, and the cost of a regularisation path.

    python benches/compare/tracenorm.py --write BENCHMARKS.md [--quick]

The baseline the issue names, lightning's ``FistaClassifier(loss="log", penalty="trace")``,
does not install here: PyPI has only its source distribution for Python 3.11, and the
build fails (it needs an old Cython/NumPy toolchain). So the other side is what a user
would write with NumPy/SciPy instead, the same algorithm as lightning's: FISTA on
J(W, b) = λ1‖W‖_σ,1 + λ2‖W‖²_F + R_n(XW + 1bᵀ) with backtracking and a full SVD of the
d × m matrix per trial step, its products through BLAS.

Data: X (n × d) standard normal scaled by 3/√d, classes argmax(X W* + Gumbel noise) for a
rank-5 W* (d × m), seeded. Both sides single-threaded (BLAS pools pinned to one thread,
``n_jobs=1``).

* **(a) Time to the same objective** — toprank fits to ``tol``; the baseline runs until
  its objective is within 1e-6 (relative) of toprank's, or the time cap. Both objectives
  are recomputed here in NumPy from each side's W and b. Target: baseline / toprank ≥ 10.
* **(b) Path** — ``tracenorm_path`` over 10 geometric λ1 from the λ1 that makes W = 0
  (the spectral norm of the gradient at W = 0) down to the smallest, against one cold fit
  at the smallest λ1 with the same tol, best of ``--repeats`` each, at the estimator's
  default tol (1e-4) and at ``tol``. Target: path / cold < 2.5 at the default tol (issue 35).

The section between ``<!-- tracenorm:begin -->`` and ``<!-- tracenorm:end -->`` of the
given file is replaced (appended if absent); it is always printed.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sections import command_line, machine, publish, verdict  # noqa: E402

from toprank.tracenorm import TraceNormLogisticRegression, tracenorm_path  # noqa: E402

BEGIN, END = "<!-- tracenorm:begin -->", "<!-- tracenorm:end -->"
# TraceNormLogisticRegression's default tol.
DEFAULT_TOL = 1e-4
# Path time / cold-fit time at DEFAULT_TOL must stay below this (issue 35, acceptance 3).
PATH_TARGET = 2.5


def data(n: int, d: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (3.0 / np.sqrt(d))
    W = rng.normal(size=(d, 5)) @ rng.normal(size=(5, m))
    y = np.argmax(X @ W + rng.gumbel(size=(n, m)), axis=1)
    return np.ascontiguousarray(X), y


def smooth(
    X: np.ndarray, Y: np.ndarray, W: np.ndarray, b: np.ndarray, lam2: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """λ2‖W‖² + R_n and its gradient in (W, b), NumPy."""
    S = X @ W + b
    S -= S.max(axis=1, keepdims=True)
    P = np.exp(S)
    Z = P.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(Z[:, 0]) - np.sum(S * Y, axis=1)))
    R = (P / Z - Y) / len(X)
    return lam2 * float(np.sum(W * W)) + loss, X.T @ R + 2 * lam2 * W, R.sum(axis=0)


def objective(X: np.ndarray, Y: np.ndarray, W: np.ndarray, b: np.ndarray, lam1: float, lam2: float) -> float:
    return smooth(X, Y, W, b, lam2)[0] + lam1 * float(np.linalg.svd(W, compute_uv=False).sum())


def fista(
    X: np.ndarray, Y: np.ndarray, lam1: float, lam2: float, target: float, cap: float
) -> tuple[float, float, int]:
    """FISTA with backtracking on (W, b); returns (seconds to reach `target`, objective, iterations)."""
    d, m = X.shape[1], Y.shape[1]
    W, b = np.zeros((d, m)), np.log(np.maximum(Y.mean(axis=0), 1e-12))
    Wy, by, t, L = W, b, 1.0, 1.0
    started = time.perf_counter()
    value = objective(X, Y, W, b, lam1, lam2)
    it = 0
    while True:
        it += 1
        f, gW, gb = smooth(X, Y, Wy, by, lam2)
        while True:  # backtracking: one SVD per trial
            P, s, Qt = np.linalg.svd(Wy - gW / L, full_matrices=False)
            s = np.maximum(s - lam1 / L, 0.0)
            Wn, bn = (P * s) @ Qt, by - gb / L
            fn = smooth(X, Y, Wn, bn, lam2)[0]
            dW, db = Wn - Wy, bn - by
            if fn <= f + np.sum(gW * dW) + np.sum(gb * db) + L / 2 * (np.sum(dW * dW) + np.sum(db * db)):
                break
            L *= 2.0
        value = fn + lam1 * float(s.sum())
        t_next = (1 + np.sqrt(1 + 4 * t * t)) / 2
        Wy, by = Wn + (t - 1) / t_next * (Wn - W), bn + (t - 1) / t_next * (bn - b)
        W, b, t = Wn, bn, t_next
        L /= 1.1
        elapsed = time.perf_counter() - started
        if value <= target or elapsed > cap:
            return elapsed, value, it


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--d", type=int, default=512)
    parser.add_argument("--m", type=int, default=50)
    parser.add_argument("--lambda-trace", type=float, default=0.01)
    parser.add_argument("--lambda-fro", type=float, default=1e-4)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--cap", type=float, default=600.0, help="seconds the baseline may run")
    parser.add_argument("--repeats", type=int, default=3, help="timings of (b) per side (best kept)")
    parser.add_argument("--quick", action="store_true", help="n = 2000, d = 64, m = 10")
    parser.add_argument("--write", metavar="PATH")
    args = parser.parse_args()
    if args.quick:
        args.n, args.d, args.m, args.cap = 2000, 64, 10, 60.0
    load = machine()
    X, y = data(args.n, args.d, args.m)
    Y = np.eye(args.m)[y]
    lam1, lam2 = args.lambda_trace, args.lambda_fro
    failures: list[str] = []

    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = TraceNormLogisticRegression(lam1, lam2, tol=args.tol, max_iter=5000, n_jobs=1).fit(X, y)
    t_ours = time.perf_counter() - started
    ours = objective(X, Y, model.coef_.T, model.intercept_, lam1, lam2)
    if abs(ours - model.objective_) > 1e-8 * abs(ours):
        failures.append(f"(a) toprank's reported objective {model.objective_} differs from NumPy's {ours}")
    if model.status_ != "converged":
        failures.append(f"(a) toprank stopped with status {model.status_}")
    target = ours * (1 + 1e-6)
    t_base, base_value, base_iter = fista(X, Y, lam1, lam2, target, args.cap)
    reached = base_value <= target
    ratio = t_base / t_ours
    base_text = (
        f"{t_base:.1f} s ({base_iter} iterations)"
        if reached
        else f"> {t_base:.0f} s (cap; {base_iter} iterations, objective {base_value:.8g})"
    )
    a_row = (
        f"| {args.n:,} × {args.d} × {args.m} | {lam1:g} / {lam2:g} | {t_ours:.2f} s ({model.n_iter_} iterations, "
        f"rank {model.rank_}) | {base_text} | {ours:.8g} | {ratio:.1f}x{'' if reached else ' (at least)'} | "
        f"{verdict(ratio >= 10, '>= 10x')} |"
    )

    # (b) the path against one cold fit at its smallest λ1, at the estimator's default tol
    # (how a user calls both) and at the tight tol of (a); best of `repeats` on both sides.
    lam_max = float(np.linalg.norm(X.T @ (np.full_like(Y, 1.0) * Y.mean(axis=0) - Y) / len(X), 2))
    lambdas = np.geomspace(lam_max, lam1, 10)
    b_rows = []
    for tol in sorted({DEFAULT_TOL, args.tol}, reverse=True):
        cold_times, path_times = [], []
        for _ in range(args.repeats):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                started = time.perf_counter()
                cold = TraceNormLogisticRegression(lam1, lam2, tol=tol, max_iter=5000, n_jobs=1).fit(X, y)
                cold_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                path = tracenorm_path(X, y, lambdas, lambda_fro=lam2, tol=tol, max_iter=5000, n_jobs=1)
                path_times.append(time.perf_counter() - started)
        t_cold, t_path = min(cold_times), min(path_times)
        path_ratio = t_path / t_cold
        if abs(path[-1].objective - cold.objective_) > 10 * tol * abs(cold.objective_):
            failures.append(
                f"(b) tol {tol:g}: the path's last objective {path[-1].objective} differs from the cold "
                f"fit's {cold.objective_}"
            )
        judged = tol == DEFAULT_TOL
        if judged and path_ratio >= PATH_TARGET:
            failures.append(f"(b) path / cold = {path_ratio:.2f} at tol {tol:g}")
        ranks = ", ".join(str(p.rank) for p in path)
        iters = ", ".join(str(p.n_iter) for p in path)
        b_rows.append(
            f"| 10 λ1 from {lam_max:.3g} to {lam1:g}, tol {tol:g}{' (default)' if judged else ''} | "
            f"{t_path:.2f} s (ranks {ranks}; iterations {iters}) | {t_cold:.2f} s ({cold.n_iter_} "
            "iterations) | "
            f"{path_ratio:.2f} | {verdict(path_ratio < PATH_TARGET, f'< {PATH_TARGET:g}x') if judged else 'shown, not judged'} |"
        )

    text = (
        "\n".join(
            [
                BEGIN,
                "## Trace-norm multinomial logistic regression (rank-one descent)",
                "",
                f"Command: `{command_line()}`. Machine: {load}. Data: X standard "
                f"normal × 3/√d, classes from a rank-5 W* plus Gumbel noise (seed 0). Single-threaded on both sides.",
                "",
                "(a) Time to the same objective: `TraceNormLogisticRegression(λ1, λ2, tol)` against FISTA with backtracking "
                "and a full SVD prox per trial step in NumPy (lightning's algorithm: lightning itself does not install on "
                "Python 3.11, see the script), run until it is within 1e-6 of toprank's objective (both recomputed in NumPy):",
                "",
                "| n × d × m | λ1 / λ2 | toprank | NumPy FISTA | objective (toprank) | FISTA / toprank | target |",
                "|---|---|---|---|---|---|---|",
                a_row,
                "",
                f"(b) Regularisation path (`tracenorm_path`, warm-started) against one cold fit at the smallest λ1 with the "
                f"same tol, best of {args.repeats} each. The target is judged at the estimator's default tol "
                f"({DEFAULT_TOL:g}), "
                "as both are called by default; the tight tol of (a) is shown too. A path point starts from the last one's "
                "atoms and gradient: its first step is a subspace step (the atoms' weights moved by a diagonal Newton step, "
                "the "
                "Ritz pairs outside their spans added), and one more gradient certifies it; the cold fit finds all of its "
                "atoms "
                "in its first Ritz block, so it costs only a few such steps itself:",
                "",
                "| path | path time | cold fit | path / cold | target |",
                "|---|---|---|---|---|",
                *b_rows,
                "",
                END,
            ]
        )
        + "\n"
    )
    return publish(text, failures, args.write, BEGIN, END)


if __name__ == "__main__":
    raise SystemExit(main())
