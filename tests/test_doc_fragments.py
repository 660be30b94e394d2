"""The shared docstring fragments of ``toprank._docs``: filled in place, typos refused."""

from __future__ import annotations

import inspect

import pytest

import toprank.projections
from toprank._docs import FRAGMENTS, fill_doc


def test_fragment_is_indented_like_its_placeholder() -> None:
    def f() -> None:
        """Summary.

        Raises
        ------
        %(projection_no_solution)s
        """

    fill_doc(f)
    assert inspect.cleandoc(f.__doc__ or "").endswith(
        "Raises\n------\nNoSolutionError\n"
        "    The exact search found no solution within its rounding bounds (never seen on\n"
        "    finite input; raised rather than returning a wrong answer)."
    )


def test_unknown_placeholder_raises_at_definition() -> None:
    with pytest.raises(KeyError, match="no docstring fragment %\\(projection_nojobs\\)s"):

        @fill_doc
        def f() -> None:
            """Summary.

            %(projection_nojobs)s
            """


def test_no_placeholder_is_left_in_a_public_docstring() -> None:
    # Every name the fragments of a module were written for is filled at import.
    for name in toprank.projections.__all__:
        doc = getattr(toprank.projections, name).__doc__
        assert "%(" not in doc, name


def test_no_placeholder_is_left_in_the_torch_docstrings() -> None:
    # The functions, the modules and the forward methods they define or inherit.
    tt = pytest.importorskip("toprank.torch")
    for name in tt.__all__:
        obj = getattr(tt, name)
        forward = getattr(obj, "forward", None)
        for doc in (obj.__doc__, forward.__doc__ if isinstance(obj, type) else ""):
            assert doc is not None and "%(" not in doc, name


def test_fragments_fill_nested_placeholders() -> None:
    assert "%(" in FRAGMENTS["projection_returns_raises"]

    def f() -> None:
        """%(projection_returns_raises)s"""

    fill_doc(f)
    assert "%(" not in (f.__doc__ or "")
    assert "The projection p, a new array" in (f.__doc__ or "")


def test_a_class_fills_its_methods_and_properties() -> None:
    @fill_doc
    class Model:
        """Summary.

        %(projection_n_jobs)s
        """

        def method(self) -> None:
            """Summary.

            %(projection_n_jobs)s
            """

        @property
        def value(self) -> int:
            """Summary.

            %(projection_n_jobs)s
            """
            return 0

        @classmethod
        def build(cls) -> None:
            """Summary.

            %(projection_n_jobs)s
            """

    for doc in (Model.__doc__, Model.method.__doc__, Model.__dict__["value"].__doc__, Model.build.__doc__):
        assert doc is not None
        assert "%(" not in doc
        assert "Threads for a 2-D ``x``" in doc
