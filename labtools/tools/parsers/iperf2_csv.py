"""Read iperf 2's CSV reports (``-y C``), client or server, TCP or UDP: the rows and summary
of :mod:`labtools.tools.parsers.iperf2`, which calls this module for such text.

Each report is one line of comma-separated fields, as iperf 2's man page and its source
(``ReportCSV``) print them: timestamp (``YYYYMMDDhhmmss``; iperf 2.1.8 prints
``19700101000000`` for a run's total), source address, source port, destination address,
destination port, transfer id (-1 for a ``[SUM]``), interval (``START-END`` in s), bytes,
bits per second; UDP adds jitter (ms), lost, total datagrams, loss (%) and datagrams out
of order. The transfer is exact (bytes) and the rate in bit/s, not rounded as in the text.

What the CSV does not say: a UDP client's whole-run lines have ``-1`` as their total: then
the text is the client's (``role`` client) and every line is its sending (its interval
lines count the datagrams sent, with no loss or jitter: no receiver numbers; iperf 2.1.8
prints no Server Report in CSV). Otherwise UDP lines are the server's. A TCP line is
the same on both sides: ``role`` is None and so are ``sender_mbps`` and ``receiver_mbps``
(``rate_mbps`` is the run's rate). ``-d``/``-r`` are not told apart in CSV: every row is
``forward``. A line that starts like a CSV report but has other fields raises
:class:`ParseError` naming CSV.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from labtools.errors import ParseError
from labtools.tools.parsers.base import Parsed
from labtools.tools.parsers.iperf2_report import (
    COLUMNS,
    DTYPES,
    MAX_INT,
    TOOL,
    mark_totals,
    summarize,
)
from labtools.tools.rows import Rows

_START = re.compile(r"^\d{14}(?:\.\d{1,9})?,")
_INT = re.compile(r"^-?\d{1,19}$")
_FLOAT = re.compile(r"^-?\d{1,15}(?:\.\d{1,15})?$")
_INTERVAL = re.compile(r"^(\d{1,15}(?:\.\d{1,15})?)-(\d{1,15}(?:\.\d{1,15})?)$")
#: fields of a TCP and of a UDP report line
TCP_FIELDS, UDP_FIELDS = 9, 14
_WARNING = re.compile(r"WARNING:\s*(?P<msg>.*\S)")


def looks_like_csv(text: str) -> bool:
    """True when a line of ``text`` starts like an iperf 2 CSV report (14-digit timestamp
    and a comma)."""
    return any(_START.match(line.strip()) for line in text.splitlines())


def _refuse(line: str, why: str) -> ParseError:
    return ParseError(TOOL, f"an iperf -y C (CSV) report line {why}: {line[:120]}")


def _number(text: str, pattern: "re.Pattern[str]", line: str, what: str) -> float:
    if not pattern.match(text):
        raise _refuse(line, f"with a {what} iperf never prints ({text[:20]!r})")
    return float(text) if "." in text else int(text)


def _row(line: str) -> Dict[str, Any]:
    """One CSV report line as a row (kind ``interval``; totals are marked later)."""
    fields = line.split(",")
    if len(fields) not in (TCP_FIELDS, UDP_FIELDS):
        raise _refuse(line, f"with {len(fields)} fields, not {TCP_FIELDS} (TCP) or "
                            f"{UDP_FIELDS} (UDP)")
    interval = _INTERVAL.match(fields[6])
    if interval is None:
        raise _refuse(line, f"with an interval iperf never prints ({fields[6][:20]!r})")
    start, end = float(interval[1]), float(interval[2])
    stream = int(_number(fields[5], _INT, line, "transfer id"))
    size = int(_number(fields[7], _INT, line, "byte count"))
    if end < start or size < 0 or size > MAX_INT or stream < -1:
        raise _refuse(line, "with numbers iperf never prints")
    row: Dict[str, Any] = {"stream": stream, "start_s": start, "end_s": end, "bytes": size,
                           "jitter_ms": None, "lost": None, "total": None, "kind": "interval",
                           "direction": "forward", "ooo": None, "empty": False}
    if len(fields) == UDP_FIELDS:
        total = int(_number(fields[11], _INT, line, "datagram total"))
        if total < -1:
            raise _refuse(line, "with a negative datagram total")
        row["total"] = total
        if total >= 0:
            row["empty"] = size == 0 and total == 0
            if not row["empty"]:
                row["jitter_ms"] = float(_number(fields[9], _FLOAT, line, "jitter"))
                row["lost"] = int(_number(fields[10], _INT, line, "loss count"))
                row["ooo"] = int(_number(fields[13], _INT, line, "out-of-order count"))
            if row["lost"] is not None and (row["lost"] > total or row["ooo"] < 0
                                            or row["jitter_ms"] < 0):
                raise _refuse(line, "with numbers iperf never prints")
    rate = fields[8]
    if row["empty"] and not _INT.match(rate):  # 0 bytes in 0 s: iperf's rate is 0/0
        row["rate_mbps"] = 0.0
    else:
        bps = _number(rate, _INT, line, "bit rate")
        if bps < 0:
            raise _refuse(line, "with a negative bit rate")
        row["rate_mbps"] = bps / 1e6
    return row


def parse(text: str) -> Parsed:
    """Parse iperf 2's ``-y C`` output (see the module docstring).

    Raises:
        ParseError: a CSV line with other fields or numbers iperf never prints, or no
            report line.
    """
    rows: List[Dict[str, Any]] = []
    warnings: List[str] = []
    for line in (raw.strip() for raw in text.splitlines()):
        warning = _WARNING.search(line)
        if _START.match(line):
            rows.append(_row(line))
        elif warning:
            warnings.append(warning["msg"])
    if not rows:
        raise ParseError(TOOL, "no iperf -y C (CSV) report line")
    udp = any(r["total"] is not None for r in rows)
    role: Optional[str] = None
    if udp:
        role = "client" if any(r["total"] == -1 for r in rows) else "server"
    for row in rows:
        if role == "client" or row["total"] == -1:  # the sender's lines: no receiver numbers
            row.update(jitter_ms=None, lost=None, total=None, ooo=None, empty=False)
    mark_totals(rows)
    summary = summarize(rows, "UDP" if udp else "TCP", role, {}, None)
    summary["format"] = "csv"
    summary["warnings"] = warnings
    if role is None:
        summary["sender_mbps"] = summary["receiver_mbps"] = None
    return Parsed(tool=TOOL, rows=Rows.of(COLUMNS, DTYPES, rows), summary=summary, raw=text)
