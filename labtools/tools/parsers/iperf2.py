"""Parse the output of iperf 2.x (``iperf``, tested with 2.1.8; real outputs of 2.0.x and
other 2.1.x versions among the fixtures), client or server, text or ``-y C`` (CSV, read by
:mod:`labtools.tools.parsers.iperf2_csv`).

Covers TCP and UDP, with and without ``-i``, ``-P N`` (``[SUM]`` rows), the UDP client's
``Server Report`` (one per stream with ``-P``), ``--dualtest`` (``-d``) and ``--tradeoff``
(``-r``): both directions, each row saying which. Default format (``-f a``, adaptive
units) or any bit-rate ``-f`` unit. Transfer units are binary (``KBytes`` = 1024 bytes,
``MBytes`` = 1024^2 bytes...), rate units are decimal (``Mbits/sec`` = 10^6 bit/s): this is
how iperf 2 prints them (7.03 MBytes in 3.0306 s is printed as 19.4 Mbits/sec).

Table: one row per report line, in the order printed.

==========  =======  ==============================================================
column      type     meaning
==========  =======  ==============================================================
stream      int      iperf's stream id (``[  1]``, ``[ *2]``); -1 for ``[SUM]`` rows
start_s     float    interval start, s
end_s       float    interval end, s
bytes       int      transfer, bytes (converted from iperf's rounded value)
rate_mbps   float    rate, Mbit/s (10^6 bit/s); 0 for a receiver's report of nothing
                     received (iperf prints ``-nan`` for 0 bytes in 0 s)
jitter_ms   float    UDP jitter, ms (server side and Server Report); NaN where absent
                     and where nothing was received
lost        float    UDP datagrams lost; NaN where absent and where nothing was received
total       float    UDP datagrams accounted for (the ``Total`` of ``Lost/Total``)
kind        str      ``interval``, ``total`` (a stream's or the sum's whole-run line)
                     or ``server_report`` (the UDP client's copy of the server's total)
direction   str      ``forward`` (data from the client to the server) or ``reverse``
                     (the server to the client: ``-d``/``-r``); None for a ``[SUM]``
                     over both directions
==========  =======  ==============================================================

A stream's ``total`` row is its last row starting at 0 s (with ``-i``, its interval rows
come first); without ``-i`` each stream prints only its total.

Which direction a stream is, when the text has both a ``Client connecting to`` and a
``Server listening on`` header (``-d``/``-r``): on the client, a connection to its own
listening port (``-L``) is the reverse one; on the server, a stream marked ``*`` or
``(reverse)`` (iperf 2.1), or one not on its listening port (2.0). The role is ``server``
when a stream is so marked, or when a connection on the listening port is printed before
the ``Client connecting to`` header (a server connects back after it accepted one); else
``client`` when there is a ``Client connecting to`` header, ``server`` when there is a
``Server listening on`` one.

Summary keys (rates in Mbit/s, None where the output has no such number):

- ``protocol`` (``TCP``/``UDP``), ``role`` (``client``/``server``; None for a TCP CSV
  report, which does not say), ``streams`` (int, forward streams), ``format``
  (``text``/``csv``), ``bidirectional`` (True with ``-d``/``-r``).
- ``rate_mbps``: the forward direction's whole-run rate, the sum of its streams' own
  totals (never the ``[SUM]`` line: with ``-P`` iperf 2.1.8 sometimes prints a ``[SUM]``
  total over a shorter interval than the streams ran, so a higher rate, and iperf 2.0.x
  servers count the first interval twice in it); ``bytes`` (their sum) and
  ``duration_s`` (the longest) of the same.
- ``sender_mbps``: client only, the sum of its forward streams' own totals.
- ``receiver_mbps``: the forward direction's received rate: the sum of the Server Reports'
  rates (UDP client), or ``rate_mbps`` when the text is the server's; None for a TCP
  client (it has no receiver report), and for a UDP client when a stream has no Server
  Report (a part of the streams is not the run). 0 when the server received nothing.
- ``server_rate_mbps``, ``jitter_ms``, ``lost``, ``total``, ``lost_pct`` (100 * lost /
  total), ``out_of_order``: the forward direction's receiver numbers, from the Server
  Reports (UDP client) or the server's own UDP totals, summed over the streams (lost and
  total summed, the loss percentage from the sums, the largest jitter); None when there
  are none. ``out_of_order`` counts iperf's ``out-of-order`` lines (0 when none). A
  receiver that got nothing (``0.000 Bytes  -nan bits/sec ... N/0 (inf%)``) has rate 0,
  total 0 and ``lost``, ``lost_pct``, ``jitter_ms`` None, with a warning.
- ``reverse_sender_mbps`` (server), ``reverse_receiver_mbps`` (client: its own received
  total; server: the reverse Server Report, UDP), ``reverse_jitter_ms``, ``reverse_lost``,
  ``reverse_total``, ``reverse_lost_pct``: the server-to-client direction of ``-d``/``-r``.
- ``sent_datagrams`` (UDP client: ``Sent N datagrams``, summed over the streams),
  ``warnings`` (list of iperf's ``WARNING`` texts, e.g. no ack of the last datagram: then
  no Server Report; the kit's own note when a receiver got nothing; and the
  disagreements below).

Every number of the summary comes from the streams' own reports. A ``[SUM]`` line that
disagrees with its streams (its transfer not their sum within iperf's rounding, its
datagram counts, a server's ``Lost/Total`` or the client's ``[SUM-N] Sent``, not theirs
exactly: the ``[SUM]`` of iperf 2.0.x servers adds the first interval again) is a
warning naming both numbers, in ``warnings`` and in
:attr:`~labtools.tools.parsers.base.Parsed.warnings`; the output is read all the same.

Every rate, time, size and jitter in the table and the summary is a finite number >= 0
(or None/NaN where the output has none); ``lost`` (and so ``lost_pct``) may be negative,
as old iperf 2 versions count datagrams that arrive out of order.

A line that has the shape of a report line (``[ ID] START-END sec ...``), a ``Sent N
datagrams`` or an out-of-order line, but numbers iperf 2 never prints (text, negative,
infinite or absurdly long numbers, ``nan`` where something was received, an interval that
ends before it starts, more datagrams lost than accounted for) raises :class:`ParseError`
quoting the line: leaving it out would make another line the run's total. No report line
(empty text, ``connect failed``...) raises :class:`ParseError` (tool ``iperf``), quoting
iperf's complaint when there is one; so does iperf3's text output (recognised by its
``Bitrate`` header, ``sender``/``receiver`` totals or ``iperf Done.``), whose numbers iperf
2's would misread: use ``iperf3 -J`` and the iperf3 parser.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from labtools.errors import ParseError
from labtools.tools.parsers import iperf2_csv
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

__all__ = ["COLUMNS", "DTYPES", "TOOL", "parse"]

BYTE_UNITS: Dict[str, int] = {
    "Bytes": 1, "KBytes": 1024, "MBytes": 1024**2, "GBytes": 1024**3, "TBytes": 1024**4,
}
BIT_RATE_UNITS: Dict[str, float] = {
    "bits/sec": 1e-6, "Kbits/sec": 1e-3, "Mbits/sec": 1.0, "Gbits/sec": 1e3, "Tbits/sec": 1e6,
}

_NUMBER = r"\d{1,15}(?:\.\d{1,15})?"
_ROW = re.compile(
    rf"^\[\s*(?P<id>\*?\d{{1,9}}|SUM)\]\s+(?P<start>{_NUMBER})\s*-\s*(?P<end>{_NUMBER})\s+sec\s+"
    rf"(?P<xfer>{_NUMBER})\s+(?P<xunit>\w+)\s+(?P<rate>{_NUMBER}|-?nan)\s+(?P<runit>\S+/sec)"
    rf"(?:\s+(?:(?P<jitter>{_NUMBER})\s+ms\s+)?(?P<lost>-?\d{{1,15}})/\s*(?P<total>\d{{1,15}})"
    rf"(?=\s+\())?"
)
_HEADER = re.compile(
    r"^(?P<role>Client connecting to|Server listening on)\b.*?\b(?P<proto>TCP|UDP)\b"
    r"(?:\s+port\s+(?P<port>\d{1,5}))?")
_CONNECTED = re.compile(r"^\[\s*(?P<mark>\*?)(?P<id>\d{1,9})\]\s+local\s+\S+\s+port\s+"
                        r"(?P<port>\d{1,5})\s+connected with\s+\S+\s+port\s+\d{1,5}"
                        r"(?P<reverse>\s+\(reverse\))?")
#: a UDP report's jitter column, right after the rate: then _ROW must have read it
_JITTER_LIKE = re.compile(r"^\s+\S+\s+ms\b")
_ID = re.compile(r"^\[\s*(?:\*?\d+|SUM)\]\s")
_SENT = re.compile(r"^\[\s*(?P<id>\d+|SUM(?:-\d+)?)\]\s+Sent (?P<n>\S+) datagrams")
_OOO = " datagrams received out-of-order"
_WARNING = re.compile(r"WARNING:\s*(?P<msg>.*\S)")
#: lines only iperf3's text output has (its column header, its totals, its last line)
_IPERF3_TEXT = re.compile(r"^(?:\[ ID\] Interval\s+Transfer\s+Bitrate|iperf Done\.|"
                          r"\[.*\s(?:sender|receiver)$)", re.MULTILINE)
_FAILED = re.compile(
    r"(connect failed.*|Connection refused.*|No route to host.*|unknown host.*)", re.I)
NOTHING_RECEIVED = "a receiver got nothing (0 bytes, 0 datagrams): its rate is 0, its loss unknown"


def _looks_like_row(line: str) -> bool:
    """``[ ID] ... sec`` with ``sec`` among the first tokens: a report line, whatever its
    numbers (found without a regex that could backtrack on a long hostile line)."""
    head = _ID.match(line)
    return head is not None and "sec" in line[head.end():].split(None, 4)[:4]


def _refuse(line: str) -> ParseError:
    return ParseError(TOOL, f"a report line with numbers iperf never prints: {line[:120]}")


def _row(line: str, kind: str) -> Dict[str, Any]:
    """One report line as a row; :class:`ParseError` for numbers iperf 2 never prints."""
    m = _ROW.match(line)
    if m is None or (m["jitter"] is None and _JITTER_LIKE.match(line[m.end():])):
        raise _refuse(line)
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
    # 0 bytes in 0 s: iperf's rate is 0/0; its loss count then wraps around (N/0)
    empty = m["rate"].endswith("nan")
    if empty and (size != 0 or total not in (None, 0)):
        raise _refuse(line)
    if end < start:
        raise ParseError(TOOL, f"an interval that ends before it starts: {m.group(0)}")
    if size > MAX_INT:
        raise ParseError(TOOL, f"a transfer larger than any run: {m.group(0)}")
    if not empty and lost is not None and total is not None and lost > total:
        raise ParseError(TOOL, f"more datagrams lost than accounted for: {m.group(0)}")
    return {
        "stream": -1 if m["id"] == "SUM" else int(m["id"].lstrip("*")),
        "start_s": start,
        "end_s": end,
        "bytes": size,
        "rate_mbps": 0.0 if empty else float(m["rate"]) * BIT_RATE_UNITS[runit],
        "jitter_ms": float(m["jitter"]) if m["jitter"] and not empty else None,
        "lost": None if empty else lost,
        "total": total,
        "kind": kind,
        "direction": "reverse" if m["id"].startswith("*") else None,
        "ooo": None,
        "empty": empty,
    }


def _count(text: str, line: str) -> int:
    """A datagram count of a ``Sent N`` or out-of-order line."""
    if not text.isdigit() or len(text) > 15:
        raise ParseError(TOOL, f"a datagram count iperf prints no such way: {line[:120]}")
    return int(text)


def _side_line(line: str, found: Dict[str, Any]) -> None:
    """Headers, connections, ``Sent`` lines, warnings and complaints."""
    header = _HEADER.match(line)
    if header:
        side = "client" if header["role"].startswith("Client") else "server"
        found["headers"].setdefault(side, header["port"])
        found["protocol"] = found["protocol"] or header["proto"]
    connected = _CONNECTED.match(line)
    if connected:
        found["connections"][int(connected["id"])] = connected["port"]
        if "client" not in found["headers"]:  # printed before the client's own header
            found["early"].add(connected["port"])
        if connected["mark"] or connected["reverse"]:
            found["marked"].add(int(connected["id"]))
    sent = _SENT.match(line)
    if sent:
        key = sent["id"]
        count = _count(sent["n"], line)
        if key.startswith("SUM"):
            found["sum_sent"] = count
        else:
            found["sent"][int(key)] = count
    warning = _WARNING.search(line)
    if warning:
        found["warnings"].append(warning["msg"])
    failure = _FAILED.search(line)
    if failure and found["failure"] is None:
        found["failure"] = failure.group(1)


def _scan(lines: List[str]) -> Dict[str, Any]:
    """Rows and side facts of the text, in one pass."""
    found: Dict[str, Any] = {"rows": [], "protocol": None, "headers": {}, "connections": {},
                             "marked": set(), "early": set(), "sent": {}, "sum_sent": None,
                             "warnings": [], "failure": None}
    in_report = False
    last: Dict[int, Dict[str, Any]] = {}
    for line in lines:
        if line.endswith("Server Report:"):
            in_report = True
            continue
        head = _ID.match(line)
        if _OOO in line and head:  # [  1] 0.0000-2.0059 sec  4 datagrams ...
            before = line.partition(_OOO)[0].split()
            count = _count(before[-1] if before else "", line)
            stream = head.group(0).strip("[] *")
            row = last.get(-1 if stream == "SUM" else int(stream))
            if row is not None:
                row["ooo"] = count
        elif _looks_like_row(line):
            row = _row(line, "server_report" if in_report else "interval")
            found["rows"].append(row)
            last[row["stream"]] = row
            in_report = False
            continue
        _side_line(line, found)
    return found


def _role(found: Dict[str, Any]) -> Optional[str]:
    """``client`` or ``server`` (see the module docstring), None when the text does not say."""
    headers = found["headers"]
    if found["marked"]:
        return "server"
    if "client" in headers:
        # a server of -d/-r accepts a connection on its port before it connects back
        accepted_first = headers.get("server") in found["early"]
        return "server" if accepted_first else "client"
    if "server" in headers:
        return "server"
    return "client" if found["sent"] else None


def _directions(rows: List[Dict[str, Any]], found: Dict[str, Any], role: Optional[str]) -> None:
    """Set each row's direction (see the module docstring)."""
    listening = found["headers"].get("server")
    reverse = set(found["marked"])
    if listening is not None and "client" in found["headers"]:
        # a client receives on its own listening port; a server on its, and sends elsewhere
        on_port = {i for i, port in found["connections"].items() if port == listening}
        reverse |= on_port if role == "client" else set(found["connections"]) - on_port
    forward = {r["stream"] for r in rows if r["stream"] >= 0} - reverse
    for row in rows:
        if row["stream"] >= 0:
            row["direction"] = "reverse" if row["stream"] in reverse else "forward"
        else:  # a [SUM] over both directions belongs to neither
            row["direction"] = "forward" if not (reverse and forward) else None


