"""Threads that cooperate with parallel callers: ``n_jobs=None`` is one thread.

A fit inside ``GridSearchCV(n_jobs=2)`` runs in one of two loky worker processes; with a
pool of all cores per fit, the two workers together would run 2 × cores threads. The
test counts, through ``/proc``, the threads the fits start in the worker processes (a
pool's threads live as long as its process): the workers are started first by a search
over an estimator that starts none, then the toprank search runs on the same workers.
The default (``n_jobs=None``) is compared with ``n_jobs=-1``, the control that shows the
count sees oversubscription where there is some.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from joblib.externals.loky import get_reusable_executor
from sklearn.dummy import DummyClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV

import toprank

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

CORES = len(os.sched_getaffinity(0))


def _worker_threads() -> dict[int, int]:
    """The number of threads of each child process of this one (the loky workers; its
    resource tracker starts no threads)."""
    children: list[int] = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as f:
            children.extend(int(c) for c in f.read().split())
    return {pid: len(os.listdir(f"/proc/{pid}/task")) for pid in children}


def _threads_started_by_search(n_jobs: int | None) -> int:
    """Threads a 2-worker grid search over TopKSVC(n_jobs=n_jobs) starts in its workers."""
    rng = np.random.default_rng(0)
    # From 10,000 examples a linear TopKSVC runs its parallel solver on its pool.
    X = rng.standard_normal((12_000, 8)) / 3
    y = rng.integers(0, 6, 12_000)
    # Fresh workers (earlier tests' workers may hold pools already), started by an
    # estimator that starts no threads.
    get_reusable_executor().shutdown(wait=True)
    GridSearchCV(DummyClassifier(), {"strategy": ["prior", "uniform"]}, cv=2, n_jobs=2).fit(X, y)
    before = _worker_threads()
    search = GridSearchCV(
        toprank.TopKSVC(tol=1e-9, max_epochs=4, random_state=0, n_jobs=n_jobs), {"k": [1, 2]}, cv=2, n_jobs=2
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(X, y)
    after = _worker_threads()
    assert len(before) >= 2 and set(before) <= set(after), "the search did not reuse the started workers"
    return sum(after[pid] - before[pid] for pid in before)


@pytest.mark.skipif(CORES < 2, reason="needs two cores for two workers")
def test_grid_search_threads_stay_within_cores():
    started = _threads_started_by_search(None)
    # One pool thread per worker: as many threads compute as the caller asked for.
    assert 1 <= started <= 2 <= CORES, started


@pytest.mark.skipif(CORES < 2, reason="needs two cores for two workers")
def test_the_count_sees_oversubscription():
    # Control: a pool of all cores in each of two workers is 2 × cores threads.
    assert _threads_started_by_search(-1) > CORES


_COUNT_STARTED = """
import os
import numpy as np
import toprank
before = set(os.listdir("/proc/self/task"))
x = np.random.default_rng(1).standard_normal((20_000, 64))
toprank.projections.simplex(x)
toprank.TopKSVC(max_epochs=2, tol=1e-9).fit(x[:12_000, :8], np.arange(12_000) % 4)
print(len(set(os.listdir("/proc/self/task")) - before))
"""


def test_none_starts_one_thread():
    # In a fresh process (a pool, once started, lives as long as the process): a large
    # projection batch and a fit large enough for the parallel solver, both with the
    # default n_jobs, start at most the one thread of a one-thread pool.
    out = subprocess.run([sys.executable, "-c", _COUNT_STARTED], capture_output=True, text=True, check=True)
    assert int(out.stdout.strip().splitlines()[-1]) <= 1, out.stdout
