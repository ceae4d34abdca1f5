"""Output of simpleperf: the same records printed as JSON lines or as human tables.

Client and server describe what happens as records (dicts with a ``type`` key, schema in
:mod:`labtools.tools.parsers.simpleperf`). With ``--json`` each record is printed as one JSON
object per line on stdout; otherwise the records are rendered as tables in the display
unit of ``-f`` (decimal: 1 KB = 1000 B, 1 MB = 10^6 B). Rates are always Mbit/s.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Callable, Dict, Optional, TextIO, Tuple

from labtools.tools.simpleperf.options import UNITS

Record = Dict[str, Any]

class HeldRows:
    """Interval rows printed one interval late, so that a last sliver (see
    :data:`SLIVER_FRACTION`) is folded into the row before it instead of printed with an
    impossible rate. Rows stay contiguous and their bytes add up to the total.

    ``emit(start_s, end_s, nbytes)`` prints a row."""

    def __init__(self, interval_s: float, emit: Callable[[float, float, int], None]) -> None:
        self.interval_s = interval_s
        self.emit = emit
        self.held: Optional[Tuple[float, float, int]] = None

    def add(self, start_s: float, end_s: float, nbytes: int) -> None:
        """A finished interval: print the one held so far, hold this one."""
        if self.held is not None:
            self.emit(*self.held)
        self.held = (start_s, end_s, nbytes)

    def close(self, start_s: float, end_s: float, nbytes: int) -> None:
        """The last interval (``nbytes`` may be 0: nothing more arrived): folded into the
        held row when it is a sliver, then everything is printed."""
        last: Optional[Tuple[float, float, int]] = (start_s, end_s, nbytes) if nbytes > 0 else None
        if last is not None and self.held is not None and \
                end_s - start_s < SLIVER_FRACTION * self.interval_s:
            held_start, _end, held_bytes = self.held
            self.held, last = (held_start, end_s, held_bytes + nbytes), None
        for row in (self.held, last):
            if row is not None:
                self.emit(*row)
        self.held = None


#: a last interval shorter than this fraction of the interval length is a sliver: the bytes
#: that arrived (or were handed over) in its few milliseconds give a rate the transfer never
#: had. It is folded into the row before it where that row is still to be printed, and
#: otherwise not printed; its bytes always stay in the totals.
SLIVER_FRACTION = 0.1


def mbps(nbytes: int, seconds: float) -> Optional[float]:
    """Rate in Mbit/s (10^6 bit/s) of ``nbytes`` in ``seconds``; None if no time passed."""
    if seconds <= 0:
        return None
    return round(nbytes * 8 / seconds / 1e6, 3)


def seconds(value: float) -> float:
    """A time in seconds, rounded to the microsecond for printing."""
    return round(value, 6)


def format_bytes(nbytes: Optional[int], unit: str) -> str:
    """``nbytes`` in ``unit`` (``B``, ``KB`` or ``MB``), e.g. ``12.50 MB``; ``-`` if unknown."""
    if nbytes is None:
        return "-"
    if unit == "B":
        return f"{nbytes} B"
    return f"{nbytes / UNITS[unit]:.2f} {unit}"


def format_rate(rate_mbps: Optional[float]) -> str:
    """A rate in Mbit/s, e.g. ``94.12 Mbps``; ``-`` if unknown."""
    return "-" if rate_mbps is None else f"{rate_mbps:.2f} Mbps"


def _span(start_s: float, end_s: float) -> str:
    return f"{start_s:.2f} - {end_s:.2f}"


def _row(*cells: str) -> str:
    widths = (12, 16, 18, 18, 17, 17)
    return "".join(cell.ljust(width - 1) + " " for cell, width in zip(cells, widths)).rstrip()


#: table kind -> header line
_HEADERS = {
    "sender_interval": _row("ID", "Interval", "Transfer", "Rate (sender)"),
    "receiver_interval": _row("ID", "Interval", "Received", "Rate (receiver)"),
    "conn_end": _row("ID", "Interval", "Sent", "Received", "Sender rate", "Receiver rate"),
    "server_interval": _row("ID", "Interval", "Received", "Rate"),
    "server_conn_end": _row("ID", "Interval", "Received", "Rate"),
}


class Reporter:
    """Prints records as JSON lines (``json_mode``) or as human-readable tables.

    Safe to call from several threads; every line is flushed at once so that a reader of
    the pipe (a test, a Mininet host's ``cmd``) sees it immediately. When ``out`` cannot be
    written (a closed pipe, a full disk), the error is kept in ``failed``, nothing more is
    printed, and ``on_failure`` is called (simpleperf stops: nobody sees its results).
    """

    def __init__(self, json_mode: bool, unit: str, out: TextIO = sys.stdout,
                 err: TextIO = sys.stderr,
                 on_failure: Optional[Callable[[], None]] = None) -> None:
        self.json_mode = json_mode
        self.unit = unit
        self.out = out
        self.err = err
        self.on_failure = on_failure
        self.failed: Optional[OSError] = None
        self._lock = threading.Lock()
        self._table: Optional[str] = None
        self._render: Dict[str, Callable[[Record], None]] = {
            "start": self._start,
            "conn_start": self._conn_start,
            "interval": self._interval,
            "conn_end": self._conn_end,
            "end": self._end,
            "server_start": self._server_start,
            "server_conn_start": self._server_conn_start,
            "server_interval": self._server_interval,
            "server_conn_end": self._server_conn_end,
            "server_session_end": self._server_session_end,
            "server_end": self._server_end,
            "warning": self._warning,
        }

    def emit(self, record: Record) -> None:
        """Print one record (JSON line, or its human rendering; ``error`` records are
        printed only as JSON, the command line prints the one-line message on stderr)."""
        with self._lock:
            if self.failed is not None:
                return
            try:
                if self.json_mode:
                    print(json.dumps(record), file=self.out, flush=True)
                    return
                render = self._render.get(record["type"])
                if render is not None:
                    render(record)
                    self.out.flush()
            except OSError as err:
                self.failed = err
        if self.failed is not None and self.on_failure is not None:
            self.on_failure()

    def _line(self, text: str, table: Optional[str] = None) -> None:
        if table is not None and table != self._table:
            print(_HEADERS[table], file=self.out)
        self._table = table
        print(text, file=self.out)

    def _bytes(self, nbytes: Optional[int]) -> str:
        return format_bytes(nbytes, self.unit)

    def _start(self, r: Record) -> None:
        what = (f"{self._bytes(r['amount_bytes_per_conn'])} per connection"
                if r["amount_bytes_per_conn"] is not None else f"for {r['time_s']:g} s")
        self._line("-" * 60)
        self._line(f"simpleperf client {r['version']}: connecting to {r['server']}, "
                   f"TCP port {r['port']}, {r['parallel']} connection(s), {what}")
        self._line("-" * 60)

    def _conn_start(self, r: Record) -> None:
        self._line(f"[{r['conn']}] client {r['local']} connected with server {r['remote']}")

    def _interval(self, r: Record) -> None:
        table = "sender_interval" if r["side"] == "sender" else "receiver_interval"
        self._line(_row(f"[{r['conn']}]", _span(r["start_s"], r["end_s"]),
                        self._bytes(r["bytes"]), format_rate(r["rate_mbps"])), table)

    def _conn_end(self, r: Record) -> None:
        self._line(_row(f"[{r['conn']}]", _span(0.0, r["duration_s"]),
                        self._bytes(r["bytes_sent"]), self._bytes(r["server_bytes"]),
                        format_rate(r["sender_mbps"]), format_rate(r["receiver_mbps"])),
                   "conn_end")
        if r.get("error"):
            self._line(f"[{r['conn']}] {r['error']}")

    def _end(self, r: Record) -> None:
        if r["connections"] > 1:
            self._line(_row("[SUM]", _span(0.0, r["duration_s"]), self._bytes(r["bytes_sent"]),
                            self._bytes(r["server_bytes"]), format_rate(r["sender_mbps"]),
                            format_rate(r["receiver_mbps"])), "conn_end")
        self._line("Received counts come from the server; the receiver rate is the one to trust.")
        if r["interrupted"]:
            self._line("Interrupted: the transfer did not end as planned; these are the "
                       "results measured so far.")

    def _server_start(self, r: Record) -> None:
        self._line("-" * 60)
        self._line(f"simpleperf server {r['version']} listening on {r['bind']}, "
                   f"TCP port {r['port']}")
        self._line("-" * 60)

    def _server_conn_start(self, r: Record) -> None:
        self._line(f"A simpleperf client {r['peer']} is connected with {r['local']} "
                   f"(session {r['session'][:6]}, connection {r['conn']} of {r['parallel']})")

    def _server_interval(self, r: Record) -> None:
        self._line(_row(f"[{r['session'][:6]}/{r['conn']}]", _span(r["start_s"], r["end_s"]),
                        self._bytes(r["bytes"]), format_rate(r["rate_mbps"])),
                   "server_interval")

    def _server_conn_end(self, r: Record) -> None:
        self._line(_row(f"[{r['session'][:6]}/{r['conn']}]", _span(0.0, r["duration_s"]),
                        self._bytes(r["bytes"]),
                        format_rate(r["rate_mbps"])), "server_conn_end")
        if r["interrupted"]:
            self._line(f"[{r['session'][:6]}/{r['conn']}] interrupted: {r['error']}")

    def _server_session_end(self, r: Record) -> None:
        if r["connections"] > 1:
            self._line(_row("[SUM]", _span(0.0, r["duration_s"]), self._bytes(r["bytes"]),
                            format_rate(r["rate_mbps"])), "server_conn_end")

    def _server_end(self, r: Record) -> None:
        cut = ", some interrupted" if r["interrupted"] else ""
        self._line(f"simpleperf server stopped: {r['sessions']} session(s), "
                   f"{r['connections']} connection(s){cut}, {self._bytes(r['bytes'])} received")

    def _warning(self, r: Record) -> None:
        try:
            print(f"simpleperf: warning: {r['message']}", file=self.err, flush=True)
        except OSError:
            pass  # standard error is gone too: nothing left to tell
