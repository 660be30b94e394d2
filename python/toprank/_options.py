"""The string options of the estimators and kernels, as ``Literal`` types, and the
settings objects the estimators hand to ``toprank._core``.

Each option's values are written once, here: the constructors and ``toprank._core``'s
stubs are annotated with these types (so a type checker rejects
``TopKSVC(loss="alhpa")``), and the facade validates a value at fit time against the
same values (``KERNELS``, ``TOPK_LOSSES``, ...), so the two cannot drift apart.

A fit binding takes one frozen settings object per solver family (``SdcaSettings``,
``M3lSettings``, ``AttopSettings``, ``RankerSettings``, with a ``KernelSettings``
where a kernel is used), and the Prox-SDCA and M3L fits their arrays as one problem
object (``SdcaProblem``, ``M3lProblem``), instead of a long argument list; the binding reads their fields
by name (``#[derive(FromPyObject)]`` in ``src/bindings/``). The facade fills them with
validated values; the core checks again what its result depends on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

__all__ = [
    "AGGREGATIONS",
    "AttopMethod",
    "AttopSettings",
    "FitStatus",
    "KernelSettings",
    "M3lProblem",
    "M3lSettings",
    "RankerSettings",
    "SdcaLossName",
    "SdcaProblem",
    "SdcaSettings",
    "HINGE_VARIANTS",
    "KERNELS",
    "M3L_SOLVERS",
    "OPTIMIZERS",
    "RANKER_LOSSES",
    "SURROGATES",
    "TOPK_LOSSES",
    "DUAL_LAYOUTS",
    "DualLayout",
    "Aggregation",
    "HingeVariant",
    "Kernel",
    "M3LSolver",
    "MULTILABEL_LOSSES",
    "MultiLabelLoss",
    "Optimizer",
    "RankerLoss",
    "Surrogate",
    "TopKLoss",
    "TORCH_BACKENDS",
    "REDUCTIONS",
    "TorchBackend",
    "Reduction",
]

#: Kernels of the dual solvers (TopKSVC, M3L, TopPush/TopPushK/PatMat).
Kernel = Literal["linear", "rbf", "poly", "precomputed"]
#: TopKSVC's losses: top-k hinge α and β, smoothed top-k hinge (softmax) and top-k entropy.
TopKLoss = Literal["alpha", "beta", "softmax", "entropy"]
#: The losses of the Prox-SDCA core (``SdcaSettings.loss``): TopKSVC's, and the multi-label
#: hinge and softmax of label sets (``SdcaProblem.label_starts``; k unused).
SdcaLossName = Literal["alpha", "beta", "softmax", "entropy", "multilabel_hinge", "multilabel_softmax"]
#: Where Prox-SDCA keeps its dual variables A (n × m): sparse rows for the hinge losses
#: on linear models from 256 classes on ("auto"), or always "dense" / "sparse".
DualLayout = Literal["auto", "dense", "sparse"]
#: MultiLabelSVC's losses: the multi-label hinge (smoothed by ``smoothing``) and softmax,
#: ``"multilabel_<loss>"`` in ``SdcaLossName``.
MultiLabelLoss = Literal["hinge", "softmax"]
#: The top-k hinge variants of ``toprank.losses.topk_hinge``.
HingeVariant = Literal["alpha", "beta"]
#: Where ``toprank.torch`` computes: the Rust kernels on CPU tensors and torch elsewhere
#: ("auto"), always the Rust kernels ("rust", CPU only), or always torch ("torch").
TorchBackend = Literal["auto", "rust", "torch"]
#: How ``toprank.torch``'s losses reduce the rows, as ``torch.nn.CrossEntropyLoss``.
Reduction = Literal["mean", "sum", "none"]
#: The surrogate of the ranking-at-top estimators.
Surrogate = Literal["quadratic", "hinge"]
#: M3L's solver: kernel SMO, linear dual coordinate descent, or chosen by the kernel.
M3LSolver = Literal["auto", "smo", "dcd"]
#: RankmaxRanker's loss.
RankerLoss = Literal["rankmax", "softmax", "sparsemax"]
#: RankmaxRanker's optimizer.
Optimizer = Literal["adagrad", "adam"]
#: How ``toprank.distributed.fit_cocoa`` combines the workers' updates.
Aggregation = Literal["auto", "adding", "line_search"]
#: The ranking-at-the-top problem: TopPushK (TopPush for K = 1) or Pat&Mat.
AttopMethod = Literal["toppushk", "patmat"]
#: Why a solver stopped, the same words for every estimator's ``status_``: the
#: tolerance was reached, the iteration (epoch) budget ran out, rounding stopped the
#: progress, or the solve was interrupted.
FitStatus = Literal["converged", "max_iter", "no_progress", "interrupted"]

# The values of each option, for validation at fit time (typed, so that a validated
# value keeps its Literal type).
KERNELS: tuple[Kernel, ...] = get_args(Kernel)
TOPK_LOSSES: tuple[TopKLoss, ...] = get_args(TopKLoss)
DUAL_LAYOUTS: tuple[DualLayout, ...] = get_args(DualLayout)
MULTILABEL_LOSSES: tuple[MultiLabelLoss, ...] = get_args(MultiLabelLoss)
HINGE_VARIANTS: tuple[HingeVariant, ...] = get_args(HingeVariant)
TORCH_BACKENDS: tuple[TorchBackend, ...] = get_args(TorchBackend)
REDUCTIONS: tuple[Reduction, ...] = get_args(Reduction)
SURROGATES: tuple[Surrogate, ...] = get_args(Surrogate)
M3L_SOLVERS: tuple[M3LSolver, ...] = get_args(M3LSolver)
RANKER_LOSSES: tuple[RankerLoss, ...] = get_args(RankerLoss)
OPTIMIZERS: tuple[Optimizer, ...] = get_args(Optimizer)
AGGREGATIONS: tuple[Aggregation, ...] = get_args(Aggregation)


@dataclass(frozen=True)
class KernelSettings:
    """The kernel k(x, x') of a fit: ``kernel`` with ``gamma``, ``degree`` and ``coef0``
    (``"rbf"``: exp(−gamma‖x − x'‖²), ``"poly"``: (gamma⟨x, x'⟩ + coef0)^degree; ignored by
    the others), and the kernel-column cache in MB."""

    kernel: Kernel
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 1.0
    cache_size: float = 200.0


@dataclass(frozen=True)
class SdcaSettings:
    """Prox-SDCA's settings (``toprank.TopKSVC`` documents each): the number of classes
    (labels lie below it), the loss and its k and smoothing, the stopping rule (relative duality gap ``tol``, ``max_epochs``, a check
    every ``check_every`` epochs) and the epochs' ``seed``. Linear fits: the constant
    feature ``bias`` (None: no intercept) and ``parallel`` (None: CoCoA+ chosen by the
    core from the problem size and the threads). Where the dual rows are kept:
    ``dual_layout``. Kernel fits: ``kernel``."""

    n_classes: int
    loss: SdcaLossName
    k: int
    smoothing: float
    tol: float
    max_epochs: int
    check_every: int
    seed: int
    shrinking: bool = True
    bias: float | None = None
    parallel: bool | None = None
    dual_layout: DualLayout = "auto"
    kernel: KernelSettings | None = None


@dataclass(frozen=True, eq=False)
class SdcaProblem:
    """The arrays of a Prox-SDCA problem: the labels ``y`` (int64; one per example, or
    with ``label_starts`` the flat label sets, example i's labels
    ``y[label_starts[i]:label_starts[i + 1]]``, ascending), the examples' weights ``c``
    (C times the sample and class weights, n) and the dual rows to start from
    (``dual_coef``, n × n_classes, an array or a SciPy CSR matrix; None: a cold
    start). The core checks them all."""

    y: NDArray[np.int64]
    c: NDArray[np.float64]
    label_starts: NDArray[np.int64] | None = None
    dual_coef: NDArray[np.float64] | sp.csr_array | None = None


@dataclass(frozen=True, eq=False)
class M3lProblem:
    """The arrays of an M3L problem: ``y`` (n × L, ±1), the label prior ``r`` (L × L,
    symmetric positive definite), the per-(example, label) losses ``delta_plus``,
    ``delta_minus`` (n × L) and the examples' weights of C (``sample_weight``, n; None:
    all 1)."""

    y: NDArray[np.float64]
    r: NDArray[np.float64]
    delta_plus: NDArray[np.float64]
    delta_minus: NDArray[np.float64]
    sample_weight: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class M3lSettings:
    """M3L's settings (``toprank.M3L`` documents each): the penalty ``c``, the stopping
    rule (every projected gradient below ``tol``; ``max_iter`` SMO iterations or DCD
    epochs) and the constant feature ``bias`` (None: no intercept). DCD: ``seed`` and
    ``shrinking``. SMO: ``kernel`` and a progress report every ``report_every``
    iterations (0: none)."""

    c: float
    tol: float
    max_iter: int
    bias: float | None = None
    seed: int = 0
    shrinking: bool = True
    report_every: int = 0
    kernel: KernelSettings | None = None


@dataclass(frozen=True)
class AttopSettings:
    """The ranking-at-the-top problem and its solver's settings (``toprank.attop``
    documents each): TopPushK's ``k`` or Pat&Mat's ``tau``, the stopping rule (relative
    duality gap ``tol``, ``max_iter`` iterations, a check every ``check_every``), the
    ``seed``, the probability ``reuse`` of keeping the last partner, and the kernel."""

    method: AttopMethod
    surrogate: Surrogate
    c: float
    scale: float
    kernel: KernelSettings
    tol: float
    max_iter: int
    check_every: int
    seed: int
    k: int = 1
    tau: float = 0.0
    reuse: float = 0.5


@dataclass(frozen=True)
class RankerSettings:
    """``toprank.RankmaxRanker``'s model shape, loss and optimiser (``_core.RankerProblem``
    reads them): θ holds ``n_components``-dimensional factors for ``n_labels`` labels."""

    n_labels: int
    n_components: int
    loss: RankerLoss
    k: int
    eta: float
    alpha: float
    optimizer: Optimizer = "adagrad"
    learning_rate: float = 0.05
    batch_size: int = 256
