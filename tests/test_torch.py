"""toprank.torch: the maps and losses as autograd operations.

Checked: gradcheck in float64 (inputs away from ties); values and gradients equal to the
NumPy API (the same kernels) to 1e-12; the torch path (``backend="torch"``, what CUDA
tensors run) against the Rust path on CPU in float32 and float64, batched, strided, with
ties; the reductions and ignore_index against a hand computation; bad input; importing
toprank without torch.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from toprank import losses, projections  # noqa: E402
from toprank import torch as tt  # noqa: E402
from toprank.exceptions import InvalidInputError, NoSolutionError  # noqa: E402

M = 9
K = 3

# name -> (op(x, y, backend), NumPy reference(x, y) -> value or (loss, grad), is a loss)
MAPS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "sparsemax": (lambda x, y, b: tt.sparsemax(x, backend=b), lambda x, y: projections.sparsemax(x)),
    "topk_simplex": (
        lambda x, y, b: tt.topk_simplex(x, K, backend=b),
        lambda x, y: projections.topk_simplex(x, K),
    ),
    "topk_simplex_inside": (  # the sum bound inactive: the cone's projection
        lambda x, y, b: tt.topk_simplex(0.2 * x, K, r=4.0, backend=b),
        lambda x, y: projections.topk_simplex(0.2 * x, K, r=4.0),
    ),
    "capped_simplex": (
        lambda x, y, b: tt.capped_simplex(x, 2.5, backend=b),
        lambda x, y: projections.capped_simplex(x, 2.5),
    ),
    "rankmax_k1": (lambda x, y, b: tt.rankmax(x, y, backend=b), lambda x, y: projections.rankmax(x, y)),
    "rankmax_k3": (
        lambda x, y, b: tt.rankmax(x, y, K, 0.7, backend=b),
        lambda x, y: projections.rankmax(x, y, K, 0.7),
    ),
}
LOSSES: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "rankmax_loss_k1": (
        lambda x, y, b, **kw: tt.rankmax_loss(x, y, backend=b, **kw),
        lambda x, y: losses.rankmax_loss(x, y),
    ),
    "rankmax_loss_k3": (
        lambda x, y, b, **kw: tt.rankmax_loss(x, y, K, 0.7, backend=b, **kw),
        lambda x, y: losses.rankmax_loss(x, y, K, 0.7),
    ),
    "softmax_loss": (
        lambda x, y, b, **kw: tt.softmax_loss(x, y, backend=b, **kw),
        lambda x, y: losses.softmax_loss(x, y),
    ),
    "sparsemax_loss": (
        lambda x, y, b, **kw: tt.sparsemax_loss(x, y, backend=b, **kw),
        lambda x, y: losses.sparsemax_loss(x, y),
    ),
    "topk_hinge_alpha": (
        lambda x, y, b, **kw: tt.topk_hinge(x, y, K, backend=b, **kw),
        lambda x, y: losses.topk_hinge(x, y, K),
    ),
    "topk_hinge_beta": (
        lambda x, y, b, **kw: tt.topk_hinge(x, y, K, "beta", backend=b, **kw),
        lambda x, y: losses.topk_hinge(x, y, K, "beta"),
    ),
    "topk_hinge_alpha_smooth": (
        lambda x, y, b, **kw: tt.topk_hinge(x, y, K, "alpha", 0.5, backend=b, **kw),
        lambda x, y: losses.topk_hinge(x, y, K, "alpha", 0.5),
    ),
    "topk_hinge_beta_smooth": (
        lambda x, y, b, **kw: tt.topk_hinge(x, y, K, "beta", 0.3, backend=b, **kw),
        lambda x, y: losses.topk_hinge(x, y, K, "beta", 0.3),
    ),
    "multilabel_hinge": (
        lambda x, y, b, **kw: tt.multilabel_hinge(x, _label_sets(x, y), backend=b, **kw),
        lambda x, y: losses.multilabel_hinge(x, _label_sets(torch.from_numpy(x), torch.from_numpy(y)).numpy()),
    ),
    "multilabel_hinge_smooth": (
        lambda x, y, b, **kw: tt.multilabel_hinge(x, _label_sets(x, y), 0.6, backend=b, **kw),
        lambda x, y: losses.multilabel_hinge(x, _label_sets(torch.from_numpy(x), torch.from_numpy(y)).numpy(), 0.6),
    ),
    "multilabel_softmax_loss": (
        lambda x, y, b, **kw: tt.multilabel_softmax_loss(x, _label_sets(x, y), backend=b, **kw),
        lambda x, y: losses.multilabel_softmax_loss(x, _label_sets(torch.from_numpy(x), torch.from_numpy(y)).numpy()),
    ),
}
ALL = {**MAPS, **LOSSES}
BACKENDS = ["rust", "torch"]


def _label_sets(x: Any, y: Any) -> Any:
    """Label sets of x's shape from labels y: y and every class j ≡ 1 (mod 4), never all
    of the M classes."""
    classes = torch.arange(x.shape[-1])
    return (classes == y[..., None]) | (classes % 4 == 1)


def _op(name: str, backend: str) -> Callable[[Any, Any], Any]:
    """name's op as a function of (x, y); a loss per row (reduction="none")."""
    op = ALL[name][0]
    if name in LOSSES:
        return lambda x, y: op(x, y, backend, reduction="none")
    return lambda x, y: op(x, y, backend)


