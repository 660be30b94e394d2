"""What a user or packager reads besides the code: version, metadata, licence, citation.

The version lives in one place, Cargo.toml: maturin gives it to the wheel's metadata and
the extension compiles it into ``toprank.__version__``; CITATION.cff and CHANGELOG.md must
name the same release.
"""

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import toprank

ROOT = Path(__file__).resolve().parents[1]


def cargo_version() -> str:
    return str(tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))["package"]["version"])


def test_the_version_is_cargos_everywhere() -> None:
    version = cargo_version()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert toprank.__version__ == version
    assert importlib.metadata.version("toprank") == version
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(version)}$", citation, flags=re.M), "CITATION.cff's version"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, flags=re.M)


def test_installed_metadata_is_complete() -> None:
    meta = importlib.metadata.metadata("toprank")
    assert meta["Name"] == "toprank" and meta["Requires-Python"] == ">=3.11"
    assert meta["License-Expression"] == "MIT"
    assert meta["Author"] and meta["Keywords"] and meta["Summary"]
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers and "Programming Language :: Rust" in classifiers
    assert any(r.startswith("numpy") for r in meta.get_all("Requires-Dist") or [])
    # The licence travels with the installed package.
    files = importlib.metadata.files("toprank") or []
    assert any(f.name == "LICENSE" for f in files), "LICENSE is not in the installed distribution"


def test_citation_cites_the_papers() -> None:
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert citation.startswith("cff-version: 1.2.0\n")
    for title in (
        "Top-k Multiclass SVM",
        "Nonlinear classifiers for ranking problems based on kernelized SVM",
        "Large-scale image classification with trace-norm regularization",
        "Rankmax: An Adaptive Projection Alternative to the Softmax Function",
        "Efficient max-margin multi-label classification with applications to zero-shot learning",
        "Accelerated proximal stochastic dual coordinate ascent",
        "Adding vs. Averaging in Distributed Primal-Dual Optimization",
    ):
        assert title in citation, title


def test_version_flag() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "toprank", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"toprank {toprank.__version__}"
