"""One fit contract for the estimators fitted by a dual solver (TopKSVC, MultiLabelSVC,
M3L, TopPush, TopPushK, PatMat): ``status_`` from one vocabulary, ``n_iter_`` and ``history_`` of
:class:`toprank.FitProgress` records meaning the same everywhere; and the core's fits
taking one settings object and returning a typed ``FitReport``."""

from __future__ import annotations

import warnings
from dataclasses import replace
from functools import partial
from typing import get_args

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from toprank import M3L, FitProgress, MultiLabelSVC, PatMat, TopKSVC, TopPushK, _core
from toprank._options import FitStatus, KernelSettings, M3lProblem, M3lSettings, SdcaProblem, SdcaSettings
from toprank.exceptions import InvalidInputError

RNG = np.random.default_rng(3)
X = RNG.standard_normal((80, 5))
Y_CLASS = np.argmax(X[:, :3] + 0.5 * RNG.standard_normal((80, 3)), axis=1)
Y_MULTI = (X[:, :3] + 0.3 * RNG.standard_normal((80, 3)) > 0).astype(int)
Y_BINARY = Y_CLASS == 0
# Label sets with a label and a non-label in every row (MultiLabelSVC's losses need both).
Y_SETS = Y_MULTI.copy()
Y_SETS[np.arange(80), np.argmax(X[:, :3], axis=1)] = 1
Y_SETS[np.arange(80), np.argmin(X[:, :3], axis=1)] = 0

# name -> (the estimator, its targets, the parameter of its budget)
ESTIMATORS = {
    "TopKSVC": (partial(TopKSVC, k=1, random_state=0), Y_CLASS, "max_epochs"),
    "TopKSVC_rbf": (partial(TopKSVC, kernel="rbf", random_state=0), Y_CLASS, "max_epochs"),
    "MultiLabelSVC": (partial(MultiLabelSVC, random_state=0), Y_SETS, "max_epochs"),
    "M3L_dcd": (partial(M3L, random_state=0), Y_MULTI, "max_iter"),
    "M3L_smo": (partial(M3L, kernel="rbf"), Y_MULTI, "max_iter"),
    "TopPushK": (partial(TopPushK, K=2, check_every=5, random_state=0), Y_BINARY, "max_iter"),
    "PatMat": (partial(PatMat, tau=0.2, check_every=5, random_state=0), Y_BINARY, "max_iter"),
}


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_dual_solver_reports_the_same_way(name):
    make, y, budget = ESTIMATORS[name]
    model = make(**{budget: 100_000}).fit(X, y)
    assert model.status_ == "converged"
    # M3L had no history_ (nor duality_gap_), the others a list of bare tuples.
    assert model.history_ and all(type(record) is FitProgress for record in model.history_)
    last = model.history_[-1]
    assert last.n_iter == model.n_iter_
    assert (last.primal, last.dual) == pytest.approx((model.primal_objective_, model.dual_objective_))
    gap = (model.primal_objective_ - model.dual_objective_) / max(
        abs(model.primal_objective_), abs(model.dual_objective_)
    )
    assert model.duality_gap_ == pytest.approx(gap, abs=1e-15)
    assert [r.n_iter for r in model.history_] == sorted(r.n_iter for r in model.history_)
    assert all(b.seconds >= a.seconds for a, b in zip(model.history_, model.history_[1:]))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_budget_that_runs_out_is_max_iter_for_every_solver(name):
    # TopKSVC, M3L and the ranking-at-the-top solvers said "max_epochs", even where the
    # budget is max_iter; the trace-norm solver said "max_iter".
    make, y, budget = ESTIMATORS[name]
    with pytest.warns(ConvergenceWarning, match=f"status 'max_iter'.*{budget}"):
        model = make(**{budget: 5}, tol=1e-12).fit(X, y)
    assert model.status_ == "max_iter" and model.status_ in get_args(FitStatus)
    assert 1 <= model.n_iter_ <= 5


def test_the_core_fits_return_a_typed_report():
    y = Y_CLASS.astype(np.int64)
    settings = SdcaSettings(3, "alpha", k=1, smoothing=0.0, tol=1e-6, max_epochs=200, check_every=5, seed=0)
    coef, dual, report = _core.topk_svm_fit(X, SdcaProblem(y, np.ones(80)), settings)
    assert isinstance(report, _core.FitReport) and report.status == "converged"
    assert coef.shape == (3, 5) and dual.shape == (80, 3)
    assert report.history[-1][:4] == (report.n_iter, report.primal, report.dual, report.gap)
    with pytest.raises(AttributeError):
        report.status = "max_iter"  # frozen


def test_settings_options_are_refused_naming_the_option():
    y, c = Y_CLASS.astype(np.int64), np.ones(80)
    settings = SdcaSettings(3, "alpha", k=1, smoothing=0.0, tol=1e-6, max_epochs=10, check_every=5, seed=0)
    with pytest.raises(
        InvalidInputError,
        match="^loss: must be 'alpha', 'beta', 'softmax', 'entropy', 'multilabel_hinge' or 'multilabel_softmax'",
    ):
        _core.topk_svm_fit(X, SdcaProblem(y, c), replace(settings, loss="alhpa"))
    with pytest.raises(InvalidInputError, match="^kernel: must be 'linear', 'rbf', 'poly' or 'precomputed'"):
        _core.topk_svm_fit(X, SdcaProblem(y, c), replace(settings, kernel=KernelSettings("gaussian")))
    with pytest.raises(InvalidInputError, match=r"^dual_coef: must have shape \(80, 3\)"):
        _core.topk_svm_fit(X, SdcaProblem(y, c, dual_coef=np.zeros((79, 3))), settings)
    # The core owns the M3L tolerance check (it was the binding's).
    signs = np.where(Y_MULTI > 0, 1.0, -1.0)
    problem = M3lProblem(signs, np.eye(3), np.zeros_like(signs), np.full_like(signs, 2.0))
    with pytest.raises(InvalidInputError, match="^tol: must be finite and > 0"):
        _core.m3l_fit(X, problem, M3lSettings(c=1.0, tol=0.0, max_iter=10))
    with pytest.raises(InvalidInputError, match="^intercept_scaling: its square must be finite"):
        settings_smo = M3lSettings(c=1.0, tol=1e-3, max_iter=10, bias=1e200, kernel=KernelSettings("rbf"))
        _core.m3l_fit(X, problem, settings_smo)


def test_a_warm_start_gives_the_fit_of_its_dual_rows():
    # The warm-start rebuild of W from the dual rows moved from the binding into the core
    # (solvers::topk_svm::fit_linear): a restart from a fit's own dual rows is that fit.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = TopKSVC(k=1, tol=1e-12, max_epochs=5, check_every=5, warm_start=True, random_state=0).fit(X, Y_CLASS)
        first = model.coef_.copy()
        model.set_params(max_epochs=1, check_every=1).fit(X, Y_CLASS)
    assert model.n_iter_ == 1
    # One more epoch from the exact pair: near the first fit, not a restart from zero.
    cold = TopKSVC(k=1, max_epochs=1, check_every=1, tol=1e-12, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cold.fit(X, Y_CLASS)
    assert np.linalg.norm(model.coef_ - first) < np.linalg.norm(cold.coef_ - first)
