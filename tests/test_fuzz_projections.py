"""A short, seeded slice of the fuzz harness (``tests/fuzz/fuzz_projections.py``; the long
run is ``make fuzz``), and a property test of single rows with hypothesis, which shrinks
a failure to a minimal row.

Every projection and loss, rows of length 1 … 20,000 from the adversarial generators
(constant, tied, near-tied, ulp-tied, wide-span, ±1e12 outliers, denormal, huge,
libsdca's long rows), float64 and float32: each output must pass the independent
feasibility and KKT checks of ``tests/fuzz/checks.py``, and NoSolutionError is accepted
only on rows the harness classifies as unresolvable.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))

import checks  # noqa: E402
import fuzz_projections  # noqa: E402

from toprank import projections as P  # noqa: E402
from toprank.exceptions import NoSolutionError  # noqa: E402

EPS = checks.EPS


@pytest.mark.parametrize("seed", [0, 1])
def test_fuzz_slice(seed: int) -> None:
    stats = fuzz_projections.fuzz(rows=400_000, seed=seed, max_m=20_000, verbose=False)
    print(fuzz_projections.summary(stats))
    assert not stats.failures, "\n".join(stats.failures[:10])
    # Every function was exercised.
    names = {key.split("/")[0] for key in stats.rows}
    assert {p.name for p in fuzz_projections.PROBLEMS} <= names


# Rows of moderate values with many ties (a few levels), any length up to 40. Magnitudes
# below 1e-200 become 0: a subnormal answer (x = [5e-324] gives 2.5e-324, which rounds to
# 0) cannot meet the KKT checks, and the harness counts such rows as unresolvable
# (`fuzz_projections.unresolvable`), where raising NoSolutionError is the contract.
_level = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False).map(lambda v: v if abs(v) >= 1e-200 else 0.0)
_levels = st.lists(_level, min_size=1, max_size=3)
_rows = st.tuples(_levels, st.lists(st.integers(0, 2), min_size=1, max_size=40)).map(
    lambda t: np.array([t[0][i % len(t[0])] for i in t[1]], dtype=np.float64)
)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(x=_rows, k_frac=st.floats(0.0, 1.0), r=st.floats(1e-3, 1e3), rho=st.sampled_from([0.0, 0.5, 1.0, 30.0]))
def test_single_rows_are_feasible_and_optimal(x: np.ndarray, k_frac: float, r: float, rho: float) -> None:
    m = x.size
    k = max(1, min(m, int(math.ceil(k_frac * m))))
    X = x[None]
    for name, out, check in [
        (
            "topk_simplex",
            lambda: P.topk_simplex(x, k, r, rho),
            lambda Q: checks.cone_problem(X, Q, k, rho, r, EPS, np.float64),
        ),
        (
            "topk_cone",
            lambda: P.topk_cone(x, k, rho),
            lambda Q: checks.cone_problem(X, Q, k, rho, None, EPS, np.float64),
        ),
        (
            "box_simplex",
            lambda: P.box_simplex(x, r / k, r, rho),
            lambda Q: checks.bias_box(X, Q, r / k, r, rho, EPS, np.float64),
        ),
        ("simplex", lambda: P.simplex(x, r), lambda Q: checks.clip_problem(X, Q, 0.0, math.inf, r, EPS, np.float64)),
        (
            "capped_simplex",
            lambda: P.capped_simplex(x, float(k)),
            lambda Q: checks.clip_problem(X, Q, 0.0, 1.0, float(k), EPS, np.float64),
        ),
        (
            "capped_simplex_entropy",
            lambda: P.capped_simplex_entropy(x, float(k)),
            lambda Q: checks.entropy_problem(X, Q, float(k), EPS, np.float64),
        ),
    ]:
        try:
            q = out()
        except NoSolutionError as err:  # these moderate rows are all resolvable
            raise AssertionError(f"{name}{(x.tolist(), k, r, rho)}: {err}") from err
        ok, why = check(q[None])
        assert ok.all(), (name, x.tolist(), k, r, rho, why, q.tolist())
