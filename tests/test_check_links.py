"""docs/check_links.py, the link check of `make docs`, finds what it is meant to find."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "check_links.py"


@pytest.fixture(scope="module")
def check_links() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_links", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _site(root: Path, pages: dict[str, str]) -> Path:
    for name, body in pages.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    return root


def test_a_consistent_site_passes(check_links: ModuleType, tmp_path: Path) -> None:
    root = _site(
        tmp_path,
        {
            "index.html": '<a href="api/a.html#fit">fit</a> <a href="#top">top</a> <span id="top"></span>'
            '<img src="_static/logo.png"> <a href="https://example.org/x">out</a> <a href="api/">api</a>',
            "api/a.html": '<dt id="fit"></dt><a href="../index.html">home</a>',
            "api/index.html": "",
            "_static/logo.png": "",
        },
    )
    broken, external = check_links.check(root)
    assert broken == []
    assert set(external) == {"https://example.org/x"}


def test_missing_files_anchors_and_email_links_are_reported(check_links: ModuleType, tmp_path: Path) -> None:
    root = _site(
        tmp_path,
        {
            "index.html": '<a href="gone.html">a</a> <a href="api/a.html#nowhere">b</a> <a href="#self">c</a>'
            '<a href="mailto:AP@10">d</a> <a href="../outside.html">e</a>',
            "api/a.html": '<dt id="fit"></dt>',
        },
    )
    broken, _ = check_links.check(root)
    assert len(broken) == 5, broken
    for needle in ("no file gone.html", "no anchor #nowhere", "no anchor #self", "e-mail", "leaves"):
        assert any(needle in message for message in broken), (needle, broken)


def test_rust_and_static_pages_are_not_walked(check_links: ModuleType, tmp_path: Path) -> None:
    root = _site(
        tmp_path,
        {
            "index.html": '<a href="rust/toprank/index.html">crate</a>',
            "rust/toprank/index.html": '<a href="../missing.html">rustdoc</a>',
            "_static/webpack-macros.html": '<a href="{{ pathto() }}">template</a>',
        },
    )
    assert check_links.check(root)[0] == []
    (root / "rust" / "toprank" / "index.html").unlink()
    assert len(check_links.check(root)[0]) == 1
