"""Arrays as Dask, pickle and memory maps hand them over: every estimator and every
``toprank._core`` function takes misaligned, read-only, memory-mapped, Fortran-ordered,
strided and big-endian arrays (float32 and float64) and gives the results of ordinary
C-ordered arrays, writing none of them (state comes back as new arrays); NaN and
infinity are refused naming the argument.

Misaligned arrays are what pickle protocol 5 delivers across processes (Dask's
out-of-band buffers put an array at any byte offset); the bindings reported them as
"not C-contiguous" and M3L's CoCoA rounds failed on every multi-process cluster.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from toprank import M3L, PatMat, RankmaxRanker, TopKSVC, TopPushK, TraceNormLogisticRegression, _core
from toprank._options import (
    AttopSettings,
    KernelSettings,
    M3lProblem,
    M3lSettings,
    RankerSettings,
    SdcaProblem,
    SdcaSettings,
)
from toprank.distributed._partitions import M3lPartitionSettings, SvcPartitionSettings
from toprank.exceptions import InvalidInputError
from toprank.pq import PqSettings, ProductQuantizer
from toprank.ranker import _LabelSets, _Training

_DIRECTORY = tempfile.mkdtemp(prefix="toprank-array-inputs-")
_FILES = itertools.count()


def misaligned(a: np.ndarray) -> np.ndarray:
    """A copy at byte offset 1 of a buffer: unaligned for every dtype wider than a byte."""
    buffer = bytearray(a.nbytes + 1)
    out = np.frombuffer(buffer, dtype=a.dtype, offset=1, count=a.size).reshape(a.shape)
    out[...] = a
    assert a.dtype.itemsize == 1 or not a.size or not out.flags.aligned
    return out


def read_only(a: np.ndarray) -> np.ndarray:
    out = a.copy()
    out.flags.writeable = False
    return out


def memory_mapped(a: np.ndarray) -> np.ndarray:
    if not a.size:  # nothing to map
        return read_only(a)
    path = os.path.join(_DIRECTORY, f"{next(_FILES)}.npy")
    np.save(path, a)
    out = np.load(path, mmap_mode="r")
    assert isinstance(out, np.memmap)
    return out


def misaligned_memmap(a: np.ndarray) -> np.ndarray:
    """A read-only np.memmap one byte into its file."""
    if not a.size:
        return read_only(a)
    path = os.path.join(_DIRECTORY, f"{next(_FILES)}.bin")
    with open(path, "wb") as f:
        f.write(b"\0" + np.ascontiguousarray(a).tobytes())
    return np.memmap(path, dtype=a.dtype, mode="r", offset=1, shape=a.shape)


def fortran(a: np.ndarray) -> np.ndarray:
    return np.asfortranarray(a)


def strided(a: np.ndarray) -> np.ndarray:
    """Every other element of a wider array along the last axis (a non-contiguous view)."""
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype) if a.ndim else a.copy()
    if not a.ndim:
        return wide
    wide[..., ::2] = a
    return wide[..., ::2]


def big_endian(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder(">")) if a.dtype.itemsize > 1 else a.copy()


LAYOUTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "misaligned": misaligned,
    "read_only": read_only,
    "memmap": memory_mapped,
    "misaligned_memmap": misaligned_memmap,
    "fortran": fortran,
    "strided": strided,
    "big_endian": big_endian,
}


def _layout(value: Any, layout: Callable[[np.ndarray], np.ndarray]) -> Any:
    if isinstance(value, np.ndarray):
        return layout(value)
    if sp.issparse(value):
        out = value.copy()
        out.data, out.indices, out.indptr = layout(out.data), layout(out.indices), layout(out.indptr)
        return out
    if isinstance(value, tuple):
        return tuple(_layout(v, layout) for v in value)
    return value


def _assert_same(got: Any, expected: Any, rtol: float) -> None:
    if isinstance(expected, dict):
        assert got.keys() == expected.keys()
        for key in expected:
            _assert_same(got[key], expected[key], rtol)
    elif isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e, rtol)
    elif isinstance(expected, (np.ndarray, float)):
        # Products in float32 (a ranker's scores) round by the layout BLAS sees.
        single = np.asarray(expected).dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=max(rtol, 1e-4) if single else rtol, atol=1e-6 if single else 0)
    else:
        assert got == expected


# ---------------------------------------------------------------- estimators

RNG = np.random.default_rng(0)
X = RNG.standard_normal((60, 6))
Y_CLASS = np.arange(60) % 4
Y_BINARY = (X[:, 0] + 0.3 * RNG.standard_normal(60) > 0).astype(np.int64)
Y_MULTI = (X[:, :3] + 0.3 * RNG.standard_normal((60, 3)) > 0).astype(np.int64)
GRAM = X @ X.T


ESTIMATORS: dict[str, tuple[Callable[[], Any], np.ndarray, Any]] = {
    "TopKSVC": (lambda: TopKSVC(k=2, C=0.5, random_state=0), X, Y_CLASS),
    "TopKSVC_rbf": (lambda: TopKSVC(k=1, kernel="rbf", gamma=0.3, random_state=0), X, Y_CLASS),
    "TopKSVC_sparse_input": (lambda: TopKSVC(k=1, random_state=0), X, Y_CLASS),
    "TopPushK": (lambda: TopPushK(K=3, kernel="linear", random_state=0), X, Y_BINARY),
    "PatMat": (lambda: PatMat(tau=0.2, kernel="rbf", gamma=0.3, random_state=0), X, Y_BINARY),
    "M3L_linear": (lambda: M3L(C=0.5, random_state=0), X, Y_MULTI),
    "M3L_rbf": (lambda: M3L(C=0.5, kernel="rbf", gamma=0.3, random_state=0), X, Y_MULTI),
    "RankmaxRanker": (
        lambda: RankmaxRanker(n_components=3, n_epochs=3, early_stopping=False, random_state=0),
        X,
        Y_CLASS,
    ),
    "TraceNorm": (lambda: TraceNormLogisticRegression(lambda_trace=0.05, random_state=0), X, Y_CLASS),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_estimators_fit_and_predict_any_layout(name, dtype):
    make, features, target = ESTIMATORS[name]
    features = features.astype(dtype)
    if name == "TopKSVC_sparse_input":
        features = sp.csr_matrix(features)
    reference = make().fit(features, target)
    expected = reference.decision_function(features)
    rtol = 1e-9 if dtype == np.float64 else 1e-4
    for layout in LAYOUTS.values():
        model = make().fit(_layout(features, layout), _layout(target, layout))
        _assert_same(model.decision_function(_layout(features, layout)), expected, rtol)
        _assert_same(model.decision_function(features), expected, rtol)


def test_precomputed_gram_matrices_of_any_layout():
    reference = TopKSVC(kernel="precomputed", random_state=0, keep_dual=True).fit(GRAM, Y_CLASS)
    for name, layout in LAYOUTS.items():
        model = TopKSVC(kernel="precomputed", random_state=0, keep_dual=True).fit(layout(GRAM), Y_CLASS)
        np.testing.assert_allclose(model.dual_coef_, reference.dual_coef_, rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_product_quantizer_any_layout(dtype):
    data = RNG.standard_normal((300, 8)).astype(dtype)
    reference = ProductQuantizer(n_subspaces=2, n_bits=3, random_state=0).fit(data)
    codes = reference.encode(data)
    for name, layout in LAYOUTS.items():
        pq = ProductQuantizer(n_subspaces=2, n_bits=3, random_state=0).fit(layout(data))
        np.testing.assert_array_equal(pq.codebooks_, reference.codebooks_, err_msg=name)
        np.testing.assert_array_equal(pq.encode(layout(data)), codes, err_msg=name)
        np.testing.assert_array_equal(pq.decode(layout(codes)), reference.decode(codes), err_msg=name)


# ---------------------------------------------------------------- toprank._core

N, D, M = 40, 5, 4
XC = RNG.standard_normal((N, D))
YC = (np.arange(N) % M).astype(np.int64)
C = np.full(N, 0.5)
LOSS = dict(loss="alpha", k=1, smoothing=0.0)
SIGNS = np.where(Y_MULTI[:N] > 0, 1.0, -1.0)
R = np.eye(3) + 0.2 * (1 - np.eye(3))
PLUS, MINUS = np.zeros((N, 3)), np.full((N, 3), 2.0)
BOOKS = _core.pq_train(RNG.standard_normal((200, 6)), PqSettings(2, 2, 5, 256, 0))[0]
CODES = _core.pq_encode(BOOKS, RNG.standard_normal((N, 6)))
SCORES = RNG.standard_normal((N, M))
LABELS32 = YC.astype(np.uint32)
N_THETA = (D + M) * 2 + M
THETA = 0.1 * RNG.standard_normal(N_THETA)
KERNEL = dict(kernel="rbf", gamma=0.5, degree=3, coef0=1.0)
SDCA = dict(tol=1e-6, max_epochs=50, check_every=1, seed=0)
RANKER = dict(n_labels=M, n_components=2, loss="softmax", k=1, eta=1.0)


# The fits take their settings (and M3L its problem, the ranker its label sets and
# optimiser state) as objects: these adapters, named as the core's functions, take
# every array by keyword so that each can be given in any layout.
def topk_svm_fit(
    x, y, c, codebooks=None, dual_coef=None, kernel=None, gamma=1.0, degree=3, coef0=1.0, cache_size=200.0, **settings
):
    x = x if codebooks is None else SimpleNamespace(codes=x, codebooks=codebooks)
    kernel_settings = None if kernel is None else KernelSettings(kernel, gamma, degree, coef0, cache_size)
    return _core.topk_svm_fit(
        x, SdcaProblem(y, c, dual_coef=dual_coef), SdcaSettings(**settings, kernel=kernel_settings)
    )


def kernel_cross(z, x, **kernel):
    return _core.kernel_cross(z, x, KernelSettings(**kernel))


def attop_fit(x, positive, kernel, gamma, degree, coef0, cache_size, **settings):
    kernel_settings = KernelSettings(kernel, gamma, degree, coef0, cache_size)
    return _core.attop_fit(x, positive, AttopSettings(**settings, kernel=kernel_settings))


def m3l_fit(
    x, y, r, delta_plus, delta_minus, kernel=None, gamma=1.0, degree=3, coef0=1.0, cache_size=200.0, **settings
):
    kernel_settings = None if kernel is None else KernelSettings(kernel, gamma, degree, coef0, cache_size)
    problem = M3lProblem(y, r, delta_plus, delta_minus)
    return _core.m3l_fit(x, problem, M3lSettings(**settings, kernel=kernel_settings))


def ranker_epoch(x, y_indptr, y_indices, rows, theta, first, second, steps, seed, **settings):
    problem = _core.RankerProblem(x, _LabelSets(y_indptr, y_indices), rows, RankerSettings(**settings))
    return problem.epoch(_Training(theta, first, second, steps), seed)


def ranker_objective(x, y_indptr, y_indices, rows, theta, **settings):
    return _core.RankerProblem(x, _LabelSets(y_indptr, y_indices), rows, RankerSettings(**settings)).objective(theta)


def svc_partition(x: Any, y: Any, c: Any, coef: Any, dual: Any) -> Any:
    """``_core.SvcPartition`` built from the arrays, its state restored from ``dual``, a
    round of 1.5 passes with a line search (its change committed at t = ½ by the terms),
    and its state."""
    settings = SvcPartitionSettings("alpha", 1, 0.0, None, M, False, 1.5, 1.0, True)
    part = _core.SvcPartition(x, y, c, settings, 1)
    part.restore({"dual": dual}, {"cursor": np.array([1, 0])})
    local, change = part.round(coef, 1.0)
    return local, change, part.terms(coef, 0.5), part.state(None)


def m3l_partition(x: Any, y: Any, r: Any, delta_plus: Any, delta_minus: Any, coef: Any, dual: Any) -> Any:
    """``_core.M3lPartition`` (R in its settings), restored from ``dual``: a round of two
    epochs, the terms and the state."""
    part = _core.M3lPartition(x, y, (delta_plus, delta_minus), M3lPartitionSettings(r, 0.5, None, 2, 2.0), 0)
    part.restore({"dual": dual}, {"epoch": np.array([3])})
    local, _ = part.round(coef, 1.0)
    return local, part.terms(coef, 1.0), part.state(None)


# name -> (the function, its array arguments (by keyword), the other keywords, the
# arguments it updates in place, whether the float arrays may be float32).
CORE: dict[str, tuple[Callable[..., Any], dict[str, Any], dict[str, Any], tuple[str, ...], bool]] = {
    "topk_simplex": (_core.topk_simplex, dict(x=SCORES), dict(k=2), (), True),
    "bipartite_simplex": (
        _core.bipartite_simplex,
        dict(x=SCORES, positive=np.arange(M) == YC[:, None]),
        dict(r=1.0, rho=0.5),
        (),
        True,
    ),
    "rankmax_loss": (_core.rankmax_loss, dict(z=SCORES, y=YC), dict(k=2), (), True),
    "multilabel_hinge": (
        _core.multilabel_hinge,
        dict(scores=SCORES, y=np.arange(M) == YC[:, None]),
        dict(smoothing=0.5),
        (),
        True,
    ),
    "multilabel_softmax_loss": (
        _core.multilabel_softmax_loss,
        dict(z=SCORES, y=np.arange(M) == YC[:, None]),
        {},
        (),
        True,
    ),
    "topk_hinge": (_core.topk_hinge, dict(scores=SCORES, y=YC), dict(k=2), (), True),
    "topk_svm_fit_linear": (
        topk_svm_fit,
        dict(x=XC, y=YC, c=C),
        dict(n_classes=M, bias=1.0, **LOSS, **SDCA),
        (),
        True,
    ),
    "topk_svm_fit_linear_csr": (
        topk_svm_fit,
        dict(x=sp.csr_matrix(XC), y=YC, c=C),
        dict(n_classes=M, bias=None, **LOSS, **SDCA),
        (),
        True,
    ),
    "topk_svm_fit_linear_codes": (
        topk_svm_fit,
        dict(x=CODES, y=YC, c=C, codebooks=BOOKS),
        dict(n_classes=M, bias=None, **LOSS, **SDCA),
        (),
        False,
    ),
    "topk_svm_fit_kernel": (
        topk_svm_fit,
        dict(x=XC, y=YC, c=C, dual_coef=np.zeros((N, M))),
        dict(n_classes=M, cache_size=10.0, **KERNEL, **LOSS, **SDCA),
        (),
        True,
    ),
    "kernel_cross": (kernel_cross, dict(z=XC[:7], x=XC), KERNEL, (), False),
    "attop_fit": (
        attop_fit,
        dict(x=XC, positive=YC == 0),
        dict(
            method="toppushk",
            k=2,
            tau=0.1,
            surrogate="hinge",
            scale=1.0,
            c=1.0,
            cache_size=10.0,
            tol=1e-6,
            max_iter=100,
            check_every=1,
            seed=0,
            **KERNEL,
        ),
        (),
        True,
    ),
    "m3l_fit_linear": (
        m3l_fit,
        dict(x=XC, y=SIGNS, r=R, delta_plus=PLUS, delta_minus=MINUS),
        dict(c=0.5, tol=1e-6, max_iter=200, seed=0, bias=1.0),
        (),
        True,
    ),
    "m3l_fit_kernel": (
        m3l_fit,
        dict(x=XC, y=SIGNS, r=R, delta_plus=PLUS, delta_minus=MINUS),
        dict(c=0.5, tol=1e-6, max_iter=2000, cache_size=10.0, **KERNEL),
        (),
        True,
    ),
    "svc_partition": (
        svc_partition,
        dict(x=XC, y=YC, c=C, coef=0.1 * RNG.standard_normal((M, D)), dual=np.zeros((N, M))),
        {},
        (),
        True,
    ),
    "m3l_partition": (
        m3l_partition,
        dict(
            x=XC,
            y=SIGNS,
            r=R,
            delta_plus=PLUS,
            delta_minus=MINUS,
            coef=0.1 * RNG.standard_normal((3, D)),
            dual=np.full((N, 3), 0.1),
        ),
        {},
        (),
        True,
    ),
    "pq_train": (
        _core.pq_train,
        dict(x=RNG.standard_normal((100, 6))),
        dict(settings=PqSettings(n_subspaces=2, n_bits=2, n_iter=3, max_points_per_centroid=256, seed=0)),
        (),
        True,
    ),
    "pq_encode": (_core.pq_encode, dict(codebooks=BOOKS, x=RNG.standard_normal((N, 6))), {}, (), True),
    "pq_decode": (_core.pq_decode, dict(codebooks=BOOKS, codes=CODES), {}, (), False),
    "pq_dot": (_core.pq_decode, dict(codebooks=BOOKS, codes=CODES, b=RNG.standard_normal((6, 3))), {}, (), True),
    "pq_tdot": (
        _core.pq_decode,
        dict(codebooks=BOOKS, codes=CODES, b=RNG.standard_normal((N, 3))),
        dict(transposed=True),
        (),
        True,
    ),
    "ranker_epoch": (
        ranker_epoch,
        dict(
            x=XC,
            y_indptr=np.arange(N + 1, dtype=np.int64),
            y_indices=YC,
            rows=np.arange(N),
            theta=THETA,
            first=np.zeros(N_THETA),
            second=np.zeros(N_THETA),
        ),
        dict(steps=0, optimizer="adam", learning_rate=0.01, alpha=1e-3, batch_size=8, seed=0, **RANKER),
        (),
        True,
    ),
    "ranker_objective": (
        ranker_objective,
        dict(x=XC, y_indptr=np.arange(N + 1, dtype=np.int64), y_indices=YC, rows=np.arange(N), theta=THETA),
        dict(alpha=1e-3, **RANKER),
        (),
        True,
    ),
}


def _float32(arrays: dict[str, Any], updated: tuple[str, ...]) -> dict[str, Any]:
    """The float64 arguments as float32, but those updated in place (their dtype is fixed)."""

    def narrow(a: Any) -> Any:
        if isinstance(a, np.ndarray) and a.dtype == np.float64:
            return a.astype(np.float32)
        if sp.issparse(a):
            return a.astype(np.float32)
        return a

    return {name: (a if name in updated else narrow(a)) for name, a in arrays.items()}


def _call(name: str, arrays: dict[str, Any]) -> tuple[Any, dict[str, np.ndarray]]:
    fn, _, keywords, updated, _ = CORE[name]
    result = _plain(fn(**arrays, **keywords))
    return result, {key: np.array(arrays[key]) for key in updated}


def _plain(result: Any) -> Any:
    """A fit's report as a tuple of its fields, without the elapsed times."""
    if isinstance(result, _core.FitReport):
        history = [point[:-1] for point in result.history]
        return (result.status, result.n_iter, result.primal, result.dual, result.gap, history)
    return tuple(_plain(part) for part in result) if isinstance(result, tuple) else result


