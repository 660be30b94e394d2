"""The thresholds of ``toprank.torch`` in torch operations, and the backward passes of its maps.

Every op of :mod:`toprank.torch` runs the Rust kernels on CPU tensors; on any other device
(CUDA) it runs the functions here, which compute the same projections and losses with
sorts, ``topk`` and cumulative sums over whole batches (no loop over rows), on rows of
shape (n, m). ``backend="torch"`` runs them on CPU too, which is how the tests check them
against the Rust path.

The projections all have the form p = clip(x − t, 0, c) (Lapin, Hein, Schiele, *Top-k
Multiclass SVM*, NIPS 2015, §4; ``python/toprank/projections.py``): with x sorted
decreasingly, the capped entries are the u largest and the free ones the next f, so t (and
the cap c where it depends on x) solve linear equations in the sums of those runs. The
forward passes try every (u, f) at once and keep the pair whose solution is consistent
with its own runs (the smallest violation, so that rounding at ties cannot leave none):
O(m log m + u_max·m) per row for u_max the largest possible number of capped entries
(k or fewer).

The backward passes (`*_vjp`) are vector-Jacobian products from the same structure, read
off the output: the free set F = {0 < p < cap}, the capped set U, and the equations that
tie t (and c) to x. On F, p = x − t, so differentiating those equations gives a few sums
over F and U per row: O(m), never a Jacobian. They serve both backends.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

# --------------------------------------------------------------------------- forward


def sparsemax(z: Tensor) -> Tensor:
    """sparsemax(z) of each row: clip(z − τ, 0) summing to 1 (Martins & Astudillo 2016, Alg. 1)."""
    # Shift invariant: from the row's maximum the prefix sums stay near the scale of the
    # support, not of the scores (1e4 + N(0, 1) in float32 would lose the support).
    z = z - z.amax(-1, keepdim=True)
    zs = torch.sort(z, dim=-1, descending=True).values
    cs = zs.cumsum(-1)
    ranks = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype, device=z.device)
    # The support is the prefix of sorted entries with 1 + j·z_(j) > Σ_{i≤j} z_(i).
    size = (1.0 + ranks * zs > cs).sum(-1, keepdim=True)
    tau = (cs.gather(-1, size - 1) - 1.0) / size.to(z.dtype)
    return torch.clamp(z - tau, min=0.0)


def _clip(x: Tensor, t: Tensor, cap: Tensor) -> Tensor:
    """clip(x − t, 0, cap) row by row (t and cap of shape (n, 1))."""
    return torch.minimum(torch.clamp(x - t, min=0.0), cap)


class _Runs:
    """Every (u, f) of a batch of sorted rows: u capped entries, then f free ones.

    ``capped`` / ``free`` are the sums of the two runs (n, U, m + 1) for u in [0, U) and
    f in [0, m]; ``u`` / ``f`` the counts as floats broadcasting against them.
    """

    def __init__(self, x: Tensor, n_caps: int) -> None:
        n, m = x.shape
        self.xs = torch.sort(x, dim=-1, descending=True).values
        cs = torch.cat([x.new_zeros(n, 1), self.xs.cumsum(-1)], dim=-1)
        u = torch.arange(min(n_caps, m + 1), device=x.device)[:, None]
        f = torch.arange(m + 1, device=x.device)[None, :]
        self.m, self.u_index, self.f_index = m, u, f
        self.valid = u + f <= m
        end = torch.clamp(u + f, max=m)
        self.capped = cs[:, u.expand_as(end)]
        self.free = cs[:, end] - self.capped
        self.u, self.f = u.to(x.dtype), f.to(x.dtype)

    def _sorted(self, index: Tensor) -> Tensor:
        return self.xs[:, torch.clamp(index, 0, self.m - 1)]

    def best(self, t: Tensor, cap: Tensor, violation: Tensor) -> tuple[Tensor, Tensor]:
        """The (t, cap) of the pair most consistent with its runs, each (n, 1)."""
        u, f, m = self.u_index, self.f_index, self.m
        zero = torch.zeros((), dtype=t.dtype, device=t.device)
        last_capped = self._sorted(u - 1) - t
        first_free = self._sorted(u) - t
        last_free = self._sorted(u + f - 1) - t
        first_zero = self._sorted(u + f) - t
        violation = violation + torch.where(u > 0, torch.relu(cap - last_capped), zero)
        violation = violation + torch.where(f > 0, torch.relu(first_free - cap) + torch.relu(-last_free), zero)
        violation = violation + torch.where(u + f < m, torch.relu(first_zero), zero)
        violation = torch.where(self.valid, violation, torch.full_like(violation, torch.inf))
        pick = violation.flatten(1).argmin(-1, keepdim=True)
        return t.flatten(1).gather(1, pick), cap.expand_as(t).flatten(1).gather(1, pick)


def knapsack(x: Tensor, cap: Tensor, total: Tensor, n_caps: int) -> Tensor:
    """clip(x − t, 0, cap) with Σ = total (0 < total ≤ m·cap; cap, total of shape (n, 1)), at
    most ``n_caps`` − 1 entries at the cap."""
    runs = _Runs(x, n_caps)
    cap3, total3 = cap[:, :, None], total[:, :, None]
    # Σ_F (x − t) + u·cap = total. With no free entry t is free: any t in the gap below
    # the capped run does (the sorted entry after it), if u·cap = total.
    needed = total3 - runs.u * cap3
    t_free = (runs.free - needed) / torch.clamp(runs.f, min=1.0)
    t_none = runs._sorted(runs.u_index + runs.f_index) - torch.where(runs.u_index + runs.f_index < runs.m, 0.0, cap3)
    t = torch.where(runs.f > 0, t_free, t_none)
    violation = torch.where(runs.f > 0, torch.zeros_like(t), torch.abs(needed))
    t, c = runs.best(t, cap3.expand_as(t), violation)
    return _clip(x, t, c)


def capped_simplex(x: Tensor, k: float) -> Tensor:
    """The Euclidean projection onto {0 ≤ p ≤ 1, Σp = k} of each row."""
    n = x.shape[0]
    ones = x.new_ones(n, 1)
    # Shift invariant (t absorbs it): from the row's maximum no prefix sum overflows.
    return knapsack(x - x.amax(-1, keepdim=True), ones, ones * k, int(k) + 1)


def _topk_cone(x: Tensor, k: int) -> Tensor:
    """The projection onto the top-k cone {0 ≤ p_i ≤ Σp/k}, its sum unbounded, p ≠ 0."""
    runs = _Runs(x, k)
    u, f = runs.u, runs.f
    # p = clip(x − t, 0, s/k); the multipliers of the caps give t(u − k) = A − u·s/k,
    # the sum s(k − u)/k = B − f·t (A, B the capped and free runs' sums): solved.
    q = (k - u) ** 2 + u * f
    t = (u * runs.free - (k - u) * runs.capped) / q
    s = k * ((k - u) * runs.free + f * runs.capped) / q
    # Without free entries the sum gives s = 0: that is the zero solution, handled apart.
    violation = torch.where(f > 0, torch.relu(-s), torch.full_like(s, torch.inf))
    t, c = runs.best(t, s / k, violation)
    return _clip(x, t, c)


def _scale(x: Tensor) -> Tensor:
    """A power of two λ ≥ 1 per row (n, 1) with |x|/λ ≤ 2: Π_{λC}(x) = λ·Π_C(x/λ) holds
    exactly for these, and sums of x/λ cannot overflow."""
    exponent = torch.frexp(x.abs().amax(-1, keepdim=True)).exponent
    return torch.clamp(torch.ldexp(torch.ones_like(x[:, :1]), exponent - 1), min=1.0)


def _resolved(p: Tensor, total: Tensor) -> Tensor:
    """p, or NaN in the rows whose sum misses ``total`` by far: a bound r far below the
    entries' rounding (r/max|x| near the float epsilon) leaves x − t unresolved, and the
    caller refuses NaN rather than return a wrong point (the Rust kernels resolve these)."""
    tol = 1e-6 if p.dtype == torch.float64 else 1e-2
    missed = (p.sum(-1, keepdim=True) - total).abs() > tol * total
    return torch.where(missed, torch.nan, p)


def topk_simplex(x: Tensor, k: int, r: float) -> Tensor:
    """The projection onto Δ_k(r) = {0 ≤ p_i ≤ Σp/k, Σp ≤ r} of each row (rho = 0)."""
    # Δ_k(r) = λ·Δ_k(r/λ): projected at the scale of the row, no sum overflows.
    scale = _scale(x)
    x, r_row = x / scale, r / scale
    # The cone's projection is 0 exactly when the k largest entries do not sum above 0;
    # it is the answer if its sum is at most r, else the sum bound holds with equality
    # and p = clip(x − t, 0, r/k) with Σp = r (Lemma 5 of the paper).
    zero = torch.topk(x, k, dim=-1).values.sum(-1, keepdim=True) <= 0
    cone = _topk_cone(x, k)
    capped = _resolved(knapsack(x, r_row / k, r_row, k + 1), r_row)
    inside = cone.sum(-1, keepdim=True) <= r_row
    return torch.where(zero, torch.zeros_like(x), torch.where(inside, cone, capped)) * scale


def box_simplex(x: Tensor, hi: float, r: float) -> Tensor:
    """The projection onto {0 ≤ p ≤ hi, Σp ≤ r} of each row (rho = 0)."""
    scale = _scale(x)  # as in topk_simplex
    x, hi_row, r_row = x / scale, hi / scale, r / scale
    clipped = torch.minimum(torch.clamp(x, min=0.0), hi_row)
    on_sum = _resolved(knapsack(x, hi_row, r_row, min(int(r / hi), x.shape[-1]) + 1), r_row)
    return torch.where(clipped.sum(-1, keepdim=True) <= r_row, clipped, on_sum) * scale


def _rankmax_anchor(z: Tensor, y: Tensor, k: int, eta: float) -> tuple[Tensor, Tensor]:
    """μ = min(z_y, z_[k]) − η and the index that sets it (y, or that of z_[k]), (n, 1) each."""
    kth = torch.topk(z, k, dim=-1)
    zk, at_k = kth.values[:, -1:], kth.indices[:, -1:]
    zy = z.gather(-1, y[:, None])
    by_label = zy <= zk
    return torch.where(by_label, zy, zk) - eta, torch.where(by_label, y[:, None], at_k)


def rankmax(z: Tensor, y: Tensor, k: int, eta: float) -> Tensor:
    """Rankmax(z, y) = clip(α(z − μ), 0, 1) with Σ = k of each row (Kong et al. 2020, Prop. 3)."""
    # Shift invariant (μ moves with z): from the row's maximum no sum overflows.
    z = z - z.amax(-1, keepdim=True)
    mu, _ = _rankmax_anchor(z, y, k, eta)
    w = z - mu
    # u of the k largest w capped at 1: α = (k − u)/Σ_{i>u} w_(i)^+, consistent when
    # α·w_(u) < 1 ≤ α·w_(u−1). Only the k largest matter: u < k, as the free entries
    # must carry the mass k − u > 0.
    top = torch.topk(w, k, dim=-1).values
    u = torch.arange(k, device=z.device, dtype=z.dtype)
    before = torch.cat([w.new_zeros(w.shape[0], 1), top.cumsum(-1)[:, :-1]], dim=-1)
    alpha = (k - u) / (torch.relu(w).sum(-1, keepdim=True) - before)
    previous = torch.cat([top.new_full((w.shape[0], 1), torch.inf), top[:, :-1]], dim=-1)
    violation = torch.relu(alpha * top - 1.0) + torch.relu(1.0 - alpha * previous)
    a = alpha.gather(-1, violation.argmin(-1, keepdim=True))
    return torch.clamp(a * w, 0.0, 1.0)


# --------------------------------------------------------------------------- losses


def softmax_loss(z: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """log Σ e^z − z_y and softmax(z) − e_y of each row."""
    lse = torch.logsumexp(z, dim=-1)
    grad = torch.softmax(z, dim=-1)
    grad.scatter_add_(-1, y[:, None], -grad.new_ones(y.shape[0], 1))
    return lse - z.gather(-1, y[:, None])[:, 0], grad


def sparsemax_loss(z: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Σ p(z − z_y) − ½‖p‖² + ½ and p − e_y of each row, p = sparsemax(z)."""
    p = sparsemax(z)
    zy = z.gather(-1, y[:, None])
    loss = torch.clamp((p * (z - zy)).sum(-1) - 0.5 * (p * p).sum(-1) + 0.5, min=0.0)
    p.scatter_add_(-1, y[:, None], -p.new_ones(y.shape[0], 1))
    return loss, p


