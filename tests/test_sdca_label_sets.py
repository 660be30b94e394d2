"""The Prox-SDCA core's label sets through ``_core.topk_svm_fit(..., label_starts=...)``:
the multi-label hinge and softmax losses (``src/solvers/topk_svm/multilabel_*.rs``), the
contract ``toprank.MultiLabelSVC`` is written against."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from toprank import InvalidInputError, _core
from toprank._options import KernelSettings, SdcaProblem, SdcaSettings

N, D, M = 120, 5, 6


def _problem(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((M, D))
    sets = [np.sort(rng.choice(M, size=rng.integers(1, 4), replace=False)) for _ in range(N)]
    x = np.stack([centres[s].sum(axis=0) for s in sets]) + 0.5 * rng.standard_normal((N, D))
    y = np.concatenate(sets).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
    return x, y, starts, sets


def _settings(loss: str, **kw: object) -> SdcaSettings:
    base = SdcaSettings(M, "alpha", k=1, smoothing=0.0, tol=1e-8, max_epochs=5000, check_every=5, seed=0, bias=1.0)
    return replace(base, loss=loss, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "loss, smoothing", [("multilabel_hinge", 0.0), ("multilabel_hinge", 0.5), ("multilabel_softmax", 0.0)]
)
def test_label_set_fits_converge_with_feasible_dual_rows(loss: str, smoothing: float) -> None:
    x, y, starts, sets = _problem()
    c = np.full(N, 0.7)
    coef, dual, report = _core.topk_svm_fit(
        x, SdcaProblem(y, c, label_starts=starts), _settings(loss, smoothing=smoothing)
    )
    assert report.status == "converged" and report.gap <= 1e-8
    assert coef is not None and coef.shape == (M, D + 1) and dual.shape == (N, M)
    np.testing.assert_allclose(dual.sum(axis=1), 0.0, atol=1e-12)
    labels = np.zeros((N, M), dtype=bool)
    for i, s in enumerate(sets):
        labels[i, s] = True
    if loss == "multilabel_hinge":
        # a = (α on the labels, −β elsewhere), α, β ≥ 0, Σα = Σβ ≤ c.
        assert (dual[labels] >= 0).all() and (dual[~labels] <= 0).all()
        assert (np.where(labels, dual, 0.0).sum(axis=1) <= c * (1 + 1e-12)).all()
    else:
        # a = c(u − p), p in the simplex: a_j ≤ c/|Y| on the labels, < 0 elsewhere.
        share = c / labels.sum(axis=1)
        assert (dual[~labels] < 0).all() and (dual <= np.where(labels, share[:, None], 0.0)).all()


@pytest.mark.parametrize("multi, single", [("multilabel_hinge", "alpha"), ("multilabel_softmax", "softmax")])
def test_one_label_per_example_is_the_multiclass_fit(multi: str, single: str) -> None:
    x, _, _, _ = _problem(1)
    y = np.random.default_rng(1).integers(0, M, N).astype(np.int64)
    c = np.ones(N)
    multi_fit = _core.topk_svm_fit(
        x, SdcaProblem(y, c, label_starts=np.arange(N + 1, dtype=np.int64)), _settings(multi)
    )
    single_fit = _core.topk_svm_fit(x, SdcaProblem(y, c), _settings(single))
    np.testing.assert_allclose(multi_fit[1], single_fit[1], atol=1e-9)
    assert multi_fit[2].primal == pytest.approx(single_fit[2].primal, rel=1e-9)


def test_kernel_fits_and_warm_starts_take_label_sets() -> None:
    x, y, starts, _ = _problem(2)
    c = np.ones(N)
    settings = _settings("multilabel_hinge", bias=None, tol=1e-6)
    problem = SdcaProblem(y, c, label_starts=starts)
    linear = _core.topk_svm_fit(x, problem, settings)
    kernel = _core.topk_svm_fit(x, problem, replace(settings, kernel=KernelSettings("linear")))
    assert kernel[0] is None and kernel[2].status == "converged"
    assert kernel[2].primal == pytest.approx(linear[2].primal, rel=3e-6)
    warm = _core.topk_svm_fit(x, replace(problem, dual_coef=linear[1]), settings)
    assert warm[2].status == "converged" and warm[2].n_iter < linear[2].n_iter, (warm[2].n_iter, linear[2].n_iter)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda y, s: (y, s[:-1]), r"^label_starts: must hold n \+ 1 = 121 offsets, got 120"),
        (lambda y, s: (y, np.r_[s[:3], s[2], s[4:]]), "^y: example 2 has no label"),
        (lambda y, s: (np.r_[y[:1], y], s + np.r_[0, np.ones(N, dtype=np.int64)]), "^y: example 0's label set"),
        (lambda y, s: (np.where(np.arange(y.size) == 0, M, y), s), f"^y: label {M} of example 0 out of range"),
        (lambda y, s: (np.r_[np.arange(M), y[s[1] :]], np.r_[0, s[1:] - s[1] + M]), "^y: example 0 has all 6 labels"),
        (lambda y, s: (y, -s), "^label_starts: entry 1 .* is not an index"),
    ],
)
def test_bad_label_sets_are_refused(edit: object, message: str) -> None:
    x, y, starts, _ = _problem(3)
    bad_y, bad_starts = edit(y, starts)  # type: ignore[operator]
    with pytest.raises(InvalidInputError, match=message):
        _core.topk_svm_fit(
            x, SdcaProblem(bad_y.astype(np.int64), np.ones(N), label_starts=bad_starts), _settings("multilabel_hinge")
        )


def test_a_multiclass_loss_takes_one_label_per_example() -> None:
    x, y, starts, _ = _problem(4)
    with pytest.raises(InvalidInputError, match=r"^y: example \d+ has \d labels; a multiclass loss takes exactly one"):
        _core.topk_svm_fit(x, SdcaProblem(y, np.ones(N), label_starts=starts), _settings("alpha"))
