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
start_s     float    interval start, s since the test started
end_s       float    interval end, s
bytes       int      bytes in the interval
rate_mbps   float    rate in the interval, Mbit/s (10^6 bit/s)
retransmits float    TCP retransmissions (sender rows); NaN where iperf3 has none
packets     float    UDP datagrams; NaN for TCP
lost        float    UDP datagrams lost (receiver rows); NaN where absent
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

Real output breaks in known ways; the parser copes:

- text around the JSON (``iperf3: error - ...`` after it): ignored; an ``iperf3: error``
  line becomes ``error`` when the JSON has none;
- the JSON object printed twice: the LAST complete object is used;
- ``nan`` / ``-nan`` / ``inf`` values (older iperf3) and ``null`` (3.12): become None/NaN;
- an ``"error"`` field: if there are no results at all, it is the tool's error, not a
  parse failure: :class:`~labtools.errors.ToolError` ``iperf3: MESSAGE``; otherwise the
  results are kept, the message goes to ``summary['error']`` and ``complete`` is False (a
  probe refuses such a run: see :mod:`labtools.lab.probes`).

Text without any complete iperf3 JSON object raises :class:`ParseError` (tool ``iperf3``).
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

_NAN = re.compile(r"([:\[,]\s*)[-+]?(?:nan|inf(?:inity)?)\b", re.IGNORECASE)
_ERROR_LINE = re.compile(r"^iperf3: (?:error - )?(?P<msg>.+?)\s*$", re.MULTILINE)


