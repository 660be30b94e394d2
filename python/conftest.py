"""pytest hooks for the doctests of the package (``pytest --doctest-modules python/toprank``).

The examples of :mod:`toprank.datasets` load real data sets. A doctest must never
download, so each of them runs only when its data set is already in the cache (``make
data`` or ``python -m toprank.datasets fetch`` fills it): it then reads the cache, in
milliseconds. Otherwise it is skipped with the command that fetches the data. (The
loaders' own behaviour, downloads included, is tested in tests/test_datasets.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

# The data sets each example of toprank.datasets loads, by the doctest's object name.
_DOCTEST_DATA = {
    "load_letter": "letter",
    "load_flavia": "flavia",
    "load_fashion_mnist": "fashion_mnist",
    "load_ionosphere": "ionosphere",
    "load_spambase": "spambase",
    "load_wine_quality_red": "wine_quality_red",
    "load_movielens_100k": "movielens_100k",
    "load_yeast": "yeast",
    "load_scene": "scene",
    "fetch": "letter",
}


def _cached(name: str) -> bool:
    """Whether every load ``fetch`` makes of data set ``name`` is served by the cache."""
    from toprank.datasets import _FETCH

    loader, loads, _ = _FETCH[name]
    try:
        for kwargs in loads:
            loader(download=False, **kwargs)
    except FileNotFoundError:
        return False
    return True


def pytest_runtest_setup(item: Any) -> None:
    if not isinstance(item, pytest.DoctestItem) or not item.name.startswith("toprank.datasets."):
        return
    name = _DOCTEST_DATA.get(item.name.rsplit(".", 1)[-1])
    if name is not None and not _cached(name):
        pytest.skip(f"{name} is not cached (a doctest never downloads): python -m toprank.datasets fetch {name}")
