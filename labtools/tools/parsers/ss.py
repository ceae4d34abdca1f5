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

Every number is range-checked: whole numbers within 0 and 2**63-1, times and rates finite
and >= 0, ``cwnd``, ``mss``, ``unacked``, ``rtt`` and ``minrtt`` not 0 (ss leaves a field
out when it is 0), each share of the busy time at most 100 % and the two together at most
100.1 % (ss rounds each to 0.1 %). A value out of its range, or not a number, raises
:class:`~labtools.errors.ParseError` naming the line and the field
(``line 3: cwnd is 0: zero, which ss never prints``); so does text without a connection
line (tool ``ss``).
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
#: ss's name of a whole-number field -> its column
_INTEGERS = {"cwnd": "cwnd", "mss": "mss_bytes", "snd_wnd": "snd_wnd_bytes",
             "unacked": "unacked", "bytes_acked": "bytes_acked"}
#: fields ss prints only when they are not 0 (iproute2's tcp_stats_print): a 0 is not
#: ss output, and the window in flight is computed from mss and unacked
_NEVER_ZERO = ("cwnd", "mss", "unacked", "rtt", "minrtt")
_NUMBER = r"[-+]?[\d.]+(?:e[-+]?\d+)?|[-+]?(?:nan|inf)"
_LIMITED = re.compile(rf"\b(?P<what>rwnd|sndbuf)_limited:\d+ms\((?P<pct>{_NUMBER}|[^)]*)%\)")
_RTT = re.compile(rf"\brtt:(?P<rtt>{_NUMBER})/(?P<var>{_NUMBER})")
_MINRTT = re.compile(rf"\bminrtt:(?P<v>{_NUMBER})")
_DELIVERY = re.compile(rf"\bdelivery_rate (?P<v>{_NUMBER})bps")
_CONGESTION = re.compile(r"^\s*(?P<cc>[a-z][a-z0-9_]*)\s+(?:wscale|rto):")
#: the largest integer an Int64 column holds
MAX_INT = 2**63 - 1
#: ss prints each share of the busy time to 0.1 %: two shares may sum to 100.1
PERCENT_ROUNDING = 0.1


def _bad(line_no: int, field: str, value: str, what: str) -> ParseError:
    return ParseError(TOOL, f"line {line_no}: {field} is {value[:40]}: {what}")


def _float(pattern: "re.Pattern[str]", text: str, line_no: int, field: str,
           group: str = "v") -> Optional[float]:
    """The number ``pattern`` finds, None where ss did not print it.

    Raises:
        ParseError: not a finite number >= 0, or 0 where ss never prints 0.
    """
    found = pattern.search(text)
    if found is None:
        return None
    shown = found.group(group)
    try:
        value = float(shown)
    except ValueError:
        raise _bad(line_no, field, shown, "not a number") from None
    if not math.isfinite(value) or value < 0:
        raise _bad(line_no, field, shown, "not a finite number >= 0")
    if value == 0 and field in _NEVER_ZERO:
        raise _bad(line_no, field, shown, "zero, which ss never prints")
    return value


def _integer(line: str, key: str, line_no: int) -> Optional[int]:
    found = re.search(rf"\b{key}:(\S+?)(?=[\s,)]|$)", line)
    if found is None:
        return None
    shown = found.group(1)
    if not re.fullmatch(r"[-+]?\d+", shown):
        raise _bad(line_no, key, shown, "not a whole number")
    value = int(shown)
    if value < 0 or value > MAX_INT:
        raise _bad(line_no, key, shown, "out of range (0 to 2**63-1)")
    if value == 0 and key in _NEVER_ZERO:
        raise _bad(line_no, key, shown, "zero, which ss never prints")
    return value


def _details(line: str, line_no: int) -> Dict[str, Any]:
    """The numbers of one connection's detail line (``ss -i``), range-checked."""
    row: Dict[str, Any] = {column: None for column in COLUMNS[4:]}
    cc = _CONGESTION.search(line)
    row["congestion"] = cc.group("cc") if cc else None
    for key, column in _INTEGERS.items():
        row[column] = _integer(line, key, line_no)
    row["rtt_ms"] = _float(_RTT, line, line_no, "rtt", "rtt")
    row["rttvar_ms"] = _float(_RTT, line, line_no, "rttvar", "var")
    row["min_rtt_ms"] = _float(_MINRTT, line, line_no, "minrtt")
    rate = _float(_DELIVERY, line, line_no, "delivery_rate")
    row["delivery_rate_mbps"] = None if rate is None else rate / 1e6
    for found in _LIMITED.finditer(line):
        field = f"{found.group('what')}_limited"
        pct = _float(_LIMITED, found.group(0), line_no, field, "pct")
        if pct is not None and pct > 100:
            raise _bad(line_no, field, found.group("pct") + "%", "a share over 100 %")
        row[f"{field}_pct"] = pct
    shares = [row[c] for c in ("rwnd_limited_pct", "sndbuf_limited_pct") if row[c] is not None]
    if sum(shares) > 100 + PERCENT_ROUNDING:
        raise _bad(line_no, "rwnd_limited + sndbuf_limited", f"{sum(shares):g}%",
                   "shares of the busy time over 100 %")
    return row


def _header(head: "re.Match[str]", line_no: int) -> Dict[str, Any]:
    record: Dict[str, Any] = {"local": head.group("local"), "peer": head.group("peer")}
    for group, column in (("send", "send_q_bytes"), ("recv", "recv_q_bytes")):
        value = int(head.group(group))
        if value > MAX_INT:
            raise _bad(line_no, column, head.group(group), "out of range (0 to 2**63-1)")
        record[column] = value
    return record


def parse(text: str) -> Parsed:
    """Parse ``ss -tin`` output (the module docstring has the columns and summary)."""
    records: List[Dict[str, Any]] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        head = _CONNECTION.match(line)
        if head is not None:
            records.append({**_header(head, line_no),
                            **{column: None for column in COLUMNS[4:]}})
        elif records and line[:1].isspace() and line.strip():
            records[-1].update({k: v for k, v in _details(line, line_no).items()
                                if v is not None})
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
