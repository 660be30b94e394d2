"""Refusing sizes that cannot be allocated, before trying.

A size parameter such as ``n_components=2**31`` makes an estimator ask for tens of GiB:
NumPy then fails with a ``MemoryError`` that names no parameter, or — with the kernel's
memory overcommit — the allocation succeeds and the process is killed when the pages are
touched. The estimators compute what a parameter will cost and call
:func:`check_allocation` first, which compares it with the machine's physical memory.
"""

from __future__ import annotations

import os
from typing import Any

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
        raise InvalidInputError(f"{name}: {value!r} needs {format_bytes(nbytes)} ({nbytes} bytes) for {what}, "
                                f"more than {have}")
