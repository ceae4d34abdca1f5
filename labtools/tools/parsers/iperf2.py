"""Parse the text output of iperf 2.x (``iperf``, tested with 2.1.8), client or server.

Covers TCP and UDP, with and without ``-i``, ``-P N`` (``[SUM]`` rows) and the UDP
client's ``Server Report``. Default format (``-f a``, adaptive units) or any bit-rate
``-f`` unit. Transfer units are binary (``KBytes`` = 1024 bytes, ``MBytes`` = 1024^2
bytes...), rate units are decimal (``Mbits/sec`` = 10^6 bit/s): this is how iperf 2
prints them (7.03 MBytes in 3.0306 s is printed as 19.4 Mbits/sec).

Table: one row per report line, in the order printed.

==========  =======  ==============================================================
column      type     meaning
==========  =======  ==============================================================
stream      int      iperf's stream id (``[  1]``); -1 for ``[SUM]`` rows
start_s     float    interval start, s
end_s       float    interval end, s
bytes       int      transfer, bytes (converted from iperf's rounded value)
rate_mbps   float    rate, Mbit/s (10^6 bit/s)
jitter_ms   float    UDP jitter, ms (server side and Server Report); NaN where absent
lost        float    UDP datagrams lost; NaN where absent
total       float    UDP datagrams accounted for (the ``Total`` of ``Lost/Total``)
kind        str      ``interval``, ``total`` (a stream's or the sum's whole-run line)
                     or ``server_report`` (the UDP client's copy of the server's total)
==========  =======  ==============================================================

A stream's ``total`` row is its last row starting at 0 s (with ``-i``, its interval rows
come first); without ``-i`` each stream prints only its total.

Summary keys (rates in Mbit/s, None where the output has no such number):

- ``protocol`` (``TCP``/``UDP``), ``role`` (``client``/``server``), ``streams`` (int).
- ``rate_mbps``: the whole-run rate as printed (the ``[SUM]`` total with ``-P``, else the
  single stream's total); ``bytes`` and ``duration_s`` of that same line.
- ``sender_mbps``: client only, the sum of the streams' own totals. With ``-P`` iperf
  2.1.8 sometimes prints a ``[SUM]`` total over a shorter interval than the streams ran
  (so a higher rate); the per-stream totals are right.
- ``receiver_mbps``: the Server Report's rate (UDP client), or ``rate_mbps`` when the
  text is the server's; None for a TCP client (it has no receiver report).
- ``server_rate_mbps``, ``jitter_ms``, ``lost``, ``total``, ``lost_pct`` (100 * lost /
  total), ``out_of_order``: from the Server Report (UDP client) or the server's own UDP
  total; None when there is none. ``out_of_order`` is 0 when iperf printed no
  ``out-of-order`` line (it prints one only when some arrived out of order).
- ``sent_datagrams`` (UDP client: ``Sent N datagrams``), ``warnings`` (list of
  iperf's ``WARNING`` texts, e.g. no ack of the last datagram: then no Server Report).

Every rate, time, size and jitter in the table and the summary is a finite number >= 0
(or None/NaN where the output has none); ``lost`` (and so ``lost_pct``) may be negative,
as old iperf 2 versions count datagrams that arrive out of order.

A line that has the shape of a report line (``[ ID] START-END sec ...``), a ``Sent N
datagrams`` or an out-of-order line, but numbers iperf 2 never prints (text, negative,
infinite or absurdly long numbers, an interval that ends before it starts, more datagrams
lost than accounted for) raises :class:`ParseError` quoting the line: leaving it out would
make another line the run's total. No report line (empty text, ``connect failed``...)
raises :class:`ParseError` (tool ``iperf``), quoting iperf's complaint when there is one;
so does iperf3's text output
(recognised by its ``Bitrate`` header, ``sender``/``receiver`` totals or ``iperf Done.``),
whose numbers iperf 2's would misread: use ``iperf3 -J`` and the iperf3 parser.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from labtools.errors import ParseError
from labtools.tools.parsers.base import Parsed
from labtools.tools.rows import Rows

TOOL = "iperf"
COLUMNS = ["stream", "start_s", "end_s", "bytes", "rate_mbps", "jitter_ms", "lost", "total", "kind"]
DTYPES = {"stream": "int64", "start_s": "float64", "end_s": "float64", "bytes": "int64",
          "rate_mbps": "float64", "jitter_ms": "float64", "lost": "float64",
          "total": "float64", "kind": "object"}

BYTE_UNITS: Dict[str, int] = {
    "Bytes": 1, "KBytes": 1024, "MBytes": 1024**2, "GBytes": 1024**3, "TBytes": 1024**4,
}
BIT_RATE_UNITS: Dict[str, float] = {
    "bits/sec": 1e-6, "Kbits/sec": 1e-3, "Mbits/sec": 1.0, "Gbits/sec": 1e3, "Tbits/sec": 1e6,
}

_NUMBER = r"\d{1,15}(?:\.\d{1,15})?"
_ROW = re.compile(
    rf"^\[\s*(?P<id>\d{{1,9}}|SUM)\]\s+(?P<start>{_NUMBER})\s*-\s*(?P<end>{_NUMBER})\s+sec\s+"
    rf"(?P<xfer>{_NUMBER})\s+(?P<xunit>\w+)\s+(?P<rate>{_NUMBER})\s+(?P<runit>\S+/sec)"
    rf"(?:\s+(?P<jitter>{_NUMBER})\s+ms\s+(?P<lost>-?\d{{1,15}})/\s*(?P<total>\d{{1,15}}))?"
)
_HEADER = re.compile(
    r"^(?P<role>Client connecting to|Server listening on)\b.*?\b(?P<proto>TCP|UDP)\b")
#: a UDP report's jitter column, right after the rate: then _ROW must have read it
_JITTER_LIKE = re.compile(r"^\s+\S+\s+ms\b")
_ID = re.compile(r"^\[\s*(?:\d+|SUM)\]\s")
_SENT = re.compile(r"^\[\s*\d+\]\s+Sent (?P<n>\S+) datagrams")
_OOO = " datagrams received out-of-order"
_WARNING = re.compile(r"WARNING:\s*(?P<msg>.*\S)")
#: the largest integer an int64 column holds
MAX_INT = 2**63 - 1
#: lines only iperf3's text output has (its column header, its totals, its last line)
_IPERF3_TEXT = re.compile(r"^(?:\[ ID\] Interval\s+Transfer\s+Bitrate|iperf Done\.|"
                          r"\[.*\s(?:sender|receiver)$)", re.MULTILINE)
_FAILED = re.compile(
    r"(connect failed.*|Connection refused.*|No route to host.*|unknown host.*)", re.I)


def _looks_like_row(line: str) -> bool:
    """``[ ID] ... sec`` with ``sec`` among the first tokens: a report line, whatever its
    numbers (found without a regex that could backtrack on a long hostile line)."""
    head = _ID.match(line)
    return head is not None and "sec" in line[head.end():].split(None, 4)[:4]


def _row(line: str, kind: str) -> Dict[str, Any]:
    """One report line as a row; :class:`ParseError` for numbers iperf 2 never prints."""
    m = _ROW.match(line)
    if m is None or (m["jitter"] is None and _JITTER_LIKE.match(line[m.end():])):
        raise ParseError(TOOL, f"a report line with numbers iperf never prints: {line[:120]}")
    xunit, runit = m["xunit"], m["runit"]
    if xunit not in BYTE_UNITS:
        raise ParseError(TOOL, f"unknown transfer unit {xunit!r} in: {m.group(0)}")
    if runit not in BIT_RATE_UNITS:
        raise ParseError(TOOL, f"rate unit {runit!r} is not a bit rate (use -f with k/m/g): "
                               f"{m.group(0)}")
    start, end = float(m["start"]), float(m["end"])
    size = int(round(float(m["xfer"]) * BYTE_UNITS[xunit]))
    lost = int(m["lost"]) if m["lost"] else None
    total = int(m["total"]) if m["total"] else None
    if end < start:
        raise ParseError(TOOL, f"an interval that ends before it starts: {m.group(0)}")
    if size > MAX_INT:
        raise ParseError(TOOL, f"a transfer larger than any run: {m.group(0)}")
    if lost is not None and total is not None and lost > total:
        raise ParseError(TOOL, f"more datagrams lost than accounted for: {m.group(0)}")
    return {
        "stream": -1 if m["id"] == "SUM" else int(m["id"]),
        "start_s": start,
        "end_s": end,
        "bytes": size,
        "rate_mbps": float(m["rate"]) * BIT_RATE_UNITS[runit],
        "jitter_ms": float(m["jitter"]) if m["jitter"] else None,
        "lost": lost,
        "total": total,
        "kind": kind,
    }


def _count(text: str, line: str) -> int:
    """A datagram count of a ``Sent N`` or out-of-order line."""
    if not text.isdigit() or len(text) > 15:
        raise ParseError(TOOL, f"a datagram count iperf prints no such way: {line[:120]}")
    return int(text)


def _mark_totals(rows: List[Dict[str, Any]]) -> None:
    """Mark each stream's (and the sum's) last row starting at 0 s as its ``total``."""
    last: Dict[int, Dict[str, Any]] = {}
    for row in rows:
        if row["kind"] == "interval":
            last[row["stream"]] = row
    for row in last.values():
        if row["start_s"] == 0.0:
            row["kind"] = "total"


def _scan(lines: List[str]) -> Dict[str, Any]:
    """Rows and side facts of the text, in one pass."""
    found: Dict[str, Any] = {"rows": [], "protocol": None, "role": None, "sent": None,
                             "ooo": None, "warnings": [], "failure": None}
    in_report = False
    for line in lines:
        header = _HEADER.match(line)
        if header and found["role"] is None:
            found["role"] = "client" if header["role"].startswith("Client") else "server"
            found["protocol"] = header["proto"]
        if line.endswith("Server Report:"):
            in_report = True
            continue
        if _OOO in line and _ID.match(line):  # [  1] 0.0000-2.0059 sec  4 datagrams ...
            before = line.partition(_OOO)[0].split()
            found["ooo"] = _count(before[-1] if before else "", line)
        elif _looks_like_row(line):
            found["rows"].append(_row(line, "server_report" if in_report else "interval"))
            in_report = False
            continue
        sent = _SENT.match(line)
        if sent:
            found["sent"] = _count(sent["n"], line)
        warning = _WARNING.search(line)
        if warning:
            found["warnings"].append(warning["msg"])
        failure = _FAILED.search(line)
        if failure and found["failure"] is None:
            found["failure"] = failure.group(1)
    return found


def _udp_report(report: Optional[Dict[str, Any]], ooo: Optional[int]) -> Dict[str, Any]:
    keys = ["server_rate_mbps", "jitter_ms", "lost", "total", "lost_pct", "out_of_order"]
    if report is None or report["total"] is None:
        return dict.fromkeys(keys)
    total, lost = report["total"], report["lost"]
    return {
        "server_rate_mbps": report["rate_mbps"],
        "jitter_ms": report["jitter_ms"],
        "lost": lost,
        "total": total,
        "lost_pct": 100.0 * lost / total if total else None,
        "out_of_order": ooo or 0,
    }


def parse(text: str) -> Parsed:
    """Parse iperf 2.x client or server text output (the parsers' contract:
    :mod:`labtools.tools.parsers`).

    Raises:
        ParseError: no report line, or a unit the parser does not know.
    """
    if not text or not text.strip():
        raise ParseError(TOOL, "empty output (no report line)")
    if _IPERF3_TEXT.search(text):
        raise ParseError(TOOL, "this is iperf3's text output, not iperf 2's: run `iperf3 -J` "
                               "and read that with `labtools parse iperf3`")
    found = _scan([line.strip() for line in text.splitlines()])
    rows: List[Dict[str, Any]] = found["rows"]
    if not rows:
        said = f"; iperf said: {found['failure']}" if found["failure"] else ""
        raise ParseError(TOOL, f"no report line '[ ID] start-end sec transfer rate'{said}")
    _mark_totals(rows)

    totals = [r for r in rows if r["kind"] == "total"]
    stream_totals = [r for r in totals if r["stream"] >= 0]
    sum_total = next((r for r in totals if r["stream"] == -1), None)
    main = sum_total or (stream_totals[-1] if stream_totals else None)
    report = next((r for r in rows if r["kind"] == "server_report"), None)
    role = found["role"] or ("client" if found["sent"] is not None else None)
    protocol = found["protocol"] or ("UDP" if any(r["total"] is not None for r in rows) else "TCP")
    if role == "server" and protocol == "UDP":
        report = main
    summary: Dict[str, Any] = {
        "protocol": protocol,
        "role": role,
        "streams": len({r["stream"] for r in rows if r["stream"] >= 0}),
        "rate_mbps": main["rate_mbps"] if main else None,
        "bytes": main["bytes"] if main else None,
        "duration_s": (main["end_s"] - main["start_s"]) if main else None,
        "sender_mbps": (sum(r["rate_mbps"] for r in stream_totals)
                        if role == "client" and stream_totals else None),
        "receiver_mbps": (report["rate_mbps"] if report and role == "client"
                          else (main["rate_mbps"] if main and role == "server" else None)),
    }
    summary.update(_udp_report(report, found["ooo"]))
    summary["sent_datagrams"] = found["sent"]
    summary["warnings"] = found["warnings"]

    return Parsed(tool=TOOL, rows=Rows.of(COLUMNS, DTYPES, rows), summary=summary, raw=text)
