"""Evaluation metrics for top-k classification and ranking (pure NumPy).

* :func:`top_k_accuracy` — multiclass top-k accuracy, identical to
  :func:`sklearn.metrics.top_k_accuracy_score` (same tie handling and ``labels``);
* :func:`precision_at_k`, :func:`recall_at_k`, :func:`average_precision_at_k` —
  multi-label ranking metrics averaged over rows;
* :func:`precision_at_recall` — precision at the first threshold reaching a recall
  level ("accuracy at the top", as in the TopPush and Pat&Mat papers);
* :func:`precision_recall_curve` — the binary precision-recall curve, with the same
  values and output layout as :func:`sklearn.metrics.precision_recall_curve`;
* :func:`hamming_loss` — fraction of wrong entries of a multi-label indicator matrix;
* :func:`rank_loss` — the label ranking loss, the fraction of (relevant, irrelevant)
  label pairs a multi-label ranking orders wrongly, identical to
  :func:`sklearn.metrics.label_ranking_loss`.

Ranking convention for the multi-label metrics: in each row the labels are ordered by
decreasing score, ties broken by the lower column index first, and the *top-k* are the
first k labels of that order. It is deterministic and is computed with
``np.argpartition`` (O(L) per row) followed by a sort of the k candidates only.

Multi-label ground truth ``y_true`` may be given as

* a dense (n, L) indicator array (any array-like other than a list or tuple), with
  entries in {0, 1} (bool, integer or float);
* a ``scipy.sparse`` (n, L) matrix or array with stored values in {0, 1} (explicit
  zeros are allowed; duplicate entries are summed first, as scipy does);
* a ``list`` or ``tuple`` of n label sets: each an iterable of integer column indices
  in [0, L) (duplicates are ignored). **A list or tuple is always read as label sets**:
  pass ``np.asarray(y)`` to have a nested list read as an indicator matrix.

Every bad input (NaN/inf or complex scores, mismatched shapes, empty input, ``k`` or
``recall`` out of range, labels that are not 0/1, a binary ``y_true`` with a single
class where a curve needs both, ...) raises
:class:`toprank.exceptions.InvalidInputError`, a ``ValueError`` whose message starts
with the name of the offending argument, e.g. ``"k: must be in [1, 5], got 7"``.
SciPy and scikit-learn are not needed at runtime.
"""

from __future__ import annotations

import operator
import sys
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from toprank._docs import fill_doc
from toprank._validation import sparse_structure
from toprank.exceptions import InvalidInputError

__all__ = [
    "top_k_accuracy",
    "precision_at_k",
    "recall_at_k",
    "average_precision_at_k",
    "precision_at_recall",
    "precision_recall_curve",
    "hamming_loss",
    "rank_loss",
]

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# Elements per temporary (rows x columns) block in the O(n*L) passes: bounds memory.
_BLOCK_ELEMS = 1 << 22


# --------------------------------------------------------------------------- helpers


def _as_array(x: object, name: str) -> NDArray[Any]:
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged nested lists and the like
        raise InvalidInputError(f"{name}: cannot be converted to an array ({exc})") from exc


def _is_sparse(x: object) -> bool:
    """Whether ``x`` is a scipy.sparse matrix/array (without importing SciPy)."""
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and bool(sp.issparse(x))


def _check_real_finite(a: NDArray[Any], name: str) -> NDArray[Any]:
    """Reject non-real dtypes and NaN/inf; bools become uint8."""
    if a.dtype.kind == "b":
        return a.astype(np.uint8)
    if a.dtype.kind not in "iuf":
        raise InvalidInputError(f"{name}: expected a real numeric array, got dtype {a.dtype}")
    if a.dtype.kind == "f" and not bool(np.isfinite(a).all()):
        raise InvalidInputError(f"{name}: contains NaN or infinite values")
    return a


def _scores(scores: ArrayLike, ndim: int, name: str = "scores") -> NDArray[Any]:
    s = _as_array(scores, name)
    if s.ndim != ndim:
        raise InvalidInputError(f"{name}: expected a {ndim}-D array, got shape {s.shape}")
    if s.size == 0:
        raise InvalidInputError(f"{name}: empty input, got shape {s.shape}")
    return _check_real_finite(s, name)


def _check_k(k: object, upper: int) -> int:
    if isinstance(k, (bool, np.bool_)):
        raise InvalidInputError(f"k: expected an integer, got {k!r}")
    try:
        kk = operator.index(k)  # type: ignore[arg-type]
    except TypeError as exc:
        raise InvalidInputError(f"k: expected an integer, got {type(k).__name__}") from exc
    if not 1 <= kk <= upper:
        raise InvalidInputError(f"k: must be in [1, {upper}], got {kk}")
    return kk


def _binary_values(a: NDArray[Any], name: str) -> BoolArray:
    """A 0/1 (or bool) array as bool; anything else raises."""
    if a.dtype.kind == "b":
        return a.astype(np.bool_, copy=False)
    if a.dtype.kind not in "iuf":
        raise InvalidInputError(f"{name}: expected 0/1 or boolean values, got dtype {a.dtype}")
    nz: BoolArray = np.not_equal(a, 0)
    if not bool(np.all(nz == (a == 1))):
        raise InvalidInputError(f"{name}: expected only 0/1 values")
    return nz


