"""The README's Python quick start runs as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks, "README has no python block"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})


def test_kernels_demo_runs() -> None:
    from toprank.cli import main

    assert main(["kernels", "--rows", "2000", "--labels", "100"]) == 0


def test_demo_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`make demo`'s job on a subsample of Letter: table, gains and the PNG plot."""
    from toprank.cli import main
    from toprank.datasets import load_letter

    try:
        load_letter()
    except (OSError, RuntimeError) as exc:  # no registry access on this machine
        pytest.skip(f"UCI Letter unavailable: {exc}")
    plot = tmp_path / "letter.png"
    assert main(["demo", "--max-train", "3000", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    for name in ("TopKSVC(k=5, alpha)", "LinearSVC(crammer_singer)", "LogisticRegression"):
        assert name in out
    assert plot.stat().st_size > 10_000
