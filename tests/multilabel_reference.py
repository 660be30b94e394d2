"""Independent reference computations for :class:`toprank.MultiLabelSVC`.

Nothing here uses toprank: the objectives and the optimum are recomputed from the
definitions (the module docs of ``toprank.multilabel``), for an example's relevant
labels Y (a boolean row) and the others N, scores s = W x̃ (x̃: x with the constant
feature ``intercept_scaling`` appended when the model fits an intercept):

    P(W) = ½‖W‖² + Σ_i c_i L(s_i, Y_i)

* hinge:   L(s, Y) = max{0, 1 + max_N s − min_Y s};
* smoothed hinge (γ > 0): its Moreau envelope in s,
  L_γ(s) = min_z L(z) + ‖s − z‖²/(2γ) = max_{p ∈ B} Σp_Y + ⟨p_N, s_N⟩ − ⟨p_Y, s_Y⟩ − (γ/2)‖p‖²,
  B = {p ≥ 0, Σp_Y = Σp_N ≤ 1} (the second form: L's conjugate plus (γ/2)‖·‖²);
* softmax: L(s, Y) = log Σ_j exp(s_j) − mean_{j∈Y} s_j.

The optimum is found by cvxpy (CLARABEL) through the *min* form of the envelope (an
auxiliary z_i per example, and the hinge as one linear constraint per (relevant,
irrelevant) pair), while :func:`primal_objective` evaluates smoothed losses through the
*max* form (a separate small QP), so the two routes share no formulation.

Dual (the convention of the core, W = Aᵀ X̃ for the n × m dual A): a hinge row is
a = (α on Y, −β on N) with α, β ≥ 0 and Σα = Σβ = t ≤ c_i, its dual term
t − (γ / 2c_i)‖a‖²; a softmax row is a = c_i u − z with u uniform on Y and z ≥ 0,
Σz = c_i, its dual term −Σ_j z_j log(z_j / c_i). D(A) = Σ_i term_i − ½‖Aᵀ X̃‖².
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp
from svm_reference import augment

__all__ = ["augment", "losses", "primal_objective", "dual_objective", "dual_feasibility_violation", "cvxpy_optimum"]

_TIGHT = dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)


def _smoothed_hinge(S: np.ndarray, Y: np.ndarray, gamma: float) -> np.ndarray:
    """L_γ of each row by its max form: one batched QP over p ∈ B."""
    n, m = S.shape
    P = cp.Variable((n, m), nonneg=True)
    on_y = cp.sum(cp.multiply(P, Y.astype(float)), axis=1)
    on_n = cp.sum(cp.multiply(P, (~Y).astype(float)), axis=1)
    signed = np.where(Y, -S, S)
    objective = cp.sum(on_y) + cp.sum(cp.multiply(P, signed)) - gamma / 2 * cp.sum_squares(P)
    problem = cp.Problem(cp.Maximize(objective), [on_y == on_n, on_y <= 1])
    problem.solve(solver=cp.CLARABEL, **_TIGHT)
    Pv = np.clip(P.value, 0, None)
    return (Pv * Y).sum(axis=1) + (Pv * signed).sum(axis=1) - gamma / 2 * (Pv**2).sum(axis=1)


def losses(S: np.ndarray, Y: np.ndarray, loss: str, gamma: float = 0.0) -> np.ndarray:
    """L(s_i, Y_i) of each row of the scores S (n × m), Y a boolean n × m indicator."""
    Y = np.asarray(Y, dtype=bool)
    if loss == "softmax":
        return logsumexp(S, axis=1) - (S * Y).sum(axis=1) / Y.sum(axis=1)
    if loss != "hinge":
        raise ValueError(loss)
    if gamma > 0:
        return _smoothed_hinge(S, Y, gamma)
    worst_other = np.where(Y, -np.inf, S).max(axis=1)
    worst_label = np.where(Y, S, np.inf).min(axis=1)
    return np.maximum(0.0, 1.0 + worst_other - worst_label)


def primal_objective(coef, intercept, X, Y, c, loss, gamma=0.0, intercept_scaling=1.0) -> float:
    """P from an estimator's coef_ and intercept_ (the intercept regularised as
    ½‖b / intercept_scaling‖², the weight of the constant feature)."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    coef, intercept = np.asarray(coef, dtype=np.float64), np.asarray(intercept, dtype=np.float64)
    S = X @ coef.T + intercept
    reg = 0.5 * np.sum(coef**2) + 0.5 * np.sum((intercept / intercept_scaling) ** 2)
    return float(reg + np.dot(c, losses(S, Y, loss, gamma)))


