"""Check every internal link of the built HTML documentation (run by ``make docs``).

Walks the HTML pages under the build directory and fails when an ``href``, ``src`` or
form ``action`` points to a file that does not exist or to an ``#anchor`` that the
target page does not define. External links (http, https, mailto) are listed, not
fetched: the build is offline; an e-mail link without a domain (docutils makes one of
``AP@10``) counts as broken. Pages under ``rust/`` (rustdoc's own output) and ``_static/``
are not walked, but links into them from the Sphinx pages are checked like any other.

Usage: ``python docs/check_links.py docs/_build/html [--show-external]``
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

LINK_ATTRIBUTES = {"href", "src", "action"}
EXTERNAL_SCHEMES = {"http", "https", "mailto", "ftp"}
# Not walked: rustdoc's pages and the theme's assets (_static holds templates such as
# webpack-macros.html, not pages).
EXCLUDED = ("rust", "_static")
# Not links to files: inline data and script handlers.
IGNORED_SCHEMES = {"data", "javascript", "blob"}


class _Page(HTMLParser):
    """The anchors a page defines and the links it contains."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: set[str] = set()
        self.links: list[tuple[str, int]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (name == "name" and tag == "a"):
                self.anchors.add(value)
            elif name in LINK_ATTRIBUTES and not (tag == "link" and ("rel", "canonical") in attrs):
                self.links.append((value, self.getpos()[0]))


def _parse(path: Path, cache: dict[Path, _Page]) -> _Page:
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def check(root: Path, exclude: tuple[str, ...] = EXCLUDED) -> tuple[list[str], dict[str, set[str]]]:
    """The broken internal links under ``root`` (one message each) and the external ones by URL."""
    root = root.resolve()
    cache: dict[Path, _Page] = {}
    broken: list[str] = []
    external: dict[str, set[str]] = defaultdict(set)
    pages = sorted(p for p in root.rglob("*.html") if not any(p.relative_to(root).parts[0] == ex for ex in exclude))
    if not pages:
        raise SystemExit(f"no HTML pages under {root}: build the documentation first")
    for page_path in pages:
        where = page_path.relative_to(root)
        for link, line in _parse(page_path, cache).links:
            parts = urlsplit(link)
            if parts.scheme == "mailto" and "." not in parts.path.rpartition("@")[2]:
                # docutils makes an e-mail link of text such as AP@10; conf.py turns those back
                # into text, so one here comes from elsewhere (raw HTML, a theme).
                broken.append(f"{where}:{line}: {link!r} is an accidental e-mail link (write ``...``)")
                continue
            if parts.scheme in EXTERNAL_SCHEMES or link.startswith("//"):
                external[link].add(str(where))
                continue
            if parts.scheme in IGNORED_SCHEMES:
                continue
            if parts.scheme:
                broken.append(f"{where}:{line}: unknown scheme in {link!r}")
                continue
            if parts.path:
                target = (page_path.parent / unquote(parts.path)).resolve()
            else:
                target = page_path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_relative_to(root):
                broken.append(f"{where}:{line}: {link!r} leaves the documentation")
                continue
            if not target.is_file():
                broken.append(f"{where}:{line}: {link!r}: no file {target.relative_to(root)}")
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html" and fragment not in _parse(target, cache).anchors:
                broken.append(f"{where}:{line}: {link!r}: no anchor #{fragment} in {target.relative_to(root)}")
    return broken, external


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the HTML build directory, e.g. docs/_build/html")
    parser.add_argument("--show-external", action="store_true", help="list every external URL")
    args = parser.parse_args(argv)
    broken, external = check(args.root)
    n_pages = sum(1 for p in args.root.rglob("*.html") if p.relative_to(args.root).parts[0] not in EXCLUDED)
    print(f"check_links: {n_pages} pages, {len(external)} external URLs (not fetched)")
    if args.show_external:
        for url in sorted(external):
            print(f"  external: {url}  ({len(external[url])} pages)")
    if broken:
        print(f"check_links: {len(broken)} broken internal links:", file=sys.stderr)
        for message in broken:
            print(f"  {message}", file=sys.stderr)
        return 1
    print("check_links: no broken internal links")
    return 0


if __name__ == "__main__":
    sys.exit(main())
