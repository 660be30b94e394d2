"""Tests of toprank.plotting (PR curves and score densities) on the Agg backend."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from scipy.stats import gaussian_kde  # noqa: E402

from toprank import metrics, plotting  # noqa: E402
from toprank.exceptions import InvalidInputError  # noqa: E402

Y, S = np.array([0, 1, 0, 1]), np.array([0.1, 0.4, 0.3, 0.8])


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def ranking_data(seed: int, n: int = 200, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.2).astype(np.int64)
    y[:2] = [0, 1]
    s = rng.standard_normal(n) + 1.5 * y
    if ties:
        s = np.round(s * 2) / 2
    return y, s


def ref_top_quantile(s: np.ndarray, q: float) -> float:
    """The paper's eq. (8) on all scores: the largest t with #{s >= t} >= n q."""
    return float(max(t for t in s.tolist() if np.count_nonzero(s >= t) >= len(s) * q - 1e-9))


def step_height(x: np.ndarray, y: np.ndarray, at: float) -> float:
    """Height at ``at`` of a steps-post line through (x, y), x non-increasing, x[-1] < at <= x[0]."""
    i = int(np.flatnonzero(x >= at)[-1])
    return float(y[i])


# ----------------------------------------------------------------------------- module


def test_matplotlib_is_imported_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    # With matplotlib unimportable the module still loads; only drawing needs it.
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    importlib.reload(plotting)
    with pytest.raises(ImportError, match="matplotlib"):
        plotting.plot_pr_curves({"a": (Y, S)})
    with pytest.raises(ImportError, match="matplotlib"):
        plotting.plot_score_densities(Y, S)
    monkeypatch.undo()
    assert isinstance(plotting.plot_score_densities(Y, S), Axes)


# ----------------------------------------------------------------------------- plot_pr_curves


def test_pr_curves_one_line_per_ranking_with_curve_data() -> None:
    curves = {name: ranking_data(seed, ties=seed == 2) for seed, name in enumerate(["TopPush", "TopPushK", "PatMat"])}
    ax = plotting.plot_pr_curves(curves)
    assert isinstance(ax, Axes)
    lines = ax.get_lines()
    assert len(lines) == 3
    assert [line.get_label() for line in lines] == list(curves)
    legend = ax.get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == list(curves)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Recall", "Precision")
    rng = np.random.default_rng(0)
    for line, (y, s) in zip(lines, curves.values()):
        p, r, _ = metrics.precision_recall_curve(y, s)
        x_data, y_data = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        assert np.array_equal(x_data, r) and np.array_equal(y_data, p)
        assert line.get_drawstyle() == "steps-post"
        # What one reads off the figure at recall level t is precision_at_recall(t).
        for level in rng.uniform(1e-6, 1.0, 20):
            assert step_height(x_data, y_data, float(level)) == metrics.precision_at_recall(y, s, float(level))


def test_pr_curves_draw_on_given_axes_and_save_png(tmp_path: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2)
    n_figures = len(plt.get_fignums())
    y, s = ranking_data(3)
    assert plotting.plot_pr_curves({"a": (y, s)}, ax=left) is left
    assert plotting.plot_pr_curves({"b": (y, -s), "c": (list(y), list(s))}, ax=right) is right
    assert len(plt.get_fignums()) == n_figures  # no new figure
    assert (len(left.get_lines()), len(right.get_lines())) == (1, 2)
    path = tmp_path / "pr.png"
    fig.savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pr_curves_pos_label() -> None:
    y, s = ranking_data(4)
    names = np.where(y == 1, "pos", "neg")
    ax = plotting.plot_pr_curves({"x": (names, s)}, pos_label="pos")
    p, r, _ = metrics.precision_recall_curve(y, s)
    assert np.array_equal(ax.get_lines()[0].get_xdata(), r)
    assert np.array_equal(ax.get_lines()[0].get_ydata(), p)


# ----------------------------------------------------------------------------- plot_score_densities


@pytest.mark.parametrize("ties", [False, True])
def test_score_densities_lines_and_quantile(ties: bool) -> None:
    y, s = ranking_data(5, n=200, ties=ties)
    for q in (0.05, 0.1, 0.013, 0.5, 1.0):
        ax = plotting.plot_score_densities(y, s, quantile=q)
        lines = ax.get_lines()
        assert len(lines) == 3
        assert [line.get_label() for line in lines[:2]] == ["positive", "negative"]
        x_line = np.asarray(lines[2].get_xdata(), dtype=np.float64)
        expected = ref_top_quantile(s, q)
        assert np.all(x_line == expected), (q, x_line, expected)
        # At least n*q scores at or above the line, fewer strictly above it.
        assert np.count_nonzero(s >= expected) >= 200 * q - 1e-9 > np.count_nonzero(s > expected)
    assert float(np.asarray(lines[2].get_xdata())[0]) == s.min()  # quantile 1


def test_score_densities_default_quantile_is_top_5_percent() -> None:
    y, s = ranking_data(6, n=200)
    ax = plotting.plot_score_densities(y, s)
    assert float(np.asarray(ax.get_lines()[2].get_xdata())[0]) == np.sort(s)[-10]  # 10 = 5 % of 200
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Score", "Density")


