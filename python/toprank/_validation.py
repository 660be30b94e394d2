"""Argument conversion shared by the facade modules.

The compiled core checks dtypes, shapes, finiteness and parameter ranges itself (so
that calling ``toprank._core`` directly is just as safe); this module only turns
array-likes into arrays and labels into the int64 form the core takes.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from toprank.exceptions import InvalidInputError


def as_array(x: ArrayLike, name: str) -> NDArray[Any]:
    """``x`` as an ndarray without copying arrays (the core validates the dtype)."""
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged lists and the like
        raise InvalidInputError(f"{name}: cannot be converted to an array ({exc})") from exc


def as_labels(y: ArrayLike, z: NDArray[Any], name: str = "y") -> int | NDArray[np.int64]:
    """An int (1-D ``z``) or an int64 array (2-D ``z``) of class indices."""
    if z.ndim == 1:
        if isinstance(y, (bool, np.bool_)):
            raise InvalidInputError(f"{name}: expected an integer label, got a bool")
        try:
            return operator.index(y)  # type: ignore[arg-type]
        except TypeError as exc:
            arr = np.asarray(y)
            if arr.ndim == 0 and arr.dtype.kind in "iu":
                return int(arr)
            raise InvalidInputError(f"{name}: expected an integer label for a 1-D score vector, got {type(y).__name__}") from exc
    arr = np.asarray(y)
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{name}: expected integer labels, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise InvalidInputError(f"{name}: expected a 1-D array of labels, got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.int64)
