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
from toprank._estimator import choice
from toprank._options import HINGE_VARIANTS, HingeVariant
from toprank._validation import as_array, as_count, as_jobs, as_labels, as_real
from toprank.exceptions import NoSolutionError

__all__ = ["rankmax_loss", "softmax_loss", "sparsemax_loss", "topk_hinge"]

FloatArray = NDArray[np.floating[Any]]
Loss = float | FloatArray


def _finite(name: str, loss: Any) -> None:
    """Raises if a loss overflowed float64 (finite scores whose differences exceed ~1e308):
    inf would pass for a value."""
    if not bool(np.all(np.isfinite(loss))):
        raise NoSolutionError(f"{name}: the loss overflows float64 for these scores; rescale them")


def _checked(name: str, result: Any) -> tuple[Loss, FloatArray]:
    """The core's (loss, grad), checked by `_finite`."""
    _finite(name, result[0])
    return result[0], result[1]


def rankmax_loss(
    z: ArrayLike, y: ArrayLike, k: int = 1, eta: float = 1.0, *, n_jobs: int | None = None
) -> tuple[Loss, FloatArray]:
    """Rankmax cross-entropy −log min(1, Rankmax(z, y)_y) (Kong et al. eq. (14)) and its gradient.

    For k = 1 the loss is log Σ_i (z_i − z_y + eta)_+ − log eta (eq. (15)-(16)).
    Requires 1 ≤ k < n; O(n log k) per row.
    """
    z_arr = as_array(z, "z")
    return _checked(
        "rankmax_loss",
        _core.rankmax_loss(z_arr, as_labels(y, z_arr), as_count(k, "k"), as_real(eta, "eta"), n_jobs=as_jobs(n_jobs)),
    )


def softmax_loss(z: ArrayLike, y: ArrayLike, *, n_jobs: int | None = None) -> tuple[Loss, FloatArray]:
    """Softmax cross-entropy log Σ exp(z) − z_y and its gradient softmax(z) − e_y."""
    z_arr = as_array(z, "z")
    return _checked("softmax_loss", _core.softmax_loss(z_arr, as_labels(y, z_arr), n_jobs=as_jobs(n_jobs)))


def sparsemax_loss(z: ArrayLike, y: ArrayLike, *, n_jobs: int | None = None) -> tuple[Loss, FloatArray]:
    """Sparsemax loss (Martins & Astudillo, 2016) and its gradient sparsemax(z) − e_y."""
    z_arr = as_array(z, "z")
    return _checked("sparsemax_loss", _core.sparsemax_loss(z_arr, as_labels(y, z_arr), n_jobs=as_jobs(n_jobs)))


def topk_hinge(
    scores: ArrayLike, y: ArrayLike, k: int, variant: HingeVariant = "alpha", *, n_jobs: int | None = None
) -> Loss:
    """Top-k hinge loss per row (Lapin et al.), over the classes j ≠ y with h_j = 1 + s_j − s_y.

    ``variant="alpha"``: (1/k)·max(0, Σ_{j≤k} h_[j]); ``variant="beta"``: (1/k)·Σ_{j≤k} max(0, h_[j]).
    k = 1 is the Crammer–Singer hinge. Requires 1 ≤ k ≤ m − 1. Returns a float for 1-D
    ``scores`` and an ``(n,)`` array for a batch.
    """
    s_arr = as_array(scores, "scores")
    choice(variant, "variant", HINGE_VARIANTS)
    loss: Loss = _core.topk_hinge(s_arr, as_labels(y, s_arr), as_count(k, "k"), variant, n_jobs=as_jobs(n_jobs))
    _finite("topk_hinge", loss)
    return loss
