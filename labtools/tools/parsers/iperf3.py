"""Parse the JSON output of ``iperf3 -J`` (client side; TCP and UDP, ``-P``, ``-R``).

Table: one row per stream per interval, plus one ``sum`` row per interval, from the
client's ``intervals`` and, when the client ran with ``--get-server-output`` against a
server started with ``-J``, from ``server_output_json.intervals``.

==========  =======  ==============================================================
column      type     meaning
==========  =======  ==============================================================
source      str      ``client`` or ``server`` (rows from ``server_output_json``)
side        str      ``sender`` or ``receiver``: whether ``source`` sent the data in
                     this interval (client rows are ``receiver`` with ``-R``)
stream      int      1-based position of the stream in the interval; -1 for the sum row
socket      int      iperf3's socket number of the stream; -1 for the sum row
start_s     float    interval start, s since the test started (never NaN)
end_s       float    interval end, s (never NaN, never before ``start_s``)
bytes       int      bytes in the interval
rate_mbps   float    rate in the interval, Mbit/s (10^6 bit/s); NaN where iperf3 wrote
                     ``null`` (3.12) or ``nan`` (older): its rate over zero seconds
retransmits float    TCP retransmissions (sender rows); NaN where iperf3 has none
packets     float    UDP datagrams; NaN for TCP
lost        float    UDP datagrams lost (receiver rows); NaN where absent. May be
                     negative: iperf3 counts datagrams that arrive out of order as
                     negative loss (esnet/iperf issues 412 and 914)
jitter_ms   float    UDP jitter, ms (receiver rows); NaN where absent
omitted     bool     interval inside the ``-O`` omit period (not in the totals)
direction   str      ``forward`` (client to server) or ``reverse`` (server to client:
                     ``-R``, or the second direction of ``--bidir``)
==========  =======  ==============================================================

Summary keys (rates in Mbit/s; None where the output has no such number):

- ``protocol`` (``TCP``/``UDP``), ``streams`` (int), ``reverse`` (bool, ``-R``),
  ``bidir`` (bool, ``--bidir``; then ``reverse_sender_mbps`` and ``reverse_receiver_mbps``
  are the server-to-client direction's totals),
  ``version`` (e.g. ``3.12``), ``duration_s``: the sender's measured duration, s.
- ``sender_mbps``, ``sender_bytes``: ``end.sum_sent`` (UDP before 3.12: ``end.sum``).
- ``receiver_mbps``, ``receiver_bytes``: ``end.sum_received``; trust this one, the sender
  counts what it put into its socket. None for an interrupted test, where iperf3 writes
  a zero receiver report, and for UDP output that has only ``end.sum``.
- ``retransmits`` (TCP), ``jitter_ms``, ``lost_packets``, ``packets``, ``lost_pct`` (UDP,
  the receiver's report: ``packets`` is what the receiver accounted for; ``lost_pct`` is
  iperf3's own figure, which 3.12 computes against the datagrams sent),
  ``sent_packets`` (UDP, the sender's count). When no datagram arrives iperf3 reports
  ``packets`` 0 and ``lost_pct`` 0: compare ``sent_packets``.
- ``error``: None, or iperf3's error message (partial results are kept).
- ``complete`` (bool): the ``end`` totals are present and there is no error.
- ``server_output``: ``json``, ``text`` or None (what ``--get-server-output`` returned).
- ``json_objects`` (int): complete JSON objects found; ``duplicate_intervals_dropped``
  (int): identical repeated intervals removed (3.12 repeats the last one on errors).

Every rate, time, size, jitter and datagram count in the table and the summary is a finite
number >= 0 or missing (None in the summary, NaN in the table); only the loss figures
(``lost``, ``lost_packets``, ``lost_pct``) may be negative, as iperf3 prints them.

Real output breaks in known ways; the parser copes:

- text around the JSON (``iperf3: error - ...`` after it): ignored; an ``iperf3: error``
  line becomes ``error`` when the JSON has none;
- the JSON object printed twice: the LAST complete object is used;
- ``nan`` / ``-nan`` / ``inf`` values (older iperf3) and ``null`` (3.12): become None/NaN;
- an ``"error"`` field: if there are no results at all, it is the tool's error, not a
  parse failure: :class:`~labtools.errors.ToolError` ``iperf3: MESSAGE``; otherwise the
  results are kept, the message goes to ``summary['error']`` and ``complete`` is False (a
  probe refuses such a run: see :mod:`labtools.lab.probes`).

Text without any complete iperf3 JSON object raises :class:`ParseError` (tool ``iperf3``),
and so does an object with a value iperf3 never writes: text or true/false where a number
goes, a negative or infinite rate, time or size, an interval that ends before it starts
(unless the test ran with ``-O``: iperf3 restarts its clock when that period ends, and the
interval it ended in starts at 0 on the new clock), a list where an object goes (the error
names the field, e.g. ``end.sum_sent.bytes``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, List, Optional, Tuple

from labtools.errors import ParseError, ToolError
from labtools.tools.parsers.base import Parsed
from labtools.tools.rows import Rows

TOOL = "iperf3"
COLUMNS = [
    "source", "side", "stream", "socket", "start_s", "end_s", "bytes", "rate_mbps",
    "retransmits", "packets", "lost", "jitter_ms", "omitted", "direction",
]
DTYPES = {"source": "object", "side": "object", "stream": "int64", "socket": "int64",
          "start_s": "float64", "end_s": "float64", "bytes": "int64", "rate_mbps": "float64",
          "retransmits": "float64", "packets": "float64", "lost": "float64",
          "jitter_ms": "float64", "omitted": "bool", "direction": "object"}
#: fields that are counts of lost datagrams: iperf3 prints them negative for reordering
SIGNED_FIELDS = ("lost_packets", "lost_percent")
#: the largest integer an int64 column holds
MAX_INT = 2**63 - 1

_NAN = re.compile(r"([:\[,]\s*)[-+]?(?:nan|inf(?:inity)?)\b", re.IGNORECASE)
_ERROR_LINE = re.compile(r"^iperf3: (?:error - )?(?P<msg>.+?)\s*$", re.MULTILINE)


def _bad(where: str, value: Any, what: str) -> ParseError:
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return ParseError(TOOL, f"{where} is {shown}: {what}")


def _at(where: str, key: str) -> str:
    """The path of a field, as the error names it: ``end.sum_sent.bytes``."""
    return f"{where}.{key}" if where else key


def _obj(value: Any, where: str) -> Dict[str, Any]:
    """An object of the document ({} when absent or null)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(where, value, "not an object")
    return value


