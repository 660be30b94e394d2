"""PyTorch operations: the projections and losses of toprank as differentiable functions and modules.

Install with ``pip install "toprank[torch]"``. Every function takes scores of any shape
(..., m) and works along the last dimension, each leading index a row; float32 and
float64 (float32 stays float32).

* Where: CPU tensors go to the Rust kernels of :mod:`toprank.projections` and
  :mod:`toprank.losses` in one call per forward pass, without a copy when the rows are
  contiguous (a non-contiguous tensor is copied once) and without the GIL (``n_jobs``
  threads for the rows). Tensors on any other device (CUDA) run a torch implementation
  of the same thresholds, sort- and top-k based, vectorised over the rows;
  ``backend="torch"`` runs it on CPU too, ``backend="rust"`` insists on the kernels.
* Backward: the maps' vector-Jacobian products come from the structure of their output
  (the support, the entries at a cap, the free ones) in O(m) per row, never a Jacobian;
  a loss stores the gradient its forward pass computed (the kernels write it with the
  loss) and its backward pass scales it. At the kinks of a non-smooth function the
  gradient is one element of its (Clarke) subdifferential. The backward passes are not
  differentiable themselves: a second derivative (``create_graph=True``) raises.
* Losses reduce like :class:`torch.nn.CrossEntropyLoss`: ``reduction="mean"`` over the
  rows whose label is not ``ignore_index`` (NaN when every label is), ``"sum"``, or
  ``"none"`` (a loss per row, the leading shape).

Bad input raises :class:`toprank.InvalidInputError` naming the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without torch
    raise ImportError('toprank.torch needs PyTorch: pip install "toprank[torch]"') from exc
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from toprank import _core
from toprank import _torch_native as native
from toprank._docs import fill_doc
from toprank._estimator import choice
from toprank._options import HINGE_VARIANTS, REDUCTIONS, TORCH_BACKENDS, HingeVariant, Reduction, TorchBackend
from toprank._validation import as_count, as_jobs, as_real, bounded_real, finite_loss
from toprank.exceptions import InvalidInputError, NoSolutionError

__all__ = [
    "sparsemax",
    "topk_simplex",
    "capped_simplex",
    "rankmax",
    "rankmax_loss",
    "softmax_loss",
    "sparsemax_loss",
    "topk_hinge",
    "multilabel_hinge",
    "multilabel_softmax_loss",
    "Sparsemax",
    "TopKSimplex",
    "CappedSimplex",
    "Rankmax",
    "RankmaxLoss",
    "SoftmaxLoss",
    "SparsemaxLoss",
    "TopKHingeLoss",
    "MultiLabelHingeLoss",
    "MultiLabelSoftmaxLoss",
]

_FLOATS = (torch.float32, torch.float64)

# ----------------------------------------------------------------------------- inputs


def _rows(x: Any, name: str) -> Tensor:
    """``x`` checked (a float32/float64 tensor with a non-empty last dimension) as rows (n, m)."""
    if not isinstance(x, Tensor):
        raise InvalidInputError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in _FLOATS:
        raise InvalidInputError(f"{name}: expected a float32 or float64 tensor, got {x.dtype}")
    if x.ndim == 0 or x.numel() == 0:
        raise InvalidInputError(
            f"{name}: expected a non-empty tensor of at least 1 dimension, got shape {tuple(x.shape)}"
        )
    return x.reshape(-1, x.shape[-1])


def _on_rust(x: Tensor, backend: TorchBackend) -> bool:
    """Whether the Rust kernels compute (CPU and not ``backend="torch"``)."""
    choice(backend, "backend", TORCH_BACKENDS)
    if x.device.type == "cpu":
        return backend != "torch"
    if backend == "rust":
        raise InvalidInputError(
            f"backend: 'rust' computes on CPU tensors only, got a tensor on {x.device}; use 'auto' or 'torch'"
        )
    return False


def _finite_rows(x: Tensor, name: str) -> None:
    """The check the kernels make, for the torch path."""
    if not bool(torch.isfinite(x).all()):
        raise InvalidInputError(f"{name}: contains NaN or infinite entries")


def _labels(y: Any, x: Tensor, rows: Tensor, ignore_index: int | None = None) -> Tensor:
    """``y`` as int64 labels (n,), one per row of ``x`` (its leading shape), each in [0, m)
    or ``ignore_index``."""
    if isinstance(y, int) and not isinstance(y, bool) and x.ndim == 1:
        y = torch.tensor(y, device=x.device)
    if not isinstance(y, Tensor):
        raise InvalidInputError(f"y: expected a torch.Tensor of integer labels, got {type(y).__name__}")
    if y.dtype.is_floating_point or y.dtype.is_complex or y.dtype == torch.bool:
        raise InvalidInputError(f"y: expected integer labels, got {y.dtype}")
    if tuple(y.shape) != tuple(x.shape[:-1]):
        raise InvalidInputError(f"y: expected shape {tuple(x.shape[:-1])} (one label per row), got {tuple(y.shape)}")
    if y.device != x.device:
        raise InvalidInputError(f"y: on {y.device}, the scores on {x.device}")
    labels = y.reshape(-1).to(torch.int64)
    m = rows.shape[-1]
    bad = (labels < 0) | (labels >= m)
    if ignore_index is not None:
        bad &= labels != ignore_index
    if bool(bad.any()):
        label = int(labels[bad][0])
        raise InvalidInputError(f"y: label {label} out of range [0, {m})")
    return labels


def _k_range(k: Any, name: str, low: int, high: int) -> int:
    value = as_count(k, name)
    if not low <= value <= high:
        raise InvalidInputError(f"{name}: must satisfy {low} <= {name} <= {high}, got {value}")
    return value


def _numpy(x: Tensor) -> Any:
    """A CPU tensor as a NumPy array sharing its memory."""
    return x.detach().numpy()


# ----------------------------------------------------------------------------- maps


class _Map(torch.autograd.Function):
    """A projection of rows (n, m): forward by ``compute``, backward by ``vjp(p, g)``."""

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, compute: Callable[[Tensor], Tensor], vjp: Callable[[Tensor, Tensor], Tensor]
    ) -> Tensor:
        p = compute(x)
        ctx.vjp = vjp
        ctx.save_for_backward(p)
        return p

    @staticmethod
    @once_differentiable  # the VJP treats the output's structure as constant
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, None, None]:
        (p,) = ctx.saved_tensors
        return ctx.vjp(p, g), None, None


def _map(
    x: Tensor,
    rows: Tensor,
    rust: Callable[..., Any] | None,
    args: tuple[Any, ...],
    n_jobs: int | None,
    torch_path: Callable[[Tensor], Tensor],
    vjp: Callable[[Tensor, Tensor], Tensor],
    backend: TorchBackend,
    name: str,
    op: str,
) -> Tensor:
    compute: Callable[[Tensor], Tensor]
    if _on_rust(x, backend) and rust is not None:
        jobs = as_jobs(n_jobs)

        def compute(r: Tensor) -> Tensor:
            return torch.from_numpy(rust(_numpy(r), *args, n_jobs=jobs))

    else:
        _finite_rows(rows, name)

        def compute(r: Tensor) -> Tensor:
            p = torch_path(r)
            # The kernels bound their rounding; here entries near the float range, or a
            # bound far below their rounding, give NaN: refuse rather than return it.
            if not bool(torch.isfinite(p).all()):
                raise NoSolutionError(f"{op}: the torch path cannot resolve these entries of {name}; rescale {name}")
            return p

    p: Tensor = _Map.apply(rows, compute, vjp)
    return p.reshape(x.shape)


@fill_doc
def sparsemax(z: Tensor, *, backend: TorchBackend = "auto", n_jobs: int | None = None) -> Tensor:
    r"""Sparsemax along the last dimension, differentiable: the projection onto the simplex.

    .. math:: \operatorname{sparsemax}(z) = \arg\min_{p \ge 0,\ \sum p = 1} \|p - z\|^2
              = \max(z - \tau, 0).

    Parameters
    ----------
    %(torch_z)s
    backend : {"auto", "rust", "torch"}, default "auto"
        ``"auto"``: the Rust kernel for CPU tensors, torch on other devices; ``"rust"``:
        the kernel (CPU tensors only); ``"torch"``: the torch implementation.
    %(torch_n_jobs)s

    Returns
    -------
    torch.Tensor
        sparsemax(z), of z's shape, dtype and device. Backward: on the support S = {p > 0},
        g − mean_S(g); 0 elsewhere.

    See Also
    --------
    toprank.projections.sparsemax : The NumPy function (the same kernel).
    sparsemax_loss : Its Fenchel–Young loss.

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import sparsemax
    >>> z = torch.tensor([[0.5, 1.2, -0.3, 0.9]], dtype=torch.float64, requires_grad=True)
    >>> p = sparsemax(z)
    >>> p.detach()
    tensor([[0.0000, 0.6500, 0.0000, 0.3500]], dtype=torch.float64)
    >>> p[0, 1].backward()
    >>> z.grad
    tensor([[ 0.0000,  0.5000,  0.0000, -0.5000]], dtype=torch.float64)
    """
    rows = _rows(z, "z")
    return _map(z, rows, _core.sparsemax, (), n_jobs, native.sparsemax, native.sparsemax_vjp, backend, "z", "sparsemax")


@fill_doc
def topk_simplex(
    x: Tensor, k: int, r: float = 1.0, *, backend: TorchBackend = "auto", n_jobs: int | None = None
) -> Tensor:
    r"""The projection onto the top-k simplex along the last dimension, differentiable.

    .. math:: \Delta_k(r) = \{p : 0 \le p_i \le \tfrac1k \textstyle\sum_j p_j,
              \ \textstyle\sum_j p_j \le r\},

    the dual set of the top-k hinge loss ``"alpha"``
    (:func:`toprank.projections.topk_simplex` with ``rho=0``).

    Parameters
    ----------
    %(torch_rows_x)s
    %(topk_k)s
    r : float, default 1.0
        The bound on the sum, finite and ``>= 0``.
    %(torch_projection_options)s

    Returns
    -------
    torch.Tensor
        The projection p = clip(x − t, 0, c), of x's shape, dtype and device. Backward:
        on the sum bound (Σp = r, c = r/k) g − its mean over the free entries
        0 < p < c, there; inside it (c = Σp/k) the derivative of the two equations
        that fix t and c (Lapin, Hein, Schiele, *Top-k Multiclass SVM*, NIPS 2015, §4.2).

    See Also
    --------
    toprank.projections.topk_simplex : The NumPy function (the same kernel).
    topk_hinge : The loss whose dual set it is.

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import topk_simplex
    >>> topk_simplex(torch.tensor([0.5, 1.2, -0.3, 0.9], dtype=torch.float64), k=2)
    tensor([0.0500, 0.5000, 0.0000, 0.4500], dtype=torch.float64)
    """
    rows = _rows(x, "x")
    kk = _k_range(k, "k", 1, rows.shape[-1])
    rr = bounded_real(r, "r", low=0.0, strict=False)
    return _map(
        x,
        rows,
        _core.topk_simplex,
        (kk, rr, 0.0),
        n_jobs,
        lambda v: native.topk_simplex(v, kk, rr),
        lambda p, g: native.topk_simplex_vjp(p, g, kk, rr),
        backend,
        "x",
        "topk_simplex",
    )


@fill_doc
def capped_simplex(x: Tensor, k: float, *, backend: TorchBackend = "auto", n_jobs: int | None = None) -> Tensor:
    r"""The projection onto the capped simplex {0 ≤ p ≤ 1, Σp = k} along the last dimension.

    p = clip(x − t, 0, 1) (:func:`toprank.projections.capped_simplex`); k = 1 is
    :func:`sparsemax`.

    Parameters
    ----------
    %(torch_rows_x)s
    k : float
        The sum, ``0 < k <= m`` (fractional allowed).
    %(torch_projection_options)s

    Returns
    -------
    torch.Tensor
        The projection, of x's shape, dtype and device. Backward: g − its mean over the
        free entries 0 < p < 1, there; 0 at 0 and at 1.

    See Also
    --------
    toprank.projections.capped_simplex : The NumPy function (the same kernel).
    rankmax : The adaptive projection onto the same set.

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import capped_simplex
    >>> capped_simplex(torch.tensor([0.5, 1.2, -0.3, 0.9], dtype=torch.float64), k=2)
    tensor([0.3000, 1.0000, 0.0000, 0.7000], dtype=torch.float64)
    """
    rows = _rows(x, "x")
    kk = as_real(k, "k")
    if not 0 < kk <= rows.shape[-1]:
        raise InvalidInputError(f"k: must satisfy 0 < k <= m = {rows.shape[-1]}, got {k!r}")
    return _map(
        x,
        rows,
        _core.capped_simplex,
        (kk,),
        n_jobs,
        lambda v: native.capped_simplex(v, kk),
        native.capped_simplex_vjp,
        backend,
        "x",
        "capped_simplex",
    )


@fill_doc
def rankmax(
    z: Tensor,
    y: Tensor,
    k: int = 1,
    eta: float = 1.0,
    *,
    backend: TorchBackend = "auto",
    n_jobs: int | None = None,
) -> Tensor:
    r"""Rankmax(z, y) along the last dimension, differentiable in z.

    .. math:: \operatorname{Rankmax}(z, y) = \operatorname{clip}(\alpha (z - \mu), 0, 1),
              \quad \mu = \min(z_y, z_{[k]}) - \eta, \quad \textstyle\sum_i p_i = k

    (Kong et al., *Rankmax*, NeurIPS 2020, Prop. 3; :func:`toprank.projections.rankmax`).

    Parameters
    ----------
    %(torch_z)s
    y : torch.Tensor of int, shape (...)
        The label of each row, in [0, m) (an int for a 1-D ``z``).
    k : int, default 1
        The mass, ``1 <= k < m``.
    %(rankmax_eta)s
    %(torch_backend)s
    %(torch_n_jobs)s

    Returns
    -------
    torch.Tensor
        Rankmax(z, y), of z's shape, dtype and device. Backward: with F the free entries
        (0 < p < 1) and u those at 1, q = Σ_F g_i p_i / (k − u): α(g_i − q) on F, and
        −α(Σ_F g − f·q) more at the index that sets μ (y, or that of z_[k]), f the size of F.

    See Also
    --------
    toprank.projections.rankmax : The NumPy function (the same kernel).
    rankmax_loss : Its cross-entropy.

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import rankmax
    >>> z = torch.tensor([0.5, 1.2, -0.3, 0.9], dtype=torch.float64)
    >>> rankmax(z, 2).round(decimals=4)
    tensor([0.2400, 0.3333, 0.1333, 0.2933], dtype=torch.float64)
    """
    rows = _rows(z, "z")
    labels = _labels(y, z, rows)
    kk = _k_range(k, "k", 1, rows.shape[-1] - 1)
    ee = bounded_real(eta, "eta", low=0.0, strict=True)
    return _map(
        z,
        rows,
        lambda v, *a, n_jobs: _core.rankmax(v, _numpy(labels), kk, ee, n_jobs=n_jobs),
        (),
        n_jobs,
        lambda v: native.rankmax(v, labels, kk, ee),
        lambda p, g: native.rankmax_vjp(p, g, rows.detach(), labels, kk, ee),
        backend,
        "z",
        "rankmax",
    )


# ----------------------------------------------------------------------------- losses


class _Loss(torch.autograd.Function):
    """A loss of rows (n, m) whose forward pass also computes its gradient (n, m)."""

    @staticmethod
    def forward(
        ctx: Any, z: Tensor, compute: Callable[[], tuple[Tensor, Tensor]], keep: Tensor | None, reduction: Reduction
    ) -> Tensor:
        loss, grad = compute()
        if keep is not None:
            loss = loss * keep
        divisor: Tensor | int = 1
        if reduction == "mean":
            divisor = loss.shape[0] if keep is None else keep.sum()
        out = loss if reduction == "none" else loss.sum() / divisor
        # The row weights (ignored rows 0, 1/divisor for the mean) are applied in the
        # backward pass, with the incoming gradient: one product over the (n, m) gradient.
        ctx.reduction, ctx.divisor, ctx.keep = reduction, divisor, keep
        ctx.save_for_backward(grad)
        return out

    @staticmethod
    @once_differentiable  # the stored gradient is a constant: no second derivative
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, None, None, None]:
        (grad,) = ctx.saved_tensors
        scale = g[:, None] if ctx.reduction == "none" else g
        if ctx.reduction == "mean":
            scale = scale / (ctx.divisor if isinstance(ctx.divisor, int) else torch.clamp(ctx.divisor, min=1))
        if ctx.keep is not None:
            scale = scale * ctx.keep[:, None]
        return grad * scale, None, None, None


# How a loss reads its labels: (y, the scores, their rows) -> the labels the kernels take
# and the 0/1 weights of the rows that count (None when every row does).
_LabelReader = Callable[[Any, Tensor, Tensor], tuple[Tensor, Tensor | None]]


def _class_labels(ignore_index: Any) -> _LabelReader:
    """One class label per row, rows labelled ``ignore_index`` counting nowhere (their
    label set to 0 for the kernels)."""

    def read(y: Any, z: Tensor, rows: Tensor) -> tuple[Tensor, Tensor | None]:
        ignore = as_count(ignore_index, "ignore_index")
        labels = _labels(y, z, rows, ignore)
        kept = labels != ignore
        if bool(kept.all()):
            return labels, None
        return torch.where(kept, labels, 0), kept.to(rows.dtype)

    return read


def _label_sets(y: Any, z: Tensor, rows: Tensor) -> tuple[Tensor, None]:
    """``y`` a 0/1 indicator of ``z``'s shape, each row with a label and a class that is
    not one, as bool rows; every row counts."""
    if not isinstance(y, Tensor):
        raise InvalidInputError(f"y: expected a torch.Tensor of label sets, got {type(y).__name__}")
    if tuple(y.shape) != tuple(z.shape) or y.device != z.device:
        raise InvalidInputError(f"y: expected label sets of shape {tuple(z.shape)} on {z.device}, got {tuple(y.shape)}")
    if y.dtype.is_floating_point or y.dtype.is_complex:
        raise InvalidInputError(f"y: expected a bool or 0/1 integer tensor, got {y.dtype}")
    if y.dtype != torch.bool and not bool(((y == 0) | (y == 1)).all()):
        raise InvalidInputError("y: expected only 0/1 values")
    labels = y.reshape(rows.shape).to(torch.bool)
    count = labels.sum(-1)
    if not bool(((count > 0) & (count < rows.shape[-1])).all()):
        raise InvalidInputError("y: every row needs a label and a class that is not one")
    return labels, None


def _loss(
    name: str,
    z: Tensor,
    y: Any,
    read_labels: _LabelReader,
    rust: Callable[..., Any],
    args: tuple[Any, ...],
    torch_path: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]],
    reduction: Reduction,
    backend: TorchBackend,
    n_jobs: int | None,
    argument: str = "z",
) -> Tensor:
    """The loss ``name`` of the scores ``z`` (the argument ``argument``) for the labels
    ``read_labels`` makes of ``y``, on the chosen path, reduced."""
    rows = _rows(z, argument)
    choice(reduction, "reduction", REDUCTIONS)
    labels, keep = read_labels(y, z, rows)
    if _on_rust(z, backend):
        jobs = as_jobs(n_jobs)

        def compute() -> tuple[Tensor, Tensor]:
            loss, grad = rust(_numpy(rows), _numpy(labels), *args, n_jobs=jobs)
            finite_loss(name, bool(np.all(np.isfinite(loss))))
            return torch.from_numpy(loss), torch.from_numpy(grad)

    else:
        _finite_rows(rows, argument)

        def compute() -> tuple[Tensor, Tensor]:
            loss, grad = torch_path(rows.detach(), labels)
            finite_loss(name, bool(torch.isfinite(loss).all()))
            return loss, grad

    out: Tensor = _Loss.apply(rows, compute, keep, reduction)
    return out.reshape(z.shape[:-1]) if reduction == "none" else out


@fill_doc
def rankmax_loss(
    z: Tensor,
    y: Tensor,
    k: int = 1,
    eta: float = 1.0,
    *,
    reduction: Reduction = "mean",
    ignore_index: int = -100,
    backend: TorchBackend = "auto",
    n_jobs: int | None = None,
) -> Tensor:
    r"""The Rankmax cross-entropy −log min(1, Rankmax(z, y)_y), differentiable in z.

    For k = 1, log Σ_i (z_i − z_y + η)_+ − log η (Kong et al., *Rankmax*, NeurIPS 2020,
    eqs. (14)-(16)); :func:`toprank.losses.rankmax_loss` row by row.

    Parameters
    ----------
    %(torch_z_y_ignore)s
    k : int, default 1
        The Rankmax mass, ``1 <= k < m``.
    %(rankmax_eta)s
    %(torch_loss_options)s

    %(torch_loss_returns)s

    See Also
    --------
    toprank.losses.rankmax_loss : The NumPy function (the same kernel).
    RankmaxLoss : The module.

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import rankmax_loss
    >>> z = torch.tensor([[0.5, 1.2, -0.3, 0.9]], dtype=torch.float64, requires_grad=True)
    >>> loss = rankmax_loss(z, torch.tensor([1]))
    >>> loss.backward()
    >>> round(loss.item(), 4), z.grad
    (0.6931, tensor([[ 0.5000, -1.0000,  0.0000,  0.5000]], dtype=torch.float64))
    """
    m = _rows(z, "z").shape[-1]
    kk = _k_range(k, "k", 1, m - 1)
    ee = bounded_real(eta, "eta", low=0.0, strict=True)
    return _loss(
        "rankmax_loss",
        z,
        y,
        _class_labels(ignore_index),
        _core.rankmax_loss,
        (kk, ee),
        lambda v, t: native.rankmax_loss(v, t, kk, ee),
        reduction,
        backend,
        n_jobs,
    )


@fill_doc
def softmax_loss(
    z: Tensor,
    y: Tensor,
    *,
    reduction: Reduction = "mean",
    ignore_index: int = -100,
    backend: TorchBackend = "auto",
    n_jobs: int | None = None,
) -> Tensor:
    r"""The softmax cross-entropy log Σ_i e^{z_i} − z_y, differentiable in z.

    The value of :func:`torch.nn.functional.cross_entropy`, from the Rust kernel of
    :func:`toprank.losses.softmax_loss` on CPU.

    Parameters
    ----------
    %(torch_z_y_ignore)s
    %(torch_loss_options)s

    %(torch_loss_returns)s

    See Also
    --------
    toprank.losses.softmax_loss : The NumPy function (the same kernel).
    SoftmaxLoss : The module.

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import softmax_loss
    >>> z = torch.tensor([[0.5, 1.2, -0.3, 0.9]], dtype=torch.float64)
    >>> round(softmax_loss(z, torch.tensor([2])).item(), 4)
    2.4004
    """
    return _loss(
        "softmax_loss",
        z,
        y,
        _class_labels(ignore_index),
        _core.softmax_loss,
        (),
        native.softmax_loss,
        reduction,
        backend,
        n_jobs,
    )


@fill_doc
def sparsemax_loss(
    z: Tensor,
    y: Tensor,
    *,
    reduction: Reduction = "mean",
    ignore_index: int = -100,
    backend: TorchBackend = "auto",
    n_jobs: int | None = None,
) -> Tensor:
    r"""The sparsemax loss Σ_i p_i (z_i − z_y) − ½‖p‖² + ½, p = sparsemax(z), differentiable in z.

    Its gradient is p − e_y (Martins & Astudillo, ICML 2016, §3;
    :func:`toprank.losses.sparsemax_loss`).

    Parameters
    ----------
    %(torch_z_y_ignore)s
    %(torch_loss_options)s

    %(torch_loss_returns)s

    See Also
    --------
    toprank.losses.sparsemax_loss : The NumPy function (the same kernel).
    SparsemaxLoss : The module.

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import sparsemax_loss
    >>> z = torch.tensor([[0.5, 1.2, -0.3, 0.9]], dtype=torch.float64, requires_grad=True)
    >>> sparsemax_loss(z, torch.tensor([1])).backward()
    >>> z.grad
    tensor([[ 0.0000, -0.3500,  0.0000,  0.3500]], dtype=torch.float64)
    """
    return _loss(
        "sparsemax_loss",
        z,
        y,
        _class_labels(ignore_index),
        _core.sparsemax_loss,
        (),
        native.sparsemax_loss,
        reduction,
        backend,
        n_jobs,
    )


@fill_doc
def topk_hinge(
    scores: Tensor,
    y: Tensor,
    k: int,
    variant: HingeVariant = "alpha",
    smoothing: float = 0.0,
    *,
    reduction: Reduction = "mean",
    ignore_index: int = -100,
    backend: TorchBackend = "auto",
    n_jobs: int | None = None,
) -> Tensor:
    r"""The top-k hinge loss (alpha or beta), optionally smoothed, differentiable in the scores.

    Over h_j = 1 + s_j − s_y (j ≠ y): alpha (1/k) max(0, Σ_{j≤k} h_[j]), beta
    (1/k) Σ_{j≤k} max(0, h_[j]); with ``smoothing`` γ > 0 the smoothed loss of the top-k
    SVM, max_{p ∈ S} ⟨h, p⟩ − (γ/2)‖p‖² (:func:`toprank.losses.topk_hinge`).

    Parameters
    ----------
    %(torch_scores)s
    %(torch_y_ignore)s
    %(topk_hinge_k_variant)s
    %(torch_smoothing)s
    %(torch_reduction)s
    backend : {"auto", "rust", "torch"}, default "auto"
        As :func:`sparsemax`. With smoothing the torch path needs O(k·m) memory per row.
    %(torch_n_jobs)s

    Returns
    -------
    torch.Tensor
        A scalar, or the losses of shape (...) for ``reduction="none"``; the scores' dtype.
        The gradient is the maximiser p (a subgradient for γ = 0).

    See Also
    --------
    toprank.losses.topk_hinge : The NumPy function (the same kernel).
    TopKHingeLoss : The module.
    topk_simplex : The dual set of alpha.

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import topk_hinge
    >>> s = torch.tensor([[0.5, 1.2, -0.3, 0.9]] * 2, dtype=torch.float64)
    >>> topk_hinge(s, torch.tensor([2, 1]), k=2, reduction="none")
    tensor([2.3500, 0.5000], dtype=torch.float64)
    >>> topk_hinge(s, torch.tensor([2, 1]), k=2, smoothing=1.0, reduction="none")
    tensor([2.1025, 0.2500], dtype=torch.float64)
    """
    m = _rows(scores, "scores").shape[-1]
    kk = _k_range(k, "k", 1, m - 1)
    choice(variant, "variant", HINGE_VARIANTS)
    gamma = bounded_real(smoothing, "smoothing", low=0.0, strict=False)
    return _loss(
        "topk_hinge",
        scores,
        y,
        _class_labels(ignore_index),
        _core.topk_hinge,
        (kk, variant, gamma),
        lambda v, t: native.topk_hinge(v, t, kk, variant == "alpha", gamma),
        reduction,
        backend,
        n_jobs,
        argument="scores",
    )


@fill_doc
def multilabel_hinge(
    scores: Tensor,
    y: Tensor,
    smoothing: float = 0.0,
    *,
    reduction: Reduction = "mean",
    backend: TorchBackend = "auto",
    n_jobs: int | None = None,
) -> Tensor:
    r"""The multi-label hinge, optionally smoothed, differentiable in the scores.

    max(0, 1 + max_{l∈N} s_l − min_{j∈Y} s_j) for each row's labels Y and other classes
    N; with ``smoothing`` γ > 0 the smoothed loss of :class:`toprank.MultiLabelSVC`,
    max_{p ∈ B} ⟨h, p⟩ − (γ/2)‖p‖² over the bipartite simplex
    (:func:`toprank.losses.multilabel_hinge`).

    Parameters
    ----------
    %(torch_scores)s
    %(torch_label_sets)s
    %(torch_smoothing)s
    %(torch_label_set_options)s

    Returns
    -------
    torch.Tensor
        A scalar, or the losses of shape (...) for ``reduction="none"``; the scores' dtype.
        The gradient is (−p_Y, p_N), p the maximiser (a subgradient for γ = 0).

    See Also
    --------
    toprank.losses.multilabel_hinge : The NumPy function (the same kernel).
    MultiLabelHingeLoss : The module.

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import multilabel_hinge
    >>> s = torch.tensor([[2.0, 1.5, 0.7, -1.0]], dtype=torch.float64, requires_grad=True)
    >>> loss = multilabel_hinge(s, torch.tensor([[1, 1, 0, 0]]))
    >>> loss.backward()
    >>> round(loss.item(), 4), s.grad
    (0.2, tensor([[ 0., -1.,  1.,  0.]], dtype=torch.float64))
    """
    gamma = bounded_real(smoothing, "smoothing", low=0.0, strict=False)
    return _loss(
        "multilabel_hinge",
        scores,
        y,
        _label_sets,
        _core.multilabel_hinge,
        (gamma,),
        lambda v, t: native.multilabel_hinge(v, t, gamma),
        reduction,
        backend,
        n_jobs,
        argument="scores",
    )


@fill_doc
def multilabel_softmax_loss(
    z: Tensor,
    y: Tensor,
    *,
    reduction: Reduction = "mean",
    backend: TorchBackend = "auto",
    n_jobs: int | None = None,
) -> Tensor:
    r"""The multi-label softmax loss log Σ e^z − mean_{j∈Y} z_j, differentiable in z.

    The cross-entropy of softmax(z) against the uniform distribution on the labels;
    its gradient is softmax(z) minus 1/#Y on the labels (:func:`toprank.losses.multilabel_softmax_loss`).

    Parameters
    ----------
    %(torch_z)s
    %(torch_label_sets)s
    %(torch_label_set_options)s

    %(torch_loss_returns)s

    See Also
    --------
    toprank.losses.multilabel_softmax_loss : The NumPy function (the same kernel).
    MultiLabelSoftmaxLoss : The module.

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import multilabel_softmax_loss
    >>> z = torch.tensor([[2.0, 1.5, 0.7, -1.0]], dtype=torch.float64)
    >>> round(multilabel_softmax_loss(z, torch.tensor([[True, True, False, False]])).item(), 4)
    0.9069
    """
    return _loss(
        "multilabel_softmax_loss",
        z,
        y,
        _label_sets,
        _core.multilabel_softmax_loss,
        (),
        native.multilabel_softmax_loss,
        reduction,
        backend,
        n_jobs,
    )


# ----------------------------------------------------------------------------- modules


class _Module(nn.Module):
    """Keeps the keyword options every op takes (the whole signature of a module without
    options of its own)."""

    def __init__(self, *, backend: TorchBackend = "auto", n_jobs: int | None = None) -> None:
        super().__init__()
        self.backend: TorchBackend = choice(backend, "backend", TORCH_BACKENDS)
        self.n_jobs = as_jobs(n_jobs)

    def extra_repr(self) -> str:
        """The options, as the module's repr shows them.

        Returns
        -------
        str
            ``name=value`` pairs.
        """
        return ", ".join(
            f"{name}={value!r}" for name, value in vars(self).items() if not name.startswith("_") and name != "training"
        )


@fill_doc
class Sparsemax(_Module):
    """:func:`sparsemax` as a module.

    Parameters
    ----------
    %(torch_module_options)s

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import Sparsemax
    >>> Sparsemax()(torch.tensor([0.5, 1.2, -0.3, 0.9]))
    tensor([0.0000, 0.6500, 0.0000, 0.3500])
    """

    def forward(self, z: Tensor) -> Tensor:
        """sparsemax(z) along the last dimension.

        Parameters
        ----------
        z : torch.Tensor, shape (..., m)
            Scores.

        Returns
        -------
        torch.Tensor
            Of z's shape.
        """
        return sparsemax(z, backend=self.backend, n_jobs=self.n_jobs)


@fill_doc
class TopKSimplex(_Module):
    """:func:`topk_simplex` as a module.

    Parameters
    ----------
    %(topk_k)s
    r : float, default 1.0
        The bound on the sum.
    %(torch_module_options)s

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import TopKSimplex
    >>> TopKSimplex(2)(torch.tensor([0.5, 1.2, -0.3, 0.9], dtype=torch.float64))
    tensor([0.0500, 0.5000, 0.0000, 0.4500], dtype=torch.float64)
    """

    def __init__(self, k: int, r: float = 1.0, *, backend: TorchBackend = "auto", n_jobs: int | None = None) -> None:
        super().__init__(backend=backend, n_jobs=n_jobs)
        self.k, self.r = k, r

    def forward(self, x: Tensor) -> Tensor:
        """The projection of x onto the top-k simplex along the last dimension.

        %(torch_forward_rows)s
        """
        return topk_simplex(x, self.k, self.r, backend=self.backend, n_jobs=self.n_jobs)


@fill_doc
class CappedSimplex(_Module):
    """:func:`capped_simplex` as a module.

    Parameters
    ----------
    k : float
        The sum, ``0 < k <= m``.
    %(torch_module_options)s

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import CappedSimplex
    >>> CappedSimplex(2)(torch.tensor([0.5, 1.2, -0.3, 0.9], dtype=torch.float64))
    tensor([0.3000, 1.0000, 0.0000, 0.7000], dtype=torch.float64)
    """

    def __init__(self, k: float, *, backend: TorchBackend = "auto", n_jobs: int | None = None) -> None:
        super().__init__(backend=backend, n_jobs=n_jobs)
        self.k = k

    def forward(self, x: Tensor) -> Tensor:
        """The projection of x onto the capped simplex along the last dimension.

        %(torch_forward_rows)s
        """
        return capped_simplex(x, self.k, backend=self.backend, n_jobs=self.n_jobs)


@fill_doc
class Rankmax(_Module):
    """:func:`rankmax` as a module.

    Parameters
    ----------
    k : int, default 1
        The mass, ``1 <= k < m``.
    eta : float, default 1.0
        The margin.
    %(torch_module_options)s

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import Rankmax
    >>> z = torch.tensor([0.5, 1.2, -0.3, 0.9], dtype=torch.float64)
    >>> Rankmax(k=2)(z, 2).round(decimals=4)
    tensor([0.4800, 0.6667, 0.2667, 0.5867], dtype=torch.float64)
    """

    def __init__(
        self, k: int = 1, eta: float = 1.0, *, backend: TorchBackend = "auto", n_jobs: int | None = None
    ) -> None:
        super().__init__(backend=backend, n_jobs=n_jobs)
        self.k, self.eta = k, eta

    def forward(self, z: Tensor, y: Tensor) -> Tensor:
        """Rankmax(z, y) along the last dimension.

        %(torch_forward_z_y)s

        Returns
        -------
        torch.Tensor
            Of z's shape.
        """
        return rankmax(z, y, self.k, self.eta, backend=self.backend, n_jobs=self.n_jobs)


@fill_doc
class _LossModule(_Module):
    """A loss as a module: ``forward`` calls the class's ``_function`` with the scores, the
    labels, the loss's own options (``_arguments``) and the options the module keeps for
    every call (``_options``: the reduction and the kernel options)."""

    _function: ClassVar[Callable[..., Tensor]]

    def __init__(
        self, *, reduction: Reduction = "mean", backend: TorchBackend = "auto", n_jobs: int | None = None
    ) -> None:
        super().__init__(backend=backend, n_jobs=n_jobs)
        self.reduction: Reduction = choice(reduction, "reduction", REDUCTIONS)

    def _arguments(self) -> tuple[Any, ...]:
        """The loss's own options, passed after the labels."""
        return ()

    def _options(self) -> dict[str, Any]:
        """The keyword options passed to ``_function``."""
        return {"reduction": self.reduction, "backend": self.backend, "n_jobs": self.n_jobs}

    def forward(self, z: Tensor, y: Tensor) -> Tensor:
        """The loss of scores z for labels y.

        %(torch_forward_z_y)s

        Returns
        -------
        torch.Tensor
            The reduced loss.
        """
        return self._function(z, y, *self._arguments(), **self._options())