def rankmax_loss(z: Tensor, y: Tensor, k: int, eta: float) -> tuple[Tensor, Tensor]:
    """−log min(1, Rankmax(z, y)_y) of each row and its gradient (0 where p_y = 1)."""
    p = rankmax(z, y, k, eta)
    py = p.gather(-1, y[:, None])
    below = py < 1.0
    # ∇(−log p_y) = −(1/p_y)·∇p_y: the map's backward pass with −e_y/p_y.
    g = torch.zeros_like(z).scatter_(-1, y[:, None], torch.where(below, -1.0 / py, 0.0))
    grad = rankmax_vjp(p, g, z, y, k, eta)
    return torch.where(below, -torch.log(py), 0.0)[:, 0], grad


def topk_hinge(s: Tensor, y: Tensor, k: int, alpha: bool, smoothing: float) -> tuple[Tensor, Tensor]:
    """The top-k hinge (alpha or beta), smoothed by γ, and its gradient, of each row.

    L_γ(h) = max_{p ∈ S} ⟨h, p⟩ − (γ/2)‖p‖² over h_j = 1 + s_j − s_y (j ≠ y), maximised by
    p = Π_S(h/γ) (γ > 0) or a vertex of S (γ = 0); ∂L/∂s_j = p_j, ∂L/∂s_y = −Σp
    (``src/losses/topk_hinge.rs``).
    """
    n, m = s.shape
    others = torch.ones_like(s, dtype=torch.bool).scatter_(-1, y[:, None], False)
    h = ((s - s.gather(-1, y[:, None])) + 1.0)[others].reshape(n, m - 1)
    top = torch.topk(h, k, dim=-1)
    if alpha:
        total = top.values.sum(-1, keepdim=True)
        counts = (total > 0).expand_as(top.values)
        loss = torch.clamp(total[:, 0], min=0.0) / k
    else:
        counts = top.values > 0
        loss = torch.relu(top.values).sum(-1) / k
    p = torch.zeros_like(h).scatter_(-1, top.indices, counts.to(h.dtype) / k)
    # As the Rust kernel: a γ below the rounding of the scores leaves the loss unsmoothed.
    largest = s.abs().amax(-1, keepdim=True) + 1.0
    smooth = smoothing > 1e-12 * largest
    if smoothing > 0 and bool(smooth.any()):
        b = h / smoothing
        q = topk_simplex(b, k, 1.0) if alpha else box_simplex(b, 1.0 / k, 1.0)
        smoothed = (smoothing * b * q).sum(-1) - 0.5 * smoothing * (q * q).sum(-1)
        loss = torch.where(smooth[:, 0], smoothed, loss)
        p = torch.where(smooth, q, p)
    grad = torch.zeros_like(s)
    grad[others] = p.flatten()
    grad.scatter_(-1, y[:, None], -p.sum(-1, keepdim=True))
    return loss, grad


