"""Independent NumPy references for ``tests/test_many_classes.py``: the objectives,
dual objectives and dual sets of every estimator with classes or labels, written from
the definitions in README.md and the estimators' module docs. Nothing here calls
toprank, and everything works on row chunks so that 10,000 classes or 100,000 labels
never form more than a few hundred MB at once.

Top-k SVM (``toprank.svm``; Lapin, Hein & Schiele 2015), with h_ij = 1 + s_ij − s_iy over
j ≠ y_i and per-example weights c_i:

    P(W) = ½‖W‖² + Σ_i c_i L(h_i),     D(A) = Σ_i −c_i L*(x_i / c_i) − ½‖W(A)‖²,

* alpha: L(h) = (1/k) max(0, Σ_{j≤k} h_[j]) = max_{p∈Δ_k} ⟨h, p⟩,
  Δ_k = {p ≥ 0, Σp ≤ 1, p_j ≤ Σp/k};
* beta: L(h) = (1/k) Σ_{j≤k} max(0, h_[j]) = max_{p∈Δ̃_k} ⟨h, p⟩, Δ̃_k = {0 ≤ p ≤ 1/k, Σp ≤ 1};
* smoothing γ > 0 (Moreau envelope): L_γ(h) = max_{p∈S} ⟨h, p⟩ − (γ/2)‖p‖²
  = γ(⟨x, p*⟩ − ½‖p*‖²) with x = h/γ and p* the Euclidean projection of x onto S;
  dual term ⟨1, x⟩ − (γ/2c)‖x‖²;
* softmax: L = log Σ_j exp(s_j − s_y); dual term −Σ_j z_j log(z_j / c) with z = c e_y − a
  in c·simplex;
* top-k entropy (Lapin, Hein & Schiele, CVPR 2016): L = max_{x∈Δ_k} ⟨v, x⟩ + H(x, 1 − Σx),
  v_j = s_j − s_y; same dual term as softmax, plus the caps x_j ≤ Σx/k.

The dual rows a_i have a_{i,y} = Σx, a_{i,j} = −x_j (so ⟨1, a_i⟩ = 0), and W(A) = Xᵀ A.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

ROWS = 256  # rows per chunk: at 10,000 classes a chunk's score block is 20 MB


def dense_rows(X, rows):
    """Rows of X (dense or CSR) as a float64 array."""
    block = X[rows]
    return np.asarray(block.toarray() if sp.issparse(block) else block, dtype=np.float64)


def chunks(n, size=ROWS):
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def without_label(S, y):
    """The entries j ≠ y_i of each row, in increasing j order: shape (n, m − 1)."""
    n, m = S.shape
    mask = np.ones((n, m), dtype=bool)
    mask[np.arange(n), y] = False
    return S[mask].reshape(n, m - 1)


def top_sorted(X, K):
    """The K largest entries of each row in decreasing order, and the largest of the
    others (−inf when K covers the row)."""
    r = X.shape[1]
    if K >= r:
        return -np.sort(-X, axis=1), np.full(X.shape[0], -np.inf)
    part = np.partition(X, r - K - 1, axis=1)
    return -np.sort(-part[:, r - K :], axis=1), part[:, r - K - 1]


# ------------------------------------------------------------ Euclidean projections
#
# Each returns, per row, ⟨x, p⟩ and ‖p‖² of the projection p of x (all a smoothed loss
# needs) and Σp, and works on the K largest entries only, certifying per row that the
# others are 0 in the projection of the whole row; rows it cannot certify are redone
# with 4K entries, up to the whole row.


def _capped_on_top(T, cap, radius):
    """Projection of the rows T (sorted decreasingly) onto {0 ≤ p ≤ cap, Σp = radius}:
    p = clip(T − τ, 0, cap). φ(τ) = Σ clip(T − τ, 0, cap) − radius is continuous,
    piecewise linear and decreasing, with breakpoints T_j and T_j − cap; τ is read off
    the segment where φ changes sign (no iteration). Returns (τ, p)."""
    n, K = T.shape
    V = np.concatenate([T, T - cap], axis=1)
    S = np.concatenate([np.ones_like(T), -np.ones_like(T)], axis=1)
    order = np.argsort(-V, axis=1, kind="stable")
    V = np.take_along_axis(V, order, axis=1)
    S = np.take_along_axis(S, order, axis=1)
    slope = np.cumsum(S, axis=1)  # the number of entries strictly between 0 and cap just below V_t
    total = np.cumsum(S * V, axis=1)
    phi = total - V * slope - radius  # φ at each breakpoint (exact by continuity at ties)
    rows = np.arange(n)
    # φ at the last breakpoint is K·cap − radius ≥ 0, up to its rounding when K·cap = radius.
    t = np.where(np.any(phi >= 0, axis=1), np.argmax(phi >= 0, axis=1), 2 * K - 1)
    prev = np.maximum(t - 1, 0)
    tau = np.where(
        (t > 0) & (slope[rows, prev] > 0),
        (total[rows, prev] - radius) / np.where(slope[rows, prev] > 0, slope[rows, prev], 1.0),
        V[rows, t],
    )
    return tau, np.clip(T - tau[:, None], 0.0, cap)


def _cone_on_top(T, k):
    """Projection of the rows T (sorted decreasingly) onto the top-k cone
    {p ≥ 0, p_j ≤ Σp/k}. The projection keeps the order of x, so it is p = s/k on the u
    largest entries, x + t on the next q, 0 on the rest, where (Lagrangian, t = Σμ/k the
    mean multiplier of the caps) t((k − u)² + uq) = (k − u)A − uB and s = k(B + qt)/(k − u),
    A and B the sums of the u capped and q middle entries (u < k); or p = s/k on the
    top k with s their sum (u = k); or p = 0. Every such candidate that is a point of
    the cone is enumerated, and the projection is the one nearest x (it is among them,
    and no other point of the cone is nearer). Returns (⟨x, p⟩, ‖p‖², Σp, t) with t the
    multiplier (the largest entry set to 0 needs x_j + t ≤ 0)."""
    n, K = T.shape
    rows = np.arange(n)
    P = np.concatenate([np.zeros((n, 1)), np.cumsum(T, axis=1)], axis=1)
    P2 = np.concatenate([np.zeros((n, 1)), np.cumsum(T * T, axis=1)], axis=1)
    eps = 1e-12 * (1.0 + np.abs(T).max(axis=1))
    # p = 0: distance ‖x‖², multiplier t = 0 (x in the polar cone iff Σ top-k x ≤ 0).
    best = P2[:, K].copy()
    out_xp, out_pp, out_s = np.zeros(n), np.zeros(n), np.zeros(n)
    out_t = np.where(P[:, k] <= 0, 0.0, np.inf)
    # u = k: s = Σ top-k, every other entry 0; t the smallest multiplier that fits.
    s = P[:, k]
    dist = P2[:, k] - 2 * (s / k) * P[:, k] + k * (s / k) ** 2 + (P2[:, K] - P2[:, k])
    take = (s >= 0) & (dist < best)
    lower = T[:, k - 1]
    t_k = np.maximum(0.0, s / k - lower)
    best = np.where(take, dist, best)
    out_xp = np.where(take, (s / k) * P[:, k], out_xp)
    out_pp = np.where(take, k * (s / k) ** 2, out_pp)
    out_s = np.where(take, s, out_s)
    out_t = np.where(take, t_k, out_t)
    for u in range(k):
        q = np.arange(1, K - u + 1)[None, :]
        A = P[:, u : u + 1]
        B = P[:, u + 1 :] - A
        t = ((k - u) * A - u * B) / ((k - u) ** 2 + u * q)
        s = (B + q * t) * k / (k - u)
        middle2 = P2[:, u + 1 :] - P2[:, u : u + 1]
        ok = (s >= -eps[:, None]) & (T[:, u : u + 1] + t <= s / k + eps[:, None]) & (T[:, u:] + t >= -eps[:, None])
        dist = P2[:, u : u + 1] - 2 * (s / k) * A + u * (s / k) ** 2 + q * t * t + (P2[:, K : K + 1] - P2[:, u + 1 :])
        dist = np.where(ok, dist, np.inf)
        j = np.argmin(dist, axis=1)
        d = dist[rows, j]
        take = d < best
        sj, tj, Bj, qj = s[rows, j], t[rows, j], B[rows, j], j + 1.0
        best = np.where(take, d, best)
        out_xp = np.where(take, (sj / k) * A[:, 0] + middle2[rows, j] + tj * Bj, out_xp)
        out_pp = np.where(take, u * (sj / k) ** 2 + middle2[rows, j] + 2 * tj * Bj + qj * tj * tj, out_pp)
        out_s = np.where(take, sj, out_s)
        out_t = np.where(take, tj, out_t)
    return out_xp, out_pp, out_s, out_t


def _project_rows(X, k, variant, K):
    """(⟨x, p⟩, ‖p‖²) of the projection of each row of X onto Δ_k ("alpha") or Δ̃_k
    ("beta"), and a mask of the rows certified from their K largest entries."""
    T, rest = top_sorted(X, K)
    cap = 1.0 / k
    xp, pp = np.zeros(len(X)), np.zeros(len(X))
    if variant == "alpha":
        # Lapin et al. 2015: Σp ≤ 1 is either inactive (then p is the cone's projection)
        # or active (then p_j ≤ Σp/k = 1/k: the capped simplex with Σp = 1).
        cxp, cpp, cs, ct = _cone_on_top(T, k)
        inside = cs <= 1.0 + 1e-12
        cone_ok = inside & (rest + ct <= 0)
    else:
        # Σp ≤ 1 inactive: p = clip(x, 0, 1/k) (over the whole row); else the capped simplex.
        clipped = np.clip(X, 0.0, cap)
        inside = clipped.sum(axis=1) <= 1.0 + 1e-12
        cxp, cpp = np.sum(X * clipped, axis=1), np.sum(clipped * clipped, axis=1)
        cone_ok = inside
    tau, p = _capped_on_top(T, cap, 1.0)
    capped_ok = ~inside & (tau >= rest)
    xp = np.where(inside, cxp, np.sum(T * p, axis=1))
    pp = np.where(inside, cpp, np.sum(p * p, axis=1))
    return xp, pp, cone_ok | capped_ok


def smoothed_hinge_rows(H, k, variant, gamma):
    """L_γ of each row of H (the margins over j ≠ y) for γ > 0."""
    X = H / gamma
    n, r = X.shape
    xp, pp = np.zeros(n), np.zeros(n)
    todo = np.arange(n)
    K = min(r, 4 * k + 60)
    while todo.size:
        a, b, ok = _project_rows(X[todo], k, variant, K)
        if K >= r:
            ok[:] = True
        xp[todo[ok]], pp[todo[ok]] = a[ok], b[ok]
        todo = todo[~ok]
        K = min(r, 4 * K)
    return gamma * (xp - 0.5 * pp)


def hinge_rows(H, k, variant, gamma):
    """The (smoothed) top-k hinge loss of each row of margins H."""
    if gamma > 0:
        return smoothed_hinge_rows(H, k, variant, gamma)
    T, _ = top_sorted(H, k)
    if variant == "alpha":
        return np.maximum(0.0, T.sum(axis=1)) / k
    return np.maximum(0.0, T).sum(axis=1) / k


def logsumexp_rows(S):
    top = S.max(axis=1)
    return top + np.log(np.exp(S - top[:, None]).sum(axis=1))


def entropy_rows(V, k):
    """Top-k entropy loss max_{x∈Δ_k} ⟨v, x⟩ + H(x, 1 − Σx) of each row v (over j ≠ y).

    Derivation (independent of the solver's): the caps bind on the u largest v_j at
    ρ = s/k, s = Σx; the others are x_j = ρ e^{v_j − g_u} with g_u = log Σ_{j∉U} e^{v_j}
    − log(k − u) (they must stay ≤ ρ: v_j ≤ g_u off U, and the caps' multipliers ≥ 0:
    v_j ≥ g_u on U). Then the objective is s·σ + H(s, 1 − s) with
    σ = log k + ((k − u)/k) g_u + Σ_{j∈U} v_j / k, maximal at logit(s) = σ with value
    softplus(σ). k = 1: u = 0, σ = log Σ_{j≠y} e^{v_j}, the softmax loss."""
    T, _ = top_sorted(V, k)
    shift = T[:, :1]
    rest = np.exp(V - shift).sum(axis=1) - np.exp(T - shift).sum(axis=1)  # beyond the top k
    rest = np.maximum(rest, 0.0)
    best_sigma = np.zeros(len(V))
    best_violation = np.full(len(V), np.inf)
    for u in range(k):
        mass = np.exp(T[:, u:] - shift).sum(axis=1) + rest
        g = shift[:, 0] + np.log(mass) - np.log(k - u)
        violation = np.maximum(T[:, u] - g, 0.0)  # v_(u+1) ≤ g_u
        if u > 0:
            violation = np.maximum(violation, g - T[:, u - 1])  # g_u ≤ v_(u)
        sigma = np.log(k) + (k - u) / k * g + T[:, :u].sum(axis=1) / k
        take = violation < best_violation
        best_sigma = np.where(take, sigma, best_sigma)
        best_violation = np.where(take, violation, best_violation)
    return np.logaddexp(0.0, best_sigma), best_violation


def svc_losses(X, y, coef, intercept, loss, k, gamma, K=None):
    """Per-example losses of a linear TopKSVC (X dense or CSR), or of a kernel one when
    ``K`` (the Gram matrix) is given and ``coef`` is the dual matrix A (scores K A)."""
    n = X.shape[0] if K is None else K.shape[0]
    out = np.zeros(n)
    for rows in chunks(n):
        if K is None:
            S = dense_rows(X, rows) @ coef.T + intercept
        else:
            S = K[rows] @ coef
        yr = y[rows]
        sy = S[np.arange(len(yr)), yr]
        if loss in ("alpha", "beta"):
            out[rows] = hinge_rows(1.0 + without_label(S, yr) - sy[:, None], k, loss, gamma)
        elif loss == "softmax" or (loss == "entropy" and k == 1):
            out[rows] = logsumexp_rows(S) - sy
        elif loss == "entropy":
            out[rows], _ = entropy_rows(without_label(S, yr) - sy[:, None], k)
        else:
            raise ValueError(loss)
    return out


def svc_dual_terms(A, y, c, loss, gamma):
    """Σ_i −c_i L*(x_i/c_i) of the dual rows A."""
    n = len(y)
    x = without_label(-A, y)
    if loss in ("alpha", "beta"):
        lin = x.sum(axis=1)
        pos = c > 0
        quad = np.zeros(n)
        quad[pos] = gamma / (2 * c[pos]) * np.sum(x[pos] ** 2, axis=1)
        return float(np.sum(lin - quad))
    z = -A.copy()
    z[np.arange(n), y] = c - A[np.arange(n), y]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(z > 0, z * np.log(z / c[:, None]), 0.0)
    return float(-terms.sum())


def svc_dual_violation(A, y, c, loss, k):
    """The largest violation of the dual set: ⟨1, a_i⟩ = 0 and x_i = −a_i^{\\y} in c_i·S
    (S = Δ_k for alpha and entropy, Δ̃_k for beta, the simplex for softmax), relative to
    c_i."""
    x = without_label(-A, y)
    total = x.sum(axis=1)
    ay = A[np.arange(len(y)), y]
    v = [np.max(-x / c[:, None]), np.max(np.abs(ay - total) / c), np.max((total - c) / c)]
    if loss in ("alpha", "entropy"):
        v.append(np.max((k * x - total[:, None]) / c[:, None]))
    elif loss == "beta":
        v.append(np.max((x - (c / k)[:, None]) / c[:, None]))
    return float(max(v))


# ------------------------------------------------------------------------- M3L


def m3l_objectives(Xaug, signs, alpha, Z, R, C):
    """M3L (Hariharan et al. 2012) with the Hamming loss, Z the L × d' weights (the
    intercept column included):

    P = ½ Σ_lk (R⁻¹)_lk z_l·z_k + C Σ_il max(0, 2 − 2 y_il f_il),  F = Xaug Zᵀ;
    D = Σ_il 2 α_il − 2 Σ_lk R_lk (y_l∘α_l)ᵀ K (y_k∘α_k),  K = Xaug Xaugᵀ,
    i.e. 2Σα − 2 tr(R BᵀB) with B = Xaugᵀ(Y∘α). Returns (P, D, F, B)."""
    F = Xaug @ Z.T
    reg = 0.5 * np.sum(np.linalg.solve(R, Z) * Z)
    P = reg + C * np.sum(np.maximum(0.0, 2.0 - 2.0 * signs * F))
    B = Xaug.T @ (signs * alpha)
    D = 2.0 * alpha.sum() - 2.0 * np.sum((B @ R) * B)
    return float(P), float(D), F, B


# ------------------------------------------------------------------ trace norm


def tracenorm_objective(X, y, W, b, lambda_trace, lambda_fro):
    """J(W, b) = λ1 ‖W‖_* + λ2 ‖W‖²_F + (1/n) Σ_i log Σ_l exp(s_il − s_iy), with the
    gradient of the smooth part ∇R̃ = 2λ2 W + (1/n) Xᵀ(softmax(S) − Y) and ∇_b. W is d × m."""
    n = X.shape[0]
    loss = 0.0
    G = 2.0 * lambda_fro * W
    gb = np.zeros(W.shape[1])
    for rows in chunks(n):
        Xr = dense_rows(X, rows)
        S = Xr @ W + b
        yr = y[rows]
        lse = logsumexp_rows(S)
        loss += float(np.sum(lse - S[np.arange(len(yr)), yr]))
        Pr = np.exp(S - lse[:, None])
        Pr[np.arange(len(yr)), yr] -= 1.0
        G += Xr.T @ Pr / n
        gb += Pr.sum(axis=0) / n
    sv = np.linalg.svd(W, compute_uv=False)
    J = lambda_trace * sv.sum() + lambda_fro * np.sum(W * W) + loss / n
    return float(J), G, gb


# ------------------------------------------------------------------ ranker losses


def rankmax_rows(Z, labels, k, eta):
    """−log min(1, Rankmax(z, y)_y) for each row z of Z and its label y (Kong et al.
    eq. (11)–(14)): μ = min(z_y, z_[k]) − η, p = clip(α(z − μ), 0, 1) with Σp = k, i.e.
    α = (k − t)/S_t, S_t = Σ_{i>t}(z_[i] − μ)⁺ over all but the t largest, t the fewest
    capped entries with α(z_[t+1] − μ) ≤ 1."""
    T, _ = top_sorted(Z, k)
    return _rankmax_pairs(Z, np.arange(len(Z)), labels, T, k, eta)


def _rankmax_pairs(Z, rows, labels, T, k, eta):
    """rankmax_rows for the pairs (rows[i], labels[i]) of the score block Z, whose rows'
    k largest scores are T."""
    zy = Z[rows, labels]
    T = T[rows]
    mu = np.minimum(zy, T[:, k - 1]) - eta
    # Σ_i (z_i − μ)⁺ from each row sorted once: the entries above μ, by suffix sums.
    Zs = np.sort(Z, axis=1)
    suffix = np.concatenate([np.cumsum(Zs[:, ::-1], axis=1)[:, ::-1], np.zeros((len(Z), 1))], axis=1)
    above = np.array([np.searchsorted(Zs[r], v, side="right") for r, v in zip(rows, mu)])
    total = suffix[rows, above] - mu * (Z.shape[1] - above)
    top_excess = T - mu[:, None]
    alpha = np.full(len(rows), np.nan)
    for t in range(k - 1, -1, -1):  # the smallest valid t wins: go down
        S_t = total - top_excess[:, :t].sum(axis=1)
        a = (k - t) / S_t
        ok = a * top_excess[:, t] <= 1.0 + 1e-12
        alpha = np.where(ok, a, alpha)
    p_y = np.minimum(1.0, alpha * (zy - mu))
    return -np.log(p_y)


def sparsemax_rows(Z):
    """sparsemax(z) for each row (Martins & Astudillo 2016): p = (z − τ)⁺ with Σp = 1."""
    Zs = -np.sort(-Z, axis=1)
    csum = np.cumsum(Zs, axis=1) - 1.0
    idx = np.arange(1, Z.shape[1] + 1)
    support = Zs - csum / idx > 0
    kz = support.sum(axis=1)
    tau = csum[np.arange(len(Z)), kz - 1] / kz
    return np.maximum(Z - tau[:, None], 0.0)


def ranker_pair_losses(Z, indptr, indices, loss, k, eta):
    """Σ over the (row, label) pairs of ℓ(z_row, label), for the rows of the score block Z
    (``indptr`` relative to them): softmax lse(z) − z_y; sparsemax
    Σ_i p_i(z_i − z_y) − ½‖p‖² + ½; rankmax as :func:`rankmax_rows`."""
    counts = np.diff(indptr)
    rows = np.repeat(np.arange(len(Z)), counts)
    if loss == "softmax":
        lse = logsumexp_rows(Z)
        return float(np.sum(lse[rows] - Z[rows, indices]))
    if loss == "sparsemax":
        p = sparsemax_rows(Z)
        pz = np.sum(p * Z, axis=1)
        pp = np.sum(p * p, axis=1)
        return float(np.sum(pz[rows] - Z[rows, indices] - 0.5 * pp[rows] + 0.5))
    if loss == "rankmax":
        T, _ = top_sorted(Z, k)
        return float(np.sum(_rankmax_pairs(Z, rows, indices, T, k, eta)))
    raise ValueError(loss)
