"""Find iperf3's JSON documents in what a terminal, a log file or a program captured.

``iperf3 -J`` prints one JSON document, but the text a student brings may hold more:
a warning line before it (``warning: Report format (-f) flag ignored with JSON output``),
what a terminal showed around it (a prompt, bracketed-paste escapes such as
``ESC[?2004l`` and a carriage return on the line of the opening brace, keys typed during
the run such as ``^C`` or ``^[[F``), a shell prompt after it, an ``iperf3: error - ...``
line, or the document twice (tests/fixtures/iperf3/lo_terminal.json,
v3_9_keys_before.json, derived_twice.json).

:func:`json_documents` finds every complete top-level document: an opening brace that
starts its line, or that only such stray text (no JSON punctuation) comes before on its
line, decoded with :meth:`json.JSONDecoder.raw_decode` from there; the text after a
document is left alone (the caller uses the last document found).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Tuple

from labtools.errors import ParseError

TOOL = "iperf3"

#: nan, -nan, inf, infinity as older iperf3 prints a NaN or infinite number (3.12: null)
_NAN = re.compile(r"([:\[,]\s*)[-+]?(?:nan|inf(?:inity)?)\b", re.IGNORECASE)
#: terminal control sequences: CSI (ESC [ ... final byte) and OSC (ESC ] ... BEL or ST)
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
#: an opening brace with no JSON punctuation before it on its line: a document's start
#: (cJSON puts every nested object after a key's colon, a comma or another brace)
_DOCUMENT_START = re.compile(r'^[^"{}:,\n]*\{', re.MULTILINE)


def json_documents(text: str) -> Tuple[List[Dict[str, Any]], str]:
    """Every complete top-level iperf3 JSON object in ``text`` (one with ``start`` or
    ``error``), in order, and why the last candidate that did not decode failed ("" if
    none failed).

    Raises:
        ParseError: JSON nested deeper than Python can decode.
    """
    cleaned = _NAN.sub(r"\1null", _ESCAPE.sub("", text))
    decoder = json.JSONDecoder()
    found: List[Dict[str, Any]] = []
    problem = ""
    pos = 0
    for m in _DOCUMENT_START.finditer(cleaned):
        brace = m.end() - 1
        if brace < pos:
            continue
        try:
            obj, end = decoder.raw_decode(cleaned, brace)
        except ValueError as err:  # not JSON, cut short, or an integer of over 4300 digits
            problem = err.msg if isinstance(err, json.JSONDecodeError) else str(err).split(":")[0]
            continue
        except RecursionError:
            raise ParseError(TOOL, "JSON nested far deeper than iperf3 writes") from None
        if isinstance(obj, dict) and ("start" in obj or "error" in obj):
            found.append(obj)
            pos = end
    return found, problem
