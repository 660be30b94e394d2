"""Package-level contract: public names, typing marker, exceptions, threads and the GIL."""

import pickle
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import toprank
from toprank import _core, exceptions, losses, projections


def test_public_api_is_declared() -> None:
    import toprank.datasets
    import toprank.distributed
    import toprank.plotting
    import toprank.pq
    import toprank.recsys
    import toprank.scoring

    modules = (toprank, projections, losses, toprank.metrics, exceptions, toprank.pq, toprank.scoring)
    for module in (*modules, toprank.recsys, toprank.plotting, toprank.distributed, toprank.datasets):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
    assert (Path(toprank.__file__).parent / "py.typed").exists()
    assert toprank.__version__ == _core.__version__


def test_exception_hierarchy_and_pickling() -> None:
    assert issubclass(toprank.InvalidInputError, ValueError)
    assert issubclass(toprank.InfeasibleError, toprank.InvalidInputError)
    assert issubclass(toprank.NoSolutionError, RuntimeError)
    assert issubclass(toprank.InternalError, RuntimeError)
    err = pickle.loads(pickle.dumps(toprank.InvalidInputError("k: bad")))
    assert isinstance(err, toprank.InvalidInputError) and str(err) == "k: bad"


def test_core_functions_validate_directly() -> None:
    # The compiled module is as safe as the facade: no Python-side checks needed.
    with pytest.raises(toprank.InvalidInputError, match="^x:"):
        _core.simplex(np.array([1, 2, 3]))
    with pytest.raises(toprank.InvalidInputError, match="^x:"):
        _core.simplex([1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(toprank.InvalidInputError, match="^n_jobs:"):
        _core.simplex(np.ones(3), n_jobs=0)


def test_negative_n_jobs_follows_joblib() -> None:
    x = np.random.default_rng(0).standard_normal((64, 10))
    expected = projections.topk_simplex(x, 3, n_jobs=1)
    assert np.array_equal(projections.topk_simplex(x, 3, n_jobs=-1), expected)
    assert np.array_equal(projections.topk_simplex(x, 3, n_jobs=-2), expected)


def test_gil_is_released_during_batches() -> None:
    # A Python thread keeps ticking *during* one long batch call; if the call held the
    # GIL the ticker could not run until it returned.
    x = np.random.default_rng(1).standard_normal((10_000, 2_000))
    ticks = 0
    done = threading.Event()

    def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.0002)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        time.sleep(0.01)
        before = ticks
        start = time.perf_counter()
        projections.topk_simplex(x, 5, rho=1.0, n_jobs=1)
        elapsed = time.perf_counter() - start
        during = ticks - before
    finally:
        done.set()
        thread.join()
    assert elapsed > 0.02, "the batch is too small to observe the GIL"
    assert during >= 10, f"only {during} ticks in {elapsed * 1e3:.0f} ms: the GIL was held"
