"""toprank.distributed.fit_cocoa: CoCoA+ rounds on Dask (LocalCluster) and on local threads."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from toprank import M3L, TopKSVC
from toprank.distributed import _partitions as tasks
from toprank.distributed import decision_function, fit_cocoa, predict
from toprank.exceptions import InvalidInputError

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")


@pytest.fixture(scope="module")
def client():
    # Worker processes, as a real cluster has: every argument of a task crosses a process
    # boundary by pickle, whose out-of-band buffers may place an array at any byte offset.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


def _problem(n=300, d=6, m=5, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(m, d))
    y = rng.integers(0, m, n)
    X = centres[y] + rng.normal(size=(n, d))
    return np.ascontiguousarray(X), y


def _split(X, y, sizes):
    edges = np.cumsum([0, *sizes])
    assert edges[-1] == len(X)
    return [X[a:b] for a, b in zip(edges[:-1], edges[1:])], [y[a:b] for a, b in zip(edges[:-1], edges[1:])]


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fn(*args, **kwargs)


@pytest.mark.parametrize(
    "loss, k, smoothing, intercept, shrinking",
    [
        ("alpha", 1, 0.0, False, False),
        ("alpha", 2, 0.0, True, True),
        ("beta", 2, 0.5, True, True),
        ("softmax", 1, 0.0, True, False),
    ],
)
def test_one_partition_is_the_serial_solver_bit_for_bit(client, loss, k, smoothing, intercept, shrinking):
    X, y = _problem()
    # With shrinking, each check's active set serves the following epochs in both.
    params = dict(
        k=k,
        loss=loss,
        smoothing=smoothing,
        fit_intercept=intercept,
        shrinking=shrinking,
        check_every=2 if shrinking else 1,
        tol=1e-300,
        random_state=3,
    )
    serial = _quiet(TopKSVC(max_epochs=6, keep_dual=True, **params).fit, X, y)
    for runner in (client, None):
        model, history = _quiet(fit_cocoa, runner, TopKSVC(**params), [X], y, max_rounds=6)
        np.testing.assert_array_equal(model.coef_, serial.coef_)
        np.testing.assert_array_equal(model.intercept_, serial.intercept_)
        np.testing.assert_array_equal(model.dual_coef_, serial.dual_coef_)
        assert model.n_iter_ == serial.n_iter_ == 6
        assert [h.round for h in history] == [h[0] for h in serial.history_]
        # The gap terms come from the serial gap pass: the same objectives up to ½‖W‖²'s rounding.
        np.testing.assert_allclose([h.primal for h in history], [h[1] for h in serial.history_], rtol=1e-14)
        np.testing.assert_allclose([h.dual for h in history], [h[2] for h in serial.history_], rtol=1e-14)


@pytest.mark.parametrize("sizes", [[300], [150, 150], [100, 120, 80], [40] * 7 + [20]])
@pytest.mark.parametrize(
    "loss, smoothing, tol, aggregation, local_epochs",
    [("alpha", 0.0, 1e-4, "adding", 1.0), ("beta", 0.3, 1e-6, "line_search", 0.3)],
)
def test_partitions_reach_the_serial_optimum_with_a_rising_dual(sizes, loss, smoothing, tol, aggregation, local_epochs):
    # On local threads (the rounds are the same as on Dask: test_local_threads_give_the_dask_model).
    X, y = _problem(seed=1)
    params = dict(k=2, loss=loss, smoothing=smoothing, C=0.5, check_every=1, random_state=0)
    optimum = _quiet(TopKSVC(tol=1e-10, max_epochs=20000, **params).fit, X, y).primal_objective_
    settings = dict(max_rounds=10000, aggregation=aggregation, local_epochs=local_epochs)
    model, history = fit_cocoa(None, TopKSVC(tol=tol, **params), *_split(X, y, sizes), **settings)
    assert model.status_ == "converged"
    duals = [h.dual for h in history]
    assert all(b >= a - 1e-12 * abs(a) for a, b in zip(duals, duals[1:]))
    assert abs(model.primal_objective_ - optimum) <= tol * abs(optimum)
    # The reported objectives are the model's: recomputed here from coef_ and dual_coef_.
    W = np.hstack([model.coef_, model.intercept_[:, None] / model.intercept_scaling])
    assert 0.5 * np.sum(W * W) == pytest.approx(
        0.5 * np.sum((np.hstack([X, np.ones((len(X), 1))]).T @ model.dual_coef_) ** 2), rel=1e-10
    )
    again, _ = fit_cocoa(None, TopKSVC(tol=tol, **params), *_split(X, y, sizes), **settings)
    np.testing.assert_array_equal(again.coef_, model.coef_)


def test_local_threads_give_the_dask_model(client):
    X, y = _problem(seed=2)
    parts = _split(X, y, [90, 110, 100])
    estimator = TopKSVC(k=1, C=0.1, smoothing=0.5, tol=1e-5, random_state=5)
    settings = dict(max_rounds=2000, aggregation="line_search", local_epochs=0.25)
    on_dask, history = fit_cocoa(client, estimator, *parts, **settings)
    local, local_history = fit_cocoa(None, estimator, *parts, **settings)
    assert on_dask.status_ == "converged"
    np.testing.assert_array_equal(on_dask.coef_, local.coef_)
    assert [h.round for h in history] == [h.round for h in local_history]
    assert history[-1].bytes_sent > 0 and local_history[-1].bytes_sent == 0


def test_empty_and_tiny_partitions(client):
    X, y = _problem(n=200, seed=4)
    params = dict(k=1, C=0.1, smoothing=0.5, tol=1e-5, random_state=0, check_every=2)
    model, _ = fit_cocoa(client, TopKSVC(**params), *_split(X, y, [0, 1, 199, 0]), max_rounds=3000)
    reference, _ = fit_cocoa(client, TopKSVC(**params), *_split(X, y, [1, 199]), max_rounds=3000)
    assert model.status_ == "converged"
    # The empty partitions neither take steps nor count in σ' = K.
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    assert model.dual_coef_.shape == (200, 5)


def test_checkpoint_resume_reaches_the_uninterrupted_model(client, tmp_path):
    X, y = _problem(seed=6)
    parts = _split(X, y, [100, 100, 100])
    estimator = TopKSVC(k=2, C=0.1, smoothing=0.2, tol=1e-5, check_every=1, random_state=1)
    # Whole passes: a check (and so a checkpoint) every round.
    whole, whole_history = fit_cocoa(client, estimator, *parts, max_rounds=2000, local_epochs=1)
    with pytest.warns(ConvergenceWarning):
        cut, _ = fit_cocoa(
            client, estimator, *parts, max_rounds=7, local_epochs=1, checkpoint_every=3, checkpoint_dir=str(tmp_path)
        )
    assert cut.status_ == "max_iter" and (tmp_path / "state.json").exists()
    resumed, history = fit_cocoa(
        client, estimator, *parts, max_rounds=2000, local_epochs=1, checkpoint_dir=str(tmp_path), resume=True
    )
    np.testing.assert_array_equal(resumed.coef_, whole.coef_)
    np.testing.assert_array_equal(resumed.dual_coef_, whole.dual_coef_)
    assert [h.round for h in history] == [h.round for h in whole_history]
    with pytest.raises(InvalidInputError, match="resume"):
        fit_cocoa(client, estimator, *_split(X, y, [150, 150]), checkpoint_dir=str(tmp_path), resume=True)
    # C and the class weights live in the partitions' costs, not in the problem: a
    # checkpoint of another C was resumed into a wrong model.
    for changed in (dict(C=0.01), dict(class_weight="balanced")):
        with pytest.raises(InvalidInputError, match="other costs"):
            fit_cocoa(
                client,
                clone(estimator).set_params(**changed),
                *parts,
                local_epochs=1,
                checkpoint_dir=str(tmp_path),
                resume=True,
            )
    # The rounds trust the dual rows they update; a checkpoint's are checked as they load.
    shard = tmp_path / "partition_1.npz"
    with np.load(shard) as saved:
        arrays = dict(saved)
    arrays["dual"][3] = np.nan
    np.savez(shard, **arrays)
    with pytest.raises(InvalidInputError, match=r"^resume: .*partition_1\.npz: dual: must hold 100 x 5 finite values"):
        fit_cocoa(client, estimator, *parts, local_epochs=1, checkpoint_dir=str(tmp_path), resume=True)


def test_dask_arrays_csr_and_prediction(client):
    X, y = _problem(n=240, seed=7)
    dX, dy = da.from_array(X, chunks=(80, 3)), da.from_array(y, chunks=100)
    estimator = TopKSVC(k=1, C=0.1, smoothing=0.5, tol=1e-5, random_state=2)
    model, _ = fit_cocoa(client, estimator, dX, dy, max_rounds=3000)
    listed, _ = fit_cocoa(client, estimator, *_split(X, y, [80, 80, 80]), max_rounds=3000)
    np.testing.assert_array_equal(model.coef_, listed.coef_)
    sparse, _ = fit_cocoa(
        client, estimator, [sp.csr_matrix(p) for p in _split(X, y, [80, 80, 80])[0]], y, max_rounds=3000
    )
    np.testing.assert_allclose(sparse.coef_, listed.coef_, rtol=1e-10, atol=1e-12)
    scores = decision_function(model, dX).compute()
    np.testing.assert_allclose(scores, model.decision_function(X))
    np.testing.assert_array_equal(predict(model, dX).compute(), model.predict(X))
    assert model.score(X, y) > 0.5


def test_worker_processes_reach_the_serial_optimum(client):
    X, y = _problem(n=240, seed=8)
    params = dict(k=2, C=0.1, smoothing=0.5, fit_intercept=False, random_state=4)
    serial = TopKSVC(tol=1e-10, max_epochs=20000, **params).fit(X, y)
    parts = _split(X, y, [120, 120])
    model, history = fit_cocoa(client, TopKSVC(tol=1e-3, **params), *parts)
    local, _ = fit_cocoa(None, TopKSVC(tol=1e-3, **params), *parts)
    assert model.status_ == "converged" and history[-1].bytes_sent > 0
    np.testing.assert_array_equal(model.coef_, local.coef_)
    assert model.primal_objective_ == pytest.approx(serial.primal_objective_, rel=1e-3)
    np.testing.assert_allclose(model.coef_, serial.coef_, atol=0.05 * np.abs(serial.coef_).max())


def test_worker_processes_train_m3l_to_the_serial_optimum(client):
    # R reaches the workers inside the pickled problem, at whatever offset pickle gives it:
    # the bindings refused a misaligned R as "not C-contiguous" on every such cluster.
    X, Y = _multilabel(n=400, seed=9)
    params = dict(C=0.01, R=_prior(4), fit_intercept=False, random_state=1)
    serial = M3L(tol=1e-8, **params).fit(X, Y)
    parts = _split(X, Y, [200, 200])
    model, history = fit_cocoa(client, M3L(tol=1e-3, **params), *parts)
    local, _ = fit_cocoa(None, M3L(tol=1e-3, **params), *parts)
    assert model.status_ == "converged" and history[-1].max_violation < 1e-3
    np.testing.assert_array_equal(model.dual_coef_, local.dual_coef_)
    assert model.primal_objective_ == pytest.approx(serial.primal_objective_, rel=1e-3)
    np.testing.assert_allclose(model.coef_, serial.coef_, atol=1e-2 * np.abs(serial.coef_).max())


def test_misaligned_and_read_only_partitions_train_the_same_model():
    X, y = _problem(n=120, seed=10)
    parts, labels = _split(X, y, [60, 60])

    def misaligned(a):
        buffer = bytearray(a.nbytes + 1)
        out = np.frombuffer(buffer, dtype=a.dtype, offset=1, count=a.size).reshape(a.shape)
        out[...] = a
        assert not out.flags.aligned
        return out

    def read_only(a):
        a = a.copy()
        a.flags.writeable = False
        return a

    estimator = TopKSVC(k=1, C=0.5, tol=1e-3, random_state=0)
    reference, _ = fit_cocoa(None, estimator, parts, labels)
    for layout in (misaligned, read_only, np.asfortranarray):
        model, _ = fit_cocoa(None, estimator, [layout(p) for p in parts], [layout(v) for v in labels])
        np.testing.assert_array_equal(model.coef_, reference.coef_)


def test_a_shard_pickled_mid_fit_continues_the_same():
    # Dask may spill a shard to disk or move it between rounds: pickled between a line-search
    # round and the step that commits it, with both active sets, it goes on bit for bit.
    X, y = _problem(n=90, seed=12)
    classes = np.unique(y)
    settings = tasks.SvcPartitionSettings("alpha", 2, 0.0, 1.0, len(classes), True, 0.7, 1.0, True)
    shard = tasks.make_svc_shard(X, y, classes, np.full(len(classes), 0.5), settings, 7)
    current = (np.zeros((len(classes), X.shape[1] + 1)), 1.0)
    for _ in range(3):
        current = (shard.round(current).local, 1.0)
        shard.terms(current)
    local = shard.round(current).local
    buffers = []
    pickled = pickle.dumps(shard, protocol=5, buffer_callback=buffers.append)
    # Read-only, as Dask's out-of-band buffers hand the arrays back.
    copied = pickle.loads(pickled, buffers=[b.raw().tobytes() for b in buffers])
    assert not copied.arrays[0].flags.writeable
    # A step that scales the pending change.
    current = (current[0] + 0.5 * (local - current[0]), 0.5)
    for s in (shard, copied):
        s.terms(current)
    np.testing.assert_array_equal(copied.round(current).local, shard.round(current).local)
    np.testing.assert_array_equal(copied.dual_coef(current), shard.dual_coef(current))


def _centred(n, d=30, m=8, seed=0):
    """Eight well-spread classes, centred features: the line search's problem of item 7."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((m, d))
    y = rng.integers(0, m, n)
    X = centres[y] + rng.standard_normal((n, d))
    return np.ascontiguousarray(X - X.mean(axis=0)), y