def _bisect(g: Callable[[Tensor], Tensor], lo: Tensor, hi: Tensor) -> Tensor:
    """A root of each row's decreasing g in [lo, hi] (g(lo) ≥ 0 ≥ g(hi)), halved until no
    interval shrinks (adjacent floats): the callers then recompute it exactly from the
    sets it separates. At most ~2,100 halvings (float64's exponent and mantissa range)."""
    while True:
        mid = 0.5 * (lo + hi)
        above = g(mid) > 0
        new_lo, new_hi = torch.where(above, mid, lo), torch.where(above, hi, mid)
        if torch.equal(new_lo, lo) and torch.equal(new_hi, hi):
            return mid
        lo, hi = new_lo, new_hi


def _simplex_side(x: Tensor, on: Tensor) -> Tensor:
    """(x − t)_+ on ``on`` (0 elsewhere), Σ = 1: each row's side projected onto the
    simplex, t = (Σ_A x − 1)/|A| over the entries A above it."""
    top = torch.where(on, x, -torch.inf).amax(-1, keepdim=True)
    mass = lambda t: torch.where(on, torch.relu(x - t), 0.0).sum(-1, keepdim=True) - 1.0  # noqa: E731
    t = _bisect(mass, top - 1.0, top)
    active = on & (x > t)
    t = (torch.where(active, x, 0.0).sum(-1, keepdim=True) - 1.0) / active.sum(-1, keepdim=True)
    return torch.where(on, torch.relu(x - t), 0.0)


