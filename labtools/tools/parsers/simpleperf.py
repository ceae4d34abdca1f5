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
  sender_mbps, receiver_mbps, exact (server_bytes == bytes_sent), interrupted (the
  transfer did not end as planned: a signal, a lost connection, a missing or wrong ACK),
  error.
- ``error``: role, message (the run failed; the same line went to stderr).

Server records: ``server_start`` (role, version, protocol, bind, port, unit),
``server_conn_start`` (session, conn, parallel, peer, local), ``server_interval``
(session, conn, peer, start_s, end_s, bytes, rate_mbps), ``server_conn_end`` (session, conn,
peer, bytes, duration_s, rate_mbps, interrupted: the data did not end with the client's
END record, error: why), ``server_session_end`` (session, peer, connections, bytes,
duration_s, rate_mbps), ``server_end`` (sessions, connections, bytes, interrupted: some
connection was) and ``warning`` (role, message).

Every field the parser reads is checked for its type: counts are whole numbers >= 0,
times and rates finite numbers >= 0 (a rate may be None), flags true/false, texts
strings; an interval ends at or after its start. Anything else is a :class:`ParseError`
naming the line and the field, so no summary ever holds a negative, NaN or infinite rate
or time. Records of other types are ignored.

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
server_duration_s, exact, interrupted, complete, error (message or None). ``complete``
is True only for a run whose every transfer ended as planned, with no error (client: the
``end`` record says not interrupted, exact, no error; server: at least one connection,
none interrupted); an incomplete run always has an ``error`` (the tool's, or
:data:`INCOMPLETE`), and a probe refuses it. Client output adds server, port, parallel,
time_s, amount_bytes_per_conn, version; server output adds sessions. Values the output
does not contain are None.

A client's output without its ``end`` record (and without an ``error`` record) is the
output of a client that was killed: its summary is incomplete with :data:`KILLED` as the
error, and keeps the interval rows it printed.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Dict, List, Optional, Tuple

from labtools.errors import ParseError
from labtools.tools.parsers.base import Parsed
from labtools.tools.rows import Rows

TOOL = "simpleperf"

COLUMNS = ["session", "conn", "side", "start_s", "end_s", "bytes", "rate_mbps"]
DTYPES = {"session": "object", "conn": "int64", "side": "object", "start_s": "float64",
          "end_s": "float64", "bytes": "int64", "rate_mbps": "float64"}

#: the summary's ``error`` of an incomplete run for which the tool printed no reason
INCOMPLETE = "the transfer was interrupted before its planned end"
#: the summary's ``error`` of a client output without its ``end`` record
KILLED = ("the client's output stops before its 'end' record (the client was killed, "
          "or its output was cut)")
#: largest count (a table's int64 column holds it)
MAX_COUNT = 2 ** 63 - 1
#: connection numbers are 1..5 (simpleperf's -P)
MAX_CONN = 5

Record = Dict[str, Any]


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


#: kind of field -> (check, what it must be)
KINDS: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    "count": (lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_COUNT,
              "a whole number >= 0"),
    "conn": (lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_CONN,
             f"a connection number 1..{MAX_CONN}"),
    "port": (lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 65535,
             "a port 1..65535"),
    "seconds": (lambda v: _number(v) and v >= 0, "a finite number of seconds >= 0"),
    "seconds?": (lambda v: v is None or (_number(v) and v >= 0),
                 "null or a finite number of seconds >= 0"),
    "rate": (lambda v: v is None or (_number(v) and v >= 0),
             "null or a finite rate >= 0"),
    "count?": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)
                                       and 0 <= v <= MAX_COUNT),
               "null or a whole number >= 0"),
    "text": (lambda v: isinstance(v, str), "text"),
    "text?": (lambda v: v is None or isinstance(v, str), "null or text"),
    "flag": (lambda v: isinstance(v, bool), "true or false"),
    "side": (lambda v: v in ("sender", "receiver"), "'sender' or 'receiver'"),
}

#: record type -> {key: kind}; every key is required, except those in OPTIONAL
SCHEMA: Dict[str, Dict[str, str]] = {
    "start": {"role": "text", "version": "text", "session": "text", "server": "text",
              "port": "port", "parallel": "conn", "time_s": "seconds?",
              "amount_bytes_per_conn": "count?", "interval_s": "seconds"},
    "interval": {"side": "side", "conn": "conn", "start_s": "seconds", "end_s": "seconds",
                 "bytes": "count", "rate_mbps": "rate"},
    "conn_end": {"conn": "conn", "bytes_sent": "count", "server_bytes": "count?",
                 "duration_s": "seconds", "error": "text?", "server_duration_s": "seconds?",
                 "sender_mbps": "rate", "receiver_mbps": "rate"},
    "end": {"connections": "count", "bytes_sent": "count", "server_bytes": "count?",
            "duration_s": "seconds", "server_duration_s": "seconds?", "sender_mbps": "rate",
            "receiver_mbps": "rate", "exact": "flag", "interrupted": "flag",
            "error": "text?"},
    "error": {"message": "text", "role": "text"},
    "server_interval": {"session": "text", "conn": "conn", "start_s": "seconds",
                        "end_s": "seconds", "bytes": "count", "rate_mbps": "rate"},
    "server_conn_end": {"session": "text", "conn": "conn", "bytes": "count",
                        "duration_s": "seconds", "interrupted": "flag", "error": "text?",
                        "rate_mbps": "rate"},
    "server_end": {"sessions": "count", "connections": "count", "bytes": "count",
                   "interrupted": "flag"},
}
#: record type -> keys that may be missing (checked when present)
OPTIONAL: Dict[str, Tuple[str, ...]] = {
    "conn_end": ("server_duration_s", "sender_mbps", "receiver_mbps"),
    "error": ("role",),
    "server_conn_end": ("rate_mbps",),
}
#: record type -> keys it must carry (what earlier versions of this module checked)
REQUIRED: Dict[str, Tuple[str, ...]] = {
    kind: tuple(k for k in keys if k not in OPTIONAL.get(kind, ())) for kind, keys in SCHEMA.items()
}


