"""Parse the text output of ``ping``: iputils (Linux), busybox, macOS and FreeBSD.

Read: iputils IPv4 and IPv6, by address or by name (``64 bytes from NAME (ADDR): ...``),
an empty name (``PING  (ADDR)``), ``-D`` (times), ``-O`` (``no answer yet``), ``-p``,
``-s``, ``-I``, ``-v``, ``-q`` and ``-f`` (no per-packet lines), Ctrl-C and a killed ping;
busybox (``seq=0``; ``round-trip min/avg/max``); macOS and FreeBSD ``ping`` and ``ping6``
(``Request timeout for icmp_seq N``, ``PING6(56=40+8+8 bytes) SRC --> DST``, ``16 bytes
from ::1, icmp_seq=0 hlim=64 ...``, ``92 bytes from ROUTER (ADDR): Destination Host
Unreachable`` with the returned header below it). Refused with a
:class:`~labtools.errors.ParseError` that names the form: Windows' ping (whole
milliseconds, ``time<1ms``), replies without a time (``-s`` below 16 bytes, a truncated
reply), more than one run in one text.

Table: one row per packet event, in the order printed.

==============  ======  ===========================================================
column          type    meaning
==============  ======  ===========================================================
seq             Int64   sequence number (``icmp_seq``/``seq``); <NA> for an error
                        line that names none (macOS, a failed send)
ttl             Int64   IP time-to-live (IPv6: hop limit) of the reply; <NA> otherwise
rtt_ms          float   round-trip time, ms; NaN unless ``status`` is ``reply``
bytes           Int64   size ping reported for the reply or error, bytes; <NA> otherwise
received_at     time    when ping printed the line, UTC (``ping -D``); NaT without ``-D``
duplicate       bool    a reply to a sequence number already answered: marked ``(DUP!)``
                        or not (iputils does not mark those of a broadcast, macOS none)
status          str     ``reply``, ``timeout`` (``-O``'s ``no answer yet``, macOS's
                        ``Request timeout``) or ``error`` (an ICMP error, a failed send,
                        a reply with a bad checksum)
message         str     the error's text (``Destination Host Unreachable``); None otherwise
==============  ======  ===========================================================

Summary keys:

- ``destination`` (str): the host as given to ping (from the header, or from the
  statistics title for BSD ``ping6``); ``address`` (str): its address; ``form``:
  ``iputils``, ``busybox`` or ``bsd`` (macOS, FreeBSD); ``ip_version``: 4, 6 or None.
- ``transmitted``, ``received`` (int): from the statistics; ``received`` never counts
  duplicates, and equals the rows with status ``reply`` that are not duplicates (else the
  text is refused) unless ping printed no per-packet lines (``quiet``).
- ``duplicates``, ``corrupted`` (int): as ping counted them (0 when it printed none).
- ``errors`` (int): ping's ``+N errors``; where ping prints no such count, the error rows.
- ``loss_pct`` (float): packet loss, percent, from the counts: ``100 * (transmitted -
  received) / transmitted`` (duplicates apart: ``received`` never counts them); None when
  nothing was transmitted or the counts are out of range (more received than sent).
  ``printed_loss_pct`` (float): the figure ping printed (None when it printed none): ping
  truncates it (iputils before 2019 and busybox to whole percent: 1688 sent and 1553
  received print ``7%``, the counts give 7.998), BSD rounds it to 0.1. ``time_ms``
  (float): iputils' own run time, ms (None elsewhere).
- ``warnings`` (list of str): where the statistics disagree with themselves (a printed
  loss further from the counts' than its last printed digit, more received than sent);
  the same sentences as :attr:`~labtools.tools.parsers.base.Parsed.warnings`.
- ``min_ms``, ``avg_ms``, ``max_ms`` (float or None): the ``rtt``/``round-trip`` line;
  ``mdev_ms``: its fourth number (None for busybox). None when no reply came back.
- ``timeouts`` (int): timeout rows. ``error_messages`` (list of str): distinct error texts.
- ``notes`` (list of str): ping's own messages that are about no packet (a warning).
- ``unparsed_lines`` (int): lines the parser did not understand; ``unparsed_sample``
  (list of str): the first five of them. ``labtools parse ping`` warns when there are any.
- ``quiet`` (bool): the statistics count replies but ping printed no per-packet line
  (``-q``, ``-f``); the table is then empty.
- ``complete`` (bool): False when the statistics lines are missing (ping was killed); the
  rows are kept, every statistics key is None and ``errors`` counts the error rows. The
  parser computes no statistic ping did not print but the loss, from ping's own counts.

Output without a ``PING`` header and without any per-packet line (empty text, an unknown
host, another tool's output) raises :class:`~labtools.errors.ParseError` (tool ``ping``).

Why the kit's own parser: pingparsing 1.4.2 and jc 1.26.1 were run on these fixtures
(tests/fixtures/ping). pingparsing counts ``-O``'s ``no answer yet`` lines as replies and
returns no rows and no statistics, without an error, for BSD ``ping6``, an empty name and
``ping -v``; jc drops iputils' ``From ... Destination Host Unreachable`` lines, leaves the
duplicates of an iputils broadcast ping unflagged and raises IndexError on an unknown
host. Under either, the kit would still need its own checks (duplicates from sequence
numbers, rows that agree with the statistics, every line accounted for); the line forms
themselves are one short module, :mod:`~labtools.tools.parsers.ping_lines`.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from labtools.errors import ParseError
from labtools.tools.parsers.base import Parsed
from labtools.tools.parsers.ping_lines import SEND_FAILURE, classify, strip_timestamp
from labtools.tools.rows import TIME_DTYPE, Rows

TOOL = "ping"
COLUMNS = ["seq", "ttl", "rtt_ms", "bytes", "received_at", "duplicate", "status", "message"]
DTYPES = {"seq": "Int64", "ttl": "Int64", "rtt_ms": "float64", "bytes": "Int64",
          "received_at": TIME_DTYPE, "duplicate": "bool", "status": "object",
          "message": "object"}
STATUSES = ("reply", "timeout", "error")
#: how many lines not understood the summary keeps
UNPARSED_KEPT = 5
#: how many distinct notes the summary keeps
NOTES_KEPT = 10
_SEQ_WRAP = 32768  # a sequence number this far below the last one: ping's counter wrapped


@dataclass
class _Run:
    """Everything read from one ping's output."""

    headers: List["re.Match[str]"] = field(default_factory=list)
    title: Optional[str] = None
    counts: List["re.Match[str]"] = field(default_factory=list)
    rtt: Optional["re.Match[str]"] = None
    rows: List[Dict[str, Any]] = field(default_factory=list)
    busybox_replies: bool = False
    notes: List[str] = field(default_factory=list)
    said: List[str] = field(default_factory=list)
    unparsed: List[str] = field(default_factory=list)
    windows: bool = False
    untimed: Optional[str] = None


