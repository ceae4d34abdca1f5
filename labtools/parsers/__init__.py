"""Parsers of real tool output: pure functions, text in, :class:`Parsed` out.

Each parser module documents its column schema in its docstring and exposes
``parse(text: str) -> Parsed``. The registry below maps the tool names used on the
command line (``labtools parse TOOL FILE``) to those functions.
"""

from __future__ import annotations

from typing import Callable, Dict

from labtools.parsers.base import Parsed

ParserFn = Callable[[str], Parsed]


def _registry() -> Dict[str, ParserFn]:
    # Imported here so that importing labtools.parsers stays cheap.
    from labtools.parsers import iperf2, iperf3, ping, simpleperf

    return {
        "ping": ping.parse,
        "iperf": iperf2.parse,
        "iperf3": iperf3.parse,
        "simpleperf": simpleperf.parse,
    }


TOOLS = ("ping", "iperf", "iperf3", "simpleperf")


def parse(tool: str, text: str) -> Parsed:
    """Parse ``text`` as the output of ``tool`` (one of :data:`TOOLS`)."""
    from labtools.errors import InputError

    parsers = _registry()
    if tool not in parsers:
        raise InputError(f"unknown tool {tool!r}: choose one of {', '.join(TOOLS)}")
    return parsers[tool](text)
