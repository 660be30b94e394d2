"""The marked sections of BENCHMARKS.md that the comparison scripts write."""

from __future__ import annotations

import os
from pathlib import Path


def write_section(path: str, begin: str, end: str, text: str) -> None:
    """Replaces the part of `path` from `begin` to `end` by `text` (which carries both
    markers), appends it when absent, and creates the file when it does not exist."""
    doc = Path(path).read_text(encoding="utf-8") if os.path.exists(path) else "# toprank benchmarks\n"
    start, stop = doc.find(begin), doc.find(end)
    if start != -1 and stop > start:
        doc = doc[:start] + text.rstrip("\n") + doc[stop + len(end):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    Path(path).write_text(doc if doc.endswith("\n") else doc + "\n", encoding="utf-8")
