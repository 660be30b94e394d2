"""Figures for binary rankings, as in the kernel ranking-at-the-top paper (§4.4).

* :func:`plot_pr_curves` — precision-recall curves of several rankers on one Axes
  (Figure 1);
* :func:`plot_score_densities` — density estimates of the scores of the positive and
  of the negative examples, with a vertical line at the top quantile of all scores
  (Figure 2).

The scores are the ranking scores f(x), e.g. ``score_samples(X)`` of
:class:`toprank.TopPush`, :class:`toprank.TopPushK` or :class:`toprank.PatMat`
(higher means more likely positive).

matplotlib is not a dependency of toprank: it is imported only when a function runs,
and only ``matplotlib.pyplot`` is needed when no ``ax`` is given (a new figure is then
created with ``plt.subplots()``). Both functions draw on and return a
:class:`matplotlib.axes.Axes`. Bad input raises
:class:`toprank.exceptions.InvalidInputError` with a message starting with the name of
the offending argument, before anything is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from toprank._docs import fill_doc
from toprank._validation import as_real
from toprank.exceptions import InvalidInputError
from toprank.metrics import binary_scores, precision_recall_curve

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_pr_curves", "plot_score_densities"]

# Elements of the temporary (grid x examples) block of the density estimate.
_BLOCK_ELEMS = 1 << 20


def _axes(ax: object) -> Axes:
    """``ax`` checked to be an Axes, or a new figure's Axes when ``ax`` is None."""
    try:
        import matplotlib.axes
    except ImportError as exc:  # matplotlib is only a dev dependency of toprank
        raise ImportError("toprank.plotting needs matplotlib (pip install matplotlib)") from exc
    if ax is None:
        import matplotlib.pyplot as plt

        new_ax: Axes = plt.subplots()[1]
        return new_ax
    if not isinstance(ax, matplotlib.axes.Axes):
        raise InvalidInputError(f"ax: expected a matplotlib Axes or None, got {type(ax).__name__}")
    return ax


@fill_doc
def plot_pr_curves(
    curves: Mapping[str, tuple[ArrayLike, ArrayLike]],
    ax: Axes | None = None,
    *,
    pos_label: object = None,
) -> Axes:
    """Draw the precision-recall curve of each ranking, one line per entry of ``curves``.

    ``curves`` maps a name (the legend label) to a pair ``(y_true, scores)`` accepted by
    :func:`toprank.metrics.precision_recall_curve` (``pos_label`` is passed on to it).
    Each curve is drawn, in the mapping's order, as ``(recall, precision)`` with
    ``drawstyle="steps-post"`` like scikit-learn's ``PrecisionRecallDisplay``: its
    height at recall r is ``precision_at_recall(y_true, scores, r)``, the precision of
    the highest threshold reaching recall r. It ends, as in scikit-learn, at the
    conventional point (recall 0, precision 1).

    The axes get the labels "Recall" and "Precision", limits [-0.01, 1.01] and a legend.

    Parameters
    ----------
    curves : mapping of str to (y_true, scores)
        Legend label -> the binary labels and the scores of one ranking, each as
        :func:`toprank.metrics.precision_recall_curve` takes them.
    %(plotting_ax)s
    pos_label : object, optional
        The positive label, passed on to :func:`~toprank.metrics.precision_recall_curve`.

    %(plotting_returns_raises)s
    InvalidInputError
        ``curves`` not a non-empty mapping of pairs, an entry that
        :func:`~toprank.metrics.precision_recall_curve` refuses (the message names the
        entry), or ``ax`` not an Axes. Nothing is drawn then.
    %(plotting_no_matplotlib)s

    See Also
    --------
    toprank.metrics.precision_recall_curve : The points drawn.
    plot_score_densities : The scores' distributions.

    %(refs_plotting)s

    Examples
    --------
    %(plotting_example_scores)s
    >>> from toprank.plotting import plot_pr_curves
    >>> ax = plot_pr_curves({"good": (y, good), "poor": (y, poor)}, ax=Figure().subplots())
    >>> [line.get_label() for line in ax.get_lines()], ax.get_xlabel()
    (['good', 'poor'], 'Recall')
    """
    if not isinstance(curves, Mapping):
        raise InvalidInputError(f"curves: expected a mapping name -> (y_true, scores), got {type(curves).__name__}")
    if len(curves) == 0:
        raise InvalidInputError("curves: empty mapping, nothing to plot")
    computed: list[tuple[str, NDArray[np.float64], NDArray[np.float64]]] = []
    for name, pair in curves.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidInputError(f"curves: entry {name!r} must be a (y_true, scores) pair")
        try:
            precision, recall, _ = precision_recall_curve(pair[0], pair[1], pos_label=pos_label)
        except InvalidInputError as exc:
            raise InvalidInputError(f"curves: entry {name!r}: {exc}") from exc
        computed.append((str(name), precision, recall))

    axes = _axes(ax)
    for name, precision, recall in computed:
        axes.plot(recall, precision, drawstyle="steps-post", label=name)
    axes.set_xlabel("Recall")
    axes.set_ylabel("Precision")
    axes.set_xlim(-0.01, 1.01)
    axes.set_ylim(-0.01, 1.01)
    axes.legend(loc="lower left")
    return axes


