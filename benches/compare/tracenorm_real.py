"""The trace-norm paper's effects on real many-class data (Harchaoui et al. §5, Fig. 3),
with toprank's ``tracenorm_path`` and ``TraceNormLogisticRegression``:

    python benches/compare/tracenorm_real.py --write BENCHMARKS.md [--quick]

Data (installed offline, see ``toprank.datasets``): Fashion-MNIST (10 classes, 784
pixels), UCI Letter (26 classes, 16 features), Flavia leaves (32 classes, 50 shape
features). Features standardised on the training part. Splits: Fashion-MNIST's official
test set, the first 20,000 training images to train and the next 5,000 to validate;
Letter and Flavia 60 / 20 / 20 (train / validation / test), stratified, seeded.

* **(1) Rank along the path and top-k accuracy against one-vs-rest LinearSVC.** A
  warm-started path over 10 geometric λ1 from the λ1 that makes W = 0 down to 1/1000 of
  it (λ2 = 1e-5; with 1/100, Fashion-MNIST's best validation accuracy lay at the path's
  end); the λ1 with the best validation top-1 accuracy is kept. The other side
  is scikit-learn's ``LinearSVC`` (one-vs-rest, squared hinge, liblinear; ``dual="auto"``
  takes the primal solver when n > d, minutes faster on Fashion-MNIST) with
  C chosen on the same validation set from {0.001, 0.01, 0.1, 1}, extended by factors of
  10 (up to 100) while the largest C is the best. Both are scored on the
  test set by top-1 and top-5 accuracy. Claims checked: the kept model's top-k accuracies
  match (within 1 point) or beat LinearSVC's, and along the path a model of rank below
  min(d, m) already comes within 1 point of LinearSVC's test top-1 accuracy (the path
  described on the test set, as the paper's figures do; the kept model is chosen on
  validation only). Also timed: one cold fit at the path's smallest λ1, against the
  whole warm-started path (the issue's target: path ≤ 3 × cold fit).
* **(2) Train on product-quantized codes, predict on raw features (paper Fig. 3).** A
  ``ProductQuantizer`` compresses the training rows, and a warm-started path over the
  λ1 of (1) is trained on the codes (``CompressedMatrix``). Each way of using the model
  keeps the λ1 that its own validation rows favour, as a user deploying it would: tested
  on codes, the λ1 best on the decoded validation rows; tested on raw features (the
  paper's "Semi PQ"), the λ1 best on the raw validation rows; the model trained and
  tested raw is the one kept in (1). (The paper runs a 10-step path for every model but
  does not say how Fig. 3's points were picked.) Also reported: the code-trained model
  at the λ1 kept in (1) for both test modes, which is not judged. Compressions: the
  paper's (64 times smaller than float32: one 8-bit code per 16 dimensions: 49
  sub-spaces for Fashion-MNIST, one for Letter, i.e. plain 256-centroid vector
  quantization; Flavia's 50 features split evenly only into 2, 5, 10 or 25 sub-spaces, so
  the two nearest: one code per 10 dimensions, 40 times smaller, and one per 25, 100
  times smaller) and, for Fashion-MNIST, where the paper's loses less than a point, one
  code per 49 dimensions (16 sub-spaces, 196 times smaller). Claim: predicting on raw features
  recovers at least half of the top-1 accuracy lost against the model trained and
  tested on raw data (the paper: "almost half"); judged where at least one point (1 % of
  the test rows) is lost — below that the share is a ratio of two differences of a few
  dozen test rows each, reported but not judged.

The section between ``<!-- tracenorm-real:begin -->`` and ``<!-- tracenorm-real:end -->``
of the given file is replaced (appended if absent); it is always printed.
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass

import numpy as np
from sections import command_line, machine, publish, verdict
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from toprank.datasets import load_fashion_mnist, load_flavia, load_letter
from toprank.metrics import top_k_accuracy
from toprank.pq import ProductQuantizer
from toprank.tracenorm import PathPoint, TraceNormLogisticRegression, tracenorm_path

BEGIN, END = "<!-- tracenorm-real:begin -->", "<!-- tracenorm-real:end -->"
LAMBDA_FRO = 1e-5
SVC_GRID = (0.001, 0.01, 0.1, 1.0)


def splits(name: str, quick: bool, *, fashion_train: int = 20_000, standardise: bool = True) -> tuple[np.ndarray, ...]:
    """(X_train, y_train, X_val, y_val, X_test, y_test), standardised on X_train (unless
    told not to); Fashion-MNIST trains on its first `fashion_train` images (5,000 quick)."""
    if name == "Fashion-MNIST":
        train, test = load_fashion_mnist(subset="train"), load_fashion_mnist(subset="test")
        n_train = 5000 if quick else fashion_train
        X_tr, y_tr = train.data[:n_train], train.target[:n_train]
        X_va, y_va = train.data[n_train : n_train + 5000], train.target[n_train : n_train + 5000]
        X_te, y_te = test.data, test.target
    else:
        data = load_letter() if name == "Letter" else load_flavia()
        X_tr, X_rest, y_tr, y_rest = train_test_split(
            data.data, data.target, train_size=0.6, stratify=data.target, random_state=0
        )
        X_va, X_te, y_va, y_te = train_test_split(X_rest, y_rest, train_size=0.5, stratify=y_rest, random_state=0)
    if standardise:
        scaler = StandardScaler().fit(X_tr)
        X_tr, X_va, X_te = scaler.transform(X_tr), scaler.transform(X_va), scaler.transform(X_te)
    return tuple(
        np.ascontiguousarray(a, dtype=np.float64) if a.ndim == 2 else np.ascontiguousarray(a)
        for a in (X_tr, y_tr, X_va, y_va, X_te, y_te)
    )


def largest_lambda(X: np.ndarray, y: np.ndarray) -> float:
    """The smallest λ1 at which W = 0 (with b = log class priors) is optimal: ‖Xᵀ(P − Y)/n‖₂."""
    m = int(y.max()) + 1
    Y = np.eye(m)[y]
    return float(np.linalg.norm(X.T @ (Y.mean(axis=0) - Y) / len(X), 2))


def top1(point: PathPoint, X: np.ndarray, y: np.ndarray, labels: np.ndarray) -> float:
    return float(top_k_accuracy(y, point.model.decision_function(X), 1, labels=labels))


@dataclass
class CodeTrained:
    """A path trained on product-quantized rows, used both ways (section (2))."""

    coded: list[PathPoint]
    X_te_codes: np.ndarray
    on_codes: PathPoint  # the λ1 best on the decoded validation rows
    on_raw: PathPoint  # the λ1 best on the raw validation rows
    raw_raw: float  # top-1 test accuracy of `best`, trained and tested raw
    codes_codes: float
    codes_raw: float

    @property
    def lost(self) -> float:
        """Top-1 accuracy lost by training and testing on codes."""
        return self.raw_raw - self.codes_codes

    @property
    def recovered(self) -> float:
        """What testing the code-trained path on raw rows gets back of it."""
        return self.codes_raw - self.codes_codes


def train_on_codes(
    quantizer: ProductQuantizer, best: PathPoint, lambdas: np.ndarray, split: tuple[np.ndarray, ...], labels: np.ndarray
) -> CodeTrained:
    """The path over `lambdas` trained on `quantizer`'s codes of the training rows; each
    test mode keeps the λ1 its own validation rows favour (ties to the smaller λ1)."""
    X_tr, y_tr, X_va, y_va, X_te, y_te = split
    coded = tracenorm_path(quantizer.compress(X_tr), y_tr, lambdas, lambda_fro=LAMBDA_FRO, max_iter=500, random_state=0)
    X_va_codes, X_te_codes = quantizer.transform(X_va), quantizer.transform(X_te)
    on_codes = max(coded, key=lambda p: (top1(p, X_va_codes, y_va, labels), -p.lambda_trace))
    on_raw = max(coded, key=lambda p: (top1(p, X_va, y_va, labels), -p.lambda_trace))
    return CodeTrained(
        coded,
        X_te_codes,
        on_codes,
        on_raw,
        top1(best, X_te, y_te, labels),
        top1(on_codes, X_te_codes, y_te, labels),
        top1(on_raw, X_te, y_te, labels),
    )


def topk(scores: np.ndarray, y: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    return top_k_accuracy(y, scores, 1, labels=labels), top_k_accuracy(y, scores, 5, labels=labels)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 Fashion-MNIST training images, 6 λ1")
    parser.add_argument("--write", metavar="PATH")
    args = parser.parse_args()
    load = machine()
    n_lambdas = 6 if args.quick else 10
    failures: list[str] = []
    rows, kept = [], {}
    for name in ("Fashion-MNIST", "Letter", "Flavia"):
        X_tr, y_tr, X_va, y_va, X_te, y_te = splits(name, args.quick)
        labels = np.unique(y_tr)
        d, m = X_tr.shape[1], labels.size
        lambdas = np.geomspace(largest_lambda(X_tr, y_tr), largest_lambda(X_tr, y_tr) / 1000, n_lambdas)
        started = time.perf_counter()
        path = tracenorm_path(
            X_tr,
            y_tr,
            lambdas,
            lambda_fro=LAMBDA_FRO,
            validation_data=(X_va, y_va),
            topk=(1,),
            max_iter=500,
            random_state=0,
        )
        path_seconds = time.perf_counter() - started
        started = time.perf_counter()
        TraceNormLogisticRegression(lambda_trace=lambdas[-1], lambda_fro=LAMBDA_FRO, max_iter=500, random_state=0).fit(
            X_tr, y_tr
        )
        cold_seconds = time.perf_counter() - started
        best = max(path, key=lambda p: (p.validation_topk[1], -p.lambda_trace))
        ours = topk(best.model.decision_function(X_te), y_te, labels)
        kept[name] = (best, lambdas, X_tr, y_tr, X_va, y_va, X_te, y_te, labels)

        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # liblinear's convergence warnings at large C
            svcs = [LinearSVC(C=C, dual="auto", random_state=0).fit(X_tr, y_tr) for C in SVC_GRID]
            svc = max(svcs, key=lambda s: (s.score(X_va, y_va), -s.C))
            # A best C at the grid's end: the grid grows until it is not (or C = 100).
            while svc.C == max(s.C for s in svcs) and svc.C < 100:
                svcs.append(LinearSVC(C=10 * svc.C, dual="auto", random_state=0).fit(X_tr, y_tr))
                svc = max(svcs, key=lambda s: (s.score(X_va, y_va), -s.C))
        svc_seconds = time.perf_counter() - started
        theirs = topk(svc.decision_function(X_te), y_te, labels)

        ranks = ", ".join(str(p.rank) for p in path)
        svc_top1 = theirs[0]
        path_top1 = [top_k_accuracy(y_te, p.model.decision_function(X_te), 1, labels=labels) for p in path]
        matching = [(p.rank, acc) for p, acc in zip(path, path_top1) if acc >= svc_top1 - 0.01]
        smallest = min(matching) if matching else None
        smallest_text = "none" if smallest is None else f"rank {smallest[0]} (top-1 {100 * smallest[1]:.1f})"
        matches = all(o >= t - 0.01 for o, t in zip(ours, theirs))
        low_rank = smallest is not None and smallest[0] < min(d, m)
        if not (matches and low_rank):
            failures.append(f"(1) {name}: top-1/5 {ours} vs LinearSVC {theirs}; smallest matching {smallest_text}")
        rows.append(
            f"| {name} | {len(X_tr):,} × {d} | {m} | {ranks} | {best.lambda_trace:.3g} → rank {best.rank} "
            f"| {100 * ours[0]:.1f} / {100 * ours[1]:.1f} | C = {svc.C:g}: "
            f"{100 * theirs[0]:.1f} / {100 * theirs[1]:.1f} | {smallest_text} of min(d, m) = {min(d, m)} | "
            f"{path_seconds:.1f} s / {cold_seconds:.1f} s = {path_seconds / cold_seconds:.2f} | "
            f"{svc_seconds:.1f} s | "
            f"{verdict(matches and low_rank, 'top-k ≥ LinearSVC − 1 pt, matching rank < min(d, m)')} |"
        )

    # (2) product-quantized training data: 8-bit codes, one per 16 (and 49) dimensions.
    pq_rows = []
    for name, n_subspaces in (
        ("Fashion-MNIST", 49),
        ("Fashion-MNIST", 16),
        ("Letter", 1),
        ("Flavia", 5),
        ("Flavia", 2),
    ):
        best, lambdas, X_tr, y_tr, X_va, y_va, X_te, y_te, labels = kept[name]
        quantizer = ProductQuantizer(n_subspaces=n_subspaces, n_bits=8, random_state=0).fit(X_tr)
        trained = train_on_codes(quantizer, best, lambdas, (X_tr, y_tr, X_va, y_va, X_te, y_te), labels)
        tested_on_codes, tested_raw, X_te_codes = trained.on_codes, trained.on_raw, trained.X_te_codes
        at_kept = next(p for p in trained.coded if p.lambda_trace == best.lambda_trace)
        raw_raw, codes_codes, codes_raw = trained.raw_raw, trained.codes_codes, trained.codes_raw
        lost, recovered = trained.lost, trained.recovered
        share = recovered / lost if lost > 0 else float("nan")
        judged = lost >= 0.01
        if judged and share < 0.5:
            failures.append(f"(2) {name}, {n_subspaces} sub-spaces: lost {lost:.4f}, recovered {recovered:.4f}")
        claim = verdict(share >= 0.5, "recovers >= 50 %") if judged else "not judged (less than 1 pt lost)"
        fixed_codes, fixed_raw = top1(at_kept, X_te_codes, y_te, labels), top1(at_kept, X_te, y_te, labels)
        fixed_share = (fixed_raw - fixed_codes) / (raw_raw - fixed_codes) if raw_raw > fixed_codes else float("nan")
        ratio = 4 * X_tr.shape[1] // n_subspaces  # against float32, as the paper
        pq_rows.append(
            f"| {name}, {n_subspaces} × 8-bit codes ({n_subspaces} B per row, {ratio}× smaller) | "
            f"{100 * raw_raw:.2f} (λ1 {best.lambda_trace:.3g}) | "
            f"{100 * codes_codes:.2f} (λ1 {tested_on_codes.lambda_trace:.3g}, rank {tested_on_codes.rank}) "
            "| "
            f"{100 * codes_raw:.2f} (λ1 {tested_raw.lambda_trace:.3g}, rank {tested_raw.rank}) | "
            f"{100 * lost:.2f} pts lost ({round(lost * len(y_te))} of {len(y_te):,} test rows), "
            f"{100 * recovered:.2f} recovered ({100 * share:.0f} %) | "
            f"{100 * fixed_codes:.2f} / {100 * fixed_raw:.2f} ({100 * fixed_share:.0f} %) | {claim} |"
        )

    text = (
        "\n".join(
            [
                BEGIN,
                "## Trace-norm multinomial logistic regression on real many-class data",
                "",
                f"Command: `{command_line()}`. Machine: {load}. Protocol in the "
                "script's docstring: standardised features, λ1 kept by validation top-1 accuracy along a 10-point path "
                f"(λ2 = {LAMBDA_FRO:g}, tol 1e-4), LinearSVC's C by the same validation set; test-set accuracies in %.",
                "",
                "(1) Rank along the path, and top-1 / top-5 accuracy against one-vs-rest LinearSVC:",
                "",
                "| data | train n × d | classes m | ranks along the path (λ1 decreasing) | kept λ1 | trace-norm top-1 / top-5 "
                "| LinearSVC top-1 / top-5 | smallest rank on the path within 1 pt of LinearSVC's top-1 "
                "| path / cold fit at the smallest λ1 | LinearSVC grid time "
                "| claim |",
                "|---|---|---|---|---|---|---|---|---|---|---|",
                *rows,
                "",
                "(2) Trained on product-quantized codes, tested on decoded codes and on raw features (paper Fig. 3), top-1 %; "
                "each test mode at the λ1 its own validation rows favour (decoded rows for the model tested on codes, raw "
                "rows for the one tested raw):",
                "",
                "| data | trained and tested raw | trained on codes, tested on codes | trained on codes, tested raw "
                "| loss and recovery | not judged: trained on codes at (1)'s λ1, tested on codes / raw (recovery) | claim |",
                "|---|---|---|---|---|---|---|",
                *pq_rows,
                "",
                END,
            ]
        )
        + "\n"
    )
    return publish(text, failures, args.write, BEGIN, END)


if __name__ == "__main__":
    raise SystemExit(main())
