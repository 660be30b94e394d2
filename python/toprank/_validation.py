"""Argument conversion shared by the facade modules.

The compiled core checks dtypes, shapes, finiteness and parameter ranges itself (so
that calling ``toprank._core`` directly is just as safe); this module turns
array-likes into arrays, labels into the int64 form the core takes, and Python
numbers into values the core can receive, raising :class:`InvalidInputError` naming
the argument where a conversion would otherwise fail with a generic error.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import (
    _check_sample_weight,
    check_array,
    check_consistent_length,
    column_or_1d,
    validate_data,
)

from toprank.exceptions import InvalidInputError, NoSolutionError

_INT64_MAX = int(np.iinfo(np.int64).max)


def as_array(x: ArrayLike, name: str) -> NDArray[Any]:
    """``x`` as an ndarray without copying arrays (the core validates the dtype).

    Big-endian floats are converted to native byte order.
    """
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged lists and the like
        raise InvalidInputError(f"{name}: cannot be converted to an array ({exc})") from exc
    if arr.dtype.kind == "f" and not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def as_count(value: Any, name: str) -> int:
    """An integer parameter (``k``); bools and out-of-int64 values are refused."""
    if isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(f"{name}: expected an integer, got a bool")
    try:
        number = operator.index(value)
    except TypeError as exc:
        raise InvalidInputError(f"{name}: expected an integer, got {type(value).__name__}") from exc
    if abs(number) > _INT64_MAX:
        raise InvalidInputError(f"{name}: {number} is out of range")
    return number


def as_flag(value: Any, name: str) -> bool:
    """A boolean parameter: True or False (NumPy's too), nothing that merely converts."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def as_jobs(n_jobs: Any) -> int | None:
    """``n_jobs``: None or an integer (the core checks its value)."""
    if n_jobs is None:
        return None
    count = as_count(n_jobs, "n_jobs")
    if abs(count) >= 2**31:
        raise InvalidInputError(f"n_jobs: {count} is out of range")
    return count


def as_real(value: Any, name: str) -> float:
    """A real parameter (``r``, ``rho``, ``k`` of the capped simplices...)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"{name}: expected a real number, got {type(value).__name__}")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(f"{name}: expected a finite real number, got {value!r}") from exc
    if math.isinf(number) and not (isinstance(value, float) and math.isinf(value)):
        raise InvalidInputError(f"{name}: {value!r} is out of range")
    return number


def finite_loss(name: str, all_finite: bool) -> None:
    """Raises unless a loss's values are ``all_finite``: a loss overflows float64 for
    finite scores whose differences exceed ~1e308, and inf would pass for a value."""
    if not all_finite:
        raise NoSolutionError(f"{name}: the loss overflows float64 for these scores; rescale them")


def as_labels(y: ArrayLike, z: NDArray[Any], name: str = "y") -> Any:
    """An int (1-D ``z``) or an int64 array (2-D ``z``) of class indices.

    When ``z`` itself is unusable (empty, not 1-D or 2-D) ``y`` is passed through
    unchanged so that the core reports the problem with ``z`` first.
    """
    if z.ndim not in (1, 2) or z.size == 0:
        return y
    if z.ndim == 1:
        if isinstance(y, (bool, np.bool_)):
            raise InvalidInputError(f"{name}: expected an integer label, got a bool")
        try:
            label = operator.index(y)  # type: ignore[arg-type]
        except TypeError as exc:
            arr = np.asarray(y)
            if arr.ndim == 0 and arr.dtype.kind in "iu":
                label = int(arr)
            else:
                raise InvalidInputError(
                    f"{name}: expected an integer label for a 1-D score vector, got {type(y).__name__}"
                ) from exc
        return label  # the core checks its range
    arr = np.asarray(y)
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{name}: expected integer labels, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise InvalidInputError(f"{name}: expected a 1-D array of labels, got shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > _INT64_MAX:
        raise InvalidInputError(f"{name}: label {int(arr.max())} out of range [0, {z.shape[1]})")
    return np.ascontiguousarray(arr, dtype=np.int64)


def indicator_matrix(x: Any, name: str, shape: tuple[int, int] | None = None) -> Any:
    """A 0/1 (or boolean) indicator matrix, dense or scipy.sparse, as a canonical boolean
    CSR matrix: duplicates summed, explicit zeros dropped, column indices sorted.

    ``shape``, when given, is the shape ``x`` must have; otherwise ``x`` must be 2-D.
    """
    if sp.issparse(x):
        sparse_structure(x, name)
        got = tuple(int(d) for d in x.shape)
        csr = sp.csr_matrix(x, copy=True)
        csr.sum_duplicates()
        data = np.asarray(csr.data)
    else:
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError) as exc:
            raise InvalidInputError(f"{name}: cannot be converted to an array ({exc})") from exc
        if arr.dtype == object:
            # pandas' nullable Int64 / boolean columns arrive as objects; a missing value
            # becomes NaN and fails the 0/1 test below.
            try:
                arr = arr.astype(np.float64)
            except (ValueError, TypeError) as exc:
                raise InvalidInputError(f"{name}: expected 0/1 or boolean values ({exc})") from None
        got = tuple(int(d) for d in arr.shape)
        csr = None
        data = arr
    if shape is not None and got != shape:
        raise InvalidInputError(f"{name}: expected shape {shape} matching scores, got {got}")
    if len(got) != 2:
        raise InvalidInputError(f"{name}: expected a 2-D 0/1 indicator matrix, got shape {got}")
    if data.dtype.kind not in "biuf":
        raise InvalidInputError(f"{name}: expected 0/1 or boolean values, got dtype {data.dtype}")
    if data.dtype.kind != "b" and not bool(np.all((data == 0) | (data == 1))):
        raise InvalidInputError(f"{name}: expected only 0/1 values")
    if csr is None:
        csr = sp.csr_matrix(data != 0)
    else:
        csr.data = data != 0
        csr.eliminate_zeros()
    csr.sort_indices()
    return csr


INT_MAX = 2**63 - 1
# The kernels' polynomial degree is a 32-bit signed integer in the core (powi).
DEGREE_MAX = 2**31 - 1


def sample_weights(sample_weight: Any, n: int) -> NDArray[np.float64] | None:
    """``sample_weight`` as n contiguous float64 values (None stays None: the unweighted
    fit); shape and type errors name it. Its range (finite, >= 0, not all 0) is the core's
    to check."""
    if sample_weight is None:
        return None
    try:
        weights = _check_sample_weight(sample_weight, np.empty((n, 0)), dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"sample_weight: {error}") from None
    return np.ascontiguousarray(weights, dtype=np.float64)


def bounded_real(value: Any, name: str, *, low: float, strict: bool) -> float:
    """A finite real ``> low`` (``strict``) or ``>= low``; anything else raises naming ``name``."""
    v = as_real(value, name)
    if not np.isfinite(v) or v < low or (strict and v == low):
        sign = ">" if strict else ">="
        raise InvalidInputError(f"{name}: must be finite and {sign} {low}, got {value!r}")
    return v


def bounded_int(value: Any, name: str, *, low: int, high: int = INT_MAX) -> int:
    """An integer in [``low``, ``high``] (at most 2⁶³ − 1); anything else raises naming
    ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(f"{name}: expected an integer, got {type(value).__name__}")
    if int(value) < low:
        raise InvalidInputError(f"{name}: must be >= {low}, got {value!r}")
    # The core takes 64-bit sizes; larger Python ints would fail without naming the argument.
    if int(value) > high:
        raise InvalidInputError(f"{name}: must be <= {high}, got {value!r}")
    return int(value)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def caller_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the first frame outside toprank:
    a fit reaches its warning through wrappers (`restores_on_failure`, the distributed
    driver), so a fixed level would name one of toprank's own lines."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def warn_not_converged(
    estimator: str,
    status: str,
    steps: int,
    unit: str,
    gap: float,
    tol: float,
    advice: str,
    measure: str = "relative duality gap",
) -> None:
    """The ConvergenceWarning of a solve that stopped short of ``tol``, at the caller's line:
    what happened (``status`` after ``steps`` ``unit``, with its stopping ``measure`` at
    ``gap``), and what to change and why (``advice``, from the estimator, which knows its
    problem)."""
    why = {
        "max_iter": f"ran out of {unit}",
        "no_progress": "made no progress over a whole check interval (neither the dual objective rose nor "
        "the gap closed: rounding now dominates the steps, so a smaller gap cannot be certified "
        "in floating point)",
    }.get(status, "did not converge")
    warnings.warn(
        f"{estimator} stopped with status {status!r}: it {why} after {steps} {unit}, at a {measure} of "
        f"{gap:.3g} (tol={tol:g}). {advice}",
        ConvergenceWarning,
        stacklevel=caller_stacklevel(),
    )


