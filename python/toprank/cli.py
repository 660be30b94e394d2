"""Command line: ``python -m toprank demo``.

The demo shows, on a small example that ships with the package (a seeded score
matrix), what the kernels compute and checks the properties that make them useful:
the top-k simplex step of Prox-SDCA, the top-k hinge losses, Rankmax versus softmax
and sparsemax, and the metrics, with timings of the batched kernels.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np

from toprank import __version__, losses, metrics, projections


def _row(label: str, values: np.ndarray) -> str:
    return f"  {label:<28}" + " ".join(f"{v:7.3f}" for v in values)


def demo(n_rows: int = 20_000, n_labels: int = 1_000, seed: int = 0) -> int:
    print(f"toprank {__version__} — what the kernels do\n")
    x = np.array([2.0, 1.4, 1.3, 0.2, -0.5, -1.0])
    print("One score vector x over 6 classes:")
    print(_row("x", x))
    print(_row("simplex(x)", projections.simplex(x)))
    print(_row("sparsemax(x)", projections.sparsemax(x)))
    print(_row("topk_simplex(x, k=2)", projections.topk_simplex(x, k=2)))
    print(_row("topk_simplex(x, k=2, rho=1)", projections.topk_simplex(x, k=2, rho=1.0)))
    print(_row("box_simplex(x, hi=0.5)", projections.box_simplex(x, hi=0.5)))
    print(_row("capped_simplex(x, k=2)", projections.capped_simplex(x, k=2)))
    print(_row("capped_simplex_entropy(x,2)", projections.capped_simplex_entropy(x, k=2)))
    for k in (1, 2):
        print(_row(f"rankmax(x, y=3, k={k})", projections.rankmax(x, 3, k=k)))
    p = projections.topk_simplex(x, k=2)
    print(f"\n  top-k simplex: sum = {p.sum():.6f} <= r = 1, max = {p.max():.6f} <= sum/k = {p.sum() / 2:.6f}")
    r = projections.rankmax(x, 3, k=2)
    print(f"  Rankmax keeps the label: p_y = {r[3]:.4f} > 0 although x_y is ranked 4th; sum = {r.sum():.6f} = k")

    print("\nLosses for the true class y = 3:")
    for k in (1, 2, 3):
        a = losses.topk_hinge(x, 3, k, "alpha")
        b = losses.topk_hinge(x, 3, k, "beta")
        print(f"  top-{k} hinge: alpha = {a:.4f}, beta = {b:.4f}")
    for name, fn in (("softmax", losses.softmax_loss), ("sparsemax", losses.sparsemax_loss)):
        value, grad = fn(x, 3)
        print(f"  {name:<9} loss = {value:.4f}, gradient sums to {grad.sum():+.1e}")
    value, grad = losses.rankmax_loss(x, 3)
    print(f"  rankmax   loss = {value:.4f}, gradient sums to {grad.sum():+.1e}, {np.count_nonzero(grad)} nonzeros")

    rng = np.random.default_rng(seed)
    centers = rng.standard_normal(n_labels)
    y = rng.integers(0, n_labels, n_rows)
    scores = centers + 0.5 * rng.standard_normal((n_rows, n_labels))
    scores[np.arange(n_rows), y] += 2.0
    print(f"\nA batch of {n_rows} score rows over {n_labels} labels (seeded, planted true class):")
    # One untimed call first: thread-pool start-up and first-touch page faults are
    # one-off costs, not what a training loop pays per step.
    projections.topk_simplex(scores, k=5, rho=1.0)
    losses.rankmax_loss(scores, y, k=5)
    start = time.perf_counter()
    projected = projections.topk_simplex(scores, k=5, rho=1.0)
    elapsed = time.perf_counter() - start
    print(f"  topk_simplex(k=5, rho=1): {elapsed * 1e3:.1f} ms ({elapsed / n_rows * 1e6:.2f} µs/row), "
          f"max row sum {projected.sum(1).max():.6f}")
    start = time.perf_counter()
    loss, _ = losses.rankmax_loss(scores, y, k=5)
    elapsed = time.perf_counter() - start
    print(f"  rankmax_loss(k=5): mean {float(np.mean(loss)):.4f} in {elapsed * 1e3:.1f} ms")
    for k in (1, 5, 10):
        print(f"  top-{k} accuracy: {metrics.top_k_accuracy(y, scores, k):.4f}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toprank", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser("demo", help="show what the kernels compute on a small example")
    demo_parser.add_argument("--rows", type=int, default=20_000)
    demo_parser.add_argument("--labels", type=int, default=1_000)
    demo_parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.rows, args.labels, args.seed)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
