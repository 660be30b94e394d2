"""What the estimators share (toprank._estimator) and the layout of the facade: no module
imports another's private names, predict_topk's one default, the parameters scikit-learn
sees, and the data set loaders' shared documentation."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

import toprank
from toprank import M3L, PatMat, RankmaxRanker, TopKSVC, TopPush, TopPushK, datasets
from toprank._estimator import ClassScores
from toprank.exceptions import InvalidInputError
from toprank.pq import ProductQuantizer

PACKAGE = Path(toprank.__file__).parent


def _private_imports(path: Path) -> list[str]:
    """``from toprank.<public module> import _name`` statements of a module: private names
    taken from a module that is not itself private (``_core``, ``_validation``...); a
    package's own private submodules may be imported."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toprank."):
            module = node.module or ""
            if module.rsplit(".", 1)[-1].startswith("_"):
                continue
            folder = PACKAGE.joinpath(*module.split(".")[1:])
            found += [
                f"{module}.{a.name}"
                for a in node.names
                if a.name.startswith("_") and not (folder / f"{a.name}.py").is_file()
            ]  # a private submodule
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_private_names_of_another(path: Path) -> None:
    # attop, m3l and ranker imported svm._choice / svm._kernel_gamma, the distributed
    # driver m3l._prior; shared code lives in the private modules instead.
    if path.name == "tracenorm.py":
        pytest.skip("rewritten elsewhere")
    assert _private_imports(path) == []


class _Scores(ClassScores):
    """A model without a k of its own: fixed scores for three classes."""

    classes_ = np.array(["a", "b", "c"])

    def _scores(self, X: object) -> np.ndarray:
        return np.array([[0.1, 0.7, 0.2], [0.5, 0.5, 0.0]])


def test_predict_topk_defaults_to_the_trained_k_and_asks_for_one_otherwise() -> None:
    model = _Scores()
    np.testing.assert_array_equal(model.predict_topk(None, k=2), [["b", "c"], ["a", "b"]])
    with pytest.raises(InvalidInputError, match="^k: _Scores is not trained for a k; pass k"):
        model.predict_topk(None)
    with pytest.raises(InvalidInputError, match="^k: must be <= n_classes = 3"):
        model.predict_topk(None, k=4)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 4)), np.arange(60) % 4
    svc = TopKSVC(k=2, C=0.1, random_state=0).fit(X, y)
    assert svc.predict_topk(X).shape == (60, 2)
    np.testing.assert_allclose(_Scores().predict_proba(None).sum(axis=1), 1.0)


@pytest.mark.parametrize(
    "estimator",
    [
        TopKSVC(k=2, C=3.0),
        M3L(C=0.5, kernel="rbf"),
        RankmaxRanker(k=3),
        ProductQuantizer(4, n_bits=4),
        TopPushK(K=3, C=2.0),
        TopPush(kernel="linear"),
        PatMat(tau=0.1),
    ],
    ids=lambda e: type(e).__name__,
)
def test_parameters_are_stored_as_given_and_survive_clone(estimator: object) -> None:
    params = estimator.get_params()  # type: ignore[attr-defined]
    assert clone(estimator).get_params() == params
    assert all(getattr(estimator, name) is value for name, value in params.items())


def test_ranking_at_top_own_parameter_comes_first_the_rest_by_keyword() -> None:
    assert TopPushK(3).K == 3 and PatMat(0.2).tau == 0.2
    assert list(TopPushK().get_params()) == sorted(["K", *TopPush().get_params()])
    with pytest.raises(TypeError):
        TopPushK(3, 2.0)  # type: ignore[misc]


@pytest.mark.parametrize("name", [n for n in datasets.__all__ if n.startswith("load_") and n != "load_fashion_mnist"])
def test_archive_loaders_document_the_cache_parameters_and_errors(name: str) -> None:
    doc = getattr(datasets, name).__doc__
    for text in (
        "Parameters\n    ----------",
        "data_home : str or path-like",
        "download : bool, default True",
        "Raises\n    ------",
        "FileNotFoundError",
        "ChecksumError",
        "DownloadError",
    ):
        assert text in doc, (name, text)


def test_datasets_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toprank.datasets", "fetch", "mnist"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "unknown data sets ['mnist']" in done.stderr
