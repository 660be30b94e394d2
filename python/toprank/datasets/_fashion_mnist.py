"""Fashion-MNIST from the Debian package ``dataset-fashion-mnist``: the installed files
under ``/usr/share/datasets/fashion-mnist`` if present, else the pinned ``.deb`` fetched
from a Debian mirror and unpacked here (no apt-get or dpkg needed)."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import Bunch

from toprank.datasets._cache import (
    Arrays,
    DownloadError,
    cached,
    debian_mirror,
    fetch_hint,
    fetch_verified,
    loader_home,
    verify,
)

_FASHION_PACKAGE = "dataset-fashion-mnist"
_FASHION_VERSION = "0.0~git20200523.55506a9-1"
_FASHION_DEB = f"{_FASHION_PACKAGE}_{_FASHION_VERSION}_all.deb"
_FASHION_DEB_SHA256 = "39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0"
_FASHION_DEB_SIZE = 30_900_652
_FASHION_DEB_DIR = "usr/share/datasets/fashion-mnist"
# Where `apt-get install dataset-fashion-mnist` puts the files (a module attribute so the
# tests can point it elsewhere).
_SYSTEM_FASHION_DIR = Path("/") / _FASHION_DEB_DIR
_FASHION_FILES: dict[str, str] = {
    "train-images-idx3-ubyte.gz": "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
    "train-labels-idx1-ubyte.gz": "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
    "t10k-images-idx3-ubyte.gz": "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
    "t10k-labels-idx1-ubyte.gz": "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
}
_FASHION_PREFIX = {"train": "train", "test": "t10k"}
_FASHION_NAMES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)

_FASHION_DESCR = """\
Fashion-MNIST (Xiao, Rasul & Vollgraf 2017; MIT licence), from the Debian package
dataset-fashion-mnist {version} (gzip'd IDX files, identical to Zalando's release).

