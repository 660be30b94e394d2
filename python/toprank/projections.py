"""Exact Euclidean (and one entropic) projections onto the sets of top-k learning.

Every function takes a 1-D array, or a 2-D array whose rows are projected
independently and in parallel, of dtype float32 or float64, and returns a new array
of the same shape and dtype. Read-only and non-contiguous arrays are accepted. All
thresholds are computed in float64. ``n_jobs`` sizes the thread pool for 2-D input
(``None``: one thread, scikit-learn's convention; ``-1``: all cores; ``-2``: all
but one). The GIL is released
while the projections run.

Bad input (NaN/inf, empty arrays, 3-D arrays, integer or complex dtypes, parameters
out of range) raises :class:`toprank.exceptions.InvalidInputError`, a ``ValueError``
whose message names the argument. A search that finds no solution raises
:class:`toprank.exceptions.NoSolutionError` rather than returning a wrong answer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from toprank import _core
from toprank._validation import as_array, as_count, as_flag, as_jobs, as_labels, as_real

__all__ = [
    "simplex",
    "knapsack",
    "topk_cone",
    "topk_simplex",
    "bipartite_simplex",
    "box_simplex",
    "capped_simplex",
    "capped_simplex_entropy",
    "sparsemax",
    "rankmax",
]

FloatArray = NDArray[np.floating[Any]]


def simplex(x: ArrayLike, r: float = 1.0, inequality: bool = False, *, n_jobs: int | None = None) -> FloatArray:
    """argmin ‖p − x‖² s.t. p ≥ 0, Σp = r (Σp ≤ r when ``inequality``)."""
    return _core.simplex(as_array(x, "x"), as_real(r, "r"), as_flag(inequality, "inequality"), n_jobs=as_jobs(n_jobs))


def knapsack(x: ArrayLike, lo: float, hi: float, r: float, *, n_jobs: int | None = None) -> FloatArray:
    """argmin ‖p − x‖² s.t. lo ≤ p ≤ hi, Σp = r (the continuous quadratic knapsack).

    Solved by Kiwiel's variable fixing. Raises :class:`~toprank.exceptions.InfeasibleError`
    unless ``lo <= hi`` and ``m*lo <= r <= m*hi``.
    """
    return _core.knapsack(
        as_array(x, "x"), as_real(lo, "lo"), as_real(hi, "hi"), as_real(r, "r"), n_jobs=as_jobs(n_jobs)
    )


def topk_cone(x: ArrayLike, k: int, rho: float = 0.0, *, n_jobs: int | None = None) -> FloatArray:
    """argmin ‖p − x‖² + rho·(Σp)² s.t. 0 ≤ p_i ≤ (Σp)/k  (1 ≤ k ≤ m; Lapin et al. Lemma 3)."""
    return _core.topk_cone(as_array(x, "x"), as_count(k, "k"), as_real(rho, "rho"), n_jobs=as_jobs(n_jobs))


def topk_simplex(x: ArrayLike, k: int, r: float = 1.0, rho: float = 0.0, *, n_jobs: int | None = None) -> FloatArray:
    """argmin ‖p − x‖² + rho·(Σp)² s.t. 0 ≤ p_i ≤ (Σp)/k, Σp ≤ r.

    The dual set of the top-k hinge loss "alpha"; ``rho=1`` is the Prox-SDCA step
    (Lapin et al. Proposition 4, Lemma 5).
    """
    return _core.topk_simplex(
        as_array(x, "x"), as_count(k, "k"), as_real(r, "r"), as_real(rho, "rho"), n_jobs=as_jobs(n_jobs)
    )


def bipartite_simplex(
    x: ArrayLike, positive: ArrayLike, r: float = 1.0, rho: float = 0.0, *, n_jobs: int | None = None
) -> FloatArray:
    """argmin ‖a − x_Y‖² + ‖b − x_N‖² + rho·s² s.t. a ≥ 0, b ≥ 0, Σa = Σb = s ≤ r.

    The bipartite ("two") simplex, the dual set of the multi-label hinge loss
    max{0, 1 + max_{l∈N} s_l − min_{j∈Y} s_j} (Lapin, Hein & Schiele, TPAMI 2018).
    Both parts are free variables, so the loss's Prox-SDCA step is ``rho=0``; with one
    label y the positive part is a = s and b is ``topk_simplex(x_N + x_y, 1, r, 1 + rho)``
    (the top-k simplex eliminates the label's coordinate, hence its ``rho=1``).

    Parameters
    ----------
    x : array_like of float32 or float64, shape (m,) or (n, m)
        The row(s) to project.
    positive : array_like of bool, the shape of ``x``
        Marks the entries of Y (an example's labels) in each row; the others are N.
        Every row needs at least one ``True`` and one ``False``.
    r : float, default 1.0
        The bound on the common sum s, ``>= 0``; ``math.inf`` for none.
    rho : float, default 0.0
        The weight of the bias term rho·s², ``>= 0``.
    n_jobs : int or None, default None
        Threads for a 2-D ``x`` (see the module docs).

    Returns
    -------
    ndarray
        ``x``'s shape and dtype: a at the positive positions, b at the others.

    Notes
    -----
    Exact and sorting-based, O(m log m) per row: for a fixed s each part is a simplex
    projection with threshold t_Y(s), t_N(s), and s is 0 when max x_Y + max x_N ≤ 0,
    r when t_Y(r) + t_N(r) ≥ rho·r, else the root of t_Y(s) + t_N(s) = rho·s.
    """
    return _core.bipartite_simplex(
        as_array(x, "x"),
        as_array(positive, "positive"),
        as_real(r, "r"),
        as_real(rho, "rho"),
        n_jobs=as_jobs(n_jobs),
    )


def box_simplex(x: ArrayLike, hi: float, r: float = 1.0, rho: float = 0.0, *, n_jobs: int | None = None) -> FloatArray:
    """argmin ‖p − x‖² + rho·(Σp)² s.t. 0 ≤ p ≤ hi, Σp ≤ r.

    The dual set of the top-k hinge loss "beta" with ``hi = r/k``.
    """
    return _core.box_simplex(
        as_array(x, "x"), as_real(hi, "hi"), as_real(r, "r"), as_real(rho, "rho"), n_jobs=as_jobs(n_jobs)
    )


def capped_simplex(x: ArrayLike, k: float, *, n_jobs: int | None = None) -> FloatArray:
    """argmin ‖p − x‖² s.t. 0 ≤ p ≤ 1, Σp = k: the (n,k)-simplex (0 < k ≤ m)."""
    return _core.capped_simplex(as_array(x, "x"), as_real(k, "k"), n_jobs=as_jobs(n_jobs))


def capped_simplex_entropy(x: ArrayLike, k: float, *, n_jobs: int | None = None) -> FloatArray:
    """argmin Σ p_i log p_i − ⟨x, p⟩ s.t. 0 ≤ p ≤ 1, Σp = k. ``k=1`` is softmax."""
    return _core.capped_simplex_entropy(as_array(x, "x"), as_real(k, "k"), n_jobs=as_jobs(n_jobs))


def sparsemax(z: ArrayLike, *, n_jobs: int | None = None) -> FloatArray:
    """Sparsemax (Martins & Astudillo, 2016): the projection of z onto the probability simplex."""
    return _core.sparsemax(as_array(z, "z"), n_jobs=as_jobs(n_jobs))


def rankmax(z: ArrayLike, y: ArrayLike, k: int = 1, eta: float = 1.0, *, n_jobs: int | None = None) -> FloatArray:
    """Rankmax(z, y) (Kong et al., Definition 4): clip(α_y (z − μ_y), 0, 1) with Σ = k.

    μ_y = min(z_y, z_[k]) − eta and α_y adapts to the rank of the positive label ``y``
    (Proposition 3), so ``y`` always gets positive mass. ``y`` is an int for a 1-D
    ``z`` and an integer array with one label per row for a 2-D ``z``. Requires
    1 ≤ k < n. O(n log k) per row.
    """
    z_arr = as_array(z, "z")
    return _core.rankmax(z_arr, as_labels(y, z_arr), as_count(k, "k"), as_real(eta, "eta"), n_jobs=as_jobs(n_jobs))
