"""Checked by mypy in ``make test`` (``mypy tests/typing``), never run: every option of
the estimators is a ``Literal`` type, so a misspelt value is a type error.

Each bad line carries ``# type: ignore[arg-type]``; the project's mypy configuration is
strict, which includes ``warn_unused_ignores``, so if an option lost its ``Literal``
type the ignore would be unused and mypy would fail.
"""

from __future__ import annotations

import numpy as np
import torch

from toprank import M3L, FitProgress, PatMat, RankmaxRanker, TopKSVC, TopPush, losses
from toprank import torch as tt
from toprank._options import FitStatus, KernelSettings, SdcaSettings
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
KernelSettings(kernel="gausian")  # type: ignore[arg-type]
SdcaSettings(3, "alhpa", 1, 0.0, 1e-3, 10, 1, 0)  # type: ignore[arg-type]

# The fitted report is typed the same for every dual-solver estimator: a status of the
# one vocabulary (the old "max_epochs" is no longer one) and FitProgress records.
model = TopKSVC().fit(np.zeros((4, 2)), np.arange(4))
status: FitStatus = model.status_
progress: FitProgress = M3L().fit(np.zeros((4, 2)), np.arange(4)).history_[0]
epochs: int = progress.n_iter
stale = model.status_ == "max_epochs"  # type: ignore[comparison-overlap]

# toprank.torch: the backend, the reduction and the hinge variant are Literal options too.
z, y = torch.zeros(2, 3), torch.zeros(2, dtype=torch.int64)
tt.topk_hinge(z, y, 1, "beta", reduction="sum", backend="torch")
tt.TopKHingeLoss(1, "alpha", reduction="none", backend="rust")
tt.topk_hinge(z, y, 1, "gamma")  # type: ignore[arg-type]
tt.softmax_loss(z, y, reduction="avg")  # type: ignore[arg-type]
tt.sparsemax(z, backend="cuda")  # type: ignore[arg-type]
tt.RankmaxLoss(reduction="mean ")  # type: ignore[arg-type]
