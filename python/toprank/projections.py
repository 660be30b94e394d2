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

Most of these projections have the form p_i = clip(x_i − t, 0, cap) for a threshold t,
so only the entries above t matter: rather than sorting the whole row, the core moves the
largest entries to the front by an O(m) selection, sorts only those and solves exactly on
that prefix, growing it when the threshold shows that an entry left out belongs in it.
The cost per row is then O(m) plus the sort of the few entries kept, O(m log m) at worst;
each function's Notes give its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from toprank import _core
from toprank._docs import fill_doc
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


@fill_doc
def simplex(x: ArrayLike, r: float = 1.0, inequality: bool = False, *, n_jobs: int | None = None) -> FloatArray:
    r"""Euclidean projection onto the simplex of radius ``r``.

    Solves

    .. math:: \min_p \|p - x\|^2 \quad \text{s.t.} \quad p \ge 0,\ \textstyle\sum_i p_i = r

    (``sum(p) <= r`` when ``inequality``). The solution is p_i = (x_i − t)_+ for the
    threshold t with Σ_i (x_i − t)_+ = r; with ``inequality`` t ≥ 0, so p = max(x, 0)
    whenever that already sums to at most r. ``simplex(x)`` is :func:`sparsemax`.

    Parameters
    ----------
    %(projection_x)s
    r : float, default 1.0
        The radius, finite and ``>= 0`` (``r = 0`` gives p = 0).
    inequality : bool, default False
        Project onto {p ≥ 0, Σp ≤ r} instead of {p ≥ 0, Σp = r}.
    %(projection_n_jobs)s

    %(projection_returns_raises)s
        Also ``r`` negative or not finite.
    %(projection_no_solution)s

    See Also
    --------
    sparsemax : The same projection with r = 1.
    capped_simplex : The simplex with the upper bound p ≤ 1.
    knapsack : Bounds lo ≤ p ≤ hi on every entry.

    Notes
    -----
    Exact: t is found on the sorted prefix of the largest entries (see the module
    notes), expected O(m) per row, O(m log m) at worst.

    %(refs_sparsemax)s

    Examples
    --------
    >>> from toprank.projections import simplex
    %(projection_example_x)s
    >>> simplex(x)
    array([0.  , 0.65, 0.  , 0.35])
    >>> simplex(x, r=5.0, inequality=True)  # x_+ already sums to less than 5
    array([0.5, 1.2, 0. , 0.9])
    >>> simplex(np.array([[1.0, 2.0], [0.3, 0.1]], dtype=np.float32)).dtype  # rows; float32 kept
    dtype('float32')
    """
    return _core.simplex(as_array(x, "x"), as_real(r, "r"), as_flag(inequality, "inequality"), n_jobs=as_jobs(n_jobs))


@fill_doc
def knapsack(x: ArrayLike, lo: float, hi: float, r: float, *, n_jobs: int | None = None) -> FloatArray:
    r"""Euclidean projection onto a box cut by a hyperplane: the continuous quadratic knapsack.

    Solves

    .. math:: \min_p \|p - x\|^2 \quad \text{s.t.} \quad lo \le p_i \le hi,\ \textstyle\sum_i p_i = r,

    whose solution is p_i = clip(x_i − t, lo, hi) for the t with Σ_i p_i = r.

    Parameters
    ----------
    %(projection_x)s
    lo, hi : float
        The bounds of every entry, finite, ``lo <= hi``.
    r : float
        The required sum, ``m*lo <= r <= m*hi`` (m the row length).
    %(projection_n_jobs)s

    Returns
    -------
    %(projection_returns)s

    Raises
    ------
    InfeasibleError
        ``lo > hi`` or r outside [m·lo, m·hi]: the set is empty (a subclass of
        InvalidInputError).
    %(projection_invalid_x)s

    See Also
    --------
    capped_simplex : The case lo = 0, hi = 1.
    box_simplex : 0 ≤ p ≤ hi with Σp ≤ r and a bias term.

    Notes
    -----
    Kiwiel's variable fixing: each pass solves the problem on the free variables
    without bounds, then fixes every variable beyond the bound that is violated most;
    a pass is O(m) and fixes at least one variable, and a handful of passes suffice in
    practice.

    References
    ----------
    .. [1] K. Kiwiel. *Variable fixing algorithms for the continuous quadratic knapsack
       problem.* JOTA 136, 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.projections import knapsack
    >>> p = knapsack(np.array([0.5, 1.2, -0.3, 0.9]), lo=0.0, hi=0.6, r=1.5)
    >>> p, float(p.sum())
    (array([0.3, 0.6, 0. , 0.6]), 1.5)
    """
    return _core.knapsack(
        as_array(x, "x"), as_real(lo, "lo"), as_real(hi, "hi"), as_real(r, "r"), n_jobs=as_jobs(n_jobs)
    )


