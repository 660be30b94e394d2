"""scikit-learn's sample-weight equivalence check, taken apart: its data, the two fits it
compares, and the bound that explains why the check fails at a solver's default tol.

The check (``sklearn.utils.estimator_checks.check_sample_weight_equivalence_on_*``) fits
15 random rows with integer weights and the same rows repeated as often, then compares
``decision_function`` at rtol 1e-7. Both fits minimise the same primal
P(W̃) = ½‖W̃‖² + Σ_i c_i L(W̃ x̃_i), x̃ = [x, intercept_scaling], which is 1-strongly convex:
P(W̃) − P* ≥ ½‖W̃ − W̃*‖², and weak duality gives P* ≥ D(A) for every feasible dual A.
So ‖W̃ − W̃*‖ ≤ √(2 (P(W̃) − D(A))), and a score of x differs between the two fits by at
most ‖x̃‖ (√(2 gap₁) + √(2 gap₂)) — the tests recompute each gap from the fitted model
with an independent reference.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import shuffle


def check_fits(estimator: Any, sparse: bool) -> tuple[np.ndarray, list[tuple[Any, np.ndarray, np.ndarray, np.ndarray]]]:
    """The check's rows X and its two fits of ``estimator`` (seeded, ``keep_dual=True``), each
    as (fitted model, its training rows, their labels, their weights): the repeated rows
    with weight 1, and the weighted rows (shuffled, as the check does)."""
    rng = np.random.RandomState(42)  # the check's data (sklearn.utils.estimator_checks)
    X = rng.rand(15, 30)
    y = rng.randint(0, 3, size=15)
    sw = rng.randint(0, 5, size=15)
    X_repeated, y_repeated = X.repeat(sw, axis=0), y.repeat(sw)
    X_weighted, y_weighted, sw = shuffle(X, y, sw, random_state=0)
    convert = sp.csr_matrix if sparse else np.asarray
    model = clone(estimator).set_params(random_state=0, keep_dual=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        repeated = clone(model).fit(convert(X_repeated), y_repeated)
        weighted = clone(model).fit(convert(X_weighted), y_weighted, sample_weight=sw)
    return X, [
        (repeated, X_repeated, y_repeated, np.ones(len(y_repeated))),
        (weighted, X_weighted, y_weighted, sw * 1.0),
    ]


def assert_within_certified_distance(
    fits: list[tuple[Any, np.ndarray, np.ndarray, np.ndarray]], X: np.ndarray, norms: np.ndarray, gaps: list[float]
) -> None:
    """The two fits' scores of X differ by at most ‖x̃‖ Σ √(2 gap) (``norms`` = ‖x̃‖ per row,
    ``gaps`` = P − D of each fit), and by more than the check's tolerance allows."""
    assert all(gap >= 0 for gap in gaps), gaps
    scores = [fit.decision_function(X) for fit, *_ in fits]
    bound = norms[:, None] * sum(np.sqrt(2 * gap) for gap in gaps)
    assert np.all(np.abs(scores[0] - scores[1]) <= bound * (1 + 1e-9))
    # ... and the check's tolerance is beyond the default tol's reach.
    assert not np.allclose(scores[0], scores[1], rtol=1e-7, atol=1e-9)
