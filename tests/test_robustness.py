"""Inputs found by fuzzing the estimators and functions: each once crashed a fit, hung,
returned a NaN or zero model without a word, or raised an error that did not name the
argument at fault. Bad input must raise an exception naming the argument; data whose
scale overflows must raise, never fit a silent NaN model."""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from toprank import (
    M3L,
    PatMat,
    RankmaxRanker,
    TopKSVC,
    TopPush,
    TopPushK,
    TraceNormLogisticRegression,
    losses,
    projections,
    recsys,
    tracenorm_path,
)
from toprank.distributed import fit_cocoa
from toprank.exceptions import InvalidInputError, NoSolutionError
from toprank.pq import ProductQuantizer

RNG = np.random.RandomState(0)
X = RNG.normal(size=(40, 4))
Y3 = np.arange(40) % 3
Y2 = np.arange(40) % 2
LABELS = (RNG.rand(40, 3) > 0.5).astype(int)


def _malformed_csr(dense: np.ndarray = X, row: int = 5, value: int | None = None) -> sp.csr_matrix:
    csr = sp.csr_matrix(dense)
    csr.indptr = csr.indptr.copy()
    csr.indptr[row] = csr.indptr[row + 1] + 1 if value is None else value
    return csr


def _far_index(dense: np.ndarray, fmt: str = "csr") -> Any:
    matrix = sp.csr_matrix(dense) if fmt == "csr" else sp.csc_matrix(dense)
    matrix.indices = matrix.indices.copy()
    matrix.indices[0] = 10**9
    matrix.has_sorted_indices = False
    return matrix