def bipartite_simplex(x: Tensor, label: Tensor) -> Tensor:
    """Π_B(x), B = {p ≥ 0, Σp_Y = Σp_N = τ ≤ 1} (``src/projections/bipartite_simplex.rs``):
    α = (x_Y − t)_+ and β = (x_N + t)_+ with Σα = Σβ, the root t of the decreasing
    Σ_Y (x − t)_+ − Σ_N (x + t)_+; when that mass τ exceeds 1, each side's own simplex
    projection; 0 when max x_Y + max x_N ≤ 0."""
    top_y = torch.where(label, x, -torch.inf).amax(-1, keepdim=True)
    top_n = torch.where(label, -torch.inf, x).amax(-1, keepdim=True)

    def gap(t: Tensor) -> Tensor:
        return torch.where(label, torch.relu(x - t), -torch.relu(x + t)).sum(-1, keepdim=True)

    t = _bisect(gap, torch.minimum(-top_n, top_y), top_y)
    # Exact from the sets the root separates: Σ_{A_Y}(x − t) = Σ_{A_N}(x + t).
    active_y, active_n = label & (x > t), ~label & (x > -t)
    signed = torch.where(active_y, x, 0.0).sum(-1, keepdim=True) - torch.where(active_n, x, 0.0).sum(-1, keepdim=True)
    t = signed / torch.clamp((active_y | active_n).sum(-1, keepdim=True), min=1)
    p = torch.where(label, torch.relu(x - t), torch.relu(x + t))
    p = torch.where(top_y + top_n <= 0, 0.0, p)
    full = torch.where(label, p, 0.0).sum(-1, keepdim=True) > 1.0
    if bool(full.any()):
        p = torch.where(full, _simplex_side(x, label) + _simplex_side(x, ~label), p)
    return p


