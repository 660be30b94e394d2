"""Tests of toprank.metrics against scikit-learn and straightforward Python references."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import hamming_loss as sk_hamming_loss
from sklearn.metrics import precision_recall_curve as sk_precision_recall_curve
from sklearn.metrics import top_k_accuracy_score

from toprank import metrics
from toprank.exceptions import InvalidInputError

# ----------------------------------------------------------------------------- references


def ref_topk(row: np.ndarray, k: int) -> list[int]:
    """Top-k columns of one row: decreasing score, lower index first among ties."""
    return sorted(range(len(row)), key=lambda j: (-row[j], j))[:k]


def ref_ranking_metrics(sets: list[set[int]], scores: np.ndarray, k: int) -> tuple[float, float, float]:
    precisions, recalls, aps = [], [], []
    for rel, row in zip(sets, scores):
        top = ref_topk(row, k)
        hits = [j in rel for j in top]
        precisions.append(sum(hits) / k)
        if not rel:
            continue
        recalls.append(sum(hits) / len(rel))
        ap, seen = 0.0, 0
        for i, h in enumerate(hits, start=1):
            if h:
                seen += 1
                ap += seen / i
        aps.append(ap / min(k, len(rel)))
    return float(np.mean(precisions)), float(np.mean(recalls)), float(np.mean(aps))


def ref_precision_at_recall(y: np.ndarray, s: np.ndarray, recall: float) -> float:
    n_pos = int(y.sum())
    for t in sorted(set(s.tolist()), reverse=True):
        pred = s >= t
        tp = int((pred & (y == 1)).sum())
        if tp / n_pos >= recall:
            return tp / int(pred.sum())
    raise AssertionError("unreachable")


def sk_topk(y: Any, s: Any, k: int, labels: Any = None) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return float(top_k_accuracy_score(y, s, k=k, labels=labels))


def random_multilabel(
    rng: np.random.Generator, n: int, L: int, density: float, int_scores: bool
) -> tuple[np.ndarray, np.ndarray]:
    Y = (rng.random((n, L)) < density).astype(np.int64)
    S = rng.integers(0, 4, (n, L)).astype(np.float64) if int_scores else rng.standard_normal((n, L))
    return Y, S


# ----------------------------------------------------------------------------- top_k_accuracy


def test_top_k_accuracy_matches_sklearn_random_with_ties() -> None:
    rng = np.random.default_rng(0)
    for trial in range(60):
        m = int(rng.integers(3, 9))
        n = int(rng.integers(m, 60))
        y = np.concatenate([np.arange(m), rng.integers(0, m, n - m)])
        rng.shuffle(y)
        if trial % 3 == 0:
            s = rng.integers(0, 3, (n, m))  # heavy ties, integer dtype
        elif trial % 3 == 1:
            s = rng.integers(0, 4, (n, m)).astype(np.float32) / 4
        else:
            s = rng.standard_normal((n, m))
        for k in range(1, m + 1):
            assert metrics.top_k_accuracy(y, s, k) == sk_topk(y, s, k)


def test_top_k_accuracy_matches_sklearn_with_labels() -> None:
    rng = np.random.default_rng(1)
    for _ in range(40):
        m = int(rng.integers(3, 8))
        n = int(rng.integers(1, 40))
        # Non-contiguous numeric labels, not all present in y_true.
        labels = np.sort(rng.choice(100, size=m, replace=False))
        y = labels[rng.integers(0, m, n)]
        s = rng.integers(0, 3, (n, m)).astype(np.float64)
        for k in range(1, m + 1):
            assert metrics.top_k_accuracy(y, s, k, labels=labels) == sk_topk(y, s, k, labels=labels)
    # String labels.
    labels_s = np.array(["ant", "bee", "cat", "dog"])
    y_s = labels_s[rng.integers(0, 4, 30)]
    s = rng.integers(0, 2, (30, 4))
    for k in range(1, 5):
        assert metrics.top_k_accuracy(y_s, s, k, labels=labels_s) == sk_topk(y_s, s, k, labels=labels_s)
        assert metrics.top_k_accuracy(list(y_s), s.tolist(), k, labels=list(labels_s)) == sk_topk(
            y_s, s, k, labels=labels_s
        )


def test_top_k_accuracy_unsorted_labels_map_columns() -> None:
    # sklearn rejects unsorted labels; here column j belongs to labels[j].
    s = np.array([[0.1, 0.7, 0.2], [0.6, 0.3, 0.1]])
    assert metrics.top_k_accuracy([20, 30], s, 1, labels=[30, 20, 10]) == 1.0
    assert metrics.top_k_accuracy([10, 10], s, 1, labels=[30, 20, 10]) == 0.0


def test_top_k_accuracy_hand_examples() -> None:
    y = [0, 1, 2, 2]
    s = [[0.5, 0.2, 0.2], [0.3, 0.4, 0.2], [0.2, 0.4, 0.3], [0.7, 0.2, 0.1]]
    assert metrics.top_k_accuracy(y, s, 2) == 0.75
    assert metrics.top_k_accuracy(y, s, 1) == 0.5
    assert metrics.top_k_accuracy(y, s, 3) == 1.0
    # Ties: sklearn's convention ranks the higher column index first.
    tie = [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]
    assert metrics.top_k_accuracy([0, 1, 2], tie, 1) == 2 / 3  # rows 2 and 3 hit, row 1 misses


def test_top_k_accuracy_binary_matches_sklearn() -> None:
    rng = np.random.default_rng(2)
    for _ in range(20):
        n = 30
        y = rng.integers(0, 2, n)
        y[:2] = [0, 1]
        for s in (rng.random(n), rng.standard_normal(n), np.round(rng.random(n) * 2) / 2):
            for k in (1, 2):
                assert metrics.top_k_accuracy(y, s, k) == sk_topk(y, s, k)
                assert metrics.top_k_accuracy(y, s[:, None], k) == sk_topk(y, s[:, None], k)
        ys = np.where(y == 1, "pos", "neg")
        s = rng.standard_normal(n)
        assert metrics.top_k_accuracy(ys, s, 1) == sk_topk(ys, s, 1)
        assert metrics.top_k_accuracy(ys, s, 1, labels=["neg", "pos"]) == sk_topk(ys, s, 1, labels=["neg", "pos"])


def test_top_k_accuracy_multiblock(monkeypatch: pytest.MonkeyPatch) -> None:
    # Many internal row blocks: check against sklearn.
    monkeypatch.setattr(metrics, "_BLOCK_ELEMS", 5000)
    rng = np.random.default_rng(3)
    n, m = 3000, 700
    s = rng.integers(0, 50, (n, m)).astype(np.float32)
    y = np.concatenate([np.arange(m), rng.integers(0, m, n - m)])
    assert metrics.top_k_accuracy(y, s, 5) == sk_topk(y, s, 5)


# ----------------------------------------------------------------------------- P/R/AP at k


@pytest.mark.parametrize("int_scores", [False, True])
def test_ranking_metrics_match_reference_all_formats(int_scores: bool) -> None:
    rng = np.random.default_rng(4)
    for _trial in range(25):
        n, L = int(rng.integers(1, 25)), int(rng.integers(1, 12))
        Y, S = random_multilabel(rng, n, L, density=float(rng.uniform(0.05, 0.6)), int_scores=int_scores)
        Y[0, rng.integers(0, L)] = 1  # at least one relevant label somewhere
        sets = [set(np.flatnonzero(r).tolist()) for r in Y]
        formats: list[Any] = [
            Y,
            Y.astype(bool),
            Y.astype(np.float32),
            sp.csr_matrix(Y),
            sp.csc_array(Y),
            sp.coo_matrix(Y),
            sets,
            [sorted(x) for x in sets],
            tuple(np.array(sorted(x), dtype=np.int32) for x in sets),
        ]
        for k in range(1, L + 1):
            p_ref, r_ref, ap_ref = ref_ranking_metrics(sets, S, k)
            for y in formats:
                assert metrics.precision_at_k(y, S, k) == pytest.approx(p_ref, rel=1e-12, abs=0)
                assert metrics.recall_at_k(y, S, k) == pytest.approx(r_ref, rel=1e-12, abs=0)
                assert metrics.average_precision_at_k(y, S, k) == pytest.approx(ap_ref, rel=1e-12, abs=0)


def test_ranking_metrics_formats_identical_multiblock(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tiny internal blocks (a few rows each) and many ties at the k boundary.
    monkeypatch.setattr(metrics, "_BLOCK_ELEMS", 1000)
    rng = np.random.default_rng(5)
    n, L = 400, 300
    Y = rng.random((n, L)) < 0.02
    S = rng.integers(0, 10, (n, L)).astype(np.float32)
    sets = [np.flatnonzero(r).tolist() for r in Y]
    fns = (metrics.precision_at_k, metrics.recall_at_k, metrics.average_precision_at_k)
    for k in (1, 7, 40):
        expected = ref_ranking_metrics([set(x) for x in sets], S, k)
        dense = [f(Y, S, k) for f in fns]
        assert dense == pytest.approx(list(expected), rel=1e-12)
        for y in (sp.csr_matrix(Y), sets):
            assert [f(y, S, k) for f in fns] == dense


def test_ranking_metrics_large_smoke() -> None:
    rng = np.random.default_rng(8)
    n, L = 1500, 2000
    Y = rng.random((n, L)) < 0.004
    S = rng.integers(0, 20, (n, L)).astype(np.float32)
    sets = [np.flatnonzero(r).tolist() for r in Y]
    for f in (metrics.precision_at_k, metrics.recall_at_k, metrics.average_precision_at_k):
        assert f(Y, S, 5) == f(sp.csr_matrix(Y), S, 5) == f(sets, S, 5)


def test_ranking_metrics_hand_examples() -> None:
    s = [[0.9, 0.1, 0.5, 0.3], [0.2, 0.8, 0.8, 0.1]]
    y = [{0, 3}, {2}]
    # Row 0 ranks 0, 2, 3, 1; row 1 ranks 1, 2 (tie: lower index first), 0, 3.
    assert metrics.precision_at_k(y, s, 2) == 0.5  # (1/2 + 1/2) / 2
    assert metrics.recall_at_k(y, s, 2) == 0.75  # (1/2 + 1/1) / 2
    assert metrics.average_precision_at_k(y, s, 2) == 0.5  # (1/2 + (1/2)/1) / 2
    assert metrics.precision_at_k(y, s, 3) == pytest.approx(0.5)  # (2/3 + 1/3) / 2
    assert metrics.recall_at_k(y, s, 3) == 1.0
    assert metrics.average_precision_at_k(y, s, 3) == pytest.approx(2 / 3)  # ((1 + 2/3)/2 + 1/2) / 2
    assert metrics.precision_at_k(y, s, 1) == 0.5
    assert metrics.average_precision_at_k(y, s, 1) == 0.5  # (1/1 + 0) / 2
    # An empty row counts in precision (as 0) and is skipped by recall and AP.
    s3 = s + [[0.0, 0.0, 0.0, 0.0]]
    y3 = y + [set()]
    assert metrics.precision_at_k(y3, s3, 2) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(y3, s3, 2) == 0.75
    assert metrics.average_precision_at_k(y3, s3, 2) == 0.5
    # Tie at the k boundary: the lower index wins.
    assert metrics.precision_at_k([[0]], [[0.0, 0.0, 0.0]], 1) == 1.0
    assert metrics.precision_at_k([[1]], [[0.0, 0.0, 0.0]], 1) == 0.0
    assert metrics.precision_at_k([[1]], [[0.0, 0.0, 0.0]], 2) == 0.5
    assert metrics.precision_at_k([[1]], [[0.0, 1.0, 1.0, 0.0]], 1) == 1.0
    assert metrics.precision_at_k([[2]], [[0.0, 1.0, 1.0, 0.0]], 1) == 0.0
    assert metrics.precision_at_k([[2]], [[0.0, 0.0, 0.0]], 2) == 0.0
    assert metrics.precision_at_k(np.array([[0, 0, 1]]), [[0.0, 0.0, 0.0]], 2) == 0.0
    # Duplicates in a label set are ignored; explicit sparse zeros are not labels.
    assert metrics.recall_at_k([[0, 0, 2]], [[3.0, 2.0, 1.0]], 1) == 0.5
    sparse_zero = sp.csr_matrix((np.array([0, 1]), np.array([0, 2]), np.array([0, 2])), shape=(1, 3))
    assert metrics.recall_at_k(sparse_zero, [[3.0, 2.0, 1.0]], 1) == 0.0


def test_ranking_metrics_integer_and_bool_scores() -> None:
    Y = np.array([[1, 0, 0, 1], [0, 1, 0, 0]])
    S_float = np.array([[4.0, 1.0, 3.0, 2.0], [0.0, 9.0, 9.0, 0.0]])
    for S in (S_float.astype(np.int64), S_float.astype(np.uint8), S_float.astype(np.float32)):
        for k in (1, 2, 3, 4):
            assert metrics.average_precision_at_k(Y, S, k) == metrics.average_precision_at_k(Y, S_float, k)
    assert metrics.precision_at_k(Y, S_float > 2.5, 1) == 1.0


# ----------------------------------------------------------------------------- precision_at_recall


def test_precision_at_recall_hand_example() -> None:
    s = [0.9, 0.8, 0.8, 0.7, 0.6]
    y = [1, 0, 1, 0, 1]
    # Thresholds: {0}: TP 1/N 1 (recall 1/3); {1,2} tied: 2/3 (2/3); {3}: 2/4; {4}: 3/5 (1).
    assert metrics.precision_at_recall(y, s, 0.3) == 1.0
    assert metrics.precision_at_recall(y, s, 1 / 3) == 1.0
    assert metrics.precision_at_recall(y, s, 0.5) == pytest.approx(2 / 3)
    assert metrics.precision_at_recall(y, s, 2 / 3) == pytest.approx(2 / 3)
    assert metrics.precision_at_recall(y, s, 0.7) == pytest.approx(0.6)
    assert metrics.precision_at_recall(np.array(y, dtype=bool), s, 1) == pytest.approx(0.6)


def test_precision_at_recall_matches_brute_force() -> None:
    rng = np.random.default_rng(6)
    for trial in range(150):
        n = int(rng.integers(1, 40))
        y = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(np.int64)
        y[rng.integers(0, n)] = 1
        s = rng.integers(0, 6, n).astype(np.float64) if trial % 2 else rng.standard_normal(n)
        for r in (1e-9, 0.1, 0.25, 1 / 3, 0.5, 2 / 3, 0.8, 0.999, 1.0, float(rng.uniform(0, 1))):
            assert metrics.precision_at_recall(y, s, r) == pytest.approx(ref_precision_at_recall(y, s, r), rel=1e-15)


# ----------------------------------------------------------------------------- precision_recall_curve


def random_binary_scores(rng: np.random.Generator, trial: int) -> tuple[np.ndarray, np.ndarray]:
    """0/1 labels with both classes and scores with (for most trials) many ties."""
    n = int(rng.integers(2, 60))
    y = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(np.int64)
    y[rng.choice(n, 2, replace=False)] = [0, 1]
    kind = trial % 4
    if kind == 0:
        s: np.ndarray = rng.integers(0, 5, n).astype(np.float64)  # heavy ties
    elif kind == 1:
        s = rng.integers(-3, 3, n)  # integer dtype
    elif kind == 2:
        s = (np.round(rng.random(n) * 8) / 8).astype(np.float32)
    else:
        s = rng.standard_normal(n)  # (almost surely) no ties
    return y, s


def sk_curve(y: Any, s: Any, pos_label: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p, r, t = sk_precision_recall_curve(y, s, pos_label=pos_label)
    return np.asarray(p), np.asarray(r), np.asarray(t)


def test_precision_recall_curve_hand_example_with_ties() -> None:
    s = [0.9, 0.8, 0.8, 0.7, 0.6]
    y = [1, 0, 1, 0, 1]
    p, r, t = metrics.precision_recall_curve(y, s)
    # Thresholds ascending; the tied 0.8 block is one point (TP 2, N 3); then (1, 0).
    assert t.tolist() == [0.6, 0.7, 0.8, 0.9]
    assert p.tolist() == pytest.approx([3 / 5, 2 / 4, 2 / 3, 1 / 1, 1.0], rel=1e-15)
    assert r.tolist() == pytest.approx([1.0, 2 / 3, 2 / 3, 1 / 3, 0.0], rel=1e-15)
    assert p.dtype == r.dtype == np.float64
    # All tied: one threshold, predicting everything.
    p, r, t = metrics.precision_recall_curve([0, 1, 1], [2, 2, 2])
    assert t.tolist() == [2] and p.tolist() == pytest.approx([2 / 3, 1.0]) and r.tolist() == [1.0, 0.0]


def test_precision_recall_curve_matches_sklearn_random_with_ties() -> None:
    rng = np.random.default_rng(10)
    for trial in range(120):
        y, s = random_binary_scores(rng, trial)
        p, r, t = metrics.precision_recall_curve(y, s)
        sp_, sr, st = sk_curve(y, s)
        # Same points, same order, same floating-point values.
        assert np.array_equal(p, sp_) and np.array_equal(r, sr) and np.array_equal(t, st)
        assert t.dtype == s.dtype
        assert len(p) == len(r) == len(t) + 1 == len(np.unique(s)) + 1
        # Other encodings of the same labels.
        for yy in (y.astype(bool), y.astype(np.float32), 2 * y - 1, y.tolist()):
            p2, r2, t2 = metrics.precision_recall_curve(yy, s.tolist() if trial % 2 else s)
            assert np.array_equal(p2, p) and np.array_equal(r2, r) and np.array_equal(t2, t)


def test_precision_recall_curve_follows_definition_20() -> None:
    rng = np.random.default_rng(11)
    for trial in range(40):
        y, s = random_binary_scores(rng, trial)
        p, r, t = metrics.precision_recall_curve(y, s)
        assert np.all(np.diff(t) > 0) and np.all(np.diff(r) <= 0)
        assert (p[-1], r[-1], r[0]) == (1.0, 0.0, 1.0)
        n_pos = int(y.sum())
        for i, thr in enumerate(t):
            pred = s >= thr
            tp = int((pred & (y == 1)).sum())
            assert p[i] == tp / int(pred.sum())
            assert r[i] == tp / n_pos


def test_precision_recall_curve_pos_label_matches_sklearn() -> None:
    rng = np.random.default_rng(12)
    for trial in range(30):
        y, s = random_binary_scores(rng, trial)
        names = np.where(y == 1, "cat", "dog")
        for pos in ("cat", "dog"):
            got = metrics.precision_recall_curve(names, s, pos_label=pos)
            for a, b in zip(got, sk_curve(names, s, pos_label=pos)):
                assert np.array_equal(a, b)
        # pos_label=0 makes the 0s positive; pos_label=1 is the default.
        flipped = metrics.precision_recall_curve(y, s, pos_label=0)
        for a, b in zip(flipped, metrics.precision_recall_curve(1 - y, s)):
            assert np.array_equal(a, b)
        for a, b in zip(metrics.precision_recall_curve(y, s, pos_label=1), metrics.precision_recall_curve(y, s)):
            assert np.array_equal(a, b)
        plus_minus = metrics.precision_recall_curve(2 * y - 1, s, pos_label=-1)
        for a, b in zip(plus_minus, sk_curve(2 * y - 1, s, pos_label=-1)):
            assert np.array_equal(a, b)


def test_precision_recall_curve_consistent_with_precision_at_recall() -> None:
    # precision_at_recall(r) is the precision of the largest threshold with recall >= r:
    # on the curve (thresholds ascending), the last index i < m with recall[i] >= r.
    rng = np.random.default_rng(13)
    for trial in range(80):
        y, s = random_binary_scores(rng, trial)
        p, r, t = metrics.precision_recall_curve(y, s)
        levels = np.concatenate([r[:-1], [1e-9, 0.1, 0.25, 1 / 3, 0.5, 0.8, 1.0], rng.uniform(0, 1, 5)])
        for level in levels:
            if level <= 0:
                continue
            i = int(np.flatnonzero(r[:-1] >= level)[-1])
            assert metrics.precision_at_recall(y, s, float(level)) == p[i]
            assert metrics.precision_at_recall(y, s, float(level)) == ref_precision_at_recall(y, s, float(level))


def test_precision_recall_curve_does_not_modify_inputs() -> None:
    y = np.array([1, 0, 1, 0])
    s = np.array([0.3, 0.3, 0.1, 0.2])
    y0, s0 = y.copy(), s.copy()
    _, _, t = metrics.precision_recall_curve(y, s)
    t[0] = 99.0  # the thresholds are a new array
    assert np.array_equal(y, y0) and np.array_equal(s, s0)


# ----------------------------------------------------------------------------- hamming_loss


def test_hamming_loss_hand_example() -> None:
    assert metrics.hamming_loss([[1, 0, 1], [0, 0, 1]], [[1, 1, 1], [0, 0, 0]]) == pytest.approx(1 / 3)


def test_hamming_loss_matches_sklearn() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        n, L = int(rng.integers(1, 30)), int(rng.integers(2, 15))  # sklearn: 1 sparse column is "binary"
        A = (rng.random((n, L)) < 0.3).astype(np.int64)
        B = (rng.random((n, L)) < 0.3).astype(np.int64)
        expected = sk_hamming_loss(A, B)
        assert metrics.hamming_loss(A, B) == pytest.approx(expected, rel=1e-15)
        assert metrics.hamming_loss(A.astype(bool), B.astype(np.float32)) == pytest.approx(expected, rel=1e-15)
        assert metrics.hamming_loss(sp.csr_matrix(A), sp.csr_matrix(B)) == pytest.approx(
            sk_hamming_loss(sp.csr_matrix(A), sp.csr_matrix(B)), rel=1e-15
        )
        assert metrics.hamming_loss(sp.csc_array(A), B) == pytest.approx(expected, rel=1e-15)
        assert metrics.hamming_loss(A.tolist(), sp.coo_matrix(B)) == pytest.approx(expected, rel=1e-15)


# ----------------------------------------------------------------------------- bad input

S3 = np.array([[0.1, 0.5, 0.2], [0.3, 0.2, 0.9]])
Y3 = np.array([[1, 0, 0], [0, 0, 1]])
NAN3 = np.array([[0.1, np.nan, 0.2], [0.3, 0.2, 0.9]])
INF3 = np.array([[0.1, np.inf, 0.2], [0.3, 0.2, 0.9]])

BAD_CALLS: list[tuple[str, str, Any]] = [
    # top_k_accuracy
    ("tka k too large", "k", lambda: metrics.top_k_accuracy([0, 2], S3, 4, labels=[0, 1, 2])),
    ("tka k zero", "k", lambda: metrics.top_k_accuracy([0, 2], S3, 0, labels=[0, 1, 2])),
    ("tka k float", "k", lambda: metrics.top_k_accuracy([0, 2], S3, 1.5, labels=[0, 1, 2])),
    ("tka k bool", "k", lambda: metrics.top_k_accuracy([0, 2], S3, True, labels=[0, 1, 2])),
    ("tka nan", "scores", lambda: metrics.top_k_accuracy([0, 2], NAN3, 1, labels=[0, 1, 2])),
    ("tka inf", "scores", lambda: metrics.top_k_accuracy([0, 2], INF3, 1, labels=[0, 1, 2])),
    ("tka complex", "scores", lambda: metrics.top_k_accuracy([0, 2], S3.astype(complex), 1, labels=[0, 1, 2])),
    ("tka string scores", "scores", lambda: metrics.top_k_accuracy([0, 2], [["a", "b", "c"]] * 2, 1, labels=[0, 1, 2])),
    ("tka row mismatch", "scores", lambda: metrics.top_k_accuracy([0, 1, 2], S3, 1)),
    ("tka 3d scores", "scores", lambda: metrics.top_k_accuracy([0, 2], S3[None], 1)),
    ("tka empty", "y_true", lambda: metrics.top_k_accuracy([], np.zeros((0, 3)), 1)),
    ("tka missing classes", "y_true", lambda: metrics.top_k_accuracy([0, 2], S3, 1)),
    ("tka label not in labels", "y_true", lambda: metrics.top_k_accuracy([0, 5], S3, 1, labels=[0, 1, 2])),
    ("tka labels wrong count", "labels", lambda: metrics.top_k_accuracy([0, 1], S3, 1, labels=[0, 1])),
    ("tka labels duplicate", "labels", lambda: metrics.top_k_accuracy([0, 1], S3, 1, labels=[0, 1, 1])),
    ("tka y 2d", "y_true", lambda: metrics.top_k_accuracy([[0, 1], [1, 0]], S3, 1)),
    ("tka y continuous", "y_true", lambda: metrics.top_k_accuracy([0.5, 1.0], S3, 1)),
    ("tka y complex", "y_true", lambda: metrics.top_k_accuracy(np.array([0, 1j]), S3, 1)),
    ("tka mixed types", "y_true", lambda: metrics.top_k_accuracy(["a", "b"], S3, 1, labels=[0, 1, 2])),
    ("tka binary one class", "y_true", lambda: metrics.top_k_accuracy([1, 1], [0.2, 0.3], 1)),
    ("tka binary k", "k", lambda: metrics.top_k_accuracy([0, 1], [0.2, 0.3], 3)),
    # P/R/AP at k
    *[
        (f"{f.__name__} {case}", arg, (lambda f=f, y=y, s=s, k=k: f(y, s, k)))
        for f in (metrics.precision_at_k, metrics.recall_at_k, metrics.average_precision_at_k)
        for case, arg, y, s, k in [
            ("k large", "k", Y3, S3, 4),
            ("k zero", "k", Y3, S3, 0),
            ("k str", "k", Y3, S3, "2"),
            ("nan", "scores", Y3, NAN3, 1),
            ("inf", "scores", Y3, INF3, 1),
            ("complex", "scores", Y3, S3 + 0j, 1),
            ("1d scores", "scores", Y3, S3[0], 1),
            ("empty", "scores", np.zeros((0, 3)), np.zeros((0, 3)), 1),
            ("empty cols", "scores", np.zeros((2, 0)), np.zeros((2, 0)), 1),
            ("shape mismatch", "y_true", Y3[:, :2], S3, 1),
            ("sparse shape mismatch", "y_true", sp.csr_matrix(Y3[:1]), S3, 1),
            ("not 0/1", "y_true", Y3 * 2, S3, 1),
            ("sparse not 0/1", "y_true", sp.csr_matrix(Y3 * 2), S3, 1),
            ("sparse complex", "y_true", sp.csr_matrix(Y3.astype(complex)), S3, 1),
            ("dense complex", "y_true", Y3.astype(complex), S3, 1),
            ("too few sets", "y_true", [{0}], S3, 1),
            ("label out of range", "y_true", [{0}, {3}], S3, 1),
            ("negative label", "y_true", [{0}, {-1}], S3, 1),
            ("float label", "y_true", [[0.5], [1]], S3, 1),
            ("non-iterable set", "y_true", [0, 1], S3, 1),
        ]
    ],
    ("recall all empty", "y_true", lambda: metrics.recall_at_k([set(), set()], S3, 1)),
    ("ap all empty", "y_true", lambda: metrics.average_precision_at_k(np.zeros((2, 3)), S3, 1)),
    # precision_at_recall
    ("par no positives", "y_true", lambda: metrics.precision_at_recall([0, 0, 0], [0.1, 0.2, 0.3], 0.5)),
    ("par not 0/1", "y_true", lambda: metrics.precision_at_recall([0, 2, 1], [0.1, 0.2, 0.3], 0.5)),
    ("par y 2d", "y_true", lambda: metrics.precision_at_recall([[0, 1, 1]], [0.1, 0.2, 0.3], 0.5)),
    ("par length mismatch", "scores", lambda: metrics.precision_at_recall([0, 1], [0.1, 0.2, 0.3], 0.5)),
    ("par nan", "scores", lambda: metrics.precision_at_recall([0, 1], [0.1, np.nan], 0.5)),
    ("par inf", "scores", lambda: metrics.precision_at_recall([0, 1], [0.1, -np.inf], 0.5)),
    ("par complex", "scores", lambda: metrics.precision_at_recall([0, 1], [0.1, 1j], 0.5)),
    ("par 2d scores", "scores", lambda: metrics.precision_at_recall([0, 1], [[0.1, 0.2]], 0.5)),
    ("par empty", "scores", lambda: metrics.precision_at_recall([], [], 0.5)),
    ("par recall zero", "recall", lambda: metrics.precision_at_recall([0, 1], [0.1, 0.2], 0.0)),
    ("par recall > 1", "recall", lambda: metrics.precision_at_recall([0, 1], [0.1, 0.2], 1.5)),
    ("par recall nan", "recall", lambda: metrics.precision_at_recall([0, 1], [0.1, 0.2], float("nan"))),
    ("par recall str", "recall", lambda: metrics.precision_at_recall([0, 1], [0.1, 0.2], "0.5")),
    # precision_recall_curve
    ("prc all negative", "y_true", lambda: metrics.precision_recall_curve([0, 0, 0], [0.1, 0.2, 0.3])),
    ("prc all positive", "y_true", lambda: metrics.precision_recall_curve([1, 1, 1], [0.1, 0.2, 0.3])),
    ("prc one string class", "y_true", lambda: metrics.precision_recall_curve(["a", "a"], [0.1, 0.2], pos_label="a")),
    ("prc nan", "scores", lambda: metrics.precision_recall_curve([0, 1], [0.1, np.nan])),
    ("prc inf", "scores", lambda: metrics.precision_recall_curve([0, 1], [np.inf, 0.2])),
    ("prc complex", "scores", lambda: metrics.precision_recall_curve([0, 1], [0.1, 1j])),
    ("prc string scores", "scores", lambda: metrics.precision_recall_curve([0, 1], ["a", "b"])),
    ("prc 2d scores", "scores", lambda: metrics.precision_recall_curve([0, 1], [[0.1, 0.2]])),
    ("prc empty", "scores", lambda: metrics.precision_recall_curve([], [])),
    ("prc length mismatch", "scores", lambda: metrics.precision_recall_curve([0, 1], [0.1, 0.2, 0.3])),
    ("prc y 2d", "y_true", lambda: metrics.precision_recall_curve([[0, 1]], [0.1, 0.2])),
    ("prc three classes", "y_true", lambda: metrics.precision_recall_curve([0, 1, 2], [0.1, 0.2, 0.3])),
    ("prc three strings", "y_true", lambda: metrics.precision_recall_curve(["a", "b", "c"], [1, 2, 3], pos_label="a")),
    ("prc not 0/1", "y_true", lambda: metrics.precision_recall_curve([0, 2, 2], [0.1, 0.2, 0.3])),
    ("prc -1/0", "y_true", lambda: metrics.precision_recall_curve([-1, 0, 0], [0.1, 0.2, 0.3])),
    ("prc strings no pos_label", "y_true", lambda: metrics.precision_recall_curve(["a", "b"], [0.1, 0.2])),
    ("prc nan label", "y_true", lambda: metrics.precision_recall_curve([0.0, np.nan, 1.0], [0.1, 0.2, 0.3])),
    ("prc complex label", "y_true", lambda: metrics.precision_recall_curve(np.array([0, 1j]), [0.1, 0.2])),
    (
        "prc mixed labels",
        "y_true",
        lambda: metrics.precision_recall_curve(np.array(["a", 1], dtype=object), [0.1, 0.2], pos_label=1),
    ),
    ("prc ragged labels", "y_true", lambda: metrics.precision_recall_curve([[0, 1], [1]], [0.1, 0.2])),
    ("prc pos_label absent", "pos_label", lambda: metrics.precision_recall_curve([0, 1], [0.1, 0.2], pos_label=2)),
    ("prc pos_label type", "pos_label", lambda: metrics.precision_recall_curve(["a", "b"], [0.1, 0.2], pos_label=1)),
    # hamming_loss
    ("hl shape mismatch", "y_pred", lambda: metrics.hamming_loss(Y3, Y3[:, :2])),
    ("hl sparse shape mismatch", "y_pred", lambda: metrics.hamming_loss(Y3, sp.csr_matrix(Y3[:1]))),
    ("hl 1d", "y_true", lambda: metrics.hamming_loss([0, 1], [0, 1])),
    ("hl empty", "y_true", lambda: metrics.hamming_loss(np.zeros((0, 3)), np.zeros((0, 3)))),
    ("hl not 0/1", "y_pred", lambda: metrics.hamming_loss(Y3, Y3 * 3)),
    ("hl sparse not 0/1", "y_true", lambda: metrics.hamming_loss(sp.csr_matrix(Y3 * 3), Y3)),
    ("hl complex", "y_true", lambda: metrics.hamming_loss(Y3 + 0j, Y3)),
    ("hl ragged", "y_true", lambda: metrics.hamming_loss([[0, 1], [1]], Y3)),
    # rank_loss
    ("rl nan", "scores", lambda: metrics.rank_loss(Y3, NAN3)),
    ("rl inf", "scores", lambda: metrics.rank_loss(Y3, INF3)),
    ("rl 1d scores", "scores", lambda: metrics.rank_loss(Y3, S3[0])),
    ("rl empty", "scores", lambda: metrics.rank_loss(np.zeros((0, 3)), np.zeros((0, 3)))),
    ("rl shape mismatch", "y_true", lambda: metrics.rank_loss(Y3[:, :2], S3)),
    ("rl sparse shape mismatch", "y_true", lambda: metrics.rank_loss(sp.csr_matrix(Y3[:1]), S3)),
    ("rl not 0/1", "y_true", lambda: metrics.rank_loss(Y3 * 2, S3)),
    ("rl label out of range", "y_true", lambda: metrics.rank_loss([{0}, {3}], S3)),
    ("rl too few sets", "y_true", lambda: metrics.rank_loss([{0}], S3)),
]


@pytest.mark.parametrize(("case", "arg", "call"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_naming_argument(case: str, arg: str, call: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        call()
    assert str(info.value).startswith(f"{arg}: "), str(info.value)
    assert isinstance(info.value, ValueError)


def _sk_rank_loss(Y: Any, S: Any) -> float:
    from sklearn.metrics import label_ranking_loss

    return float(label_ranking_loss(Y, S))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rank_loss_matches_sklearn_with_ties_and_degenerate_rows(dtype: Any) -> None:
    # Integer-valued scores make ties common; rows with no and with all labels occur.
    rng = np.random.default_rng(11)
    for _ in range(300):
        n, L = int(rng.integers(2, 25)), int(rng.integers(2, 12))
        S = rng.integers(0, 4, (n, L)).astype(dtype)
        Y = (rng.random((n, L)) < rng.random()).astype(np.int64)
        Y[0], Y[1] = 0, 1  # no label, all labels: loss 0, counted in the mean
        expected = _sk_rank_loss(Y, S)
        assert metrics.rank_loss(Y, S) == pytest.approx(expected, rel=1e-12, abs=1e-15)
        sets = [np.flatnonzero(r).tolist() for r in Y]
        for y in (Y.astype(bool), sp.csr_matrix(Y), sets):
            assert metrics.rank_loss(y, S) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_rank_loss_float32_ties_are_those_of_float32() -> None:
    # Two float64 scores that round to the same float32: a tie (a wrong pair) in float32
    # only, as sklearn compares them.
    a, b = 1.0, 1.0 + 2.0**-30
    S64 = np.array([[a, b]])
    Y = np.array([[0, 1]])
    assert metrics.rank_loss(Y, S64) == 0.0
    assert metrics.rank_loss(Y, S64.astype(np.float32)) == 1.0 == _sk_rank_loss(Y, S64.astype(np.float32))


def test_rank_loss_many_labels_multiblock(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(12)
    n, L = 300, 1000
    Y = rng.random((n, L)) < 0.01
    Y[np.arange(n), rng.integers(0, L, n)] = True
    S = rng.integers(0, 50, (n, L)).astype(np.float32)
    expected = _sk_rank_loss(Y, S)
    assert metrics.rank_loss(Y, S) == pytest.approx(expected, rel=1e-12)
    monkeypatch.setattr(metrics, "_BLOCK_ELEMS", 7 * L)  # 7 rows per block, a partial last block
    sets = [np.flatnonzero(r).tolist() for r in Y]
    for y in (Y, sp.csr_matrix(Y), sets):
        assert metrics.rank_loss(y, S) == pytest.approx(expected, rel=1e-12)


def test_rank_loss_hand_examples() -> None:
    S = np.array([[3.0, 1.0, 2.0, 0.0]])
    assert metrics.rank_loss(np.array([[1, 0, 1, 0]]), S) == 0.0  # both relevant on top
    assert metrics.rank_loss(np.array([[0, 1, 0, 1]]), S) == 1.0  # both at the bottom
    assert metrics.rank_loss(np.array([[1, 1, 0, 0]]), S) == 0.25  # (1, 2) is the one wrong pair of 4
    assert metrics.rank_loss([{0}], np.zeros((1, 4))) == 1.0  # all tied: every pair is wrong


def test_rank_loss_docstring_examples_run() -> None:
    # The repository runs no doctest collection; the Examples of rank_loss are checked here.
    import doctest

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(metrics.rank_loss, "rank_loss", globs={}):
        runner.run(test)
    assert runner.summarize(verbose=False).attempted >= 3
    assert runner.summarize(verbose=False).failed == 0


def test_k_message_format() -> None:
    with pytest.raises(InvalidInputError, match=r"^k: must be in \[1, 5\], got 7$"):
        metrics.precision_at_k(np.eye(2, 5), np.zeros((2, 5)), 7)


def test_inputs_not_modified() -> None:
    S = np.array([[0.3, 0.3, 0.1], [0.2, 0.5, 0.5]])
    Y = sp.csr_matrix(np.array([[1, 0, 0], [0, 0, 1]]))
    S0, Y0 = S.copy(), Y.toarray()
    metrics.average_precision_at_k(Y, S, 2)
    metrics.hamming_loss(Y, Y0)
    assert np.array_equal(S, S0) and np.array_equal(Y.toarray(), Y0)
