"""Parse ``ss -tin`` (iproute2): the kernel's own view of each TCP connection.

What a student reads to see the window a connection really had: ``snd_wnd`` (the window
the receiver advertised), ``cwnd`` (the congestion window, segments), ``unacked``
(segments in flight), ``rtt`` (the kernel's smoothed RTT) and what limited the sender
(``rwnd_limited``: the receiver's window; ``sndbuf_limited``: its own socket buffer).

Table: one row per connection, in the order printed.

===================  =======  =====================================================
column               type     meaning
===================  =======  =====================================================
local                str      local address:port
peer                 str      peer address:port
send_q_bytes         int      bytes in the send queue (not yet acknowledged or sent)
recv_q_bytes         int      bytes received, not yet read by the program
congestion           str      congestion control (``cubic``, ``bbr``...)
cwnd                 Int64    congestion window, segments
mss_bytes            Int64    maximum segment size
rtt_ms               float    smoothed RTT, ms
rttvar_ms            float    its variation, ms
min_rtt_ms           float    smallest RTT seen, ms
snd_wnd_bytes        Int64    the window the peer advertised, bytes
unacked              Int64    segments sent and not yet acknowledged
bytes_acked          Int64    bytes the peer acknowledged
delivery_rate_mbps   float    the kernel's latest delivery rate estimate, Mbit/s
rwnd_limited_pct     float    share of the busy time limited by the receiver's window
sndbuf_limited_pct   float    share of the busy time limited by the send buffer
===================  =======  =====================================================

Numbers ss does not print for a connection are missing (NaN / <NA>).

Summary keys (of the connection that moved the most data, ``bytes_acked``; iperf3 also
keeps a control connection): ``connections`` (int), ``peer``, ``congestion``, ``cwnd``,
``mss_bytes``, ``rtt_ms``, ``min_rtt_ms``, ``snd_wnd_bytes``, ``in_flight_bytes``
(``unacked`` x ``mss_bytes``), ``rwnd_limited_pct``, ``sndbuf_limited_pct``.

Text without a connection line raises :class:`~labtools.errors.ParseError` (tool ``ss``).
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Optional

from labtools.errors import ParseError
from labtools.tools.parsers.base import Parsed
from labtools.tools.rows import Rows

TOOL = "ss"
COLUMNS = ["local", "peer", "send_q_bytes", "recv_q_bytes", "congestion", "cwnd", "mss_bytes",
           "rtt_ms", "rttvar_ms", "min_rtt_ms", "snd_wnd_bytes", "unacked", "bytes_acked",
           "delivery_rate_mbps", "rwnd_limited_pct", "sndbuf_limited_pct"]
DTYPES = {"local": "object", "peer": "object", "send_q_bytes": "int64",
          "recv_q_bytes": "int64", "congestion": "object", "cwnd": "Int64",
          "mss_bytes": "Int64", "rtt_ms": "float64", "rttvar_ms": "float64",
          "min_rtt_ms": "float64", "snd_wnd_bytes": "Int64", "unacked": "Int64",
          "bytes_acked": "Int64", "delivery_rate_mbps": "float64",
          "rwnd_limited_pct": "float64", "sndbuf_limited_pct": "float64"}

_CONNECTION = re.compile(r"^(?:ESTAB|SYN-SENT|SYN-RECV|FIN-WAIT-[12]|CLOSE-WAIT|LAST-ACK|"
                         r"TIME-WAIT|CLOSING|CLOSED)\s+(?P<recv>\d+)\s+(?P<send>\d+)\s+"
                         r"(?P<local>\S+)\s+(?P<peer>\S+)")
_INTEGERS = {"cwnd": "cwnd", "mss": "mss_bytes", "snd_wnd": "snd_wnd_bytes",
             "unacked": "unacked", "bytes_acked": "bytes_acked"}
_LIMITED = re.compile(r"\b(?P<what>rwnd|sndbuf)_limited:\d+ms\((?P<pct>[\d.]+)%\)")
_RTT = re.compile(r"\brtt:(?P<rtt>[\d.]+)/(?P<var>[\d.]+)")
_MINRTT = re.compile(r"\bminrtt:(?P<v>[\d.]+)")
_DELIVERY = re.compile(r"\bdelivery_rate (?P<v>\d+)bps")
_CONGESTION = re.compile(r"^\s*(?P<cc>[a-z][a-z0-9_]*)\s+(?:wscale|rto):")


def _float(pattern: "re.Pattern[str]", text: str, group: str = "v") -> Optional[float]:
    found = pattern.search(text)
    if found is None:
        return None
    value = float(found.group(group))
    return value if math.isfinite(value) else None


def _details(line: str) -> Dict[str, Any]:
    """The numbers of one connection's detail line (``ss -i``)."""
    row: Dict[str, Any] = {column: None for column in COLUMNS[4:]}
    cc = _CONGESTION.search(line)
    row["congestion"] = cc.group("cc") if cc else None
    for key, column in _INTEGERS.items():
        found = re.search(rf"\b{key}:(\d+)\b", line)
        row[column] = int(found.group(1)) if found else None
    row["rtt_ms"] = _float(_RTT, line, "rtt")
    row["rttvar_ms"] = _float(_RTT, line, "var")
    row["min_rtt_ms"] = _float(_MINRTT, line)
    rate = _float(_DELIVERY, line)
    row["delivery_rate_mbps"] = None if rate is None else rate / 1e6
    for found in _LIMITED.finditer(line):
        row[f"{found.group('what')}_limited_pct"] = float(found.group("pct"))
    return row


def parse(text: str) -> Parsed:
    """Parse ``ss -tin`` output (the module docstring has the columns and summary)."""
    records: List[Dict[str, Any]] = []
    for line in text.splitlines():
        head = _CONNECTION.match(line)
        if head is not None:
            records.append({"local": head.group("local"), "peer": head.group("peer"),
                            "send_q_bytes": int(head.group("send")),
                            "recv_q_bytes": int(head.group("recv")),
                            **{column: None for column in COLUMNS[4:]}})
        elif records and line[:1].isspace() and line.strip():
            records[-1].update({k: v for k, v in _details(line).items() if v is not None})
    if not records:
        raise ParseError(TOOL, "no connection line (was it ss -t? no connection matched?)")
    rows = Rows.of(COLUMNS, DTYPES, records)
    busiest = max(records, key=lambda r: r.get("bytes_acked") or 0)
    in_flight = (busiest["unacked"] * busiest["mss_bytes"]
                 if busiest.get("unacked") is not None and busiest.get("mss_bytes") else None)
    summary = {"connections": len(records), "peer": busiest["peer"],
               **{key: busiest.get(key) for key in (
                   "congestion", "cwnd", "mss_bytes", "rtt_ms", "min_rtt_ms", "snd_wnd_bytes",
                   "rwnd_limited_pct", "sndbuf_limited_pct")},
               "in_flight_bytes": in_flight}
    return Parsed(tool=TOOL, rows=rows, summary=summary, raw=text)
