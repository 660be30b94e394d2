# Type stubs of the compiled extension `toprank._core` (checked by mypy.stubtest in `make test`).
from collections.abc import Callable
from typing import Any, Final, Literal, Protocol, TypeVar, final, overload

import numpy as np
from numpy.typing import NDArray

from toprank._options import (
    AttopSettings,
    FitStatus,
    HingeVariant,
    KernelSettings,
    M3lProblem,
    M3lSettings,
    RankerSettings,
    SdcaProblem,
    SdcaSettings,
)
from toprank.distributed._partitions import M3lPartitionSettings, SvcPartitionSettings
from toprank.pq import PqSettings

# What `_core` registers (stubtest compares the two as sets), sorted.
__all__ = [
    "FitReport",
    "InfeasibleError",
    "InternalError",
    "InvalidInputError",
    "M3lPartition",
    "NoSolutionError",
    "RankerProblem",
    "SvcPartition",
    "TraceNormFit",
    "TraceNormSolver",
    "__version__",
    "attop_fit",
    "bipartite_simplex",
    "box_simplex",
    "capped_simplex",
    "capped_simplex_entropy",
    "cocoa_step_length",
    "kernel_cross",
    "knapsack",
    "m3l_fit",
    "multilabel_hinge",
    "multilabel_softmax_loss",
    "pq_decode",
    "pq_encode",
    "pq_train",
    "rankmax",
    "rankmax_loss",
    "relative_gap",
    "topk_svm_fit",
    "simplex",
    "softmax_loss",
    "sparsemax",
    "sparsemax_loss",
    "topk_cone",
    "topk_hinge",
    "topk_simplex",
]

__version__: str

class InvalidInputError(ValueError): ...
class InfeasibleError(InvalidInputError): ...
class NoSolutionError(RuntimeError): ...
class InternalError(RuntimeError): ...

_Float = NDArray[np.floating[Any]]
_Loss = float | NDArray[np.floating[Any]]

def simplex(x: _Float, r: float = 1.0, inequality: bool = False, *, n_jobs: int | None = None) -> _Float: ...
def knapsack(x: _Float, lo: float, hi: float, r: float, *, n_jobs: int | None = None) -> _Float: ...
def topk_cone(x: _Float, k: int, rho: float = 0.0, *, n_jobs: int | None = None) -> _Float: ...
def topk_simplex(x: _Float, k: int, r: float = 1.0, rho: float = 0.0, *, n_jobs: int | None = None) -> _Float: ...
def bipartite_simplex(
    x: _Float, positive: NDArray[np.bool_], r: float = 1.0, rho: float = 0.0, *, n_jobs: int | None = None
) -> _Float: ...
def box_simplex(x: _Float, hi: float, r: float = 1.0, rho: float = 0.0, *, n_jobs: int | None = None) -> _Float: ...
def capped_simplex(x: _Float, k: float, *, n_jobs: int | None = None) -> _Float: ...
def capped_simplex_entropy(x: _Float, k: float, *, n_jobs: int | None = None) -> _Float: ...
def sparsemax(z: _Float, *, n_jobs: int | None = None) -> _Float: ...
def rankmax(
    z: _Float, y: int | NDArray[np.int64], k: int = 1, eta: float = 1.0, *, n_jobs: int | None = None
) -> _Float: ...
def rankmax_loss(
    z: _Float, y: int | NDArray[np.int64], k: int = 1, eta: float = 1.0, *, n_jobs: int | None = None
) -> tuple[_Loss, _Float]: ...
def softmax_loss(z: _Float, y: int | NDArray[np.int64], *, n_jobs: int | None = None) -> tuple[_Loss, _Float]: ...
def sparsemax_loss(z: _Float, y: int | NDArray[np.int64], *, n_jobs: int | None = None) -> tuple[_Loss, _Float]: ...
def multilabel_hinge(
    scores: _Float, y: NDArray[np.bool_], smoothing: float = 0.0, *, n_jobs: int | None = None
) -> tuple[_Loss, _Float]: ...
def multilabel_softmax_loss(z: _Float, y: NDArray[np.bool_], *, n_jobs: int | None = None) -> tuple[_Loss, _Float]: ...
def topk_hinge(
    scores: _Float,
    y: int | NDArray[np.int64],
    k: int,
    variant: HingeVariant = "alpha",
    smoothing: float = 0.0,
    *,
    n_jobs: int | None = None,
) -> tuple[_Loss, _Float]: ...

_Progress = Callable[[int, float, float, float, float], object]

@final
class FitReport:
    """The end of a dual solve (``src/bindings/report.rs``): why it stopped, the
    iterations run, the objectives and their relative gap, and every progress check as
    (n_iter, primal, dual, gap, seconds)."""

    status: Final[FitStatus]
    n_iter: Final[int]
    primal: Final[float]
    dual: Final[float]
    gap: Final[float]
    history: Final[list[tuple[int, float, float, float, float]]]

class _LabelSets(Protocol):
    """Positive labels per row in CSR form."""

    indptr: NDArray[np.int64]
    indices: NDArray[np.int64]

_F = TypeVar("_F", bound=np.floating[Any])

class _Training(Protocol[_F]):
    """The optimiser's state: θ, the two moments (all of θ's dtype) and the steps taken."""

    theta: NDArray[_F]
    first: NDArray[_F]
    second: NDArray[_F]
    steps: int

# A dual fit's weights (None for a kernel fit), dual rows and report.
_Fitted = tuple[NDArray[np.float64] | None, NDArray[np.float64], FitReport]
# Prox-SDCA's: the dual rows dense, or a SciPy CSR array where the core kept them sparse.
_SdcaFitted = tuple[NDArray[np.float64] | None, NDArray[np.float64] | Any, FitReport]