def _row(status: str, ts: Optional[float], **values: Any) -> Dict[str, Any]:
    row: Dict[str, Any] = {"seq": None, "ttl": None, "rtt_ms": math.nan, "bytes": None,
                           "received_at": math.nan if ts is None else ts,
                           "duplicate": False, "status": status, "message": None}
    row.update(values)
    return row


def _reply(run: _Run, m: "re.Match[str]", ts: Optional[float]) -> None:
    flags = m["flags"]
    if m["rtt"] is None:
        run.untimed = run.untimed or m.group(0)
        return
    run.busybox_replies |= m["seqname"] == "seq"
    if "BAD CHECKSUM" in flags:  # ping counts it as corrupted, not received
        run.rows.append(_row("error", ts, seq=int(m["seq"]), bytes=int(m["bytes"]),
                             message="reply with a bad checksum"))
        return
    run.rows.append(_row("reply", ts, seq=int(m["seq"]), ttl=int(m["ttl"]),
                         rtt_ms=float(m["rtt"]), bytes=int(m["bytes"]),
                         duplicate="DUP!" in flags))


def _error(run: _Run, m: "re.Match[str]", ts: Optional[float]) -> None:
    fields = m.groupdict()
    seq = fields.get("seq")
    size = fields.get("bytes")
    run.rows.append(_row("error", ts, seq=None if seq is None else int(seq),
                         bytes=None if size is None else int(size),
                         message=m["msg"].strip()))


def _ping_says(run: _Run, message: str, ts: Optional[float]) -> None:
    run.said.append(message)
    if SEND_FAILURE.match(message):
        run.rows.append(_row("error", ts, message=message))
    else:
        run.notes.append(message)


