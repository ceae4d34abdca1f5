"""Parser of ``simpleperf --json`` output (the kit's own TCP tool,
:mod:`labtools.tools.simpleperf`).

The input is what the client (``simpleperf -c ... --json``) or the server
(``simpleperf -s ... --json``) printed on stdout: one JSON object per line, each with a
``type``. Lines that do not start with ``{`` are ignored (shell noise on a Mininet host);
a line that starts with ``{`` must be a valid record. Units: bytes, seconds, Mbit/s
(10^6 bit/s).

Client records (exact keys):

- ``start``: role (``client``), version, protocol, session, server, port, parallel,
  time_s (None when an amount is sent), amount_bytes_per_conn (None when timed),
  interval_s (0 = no interval rows), unit.
- ``conn_start``: conn, local, remote.
- ``interval``: side (``sender``: bytes the client handed to its socket; ``receiver``: bytes
  the server received, server clock), conn, start_s, end_s, bytes, rate_mbps.
- ``conn_end``: conn, bytes_sent, server_bytes, duration_s, server_duration_s,
  sender_mbps, receiver_mbps, error.
- ``end``: role, connections, bytes_sent, server_bytes, duration_s, server_duration_s,
  sender_mbps, receiver_mbps, exact (server_bytes == bytes_sent), interrupted, error.
- ``error``: role, message (the run failed; the same line went to stderr).

Server records: ``server_start`` (role, version, protocol, bind, port, unit),
``server_conn_start`` (session, conn, parallel, peer, local), ``server_interval``
(session, conn, peer, start_s, end_s, bytes, rate_mbps), ``server_conn_end`` (session, conn,
peer, bytes, duration_s, rate_mbps, interrupted, error), ``server_session_end`` (session,
peer, connections, bytes, duration_s, rate_mbps), ``server_end`` (sessions, connections,
bytes, interrupted) and ``warning`` (role, message).

Table (one row per interval; empty when the run had no ``-i``):

========= ====== ==========================================================
column    type   meaning
========= ====== ==========================================================
session   str    session id (hex) the row belongs to
conn      int    connection number within the session, 1..5
side      str    ``sender`` (client's count) or ``receiver`` (server's count)
start_s   float  interval start, s since the transfer started
end_s     float  interval end, s
bytes     int    bytes in the interval
rate_mbps float  bytes * 8 / (end_s - start_s) / 1e6, None for an empty span
========= ====== ==========================================================

Summary keys: role (``client``/``server``), connections, duration_s (client: sending time;
server: longest connection), sender_bytes, receiver_bytes (the server's count, the
truth), sender_mbps, receiver_mbps (receiver_bytes * 8 / server_duration_s / 1e6; for
server output only when it holds a single session),
server_duration_s, exact, interrupted, error (message or None). Client output adds
server, port, parallel, time_s, amount_bytes_per_conn, version; server output adds
sessions. Values the output does not contain are None.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from labtools.errors import ParseError
from labtools.tools.parsers.base import Parsed
from labtools.tools.rows import Rows

TOOL = "simpleperf"

COLUMNS = ["session", "conn", "side", "start_s", "end_s", "bytes", "rate_mbps"]
DTYPES = {"session": "object", "conn": "int64", "side": "object", "start_s": "float64",
          "end_s": "float64", "bytes": "int64", "rate_mbps": "float64"}

#: record type -> keys it must carry
REQUIRED: Dict[str, tuple] = {
    "start": ("role", "version", "session", "server", "port", "parallel", "time_s",
              "amount_bytes_per_conn", "interval_s"),
    "interval": ("side", "conn", "start_s", "end_s", "bytes", "rate_mbps"),
    "conn_end": ("conn", "bytes_sent", "server_bytes", "duration_s", "error"),
    "end": ("connections", "bytes_sent", "server_bytes", "duration_s", "server_duration_s",
            "sender_mbps", "receiver_mbps", "exact", "interrupted", "error"),
    "error": ("message",),
    "server_interval": ("session", "conn", "start_s", "end_s", "bytes", "rate_mbps"),
    "server_conn_end": ("session", "conn", "bytes", "duration_s", "interrupted", "error"),
    "server_end": ("sessions", "connections", "bytes", "interrupted"),
}

Record = Dict[str, Any]


def _records(text: str) -> List[Record]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ParseError(TOOL, f"line {number} is not valid JSON ({err.msg})") from None
        if not isinstance(record, dict) or "type" not in record:
            raise ParseError(TOOL, f"line {number} is not a record with a 'type'")
        missing = [k for k in REQUIRED.get(record["type"], ()) if k not in record]
        if missing:
            raise ParseError(TOOL, f"line {number} ({record['type']}) lacks {', '.join(missing)}")
        records.append(record)
    return records


def _first(records: List[Record], kind: str) -> Optional[Record]:
    return next((r for r in records if r["type"] == kind), None)


def _client(records: List[Record], text: str) -> Parsed:
    start = _first(records, "start")
    end = _first(records, "end")
    failure = _first(records, "error")
    if end is None and failure is None:
        raise ParseError(TOOL, "no 'end' record: the client did not finish")
    session = start["session"] if start is not None else ""
    rows = [dict(r, session=session) for r in records if r["type"] == "interval"]
    summary: Dict[str, Any] = {
        "role": "client", "connections": None, "duration_s": None, "sender_bytes": None,
        "receiver_bytes": None, "sender_mbps": None, "receiver_mbps": None,
        "server_duration_s": None, "exact": None, "interrupted": False,
        "error": failure["message"] if failure is not None else None,
        "server": None, "port": None, "parallel": None, "time_s": None,
        "amount_bytes_per_conn": None, "version": None,
    }
    if start is not None:
        for key in ("server", "port", "parallel", "time_s", "amount_bytes_per_conn", "version"):
            summary[key] = start[key]
    if end is not None:
        summary.update({
            "connections": end["connections"], "duration_s": end["duration_s"],
            "sender_bytes": end["bytes_sent"], "receiver_bytes": end["server_bytes"],
            "sender_mbps": end["sender_mbps"], "receiver_mbps": end["receiver_mbps"],
            "server_duration_s": end["server_duration_s"], "exact": end["exact"],
            "interrupted": end["interrupted"],
            "error": end["error"] if end["error"] is not None else summary["error"],
        })
    return Parsed(tool=TOOL, rows=Rows.of(COLUMNS, DTYPES, rows), summary=summary, raw=text)


def _server(records: List[Record], text: str) -> Parsed:
    ends = [r for r in records if r["type"] == "server_conn_end"]
    stop = _first(records, "server_end")
    failure = _first(records, "error")
    if not ends and failure is None and stop is None:
        raise ParseError(TOOL, "no 'server_conn_end' record: no connection finished")
    rows = [dict(r, side="receiver") for r in records if r["type"] == "server_interval"]
    sessions = {r["session"] for r in ends}
    received = sum(int(r["bytes"]) for r in ends)
    longest = max((float(r["duration_s"]) for r in ends), default=None)
    errors = [r["error"] for r in ends if r["error"]]
    rate = None
    if len(sessions) == 1 and longest:
        rate = round(received * 8 / longest / 1e6, 3)
    summary = {
        "role": "server", "sessions": len(sessions), "connections": len(ends),
        "duration_s": longest, "sender_bytes": None, "receiver_bytes": received,
        "sender_mbps": None, "receiver_mbps": rate, "server_duration_s": longest,
        "exact": None,
        "interrupted": bool(stop["interrupted"]) if stop is not None else False,
        "error": failure["message"] if failure is not None else (errors[0] if errors else None),
    }
    return Parsed(tool=TOOL, rows=Rows.of(COLUMNS, DTYPES, rows), summary=summary, raw=text)


def parse(text: str) -> Parsed:
    """Parse the ``--json`` lines of one simpleperf client or server run.

    Raises:
        ParseError: no simpleperf records, a malformed line, a record missing a key, or a
            client run without its ``end`` record (and no ``error`` record).
    """
    records = _records(text)
    if not records:
        raise ParseError(TOOL, "no JSON records (was simpleperf run with --json?)")
    kinds = {r["type"] for r in records}
    if kinds & {"start", "interval", "conn_end", "end"}:
        return _client(records, text)
    if any(k.startswith("server_") for k in kinds):
        return _server(records, text)
    if "error" in kinds:
        return _client(records, text)
    raise ParseError(TOOL, f"no client or server records (types: {', '.join(sorted(kinds))})")
