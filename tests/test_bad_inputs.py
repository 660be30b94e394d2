"""Every public function of ``toprank.projections`` and ``toprank.losses`` on bad input.

Bad input must raise :class:`toprank.exceptions.InvalidInputError` (a ``ValueError``) or a
subclass, with a message that starts with the name of the offending argument; valid but
unusual inputs (lists, non-contiguous, Fortran-ordered, read-only arrays) must work and give
the same result as the plain C-contiguous array. Nothing may crash the interpreter.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import toprank
from toprank import _core, exceptions, losses, projections
from toprank.exceptions import InfeasibleError, InternalError, InvalidInputError, NoSolutionError

NAN = float("nan")
INF = float("inf")

_DEFAULT = object()


@dataclass(frozen=True)
class Spec:
    """How to call one public function with valid arguments."""

    fn: Callable[..., Any]
    arr: str  # name of the array argument in error messages
    labels: bool = False  # takes y
    params: dict[str, Any] = field(default_factory=dict)  # valid keyword parameters

    def __call__(self, a: Any, y: Any = _DEFAULT, **overrides: Any) -> Any:
        kwargs = {**self.params, **overrides}
        if self.labels:
            if y is _DEFAULT:
                y = default_labels(a)
            return self.fn(a, y, **kwargs)
        assert y is _DEFAULT
        return self.fn(a, **kwargs)


def default_labels(a: Any) -> Any:
    """A valid-looking label for ``a``: an int for 1-D (and 0-D) input, one int per row otherwise."""
    arr = np.asarray(a)
    if arr.ndim <= 1:
        return 0
    return np.zeros(arr.shape[0], dtype=np.int64)


SPECS: dict[str, Spec] = {
    "simplex": Spec(projections.simplex, "x", params={"r": 1.0}),
    "simplex_inequality": Spec(projections.simplex, "x", params={"r": 1.0, "inequality": True}),
    "knapsack": Spec(projections.knapsack, "x", params={"lo": 0.0, "hi": 1.0, "r": 1.5}),
    "topk_cone": Spec(projections.topk_cone, "x", params={"k": 2, "rho": 0.5}),
    "topk_simplex": Spec(projections.topk_simplex, "x", params={"k": 2, "r": 1.0, "rho": 0.5}),
    "box_simplex": Spec(projections.box_simplex, "x", params={"hi": 0.5, "r": 1.0, "rho": 0.5}),
    "capped_simplex": Spec(projections.capped_simplex, "x", params={"k": 2}),
    "capped_simplex_entropy": Spec(projections.capped_simplex_entropy, "x", params={"k": 2}),
    "sparsemax": Spec(projections.sparsemax, "z"),
    "rankmax": Spec(projections.rankmax, "z", labels=True, params={"k": 2, "eta": 1.0}),
    "rankmax_loss": Spec(losses.rankmax_loss, "z", labels=True, params={"k": 2, "eta": 1.0}),
    "softmax_loss": Spec(losses.softmax_loss, "z", labels=True),
    "sparsemax_loss": Spec(losses.sparsemax_loss, "z", labels=True),
    "topk_hinge_alpha": Spec(losses.topk_hinge, "scores", labels=True, params={"k": 2, "variant": "alpha"}),
    "topk_hinge_beta": Spec(losses.topk_hinge, "scores", labels=True, params={"k": 2, "variant": "beta"}),
}
LABELED = [n for n, s in SPECS.items() if s.labels]
ALL = list(SPECS)


# Take a boolean mask of x's shape as a second array: their bad inputs (the array, the
# mask and the parameters) are tested in test_bipartite_simplex.py and test_losses.py
# (the multi-label losses), their layouts in test_array_inputs.py.
ELSEWHERE = {"bipartite_simplex", "multilabel_hinge", "multilabel_softmax_loss"}


def test_every_public_function_is_covered():
    covered = {s.fn.__name__ for s in SPECS.values()}
    assert covered | ELSEWHERE == set(projections.__all__) | set(losses.__all__)


# A valid 1-D input and a valid 5-row batch (m = 6, no ties).
M = 6
X1 = np.array([0.5, -1.2, 2.0, 0.3, 1.1, -0.4])
X2 = np.array(
    [
        [0.5, -1.2, 2.0, 0.3, 1.1, -0.4],
        [1.5, 0.2, -0.7, 0.9, -2.0, 0.05],
        [0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
        [3.0, -3.0, 1.0, -1.0, 2.0, -2.0],
        [0.25, 0.75, -0.5, 1.75, -1.25, 0.6],
    ]
)
Y2 = np.array([0, 3, 5, 1, 2])


def _as_parts(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple) else [out]


def _assert_same(a: Any, b: Any) -> None:
    pa, pb = _as_parts(a), _as_parts(b)
    assert len(pa) == len(pb)
    for u, v in zip(pa, pb):
        if isinstance(v, float):
            assert isinstance(u, float) and u == v
        else:
            assert type(u) is np.ndarray
            assert u.dtype == v.dtype and u.shape == v.shape
            np.testing.assert_array_equal(u, v)


# --------------------------------------------------------------------------------------
# Exception hierarchy
# --------------------------------------------------------------------------------------


def test_exception_hierarchy():
    assert issubclass(InvalidInputError, ValueError)
    assert issubclass(InfeasibleError, InvalidInputError)
    assert issubclass(NoSolutionError, RuntimeError)
    assert issubclass(InternalError, RuntimeError)
    assert not issubclass(NoSolutionError, ValueError)
    assert exceptions.InvalidInputError is _core.InvalidInputError is toprank.InvalidInputError
    assert exceptions.InfeasibleError is _core.InfeasibleError is toprank.InfeasibleError
    assert exceptions.NoSolutionError is _core.NoSolutionError is toprank.NoSolutionError
    assert exceptions.InternalError is _core.InternalError is toprank.InternalError


# --------------------------------------------------------------------------------------
# Non-finite values, empty and wrongly shaped arrays, dtypes
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("bad", [NAN, INF, -INF], ids=["nan", "+inf", "-inf"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("batch", [False, True], ids=["1d", "2d"])
def test_non_finite_values(name, bad, dtype, batch):
    spec = SPECS[name]
    a = (X2 if batch else X1).astype(dtype)
    a[(-1, 3) if batch else 3] = bad
    with pytest.raises(InvalidInputError, match=rf"^{spec.arr}:"):
        spec(a)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("shape", [(0,), (0, 5), (3, 0), (0, 0)])
def test_empty_arrays(name, shape):
    spec = SPECS[name]
    with pytest.raises(InvalidInputError, match=rf"^{spec.arr}:"):
        spec(np.zeros(shape))


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 6), (2, 2, 2, 2)])
def test_arrays_with_more_than_two_dims(name, shape):
    spec = SPECS[name]
    with pytest.raises(InvalidInputError, match=rf"^{spec.arr}:"):
        spec(np.ones(shape))


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("value", [np.array(1.5), 1.5], ids=["0d_array", "python_float"])
def test_zero_dim_input(name, value):
    spec = SPECS[name]
    with pytest.raises(InvalidInputError, match=rf"^{spec.arr}:"):
        spec(value)


BAD_DTYPES = [
    np.int64,
    np.int32,
    np.uint8,
    np.bool_,
    np.complex128,
    np.complex64,
    object,
    np.float16,
    np.longdouble,
]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dtype", BAD_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("batch", [False, True], ids=["1d", "2d"])
def test_unsupported_dtypes(name, dtype, batch):
    spec = SPECS[name]
    a = (X2 if batch else X1) * 2
    if np.dtype(dtype) == np.dtype(np.longdouble) and np.finfo(np.longdouble).bits == 64:
        pytest.skip("longdouble is float64 on this platform")
    a = a.astype(dtype)
    with pytest.raises(InvalidInputError, match=rf"^{spec.arr}:"):
        spec(a)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize(
    "value",
    [[[1.0, 2.0], [3.0]], "abc", None, [1.0, "a"], {"a": 1.0}],
    ids=["ragged", "str", "None", "mixed_list", "dict"],
)
def test_unconvertible_inputs(name, value):
    spec = SPECS[name]
    y = 0 if spec.labels else _DEFAULT
    with pytest.raises(InvalidInputError, match=rf"^{spec.arr}:"):
        spec(value, y) if spec.labels else spec(value)


@pytest.mark.parametrize("name", ALL)
def test_lists_of_floats_are_converted(name):
    spec = SPECS[name]
    _assert_same(spec(X1.tolist()), spec(X1))
    if spec.labels:
        _assert_same(spec(X2.tolist(), Y2.tolist()), spec(X2, Y2))
        _assert_same(spec(X2.tolist(), tuple(Y2.tolist())), spec(X2, Y2))
    else:
        _assert_same(spec(X2.tolist()), spec(X2))


# --------------------------------------------------------------------------------------
# Layouts: strided, negative strides, Fortran order, transposed views, read-only
# --------------------------------------------------------------------------------------


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _layouts_1d(x: np.ndarray) -> dict[str, np.ndarray]:
    big = np.zeros(3 * x.size, dtype=x.dtype)
    big[::3] = x
    return {
        "strided": big[::3],
        "negative_stride": x[::-1].copy()[::-1],
        "readonly": _readonly(x.copy()),
        "readonly_strided": _readonly(big.copy())[::3],
    }


def _layouts_2d(X: np.ndarray) -> dict[str, np.ndarray]:
    wide = np.zeros((X.shape[0], 2 * X.shape[1]), dtype=X.dtype)
    wide[:, ::2] = X
    tall = np.zeros((2 * X.shape[0], X.shape[1]), dtype=X.dtype)
    tall[::2] = X
    return {
        "column_strided": wide[:, ::2],
        "row_strided": tall[::2],
        "fortran": np.asfortranarray(X),
        "transposed_view": np.ascontiguousarray(X.T).T,
        "reversed": X[::-1, ::-1].copy()[::-1, ::-1],
        "readonly": _readonly(X.copy()),
        "readonly_fortran": _readonly(np.asfortranarray(X)),
        "fortran_single_row": np.asfortranarray(X[:1]),
    }


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("layout", list(_layouts_1d(X1)))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_1d_layouts_equal_contiguous(name, layout, dtype):
    spec = SPECS[name]
    x = X1.astype(dtype)
    a = _layouts_1d(x)[layout]
    assert a.dtype == dtype
    before = a.copy()
    _assert_same(spec(a), spec(np.ascontiguousarray(x)))
    np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("layout", list(_layouts_2d(X2)))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_2d_layouts_equal_contiguous(name, layout, dtype):
    spec = SPECS[name]
    X = X2.astype(dtype)
    a = _layouts_2d(X)[layout]
    assert a.dtype == dtype
    C = np.ascontiguousarray(a)
    y = Y2[: a.shape[0]]
    before = a.copy()
    if spec.labels:
        got, want = spec(a, y), spec(C, y)
    else:
        got, want = spec(a), spec(C)
    _assert_same(got, want)
    np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize("name", LABELED)
def test_label_layouts_equal_contiguous(name):
    spec = SPECS[name]
    want = spec(X2, Y2)
    strided = np.zeros(2 * Y2.size, dtype=np.int64)
    strided[::2] = Y2
    ro = Y2.copy()
    ro.flags.writeable = False
    for y in (strided[::2], ro, Y2.astype(np.int32), Y2.astype(np.uint16), Y2[::-1].copy()[::-1]):
        _assert_same(spec(X2, y), want)


@pytest.mark.parametrize("name", ALL)
def test_inputs_are_not_modified(name):
    spec = SPECS[name]
    a = X2.copy()
    y = Y2.copy()
    spec(a, y) if spec.labels else spec(a)
    np.testing.assert_array_equal(a, X2)
    np.testing.assert_array_equal(y, Y2)


# --------------------------------------------------------------------------------------
# k out of range
# --------------------------------------------------------------------------------------

# (spec name, bad k values for m = 6, good boundary k values)
# Huge Python ints are "k too large" (or too small) as well: a bad value, so
# InvalidInputError (a ValueError), not an OverflowError that `except ValueError` misses.
_INT_K_EXTRA = [2**63, 10**30, -(10**30)]
_FLOAT_K_BAD = [0, -1, -0.5, 0.0, M + 0.5, M + 1, NAN, INF, -INF, 10**30, -(10**30), 10**400]
K_CASES = {
    "topk_cone": ([0, -1, -100, M + 1, 10**6, *_INT_K_EXTRA], [1, M]),
    "topk_simplex": ([0, -1, M + 1, *_INT_K_EXTRA], [1, M]),
    "capped_simplex": (_FLOAT_K_BAD, [0.5, 1, M]),
    "capped_simplex_entropy": (_FLOAT_K_BAD, [0.5, 1, M]),
    "rankmax": ([0, -1, M, M + 1, *_INT_K_EXTRA], [1, M - 1]),
    "rankmax_loss": ([0, -1, M, M + 1, *_INT_K_EXTRA], [1, M - 1]),
    "topk_hinge_alpha": ([0, -1, M, M + 1, *_INT_K_EXTRA], [1, M - 1]),
    "topk_hinge_beta": ([0, -1, M, M + 1, *_INT_K_EXTRA], [1, M - 1]),
}


def _short(v: Any) -> str:
    if isinstance(v, int) and abs(v) == 2**63:
        return f"{'-' if v < 0 else ''}2^63"
    if isinstance(v, int) and abs(v) >= 10**7:
        return f"{'-' if v < 0 else ''}10^{len(str(abs(v))) - 1}"
    return repr(v)


@pytest.mark.parametrize(
    "name,k",
    [(n, k) for n, (bad, _) in K_CASES.items() for k in bad],
    ids=[f"{n}-k={_short(k)}" for n, (bad, _) in K_CASES.items() for k in bad],
)
@pytest.mark.parametrize("batch", [False, True], ids=["1d", "2d"])
def test_k_out_of_range(name, k, batch):
    spec = SPECS[name]
    with pytest.raises(InvalidInputError, match=r"^k:"):
        spec(X2 if batch else X1, k=k)


@pytest.mark.parametrize(
    "name,k",
    [(n, k) for n, (_, good) in K_CASES.items() for k in good],
    ids=[f"{n}-k={k}" for n, (_, good) in K_CASES.items() for k in good],
)
def test_k_at_the_boundary_works(name, k):
    spec = SPECS[name]
    out = _as_parts(spec(X2, k=k))
    assert all(np.all(np.isfinite(o)) for o in out)


@pytest.mark.parametrize("name", ["rankmax", "rankmax_loss", "topk_hinge_alpha", "topk_hinge_beta"])
def test_single_class_is_rejected(name):
    spec = SPECS[name]
    # rankmax needs 1 <= k < n and the top-k hinge 1 <= k <= m - 1: impossible with one class
    with pytest.raises(InvalidInputError, match=rf"^(k|{spec.arr}):"):
        spec(np.array([1.0]), 0, k=1)


# --------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", LABELED)
@pytest.mark.parametrize("y", [-1, -M, M, M + 5, 2**40, -(2**40), 10**30, np.int64(-1), np.int32(M)])
def test_label_out_of_range_1d(name, y):
    with pytest.raises(InvalidInputError, match=r"^y:"):
        SPECS[name](X1, y)


@pytest.mark.parametrize("name", LABELED)
@pytest.mark.parametrize(
    "y",
    [2.0, 2.5, NAN, True, np.bool_(True), np.float64(1.0), np.array(1.0), "1", None, [1], np.array([1])],
    ids=["2.0", "2.5", "nan", "True", "np_True", "np_float", "0d_float", "str", "None", "list", "array1"],
)
def test_label_wrong_type_1d(name, y):
    with pytest.raises(InvalidInputError, match=r"^y:"):
        SPECS[name](X1, y)


@pytest.mark.parametrize("name", LABELED)
@pytest.mark.parametrize(
    "y",
    [
        np.array([0, 3, 5, 1, -1]),
        np.array([0, 3, M, 1, 2]),
        np.array([0, 3, 5, 1, 2**40]),
        np.array([0, 3, 5, 1, np.iinfo(np.int64).min]),
        np.array([0, 3, 5, 1, 2**63], dtype=np.uint64),
    ],
    ids=["-1", "m", "2**40", "int64_min", "uint64_2**63"],
)
def test_label_out_of_range_2d(name, y):
    with pytest.raises(InvalidInputError, match=r"^y:"):
        SPECS[name](X2, y)


@pytest.mark.parametrize("name", LABELED)
@pytest.mark.parametrize(
    "y",
    [np.array([0, 1, 2, 3]), np.array([0, 1, 2, 3, 4, 5]), np.array([], dtype=np.int64), np.array([0])],
    ids=["n-1", "n+1", "empty", "one"],
)
def test_label_wrong_length_2d(name, y):
    with pytest.raises(InvalidInputError, match=r"^y:"):
        SPECS[name](X2, y)


@pytest.mark.parametrize("name", LABELED)
@pytest.mark.parametrize(
    "y",
    [
        Y2.astype(np.float64),
        Y2.astype(np.float32),
        Y2.astype(bool),
        Y2.astype(np.complex128),
        Y2.astype(object),
        Y2.reshape(1, -1),
        Y2.reshape(-1, 1),
        0,
        2.0,
        None,
        "abc",
    ],
    ids=["float64", "float32", "bool", "complex", "object", "row", "column", "scalar", "float", "None", "str"],
)
def test_label_wrong_type_2d(name, y):
    with pytest.raises(InvalidInputError, match=r"^y:"):
        SPECS[name](X2, y)


# --------------------------------------------------------------------------------------
# Other parameters
# --------------------------------------------------------------------------------------

PARAM_CASES = [
    # (spec, parameter, bad values)
    ("simplex", "r", [-1.0, -1e-300, NAN, INF, -INF]),
    ("simplex_inequality", "r", [-1.0, NAN, INF]),
    ("knapsack", "lo", [NAN, INF, -INF]),
    ("knapsack", "hi", [NAN, INF, -INF]),
    ("knapsack", "r", [NAN, INF, -INF]),
    ("topk_cone", "rho", [-1.0, -1e-300, NAN, INF]),
    ("topk_simplex", "r", [-1.0, NAN, INF]),
    ("topk_simplex", "rho", [-1.0, NAN, INF]),
    ("box_simplex", "hi", [-1.0, NAN, INF, -INF]),
    ("box_simplex", "r", [-1.0, NAN, INF]),
    ("box_simplex", "rho", [-1.0, NAN, INF]),
    ("rankmax", "eta", [0.0, -1.0, NAN, INF, -INF]),
    ("rankmax_loss", "eta", [0.0, -1.0, NAN, INF, -INF]),
]


@pytest.mark.parametrize(
    "name,param,value",
    [(n, p, v) for n, p, vs in PARAM_CASES for v in vs],
    ids=[f"{n}-{p}={v}" for n, p, vs in PARAM_CASES for v in vs],
)
@pytest.mark.parametrize("batch", [False, True], ids=["1d", "2d"])
def test_bad_parameters(name, param, value, batch):
    spec = SPECS[name]
    with pytest.raises(InvalidInputError, match=rf"^{param}:"):
        spec(X2 if batch else X1, **{param: value})


# Wrongly typed scalar parameters (including a float -- NaN, inf, 2.5 -- for an integer k):
# a TypeError is acceptable here, as for any Python API, but whatever is raised must say
# which argument is wrong, in its message or in a note (PyO3 adds "while processing 'k'",
# which pytest's ``match`` also searches).
_INT_K_FLOATS = [NAN, INF, 2.5, 2.0]
WRONG_TYPE_CASES = [
    ("simplex", "r", ["1", None, [1.0], 1 + 2j]),
    ("simplex", "inequality", ["yes", None]),
    ("knapsack", "lo", ["0", None]),
    ("knapsack", "hi", ["1", None]),
    ("knapsack", "r", ["1", None]),
    ("topk_cone", "k", ["2", None, *_INT_K_FLOATS]),
    ("topk_cone", "rho", ["0", None]),
    ("topk_simplex", "k", _INT_K_FLOATS),
    ("topk_simplex", "r", ["1", None]),
    ("box_simplex", "hi", ["1", None]),
    ("capped_simplex", "k", ["2", None]),
    ("rankmax", "k", ["2", None, *_INT_K_FLOATS]),
    ("rankmax", "eta", ["1", None]),
    ("rankmax_loss", "k", _INT_K_FLOATS),
    ("rankmax_loss", "eta", ["1", None]),
    ("topk_hinge_alpha", "k", ["2", None, *_INT_K_FLOATS]),
    ("topk_hinge_beta", "k", _INT_K_FLOATS),
    ("topk_hinge_alpha", "variant", [None, 1, b"alpha"]),
    ("softmax_loss", "n_jobs", [1.5, "2"]),
    ("simplex", "n_jobs", [1.5, "2"]),
]


@pytest.mark.parametrize(
    "name,param,value",
    [(n, p, v) for n, p, vs in WRONG_TYPE_CASES for v in vs],
    ids=[f"{n}-{p}-{i}" for n, p, vs in WRONG_TYPE_CASES for i, _ in enumerate(vs)],
)
def test_wrongly_typed_parameters_name_the_argument(name, param, value):
    with pytest.raises((InvalidInputError, TypeError), match=rf"\b{param}\b"):
        SPECS[name](X2, **{param: value})


# Python ints beyond every float / int64 range are out-of-range values like inf:
# InvalidInputError naming the argument, not a bare OverflowError.
HUGE_INT_CASES = [
    ("simplex", "r", 10**400),
    ("knapsack", "lo", -(10**400)),
    ("knapsack", "r", 10**400),
    ("box_simplex", "hi", 10**400),
    ("topk_cone", "rho", 10**400),
    ("rankmax", "eta", 10**400),
    ("simplex", "n_jobs", 10**30),
    ("softmax_loss", "n_jobs", 2**63),
]


@pytest.mark.parametrize("name,param,value", HUGE_INT_CASES, ids=[f"{n}-{p}" for n, p, _ in HUGE_INT_CASES])
def test_huge_python_ints_are_invalid_values(name, param, value):
    with pytest.raises(InvalidInputError, match=rf"^{param}:"):
        SPECS[name](X2, **{param: value})


@pytest.mark.parametrize(
    "lo,hi,r",
    [
        (1.0, 0.0, 3.0),  # lo > hi
        (0.5, 0.4999, 3.0),  # lo > hi, barely
        (0.0, 1.0, M + 0.5),  # r > m hi
        (0.0, 1.0, -0.5),  # r < m lo
        (0.5, 1.0, 0.5 * M - 1e-9),  # r < m lo, barely
        (-1.0, -0.5, 0.0),  # r > m hi with negative bounds
    ],
)
@pytest.mark.parametrize("batch", [False, True], ids=["1d", "2d"])
def test_knapsack_infeasible(lo, hi, r, batch):
    with pytest.raises(InfeasibleError, match=r"^(lo|hi|r):") as info:
        projections.knapsack(X2 if batch else X1, lo, hi, r)
    assert isinstance(info.value, InvalidInputError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("lo,hi,r", [(0.5, 0.5, 0.5 * M), (0.0, 1.0, 0.0), (0.0, 1.0, float(M)), (-1.0, -0.5, -4.0)])
def test_knapsack_feasible_edges(lo, hi, r):
    p = projections.knapsack(X2, lo, hi, r)
    assert np.all(p >= lo - 1e-12) and np.all(p <= hi + 1e-12)
    np.testing.assert_allclose(p.sum(axis=1), r, atol=1e-9)


@pytest.mark.parametrize("name", ["topk_hinge_alpha", "topk_hinge_beta"])
@pytest.mark.parametrize("variant", ["gamma", "", "Alpha", "ALPHA", " alpha", "alpha ", "a", "beta\0"])
@pytest.mark.parametrize("batch", [False, True], ids=["1d", "2d"])
def test_bad_variant(name, variant, batch):
    with pytest.raises(InvalidInputError, match=r"^variant:"):
        SPECS[name](X2 if batch else X1, variant=variant)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("batch", [False, True], ids=["1d", "2d"])
def test_n_jobs_zero(name, batch):
    with pytest.raises(InvalidInputError, match=r"^n_jobs:"):
        SPECS[name](X2 if batch else X1, n_jobs=0)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("n_jobs", [None, 1, 2, 3, -1, -2, -1000])
def test_valid_n_jobs_values(name, n_jobs):
    spec = SPECS[name]
    _assert_same(spec(X2, n_jobs=n_jobs), spec(X2, n_jobs=1))


# The checks `toprank._core` makes of its own arguments (the facade leaves these to it),
# word for word: the one-line declarations of src/bindings/mod.rs keep them.
CORE_MESSAGES: list[tuple[Callable[[], Any], str]] = [
    (lambda: _core.topk_cone(X1, 0), "k: must be a positive integer, got 0"),
    (lambda: _core.topk_simplex(X2, -3), "k: must be a positive integer, got -3"),
    (lambda: _core.topk_hinge(X2, Y2, 1, "gamma"), "variant: must be 'alpha' or 'beta', got \"gamma\""),
    (lambda: _core.rankmax(X2, Y2[:4]), "y: has 4 labels but z has 5 rows"),
    (lambda: _core.softmax_loss(X1, 6), "y: label 6 out of range [0, 6)"),
    (lambda: _core.sparsemax_loss(X2, Y2 - 1), "y: label -1 at row 0 out of range [0, 6)"),
    (lambda: _core.rankmax_loss(X2, 0), "y: expected a 1-D int64 array with one label per row of z"),
    (lambda: _core.rankmax_loss(X1, 1.5), "y: expected an int label for a 1-D z"),
    (lambda: _core.sparsemax(np.zeros((0, 3))), "z: is empty (shape [0, 3])"),
    (lambda: _core.simplex(np.ones((2, 2, 2))), "x: expected a 1-D array or a 2-D batch of rows, got a 3-D array"),
    (lambda: _core.box_simplex(np.ones(3, dtype=np.int64), 1.0), "x: expected dtype float32 or float64, got int64"),
]


@pytest.mark.parametrize("call, message", CORE_MESSAGES)
def test_core_checks_word_for_word(call, message):
    with pytest.raises(InvalidInputError, match=f"^{re.escape(message)}$"):
        call()


# --------------------------------------------------------------------------------------
# Whatever the input, the interpreter survives (checked in a child process)
# --------------------------------------------------------------------------------------

_CRASH_SCRIPT = textwrap.dedent(
    r"""
    import itertools, numpy as np
    from toprank import losses, projections
    rng = np.random.default_rng(0)
    fns = [
        lambda a, y, k, p: projections.simplex(a, p),
        lambda a, y, k, p: projections.simplex(a, p, True),
        lambda a, y, k, p: projections.knapsack(a, -p, p, p),
        lambda a, y, k, p: projections.topk_cone(a, k, p),
        lambda a, y, k, p: projections.topk_simplex(a, k, p, p),
        lambda a, y, k, p: projections.box_simplex(a, p, p, p),
        lambda a, y, k, p: projections.capped_simplex(a, k),
        lambda a, y, k, p: projections.capped_simplex_entropy(a, k),
        lambda a, y, k, p: projections.sparsemax(a),
        lambda a, y, k, p: projections.rankmax(a, y, k, p),
        lambda a, y, k, p: losses.rankmax_loss(a, y, k, p),
        lambda a, y, k, p: losses.softmax_loss(a, y),
        lambda a, y, k, p: losses.sparsemax_loss(a, y),
        lambda a, y, k, p: losses.topk_hinge(a, y, k, "alpha"),
        lambda a, y, k, p: losses.topk_hinge(a, y, k, "beta"),
        lambda a, y, k, p: losses.topk_hinge(a, y, k, "alpha", p),
        lambda a, y, k, p: losses.topk_hinge(a, y, k, "beta", p),
    ]
    arrays = [
        np.array([1e308, -1e308, 0.0]), np.array([5e-324, -5e-324, 0.0]), np.full(7, 3.0),
        np.array([1e300, 1e300]), np.array([1.0]), np.zeros((1, 1)), np.full((3, 4), -1e200),
        np.array([3.4e38, -3.4e38, 1.0], dtype=np.float32), np.array([1e-45, 0.0], dtype=np.float32),
        rng.normal(size=(4, 9)) * 1e150, rng.normal(size=1000),
    ]
    labels = [0, 1, -1, 2**62, np.array([0]), np.array([0, 0, 0, 0]), np.array([-(2**62)] * 4), None]
    ks = [1, 2, 3, 0, -1, 2**31, -(2**31), 10**9, 0.5, 2.5]
    ps = [0.0, 1.0, 1e-300, 1e300, 5e-324, -0.0, 1e308]
    n = ok = 0
    for f, a, y, k, p in itertools.product(fns, arrays, labels, ks, ps):
        try:
            f(a, y, k, p)
            ok += 1
        except (ValueError, TypeError, OverflowError, RuntimeError) as e:
            if type(e).__name__ == "InternalError":
                raise
        n += 1
    print("survived", n, ok)
    """
)


def test_extreme_inputs_do_not_crash_or_panic():
    """Extreme but finite values and parameters: an answer or a clean exception, never a
    crash (checked in a child process) and never an InternalError (a caught Rust panic)."""
    proc = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    _, n, ok = proc.stdout.split()
    assert int(n) == 17 * 11 * 8 * 10 * 7
    assert int(ok) > 10_000  # plenty of the calls are valid and ran to completion


# Scores so large that x - threshold cancels unless the row is shifted by its maximum first.
# Every function is shift-invariant (or, for the knapsack, well defined), and the exact
# answers below are representable, so the output must be finite and feasible -- or the call
# must fail loudly (NoSolutionError / InvalidInputError), never return NaN or a vector that
# violates the constraints.
HUGE = [1e16, 1e20, 1e100, 1e300]


def _huge_rows(v):
    return [np.array([v, -v, 0.0]), np.array([v, v - 2**-40 * v, 0.0]), np.array([v, 0.0, -v, 0.5 * v])]


@pytest.mark.parametrize("v", HUGE)
@pytest.mark.parametrize(
    "name,total",
    [
        ("simplex", 1.0),
        ("sparsemax", 1.0),
        ("knapsack", 1.5),
        ("capped_simplex", 2.0),
        ("capped_simplex_entropy", 2.0),
        ("rankmax", 2.0),
    ],
)
def test_huge_finite_scores_give_feasible_output_or_clean_error(name, total, v):
    spec = SPECS[name]
    for x in _huge_rows(v):
        try:
            p = spec(x, 0) if spec.labels else spec(x)
        except (InvalidInputError, NoSolutionError):
            continue
        assert np.all(np.isfinite(p)), (name, x.tolist(), p.tolist())
        assert abs(p.sum() - total) <= 1e-9, (name, x.tolist(), p.tolist())
        assert np.all(p >= 0.0)


@pytest.mark.parametrize("v", HUGE)
def test_huge_finite_scores_losses(v):
    # y = 0 holds the maximum by a huge margin: Rankmax and sparsemax put all their mass
    # on it (k = 1) and both losses are exactly 0 with a zero gradient.
    x = np.array([v, -v, 0.0])
    for f in (losses.rankmax_loss, losses.sparsemax_loss):
        try:
            loss, grad = f(x, 0)
        except (InvalidInputError, NoSolutionError):
            continue
        assert loss == pytest.approx(0.0, abs=1e-12), (f.__name__, v, loss, grad.tolist())
        assert np.all(np.isfinite(grad)) and np.allclose(grad, 0.0), (f.__name__, v, grad.tolist())


# Rows whose answer overflows: each once returned an infeasible, zero or non-finite point
# without a word (found by fuzzing); now each raises.
UNRESOLVABLE = {
    "topk_cone, sum overflows": lambda: projections.topk_cone(np.full(6, 1e308), 2),
    "simplex, float32 overflow": lambda: projections.simplex(np.ones(4, np.float32), 1e300),
    "knapsack, float32 overflow": lambda: projections.knapsack(np.zeros(4, np.float32), -1e300, 1.0, -2e300),
    "rankmax, eta overflows the mass": lambda: projections.rankmax(np.array([1.0, 2, 3, 4]), 0, 1, eta=5e307),
    "rankmax, scores overflow": lambda: projections.rankmax(np.array([-9e307, 0, 9e307]), 0, 1),
    "rankmax_loss, eta overflows": lambda: losses.rankmax_loss(np.array([1.0, 2, 3, 4]), 0, 2, eta=1e308),
}


@pytest.mark.parametrize("case", list(UNRESOLVABLE))
def test_unresolvable_rows_raise(case):
    with pytest.raises(NoSolutionError):
        UNRESOLVABLE[case]()


def test_resolvable_huge_rows_stay_exact():
    # One order of magnitude less, or huge entries with breakpoints float64 separates: the
    # answers are exact, as the pivot-relative thresholds promise.
    np.testing.assert_array_equal(projections.box_simplex(np.array([1e15, 0.0]), hi=0.5, r=1e-3), [1e-3, 0.0])
    # Caps below an ulp of the entries (these raised while the partition was searched on
    # absolute values only).
    np.testing.assert_array_equal(projections.box_simplex(np.array([1e16, 0.0]), hi=0.5, r=1e-3), [1e-3, 0.0])
    np.testing.assert_allclose(projections.topk_simplex(np.full(6, 1e16), 2, r=1.0), np.full(6, 1 / 6), rtol=1e-15)
    np.testing.assert_allclose(
        projections.knapsack(np.array([1.0, 1, 1, 1, 1.7e308, 1.7e308]), -1e300, 1e300, 0.0),
        [-5e299] * 4 + [1e300] * 2,
        rtol=1e-15,
    )
    np.testing.assert_array_equal(projections.simplex(np.array([1e16, -1e16, 0.0]), 1.0), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(projections.capped_simplex(np.array([1e16, -1e16, 0.0]), 1.5), [1.0, 0.0, 0.5])
    # The entropic projection's threshold taken relative to x_[j+1]: spreads of 1e12 and
    # 1e16 (which raised while it was absolute) give p = (e^{0 − ln 2}, 1) exactly.
    for spread in (1e12, 1e16):
        np.testing.assert_allclose(
            projections.capped_simplex_entropy(np.array([0.0, spread]), 1.5), [0.5, 1.0], rtol=1e-15
        )


# ------------------------------------------------------------------ estimators' X


def _stored_twice(dense: np.ndarray) -> Any:
    """``dense`` as a CSR matrix that stores every nonzero twice, as two halves: scipy's
    meaning of it (duplicates summed) is ``dense``."""
    import scipy.sparse as sp  # noqa: PLC0415

    csr = sp.csr_matrix(dense)
    rows = np.repeat(np.arange(dense.shape[0]), np.diff(csr.indptr))
    order = np.argsort(np.concatenate([rows, rows]), kind="stable")
    data = np.concatenate([csr.data, csr.data])[order] / 2
    indices = np.concatenate([csr.indices, csr.indices])[order]
    twice = sp.csr_matrix((data, indices, 2 * csr.indptr), shape=dense.shape)
    assert twice.nnz == 2 * csr.nnz and not twice.has_canonical_format
    np.testing.assert_array_equal(twice.toarray(), dense)
    return twice


def _sparse_estimators() -> dict[str, tuple[Any, Callable[[Any], Any]]]:
    """Every estimator that trains on CSR input: (estimator, what a fit gives)."""
    from toprank import M3L, MultiLabelSVC, RankmaxRanker, TopKSVC, TraceNormLogisticRegression  # noqa: PLC0415

    return {
        "TopKSVC": (TopKSVC(k=2, tol=1e-8, random_state=0), lambda m: (m.coef_, m.n_iter_)),
        "MultiLabelSVC": (MultiLabelSVC(smoothing=0.5, tol=1e-8, random_state=0), lambda m: (m.coef_, m.n_iter_)),
        "M3L": (M3L(tol=1e-8, random_state=0), lambda m: (m.coef_, m.n_iter_)),
        "TraceNormLogisticRegression": (
            TraceNormLogisticRegression(tol=1e-8, random_state=0),
            lambda m: (m.coef_, m.n_iter_),
        ),
        "RankmaxRanker": (
            RankmaxRanker(n_components=3, n_epochs=2, early_stopping=False, random_state=0),
            lambda m: (m.feature_factors_, m.label_factors_),
        ),
    }


@pytest.mark.parametrize("name", ["TopKSVC", "MultiLabelSVC", "M3L", "TraceNormLogisticRegression", "RankmaxRanker"])
def test_duplicate_csr_entries_are_summed(name):
    # M3L took each stored entry as it was (its ‖x_i‖² and steps wrong): 12,823 epochs
    # instead of 1,206 to the same answer on the data.
    estimator, result = _sparse_estimators()[name]
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(60, 8)) * (rng.random((60, 8)) < 0.5)
    y = (dense @ rng.normal(size=8) > 0).astype(int) + (dense[:, 0] > 0.5)
    import scipy.sparse as sp  # noqa: PLC0415
    from sklearn.base import clone  # noqa: PLC0415

    want = result(clone(estimator).fit(sp.csr_matrix(dense), y))
    got = result(clone(estimator).fit(_stored_twice(dense), y))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def _all_estimators() -> dict[str, Any]:
    from toprank import (  # noqa: PLC0415
        M3L,
        MultiLabelSVC,
        PatMat,
        RankmaxRanker,
        TopKSVC,
        TopPush,
        TopPushK,
        TraceNormLogisticRegression,
    )
    from toprank.pq import ProductQuantizer  # noqa: PLC0415

    return {
        "TopKSVC": TopKSVC(),
        "MultiLabelSVC": MultiLabelSVC(),
        "M3L": M3L(),
        "TraceNormLogisticRegression": TraceNormLogisticRegression(),
        "RankmaxRanker": RankmaxRanker(n_epochs=1),
        "ProductQuantizer": ProductQuantizer(n_subspaces=2, n_bits=2),
        "TopPush": TopPush(),
        "TopPushK": TopPushK(),
        "PatMat": PatMat(),
    }


@pytest.mark.parametrize(
    "name",
    [
        "TopKSVC",
        "MultiLabelSVC",
        "M3L",
        "TraceNormLogisticRegression",
        "RankmaxRanker",
        "ProductQuantizer",
        "TopPush",
        "TopPushK",
        "PatMat",
    ],
)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_complex_x_is_named_without_printing_the_data(name, sparse):
    import scipy.sparse as sp  # noqa: PLC0415

    X = np.random.default_rng(0).normal(size=(40, 4)) + 1j
    if sparse:
        X = sp.csr_matrix(X)
    y = np.arange(40) % 2
    with pytest.raises(ValueError) as info:
        _all_estimators()[name].fit(X, y)
    message = str(info.value)
    assert message.startswith("X:") and "complex" in message, message
    assert len(message) < 200 and "j " not in message, message  # no entries printed