def _ordinary(arrays: dict[str, Any]) -> dict[str, Any]:
    return {name: (np.ascontiguousarray(a).copy() if isinstance(a, np.ndarray) else a) for name, a in arrays.items()}


def test_every_core_function_with_array_arguments_is_covered():
    # The CoCoA+ partitions and the ranker's problem through the functions above; two
    # functions take scalars only.
    classes = {"svc_partition", "m3l_partition", "ranker_epoch", "ranker_objective"}
    covered = {fn.__name__ for fn, *_ in CORE.values()} - classes
    assert {"SvcPartition", "M3lPartition", "RankerProblem"} <= set(dir(_core))
    scalars = {"cocoa_step_length", "relative_gap"}
    functions = {name for name in dir(_core) if callable(getattr(_core, name)) and not name[0].isupper()} - scalars
    projections = {
        "simplex",
        "knapsack",
        "topk_cone",
        "box_simplex",
        "capped_simplex",
        "capped_simplex_entropy",
        "sparsemax",
        "rankmax",
        "softmax_loss",
        "sparsemax_loss",
    }  # the path of topk_simplex
    assert functions - projections == covered


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", list(CORE))
def test_core_functions_take_any_layout(name, layout, dtype):
    _, arrays, _, updated, narrows = CORE[name]
    if dtype == "float32":
        if not narrows:
            pytest.skip("float64 arguments only (float32 ones widen: tested with the others)")
        arrays = _float32(arrays, updated)
    expected, expected_state = _call(name, _ordinary(arrays))
    transform = LAYOUTS[layout]
    given = {key: _layout(value, transform) for key, value in arrays.items()}
    if updated and layout in ("read_only", "memmap", "misaligned_memmap"):
        with pytest.raises(InvalidInputError, match=f"^{updated[0]}: is read-only"):
            _call(name, given)
        return
    got, state = _call(name, given)
    rtol = 1e-12 if dtype == "float64" else 1e-5
    _assert_same(got, expected, rtol)
    _assert_same(state, expected_state, rtol)


