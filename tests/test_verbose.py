"""``verbose`` is paced the same way for every estimator: with 1, at most one progress
line a second (the first always) and a last line with the final status; with 2, every
line. The clock is faked (``time.monotonic``), so nothing here depends on how fast the
machine is."""

from __future__ import annotations

import itertools
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from toprank import RankmaxRanker, TopKSVC, TopPush
from toprank._estimator import LinePace


def _clock(monkeypatch: pytest.MonkeyPatch, times) -> None:
    ticks = iter(times)
    monkeypatch.setattr(time, "monotonic", lambda: next(ticks))


def test_the_pace_prints_the_first_line_then_at_most_one_a_second(monkeypatch):
    _clock(monkeypatch, [100.0, 100.5, 100.99, 101.0, 101.2, 102.5, 102.6, 200.0])
    pace = LinePace(1)
    assert [pace.due() for _ in range(8)] == [True, False, False, True, False, True, False, True]
    every = LinePace(2)
    assert all(every.due() for _ in range(5))  # the clock is not even read


def _problems():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y3 = rng.integers(0, 3, 200)
    y2 = (X[:, 0] + rng.standard_normal(200) > 0).astype(int)
    return {
        "TopKSVC": (lambda verbose: TopKSVC(k=1, tol=1e-9, check_every=1, verbose=verbose, random_state=0), X, y3),
        "TopPush": (lambda verbose: TopPush(tol=1e-9, check_every=1, verbose=verbose, random_state=0), X, y2),
    }


@pytest.mark.parametrize("name", ["TopKSVC", "TopPush"])
def test_a_fast_fit_prints_its_first_and_last_lines_only(name, monkeypatch, capsys):
    make, X, y = _problems()[name]
    _clock(monkeypatch, itertools.repeat(0.0))  # every check within the same second
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make(1).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert len(model.history_) > 5
    assert len(lines) == 2
    n_iter, primal = model.history_[0][:2]
    assert lines[0].startswith(f"[{name}] ") and f"{n_iter:7d}  primal {primal:.8g}" in lines[0]
    assert lines[1].startswith(f"[{name}] {model.status_} after {model.n_iter_} ")
    assert f"gap {model.duality_gap_:.3e}" in lines[1]


@pytest.mark.parametrize("name", ["TopKSVC", "TopPush"])
def test_a_slow_fit_and_verbose_2_print_every_line(name, monkeypatch, capsys):
    make, X, y = _problems()[name]
    outputs = []
    for verbose, times in ((1, itertools.count(0.0, 1.0)), (2, itertools.repeat(0.0))):
        _clock(monkeypatch, times)  # a second per check, or none at all with verbose=2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make(verbose).fit(X, y)
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == len(model.history_) + 1
        outputs.append([line.rsplit("  ", 1)[0] for line in lines])  # without the seconds
    assert outputs[0] == outputs[1]


def test_the_ranker_paces_its_epochs_and_always_prints_the_last(monkeypatch, capsys):
    X = sp.identity(60, format="csr", dtype=np.float32)
    Y = np.eye(60, 30, dtype=np.int8) + np.eye(60, 30, k=1, dtype=np.int8)
    _clock(monkeypatch, itertools.repeat(0.0))
    model = RankmaxRanker(n_components=4, n_epochs=6, early_stopping=False, verbose=1, random_state=0).fit(X, Y)
    lines = capsys.readouterr().out.splitlines()
    assert model.n_iter_ == 6
    assert [line.split()[2] for line in lines] == ["1", "6"]
    assert lines[-1].endswith("done: best epoch 6")
    # Early stopping: the epoch it stops at is the last line, saying so.
    stopped = RankmaxRanker(
        n_components=4, learning_rate=5.0, n_epochs=50, n_iter_no_change=1, verbose=1, random_state=0
    ).fit(X, Y)
    lines = capsys.readouterr().out.splitlines()
    assert stopped.n_iter_ < 50 and len(lines) == 2
    assert lines[-1].endswith(f"done: early stop, best epoch {stopped.best_epoch_}")
    # verbose=2: every epoch.
    RankmaxRanker(n_components=4, n_epochs=6, early_stopping=False, verbose=2, random_state=0).fit(X, Y)
    assert len(capsys.readouterr().out.splitlines()) == 6


def test_the_trace_norm_fit_paces_its_iterations_and_reports_typed_records(monkeypatch, capsys):
    from toprank import TraceNormLogisticRegression, TraceNormProgress

    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 12))
    y = (X[:, :4] @ rng.standard_normal((4, 5))).argmax(axis=1)
    counts = {}
    for verbose, times in ((1, itertools.repeat(0.0)), (2, itertools.repeat(0.0))):
        _clock(monkeypatch, times)
        model = TraceNormLogisticRegression(lambda_trace=1e-2, tol=1e-8, verbose=verbose).fit(X, y)
        lines = capsys.readouterr().out.splitlines()
        counts[verbose] = len(lines)
        assert lines[-1].startswith(f"[TraceNormLogisticRegression] {model.status_} after {model.n_iter_} ")
    records = model.history_
    assert len(records) > 3 and all(isinstance(r, TraceNormProgress) for r in records)
    assert [r.n_iter for r in records] == sorted({r.n_iter for r in records})
    assert records[-1].objective == pytest.approx(model.objective_)
    # verbose=1 in one (fake) second: the first line and the closing one; 2: every line.
    assert counts[1] == 2 and counts[2] == len(records) + 1
