"""Checked by mypy in ``make test`` (``mypy tests/typing``), never run: every option of
the estimators is a ``Literal`` type, so a misspelt value is a type error.

Each bad line carries ``# type: ignore[arg-type]``; the project's mypy configuration is
strict, which includes ``warn_unused_ignores``, so if an option lost its ``Literal``
type the ignore would be unused and mypy would fail.
"""

from __future__ import annotations

import numpy as np

from toprank import M3L, PatMat, RankmaxRanker, TopKSVC, TopPush, losses
from toprank.distributed import fit_cocoa

# The spellings users write: accepted.
TopKSVC(loss="alpha", kernel="rbf", class_weight="balanced")
M3L(kernel="linear", solver="dcd")
TopPush(surrogate="hinge", kernel="poly")
PatMat(0.1, kernel="precomputed")
RankmaxRanker(loss="sparsemax", optimizer="adam")
losses.topk_hinge(np.zeros((1, 3)), np.zeros(1, dtype=np.int64), 1, "beta")

# Misspelt: rejected.
TopKSVC(loss="alhpa")  # type: ignore[arg-type]
TopKSVC(kernel="gaussian")  # type: ignore[arg-type]
TopKSVC(class_weight="balance")  # type: ignore[arg-type]
M3L(solver="smo ")  # type: ignore[arg-type]
TopPush(surrogate="logistic")  # type: ignore[arg-type]
RankmaxRanker(loss="rank_max")  # type: ignore[arg-type]
RankmaxRanker(optimizer="sgd")  # type: ignore[arg-type]
losses.topk_hinge(np.zeros((1, 3)), np.zeros(1, dtype=np.int64), 1, "gamma")  # type: ignore[arg-type]
fit_cocoa(None, TopKSVC(), np.zeros((2, 2)), np.zeros(2), aggregation="sum")  # type: ignore[arg-type]