def _list(value: Any, where: str) -> List[Any]:
    """A list of the document ([] when absent or null)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(where, value, "not a list")
    return value


def _num(section: Dict[str, Any], key: str, where: str) -> Optional[float]:
    """``section[key]`` as a finite float, None when absent or null (iperf3's NaN).

    Raises:
        ParseError: not a number, infinite, or negative (except :data:`SIGNED_FIELDS`).
    """
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(_at(where, key), value, "not a number")
    try:
        number = float(value)
    except OverflowError:
        raise _bad(_at(where, key), value, "too large") from None
    if not math.isfinite(number):
        raise _bad(_at(where, key), value, "not a finite number")
    if number < 0 and key not in SIGNED_FIELDS:
        raise _bad(_at(where, key), value, "negative")
    return number


def _required(section: Dict[str, Any], key: str, where: str) -> float:
    number = _num(section, key, where)
    if number is None:
        raise ParseError(TOOL, f"{where}.{key} is missing")
    return number


def _int(section: Dict[str, Any], key: str, where: str) -> Optional[int]:
    """An integer field (a size, a count, a socket) that fits the table's int64 column."""
    number = _num(section, key, where)
    if number is not None and abs(number) > MAX_INT:
        raise _bad(_at(where, key), section[key], "too large")
    return None if number is None else int(number)


def _flag(section: Dict[str, Any], key: str, where: str) -> Optional[bool]:
    """A true/false field (iperf3 writes true/false, or 0/1 in ``test_start``)."""
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or (type(value) is int and value in (0, 1)):
        return bool(value)
    raise _bad(_at(where, key), value, "not true/false")


def _text(section: Dict[str, Any], key: str, where: str) -> Optional[str]:
    value = section.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(_at(where, key), value, "not a text")
    return value


def _mbps(section: Dict[str, Any], where: str) -> Optional[float]:
    bps = _num(section, "bits_per_second", where)
    return None if bps is None else bps / 1e6


def _json_objects(text: str) -> Tuple[List[Dict[str, Any]], str]:
    """Every complete top-level iperf3 JSON object in ``text`` (a '{' at a line start),
    and why the last object that did not decode failed ("" if none failed)."""
    cleaned = _NAN.sub(r"\1null", text)
    decoder = json.JSONDecoder()
    found: List[Dict[str, Any]] = []
    problem = ""
    pos = 0
    for m in re.finditer(r"^\{", cleaned, re.MULTILINE):
        if m.start() < pos:
            continue
        try:
            obj, end = decoder.raw_decode(cleaned, m.start())
        except ValueError as err:  # not JSON, cut short, or an integer of over 4300 digits
            problem = err.msg if isinstance(err, json.JSONDecodeError) else str(err).split(":")[0]
            continue
        except RecursionError:
            raise ParseError(TOOL, "JSON nested far deeper than iperf3 writes") from None
        if isinstance(obj, dict) and ("start" in obj or "error" in obj):
            found.append(obj)
            pos = end
    return found, problem


def _row(source: str, side_default: str, idx: int, item: Any, where: str,
         omits: bool = False) -> Dict[str, Any]:
    item = _obj(item, where)
    sender = _flag(item, "sender", where)
    side = side_default if sender is None else ("sender" if sender else "receiver")
    start, end = _required(item, "start", where), _required(item, "end", where)
    size = _int(item, "bytes", where)
    if size is None:
        raise ParseError(TOOL, f"{where}.bytes is missing")
    if end < start and omits:
        # the -O period ended inside this interval: iperf3 zeroed its counters and restarted
        # its clock there, so the interval holds the bytes from 0 on the new clock to its
        # end (tests/fixtures/iperf3/tcp_omit_straddle.json)
        start = 0.0
    if end < start:
        raise ParseError(TOOL, f"{where} ends ({end:g} s) before it starts ({start:g} s)")
    rate = _mbps(item, where)
    socket = _int(item, "socket", where) if idx >= 0 else None
    return {
        "source": source, "side": side, "stream": idx,
        "socket": -1 if socket is None else socket,
        "start_s": start, "end_s": end,
        "bytes": size,
        "rate_mbps": float("nan") if rate is None else rate,
        "retransmits": _num(item, "retransmits", where),
        "packets": _num(item, "packets", where),
        "lost": _num(item, "lost_packets", where),
        "jitter_ms": _num(item, "jitter_ms", where),
        "omitted": bool(_flag(item, "omitted", where)),
        # data the client sends is forward; what it receives (-R, --bidir) reverse
        "direction": "forward" if (source == "client") == (side == "sender") else "reverse",
    }


def _interval_rows(intervals: List[Any], source: str, side_default: str,
                   where: str, omits: bool = False) -> Tuple[List[Dict[str, Any]], int]:
    """Rows of one ``intervals`` list and how many repeated intervals were dropped."""
    rows: List[Dict[str, Any]] = []
    seen = set()
    dropped = 0
    for i, interval in enumerate(intervals):
        here = f"{where}[{i}]"
        interval = _obj(interval, here)
        key = json.dumps(interval, sort_keys=True)
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        streams = _list(interval.get("streams"), f"{here}.streams")
        for idx, stream in enumerate(streams, start=1):
            rows.append(_row(source, side_default, idx, stream, f"{here}.streams[{idx - 1}]",
                             omits))
        for part in ("sum", "sum_bidir_reverse"):
            if interval.get(part) is not None:
                rows.append(_row(source, side_default, -1, interval[part], f"{here}.{part}",
                                 omits))
    return rows, dropped


def _omits(doc: Dict[str, Any], test: Dict[str, Any]) -> bool:
    """Whether the test ran with ``-O`` (``test_start.omit`` is whole seconds: -O 0.5 says
    0; an interval marked omitted says it too)."""
    if _num(test, "omit", "start.test_start"):
        return True
    found = doc.get("intervals")
    intervals: List[Any] = found if isinstance(found, list) else []
    return any(isinstance(i, dict) and isinstance(i.get("sum"), dict)
               and i["sum"].get("omitted") is True for i in intervals)


def _table(doc: Dict[str, Any], reverse: bool, omits: bool = False) -> Tuple[Rows, int]:
    """The rows of the client's and the server's intervals; ``omits``: the test ran with
    ``-O`` (its clock restarts when that period ends)."""
    client_side = "receiver" if reverse else "sender"
    server_side = "sender" if reverse else "receiver"
    rows, dropped = _interval_rows(_list(doc.get("intervals"), "intervals"), "client",
                                   client_side, "intervals", omits)
    if doc.get("server_output_json") is not None:
        server = _obj(doc["server_output_json"], "server_output_json")
        where = "server_output_json.intervals"
        more, more_dropped = _interval_rows(_list(server.get("intervals"), where), "server",
                                            server_side, where, omits)
        rows += more
        dropped += more_dropped
    return Rows.of(COLUMNS, DTYPES, rows), dropped


def _sums(end: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The ``end`` totals that are there, each checked to be an object."""
    names = ("sum_sent", "sum_received", "sum", "sum_sent_bidir_reverse",
             "sum_received_bidir_reverse")
    return {n: _obj(end[n], f"end.{n}") for n in names if end.get(n) is not None}


def _totals(sums: Dict[str, Dict[str, Any]], udp: bool, interrupted: bool) -> Dict[str, Any]:
    """Sender/receiver totals from ``end`` (see the module docstring)."""
    sent_key = "sum_sent" if "sum_sent" in sums or not udp else "sum"  # UDP before 3.12
    sent = sums.get(sent_key, {})
    received: Optional[Dict[str, Any]] = sums.get("sum_received")
    if received is not None and interrupted and not _num(received, "bytes", "end.sum_received"):
        received = None  # an interrupted test has no receiver report, only zeros
    sw, rw = f"end.{sent_key}", "end.sum_received"
    out: Dict[str, Any] = {
        "duration_s": _num(sent, "seconds", sw),
        "sender_mbps": _mbps(sent, sw),
        "sender_bytes": _int(sent, "bytes", sw),
        "receiver_mbps": _mbps(received or {}, rw),
        "receiver_bytes": _int(received or {}, "bytes", rw),
        "retransmits": None if udp else _int(sent, "retransmits", sw),
    }
    lost_from, lw = (received, rw) if received is not None else (sums.get("sum"), "end.sum")
    udp_keys = {"jitter_ms": "jitter_ms", "lost_packets": "lost_packets",
                "packets": "packets", "lost_pct": "lost_percent"}
    for key, field in udp_keys.items():
        value = _num(lost_from or {}, field, lw) if udp else None
        out[key] = int(value) if value is not None and key in ("lost_packets", "packets") else value
    out["sent_packets"] = _int(sent, "packets", sw) if udp else None
    return out


def _has_results(doc: Dict[str, Any]) -> bool:
    if _list(doc.get("intervals"), "intervals"):
        return True
    sums = _sums(_obj(doc.get("end"), "end"))
    return any(_num(sums.get(k, {}), "bytes", f"end.{k}")
               for k in ("sum_sent", "sum_received", "sum"))


def _document(text: str) -> Tuple[Dict[str, Any], int, Optional[str]]:
    """The iperf3 object to read, how many were found, and iperf3's error (or None)."""
    if not text or not text.strip():
        raise ParseError(TOOL, "empty output (no JSON object from iperf3 -J)")
    objects, problem = _json_objects(text)
    lines = [m["msg"] for m in _ERROR_LINE.finditer(text)]
    if not objects:
        said = f"; iperf3 said: {lines[-1]}" if lines else ""
        why = f"; {problem}" if problem and not said else ""
        raise ParseError(TOOL, f"no complete JSON object (was -J given? output cut?{why}){said}")
    doc = objects[-1]
    error = _text(doc, "error", "") or (lines[-1] if lines else None)
    if doc.get("error") and not _has_results(doc):
        raise ToolError(f"iperf3: {doc['error']}")
    if not _has_results(doc):
        raise ParseError(TOOL, "no intervals and no end totals in the JSON object")
    return doc, len(objects), error


def parse(text: str) -> Parsed:
    """Parse ``iperf3 -J`` output, possibly with stray text around it (the parsers'
    contract: :mod:`labtools.tools.parsers`).

    Raises:
        ParseError: no complete iperf3 JSON object, or a value iperf3 never writes.
        ToolError: iperf3 reported an error and produced no results, or results that do
            not parse.
    """
    doc, found, error = _document(text)
    try:
        return _parse_document(doc, found, error, text)
    except ParseError as err:
        if not doc.get("error"):
            raise
        # a run iperf3 reported an error for is the tool's failure, even when what it
        # printed before it does not parse (killed during -O, 3.12 printed an interval
        # ending before it starts: tests/fixtures/iperf3/server_killed_in_omit.json)
        raise ToolError(f"iperf3: {doc['error']} (its partial output: {err.reason})") from None


def _parse_document(doc: Dict[str, Any], found: int, error: Optional[str],
                    text: str) -> Parsed:
    """The :class:`Parsed` of iperf3's last JSON document (``found``: how many there were;
    ``error``: what iperf3 reported, if anything)."""
    start = _obj(doc.get("start"), "start")
    test = _obj(start.get("test_start"), "start.test_start")
    sums = _sums(_obj(doc.get("end"), "end"))
    reverse = bool(_flag(test, "reverse", "start.test_start"))
    protocol = (_text(test, "protocol", "start.test_start")
                or ("UDP" if "sum" in sums else "TCP")).upper()
    version = (_text(start, "version", "start") or "").replace("iperf", "").strip() or None
    rows, dropped = _table(doc, reverse, _omits(doc, test))
    connected = _list(start.get("connected"), "start.connected")
    streams = _int(test, "num_streams", "start.test_start") or len(connected)
    summary: Dict[str, Any] = {"protocol": protocol, "streams": streams, "reverse": reverse,
                               "version": version}
    summary.update(_totals(sums, protocol == "UDP", interrupted=error is not None))
    # iperf3 3.12 does not say "bidir" in test_start; its end totals show it
    bidir = bool(_flag(test, "bidir", "start.test_start")) or "sum_sent_bidir_reverse" in sums
    summary.update(
        bidir=bidir,
        reverse_sender_mbps=(_mbps(sums.get("sum_sent_bidir_reverse", {}),
                                   "end.sum_sent_bidir_reverse") if bidir else None),
        reverse_receiver_mbps=(_mbps(sums.get("sum_received_bidir_reverse", {}),
                                     "end.sum_received_bidir_reverse") if bidir else None))
    has_server_json = doc.get("server_output_json") is not None
    summary.update(
        error=error,
        complete=error is None and bool(sums.get("sum_sent") or sums.get("sum")),
        server_output="json" if has_server_json else (
            "text" if "server_output_text" in doc else None),
        json_objects=found,
        duplicate_intervals_dropped=dropped,
    )
    return Parsed(tool=TOOL, rows=rows, summary=summary, raw=text)