def multilabel_hinge(s: Tensor, label: Tensor, smoothing: float) -> tuple[Tensor, Tensor]:
    """The multi-label hinge, smoothed by γ, and its gradient, of each row
    (``src/losses/multilabel.rs``): max_{p ∈ B} ⟨h, p⟩ − (γ/2)‖p‖², h = (½ − s_Y, ½ + s_N),
    maximised by Π_B(h/γ) (γ > 0) or the vertex on the lowest label and the highest other
    class (γ = 0); ∂L/∂s = (−p_Y, p_N)."""
    low, low_at = torch.where(label, s, torch.inf).min(-1, keepdim=True)
    high, high_at = torch.where(label, -torch.inf, s).max(-1, keepdim=True)
    loss = torch.clamp(1.0 + (high - low), min=0.0)[:, 0]  # as the kernel: no 1 + 1e308 − 1e308 = 0
    violated = (loss > 0).to(s.dtype)[:, None]
    p = torch.zeros_like(s).scatter_(-1, low_at, violated).scatter_(-1, high_at, violated)
    # As the Rust kernel: a γ below the rounding of the scores leaves the loss unsmoothed.
    smooth = smoothing > 1e-12 * (s.abs().amax(-1, keepdim=True) + 1.0)
    if smoothing > 0 and bool(smooth.any()):
        b = torch.where(label, 0.5 - s, 0.5 + s) / smoothing
        q = bipartite_simplex(b, label)
        smoothed = (smoothing * b * q).sum(-1) - 0.5 * smoothing * (q * q).sum(-1)
        loss = torch.where(smooth[:, 0], smoothed, loss)
        p = torch.where(smooth, q, p)
    return loss, torch.where(label, 0.0 - p, p)


def multilabel_softmax_loss(z: Tensor, label: Tensor) -> tuple[Tensor, Tensor]:
    """log Σ e^z − mean_Y z and softmax(z) − 1_Y/|Y| of each row."""
    count = label.sum(-1, keepdim=True).to(z.dtype)
    share = label.to(z.dtype) / count
    return torch.logsumexp(z, dim=-1) - (z * share).sum(-1), torch.softmax(z, dim=-1) - share


# --------------------------------------------------------------------------- backward


def _mean_free(g: Tensor, free: Tensor) -> Tensor:
    """g − mean_F(g) on the free set F, 0 elsewhere: the VJP of p = x − t on F when
    Σ_F p is fixed (t = (Σ_F x − const)/|F|)."""
    gf = torch.where(free, g, 0.0)
    mean = gf.sum(-1, keepdim=True) / torch.clamp(free.sum(-1, keepdim=True), min=1).to(g.dtype)
    # In place on the one new (n, m) tensor: a backward pass over large rows is a few
    # passes over memory, not allocations.
    return gf.sub_(mean).masked_fill_(~free, 0.0)  # +0, not the −0 of a product