def parse(text: str) -> Parsed:
    """Parse iperf 2.x client or server output, text or CSV (the parsers' contract:
    :mod:`labtools.tools.parsers`).

    Raises:
        ParseError: no report line, a unit the parser does not know, numbers iperf never
            prints, or a ``[SUM]`` line that disagrees with its streams.
    """
    if not text or not text.strip():
        raise ParseError(TOOL, "empty output (no report line)")
    if iperf2_csv.looks_like_csv(text):
        return iperf2_csv.parse(text)
    if _IPERF3_TEXT.search(text):
        raise ParseError(TOOL, "this is iperf3's text output, not iperf 2's: run `iperf3 -J` "
                               "and read that with `labtools parse iperf3`")
    found = _scan([line.strip() for line in text.splitlines()])
    rows: List[Dict[str, Any]] = found["rows"]
    if not rows:
        said = f"; iperf said: {found['failure']}" if found["failure"] else ""
        if not said and set(found["headers"]) == {"server"} and not found["connections"]:
            said = "; the server printed no connection (nothing arrived before it stopped)"
        raise ParseError(TOOL, f"no report line '[ ID] start-end sec transfer rate'{said}")
    role = _role(found)
    _directions(rows, found, role)
    mark_totals(rows)
    protocol = found["protocol"] or ("UDP" if any(r["total"] is not None for r in rows) else "TCP")
    disagreements: List[str] = []
    summary = summarize(rows, protocol, role, found["sent"], found["sum_sent"], disagreements)
    summary["format"] = "text"
    warnings = list(found["warnings"])
    if any(r["empty"] and r["kind"] != "interval" for r in rows):
        warnings.append(NOTHING_RECEIVED)
    summary["warnings"] = warnings + disagreements
    return Parsed(tool=TOOL, rows=Rows.of(COLUMNS, DTYPES, rows), summary=summary, raw=text,
                  warnings=tuple(disagreements))
