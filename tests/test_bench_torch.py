"""The toprank.torch benchmark (benches/compare/torch_ops.py) runs in its quick mode.

The script checks, before it times anything, that toprank's and entmax's sparsemax agree,
that each loss equals the NumPy API's, and that its PyTorch smooth top-k loss equals the
paper's definition summed over all k-subsets and a one-class-at-a-time recursion; any
failed check makes it exit 1. The quick mode (batch 16 × {50, 300} classes, 3 timed
calls) keeps those checks and takes a few seconds; it does not judge its timings
against the targets (at that size they measure the call overhead).
"""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("entmax")

SCRIPT = Path(__file__).resolve().parents[1] / "benches" / "compare" / "torch_ops.py"


def test_quick_run_passes_its_checks(tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    out.write_text("# toprank benchmarks\n\n<!-- other:begin -->\nkept\n<!-- other:end -->\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--write", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert "<!-- other:begin -->\nkept\n<!-- other:end -->" in text
    section = text[text.index("<!-- torch:begin -->") : text.index("<!-- torch:end -->")]
    for what in ("`sparsemax`", "`sparsemax_loss`", "`rankmax_loss` (k = 1)", "`topk_hinge` (k = 5, alpha, γ = 1)"):
        assert section.count(f"| {what} |") == 4, what  # 2 dtypes × 2 sizes