def sparsemax_vjp(p: Tensor, g: Tensor) -> Tensor:
    """gᵀ∂sparsemax/∂z: g − its mean over the support, on the support."""
    return _mean_free(g, p > 0)


def capped_simplex_vjp(p: Tensor, g: Tensor) -> Tensor:
    """gᵀ∂p/∂x of p = clip(x − t, 0, 1), Σp = k: g − its mean over 0 < p < 1, there."""
    return _mean_free(g, (p > 0) & (p < 1))


def _cap_tolerance(p: Tensor) -> float:
    """How far below the cap (relatively) an entry still counts as capped: the cap and
    the sum it is read from differ by the output's rounding."""
    return 1e-10 if p.dtype == torch.float64 else 1e-5


def topk_simplex_vjp(p: Tensor, g: Tensor, k: int, r: float) -> Tensor:
    """gᵀ∂p/∂x of p = Π_{Δ_k(r)}(x) = clip(x − t, 0, c).

    On the sum bound (Σp = r) the cap c = r/k is fixed and only t moves: the mean over F
    is removed. Inside it, c = s/k with s = Σp, and with U the capped set, u = |U|,
    f = |F|, the two equations t(u − k) = Σ_U x − u·s/k and s(k − u)/k = Σ_F x − f·t
    give, for G_F, G_U the sums of g over F and U and Q = (k − u)² + u·f,
    ∂/∂x_i = g_i + (G_U(k − u) − G_F·u)/Q on F and (G_F(k − u) + G_U·f)/Q on U. Q = 0
    (u = k, f = 0) leaves the k capped entries at their mean Σ_U x/k: G_U/k on U.
    """
    tol = _cap_tolerance(p)
    s = p.sum(-1, keepdim=True)
    on_sum = s >= r * (1.0 - tol)
    cap = torch.where(on_sum, r / k, s / k)
    capped = (p > 0) & (p >= cap * (1.0 - tol))
    free = (p > 0) & ~capped
    wf, wu = free.to(g.dtype), capped.to(g.dtype)
    gf, gu = (g * wf).sum(-1, keepdim=True), (g * wu).sum(-1, keepdim=True)
    u, f = wu.sum(-1, keepdim=True), wf.sum(-1, keepdim=True)
    q = (k - u) ** 2 + u * f
    # Q = 0: exactly k entries, all at the cap, p_i = Σ_U x / k there.
    q_safe = torch.where(q > 0, q, 1.0)
    inside = wf * (g + (gu * (k - u) - gf * u) / q_safe) + wu * (gf * (k - u) + gu * f) / q_safe
    inside = torch.where(q > 0, inside, wu * gu / k)
    return torch.where(on_sum, _mean_free(g, free), inside)


def rankmax_vjp(p: Tensor, g: Tensor, z: Tensor, y: Tensor, k: int, eta: float) -> Tensor:
    """gᵀ∂Rankmax(z, y)/∂z.

    On the free set F (0 < p < 1), p = α(z − μ) with α = (k − u)/Σ_F(z − μ) (u entries
    at 1) and μ = z_j − η for j = y or the index of z_[k], whichever is lower. With
    q = Σ_F g_i p_i/(k − u): ∂/∂z_i = α(g_i − q) on F, and z_j gets
    −α(Σ_F g − |F|·q) more through μ.
    """
    mu, anchor = _rankmax_anchor(z, y, k, eta)
    free = (p > 0) & (p < 1)
    wf = free.to(g.dtype)
    u = (p >= 1).to(g.dtype).sum(-1, keepdim=True)
    f = wf.sum(-1, keepdim=True)
    mass = torch.clamp(k - u, min=1.0)
    alpha = torch.where(f > 0, mass / ((z - mu) * wf).sum(-1, keepdim=True), 0.0)
    q = (g * p * wf).sum(-1, keepdim=True) / mass
    grad = alpha * wf * (g - q)
    through_mu = -alpha * ((g * wf).sum(-1, keepdim=True) - f * q)
    return grad.scatter_add(-1, anchor, through_mu)