_Fit = TypeVar("_Fit", bound=Callable[..., Any])


def restores_on_failure(fit: _Fit) -> _Fit:
    """A ``fit`` that raises — bad input found late, Ctrl-C, a solver error — leaves the
    estimator as it was. Validation sets n_features_in_, classes_ and kernel parameters
    before the solve; without this, the previous model would be paired with them (its
    coefficients predicting the new labels, with the new gamma)."""

    @functools.wraps(fit)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    return guarded  # type: ignore[return-value]


def intercept_scaling(value: Any) -> float:
    """``intercept_scaling``: positive, with a finite square (the constant feature's
    weight enters the kernel and the row norms squared)."""
    scaling = bounded_real(value, "intercept_scaling", low=0.0, strict=True)
    if not math.isfinite(scaling * scaling):
        raise InvalidInputError(f"intercept_scaling: its square overflows float64, got {scaling!r}")
    return scaling


def sparse_structure(X: Any, name: str) -> None:
    """Checks a scipy sparse matrix's index arrays before anything converts or sorts it:
    scipy's own routines read and write out of bounds (a segfault, or a C++ error) on a
    malformed ``indptr`` or out-of-range indices.

    It also refuses complex values, dense or sparse, as the first check of every input
    (`validate_input` calls it before scikit-learn's): scikit-learn's own refusal prints
    the whole array into its message and names neither the argument nor the dtype."""
    dtype = getattr(X, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind == "c":
        # scikit-learn's wording, which its estimator checks look for.
        raise InvalidInputError(
            f"{name}: Complex data not supported (dtype {dtype}); pass real values, e.g. {name}.real or abs({name})"
        )
    fmt = getattr(X, "format", None)
    if fmt in ("csr", "csc", "bsr"):
        blocks = X.blocksize if fmt == "bsr" else (1, 1)
        major, minor = X.shape if fmt != "csc" else X.shape[::-1]
        major, minor = major // blocks[0 if fmt != "csc" else 1], minor // blocks[1 if fmt != "csc" else 0]
        indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
        nnz = int(indptr[-1]) if indptr.size else -1
        if (
            indptr.shape != (major + 1,)
            or indptr[0] != 0
            or not 0 <= nnz <= min(indices.size, len(X.data))
            or bool(np.any(np.diff(indptr) < 0))
        ):
            raise InvalidInputError(
                f"{name}.indptr: must have {major + 1} entries, start at 0, never decrease "
                f"and end at most at the number of stored entries, {indices.size}"
            )
        if nnz and (int(indices[:nnz].min()) < 0 or int(indices[:nnz].max()) >= minor):
            raise InvalidInputError(f"{name}.indices: must lie in [0, {minor})")
    elif fmt == "coo":
        row = np.asarray(X.row if hasattr(X, "row") else X.coords[0])
        col = np.asarray(X.col if hasattr(X, "col") else X.coords[1])
        if not (row.size == col.size == np.asarray(X.data).size):
            raise InvalidInputError(f"{name}: row, col and data must have the same length")
        if row.size and (
            int(row.min()) < 0 or int(row.max()) >= X.shape[0] or int(col.min()) < 0 or int(col.max()) >= X.shape[1]
        ):
            raise InvalidInputError(f"{name}: row or column indices out of range for shape {X.shape}")


def validate_input(estimator: Any, X: Any, y: Any = "no_validation", *, codes: bool = False, **kwargs: Any) -> Any:
    """scikit-learn's ``validate_data`` for an estimator's X (and y), with a sparse X's
    index arrays checked first (`sparse_structure`): its conversions (CSC to CSR) and
    the products at prediction would read a malformed matrix out of bounds.

    A :class:`toprank.pq.CompressedMatrix` X is handled here, for every estimator:
    where the caller reads the codes (``codes=True``: the linear ``TopKSVC`` and
    ``TraceNormLogisticRegression`` fits, whose core decodes row by row, and the linear
    models' products ``X @ W`` at prediction) it is returned as it is, its feature
    names and count set or checked and y validated as ``validate_data`` would;
    otherwise it is decoded, and the fit or prediction works on the float32 matrix X̂
    — the result of ``np.asarray(X)`` exactly, with its n × d floats in memory."""
    from toprank.pq import CompressedMatrix  # noqa: PLC0415 (toprank.pq imports this module)

    if isinstance(X, CompressedMatrix):
        if codes:
            return _validate_codes(
                estimator, X, y, reset=kwargs.get("reset", True), least=kwargs.get("ensure_min_samples", 1)
            )
        X = X.toarray()
    sparse_structure(X, "X")
    return validate_data(estimator, X, y, **kwargs)


def _validate_codes(estimator: Any, X: Any, y: Any, *, reset: bool, least: int) -> Any:
    """`validate_input` of a CompressedMatrix that stays coded: its codebooks current, at
    least ``least`` rows, the feature names (none) and count set (``reset``) or checked,
    and y, if given, a 1-D array of one label per row."""
    X.codebooks  # noqa: B018 (raises if the quantizer was refitted)
    if len(X) < least:
        raise InvalidInputError(f"X: needs at least {least} samples, got {len(X)}")
    validate_data(estimator, X, skip_check_array=True, reset=reset)
    if isinstance(y, str) and y == "no_validation":
        return X
    # As validate_data checks y for the other inputs (NaN among object labels too).
    y = column_or_1d(check_array(y, ensure_2d=False, dtype=None, input_name="y"), warn=True)
    check_consistent_length(X.codes, y)
    return X, y


def canonical_csr(X: Any, name: str = "X") -> Any:
    """A sparse ``X`` as CSR with sorted, duplicate-free indices (copied only if it is not
    already), its structure checked first (`sparse_structure`)."""
    sparse_structure(X, name)
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X