class _LabelLossModule(_LossModule):
    """A loss of one class label per row as a module: rows labelled ``ignore_index`` count
    nowhere."""

    def __init__(
        self,
        *,
        reduction: Reduction = "mean",
        ignore_index: int = -100,
        backend: TorchBackend = "auto",
        n_jobs: int | None = None,
    ) -> None:
        super().__init__(reduction=reduction, backend=backend, n_jobs=n_jobs)
        self.ignore_index = as_count(ignore_index, "ignore_index")

    def _options(self) -> dict[str, Any]:
        return {**super()._options(), "ignore_index": self.ignore_index}


@fill_doc
class RankmaxLoss(_LabelLossModule):
    """:func:`rankmax_loss` as a module, like :class:`torch.nn.CrossEntropyLoss`.

    Parameters
    ----------
    k : int, default 1
        The Rankmax mass, ``1 <= k < m``.
    eta : float, default 1.0
        The margin.
    %(torch_module_loss_options)s

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import RankmaxLoss
    >>> z = torch.tensor([[0.5, 1.2, -0.3, 0.9]], dtype=torch.float64)
    >>> round(RankmaxLoss()(z, torch.tensor([1])).item(), 4)
    0.6931
    """

    _function = staticmethod(rankmax_loss)

    def __init__(
        self,
        k: int = 1,
        eta: float = 1.0,
        *,
        reduction: Reduction = "mean",
        ignore_index: int = -100,
        backend: TorchBackend = "auto",
        n_jobs: int | None = None,
    ) -> None:
        super().__init__(reduction=reduction, ignore_index=ignore_index, backend=backend, n_jobs=n_jobs)
        self.k, self.eta = k, eta

    def _arguments(self) -> tuple[Any, ...]:
        return self.k, self.eta