def _read_line(run: _Run, raw: str) -> None:
    line, ts, ts_ok = strip_timestamp(raw.replace("\a", "").strip())  # -a: a bell per reply
    kind, m = classify(line) if ts_ok else ("unparsed", None)
    if m is None:  # an empty line, or one not understood
        if kind == "unparsed":
            run.unparsed.append(raw.strip())
        return
    if kind == "header":
        run.headers.append(m)
    elif kind == "windows":
        run.windows = True
    elif kind == "reply":
        _reply(run, m, ts)
    elif kind == "timeout":
        run.rows.append(_row("timeout", ts, seq=int(m["seq"])))
    elif kind == "error":
        _error(run, m, ts)
    elif kind == "icmp" and m["seq"] and run.rows and run.rows[-1]["status"] == "error" \
            and run.rows[-1]["seq"] is None:
        run.rows[-1]["seq"] = int(m["seq"], 16)  # the sequence number of the error's packet
    elif kind == "title":
        run.title = m["dest"]
    elif kind == "counts":
        run.counts.append(m)
    elif kind == "rtt":
        run.rtt = m
    elif kind == "ping_says":
        _ping_says(run, m["msg"].strip(), ts)
    elif kind == "note":
        run.notes.append(m["msg"].strip())


def _mark_duplicates(rows: List[Dict[str, Any]]) -> None:
    """A reply whose sequence number was answered before is a duplicate, marked or not
    (the set of answered numbers starts again when ping's 16-bit counter wraps)."""
    answered: set = set()
    last: Optional[int] = None
    for row in rows:
        if row["status"] != "reply":
            continue
        seq = row["seq"]
        if last is not None and seq + _SEQ_WRAP < last:
            answered.clear()
        last = seq
        if seq in answered:
            row["duplicate"] = True
        answered.add(seq)


def _refuse(run: _Run) -> None:
    """The forms the parser does not read, and output that is not one ping run."""
    if run.windows:
        raise ParseError(TOOL, "Windows ping output is not read (it rounds every time to "
                               "whole milliseconds and prints time<1ms); use ping in the "
                               "lab VM or WSL")
    if run.untimed:
        raise ParseError(TOOL, "the replies carry no time (ping -s below 16 bytes, or a "
                               f"truncated reply): no RTT to read in {run.untimed!r}")
    if len(run.headers) > 1:
        raise ParseError(TOOL, f"{len(run.headers)} ping runs in one output ('PING' header "
                               "lines); parse one run at a time")
    if len({m.group(0) for m in run.counts}) > 1:
        raise ParseError(TOOL, f"{len(run.counts)} different statistics lines in one output; "
                               "parse one run at a time")
    if not run.headers and not run.rows:
        said = next(iter(run.said), "")
        hint = f"; ping said: {said}" if said else ""
        raise ParseError(TOOL, f"no 'PING host (address)' header and no reply line{hint}")
    if run.unparsed and not run.rows and not run.counts:
        raise ParseError(TOOL, f"nothing read but the header: {len(run.unparsed)} lines not "
                               f"understood, the first {run.unparsed[0]!r} (a translated or "
                               "unknown ping?)")


def _form(run: _Run) -> Optional[str]:
    """``iputils``, ``busybox`` or ``bsd``, from the header, the replies and the RTT line."""
    header = run.headers[0].group(0) if run.headers else ""
    rtt = run.rtt.group(0) if run.rtt is not None else ""
    if header.endswith("bytes of data.") or re.match(r"^PING [^\s(]*\(", header) \
            or rtt.startswith("rtt"):
        return "iputils"
    counts = run.counts[-1] if run.counts else None
    if run.busybox_replies or (run.rtt is not None and run.rtt["label4"] is None) or (
            counts is not None and counts["loss"] and "." not in counts["loss"]
            and run.rtt is None and not run.rows):
        return "busybox"  # BSD prints the loss with a decimal (0.0%), busybox without
    return "bsd" if header or rtt else None


def _ip_version(address: Optional[str]) -> Optional[int]:
    try:
        return ipaddress.ip_address((address or "").split("%", 1)[0]).version
    except ValueError:
        return None


def _statistics(run: _Run) -> Dict[str, Any]:
    """The statistics keys of the summary (all None when the lines are missing)."""
    stats: Dict[str, Any] = dict.fromkeys(
        ["transmitted", "received", "duplicates", "corrupted", "errors", "loss_pct",
         "printed_loss_pct", "time_ms", "min_ms", "avg_ms", "max_ms", "mdev_ms"])
    stats["complete"] = bool(run.counts)
    if run.counts:
        m = run.counts[-1]
        extras = {name: int(n) for n, name in
                  re.findall(r"\+?(\d+) (duplicates|corrupted|errors)", m["extras"])}
        stats.update(transmitted=int(m["tx"]), received=int(m["rx"]),
                     duplicates=extras.get("duplicates", 0),
                     corrupted=extras.get("corrupted", 0), errors=extras.get("errors"),
                     printed_loss_pct=float(m["loss"]) if m["loss"] else None,
                     time_ms=float(m["time"]) if m["time"] else None)
        stats["loss_pct"] = loss_from_counts(stats["transmitted"], stats["received"])
    if run.rtt is not None and run.counts:
        r = run.rtt
        stats.update(min_ms=float(r["min"]), avg_ms=float(r["avg"]), max_ms=float(r["max"]),
                     mdev_ms=float(r["mdev"]) if r["mdev"] else None)
    return stats