@fill_doc
def topk_cone(x: ArrayLike, k: int, rho: float = 0.0, *, n_jobs: int | None = None) -> FloatArray:
    r"""Biased projection onto the top-k cone.

    Solves

    .. math:: \min_p \|p - x\|^2 + \rho \big(\textstyle\sum_i p_i\big)^2
              \quad \text{s.t.} \quad 0 \le p_i \le \tfrac{1}{k}\textstyle\sum_j p_j,

    the cone of vectors no entry of which exceeds a k-th of their sum. The solution is
    p_i = clip(x_i − t, 0, s/k) with s = Σp; p = 0 exactly when the k largest entries
    of x sum to at most 0.

    Parameters
    ----------
    %(projection_x)s
    %(topk_k)s
    rho : float, default 0.0
        The weight of the bias term, finite and ``>= 0``.
    %(projection_n_jobs)s

    %(projection_returns_raises)s
        Also ``k`` outside [1, m], ``rho`` negative or not finite.
    %(projection_no_solution)s

    See Also
    --------
    topk_simplex : The cone cut by Σp ≤ r.

    Notes
    -----
    For a fixed number u of entries at the cap s/k and j in the support, the optimality
    conditions are two linear equations in (t, s) (eq. (7) of [1]_); the solution is
    the pair (u, j) whose thresholds are consistent (eq. (8)), searched on the sorted
    prefix of the largest entries: O(m) expected, O(m log m) at worst.

    References
    ----------
    .. [1] M. Lapin, M. Hein, B. Schiele. *Top-k Multiclass SVM.* NIPS 2015, §4.2,
       Lemmas 3 and 4.

    Examples
    --------
    >>> from toprank.projections import topk_cone
    %(projection_example_x)s
    >>> topk_cone(x, k=2)  # already in the cone: 1.2 <= (0.5 + 1.2 + 0.9) / 2
    array([0.5, 1.2, 0. , 0.9])
    >>> p = topk_cone(x, k=3)
    >>> bool(p.max() <= p.sum() / 3 + 1e-12)
    True
    """
    return _core.topk_cone(as_array(x, "x"), as_count(k, "k"), as_real(rho, "rho"), n_jobs=as_jobs(n_jobs))


