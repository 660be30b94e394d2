"""Product quantization and matrix products in the compressed domain.

:class:`ProductQuantizer` learns, per sub-space of ``d / n_subspaces`` features, a
k-means codebook of ``2**n_bits`` centroids (Jégou, Douze & Schmid 2011), and encodes
each row as one byte per sub-space. :class:`CompressedMatrix` holds such codes and
computes with the decoded matrix X̂ without forming it (Harchaoui et al. 2012, §4.2):
``X.dot(B)`` = X̂·B from tables of centroid products and lookups (Algorithm 1),
``X.T.dot(B)`` = X̂ᵀ·B from bucket sums of B's rows by code (Algorithm 2), and
``X.rdot(A)`` = A·X̂. The products are exact with respect to X̂; the codebooks have
faiss's layout (``n_subspaces × 2**n_bits × dsub``, float32), and
:meth:`ProductQuantizer.to_faiss` / :meth:`ProductQuantizer.from_faiss` convert a
quantizer to and from a trained ``faiss.ProductQuantizer``.

>>> import numpy as np
>>> from toprank.pq import ProductQuantizer
>>> X = np.random.default_rng(0).normal(size=(2000, 32))
>>> pq = ProductQuantizer(n_subspaces=8, n_bits=6, random_state=0).fit(X)
>>> Xc = pq.compress(X)
>>> Xc.shape, Xc.nbytes < X.nbytes / 16
((2000, 32), True)
>>> bool(np.allclose(Xc.dot(np.ones((32, 3))), Xc.decode() @ np.ones((32, 3))))
True
"""

from __future__ import annotations

import math
import operator
import sys
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, DTypeLike, NDArray
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from toprank import _core
from toprank._docs import fill_doc
from toprank._estimator import keep_params
from toprank._limits import check_allocation
from toprank._validation import as_array, as_jobs, restores_on_failure, sparse_structure
from toprank._validation import bounded_int as _int
from toprank.exceptions import InvalidInputError

__all__ = ["ProductQuantizer", "CompressedMatrix"]


@dataclass(frozen=True)
class PqSettings:
    """What `toprank._core.pq_train` reads (by attribute name): the settings of
    :class:`ProductQuantizer`, validated by its `fit`, and the seed drawn from
    ``random_state``."""

    n_subspaces: int
    n_bits: int
    n_iter: int
    max_points_per_centroid: int
    seed: int