def _check(record: Record, number: int) -> None:
    kind = record["type"]
    schema = SCHEMA.get(kind)
    if schema is None:
        return
    missing = [k for k in REQUIRED[kind] if k not in record]
    if missing:
        raise ParseError(TOOL, f"line {number} ({kind}) lacks {', '.join(missing)}")
    for key, field_kind in schema.items():
        check, what = KINDS[field_kind]
        if key in record and not check(record[key]):
            raise ParseError(TOOL, f"line {number} ({kind}): {key} must be {what}, "
                                   f"not {json.dumps(record[key])[:40]}")
    if "start_s" in schema and record["end_s"] < record["start_s"]:
        raise ParseError(TOOL, f"line {number} ({kind}): the interval ends before it starts")


def _decode(line: str, number: int) -> Any:
    try:
        return json.loads(line)
    except RecursionError:
        raise ParseError(TOOL, f"line {number} is nested too deeply") from None
    except ValueError as err:  # JSONDecodeError, or a number with too many digits
        reason = err.msg if isinstance(err, json.JSONDecodeError) else str(err)
        raise ParseError(TOOL, f"line {number} is not valid JSON ({reason})") from None


def _records(text: str) -> List[Record]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        record = _decode(line, number)
        if not isinstance(record, dict) or "type" not in record:
            raise ParseError(TOOL, f"line {number} is not a record with a 'type'")
        if not isinstance(record["type"], str):
            raise ParseError(TOOL, f"line {number}: 'type' must be text, "
                                   f"not {json.dumps(record['type'])[:40]}")
        _check(record, number)
        records.append(record)
    return records


def json_records(text: str) -> List[Dict[str, Any]]:
    """The JSON objects among the lines of ``text`` (the kit's ``--json`` output with what
    else was printed), in order; lines that are not JSON objects are left out (the lenient
    reading of what :func:`parse` checks record by record)."""
    found = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                found.append(record)
    return found


def _first(records: List[Record], kind: str) -> Optional[Record]:
    return next((r for r in records if r["type"] == kind), None)


def _client(records: List[Record], text: str) -> Parsed:
    start = _first(records, "start")
    end = _first(records, "end")
    failure = _first(records, "error")
    session = start["session"] if start is not None else ""
    rows = [dict(r, session=session) for r in records if r["type"] == "interval"]
    summary: Dict[str, Any] = {
        "role": "client", "connections": None, "duration_s": None, "sender_bytes": None,
        "receiver_bytes": None, "sender_mbps": None, "receiver_mbps": None,
        "server_duration_s": None, "exact": None, "interrupted": True, "complete": False,
        "error": failure["message"] if failure is not None else KILLED if end is None else None,
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
        summary["complete"] = (not end["interrupted"] and end["exact"]
                               and summary["error"] is None)
    if not summary["complete"] and summary["error"] is None:
        summary["error"] = INCOMPLETE
    return Parsed(tool=TOOL, rows=Rows.of(COLUMNS, DTYPES, rows), summary=summary, raw=text)


def _server(records: List[Record], text: str) -> Parsed:
    ends = [r for r in records if r["type"] == "server_conn_end"]
    stop = _first(records, "server_end")
    failure = _first(records, "error")
    if not ends and failure is None and stop is None:
        raise ParseError(TOOL, "no 'server_conn_end' record: no connection finished")
    rows = [dict(r, side="receiver") for r in records if r["type"] == "server_interval"]
    sessions = {r["session"] for r in ends}
    received = sum(r["bytes"] for r in ends)
    longest = max((float(r["duration_s"]) for r in ends), default=None)
    errors = [r["error"] for r in ends if r["error"]]
    interrupted = any(r["interrupted"] for r in ends) or bool(stop and stop["interrupted"])
    rate = None
    if len(sessions) == 1 and longest:
        rate = round(received * 8 / longest / 1e6, 3)
    error = failure["message"] if failure is not None else (errors[0] if errors else None)
    complete = bool(ends) and not interrupted and error is None
    if not complete and error is None:
        error = INCOMPLETE if ends else "no transfer reached the server"
    summary = {
        "role": "server", "sessions": len(sessions), "connections": len(ends),
        "duration_s": longest, "sender_bytes": None, "receiver_bytes": received,
        "sender_mbps": None, "receiver_mbps": rate, "server_duration_s": longest,
        "exact": None, "interrupted": interrupted, "complete": complete, "error": error,
    }
    return Parsed(tool=TOOL, rows=Rows.of(COLUMNS, DTYPES, rows), summary=summary, raw=text)


def parse(text: str) -> Parsed:
    """Parse the ``--json`` lines of one simpleperf client or server run.

    Raises:
        ParseError: no simpleperf records, a malformed line, a record missing a key or
            holding a value of the wrong type or range.
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