@fill_doc
def topk_simplex(x: ArrayLike, k: int, r: float = 1.0, rho: float = 0.0, *, n_jobs: int | None = None) -> FloatArray:
    r"""Biased projection onto the top-k simplex, the dual set of the top-k hinge loss.

    Solves

    .. math:: \min_p \|p - x\|^2 + \rho \big(\textstyle\sum_i p_i\big)^2
              \quad \text{s.t.} \quad 0 \le p_i \le \tfrac{1}{k}\textstyle\sum_j p_j,
              \ \textstyle\sum_i p_i \le r.

    The set Δ_k(r) is the dual feasible set of the top-k hinge loss ``"alpha"``; ``rho
    = 1`` is the step of Prox-SDCA on that loss (the label's own coordinate, eliminated
    from the dual, returns as the bias term). With k = 1 and rho = 0 it is the
    projection onto {p ≥ 0, Σp ≤ r}.

    Parameters
    ----------
    %(projection_x)s
    %(topk_k)s
    %(projection_r_rho)s

    %(projection_returns_raises)s
        Also ``k`` outside [1, m], ``r`` or ``rho`` negative or not finite.
    %(projection_no_solution)s

    See Also
    --------
    topk_cone : The same set without the bound on the sum.
    box_simplex : The dual set of the ``"beta"`` top-k hinge loss.
    toprank.losses.topk_hinge : The loss whose dual set this is.

    Notes
    -----
    Either the bound Σp ≤ r is inactive and p is :func:`topk_cone`'s answer, or Σp = r,
    the bias term is constant and p = clip(x − t, 0, r/k) is a knapsack solution, optimal
    iff its multiplier is non-negative (Lemma 5 of [1]_); the knapsack is tried first.
    Expected O(m) per row, O(m log m) at worst.

    References
    ----------
    .. [1] M. Lapin, M. Hein, B. Schiele. *Top-k Multiclass SVM.* NIPS 2015, §4.3,
       Proposition 4 and Lemma 5.

    Examples
    --------
    >>> from toprank.projections import topk_simplex
    %(projection_example_x)s
    >>> topk_simplex(x, k=2)
    array([0.05, 0.5 , 0.  , 0.45])
    >>> np.round(topk_simplex(x, k=2, rho=1.0), 6)  # the Prox-SDCA step
    array([0.  , 0.35, 0.  , 0.35])
    """
    return _core.topk_simplex(
        as_array(x, "x"), as_count(k, "k"), as_real(r, "r"), as_real(rho, "rho"), n_jobs=as_jobs(n_jobs)
    )


@fill_doc
def bipartite_simplex(
    x: ArrayLike, positive: ArrayLike, r: float = 1.0, rho: float = 0.0, *, n_jobs: int | None = None
) -> FloatArray:
    r"""Biased projection onto the bipartite simplex, the dual set of the multi-label hinge loss.

    Splits each row by ``positive`` into x_Y (an example's labels) and x_N (the others)
    and solves

    .. math:: \min_{a, b} \|a - x_Y\|^2 + \|b - x_N\|^2 + \rho s^2
              \quad \text{s.t.} \quad a \ge 0,\ b \ge 0,
              \ \textstyle\sum a = \sum b = s \le r.

    This is the dual set of the multi-label hinge loss
    max{0, 1 + max_{l∈N} s_l − min_{j∈Y} s_j}. Both parts are free variables, so the
    loss's Prox-SDCA step is ``rho=0``; with one label y the positive part is a = s and
    b is ``topk_simplex(x_N + x_y, 1, r, 1 + rho)`` (the top-k simplex eliminates the
    label's coordinate, hence its ``rho=1``).

    Parameters
    ----------
    x : array_like of float32 or float64, shape (m,) or (n, m)
        The row(s) to project; float32 stays float32.
    positive : array_like of bool, the shape of ``x``
        Marks the entries of Y (an example's labels) in each row; the others are N.
        Every row needs at least one ``True`` and one ``False``.
    r : float, default 1.0
        The bound on the common sum s, ``>= 0``; ``math.inf`` for none.
    rho : float, default 0.0
        The weight of the bias term rho·s², ``>= 0``.
    %(projection_n_jobs)s

    Returns
    -------
    ndarray
        ``x``'s shape and dtype: a at the positive positions, b at the others.

    Raises
    ------
    %(projection_invalid_x)s
        Also ``positive`` not a boolean array of ``x``'s shape, a row with no positive
        or no negative entry, ``r`` or ``rho`` negative or NaN.
    %(projection_no_solution)s

    See Also
    --------
    topk_simplex : The single-label case.
    toprank.MultiLabelSVC : The estimator whose dual steps these are.

    Notes
    -----
    Exact and sorting-based, O(m log m) per row at worst: for a fixed s each part is a
    simplex projection with threshold t_Y(s), t_N(s), and s is 0 when max x_Y + max x_N
    ≤ 0, r when t_Y(r) + t_N(r) ≥ rho·r, else the root of t_Y(s) + t_N(s) = rho·s, found
    by walking the merged breakpoints of the two sorted parts. Only the entries that can
    be in a support are sorted.

    References
    ----------
    .. [1] M. Lapin, M. Hein, B. Schiele. *Analysis and Optimization of Loss Functions
       for Multiclass, Top-k, and Multilabel Classification.* IEEE TPAMI 2018.

    Examples
    --------
    >>> from toprank.projections import bipartite_simplex
    %(projection_example_x)s
    >>> positive = np.array([True, False, False, True])
    >>> p = bipartite_simplex(x, positive)
    >>> p
    array([0.3, 1. , 0. , 0.7])
    >>> bool(np.isclose(p[positive].sum(), p[~positive].sum()))  # Σa = Σb = s
    True
    """
    return _core.bipartite_simplex(
        as_array(x, "x"),
        as_array(positive, "positive"),
        as_real(r, "r"),
        as_real(rho, "rho"),
        n_jobs=as_jobs(n_jobs),
    )