def m3l_fit(
    x: Any,
    problem: M3lProblem,
    settings: M3lSettings,
    *,
    n_jobs: int | None = None,
    callback: _Progress | None = None,
) -> tuple[NDArray[np.float64] | None, NDArray[np.float64], FitReport, float]: ...

@final
class RankerProblem:
    """A ranker's training problem (``src/bindings/ranker.rs``): X, the positive label
    sets, the rows to visit and the settings, read once for a fit's epochs."""

    def __new__(cls, x: Any, y: _LabelSets, rows: NDArray[np.int64], settings: RankerSettings) -> RankerProblem: ...
    def epoch(
        self, training: _Training[_F], seed: int, *, n_jobs: int | None = None
    ) -> tuple[tuple[NDArray[_F], NDArray[_F], NDArray[_F], int], tuple[float, int, bool]]: ...
    def objective(
        self, theta: NDArray[np.floating[Any]], *, n_jobs: int | None = None
    ) -> tuple[float, NDArray[np.floating[Any]]]: ...

def topk_svm_fit(
    x: Any,
    problem: SdcaProblem,
    settings: SdcaSettings,
    *,
    n_jobs: int | None = None,
    callback: _Progress | None = None,
) -> _SdcaFitted: ...
def kernel_cross(
    z: NDArray[np.float64], x: NDArray[np.float64], kernel: KernelSettings, *, n_jobs: int | None = None
) -> NDArray[np.float64]: ...
def attop_fit(
    x: NDArray[np.floating[Any]],
    positive: NDArray[np.bool_],
    settings: AttopSettings,
    *,
    n_jobs: int | None = None,
    callback: _Progress | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, FitReport, tuple[int, int]]: ...
def pq_train(
    x: NDArray[np.floating[Any]], settings: PqSettings, *, n_jobs: int | None = None
) -> tuple[NDArray[np.float32], NDArray[np.float64]]: ...
def pq_encode(
    codebooks: NDArray[np.float32], x: NDArray[np.floating[Any]], *, n_jobs: int | None = None
) -> NDArray[np.uint8]: ...
@overload
def pq_decode(
    codebooks: NDArray[np.float32], codes: NDArray[np.uint8], b: None = None, *, n_jobs: int | None = None
) -> NDArray[np.float32]: ...
@overload
def pq_decode(
    codebooks: NDArray[np.float32],
    codes: NDArray[np.uint8],
    b: NDArray[np.floating[Any]],
    *,
    transposed: bool = False,
    n_jobs: int | None = None,
) -> NDArray[np.floating[Any]]: ...

# U (n_features × rank), V (n_classes × rank), the singular values θ and the intercept b.
_TraceNormAtoms = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]

@final
class TraceNormFit:
    """A finished rank-one descent fit (``src/solvers/tracenorm/descent.rs``)."""

    coef: Final[NDArray[np.float64]]
    atoms: Final[_TraceNormAtoms]
    rank: Final[int]
    objective: Final[float]
    n_iter: Final[int]
    status: Final[Literal["converged", "max_iter", "interrupted"]]
    history: Final[list[tuple[int, float, float, int, float]]]

@final
class TraceNormSolver:
    """The penalties and settings of one trace-norm problem."""

    def __new__(
        cls,
        lambda_trace: float,
        lambda_fro: float,
        *,
        fit_intercept: bool,
        tol: float,
        max_iter: int,
        subspace_every: int,
        seed: int,
    ) -> TraceNormSolver: ...
    def fit(
        self,
        x: Any,
        y: NDArray[np.uint32],
        *,
        sample_weight: NDArray[np.float64] | None = None,
        start: TraceNormFit | _TraceNormAtoms | None = None,
        n_jobs: int | None = None,
        callback: _Progress | None = None,
    ) -> TraceNormFit: ...

# CoCoA+ partitions (`src/bindings/cocoa.rs`); their settings are
# `toprank.distributed._partitions.SvcPartitionSettings` / `M3lPartitionSettings`, read by attribute.
_State = tuple[dict[str, NDArray[np.float64]], dict[str, NDArray[np.int64]]]
_Arrays = dict[str, NDArray[Any]]

class _Partition:
    """A partition of a CoCoA+ fit on its rows X, with the state its rounds update (the
    class both partitions' constructors build, ``src/bindings/cocoa.rs``)."""

    def round(self, coef: NDArray[np.float64], step: float) -> tuple[NDArray[np.float64], tuple[float, float]]: ...
    def terms(self, coef: NDArray[np.float64], step: float) -> tuple[float, float, float]: ...
    def state(self, step: float | None) -> _State: ...
    def restore(self, floats: _Arrays, ints: _Arrays) -> None: ...

@final
class SvcPartition(_Partition):
    """A TopKSVC partition of a CoCoA+ fit."""

    def __new__(
        cls, x: Any, y: NDArray[np.int64], c: NDArray[np.floating[Any]], settings: SvcPartitionSettings, seed: int
    ) -> SvcPartition: ...

@final
class M3lPartition(_Partition):
    """A linear M3L partition of a CoCoA+ fit."""

    def __new__(
        cls,
        x: Any,
        y: NDArray[np.float64],
        delta: tuple[NDArray[np.float64], NDArray[np.float64]],
        settings: M3lPartitionSettings,
        seed: int,
    ) -> M3lPartition: ...

def cocoa_step_length(dual_half: float, dual_one: float, w_dw: float, dw_dw: float) -> float: ...
def relative_gap(primal: float, dual: float) -> float: ...
