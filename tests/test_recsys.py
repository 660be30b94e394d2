"""Tests of toprank.recsys: the Rankmax paper's implicit-feedback protocol (per-user
80/10/10 split, AP@10 / accuracy / Recall@100 with training items excluded).

The metrics are checked on hand-computed examples (exclusion, ties, skipped rows) and
against a straightforward Python reference; the split on its invariants. The MovieLens
100K test uses the default data cache and fetches what is missing; it is skipped, with
the reason, only when the archive is absent and cannot be fetched (as in
tests/test_datasets.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from toprank import datasets, metrics, recsys
from toprank.exceptions import InvalidInputError
from toprank.recsys import evaluate_ranking, evaluate_recommender, split_interactions


def _load_or_skip(loader: Callable[..., Any], **kwargs: Any) -> Any:
    try:
        return loader(**kwargs)
    except (FileNotFoundError, datasets.DownloadError) as exc:
        pytest.skip(f"archive absent and could not be fetched: {exc}")


def _csr(rows: list[list[int]], n_items: int) -> Any:
    """A 0/1 CSR matrix whose row i has ones at rows[i]."""
    dense = np.zeros((len(rows), n_items))
    for i, cols in enumerate(rows):
        dense[i, cols] = 1
    return sp.csr_matrix(dense)


def _reference(
    scores: np.ndarray, relevant: np.ndarray, exclude: np.ndarray, k_ap: int, k_recall: int
) -> dict[str, float]:
    """Plain Python: excluded scores set to -inf, rank by (-score, column)."""
    ap = acc = rec = 0.0
    n = 0
    for s, r, e in zip(scores, relevant, exclude):
        rel = set(np.flatnonzero(r).tolist())
        if not rel:
            continue
        row = np.where(e > 0, -np.inf, s.astype(float))
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))
        hits = [j in rel for j in order]
        seen, total = 0, 0.0
        for i, h in enumerate(hits[:k_ap], start=1):
            if h:
                seen += 1
                total += seen / i
        ap += total / min(k_ap, len(rel))
        acc += hits[0]
        rec += sum(hits[:k_recall]) / len(rel)
        n += 1
    return {f"ap@{k_ap}": ap / n, "accuracy": acc / n, f"recall@{k_recall}": rec / n, "n_users": n}


# ----------------------------------------------------------------------------- metrics


def test_hand_computed_metrics() -> None:
    # row 0: ranking 0,1,2,3,4; relevant {0, 2} -> hits 1,0,1,0,0
    #   AP@3 = (1/1 + 2/3) / min(3, 2) = 5/6; accuracy 1; recall@2 = 1/2
    # row 1: ranking 4,3,2,1,0; relevant {1} at rank 4
    #   AP@3 = 0; accuracy 0; recall@2 = 0
    scores = np.array([[0.9, 0.8, 0.7, 0.6, 0.5], [0.1, 0.2, 0.3, 0.4, 0.5]])
    relevant = _csr([[0, 2], [1]], 5)
    got = evaluate_ranking(scores, relevant, k_ap=3, k_recall=2)
    assert got == pytest.approx({"ap@3": 5 / 12, "accuracy": 0.5, "recall@2": 0.25, "n_users": 2})
    assert type(got["n_users"]) is int
    assert list(got) == ["ap@3", "accuracy", "recall@2", "n_users"]
    # recall@4 reaches row 1's item at rank 4: (1 + 1) / 2
    assert evaluate_ranking(scores, relevant, k_ap=3, k_recall=4)["recall@4"] == 1.0
    # default keys follow the default k values
    wide = np.tile(scores, (1, 40))  # 200 items
    assert set(evaluate_ranking(wide, sp.hstack([relevant] * 40).tocsr())) == {
        "ap@10",
        "accuracy",
        "recall@100",
        "n_users",
    }


def test_exclusion_changes_the_answer() -> None:
    # relevant item 2 is ranked third; excluding the two items above it makes it first
    scores = np.array([[3.0, 2.0, 1.0, 0.0]])
    relevant = _csr([[2]], 4)
    plain = evaluate_ranking(scores, relevant, k_ap=2, k_recall=2)
    assert plain == {"ap@2": 0.0, "accuracy": 0.0, "recall@2": 0.0, "n_users": 1}
    excluded = evaluate_ranking(scores, relevant, exclude=_csr([[0, 1]], 4), k_ap=2, k_recall=2)
    assert excluded == {"ap@2": 1.0, "accuracy": 1.0, "recall@2": 1.0, "n_users": 1}
    # excluding only item 0: item 2 is second -> AP@2 = (1/2) / 1
    one = evaluate_ranking(scores, relevant, exclude=_csr([[0]], 4), k_ap=2, k_recall=2)
    assert one == {"ap@2": 0.5, "accuracy": 0.0, "recall@2": 1.0, "n_users": 1}


def test_excluded_items_rank_last_even_with_huge_scores() -> None:
    # excluded scores (even +inf) never beat a non-excluded item; when k exceeds the
    # number of non-excluded items they fill the list but are never hits
    scores = np.array([[np.inf, 1e300, -5.0, -7.0]])
    relevant = _csr([[3]], 4)
    got = evaluate_ranking(scores, relevant, exclude=_csr([[0, 1]], 4), k_ap=4, k_recall=1)
    # ranking: 2, 3, then the excluded 0, 1 -> AP@4 = 1/2, recall@1 = 0
    assert got == {"ap@4": 0.5, "accuracy": 0.0, "recall@1": 0.0, "n_users": 1}


def test_ties_break_by_lower_column_index() -> None:
    scores = np.ones((1, 3))
    # all tied: ranking 0, 1, 2
    assert evaluate_ranking(scores, _csr([[1]], 3), k_ap=2, k_recall=1) == {
        "ap@2": 0.5,
        "accuracy": 0.0,
        "recall@1": 0.0,
        "n_users": 1,
    }
    assert evaluate_ranking(scores, _csr([[0]], 3), k_ap=2, k_recall=1)["accuracy"] == 1.0
    # a tied excluded item is moved below the others: ranking 1, 2, 0
    got = evaluate_ranking(scores, _csr([[1]], 3), exclude=_csr([[0]], 3), k_ap=2, k_recall=1)
    assert got == {"ap@2": 1.0, "accuracy": 1.0, "recall@1": 1.0, "n_users": 1}
    # integer and boolean scores rank the same way
    assert evaluate_ranking(np.array([[0, 2, 2]]), _csr([[2]], 3), k_ap=1, k_recall=1) == {
        "ap@1": 0.0,
        "accuracy": 0.0,
        "recall@1": 0.0,
        "n_users": 1,
    }


def test_rows_without_relevant_items_are_skipped() -> None:
    scores = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    relevant = _csr([[0], [], [1]], 2)
    got = evaluate_ranking(scores, relevant, k_ap=1, k_recall=1)
    assert got == {"ap@1": 0.5, "accuracy": 0.5, "recall@1": 0.5, "n_users": 2}


def test_matches_reference_and_metrics_module() -> None:
    rng = np.random.default_rng(0)
    for _ in range(100):
        n, m = int(rng.integers(1, 8)), int(rng.integers(1, 12))
        scores = rng.integers(0, 4, (n, m)).astype(np.float32)  # many ties
        rel = (rng.random((n, m)) < 0.3).astype(np.int64)
        if rel.sum() == 0:
            rel[0, 0] = 1
        exc = ((rng.random((n, m)) < 0.4) & (rel == 0)).astype(np.int64)
        ka, kr = int(rng.integers(1, m + 1)), int(rng.integers(1, m + 1))
        got = evaluate_ranking(scores, sp.csr_matrix(rel), exclude=sp.csr_matrix(exc), k_ap=ka, k_recall=kr)
        expected = _reference(scores, rel, exc, ka, kr)
        assert got.keys() == expected.keys()
        for key in got:
            assert got[key] == pytest.approx(expected[key], abs=1e-12), key
        # dense indicators give the same answer
        assert evaluate_ranking(scores, rel, exclude=exc.astype(bool), k_ap=ka, k_recall=kr) == got
        # without exclusion: exactly the metrics module over the non-empty rows
        keep = rel.sum(axis=1) > 0
        plain = evaluate_ranking(scores, sp.csr_matrix(rel), k_ap=ka, k_recall=kr)
        assert plain[f"ap@{ka}"] == pytest.approx(metrics.average_precision_at_k(rel, scores, ka))
        assert plain[f"recall@{kr}"] == pytest.approx(metrics.recall_at_k(rel, scores, kr))
        assert plain["accuracy"] == pytest.approx(metrics.precision_at_k(rel[keep], scores[keep], 1))


def test_blocks_give_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((50, 30))
    parts = split_interactions(
        rng.integers(0, 50, 600), rng.integers(0, 30, 600), n_users=50, n_items=30, random_state=0
    )
    whole = evaluate_ranking(scores, parts.test, exclude=parts.train, k_ap=5, k_recall=20)
    monkeypatch.setattr(recsys, "_BLOCK_ELEMS", 70)  # 2 rows per block
    blocked = evaluate_ranking(scores, parts.test, exclude=parts.train, k_ap=5, k_recall=20)
    assert blocked.keys() == whole.keys()
    for key in whole:
        assert blocked[key] == pytest.approx(whole[key], rel=1e-12)


def test_inputs_are_not_modified() -> None:
    scores = np.array([[3.0, 2.0, 1.0]], dtype=np.float32)
    exclude = _csr([[0]], 3)
    before = scores.copy()
    evaluate_ranking(scores, _csr([[2]], 3), exclude=exclude, k_ap=1, k_recall=1)
    np.testing.assert_array_equal(scores, before)
    assert exclude.nnz == 1 and exclude.dtype == np.float64


class _Linear:
    """A minimal recommender: scores = X @ W; records the row counts it was called with."""

    def __init__(self, W: np.ndarray) -> None:
        self.W = W
        self.calls: list[int] = []

    def decision_function(self, X: Any) -> np.ndarray:
        self.calls.append(X.shape[0])
        return np.asarray(X @ self.W)


def test_evaluate_recommender_matches_evaluate_ranking() -> None:
    rng = np.random.default_rng(2)
    X = rng.standard_normal((23, 4))
    model = _Linear(rng.standard_normal((4, 15)))
    parts = split_interactions(
        rng.integers(0, 23, 200), rng.integers(0, 15, 200), n_users=23, n_items=15, random_state=3
    )
    expected = evaluate_ranking(X @ model.W, parts.test, exclude=parts.train, k_ap=3, k_recall=7)
    got = evaluate_recommender(model, X, parts.test, exclude=parts.train, k_ap=3, k_recall=7, batch_size=5)
    assert model.calls == [5, 5, 5, 5, 3]
    assert got == pytest.approx(expected)
    # sparse X and the default batch size (one call here)
    model.calls.clear()
    got_sparse = evaluate_recommender(model, sp.csr_matrix(X), parts.test, exclude=parts.train, k_ap=3, k_recall=7)
    assert model.calls == [23] and got_sparse == pytest.approx(expected)


def test_evaluate_recommender_bad_inputs() -> None:
    X = np.ones((3, 2))
    model = _Linear(np.ones((2, 4)))
    rel = _csr([[0], [1], [2]], 4)
    with pytest.raises(InvalidInputError, match="^relevant: expected 3 rows"):
        evaluate_recommender(model, X, _csr([[0], [1]], 4))
    with pytest.raises(InvalidInputError, match="^model: decision_function returned shape"):
        evaluate_recommender(model, X, _csr([[0], [1], [2]], 5), k_ap=1, k_recall=1)
    with pytest.raises(InvalidInputError, match="^model: expected an object"):
        evaluate_recommender(object(), X, rel)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="^batch_size:"):
        evaluate_recommender(model, X, rel, k_ap=1, k_recall=1, batch_size=0)
    with pytest.raises(InvalidInputError, match="^X: empty"):
        evaluate_recommender(model, np.ones((0, 2)), rel, k_ap=1, k_recall=1)
    nan_model = _Linear(np.full((2, 4), np.nan))
    with pytest.raises(InvalidInputError, match=r"^model\.decision_function\(X\): contains NaN"):
        evaluate_recommender(nan_model, X, rel, k_ap=1, k_recall=1)


# ----------------------------------------------------------------------------- split


def _pairs(matrix: Any) -> set[tuple[int, int]]:
    coo = matrix.tocoo()
    return set(zip(coo.row.tolist(), coo.col.tolist()))


def _expected_counts(m: int, fractions: tuple[str, str, str] = ("0.8", "0.1", "0.1")) -> tuple[int, int, int]:
    """The documented rounding rule: cumulative fractions (exact decimals) times m rounded
    half up, at least one training item."""
    if m == 0:
        return 0, 0, 0
    f_train, f_valid = Fraction(fractions[0]), Fraction(fractions[1])
    cut1 = max(1, math.floor(f_train * m + Fraction(1, 2)))
    cut2 = min(m, max(cut1, math.floor((f_train + f_valid) * m + Fraction(1, 2))))
    return cut1, cut2 - cut1, m - cut2


@pytest.fixture
def interactions() -> tuple[np.ndarray, np.ndarray]:
    """40 users with 0..60 distinct items out of 80, plus repeated pairs."""
    rng = np.random.default_rng(5)
    users, items = [], []
    for u in range(40):
        m = int(rng.integers(0, 61)) if u != 7 else 0  # user 7 has no interaction
        chosen = rng.choice(80, size=m, replace=False)
        users += [u] * m
        items += chosen.tolist()
    users_a, items_a = np.array(users), np.array(items)
    dup = rng.integers(0, users_a.size, 200)  # repeat 200 interactions
    return np.concatenate([users_a, users_a[dup]]), np.concatenate([items_a, items_a[dup]])


def test_split_partitions_the_deduplicated_pairs(interactions: tuple[np.ndarray, np.ndarray]) -> None:
    users, items = interactions
    parts = split_interactions(users, items, n_users=42, n_items=80, random_state=0)
    distinct = set(zip(users.tolist(), items.tolist()))
    sets = {name: _pairs(parts[name]) for name in ("train", "valid", "test")}
    assert sets["train"] | sets["valid"] | sets["test"] == distinct
    assert sum(len(s) for s in sets.values()) == len(distinct)  # pairwise disjoint
    for name in ("train", "valid", "test"):
        mat = parts[name]
        assert sp.issparse(mat) and mat.format == "csr"
        assert mat.shape == (42, 80) and mat.dtype == np.float32
        assert mat.has_canonical_format and np.all(mat.data == 1.0)
    # users without interactions (7, and 40, 41 added by n_users) have empty rows
    for u in (7, 40, 41):
        assert all(parts[name][u].nnz == 0 for name in ("train", "valid", "test"))


def test_split_per_user_counts_follow_the_rounding_rule(interactions: tuple[np.ndarray, np.ndarray]) -> None:
    users, items = interactions
    parts = split_interactions(users, items, random_state=1)
    total = (parts.train + parts.valid + parts.test).getnnz(axis=1)
    got = np.stack([parts[name].getnnz(axis=1) for name in ("train", "valid", "test")], axis=1)
    for m, counts in zip(total.tolist(), got.tolist()):
        assert tuple(counts) == _expected_counts(m)
        if m:
            assert counts[0] >= 1 and abs(counts[0] - 0.8 * m) <= 0.5
            assert abs(counts[1] - 0.1 * m) < 1 and abs(counts[2] - 0.1 * m) < 1


@pytest.mark.parametrize(
    ("m", "expected"),
    [(1, (1, 0, 0)), (2, (2, 0, 0)), (3, (2, 1, 0)), (5, (4, 1, 0)), (10, (8, 1, 1)), (25, (20, 3, 2))],
)
def test_split_documented_small_counts(m: int, expected: tuple[int, int, int]) -> None:
    parts = split_interactions(np.zeros(m, dtype=np.int64), np.arange(m), random_state=0)
    assert (parts.train.nnz, parts.valid.nnz, parts.test.nnz) == expected


@pytest.mark.parametrize("fractions", [("0.7", "0.2", "0.1"), ("0.87", "0.06", "0.07"), ("0.55", "0.35", "0.1")])
def test_split_rounds_exact_halves_up(fractions: tuple[str, str, str]) -> None:
    # e.g. 0.87 + 0.06 is 0.9299999999999999 in floating point: 250 items must still give
    # cut points round(217.5) = 218 and round(232.5) = 233
    users = np.repeat(np.arange(400), np.arange(1, 401))
    items = np.concatenate([np.arange(m) for m in range(1, 401)])
    parts = split_interactions(users, items, fractions=[float(f) for f in fractions], random_state=0)
    got = np.stack([parts[name].getnnz(axis=1) for name in ("train", "valid", "test")], axis=1)
    for m, counts in zip(range(1, 401), got.tolist()):
        assert tuple(counts) == _expected_counts(m, fractions), m


def test_split_other_fractions() -> None:
    users, items = np.zeros(10, dtype=np.int64), np.arange(10)
    parts = split_interactions(users, items, fractions=(1.0, 0.0, 0.0))
    assert (parts.train.nnz, parts.valid.nnz, parts.test.nnz) == (10, 0, 0)
    parts = split_interactions(users, items, fractions=[0.5, 0.0, 0.5])
    assert (parts.train.nnz, parts.valid.nnz, parts.test.nnz) == (5, 0, 5)
    # a tiny training share still leaves one training item
    parts = split_interactions(users, items, fractions=(0.01, 0.49, 0.5))
    assert (parts.train.nnz, parts.valid.nnz, parts.test.nnz) == (1, 4, 5)


def test_split_is_reproducible_and_random(interactions: tuple[np.ndarray, np.ndarray]) -> None:
    users, items = interactions

    def as_sets(random_state: Any) -> list[set[tuple[int, int]]]:
        parts = split_interactions(users, items, random_state=random_state)
        return [_pairs(parts[name]) for name in ("train", "valid", "test")]

    assert as_sets(3) == as_sets(3)
    assert as_sets(np.random.RandomState(3)) == as_sets(3)
    assert as_sets(3) != as_sets(4)
    assert as_sets(None) != as_sets(None)  # fresh entropy (collision odds are negligible)
    # only the set of pairs matters, not the order (or repetition) of the input
    order = np.random.default_rng(0).permutation(users.size)
    shuffled = split_interactions(users[order], items[order], random_state=3)
    assert [_pairs(shuffled[name]) for name in ("train", "valid", "test")] == as_sets(3)


def test_split_is_uniform_within_a_user() -> None:
    # every item of a 10-item user lands in test (1 slot) about 1/10 of the time
    counts = np.zeros(10)
    rng = np.random.RandomState(0)
    for _ in range(2000):
        parts = split_interactions(np.zeros(10, dtype=np.int64), np.arange(10), random_state=rng)
        counts[parts.test.indices] += 1
    assert counts.sum() == 2000
    assert np.all(np.abs(counts / 2000 - 0.1) < 0.03)


# ----------------------------------------------------------------------------- bad inputs


_S = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
_R = _csr([[0], [2]], 3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: evaluate_ranking(_S[:1], _R), r"^relevant: expected shape \(1, 3\)"),
        (lambda: evaluate_ranking(_S, _R, exclude=_csr([[0]], 3)), r"^exclude: expected shape"),
        (lambda: evaluate_ranking(np.where(_S > 2, np.nan, _S), _R, k_ap=1, k_recall=1), "^scores: contains NaN"),
        (
            lambda: evaluate_ranking(np.where(_S > 2, np.inf, _S), _R, k_ap=1, k_recall=1),
            "^scores: contains an infinite",
        ),
        (lambda: evaluate_ranking(np.ones(3), _R), "^scores: expected an"),
        (lambda: evaluate_ranking(np.ones((0, 3)), _R), "^scores: empty"),
        (lambda: evaluate_ranking(_S.astype(complex), _R), "^scores: expected real"),
        (lambda: evaluate_ranking(sp.csr_matrix(_S), _R), "^scores: expected a dense"),
        (lambda: evaluate_ranking(_S, _R, k_ap=0, k_recall=1), r"^k_ap: must be in \[1, 3\]"),
        (lambda: evaluate_ranking(_S, _R, k_ap=1), r"^k_recall: must be in \[1, 3\]"),
        (lambda: evaluate_ranking(_S, _R, k_ap=1.5, k_recall=1), "^k_ap: expected an integer"),  # type: ignore[arg-type]
        (lambda: evaluate_ranking(_S, _R, k_ap=1, k_recall=True), "^k_recall: expected an integer"),
        (lambda: evaluate_ranking(_S, 2 * _R, k_ap=1, k_recall=1), "^relevant: expected only 0/1"),
        (lambda: evaluate_ranking(_S, _csr([[], []], 3), k_ap=1, k_recall=1), "^relevant: no row"),
        (lambda: evaluate_ranking(_S, _R, exclude=_R, k_ap=1, k_recall=1), "^exclude: 2 excluded"),
        (lambda: split_interactions([], []), "^users: empty"),
        (lambda: split_interactions([0, 1], [0]), "^items: expected 2 entries"),
        (lambda: split_interactions([0.0, 1.0], [0, 1]), "^users: expected integer ids"),
        (lambda: split_interactions([[0, 1]], [[0, 1]]), "^users: expected a 1-D"),
        (lambda: split_interactions([0, -1], [0, 1]), "^users: ids must be >= 0"),
        (
            lambda: split_interactions([0, 1], [0, 5], n_items=5),
            r"^n_items: must be at least max\(items\) \+ 1 = 6",
        ),
        (lambda: split_interactions([0, 3], [0, 1], n_users=2), "^n_users: must be at least"),
        (lambda: split_interactions([0], [0], n_users=2.0), "^n_users: expected an integer"),  # type: ignore[arg-type]
        (lambda: split_interactions([0], [0], fractions=(0.8, 0.1, 0.2)), "^fractions: must sum to 1"),
        (lambda: split_interactions([0], [0], fractions=(1.1, -0.1, 0.0)), "^fractions: must be finite and >= 0"),
        (lambda: split_interactions([0], [0], fractions=(0.5, float("nan"), 0.5)), "^fractions: must be finite"),
        (lambda: split_interactions([0], [0], fractions=(0.0, 0.5, 0.5)), "^fractions: the training fraction"),
        (lambda: split_interactions([0], [0], fractions=(0.8, 0.2)), "^fractions: expected 3 numbers"),
        (lambda: split_interactions([0], [0], fractions=0.8), "^fractions: expected a sequence"),  # type: ignore[arg-type]
        (
            lambda: split_interactions([0], [0], fractions=(0.8, "a", 0.1)),  # type: ignore[arg-type]
            "^fractions: expected real numbers",
        ),
    ],
)
def test_bad_inputs_name_the_argument(call: Callable[[], Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        call()


def test_bad_inputs_are_value_errors() -> None:
    with pytest.raises(ValueError):
        evaluate_ranking(_S, _R, k_ap=4)


# ----------------------------------------------------------------------------- MovieLens 100K


def test_movielens_100k_split() -> None:
    ml = _load_or_skip(datasets.load_movielens_100k)
    parts = split_interactions(ml.user, ml.item, n_users=ml.n_users, n_items=ml.n_items, random_state=0)
    train, valid, test = parts.train, parts.valid, parts.test
    assert train.shape == valid.shape == test.shape == (943, 1682)
    assert train.nnz + valid.nnz + test.nnz == 100_000
    assert (train + valid + test).max() == 1.0  # disjoint
    m = (train + valid + test).getnnz(axis=1)
    n_train = train.getnnz(axis=1)
    assert m.min() >= 20
    # per user: the training share is 0.8 up to the half-item rounding
    assert np.all(np.abs(n_train - 0.8 * m) <= 0.5)
    assert np.all(np.abs(n_train / m - 0.8) <= 0.5 / m)
    assert abs(train.nnz / 100_000 - 0.8) < 0.002
    assert np.all(test.getnnz(axis=1) >= 1) and np.all(valid.getnnz(axis=1) >= 1)

    # the protocol end to end with a popularity baseline: better than chance
    popularity = np.asarray(train.sum(axis=0), dtype=np.float64)
    scores = np.broadcast_to(popularity, test.shape)
    exclude = train + valid
    got = evaluate_ranking(scores, test, exclude=exclude)
    assert got["n_users"] == 943
    chance = evaluate_ranking(np.random.default_rng(0).standard_normal(test.shape), test, exclude=exclude)
    for key in ("ap@10", "accuracy", "recall@100"):
        assert 0.0 < chance[key] < got[key] < 1.0, key
