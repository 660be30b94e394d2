"""Product quantization: codebooks, codes and the compressed-domain products.

The reference for every product is the dense product with the decoded matrix X̂
(NumPy, float64), which the compressed products must equal to 1e-10; the reference for
encoding is a brute-force nearest-centroid search in NumPy (and faiss's encoder on the
same codebooks when faiss-cpu is installed).
"""

from __future__ import annotations

import pickle
import time

import numpy as np
import pytest
from _interrupt import interrupt_during
from sklearn.base import clone

from toprank import TopKSVC, _core
from toprank.exceptions import InvalidInputError
from toprank.pq import CompressedMatrix, PqSettings, ProductQuantizer


def _fitted(
    n: int = 1500, d: int = 24, n_subspaces: int = 6, n_bits: int = 5, seed: int = 0
) -> tuple[ProductQuantizer, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) / np.sqrt(d)
    return ProductQuantizer(n_subspaces=n_subspaces, n_bits=n_bits, n_iter=8, random_state=seed).fit(X), X


# Shapes around the blocks of the products (1024 rows per task, 64 columns per pass,
# up to 16 sub-spaces per group): d, M and m not multiples of them, a single column.
@pytest.mark.parametrize(
    ("n", "d", "n_subspaces", "n_bits", "m"),
    [(300, 6, 3, 2, 1), (2100, 40, 20, 4, 70), (1100, 36, 18, 8, 130), (700, 17, 17, 3, 65), (2600, 64, 32, 6, 3)],
)
def test_products_equal_dense_products_with_the_decoded_matrix(
    n: int, d: int, n_subspaces: int, n_bits: int, m: int
) -> None:
    pq, X = _fitted(n=n, d=d, n_subspaces=n_subspaces, n_bits=n_bits, seed=n)
    Xc = pq.compress(X)
    Xh = Xc.decode().astype(np.float64)
    rng = np.random.default_rng(1)
    W, B, A = rng.normal(size=(d, m)), rng.normal(size=(n, m)), rng.normal(size=(m, n))
    np.testing.assert_allclose(Xc.dot(W), Xh @ W, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(Xc.T.dot(B), Xh.T @ B, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(Xc.tdot(B), Xh.T @ B, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(Xc.rdot(A), A @ Xh, rtol=1e-10, atol=1e-10)
    # The vector forms X̂·w and X̂ᵀ·g.
    np.testing.assert_allclose(Xc.dot(W[:, 0]), Xh @ W[:, 0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(Xc.T.dot(B[:, 0]), Xh.T @ B[:, 0], rtol=1e-10, atol=1e-10)
    # float32 operands give float32 results, to float32 accuracy.
    out = Xc.dot(W.astype(np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, Xh @ W, rtol=1e-4, atol=1e-4 * np.abs(Xh @ W).max())
    out = Xc.T.dot(B.astype(np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, Xh.T @ B, rtol=1e-4, atol=1e-4 * np.abs(Xh.T @ B).max())


def test_row_slices_including_empty_ones() -> None:
    pq, X = _fitted()
    Xc = pq.compress(X)
    Xh = Xc.decode().astype(np.float64)
    rng = np.random.default_rng(2)
    W = rng.normal(size=(X.shape[1], 4))
    mask = rng.random(len(X)) < 0.3
    for rows in (slice(10, 50), slice(7, 7), [3, 1, 1, 400], mask, np.zeros(len(X), dtype=bool), 5):
        part = Xc[rows]
        want = np.atleast_2d(Xh[rows])
        assert part.shape == want.shape and len(part) == len(want)
        np.testing.assert_allclose(part.dot(W), want @ W, rtol=1e-10, atol=1e-10)
        B = rng.normal(size=(len(part), 3))
        np.testing.assert_allclose(part.T.dot(B), want.T @ B, rtol=1e-10, atol=1e-10)
    assert Xc[7:7].dot(W).shape == (0, 4) and Xc[7:7].T.dot(np.zeros((0, 2))).shape == (X.shape[1], 2)


def test_encoding_is_the_nearest_centroid_and_decoding_its_inverse() -> None:
    pq, X = _fitted(n=600, d=12, n_subspaces=4, n_bits=4)
    codes = pq.encode(X)
    books = pq.codebooks_.astype(np.float64)  # (M, ksub, dsub)
    assert codes.dtype == np.uint8 and codes.shape == (600, 4) and books.shape == (4, 16, 3)
    sub = X.reshape(600, 4, 1, 3)
    dist = ((sub - books[None]) ** 2).sum(axis=-1)  # (n, M, ksub)
    chosen = np.take_along_axis(dist, codes[:, :, None].astype(np.intp), axis=2)[..., 0]
    np.testing.assert_array_less(chosen - 1e-12, dist.min(axis=2) + 1e-12)
    decoded = pq.decode(codes)
    assert decoded.dtype == np.float32 and decoded.shape == X.shape
    np.testing.assert_array_equal(pq.encode(decoded), codes)
    np.testing.assert_array_equal(pq.transform(X), decoded)


def test_kmeans_error_never_increases_and_runs_are_reproducible() -> None:
    pq, X = _fitted(n=3000, d=16, n_subspaces=4, n_bits=6)
    err = pq.training_error_
    assert err.shape == (4, 8)
    assert np.all(np.diff(err, axis=1) <= 1e-12 * err[:, :-1])
    assert np.all(err[:, -1] < err[:, 0])
    again = clone(pq).fit(X)
    np.testing.assert_array_equal(again.codebooks_, pq.codebooks_)
    one_thread = clone(pq).set_params(n_jobs=1).fit(X)
    np.testing.assert_array_equal(one_thread.codebooks_, pq.codebooks_)
    other_seed = clone(pq).set_params(random_state=1).fit(X)
    assert not np.array_equal(other_seed.codebooks_, pq.codebooks_)
    # More centroids quantize better.
    finer = clone(pq).set_params(n_bits=8).fit(X)
    coarse_error = ((pq.transform(X) - X) ** 2).sum()
    assert ((finer.transform(X) - X) ** 2).sum() < coarse_error


def test_the_training_sample_is_capped() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5000, 8))
    pq = ProductQuantizer(n_subspaces=2, n_bits=4, n_iter=3, max_points_per_centroid=10, random_state=0).fit(X)
    # Errors are sums over the training sample: 16 centroids x 10 points, not 5000 rows.
    assert pq.training_error_[:, 0].max() < 160 * 8


def test_memory_pickling_and_float32_input() -> None:
    pq, X = _fitted(n=4000, d=64, n_subspaces=8, n_bits=8)
    Xc = pq.compress(X.astype(np.float32))
    assert Xc.codes.nbytes == 4000 * 8 and pq.code_size_bytes == 8
    assert Xc.nbytes == Xc.codes.nbytes + pq.codebooks_.nbytes
    np.testing.assert_array_equal(Xc.codes, pq.encode(X.astype(np.float32)))
    back = pickle.loads(pickle.dumps(Xc))
    assert isinstance(back, CompressedMatrix)
    W = np.random.default_rng(0).normal(size=(64, 3))
    np.testing.assert_array_equal(back.dot(W), Xc.dot(W))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(pq)).encode(X), pq.encode(X))


@pytest.mark.parametrize(
    ("params", "X", "name"),
    [
        ({"n_subspaces": 5}, np.zeros((300, 12)), "n_subspaces"),
        ({"n_subspaces": 0}, np.zeros((300, 12)), "n_subspaces"),
        ({"n_subspaces": 3, "n_bits": 9}, np.zeros((600, 12)), "n_bits"),
        ({"n_subspaces": 3, "n_bits": 0}, np.zeros((600, 12)), "n_bits"),
        ({"n_subspaces": 3, "n_bits": 8}, np.zeros((255, 12)), "X"),
        ({"n_subspaces": 3, "n_iter": 0}, np.zeros((300, 12)), "n_iter"),
        # M x n_iter float64 errors: exabytes, refused before k-means starts.
        ({"n_subspaces": 3, "n_iter": 2**62}, np.zeros((300, 12)), "n_iter"),
        ({"n_subspaces": 3, "n_bits": 2**40}, np.zeros((300, 12)), "n_bits"),
        ({"n_subspaces": 3, "max_points_per_centroid": 0}, np.zeros((300, 12)), "max_points_per_centroid"),
        ({"n_subspaces": 3}, np.zeros((300, 12), dtype=complex), "X"),
        ({"n_subspaces": 3}, np.full((300, 12), np.nan), "X"),
        ({"n_subspaces": 3}, np.zeros(12), "X"),
        ({"n_subspaces": 3}, np.array([["a"] * 12] * 300), "X"),
    ],
)
def test_bad_fit_input_names_the_argument(params: dict, X: np.ndarray, name: str) -> None:
    with pytest.raises(InvalidInputError, match=f"^{name}:"):
        ProductQuantizer(**params).fit(X)


def test_huge_n_iter_names_the_bytes_required() -> None:
    X = np.random.default_rng(0).normal(size=(300, 12))
    with pytest.raises(InvalidInputError, match=r"^n_iter: .*needs .* bytes\) for training_error_"):
        ProductQuantizer(n_subspaces=3, n_bits=2, n_iter=2**62).fit(X)
    # The core refuses it too (its errors array would not fit in the address space).
    with pytest.raises(InvalidInputError, match="^n_iter:"):
        _core.pq_train(X, PqSettings(n_subspaces=3, n_bits=2, n_iter=2**62, max_points_per_centroid=4, seed=0))


def test_float64_codebooks_are_used_as_float32() -> None:
    pq, X = _fitted(n=600, d=12, n_subspaces=4, n_bits=4)
    codes, decoded = pq.encode(X), pq.decode(pq.encode(X))
    product = pq.compress(X).dot(np.ones(12))
    # As after setting them by hand, or a library that stores its centroids in float64.
    pq.codebooks_ = pq.codebooks_.astype(np.float64)
    np.testing.assert_array_equal(pq.encode(X), codes)
    np.testing.assert_array_equal(pq.decode(codes), decoded)
    np.testing.assert_array_equal(pq.compress(X).dot(np.ones(12)), product)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(pq)).encode(X), codes)
    with pytest.raises(InvalidInputError, match="^codebooks: expected dtype float32, got float64"):
        _core.pq_encode(pq.codebooks_, X)
    pq.codebooks_ = np.full(pq.codebooks_.shape, 1e300)
    with pytest.raises(InvalidInputError, match="^codebooks_: .*float64 with values beyond its range"):
        pq.encode(X)
    pq.codebooks_ = np.zeros(pq.codebooks_.shape, dtype=np.int64)
    with pytest.raises(InvalidInputError, match="^codebooks_: expected dtype float32, got int64"):
        pq.encode(X)
    pq.codebooks_ = np.zeros((4, 16), dtype=np.float32)
    with pytest.raises(InvalidInputError, match="^codebooks_: expected a 3-D float32 array"):
        pq.encode(X)


def test_ctrl_c_stops_a_long_fit() -> None:
    X = np.random.default_rng(0).normal(size=(20_000, 8))
    # An iteration budget for ~4 s uninterrupted: a fit that ignores Ctrl-C fails the
    # test instead of running for minutes.
    started = time.perf_counter()
    ProductQuantizer(n_subspaces=2, n_iter=3, random_state=0).fit(X)
    per_iteration = (time.perf_counter() - started) / 3
    model = ProductQuantizer(n_subspaces=2, n_iter=int(4.0 / per_iteration) + 5, random_state=0)
    interrupt_during(lambda: model.fit(X))
    assert not hasattr(model, "codebooks_")


def test_bad_codes_and_operands_name_the_argument() -> None:
    pq, X = _fitted(n=600, d=12, n_subspaces=4, n_bits=4)
    Xc = pq.compress(X)
    with pytest.raises(InvalidInputError, match="^codes:"):
        pq.decode(np.full((2, 4), 16, dtype=np.uint8))  # 16 centroids: codes 0..15
    with pytest.raises(InvalidInputError, match="^codes:"):
        CompressedMatrix(pq, np.zeros((2, 3), dtype=np.uint8))
    with pytest.raises(InvalidInputError, match="^codes:"):
        CompressedMatrix(pq, np.full((2, 4), -1))
    with pytest.raises(InvalidInputError, match="^B:"):
        Xc.dot(np.ones((11, 2)))
    with pytest.raises(InvalidInputError, match="^B:"):
        Xc.T.dot(np.ones((599, 2)))
    with pytest.raises(InvalidInputError, match="^X:"):
        pq.encode(np.ones((3, 11)))
    with pytest.raises(InvalidInputError, match="^X:"):
        pq.encode(np.full((3, 12), np.inf))


def test_encoding_agrees_with_faiss() -> None:
    faiss = pytest.importorskip("faiss")
    pq, X = _fitted(n=3000, d=32, n_subspaces=8, n_bits=8)
    index = faiss.ProductQuantizer(32, 8, 8)
    faiss.copy_array_to_vector(pq.codebooks_.ravel(), index.centroids)
    theirs = index.compute_codes(X.astype(np.float32))
    ours = pq.encode(X.astype(np.float32))
    # faiss ranks centroids by float32 distances, we by float64 ones: exact ties aside,
    # only near-ties at float32 rounding can differ.
    assert (theirs == ours).mean() > 0.999
    np.testing.assert_allclose(index.decode(theirs), pq.decode(theirs))
    # Conversions both ways keep the codebooks.
    converted = pq.to_faiss()  # kept alive: `centroids` is a view into it
    np.testing.assert_array_equal(faiss.vector_to_array(converted.centroids), pq.codebooks_.ravel())
    np.testing.assert_array_equal(converted.compute_codes(X.astype(np.float32)), theirs)
    back = ProductQuantizer.from_faiss(index)
    np.testing.assert_array_equal(back.codebooks_, pq.codebooks_)
    np.testing.assert_array_equal(back.encode(X), pq.encode(X))


def test_topk_svm_trains_on_codes_as_on_the_decoded_matrix() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 16))
    y = np.argmax(X[:, :4] + 0.3 * rng.normal(size=(600, 4)), axis=1)
    pq = ProductQuantizer(n_subspaces=4, n_bits=5, n_iter=6, random_state=0).fit(X)
    Xc = pq.compress(X)
    params = dict(k=2, C=0.5, tol=1e-7, max_epochs=3000, random_state=0)
    on_codes = TopKSVC(**params).fit(Xc, y)
    on_decoded = TopKSVC(**params).fit(Xc.decode(), y)
    assert on_codes.status_ == "converged" and on_codes.n_features_in_ == 16
    np.testing.assert_allclose(on_codes.primal_objective_, on_decoded.primal_objective_, rtol=1e-8)
    np.testing.assert_allclose(on_codes.coef_, on_decoded.coef_, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(on_codes.intercept_, on_decoded.intercept_, rtol=1e-5, atol=1e-7)
    # Predictions take raw features.
    assert on_codes.score(X, y) > 0.5
    # Kernels have no path on codes: they train on X̂, decoded (the same model).
    rbf = dict(kernel="rbf", gamma=0.1, k=2, C=0.5, random_state=0, keep_dual=True)
    np.testing.assert_array_equal(
        TopKSVC(**rbf).fit(Xc, y).dual_coef_, TopKSVC(**rbf).fit(np.asarray(Xc), y).dual_coef_
    )