def _bandwidth(x: NDArray[np.float64], fallback_sd: float) -> float:
    """Scott's rule h = sd · n^(-1/5), as ``scipy.stats.gaussian_kde`` in 1-D.

    A class with a single example or a single score value has no spread of its own and
    borrows ``fallback_sd``.
    """
    sd = float(np.std(x, ddof=1)) if x.size > 1 else 0.0
    if not sd > 0.0:
        sd = fallback_sd
    return sd * math.pow(float(x.size), -0.2)


def _gaussian_kde(x: NDArray[np.float64], h: float, grid: NDArray[np.float64]) -> NDArray[np.float64]:
    """Gaussian kernel density estimate of the sample ``x`` with bandwidth ``h`` on ``grid``."""
    dens = np.zeros(grid.shape, dtype=np.float64)
    step = max(1, _BLOCK_ELEMS // grid.size)
    for start in range(0, x.size, step):
        z = (grid[:, None] - x[None, start : start + step]) / h
        dens += np.exp(-0.5 * z * z).sum(axis=1)
    out: NDArray[np.float64] = dens / (x.size * h * math.sqrt(2.0 * math.pi))
    return out


def _top_quantile(s: NDArray[np.float64], quantile: float) -> float:
    """The largest t with #{i : s_i ≥ t} ≥ n·quantile: the ⌈n·quantile⌉-th largest score."""
    n = int(s.size)
    nq = n * quantile
    k = min(n, max(1, math.ceil(nq - 1e-9 * max(1.0, nq))))  # forgive rounding of n·quantile
    return float(np.partition(s, n - k)[n - k])


@fill_doc
def plot_score_densities(
    y_true: ArrayLike,
    scores: ArrayLike,
    ax: Axes | None = None,
    quantile: float | None = 0.05,
    *,
    pos_label: object = None,
    n_points: int = 512,
) -> Axes:
    """Draw density estimates of the positive and of the negative scores (Figure 2).

    ``y_true`` and ``scores`` (and ``pos_label``) are as in
    :func:`toprank.metrics.precision_recall_curve`; both classes must be present.

    Each class gets a Gaussian kernel density estimate of its own scores, normalised to
    integrate to 1, with Scott's bandwidth sd · n_class^(-1/5) (sd with ddof=1) — the
    values of ``scipy.stats.gaussian_kde(class_scores)`` — evaluated on ``n_points``
    equally spaced points spanning the scores plus three bandwidths on either side. A
    class whose scores do not vary borrows the standard deviation of all the scores
    (or 1 if all scores are equal). The positive density is drawn first, then the
    negative one, each as a line with a light fill below it.

    Unless ``quantile`` is None, a black vertical line then marks the top
    ``quantile``-quantile of all scores, t = the largest t with #{i : s_i ≥ t} ≥
    n·quantile (the ⌈n·quantile⌉-th largest score; the quantile of eq. (8) of the paper,
    taken over all examples): the paper draws it at the top 5 %. So the Axes gains three
    lines (two without the quantile line), in that order. Requires 0 < quantile ≤ 1.

    The axes get the labels "Score" and "Density" and a legend.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        Binary labels (0/1, -1/1 or boolean; other pairs with ``pos_label``).
    scores : array_like of shape (n,)
        Finite real scores, higher meaning more likely positive.
    %(plotting_ax)s
    quantile : float or None, default 0.05
        Where to draw the vertical line: the top ``quantile`` of all scores, ``0 <
        quantile <= 1``; None for no line.
    pos_label : object, optional
        The positive label, as in :func:`toprank.metrics.precision_recall_curve`.
    n_points : int, default 512
        Grid points of the density curves, ``>= 2``.

    %(plotting_returns_raises)s
    InvalidInputError
        Labels or scores :func:`~toprank.metrics.precision_recall_curve` would refuse, a
        single class, ``quantile`` outside (0, 1], ``n_points`` not an integer ``>= 2``,
        or ``ax`` not an Axes. Nothing is drawn then.
    %(plotting_no_matplotlib)s

    See Also
    --------
    plot_pr_curves : Precision-recall curves.

    Notes
    -----
    The density of a class of n_c scores costs O(n_c · ``n_points``), in blocks of about a
    million terms.

    %(refs_plotting)s

    Examples
    --------
    %(plotting_example_scores)s
    >>> from toprank.plotting import plot_score_densities
    >>> ax = plot_score_densities(y, good, ax=Figure().subplots(), quantile=0.05)
    >>> [line.get_label() for line in ax.get_lines()]
    ['positive', 'negative', 'top 5% quantile']
    """
    s, yb = binary_scores(y_true, scores, pos_label)
    s = s.astype(np.float64)
    n_pos = int(np.count_nonzero(yb))
    if n_pos == 0 or n_pos == yb.size:
        missing = "positive" if n_pos == 0 else "negative"
        raise InvalidInputError(f"y_true: no {missing} examples (a single class), both densities are needed")
    q: float | None = None
    if quantile is not None:
        q = as_real(quantile, "quantile")
        if not 0.0 < q <= 1.0:  # also rejects NaN
            raise InvalidInputError(f"quantile: must be in (0, 1] or None, got {q}")
    if isinstance(n_points, (bool, np.bool_)) or not isinstance(n_points, (int, np.integer)):
        raise InvalidInputError(f"n_points: expected an integer, got {type(n_points).__name__}")
    if n_points < 2:
        raise InvalidInputError(f"n_points: must be at least 2, got {n_points}")

    sd_all = float(np.std(s, ddof=1))
    fallback = sd_all if sd_all > 0.0 else 1.0
    pos, neg = s[yb], s[~yb]
    h_pos, h_neg = _bandwidth(pos, fallback), _bandwidth(neg, fallback)
    pad = 3.0 * max(h_pos, h_neg)
    grid = np.linspace(float(s.min()) - pad, float(s.max()) + pad, int(n_points))
    densities: list[tuple[str, NDArray[np.float64]]] = [
        ("positive", _gaussian_kde(pos, h_pos, grid)),
        ("negative", _gaussian_kde(neg, h_neg, grid)),
    ]

    axes = _axes(ax)
    for label, dens in densities:
        (line,) = axes.plot(grid, dens, label=label)
        axes.fill_between(grid, dens, color=line.get_color(), alpha=0.2, linewidth=0)
    if q is not None:
        axes.axvline(_top_quantile(s, q), color="black", linewidth=1.0, label=f"top {100 * q:g}% quantile")
    axes.set_xlabel("Score")
    axes.set_ylabel("Density")
    axes.legend()
    return axes
