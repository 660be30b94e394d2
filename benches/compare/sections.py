"""The marked sections of BENCHMARKS.md that the comparison scripts write, the lines
every section shares (machine, PASS/FAIL verdicts), and the best-of-repeats timer."""

from __future__ import annotations

import os
import platform
import shlex
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_section(path: str, begin: str, end: str, text: str) -> None:
    """Replaces the part of `path` from `begin` to `end` by `text` (which carries both
    markers), appends it when absent, and creates the file when it does not exist."""
    doc = Path(path).read_text(encoding="utf-8") if os.path.exists(path) else "# toprank benchmarks\n"
    start, stop = doc.find(begin), doc.find(end)
    if start != -1 and stop > start:
        doc = doc[:start] + text.rstrip("\n") + doc[stop + len(end) :]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    Path(path).write_text(doc if doc.endswith("\n") else doc + "\n", encoding="utf-8")


def publish(text: str, failures: list[str], path: str | None, begin: str, end: str) -> int:
    """Prints a script's section and its failed checks, writes the section into `path`
    (if given), and returns the script's exit status: 1 when a check failed."""
    print(text)
    for failure in failures:
        print(f"CHECK FAILED: {failure}", file=sys.stderr)
    if path:
        write_section(path, begin, end, text)
    return 1 if failures else 0


def command_line() -> str:
    """How this script was run: the interpreter relative to the working directory (when
    below it) and the arguments, quoted for a shell."""
    relative = os.path.relpath(sys.executable)
    return shlex.join([sys.executable if relative.startswith("..") else relative, *sys.argv])


def verdict(ok: bool, target: str) -> str:
    """PASS/FAIL against a target written out, e.g. ``verdict(r <= 1, "<= 1.0")``."""
    return f"{'PASS' if ok else 'FAIL'} ({target})"


def machine() -> str:
    """The CPU model, the logical CPU count and the load average now."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return f"{model}, {os.cpu_count()} logical CPUs, load average {load} at the start"


def timed(fit: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """(the best wall time of ``repeats`` calls of ``fit``, that call's result), warnings
    silenced (a fit stopped short is reported by the caller from the result)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fit()
        elapsed = time.perf_counter() - t
        if elapsed < best:
            best, out = elapsed, res
    return best, out