def loss_from_counts(transmitted: int, received: int) -> Optional[float]:
    """Packet loss (%) from ping's counts (``received`` without duplicates); None when
    nothing was sent or more was received than sent."""
    if transmitted <= 0 or received > transmitted:
        return None
    return 100.0 * (transmitted - received) / transmitted


def _printed_step(printed: str) -> float:
    """How far a printed percentage may be from the exact one: one unit of its last digit
    (ping truncates or rounds it there); for ``%g``'s exponent form, of its mantissa."""
    mantissa, _, exponent = printed.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _disagreements(summary: Dict[str, Any], run: _Run) -> List[str]:
    """Where ping's statistics line disagrees with itself (module docstring)."""
    if not run.counts:
        return []
    tx, rx = summary["transmitted"], summary["received"]
    if rx > tx:
        return [f"ping counts {rx} replies of {tx} packets transmitted: no loss can be read "
                "from such counts"]
    printed, computed = run.counts[-1]["loss"], summary["loss_pct"]
    if printed and computed is not None and \
            abs(float(printed) - computed) >= _printed_step(printed) * (1 + 1e-9):
        return [f"ping printed {printed}% packet loss, but its counts ({tx} transmitted, "
                f"{rx} received) give {computed:.3g}%; the counts' figure is used"]
    return []


def _check_counts(summary: Dict[str, Any], rows: List[Dict[str, Any]], run: _Run) -> None:
    """The statistics and the rows agree: ``received`` = the replies that are not
    duplicates (ping counted what it printed), unless ping printed no per-packet line."""
    if not summary["complete"] or summary["quiet"]:
        return
    replies = sum(1 for r in rows if r["status"] == "reply" and not r["duplicate"])
    if replies != summary["received"]:
        unread = f"; lines not understood: {run.unparsed[0]!r}" if run.unparsed else ""
        raise ParseError(TOOL, f"the statistics count {summary['received']} replies but the "
                               f"output has {replies} reply lines (cut or edited?){unread}")


def parse(text: str) -> Parsed:
    """Parse ``ping`` output into per-packet rows (ms) and its statistics (the parsers'
    contract: :mod:`labtools.tools.parsers`).

    Raises:
        ParseError: no header and no per-packet line, a form that is not read, more than
            one run, or statistics that disagree with the lines printed.
    """
    if not text or not text.strip():
        raise ParseError(TOOL, "empty output (no PING header, no reply, no statistics)")
    run = _Run()
    for raw in text.splitlines():
        _read_line(run, raw)
    _refuse(run)
    _mark_duplicates(run.rows)
    header = run.headers[0] if run.headers else None
    fields = header.groupdict() if header else {}
    address = fields.get("addr") or fields.get("addr6")
    destination = fields.get("dest", run.title if run.title is not None else address)
    summary: Dict[str, Any] = {"destination": destination, "address": address,
                               "form": _form(run), "ip_version": _ip_version(address)}
    summary.update(_statistics(run))
    error_rows = [r for r in run.rows if r["status"] == "error"]
    if summary["errors"] is None:
        summary["errors"] = len(error_rows)
    summary["timeouts"] = sum(1 for r in run.rows if r["status"] == "timeout")
    summary["error_messages"] = sorted({str(r["message"]) for r in error_rows})
    summary["notes"] = list(dict.fromkeys(run.notes))[:NOTES_KEPT]
    summary["unparsed_lines"] = len(run.unparsed)
    summary["unparsed_sample"] = run.unparsed[:UNPARSED_KEPT]
    summary["quiet"] = bool(summary["complete"] and not run.rows and summary["received"])
    _check_counts(summary, run.rows, run)
    warnings = _disagreements(summary, run)
    summary["warnings"] = warnings
    return Parsed(tool=TOOL, rows=Rows.of(COLUMNS, DTYPES, run.rows), summary=summary, raw=text,
                  warnings=tuple(warnings))