def test_the_defaults_converge_where_adding_in_100_rounds_did_not():
    # The old defaults (adding, 100 rounds) stopped at a gap near 1e-2 here; the line
    # search within the estimator's own budget of passes reaches the in-memory optimum.
    X, y = _centred(1000)
    estimator = TopKSVC(C=1.0, random_state=0)
    serial = TopKSVC(C=1.0, tol=1e-6, max_epochs=100_000, random_state=0).fit(X, y)
    parts = _split(X, y, [250] * 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model, history = fit_cocoa(None, estimator, *parts)
    assert model.status_ == "converged" and history[-1].gap <= 1e-3
    assert model.primal_objective_ == pytest.approx(serial.primal_objective_, rel=1e-3)
    old, _ = _quiet(fit_cocoa, None, estimator, *parts, aggregation="adding", max_rounds=100)
    assert old.status_ == "max_iter"
    # softmax has no line search: adding, by default.
    soft, _ = fit_cocoa(None, TopKSVC(loss="softmax", C=0.1, random_state=0), *_split(*_problem(n=120), [60, 60]))
    assert soft.status_ == "converged"


def test_the_convergence_warning_points_at_the_caller_and_says_what_to_change():
    X, y = _centred(400, seed=1)
    with pytest.warns(ConvergenceWarning) as caught:
        fit_cocoa(None, TopKSVC(C=1.0, random_state=0), *_split(X, y, [200, 200]), aggregation="adding", max_rounds=3)
    [warning] = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert warning.filename == __file__
    message = str(warning.message)
    assert "max_rounds=3" in message and "aggregation='line_search'" in message and "intercept" in message
    with pytest.warns(ConvergenceWarning, match="local_epochs=0.0625") as caught:
        fit_cocoa(None, TopKSVC(C=1.0, fit_intercept=False, random_state=0), *_split(X, y, [200, 200]), max_rounds=3)
    assert caught[0].filename == __file__ and "intercept" not in str(caught[0].message)


@pytest.mark.parametrize(
    "estimator, X_parts, y, message",
    [
        (TopKSVC(kernel="rbf"), None, None, "linear"),
        (TopKSVC(k=5), None, None, "k"),
        (TopKSVC(), "nan", None, "NaN"),
        (TopKSVC(), None, "one class", "class"),
        (TopKSVC(), None, "short", "labels"),
        (TopKSVC(C=-1.0), None, None, "C"),
        # The imaginary part was dropped (a NumPy warning only); continuous targets trained
        # as one class per value, where TopKSVC.fit refuses both.
        (TopKSVC(), "complex", None, "X: expected real numbers"),
        (TopKSVC(), None, "continuous", "Unknown label type"),
        (TopKSVC(), None, "two columns", "y: expected 1-D class labels"),
    ],
)
def test_bad_input_raises(client, estimator, X_parts, y, message):
    X, labels = _problem(n=60)
    parts = _split(X, labels, [30, 30])[0]
    if X_parts == "nan":
        parts[1] = parts[1].copy()
        parts[1][3, 2] = np.nan
    elif X_parts == "complex":
        parts[1] = parts[1] + 1j
    if y == "one class":
        labels = np.zeros(60, dtype=int)
    elif y == "short":
        labels = labels[:50]
    elif y == "continuous":
        labels = np.linspace(0.0, 1.0, 60)
    elif y == "two columns":
        labels = np.column_stack([labels, labels])
    with pytest.raises((InvalidInputError, ValueError), match=message):
        fit_cocoa(client, estimator, parts, labels, max_rounds=3)


def test_bad_arguments_raise(client):
    X, y = _problem(n=60)
    with pytest.raises(InvalidInputError, match="estimator"):
        fit_cocoa(client, object(), [X], y)
    with pytest.raises(InvalidInputError, match="checkpoint_dir"):
        fit_cocoa(client, TopKSVC(), [X], y, checkpoint_every=2)
    with pytest.raises(InvalidInputError, match="max_rounds"):
        fit_cocoa(client, TopKSVC(), [X], y, max_rounds=0)
    with pytest.raises(InvalidInputError, match="X"):
        fit_cocoa(None, TopKSVC(), X, y)
    with pytest.raises(InvalidInputError, match="feature"):
        fit_cocoa(client, TopKSVC(), [X, X[:, :3]], np.concatenate([y, y]))
    # Dask's own chunking error (and a ZeroDivisionError without workers) named nothing.
    da = pytest.importorskip("dask.array")
    with pytest.raises(InvalidInputError, match="^y: has 50 rows of labels for 60"):
        fit_cocoa(client, TopKSVC(), da.from_array(X, chunks=30), da.from_array(y[:50], chunks=25))
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as idle:
            with pytest.raises(InvalidInputError, match="^client: has no workers"):
                fit_cocoa(idle, TopKSVC(), [X[:30], X[30:]], y)


# ---------------------------------------------------------------- linear M3L


def _multilabel(n=240, d=5, labels=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = (X @ rng.normal(size=(d, labels)) + 0.5 * rng.normal(size=(n, labels)) > 0).astype(np.int8)
    return np.ascontiguousarray(X), Y


def _prior(labels):
    R = np.full((labels, labels), 0.2)
    np.fill_diagonal(R, 1.0)
    return R


def test_m3l_one_partition_is_the_serial_solver_bit_for_bit(client):
    X, Y = _multilabel()
    params = dict(C=0.5, R=_prior(4), shrinking=False, tol=1e-300, random_state=7)
    serial = _quiet(M3L(max_iter=5, keep_dual=True, **params).fit, X, Y)
    for runner in (client, None):
        model, history = _quiet(fit_cocoa, runner, M3L(**params), [X], Y, max_rounds=5)
        np.testing.assert_array_equal(model.dual_coef_, serial.dual_coef_)
        np.testing.assert_array_equal(model.coef_, serial.coef_)
        np.testing.assert_array_equal(model.intercept_, serial.intercept_)
        assert model.n_iter_ == serial.n_iter_ == 5
        assert history[-1].primal == pytest.approx(serial.primal_objective_, rel=1e-12)
        np.testing.assert_array_equal(model.predict(X), serial.predict(X))


@pytest.mark.parametrize("sizes", [[80, 80, 80], [40, 1, 199], [30] * 8])
def test_m3l_partitions_reach_the_serial_optimum(sizes):
    X, Y = _multilabel(seed=3)
    params = dict(C=0.5, R=_prior(4), random_state=1)
    optimum = M3L(tol=1e-8, **params).fit(X, Y)
    model, history = fit_cocoa(None, M3L(tol=1e-5, **params), *_split(X, Y, sizes), max_rounds=20000)
    assert model.status_ == "converged" and history[-1].max_violation < 1e-5
    duals = [h.dual for h in history]
    assert all(b >= a - 1e-12 * abs(a) for a, b in zip(duals, duals[1:]))
    assert model.primal_objective_ == pytest.approx(optimum.primal_objective_, rel=1e-4)
    np.testing.assert_allclose(model.coef_, optimum.coef_, atol=1e-3)
    again, _ = fit_cocoa(None, M3L(tol=1e-5, **params), *_split(X, Y, sizes), max_rounds=20000)
    np.testing.assert_array_equal(again.dual_coef_, model.dual_coef_)


def test_m3l_on_dask_arrays_with_sparse_labels_and_a_checkpoint(client, tmp_path):
    X, Y = _multilabel(n=180, seed=5)
    estimator = M3L(C=0.05, tol=1e-3, random_state=2)
    dX, dY = da.from_array(X, chunks=(60, 5)), da.from_array(Y, chunks=(90, 4))
    model, _ = fit_cocoa(client, estimator, dX, dY, max_rounds=5000)
    listed, _ = fit_cocoa(
        client,
        estimator,
        [X[:60], X[60:120], X[120:]],
        [sp.csr_matrix(Y[:60]), sp.csr_matrix(Y[60:120]), sp.csr_matrix(Y[120:])],
        max_rounds=5000,
    )
    np.testing.assert_array_equal(model.coef_, listed.coef_)
    np.testing.assert_array_equal(predict(model, dX).compute(), model.predict(X))
    np.testing.assert_allclose(decision_function(model, dX).compute(), model.decision_function(X))
    assert model.score(X, Y) > 0.7
    with pytest.warns(ConvergenceWarning):
        fit_cocoa(
            client,
            estimator,
            *_split(X, Y, [60, 60, 60]),
            max_rounds=4,
            checkpoint_every=2,
            checkpoint_dir=str(tmp_path),
        )
    resumed, _ = fit_cocoa(
        client, estimator, *_split(X, Y, [60, 60, 60]), max_rounds=5000, checkpoint_dir=str(tmp_path), resume=True
    )
    np.testing.assert_array_equal(resumed.dual_coef_, listed.dual_coef_)


@pytest.mark.parametrize(
    "estimator, Y_kind, settings, message",
    [
        (M3L(kernel="rbf"), "ok", {}, "linear"),
        (M3L(), "vector", {}, "indicator"),
        (M3L(), "constant", {}, "never or always"),
        (M3L(), "ok", dict(aggregation="line_search"), "aggregation"),
        (M3L(), "ok", dict(local_epochs=0.5), "local_epochs"),
        (M3L(R=np.ones((3, 3))), "ok", {}, "R"),
    ],
)
def test_m3l_bad_input_raises(client, estimator, Y_kind, settings, message):
    X, Y = _multilabel(n=60)
    if Y_kind == "vector":
        Y = Y[:, 0]
    elif Y_kind == "constant":
        Y = Y.copy()
        Y[:, 2] = 1
    with pytest.raises(InvalidInputError, match=message):
        fit_cocoa(client, estimator, *_split(X, Y, [30, 30]), max_rounds=3, **settings)


def test_workers_are_asked_of_the_scheduler(client, monkeypatch):
    """`Client.scheduler_info()` returns the client's cached identity, which its periodic
    refresh overwrites with a copy holding no workers (distributed 2026.8): a fit read that
    copy and raised "client: has no workers" on a 2-worker cluster (a CI run)."""
    monkeypatch.setattr(client, "scheduler_info", lambda *args, **kwargs: {"workers": {}})
    X, y = _problem(n=120, seed=9)
    model, history = fit_cocoa(client, TopKSVC(k=1, C=0.1, random_state=0), *_split(X, y, [60, 60]), max_rounds=5)
    assert len(history) > 0 and model.coef_.shape == (5, 6)