@fill_doc
class SoftmaxLoss(_LabelLossModule):
    """:func:`softmax_loss` as a module, like :class:`torch.nn.CrossEntropyLoss`.

    Parameters
    ----------
    %(torch_module_loss_options)s

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import SoftmaxLoss
    >>> z = torch.tensor([[0.5, 1.2, -0.3, 0.9]], dtype=torch.float64)
    >>> round(SoftmaxLoss()(z, torch.tensor([2])).item(), 4)
    2.4004
    """

    _function = staticmethod(softmax_loss)


@fill_doc
class SparsemaxLoss(_LabelLossModule):
    """:func:`sparsemax_loss` as a module, like :class:`torch.nn.CrossEntropyLoss`.

    Parameters
    ----------
    %(torch_module_loss_options)s

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import SparsemaxLoss
    >>> z = torch.tensor([[0.5, 1.2, -0.3, 0.9]], dtype=torch.float64)
    >>> round(SparsemaxLoss()(z, torch.tensor([1])).item(), 4)
    0.1225
    """

    _function = staticmethod(sparsemax_loss)


@fill_doc
class TopKHingeLoss(_LabelLossModule):
    """:func:`topk_hinge` as a module, like :class:`torch.nn.CrossEntropyLoss`.

    Parameters
    ----------
    %(topk_hinge_k_variant)s
    %(torch_smoothing)s
    %(torch_module_loss_options)s

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import TopKHingeLoss
    >>> s = torch.tensor([[0.5, 1.2, -0.3, 0.9]], dtype=torch.float64)
    >>> TopKHingeLoss(2, smoothing=1.0)(s, torch.tensor([1])).item()
    0.25
    """

    _function = staticmethod(topk_hinge)

    def __init__(
        self,
        k: int,
        variant: HingeVariant = "alpha",
        smoothing: float = 0.0,
        *,
        reduction: Reduction = "mean",
        ignore_index: int = -100,
        backend: TorchBackend = "auto",
        n_jobs: int | None = None,
    ) -> None:
        super().__init__(reduction=reduction, ignore_index=ignore_index, backend=backend, n_jobs=n_jobs)
        self.k, self.smoothing = k, smoothing
        self.variant: HingeVariant = choice(variant, "variant", HINGE_VARIANTS)

    def _arguments(self) -> tuple[Any, ...]:
        return self.k, self.variant, self.smoothing

    def forward(self, scores: Tensor, y: Tensor) -> Tensor:
        """The loss of the scores for labels y.

        Parameters
        ----------
        scores : torch.Tensor, shape (..., m)
            Scores.
        y : torch.Tensor of int, shape (...)
            The labels.

        Returns
        -------
        torch.Tensor
            The reduced loss.
        """
        return super().forward(scores, y)


