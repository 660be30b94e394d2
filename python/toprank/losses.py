"""Losses on score vectors, with their gradients with respect to the scores.

Each function takes scores ``z`` as a 1-D array (one example; ``y`` an int) or a 2-D
array (one example per row; ``y`` an integer array), float32 or float64, and returns
``(loss, grad)``: a float and an array of z's shape for 1-D input, an ``(n,)`` array
and an ``(n, m)`` array for a batch. Rows run in parallel without the GIL.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from toprank import _core
from toprank._docs import fill_doc
from toprank._estimator import choice
from toprank._options import HINGE_VARIANTS, HingeVariant
from toprank._validation import as_array, as_count, as_jobs, as_labels, as_real, finite_loss
from toprank.exceptions import InvalidInputError

__all__ = [
    "multilabel_hinge",
    "multilabel_softmax_loss",
    "rankmax_loss",
    "softmax_loss",
    "sparsemax_loss",
    "topk_hinge",
]

FloatArray = NDArray[np.floating[Any]]
Loss = float | FloatArray


def _checked(name: str, result: Any) -> tuple[Loss, FloatArray]:
    """The core's (loss, grad), checked by `finite_loss`."""
    finite_loss(name, bool(np.all(np.isfinite(result[0]))))
    return result[0], result[1]


@fill_doc
def rankmax_loss(
    z: ArrayLike, y: ArrayLike, k: int = 1, eta: float = 1.0, *, n_jobs: int | None = None
) -> tuple[Loss, FloatArray]:
    r"""Rankmax cross-entropy and its gradient.

    .. math:: L(z, y) = -\log \min\big(1, \operatorname{Rankmax}(z, y)_y\big),

    with Rankmax the adaptive projection of :func:`toprank.projections.rankmax` (eq. (14)
    of [1]_). For k = 1,
    L = log Σ_i (z_i − z_y + eta)_+ − log eta (eqs. (15)-(16)), whose gradient is
    1/S on the support M = {i : z_i > z_y − eta} minus #M/S at y, S = Σ_i (z_i − z_y +
    eta)_+. The loss is 0 once y holds mass 1 (far enough ahead in the top k).

    Parameters
    ----------
    %(loss_z_y)s
    k : int, default 1
        The Rankmax mass, ``1 <= k < m``: y counts as right when in the top k.
    %(rankmax_eta)s
    %(loss_n_jobs)s

    %(loss_returns)s
        It sums to 0 in every row.

    Raises
    ------
    %(loss_invalid)s
        Also ``k`` outside [1, m), ``eta`` not finite and > 0.
    %(loss_overflow)s

    See Also
    --------
    toprank.projections.rankmax : The projection.
    softmax_loss, sparsemax_loss : The other probability-mapping losses.
    toprank.RankmaxRanker : The ranking model trained with it.

    Notes
    -----
    O(m log k) per row (the k largest scores by a heap). The gradient is an element of
    the Clarke subdifferential where the loss is not differentiable.

    References
    ----------
    .. [1] W. Kong, W. Krichene, N. Mayoraz, S. Rendle, L. Zhang. *Rankmax: An Adaptive
       Projection Alternative to the Softmax Function.* NeurIPS 2020, eqs. (14)-(16).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.losses import rankmax_loss
    >>> z = np.array([0.5, 1.2, -0.3, 0.9])
    >>> loss, grad = rankmax_loss(z, 1)
    >>> round(loss, 4), grad  # log((0.3 + 1 + 0.7) / 1)
    (0.6931, array([ 0.5, -1. ,  0. ,  0.5]))
    >>> loss, grad = rankmax_loss(np.vstack([z, z]), [1, 2], k=2)  # a batch
    >>> loss.shape, grad.shape
    ((2,), (2, 4))
    """
    z_arr = as_array(z, "z")
    return _checked(
        "rankmax_loss",
        _core.rankmax_loss(z_arr, as_labels(y, z_arr), as_count(k, "k"), as_real(eta, "eta"), n_jobs=as_jobs(n_jobs)),
    )