@fill_doc
def box_simplex(x: ArrayLike, hi: float, r: float = 1.0, rho: float = 0.0, *, n_jobs: int | None = None) -> FloatArray:
    r"""Biased projection onto the box simplex, the dual set of the top-k hinge loss "beta".

    Solves

    .. math:: \min_p \|p - x\|^2 + \rho \big(\textstyle\sum_i p_i\big)^2
              \quad \text{s.t.} \quad 0 \le p_i \le hi,\ \textstyle\sum_i p_i \le r.

    With ``hi = r/k`` this is the dual set of the top-k hinge loss ``"beta"`` (Usunier
    et al.'s variant); ``rho = 1`` is its Prox-SDCA step.

    Parameters
    ----------
    %(projection_x)s
    hi : float
        The upper bound of every entry, finite and ``>= 0``.
    %(projection_r_rho)s

    %(projection_returns_raises)s
        Also ``hi``, ``r`` or ``rho`` negative or not finite.
    %(projection_no_solution)s

    See Also
    --------
    topk_simplex : The dual set of the ``"alpha"`` top-k hinge loss.
    knapsack : Bounds with an equality on the sum.

    Notes
    -----
    p_i = clip(x_i − t, 0, hi): either the sum bound is inactive and t = rho·Σp, or
    Σp = r and t solves a knapsack; both equations are solved exactly on the sorted
    prefix of the entries that can be positive. Expected O(m) per row, O(m log m) at
    worst.

    References
    ----------
    .. [1] M. Lapin, M. Hein, B. Schiele. *Top-k Multiclass SVM.* NIPS 2015, §5,
       Proposition 5, eqs. (9)-(10).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.projections import box_simplex
    >>> box_simplex(np.array([0.5, 1.2, -0.3, 0.9]), hi=0.4)
    array([0.2, 0.4, 0. , 0.4])
    """
    return _core.box_simplex(
        as_array(x, "x"), as_real(hi, "hi"), as_real(r, "r"), as_real(rho, "rho"), n_jobs=as_jobs(n_jobs)
    )