def _num(value: Any) -> Optional[float]:
    """A finite float, or None (for None, NaN, infinities and non-numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _mbps(section: Optional[Dict[str, Any]]) -> Optional[float]:
    bps = _num((section or {}).get("bits_per_second"))
    return None if bps is None else bps / 1e6


def _json_objects(text: str) -> List[Dict[str, Any]]:
    """Every complete top-level iperf3 JSON object in ``text`` (a '{' at a line start)."""
    cleaned = _NAN.sub(r"\1null", text)
    decoder = json.JSONDecoder()
    found: List[Dict[str, Any]] = []
    pos = 0
    for m in re.finditer(r"^\{", cleaned, re.MULTILINE):
        if m.start() < pos:
            continue
        try:
            obj, end = decoder.raw_decode(cleaned, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and ("start" in obj or "error" in obj):
            found.append(obj)
            pos = end
    return found


def _row(source: str, side_default: str, idx: int, item: Dict[str, Any]) -> Dict[str, Any]:
    sender = item.get("sender")
    side = side_default if sender is None else ("sender" if sender else "receiver")
    rate = _mbps(item)
    return {
        "source": source, "side": side, "stream": idx,
        "socket": int(item.get("socket", -1)) if idx >= 0 else -1,
        "start_s": _num(item.get("start")), "end_s": _num(item.get("end")),
        "bytes": int(_num(item.get("bytes")) or 0),
        "rate_mbps": float("nan") if rate is None else rate,
        "retransmits": _num(item.get("retransmits")),
        "packets": _num(item.get("packets")),
        "lost": _num(item.get("lost_packets")),
        "jitter_ms": _num(item.get("jitter_ms")),
        "omitted": bool(item.get("omitted", False)),
        # data the client sends is forward; what it receives (-R, --bidir) reverse
        "direction": "forward" if (source == "client") == (side == "sender") else "reverse",
    }


def _interval_rows(intervals: List[Any], source: str,
                   side_default: str) -> Tuple[List[Dict[str, Any]], int]:
    """Rows of one ``intervals`` list and how many repeated intervals were dropped."""
    rows: List[Dict[str, Any]] = []
    seen: List[Any] = []
    dropped = 0
    for interval in intervals:
        if not isinstance(interval, dict):
            continue
        if interval in seen:
            dropped += 1
            continue
        seen.append(interval)
        for idx, stream in enumerate(interval.get("streams", []), start=1):
            rows.append(_row(source, side_default, idx, stream))
        for key in ("sum", "sum_bidir_reverse"):
            if isinstance(interval.get(key), dict):
                rows.append(_row(source, side_default, -1, interval[key]))
    return rows, dropped


def _table(doc: Dict[str, Any], reverse: bool) -> Tuple[Rows, int]:
    client_side = "receiver" if reverse else "sender"
    server_side = "sender" if reverse else "receiver"
    rows, dropped = _interval_rows(doc.get("intervals") or [], "client", client_side)
    server = doc.get("server_output_json")
    if isinstance(server, dict):
        more, more_dropped = _interval_rows(server.get("intervals") or [], "server", server_side)
        rows += more
        dropped += more_dropped
    return Rows.of(COLUMNS, DTYPES, rows), dropped


def _totals(end: Dict[str, Any], udp: bool, interrupted: bool) -> Dict[str, Any]:
    """Sender/receiver totals from ``end`` (see the module docstring)."""
    sent = end.get("sum_sent")
    if sent is None and udp:
        sent = end.get("sum")  # iperf3 before 3.12: one combined UDP sum
    received = end.get("sum_received")
    if received is not None and interrupted and not _num(received.get("bytes")):
        received = None  # an interrupted test has no receiver report, only zeros
    lost_from = received if udp and received is not None else (end.get("sum") if udp else None)
    out: Dict[str, Any] = {
        "duration_s": _num((sent or {}).get("seconds")),
        "sender_mbps": _mbps(sent),
        "sender_bytes": _int_or_none((sent or {}).get("bytes")),
        "receiver_mbps": _mbps(received),
        "receiver_bytes": _int_or_none((received or {}).get("bytes")),
        "retransmits": None if udp else _int_or_none((sent or {}).get("retransmits")),
    }
    udp_keys = {"jitter_ms": "jitter_ms", "lost_packets": "lost_packets",
                "packets": "packets", "lost_pct": "lost_percent"}
    for key, field in udp_keys.items():
        value = _num((lost_from or {}).get(field)) if udp else None
        out[key] = int(value) if value is not None and key in ("lost_packets", "packets") else value
    out["sent_packets"] = _int_or_none((sent or {}).get("packets")) if udp else None
    return out


def _int_or_none(value: Any) -> Optional[int]:
    number = _num(value)
    return None if number is None else int(number)


def _has_results(doc: Dict[str, Any]) -> bool:
    if doc.get("intervals"):
        return True
    end = doc.get("end") or {}
    return any(_num((end.get(k) or {}).get("bytes")) for k in ("sum_sent", "sum_received", "sum"))


def parse(text: str) -> Parsed:
    """Parse ``iperf3 -J`` output (possibly with stray text around it).

    Args:
        text: what iperf3 printed (stdout, optionally with stderr).

    Returns:
        :class:`Parsed` with the table and summary described in the module docstring.

    Raises:
        ParseError: no complete iperf3 JSON object.
        ToolError: iperf3 reported an error and produced no results.
    """
    if not text or not text.strip():
        raise ParseError(TOOL, "empty output (no JSON object from iperf3 -J)")
    objects = _json_objects(text)
    lines = [m["msg"] for m in _ERROR_LINE.finditer(text)]
    if not objects:
        said = f"; iperf3 said: {lines[-1]}" if lines else ""
        raise ParseError(TOOL, f"no complete JSON object (was -J given? output cut?){said}")
    doc = objects[-1]
    error = doc.get("error") or (lines[-1] if lines else None)
    if doc.get("error") and not _has_results(doc):
        raise ToolError(f"iperf3: {doc['error']}")
    if not _has_results(doc):
        raise ParseError(TOOL, "no intervals and no end totals in the JSON object")

    start = doc.get("start") or {}
    test = start.get("test_start") or {}
    end = doc.get("end") or {}
    reverse = bool(test.get("reverse", 0))
    protocol = str(test.get("protocol", "UDP" if "sum" in end else "TCP")).upper()
    version = str(start.get("version", "")).replace("iperf", "").strip() or None
    rows, dropped = _table(doc, reverse)
    summary: Dict[str, Any] = {
        "protocol": protocol,
        "streams": int(test.get("num_streams") or len(start.get("connected") or []) or 0),
        "reverse": reverse,
        "version": version,
    }
    summary.update(_totals(end, protocol == "UDP", interrupted=error is not None))
    # iperf3 3.12 does not say "bidir" in test_start; its end totals show it
    bidir = bool(test.get("bidir", 0)) or "sum_sent_bidir_reverse" in end
    summary.update(bidir=bidir,
                   reverse_sender_mbps=_mbps(end.get("sum_sent_bidir_reverse")) if bidir else None,
                   reverse_receiver_mbps=(_mbps(end.get("sum_received_bidir_reverse"))
                                          if bidir else None))
    has_server_json = isinstance(doc.get("server_output_json"), dict)
    summary.update(
        error=error,
        complete=error is None and bool(end.get("sum_sent") or end.get("sum")),
        server_output="json" if has_server_json else (
            "text" if "server_output_text" in doc else None),
        json_objects=len(objects),
        duplicate_intervals_dropped=dropped,
    )
    return Parsed(tool=TOOL, rows=rows, summary=summary, raw=text)