@fill_doc
def softmax_loss(z: ArrayLike, y: ArrayLike, *, n_jobs: int | None = None) -> tuple[Loss, FloatArray]:
    r"""Softmax cross-entropy (multinomial logistic loss) and its gradient.

    .. math:: L(z, y) = \log \sum_i e^{z_i} - z_y, \qquad
              \nabla_z L = \operatorname{softmax}(z) - e_y.

    Computed with the max shift, so no finite z overflows the exponentials.

    %(loss_sections)s

    See Also
    --------
    sparsemax_loss, rankmax_loss : Losses of sparse probability mappings.
    toprank.projections.capped_simplex_entropy : Softmax (k = 1) and its top-k version.

    Notes
    -----
    O(m) per row.

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.losses import softmax_loss
    >>> loss, grad = softmax_loss(np.array([0.5, 1.2, -0.3, 0.9]), 2)
    >>> round(loss, 4), np.round(grad, 4)
    (2.4004, array([ 0.2018,  0.4064, -0.9093,  0.3011]))
    """
    z_arr = as_array(z, "z")
    return _checked("softmax_loss", _core.softmax_loss(z_arr, as_labels(y, z_arr), n_jobs=as_jobs(n_jobs)))


@fill_doc
def sparsemax_loss(z: ArrayLike, y: ArrayLike, *, n_jobs: int | None = None) -> tuple[Loss, FloatArray]:
    r"""Sparsemax loss and its gradient.

    With p = sparsemax(z) (:func:`toprank.projections.sparsemax`),

    .. math:: L(z, y) = \sum_i p_i (z_i - z_y) - \tfrac12 \|p\|^2 + \tfrac12 \ge 0, \qquad
              \nabla_z L = p - e_y,

    the paper's −z_y + ½ Σ_{j∈S(z)} (z_j² − τ(z)²) + ½ written so that it is invariant to
    shifts of z and does not square large scores. It is 0 exactly when p = e_y.

    %(loss_sections)s

    See Also
    --------
    toprank.projections.sparsemax : The mapping.
    softmax_loss, rankmax_loss : The other probability-mapping losses.

    Notes
    -----
    Expected O(m) per row (the sparsemax threshold), O(m log m) at worst.

    References
    ----------
    .. [1] A. Martins, R. Astudillo. *From Softmax to Sparsemax: A Sparse Model of
       Attention and Multi-Label Classification.* ICML 2016, §3.

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.losses import sparsemax_loss
    >>> loss, grad = sparsemax_loss(np.array([0.5, 1.2, -0.3, 0.9]), 1)
    >>> round(loss, 4), grad
    (0.1225, array([ 0.  , -0.35,  0.  ,  0.35]))
    """
    z_arr = as_array(z, "z")
    return _checked("sparsemax_loss", _core.sparsemax_loss(z_arr, as_labels(y, z_arr), n_jobs=as_jobs(n_jobs)))


