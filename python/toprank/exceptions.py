"""Exceptions raised by toprank.

Every bad input raises :class:`InvalidInputError` (a :class:`ValueError`) whose message
starts with the name of the offending argument, e.g. ``"k: must satisfy 1 <= k <= m = 5, got 7"``.
A Rust panic never reaches Python: it becomes an :class:`InternalError`.

The classes are created by the Rust core (``src/bindings/errors.rs``), which gives each a
one-line docstring; their reference documentation is written here, where Sphinx and the
doctests read it.
"""

from toprank._core import InfeasibleError, InternalError, InvalidInputError, NoSolutionError

__all__ = ["InvalidInputError", "InfeasibleError", "NoSolutionError", "InternalError"]

InvalidInputError.__doc__ = """Bad input: a wrong shape, dtype or value, or a parameter out of range.

Raised by every function and estimator of toprank on bad input (a fit that
fails leaves the estimator as it was). The message starts with the argument's name, then
says what was expected and what was given, so that a caller can tell which argument to
fix; as a :class:`ValueError` it is caught by code written for scikit-learn's errors.

See Also
--------
InfeasibleError : The subclass for constraints that no point satisfies.

Examples
--------
>>> import numpy as np
>>> from toprank import TopKSVC
>>> from toprank.exceptions import InvalidInputError
>>> try:
...     TopKSVC(k=3).fit(np.eye(3), [0, 1, 2])
... except InvalidInputError as error:
...     print(error)
k: must satisfy 1 <= k <= n_classes - 1 = 2, got 3
>>> issubclass(InvalidInputError, ValueError)
True
"""

InfeasibleError.__doc__ = """The constraint set is empty for these parameters.

Raised by the projections whose constraints can contradict each other, e.g.
:func:`toprank.projections.knapsack` when m·lo > r or m·hi < r (the m coordinates in
[lo, hi] cannot sum to r), or lo > hi. A subclass of :class:`InvalidInputError`: the
message names the argument to change.

See Also
--------
InvalidInputError : The base class of every bad-input error.

Examples
--------
>>> import numpy as np
>>> from toprank import projections
>>> from toprank.exceptions import InfeasibleError
>>> try:
...     projections.knapsack(np.zeros(3), 0.0, 1.0, 10.0)  # 3 values in [0, 1] cannot sum to 10
... except InfeasibleError as error:
...     print(error)
r: infeasible constraints: need m·lo ≤ r ≤ m·hi, got m = 3, lo = 0, hi = 1, r = 10
"""

NoSolutionError.__doc__ = """An exact search found no solution satisfying the optimality conditions.

Raised when floating point breaks down rather than return a wrong answer silently: a
projection whose inputs are so large (near the float64 or float32 limit) that no
threshold satisfies its conditions, or a fit whose solve ends with non-finite
objectives because the data's scale overflows. Rescale the input. A
:class:`RuntimeError`, not a :class:`ValueError`: the arguments were valid.

See Also
--------
InvalidInputError : Raised instead when an argument itself is out of range.

Examples
--------
>>> import numpy as np
>>> from toprank import projections
>>> from toprank.exceptions import NoSolutionError
>>> try:
...     projections.topk_cone(np.full(6, 1e308), 2)  # the sum overflows float64
... except NoSolutionError as error:
...     print(error)
threshold search: no solution satisfies the optimality conditions (...)
"""

InternalError.__doc__ = """A bug in toprank's Rust core (a caught panic).

Raised instead of a crash when a solver of the core panics (the bindings catch the
panic), or when a result breaks one of toprank's own invariants (e.g. a linear fit
that returned no weights). No valid or invalid input should cause it: please report it
with the input that did. A :class:`RuntimeError`.

See Also
--------
NoSolutionError : The error of a numerical breakdown, which is not a bug.

Examples
--------
No input is known to raise it; a caller that must never fail catches it as a
:class:`RuntimeError`:

>>> from toprank.exceptions import InternalError
>>> issubclass(InternalError, RuntimeError)
True
>>> try:
...     raise InternalError("TopKSVC: the core panicked")
... except RuntimeError as error:
...     print(type(error).__name__, error)
InternalError TopKSVC: the core panicked
"""