{subset} subset: {n} grey-scale 28x28 images of Zalando articles, flattened row-major to
784 features ({dtype}{scale}); 10 balanced classes ({per_class} each):
{names}. This is the official train/test split (train 60000, test 10000).
"""


def _deb_url() -> str:
    return f"{debian_mirror()}/pool/main/d/{_FASHION_PACKAGE}/{_FASHION_DEB}"


def _data_tar(deb: Path) -> tarfile.TarFile:
    """The data archive of a ``.deb``: an ar archive ("!<arch>", then members with
    60-byte headers, each padded to an even length) holding ``data.tar.*``."""
    with deb.open("rb") as fh:
        if fh.read(8) != b"!<arch>\n":
            raise DownloadError(f"fashion_mnist: {deb} is not a Debian package (no ar header)")
        while len(header := fh.read(60)) == 60:
            name, size = header[:16].decode("ascii", "replace").strip().rstrip("/"), int(header[48:58])
            if name.startswith("data.tar"):
                # tarfile reads .xz / .gz / .bz2 (the compressions dpkg has used for this package).
                return tarfile.open(fileobj=io.BytesIO(fh.read(size)), mode="r:*")
            fh.seek(size + size % 2, os.SEEK_CUR)
    raise DownloadError(f"fashion_mnist: {deb} holds no data.tar member")


def _extract_deb(deb: Path, dest: Path) -> None:
    """Copy the four IDX files out of the .deb into ``dest``, each verified."""
    dest.mkdir(exist_ok=True)
    with _data_tar(deb) as tar:
        for name, sha in _FASHION_FILES.items():
            member = tar.extractfile(f"./{_FASHION_DEB_DIR}/{name}")
            if member is None:
                raise DownloadError(f"fashion_mnist: {deb} does not hold {_FASHION_DEB_DIR}/{name}")
            with tempfile.NamedTemporaryFile(dir=dest, prefix=f".{name}-", delete=False) as tmp:
                shutil.copyfileobj(member, tmp)
            try:
                verify(Path(tmp.name), sha)
                os.chmod(tmp.name, 0o644)
                os.replace(tmp.name, dest / name)
            finally:
                Path(tmp.name).unlink(missing_ok=True)


def _fashion_dir(home: Path, download: bool) -> Path:
    """Return a directory holding the four IDX files: the cache, else the system one,
    else the cache after fetching/unpacking the .deb."""
    local = home / "fashion-mnist"
    for candidate in (local, _SYSTEM_FASHION_DIR):
        if all((candidate / name).is_file() for name in _FASHION_FILES):
            return candidate
    deb = home / _FASHION_DEB
    if deb.is_file():
        verify(deb, _FASHION_DEB_SHA256)
    elif not download:
        raise FileNotFoundError(
            f"fashion_mnist: neither {_SYSTEM_FASHION_DIR} nor {local} holds the "
            f"Fashion-MNIST files, {deb} is absent and download=False. Fetch them with\n"
            f"  {fetch_hint('fashion_mnist', home)}\n"
            f"or put {_deb_url()} (SHA-256 {_FASHION_DEB_SHA256}) there by hand"
        )
    else:
        fetch_verified(_deb_url(), deb, _FASHION_DEB_SHA256, "fashion_mnist")
    _extract_deb(deb, local)
    return local


def _read_idx_gz(path: Path, sha256: str) -> NDArray[np.uint8]:
    verify(path, sha256)
    with gzip.open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] != b"\x00\x00" or raw[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    ndim = raw[3]
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims).copy()


def load_fashion_mnist(
    *,
    subset: Literal["train", "test"] = "train",
    as_float: bool = True,
    data_home: str | os.PathLike[str] | None = None,
    download: bool = True,
) -> Bunch:
    """Load Fashion-MNIST (train 60000 or test 10000 images x 784, 10 classes).

    The files are those of the Debian package ``dataset-fashion-mnist``: taken from
    ``/usr/share/datasets/fashion-mnist`` when the package is installed, else from the
    cache, where the pinned ``.deb`` is fetched from a Debian mirror (``TOPRANK_DEBIAN_MIRROR``,
    default deb.debian.org) and unpacked by this module.

    Parameters
    ----------
    subset : {"train", "test"}, default "train"
        The official split to load.
    as_float : bool, default True
        Return pixels as float64 in [0, 1] (``uint8 / 255``); if False, the raw uint8.
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    download : bool, default True
        Fetch the ``.deb`` if the files are neither installed nor cached.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` array of shape (60000, 784) or (10000, 784), float64 or uint8;
        ``target`` int64 array with values 0..9; ``target_names`` the 10 article names;
        ``DESCR`` str.

    Raises
    ------
    ValueError
        ``subset`` is not "train" or "test".
    FileNotFoundError
        The files are not available and ``download`` is False.
    ChecksumError
        A file does not have the pinned SHA-256.
    DownloadError
        The mirror could not be reached (offline) or the ``.deb`` is not a Debian package
        holding the files; the message says which and where to put the file by hand.

    Examples
    --------
    >>> from toprank.datasets import load_fashion_mnist
    >>> test = load_fashion_mnist(subset="test")  # the Debian package's files, fetched once if absent
    >>> test.data.shape, test.data.dtype, float(test.data.max())
    ((10000, 784), dtype('float64'), 1.0)
    """
    if subset not in _FASHION_PREFIX:
        raise ValueError(f"subset: must be 'train' or 'test', got {subset!r}")
    home = loader_home(data_home, download)
    prefix = _FASHION_PREFIX[subset]
    images_name = f"{prefix}-images-idx3-ubyte.gz"
    labels_name = f"{prefix}-labels-idx1-ubyte.gz"

    def parse() -> Arrays:
        folder = _fashion_dir(home, download)
        images = _read_idx_gz(folder / images_name, _FASHION_FILES[images_name])
        labels = _read_idx_gz(folder / labels_name, _FASHION_FILES[labels_name])
        return {"data": images.reshape(images.shape[0], -1), "target": labels.astype(np.int64)}

    source = _FASHION_FILES[images_name] + _FASHION_FILES[labels_name]
    arrays = cached(home / f"fashion_mnist_{subset}.npz", source, parse)
    pixels = arrays["data"]
    data = pixels.astype(np.float64) / 255.0 if as_float else pixels
    n = data.shape[0]
    descr = _FASHION_DESCR.format(
        version=_FASHION_VERSION,
        subset=subset,
        n=n,
        dtype="float64" if as_float else "uint8",
        scale=" in [0, 1], i.e. raw / 255" if as_float else " 0..255",
        per_class=n // 10,
        names=", ".join(f"{i}={name}" for i, name in enumerate(_FASHION_NAMES)),
    )
    return Bunch(data=data, target=arrays["target"], target_names=np.array(_FASHION_NAMES, dtype=np.str_), DESCR=descr)