def test_score_densities_are_gaussian_kdes() -> None:
    y, s = ranking_data(7, n=300)
    ax = plotting.plot_score_densities(y, s, quantile=None, n_points=400)
    lines = ax.get_lines()
    assert len(lines) == 2  # no quantile line
    for line, cls in zip(lines, (1, 0)):
        grid, dens = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        assert grid.size == 400 and np.all(np.diff(grid) > 0)
        assert grid[0] < s.min() and grid[-1] > s.max()
        np.testing.assert_allclose(dens, gaussian_kde(s[y == cls])(grid), rtol=1e-10, atol=1e-14)
        assert float(np.sum((dens[1:] + dens[:-1]) / 2 * np.diff(grid))) == pytest.approx(1.0, abs=1e-3)


def test_score_densities_degenerate_classes_and_integer_scores() -> None:
    # One positive, and a negative class with a single score value: finite densities.
    ax = plotting.plot_score_densities([1, 0, 0, 0], [3, 1, 1, 1], quantile=0.25)
    for line in ax.get_lines()[:2]:
        assert np.all(np.isfinite(np.asarray(line.get_ydata())))
        assert np.max(np.asarray(line.get_ydata())) > 0
    assert float(np.asarray(ax.get_lines()[2].get_xdata())[0]) == 3.0
    # All scores equal.
    ax = plotting.plot_score_densities([True, False], [0.5, 0.5])
    assert all(np.all(np.isfinite(np.asarray(line.get_ydata()))) for line in ax.get_lines())


def test_score_densities_given_axes_and_png(tmp_path: Path) -> None:
    fig, axes = plt.subplots(1, 3)
    n_figures = len(plt.get_fignums())
    for seed, ax in enumerate(axes):
        y, s = ranking_data(seed)
        assert plotting.plot_score_densities(y, s, ax=ax) is ax
        assert len(ax.get_lines()) == 3
    assert len(plt.get_fignums()) == n_figures
    path = tmp_path / "densities.png"
    fig.savefig(path)
    assert path.stat().st_size > 0 and path.read_bytes()[:4] == b"\x89PNG"


# ----------------------------------------------------------------------------- bad input

BAD_CALLS: list[tuple[str, str, Any]] = [
    ("pr not a mapping", "curves", lambda ax: plotting.plot_pr_curves([(Y, S)], ax=ax)),  # type: ignore[arg-type]
    ("pr empty", "curves", lambda ax: plotting.plot_pr_curves({}, ax=ax)),
    ("pr not a pair", "curves", lambda ax: plotting.plot_pr_curves({"a": (Y, S, S)}, ax=ax)),  # type: ignore[dict-item]
    ("pr one class", "curves", lambda ax: plotting.plot_pr_curves({"a": (Y, S), "b": ([1, 1], [0, 1])}, ax=ax)),
    ("pr nan", "curves", lambda ax: plotting.plot_pr_curves({"a": (Y, [0, np.nan, 0, 1])}, ax=ax)),
    ("pr bad ax", "ax", lambda ax: plotting.plot_pr_curves({"a": (Y, S)}, ax="left")),  # type: ignore[arg-type]
    ("sd one class", "y_true", lambda ax: plotting.plot_score_densities([0, 0, 0], [1, 2, 3], ax=ax)),
    ("sd no negatives", "y_true", lambda ax: plotting.plot_score_densities([1, 1], [1, 2], ax=ax)),
    ("sd nan", "scores", lambda ax: plotting.plot_score_densities(Y, [0, np.nan, 0, 1], ax=ax)),
    ("sd length", "scores", lambda ax: plotting.plot_score_densities(Y, S[:3], ax=ax)),
    ("sd non-binary", "y_true", lambda ax: plotting.plot_score_densities([0, 1, 2, 1], S, ax=ax)),
    ("sd quantile 0", "quantile", lambda ax: plotting.plot_score_densities(Y, S, ax=ax, quantile=0.0)),
    ("sd quantile > 1", "quantile", lambda ax: plotting.plot_score_densities(Y, S, ax=ax, quantile=1.5)),
    ("sd quantile nan", "quantile", lambda ax: plotting.plot_score_densities(Y, S, ax=ax, quantile=float("nan"))),
    ("sd quantile str", "quantile", lambda ax: plotting.plot_score_densities(Y, S, ax=ax, quantile="0.1")),  # type: ignore[arg-type]
    ("sd n_points", "n_points", lambda ax: plotting.plot_score_densities(Y, S, ax=ax, n_points=1)),
    ("sd bad ax", "ax", lambda ax: plotting.plot_score_densities(Y, S, ax=42)),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("case", "arg", "call"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_naming_argument_and_draws_nothing(case: str, arg: str, call: Any) -> None:
    _, ax = plt.subplots()
    with pytest.raises(InvalidInputError) as info:
        call(ax)
    assert str(info.value).startswith(f"{arg}: "), str(info.value)
    assert len(ax.get_lines()) == 0 and len(ax.collections) == 0