def _data(shape: tuple[int, ...], dtype: Any = torch.float64, seed: int = 0) -> tuple[Any, Any]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=gen, dtype=torch.float64).to(dtype)
    y = torch.randint(0, shape[-1], shape[:-1], generator=gen)
    return x, y


def _value_and_grad(name: str, backend: str, x: Any, y: Any, weights: Any) -> tuple[Any, Any]:
    leaf = x.detach().clone().requires_grad_(True)
    out = _op(name, backend)(leaf, y)
    (out * weights).sum().backward()
    return out.detach(), leaf.grad


@pytest.fixture(autouse=True)
def one_torch_thread() -> Any:
    """The ops must not depend on torch's thread pool (the Rust kernels have their own)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(ALL))
def test_gradcheck(name: str, backend: str) -> None:
    x, y = _data((4, M), seed=1)
    op = _op(name, backend)
    assert torch.autograd.gradcheck(lambda v: op(v, y), (x.requires_grad_(True),), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(MAPS))
def test_maps_equal_the_numpy_api(name: str) -> None:
    x, y = _data((6, M), seed=2)
    got = _op(name, "rust")(x, y)
    expected = MAPS[name][1](x.numpy(), y.numpy())
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(LOSSES))
def test_losses_and_gradients_equal_the_numpy_api(name: str, backend: str) -> None:
    x, y = _data((6, M), seed=3)
    loss, grad = _value_and_grad(name, backend, x, y, torch.ones(6, dtype=x.dtype))
    ref_loss, ref_grad = LOSSES[name][1](x.numpy(), y.numpy())
    np.testing.assert_allclose(loss.numpy(), ref_loss, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad.numpy(), ref_grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", list(ALL))
def test_the_torch_path_equals_the_rust_path(name: str, dtype: Any) -> None:
    x, y = _data((3, 4, M), dtype, seed=4)  # batched over two leading dimensions
    w = torch.randn(x.shape if name in MAPS else x.shape[:-1], generator=torch.Generator().manual_seed(5))
    w = w.to(dtype)
    rust, grad_rust = _value_and_grad(name, "rust", x, y, w)
    native, grad_native = _value_and_grad(name, "torch", x, y, w)
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    assert rust.dtype == native.dtype == dtype and grad_rust.dtype == dtype
    assert rust.shape == native.shape == (x.shape if name in MAPS else x.shape[:-1])
    torch.testing.assert_close(native, rust, rtol=tol, atol=tol)
    torch.testing.assert_close(grad_native, grad_rust, rtol=tol, atol=tol)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(ALL))
def test_strided_input_equals_contiguous(name: str, backend: str) -> None:
    x, y = _data((M, 5), seed=6)
    strided = x.t()  # (5, M), not contiguous
    assert not strided.is_contiguous()
    w = torch.randn(5, M if name in MAPS else 1, dtype=x.dtype, generator=torch.Generator().manual_seed(7))
    w = w if name in MAPS else w[:, 0]
    value, grad = _value_and_grad(name, backend, strided, y[:5] % M, w)
    ref_value, ref_grad = _value_and_grad(name, backend, strided.contiguous(), y[:5] % M, w)
    torch.testing.assert_close(value, ref_value, rtol=0, atol=0)
    torch.testing.assert_close(grad, ref_grad, rtol=0, atol=0)
    sliced = torch.cat([x.t(), x.t()], dim=1)[:, ::2]  # every other column: strided rows
    torch.testing.assert_close(
        _op(name, backend)(sliced, y[:5] % M), _op(name, backend)(sliced.contiguous(), y[:5] % M)
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", list(ALL))
def test_ties_and_constant_rows(name: str, dtype: Any) -> None:
    gen = torch.Generator().manual_seed(8)
    x = (torch.randint(-3, 4, (12, M), generator=gen) * 0.5).to(dtype)
    x[0] = 0.0
    x[1] = 2.0
    x[2] = -1.0
    y = torch.randint(0, M, (12,), generator=gen)
    rust = _op(name, "rust")(x, y)
    native = _op(name, "torch")(x, y)
    tol = 1e-12 if dtype == torch.float64 else 2e-6
    torch.testing.assert_close(native, rust, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["sparsemax", "rankmax_k3", "softmax_loss"])
def test_no_silent_second_derivative(name: str) -> None:
    x, y = _data((2, M), seed=12)
    x.requires_grad_(True)
    (grad,) = torch.autograd.grad(_op(name, "rust")(x, y).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|does not require grad"):
        grad.sum().backward()


@pytest.mark.parametrize("name", list(ALL))
def test_the_torch_path_at_extreme_scores_answers_right_or_raises(name: str) -> None:
    rows = [
        [1e308, 1e308, 0.0, -1e308, 1.0],
        [1.7e308] * 5,
        [-1e308, 1e308, 0.0, 5.0, 1e300],
        [1e-300, -5e-324, 0.0, 1e-310, 2e-300],
    ]
    for row in rows:
        x = torch.tensor([row * 2], dtype=torch.float64)[:, :M]
        y = torch.tensor([1])
        try:
            expected = _op(name, "rust")(x, y)
        except NoSolutionError:
            continue  # beyond what float64 resolves
        try:
            got = _op(name, "torch")(x, y)
        except NoSolutionError:
            continue  # refused, never a NaN
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def test_the_torch_path_keeps_the_support_of_offset_float32_scores() -> None:
    # 1e4 + N(0, 1) in float32: prefix sums of the raw scores would lose the support.
    x = torch.randn(4, 1000, generator=torch.Generator().manual_seed(13)) + 1e4
    for name in ("sparsemax", "capped_simplex", "rankmax_k3"):
        torch.testing.assert_close(_op(name, "torch")(x, x[:, 0].long() % M), _op(name, "rust")(x, x[:, 0].long() % M))


def test_one_row_and_an_int_label() -> None:
    z = torch.tensor([0.5, 1.2, -0.3, 0.9], dtype=torch.float64)
    assert tt.rankmax_loss(z, 1, reduction="none").shape == ()
    torch.testing.assert_close(tt.rankmax(z, 2), torch.from_numpy(projections.rankmax(z.numpy(), 2)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_reductions_and_ignore_index(backend: str) -> None:
    x, y = _data((7, M), seed=9)
    y[[1, 4]] = -100
    y2 = y.clone()
    y2[y2 == -100] = 5  # any label: those rows are left out
    per_row, grad_rows = losses.softmax_loss(x.numpy(), y2.numpy())
    keep = (y != -100).numpy()
    per_row, grad_rows = per_row * keep, grad_rows * keep[:, None]
    for reduction, value, grad in [
        ("none", per_row, grad_rows),
        ("sum", per_row.sum(), grad_rows),
        ("mean", per_row.sum() / keep.sum(), grad_rows / keep.sum()),
    ]:
        leaf = x.clone().requires_grad_(True)
        out = tt.softmax_loss(leaf, y, reduction=reduction, backend=backend)
        out.sum().backward()
        np.testing.assert_allclose(out.detach().numpy(), value, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(leaf.grad.numpy(), grad, rtol=1e-12, atol=1e-15)
    # Like torch: the mean over no row is NaN.
    assert torch.isnan(tt.softmax_loss(x, torch.full((7,), -1), ignore_index=-1, backend=backend))
    # As torch.nn.functional.cross_entropy.
    for reduction in ("mean", "sum", "none"):
        torch.testing.assert_close(
            tt.softmax_loss(x, y, reduction=reduction, backend=backend),
            torch.nn.functional.cross_entropy(x, y, reduction=reduction),
        )


def test_modules_call_the_functions() -> None:
    x, y = _data((5, M), seed=10)
    pairs = [
        (tt.Sparsemax()(x), tt.sparsemax(x)),
        (tt.TopKSimplex(K, 2.0)(x), tt.topk_simplex(x, K, 2.0)),
        (tt.CappedSimplex(2.5)(x), tt.capped_simplex(x, 2.5)),
        (tt.Rankmax(K, 0.7)(x, y), tt.rankmax(x, y, K, 0.7)),
        (tt.RankmaxLoss(K, 0.7, reduction="sum")(x, y), tt.rankmax_loss(x, y, K, 0.7, reduction="sum")),
        (tt.SoftmaxLoss()(x, y), tt.softmax_loss(x, y)),
        (tt.SparsemaxLoss(reduction="none")(x, y), tt.sparsemax_loss(x, y, reduction="none")),
        (tt.TopKHingeLoss(K, "beta", 0.2)(x, y), tt.topk_hinge(x, y, K, "beta", 0.2)),
        (tt.Sparsemax(backend="torch")(x), tt.sparsemax(x)),
        (
            tt.MultiLabelHingeLoss(0.3, reduction="sum")(x, _label_sets(x, y)),
            tt.multilabel_hinge(x, _label_sets(x, y), 0.3, reduction="sum"),
        ),
        (
            tt.MultiLabelSoftmaxLoss(backend="torch")(x, _label_sets(x, y)),
            tt.multilabel_softmax_loss(x, _label_sets(x, y)),
        ),
    ]
    for got, expected in pairs:
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    assert "k=3" in repr(tt.TopKHingeLoss(K)) and "training" not in repr(tt.TopKHingeLoss(K))


@pytest.mark.parametrize(
    ("module", "function", "arguments"),
    [
        (tt.RankmaxLoss, tt.rankmax_loss, (K, 0.7)),
        (tt.SoftmaxLoss, tt.softmax_loss, ()),
        (tt.SparsemaxLoss, tt.sparsemax_loss, ()),
        (tt.TopKHingeLoss, tt.topk_hinge, (K, "beta", 0.2)),
    ],
)
def test_loss_modules_pass_every_option(module: Any, function: Any, arguments: tuple[Any, ...]) -> None:
    # The loss modules share one forward: each must still pass its own arguments and
    # all four keyword options (an ignored row and the torch path make each one count).
    x, y = _data((6, M), seed=12)
    y[2] = -1
    options = {"reduction": "none", "ignore_index": -1, "backend": "torch", "n_jobs": 2}
    loss = module(*arguments, **options)
    torch.testing.assert_close(loss(x, y), function(x, y, *arguments, **options), rtol=0, atol=0)
    assert loss(x, y)[2] == 0
    for name, value in options.items():
        assert f"{name}={value!r}" in repr(loss)


def test_n_jobs_is_passed_to_the_kernels() -> None:
    x, y = _data((64, M), seed=11)
    torch.testing.assert_close(tt.sparsemax(x, n_jobs=2), tt.sparsemax(x))
    torch.testing.assert_close(tt.rankmax_loss(x, y, n_jobs=-1), tt.rankmax_loss(x, y))
    with pytest.raises(InvalidInputError, match="^n_jobs:"):
        tt.sparsemax(x, n_jobs=0)
    with pytest.raises(InvalidInputError, match="^n_jobs:"):
        tt.SoftmaxLoss(n_jobs=0)(x, y)


BAD_CALLS: list[tuple[Callable[[], Any], str]] = [
    (lambda: tt.sparsemax(torch.ones(3, dtype=torch.int64)), "z"),
    (lambda: tt.sparsemax(torch.ones(3, dtype=torch.float16)), "z"),
    (lambda: tt.sparsemax(np.ones(3)), "z"),
    (lambda: tt.sparsemax(torch.ones(0, 3)), "z"),
    (lambda: tt.sparsemax(torch.tensor(1.0)), "z"),
    (lambda: tt.topk_simplex(torch.ones(2, 4), 0), "k"),
    (lambda: tt.topk_simplex(torch.ones(2, 4), 5), "k"),
    (lambda: tt.topk_simplex(torch.ones(2, 4), 2, r=-1.0), "r"),
    (lambda: tt.topk_simplex(torch.ones(2, 4), 2, r=float("inf")), "r"),
    (lambda: tt.topk_simplex(torch.ones(2, 4), 2, r=10**400), "r"),
    (lambda: tt.capped_simplex(torch.ones(2, 4), 4.5), "k"),
    (lambda: tt.capped_simplex(torch.ones(2, 4), 0.0), "k"),
    (lambda: tt.rankmax(torch.ones(2, 4), torch.tensor([0, 4])), "y"),
    (lambda: tt.rankmax(torch.ones(2, 4), torch.tensor([0, 1]), k=4), "k"),
    (lambda: tt.rankmax(torch.ones(2, 4), torch.tensor([0, 1]), eta=0.0), "eta"),
    (lambda: tt.rankmax_loss(torch.ones(2, 4), torch.tensor([0, 1]), eta=10**400), "eta"),
    (lambda: tt.rankmax_loss(torch.ones(2, 4), torch.tensor([0, -1])), "y"),
    (lambda: tt.rankmax_loss(torch.ones(2, 4), torch.tensor([0.0, 1.0])), "y"),
    (lambda: tt.rankmax_loss(torch.ones(2, 4), torch.tensor([True, False])), "y"),
    (lambda: tt.rankmax_loss(torch.ones(2, 4), torch.tensor([0, 1, 2])), "y"),
    (lambda: tt.softmax_loss(torch.ones(2, 4), torch.tensor([0, 1]), reduction="avg"), "reduction"),
    (lambda: tt.multilabel_hinge(torch.ones(2, 4), torch.tensor([[1, 0, 0, 0], [0, 0, 0, 0]])), "y"),
    (lambda: tt.multilabel_hinge(torch.ones(2, 4), torch.ones(2, 4, dtype=torch.bool)), "y"),
    (lambda: tt.multilabel_softmax_loss(torch.ones(2, 4), torch.tensor([[2, 0, 0, 0], [1, 0, 0, 0]])), "y"),
    (lambda: tt.multilabel_softmax_loss(torch.ones(2, 4), torch.ones(2, 3, dtype=torch.bool)), "y"),
    (lambda: tt.multilabel_hinge(torch.ones(2, 4), torch.eye(2, 4, dtype=torch.bool), smoothing=-1.0), "smoothing"),
    (lambda: tt.softmax_loss(torch.ones(2, 4), torch.tensor([0, 1]), ignore_index=1.5), "ignore_index"),
    (lambda: tt.sparsemax_loss(torch.ones(2, 4), torch.tensor([0, 1]), backend="cuda"), "backend"),
    (lambda: tt.topk_hinge(torch.ones(2, 4), torch.tensor([0, 1]), 4), "k"),
    (lambda: tt.topk_hinge(torch.ones(2, 4), torch.tensor([0, 1]), 2, "gamma"), "variant"),
    (lambda: tt.topk_hinge(torch.ones(2, 4), torch.tensor([0, 1]), 2, smoothing=-1.0), "smoothing"),
    (lambda: tt.topk_hinge(torch.ones(2, 4), torch.tensor([0, 1]), 2, smoothing=float("nan")), "smoothing"),
    (lambda: tt.topk_hinge(torch.ones(2, 4, dtype=torch.int32), torch.tensor([0, 1]), 2), "scores"),
    (lambda: tt.TopKHingeLoss(2, "gamma"), "variant"),
    (lambda: tt.Sparsemax(backend="gpu"), "backend"),
    # A tensor on another device runs torch's path; the kernels are CPU-only.
    (lambda: tt.sparsemax(torch.ones(3, device="meta"), backend="rust"), "backend"),
]


@pytest.mark.parametrize("call, argument", BAD_CALLS)
def test_bad_input_names_the_argument(call: Callable[[], Any], argument: str) -> None:
    with pytest.raises(InvalidInputError, match=f"^{argument}:"):
        call()


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_finite_scores_are_refused(backend: str) -> None:
    for bad in (float("nan"), float("inf")):
        z = torch.ones(2, 4)
        z[1, 2] = bad
        with pytest.raises(InvalidInputError, match="^z:"):
            tt.sparsemax(z, backend=backend)
        with pytest.raises(InvalidInputError, match="^scores:"):
            tt.topk_hinge(z, torch.tensor([0, 1]), 2, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_overflowing_loss_raises(backend: str) -> None:
    z = torch.tensor([[-1e308, 1e308]], dtype=torch.float64)
    with pytest.raises(NoSolutionError, match="^softmax_loss: the loss overflows"):
        tt.softmax_loss(z, torch.tensor([0]), backend=backend)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    # A finder that refuses torch: `import torch` raises ImportError, as without torch.
    # (sys.modules["torch"] = None would too, but SciPy reads that entry as a module.)
    hidden = (
        "import sys, importlib.abc\n"
        "class NoTorch(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ImportError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, NoTorch())\n"
    ) + code
    return subprocess.run([sys.executable, "-c", hidden], capture_output=True, text=True, timeout=120)


def test_toprank_imports_without_torch() -> None:
    done = _run("import toprank, toprank.losses, toprank.projections; print('torch' not in sys.modules and 'ok')")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    done = _run("import toprank.torch")
    assert done.returncode != 0
    assert 'ImportError: toprank.torch needs PyTorch: pip install "toprank[torch]"' in done.stderr
