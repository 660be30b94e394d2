"""Every public name has a complete numpydoc docstring and a page in the API reference.

The rules are issue 39's (the documentation): each class and function a public module
exports in ``__all__`` has a summary line, ``Parameters`` naming exactly the arguments it
takes, ``Returns`` (functions), an ``Examples`` section with a doctest (run by ``make test``
through ``pytest --doctest-modules``) and, for estimators, ``Attributes``. Each public
method and property written in toprank has a summary; methods also ``Parameters`` (if they
take any) and ``Returns``. The public modules and the methods a class page shows come from
``docs/conf.py``, so the check and the API reference cover the same names.

Each test lists every offender at once, not only the first.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from numpydoc import docscrape
from sklearn.base import BaseEstimator

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _load_conf() -> ModuleType:
    spec = importlib.util.spec_from_file_location("toprank_docs_conf", DOCS / "conf.py")
    assert spec is not None and spec.loader is not None
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


CONF = _load_conf()


def _exported() -> Iterator[tuple[str, str, Any]]:
    """(module, name, object) for each class and function in a public module's ``__all__``,
    each object once (the top level re-exports the estimators)."""
    seen: set[int] = set()
    for module_name in CONF.PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in CONF.public_names(module_name):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            yield module_name, name, obj


def _parameters(func: Callable[..., Any], skip_first: bool) -> list[str]:
    """The argument names of ``func`` as numpydoc writes them (``*args``, ``**kwargs``)."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return []
    names = []
    for i, parameter in enumerate(signature.parameters.values()):
        # A NamedTuple's __new__ names its class _cls.
        if i == 0 and skip_first and parameter.name in ("self", "cls", "_cls"):
            continue
        prefix = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}.get(parameter.kind, "")
        names.append(prefix + parameter.name)
    return names


def _documented(doc: Any, section: str) -> list[str]:
    """The names a numpydoc parameter-list section documents (``x, y : ...`` counts twice)."""
    return [part.strip() for item in doc[section] for part in item.name.split(",") if part.strip()]


def _parameter_problems(doc: Any, arguments: list[str], *, fields_ok: bool = False) -> list[str]:
    problems = []
    documented = _documented(doc, "Parameters")
    if fields_ok and not documented:
        # A record's fields may be documented as its Attributes instead.
        documented = _documented(doc, "Attributes")
    if arguments and not documented:
        return ["no Parameters section"]
    bare = {name.lstrip("*") for name in documented}
    missing = [name for name in arguments if name.lstrip("*") not in bare]
    extra = [name for name in documented if name.lstrip("*") not in {a.lstrip("*") for a in arguments}]
    if missing:
        problems.append(f"Parameters misses {', '.join(missing)}")
    if extra:
        problems.append(f"Parameters documents {', '.join(extra)}, which it does not take")
    return problems


def _common_problems(doc: Any, *, examples: bool) -> list[str]:
    problems = []
    if not "".join(doc["Summary"]).strip():
        problems.append("no summary line")
    if examples and ">>>" not in "\n".join(doc["Examples"]):
        problems.append("no Examples doctest")
    return problems


def _is_record(cls: type) -> bool:
    return (issubclass(cls, tuple) and hasattr(cls, "_fields")) or hasattr(cls, "__dataclass_fields__")


def _class_problems(cls: type) -> list[str]:
    doc = docscrape.NumpyDocString(inspect.getdoc(cls) or "")
    problems = _common_problems(doc, examples=True)
    if issubclass(cls, BaseException):
        # The arguments of an exception are BaseException's (a message), not documented.
        return problems
    init = cls.__new__ if _is_record(cls) and issubclass(cls, tuple) else cls.__init__
    # A Protocol (toprank.recsys.Scorer) is a type to implement, never constructed.
    constructed = init is not object.__init__ and not getattr(cls, "_is_protocol", False)
    arguments = _parameters(init, skip_first=True) if constructed else []
    problems += _parameter_problems(doc, arguments, fields_ok=_is_record(cls))
    if issubclass(cls, BaseEstimator) and not doc["Attributes"]:
        problems.append("no Attributes section (an estimator lists its fitted attributes)")
    return problems


def _function_problems(func: Callable[..., Any]) -> list[str]:
    doc = docscrape.NumpyDocString(inspect.getdoc(func) or "")
    problems = _common_problems(doc, examples=True)
    problems += _parameter_problems(doc, _parameters(func, skip_first=False))
    if not doc["Returns"] and not doc["Yields"]:
        problems.append("no Returns section")
    return problems


def _member_problems(cls: type, name: str, kind: str) -> list[str]:
    member = getattr(cls, name)
    doc = docscrape.NumpyDocString(inspect.getdoc(member) or "")
    problems = _common_problems(doc, examples=False)
    if kind == "method":
        problems += _parameter_problems(doc, _parameters(member, skip_first=True))
        if not doc["Returns"] and not doc["Yields"]:
            problems.append("no Returns section")
    return problems


def _report(offenders: list[str], what: str) -> str:
    return f"{len(offenders)} {what}:\n" + "\n".join(f"  {line}" for line in offenders)


def test_public_modules_declare_all() -> None:
    offenders = [name for name in CONF.PUBLIC_MODULES if not hasattr(importlib.import_module(name), "__all__")]
    assert not offenders, _report(offenders, "public modules without __all__")


def test_public_names_have_numpydoc_sections() -> None:
    offenders = []
    for module_name, name, obj in _exported():
        problems = _class_problems(obj) if inspect.isclass(obj) else _function_problems(obj)
        offenders += [f"{module_name}.{name}: {problem}" for problem in problems]
    assert not offenders, _report(offenders, "docstring problems in public classes and functions")


def test_public_methods_have_numpydoc_sections() -> None:
    offenders = []
    seen: set[int] = set()
    for module_name, name, obj in _exported():
        if not inspect.isclass(obj):
            continue
        for member, kind in CONF.documented_members(obj):
            owner = next(klass for klass in obj.__mro__ if member in vars(klass))
            key = id(vars(owner)[member])
            if key in seen:
                continue
            seen.add(key)
            offenders += [
                f"{module_name}.{name}.{member}: {problem}" for problem in _member_problems(obj, member, kind)
            ]
    assert not offenders, _report(offenders, "docstring problems in public methods and properties")


def _api_entries() -> set[str]:
    """``module.Name`` for every entry of an autosummary table in docs/api/*.rst."""
    entries = set()
    for page in sorted((DOCS / "api").glob("*.rst")):
        module = None
        in_table = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if match := re.match(r"\.\. currentmodule:: (\S+)", line):
                module = match.group(1)
            if line.startswith(".. autosummary::"):
                in_table = True
            elif in_table and (match := re.match(r"   ([A-Za-z_][\w.]*)$", line)) and module:
                entries.add(f"{module}.{match.group(1)}")
            elif in_table and line and not line.startswith(" "):
                in_table = False
    return entries


def test_every_public_name_has_an_api_page() -> None:
    documented = set()
    for entry in _api_entries():
        module_name, _, name = entry.rpartition(".")
        documented.add(id(getattr(importlib.import_module(module_name), name, None)))
    offenders = [f"{module_name}.{name}" for module_name, name, obj in _exported() if id(obj) not in documented]
    assert not offenders, _report(offenders, "public names missing from docs/api/*.rst")
