"""What the machine and the arithmetic can hold: sizes and scales refused up front.

Memory: a size parameter such as ``n_components=2**31`` makes an estimator ask for tens of GiB:
NumPy then fails with a ``MemoryError`` that names no parameter, or — with the kernel's
memory overcommit — the allocation succeeds and the process is killed when the pages are
touched. The estimators compute what a parameter will cost and call
:func:`check_allocation` first, which compares it with the machine's physical memory.

Scale: a solver that squares quantities proportional to X (row norms, curvatures, an
optimiser's second moments) turns an X of 1e300 into infinities, which then surface as
a solver "diverging" or "finding no solution" — a message about the wrong cause.
:func:`check_row_norms` refuses such an X first, naming it and the remedy.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from toprank.exceptions import InvalidInputError


def physical_memory() -> int | None:
    """Bytes of physical memory, or None where the OS does not say (``os.sysconf``)."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return int(pages) * int(page_size) if pages > 0 and page_size > 0 else None


def format_bytes(n: int) -> str:
    """``n`` bytes in binary units (``72.0 GiB``)."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def check_allocation(name: str, value: Any, nbytes: int, what: str) -> None:
    """Raises :class:`InvalidInputError` naming ``name`` when ``nbytes`` (what ``value``
    of that parameter makes the estimator allocate, described by ``what``) exceeds the
    physical memory — or, where that is unknown, the 2⁶³-byte address space."""
    limit = physical_memory()
    if nbytes > (limit if limit is not None else 2**63 - 1):
        have = f"the {format_bytes(limit)} of memory of this machine" if limit is not None else "what can be addressed"
        raise InvalidInputError(
            f"{name}: {value!r} needs {format_bytes(nbytes)} ({nbytes} bytes) for {what}, more than {have}"
        )


#: Stored entries of a sparse X squared at a time by :func:`row_sq_norms` (2 MiB of float64).
_SQUARED_AT_ONCE = 1 << 18


def row_sq_norms(X: Any) -> NDArray[np.float64]:
    """The squared Euclidean norm of every row of ``X`` (dense, or sparse in canonical
    form: the callers sum duplicates first), in float64, without a copy of ``X``: a
    sparse ``X`` is squared in runs of rows of about 2^18 stored entries
    (``X.multiply(X)`` allocated a second X: 280 MiB more at the end of a Fashion-MNIST
    fit that did not converge, for its advice)."""
    n = int(X.shape[0])
    if not sp.issparse(X):
        with np.errstate(over="ignore"):
            dense: NDArray[np.float64] = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        return dense
    csr = sp.csr_matrix(X)  # CSR stays as it is; other formats convert once
    indptr, data = csr.indptr, csr.data
    norms = np.zeros(n)
    start = 0
    while start < n:
        stop = int(np.searchsorted(indptr, indptr[start] + _SQUARED_AT_ONCE, side="right")) - 1
        stop = min(max(stop, start + 1), n)
        counts = np.diff(indptr[start : stop + 1])
        with np.errstate(over="ignore"):
            squares = np.square(data[indptr[start] : indptr[stop]], dtype=np.float64)
        norms[start:stop] = np.bincount(np.repeat(np.arange(stop - start), counts), squares, stop - start)
        start = stop
    return norms


def check_row_norms(X: Any, dtype: type[np.floating[Any]], why: str) -> None:
    """Raises :class:`InvalidInputError` naming X when the squared norm of one of its rows
    (dense, or sparse in canonical form) overflows ``dtype``; ``why`` says what in the
    solver squares X."""
    values = X.data if sp.issparse(X) else X
    largest = float(np.max(np.abs(values))) if values.size else 0.0
    limit = float(np.finfo(dtype).max)
    if largest * largest * X.shape[1] <= limit:
        return  # no row can overflow
    # In float64 whatever X's dtype: a float32 X of 1e20 has squares float64 holds.
    squares = row_sq_norms(X)
    over = np.flatnonzero(~(squares <= limit))
    if over.size:
        row = int(over[0])
        raise InvalidInputError(
            f"X: the squared norm of row {row} ({float(squares[row]):.3g}) overflows "
            f"{np.dtype(dtype).name} ({why}); rescale X, e.g. with StandardScaler or MaxAbsScaler"
        )
