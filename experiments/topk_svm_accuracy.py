"""The paper's effect on real data: does training for top-k raise top-k accuracy?

For each data set (UCI Letter, Flavia leaves, Fashion-MNIST), each k in {1, 2, 3, 5, 10}
and both top-k hinge losses, C is chosen by stratified 3-fold cross-validation of the
top-k accuracy at that k (on at most ``--cv-rows`` training examples), the model is refit
on the whole training set, and top-1..top-10 test accuracy is reported. This follows
Lapin, Hein, Schiele (2015), who select C per k and report top-k accuracies.

    .venv/bin/python experiments/topk_svm_accuracy.py --write docs/results.md

writes the table between the ``<!-- topk-accuracy -->`` markers of docs/results.md and the
per-set details (chosen C, epochs, status) to ``experiments/topk_svm_accuracy.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.preprocessing import StandardScaler

from toprank import datasets
from toprank.metrics import top_k_accuracy
from toprank.svm import TopKSVC

KS = (1, 2, 3, 5, 10)  # k < n_classes only (Fashion-MNIST has 10 classes)
REPORT_KS = tuple(range(1, 11))
C_GRID = (0.01, 0.1, 1.0, 10.0)
ROOT = Path(__file__).resolve().parents[1]


def load(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    if name == "letter":
        b = datasets.load_letter()
        X, y = b.data, b.target
        Xtr, ytr, Xte, yte = X[:16000], y[:16000], X[16000:], y[16000:]
        split = "first 16,000 / last 4,000 of KEEL's shuffled file"
    elif name == "flavia":
        b = datasets.load_flavia()
        _, codes = np.unique(b.target, return_inverse=True)
        Xtr, Xte, ytr, yte = train_test_split(b.data, codes, test_size=0.3, stratify=codes, random_state=0)
        split = "stratified 70 / 30 split, seed 0"
    elif name == "fashion_mnist":
        tr, te = datasets.load_fashion_mnist(subset="train"), datasets.load_fashion_mnist(subset="test")
        return tr.data, tr.target, te.data, te.target, "official 60,000 / 10,000, pixels / 255"
    else:
        raise ValueError(name)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), ytr, scaler.transform(Xte), yte, split + ", standardised"


def model(k: int, loss: str, C: float, tol: float) -> TopKSVC:
    return TopKSVC(k=k, loss=loss, C=C, tol=tol, max_epochs=300, random_state=0)


def choose_C(
    X: np.ndarray, y: np.ndarray, k: int, loss: str, cv_rows: int, tol: float
) -> tuple[float, dict[str, float]]:
    rng = np.random.default_rng(0)
    if len(y) > cv_rows:
        keep = rng.choice(len(y), cv_rows, replace=False)
        X, y = X[keep], y[keep]
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    scores: dict[str, float] = {}
    for C in C_GRID:
        acc = []
        for train, val in folds.split(X, y):
            est = model(k, loss, C, tol).fit(X[train], y[train])
            acc.append(top_k_accuracy(y[val], est.decision_function(X[val]), k))
        scores[str(C)] = float(np.mean(acc))
    best = max(C_GRID, key=lambda C: scores[str(C)])
    return best, scores


def run(name: str, cv_rows: int, tol: float) -> dict[str, Any]:
    Xtr, ytr, Xte, yte, split = load(name)
    out: dict[str, Any] = {
        "split": split,
        "n_train": len(ytr),
        "n_test": len(yte),
        "n_classes": int(len(np.unique(ytr))),
        "runs": [],
    }
    for loss in ("alpha", "beta"):
        for k in [k for k in KS if k < out["n_classes"]]:
            start = time.perf_counter()
            C, cv = choose_C(Xtr, ytr, k, loss, cv_rows, tol)
            est = model(k, loss, C, tol).fit(Xtr, ytr)
            scores = est.decision_function(Xte)
            acc = {str(kk): float(top_k_accuracy(yte, scores, kk)) for kk in range(1, 11)}  # JSON keys
            out["runs"].append(
                {
                    "loss": loss,
                    "k": k,
                    "C": C,
                    "cv": cv,
                    "test": acc,
                    "epochs": est.n_iter_,
                    "status": est.status_,
                    "gap": est.duality_gap_,
                    "seconds": time.perf_counter() - start,
                }
            )
            print(
                f"{name:14s} {loss:5s} k={k:2d} C={C:<5g} "
                + " ".join(f"{100 * acc[str(kk)]:5.1f}" for kk in REPORT_KS)
                + f"  ({est.n_iter_} epochs, {est.status_}, {time.perf_counter() - start:.0f}s)",
                flush=True,
            )
    return out


def table(results: dict[str, Any], command: str) -> str:
    lines = [f"Produced by `{command}` (C chosen per k by 3-fold CV of top-k accuracy; test accuracy in %).", ""]
    for name, res in results.items():
        lines += [
            f"**{name}** ({res['n_train']} train / {res['n_test']} test, {res['n_classes']} classes; {res['split']})",
            "",
            "| loss | k | C | " + " | ".join(f"top-{kk}" for kk in REPORT_KS) + " |",
            "|---|---|---|" + "---|" * len(REPORT_KS),
        ]
        for run in res["runs"]:
            lines.append(
                f"| {run['loss']} | {run['k']} | {run['C']:g} | "
                + " | ".join(f"{100 * run['test'][str(kk)]:.1f}" for kk in REPORT_KS)
                + " |"
            )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["letter", "flavia", "fashion_mnist"])
    parser.add_argument("--cv-rows", type=int, default=10000)
    parser.add_argument("--tol", type=float, default=1e-2)
    parser.add_argument(
        "--write",
        type=Path,
        default=None,
        help="docs/results.md (or another Markdown file) to update between the markers",
    )
    parser.add_argument("--table-only", action="store_true", help="rewrite the table from the saved JSON, no fits")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    json_path = Path(__file__).with_suffix(".json")
    results: dict[str, Any] = json.loads(json_path.read_text()) if json_path.exists() else {}
    for name in [] if args.table_only else args.sets:  # saved after each set: a long run keeps what it finished
        results[name] = run(name, args.cv_rows, args.tol)
        json_path.write_text(json.dumps(results, indent=1))
    command = "python experiments/topk_svm_accuracy.py --cv-rows 6000 --write docs/results.md"
    text = table(results, command)
    print(text)
    if args.write:
        readme = args.write.read_text()
        block = f"<!-- topk-accuracy:start -->\n{text}\n<!-- topk-accuracy:end -->"
        new, count = re.subn(
            r"<!-- topk-accuracy:start -->.*?<!-- topk-accuracy:end -->", lambda _: block, readme, flags=re.S
        )
        if count != 1:
            raise SystemExit(f"{args.write}: markers <!-- topk-accuracy:start/end --> not found")
        args.write.write_text(new)


if __name__ == "__main__":
    main()
