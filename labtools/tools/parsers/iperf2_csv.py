"""Read iperf 2's CSV reports (``-y C``), client or server, TCP or UDP: the rows and summary
of :mod:`labtools.tools.parsers.iperf2`, which calls this module for such text.

Each report is one line of comma-separated fields, as iperf 2's man page and its source
(``ReportCSV``) print them: timestamp (``YYYYMMDDhhmmss``; iperf 2.1.8 prints
``19700101000000`` for a run's total), source address, source port, destination address,
destination port, transfer id (-1 for a ``[SUM]``), interval (``START-END`` in s), bytes,
bits per second; UDP adds jitter (ms), lost, total datagrams, loss (%) and datagrams out
of order. The transfer is exact (bytes) and the rate in bit/s, not rounded as in the text.

Which side sent a line: a UDP whole-run line with ``-1`` as its total (iperf 2.1) or a
line of 9 fields in UDP output (iperf 2.0's client) is the sender's; the other lines of
its stream are the sender's too (iperf 2.1 counts the datagrams sent in its interval
lines, with no loss or jitter: no receiver numbers), except a line after the stream's
whole-run line, which is the receiver's report the sender got back (iperf 2.0's Server
Report; 2.1.8 prints none in CSV). Lines with counts on a stream the text did not send
are a receiver's.

``--dualtest`` (``-d``) and ``--tradeoff`` (``-r``): a line's two endpoints (address and
port) are one connection, and connections that share an endpoint (the listening socket of
one side) are one direction. Two directions are the forward one (client to server) and
the reverse one. The role: ``server`` when the text has iperf 2.1's header of the
server's connection back (``Client connecting to ..., port P``: the direction with an
endpoint on port P is the reverse one); otherwise ``client`` when the text sent a stream
(then that direction is the forward one) or has two directions (TCP: in iperf 2.0's
lines, which print the printing host's own address and port first, the direction whose
own port is the port the other one connected to is the one received on the client's
listening socket, the reverse one; else the direction of the lowest transfer id is the
forward one, as iperf 2.1 numbers the client's own streams first); otherwise ``server``
for UDP. iperf 2.0's TCP lines of a server with ``-d`` look like a client's: they are
read as a client's. A TCP run in one direction prints the same
lines on both sides: ``role`` is None and so are ``sender_mbps`` and ``receiver_mbps``
(``rate_mbps`` is the run's rate). A line that starts like a CSV report but has other
fields raises :class:`ParseError` naming CSV.
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
#: iperf 2.1's header of a server's connection back to the client (-d, -r), even with -y C
_BACK = re.compile(r"^Client connecting to \S+, (?:TCP|UDP) port (?P<port>\d{1,5})\b")


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
                           "direction": "forward", "ooo": None, "empty": False,
                           "ends": ((fields[1], fields[2]), (fields[3], fields[4])),
                           "fields": len(fields)}
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


def _directions(rows: List[Dict[str, Any]]) -> List[List[Dict[str, Any]]]:
    """The streams' rows ([SUM] rows aside) grouped by direction: connections that share
    an endpoint, in the order first printed."""
    owner: Dict[Any, int] = {}
    groups: List[List[Dict[str, Any]]] = []
    for row in (r for r in rows if r["stream"] >= 0):
        found = sorted({owner[e] for e in row["ends"] if e in owner})
        if not found:
            groups.append([])
            found = [len(groups) - 1]
        keep = found[0]
        for other in found[1:]:  # the row joins two groups: one direction
            for member in groups[other]:
                owner.update(dict.fromkeys(member["ends"], keep))
            groups[keep] += groups[other]
            groups[other] = []
        groups[keep].append(row)
        owner.update(dict.fromkeys(row["ends"], keep))
    return [g for g in groups if g]


def _sends(group: List[Dict[str, Any]], udp: bool) -> bool:
    """The text sent this direction's data (a UDP sender's line is in it)."""
    return udp and any(r["fields"] == TCP_FIELDS or r["total"] == -1 for r in group)


def _mark_senders(group: List[Dict[str, Any]]) -> None:
    """A sent direction's lines: the sender's (no receiver numbers), except a line after
    its stream's whole-run sender line: the receiver's report the sender got back."""
    done: set = set()
    for row in group:
        if row["stream"] in done and row["total"] is not None and row["total"] >= 0:
            row["kind"] = "server_report"
            continue
        if row["fields"] == TCP_FIELDS or row["total"] == -1:
            done.add(row["stream"])
        row.update(jitter_ms=None, lost=None, total=None, ooo=None, empty=False)


def _forward_index(groups: List[List[Dict[str, Any]]], sent: List[bool], role: str,
                   port: Optional[str]) -> int:
    """Which of two directions is the forward one (module docstring)."""
    if role == "server":
        back = [i for i, g in enumerate(groups) if any(e[1] == port for r in g
                                                       for e in r["ends"])]
        if len(back) == 1:
            return 1 - back[0]
        return sent.index(False) if sent.count(True) == 1 else (
            0 if min(r["stream"] for r in groups[0]) > min(r["stream"] for r in groups[1])
            else 1)
    if sent.count(True) == 1:
        return sent.index(True)
    received = [i for i in (0, 1) if _listens(groups[i], groups[1 - i])]
    if len(received) == 1:  # iperf 2.0's lines: the client's own listening socket
        return 1 - received[0]
    return 0 if min(r["stream"] for r in groups[0]) <= min(r["stream"] for r in groups[1]) else 1


def _listens(mine: List[Dict[str, Any]], other: List[Dict[str, Any]]) -> bool:
    """iperf 2.0 prints a line's own end first (address and port of the host that prints
    it): a direction whose own port is the port the other direction connected to, on the
    same host, is the one this host received on its listening socket."""
    return any(m["ends"][0][1] == o["ends"][1][1] and m["ends"][0][0] == o["ends"][0][0]
               for m in mine for o in other)


def _assign(rows: List[Dict[str, Any]], udp: bool, port: Optional[str]) -> Optional[str]:
    """Mark each row's direction and the sender's lines; the role of the text."""
    groups = _directions(rows)
    sent = [_sends(g, udp) for g in groups]
    both = len(groups) == 2
    role: Optional[str] = ("server" if port is not None else
                           "client" if any(sent) or both else "server" if udp else None)
    forward = _forward_index(groups, sent, role or "client", port) if both else 0
    for i, group in enumerate(groups):
        for row in group:
            row["direction"] = "forward" if not both or i == forward else "reverse"
        if sent[i]:
            _mark_senders(group)
    for row in rows:
        if row["stream"] < 0:  # a [SUM]: over both directions when there are two
            row["direction"] = None if both else "forward"
            if role == "client" and udp and not both:
                row.update(jitter_ms=None, lost=None, total=None, ooo=None, empty=False)
    return role


def parse(text: str) -> Parsed:
    """Parse iperf 2's ``-y C`` output (see the module docstring).

    Raises:
        ParseError: a CSV line with other fields or numbers iperf never prints, or no
            report line.
    """
    rows: List[Dict[str, Any]] = []
    warnings: List[str] = []
    port: Optional[str] = None
    for line in (raw.strip() for raw in text.splitlines()):
        warning = _WARNING.search(line)
        header = _BACK.match(line)
        if _START.match(line):
            rows.append(_row(line))
        elif warning:
            warnings.append(warning["msg"])
        elif header:
            port = header["port"]
    if not rows:
        raise ParseError(TOOL, "no iperf -y C (CSV) report line")
    udp = any(r["fields"] == UDP_FIELDS for r in rows)
    role = _assign(rows, udp, port)
    mark_totals(rows)
    disagreements: List[str] = []
    summary = summarize(rows, "UDP" if udp else "TCP", role, {}, None, disagreements)
    summary["format"] = "csv"
    summary["warnings"] = warnings + disagreements
    if role is None:
        summary["sender_mbps"] = summary["receiver_mbps"] = None
    return Parsed(tool=TOOL, rows=Rows.of(COLUMNS, DTYPES, rows), summary=summary, raw=text,
                  warnings=tuple(disagreements))
