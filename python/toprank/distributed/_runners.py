"""Where the CoCoA+ tasks run — Dask workers (each task pinned to the worker holding its
partition) or local threads — and where the partitions are placed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from toprank.exceptions import InvalidInputError

# One partition where it lives: (X_k, y_k, rows, worker); X_k and y_k are futures on
# Dask, the values themselves locally.
Placed = tuple[Any, Any, int, "str | None"]


class Local:
    """Runs the tasks on local threads (no Dask): futures of concurrent.futures."""

    def __init__(self, threads: int) -> None:
        self.pool = ThreadPoolExecutor(max_workers=threads)

    def submit(self, fn: Callable[..., Any], *args: Any, worker: str | None = None) -> Future[Any]:
        # Every argument future was submitted before this task, so with first-in first-out
        # threads it is running or done: waiting on it cannot deadlock.
        def resolved() -> Any:
            return fn(*(a.result() if isinstance(a, Future) else a for a in args))

        return self.pool.submit(resolved)

    def gather(self, futures: Sequence[Any]) -> list[Any]:
        return [f.result() if isinstance(f, Future) else f for f in futures]

    def put(self, value: Any, worker: str | None = None) -> Any:
        return value

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class Dask:
    """Runs each task on the worker named (dask.distributed futures)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def submit(self, fn: Callable[..., Any], *args: Any, worker: str | None = None) -> Any:
        return self.client.submit(
            fn, *args, workers=None if worker is None else [worker], allow_other_workers=False, pure=False
        )

    def gather(self, futures: Sequence[Any]) -> list[Any]:
        return list(self.client.gather(list(futures)))

    def put(self, value: Any, worker: str | None = None) -> Any:
        # In a list: scatter would split a tuple into one future per item.
        return self.client.scatter([value], workers=None if worker is None else [worker], hash=False)[0]

    def close(self) -> None:
        pass


Runner = Dask | Local


def _is_dask_array(a: Any) -> bool:
    return hasattr(a, "to_delayed") and hasattr(a, "chunks")


def place(runner: Runner, client: Any, X: Any, y: Any) -> list[Placed]:
    """(X_k, y_k, rows, worker) per partition: a dask array's row chunks where Dask put
    them, or the list's items scattered round-robin over the workers. y follows X's rows
    (a vector of labels, or an indicator matrix for M3L)."""
    if _is_dask_array(X):
        if client is None:
            raise InvalidInputError("X: a dask array needs a dask client")
        if X.ndim != 2:
            raise InvalidInputError(f"X: must be 2-D, got {X.ndim}-D")
        if not _is_dask_array(y):
            raise InvalidInputError("y: must be a dask array aligned with X when X is one")
        if y.shape[0] == y.shape[0] and X.shape[0] == X.shape[0] and y.shape[0] != X.shape[0]:  # known (not NaN)
            raise InvalidInputError(f"y: has {y.shape[0]} rows of labels for {X.shape[0]} rows of X")
        X = X.rechunk({1: X.shape[1]})
        y = y.rechunk((X.chunks[0],) + tuple((size,) for size in y.shape[1:]))
        from distributed import wait  # noqa: PLC0415 (the optional extra)

        x_futures = client.compute(list(X.to_delayed().ravel()))
        y_futures = client.compute(list(y.to_delayed().ravel()))
        wait(x_futures + y_futures)  # type: ignore[no-untyped-call]
        located = client.who_has(x_futures)
        return [(xf, yf, rows, sorted(located[xf.key])[0]) for xf, yf, rows in zip(x_futures, y_futures, X.chunks[0])]
    if not isinstance(X, (list, tuple)) or not X:
        raise InvalidInputError("X: must be a dask array or a non-empty list of partitions (arrays or CSR matrices)")
    if any(getattr(part, "ndim", 0) != 2 for part in X):
        raise InvalidInputError("X: every partition must be a 2-D array or CSR matrix")
    if isinstance(y, (list, tuple)):
        ys = list(y)
    else:
        edges = np.cumsum([0] + [part.shape[0] for part in X])
        rows = y.shape[0] if hasattr(y, "shape") else len(y)
        if edges[-1] != rows:
            raise InvalidInputError(f"y: has {rows} rows of labels for {edges[-1]} rows of X")
        ys = [y[a:b] for a, b in zip(edges[:-1], edges[1:])]
    if len(ys) != len(X):
        raise InvalidInputError(f"y: {len(ys)} label partitions for {len(X)} partitions of X")
    # The scheduler's answer itself, not `scheduler_info()["workers"]`: that returns the
    # client's cached identity, which its periodic refresh overwrites with a copy holding
    # no workers (distributed 2026.8) — a fit found "no workers" on a 2-worker cluster.
    workers: list[str | None] = sorted(client.nthreads()) if client is not None else [None]
    if not workers:
        raise InvalidInputError("client: has no workers (start some, or pass client=None for local threads)")
    placed: list[Placed] = []
    for k, (part, labels) in enumerate(zip(X, ys)):
        worker = workers[k % len(workers)]
        placed.append((runner.put(part, worker), runner.put(labels, worker), int(part.shape[0]), worker))
    return placed


def n_features(X: Any) -> int:
    if _is_dask_array(X):
        return int(X.shape[1])
    widths = {int(part.shape[1]) for part in X}
    if len(widths) != 1:
        raise InvalidInputError(f"X: partitions have different feature counts {sorted(widths)}")
    return widths.pop()
