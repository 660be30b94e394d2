"""
CoCoA+ on a local Dask cluster
==============================

When the training set is split over several machines, the dual of the top-k SVM splits
with it: each example's dual variables live with the example. CoCoA+ (Ma, Smith, Jaggi et
al., ICML 2015) trains in *rounds*: every partition runs the serial Prox-SDCA solver on its
own rows against the current weights W, and only the changes to W travel to be combined.
:func:`toprank.distributed.fit_cocoa` runs these rounds on a Dask cluster, keeps the data
where it lies, and returns an ordinary fitted :class:`toprank.TopKSVC` with one
:class:`~toprank.distributed.RoundRecord` (round, objectives, duality gap, seconds, bytes
moved) per check.

This example starts a ``distributed.LocalCluster`` with two worker processes — the
same code runs against a real cluster by passing its client — trains on UCI Letter split
in two partitions, and compares the duality gap per pass over the data with the serial
solver's, for the two ways of combining the partitions' changes.
"""

# %%
# The data
# --------
# UCI Letter (16,000 training rows, 16 features, 26 classes), standardised. The model
# is fitted without an intercept: an intercept is a constant feature that every example
# shares, which couples the partitions and slows CoCoA down, and on centred features it
# is not needed.
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster
from sklearn.preprocessing import StandardScaler

from toprank import TopKSVC
from toprank.datasets import load_letter
from toprank.distributed import fit_cocoa


def letter():
    """The training and test rows of Letter, standardised on the training rows."""
    data = load_letter()
    scaler = StandardScaler().fit(data.data[:16000])
    X_train, X_test = scaler.transform(data.data[:16000]), scaler.transform(data.data[16000:])
    return X_train, data.target[:16000], X_test, data.target[16000:]


svm = TopKSVC(k=1, C=0.01, fit_intercept=False, random_state=0)


# %%
# Why the rest of the script sits under ``if __name__ == "__main__":``: Dask starts
# each worker process as a fresh Python interpreter, which imports the main script
# before it runs anything. Code that is not guarded — loading the data, fitting, starting
# another cluster — would run again in every worker. The functions and estimator above
# are cheap to define; the work below runs once.
#
# The serial reference
# --------------------
# The in-memory solver checks its duality gap every ``check_every`` = 5 passes and
# records each check in ``history_``.
if __name__ == "__main__":
    X_train, y_train, X_test, y_test = letter()
    serial = TopKSVC(**svm.get_params()).fit(X_train, y_train)
    print(f"serial: {serial.status_} after {serial.n_iter_} passes, gap {serial.duality_gap_:.1e}")

# %%
# Two workers, two partitions
# ---------------------------
# The two halves of the training rows are the partitions; ``fit_cocoa`` scatters them to
# the workers, where they stay. ``aggregation`` chooses how the partitions' changes ΔW_k
# are combined into the next W:
#
# * ``"adding"`` is CoCoA+: W + Σ_k ΔW_k, each partition solving a subproblem made
#   conservative enough (σ' = K) for the sum to be safe, here with a whole pass per round;
# * ``"line_search"`` (for the hinge losses, the default) takes the exact best step along
#   the combined change, with rounds of a quarter pass.
#
# The cluster is closed by the ``with`` block at the end.
if __name__ == "__main__":
    parts = np.array_split(np.arange(len(y_train)), 2)
    runs = {}
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        for aggregation, local_epochs in (("adding", 1.0), ("line_search", 0.25)):
            model, history = fit_cocoa(
                client,
                svm,
                [X_train[p] for p in parts],
                [y_train[p] for p in parts],
                aggregation=aggregation,
                local_epochs=local_epochs,
                max_rounds=int(100 / local_epochs),
            )
            runs[aggregation] = (model, history, local_epochs)
            print(
                f"{aggregation}: {model.status_} after {history[-1].round} rounds "
                f"({history[-1].round * local_epochs:g} passes), gap {history[-1].gap:.1e}, "
                f"{history[-1].seconds:.1f} s, {sum(r.bytes_sent for r in history) / 2**20:.1f} MiB moved, "
                f"test accuracy {model.score(X_test, y_test):.3f}"
            )
    print(f"serial test accuracy {serial.score(X_test, y_test):.3f}")

# %%
# The duality gap per pass
# ------------------------
# What to look for: the line search follows the serial solver closely — about the same
# number of passes to the same gap — while adding needs more passes: its safe step
# shrinks each partition's contribution. All three end at the requested gap, and the
# distributed models predict as well as the serial one. On one machine the rounds cost
# more time than the serial passes (every round is a Dask task, and the two worker
# processes share the machine's cores with the scheduler): distribution pays when the
# data do not fit in one machine's memory.
if __name__ == "__main__":
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    ax.plot([h.n_iter for h in serial.history_], [h.gap for h in serial.history_], "k-o", label="serial (in memory)")
    for aggregation, (_, history, local_epochs) in runs.items():
        passes = [r.round * local_epochs for r in history]
        ax.plot(passes, [r.gap for r in history], marker=".", label=f"2 workers, {aggregation}")
    ax.axhline(svm.tol, color="grey", ls=":", label="tol")
    ax.set(yscale="log", xlabel="passes over the data", ylabel="relative duality gap", title="UCI Letter, TopKSVC k=1")
    ax.legend()
    plt.show()
