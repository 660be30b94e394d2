"""Trace-norm regularised multinomial logistic regression by rank-one descent
(Harchaoui, Douze, Paulin, Dudik, Malick, CVPR 2012), on raw, sparse or
product-quantized features.

:class:`TraceNormLogisticRegression` minimises (4)

    J(W, b) = λ1 ‖W‖_σ,1 + λ2 ‖W‖²_F + (1/n) Σ_i log Σ_l exp(s_il − s_iy_i),   S = X W + 1 bᵀ,

over W (d × m) and, with ``fit_intercept``, an unpenalised intercept b. The trace norm
‖W‖_σ,1 (the sum of the singular values) makes W low-rank: the classes share a few
directions of the feature space.

Algorithm R1D (§4): W is a non-negative combination Σ_j θ_j u_j v_jᵀ of unit rank-one
atoms (Proposition 1 turns the trace norm into Σ_j θ_j). Each iteration takes the top
singular pair (u, v) of −∇R̃(W), R̃ = λ2‖W‖²_F + R_n (block subspace iteration, warm-started),
and, when it descends (g = λ1 − σ_max < −ε/2), adds the atom u vᵀ with an Armijo step
along it (only the n-vector X u is new: S moves by δ (X u) vᵀ). Every
``subspace_every`` steps, and whenever no atom descends, a subspace step re-optimises W
and b over the span of the atoms found so far, widened by their rotation directions
(−∇R̃ v_j and −∇R̃ᵀu_j: where the gradient would turn each factor of W): W = Q_u C Q_vᵀ with
Q_u, Q_v orthonormal bases of those spans and C free (a small k × k' matrix), by L-BFGS over a
factorisation C = A Bᵀ and then accelerated proximal gradient on C (function and
gradient in Rust, never touching X; see `_span_step`). This contains the paper's restricted problem (8) over the weights θ
(C = diag θ in a common basis) and also lets W rotate within the span, without which
rank-one descent crawls near the optimum (measured: thousands of iterations at 1e-7 on
the tests' problems). The step returns W's singular pairs as the atoms (so Σθ = ‖W‖_σ,1),
dropping those the prox zeroed. A point of a regularisation path starts from the previous
point's atoms and gradient: its first step is that subspace step, from weights moved by a
diagonal Newton step and with only the Ritz pairs outside the atoms' spans added (the
atoms' own singular values sit at the previous λ1, above the new one). The fit stops at
ε-optimality (C1)–(C2):

* (C1) σ_max(−∇R̃(W)) ≤ λ1 + ε — no new atom descends by more than ε;
* (C2) |⟨∇R̃(W), u_j v_jᵀ⟩ + λ1| ≤ ε for every atom with θ_j > 0, and ‖∇_b‖_∞ ≤ ε,

checked on W's singular pairs as the atoms.

The heavy work — the products X·B and Xᵀ·(P − Y), the loss and its residual, the line
search, the singular pair and the subspace step's function and gradient — run in Rust without the GIL
(``toprank._core``); X is a dense float32/float64 array, a CSR matrix or a
:class:`toprank.pq.CompressedMatrix` (train on the codes X̂, predict on raw features).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._tags import Tags
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_consistent_length, check_is_fitted, column_or_1d
from threadpoolctl import threadpool_limits

from toprank import _core
from toprank._limits import check_row_norms
from toprank._validation import as_flag as _flag
from toprank._validation import as_jobs, canonical_csr, restores_on_failure, validate_input, warn_not_converged
from toprank._validation import bounded_int as _int
from toprank._validation import bounded_real as _real
from toprank.exceptions import InvalidInputError, NoSolutionError

__all__ = ["TraceNormLogisticRegression", "PathPoint", "tracenorm_path"]


class _Design:
    """X as the two products R1D needs, all in Rust: dense/CSR through
    ``tracenorm_product``, a CompressedMatrix through the compressed-domain products."""

    def __init__(self, X: Any, n_jobs: int | None) -> None:
        from toprank.pq import CompressedMatrix  # noqa: PLC0415 (toprank.pq imports the estimators)

        self.X, self.n_jobs = X, n_jobs
        self.coded = isinstance(X, CompressedMatrix)
        self.shape: tuple[int, int] = (int(X.shape[0]), int(X.shape[1]))

    def dot(self, B: NDArray[np.float64]) -> NDArray[np.float64]:
        """X·B, B of shape (d, k)."""
        B = np.ascontiguousarray(B, dtype=np.float64)
        if B.shape[1] == 0:
            return np.zeros((self.shape[0], 0))
        if self.coded:
            return np.asarray(_core.pq_dot(self.X.codebooks, self.X.codes, B, n_jobs=self.n_jobs))
        return np.asarray(_core.tracenorm_product(self.X, B, n_jobs=self.n_jobs))

    def tdot(self, R: NDArray[np.float64]) -> NDArray[np.float64]:
        """Xᵀ·R, R of shape (n, m)."""
        R = np.ascontiguousarray(R, dtype=np.float64)
        if self.coded:
            return np.asarray(_core.pq_tdot(self.X.codebooks, self.X.codes, R, n_jobs=self.n_jobs))
        return np.asarray(_core.tracenorm_product(self.X, R, transpose=True, n_jobs=self.n_jobs))


@dataclass
class _Atoms:
    """W = U diag(θ) Vᵀ + the intercept b, with Z = X U and the scores S = Z diag(θ) Vᵀ + 1 bᵀ."""

    U: NDArray[np.float64]
    V: NDArray[np.float64]
    theta: NDArray[np.float64]
    b: NDArray[np.float64]
    Z: NDArray[np.float64]

    @property
    def W(self) -> NDArray[np.float64]:
        return np.asarray((self.U * self.theta) @ self.V.T)

    def scores(self) -> NDArray[np.float64]:
        return np.ascontiguousarray((self.Z * self.theta) @ self.V.T + self.b)

    def joined(self, U: NDArray[np.float64], V: NDArray[np.float64], Z: NDArray[np.float64],
               theta: NDArray[np.float64]) -> _Atoms:
        """These atoms and the new ones (U, V, Z = X U), all weighted by `theta`."""
        return _Atoms(np.column_stack([self.U, U]), np.column_stack([self.V, V]), theta, self.b,
                      np.column_stack([self.Z, Z]))

    def canonical(self, design: _Design) -> _Atoms:
        """The same W as its singular pairs (θ = the singular values, so Σθ = ‖W‖_σ,1, which
        can only lower the objective): QR of U and V, then the SVD of the small r × r core;
        zero singular values dropped."""
        if self.theta.size == 0:
            return self
        Qu, Ru = np.linalg.qr(self.U)
        Qv, Rv = np.linalg.qr(self.V)
        P, s, Qt = np.linalg.svd((Ru * self.theta) @ Rv.T, full_matrices=False)
        keep = s > s[0] * 1e-12 if s.size and s[0] > 0 else np.zeros(s.size, dtype=bool)
        U = np.ascontiguousarray(Qu @ P[:, keep])
        V = np.ascontiguousarray(Qv @ Qt[keep].T)
        # Z = X U anew (one product): updating it through Ru⁻¹ would amplify rounding when
        # atoms repeat a direction (Ru nearly singular).
        Z = design.dot(U)
        return _Atoms(U, V, np.ascontiguousarray(s[keep]), self.b, Z)


@dataclass
class _Gradient:
    """R_n and ∇R̃ at some (W, b): the loss, the residual (P − Y)/n and G = Xᵀ(P − Y)/n + 2λ2 W."""

    loss: float
    residual: NDArray[np.float64]
    G: NDArray[np.float64]


@dataclass
class _Fit:
    """What R1D returns: the atoms (W's singular pairs when converged) and, when converged,
    the gradient at them, which the next point of a path starts from (∇R̃ does not depend on λ1)."""

    atoms: _Atoms
    n_iter: int
    status: str
    history: list[dict[str, float]] = field(default_factory=list)
    gradient: _Gradient | None = None


def _log_priors(y: NDArray[np.uint32], m: int) -> NDArray[np.float64]:
    counts = np.bincount(y, minlength=m).astype(np.float64)
    return np.asarray(np.log(np.maximum(counts, 0.5) / counts.sum()), dtype=np.float64)


def _rank_one_descent(
    design: _Design,
    y: NDArray[np.uint32],
    m: int,
    *,
    lambda_trace: float,
    lambda_fro: float,
    fit_intercept: bool,
    tol: float,
    max_iter: int,
    subspace_every: int,
    rng: np.random.RandomState,
    n_jobs: int | None,
    verbose: int,
    start: _Atoms | None,
    start_gradient: _Gradient | None = None,
) -> _Fit:
    """Algorithm R1D from `start` (W's singular pairs, Z = X U included; or W = 0 and
    b = log class priors), with ∇R̃ at `start` if known."""
    n, d = design.shape
    if start is None:
        b = _log_priors(y, m) if fit_intercept else np.zeros(m)
        atoms = _Atoms(np.zeros((d, 0)), np.zeros((m, 0)), np.zeros(0), b, np.zeros((n, 0)))
    else:
        atoms = start if fit_intercept else replace(start, b=np.zeros(m))
        start_gradient = start_gradient if fit_intercept else None
    # The scores; a path point given its gradient needs none before its first (subspace)
    # step, which forms them.
    S: NDArray[np.float64] | None = None if start_gradient is not None else atoms.scores()
    W = atoms.W
    ritz = rng.standard_normal((1, m))
    steps_since_subspace, status, history = 0, "max_iter", []
    canonical = True  # the atoms are W's singular pairs (a start is: it comes from `canonical`)
    gradient = start_gradient
    span: _Span | None = None
    started = time.perf_counter()
    penalties = dict(lambda_trace=lambda_trace, lambda_fro=lambda_fro)
    iteration = 0
    for iteration in range(1, max_iter + 1):
        if gradient is None:
            assert S is not None  # a missing gradient follows a step that formed S
            loss, residual = _core.multinomial_loss(S, y, n_jobs=n_jobs)
            gradient = _Gradient(loss, residual, design.tdot(residual) + 2.0 * lambda_fro * W)
        # Only the first iteration can start from a given gradient: every later one moves W.
        current, gradient = gradient, None
        loss, residual, G = current.loss, current.residual, current.G
        # A block larger than the atom count: the top singular values cluster at λ1, one per
        # atom, near the optimum (see the core's singular.rs).
        sigma, u, v, ritz, _ = _core.top_singular_pair(np.ascontiguousarray(-G), np.ascontiguousarray(ritz),
                                                       block=min(m, atoms.theta.size + 8))
        # The atoms' rotation directions: −G v_j (left) and −Gᵀu_j (right) are the gradient
        # of the loss in each factor of W = U diag θ Vᵀ; their parts outside span{u_j},
        # span{v_j} are where the atoms would turn. The subspace step searches the span
        # widened by them, so the atoms rotate in one step instead of being corrected one
        # new atom per iteration (measured on the benchmark: 6 → 4 iterations cold, 3–8 →
        # 3 per point of the path).
        rotations = (-G @ atoms.V, -G.T @ atoms.U)
        objective = lambda_trace * float(atoms.theta.sum()) + lambda_fro * float(np.sum(W * W)) + loss
        atom_grad = lambda_trace + np.einsum("dj,dm,mj->j", atoms.U, G, atoms.V) if atoms.theta.size else np.zeros(0)
        grad_b = np.asarray(residual.sum(axis=0)) if fit_intercept else np.zeros(m)
        c1 = sigma <= lambda_trace + tol
        c2 = bool(np.all(np.abs(atom_grad[atoms.theta > 0]) <= tol)) and float(np.max(np.abs(grad_b))) <= tol
        history.append(dict(iteration=iteration, objective=objective, sigma=sigma, rank=int(np.sum(atoms.theta > 0)),
                            seconds=time.perf_counter() - started))
        if verbose and (iteration % max(1, 10 // verbose) == 0 or (c1 and c2)):
            print(f"[TraceNormLogisticRegression] iter {iteration:4d}  objective {objective:.10g}  "
                  f"sigma_max - lambda1 {sigma - lambda_trace:+.3e}  atoms {atoms.theta.size}  "
                  f"{time.perf_counter() - started:.2f}s", file=sys.stdout, flush=True)
        if c1 and c2:
            if canonical:
                return _Fit(atoms, iteration, "converged", history, current)
            # (C2) on the atoms found is not (C2) on W's own singular pairs: near-parallel
            # atoms can leave a tiny singular pair that should carry no weight. Solve the
            # subspace step precisely (it returns W's singular pairs) and check again.
            span = _Span.of(atoms.U, atoms.V, rotations, design)
            atoms = _span_step(atoms, span, y, fit_intercept=fit_intercept, gtol=tol / 10, max_steps=5000,
                               n_jobs=n_jobs, **penalties)
            W, S, steps_since_subspace, canonical = atoms.W, atoms.scores(), 0, True
            continue
        slope = lambda_trace - sigma
        more_pairs, span = False, None
        if slope <= -tol / 2 and iteration == 1 and start_gradient is not None:
            # A warm start on a path: the atoms' singular values of −∇R̃ sit at the previous
            # λ1, above this one, so the descending Ritz pairs are mostly the atoms again.
            # Instead of re-adding them with a line search (near-copies of the atoms, which
            # then slow the subspace step), the atoms take a diagonal Newton step on their
            # weights and only the Ritz pairs outside their span join, weighted the same way;
            # the subspace step below then solves from there.
            P = len(y) * residual
            P[np.arange(len(y)), y] += 1.0
            new_U, new_V, new_sigma = _outside_pairs(atoms, G, ritz, lambda_trace + tol / 2)
            span = _Span.of(np.column_stack([atoms.U, new_U]), np.column_stack([atoms.V, new_V]), rotations, design)
            new_Z = span.Z @ (span.Qu.T @ new_U)
            theta = atoms.theta - atom_grad / _curvatures(atoms.Z, atoms.V, P, lambda_fro)
            new_theta = (new_sigma - lambda_trace) / _curvatures(new_Z, new_V, P, lambda_fro)
            atoms = atoms.joined(new_U, new_V, new_Z, np.maximum(np.append(theta, new_theta), 0.0))
            # To a third of the descent (a tenth for the steps below): the next iteration's
            # gradient certifies the result or refines it at the final precision (measured
            # on the benchmark: 15 → 11 evaluations per point, still 2 iterations).
            atoms = _span_step(atoms, span, y, fit_intercept=fit_intercept, gtol=max(tol / 10, 0.3 * -slope),
                               max_steps=200, n_jobs=n_jobs, **penalties)
            W, S, steps_since_subspace, canonical = atoms.W, atoms.scores(), 0, True
            continue
        if slope <= -tol / 2:
            # The top pair with an Armijo step, as in R1D, and with it every other pair of the
            # block whose singular value also exceeds λ1 (Ritz pairs of −∇R̃: u_j = −G v_j/σ_j).
            # Near the optimum the rank-one steps barely move the gradient, so the next
            # iterations would add these same directions one by one (measured: 24 iterations
            # of 1e-11 gains each became 6 on the benchmark); the subspace step that follows
            # weighs them all at once.
            ritz_u, ritz_v, ritz_sigma = _pairs_above(G, ritz[1:], lambda_trace + tol / 2)
            new_U = np.column_stack([u, ritz_u])
            new_V = np.column_stack([v, ritz_v])
            more_pairs = ritz_sigma.size > 0
            if more_pairs or steps_since_subspace + 1 >= subspace_every:
                # A subspace step follows: one pass over X gives Z of its whole basis, and
                # the new atoms' X u from it (they lie in the span).
                span = _Span.of(np.column_stack([atoms.U, new_U]), np.column_stack([atoms.V, new_V]), rotations,
                                design)
                new_Z = span.Z @ (span.Qu.T @ new_U)
            else:
                new_Z = design.dot(new_U)
            assert S is not None  # a warm first iteration took the branch above
            delta, _, _ = _core.multinomial_line_search(S, y, np.ascontiguousarray(new_Z[:, 0]), v, u_w_v=float(u @ W @ v),
                                                        loss0=loss, slope=slope, n_jobs=n_jobs, **penalties)
            # The other pairs' first weights scale the line search's by their descent.
            weights = np.append(delta, delta * (ritz_sigma - lambda_trace) / (sigma - lambda_trace))
            atoms = atoms.joined(new_U, new_V, new_Z, np.append(atoms.theta, weights))
            W = W + (new_U * weights) @ new_V.T
            S = np.ascontiguousarray(S + (new_Z * weights) @ new_V.T)
            steps_since_subspace, canonical = steps_since_subspace + 1, False
        # Unchecked weights (more pairs) always go through the subspace step.
        if slope > -tol / 2 or steps_since_subspace >= subspace_every or more_pairs:
            # As precise as the outer iteration needs: to tol/10 once no atom descends
            # (then (C2) is what is left), else to a tenth of the current descent.
            final = slope > -tol / 2
            if span is None:
                span = _Span.of(atoms.U, atoms.V, rotations, design)
            atoms = _span_step(atoms, span, y, fit_intercept=fit_intercept,
                               gtol=tol / 10 if final else max(tol / 10, 0.1 * -slope),
                               max_steps=5000 if final else 200, n_jobs=n_jobs, **penalties)
            W, S, steps_since_subspace, canonical = atoms.W, atoms.scores(), 0, True
    return _Fit(atoms, iteration, status, history)


def _curvatures(Z: NDArray[np.float64], V: NDArray[np.float64], P: NDArray[np.float64],
                lambda_fro: float) -> NDArray[np.float64]:
    """The curvature of R̃ along each atom u_j v_jᵀ (Z = X U, P the softmax probabilities):
    (1/n) Σ_i z_ij² (Σ_c p_ic v_jc² − (Σ_c p_ic v_jc)²) + 2λ2 (the multinomial Hessian
    diag(p) − ppᵀ in the direction v_j, per example)."""
    pv = P @ V
    spread = P @ (V * V) - pv * pv
    h = np.einsum("ij,ij->j", Z * Z, spread) / len(P) + 2.0 * lambda_fro
    return np.asarray(np.maximum(h, np.finfo(np.float64).tiny))


def _pairs_above(G: NDArray[np.float64], ritz: NDArray[np.float64],
                 level: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The Ritz pairs (u_j, v_j, σ_j) of −G with σ_j > `level`: u_j = −G v_j / σ_j for the right
    Ritz vectors v_j, the rows of `ritz`."""
    V = np.asarray(ritz).T
    U = -G @ V
    sigma = np.linalg.norm(U, axis=0)
    above = sigma > level
    return U[:, above] / sigma[above], V[:, above], sigma[above]


def _outside_pairs(atoms: _Atoms, G: NDArray[np.float64], ritz: NDArray[np.float64],
                   level: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The pairs of [`_pairs_above`] that point outside the atoms' spans (by more than 0.1 of
    their length on either side)."""
    U, V, sigma = _pairs_above(G, ritz, level)
    outside_u = np.linalg.norm(U - atoms.U @ (atoms.U.T @ U), axis=0)
    outside_v = np.linalg.norm(V - atoms.V @ (atoms.V.T @ V), axis=0)
    keep = np.maximum(outside_u, outside_v) > 0.1
    return np.asarray(U[:, keep]), np.asarray(V[:, keep]), np.asarray(sigma[keep])


def _orthonormal_basis(A: NDArray[np.float64]) -> NDArray[np.float64]:
    """An orthonormal basis of A's column span (its left singular vectors above 1e-10 of
    the largest singular value; A is tall and thin)."""
    Q, s, _ = np.linalg.svd(A, full_matrices=False)
    return np.ascontiguousarray(Q[:, s > 1e-10 * s[0]]) if s.size and s[0] > 0 else np.zeros((A.shape[0], 0))


def _unit_columns(A: NDArray[np.float64]) -> NDArray[np.float64]:
    """A with each nonzero column scaled to unit length (zero columns dropped)."""
    norms = np.linalg.norm(A, axis=0)
    nonzero = norms > 0
    return np.asarray(A[:, nonzero] / norms[nonzero])


@dataclass
class _Span:
    """Orthonormal bases Q_u (d × k), Q_v (m × k') of the subspace step, and Z = X Q_u."""

    Qu: NDArray[np.float64]
    Qv: NDArray[np.float64]
    Z: NDArray[np.float64]

    @classmethod
    def of(cls, U: NDArray[np.float64], V: NDArray[np.float64],
           rotations: tuple[NDArray[np.float64], NDArray[np.float64]], design: _Design) -> _Span:
        """The bases of span(U) + span(rotations[0]) and span(V) + span(rotations[1])."""
        Qu = _orthonormal_basis(np.column_stack([U, _unit_columns(rotations[0])]))
        Qv = _orthonormal_basis(np.column_stack([V, _unit_columns(rotations[1])]))
        return cls(Qu, Qv, design.dot(Qu))


def _span_step(atoms: _Atoms, span: _Span, y: NDArray[np.uint32], *, lambda_trace: float, lambda_fro: float,
               fit_intercept: bool, gtol: float, max_steps: int, n_jobs: int | None) -> _Atoms:
    """The subspace step: min over C, b of λ1‖C‖_σ,1 + λ2‖C‖²_F + R_n(Z C Q_vᵀ + 1bᵀ), Z = X Q_u,
    over the span's bases (the core's subspace.rs; the atoms lie in it), from the current
    W. Returns W = Q_u C Q_vᵀ as its singular pairs (rank can drop).

    Two stages, both on the core's f(C, b) and ∇f:

    1. L-BFGS over a factorisation C = A Bᵀ with r = #atoms columns, using
       ‖C‖_σ,1 = min_{A Bᵀ = C} ½(‖A‖²_F + ‖B‖²_F) (Srebro et al.): the problem becomes
       smooth, and a quasi-Newton method gets close in tens of evaluations where proximal
       gradient needs hundreds (measured on the benchmark: 229 against 893 evaluations
       per fit). It starts from the balanced factors A = Q_uᵀU diag√θ, B = Q_vᵀV diag√θ.
    2. Accelerated proximal gradient on C itself (the convex problem) from there, until
       the gradient mapping is below `gtol`: it sets exactly to zero the singular values
       that should vanish (the factorised problem only shrinks them) and certifies the
       result, as stage 1 is non-convex and could stop short.
    """
    if atoms.theta.size == 0:
        return atoms
    Qu, Qv, Z = span.Qu, span.Qv, span.Z
    # With an intercept, both stages run on the centred Z̃ = Z − 1z̄ᵀ: Z C Q_vᵀ + 1bᵀ =
    # Z̃ C Q_vᵀ + 1(b + Q_v Cᵀz̄)ᵀ, the same problem with the mean moved into the
    # unpenalised intercept. Uncentred, a large mean couples C with b: the L-BFGS stalls
    # and the prox step 1/‖Z‖² shrinks (features with an offset of 50 times their spread
    # ran to max_iter far from the optimum).
    mean = Z.mean(axis=0) if fit_intercept else np.zeros(Z.shape[1])
    Z_centred = np.ascontiguousarray(Z - mean) if fit_intercept else Z
    shift = ((mean @ Qu.T @ atoms.U) * atoms.theta) @ atoms.V.T
    C, b = _factored_span_descent(replace(atoms, b=atoms.b + shift), Qu, Qv, Z_centred, y, lambda_trace=lambda_trace,
                                  lambda_fro=lambda_fro, fit_intercept=fit_intercept, gtol=gtol, max_steps=max_steps,
                                  n_jobs=n_jobs)
    C, b = _proximal_span_descent(C, b, Z_centred, Qv, y, lambda_trace=lambda_trace, lambda_fro=lambda_fro,
                                  fit_intercept=fit_intercept, gtol=gtol, max_steps=max_steps, n_jobs=n_jobs)
    b = np.ascontiguousarray(b - (mean @ C) @ Qv.T)
    if not (np.all(np.isfinite(C)) and np.all(np.isfinite(b))):
        raise NoSolutionError("the subspace step produced non-finite weights")
    P, sv, Qt = np.linalg.svd(C, full_matrices=False)
    # The prox leaves exact zeros; re-factorising C shows them as rounding (≈1e-16 · the
    # largest), which must not become atoms.
    if not (sv.size and sv[0] > 0):
        return _Atoms(np.zeros((Qu.shape[0], 0)), np.zeros((Qv.shape[0], 0)), np.zeros(0), b, np.zeros((len(y), 0)))
    keep = sv > 1e-12 * sv[0]
    return _Atoms(np.ascontiguousarray(Qu @ P[:, keep]), np.ascontiguousarray(Qv @ Qt[keep].T),
                  np.ascontiguousarray(sv[keep]), b, np.ascontiguousarray(Z @ P[:, keep]))


def _factored_span_descent(atoms: _Atoms, Qu: NDArray[np.float64], Qv: NDArray[np.float64], Z: NDArray[np.float64],
                           y: NDArray[np.uint32], *, lambda_trace: float, lambda_fro: float, fit_intercept: bool,
                           gtol: float, max_steps: int,
                           n_jobs: int | None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Stage 1 of the subspace step: L-BFGS on ½λ1(‖A‖² + ‖B‖²) + f(A Bᵀ, b); returns (C, b)."""
    k, k_v, r = Qu.shape[1], Qv.shape[1], atoms.theta.size
    root = np.sqrt(atoms.theta)
    sizes = np.cumsum([k * r, k_v * r])

    def split(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        A, B = x[:sizes[0]].reshape(k, r), x[sizes[0]:sizes[1]].reshape(k_v, r)
        return A, B, (x[sizes[1]:] if fit_intercept else atoms.b)

    def value_and_gradient(x: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        A, B, b = split(x)
        f, g_c, g_b = _core.tracenorm_span(Z, Qv, np.ascontiguousarray(A @ B.T), np.ascontiguousarray(b), y,
                                           lambda_fro=lambda_fro, n_jobs=n_jobs)
        f += 0.5 * lambda_trace * (float(np.sum(A * A)) + float(np.sum(B * B)))
        parts = [(g_c @ B + lambda_trace * A).ravel(), (g_c.T @ A + lambda_trace * B).ravel()]
        return f, np.concatenate(parts + ([g_b] if fit_intercept else []))

    start = [((Qu.T @ atoms.U) * root).ravel(), ((Qv.T @ atoms.V) * root).ravel()]
    x0 = np.concatenate(start + ([atoms.b] if fit_intercept else []))
    # ftol=0: stop on the gradient (or max_steps), not on a stalled objective.
    result = scipy.optimize.minimize(value_and_gradient, x0, jac=True, method="L-BFGS-B",
                                     options=dict(maxiter=max_steps, gtol=gtol / 10, ftol=0.0, maxcor=20))
    A, B, b = split(np.asarray(result.x, dtype=np.float64))
    return np.ascontiguousarray(A @ B.T), np.ascontiguousarray(b, dtype=np.float64)


def _proximal_span_descent(C: NDArray[np.float64], b: NDArray[np.float64], Z: NDArray[np.float64],
                           Qv: NDArray[np.float64], y: NDArray[np.uint32], *, lambda_trace: float, lambda_fro: float,
                           fit_intercept: bool, gtol: float, max_steps: int,
                           n_jobs: int | None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Stage 2 of the subspace step: FISTA with gradient-based restart on C (prox: the
    soft-thresholded SVD) and b, until the gradient mapping is below `gtol` (or
    `max_steps` steps); returns (C, b)."""
    n = len(y)
    # Step sizes from Lipschitz bounds: the softmax Hessian is ≤ I/2, and scaling the
    # blocks by twice their own bounds covers the cross terms.
    step_c = 1.0 / (2.0 * lambda_fro + float(np.linalg.norm(Z, 2)) ** 2 / n)
    step_b = 1.0

    def prox(A: NDArray[np.float64], threshold: float) -> NDArray[np.float64]:
        P, sv, Qt = np.linalg.svd(A, full_matrices=False)
        return np.ascontiguousarray((P * np.maximum(sv - threshold, 0.0)) @ Qt)

    y_c, y_b, t = C, b, 1.0
    for _ in range(max_steps):
        _, g_c, g_b = _core.tracenorm_span(Z, Qv, y_c, y_b, y, lambda_fro=lambda_fro, n_jobs=n_jobs)
        C_new = prox(y_c - step_c * g_c, lambda_trace * step_c)
        b_new = np.ascontiguousarray(y_b - step_b * g_b) if fit_intercept else y_b
        mapping = max(float(np.max(np.abs(C_new - y_c))) / step_c, float(np.max(np.abs(b_new - y_b))) / step_b)
        if mapping <= gtol:
            return C_new, b_new
        # Restart the momentum when it points against the last step (O'Donoghue–Candès).
        if np.sum((y_c - C_new) * (C_new - C)) + np.sum((y_b - b_new) * (b_new - b)) > 0:
            t = 1.0
        t_next = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        y_c = np.ascontiguousarray(C_new + ((t - 1.0) / t_next) * (C_new - C))
        y_b = np.ascontiguousarray(b_new + ((t - 1.0) / t_next) * (b_new - b))
        C, b, t = C_new, b_new, t_next
    return C, b


class TraceNormLogisticRegression(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Multinomial logistic regression with trace-norm and Frobenius penalties, by
    rank-one descent (module docs: the objective, the algorithm and its stopping rule).

    Parameters
    ----------
    lambda_trace : float, default=1e-3
        λ1, the weight of the trace norm ‖W‖_σ,1; larger gives lower rank.
    lambda_fro : float, default=1e-4
        λ2, the weight of ‖W‖²_F (makes the problem strongly convex).
    fit_intercept : bool, default=True
        Fit an unpenalised intercept per class.
    tol : float, default=1e-4
        ε of the stopping rules (C1)–(C2), on the scale of the gradient.
    max_iter : int, default=200
        Rank-one iterations at most (status "max_iter" with a warning when reached).
    subspace_every : int, default=5
        Rank-one steps between subspace steps (re-optimisations over the atoms' span).
    warm_start : bool, default=False
        Start from the previous fit's atoms (same classes and features).
    random_state : int, RandomState or None
        Seeds the start vector of the first singular-pair iteration.
    n_jobs : int or None
        Threads of the Rust kernels (None: all cores). NumPy's BLAS is held to one thread
        during ``fit`` (its products here are small, and its idle workers would spin on the
        cores the Rust pool needs); the caller's setting is restored afterwards.
    verbose : int, default=0
        Print the objective and σ_max − λ1 every few iterations.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_features)
    intercept_ : ndarray of shape (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    rank_ : int — the rank of W: its singular values above 1e-6 × the largest (smaller
        ones are atoms within the tolerance of zero weight).
    singular_values_ : ndarray — every nonzero singular value of W, largest first.
    n_iter_ : int
    objective_ : float — J(W, b) at the solution.
    status_ : {"converged", "max_iter"}
    history_ : list of dict (iteration, objective, sigma, rank, seconds)
    """

    def __init__(
        self,
        lambda_trace: float = 1e-3,
        lambda_fro: float = 1e-4,
        *,
        fit_intercept: bool = True,
        tol: float = 1e-4,
        max_iter: int = 200,
        subspace_every: int = 5,
        warm_start: bool = False,
        random_state: Any = None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        self.lambda_trace = lambda_trace
        self.lambda_fro = lambda_fro
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.subspace_every = subspace_every
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _validate(self, X: Any, y: Any) -> tuple[_Design, NDArray[np.uint32]]:
        from toprank.pq import CompressedMatrix  # noqa: PLC0415

        if isinstance(X, CompressedMatrix):
            # As validate_data checks y for the other inputs (NaN among object labels too).
            y = column_or_1d(check_array(y, ensure_2d=False, dtype=None, input_name="y"), warn=True)
            check_consistent_length(X.codes, y)
            if len(y) < 2:
                raise InvalidInputError(f"X: needs at least 2 samples, got {len(y)}")
            self.n_features_in_ = X.shape[1]
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            Xv: Any = X
        else:
            Xv, y = validate_input(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32], order="C",
                                   ensure_min_samples=2)
            if sp.issparse(Xv):
                Xv = canonical_csr(Xv)
            # The loss's curvature along W scales with ‖x_i‖²: an X of 1e300 otherwise
            # surfaced as "subspace step: no solution (non-finite weights)", or as
            # Python's OverflowError. (Codes decode to float32 values: no overflow.)
            check_row_norms(Xv, np.float64, "the loss's curvature scales with them")
        check_classification_targets(y)
        classes, y_enc = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise InvalidInputError(f"y: needs samples of at least 2 classes, got {len(classes)} class")
        self.classes_ = classes
        return _Design(Xv, as_jobs(self.n_jobs)), np.ascontiguousarray(y_enc, dtype=np.uint32)

    @restores_on_failure
    def fit(self, X: Any, y: ArrayLike) -> TraceNormLogisticRegression:
        """Fit on X (dense, CSR, or a :class:`toprank.pq.CompressedMatrix`) and labels y."""
        previous = getattr(self, "_atoms", None) if _flag(self.warm_start, "warm_start") else None
        previous_classes = getattr(self, "classes_", None)
        design, y_enc = self._validate(X, y)
        start = None
        if previous is not None:
            # (Validation has set classes_ and n_features_in_ from the new data; the
            # refusal restores the previous model, as every failed fit does.)
            if (previous_classes is None or not np.array_equal(previous_classes, self.classes_)
                    or previous.U.shape[0] != design.shape[1]):
                raise InvalidInputError("warm_start: the previous fit has other classes or features; refit without it")
            start = replace(previous, Z=design.dot(previous.U))
        self._fit_design(design, y_enc, start)
        return self

    def _fit_design(self, design: _Design, y_enc: NDArray[np.uint32], start: _Atoms | None,
                    start_gradient: _Gradient | None = None) -> _Fit:
        """R1D on validated data from `start` (Z included; ∇R̃ there if known); sets the
        fitted attributes and returns the fit, whose atoms and gradient can start the next
        point of a path."""
        lambda_trace = _real(self.lambda_trace, "lambda_trace", low=0.0, strict=False)
        lambda_fro = _real(self.lambda_fro, "lambda_fro", low=0.0, strict=False)
        tol = _real(self.tol, "tol", low=0.0, strict=True)
        max_iter = _int(self.max_iter, "max_iter", low=1)
        subspace_every = _int(self.subspace_every, "subspace_every", low=1)
        verbose = _int(self.verbose, "verbose", low=0)
        # NumPy's BLAS on one thread during the fit: the heavy work runs in the Rust pool
        # (n_jobs), between small NumPy products (n × rank × m) and L-BFGS-B steps. Left
        # multi-threaded, OpenBLAS's workers spin after each such product and take the
        # cores the pool needs: a Fashion-MNIST fit (20,000 × 784, 10 classes, 2 cores)
        # took 6.3-7.7 s instead of 2.5-2.8 s.
        with threadpool_limits(limits=1, user_api="blas"):
            fit = _rank_one_descent(
                design, y_enc, len(self.classes_), lambda_trace=lambda_trace, lambda_fro=lambda_fro,
                fit_intercept=_flag(self.fit_intercept, "fit_intercept"), tol=tol, max_iter=max_iter,
                subspace_every=subspace_every, rng=check_random_state(self.random_state), n_jobs=as_jobs(self.n_jobs),
                verbose=verbose, start=start, start_gradient=start_gradient,
            )
        if fit.gradient is None:
            # Stopped early: the atoms may overlap; rewrite W as its singular pairs.
            fit.atoms = fit.atoms.canonical(design)
            loss, _ = _core.multinomial_loss(fit.atoms.scores(), y_enc, n_jobs=as_jobs(self.n_jobs))
        else:
            loss = fit.gradient.loss  # converged: the atoms are W's singular pairs already
        atoms = fit.atoms
        # Kept for warm starts without Z (n × rank: it would make the pickled model grow with n).
        self._atoms = replace(atoms, Z=np.zeros((0, atoms.theta.size)))
        self.coef_ = np.ascontiguousarray(atoms.W.T)
        self.intercept_ = np.asarray(atoms.b, dtype=np.float64).copy()
        self.singular_values_ = atoms.theta.copy()
        self.rank_ = int(np.sum(atoms.theta > 1e-6 * atoms.theta.max())) if atoms.theta.size else 0
        self.n_iter_ = fit.n_iter
        # J(W, b) with the canonical atoms, whose weights sum to the trace norm exactly.
        self.objective_ = lambda_trace * float(atoms.theta.sum()) + lambda_fro * float(np.sum(atoms.theta**2)) + loss
        self.status_ = fit.status
        self.history_ = fit.history
        if fit.status != "converged":
            # (C1)'s margin σ_max(−∇) − λ1 at the last iteration: what tol bounds.
            excess = float(fit.history[-1]["sigma"]) - lambda_trace if fit.history else float("nan")
            warn_not_converged("TraceNormLogisticRegression", fit.status, max_iter, "iterations", excess, tol,
                               f"Raise max_iter (now {max_iter}) or tol, or standardise X (the rank-one steps "
                               "converge slowly on badly scaled features).",
                               measure="(C1) margin σ_max(−∇) − λ1")
        return fit

    # --------------------------------------------------------------- prediction

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """Class scores Wᵀx + b, shape (n_samples, n_classes); (n_samples,) for two classes."""
        scores = self._scores(X)
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def _scores(self, X: Any) -> NDArray[np.float64]:
        check_is_fitted(self)
        from toprank.pq import CompressedMatrix  # noqa: PLC0415

        if isinstance(X, CompressedMatrix):
            if X.shape[1] != self.n_features_in_:
                raise InvalidInputError(f"X: has {X.shape[1]} features, the model {self.n_features_in_}")
            return np.asarray(X.dot(self.coef_.T.astype(np.float64)), dtype=np.float64) + self.intercept_
        Xv: Any = validate_input(self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False)
        return np.asarray(safe_sparse_dot(Xv, self.coef_.T, dense_output=True), dtype=np.float64) + self.intercept_

    def predict(self, X: Any) -> NDArray[Any]:
        """The class with the highest score."""
        scores = self._scores(X)
        return np.asarray(self.classes_[np.argmax(scores, axis=1)])

    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """Class probabilities softmax(Wᵀx + b)."""
        scores = self._scores(X)
        scores -= scores.max(axis=1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=1, keepdims=True)
        return scores

    def predict_log_proba(self, X: Any) -> NDArray[np.float64]:
        """Logarithm of :meth:`predict_proba`."""
        scores = self._scores(X)
        scores -= scores.max(axis=1, keepdims=True)
        return np.asarray(scores - np.log(np.exp(scores).sum(axis=1, keepdims=True)))

    def predict_topk(self, X: Any, k: int = 5) -> NDArray[Any]:
        """The k highest-scoring classes per sample, best first; shape (n_samples, k)."""
        scores = self._scores(X)
        kk = _int(k, "k", low=1)
        if kk > scores.shape[1]:
            raise InvalidInputError(f"k: must be <= n_classes = {scores.shape[1]}, got {kk}")
        return np.asarray(self.classes_[np.argsort(-scores, axis=1, kind="stable")[:, :kk]])


@dataclass
class PathPoint:
    """One model of a regularisation path."""

    lambda_trace: float
    lambda_fro: float
    model: TraceNormLogisticRegression
    objective: float
    rank: int
    n_iter: int
    seconds: float
    validation_topk: dict[int, float] = field(default_factory=dict)


def tracenorm_path(
    X: Any,
    y: ArrayLike,
    lambdas_trace: ArrayLike,
    lambda_fro: float = 1e-4,
    *,
    validation_data: tuple[Any, ArrayLike] | None = None,
    topk: Sequence[int] = (1, 5),
    **params: Any,
) -> list[PathPoint]:
    """Fit :class:`TraceNormLogisticRegression` along ``lambdas_trace`` (taken from the
    largest to the smallest), each fit warm-started from the previous one.

    Returns one :class:`PathPoint` per λ1 (in decreasing order) with the fitted model, its
    objective, rank, iterations and seconds, and — with ``validation_data=(X_val,
    y_val)`` — its top-k accuracies on that data for each k in ``topk``.
    """
    if "lambda_trace" in params:
        raise InvalidInputError("lambda_trace: a path takes its values from lambdas_trace, not lambda_trace")
    if np.asarray(lambdas_trace).dtype.kind not in "iuf":
        raise InvalidInputError(f"lambdas_trace: must be a sequence of real numbers, got {lambdas_trace!r}")
    try:
        values = np.asarray(lambdas_trace, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"lambdas_trace: must be a sequence of numbers ({error})") from None
    if values.ndim != 1:
        raise InvalidInputError(f"lambdas_trace: must be one-dimensional, got shape {values.shape}")
    lambdas = sorted((_real(float(v), "lambdas_trace", low=0.0, strict=False) for v in values), reverse=True)
    if not lambdas:
        raise InvalidInputError("lambdas_trace: needs at least one value")
    model = TraceNormLogisticRegression(lambda_fro=lambda_fro, warm_start=True, **params)
    design, y_enc = model._validate(X, y)
    if validation_data is not None:
        if not (isinstance(validation_data, (tuple, list)) and len(validation_data) == 2):
            raise InvalidInputError("validation_data: must be a pair (X_val, y_val)")
        X_val, y_val = validation_data
        y_val = column_or_1d(y_val)
        if len(y_val) != (X_val.shape[0] if hasattr(X_val, "shape") else len(X_val)):
            raise InvalidInputError("validation_data: X_val and y_val have different lengths")
    points, fit = [], None
    for lam in lambdas:
        started = time.perf_counter()
        # Each point starts from the last one's atoms and, if it converged, from its
        # gradient, which does not depend on λ1 (so the first iteration needs no pass over X).
        fit = model.set_params(lambda_trace=lam)._fit_design(design, y_enc, None if fit is None else fit.atoms,
                                                             None if fit is None else fit.gradient)
        seconds = time.perf_counter() - started
        point = PathPoint(lam, float(lambda_fro), _copy(model), model.objective_, model.rank_, model.n_iter_, seconds)
        if validation_data is not None:
            scores_order = np.argsort(-model._scores(X_val), axis=1, kind="stable")
            truth = np.asarray(y_val)
            for k in topk:
                kk = min(_int(k, "topk", low=1), len(model.classes_))
                point.validation_topk[int(k)] = float(np.mean(np.any(model.classes_[scores_order[:, :kk]] == truth[:, None], axis=1)))
        points.append(point)
    return points


def _copy(model: TraceNormLogisticRegression) -> TraceNormLogisticRegression:
    import copy  # noqa: PLC0415

    return copy.deepcopy(model)
