"""Independent reference computations for the top-k multiclass SVM (``toprank.svm``).

Nothing here uses toprank: the primal objective, the dual objective and the optimum are
recomputed from the definitions (the module docs of ``toprank.svm``):

    P(W) = ½‖W‖² + Σ_i c_i L(h_i),   h_ij = 1 + s_ij − s_iy  (j ≠ y_i),  s_i = W x_i

* alpha: L(h) = (1/k) max(0, Σ top-k h)
* beta:  L(h) = (1/k) Σ top-k max(0, h)
* smoothing γ > 0: the Moreau envelope L_γ(h) = max_{p∈S} ⟨h,p⟩ − (γ/2)‖p‖²
  = min_z L(z) + ‖h − z‖²/(2γ), with S = {p ≥ 0, Σp ≤ 1, p_j ≤ Σp/k} (alpha) or
  {0 ≤ p ≤ 1/k, Σp ≤ 1} (beta).

The optimum is found by cvxpy (CLARABEL) with the top-k sums written as linear programs
(Σ top-k v = min_t k·t + Σ_j max(0, v_j − t)) and the Moreau envelope through auxiliary
variables z (its *min* form), while :func:`primal_objective` evaluates smoothed losses
through the *max* form (a separate small QP), so the two routes share no formulation.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp


def augment(X, fit_intercept: bool, intercept_scaling: float = 1.0) -> np.ndarray:
    """Dense X with the constant bias column appended when ``fit_intercept``."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    if fit_intercept:
        X = np.hstack([X, np.full((X.shape[0], 1), float(intercept_scaling))])
    return X


def margins(S: np.ndarray, y: np.ndarray) -> np.ndarray:
    """h_ij = 1 + s_ij − s_iy over j ≠ y_i, shape (n, m − 1), in increasing j order."""
    n, m = S.shape
    mask = np.ones((n, m), dtype=bool)
    mask[np.arange(n), y] = False
    sy = S[np.arange(n), y]
    return (1.0 + S - sy[:, None])[mask].reshape(n, m - 1)


def topk_loss(H: np.ndarray, loss: str, k: int) -> np.ndarray:
    """Non-smooth top-k hinge loss of each row of H (numpy, by sorting)."""
    top = -np.sort(-H, axis=1)[:, :k]
    if loss == "alpha":
        return np.maximum(0.0, top.sum(axis=1)) / k
    if loss == "beta":
        return np.maximum(0.0, top).sum(axis=1) / k
    raise ValueError(loss)


