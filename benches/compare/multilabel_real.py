"""MultiLabelSVC's multi-label losses on yeast and scene against M3L, one-vs-rest LinearSVC
and one-vs-rest LogisticRegression: rank loss, P@1, P@3 and Hamming loss on the test set.

    python benches/compare/multilabel_real.py [--write docs/results.md]
    python benches/compare/multilabel_real.py --baselines-only     # M3L and scikit-learn only

Protocol (the choices are ours):

* data: yeast (2417 × 103, 14 labels; the loader stores no split and MULAN's 1500 / 917
  split is not shipped, so a seeded 1500 / 917 split, ``np.random.default_rng(0)``'s
  permutation, the same as ``m3l_prior.py``'s) and scene (the LIBSVM train / test files:
  1211 / 1196, 294 features, 6 labels); features standardised with the training means and
  deviations. Every example of both has at least one label and not all of them.
* models, all linear with an intercept, all single-threaded (``n_jobs=1``, NumPy's BLAS
  pools pinned to one thread):

  - ``MultiLabelSVC(loss="hinge")``, ``MultiLabelSVC(loss="hinge", smoothing=1)`` and
    ``MultiLabelSVC(loss="softmax")``, default tol (relative duality gap 1e-3) and
    ``max_epochs`` (1000);
  - ``M3L`` with R = I (one-vs-all hinge SVMs with penalty 2C; its default tol, at most
    2000 DCD epochs as in ``m3l_prior.py``: it stops short of tol at the larger C of the
    grid, which the table's last column shows for the final fit);
  - one-vs-rest ``LinearSVC`` (scikit-learn's defaults: squared hinge, LIBLINEAR;
    ``max_iter=10⁴``) and one-vs-rest ``LogisticRegression`` (lbfgs, ``max_iter=10⁴``), each
    in ``OneVsRestClassifier(n_jobs=1)``.

* C: for each model from ``C_GRID`` = 10^-4 … 10^2 by 5-fold cross-validation on the
  training set (``KFold(5, shuffle=True, random_state=0)``, the same folds for every
  model), the criterion being the mean validation **rank loss** for all models (also for
  the ones trained on a per-label loss); then refitted on the whole training set. C means
  what each model's docs say (``M3L``'s penalty is 2C per label, scikit-learn's and
  MultiLabelSVC's C per loss term), so equal C are not equal regularisation across models.
  A C at either end of the grid is marked in the table (the grid starts at 10^-4 because
  M3L and one-vs-rest LinearSVC chose 10^-3, the lower end, on a 10^-3 … 10^2 grid).
* metrics on the test set: the rank loss (fraction of (relevant, irrelevant) label pairs
  a row orders wrongly, ties counting as wrong, averaged over rows: scikit-learn's
  ``label_ranking_loss``) of ``decision_function``, P@1 and P@3 of the same scores
  (``toprank.metrics.precision_at_k``), and the Hamming loss of ``predict`` (each model's
  own thresholding: score > 0 for the one-vs-rest models and M3L, probability > ½ for
  LogisticRegression, MultiLabelSVC's documented rule). The training rank loss is
  printed as well, to tell under- from overfitting.
* times: seconds of the whole cross-validation and of the final fit, per model.

The full run scores the rank loss with ``toprank.metrics.rank_loss`` and checks it against
scikit-learn's on every model (a failed check makes the exit status 1). ``--baselines-only``
runs M3L and the scikit-learn models and scores with ``sklearn.metrics.label_ranking_loss``;
it does not import MultiLabelSVC, and cannot ``--write`` (the table would miss its subject).

The table replaces the section between ``<!-- mlreal:begin -->`` and ``<!-- mlreal:end -->``
of the given file (appended if absent); it is always printed.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from sections import command_line, machine, publish  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import label_ranking_loss  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402
from sklearn.multiclass import OneVsRestClassifier  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from toprank import M3L  # noqa: E402
from toprank.datasets import load_scene, load_yeast  # noqa: E402
from toprank.metrics import hamming_loss, precision_at_k  # noqa: E402

BEGIN, END = "<!-- mlreal:begin -->", "<!-- mlreal:end -->"
C_GRID = tuple(10.0**e for e in range(-4, 3))
FOLDS = 5
SEED = 0
# M3L's DCD epochs at most, as in m3l_prior.py: on standardised yeast (‖x‖² ≈ 103) it does not reach
# tol 1e-3 in 10,000 epochs even at C = 1, and its default 100,000 would take minutes per fit at large C.
M3L_EPOCHS = 2000
Data = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Method:
    name: str
    make: Callable[[float], Any]


def datasets() -> dict[str, tuple[Data, str]]:
    """(X_train, Y_train, X_test, Y_test) standardised on the training part, and how it was split."""
    yeast = load_yeast()
    order = np.random.default_rng(SEED).permutation(yeast.data.shape[0])
    train, test = order[:1500], order[1500:]
    out = {
        "yeast": (
            (yeast.data[train], yeast.target[train], yeast.data[test], yeast.target[test]),
            "seeded 1500 / 917 split",
        )
    }
    scene_train, scene_test = load_scene(subset="train"), load_scene(subset="test")
    out["scene"] = (
        (scene_train.data, scene_train.target, scene_test.data, scene_test.target),
        "LIBSVM train / test files",
    )
    for name, ((X, Y, Xt, Yt), split) in out.items():
        mean, std = X.mean(axis=0), X.std(axis=0)
        std[std == 0] = 1.0
        Y, Yt = np.asarray(Y, dtype=np.int64), np.asarray(Yt, dtype=np.int64)
        for part, labels in (("train", Y), ("test", Yt)):
            counts = labels.sum(axis=1)
            if np.any((counts == 0) | (counts == labels.shape[1])):
                raise SystemExit(f"{name} {part}: an example with no label or every label")
        out[name] = ((X - mean) / std, Y, (Xt - mean) / std, Yt), split
    return out


def methods(baselines_only: bool) -> list[Method]:
    out: list[Method] = []
    if not baselines_only:
        # Imported here, not at the top: --baselines-only runs where MultiLabelSVC does not exist yet.
        from toprank import MultiLabelSVC

        out += [
            Method("MultiLabelSVC hinge", lambda C: MultiLabelSVC(loss="hinge", C=C, random_state=SEED, n_jobs=1)),
            Method(
                "MultiLabelSVC smoothed hinge (γ = 1)",
                lambda C: MultiLabelSVC(loss="hinge", smoothing=1.0, C=C, random_state=SEED, n_jobs=1),
            ),
            Method("MultiLabelSVC softmax", lambda C: MultiLabelSVC(loss="softmax", C=C, random_state=SEED, n_jobs=1)),
        ]
    out += [
        Method("M3L (R = I)", lambda C: M3L(C=C, max_iter=M3L_EPOCHS, random_state=SEED, n_jobs=1)),
        Method("one-vs-rest LinearSVC", lambda C: OneVsRestClassifier(LinearSVC(C=C, max_iter=10_000), n_jobs=1)),
        Method(
            "one-vs-rest LogisticRegression",
            lambda C: OneVsRestClassifier(LogisticRegression(C=C, max_iter=10_000), n_jobs=1),
        ),
    ]
    return out


def rank_losses(baselines_only: bool, failures: list[str]) -> Callable[[np.ndarray, np.ndarray, str], float]:
    """The rank loss the table reports: toprank's, checked against scikit-learn's on every
    call; scikit-learn's alone with --baselines-only (toprank's may not exist yet)."""
    if baselines_only:
        return lambda Y, S, _where: float(label_ranking_loss(Y, S))
    from toprank.metrics import rank_loss

    def checked(Y: np.ndarray, S: np.ndarray, where: str) -> float:
        ours, ref = float(rank_loss(Y, S)), float(label_ranking_loss(Y, S))
        if abs(ours - ref) > 1e-12:
            failures.append(f"{where}: toprank.metrics.rank_loss {ours!r} != sklearn label_ranking_loss {ref!r}")
        return ours

    return checked


def fit(method: Method, C: float, X: np.ndarray, Y: np.ndarray) -> tuple[Any, int]:
    """The fitted model and how many ConvergenceWarnings the fit raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model = method.make(C).fit(X, Y)
    return model, sum(issubclass(w.category, ConvergenceWarning) for w in caught)


