# Type stubs of the compiled extension `toprank._core` (checked by mypy.stubtest in `make test`).
from collections.abc import Callable
from typing import Any, Literal, final

import numpy as np
from numpy.typing import NDArray

from toprank._options import HingeVariant, Kernel, Optimizer, RankerLoss, Surrogate, TopKLoss
from toprank.distributed._partitions import M3lSettings, SvcSettings

__all__ = [
    "__version__",
    "InvalidInputError",
    "InfeasibleError",
    "NoSolutionError",
    "InternalError",
    "simplex",
    "knapsack",
    "topk_cone",
    "topk_simplex",
    "box_simplex",
    "capped_simplex",
    "capped_simplex_entropy",
    "sparsemax",
    "rankmax",
    "rankmax_loss",
    "softmax_loss",
    "sparsemax_loss",
    "topk_hinge",
    "m3l_fit_kernel",
    "m3l_fit_linear",
    "ranker_epoch",
    "ranker_objective",
    "sdca_fit_linear",
    "sdca_fit_kernel",
    "kernel_cross",
    "attop_fit",
    "SvcPartition",
    "M3lPartition",
    "cocoa_step_length",
    "relative_gap",
    "pq_train",
    "TraceNormSolver",
    "TraceNormFit",
    "pq_encode",
    "pq_decode",
    "pq_dot",
    "pq_tdot",
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
def topk_hinge(
    scores: _Float, y: int | NDArray[np.int64], k: int, variant: HingeVariant = "alpha", *, n_jobs: int | None = None
) -> _Loss: ...

_Progress = Callable[[int, float, float, float, float], object]

def m3l_fit_kernel(
    x: NDArray[np.floating[Any]],
    y: NDArray[np.float64],
    r: NDArray[np.float64],
    c: float,
    delta_plus: NDArray[np.float64],
    delta_minus: NDArray[np.float64],
    *,
    kernel: Kernel,
    gamma: float,
    degree: int,
    coef0: float,
    cache_size: float,
    tol: float,
    max_iter: int,
    intercept_shift: float = 0.0,
    report_every: int = 0,
    dual_coef: NDArray[np.float64] | None = None,
    n_jobs: int | None = None,
    callback: _Progress | None = None,
) -> dict[str, Any]: ...
def m3l_fit_linear(
    x: Any,
    y: NDArray[np.float64],
    r: NDArray[np.float64],
    c: float,
    delta_plus: NDArray[np.float64],
    delta_minus: NDArray[np.float64],
    *,
    tol: float,
    max_iter: int,
    seed: int,
    bias: float | None = None,
    shrinking: bool = True,
    dual_coef: NDArray[np.float64] | None = None,
    n_jobs: int | None = None,
    callback: _Progress | None = None,
) -> dict[str, Any]: ...
def ranker_epoch(
    x: Any,
    y_indptr: NDArray[np.int64],
    y_indices: NDArray[np.int64],
    rows: NDArray[np.int64],
    theta: NDArray[np.floating[Any]],
    first: NDArray[np.floating[Any]],
    second: NDArray[np.floating[Any]],
    steps: int,
    *,
    n_labels: int,
    n_components: int,
    loss: RankerLoss,
    k: int,
    eta: float,
    optimizer: Optimizer,
    learning_rate: float,
    alpha: float,
    batch_size: int,
    seed: int,
    n_jobs: int | None = None,
) -> dict[str, Any]: ...
def ranker_objective(
    x: Any,
    y_indptr: NDArray[np.int64],
    y_indices: NDArray[np.int64],
    rows: NDArray[np.int64],
    theta: NDArray[np.floating[Any]],
    *,
    n_labels: int,
    n_components: int,
    loss: RankerLoss,
    k: int,
    eta: float,
    alpha: float,
    batch_size: int = 256,
    n_jobs: int | None = None,
) -> tuple[float, NDArray[np.floating[Any]]]: ...

# CoCoA+ partitions (`src/bindings/cocoa.rs`); their settings are
# `toprank.distributed._partitions.SvcSettings` / `M3lSettings`, read by attribute.
_State = tuple[dict[str, NDArray[np.float64]], dict[str, NDArray[np.int64]]]
_Arrays = dict[str, NDArray[Any]]

@final
class SvcPartition:
    """A TopKSVC partition of a CoCoA+ fit on its rows X, with the state its rounds update."""

    def __new__(
        cls, x: Any, y: NDArray[np.int64], c: NDArray[np.floating[Any]], settings: SvcSettings, seed: int
    ) -> SvcPartition: ...
    def round(self, coef: NDArray[np.float64], step: float) -> tuple[NDArray[np.float64], tuple[float, float]]: ...
    def terms(self, coef: NDArray[np.float64], step: float) -> tuple[float, float, float]: ...
    def state(self, step: float | None) -> _State: ...
    def restore(self, floats: _Arrays, ints: _Arrays) -> None: ...

@final
class M3lPartition:
    """A linear M3L partition of a CoCoA+ fit on its rows X, with the state its rounds update."""

    def __new__(
        cls,
        x: Any,
        y: NDArray[np.float64],
        delta: tuple[NDArray[np.float64], NDArray[np.float64]],
        settings: M3lSettings,
        seed: int,
    ) -> M3lPartition: ...
    def round(self, coef: NDArray[np.float64], step: float) -> tuple[NDArray[np.float64], tuple[float, float]]: ...
    def terms(self, coef: NDArray[np.float64], step: float) -> tuple[float, float, float]: ...
    def state(self, step: float | None) -> _State: ...
    def restore(self, floats: _Arrays, ints: _Arrays) -> None: ...

def cocoa_step_length(dual_half: float, dual_one: float, w_dw: float, dw_dw: float) -> float: ...
def relative_gap(primal: float, dual: float) -> float: ...
def sdca_fit_linear(
    x: Any,
    y: NDArray[np.int64],
    c: NDArray[np.float64],
    n_classes: int,
    *,
    loss: TopKLoss,
    k: int,
    smoothing: float,
    bias: float | None,
    tol: float,
    max_epochs: int,
    check_every: int,
    seed: int,
    n_jobs: int | None = None,
    parallel: bool | None = None,
    shrinking: bool = True,
    dual_coef: NDArray[np.float64] | None = None,
    callback: _Progress | None = None,
    codebooks: NDArray[np.float32] | None = None,
) -> dict[str, Any]: ...
def sdca_fit_kernel(
    x: NDArray[np.floating[Any]],
    y: NDArray[np.int64],
    c: NDArray[np.float64],
    n_classes: int,
    *,
    kernel: Kernel,
    gamma: float,
    degree: int,
    coef0: float,
    cache_size: float,
    loss: TopKLoss,
    k: int,
    smoothing: float,
    tol: float,
    max_epochs: int,
    check_every: int,
    seed: int,
    n_jobs: int | None = None,
    shrinking: bool = True,
    dual_coef: NDArray[np.float64] | None = None,
    callback: _Progress | None = None,
) -> dict[str, Any]: ...
def kernel_cross(
    z: NDArray[np.float64],
    x: NDArray[np.float64],
    *,
    kernel: Kernel,
    gamma: float,
    degree: int,
    coef0: float,
    n_jobs: int | None = None,
) -> NDArray[np.float64]: ...
def pq_train(
    x: NDArray[np.floating[Any]],
    *,
    n_subspaces: int,
    n_bits: int,
    n_iter: int,
    max_points_per_centroid: int,
    seed: int,
    n_jobs: int | None = None,
) -> tuple[NDArray[np.float32], NDArray[np.float64]]: ...
def pq_encode(
    codebooks: NDArray[np.float32], x: NDArray[np.floating[Any]], *, n_jobs: int | None = None
) -> NDArray[np.uint8]: ...
def pq_decode(
    codebooks: NDArray[np.float32], codes: NDArray[np.uint8], *, n_jobs: int | None = None
) -> NDArray[np.float32]: ...
def pq_dot(
    codebooks: NDArray[np.float32], codes: NDArray[np.uint8], b: NDArray[np.floating[Any]], *, n_jobs: int | None = None
) -> NDArray[np.floating[Any]]: ...
def pq_tdot(
    codebooks: NDArray[np.float32], codes: NDArray[np.uint8], b: NDArray[np.floating[Any]], *, n_jobs: int | None = None
) -> NDArray[np.floating[Any]]: ...
def attop_fit(
    x: NDArray[np.floating[Any]],
    positive: NDArray[np.bool_],
    *,
    method: Literal["toppushk", "patmat"],
    k: int,
    tau: float,
    surrogate: Surrogate,
    scale: float,
    c: float,
    kernel: Kernel,
    gamma: float,
    degree: int,
    coef0: float,
    cache_size: float,
    tol: float,
    max_iter: int,
    check_every: int,
    seed: int,
    reuse: float = 0.5,
    n_jobs: int | None = None,
    callback: _Progress | None = None,
) -> dict[str, Any]: ...

@final
class TraceNormFit:
    """A finished rank-one descent fit (``src/solvers/tracenorm/descent.rs``)."""

    @property
    def coef(self) -> NDArray[np.float64]: ...
    @property
    def intercept(self) -> NDArray[np.float64]: ...
    @property
    def singular_values(self) -> NDArray[np.float64]: ...
    @property
    def u(self) -> NDArray[np.float64]: ...
    @property
    def v(self) -> NDArray[np.float64]: ...
    @property
    def rank(self) -> int: ...
    @property
    def objective(self) -> float: ...
    @property
    def n_iter(self) -> int: ...
    @property
    def status(self) -> Literal["converged", "max_iter", "interrupted"]: ...
    @property
    def history(self) -> list[tuple[int, float, float, int, float]]: ...

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
        start: TraceNormFit
        | tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]
        | None = None,
        n_jobs: int | None = None,
        callback: _Progress | None = None,
    ) -> TraceNormFit: ...
