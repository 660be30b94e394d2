"""The string options of the estimators and kernels, as ``Literal`` types.

Each option's values are written once, here: the constructors and ``toprank._core``'s
stubs are annotated with these types (so a type checker rejects
``TopKSVC(loss="alhpa")``), and the facade validates a value at fit time against the
same values (``KERNELS``, ``TOPK_LOSSES``, ...), so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "AGGREGATIONS",
    "HINGE_VARIANTS",
    "KERNELS",
    "M3L_SOLVERS",
    "OPTIMIZERS",
    "RANKER_LOSSES",
    "SURROGATES",
    "TOPK_LOSSES",
    "Aggregation",
    "HingeVariant",
    "Kernel",
    "M3LSolver",
    "Optimizer",
    "RankerLoss",
    "Surrogate",
    "TopKLoss",
]

#: Kernels of the dual solvers (TopKSVC, M3L, TopPush/TopPushK/PatMat).
Kernel = Literal["linear", "rbf", "poly", "precomputed"]
#: TopKSVC's losses: top-k hinge α and β, smoothed top-k hinge (softmax) and top-k entropy.
TopKLoss = Literal["alpha", "beta", "softmax", "entropy"]
#: The top-k hinge variants of ``toprank.losses.topk_hinge``.
HingeVariant = Literal["alpha", "beta"]
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

# The values of each option, for validation at fit time (typed, so that a validated
# value keeps its Literal type).
KERNELS: tuple[Kernel, ...] = get_args(Kernel)
TOPK_LOSSES: tuple[TopKLoss, ...] = get_args(TopKLoss)
HINGE_VARIANTS: tuple[HingeVariant, ...] = get_args(HingeVariant)
SURROGATES: tuple[Surrogate, ...] = get_args(Surrogate)
M3L_SOLVERS: tuple[M3LSolver, ...] = get_args(M3LSolver)
RANKER_LOSSES: tuple[RankerLoss, ...] = get_args(RankerLoss)
OPTIMIZERS: tuple[Optimizer, ...] = get_args(Optimizer)
AGGREGATIONS: tuple[Aggregation, ...] = get_args(Aggregation)