def choose_C(
    method: Method, X: np.ndarray, Y: np.ndarray, rank_loss: Callable[[np.ndarray, np.ndarray, str], float], tag: str
) -> tuple[float, float, list[float]]:
    """(best C, its mean validation rank loss, the mean validation rank loss of every C)."""
    folds = list(KFold(FOLDS, shuffle=True, random_state=SEED).split(X))
    curve = []
    for C in C_GRID:
        losses = []
        for fit_rows, val_rows in folds:
            model, _ = fit(method, C, X[fit_rows], Y[fit_rows])
            losses.append(rank_loss(Y[val_rows], model.decision_function(X[val_rows]), f"{tag} C={C:g} CV"))
        curve.append(float(np.mean(losses)))
    best = int(np.argmin(curve))  # the smallest C among equals: the most regularised
    return C_GRID[best], curve[best], curve


def hinge_diagnostics(Y: np.ndarray, S: np.ndarray) -> tuple[float, float]:
    """(mean multi-label hinge max{0, 1 + max_{l∉Y} s_l − min_{j∈Y} s_j}, mean per-row standard
    deviation of the scores) over the rows of S: why the multi-label hinge may not win on rank
    loss. The zero model scores a hinge of exactly 1 on every row; a model whose mean is above
    1 is, by the hinge's own measure, worse than it, however well it ranks the other pairs."""
    relevant = Y.astype(bool)
    lowest_relevant = np.where(relevant, S, np.inf).min(axis=1)
    highest_other = np.where(relevant, -np.inf, S).max(axis=1)
    hinge = np.maximum(0.0, 1.0 + highest_other - lowest_relevant)
    return float(hinge.mean()), float(S.std(axis=1).mean())