class _LabelSetLossModule(_LossModule):
    """A multi-label loss as a module: ``y`` holds each row's label set."""

    def forward(self, z: Tensor, y: Tensor) -> Tensor:
        """The loss of scores z for label sets y.

        Parameters
        ----------
        z : torch.Tensor, shape (..., m)
            Scores.
        y : torch.Tensor of bool or 0/1 int, shape (..., m)
            The label sets.

        Returns
        -------
        torch.Tensor
            The reduced loss.
        """
        return super().forward(z, y)


@fill_doc
class MultiLabelHingeLoss(_LabelSetLossModule):
    """:func:`multilabel_hinge` as a module.

    Parameters
    ----------
    %(torch_smoothing)s
    %(torch_module_label_set_options)s

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import MultiLabelHingeLoss
    >>> s = torch.tensor([[2.0, 1.5, 0.7, -1.0]], dtype=torch.float64)
    >>> round(MultiLabelHingeLoss(smoothing=1.0)(s, torch.tensor([[1, 1, 0, 0]])).item(), 4)
    0.01
    """

    _function = staticmethod(multilabel_hinge)

    def __init__(
        self,
        smoothing: float = 0.0,
        *,
        reduction: Reduction = "mean",
        backend: TorchBackend = "auto",
        n_jobs: int | None = None,
    ) -> None:
        super().__init__(reduction=reduction, backend=backend, n_jobs=n_jobs)
        self.smoothing = smoothing

    def _arguments(self) -> tuple[Any, ...]:
        return (self.smoothing,)


@fill_doc
class MultiLabelSoftmaxLoss(_LabelSetLossModule):
    """:func:`multilabel_softmax_loss` as a module.

    Parameters
    ----------
    %(torch_module_label_set_options)s

    Examples
    --------
    >>> import torch
    >>> from toprank.torch import MultiLabelSoftmaxLoss
    >>> z = torch.tensor([[2.0, 1.5, 0.7, -1.0]], dtype=torch.float64)
    >>> round(MultiLabelSoftmaxLoss()(z, torch.tensor([[1, 1, 0, 0]])).item(), 4)
    0.9069
    """

    _function = staticmethod(multilabel_softmax_loss)