@fill_doc
def topk_hinge(
    scores: ArrayLike,
    y: ArrayLike,
    k: int,
    variant: HingeVariant = "alpha",
    smoothing: float = 0.0,
    *,
    n_jobs: int | None = None,
) -> tuple[Loss, FloatArray]:
    r"""Top-k hinge loss per example, in its two variants, optionally smoothed, and its gradient.

    Over the m − 1 classes j ≠ y, with h_j = 1 + s_j − s_y and h_[1] ≥ h_[2] ≥ … sorted,

    .. math:: \text{alpha}: \ \tfrac1k \max\Big(0, \sum_{j \le k} h_{[j]}\Big), \qquad
              \text{beta}: \ \tfrac1k \sum_{j \le k} \max(0, h_{[j]}).

    alpha ≤ beta; both are 0 once y outscores every other class by 1 and both are the
    Crammer–Singer hinge for k = 1. alpha is the loss of :class:`toprank.TopKSVC`'s
    ``loss="alpha"`` (dual set S = :func:`toprank.projections.topk_simplex`), beta of
    ``loss="beta"`` (dual set S = :func:`toprank.projections.box_simplex`). Both are
    L(h) = max_{p ∈ S} ⟨h, p⟩; the smoothing γ = ``smoothing`` of the SVM subtracts
    (γ/2)‖p‖² inside the max (the Moreau envelope of L, differentiable with a 1/γ-Lipschitz
    gradient, L − γ/2 ≤ L_γ ≤ L), the loss :class:`toprank.TopKSVC` minimises with
    ``smoothing=γ``.

    Parameters
    ----------
    scores : array_like of float32 or float64, shape (m,) or (n, m)
        Scores over m classes of one example or of a batch of n (rows in parallel).
    y : int or array_like of int, shape (n,)
        The true class: an int in [0, m) for 1-D ``scores``, one per row for a batch.
    %(topk_hinge_k_variant)s
    smoothing : float, default 0.0
        The smoothing γ, finite and ``>= 0``; 0 is the (non-smooth) loss itself.
    n_jobs : int or None, default None
        Threads for a batch: ``None`` one, ``-1`` all cores, ``-2`` all but one.

    Returns
    -------
    loss : float or ndarray of shape (n,)
        A float for 1-D ``scores``; one loss per row, in the scores' dtype, for a batch.
    grad : ndarray
        The gradient with respect to ``scores``, of their shape and dtype: p_j at j ≠ y
        and −Σ_j p_j at y, p the maximiser above (for γ = 0 a vertex of S, 1/k on the k
        largest h_j that count: an element of the subdifferential). It sums to 0 in every row.

    Raises
    ------
    InvalidInputError
        ``scores`` empty, not 1-D or 2-D, not float32/float64, or with NaN or
        infinite entries; ``y`` not an integer (array) in [0, m); ``k`` outside
        [1, m − 1]; an unknown ``variant``; ``smoothing`` negative or not finite; a bad
        ``n_jobs``.
    NoSolutionError
        The loss overflows float64 (finite scores whose differences exceed ~1e308):
        rescale the scores.

    See Also
    --------
    toprank.TopKSVC : The SVM trained on these losses.
    toprank.projections.topk_simplex : The dual set of alpha.
    toprank.projections.box_simplex : The dual set of beta.

    Notes
    -----
    The k largest h_j are selected in O(m) per row; with smoothing, p = Π_S(h/γ) is one
    projection, expected O(m). A γ below 1e-12 times the largest score magnitude (plus
    1) leaves the loss unsmoothed: h/γ would be beyond what the projection resolves.

    References
    ----------
    .. [1] M. Lapin, M. Hein, B. Schiele. *Top-k Multiclass SVM.* NIPS 2015, eq. (3)
       (alpha) and eq. (5) (beta, Usunier et al.'s variant).
    .. [2] M. Lapin, M. Hein, B. Schiele. *Loss Functions for Top-k Error: Analysis and
       Insights.* CVPR 2016, §2.2 (the smoothed top-k hinge).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.losses import topk_hinge
    >>> s = np.array([0.0, 1.0, 0.2, -5.0])  # y = 1 leads; h = (0, 0.2, -5)
    >>> topk_hinge(s, 1, k=3)[0], round(topk_hinge(s, 1, k=3, variant="beta")[0], 4)
    (0.0, 0.0667)
    >>> loss, grad = topk_hinge(np.array([[0.5, 1.2, -0.3, 0.9]] * 2), [2, 1], k=2)  # a batch
    >>> loss, grad
    (array([2.35, 0.5 ]), array([[ 0. ,  0.5, -1. ,  0.5],
           [ 0.5, -1. ,  0. ,  0.5]]))
    >>> loss, grad = topk_hinge(np.array([0.5, 1.2, -0.3, 0.9]), 1, k=2, smoothing=1.0)
    >>> loss, grad  # below the unsmoothed 0.5
    (0.25, array([ 0.5, -1. ,  0. ,  0.5]))
    """
    s_arr = as_array(scores, "scores")
    choice(variant, "variant", HINGE_VARIANTS)
    return _checked(
        "topk_hinge",
        _core.topk_hinge(
            s_arr,
            as_labels(y, s_arr),
            as_count(k, "k"),
            variant,
            as_real(smoothing, "smoothing"),
            n_jobs=as_jobs(n_jobs),
        ),
    )


def _label_sets(y: ArrayLike, scores: NDArray[Any]) -> NDArray[np.bool_]:
    """``y`` as a boolean indicator of ``scores``' shape (bool, or 0/1 integers)."""
    arr = np.asarray(y)
    if arr.shape != scores.shape:
        raise InvalidInputError(f"y: expected a 0/1 indicator of the scores' shape {scores.shape}, got {arr.shape}")
    if arr.dtype.kind in "iu" and bool(np.all((arr == 0) | (arr == 1))):
        return arr.astype(bool)
    if arr.dtype.kind != "b":
        raise InvalidInputError(f"y: expected boolean or 0/1 integer labels, got dtype {arr.dtype} with other values")
    return arr


