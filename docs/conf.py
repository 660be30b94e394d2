"""Sphinx configuration of the toprank documentation (built by ``make docs``).

The build is offline and strict: ``sphinx-build -W --keep-going -n`` turns every warning,
including each unresolved cross-reference (``nitpicky``), into an error. There is no
intersphinx (it would fetch inventories from the network), so names from NumPy, SciPy,
scikit-learn, Dask and faiss are written as literals in the pages or listed in
``nitpick_ignore`` below. MathJax is served from a local copy installed by the ``docs``
dependency group (see ``_copy_mathjax``), so math renders without a network.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import shutil
import sys
from pathlib import Path
from typing import Any

# Figures from the gallery, the plot directive and the doctests are drawn without a display.
import matplotlib

matplotlib.use("Agg")

import toprank  # noqa: E402

# -- Project -----------------------------------------------------------------------------

project = "toprank"
author = "The toprank developers"
copyright = "The toprank developers"
version = toprank.__version__
release = toprank.__version__

# -- General -----------------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "matplotlib.sphinxext.plot_directive",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build"]

# Every reference must resolve (the build runs with -n -W): a typo in a See Also or a
# :func: role fails the build instead of rendering as plain text.
nitpicky = True
# Names outside toprank cannot resolve (no intersphinx: the build is offline): the external
# packages and the standard library whatever the role (py:class, py:func, py:mod, ...), and
# the builtins (int, ValueError, ...).
_EXTERNAL = ("numpy", "np", "scipy", "sklearn", "dask", "distributed", "faiss", "matplotlib", "pandas", "torch")
nitpick_ignore_regex = [
    (r"py:.*", rf"({'|'.join(sorted({*_EXTERNAL, *sys.stdlib_module_names}))})(\..*)?"),
    (r"py:.*", rf"({'|'.join(name for name in dir(builtins) if not name.startswith('_'))})"),
]

# -- autodoc / autosummary / numpydoc ----------------------------------------------------

autosummary_generate = True
autosummary_imported_members = False
# Types are written in the numpydoc Parameters / Returns sections; the annotations in the
# signatures would repeat them and add references that cannot resolve offline.
autodoc_typehints = "none"
autodoc_member_order = "bysource"
autodoc_default_options = {"inherited-members": False}
# The page's table of contents names a method "fit()", not "TopKSVC.fit()".
toc_object_entries_show_parents = "hide"

# Class pages list their methods through the autosummary template (_templates/autosummary).
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

# The public modules: one API page each (api/<module>.rst); tests/test_docstrings.py checks
# the docstrings of the same names with the same rules.
PUBLIC_MODULES = (
    "toprank",
    "toprank.svm",
    "toprank.multilabel",
    "toprank.m3l",
    "toprank.attop",
    "toprank.ranker",
    "toprank.tracenorm",
    "toprank.pq",
    "toprank.projections",
    "toprank.losses",
    "toprank.torch",
    "toprank.metrics",
    "toprank.scoring",
    "toprank.recsys",
    "toprank.distributed",
    "toprank.datasets",
    "toprank.exceptions",
    "toprank.plotting",
)


def public_names(module_name: str) -> list[str]:
    """The names a public module exports: its ``__all__`` (an empty list without one)."""
    module = importlib.import_module(module_name)
    return list(getattr(module, "__all__", []))


def documented_members(cls: type) -> list[tuple[str, str]]:
    """The public methods and properties of ``cls`` written in toprank, with their autodoc kind.

    Members inherited from scikit-learn or Python (``get_params``, ``set_output``,
    ``with_traceback``), the metadata-request methods scikit-learn generates
    (``set_fit_request``), NamedTuple fields and class-level parameter defaults are left
    out: the first are documented upstream, the last two in the class's own Attributes
    or Parameters section.
    """
    members = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        owner = next(klass for klass in cls.__mro__ if name in vars(klass))
        if not owner.__module__.startswith("toprank"):
            continue
        raw = vars(owner)[name]
        if isinstance(raw, property):
            members.append((name, "property"))
        elif isinstance(raw, (staticmethod, classmethod)) or inspect.isfunction(raw):
            members.append((name, "method"))
        elif inspect.isfunction(getattr(raw, "fn", None)):
            # scikit-learn's available_if (predict_proba of the SDCA classifiers).
            members.append((name, "method"))
    return members


def public_classes() -> dict[str, type]:
    """Every class exported by a public module, under each of its documented full names."""
    classes = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module_name) or [n for n in vars(module) if not n.startswith("_")]:
            obj = getattr(module, name)
            if inspect.isclass(obj) and obj.__module__.startswith("toprank"):
                classes[f"{module_name}.{name}"] = obj
    return classes


autosummary_context = {
    "toprank_members": {full: documented_members(cls) for full, cls in public_classes().items()},
}


# -- Math --------------------------------------------------------------------------------

# MathJax 2.7 shipped inside the PyPI package jupyter-server-mathjax (the `docs` group),
# copied into _static/mathjax at the start of every HTML build (see _copy_mathjax). That
# copy holds the combined configuration TeX-AMS-MML_HTMLorMML-full.js (TeX input and the
# HTML-CSS output in one file) and the STIX-Web web fonts only: the configuration names
# both. (Sphinx refuses a ?config= query in a local script path, so it is set here.)
mathjax_path = "mathjax/MathJax.js"
mathjax2_config = {
    "config": ["TeX-AMS-MML_HTMLorMML-full.js"],
    "jax": ["input/TeX", "output/HTML-CSS"],
    "extensions": ["tex2jax.js"],
    "TeX": {"extensions": ["AMSmath.js", "AMSsymbols.js", "noErrors.js", "noUndefined.js"]},
    "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]], "processEscapes": True},
    "HTML-CSS": {
        "availableFonts": [],
        "webFont": "STIX-Web",
        "imageFont": None,
        "preferredFont": None,
        "linebreaks": {"automatic": True},
    },
    "showMathMenu": False,
    "messageStyle": "none",
}


def _mathjax_source() -> Path:
    """The directory holding MathJax.js in the installed jupyter-server-mathjax package."""
    try:
        import jupyter_server_mathjax
    except ImportError as error:
        raise RuntimeError(
            "the documentation serves MathJax from the jupyter-server-mathjax package: "
            "install the docs dependency group (`make docs` does: pip install --group docs)"
        ) from error
    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (source / "MathJax.js").is_file():
        raise RuntimeError(f"jupyter-server-mathjax is installed but {source / 'MathJax.js'} is missing")
    return source


def _copy_mathjax(app: Any) -> None:
    if app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    if (target / "MathJax.js").is_file():
        return
    # The parts an HTML-only configuration loads: no localization (English is built in)
    # and no unpacked sources.
    shutil.copytree(
        _mathjax_source(),
        target,
        ignore=shutil.ignore_patterns("localization", "unpacked", "*.md"),
        dirs_exist_ok=True,
    )


# -- Markdown (MyST) ---------------------------------------------------------------------

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
# Anchors for the headings of the included Markdown files (BENCHMARKS.md, ARCHITECTURE.md),
# so that links such as performance.html#product-quantization resolve.
myst_heading_anchors = 3

# -- matplotlib plot directive (figures in the user guide, drawn at build time) ----------

plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]
plot_pre_code = "import numpy as np\nimport matplotlib.pyplot as plt\nimport toprank\n"
plot_rcparams = {"figure.figsize": (6.0, 3.6), "savefig.bbox": "tight"}

# -- sphinx-gallery ----------------------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # Only plot_*.py files are examples; each is executed at build time.
    "filename_pattern": r"/plot_",
    "plot_gallery": "True",
    # An example that raises fails the build (the docs must not show a stale or broken figure).
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib",),
    # "Examples using X" on every API page (api/generated is a build output).
    "doc_module": ("toprank",),
    "backreferences_dir": "api/generated/backreferences",
    "reference_url": {"toprank": None},
    "remove_config_comments": True,
    "download_all_examples": False,
    "show_memory": False,
    "min_reported_time": 1,
    "write_computation_times": True,
}

# -- HTML --------------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"toprank {release}"
html_static_path = ["_static"]
html_css_files = ["toprank.css"]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
html_theme_options = {
    # No external icons or analytics: the site works from a local directory.
    "icon_links": [],
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "header_links_before_dropdown": 8,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
# Single pages have no section to navigate: no empty left sidebar.
html_sidebars = {page: [] for page in ("index", "performance", "results", "architecture", "rust")}


def _resolve_reexport(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve a reference to a re-exported name (``toprank.TopKSVC``) to its documented page.

    Each object is documented once, under the module that defines it
    (``toprank.svm.TopKSVC``); docstrings may still name it as users import it.
    """
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"]
    module = node.get("py:module") or "toprank"
    for candidate in (target, f"{module}.{target}", f"toprank.{target}"):
        obj = _lookup(candidate)
        if obj is None or not hasattr(obj, "__qualname__"):
            continue
        canonical = f"{obj.__module__}.{obj.__qualname__}"
        if canonical == candidate:
            continue
        domain = env.get_domain("py")
        for name in (canonical, *[f"{m}.{obj.__qualname__}" for m in PUBLIC_MODULES]):
            if name in domain.objects:
                return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], name, node, contnode)
    return None


def _lookup(dotted: str) -> Any:
    """The object a dotted name under ``toprank`` names, or None."""
    if not dotted.startswith("toprank."):
        return None
    parts = dotted.split(".")
    obj: Any = importlib.import_module("toprank")
    for part in parts[1:]:
        if not hasattr(obj, part):
            return None
        obj = getattr(obj, part)
    return obj


def _unlink_accidental_emails(app: Any, doctree: Any) -> None:
    """Turn back into text the e-mail links docutils makes of metric names such as AP@10.

    docutils links any ``word@word`` as an address; one whose domain has no dot is a
    metric at a cutoff (AP@10, Recall@100), not an address.
    """
    from docutils import nodes

    for reference in list(doctree.findall(nodes.reference)):
        uri = reference.get("refuri", "")
        if uri.startswith("mailto:") and "." not in uri.rpartition("@")[2]:
            reference.replace_self(nodes.Text(reference.astext()))


def setup(app: Any) -> None:
    app.connect("doctree-read", _unlink_accidental_emails)
    app.connect("builder-inited", _copy_mathjax)
    app.connect("missing-reference", _resolve_reexport)