def _float_rows(X: ArrayLike, name: str) -> NDArray[Any]:
    """A C-contiguous float32/float64 2-D array (other dtypes are converted to float64).

    The messages start with ``name`` and carry scikit-learn's wording of the same
    refusal (its estimator checks look for it): complex data, a 1-D array, no features."""
    sparse_structure(X, name)  # complex values first, without printing the data
    dtype = getattr(X, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind not in "biufO":
        raise InvalidInputError(f"{name}: expected a numeric array, got dtype {dtype}")
    if sp.issparse(X):
        raise InvalidInputError(f"{name}: sparse input is not supported (the codebooks are dense); pass X.toarray()")
    arr = as_array(X, name)
    if arr.ndim != 2:
        raise InvalidInputError(
            f"{name}: expected a 2-D array, got {arr.ndim}-D. Reshape your data with X.reshape(-1, 1) for a "
            "single feature or X.reshape(1, -1) for a single sample"
        )
    if arr.dtype == object:
        # Numbers held as Python objects (pandas' mixed columns); anything else raises
        # the conversion's own error type, named.
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{name}: cannot be converted to float64 ({exc})") from exc
    if arr.dtype not in (np.float32, np.float64):
        if arr.dtype.kind not in "biuf":
            raise InvalidInputError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
        arr = arr.astype(np.float64)
    if arr.shape[1] == 0:
        raise InvalidInputError(
            f"{name}: Found array with 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required."
        )
    return np.ascontiguousarray(arr)


def _checked_books(books: Any, name: str = "codebooks_") -> NDArray[np.float32]:
    """Codebooks as the core takes them: a C-contiguous float32 array of shape
    (n_subspaces, 2**n_bits, dsub). Other float dtypes (a float64 ``codebooks_`` set by
    hand or by another library) are converted when their values are finite and fit
    float32; anything else raises naming ``name`` and the dtype expected."""
    if not isinstance(books, np.ndarray):
        raise InvalidInputError(f"{name}: expected a 3-D float32 numpy.ndarray, got {type(books).__name__}")
    if books.ndim != 3:
        raise InvalidInputError(
            f"{name}: expected a 3-D float32 array (n_subspaces, 2**n_bits, dsub), got shape {books.shape}"
        )
    if books.dtype != np.float32:
        if books.dtype.kind != "f":
            raise InvalidInputError(f"{name}: expected dtype float32, got {books.dtype}")
        if books.size and not bool(np.all(np.isfinite(books))):
            raise InvalidInputError(f"{name}: contains NaN or infinity")
        if books.size and float(np.max(np.abs(books))) > float(np.finfo(np.float32).max):
            raise InvalidInputError(f"{name}: expected dtype float32, got {books.dtype} with values beyond its range")
        books = books.astype(np.float32)
    return np.ascontiguousarray(books)


@fill_doc
class ProductQuantizer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):  # type: ignore[misc]
    """Product quantizer: k-means codebooks per sub-space, one byte per code.

    The d features are cut into M = ``n_subspaces`` consecutive groups of d/M; each
    group gets a codebook of K = ``2**n_bits`` centroids learnt by k-means, and a row
    is encoded as the index of the nearest centroid in each group. The decoded row X̂
    (the centroids put back together) is what :meth:`transform` returns and what a
    :class:`CompressedMatrix` multiplies with. A scikit-learn transformer: it fits in
    pipelines, ``clone``, ``set_output`` and ``GridSearchCV``.

    Parameters
    ----------
    n_subspaces : int
        Number M of sub-spaces; must divide the number of features d.
    n_bits : int, default=8
        Bits per code (1 to 8): ``2**n_bits`` centroids per sub-space; codes are stored
        one byte each.
    n_iter : int, default=25
        Iterations of k-means (assignment + update) per sub-space; ``training_error_`` holds
        one float64 per iteration and sub-space, so it must fit in memory.
    max_points_per_centroid : int, default=256
        At most ``2**n_bits * max_points_per_centroid`` rows train the codebooks (a
        seeded sample beyond), as in faiss.
    random_state : int, RandomState or None, default=None
        Seeds the row sample and the k-means initialisation (random distinct points).
    n_jobs : int or None, default=None
        Threads (sub-spaces in parallel for training, rows for encoding). ``None`` is
        one thread, ``-1`` all cores (see "Threads" in the user guide's workflow page).
    verbose : int, default=0
        When positive, ``fit`` prints k-means's progress on stdout: a line per sub-space
        (its squared quantization error after the first and the last iteration) and a
        summary line (rows trained on, seconds). ``verbose=1`` prints at most 20
        sub-space lines, evenly spaced and the last included; ``verbose >= 2`` every
        one. The lines follow the training rather than accompany it: the core trains
        the sub-spaces in parallel without reporting from inside k-means.

    Attributes
    ----------
    codebooks_ : ndarray of shape (n_subspaces, 2**n_bits, d / n_subspaces), float32
        Centroids, faiss's ``ProductQuantizer.centroids`` layout. A float64 array set
        here is used as float32 (values beyond float32's range are refused).
    training_error_ : ndarray of shape (n_subspaces, n_iter)
        k-means's squared quantization error on the training sample after each
        assignment step (non-increasing along each row).
    n_features_in_ : int
        Number d of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Column names of a DataFrame fitted on (absent otherwise).

    See Also
    --------
    CompressedMatrix : Matrix products from the codes.
    toprank.TraceNormLogisticRegression : Trains on a CompressedMatrix without decoding it.

    Notes
    -----
    Training and encoding run without the GIL and stop on Ctrl-C
    (KeyboardInterrupt). Training costs O(n_iter · n' · K · d) for the n' ≤
    K·``max_points_per_centroid`` rows it samples; encoding O(n · K · d); memory is
    n·M bytes of codes plus the M·K·(d/M) float32 codebooks.

    ``transform`` returns the quantized features X̂, one column per input feature, as a
    float32 array; ``get_feature_names_out`` therefore returns the input's names
    (``feature_names_in_`` of a DataFrame fit, else ``x0`` … ``x{d-1}``), and
    ``set_output(transform="pandas")`` makes ``transform`` return a DataFrame with
    them. :meth:`compress` returns a :class:`CompressedMatrix`, whatever the output
    setting: codes are not a table of features.

    References
    ----------
    .. [1] H. Jégou, M. Douze, C. Schmid. *Product quantization for nearest neighbor
       search.* IEEE TPAMI 2011.

    Examples
    --------
    %(pq_example_fit)s
    >>> pq.codebooks_.shape, pq.codebooks_.dtype
    ((4, 16, 4), dtype('float32'))
    >>> pq.encode(X[:2])
    array([[13,  2,  0,  3],
           [ 5,  0, 13,  3]], dtype=uint8)
    >>> bool(np.mean((X - pq.transform(X)) ** 2) < np.mean(X ** 2))  # X̂ is closer to X than 0
    True
    """

    def __init__(
        self,
        n_subspaces: int,
        n_bits: int = 8,
        n_iter: int = 25,
        max_points_per_centroid: int = 256,
        random_state: int | np.random.RandomState | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        keep_params(self, locals())

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # X̂ is the codebooks' float32 whatever the input's dtype.
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags

    def _rows(self, X: ArrayLike, *, reset: bool) -> NDArray[Any]:
        """``X`` as float rows (`_float_rows`), with its feature names and count set
        (``reset``) or checked against the fit's, as scikit-learn's ``validate_data``
        does."""
        rows = _float_rows(X, "X")
        # (Codebooks set by hand come without n_features_in_: the core checks the width.)
        expected = getattr(self, "n_features_in_", None)
        if not reset and expected is not None and rows.shape[1] != expected:
            # scikit-learn's wording, which its estimator checks look for.
            raise InvalidInputError(
                f"X: X has {rows.shape[1]} features, but ProductQuantizer is expecting {expected} features as input"
            )
        validate_data(self, X, skip_check_array=True, reset=reset)
        return rows

    @restores_on_failure
    def fit(self, X: ArrayLike, y: Any = None) -> ProductQuantizer:
        """Learn the codebooks from the rows of ``X``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
            Training rows, finite and within float32's range, n_samples >= ``2**n_bits``;
            float32 and float64 are used as given, other real dtypes as float64. Sparse
            input is refused (the codebooks are dense).
        y : None
            Ignored (scikit-learn's transformer signature).

        Returns
        -------
        ProductQuantizer
            ``self``, fitted.

        Raises
        ------
        InvalidInputError
            ``X`` not 2-D, sparse, non-numeric, with NaN/inf or values beyond float32,
            fewer than ``2**n_bits`` rows, or a width ``n_subspaces`` does not divide; a
            parameter out of range (``n_bits`` outside 1..8, ...).

        Examples
        --------
        %(pq_example_fit)s
        >>> pq.training_error_.shape  # (n_subspaces, n_iter)
        (4, 25)
        >>> bool(np.all(np.diff(pq.training_error_, axis=1) <= 1e-9))  # k-means never gets worse
        True
        """
        started = time.perf_counter()
        X = self._rows(X, reset=True)
        if X.size and not np.all(np.isfinite(X)):
            raise InvalidInputError("X: contains NaN or infinity")
        if X.size and float(np.max(np.abs(X))) > float(np.finfo(np.float32).max):
            raise InvalidInputError("X: has values beyond the float32 range of the codebooks")
        n_subspaces = _int(self.n_subspaces, "n_subspaces", low=1)
        n_bits = _int(self.n_bits, "n_bits", low=1, high=8)
        n_iter = _int(self.n_iter, "n_iter", low=1)
        max_points = _int(self.max_points_per_centroid, "max_points_per_centroid", low=1)
        verbose = _int(self.verbose, "verbose", low=0)
        if X.shape[0] < 1 << n_bits:
            raise InvalidInputError(
                f"X: needs at least 2**n_bits = {1 << n_bits} samples to train as many centroids, "
                f"got n_samples = {X.shape[0]}"
            )
        if X.shape[1] % n_subspaces == 0:  # else the core names n_subspaces
            check_allocation(
                "n_iter",
                n_iter,
                8 * n_iter * n_subspaces,
                f"training_error_ (n_subspaces = {n_subspaces} x n_iter float64)",
            )
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        settings = PqSettings(n_subspaces, n_bits, n_iter, max_points, seed)
        books, errors = _core.pq_train(X, settings, n_jobs=as_jobs(self.n_jobs))
        self.codebooks_ = books
        self.training_error_ = errors
        if verbose:
            trained_on = min(X.shape[0], (1 << n_bits) * max_points)
            _print_training(errors, 1 << n_bits, trained_on, X.shape[0], time.perf_counter() - started, verbose)
        return self

    @property
    def code_size_bytes(self) -> int:
        """Bytes per encoded row (one per sub-space).

        Examples
        --------
        >>> from toprank.pq import ProductQuantizer
        >>> ProductQuantizer(n_subspaces=8).code_size_bytes
        8
        """
        return int(self.n_subspaces)

    def encode(self, X: ArrayLike) -> NDArray[np.uint8]:
        """Encode the rows of ``X``: the nearest centroid's index in each sub-space.

        %(pq_rows_parameter)s

        Returns
        -------
        ndarray of uint8, shape (n_samples, n_subspaces)
            The codes.

        Raises
        ------
        InvalidInputError
            ``X`` not 2-D, sparse, non-numeric or of another width.
        %(pq_not_fitted)s

        See Also
        --------
        decode : The inverse map to X̂.
        compress : The codes as a CompressedMatrix.

        Examples
        --------
        %(pq_example_fit)s
        >>> pq.encode(X[:3]).shape
        (3, 4)
        """
        check_is_fitted(self, "codebooks_")
        return _core.pq_encode(_checked_books(self.codebooks_), self._rows(X, reset=False), n_jobs=as_jobs(self.n_jobs))

    def decode(self, codes: ArrayLike) -> NDArray[np.float32]:
        """Decode codes into X̂: every code replaced by its centroid.

        Parameters
        ----------
        codes : array_like of int, shape (n_samples, n_subspaces)
            Codes in 0..255 (uint8, or another integer dtype within that range).

        Returns
        -------
        ndarray of float32, shape (n_samples, n_features)
            X̂.

        Raises
        ------
        InvalidInputError
            ``codes`` of the wrong shape or values outside 0..255.
        %(pq_not_fitted)s

        Examples
        --------
        %(pq_example_fit)s
        >>> Xhat = pq.decode(pq.encode(X[:3]))
        >>> Xhat.shape, Xhat.dtype
        ((3, 16), dtype('float32'))
        """
        check_is_fitted(self, "codebooks_")
        books = _checked_books(self.codebooks_)
        return _core.pq_decode(books, _codes(codes, books.shape[0]), n_jobs=as_jobs(self.n_jobs))

    def compress(self, X: ArrayLike) -> CompressedMatrix:
        """Encode ``X`` as a :class:`CompressedMatrix`.

        %(pq_rows_parameter)s

        Returns
        -------
        CompressedMatrix
            The codes of ``X`` with this quantizer's codebooks: n·M bytes in place of
            n·d floats.

        %(pq_raises_as_encode)s

        Examples
        --------
        %(pq_example_compressed)s
        >>> Xc
        CompressedMatrix(shape=(1000, 16), n_subspaces=4, n_bits=4, 4.0 kB of codes + 1.0 kB of codebooks; 64.0 kB decoded as float32)
        """
        return CompressedMatrix(self, self.encode(X))

    def transform(self, X: ArrayLike) -> NDArray[np.float32]:
        """The quantized features X̂ of the rows of ``X`` (encoded, then decoded).

        %(pq_rows_parameter)s

        Returns
        -------
        ndarray of float32, shape (n_samples, n_features)
            X̂ (a DataFrame under ``set_output(transform="pandas")``).

        %(pq_raises_as_encode)s

        Examples
        --------
        %(pq_example_fit)s
        >>> pq.transform(X[:2]).shape
        (2, 16)
        """
        return self.decode(self.encode(X))

    def to_faiss(self) -> Any:
        """The codebooks as a trained ``faiss.ProductQuantizer``.

        Returns
        -------
        faiss.ProductQuantizer
            A quantizer with d, M, ``n_bits`` and the centroids of this one: faiss encodes
            with the same codebooks (and packs codes of fewer than 8 bits).

        Raises
        ------
        ImportError
            faiss (``faiss-cpu``) is not installed.
        %(pq_not_fitted)s

        See Also
        --------
        from_faiss : The way back.

        Examples
        --------
        >>> import numpy as np
        >>> from toprank.pq import ProductQuantizer
        >>> X = np.random.default_rng(0).normal(size=(1000, 16)).astype(np.float32)
        >>> pq = ProductQuantizer(n_subspaces=4, n_bits=8, n_iter=5, random_state=0).fit(X)
        >>> index = pq.to_faiss()
        >>> index.M, index.nbits, index.d
        (4, 8, 16)
        >>> bool(np.array_equal(index.compute_codes(X), pq.encode(X)))
        True
        """
        check_is_fitted(self, "codebooks_")
        import faiss  # noqa: PLC0415 (optional dependency)

        books = _checked_books(self.codebooks_)
        m, ksub, dsub = books.shape
        index = faiss.ProductQuantizer(m * dsub, m, int(ksub).bit_length() - 1)
        faiss.copy_array_to_vector(books.ravel(), index.centroids)
        return index

    @classmethod
    def from_faiss(cls, index: Any, *, n_jobs: int | None = None) -> ProductQuantizer:
        """A fitted quantizer with the codebooks of a trained ``faiss.ProductQuantizer``.

        Parameters
        ----------
        index : faiss.ProductQuantizer
            Trained (its centroids set).
        n_jobs : int or None, default=None
            The new quantizer's ``n_jobs``.

        Returns
        -------
        ProductQuantizer
            Fitted: ``codebooks_`` copied from ``index``, ``n_features_in_ = index.d`` and an
            empty ``training_error_``.

        Raises
        ------
        InvalidInputError
            ``index`` is not trained.
        ImportError
            faiss is not installed.

        See Also
        --------
        to_faiss : The way there.

        Examples
        --------
        >>> import faiss
        >>> import numpy as np
        >>> from toprank.pq import ProductQuantizer
        >>> X = np.random.default_rng(0).normal(size=(2000, 16)).astype(np.float32)
        >>> index = faiss.ProductQuantizer(16, 4, 5)  # d, M, n_bits
        >>> index.train(X)
        >>> pq = ProductQuantizer.from_faiss(index)
        >>> pq.n_subspaces, pq.n_bits, pq.n_features_in_
        (4, 5, 16)
        >>> bool(np.allclose(pq.transform(X), index.decode(index.compute_codes(X))))
        True
        """
        import faiss  # noqa: PLC0415 (optional dependency)

        m, nbits, d = int(index.M), int(index.nbits), int(index.d)
        books = faiss.vector_to_array(index.centroids).astype(np.float32)
        if books.size != m * (1 << nbits) * (d // m):
            raise InvalidInputError("index: the faiss quantizer is not trained (no centroids)")
        pq = cls(n_subspaces=m, n_bits=nbits, n_jobs=n_jobs)
        pq.codebooks_ = books.reshape(m, 1 << nbits, d // m)
        pq.training_error_ = np.empty((m, 0))
        pq.n_features_in_ = d
        return pq


# verbose=1 prints at most this many sub-space lines.
_VERBOSE_LINES = 20


def _print_training(
    errors: NDArray[np.float64], ksub: int, trained_on: int, n: int, seconds: float, verbose: int
) -> None:
    """The verbose report of a training: k-means's first and last error per sub-space
    (every sub-space at ``verbose >= 2``, else at most `_VERBOSE_LINES`, the last
    included), then the sample size and time."""
    m = errors.shape[0]
    step = 1 if verbose >= 2 else max(1, math.ceil(m / _VERBOSE_LINES))
    for q in range(m):
        if q % step and q != m - 1:
            continue
        first, last = float(errors[q, 0]), float(errors[q, -1])
        change = f" ({(last - first) / first:+.1%})" if first > 0 else ""
        print(
            f"[ProductQuantizer] sub-space {q + 1:5d}/{m}  k-means error {first:.6g} -> {last:.6g} "
            f"after {errors.shape[1]} iterations{change}",
            file=sys.stdout,
            flush=True,
        )
    print(
        f"[ProductQuantizer] trained {m} sub-spaces x {ksub} centroids on {trained_on} of {n} rows in {seconds:.2f}s",
        file=sys.stdout,
        flush=True,
    )


def _codes(codes: ArrayLike, n_subspaces: int) -> NDArray[np.uint8]:
    arr = as_array(codes, "codes")
    if arr.ndim != 2 or arr.shape[1] != n_subspaces:
        raise InvalidInputError(f"codes: expected shape (n, {n_subspaces}), got {arr.shape}")
    if arr.dtype != np.uint8:
        if arr.dtype.kind not in "iu" or (arr.size and (arr.min() < 0 or arr.max() > 255)):
            raise InvalidInputError(f"codes: expected uint8 codes in 0..255, got dtype {arr.dtype}")
        arr = arr.astype(np.uint8)
    return np.ascontiguousarray(arr)


def _size(nbytes: int) -> str:
    """A byte count for a repr: 812 B, 80.0 kB, 1.3 MB, ..."""
    value = float(nbytes)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{nbytes} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


class _Decodable(ABC):
    """NumPy's protocols for a matrix known by its codes: ``np.asarray`` decodes it (into
    a new float32 array; the dtype asked for is honoured), ``@`` multiplies from the
    codes — an ndarray on the left too, since NumPy hands ``A @ X`` to
    ``__array_ufunc__`` — and every other ufunc (``np.abs(X)``, ``X.T @ X`` of two
    such matrices) runs on the decoded arrays."""

    ndim = 2
    dtype = np.dtype(np.float32)

    # What each such matrix defines: its shape, its decoded array and its products.
    @property
    @abstractmethod
    def shape(self) -> tuple[int, int]: ...

    @abstractmethod
    def toarray(self) -> NDArray[np.float32]: ...

    @abstractmethod
    def __matmul__(self, B: ArrayLike) -> NDArray[Any]: ...

    @abstractmethod
    def __rmatmul__(self, A: ArrayLike) -> NDArray[Any]: ...

    @abstractmethod
    def _transposed_product(self, B: NDArray[Any], name: str) -> NDArray[Any]:
        """Mᵀ·B of this matrix M, from the codes; ``name`` names B in errors."""

    # What the rows of M are, for the message of an A with the wrong number of columns.
    _rows_are: ClassVar[str]

    def _left_product(self, A: ArrayLike) -> NDArray[Any]:
        """A·M for A of shape (k, rows of M) or (rows of M,), as (Mᵀ·Aᵀ)ᵀ."""
        arr = as_array(A.toarray() if sp.issparse(A) else A, "A")  # type: ignore[union-attr]
        if arr.ndim == 1:
            return self._transposed_product(arr, "A")
        if arr.ndim != 2:
            raise InvalidInputError(f"A: expected a 1-D or 2-D array, got {arr.ndim}-D")
        rows = self.shape[0]
        if arr.shape[1] != rows:
            raise InvalidInputError(f"A: expected {rows} columns (one per {self._rows_are}), got shape {arr.shape}")
        return self._transposed_product(arr.T, "A").T

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> NDArray[Any]:
        if copy is False:
            # NumPy 2's contract: copy=False must fail where a copy cannot be avoided.
            raise ValueError(
                "copy: a CompressedMatrix (or its .T) cannot be viewed as an array without a copy (it is "
                "decoded into a new one); use np.asarray(X) or copy=None"
            )
        decoded = self.toarray()
        return decoded if dtype is None else decoded.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if ufunc is np.matmul and method == "__call__" and len(inputs) == 2 and not kwargs:
            left, right = inputs
            if left is self and not isinstance(right, _Decodable):
                return self.__matmul__(right)
            if right is self and not isinstance(left, _Decodable):
                return self.__rmatmul__(left)
        decoded = [np.asarray(x) if isinstance(x, _Decodable) else x for x in inputs]
        return getattr(ufunc, method)(*decoded, **kwargs)


@fill_doc
class CompressedMatrix(_Decodable):
    """The matrix X̂ of ``quantizer``'s decoded ``codes``, multiplied without decoding.

    ``shape`` is (n, d), ``dtype`` float32 (the codebooks'); ``X @ B`` = ``dot(B)`` =
    X̂·B (B: d × m or d), ``X.T @ B`` = ``tdot(B)`` = X̂ᵀ·B (B: n × m or n),
    ``A @ X`` = ``rdot(A)`` = A·X̂ (A: k × n or n) and ``A @ X.T`` = A·X̂ᵀ (A: k × d or
    d), all from the codes; the result has B's (A's) float dtype (float64 for other
    inputs; a sparse operand is made dense). ``np.asarray(X)`` (and ``toarray()``,
    ``decode()``) forms X̂; other NumPy functions work on X̂.

    ``X[rows]`` selects rows — an int, a slice, an int array or a boolean mask, also as
    ``X[rows, :]`` or ``X[rows, ...]`` (scikit-learn's ``_safe_indexing`` asks for the
    latter) — as a CompressedMatrix sharing the codebooks: an int gives a one-row
    matrix, as scipy's sparse matrices do, so that every selection stays compressed.
    Out-of-range indices raise IndexError. So scikit-learn's splitters
    (``train_test_split``, ``cross_val_score``) take a CompressedMatrix as they take a
    sparse matrix, and every linear estimator's ``fit``, ``predict`` and
    ``decision_function`` accepts one.

    Parameters
    ----------
    quantizer : ProductQuantizer
        Fitted; its codebooks decode the codes. Refitting it afterwards invalidates the
        matrix (its products then raise).
    codes : array_like of int, shape (n, n_subspaces)
        Codes in 0..255, e.g. from :meth:`ProductQuantizer.encode`.

    Attributes
    ----------
    quantizer : ProductQuantizer
        As given.
    codes : ndarray of uint8, shape (n, n_subspaces)
        The codes, C-contiguous.

    Raises
    ------
    InvalidInputError
        ``codes`` of the wrong shape or values outside 0..255.
    sklearn.exceptions.NotFittedError
        ``quantizer`` is not fitted.

    See Also
    --------
    ProductQuantizer.compress : The usual way to make one.

    Notes
    -----
    X̂·B (Algorithm 1 of [2]_) costs a table of centroid products per sub-space,
    O(M·K·(d/M)·m), and n·M lookups-and-adds per column, O(n·M·m), instead of the
    O(n·d·m) of the dense product: a gain of about d/M when n ≫ K. X̂ᵀ·B (Algorithm 2)
    first sums the rows of B by code, O(n·M·m), then multiplies the K bucket sums by
    the centroids, O(K·d·m). The products are exact with respect to X̂.

    References
    ----------
    .. [1] H. Jégou, M. Douze, C. Schmid. *Product quantization for nearest neighbor
       search.* IEEE TPAMI 2011.
    .. [2] Z. Harchaoui, M. Douze, M. Paulin, M. Dudik, J. Malick. *Large-scale image
       classification with trace-norm regularization.* CVPR 2012, §4.2, Algorithms 1
       and 2.

    Examples
    --------
    %(pq_example_fit)s
    >>> Xc = pq.compress(X)
    >>> B = np.ones((16, 3))
    >>> bool(np.allclose(Xc @ B, np.asarray(Xc) @ B))
    True
    >>> Xc[:10].shape, Xc.T.shape
    ((10, 16), (16, 1000))
    """

    _rows_are = "row of X"

    def __init__(self, quantizer: ProductQuantizer, codes: ArrayLike) -> None:
        check_is_fitted(quantizer, "codebooks_")
        self.quantizer = quantizer
        self.codes = _codes(codes, _checked_books(quantizer.codebooks_).shape[0])
        # The codes index these codebooks: a refit of the quantizer makes new ones.
        self._books = quantizer.codebooks_

    @property
    def codebooks(self) -> NDArray[np.float32]:
        """The codebooks the codes index.

        %(pq_raises_refitted)s

        Examples
        --------
        %(pq_example_compressed)s
        >>> Xc.codebooks is pq.codebooks_
        True
        >>> _ = pq.fit(X[:500])  # refitted: the codes no longer match its codebooks
        >>> Xc.codebooks
        Traceback (most recent call last):
        ...
        toprank.exceptions.InvalidInputError: quantizer: was refitted after these codes were made; compress X again
        """
        if self.quantizer.__dict__.get("codebooks_") is not self._books:
            raise InvalidInputError("quantizer: was refitted after these codes were made; compress X again")
        return _checked_books(self._books)

    @property
    def shape(self) -> tuple[int, int]:
        """(n, d): the codes' rows and the quantizer's features.

        Examples
        --------
        %(pq_example_compressed)s
        >>> Xc.shape, Xc[[0, 5]].shape
        ((1000, 16), (2, 16))
        """
        return (self.codes.shape[0], int(self.quantizer.n_features_in_))

    @property
    def nbytes(self) -> int:
        """Bytes of the codes and the codebooks (which row selections share).

        Examples
        --------
        %(pq_example_compressed)s
        >>> Xc.nbytes, X.nbytes  # 1000 x 4 bytes of codes + 4 x 16 x 4 float32 centroids
        (5024, 128000)
        """
        return int(self.codes.nbytes + self.codebooks.nbytes)

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def __repr__(self) -> str:
        n, d = self.shape
        books = np.asarray(self._books)
        m, ksub = (books.shape[0], books.shape[1]) if books.ndim == 3 else (self.codes.shape[1], 0)
        dense = n * d * np.dtype(np.float32).itemsize
        return (
            f"CompressedMatrix(shape=({n}, {d}), n_subspaces={m}, n_bits={max(ksub - 1, 0).bit_length()}, "
            f"{_size(self.codes.nbytes)} of codes + {_size(books.nbytes)} of codebooks; "
            f"{_size(dense)} decoded as float32)"
        )

    def __getitem__(self, rows: Any) -> CompressedMatrix:
        if isinstance(rows, tuple):
            rest = rows[1:]
            if len(rest) > 1 or (rest and rest[0] is not Ellipsis and not _all_columns(rest[0])):
                raise InvalidInputError(
                    "rows: a CompressedMatrix selects rows only (X[rows] or X[rows, :]); select "
                    "columns of the decoded matrix, np.asarray(X)"
                )
            rows = rows[0]
        self.codebooks  # noqa: B018 (raises if the quantizer was refitted)
        return CompressedMatrix(self.quantizer, self.codes[_row_index(rows, len(self))])

    def decode(self) -> NDArray[np.float32]:
        """X̂, decoded.

        %(pq_decoded_returns)s

        %(pq_raises_refitted)s

        Examples
        --------
        %(pq_example_compressed)s
        >>> Xc.decode().dtype
        dtype('float32')
        """
        self.codebooks  # noqa: B018 (raises if the quantizer was refitted)
        return self.quantizer.decode(self.codes)

    def toarray(self) -> NDArray[np.float32]:
        """X̂ as a dense array (as ``decode()``; the name scipy's sparse matrices use).

        %(pq_decoded_returns)s

        Examples
        --------
        %(pq_example_compressed)s
        >>> Xc.toarray().shape
        (1000, 16)
        """
        return self.decode()

    def _operand(self, B: ArrayLike, rows: int, name: str) -> tuple[NDArray[Any], bool]:
        arr = as_array(B.toarray() if sp.issparse(B) else B, name)  # type: ignore[union-attr]
        vector = arr.ndim == 1
        if vector:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[0] != rows:
            raise InvalidInputError(f"{name}: expected {rows} rows, got shape {np.shape(arr[:, 0] if vector else arr)}")
        if arr.dtype not in (np.float32, np.float64):
            if arr.dtype.kind not in "biuf":
                raise InvalidInputError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
            arr = arr.astype(np.float64)
        if not np.all(np.isfinite(arr)):
            raise InvalidInputError(f"{name}: contains NaN or infinity")
        return np.ascontiguousarray(arr), vector

    def dot(self, B: ArrayLike) -> NDArray[Any]:
        """X̂·B, from the codes (Algorithm 1 of Harchaoui et al. 2012).

        Parameters
        ----------
        B : array_like or sparse matrix of shape (d, m) or (d,)
            Finite; float32 and float64 are kept, other dtypes computed in float64, a
            sparse matrix is made dense.

        Returns
        -------
        ndarray of shape (n, m) or (n,)
            X̂·B, in B's float dtype.

        Raises
        ------
        InvalidInputError
            ``B`` with another number of rows than d, non-numeric, or with NaN/inf.

        See Also
        --------
        tdot : X̂ᵀ·B.
        rdot : A·X̂.

        Examples
        --------
        %(pq_example_compressed)s
        >>> B = np.ones((16, 2))
        >>> bool(np.allclose(Xc.dot(B), Xc.toarray() @ B))
        True
        >>> Xc.dot(B.astype(np.float32)).dtype  # B's dtype
        dtype('float32')
        """
        return self._product(B, "B", transposed=False)

    def __matmul__(self, B: ArrayLike) -> NDArray[Any]:
        return self.dot(B)

    def tdot(self, B: ArrayLike) -> NDArray[Any]:
        """X̂ᵀ·B, from the codes (Algorithm 2 of Harchaoui et al. 2012).

        Parameters
        ----------
        B : array_like or sparse matrix of shape (n, m) or (n,)
            Finite; dtypes as in :meth:`dot`.

        Returns
        -------
        ndarray of shape (d, m) or (d,)
            X̂ᵀ·B, in B's float dtype.

        Raises
        ------
        InvalidInputError
            ``B`` with another number of rows than n, non-numeric, or with NaN/inf.

        Examples
        --------
        %(pq_example_compressed)s
        >>> v = np.ones(1000)
        >>> bool(np.allclose(Xc.tdot(v), Xc.toarray().T @ v))
        True
        """
        return self._product(B, "B", transposed=True)

    def _product(self, B: ArrayLike, name: str, *, transposed: bool) -> NDArray[Any]:
        """X̂·B, or X̂ᵀ·B where ``transposed``, from the codes; ``name`` names B in errors."""
        n, d = self.shape
        arr, vector = self._operand(B, n if transposed else d, name)
        if n == 0 or arr.shape[1] == 0:
            out = np.zeros((d if transposed else n, arr.shape[1]), dtype=arr.dtype)
        else:
            jobs = as_jobs(self.quantizer.n_jobs)
            out = _core.pq_decode(self.codebooks, self.codes, arr, transposed=transposed, n_jobs=jobs)
        return out[:, 0] if vector else out

    def _transposed_product(self, B: NDArray[Any], name: str) -> NDArray[Any]:
        return self._product(B, name, transposed=True)

    def rdot(self, A: ArrayLike) -> NDArray[Any]:
        """A·X̂, computed as (X̂ᵀ·Aᵀ)ᵀ from the codes.

        Parameters
        ----------
        A : array_like or sparse matrix of shape (k, n) or (n,)
            Finite; dtypes as in :meth:`dot`.

        Returns
        -------
        ndarray of shape (k, d) or (d,)
            A·X̂, in A's float dtype.

        Raises
        ------
        InvalidInputError
            ``A`` not 1-D or 2-D, with another number of columns than n, non-numeric, or
            with NaN/inf.

        Examples
        --------
        %(pq_example_compressed)s
        >>> A = np.ones((2, 1000))
        >>> bool(np.allclose(A @ Xc, A @ Xc.toarray()))  # A @ Xc calls rdot
        True
        """
        return self._left_product(A)

    def __rmatmul__(self, A: ArrayLike) -> NDArray[Any]:
        return self.rdot(A)

    @property
    def T(self) -> _Transposed:
        """X̂ᵀ, for ``X.T @ B`` (``X.T.dot(B)``) and ``A @ X.T``.

        Examples
        --------
        %(pq_example_compressed)s
        >>> Xc.T.shape, (Xc.T @ np.ones(1000)).shape
        ((16, 1000), (16,))
        """
        return _Transposed(self)


def _all_columns(key: Any) -> bool:
    """Whether ``key`` is ``:``, every column."""
    return isinstance(key, slice) and key == slice(None)


def _row_index(rows: Any, n: int) -> Any:
    """``rows`` checked as a selection of ``n`` rows, in a form that keeps the codes 2-D:
    a slice, a 1-D int array or a boolean mask of n entries (an int becomes a one-row
    selection). Anything else, or an index outside [-n, n), raises IndexError."""
    if isinstance(rows, slice):
        return rows
    if isinstance(rows, (bool, np.bool_)):
        raise IndexError("rows: a bool is not a row index; pass a boolean mask of one entry per row")
    if isinstance(rows, (int, np.integer)):
        i = operator.index(rows)
        if not -n <= i < n:
            raise IndexError(f"rows: index {i} is out of range for a CompressedMatrix of {n} rows")
        return [i]
    index = np.asarray(rows)
    if index.size == 0 and index.dtype.kind not in "biu":
        index = index.astype(np.intp)  # [] is a float array to NumPy
    if index.ndim != 1 or index.dtype.kind not in "biu":
        raise IndexError(
            f"rows: expected an int, a slice, or a 1-D array of ints or booleans, got shape {index.shape} "
            f"and dtype {index.dtype}"
        )
    if index.dtype.kind == "b":
        if index.shape != (n,):
            raise IndexError(f"rows: a boolean mask needs {n} entries (one per row), got {index.size}")
    elif index.size and (int(index.min()) < -n or int(index.max()) >= n):
        bad = int(index.min()) if int(index.min()) < -n else int(index.max())
        raise IndexError(f"rows: index {bad} is out of range for a CompressedMatrix of {n} rows")
    return index


class _Transposed(_Decodable):
    """X̂ᵀ of a :class:`CompressedMatrix`: ``@`` from either side, ``dot``, ``shape``,
    ``T``, and ``np.asarray`` (which decodes)."""

    _rows_are = "feature of X"

    def __init__(self, matrix: CompressedMatrix) -> None:
        self.matrix = matrix

    @property
    def shape(self) -> tuple[int, int]:
        n, d = self.matrix.shape
        return (d, n)

    @property
    def T(self) -> CompressedMatrix:
        return self.matrix

    def __repr__(self) -> str:
        return f"{self.matrix!r}.T"

    def toarray(self) -> NDArray[np.float32]:
        return self.matrix.decode().T

    def dot(self, B: ArrayLike) -> NDArray[Any]:
        return self.matrix.tdot(B)

    def __matmul__(self, B: ArrayLike) -> NDArray[Any]:
        return self.matrix.tdot(B)

    def __rmatmul__(self, A: ArrayLike) -> NDArray[Any]:
        """A·X̂ᵀ for A of shape (k, d) or (d,): (X̂·Aᵀ)ᵀ."""
        return self._left_product(A)

    def _transposed_product(self, B: NDArray[Any], name: str) -> NDArray[Any]:
        return self.matrix._product(B, name, transposed=False)