@fill_doc
def multilabel_hinge(
    scores: ArrayLike, y: ArrayLike, smoothing: float = 0.0, *, n_jobs: int | None = None
) -> tuple[Loss, FloatArray]:
    r"""Multi-label hinge loss per example, optionally smoothed, and its gradient.

    With Y an example's labels and N its other classes,

    .. math:: L(s; Y) = \max\big(0,\ 1 + \max_{l \in N} s_l - \min_{j \in Y} s_j\big)
              = \max_{p \in B} \ \langle h, p \rangle, \qquad h = (\tfrac12 - s_Y,\ \tfrac12 + s_N),

    0 once every label outscores every other class by 1; B = {p ≥ 0, Σp_Y = Σp_N ≤ 1}
    is the bipartite simplex (:func:`toprank.projections.bipartite_simplex`). The
    smoothing γ = ``smoothing`` subtracts (γ/2)‖p‖² inside the max (the Moreau envelope,
    with a 1/γ-Lipschitz gradient), the loss :class:`toprank.MultiLabelSVC` minimises
    with ``loss="hinge"`` and ``smoothing=γ``. With one label it is the Crammer–Singer
    hinge (unsmoothed).

    Parameters
    ----------
    scores : array_like of float32 or float64, shape (m,) or (n, m)
        Scores over m classes of one example or of a batch of n (rows in parallel).
    %(loss_label_sets)s
    smoothing : float, default 0.0
        The smoothing γ, finite and ``>= 0``; 0 is the (non-smooth) loss itself.
    %(loss_n_jobs)s

    Returns
    -------
    loss : float or ndarray of shape (n,)
        A float for 1-D ``scores``; one loss per row, in the scores' dtype, for a batch.
    grad : ndarray
        The gradient with respect to ``scores``, of their shape and dtype: −p on the
        labels and p elsewhere, p the maximiser above (for γ = 0 the vertex with 1 on
        the lowest label and on the highest other class while the margin is violated:
        an element of the subdifferential). It sums to 0 in every row.

    Raises
    ------
    InvalidInputError
        ``scores`` empty, not 1-D or 2-D, not float32/float64, or with NaN or infinite
        entries; ``y`` not a boolean (or 0/1) array of the scores' shape, or a row with
        no label or with every class a label; ``smoothing`` negative or not finite; a
        bad ``n_jobs``.
    %(loss_overflow)s

    See Also
    --------
    toprank.MultiLabelSVC : The SVM trained on this loss.
    multilabel_softmax_loss : The cross-entropy counterpart.

    %(refs_lapin_multilabel)s

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.losses import multilabel_hinge
    >>> s = np.array([2.0, 1.5, 0.7, -1.0])
    >>> y = np.array([True, True, False, False])  # labels 0 and 1
    >>> loss, grad = multilabel_hinge(s, y)  # 1 + 0.7 - 1.5
    >>> round(loss, 4), grad
    (0.2, array([ 0., -1.,  1.,  0.]))
    >>> round(multilabel_hinge(s, y, smoothing=1.0)[0], 4)
    0.01
    """
    s_arr = as_array(scores, "scores")
    result = _core.multilabel_hinge(
        s_arr, _label_sets(y, s_arr), as_real(smoothing, "smoothing"), n_jobs=as_jobs(n_jobs)
    )
    return _checked("multilabel_hinge", result)


@fill_doc
def multilabel_softmax_loss(z: ArrayLike, y: ArrayLike, *, n_jobs: int | None = None) -> tuple[Loss, FloatArray]:
    r"""Multi-label softmax loss: the cross-entropy of softmax(z) against the uniform
    distribution on the labels, and its gradient.

    .. math:: L(z; Y) = \log \sum_j e^{z_j} - \frac{1}{|Y|} \sum_{j \in Y} z_j,
              \qquad \nabla L = \operatorname{softmax}(z) - \mathbb{1}_Y / |Y|,

    the loss of :class:`toprank.MultiLabelSVC` with ``loss="softmax"``; with one label
    it is :func:`softmax_loss`.

    Parameters
    ----------
    z : array_like of float32 or float64, shape (m,) or (n, m)
        Scores over m classes of one example, or a batch of n examples (rows computed in
        parallel without the GIL). float32 stays float32.
    %(loss_label_sets)s
    %(loss_n_jobs)s

    %(loss_returns)s
        It sums to 0 in every row.

    Raises
    ------
    InvalidInputError
        ``z`` empty, not 1-D or 2-D, not float32/float64, or with NaN or infinite
        entries; ``y`` not a boolean (or 0/1) array of ``z``'s shape, or a row with no
        label or with every class a label; a bad ``n_jobs``.
    %(loss_overflow)s

    See Also
    --------
    multilabel_hinge : The hinge counterpart.
    softmax_loss : The one-label case.

    %(refs_lapin_multilabel)s

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.losses import multilabel_softmax_loss
    >>> z = np.array([[2.0, 1.5, 0.7, -1.0]])
    >>> loss, grad = multilabel_softmax_loss(z, [[1, 1, 0, 0]])
    >>> np.round(loss, 4), bool(np.isclose(grad.sum(), 0.0))
    (array([0.9069]), True)
    """
    z_arr = as_array(z, "z")
    return _checked(
        "multilabel_softmax_loss", _core.multilabel_softmax_loss(z_arr, _label_sets(y, z_arr), n_jobs=as_jobs(n_jobs))
    )
