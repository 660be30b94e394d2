"""MULAN yeast from the ``river==0.26.1`` wheel (PyPI; the CPython 3.11 manylinux wheel
is fetched from the PyPI index on any platform and read with :mod:`zipfile`, never
installed)."""

from __future__ import annotations

import gzip
import os
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import Bunch

from toprank.datasets._cache import Wheel, archive_doc, label_summary, load_pinned, read_member

# river ships only platform wheels; the data file is the same in all of them, so pin the
# CPython 3.11 manylinux_2_28 x86_64 one and fetch exactly it on any machine.
_RIVER = Wheel(
    requirement="river==0.26.1",
    filename="river-0.26.1-cp311-cp311-manylinux_2_28_x86_64.whl",
    sha256="6a11e1a9749beec3ea138efeb0205b2c5cea8d424e9deee306c8980faec01bef",
    size=2_738_776,
)
# MULAN yeast as a gzip'd CSV: header Att1..Att103,Class1..Class14, then 2417 rows.
_YEAST_MEMBER = "river/datasets/yeast.csv.gz"
_YEAST_FEATURES = tuple(f"Att{i}" for i in range(1, 104))
_YEAST_LABELS = tuple(f"Class{i}" for i in range(1, 15))
_YEAST_N = 2417

_YEAST_DESCR = """\
Yeast multi-label gene-function data set (A. Elisseeff & J. Weston, "A kernel method for
multi-labelled classification", NIPS 14, 2001), MULAN's version (Tsoumakas et al., JMLR
12, 2011; identical to OpenML 40597), as shipped in the PyPI wheel river==0.26.1
(member river/datasets/yeast.csv.gz, a gzip'd CSV with header Att1..Att103,
Class1..Class14; river is BSD-3-licensed).

2417 genes x 103 numeric features (micro-array expression and phylogenetic profiles;
float64, roughly in [-0.8, 0.73]); feature_names Att1..Att103 as in the file.
14 functional-category labels Class1..Class14 (target_names as in the file); target is
the int8 2417 x 14 0/1 indicator matrix. Label cardinality (mean labels per gene)
{card:.2f}; every gene has at least one label. Per-label counts:
{counts}.

No train/test split is stored in the file (MULAN's split is 1500 train / 917 test, in a
separate file not shipped here): use a seeded split and report it. Cite Elisseeff &
Weston (2001) when using this data set.
"""


def _parse_yeast(text: str, member: str) -> dict[str, NDArray[Any]]:
    """Parse river's ``yeast.csv`` (header + rows) into ``data`` and ``target`` arrays.

    Checks the header (``Att1..Att103,Class1..Class14``), the field count, the row count
    (2417) and that every label field is ``0`` or ``1``.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    expected = [*_YEAST_FEATURES, *_YEAST_LABELS]
    header = [field.strip() for field in lines[0].split(",")] if lines else []
    if header != expected:
        raise ValueError(
            f"{member}: unexpected header {','.join(header)[:80]!r} (expected "
            f"{_YEAST_FEATURES[0]}..{_YEAST_FEATURES[-1]},"
            f"{_YEAST_LABELS[0]}..{_YEAST_LABELS[-1]})"
        )
    rows = [line.split(",") for line in lines[1:]]
    widths = sorted({len(row) for row in rows})
    if widths != [len(expected)]:
        raise ValueError(f"{member}: expected {len(expected)} fields per row, found {widths}")
    n_features, n_labels = len(_YEAST_FEATURES), len(_YEAST_LABELS)
    if len(rows) != _YEAST_N:
        raise ValueError(
            f"{member}: expected {_YEAST_N} x {n_features} data and {n_labels} labels, got {len(rows)} rows"
        )
    data = np.array([row[:n_features] for row in rows], dtype=np.float64)
    labels = np.array([[v.strip() for v in row[n_features:]] for row in rows])
    if not np.isin(labels, ["0", "1"]).all():
        raise ValueError(f"{member}: label fields other than 0/1")
    target = (labels == "1").astype(np.int8)
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{member}: non-finite feature values")
    return {"data": data, "target": target}


@archive_doc(_RIVER, malformed="the expected 2417 x (103 + 14) table")
def load_yeast(*, data_home: str | os.PathLike[str] | None = None, download: bool = True) -> Bunch:
    """Load MULAN yeast (2417 x 103, 14 labels) from the ``river`` wheel.

    The multi-label gene-function data set of Elisseeff & Weston (2001), MULAN's version,
    read from ``river/datasets/yeast.csv.gz`` inside the pinned ``river==0.26.1`` wheel
    (the CPython 3.11 manylinux one, fetched on any platform; it is only read with
    :mod:`zipfile`, never installed). No train/test split is stored.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (2417, 103); ``target`` int8 0/1 indicator array
        of shape (2417, 14) (label cardinality 4.24); ``target_names`` the labels
        ``'Class1'..'Class14'``; ``feature_names`` ``'Att1'..'Att103'``; ``DESCR`` str
        (source, shapes, cardinality, citation).

    Examples
    --------
    >>> from toprank.datasets import load_yeast
    >>> yeast = load_yeast()  # fetches the river wheel once, then reads the cache
    >>> yeast.data.shape, yeast.target.shape
    ((2417, 103), (2417, 14))
    """
    arrays = load_pinned(
        "yeast",
        _RIVER,
        data_home,
        download,
        lambda wheel: _parse_yeast(gzip.decompress(read_member(wheel, _YEAST_MEMBER)).decode("ascii"), _YEAST_MEMBER),
    )
    target = arrays["target"]
    cardinality, counts = label_summary(target)
    return Bunch(
        data=arrays["data"],
        target=target,
        target_names=np.array(_YEAST_LABELS, dtype=np.str_),
        feature_names=np.array(_YEAST_FEATURES, dtype=np.str_),
        DESCR=_YEAST_DESCR.format(card=cardinality, counts=counts),
    )