# (call, the exception, the start of its message: the argument it names)
BAD: dict[str, tuple[Callable[[], Any], type[Exception], str]] = {
    "n_jobs far beyond the cores": (lambda: TopKSVC(n_jobs=10**6).fit(X, Y3), InvalidInputError, "n_jobs:"),
    "n_jobs beyond int64": (lambda: TopPush(n_jobs=2**70).fit(X, Y2), InvalidInputError, "n_jobs:"),
    "fit_intercept not a bool (TopKSVC)": (
        lambda: TopKSVC(fit_intercept="no").fit(X, Y3),
        InvalidInputError,
        "fit_intercept:",
    ),
    "fit_intercept not a bool (M3L)": (
        lambda: M3L(fit_intercept="no").fit(X, LABELS),
        InvalidInputError,
        "fit_intercept:",
    ),
    "fit_intercept not a bool (trace norm)": (
        lambda: TraceNormLogisticRegression(fit_intercept="no").fit(X, Y3),
        InvalidInputError,
        "fit_intercept:",
    ),
    "warm_start None": (lambda: TopKSVC(warm_start=None).fit(X, Y3), InvalidInputError, "warm_start:"),
    "pos_label a list": (lambda: TopPush(pos_label=[1]).fit(X, Y2), InvalidInputError, "pos_label:"),
    "TopPush with one negative": (lambda: TopPush().fit(X[:5], [0, 1, 1, 1, 1]), InvalidInputError, "y:"),
    "TopPushK with K negatives": (lambda: TopPushK(K=2).fit(X[:5], [0, 0, 1, 1, 1]), InvalidInputError, "K:"),
    "squared row norms overflow": (lambda: TopKSVC().fit(X * 1e154, Y3), InvalidInputError, "X:"),
    "squared row norms overflow (softmax)": (
        lambda: TopKSVC(loss="softmax").fit(X * 1e154, Y3),
        InvalidInputError,
        "X:",
    ),
    "gamma='scale' of an overflowing X": (lambda: TopKSVC(kernel="rbf").fit(X * 1e154, Y3), InvalidInputError, "X:"),
    "gamma='scale' of a vanishing X": (lambda: TopKSVC(kernel="rbf").fit(X * 1e-160, Y3), InvalidInputError, "X:"),
    "intercept_scaling squared overflows (TopKSVC)": (
        lambda: TopKSVC(intercept_scaling=1e308).fit(X, Y3),
        InvalidInputError,
        "intercept_scaling:",
    ),
    "intercept_scaling squared overflows (M3L)": (
        lambda: M3L(intercept_scaling=1e308).fit(X, LABELS),
        InvalidInputError,
        "intercept_scaling:",
    ),
    "R not a matrix": (lambda: M3L(R="identity").fit(X, LABELS), InvalidInputError, "R:"),
    "malformed CSR indptr (TopKSVC)": (lambda: TopKSVC().fit(_malformed_csr(), Y3), InvalidInputError, "X.indptr:"),
    "malformed CSR indptr (trace norm)": (
        lambda: TraceNormLogisticRegression().fit(_malformed_csr(), Y3),
        InvalidInputError,
        "X.indptr:",
    ),
    # scipy's own sorting and conversion of these segfaulted the interpreter (fit on CSC
    # converts to CSR first; predict computes X @ coef_ in scipy).
    "row index far out of range (TopKSVC on CSC)": (
        lambda: TopKSVC().fit(_far_index(X, "csc"), Y3),
        InvalidInputError,
        "X.indices:",
    ),
    "column index far out of range (TopKSVC.predict)": (
        lambda: TopKSVC().fit(X, Y3).predict(_far_index(X)),
        InvalidInputError,
        "X.indices:",
    ),
    "column index far out of range (M3L.predict)": (
        lambda: M3L().fit(X, LABELS).predict(_far_index(X)),
        InvalidInputError,
        "X.indices:",
    ),
    "column index far out of range (trace norm predict)": (
        lambda: TraceNormLogisticRegression().fit(X, Y3).predict(_far_index(X)),
        InvalidInputError,
        "X.indices:",
    ),
    "column index far out of range (RankmaxRanker.recommend)": (
        lambda: RankmaxRanker(n_epochs=1, random_state=0).fit(X, LABELS).recommend(_far_index(X)),
        InvalidInputError,
        "X.indices:",
    ),
    "sparse X for the product quantizer": (
        lambda: ProductQuantizer(n_subspaces=2, n_bits=2).fit(sp.csr_matrix(X)),
        InvalidInputError,
        "X: sparse input is not supported",
    ),
    "infinity for the product quantizer": (
        lambda: ProductQuantizer(n_subspaces=2, n_bits=2).fit(np.where(X > 2, np.inf, X)),
        InvalidInputError,
        "X: contains NaN or infinity",
    ),
    "rdot with the transposed shape": (
        lambda: ProductQuantizer(n_subspaces=2, n_bits=2, random_state=0).fit(X).compress(X).rdot(np.ones((40, 4))),
        InvalidInputError,
        "A: expected 40 columns",
    ),
    "polynomial degree beyond the core's 32 bits": (
        lambda: TopKSVC(kernel="poly", degree=2**32).fit(X, Y3),
        InvalidInputError,
        "degree:",
    ),
    "polynomial degree beyond the core's 32 bits (M3L)": (
        lambda: M3L(kernel="poly", degree=2**32).fit(X, LABELS),
        InvalidInputError,
        "degree:",
    ),
    "indptr far out of range (M3L's Y)": (
        lambda: M3L().fit(X, _malformed_csr(LABELS, 7, 10**7)),
        InvalidInputError,
        "Y.indptr:",
    ),
    "column index far out of range (M3L's Y)": (
        lambda: M3L().fit(X, _far_index(LABELS)),
        InvalidInputError,
        "Y.indices:",
    ),
    "indptr far out of range (evaluate_ranking)": (
        lambda: recsys.evaluate_ranking(RNG.rand(40, 3), _malformed_csr(LABELS, 7, 10**7), k_ap=2, k_recall=2),
        InvalidInputError,
        "relevant.indptr:",
    ),
    "indptr far out of range (CoCoA+ partition)": (
        lambda: fit_cocoa(None, TopKSVC(), [_malformed_csr(X[:20], 3, 10**6), X[20:]], [Y3[:20], Y3[20:]]),
        InvalidInputError,
        "X.indptr:",
    ),
    "local_epochs beyond any use": (
        lambda: fit_cocoa(None, TopKSVC(), [X[:20], X[20:]], [Y3[:20], Y3[20:]], local_epochs=1e9),
        InvalidInputError,
        "local_epochs:",
    ),
    "gather_dual not a bool": (
        lambda: fit_cocoa(None, TopKSVC(), [X[:20], X[20:]], [Y3[:20], Y3[20:]], gather_dual="no"),
        InvalidInputError,
        "gather_dual:",
    ),
    "M3L rows whose squared norm overflows": (lambda: M3L().fit(X * 1e300, LABELS), InvalidInputError, "X:"),
    "path lambdas of booleans": (lambda: tracenorm_path(X, Y3, [True]), InvalidInputError, "lambdas_trace:"),
    "path given lambda_trace": (
        lambda: tracenorm_path(X, Y3, [1e-2], lambda_trace=5),
        InvalidInputError,
        "lambda_trace:",
    ),
    "path validation of another length": (
        lambda: tracenorm_path(X, Y3, [1e-2], validation_data=(X, Y3[:10])),
        InvalidInputError,
        "validation_data:",
    ),
    "M3L kernel values beyond float32": (
        lambda: M3L(kernel="precomputed").fit((X @ X.T) * 1e39, LABELS),
        NoSolutionError,
        "M3L:",
    ),
    "M3L SMO on a huge X": (lambda: M3L(solver="smo").fit(X * 1e20, LABELS), NoSolutionError, "M3L:"),
    "fit_intercept not a bool (M3L on CoCoA+)": (
        lambda: fit_cocoa(None, M3L(fit_intercept="no"), [X[:20], X[20:]], [LABELS[:20], LABELS[20:]]),
        InvalidInputError,
        "fit_intercept:",
    ),
    "RankmaxRanker scores beyond float32": (
        lambda: RankmaxRanker(random_state=0).fit(X, LABELS).decision_function(X[:2] * 1e300),
        InvalidInputError,
        "X:",
    ),
    "PatMat with a vanishing scale": (lambda: PatMat(scale=1e-200).fit(X, Y2), NoSolutionError, "PatMat:"),
    "simplex inequality not a bool": (
        lambda: projections.simplex(np.ones(4), inequality="no"),
        InvalidInputError,
        "inequality:",
    ),
    "topk_hinge variant not a string": (
        lambda: losses.topk_hinge(np.ones(3), 0, 1, variant=3),
        InvalidInputError,
        "variant:",
    ),
    "softmax loss overflows": (
        lambda: losses.softmax_loss(np.array([-1e308, 1e308]), 0),
        NoSolutionError,
        "softmax_loss:",
    ),
    "inf score in a row without relevant items": (
        lambda: recsys.evaluate_ranking(
            np.array([[0.1, 0.8, 0.1], [np.inf, 0.7, 0.5]]), np.array([[0, 1, 0], [0, 0, 0]]), k_ap=2, k_recall=2
        ),
        InvalidInputError,
        "scores:",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_raises_naming_the_argument(case):
    call, error, start = BAD[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.raises(error) as caught:
            call()
    assert str(caught.value).startswith(start), str(caught.value)


def test_trace_norm_on_huge_features_leaves_zero():
    # The singular pair of a gradient with entries ~1e100 came back as σ = 0, so W = 0
    # "converged"; the same data at 1e6 shows W = 0 is far from optimal.
    reference = TraceNormLogisticRegression(random_state=0).fit(X * 1e6, Y3).objective_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        huge = TraceNormLogisticRegression(random_state=0).fit(X * 1e100, Y3)
    zero = TraceNormLogisticRegression(lambda_trace=10.0).fit(X, Y3).objective_  # W = 0, b = log priors
    assert huge.objective_ < zero - 0.1
    assert huge.objective_ == pytest.approx(reference, rel=1e-3)


def test_path_validation_labels_as_a_column():
    flat = tracenorm_path(X, Y3, [1e-2], validation_data=(X, Y3), random_state=0)[0].validation_topk
    column = tracenorm_path(X, Y3, [1e-2], validation_data=(X, Y3.reshape(-1, 1)), random_state=0)[0].validation_topk
    assert column == flat


class TestCompressedMatrix:
    def setup_method(self) -> None:
        self.quantizer = ProductQuantizer(n_subspaces=2, n_bits=2, random_state=0).fit(X)
        self.codes = self.quantizer.compress(X)

    def test_operands_must_be_finite(self):
        for call in (lambda: self.codes.dot(np.full((4, 1), np.nan)), lambda: self.codes.tdot(np.full(40, np.inf))):
            with pytest.raises(InvalidInputError, match="^B:"):
                call()
        with pytest.raises(InvalidInputError, match="^A:"):
            self.codes.rdot(np.ones((2, 39)))

    def test_codes_go_stale_when_the_quantizer_is_refitted(self):
        before = self.codes.decode()
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(self.codes)).decode(), before)
        self.quantizer.set_params(n_bits=3).fit(X)
        for call in (self.codes.decode, lambda: self.codes.dot(np.ones(4)), lambda: self.codes[1:3]):
            with pytest.raises(InvalidInputError, match="^quantizer:"):
                call()

    def test_training_rows_must_fit_float32_codebooks(self):
        with pytest.raises(InvalidInputError, match="^X:"):
            ProductQuantizer(n_subspaces=2, n_bits=2).fit(X * 1e200)


def test_box_simplex_radius_within_rounding_of_the_free_sum():
    # The branch test sums the free solution from prefix sums that carry the rounding of
    # a large entry: a radius just below that sum picked "Σp ≤ r inactive", whose output
    # then summed above r (review of the output checks). Now Σp = r takes over.
    rng = np.random.RandomState(1)
    for _ in range(2000):
        x = rng.normal(size=4)
        x[0] = 10 ** rng.uniform(2, 9)
        r = float(np.clip(x, 0.0, 1.0).sum()) * (1 + rng.uniform(-1e-9, 1e-9))
        p = projections.box_simplex(x, hi=1.0, r=r)
        assert p.sum() <= r * (1 + 1e-12) and np.all((p >= 0) & (p <= 1.0))


def test_simplex_slack_does_not_overflow_next_to_the_largest_float():
    # The candidate bound x_max − r − 4ε(|x_max| + r) overflowed to −∞ for
    # x_max = 1.8e308, r = 1e300, and the threshold came out −∞ (an inf output).
    top = np.finfo(np.float64).max
    np.testing.assert_array_equal(projections.simplex(np.array([top, 0.0]), 1e300), [1e300, 0.0])
    np.testing.assert_array_equal(projections.simplex(np.array([top, top, -top]), 1e300), [5e299, 5e299, 0.0])


@pytest.mark.parametrize("value", [1e154, 1e300])
@pytest.mark.parametrize(
    "project",
    [
        lambda x: projections.box_simplex(x, hi=0.5, r=1.0),
        lambda x: projections.box_simplex(x, hi=1.0, r=1e-300, rho=1.0),
        lambda x: projections.capped_simplex(x, 2.0),
        lambda x: projections.topk_simplex(x, 2, r=1.0, rho=1.0),
    ],
)
def test_long_rows_of_equal_huge_entries_raise_or_answer(project, value):
    # Long rows take the block-maxima filter; with every entry equal to x, the bound
    # x − cap rounds to x and no entry lies above it: the empty candidate set indexed
    # an empty slice (a panic). Now the solve falls back to the whole row, which
    # answers or raises NoSolutionError (the ulp limitation documented in prefix.rs).
    x = np.full(100, value)
    try:
        p = project(x)
    except NoSolutionError:
        return
    assert np.all(np.isfinite(p)) and np.all(p >= 0)


@pytest.mark.parametrize("smoothing", [1e-14, 1e-17])
def test_topk_svc_smoothing_below_the_rounding_of_the_scores(smoothing):
    # h/γ was projected onto radius 1 even when γ is below the scores' rounding: the
    # primal came out wrong, and raises since the projections check their output.
    data, y = RNG.normal(size=(150, 6)), np.arange(150) % 10
    smoothed = TopKSVC(k=3, smoothing=smoothing, random_state=0).fit(data, y)
    plain = TopKSVC(k=3, random_state=0).fit(data, y)
    assert smoothed.primal_objective_ == pytest.approx(plain.primal_objective_, rel=1e-6)


@pytest.mark.parametrize(
    "argv",
    [
        ["kernels", "--rows", "0"],
        ["kernels", "--labels", "3"],
        ["kernels", "--rows", "1000000", "--labels", "100000"],
        ["kernels", "--seed", "-1"],
        ["demo", "--C", "-1"],
        ["demo", "--C", "nan"],
        ["demo", "--max-train", "-15900"],
        ["demo", "--plot", "/nonexistent/dir/x.png"],
        ["demo", "--plot", "."],
        ["demo", "--max-train", "abc"],
    ],
)
def test_cli_refuses_bad_arguments_before_any_work(argv, capsys):
    # These printed a traceback (exit 1), some after training six models, or trained on
    # X[:-15900] without a word.
    from toprank.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert "error: " in capsys.readouterr().err


def test_cli_kernels_on_a_batch_that_misses_labels_and_plot_names(capsys):
    # 100 rows cannot draw all 1,000 labels: top_k_accuracy refused the batch.
    from toprank.cli import _png_path, main

    assert main(["kernels", "--rows", "100", "--labels", "1000"]) == 0
    # matplotlib writes "curves" as "curves.png": the reported path must be that one.
    assert _png_path("curves") == "curves.png" and _png_path("curves.svg") == "curves.svg"
    with pytest.raises(SystemExit):
        main(["kernels", "--rows", "abc"])
    assert "invalid integer value: 'abc'" in capsys.readouterr().err


def test_a_cache_that_cannot_be_written_warns_and_the_data_still_load(tmp_path, monkeypatch):
    from toprank import datasets
    from toprank.datasets import _cache

    target = tmp_path / "letter.npz"

    def read_only(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path))

    monkeypatch.setattr(_cache.tempfile, "mkstemp", read_only)
    with pytest.warns(RuntimeWarning, match="could not write the cache"):
        _cache.save_npz(target, "sha", data=np.zeros(3))
    assert not target.exists()
    monkeypatch.setenv("TOPRANK_DATA", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(InvalidInputError, match="^TOPRANK_DATA:"):
        datasets.get_data_home()


def test_dataset_loaders_check_their_arguments(tmp_path):
    # download='no' and binary='yes' acted as True (a download started); data_home=123
    # raised pathlib's TypeError, a file as data_home a FileExistsError.
    from toprank import datasets

    for call, start in (
        (lambda: datasets.load_letter(download="no"), "download:"),
        (lambda: datasets.load_letter(data_home=123), "data_home:"),
        (lambda: datasets.get_data_home(tmp_path / "file"), "data_home:"),
        (lambda: datasets.load_wine_quality_red(binary="yes"), "binary:"),
    ):
        (tmp_path / "file").write_text("not a directory")
        with pytest.raises(InvalidInputError, match=f"^{start}"):
            call()


@pytest.mark.parametrize(
    "make, y",
    [
        (lambda: TopKSVC(random_state=0), Y3),
        (lambda: M3L(random_state=0), LABELS),
        (lambda: TopPush(kernel="linear"), Y2),
    ],
)
def test_a_refit_with_another_kernel_drops_the_old_kernels_attributes(make, y):
    model = make().fit(X, y)
    assert hasattr(model, "coef_")
    model.set_params(kernel="rbf").fit(X, y)
    assert not hasattr(model, "coef_") and hasattr(model, "support_vectors_")
    model.set_params(kernel="precomputed").fit(X @ X.T, y)
    assert not hasattr(model, "support_vectors_")


# Each error is raised after validation has set n_features_in_ (and classes_, gamma).
@pytest.mark.parametrize(
    "make, y, late_error",
    [
        (lambda: TopKSVC(kernel="rbf", random_state=0), Y3, dict(cache_size=-1.0)),
        (lambda: M3L(kernel="rbf", random_state=0), LABELS, dict(kernel="poly", degree=2**32)),
        (lambda: TopPush(kernel="rbf"), Y2, dict(kernel="poly", degree=2**32)),
        (lambda: TraceNormLogisticRegression(), Y3, dict(verbose=-1)),
    ],
)
def test_a_failed_refit_leaves_the_previous_model(make, y, late_error):
    # Validation had set n_features_in_, classes_ and gamma (from the new X) before the
    # error (or a Ctrl-C in the solve): the old coefficients then met the new gamma.
    model = make().fit(X, y)
    params, before = model.get_params(), model.decision_function(X)
    with pytest.raises(InvalidInputError):
        model.set_params(**late_error).fit(np.hstack([X, X]) * 10.0, np.asarray(y)[::-1])
    assert model.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(model.set_params(**params).decision_function(X), before)


@pytest.mark.parametrize("chunk", [7, 1 << 18])
def test_row_sq_norms_of_sparse_rows_match_the_dense_ones_across_chunks(chunk, monkeypatch):
    # Sparse X is squared in runs of rows (no copy of X, which X.multiply(X) made at the
    # end of every fit that did not converge); empty rows and runs of one row included.
    from toprank import _limits

    monkeypatch.setattr(_limits, "_SQUARED_AT_ONCE", chunk)
    rng = np.random.default_rng(3)
    for shape, density in [((3000, 50), 0.3), ((10, 10), 0.0), ((1, 5), 1.0), ((400, 3), 0.5)]:
        X = sp.random(*shape, density=density, format="csr", random_state=rng)
        dense = X.toarray()
        np.testing.assert_allclose(_limits.row_sq_norms(X), (dense * dense).sum(axis=1), rtol=1e-13)
        np.testing.assert_allclose(_limits.row_sq_norms(dense), (dense * dense).sum(axis=1), rtol=1e-13)
