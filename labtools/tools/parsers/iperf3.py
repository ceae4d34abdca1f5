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
- ``warnings`` (list of str): where an ``end`` total is not the sum of the streams' final
  reports (``end.streams``) or is out of range (a negative loss, more lost than counted, a
  percentage outside 0..100); the keys above then hold the streams' sums (the loss
  percentage from their counts), or None where those are out of range too
  (:mod:`labtools.tools.parsers.iperf3_totals`). Such a total is never refused.

Every rate, time, size, jitter and datagram count in the table and the summary is a finite
number >= 0 or missing (None in the summary, NaN in the table). Only an interval's loss
(``lost``) may be negative, as iperf3 prints it: a datagram that arrives late comes off the
loss of the interval it arrives in, while iperf3's running total never drops below 0; the
totals ``lost_packets`` and ``lost_pct`` are >= 0, ``lost_pct`` at most 100, and no object
counts more datagrams lost than it counts (``packets``). The intervals of each stream (and
their sums) follow each other: one may not start before the previous one ended (beyond
:data:`CLOCK_SLACK_S`), except the first after the ``-O`` period, where iperf3 restarts its
clock.

Real output breaks in known ways; the parser copes:

- text around the JSON (a warning line or a terminal's prompt and escapes before it, a
  prompt or ``iperf3: error - ...`` after it: :mod:`labtools.tools.parsers.iperf3_json`):
  ignored; an ``iperf3: error`` line becomes ``error`` when the JSON has none;
- the JSON object printed twice: the LAST complete object is used;
- ``nan`` / ``-nan`` / ``inf`` values (older iperf3) and ``null`` (3.12): become None/NaN;
- an ``"error"`` field: if there are no results at all, it is the tool's error, not a
  parse failure: :class:`~labtools.errors.ToolError` ``iperf3: MESSAGE``; otherwise the
  results are kept, the message goes to ``summary['error']`` and ``complete`` is False (a
  probe refuses such a run: see :mod:`labtools.lab.probes`).

Text without any complete iperf3 JSON object raises :class:`ParseError` (tool ``iperf3``),
and so does an object with a value iperf3 never writes: text or true/false where a number
goes, a negative or infinite rate, time or size, an interval's loss out of the range
above (a total's is a warning), a rate
above 0 over 0 seconds, an interval that starts before the previous one ended, an interval
that ends before it starts (unless it follows an omitted one of a test run with ``-O``:
iperf3 restarts its clock when that period ends, and the interval it ended in starts at 0
on the new clock), a list where an object goes (the error names the field, e.g.
``end.sum_sent.bytes``, ``intervals[3].sum.start``). Output without any JSON document
still asks "was -J given?" (iperf3 3.12 has no ``--json-stream``; its one-object-a-line
events are not read).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from labtools.errors import ParseError, ToolError
from labtools.tools.parsers.base import Parsed
from labtools.tools.parsers.iperf3_fields import CLOCK_SLACK_S as CLOCK_SLACK_S
from labtools.tools.parsers.iperf3_fields import as_list as _list
from labtools.tools.parsers.iperf3_fields import check_loss as _check_loss
from labtools.tools.parsers.iperf3_fields import flag as _flag
from labtools.tools.parsers.iperf3_fields import in_order as _in_order
from labtools.tools.parsers.iperf3_fields import integer as _int
from labtools.tools.parsers.iperf3_fields import mbps as _mbps
from labtools.tools.parsers.iperf3_fields import num as _num
from labtools.tools.parsers.iperf3_fields import obj as _obj
from labtools.tools.parsers.iperf3_fields import required as _required
from labtools.tools.parsers.iperf3_fields import text_field as _text
from labtools.tools.parsers.iperf3_json import json_documents
from labtools.tools.parsers.iperf3_totals import reconcile, stream_sums
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
_ERROR_LINE = re.compile(r"^iperf3: (?:error - )?(?P<msg>.+?)\s*$", re.MULTILINE)


def _row(source: str, side_default: str, idx: int, item: Any, where: str,
         after_omitted: bool = False) -> Dict[str, Any]:
    """One table row; ``after_omitted``: the test ran with -O and the previous interval of
    this stream was omitted, so iperf3's clock may have restarted inside this one."""
    item = _obj(item, where)
    sender = _flag(item, "sender", where)
    side = side_default if sender is None else ("sender" if sender else "receiver")
    start, end = _required(item, "start", where), _required(item, "end", where)
    size = _int(item, "bytes", where)
    if size is None:
        raise ParseError(TOOL, f"{where}.bytes is missing")
    if end < start and after_omitted:
        # the -O period ended inside this interval: iperf3 zeroed its counters and restarted
        # its clock there, so the interval holds the bytes from 0 on the new clock to its
        # end (tests/fixtures/iperf3/tcp_omit_straddle.json)
        start = 0.0
    if end < start:
        raise ParseError(TOOL, f"{where} ends ({end:g} s) before it starts ({start:g} s)")
    rate = _mbps(item, where)
    _check_loss(item, where, total=False)
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
    last: Dict[str, Tuple[float, bool, str]] = {}  # stream or sum -> its previous interval
    for i, interval in enumerate(intervals):
        here = f"{where}[{i}]"
        interval = _obj(interval, here)
        key = json.dumps(interval, sort_keys=True)
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        streams = _list(interval.get("streams"), f"{here}.streams")
        parts = [(f"streams[{idx}]", stream) for idx, stream in enumerate(streams)]
        parts += [(part, interval[part]) for part in ("sum", "sum_bidir_reverse")
                  if interval.get(part) is not None]
        for name, item in parts:
            idx = int(name[8:-1]) + 1 if name.startswith("streams[") else -1
            after_omitted = omits and name in last and last[name][1]
            rows.append(_row(source, side_default, idx, item, f"{here}.{name}", after_omitted))
            _in_order(item, f"{here}.{name}", last.get(name), omits)
            last[name] = (_required(item, "end", f"{here}.{name}"), bool(item.get("omitted")),
                          here)
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


def _totals(sums: Dict[str, Dict[str, Any]], udp: bool, interrupted: bool,
            parts: Optional[Dict[str, Dict[str, float]]] = None,
            warnings: Optional[List[str]] = None) -> Dict[str, Any]:
    """Sender/receiver totals from ``end`` (see the module docstring), checked against
    ``parts``, the sums of ``end.streams`` (:mod:`~labtools.tools.parsers.iperf3_totals`):
    where they disagree, the streams' numbers and a sentence in ``warnings``."""
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
    lost_key = None if lost_from is None else lw[len("end."):]
    found = reconcile(out, sums, parts or {}, udp, sent_key, lost_key)
    if warnings is not None:
        warnings += found
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
    objects, problem = json_documents(text)
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
    bidir = bool(_flag(test, "bidir", "start.test_start")) or "sum_sent_bidir_reverse" in sums
    warnings: List[str] = []
    parts = stream_sums(_obj(doc.get("end"), "end"), protocol == "UDP", bidir)
    summary.update(_totals(sums, protocol == "UDP", error is not None, parts, warnings))
    # iperf3 3.12 does not say "bidir" in test_start; its end totals show it
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
        warnings=warnings,
    )
    return Parsed(tool=TOOL, rows=rows, summary=summary, raw=text, warnings=tuple(warnings))