def _xlogx_over(z: np.ndarray, c: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(z > 0, z * np.log(z / c[:, None]), 0.0)


def dual_objective(A, Xaug, Y, c, loss, gamma=0.0) -> float:
    """D(A) = Σ_i term_i(a_i) − ½‖Aᵀ X̃‖² (rows with c_i = 0 must be zero)."""
    A = np.asarray(A, dtype=np.float64)
    Y = np.asarray(Y, dtype=bool)
    W = A.T @ np.asarray(Xaug, dtype=np.float64)
    live = c > 0
    if loss == "hinge":
        terms = (A * Y).sum(axis=1)
        if gamma > 0:
            terms[live] -= gamma / (2 * c[live]) * (A[live] ** 2).sum(axis=1)
    else:
        u = Y / Y.sum(axis=1, keepdims=True)
        z = c[:, None] * u - A
        terms = np.zeros(len(c))
        terms[live] = -_xlogx_over(z[live], c[live]).sum(axis=1)
    return float(terms.sum() - 0.5 * np.sum(W**2))


def dual_feasibility_violation(A, Y, c, loss) -> float:
    """The largest violation of the dual rows' constraints (see the module docs)."""
    A = np.asarray(A, dtype=np.float64)
    Y = np.asarray(Y, dtype=bool)
    if loss == "hinge":
        alpha, beta = np.where(Y, A, 0.0), np.where(Y, 0.0, -A)
        t_y, t_n = alpha.sum(axis=1), beta.sum(axis=1)
        return float(max(np.max(-alpha), np.max(-beta), np.max(np.abs(t_y - t_n)), np.max(t_y - c)))
    u = Y / Y.sum(axis=1, keepdims=True)
    z = c[:, None] * u - A
    return float(max(np.max(-z), np.max(np.abs(z.sum(axis=1) - c))))


def _pair_rows(Y: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """M with one row per (i, j ∈ Y_i, l ∈ N_i) picking z_il − z_ij from vec(Z)
    (row-major), and the example i of each row."""
    n, m = Y.shape
    rows, cols, vals, owner = [], [], [], []
    r = 0
    for i in range(n):
        for j in np.flatnonzero(Y[i]):
            for other in np.flatnonzero(~Y[i]):
                rows += [r, r]
                cols += [i * m + other, i * m + j]
                vals += [1.0, -1.0]
                owner.append(i)
                r += 1
    return sp.csr_matrix((vals, (rows, cols)), shape=(r, n * m)), np.asarray(owner)


def cvxpy_optimum(X, Y, c, loss, gamma=0.0, fit_intercept=True, intercept_scaling=1.0):
    """min_W ½‖W‖² + Σ c_i L_γ(s_i, Y_i) by CLARABEL. Returns (optimum, W of shape (m, d'))."""
    Xa = augment(X, fit_intercept, intercept_scaling)
    Y = np.asarray(Y, dtype=bool)
    n, m = Y.shape
    W = cp.Variable((m, Xa.shape[1]))
    S = Xa @ W.T
    constraints = []
    if loss == "softmax":
        u = Y / Y.sum(axis=1, keepdims=True)
        total = c @ (cp.log_sum_exp(S, axis=1) - cp.sum(cp.multiply(u, S), axis=1))
    elif loss == "hinge":
        Z = cp.Variable((n, m)) if gamma > 0 else S
        M, owner = _pair_rows(Y)
        t = cp.Variable(n, nonneg=True)
        constraints.append(t[owner] >= 1 + M @ cp.reshape(Z, (n * m,), order="C"))
        total = c @ t
        if gamma > 0:
            total = total + cp.sum(cp.multiply(c / (2 * gamma), cp.sum(cp.square(S - Z), axis=1)))
    else:
        raise ValueError(loss)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + total), constraints)
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    if problem.status != "optimal":
        raise RuntimeError(f"cvxpy reference: status {problem.status}")
    return float(problem.value), np.asarray(W.value)