@fill_doc
def capped_simplex(x: ArrayLike, k: float, *, n_jobs: int | None = None) -> FloatArray:
    r"""Euclidean projection onto the (m, k)-simplex {0 ≤ p ≤ 1, Σp = k}.

    Solves

    .. math:: \min_p \|p - x\|^2 \quad \text{s.t.} \quad 0 \le p_i \le 1,
              \ \textstyle\sum_i p_i = k,

    whose solution is p_i = clip(x_i − t, 0, 1). k may be fractional; k = 1 is
    :func:`sparsemax`.

    %(capped_simplex_sections)s

    See Also
    --------
    capped_simplex_entropy : The entropic projection onto the same set.
    knapsack : General bounds lo ≤ p ≤ hi.
    rankmax : An adaptive projection onto this set.

    Notes
    -----
    A knapsack with bounds [0, 1], solved exactly on the sorted prefix of the k-or-so
    largest entries: expected O(m) per row, O(m log m) at worst.

    References
    ----------
    .. [1] W. Kong, W. Krichene, N. Mayoraz, S. Rendle, L. Zhang. *Rankmax: An Adaptive
       Projection Alternative to the Softmax Function.* NeurIPS 2020, §2, eq. (8) with
       α = 1.

    Examples
    --------
    >>> from toprank.projections import capped_simplex
    %(projection_example_x)s
    >>> capped_simplex(x, k=2)
    array([0.3, 1. , 0. , 0.7])
    >>> float(capped_simplex(x, k=2.5).sum())
    2.5
    """
    return _core.capped_simplex(as_array(x, "x"), as_real(k, "k"), n_jobs=as_jobs(n_jobs))


@fill_doc
def capped_simplex_entropy(x: ArrayLike, k: float, *, n_jobs: int | None = None) -> FloatArray:
    r"""Entropic projection onto the (m, k)-simplex; ``k=1`` is softmax.

    Solves

    .. math:: \min_p \sum_i p_i \log p_i - \langle x, p \rangle \quad \text{s.t.}
              \quad 0 \le p_i \le 1,\ \textstyle\sum_i p_i = k,

    whose solution is p_i = min(1, exp(x_i − c)) for the c that makes the sum k. Every
    entry is positive (the entropy keeps p away from 0).

    %(capped_simplex_sections)s

    See Also
    --------
    capped_simplex : The Euclidean projection onto the same set.
    toprank.losses.softmax_loss : The loss of its k = 1 case.

    Notes
    -----
    If the j largest entries are capped at 1, c_j = log Σ_{i>j} exp(x_[i]) − log(k − j);
    the smallest j consistent with the caps is the solution (j < k). The tail
    log-sum-exps are accumulated in the log domain, from the smallest kept entry up, so
    nothing overflows or cancels. O(m) plus a sort of the k-or-so largest entries.

    References
    ----------
    .. [1] W. Kong, W. Krichene, N. Mayoraz, S. Rendle, L. Zhang. *Rankmax: An Adaptive
       Projection Alternative to the Softmax Function.* NeurIPS 2020, §2, Theorem 2 with
       the negative entropy.

    Examples
    --------
    >>> from toprank.projections import capped_simplex_entropy
    %(projection_example_x)s
    >>> p = capped_simplex_entropy(x, k=1)
    >>> bool(np.allclose(p, np.exp(x) / np.exp(x).sum()))  # softmax
    True
    >>> np.round(capped_simplex_entropy(x, k=2), 4)
    array([0.4036, 0.8128, 0.1814, 0.6022])
    """
    return _core.capped_simplex_entropy(as_array(x, "x"), as_real(k, "k"), n_jobs=as_jobs(n_jobs))


@fill_doc
def sparsemax(z: ArrayLike, *, n_jobs: int | None = None) -> FloatArray:
    r"""Sparsemax: the Euclidean projection of ``z`` onto the probability simplex.

    .. math:: \operatorname{sparsemax}(z) = \operatorname*{argmin}_{p \ge 0,\ \sum p = 1}
              \|p - z\|^2,

    i.e. p_i = (z_i − τ(z))_+ with the threshold τ(z) that makes the sum 1. Unlike
    softmax it is exactly zero on the scores below τ(z).

    Parameters
    ----------
    z : array_like of float32 or float64, shape (m,) or (n, m)
        Scores, or a batch of n rows mapped independently (in parallel); float32 stays
        float32.
    %(projection_n_jobs)s

    Returns
    -------
    ndarray
        The probabilities, a new array of ``z``'s shape and dtype.

    Raises
    ------
    %(projection_invalid_z)s
    %(projection_no_solution)s

    See Also
    --------
    simplex : The projection with any radius, or onto Σp ≤ r.
    toprank.losses.sparsemax_loss : Its loss.
    capped_simplex_entropy : Softmax, with k = 1.

    Notes
    -----
    Expected O(m) per row (a selection and a sort of the support), O(m log m) at worst,
    where the paper sorts the whole row.

    %(refs_sparsemax)s

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.projections import sparsemax
    >>> sparsemax(np.array([0.5, 1.2, -0.3, 0.9]))
    array([0.  , 0.65, 0.  , 0.35])
    """
    return _core.sparsemax(as_array(z, "z"), n_jobs=as_jobs(n_jobs))