def test_float32_widens_for_float64_arguments():
    # c, coef and the state's dual are float64 in the core: float32 ones are converted.
    arrays = CORE["svc_partition"][1]
    names = ("c", "coef", "dual")
    narrowed = {key: (a.astype(np.float32) if key in names else a) for key, a in arrays.items()}
    widened = {key: (a.astype(np.float32).astype(np.float64) if key in names else a) for key, a in arrays.items()}
    _assert_same(_call("svc_partition", narrowed)[0], _call("svc_partition", widened)[0], 0)
    with pytest.raises(InvalidInputError, match=r"^c: expected dtype float64, got int64"):
        _call("svc_partition", dict(arrays, c=np.ones(N, dtype=np.int64)))


def test_the_epoch_returns_its_state_and_writes_no_argument():
    # The epoch takes θ and the moments by value (any layout, read-only ones included)
    # and returns the new state; the moments must have θ's dtype, which the state keeps.
    _, arrays, _, _, _ = CORE["ranker_epoch"]
    given = _ordinary(arrays)
    before = {key: given[key].copy() for key in ("theta", "first", "second")}
    (theta, first, second, steps), _ = _call("ranker_epoch", given)[0]
    assert steps > 0 and theta.dtype == first.dtype == second.dtype == np.float64
    assert not np.array_equal(theta, before["theta"])
    for key, value in before.items():
        np.testing.assert_array_equal(given[key], value)
    with pytest.raises(InvalidInputError, match=r"^first: expected dtype float64 \(the dtype of theta\), got float32"):
        _call("ranker_epoch", dict(_ordinary(arrays), first=np.zeros(N_THETA, dtype=np.float32)))
    shared = np.zeros(N_THETA)
    _call("ranker_epoch", dict(_ordinary(arrays), first=shared, second=shared))
    np.testing.assert_array_equal(shared, 0.0)


