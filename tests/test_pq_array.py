"""A CompressedMatrix as a matrix: NumPy's array protocol (``np.asarray`` decodes, ``@``
multiplies from the codes), row selection, scikit-learn's splitters, and every linear
estimator's ``fit`` / ``predict`` / ``decision_function`` on one; the ProductQuantizer's
transformer API (feature names, ``set_output``, ``verbose``, scikit-learn's checks).

The reference for every result is the same computation on the decoded matrix
``np.asarray(Xc)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import KFold, cross_val_score, train_test_split
from sklearn.utils import _safe_indexing
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import check_array

from toprank import M3L, PatMat, RankmaxRanker, TopKSVC, TopPush, TopPushK, TraceNormLogisticRegression
from toprank.exceptions import InvalidInputError
from toprank.pq import CompressedMatrix, ProductQuantizer

D = 16


def _data(n: int = 240, dtype: type = np.float64, seed: int = 0) -> tuple[ProductQuantizer, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n, D)) @ rng.normal(size=(D, D)) / 4).astype(dtype)
    return ProductQuantizer(n_subspaces=4, n_bits=4, n_iter=6, random_state=seed).fit(X), X


@pytest.fixture(scope="module")
def fitted() -> tuple[ProductQuantizer, np.ndarray, CompressedMatrix]:
    pq, X = _data()
    return pq, X, pq.compress(X)


def _no_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes any decoding of codes fail: what runs after this reads the codes only."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("decoded")

    monkeypatch.setattr(ProductQuantizer, "decode", refuse)


# ------------------------------------------------------------------ the array protocol


def test_asarray_decodes_to_float32_honours_dtype_and_refuses_copy_false(fitted: Any) -> None:
    pq, X, Xc = fitted
    decoded = pq.decode(Xc.codes)
    assert Xc.shape == (len(X), D) and Xc.ndim == 2 and Xc.dtype == np.float32 and len(Xc) == len(X)
    out = np.asarray(Xc)
    assert out.dtype == np.float32 and out.shape == Xc.shape
    np.testing.assert_array_equal(out, decoded)
    np.testing.assert_array_equal(Xc.toarray(), decoded)
    wide = np.asarray(Xc, dtype=np.float64)
    assert wide.dtype == np.float64
    np.testing.assert_array_equal(wide, decoded.astype(np.float64))
    np.testing.assert_array_equal(np.array(Xc, copy=True), decoded)
    # Decoding always makes a new array, which NumPy 2's copy=False must refuse.
    for matrix in (Xc, Xc.T):
        with pytest.raises(ValueError, match=r"^copy: a CompressedMatrix \(or its \.T\) cannot be viewed as an array"):
            np.asarray(matrix, copy=False)
    # Other ufuncs and functions run on X̂.
    np.testing.assert_array_equal(np.abs(Xc), np.abs(decoded))
    np.testing.assert_array_equal(np.asarray(Xc.T), decoded.T)
    np.testing.assert_array_equal(check_array(Xc), decoded)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("width", [None, 1, 5])
def test_matmul_is_computed_from_the_codes_and_equals_the_decoded_product(
    fitted: Any, monkeypatch: pytest.MonkeyPatch, dtype: type, width: int | None
) -> None:
    pq, X, Xc = fitted
    Xh = np.asarray(Xc)
    rng = np.random.default_rng(1)
    shape = (D,) if width is None else (D, width)
    W = rng.normal(size=shape).astype(dtype)
    B = rng.normal(size=(len(X),) if width is None else (len(X), width)).astype(dtype)
    A = B.T  # (width, n) or (n,)
    want = {"X @ W": Xh @ W, "X.T @ B": Xh.T @ B, "A @ X": A @ Xh, "W.T @ X.T": W.T @ Xh.T}
    # |X̂|·|W| etc. in float64: the scale of each entry's rounding error.
    scale = {
        "X @ W": np.abs(Xh.astype(np.float64)) @ np.abs(W.astype(np.float64)),
        "X.T @ B": np.abs(Xh.T.astype(np.float64)) @ np.abs(B.astype(np.float64)),
        "A @ X": np.abs(A.astype(np.float64)) @ np.abs(Xh.astype(np.float64)),
        "W.T @ X.T": np.abs(W.T.astype(np.float64)) @ np.abs(Xh.T.astype(np.float64)),
    }
    terms = {"X @ W": D, "X.T @ B": len(X), "A @ X": len(X), "W.T @ X.T": D}
    _no_decoding(monkeypatch)
    got = {"X @ W": Xc @ W, "X.T @ B": Xc.T @ B, "A @ X": A @ Xc, "W.T @ X.T": W.T @ Xc.T}
    for name, value in got.items():
        assert value.shape == want[name].shape and value.dtype == dtype, name
        # Any order of summing t products of the operands' dtype (unit roundoff u) is
        # within γ_t·Σ|x||w| of the exact sum, γ_t = t·u / (1 − t·u) (Higham, Accuracy
        # and Stability of Numerical Algorithms, §3.1); both sides are such sums.
        u = np.finfo(dtype).eps / 2
        t = terms[name]
        bound = 2 * t * u / (1 - t * u) * scale[name]
        assert np.all(np.abs(value.astype(np.float64) - want[name]) <= bound), name
    # Lists and sparse operands are made dense; ints become float64.
    np.testing.assert_allclose(Xc @ W.tolist(), Xh @ np.asarray(W, dtype=np.float64), rtol=1e-5, atol=1e-5)
    assert (Xc @ np.ones(D, dtype=np.int64)).dtype == np.float64
    if width is not None:
        np.testing.assert_allclose(Xc @ sp.csr_matrix(W), Xc @ W)


def test_matmul_with_bad_operands_names_them(fitted: Any) -> None:
    _, X, Xc = fitted
    with pytest.raises(InvalidInputError, match=rf"^B: expected {D} rows, got shape \(3, 2\)"):
        Xc @ np.ones((3, 2))
    with pytest.raises(InvalidInputError, match=rf"^A: expected {len(X)} columns"):
        np.ones((2, 3)) @ Xc
    with pytest.raises(InvalidInputError, match=rf"^A: expected {D} columns"):
        np.ones((2, 3)) @ Xc.T
    with pytest.raises(InvalidInputError, match="^B: contains NaN"):
        Xc @ np.full(D, np.nan)
    # A on the left of X or of X.T is A, whichever product computes it.
    for left in (np.full(len(X), np.nan), np.full((2, len(X)), np.nan)):
        with pytest.raises(InvalidInputError, match="^A: contains NaN"):
            left @ Xc
    for left in (np.full(D, np.nan), np.full((2, D), np.nan)):
        with pytest.raises(InvalidInputError, match="^A: contains NaN"):
            left @ Xc.T
    with pytest.raises(InvalidInputError, match="^B: expected a numeric array"):
        Xc @ np.array(["a"] * D)


def test_repr_and_memory(fitted: Any) -> None:
    pq, X, Xc = fitted
    assert Xc.nbytes == Xc.codes.nbytes + pq.codebooks_.nbytes == len(X) * 4 + 4 * 16 * 4 * 4
    text = repr(Xc)
    assert len(X) == 240 and text == (
        "CompressedMatrix(shape=(240, 16), n_subspaces=4, n_bits=4, 960 B of codes + 1.0 kB of codebooks; "
        "15.4 kB decoded as float32)"
    )
    assert repr(Xc.T) == text + ".T"
    assert repr(Xc[:0]).startswith("CompressedMatrix(shape=(0, 16), n_subspaces=4, n_bits=4, 0 B of codes")


# -------------------------------------------------------------------- row selection


def test_row_selections_share_the_codebooks(fitted: Any) -> None:
    _, X, Xc = fitted
    Xh = np.asarray(Xc)
    n = len(X)
    mask = np.arange(n) % 3 == 0
    cases: list[tuple[Any, np.ndarray]] = [
        (5, Xh[[5]]),
        (-1, Xh[[-1]]),
        (np.int64(7), Xh[[7]]),
        (slice(10, 40, 3), Xh[10:40:3]),
        ([3, 1, 1, -2], Xh[[3, 1, 1, -2]]),
        (np.array([0, n - 1], dtype=np.uint16), Xh[[0, n - 1]]),
        (mask, Xh[mask]),
        ((mask, ...), Xh[mask]),
        ((slice(0, 5), slice(None)), Xh[:5]),
        (([2, 4],), Xh[[2, 4]]),
        # Empty selections.
        ([], Xh[:0]),
        (np.zeros(n, dtype=bool), Xh[:0]),
        (slice(7, 7), Xh[:0]),
    ]
    for rows, want in cases:
        part = Xc[rows]
        assert isinstance(part, CompressedMatrix) and part.shape == want.shape, rows
        assert part.codebooks is not None and part._books is Xc._books
        np.testing.assert_array_equal(np.asarray(part), want)
    empty = Xc[[]]
    assert (empty @ np.ones(D)).shape == (0,) and (empty.T @ np.ones((0, 2))).shape == (D, 2)
    assert np.asarray(empty).shape == (0, D)


def test_bad_row_selections_raise_index_errors(fitted: Any) -> None:
    _, X, Xc = fitted
    n = len(X)
    for rows, message in [
        (n, f"rows: index {n} is out of range for a CompressedMatrix of {n} rows"),
        (-n - 1, f"rows: index {-n - 1} is out of range"),
        ([0, n + 5], f"rows: index {n + 5} is out of range"),
        (np.array([-n - 2, 0]), f"rows: index {-n - 2} is out of range"),
        (np.ones(3, dtype=bool), f"rows: a boolean mask needs {n} entries"),
        (1.5, "rows: expected an int, a slice, or a 1-D array of ints or booleans"),
        (np.zeros((2, 2), dtype=int), "rows: expected an int, a slice, or a 1-D array"),
        (True, "rows: a bool is not a row index"),
    ]:
        with pytest.raises(IndexError, match=f"^{re.escape(message)}"):
            Xc[rows]
    with pytest.raises(InvalidInputError, match=r"^rows: a CompressedMatrix selects rows only"):
        Xc[:, 1]
    with pytest.raises(InvalidInputError, match=r"^rows: a CompressedMatrix selects rows only"):
        Xc[0, 1, 2]
    # Iteration stops at the end (Python's protocol ends on IndexError).
    assert sum(1 for _ in Xc[:5]) == 5


def test_float32_data(fitted: Any) -> None:
    pq, X = _data(dtype=np.float32, seed=3)
    Xc = pq.compress(X)
    np.testing.assert_array_equal(Xc.codes, pq.encode(X.astype(np.float64)))
    assert np.asarray(Xc).dtype == np.float32
    W = np.random.default_rng(0).normal(size=(D, 3)).astype(np.float32)
    assert (Xc @ W).dtype == np.float32
    np.testing.assert_allclose(Xc @ W, np.asarray(Xc) @ W, rtol=1e-4, atol=1e-4)


def test_a_refitted_quantizer_is_refused(fitted: Any) -> None:
    pq, X, _ = fitted
    pq = clone(pq).fit(X)
    Xc = pq.compress(X)
    pq.fit(X)
    for use in (np.asarray, lambda m: m @ np.ones(D), lambda m: m[:3], lambda m: TopPush().fit(m, X[:, 0] > 0)):
        with pytest.raises(InvalidInputError, match="^quantizer: was refitted"):
            use(Xc)


# ------------------------------------------------------------- scikit-learn's tools


def test_scikit_learn_splitters_and_indexing(fitted: Any) -> None:
    _, X, Xc = fitted
    y = (X[:, 0] > 0).astype(int)
    part = _safe_indexing(Xc, np.arange(10, 20))
    assert isinstance(part, CompressedMatrix)
    np.testing.assert_array_equal(np.asarray(part), np.asarray(Xc)[10:20])
    train, test, y_train, y_test = train_test_split(Xc, y, test_size=0.25, random_state=0)
    assert isinstance(train, CompressedMatrix) and train.shape == (180, D) and test.shape == (60, D)
    dense = train_test_split(np.asarray(Xc), y, test_size=0.25, random_state=0)
    np.testing.assert_array_equal(np.asarray(test), dense[1])
    model = TopKSVC(k=1, C=0.1, random_state=0)
    on_codes = cross_val_score(model, Xc, y, cv=KFold(3))
    on_decoded = cross_val_score(model, np.asarray(Xc), y, cv=KFold(3))
    np.testing.assert_allclose(on_codes, on_decoded)
    assert on_codes.min() > 0.7


# ------------------------------------------------------------- the linear estimators


def _labels(X: np.ndarray) -> np.ndarray:
    return (X[:, 0] + 0.5 * X[:, 1] > 0.3).astype(int)


def _indicator(X: np.ndarray) -> np.ndarray:
    return (X[:, :4] > 0).astype(int)


# (estimator, targets, whether its fit reads the codes, whether its predictions do).
LINEAR: list[tuple[Any, Callable[[np.ndarray], np.ndarray], bool, bool]] = [
    (TopKSVC(k=1, C=0.1, tol=1e-7, max_epochs=5000, random_state=0), _labels, True, True),
    (TraceNormLogisticRegression(lambda_trace=1e-2, tol=1e-8, random_state=0), _labels, True, True),
    (M3L(kernel="linear", C=0.5, random_state=0), _indicator, False, True),
    (TopPush(kernel="linear", random_state=0), _labels, False, False),
    (TopPushK(K=3, kernel="linear", random_state=0), _labels, False, False),
    (PatMat(tau=0.1, kernel="linear", random_state=0), _labels, False, False),
    (RankmaxRanker(k=2, n_components=3, n_epochs=3, random_state=0), _indicator, False, False),
]


@pytest.mark.parametrize(
    ("estimator", "targets", "on_codes", "predicts_on_codes"), LINEAR, ids=lambda e: type(e).__name__
)
def test_linear_estimators_take_a_compressed_matrix(
    estimator: Any, targets: Any, on_codes: bool, predicts_on_codes: bool, fitted: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, X, Xc = fitted
    Xh = np.asarray(Xc)
    y = targets(X)
    decoded = clone(estimator).fit(Xh, y)
    if on_codes:
        _no_decoding(monkeypatch)
    coded = clone(estimator).fit(Xc, y)
    assert coded.n_features_in_ == D
    learned = "coef_" if hasattr(decoded, "coef_") else "components_"
    if hasattr(decoded, learned):
        if on_codes:  # a different computation of the same model: equal to the solver's tol
            np.testing.assert_allclose(getattr(coded, learned), getattr(decoded, learned), rtol=1e-5, atol=1e-6)
        else:  # decoded first: the very same fit
            np.testing.assert_array_equal(getattr(coded, learned), getattr(decoded, learned))
    np.testing.assert_allclose(coded.decision_function(Xc), decoded.decision_function(Xh), rtol=1e-5, atol=1e-6)
    if predicts_on_codes:
        _no_decoding(monkeypatch)
    # Predictions on codes: decoded (the same numbers), or from the codes (X̂·Wᵀ by
    # table lookups: the same to rounding).
    np.testing.assert_allclose(decoded.decision_function(Xc), decoded.decision_function(Xh), rtol=1e-12, atol=1e-12)
    if hasattr(decoded, "predict"):
        np.testing.assert_array_equal(decoded.predict(Xc), decoded.predict(Xh))
    else:  # the ranker predicts by recommending
        np.testing.assert_array_equal(decoded.recommend(Xc, n=2), decoded.recommend(Xh, n=2))


@pytest.mark.parametrize(
    "estimator",
    [
        TopKSVC(kernel="rbf", gamma=0.1, random_state=0, keep_dual=True),
        M3L(kernel="rbf", gamma=0.1, keep_dual=True),
        TopPush(random_state=0),
    ],
    ids=lambda e: type(e).__name__,
)
def test_kernel_estimators_train_on_the_decoded_matrix(estimator: Any, fitted: Any) -> None:
    _, X, Xc = fitted
    y = _labels(X)
    coded = clone(estimator).fit(Xc, y)
    decoded = clone(estimator).fit(np.asarray(Xc), y)
    np.testing.assert_array_equal(coded.dual_coef_, decoded.dual_coef_)
    np.testing.assert_array_equal(coded.decision_function(Xc), decoded.decision_function(np.asarray(Xc)))


@pytest.mark.parametrize(
    "estimator",
    [TopPush(kernel="linear", random_state=0), TopKSVC(random_state=0), TraceNormLogisticRegression(random_state=0)],
    ids=lambda e: type(e).__name__,
)
def test_wrong_width_is_refused_at_prediction(estimator: Any, fitted: Any) -> None:
    _, X, Xc = fitted
    model = clone(estimator).fit(X[:, :8], _labels(X))
    with pytest.raises(ValueError, match=f"X has 16 features, but {type(estimator).__name__} is expecting 8 features"):
        model.predict(Xc)


# ------------------------------------------------------- the quantizer as a transformer


def test_feature_names_follow_the_input(fitted: Any) -> None:
    pq, X, _ = fitted
    np.testing.assert_array_equal(pq.get_feature_names_out(), [f"x{j}" for j in range(D)])
    columns = [f"f{j}" for j in range(D)]
    frame = pd.DataFrame(X, columns=columns)
    named = clone(pq).fit(frame)
    np.testing.assert_array_equal(named.feature_names_in_, columns)
    np.testing.assert_array_equal(named.get_feature_names_out(), columns)
    # transform's output columns are the quantized input columns.
    out = named.set_output(transform="pandas").transform(frame)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == columns
    np.testing.assert_array_equal(out.to_numpy(), named.decode(named.encode(frame)))
    # compress is not a transform: codes stay codes whatever the output setting.
    assert isinstance(named.compress(frame), CompressedMatrix)
    with pytest.raises(InvalidInputError, match="^X: X has 8 features, but ProductQuantizer is expecting 16"):
        named.transform(X[:, :8])


def test_verbose_reports_kmeans_per_sub_space(capsys: pytest.CaptureFixture[str]) -> None:
    X = np.random.default_rng(0).normal(size=(300, 64))
    ProductQuantizer(n_subspaces=32, n_bits=2, n_iter=3, random_state=0).fit(X)
    assert capsys.readouterr().out == ""
    ProductQuantizer(n_subspaces=32, n_bits=2, n_iter=3, random_state=0, verbose=1).fit(X)
    lines = capsys.readouterr().out.splitlines()
    per_space = [line for line in lines if "k-means error" in line]
    # At most 20 sub-space lines at verbose=1 (every 2nd of 32, and the last), then the summary.
    assert len(per_space) == 17 and "   32/32  k-means error" in per_space[-1]
    assert all(line.startswith("[ProductQuantizer] ") and "after 3 iterations" in line for line in per_space)
    assert re.fullmatch(
        r"\[ProductQuantizer\] trained 32 sub-spaces x 4 centroids on 300 of 300 rows in .*s", lines[-1]
    )
    ProductQuantizer(n_subspaces=32, n_bits=2, n_iter=3, random_state=0, verbose=2).fit(X)
    assert sum("k-means error" in line for line in capsys.readouterr().out.splitlines()) == 32
    with pytest.raises(InvalidInputError, match="^verbose:"):
        ProductQuantizer(n_subspaces=32, verbose=-1).fit(X)


@parametrize_with_checks([ProductQuantizer(n_subspaces=1, n_bits=2)])
def test_scikit_learn_estimator_checks(estimator: Any, check: Any) -> None:
    check(estimator)
