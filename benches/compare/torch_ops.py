"""toprank.torch against the PyTorch code a user would otherwise call: forward + backward.

    python benches/compare/torch_ops.py --write BENCHMARKS.md [--quick]

Everything runs in one process on CPU tensors, both sides on 2 threads: PyTorch's
intra-op pool is set to 2 (``torch.set_num_threads(2)``) and toprank's Rust kernels run
on 2 threads (``n_jobs=2``); PyTorch's OpenMP threads wait passively
(``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets it; see below). One timed call is the forward pass and the backward pass
(``loss.backward()``, or ``out.backward(G)`` with a fixed random G for a map) on the same
seeded batch (scores standard normal × 2, labels uniform) with the input's gradient reset
first. The sides are interleaved call by call (every other round in reverse order) so
that background load hits both alike; the time reported is the median over the rounds,
after one warm-up call each. Before anything is timed, each side's output and gradient
are checked (a failed check fails the script):

a. ``toprank.torch.sparsemax`` against ``entmax.sparsemax`` (sort-based; the default
   ``k=None``): the same map, so outputs and input gradients must agree. Target:
   toprank ≥ 2× faster.
b. ``toprank.torch.sparsemax_loss`` against entmax's own ``sparsemax_loss`` (mean over
   the batch): the same loss, values and gradients must agree. Target ≥ 2× faster.
c. ``toprank.torch.rankmax_loss`` (k = 1, η = 1) against
   ``torch.nn.functional.cross_entropy``: different losses, each checked against the
   NumPy API (``toprank.losses.rankmax_loss`` / ``softmax_loss``). Target: toprank
   ≤ 1.5× the time of the cross-entropy.
d. ``toprank.torch.topk_hinge`` (k = 5, alpha; hard and smoothed with γ = 1) against a
   PyTorch implementation of the smooth top-k SVM loss of Berrada, Zisserman & Kumar
   ("Smooth Loss Functions for Deep Top-k Classification", ICLR 2018), written here from
   the paper's definition (see :func:`smooth_topk`). No target (different losses); the
   toprank side is checked against the NumPy API, the smooth top-k loss against its
   definition summed over all k-subsets on small rows and against a float64
   one-class-at-a-time recursion on a few rows of the timed batch.

A missed target is reported with where the time goes: the forward alone, and the Rust
kernel alone (the NumPy API on the tensors' arrays, same threads).

The section between ``<!-- torch:begin -->`` and ``<!-- torch:end -->`` of the given file
is replaced (appended if absent); it is always printed.
"""

from __future__ import annotations

import os

# PyTorch's OpenMP threads spin after each parallel region by default. On 2 cores shared
# with other work (this benchmark's machine), a spinning thread holds a core that the
# other side's threads, or the next op's, wait for: forward+backward of either side then
# took 5-50x longer and varied by as much from call to call. Passive waiting (read when
# torch loads its OpenMP runtime, so before the import) times the operations instead.
OMP_WAIT_POLICY = os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import entmax  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from sections import command_line, machine, publish, verdict  # noqa: E402

import toprank  # noqa: E402
import toprank.torch as tt  # noqa: E402
from toprank import losses  # noqa: E402

BEGIN, END = "<!-- torch:begin -->", "<!-- torch:end -->"
THREADS = 2
SEED = 20261129
# Targets of issue 40: toprank / entmax time at most this for sparsemax (a, b) ...
SPARSEMAX_TARGET = 0.5
# ... and toprank rankmax_loss / cross_entropy time at most this (c).
RANKMAX_TARGET = 1.5
# The top-k hinge and the smooth top-k loss at the paper's predominant k, margin and temperature.
TOPK, TAU, ALPHA = 5, 1.0, 1.0


# ------------------------------------------------------------------ smooth top-k loss


