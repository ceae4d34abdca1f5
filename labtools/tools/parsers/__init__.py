"""Parsers of real tool output: pure functions, text in, :class:`Parsed` out.

Each parser module documents its column schema in its docstring and exposes
``parse(text: str) -> Parsed``: ``text`` is what the tool printed (stdout, stderr too where
it was captured with it), the result holds the rows and summary the module docstring
describes, and output the parser cannot read is a :class:`~labtools.errors.ParseError`
saying what was missing (each ``parse`` lists its own cases). The registry below maps the
tool names used on the command line (``labtools parse TOOL FILE``) to those functions.
"""

from __future__ import annotations

import importlib
from typing import Callable, Dict

from labtools.errors import InputError
from labtools.tools.parsers.base import Parsed

ParserFn = Callable[[str], Parsed]

#: tool name (as on the command line) -> module whose ``parse`` reads its output;
#: modules are imported only when their tool is parsed
PARSER_MODULES: Dict[str, str] = {
    "ping": "labtools.tools.parsers.ping",
    "iperf": "labtools.tools.parsers.iperf2",
    "iperf3": "labtools.tools.parsers.iperf3",
    "simpleperf": "labtools.tools.parsers.simpleperf",
    "ss": "labtools.tools.parsers.ss",
}
TOOLS = tuple(PARSER_MODULES)


def parse(tool: str, text: str) -> Parsed:
    """Parse ``text`` as the output of ``tool`` (one of :data:`TOOLS`)."""
    if tool not in PARSER_MODULES:
        raise InputError(f"unknown tool {tool!r}: choose one of {', '.join(TOOLS)}")
    parser: ParserFn = importlib.import_module(PARSER_MODULES[tool]).parse
    return parser(text)