# Label-set sizes the second table splits the test rows by.
SIZE_GROUPS = ((1, 2), (3, 3), (4, 4), (5, 99))


def by_label_set_size(Y: np.ndarray, S: np.ndarray) -> list[str]:
    """The rank loss of the rows whose label set has each size in SIZE_GROUPS (empty cell:
    no such row): where a loss gains or loses against another."""
    sizes, cells = Y.sum(axis=1), []
    for low, high in SIZE_GROUPS:
        rows = (sizes >= low) & (sizes <= high)
        cells.append(f"{label_ranking_loss(Y[rows], S[rows]):.4f} ({rows.sum()})" if rows.any() else "")
    return cells


def frequent_label_rank(Y: np.ndarray, S: np.ndarray) -> float:
    """The mean place (1 = top) of the training set's most frequent label in each row's ranking."""
    label = int(np.argmax(Y.sum(axis=0)))
    return float((S > S[:, [label]]).sum(axis=1).mean() + 1)


def status(model: Any) -> str:
    """How the final fit stopped, for the models that say so."""
    if hasattr(model, "status_"):
        return f"{model.status_}, {model.n_iter_} epochs"
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", metavar="FILE")
    parser.add_argument("--baselines-only", action="store_true", help="M3L and scikit-learn only (no MultiLabelSVC)")
    args = parser.parse_args()
    if args.write and args.baselines_only:
        parser.error("--write needs the full run (the table without MultiLabelSVC would miss its subject)")
    load = machine()
    failures: list[str] = []
    rank_loss = rank_losses(args.baselines_only, failures)
    rows, notes, size_rows = [], [], []
    start = time.perf_counter()
    for name, ((X, Y, Xt, Yt), split) in datasets().items():
        notes.append(
            f"{name}: {X.shape[0]} train / {Xt.shape[0]} test ({split}), d = {X.shape[1]}, {Y.shape[1]} labels, "
            f"{Y.sum(axis=1).mean():.2f} labels per training example"
        )
        for method in methods(args.baselines_only):
            tag = f"{name} / {method.name}"
            t = time.perf_counter()
            C, cv_loss, curve = choose_C(method, X, Y, rank_loss, tag)
            t_cv = time.perf_counter() - t
            t = time.perf_counter()
            model, warned = fit(method, C, X, Y)
            t_fit = time.perf_counter() - t
            S, S_train = model.decision_function(Xt), model.decision_function(X)
            test_loss, train_loss = rank_loss(Yt, S, f"{tag} test"), rank_loss(Y, S_train, f"{tag} train")
            p1, p3 = precision_at_k(Yt, S, 1), precision_at_k(Yt, S, 3)
            ham = hamming_loss(Yt, model.predict(Xt))
            hinge, spread = hinge_diagnostics(Y, S_train)
            sizes = " | ".join(by_label_set_size(Yt, S))
            size_rows.append(f"| {name} | {method.name} | {sizes} | {frequent_label_rank(Yt, S):.2f} |")
            stopped = status(model)
            if warned:
                stopped = f"{stopped}; " if stopped else ""
                stopped += f"{warned} ConvergenceWarning{'s' if warned > 1 else ''}"
            print(
                f"{tag}: CV rank loss by C {', '.join(f'{c:g}: {v:.4f}' for c, v in zip(C_GRID, curve))}; C = {C:g}; "
                f"train rank loss "
                f"{train_loss:.4f}, test {test_loss:.4f}; P@1 {p1:.4f} P@3 {p3:.4f} Hamming {ham:.4f}; "
                f"training hinge {hinge:.3f}, score spread {spread:.3f}; "
                f"CV {t_cv:.1f} s, fit {t_fit:.2f} s{f' ({stopped})' if stopped else ''}",
                flush=True,
            )
            rows.append(
                f"| {name} | {method.name} | {C:g}{' (grid end)' if C in (C_GRID[0], C_GRID[-1]) else ''} | {cv_loss:.4f} | {train_loss:.4f} | **{test_loss:.4f}** | "
                f"{p1:.4f} | {p3:.4f} | {ham:.4f} | {hinge:.3f} | {spread:.3f} | {t_cv:.1f} + {t_fit:.2f} | {stopped} |"
            )
    seconds = time.perf_counter() - start
    scorer = (
        "sklearn.metrics.label_ranking_loss (--baselines-only)"
        if args.baselines_only
        else "toprank.metrics.rank_loss (checked equal to scikit-learn's label_ranking_loss)"
    )
    text = (
        "\n".join(
            [
                BEGIN,
                f"| data | model | C ({FOLDS}-fold CV) | CV rank loss | train rank loss | test rank loss | P@1 | P@3 | "
                "Hamming loss | training multi-label hinge | score spread | seconds, CV + final fit | stopped |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
                *rows,
                "",
                "Test rank loss by the size of the row's label set (rows in parentheses), and the mean place "
                "(1 = top) of the training set's most frequent label in the test rows' rankings:",
                "",
                "| data | model | "
                + " | ".join(
                    f"\\|Y\\| = {lo}" if lo == hi else f"\\|Y\\| {lo}–{hi}" if hi < 99 else f"\\|Y\\| ≥ {lo}"
                    for lo, hi in SIZE_GROUPS
                )
                + " | place of the most frequent label |",
                "|---|---|" + "---|" * len(SIZE_GROUPS) + "---|",
                *size_rows,
                "",
                f"{'; '.join(notes)}. Features standardised on the training part; every model linear with an "
                f"intercept, single-threaded. C from {', '.join(f'{c:g}' for c in C_GRID)} by {FOLDS}-fold cross-validation "
                "on the training set with the mean validation rank loss as the criterion for every model, then "
                "refitted on the whole training set. Rank loss: the fraction of (relevant, irrelevant) label pairs "
                f"ordered wrongly (ties wrong), mean over rows, scored with {scorer}; P@k of the same scores; Hamming "
                "loss of each model's `predict`. One-vs-rest LinearSVC: scikit-learn's defaults (squared hinge); "
                "M3L: R = I, penalty 2C per label. Training multi-label hinge: the mean over training rows of "
                "max{0, 1 + max_{l∉Y} s_l − min_{j∈Y} s_j} of the model's scores (the zero model has exactly 1); "
                "score spread: the mean over training rows of the standard deviation of the scores. "
                f"Machine: {load}; {seconds:.0f} s in all. Reproduce with `{command_line()}`.",
                END,
            ]
        )
        + "\n"
    )
    return publish(text, failures, args.write, BEGIN, END)


if __name__ == "__main__":
    raise SystemExit(main())