def _topk_indices(s: NDArray[Any], k: int) -> NDArray[np.intp]:
    """(n, k) column indices of each row's top k, ordered by (score desc, index asc)."""
    n, m = s.shape
    out = np.empty((n, k), dtype=np.intp)
    step = max(1, _BLOCK_ELEMS // m)
    for start in range(0, n, step):
        blk = s[start : start + step]
        nb = blk.shape[0]
        if k < m:
            cand = np.argpartition(blk, m - k, axis=1)[:, m - k :]
            kth = np.take_along_axis(blk, cand, axis=1).min(axis=1)
            # Ties straddling the k-th position: argpartition picks arbitrary tied
            # columns; redo those rows taking the lowest-index tied columns.
            n_ge = np.count_nonzero(blk >= kth[:, None], axis=1)
            amb = np.flatnonzero(n_ge > k)
            if amb.size:
                sub = blk[amb]
                v = kth[amb, None]
                gt = sub > v
                eq = sub == v
                need = k - np.count_nonzero(gt, axis=1)
                sel = gt | (eq & (np.cumsum(eq, axis=1) <= need[:, None]))
                cand[amb] = np.nonzero(sel)[1].reshape(amb.size, k)
        else:
            cand = np.broadcast_to(np.arange(m), (nb, m))
        vals = np.take_along_axis(blk, cand, axis=1)
        # lexsort: last key primary -> ascending (score, -index); reversed gives
        # descending score with ascending index among ties.
        order = np.lexsort((-cand.astype(np.int64), vals), axis=1)[:, ::-1]
        out[start : start + nb] = np.take_along_axis(cand, order, axis=1)
    return out


def _positive_keys(y_true: object, n: int, m: int) -> IntArray | None:
    """Sorted unique keys row*m + col of the relevant entries, for sparse / label-set
    ``y_true``; ``None`` when ``y_true`` is a dense indicator array."""
    if _is_sparse(y_true):
        shape = tuple(y_true.shape)  # type: ignore[attr-defined]
        if shape != (n, m):
            raise InvalidInputError(f"y_true: expected shape {(n, m)} matching scores, got {shape}")
        sparse_structure(y_true, "y_true")
        coo = y_true.tocoo()  # type: ignore[attr-defined]
        data = np.asarray(coo.data)
        if data.dtype.kind not in "biuf":
            raise InvalidInputError(f"y_true: expected 0/1 or boolean values, got dtype {data.dtype}")
        keys = np.asarray(coo.row, dtype=np.int64) * m + np.asarray(coo.col, dtype=np.int64)
        ukeys, inv = np.unique(keys, return_inverse=True)
        sums = np.bincount(inv.ravel(), weights=data.astype(np.float64), minlength=ukeys.size)
        return ukeys[_binary_values(sums, "y_true")]
    if isinstance(y_true, (list, tuple)):
        if len(y_true) != n:
            raise InvalidInputError(f"y_true: expected {n} label sets (one per row of scores), got {len(y_true)}")
        lens = np.empty(n, dtype=np.int64)
        flat: list[Any] = []
        for i, row in enumerate(y_true):
            try:
                items = list(row)
            except TypeError as exc:
                raise InvalidInputError(f"y_true: row {i} is not an iterable of labels ({type(row).__name__})") from exc
            lens[i] = len(items)
            flat.extend(items)
        cols = _as_array(flat, "y_true") if flat else np.zeros(0, dtype=np.int64)
        if cols.ndim != 1 or cols.dtype.kind not in "iu":
            raise InvalidInputError("y_true: label sets must contain integer column indices")
        bad = np.flatnonzero((cols < 0) | (cols >= m))
        if bad.size:
            row_of = int(np.searchsorted(np.cumsum(lens), bad[0], side="right"))
            raise InvalidInputError(f"y_true: label {cols[bad[0]]} in row {row_of} is out of range [0, {m})")
        rows = np.repeat(np.arange(n, dtype=np.int64), lens)
        return np.unique(rows * m + cols.astype(np.int64))
    return None


def _relevance(y_true: object, scores: ArrayLike, k: object) -> tuple[BoolArray, IntArray, int]:
    """The metrics at k's common part, after checking ``scores``, then ``k``, then ``y_true``.

    ``rel[i, r]``: whether row i's r-th ranked label is relevant; ``nrel[i]``: |relevant_i|;
    and k as an int.
    """
    s = _scores(scores, 2)
    n, m = s.shape
    k = _check_k(k, m)
    top = _topk_indices(s, k)
    keys = _positive_keys(y_true, n, m)
    if keys is None:
        y = _as_array(y_true, "y_true")
        if y.shape != (n, m):
            raise InvalidInputError(f"y_true: expected shape {(n, m)} matching scores, got {y.shape}")
        yb = _binary_values(y, "y_true")
        rel = yb[np.arange(n)[:, None], top]
        nrel = np.count_nonzero(yb, axis=1).astype(np.int64)
        return rel, nrel, k
    query = np.arange(n, dtype=np.int64)[:, None] * m + top
    if keys.size == 0:
        rel = np.zeros((n, k), dtype=np.bool_)
    else:
        pos = np.minimum(np.searchsorted(keys, query), keys.size - 1)
        rel = keys[pos] == query
    nrel = np.bincount(keys // m, minlength=n).astype(np.int64)
    return rel, nrel, k


def _nonempty_rows(nrel: IntArray) -> BoolArray:
    has = nrel > 0
    if not bool(has.any()):
        raise InvalidInputError("y_true: no row has a relevant label, the metric is undefined")
    return has


def _binary_target(y_true: ArrayLike, n: int, name: str = "y_true") -> NDArray[Any]:
    """``y_true`` as a 1-D array of n labels (the caller has validated the n scores)."""
    y = _as_array(y_true, name)
    if y.ndim != 1:
        raise InvalidInputError(f"{name}: expected a 1-D array, got shape {y.shape}")
    if y.shape[0] != n:
        raise InvalidInputError(f"scores: expected {y.shape[0]} entries (one per label in {name}), got {n}")
    return y


def binary_scores(y_true: ArrayLike, scores: ArrayLike, pos_label: object) -> tuple[NDArray[Any], BoolArray]:
    """The checked (n,) ``scores`` of a binary problem and which of the n labels of
    ``y_true`` are positive (see :func:`_positive_mask`); shared with
    :func:`toprank.plotting.plot_score_densities`."""
    s = _scores(scores, 1)
    return s, _positive_mask(_binary_target(y_true, int(s.shape[0])), pos_label)


def _positive_mask(y: NDArray[Any], pos_label: object, name: str = "y_true") -> BoolArray:
    """Which entries of the 1-D label array ``y`` are positive.

    ``pos_label=None``: the labels must lie in {0, 1} or {-1, 1} (or be booleans) and the
    positives are the 1s. Otherwise ``y`` may hold any two comparable labels, one of
    which is ``pos_label``.
    """
    if y.dtype.kind == "c":
        raise InvalidInputError(f"{name}: expected class labels, got dtype {y.dtype}")
    if y.dtype.kind == "f" and not bool(np.isfinite(y).all()):
        raise InvalidInputError(f"{name}: contains NaN or infinite values")
    try:
        classes, inv = np.unique(y, return_inverse=True)
    except TypeError as exc:  # incomparable labels (e.g. str and int in an object array)
        raise InvalidInputError(f"{name}: labels cannot be compared ({exc})") from exc
    if classes.size > 2:
        raise InvalidInputError(f"{name}: expected binary labels, got {classes.size} distinct values")
    values = classes.tolist()
    if pos_label is None:
        if y.dtype.kind == "b":
            return y.astype(np.bool_, copy=False)
        if y.dtype.kind not in "iuf" or not (set(values) <= {0, 1} or set(values) <= {-1, 1}):
            raise InvalidInputError(
                f"{name}: with pos_label=None the labels must be in {{0, 1}} or {{-1, 1}}, got {values}; "
                "pass pos_label to name the positive class"
            )
        return np.asarray(y == 1, dtype=np.bool_)
    try:
        index = values.index(pos_label)
    except ValueError:
        raise InvalidInputError(f"pos_label: {pos_label!r} is not one of the labels of {name} {values}") from None
    return np.asarray(inv.ravel() == index, dtype=np.bool_)


def _tie_blocks(yb: BoolArray, s: NDArray[Any]) -> tuple[NDArray[Any], IntArray, IntArray]:
    """The distinct scores t in decreasing order, with TP(t) and N(t).

    TP(t) and N(t) count the positives and all examples scoring ≥ t: each block of tied
    scores enters the prediction as a whole.
    """
    order = np.argsort(s, kind="stable")[::-1]
    ss = s[order]
    tp = np.cumsum(yb[order], dtype=np.int64)
    ends = np.flatnonzero(np.append(ss[1:] != ss[:-1], True))  # last index of each tie block
    return ss[ends], tp[ends], ends.astype(np.int64) + 1


# --------------------------------------------------------------------------- metrics


def top_k_accuracy(y_true: ArrayLike, scores: ArrayLike, k: int, labels: ArrayLike | None = None) -> float:
    """Fraction of rows whose true label is among the k highest scores.

    Equal to ``sklearn.metrics.top_k_accuracy_score(y_true, scores, k=k, labels=labels)``.

    Multiclass (``scores`` of shape (n, m), m ≥ 2): column j of ``scores`` belongs to
    ``labels[j]``, or, without ``labels``, to the j-th smallest distinct value of
    ``y_true`` (which must then contain exactly m distinct values). Ties follow
    scikit-learn: classes are ranked by a stable ascending sort of the scores, reversed,
    so among equal scores the class with the *higher* column index ranks first. Row i
    is a hit iff #{j : s_ij > s_iy} + #{j > y : s_ij = s_iy} < k. Requires 1 ≤ k ≤ m.

    Binary (``scores`` of shape (n,) or (n, 1)): the scores are those of the larger of
    the two classes (``labels[1]`` when given). As in scikit-learn, for k = 1 the
    prediction is ``score > 0.5`` if all scores lie in [0, 1] and ``score > 0``
    otherwise; k = 2 gives 1.0. Requires 1 ≤ k ≤ 2.

    ``labels`` must be distinct and contain every value of ``y_true``. Unlike
    scikit-learn, unsorted ``labels`` are accepted (column j is ``labels[j]``), and an
    (n, 2) score matrix is treated as multiclass instead of being rejected.

    Parameters
    ----------
    y_true : array_like of shape (n,) or (n, 1)
        The true labels (any comparable values: ints, strings, ...).
    scores : array_like of shape (n, m) or (n,)
        Finite real scores, one column per class (multiclass), or the scores of the
        larger class (binary).
    k : int
        How many top-ranked classes count, ``1 <= k <= m`` (``<= 2`` for binary scores).
    labels : array_like of shape (m,), optional
        The class of each column of ``scores``, distinct and containing every value of
        ``y_true``.

    Returns
    -------
    float
        The fraction of rows whose label is a hit, in [0, 1].

    Raises
    ------
    InvalidInputError
        ``y_true`` not 1-D, ``scores`` empty, not 1-D or 2-D, not real or with NaN/inf,
        their lengths differ; ``k`` out of range; ``labels`` not distinct, of the wrong
        length or missing a value of ``y_true``; without ``labels``, ``y_true`` not
        holding exactly m distinct values.

    See Also
    --------
    toprank.scoring.top_k_accuracy_scorer : It as a ``scoring=`` callable.
    toprank.TopKSVC : The SVM that optimises it.

    Notes
    -----
    O(n·m) in blocks of about 4 million scores (no sort).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.metrics import top_k_accuracy
    >>> scores = np.array([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7], [0.2, 0.5, 0.3], [0.3, 0.3, 0.3]])
    >>> top_k_accuracy([0, 1, 2, 2], scores, k=1)  # the tie of row 3 goes to class 2
    0.5
    >>> top_k_accuracy(["a", "b", "c", "c"], scores, k=2)
    1.0
    """
    yt = _as_array(y_true, "y_true")
    if yt.ndim == 2 and yt.shape[1] == 1:
        yt = yt.ravel()
    if yt.ndim != 1:
        raise InvalidInputError(f"y_true: expected a 1-D array of labels, got shape {yt.shape}")
    if yt.size == 0:
        raise InvalidInputError("y_true: empty input")
    if yt.dtype.kind == "c":
        raise InvalidInputError(f"y_true: expected class labels, got dtype {yt.dtype}")
    if yt.dtype.kind == "f" and not bool(np.all(np.isfinite(yt) & (yt == np.round(yt)))):
        raise InvalidInputError("y_true: float labels must be finite whole numbers")
    n = int(yt.shape[0])

    s = _as_array(scores, "scores")
    if s.ndim == 2 and s.shape[1] == 1:
        s = s.ravel()
    if s.ndim not in (1, 2):
        raise InvalidInputError(f"scores: expected an (n,) or (n, m) array, got shape {s.shape}")
    if s.size == 0:
        raise InvalidInputError(f"scores: empty input, got shape {s.shape}")
    s = _check_real_finite(s, "scores")
    if s.shape[0] != n:
        raise InvalidInputError(f"scores: expected {n} rows (one per label in y_true), got {s.shape[0]}")
    m = 2 if s.ndim == 1 else s.shape[1]
    kk = _check_k(k, m)

    # Encode y_true as column indices.
    try:
        if labels is None:
            classes, idx = np.unique(yt, return_inverse=True)
            if classes.size != m:
                raise InvalidInputError(
                    f"y_true: has {classes.size} distinct labels but scores has {m} classes; "
                    "pass `labels` to name all the classes"
                )
            idx = idx.ravel().astype(np.intp)
        else:
            lab = _as_array(labels, "labels")
            if lab.ndim != 1 or lab.size != m:
                raise InvalidInputError(f"labels: expected {m} labels (one per class of scores), got shape {lab.shape}")
            if lab.dtype.kind == "c":
                raise InvalidInputError(f"labels: expected class labels, got dtype {lab.dtype}")
            order = np.argsort(lab, kind="stable")
            sorted_lab = lab[order]
            if bool(np.any(sorted_lab[1:] == sorted_lab[:-1])):
                raise InvalidInputError("labels: must be distinct")
            pos = np.minimum(np.searchsorted(sorted_lab, yt), m - 1)
            if not bool(np.all(sorted_lab[pos] == yt)):
                raise InvalidInputError("y_true: contains labels not in `labels`")
            idx = order[pos].astype(np.intp)
    except TypeError as exc:  # incomparable label types (e.g. str vs int)
        raise InvalidInputError(f"y_true: labels cannot be compared ({exc})") from exc

    if s.ndim == 1:
        if kk >= 2:
            return 1.0
        threshold = 0.5 if (s.min() >= 0 and s.max() <= 1) else 0
        hits = (s > threshold).astype(np.intp) == idx
        return float(np.count_nonzero(hits)) / n

    n_hits = 0
    cols = np.arange(m)
    step = max(1, _BLOCK_ELEMS // m)
    for start in range(0, n, step):
        blk = s[start : start + step]
        ib = idx[start : start + step]
        sy = blk[np.arange(blk.shape[0]), ib][:, None]
        rank = np.count_nonzero(blk > sy, axis=1) + np.count_nonzero((blk == sy) & (cols > ib[:, None]), axis=1)
        n_hits += int(np.count_nonzero(rank < kk))
    return float(n_hits) / n


@fill_doc
def precision_at_k(y_true: object, scores: ArrayLike, k: int) -> float:
    """Mean over all n rows of the fraction of the top k labels that are relevant.

    Per row: #(relevant ∩ top-k) / k.

    ``y_true``: (n, L) 0/1 indicator (dense or scipy.sparse) or a list of n label sets;
    ``scores``: (n, L). Top-k: the k largest scores of the row, ties broken by lower
    column index. Rows without relevant labels count as precision 0 (the usual
    extreme-classification convention). Requires 1 ≤ k ≤ L.

    %(at_k_parameters)s

    Returns
    -------
    float
        The mean precision at k, in [0, 1].

    Raises
    ------
    %(at_k_invalid)s

    %(at_k_see_also)s

    Notes
    -----
    The top k of a row are found by ``np.argpartition`` (O(L)) and a sort of those k
    only: O(n·(L + k log k)).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.metrics import precision_at_k
    >>> scores = np.array([[0.9, 0.8, 0.1, 0.3], [0.2, 0.7, 0.5, 0.4]])
    >>> precision_at_k(np.array([[1, 0, 1, 0], [0, 1, 0, 0]]), scores, k=2)
    0.5
    >>> precision_at_k([{0, 2}, {1}], scores, k=2)  # the same as label sets
    0.5
    """
    rel, _, kk = _relevance(y_true, scores, k)
    return float(np.count_nonzero(rel)) / (int(rel.shape[0]) * kk)


@fill_doc
def recall_at_k(y_true: object, scores: ArrayLike, k: int) -> float:
    """Mean recall at k over the rows with at least one relevant label.

    Per row: #(relevant ∩ top-k) / #relevant.

    Inputs and top-k as in :func:`precision_at_k`. Rows with no relevant label are
    skipped (recall is undefined there); if every row is empty, InvalidInputError is
    raised. Requires 1 ≤ k ≤ L.

    %(at_k_parameters)s

    Returns
    -------
    float
        The mean recall at k, in [0, 1].

    %(at_k_raises_no_row)s

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.metrics import recall_at_k
    >>> scores = np.array([[0.9, 0.8, 0.1, 0.3], [0.2, 0.7, 0.5, 0.4]])
    >>> recall_at_k([{0, 2}, {1}], scores, k=2)  # (1/2 + 1/1) / 2
    0.75
    """
    rel, nrel, _ = _relevance(y_true, scores, k)
    has = _nonempty_rows(nrel)
    hits = np.count_nonzero(rel, axis=1)[has]
    return float(np.mean(hits / nrel[has]))


@fill_doc
def average_precision_at_k(y_true: object, scores: ArrayLike, k: int) -> float:
    """Mean AP@k over the rows with at least one relevant label.

    AP@k = (1 / min(k, #relevant)) · Σ_{i=1..k} P@i · rel_i, where rel_i says whether the
    i-th ranked label is relevant and P@i is the precision of the top i (the AP@k of
    recommendation papers, e.g. Rankmax). Inputs and ranking as in
    :func:`precision_at_k`; rows without relevant labels are skipped, and if every row is
    empty InvalidInputError is raised. Requires 1 ≤ k ≤ L.

    %(at_k_parameters)s

    Returns
    -------
    float
        The mean AP@k, in [0, 1].

    %(at_k_raises_no_row)s
    toprank.recsys.evaluate_ranking : AP@k of recommendations, excluding seen items.

    %(refs_rankmax_evaluation)s

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.metrics import average_precision_at_k
    >>> y_true = [{0, 2}, {1}]
    >>> scores = np.array([[0.9, 0.8, 0.1, 0.3], [0.2, 0.7, 0.5, 0.4]])
    >>> average_precision_at_k(y_true, scores, k=2)  # (1/2 + 1/1) / 2
    0.75
    """
    rel, nrel, kk = _relevance(y_true, scores, k)
    has = _nonempty_rows(nrel)
    relf = rel[has].astype(np.float64)
    prec = np.cumsum(relf, axis=1) / np.arange(1, kk + 1, dtype=np.float64)
    ap = (prec * relf).sum(axis=1) / np.minimum(kk, nrel[has])
    return float(np.mean(ap))


@fill_doc
def precision_at_recall(y_true: ArrayLike, scores: ArrayLike, recall: float) -> float:
    """Precision at the first threshold whose recall reaches ``recall``.

    ``y_true``: (n,) 0/1 or boolean (positives are 1/True); ``scores``: (n,). Examples
    are sorted by decreasing score and a block of tied scores forms one threshold (it
    enters the prediction as a whole). With TP(t) and N(t) the positives and all
    examples scoring ≥ t, and P the number of positives, this returns TP(t*) / N(t*)
    for the largest score t* with TP(t*) / P ≥ ``recall`` ("accuracy at the top" of
    TopPush / Pat&Mat). Requires 0 < recall ≤ 1 and at least one positive.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        0/1 or boolean labels; the positives are the 1s (True).
    scores : array_like of shape (n,)
        Finite real scores, higher meaning more likely positive (e.g. ``score_samples``
        of :class:`toprank.TopPush`).
    recall : float
        The recall to reach, ``0 < recall <= 1``.

    Returns
    -------
    float
        TP(t*) / N(t*), in (0, 1].

    Raises
    ------
    InvalidInputError
        ``scores`` not a non-empty 1-D real array or with NaN/inf; ``y_true`` not 1-D,
        of another length, not 0/1, or without a positive; ``recall`` not a real number
        in (0, 1].

    See Also
    --------
    precision_recall_curve : Every point of the curve.
    toprank.TopPush, toprank.TopPushK, toprank.PatMat : Rankers for the top.

    %(precision_recall_notes)s

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.metrics import precision_at_recall
    >>> y = np.array([1, 0, 1, 1, 0, 0])
    >>> scores = np.array([0.9, 0.8, 0.7, 0.3, 0.2, 0.1])
    >>> precision_at_recall(y, scores, 0.5)  # the top 3 hold 2 of the 3 positives
    0.6666666666666666
    >>> precision_at_recall(y, scores, 1.0)
    0.75
    """
    s = _scores(scores, 1)
    y = _as_array(y_true, "y_true")
    if y.ndim != 1:
        raise InvalidInputError(f"y_true: expected a 1-D array, got shape {y.shape}")
    if y.shape[0] != s.shape[0]:
        raise InvalidInputError(f"scores: expected {y.shape[0]} entries (one per label in y_true), got {s.shape[0]}")
    yb = _binary_values(y, "y_true")
    n_pos = int(np.count_nonzero(yb))
    if n_pos == 0:
        raise InvalidInputError("y_true: no positive examples, recall is undefined")
    if isinstance(recall, (bool, np.bool_)) or not isinstance(recall, (int, float, np.integer, np.floating)):
        raise InvalidInputError(f"recall: expected a real number, got {type(recall).__name__}")
    r = float(recall)
    if not 0.0 < r <= 1.0:  # also rejects NaN
        raise InvalidInputError(f"recall: must be in (0, 1], got {r}")

    _, tp, n_pred = _tie_blocks(yb, s)
    first = int(np.argmax(tp / n_pos >= r))  # exists: the last block has recall 1
    return float(tp[first]) / float(n_pred[first])


@fill_doc
def precision_recall_curve(
    y_true: ArrayLike, scores: ArrayLike, pos_label: object = None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[Any]]:
    """Precision and recall of the ranking by decreasing score, at every distinct score.

    For a threshold t, with TP(t) and N(t) the positives and all examples scoring ≥ t
    and P the number of positives (eq. (20) of the kernel ranking-at-the-top paper)::

        precision(t) = TP(t) / N(t),    recall(t) = TP(t) / P.

    The thresholds are the distinct values of ``scores``, so a block of tied scores
    enters the prediction as a whole.

    Output layout (that of :func:`sklearn.metrics.precision_recall_curve` with its
    defaults, whose values this reproduces exactly):

    * ``thresholds``: the m distinct scores in *increasing* order, with the dtype of
      ``scores`` (booleans as uint8);
    * ``precision``, ``recall``: float64 arrays of length m + 1; entry i < m is the
      point of ``thresholds[i]``, so recall is non-increasing from ``recall[0] = 1``
      (the lowest threshold predicts everything positive), and the last entry is the
      conventional end point precision 1, recall 0, which has no threshold (nothing is
      predicted positive).

    Consistency with :func:`precision_at_recall`: for 0 < r ≤ 1,
    ``precision_at_recall(y_true, scores, r) == precision[i]`` for the largest i < m
    with ``recall[i] >= r`` (the largest threshold reaching recall r), i.e. the value
    at r of the step function drawn by ``plot(recall, precision, drawstyle="steps-post")``.

    ``y_true``: (n,) binary labels. With ``pos_label=None`` they must lie in {0, 1} or
    {-1, 1} (or be booleans) and 1/True is the positive class; otherwise ``y_true``
    may hold any two labels (strings included) and ``pos_label`` names the positive one.
    ``scores``: (n,) finite real numbers, higher meaning more likely positive (e.g.
    ``score_samples`` of :class:`toprank.TopPush`). Both classes must be present:
    without positives recall is undefined, and without negatives the curve is
    degenerate (scikit-learn only warns in the first case and accepts the second).

    Parameters
    ----------
    y_true : array_like of shape (n,)
        Binary labels (see above).
    scores : array_like of shape (n,)
        Finite real scores, higher meaning more likely positive.
    pos_label : object, optional
        The positive label when ``y_true`` is not 0/1, -1/1 or boolean.

    Returns
    -------
    precision : ndarray of float64, shape (m + 1,)
        The precision at each threshold, then 1.
    recall : ndarray of float64, shape (m + 1,)
        The recall at each threshold (non-increasing from 1), then 0.
    thresholds : ndarray of shape (m,)
        The m distinct scores in increasing order, in the dtype of ``scores``.

    Raises
    ------
    InvalidInputError
        ``scores`` not a non-empty 1-D real array or with NaN/inf; ``y_true`` not 1-D,
        of another length, with more than two labels, labels outside {0, 1} / {-1, 1}
        without ``pos_label``, a ``pos_label`` that is not one of them, or a single class.

    See Also
    --------
    precision_at_recall : One point of the curve.
    toprank.plotting.plot_pr_curves : Draws these curves.

    %(precision_recall_notes)s

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.metrics import precision_recall_curve
    >>> precision, recall, thresholds = precision_recall_curve(
    ...     np.array([1, 0, 1, 1, 0, 0]), np.array([0.9, 0.8, 0.7, 0.3, 0.2, 0.1]))
    >>> np.round(precision, 3)
    array([0.5  , 0.6  , 0.75 , 0.667, 0.5  , 1.   , 1.   ])
    >>> np.round(recall, 3)
    array([1.   , 1.   , 1.   , 0.667, 0.333, 0.333, 0.   ])
    >>> thresholds
    array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    """
    s, yb = binary_scores(y_true, scores, pos_label)
    n_pos = int(np.count_nonzero(yb))
    if n_pos == 0:
        raise InvalidInputError("y_true: no positive examples (a single class), recall is undefined")
    if n_pos == yb.size:
        raise InvalidInputError("y_true: no negative examples (a single class), the curve is degenerate")
    thresholds, tp, n_pred = _tie_blocks(yb, s)
    precision: NDArray[np.float64] = np.append((tp / n_pred)[::-1], 1.0)
    recall: NDArray[np.float64] = np.append((tp / n_pos)[::-1], 0.0)
    return precision, recall, thresholds[::-1].copy()


def hamming_loss(y_true: object, y_pred: object) -> float:
    """Fraction of entries where two (n, L) 0/1 indicator matrices differ.

    Either argument may be a dense array-like or a scipy.sparse matrix/array (stored
    values must be 0/1). Equal to ``sklearn.metrics.hamming_loss`` on multilabel
    indicators.

    Parameters
    ----------
    y_true : array_like or scipy.sparse matrix of shape (n, L)
        The true 0/1 (or boolean) indicator matrix.
    y_pred : array_like or scipy.sparse matrix of shape (n, L)
        The predicted one, e.g. :meth:`toprank.MultiLabelSVC.predict`'s.

    Returns
    -------
    float
        The fraction of the n·L entries that differ, in [0, 1].

    Raises
    ------
    InvalidInputError
        Either argument not 2-D, empty, not 0/1, or of another shape than the other.

    See Also
    --------
    rank_loss : The ranking counterpart.

    Notes
    -----
    O(n·L) for dense input; O(nnz log nnz) when either is sparse (the stored entries
    are compared as sorted keys).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.metrics import hamming_loss
    >>> hamming_loss(np.array([[1, 0, 1, 0], [0, 1, 0, 0]]), np.array([[1, 0, 0, 0], [0, 1, 0, 1]]))
    0.25
    """
    shapes: list[tuple[int, ...]] = []
    sparse_any = _is_sparse(y_true) or _is_sparse(y_pred)
    dense: list[BoolArray] = []
    keysets: list[IntArray] = []
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        arr: NDArray[Any] | None = None
        if _is_sparse(y):
            sparse_structure(y, name)
            shape = tuple(int(d) for d in y.shape)  # type: ignore[attr-defined]
        else:
            arr = _as_array(y, name)
            shape = arr.shape
        if len(shape) != 2:
            raise InvalidInputError(f"{name}: expected an (n, L) indicator matrix, got shape {shape}")
        if shape[0] * shape[1] == 0:
            raise InvalidInputError(f"{name}: empty input, got shape {shape}")
        if shapes and shape != shapes[0]:
            raise InvalidInputError(f"{name}: expected shape {shapes[0]} matching y_true, got {shape}")
        shapes.append(shape)
        n, m = shape
        if arr is None:
            keys = _positive_keys(y, n, m)
            assert keys is not None
            keysets.append(keys)
        else:
            b = _binary_values(arr, name)
            if sparse_any:
                keysets.append(np.flatnonzero(b).astype(np.int64))  # row-major: row*m + col
            else:
                dense.append(b)
    n, m = int(shapes[0][0]), int(shapes[0][1])
    if dense:
        wrong = int(np.count_nonzero(dense[0] != dense[1]))
    else:
        a, b2 = keysets
        common = np.intersect1d(a, b2, assume_unique=True).size
        wrong = int(a.size + b2.size - 2 * common)
    return float(wrong) / (n * m)


def rank_loss(y_true: object, scores: ArrayLike) -> float:
    """The label ranking loss: the mean fraction of label pairs a row's scores misorder.

    The pairs are (relevant, irrelevant) label pairs, and the fractions are averaged over
    the rows.

    For row i with relevant labels Y_i and irrelevant labels N_i (the others),

        loss_i = #{(j, l) ∈ Y_i × N_i : s_il ≥ s_ij} / (#Y_i · #N_i),

    and the result is the mean of loss_i over all n rows. A tie counts as a wrong pair
    (an irrelevant label scored as high as a relevant one is not ranked below it), and a
    row with no relevant or no irrelevant label has loss 0 (no pair can be misordered)
    but still counts in the mean: both as in :func:`sklearn.metrics.label_ranking_loss`,
    which this equals. It is the quantity the multi-label hinge loss of
    :class:`toprank.MultiLabelSVC` bounds, and 0 exactly when every relevant label
    outscores every irrelevant one.

    Parameters
    ----------
    y_true : array-like, sparse matrix or list of label sets
        The relevant labels of the n rows: an (n, L) 0/1 indicator (dense or
        scipy.sparse) or a list of n label sets of column indices in [0, L) (see the
        module docs).
    scores : array-like of shape (n, L)
        Finite real scores, higher ranking first (e.g. ``decision_function``); float32
        scores are compared in float32, so ties are those of the given values.

    Returns
    -------
    float
        The mean of loss_i, in [0, 1]; lower is better.

    Raises
    ------
    InvalidInputError
        ``scores`` not a non-empty 2-D real array or with NaN/inf; ``y_true`` of another
        shape, not 0/1, or with a label outside [0, L).

    See Also
    --------
    hamming_loss : The fraction of wrong entries of a predicted indicator matrix.
    toprank.MultiLabelSVC : The estimator whose hinge loss bounds it.

    Notes
    -----
    One sort per row: O(n·L log L), in blocks of about 4 million scores.

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.metrics import rank_loss
    >>> scores = np.array([[0.9, 0.2, 0.5], [0.1, 0.8, 0.8]])
    >>> rank_loss(np.array([[1, 0, 1], [1, 0, 0]]), scores)  # row 1: both pairs wrong
    0.5
    >>> rank_loss([{0, 2}, {1}], scores)  # label sets; row 1: its tie with label 2 is wrong
    0.25
    """
    s = _scores(scores, 2)
    n, m = (int(d) for d in s.shape)
    keys = _positive_keys(y_true, n, m)
    yb: BoolArray | None = None
    if keys is None:
        y = _as_array(y_true, "y_true")
        if y.shape != (n, m):
            raise InvalidInputError(f"y_true: expected shape {(n, m)} matching scores, got {y.shape}")
        yb = _binary_values(y, "y_true")
    total = 0.0
    step = max(1, _BLOCK_ELEMS // m)
    for start in range(0, n, step):
        stop = min(n, start + step)
        if yb is not None:
            rel = yb[start:stop]
        else:
            assert keys is not None
            lo, hi = np.searchsorted(keys, [start * m, stop * m])
            rel = np.zeros((stop - start) * m, dtype=np.bool_)
            rel[keys[lo:hi] - start * m] = True
            rel = rel.reshape(stop - start, m)
        total += float(np.sum(_row_rank_losses(s[start:stop], rel)))
    return total / n


def _row_rank_losses(s: NDArray[Any], rel: BoolArray) -> NDArray[np.float64]:
    """loss_i of :func:`rank_loss` for each row of the block ``s`` with relevance ``rel``.

    Each row is sorted increasingly; a relevant label at sorted position q is misordered
    with every irrelevant label at or above its score, that is every irrelevant label
    except those strictly below it: those before the first position of q's tie block."""
    b, m = s.shape
    order = np.argsort(s, axis=1, kind="stable")
    ss = np.take_along_axis(s, order, axis=1)
    rs = np.take_along_axis(rel, order, axis=1)
    irrelevant = ~rs
    below: IntArray = np.cumsum(irrelevant, axis=1, dtype=np.int64) - irrelevant  # irrelevant labels before q
    positions = np.broadcast_to(np.arange(m), (b, m))
    new_block = np.ones((b, m), dtype=np.bool_)
    new_block[:, 1:] = ss[:, 1:] != ss[:, :-1]
    block_start = np.maximum.accumulate(np.where(new_block, positions, 0), axis=1)
    strictly_below: IntArray = np.take_along_axis(below, block_start, axis=1)
    n_neg = np.count_nonzero(irrelevant, axis=1)
    n_pos = m - n_neg
    wrong = np.sum(np.where(rs, n_neg[:, None] - strictly_below, 0), axis=1)
    pairs = n_pos * n_neg
    losses: NDArray[np.float64] = np.divide(wrong, pairs, out=np.zeros(b), where=pairs > 0)
    return losses