def smoothed_loss(H: np.ndarray, loss: str, k: int, gamma: float) -> np.ndarray:
    """L_γ(h) = max_{p∈S} ⟨h,p⟩ − (γ/2)‖p‖² of each row of H (one batched QP)."""
    if gamma == 0:
        return topk_loss(H, loss, k)
    n, r = H.shape
    P = cp.Variable((n, r))
    tot = cp.sum(P, axis=1)
    cons = [P >= 0, tot <= 1]
    if loss == "alpha":
        cons.append(k * P <= cp.reshape(tot, (n, 1), order="C") @ np.ones((1, r)))
    else:
        cons.append(P <= 1.0 / k)
    obj = cp.sum(cp.multiply(H, P)) - gamma / 2 * cp.sum_squares(P)
    prob = cp.Problem(cp.Maximize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    Pv = np.clip(P.value, 0, None)
    return np.sum(H * Pv, axis=1) - gamma / 2 * np.sum(Pv**2, axis=1)


def primal_objective(coef, intercept, X, y, c, loss, k, gamma, intercept_scaling=1.0):
    """P from the estimator's coef_/intercept_ (the intercept column is regularised as
    ½‖b / intercept_scaling‖²)."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    S = X @ np.asarray(coef, dtype=np.float64).T + np.asarray(intercept, dtype=np.float64)
    H = margins(S, y)
    reg = 0.5 * np.sum(np.asarray(coef, dtype=np.float64) ** 2)
    reg += 0.5 * np.sum((np.asarray(intercept, dtype=np.float64) / intercept_scaling) ** 2)
    return reg + float(np.dot(c, smoothed_loss(H, loss, k, gamma)))


def dual_parts(A, y):
    """x_i = −a_i without the y entry (n, m−1), and a_{i,y}."""
    A = np.asarray(A, dtype=np.float64)
    n, m = A.shape
    mask = np.ones((n, m), dtype=bool)
    mask[np.arange(n), y] = False
    return -A[mask].reshape(n, m - 1), A[np.arange(n), y]


def dual_objective(A, Xaug, y, c, gamma):
    """D(A) = Σ_i [Σ_j x_ij − γ/(2c_i)‖x_i‖²] − ½‖Xᵀ A‖² (rows with c_i = 0 must be 0)."""
    x, _ = dual_parts(A, y)
    W = np.asarray(Xaug, dtype=np.float64).T @ np.asarray(A, dtype=np.float64)
    lin = x.sum(axis=1)
    if gamma > 0:
        pos = c > 0
        lin = lin.copy()
        lin[pos] -= gamma / (2 * c[pos]) * np.sum(x[pos] ** 2, axis=1)
    return float(lin.sum() - 0.5 * np.sum(W**2))


def dual_feasibility_violation(A, y, c, loss, k) -> float:
    """Largest violation of a_i^{\\y} = −x, a_y = Σx, x ∈ c_i·S."""
    x, ay = dual_parts(A, y)
    tot = x.sum(axis=1)
    v = [np.max(-x), np.max(np.abs(ay - tot)), np.max(tot - c)]
    if loss == "alpha":
        v.append(np.max(k * x - tot[:, None]))
    else:
        v.append(np.max(x - (c / k)[:, None]))
    return float(max(v))


def cvxpy_optimum(X, y, c, m, loss, k, gamma, fit_intercept, intercept_scaling=1.0):
    """min ½‖W‖² + Σ c_i L_γ(h_i) by CLARABEL. Returns (optimum, W of shape (m, d'))."""
    Xa = augment(X, fit_intercept, intercept_scaling)
    n, d = Xa.shape
    y = np.asarray(y)
    r = m - 1
    W = cp.Variable((m, d))
    S = Xa @ W.T  # (n, m)
    # H = 1 + M vec(S): row (i, j≠y_i) picks s_ij − s_iy.
    rows, cols, vals = [], [], []
    for i in range(n):
        others = [j for j in range(m) if j != y[i]]
        for t, j in enumerate(others):
            rows += [i * r + t, i * r + t]
            cols += [i * m + j, i * m + y[i]]
            vals += [1.0, -1.0]
    M = sp.csr_matrix((vals, (rows, cols)), shape=(n * r, n * m))
    H = 1.0 + cp.reshape(M @ cp.reshape(S, (n * m,), order="C"), (n, r), order="C")
    Z = cp.Variable((n, r)) if gamma > 0 else H
    t = cp.Variable(n)
    U = cp.Variable((n, r))
    T = cp.reshape(t, (n, 1), order="C") @ np.ones((1, r))
    cons = [U >= 0, U >= Z - T]
    if loss == "alpha":
        xi = cp.Variable(n)
        cons += [xi >= 0, xi >= (k * t + cp.sum(U, axis=1)) / k]
    elif loss == "beta":
        # Σ top-k max(0, z) = min_t k t + Σ max(0, z − t, −t)
        cons += [U >= -T]
        xi = (k * t + cp.sum(U, axis=1)) / k
    else:
        raise ValueError(loss)
    obj = 0.5 * cp.sum_squares(W) + c @ xi
    if gamma > 0:
        obj = obj + cp.sum(cp.multiply(c / (2 * gamma), cp.sum(cp.square(H - Z), axis=1)))
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    if prob.status not in ("optimal",):
        raise RuntimeError(f"cvxpy reference: status {prob.status}")
    return float(prob.value), np.asarray(W.value)
