"""The implicit-feedback recommendation protocol of the Rankmax paper (Section 4).

Kong, Krichene, Mayoraz, Rendle & Zhang ("Rankmax: an adaptive projection alternative
to the softmax function", NeurIPS 2020) evaluate a loss on MovieLens as follows: the
(user, movie) interactions are split 80 % / 10 % / 10 % into training, cross-validation
and test parts; a model trained on the first part ranks *all* movies for every user; the
ranking is compared with the user's test movies through AP@10, accuracy (is the
top-ranked movie relevant?) and Recall@100. Items the user interacted with during
training are excluded from the ranking (``exclude=``): the paper's text does not spell
this out, but it is the standard implicit-feedback convention, since otherwise the
training items, which a fitted model scores highest, crowd out the top of every list.

* :func:`split_interactions` — the random 80/10/10 split of the deduplicated
  (user, item) pairs, made per user, as three CSR 0/1 indicator matrices;
* :func:`evaluate_ranking` — AP@k, accuracy and Recall@k of a dense score matrix
  against a CSR relevance matrix, with an optional CSR exclusion matrix;
* :func:`evaluate_recommender` — the same for ``model.decision_function(X)``,
  computed block by block so that the full score matrix is never held in memory.

Ranking convention (that of :mod:`toprank.metrics`): each row's items are ordered by
decreasing score, ties broken by the lower column index. Excluded items are ranked
below every other item (as if their score were -inf), so they are recommended only
when a row has fewer than k other items, and never count as hits.

Every bad input raises :class:`toprank.exceptions.InvalidInputError` (a
``ValueError``) whose message starts with the name of the offending argument.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import Bunch, check_random_state

from toprank._docs import fill_doc
from toprank._validation import as_array, as_count, indicator_matrix
from toprank.exceptions import InvalidInputError
from toprank.metrics import average_precision_at_k, precision_at_k, recall_at_k

__all__ = [
    "split_interactions",
    "evaluate_ranking",
    "evaluate_recommender",
    "Scorer",
]

# Elements per temporary (rows x items) score block: 2**22 float64 = 32 MiB.
_BLOCK_ELEMS = 1 << 22
# |sum(fractions) - 1| allowed (so that e.g. (0.7, 0.2, 0.1) is accepted).
_FRACTION_TOL = 1e-9
# The split reads each fraction as the nearest rational with a denominator at most this,
# so that decimal fractions round exactly (0.87 + 0.06 is 93/100, not 0.9299999999999999).
_FRACTION_DENOMINATOR = 10**6


class Scorer(Protocol):
    """Anything with a ``decision_function(X)`` returning an (n_rows, n_items) score array.

    The structural type :func:`evaluate_recommender` takes: toprank's ranking models,
    scikit-learn classifiers, or any object with that method (no base class needed).

    See Also
    --------
    evaluate_recommender : Evaluates one.

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.recsys import Scorer
    >>> class Constant:
    ...     def decision_function(self, X):
    ...         return np.zeros((len(X), 3))
    >>> model: Scorer = Constant()
    >>> model.decision_function(np.zeros((2, 1))).shape
    (2, 3)
    """

    def decision_function(self, X: Any) -> Any:
        """Return the scores of every item for each row of ``X``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_rows, ...)
            The rows to score (features, or user indices).

        Returns
        -------
        array-like of shape (n_rows, n_items)
            Real scores, higher meaning recommended first.
        """
        ...


# --------------------------------------------------------------------------- helpers


def _nonempty(x: ArrayLike, name: str, ndim: int, shape: str, kinds: str, values: str) -> NDArray[Any]:
    """``x`` as a non-empty ``ndim``-D array (``shape`` describes it) of a dtype kind in
    ``kinds`` (``values`` describes them)."""
    arr = as_array(x, name)
    if arr.ndim != ndim:
        raise InvalidInputError(f"{name}: expected {shape}, got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidInputError(f"{name}: empty input, got shape {arr.shape}")
    if arr.dtype.kind not in kinds:
        raise InvalidInputError(f"{name}: expected {values}, got dtype {arr.dtype}")
    return arr


def _ids(x: ArrayLike, name: str) -> NDArray[np.int64]:
    """A non-empty 1-D array of non-negative integer ids, as int64."""
    arr = _nonempty(x, name, 1, "a 1-D array of ids", "iu", "integer ids")
    if arr.dtype.kind == "u" and int(arr.max()) > np.iinfo(np.int64).max:
        raise InvalidInputError(f"{name}: id {int(arr.max())} is out of range")
    out = arr.astype(np.int64, copy=False)
    if int(out.min()) < 0:
        raise InvalidInputError(f"{name}: ids must be >= 0, got {int(out.min())}")
    return out


def _n_ids(value: Any, ids: NDArray[np.int64], name: str, ids_name: str) -> int:
    """``value`` (or max(ids) + 1 if None), checked to cover every id."""
    needed = int(ids.max()) + 1
    if value is None:
        return needed
    n = as_count(value, name)
    if n < needed:
        raise InvalidInputError(f"{name}: must be at least max({ids_name}) + 1 = {needed}, got {n}")
    return n


def _fractions(fractions: Sequence[float]) -> tuple[Fraction, Fraction, Fraction]:
    try:
        values = tuple(fractions)
    except TypeError as exc:
        raise InvalidInputError(f"fractions: expected a sequence of 3 numbers, got {type(fractions).__name__}") from exc
    if len(values) != 3:
        raise InvalidInputError(f"fractions: expected 3 numbers (train, valid, test), got {len(values)}")
    out: list[float] = []
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise InvalidInputError(f"fractions: expected real numbers, got {v!r}")
        f = float(v)
        if not math.isfinite(f) or f < 0.0:
            raise InvalidInputError(f"fractions: must be finite and >= 0, got {values}")
        out.append(f)
    if out[0] <= 0.0:
        raise InvalidInputError(f"fractions: the training fraction must be > 0, got {values}")
    total = math.fsum(out)
    if abs(total - 1.0) > _FRACTION_TOL:
        raise InvalidInputError(f"fractions: must sum to 1, got {values} (sum {total!r})")
    exact = [Fraction(f).limit_denominator(_FRACTION_DENOMINATOR) for f in out]
    if exact[0] == 0:  # a positive share below 1e-6 (after the rational approximation)
        raise InvalidInputError(f"fractions: the training fraction must be > 0, got {values}")
    return exact[0], exact[1], exact[2]


def _round_half_up(fraction: Fraction, m: NDArray[np.int64]) -> NDArray[np.int64]:
    """floor(fraction * m + 1/2), exactly (integer arithmetic)."""
    num, den = fraction.numerator, fraction.denominator
    out: NDArray[np.int64] = (2 * num * m + den) // (2 * den)
    return out


def _csr_from_keys(keys: NDArray[np.int64], n_rows: int, n_cols: int) -> Any:
    """The float32 0/1 CSR matrix with ones at the sorted unique keys row * n_cols + col."""
    rows = keys // n_cols
    cols = keys % n_cols
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    index_dtype = np.int32 if max(n_cols, keys.size) < np.iinfo(np.int32).max else np.int64
    matrix = sp.csr_matrix(
        (
            np.ones(keys.size, dtype=np.float32),
            cols.astype(index_dtype),
            indptr.astype(index_dtype),
        ),
        shape=(n_rows, n_cols),
    )
    matrix.has_sorted_indices = True
    return matrix


def _check_k(value: Any, name: str, n_items: int) -> int:
    k = as_count(value, name)
    if not 1 <= k <= n_items:
        raise InvalidInputError(f"{name}: must be in [1, {n_items}] (the number of items), got {k}")
    return k


class _Accumulator:
    """Sums of the per-row metrics over the evaluated rows, fed one score block at a time."""

    def __init__(self, relevant: Any, exclude: Any | None, k_ap: int, k_recall: int) -> None:
        self.relevant = relevant
        self.exclude = exclude
        self.k_ap = k_ap
        self.k_recall = k_recall
        self.nrel: NDArray[np.intp] = np.diff(relevant.indptr)
        self.ap = 0.0
        self.hits1 = 0.0
        self.recall = 0.0
        self.n = 0

    def add(self, start: int, raw: Any, name: str) -> None:
        """Score rows ``start .. start + len(raw)`` (a dense block) and add their metrics."""
        block = np.asarray(raw)
        stop = start + block.shape[0]
        if block.dtype.kind not in "biuf":
            raise InvalidInputError(f"{name}: expected real scores, got dtype {block.dtype}")
        if block.dtype.kind == "f" and bool(np.isnan(block).any()):
            rows = np.flatnonzero(np.isnan(block).any(axis=1))
            raise InvalidInputError(f"{name}: contains NaN (first in row {start + int(rows[0])})")
        # ±inf only at excluded items, in every row (rows without relevant items too,
        # though their metrics are skipped below).
        infinite = np.isinf(block) if block.dtype.kind == "f" else np.zeros(block.shape, dtype=bool)
        if self.exclude is not None and infinite.any():
            ex_block = self.exclude[start:stop]
            rows = np.repeat(np.arange(block.shape[0]), np.diff(ex_block.indptr))
            infinite[rows, ex_block.indices] = False
        if infinite.any():
            raise InvalidInputError(
                f"{name}: contains an infinite value at an item that is not excluded "
                f"(row {start + int(np.flatnonzero(infinite.any(axis=1))[0])})"
            )
        keep = np.flatnonzero(self.nrel[start:stop] > 0)
        if keep.size == 0:
            return
        s = block[keep].astype(np.float64)  # a copy: the caller's array is never written
        rows_idx = keep + start
        er: NDArray[np.intp] = np.zeros(0, dtype=np.intp)
        ec: NDArray[np.intp] = np.zeros(0, dtype=np.intp)
        if self.exclude is not None:
            ex = self.exclude[rows_idx]
            er = np.repeat(np.arange(keep.size), np.diff(ex.indptr))
            ec = np.asarray(ex.indices, dtype=np.intp)
            s[er, ec] = 0.0
        if ec.size:
            # Below every kept score of the block: "-inf" for the finite-only metrics.
            s[er, ec] = np.inf
            floor = np.nextafter(s.min(), -np.inf)
            if not math.isfinite(floor):
                raise InvalidInputError(
                    f"{name}: scores reach the float64 minimum; no lower value is left for the excluded items"
                )
            s[er, ec] = floor
        rel = self.relevant[rows_idx]
        nb = keep.size
        self.ap += average_precision_at_k(rel, s, self.k_ap) * nb
        self.hits1 += precision_at_k(rel, s, 1) * nb
        self.recall += recall_at_k(rel, s, self.k_recall) * nb
        self.n += nb

    def result(self) -> dict[str, float]:
        n = self.n
        return {
            f"ap@{self.k_ap}": self.ap / n,
            "accuracy": self.hits1 / n,
            f"recall@{self.k_recall}": self.recall / n,
            "n_users": n,
        }


def _prepare(shape: tuple[int, int], relevant: Any, exclude: Any | None, k_ap: Any, k_recall: Any) -> _Accumulator:
    n_items = shape[1]
    rel = indicator_matrix(relevant, "relevant", shape)
    ex = None if exclude is None else indicator_matrix(exclude, "exclude", shape)
    ka = _check_k(k_ap, "k_ap", n_items)
    kr = _check_k(k_recall, "k_recall", n_items)
    if rel.nnz == 0:
        raise InvalidInputError("relevant: no row has a relevant item, the metrics are undefined")
    if ex is not None:
        both = rel.multiply(ex)
        both.eliminate_zeros()
        if both.nnz:
            r, c = (int(v[0]) for v in both.nonzero())
            raise InvalidInputError(
                f"exclude: {both.nnz} excluded (row, item) pairs are also relevant, e.g. "
                f"({r}, {c}); an excluded item can never be a hit"
            )
    return _Accumulator(rel, ex, ka, kr)


def _block_rows(n_items: int) -> int:
    return max(1, _BLOCK_ELEMS // max(1, n_items))


# --------------------------------------------------------------------------- public API


@fill_doc
def split_interactions(
    users: ArrayLike,
    items: ArrayLike,
    *,
    n_users: int | None = None,
    n_items: int | None = None,
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    random_state: int | np.random.RandomState | None = None,
) -> Bunch:
    """Split implicit-feedback interactions into training, validation and test parts.

    The (user, item) pairs are deduplicated (a repeated interaction is one pair), then
    each user's distinct items are shuffled uniformly at random and cut in three
    consecutive parts. With m the user's number of distinct items and
    (f_train, f_valid, f_test) = ``fractions``, the cut points are the *cumulative*
    fractions times m, rounded half up::

        n_train = max(1, floor(f_train * m + 1/2))
        n_train + n_valid = max(n_train, floor((f_train + f_valid) * m + 1/2))
        n_test = m - n_train - n_valid

    so every user with at least one interaction has at least one training item, each
    part's count is within 1 of its exact share (the training count within 1/2, unless
    raised to 1), and the three counts sum to m. The rounding is exact for fractions
    given as decimals: each fraction is read as the nearest rational with a denominator
    of at most 10**6 (0.7 as 7/10), and the products are computed in integers. For the default 80/10/10 and m = 1, 2,
    3, 5, 10 this gives (train, valid, test) = (1, 0, 0), (2, 0, 0), (2, 1, 0),
    (4, 1, 0), (8, 1, 1). This is the Rankmax paper's 80 % / 10 % / 10 % split made per
    user, so that the models can score every user.

    Parameters
    ----------
    users : array-like of int, shape (n_interactions,)
        0-based user index of each interaction.
    items : array-like of int, shape (n_interactions,)
        0-based item index of each interaction.
    n_users : int, optional
        Number of rows of the result (default ``max(users) + 1``); users without
        interactions get empty rows in all three parts.
    n_items : int, optional
        Number of columns of the result (default ``max(items) + 1``).
    fractions : sequence of 3 floats, default (0.8, 0.1, 0.1)
        Shares of (train, valid, test); non-negative, train > 0, summing to 1 (within
        1e-9).
    random_state : int, numpy.random.RandomState or None, default None
        Seed of the shuffles (see :func:`sklearn.utils.check_random_state`): an int
        makes the split reproducible.

    Returns
    -------
    sklearn.utils.Bunch
        ``train``, ``valid``, ``test``: ``scipy.sparse.csr_matrix`` of shape
        (n_users, n_items), dtype float32, with a 1 at each pair of the part (sorted
        indices, no explicit zeros). The parts are disjoint and their union is the set
        of distinct input pairs. The result depends only on that set of pairs and on
        ``random_state``, not on the order or repetition of the input.

    Raises
    ------
    InvalidInputError
        ``users`` / ``items`` empty, not 1-D integer arrays, negative or of different
        lengths; ``n_users`` / ``n_items`` smaller than the largest id + 1;
        ``fractions`` not three finite non-negative numbers summing to 1 with a
        positive training share.

    See Also
    --------
    evaluate_ranking, evaluate_recommender : Evaluate a model on the parts.
    toprank.datasets.load_movielens_100k : The paper's data set.

    Notes
    -----
    One ``np.unique`` of the pairs and one random permutation: O(N log N) for N
    interactions; the three matrices hold the N' distinct pairs.

    %(refs_rankmax_evaluation)s

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.recsys import split_interactions
    >>> parts = split_interactions(np.repeat(np.arange(3), 10), np.tile(np.arange(10), 3),
    ...                            random_state=0)
    >>> [int(parts[name].nnz) for name in ("train", "valid", "test")]
    [24, 3, 3]
    """
    u = _ids(users, "users")
    it = _ids(items, "items")
    if u.shape != it.shape:
        raise InvalidInputError(f"items: expected {u.shape[0]} entries (one per entry of users), got {it.shape[0]}")
    nu = _n_ids(n_users, u, "n_users", "users")
    ni = _n_ids(n_items, it, "n_items", "items")
    if nu * ni > np.iinfo(np.int64).max:
        raise InvalidInputError(f"n_items: n_users * n_items = {nu * ni} overflows int64")
    f_train, f_valid, _ = _fractions(fractions)
    rng = check_random_state(random_state)

    keys = np.unique(u * ni + it)  # sorted: grouped by user, items ascending
    owner = keys // ni
    counts = np.bincount(owner, minlength=nu)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    # A uniform random order within each user: a global permutation, then a stable
    # sort by user.
    perm = rng.permutation(keys.size)
    order = perm[np.argsort(owner[perm], kind="stable")]
    position = np.empty(keys.size, dtype=np.int64)
    position[order] = np.arange(keys.size) - starts[owner[order]]

    cut_train = np.maximum(1, _round_half_up(f_train, counts))
    cut_valid = np.minimum(counts, np.maximum(cut_train, _round_half_up(f_train + f_valid, counts)))
    part = np.where(position < cut_train[owner], 0, np.where(position < cut_valid[owner], 1, 2))
    return Bunch(
        train=_csr_from_keys(keys[part == 0], nu, ni),
        valid=_csr_from_keys(keys[part == 1], nu, ni),
        test=_csr_from_keys(keys[part == 2], nu, ni),
    )


@fill_doc
def evaluate_ranking(
    scores: ArrayLike,
    relevant: Any,
    *,
    exclude: Any | None = None,
    k_ap: int = 10,
    k_recall: int = 100,
) -> dict[str, float]:
    """AP@k, accuracy and Recall@k of the item rankings given by a score matrix.

    For each row (user) with at least one relevant item, the items are ranked by
    decreasing score (ties: lower column index first) after the excluded items have been
    moved below all others (score -inf: they are never recommended ahead of a
    non-excluded item and never count as hits). With R the row's relevant items,
    rel_i = 1 if the i-th ranked item is in R and P@i the precision of the top i:

    * ``ap@{k_ap}``: (1 / min(k_ap, #R)) * sum_{i <= k_ap} P@i * rel_i
      (:func:`toprank.metrics.average_precision_at_k`);
    * ``accuracy``: rel_1, whether the top-ranked item is relevant (precision@1,
      :func:`toprank.metrics.precision_at_k` with k = 1);
    * ``recall@{k_recall}``: #(R ∩ top-k_recall) / #R
      (:func:`toprank.metrics.recall_at_k`).

    Each is averaged over the rows with R non-empty; rows without relevant items are
    skipped (but their scores are still checked for NaN). The rows are processed in
    blocks of about 2**22 scores, so the temporaries stay small (e.g. 10000 users x
    26744 items).

    Parameters
    ----------
    scores : array-like of shape (n_users, n_items)
        Dense real scores (float32, float64, integer or a numpy memmap), higher meaning
        recommended first. NaN is refused everywhere; ±inf only at excluded entries.
    relevant : scipy.sparse matrix or array-like of shape (n_users, n_items)
        0/1 (or boolean) indicator of the relevant items, e.g. the ``test`` part of
        :func:`split_interactions`.
    exclude : scipy.sparse matrix or array-like of shape (n_users, n_items), optional
        0/1 indicator of the items that may not be recommended, e.g. the ``train`` part
        (plus ``valid`` when evaluating on ``test``). Must not overlap ``relevant``.
    k_ap : int, default 10
        Cut-off of the average precision, 1 <= k_ap <= n_items.
    k_recall : int, default 100
        Cut-off of the recall, 1 <= k_recall <= n_items.

    Returns
    -------
    dict of str to float
        ``f"ap@{k_ap}"``, ``"accuracy"``, ``f"recall@{k_recall}"`` (means over the
        evaluated rows) and ``"n_users"``, the number of rows evaluated (an int).

    Raises
    ------
    InvalidInputError
        ``scores`` not a non-empty 2-D real array, containing NaN, or ±inf at a
        non-excluded entry; ``relevant`` / ``exclude`` of another shape or not 0/1;
        ``relevant`` without any relevant item; ``exclude`` overlapping ``relevant``;
        ``k_ap`` / ``k_recall`` not an integer in [1, n_items].

    See Also
    --------
    evaluate_recommender : The same for a model, without the full score matrix.
    toprank.metrics.average_precision_at_k : AP@k without exclusions.

    %(refs_rankmax_evaluation)s

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.recsys import evaluate_ranking
    >>> scores = np.array([[0.9, 0.8, 0.1], [0.2, 0.7, 0.5]])
    >>> relevant = np.array([[0, 1, 0], [1, 0, 0]])
    >>> evaluate_ranking(scores, relevant, exclude=np.array([[1, 0, 0], [0, 0, 0]]),
    ...                  k_ap=2, k_recall=2)
    {'ap@2': 0.5, 'accuracy': 0.5, 'recall@2': 0.5, 'n_users': 2}
    """
    if sp.issparse(scores):
        raise InvalidInputError("scores: expected a dense array, got a scipy.sparse matrix")
    s = _nonempty(scores, "scores", 2, "an (n_users, n_items) array", "biuf", "real scores")
    shape = (int(s.shape[0]), int(s.shape[1]))
    acc = _prepare(shape, relevant, exclude, k_ap, k_recall)
    step = _block_rows(shape[1])
    for start in range(0, shape[0], step):
        acc.add(start, s[start : start + step], "scores")
    return acc.result()


@fill_doc
def evaluate_recommender(
    model: Scorer,
    X: Any,
    relevant: Any,
    *,
    exclude: Any | None = None,
    k_ap: int = 10,
    k_recall: int = 100,
    batch_size: int | None = None,
) -> dict[str, float]:
    """:func:`evaluate_ranking` of ``model.decision_function(X)``, computed in row blocks.

    ``decision_function`` is called on consecutive slices ``X[start:start + batch_size]``
    and each block of scores is evaluated and dropped, so the full (n_users, n_items)
    score matrix is never built.

    Parameters
    ----------
    model : object with a ``decision_function(X)`` method
        Returns an (n_rows, n_items) array of scores for n_rows rows of ``X`` (e.g. a
        fitted toprank ranking model).
    X : array-like or scipy.sparse matrix, shape (n_users, ...)
        One row per user, in the row order of ``relevant`` (features, or user indices
        for a model that takes them). Lists are converted with :func:`numpy.asarray`.
    relevant : scipy.sparse matrix or array-like of shape (n_users, n_items)
        0/1 indicator of the relevant items (as in :func:`evaluate_ranking`).
    exclude : scipy.sparse matrix or array-like of shape (n_users, n_items), optional
        0/1 indicator of the items that may not be recommended (as in
        :func:`evaluate_ranking`).
    k_ap : int, default 10
        Cut-off of the average precision, 1 <= k_ap <= n_items.
    k_recall : int, default 100
        Cut-off of the recall, 1 <= k_recall <= n_items.
    batch_size : int, optional
        Rows per ``decision_function`` call; default about 2**22 / n_items.

    Returns
    -------
    dict of str to float
        As :func:`evaluate_ranking`.

    Raises
    ------
    InvalidInputError
        As :func:`evaluate_ranking`; also ``X`` empty or with a number of rows
        different from ``relevant``, ``batch_size`` not a positive integer, or a score
        block of the wrong shape.

    See Also
    --------
    evaluate_ranking : The same for a score matrix.
    split_interactions : The parts to train and evaluate on.

    %(refs_rankmax_evaluation)s

    Examples
    --------
    A popularity baseline: every user gets the items ranked by their number of training
    interactions.

    >>> import numpy as np
    >>> from toprank.recsys import evaluate_recommender, split_interactions
    >>> rng = np.random.default_rng(0)
    >>> users = rng.integers(0, 50, 2000)
    >>> items = np.minimum(rng.zipf(1.5, 2000) - 1, 99)
    >>> parts = split_interactions(users, items, n_items=100, random_state=0)
    >>> class Popularity:
    ...     def __init__(self, train):
    ...         self.counts = np.asarray(train.sum(axis=0)).ravel()
    ...     def decision_function(self, X):
    ...         return np.tile(self.counts, (X.shape[0], 1))
    >>> result = evaluate_recommender(Popularity(parts.train), np.arange(50)[:, None], parts.test,
    ...                               exclude=parts.train + parts.valid, k_ap=5, k_recall=20)
    >>> {key: round(value, 3) for key, value in result.items()}
    {'ap@5': 0.412, 'accuracy': 0.38, 'recall@20': 0.7, 'n_users': 50}
    """
    if not hasattr(model, "decision_function"):
        raise InvalidInputError(
            f"model: expected an object with a decision_function method, got {type(model).__name__}"
        )
    data = X if sp.issparse(X) or hasattr(X, "shape") else np.asarray(X)
    if len(data.shape) == 0 or int(data.shape[0]) == 0:
        raise InvalidInputError(f"X: empty input, got shape {tuple(data.shape)}")
    n_rows = int(data.shape[0])
    if not sp.issparse(relevant) and not hasattr(relevant, "shape"):
        relevant = np.asarray(relevant)
    rel_shape = tuple(int(d) for d in relevant.shape)
    if len(rel_shape) != 2:
        raise InvalidInputError(f"relevant: expected an (n_users, n_items) matrix, got shape {rel_shape}")
    if rel_shape[0] != n_rows:
        raise InvalidInputError(f"relevant: expected {n_rows} rows (one per row of X), got {rel_shape[0]}")
    if rel_shape[1] == 0:
        raise InvalidInputError(f"relevant: empty input, got shape {rel_shape}")
    shape = (n_rows, rel_shape[1])
    acc = _prepare(shape, relevant, exclude, k_ap, k_recall)
    if batch_size is None:
        step = _block_rows(shape[1])
    else:
        step = as_count(batch_size, "batch_size")
        if step < 1:
            raise InvalidInputError(f"batch_size: must be >= 1, got {step}")
    for start in range(0, n_rows, step):
        stop = min(start + step, n_rows)
        block = np.asarray(model.decision_function(data[start:stop]))
        if block.shape != (stop - start, shape[1]):
            raise InvalidInputError(
                f"model: decision_function returned shape {block.shape} for rows "
                f"{start}:{stop} of X, expected {(stop - start, shape[1])}"
            )
        acc.add(start, block, "model.decision_function(X)")
    return acc.result()