# ---------------------------------------------------------------- finiteness

# name -> the float arguments whose NaN or infinity the function must refuse by name
# (not B of pq_decode's codebooks: the core's own check names them too).
FINITE: dict[str, tuple[str, ...]] = {
    "topk_svm_fit_linear": ("x", "c"),
    "topk_svm_fit_linear_csr": ("x", "c"),
    "topk_svm_fit_linear_codes": ("codebooks",),
    "topk_svm_fit_kernel": ("x", "c", "dual_coef"),
    "kernel_cross": ("z", "x"),
    "attop_fit": ("x",),
    "m3l_fit_linear": ("x", "r", "delta_minus"),
    "m3l_fit_kernel": ("x", "r", "delta_plus"),
    # The partitions check X once, as they are built, and a restored state once (the
    # rounds trust the dual rows they update).
    "svc_partition": ("x", "c", "coef", "dual"),
    "m3l_partition": ("x", "r", "delta_minus", "coef", "dual"),
    "pq_train": ("x",),
    "pq_encode": ("x",),
    "pq_dot": ("b",),
    "pq_tdot": ("b",),
    "ranker_epoch": ("x", "theta"),
    "ranker_objective": ("x", "theta"),
}
# The names the errors use (the Python-facing names of the arguments).
SHOWN = {"x": "X", "z": "X", "y": "Y", "r": "R", "delta_plus": "loss", "delta_minus": "loss", "b": "B", "a": "A"}
SHOWN_BY_FUNCTION = {("kernel_cross", "x"): "X_fit"}


def _with_non_finite(name: str, argument: str, bad: float) -> dict[str, Any]:
    arrays = _ordinary(CORE[name][1])
    value = arrays[argument]
    if sp.issparse(value):
        value = value.copy()
        value.data[-1] = bad
    else:
        value = value.copy()
        value.flat[value.size // 2] = bad
    arrays[argument] = value
    return arrays


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("name, argument", [(n, a) for n, names in FINITE.items() for a in names])
def test_nan_and_infinity_are_refused_naming_the_argument(name, argument, bad):
    shown = SHOWN_BY_FUNCTION.get((name, argument), SHOWN.get(argument, argument))
    with pytest.raises(InvalidInputError, match=f"^{shown}:"):
        _call(name, _with_non_finite(name, argument, bad))
