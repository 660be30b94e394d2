"""Exceptions raised by toprank.

Every bad input raises :class:`InvalidInputError` (a :class:`ValueError`) whose message
starts with the name of the offending argument, e.g. ``"k: must satisfy 1 <= k <= m = 5, got 7"``.
"""

from toprank._core import InfeasibleError, InternalError, InvalidInputError, NoSolutionError

__all__ = ["InvalidInputError", "InfeasibleError", "NoSolutionError", "InternalError"]