@fill_doc
def rankmax(z: ArrayLike, y: ArrayLike, k: int = 1, eta: float = 1.0, *, n_jobs: int | None = None) -> FloatArray:
    r"""Rankmax(z, y): an adaptive projection onto the (n, k)-simplex that keeps the label y.

    With z_[k] the k-th largest score and a margin eta > 0,

    .. math:: \mu_y = \min(z_y, z_{[k]}) - \eta, \qquad
              \operatorname{Rankmax}(z, y) = \operatorname{clip}(\alpha_y (z - \mu_y), 0, 1),
              \quad \textstyle\sum_i \operatorname{Rankmax}(z, y)_i = k,

    where α_y > 0 is the scale that makes the sum k (Proposition 3 of [1]_). Every score
    above μ_y gets positive mass, the label ``y`` included whatever its rank, which makes
    the cross-entropy −log Rankmax(z, y)_y finite (:func:`toprank.losses.rankmax_loss`).
    For k = 1 it is (z − z_y + eta)_+ / Σ_i (z_i − z_y + eta)_+.

    Parameters
    ----------
    z : array_like of float32 or float64, shape (n,) or (b, n)
        Scores over n classes, or a batch of b rows (mapped in parallel); float32 stays
        float32.
    y : int or array_like of int, shape (b,)
        The positive label: an int in [0, n) for a 1-D ``z``, one label per row for a
        2-D ``z``.
    k : int, default 1
        The mass to distribute, ``1 <= k < n``.
    eta : float, default 1.0
        The margin below min(z_y, z_[k]) at which the support ends, finite and ``> 0``.
    %(projection_n_jobs)s

    Returns
    -------
    ndarray
        Rankmax(z, y), a new array of ``z``'s shape and dtype, entries in [0, 1].

    Raises
    ------
    %(projection_invalid_z)s
        Also ``y`` not an integer (array) in [0, n) with one label per row, ``k``
        outside [1, n), ``eta`` not finite and > 0.
    %(projection_no_solution)s

    See Also
    --------
    toprank.losses.rankmax_loss : The Rankmax cross-entropy and its gradient.
    capped_simplex : The Euclidean projection onto the same set.
    toprank.RankmaxRanker : The ranking model trained with it.

    Notes
    -----
    Only the k largest scores matter: a size-k heap finds them in one pass, O(n log k)
    per row (never a full sort), and the number of entries capped at 1 is searched
    among them.

    References
    ----------
    .. [1] W. Kong, W. Krichene, N. Mayoraz, S. Rendle, L. Zhang. *Rankmax: An Adaptive
       Projection Alternative to the Softmax Function.* NeurIPS 2020, §3.2, Proposition 3,
       Definition 4, eqs. (11)-(13).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.projections import rankmax
    >>> z = np.array([0.5, 1.2, -0.3, 0.9])
    >>> np.round(rankmax(z, y=2), 4)  # the lowest score keeps positive mass
    array([0.24  , 0.3333, 0.1333, 0.2933])
    >>> np.round(rankmax(z, y=2, k=2), 4)
    array([0.48  , 0.6667, 0.2667, 0.5867])
    """
    z_arr = as_array(z, "z")
    return _core.rankmax(z_arr, as_labels(y, z_arr), as_count(k, "k"), as_real(eta, "eta"), n_jobs=as_jobs(n_jobs))