def _log_esp(x: torch.Tensor, weight: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """log e_{k-1} and log e_k of the numbers ``weight * exp(x)`` of each row (e_j: the
    elementary symmetric polynomial of degree j, the sum over all j-subsets of their
    products), as the coefficients of X^{k-1} and X^k of ∏_i (1 + w_i X): the paper's
    divide and conquer (Section 4), multiplying halves of the factors pairwise with every
    product truncated at degree k, O(k² m) per row.

    The paper multiplies in log space; here the products are real, the weights rescaled
    per row by e^c so that they sum to k: e_j(e^c w) = e^{jc} e_j(w), and then every
    coefficient stays between about (k/m)^k and k^k/k!, far from float32's overflow and
    denormals (the unscaled coefficients of 30,000 classes reach 1e20, their products
    denormals, which cost 100× as much on x86)."""
    n, m = x.shape
    c = math.log(k) - torch.logsumexp(x, dim=1, keepdim=True)
    w = torch.exp(x + c) * weight
    width = 1 << max(0, (m - 1).bit_length())
    # coef[j - 1] holds the coefficients of X^j, j = 1..k; that of X^0 is always 1
    # (implicit: it saves a third of the products). Pads are factors 1 + 0·X.
    coef = [F.pad(w, (0, width - m))]
    while coef[0].shape[1] > 1:
        half = coef[0].shape[1] // 2
        a, b = [p[:, :half] for p in coef], [p[:, half:] for p in coef]
        d, out = len(coef), []  # both halves have degree d
        for j in range(1, min(2 * d, k) + 1):
            t = a[j - 1] + b[j - 1] if j <= d else None
            for i in range(max(1, j - d), min(j - 1, d) + 1):
                t = a[i - 1] * b[j - i - 1] if t is None else t + a[i - 1] * b[j - i - 1]
            out.append(t)
        coef = out
    shift = c[:, 0]
    log_ek1 = coef[k - 2][:, 0].log() if k > 1 else torch.zeros_like(shift)
    return log_ek1 - (k - 1) * shift, coef[k - 1][:, 0].log() - k * shift


def smooth_topk(
    s: torch.Tensor, y: torch.Tensor, k: int = TOPK, tau: float = TAU, alpha: float = ALPHA
) -> torch.Tensor:
    r"""The smooth top-k SVM loss L_{k,τ} of Berrada, Zisserman & Kumar (ICLR 2018), per row.

    The paper starts from the hard top-k loss with margin α,
    l_k(s, y) = max(0, α + (s_{\y,[k]} − s_y) / k) in its rescaled form
    max_{|Ȳ|=k} {α·[y ∉ Ȳ] + Σ_{j∈Ȳ} s_j / k} − max_{|Ȳ|=k, y∈Ȳ} Σ_{j∈Ȳ} s_j / k
    (s_{\y,[k]}: the k-th largest score of the classes other than y), and replaces both
    maxima by log-sum-exps at temperature τ:

        L_{k,τ}(s, y) = τ log Σ_{|Ȳ|=k} exp((α·[y ∉ Ȳ] + Σ_{j∈Ȳ} s_j / k) / τ)
                        − τ log Σ_{|Ȳ|=k, y∈Ȳ} exp(Σ_{j∈Ȳ} s_j / (kτ)).

    With x_j = s_j / (kτ) and e_j the elementary symmetric polynomials of e^{x} over the
    classes other than y, the subsets without y sum to e^{α/τ} e_k and those with y to
    e^{x_y} e_{k-1}, so L = τ softplus(α/τ + log e_k − x_y − log e_{k-1}). For k = 1,
    α = 0, τ = 1 it is the cross-entropy. The gradient is PyTorch's autograd through
    these operations (the paper writes its own backward and, in float32, an
    approximation near the hard loss; neither is done here)."""
    x = s / (k * tau)
    others = torch.ones_like(x).scatter_(1, y[:, None], 0.0)
    log_ek1, log_ek = _log_esp(x, others, k)
    xy = x.gather(1, y[:, None])[:, 0]
    return tau * F.softplus(alpha / tau + log_ek - xy - log_ek1)


def smooth_topk_subsets(s: np.ndarray, y: np.ndarray, k: int, tau: float, alpha: float) -> np.ndarray:
    """L_{k,τ} by its definition: both log-sum-exps over every k-subset (small rows only)."""
    out = []
    for row, label in zip(s, y):
        with_y, every = [], []
        for subset in itertools.combinations(range(len(row)), k):
            mean = row[list(subset)].sum() / k
            every.append((alpha * (label not in subset) + mean) / tau)
            if label in subset:
                with_y.append(mean / tau)
        out.append(tau * (np.logaddexp.reduce(every) - np.logaddexp.reduce(with_y)))
    return np.array(out)


def smooth_topk_recursion(s: np.ndarray, y: np.ndarray, k: int, tau: float, alpha: float) -> np.ndarray:
    """L_{k,τ} in float64 from log e_j built one class at a time (log e_j ← log(e_j + e^{x_i} e_{j-1}))."""
    x = s.astype(np.float64) / (k * tau)
    rows = np.arange(len(x))
    log_e = np.full((len(x), k + 1), -np.inf)
    log_e[:, 0] = 0.0
    for i in range(x.shape[1]):
        step = np.logaddexp(log_e[:, 1:], x[:, i : i + 1] + log_e[:, :-1])
        log_e[:, 1:] = np.where((y == i)[:, None], log_e[:, 1:], step)
    return tau * np.logaddexp(0.0, alpha / tau + log_e[:, k] - x[rows, y] - log_e[:, k - 1])


# ---------------------------------------------------------------------------- timing


def median_times(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median wall time of each function over `rounds` rounds that call every function
    once (interleaved; every other round in reverse order), after one warm-up call each."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns.items())
    for r in range(rounds):
        for name, fn in order if r % 2 == 0 else order[::-1]:
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds < 1.0 else f"{seconds:.2f} s"


def step(
    loss: Callable[[torch.Tensor], torch.Tensor], z: torch.Tensor, upstream: torch.Tensor | None = None
) -> Callable[[], None]:
    """One timed call: reset z's gradient, forward, backward (through `upstream` for a map)."""

    def run() -> None:
        z.grad = None
        out = loss(z)
        out.backward(upstream)

    return run


def forward_only(loss: Callable[[torch.Tensor], torch.Tensor], z: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        with torch.no_grad():
            loss(z)

    return run


def value_and_grad(
    loss: Callable[[torch.Tensor], torch.Tensor], z0: torch.Tensor, upstream: torch.Tensor | None = None
) -> tuple[np.ndarray, np.ndarray]:
    z = z0.detach().clone().requires_grad_(True)
    out = loss(z)
    out.backward(upstream)
    assert z.grad is not None
    return out.detach().numpy(), z.grad.numpy()


@dataclass
class Row:
    what: str
    dtype: str
    shape: str
    ours: float
    theirs: float
    forward: float
    kernel: float
    target: float | None  # toprank / other at most this; None: informational

    def cells(self, other: str) -> str:
        ratio = self.ours / self.theirs
        judged = (
            verdict(ratio <= self.target, f"<= {self.target:g}x the time")
            if self.target is not None
            else "shown, not judged"
        )
        speed = f"{1 / ratio:.2f}x faster" if ratio < 1 else f"{ratio:.2f}x the time"
        return (
            f"| {self.what} | {self.dtype} | {self.shape} | {fmt(self.ours)} | {other} {fmt(self.theirs)} | "
            f"{speed} | {fmt(self.forward)} / {fmt(self.kernel)} | {judged} |"
        )


def close(a: np.ndarray, b: np.ndarray, dtype: torch.dtype) -> bool:
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    return bool(np.allclose(a, b, rtol=tol, atol=tol))


def measure(
    dtype: torch.dtype,
    m: int,
    args: argparse.Namespace,
    rng: np.random.Generator,
    rows: dict[str, list[Row]],
    failures: list[str],
) -> None:
    """Checks, then times, every comparison on one seeded batch of m classes in `dtype`."""
    dname, shape = str(dtype).removeprefix("torch."), f"{args.batch} × {m:,}"
    z0 = torch.from_numpy(rng.normal(size=(args.batch, m)) * 2).to(dtype)
    y = torch.from_numpy(rng.integers(0, m, size=args.batch))
    G = torch.from_numpy(rng.normal(size=(args.batch, m))).to(dtype)
    z = z0.clone().requires_grad_(True)
    z_np, y_np = z0.numpy(), y.numpy()

    def ours_sparsemax(t: torch.Tensor) -> torch.Tensor:
        return tt.sparsemax(t, n_jobs=THREADS)

    def entmax_sparsemax(t: torch.Tensor) -> torch.Tensor:
        return entmax.sparsemax(t, dim=-1)

    def ours_sparsemax_loss(t: torch.Tensor) -> torch.Tensor:
        return tt.sparsemax_loss(t, y, n_jobs=THREADS)

    def entmax_sparsemax_loss(t: torch.Tensor) -> torch.Tensor:
        return entmax.sparsemax_loss(t, y).mean()

    def ours_rankmax(t: torch.Tensor) -> torch.Tensor:
        return tt.rankmax_loss(t, y, k=1, eta=1.0, n_jobs=THREADS)

    def torch_ce(t: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(t, y)

    def ours_hinge(t: torch.Tensor) -> torch.Tensor:
        return tt.topk_hinge(t, y, TOPK, "alpha", n_jobs=THREADS)

    def ours_hinge_smooth(t: torch.Tensor) -> torch.Tensor:
        return tt.topk_hinge(t, y, TOPK, "alpha", smoothing=1.0, n_jobs=THREADS)

    def torch_smooth_topk(t: torch.Tensor) -> torch.Tensor:
        return smooth_topk(t, y).mean()

    # -- checks, before any timing
    for name, f, g in (
        ("sparsemax", ours_sparsemax, entmax_sparsemax),
        ("sparsemax_loss", ours_sparsemax_loss, entmax_sparsemax_loss),
    ):
        up = G if name == "sparsemax" else None
        (v1, g1), (v2, g2) = value_and_grad(f, z0, up), value_and_grad(g, z0, up)
        if not (close(v1, v2, dtype) and close(g1, g2, dtype)):
            failures.append(f"{name} {dname} {shape}: toprank and entmax disagree")
    ref_loss, ref_grad = losses.rankmax_loss(z_np, y_np, k=1, eta=1.0)
    v, g = value_and_grad(ours_rankmax, z0)
    if not (close(v, ref_loss.mean(), dtype) and close(g, ref_grad / args.batch, dtype)):
        failures.append(f"rankmax_loss {dname} {shape}: differs from toprank.losses.rankmax_loss")
    ref_loss, ref_grad = losses.softmax_loss(z_np, y_np)
    v, g = value_and_grad(torch_ce, z0)
    if not (close(v, ref_loss.mean(), dtype) and close(g, ref_grad / args.batch, dtype)):
        failures.append(f"cross_entropy {dname} {shape}: differs from toprank.losses.softmax_loss")
    for smoothing, f in ((0.0, ours_hinge), (1.0, ours_hinge_smooth)):
        ref_loss, ref_grad = losses.topk_hinge(z_np, y_np, TOPK, "alpha", smoothing=smoothing)
        v, g = value_and_grad(f, z0)
        if not (close(v, ref_loss.mean(), dtype) and close(g, ref_grad / args.batch, dtype)):
            failures.append(f"topk_hinge (smoothing {smoothing:g}) {dname} {shape}: differs from toprank.losses")
    few = slice(0, 4)
    ours_rows = smooth_topk(z0[few], y[few]).numpy()
    if not close(ours_rows, smooth_topk_recursion(z_np[few], y_np[few], TOPK, TAU, ALPHA), dtype):
        failures.append(f"smooth_topk {dname} {shape}: differs from the one-class-at-a-time recursion")

    # -- timings
    def judged(
        key: str,
        what: str,
        ours: Callable[[torch.Tensor], torch.Tensor],
        theirs: Callable[[torch.Tensor], torch.Tensor],
        kernel: Callable[[], object],
        target: float | None,
        up: torch.Tensor | None = None,
    ) -> None:
        t = median_times(
            {
                "ours": step(ours, z, up),
                "theirs": step(theirs, z, up),
                "forward": forward_only(ours, z),
                "kernel": kernel,
            },
            args.rounds,
        )
        # The quick run's sizes measure call overheads: its timings are shown, not judged.
        target = None if args.quick else target
        row = Row(what, dname, shape, t["ours"], t["theirs"], t["forward"], t["kernel"], target)
        rows[key].append(row)
        if target is not None and row.ours / row.theirs > target:
            failures.append(f"{what} {dname} {shape}: {row.ours / row.theirs:.2f}x the other side's time")

    judged(
        "sparsemax",
        "`sparsemax`",
        ours_sparsemax,
        entmax_sparsemax,
        lambda: toprank.projections.sparsemax(z_np, n_jobs=THREADS),
        SPARSEMAX_TARGET,
        G,
    )
    judged(
        "sparsemax_loss",
        "`sparsemax_loss`",
        ours_sparsemax_loss,
        entmax_sparsemax_loss,
        lambda: losses.sparsemax_loss(z_np, y_np, n_jobs=THREADS),
        SPARSEMAX_TARGET,
    )
    judged(
        "rankmax",
        "`rankmax_loss` (k = 1)",
        ours_rankmax,
        torch_ce,
        lambda: losses.rankmax_loss(z_np, y_np, n_jobs=THREADS),
        RANKMAX_TARGET,
    )
    for smoothing, f in ((0.0, ours_hinge), (1.0, ours_hinge_smooth)):
        judged(
            "topk",
            f"`topk_hinge` (k = {TOPK}, alpha, γ = {smoothing:g})",
            f,
            torch_smooth_topk,
            lambda s=smoothing: losses.topk_hinge(z_np, y_np, TOPK, "alpha", smoothing=s, n_jobs=THREADS),
            None,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--classes", type=int, nargs="+", default=[1000, 30000])
    parser.add_argument("--rounds", type=int, default=11, help="timed calls per side (the median is kept)")
    parser.add_argument(
        "--quick", action="store_true", help="batch 16 × {50, 300} classes, 3 rounds, targets not judged (a smoke run)"
    )
    parser.add_argument("--write", metavar="PATH")
    args = parser.parse_args()
    if args.quick:
        args.batch, args.classes, args.rounds = 16, [50, 300], 3
    torch.set_num_threads(THREADS)
    load = machine()
    failures: list[str] = []
    rng = np.random.default_rng(SEED)

    # The smooth top-k loss against its definition over all k-subsets (small rows, float64).
    s_small = rng.normal(size=(6, 9)) * 2
    y_small = rng.integers(0, 9, size=6)
    for k, tau, alpha in ((1, 1.0, 0.0), (2, 0.5, 1.0), (TOPK, TAU, ALPHA)):
        ours = smooth_topk(torch.from_numpy(s_small), torch.from_numpy(y_small), k, tau, alpha).numpy()
        if not np.allclose(ours, smooth_topk_subsets(s_small, y_small, k, tau, alpha), rtol=1e-12, atol=1e-12):
            failures.append(f"smooth_topk (k={k}, tau={tau}, alpha={alpha}) differs from its subset definition")

    rows: dict[str, list[Row]] = {"sparsemax": [], "sparsemax_loss": [], "rankmax": [], "topk": []}
    for dtype, m in itertools.product((torch.float32, torch.float64), args.classes):
        measure(dtype, m, args, rng, rows, failures)

    header = [
        "| operation | dtype | batch × classes | toprank | other side | toprank vs other | toprank forward / Rust kernel | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    text = (
        "\n".join(
            [
                BEGIN,
                "## PyTorch operations (`toprank.torch`) against entmax and PyTorch",
                "",
                f"Command: `{command_line()}`. Machine: {load}. torch {torch.__version__}, entmax "
                f"{getattr(entmax, '__version__', '?')}. CPU tensors; both sides on {THREADS} threads "
                f"(`torch.set_num_threads({THREADS})`, toprank's `n_jobs={THREADS}`), PyTorch's OpenMP threads "
                f"waiting passively (`OMP_WAIT_POLICY={OMP_WAIT_POLICY}`: spinning threads on 2 shared cores made "
                "both sides' times vary 5-50x, see the script). One call is forward + "
                "backward on the same seeded batch (scores standard normal × 2, labels uniform), the input's "
                f"gradient reset first; the sides interleaved, median of {args.rounds} calls each after a warm-up. "
                "Each side's values and gradients were checked before timing (see the script). The last column but "
                "one splits toprank's time: its forward alone (no autograd) and the Rust kernel alone (the NumPy API "
                "on the same arrays).",
                "",
                "(a) The sparsemax map, `toprank.torch.sparsemax` against `entmax.sparsemax` (sort-based), "
                "backward through a fixed random upstream gradient:",
                "",
                *header,
                *(r.cells("entmax") for r in rows["sparsemax"]),
                "",
                "(b) The sparsemax loss (mean over the batch), `toprank.torch.sparsemax_loss` against "
                "`entmax.sparsemax_loss`:",
                "",
                *header,
                *(r.cells("entmax") for r in rows["sparsemax_loss"]),
                "",
                "(c) `toprank.torch.rankmax_loss` against `torch.nn.functional.cross_entropy` (both mean over "
                "the batch):",
                "",
                *header,
                *(r.cells("cross_entropy") for r in rows["rankmax"]),
                "",
                f"(d) `toprank.torch.topk_hinge` against the smooth top-k SVM loss of Berrada, Zisserman & Kumar "
                f"(ICLR 2018) at k = {TOPK}, τ = {TAU:g}, α = {ALPHA:g}, written in PyTorch in the script from the "
                "paper's definition (the divide-and-conquer product of the elementary symmetric polynomials, its "
                "gradient by autograd). Different losses: timings only:",
                "",
                *header,
                *(r.cells("smooth top-k") for r in rows["topk"]),
                "",
                END,
            ]
        )
        + "\n"
    )
    return publish(text, failures, args.write, BEGIN, END)


if __name__ == "__main__":
    raise SystemExit(main())
