"""Parse the text output of ``ping`` from iputils (Linux), with or without ``-D``.

Table: one row per echo reply, in the order printed.

==============  ======  ===========================================================
column          type    meaning
==============  ======  ===========================================================
seq             int     ``icmp_seq`` of the reply
ttl             int     IP time-to-live of the reply
rtt_ms          float   round-trip time, ms
bytes           int     size of the ICMP reply (payload + 8-byte header), bytes
received_at     time    when the reply arrived, UTC (``ping -D``); NaT without ``-D``
duplicate       bool    ping marked the reply ``(DUP!)``
==============  ======  ===========================================================

Error lines (``From 10.0.0.254 icmp_seq=3 Destination Host Unreachable``) are not rows;
they are counted in the summary.

Summary keys:

- ``destination`` (str): the host as given to ping; ``address`` (str): its IP address.
- ``transmitted``, ``received``, ``duplicates``, ``errors`` (int): from the statistics
  line (``errors`` is the ``+N errors`` count, 0 when absent).
- ``loss_pct`` (float): packet loss, percent, as ping printed it.
- ``time_ms`` (float): ping's own run time, ms.
- ``min_ms``, ``avg_ms``, ``max_ms``, ``mdev_ms`` (float or None): the ``rtt`` line;
  None when no reply came back (100% loss prints no ``rtt`` line).
- ``error_messages`` (list of str): the distinct error texts seen
  (e.g. ``["Destination Host Unreachable"]``).
- ``complete`` (bool): False when the statistics lines are missing (ping was killed).
  The reply rows are still parsed; every statistics key is then None and ``errors`` is
  the number of error lines seen. The parser never computes statistics ping did not print.

Output without a ``PING`` header and without any reply (empty text, an error such as an
unknown host, anything else) raises :class:`~labtools.errors.ParseError` with tool
``ping``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from labtools.errors import ParseError
from labtools.tools.parsers.base import Parsed
from labtools.tools.rows import TIME_DTYPE, Rows

TOOL = "ping"
COLUMNS = ["seq", "ttl", "rtt_ms", "bytes", "received_at", "duplicate"]
DTYPES = {"seq": "int64", "ttl": "int64", "rtt_ms": "float64", "bytes": "int64",
          "received_at": TIME_DTYPE, "duplicate": "bool"}

_HEADER = re.compile(r"^PING\s+(?P<dest>\S+)\s+\((?P<addr>[^)]+)\)")
_REPLY = re.compile(
    r"^(?:\[(?P<ts>\d+(?:\.\d+)?)\]\s+)?(?P<bytes>\d+) bytes from \S+?:?\s+"
    r"icmp_seq=(?P<seq>\d+)\s+ttl=(?P<ttl>\d+)\s+time[=<](?P<rtt>\d+(?:\.\d+)?)\s*ms"
    r"(?P<dup>.*\(DUP!\))?"
)
_ERROR = re.compile(
    r"^(?:\[\d+(?:\.\d+)?\]\s+)?From\s+\S+?:?\s+icmp_seq=\d+\s+(?P<msg>.+?)\s*$"
)
_STATS = re.compile(
    r"^(?P<tx>\d+) packets transmitted, (?P<rx>\d+) (?:packets )?received,"
    r"(?: \+(?P<dup>\d+) duplicates,)?(?: \+(?P<err>\d+) errors,)?"
    r" (?P<loss>\d+(?:\.\d+)?)% packet loss(?:, time (?P<time>\d+(?:\.\d+)?)ms)?"
)
_RTT = re.compile(
    r"^(?:rtt|round-trip) min/avg/max/(?:mdev|stddev) = "
    r"(?P<min>[\d.]+)/(?P<avg>[\d.]+)/(?P<max>[\d.]+)/(?P<mdev>[\d.]+) ms"
)


def _rows_and_errors(lines: List[str]) -> tuple[List[Dict[str, Any]], List[str]]:
    """Reply rows and error messages, in order of appearance."""
    rows: List[Dict[str, Any]] = []
    errors: List[str] = []
    for line in lines:
        m = _REPLY.match(line)
        if m:
            rows.append(
                {
                    "seq": int(m["seq"]),
                    "ttl": int(m["ttl"]),
                    "rtt_ms": float(m["rtt"]),
                    "bytes": int(m["bytes"]),
                    "received_at": float(m["ts"]) if m["ts"] else float("nan"),
                    "duplicate": m["dup"] is not None,
                }
            )
            continue
        e = _ERROR.match(line)
        if e:
            errors.append(e["msg"])
    return rows, errors


def _statistics(lines: List[str]) -> Dict[str, Any]:
    """The statistics keys of the summary (all None when the lines are missing)."""
    stats: Dict[str, Any] = dict.fromkeys(
        ["transmitted", "received", "duplicates", "errors", "loss_pct", "time_ms",
         "min_ms", "avg_ms", "max_ms", "mdev_ms"]
    )
    stats["complete"] = False
    for line in lines:
        m = _STATS.match(line)
        if m:
            stats.update(
                transmitted=int(m["tx"]),
                received=int(m["rx"]),
                duplicates=int(m["dup"] or 0),
                errors=int(m["err"] or 0),
                loss_pct=float(m["loss"]),
                time_ms=float(m["time"]) if m["time"] else None,
                complete=True,
            )
        r = _RTT.match(line)
        if r:
            stats.update(
                min_ms=float(r["min"]), avg_ms=float(r["avg"]),
                max_ms=float(r["max"]), mdev_ms=float(r["mdev"]),
            )
    return stats


def parse(text: str) -> Parsed:
    """Parse iputils ``ping`` output into per-reply rows (ms) and its statistics.

    Args:
        text: everything ping printed (stdout, optionally with stderr).

    Returns:
        :class:`Parsed` with the table and summary described in the module docstring.

    Raises:
        ParseError: the text has no ``PING`` header line and no reply line.
    """
    if not text or not text.strip():
        raise ParseError(TOOL, "empty output (no PING header, no reply, no statistics)")
    lines = [line.strip() for line in text.splitlines()]
    header: Optional[re.Match[str]] = next(
        (m for m in (_HEADER.match(line) for line in lines) if m), None
    )
    rows, error_messages = _rows_and_errors(lines)
    if header is None and not rows:
        said = next((line for line in lines if line.startswith("ping:")), "")
        hint = f"; ping said: {said[5:].strip()}" if said else ""
        raise ParseError(TOOL, f"no 'PING host (address)' header and no reply line{hint}")

    summary: Dict[str, Any] = {
        "destination": header["dest"] if header else None,
        "address": header["addr"] if header else None,
    }
    summary.update(_statistics(lines))
    if not summary["complete"]:
        summary["errors"] = len(error_messages)
    summary["error_messages"] = sorted(set(error_messages))

    return Parsed(tool=TOOL, rows=Rows.of(COLUMNS, DTYPES, rows), summary=summary, raw=text)
