"""Parsers of real tool output: pure functions, text in, :class:`Parsed` out.

Each parser module documents its column schema in its docstring and exposes
``parse(text: str) -> Parsed``: ``text`` is what the tool printed (stdout, stderr too where
it was captured with it), the result holds the rows and summary the module docstring
describes, and output the parser cannot read is a :class:`~labtools.errors.ParseError`
saying what was missing (each ``parse`` lists its own cases). Which module reads which
tool is its descriptor's (:mod:`labtools.tools.registry`).
"""

from __future__ import annotations

from labtools.tools.parsers.base import Parsed


def parse(tool: str, text: str) -> Parsed:
    """Parse ``text`` as the output of ``tool`` (a tool of
    :data:`labtools.tools.registry.TOOLS`)."""
    from labtools.tools.registry import descriptor

    return descriptor(tool).parse(text)
