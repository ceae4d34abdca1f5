"""Checks of a student's own simpleperf (lab 7): its report read, and compared with what
the kit's simpleperf (its parser), the student's other side and iperf3 say.

The student's program prints the assignment's report, rows of four columns::

    ID                    Interval        Transfer      Bandwidth
    10.0.0.1:45678        0.00 - 1.00     2.50 MB       20.00 Mbps

(a server's header says Received and Rate). A client prints its interval rows (``-i``)
first, then a line of dashes and one total row per connection; a server prints a total
row per connection. The ID is the client's address and port of that connection, on both
sides, so that rows of the same connection can be matched. :func:`read_report` reads the
rows; every other line is left alone.

Each ``*_problems`` function returns what is wrong, one readable line each, with the
output it read at the end (empty when all is well): a notebook asserts that there is
none. Given the unit the program was run with (its ``-f``), a check reads the rows in
that unit and says it: a row in another unit, or amounts in units of 1024 bytes (the
commonest slip: KB and MB are decimal), is told as such rather than as a wrong count.
The runs themselves come from :mod:`labtools.teach.simpleperf_runs`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from labtools.errors import ParseError
from labtools.judge import policy
from labtools.lab import kit_free_python
from labtools.teach.simpleperf_runs import Finished
from labtools.tools.parsers import parse
from labtools.tools.parsers.simpleperf import json_records

#: the assignment's cross-test: the student's tool carries at most this fraction less than
#: the reference tool (iperf3) on the same link (more is no fault of the student's: the
#: kit's server counts, and an unlucky iperf3 run on a busy machine is not theirs)
CROSS_TEST_MARGIN = 0.15
#: a row's printed rate may differ from its bytes over its printed time by this fraction
#: (plus what two decimals of time and amount allow)
RATE_TOLERANCE = 0.02
#: the verdict's metric of a TCP run's receiver rate (labtools.judge.verdicts)
RECEIVER_RATE = "receiver_rate"
#: shortest row whose rate is checked, in s (a loopback transfer of -n 2MB takes 2 ms)
RATE_CHECK_MIN_S = 0.1
#: a timed client may end this much after its time is up, in s (its last send returns
#: once the socket has taken the data)
LATE_END_S = 2.0
#: printed times have two decimals: they may differ by this much, in s
TIME_SLACK_S = 0.011
#: lines of a program's output quoted with its problems
QUOTED_LINES = 40

_ROW = re.compile(
    r"^\s*(?P<ident>\S+:\d+)\s+(?P<start>\d+(?:\.\d*)?)\s*-\s*(?P<end>\d+(?:\.\d*)?)\s+"
    r"(?P<amount>\d+(?:\.\d*)?)\s*(?P<unit>[KkMm]?B)\s+(?P<rate>\d+(?:\.\d*)?)\s*Mbps\s*$")
_DASHES = re.compile(r"^\s*-{10,}\s*$")
#: display unit -> bytes (decimal, as the assignment's -f)
UNITS = {"B": 1, "KB": 1000, "MB": 1000 * 1000}
#: display unit -> bytes of the binary unit a program may print by mistake instead
BINARY_UNITS = {"KB": 1024, "MB": 1024 * 1024}
#: an amount printed in units of 1024 differs from the true one by at most this much, in
#: the unit (two decimals: half the last digit, and some room for float rounding)
BINARY_SLACK = 0.006


@dataclass(frozen=True)
class Row:
    """One row of a report; ``nbytes`` is the amount as printed, in bytes."""

    ident: str
    start_s: float
    end_s: float
    nbytes: int
    unit: str
    rate_mbps: float
    line: str

    @property
    def slack_bytes(self) -> int:
        """How far the printed amount may be from the true count: half its last digit
        (two decimals of KB or MB)."""
        return UNITS[self.unit] // 200

    def counts(self, nbytes: int) -> bool:
        """True when this row's amount is ``nbytes``, as far as its digits say."""
        return abs(self.nbytes - nbytes) <= self.slack_bytes


@dataclass
class Report:
    """The rows of one program's output: ``intervals`` (a client's) and ``totals``."""

    text: str
    intervals: List[Row] = field(default_factory=list)
    totals: List[Row] = field(default_factory=list)

    def total(self, ident: str) -> Optional[Row]:
        """The total row of connection ``ident``, or None."""
        return next((r for r in self.totals if r.ident == ident), None)

    def intervals_of(self, ident: str) -> List[Row]:
        """The interval rows of connection ``ident``, in order."""
        return [r for r in self.intervals if r.ident == ident]


def read_report(text: str, server: bool = False) -> Report:
    """The rows in a client's output (``server=False``: the rows before its last line of
    dashes are interval rows, the ones after it totals) or a server's (all totals)."""
    report = Report(text)
    lines = text.splitlines()
    dashes = [i for i, line in enumerate(lines) if _DASHES.match(line)]
    split = -1 if server or not dashes else dashes[-1]
    for i, line in enumerate(lines):
        found = _ROW.match(line)
        if found is None:
            continue
        unit = found["unit"].upper()
        row = Row(found["ident"], float(found["start"]), float(found["end"]),
                  round(float(found["amount"]) * UNITS[unit]), unit, float(found["rate"]),
                  line.strip())
        (report.totals if i > split else report.intervals).append(row)
    return report


def binary_line(who: str, row: Row, unit: str = "") -> str:
    """The line that tells ``who`` its ``row`` is in units of 1024 bytes (``unit``: the
    ``-f`` it ran with; the row's own unit when not given)."""
    shown = row.unit
    return (f"with -f {unit or shown} {who} printed {BINARY_UNITS[shown]}-byte units; "
            f"{shown} is {UNITS[shown]} bytes: {row.line!r}")


def _binary_unit(row: Row, unit: str) -> bool:
    """True when ``row`` is in the unit asked for (``unit``, any case; any when '') and
    that unit has a binary twin (KB, MB)."""
    return row.unit in BINARY_UNITS and (not unit or unit.upper() == row.unit)


def in_binary_units(row: Row, nbytes: int, unit: str = "") -> bool:
    """True when ``row`` says ``nbytes`` in units of 1024 bytes (KB or MB printed, as
    ``-f unit`` asked; any when ``unit`` is '')."""
    return _binary_unit(row, unit) and abs(
        row.nbytes / UNITS[row.unit] - nbytes / BINARY_UNITS[row.unit]) <= BINARY_SLACK


def amount_mismatch(who: str, row: Row, nbytes: int, unit: str, what: str) -> str:
    """Why ``row`` (printed by ``who`` with ``-f unit``) does not say ``nbytes``, in one
    line: amounts in units of 1024 named as such; otherwise the two counts (``what``:
    where ``nbytes`` comes from, e.g. ``asked for (-n)``)."""
    if unit and in_binary_units(row, nbytes, unit):
        return binary_line(who, row, unit)
    return f"{row.ident}: {row.nbytes} bytes in {who}'s row, {nbytes} {what}: {row.line!r}"


def unit_problems(who: str, rows: List[Row], unit: str) -> List[str]:
    """Rows printed in another unit than ``-f unit`` asked for (none when ``unit`` is '')."""
    wrong = [r for r in rows if unit and r.unit != unit.upper()]
    return [f"with -f {unit} {who} printed its amounts in {wrong[0].unit}: "
            f"{wrong[0].line!r}"] if wrong else []


def quoted(who: str, text: str) -> str:
    """``text`` indented under a line saying whose output it is (its first lines)."""
    lines = text.rstrip().splitlines() or ["(nothing)"]
    more = len(lines) - QUOTED_LINES
    shown = lines[:QUOTED_LINES] + ([f"... ({more} more lines)"] if more > 0 else [])
    return f"{who} printed:\n" + "\n".join("    " + line for line in shown)


def _rate_says(row: Row, nbytes: float) -> bool:
    """True when the row's printed rate is ``nbytes`` over its printed time, as far as
    its digits say."""
    seconds = row.end_s - row.start_s
    rate = nbytes * 8 / seconds / 1e6
    slack = rate * (RATE_TOLERANCE + TIME_SLACK_S / seconds) + \
        row.slack_bytes * 8 / seconds / 1e6 + 0.01
    return abs(row.rate_mbps - rate) <= slack


def rate_problems(row: Row) -> List[str]:
    """A row whose rate is not its bytes over its time (rows shorter than
    :data:`RATE_CHECK_MIN_S` are not checked: their two decimals of time say too little)."""
    seconds = row.end_s - row.start_s
    if seconds < RATE_CHECK_MIN_S or _rate_says(row, row.nbytes):
        return []
    rate = row.nbytes * 8 / seconds / 1e6
    return [f"{row.ident}: {row.rate_mbps:.2f} Mbps is not the row's amount over its time "
            f"({rate:.2f} Mbps; rates are in Mbps, 1 Mbps = 10^6 bit/s): {row.line!r}"]


def binary_rate_problems(who: str, rows: List[Row], unit: str = "") -> List[str]:
    """One line when a row's rate is its amount read in units of 1024 bytes over its time
    and not its amount in decimal units: ``who`` printed amounts in units of 1024 while
    its rates count the bytes (rows of KB or MB, as ``-f unit`` asked; shorter rows than
    :data:`RATE_CHECK_MIN_S` are not read)."""
    for row in rows:
        if row.end_s - row.start_s < RATE_CHECK_MIN_S or not _binary_unit(row, unit):
            continue
        binary = row.nbytes / UNITS[row.unit] * BINARY_UNITS[row.unit]
        if not _rate_says(row, row.nbytes) and _rate_says(row, binary):
            return [binary_line(who, row, unit)]
    return []


def interval_problems(rows: List[Row], total: Row, interval_s: float) -> List[str]:
    """Interval rows of one connection that do not start at 0, follow each other without
    gaps, end with the transfer, come once per interval and add up to its total."""
    if not rows:
        return [f"{total.ident}: no interval rows, though -i {interval_s:g} asked for them"]
    problems = []
    if rows[0].start_s != 0:
        problems.append(f"{total.ident}: the first interval row starts at {rows[0].start_s:.2f} s, "
                        "not at 0.00")
    gaps = [(a, b) for a, b in zip(rows, rows[1:]) if abs(b.start_s - a.end_s) > TIME_SLACK_S]
    if gaps:
        problems.append(f"{total.ident}: a row must start where the one before ended: "
                        f"{gaps[0][0].line!r}, then {gaps[0][1].line!r}")
    if abs(rows[-1].end_s - total.end_s) > TIME_SLACK_S:
        problems.append(f"{total.ident}: the last interval row ends at {rows[-1].end_s:.2f} s, "
                        f"the transfer at {total.end_s:.2f} s")
    expected = total.end_s / interval_s
    if not math.floor(expected) - 1 <= len(rows) <= math.ceil(expected) + 1:
        problems.append(f"{total.ident}: {len(rows)} interval rows in {total.end_s:.2f} s with "
                        f"-i {interval_s:g} (about {expected:.0f} expected)")
    added = sum(r.nbytes for r in rows)
    if abs(added - total.nbytes) > sum(r.slack_bytes for r in rows) + total.slack_bytes:
        problems.append(f"{total.ident}: the interval rows add up to {added} bytes, "
                        f"the total row says {total.nbytes}")
    for row in rows:
        problems += rate_problems(row)
    return problems


def client_problems(run: Finished, connections: int, amount_bytes: Optional[int] = None,
                    seconds: Optional[float] = None, interval_s: float = 0,
                    unit: str = "") -> List[str]:
    """What is wrong with a run of the student's client: it must end with status 0 and
    print one total row per connection (each with its own ID), each the amount asked
    for (``-n``) or lasting the time asked for (``-t``); with an interval, interval rows
    (:func:`interval_problems`); without, none. With ``unit`` (its ``-f``), every row in
    that unit. Amounts in units of 1024 bytes (:func:`binary_rate_problems`) are told
    alone: every amount and rate of the report is then off by as much; a client that
    handed its work to the kit (:func:`labtools.lab.kit_free_python.handoff`) is told so
    in one line, alone."""
    handed = kit_free_python.handoff("your client", run.out + run.err)
    if handed:
        return [handed]
    report = read_report(run.out)
    problems = [] if run.status == 0 else [f"your client ended with {run.why()}"]
    binary = binary_rate_problems("your client", report.totals + report.intervals, unit)
    if binary:
        return problems + binary + [quoted("your client", run.out + run.err)]
    if len(report.totals) != connections:
        problems.append(f"your client printed {len(report.totals)} total row(s) after its "
                        f"last line of dashes, {connections} expected (one per connection)")
        return problems + [quoted("your client", run.out + run.err)]
    if len({r.ident for r in report.totals}) != connections:
        problems.append("each connection's total row needs its own ID (the client's "
                        "address:port of that connection)")
    for total in report.totals:
        if total.start_s != 0:
            problems.append(f"{total.ident}: the total row starts at {total.start_s:.2f} s")
        if amount_bytes is not None and not total.counts(amount_bytes):
            problems.append(amount_mismatch("your client", total, amount_bytes,
                                            unit.upper() or total.unit, "asked for (-n)"))
        late = seconds is not None and not \
            seconds - TIME_SLACK_S <= total.end_s <= seconds + LATE_END_S
        if late:
            problems.append(f"{total.ident}: the transfer took {total.end_s:.2f} s, "
                            f"{seconds:g} s asked for (-t)")
        problems += rate_problems(total)
        if interval_s:
            problems += interval_problems(report.intervals_of(total.ident), total, interval_s)
    problems += unit_problems("your client", report.totals + report.intervals, unit)
    if not interval_s and report.intervals:
        problems.append("interval rows without -i: a client without -i prints totals only")
    return problems + [quoted("your client", run.out + run.err)] if problems else []


def server_problems(output: str, sent: Dict[str, int], unit: str = "") -> List[str]:
    """What is wrong with the student's server's report of connections that sent
    ``sent`` (ID -> data bytes): one total row each, with those bytes. With ``unit``, its
    ``-f``: every row in that unit, and a row read in it (amounts in units of 1024 bytes
    are named as such, with or without ``unit``). A server that handed its work to the
    kit is told so in one line, alone."""
    handed = kit_free_python.handoff("your server", output)
    if handed:
        return [handed]
    report = read_report(output, server=True)
    problems = unit_problems("your server", report.totals, unit)
    for ident, nbytes in sent.items():
        row = report.total(ident)
        if row is None:
            problems.append(f"your server printed no row for the connection from {ident}")
        elif not row.counts(nbytes):
            problems.append(binary_line("your server", row, unit)
                            if in_binary_units(row, nbytes, unit) else
                            f"{ident}: your server reports {row.nbytes} bytes received "
                            f"(its row read in {row.unit}: {row.line!r}), {nbytes} were "
                            "sent (the END record is not data)")
        else:
            problems += rate_problems(row)
    return problems + [quoted("your server", output)] if problems else []


def _parsed(text: str, who: str) -> Any:
    try:
        return parse("simpleperf", text)
    except ParseError as err:
        raise AssertionError(f"{who}'s output cannot be read: {err}") from None


def kit_server_problems(kit_output: str, client: Finished, connections: int,
                        unit: str = "") -> List[str]:
    """What the kit's server (its JSON, read with the kit's parser) says is wrong with
    the student's client: every transfer must end with its END record, and each
    connection's total row must count the bytes the kit's server received on it (read
    in ``unit``, the client's ``-f``, or in the row's own: :func:`amount_mismatch`)."""
    parsed = _parsed(kit_output, "the kit's simpleperf server")
    summary = parsed.summary
    problems = []
    if not summary["complete"]:
        problems.append(f"the kit's server says: {summary['error']}")
    if summary["connections"] != connections:
        problems.append(f"the kit's server saw {summary['connections']} connection(s) end, "
                        f"{connections} expected")
    report = read_report(client.out)
    ends = [r for r in json_records(parsed.raw) if r.get("type") == "server_conn_end"]
    for end in ends:
        row = report.total(end["peer"])
        if row is None:
            problems.append(f"the kit's server received {end['bytes']} bytes from "
                            f"{end['peer']}; your client printed no total row for it")
        elif not row.counts(end["bytes"]):
            problems.append(amount_mismatch("your client", row, end["bytes"],
                                            unit.upper() or row.unit,
                                            "received by the kit's server"))
    return problems + [quoted("your client", client.out + client.err)] if problems else []


def kit_client_problems(kit: Finished, server_output: str, unit: str = "") -> List[str]:
    """What the kit's client (its JSON, read with the kit's parser) says is wrong with the
    student's server: every transfer complete (WELCOME, an ACK counting every byte sent),
    and the server's report of each connection (:func:`server_problems`; ``unit``: the
    server's ``-f``)."""
    summary = _parsed(kit.out, "the kit's simpleperf client").summary
    if not summary["complete"]:
        return [f"the kit's client says: {summary['error']}",
                quoted("your server", server_output)]
    records = json_records(kit.out)
    local = {r["conn"]: r["local"] for r in records if r.get("type") == "conn_start"}
    sent = {local[r["conn"]]: r["bytes_sent"] for r in records if r.get("type") == "conn_end"}
    return server_problems(server_output, sent, unit)


def reference_reached_the_link(reference: Any) -> bool:
    """True when the reference run's receiver rate got the kit's ``ok`` verdict: it
    carried what the link carries. Otherwise the machine (or the network) set the rate,
    and a tool compared with it is compared with the machine."""
    return any(v.metric == RECEIVER_RATE and v.verdict == policy.OK for v in reference.verdicts)


def link_problems(yours: Any, reference: Any) -> List[str]:
    """The cross-test on a link: the student's client measured with the probe
    (``probes.simpleperf(..., program=...)``, the kit's server counting) against iperf3
    on the same link. The client's total rows must count what the kit's server received,
    and its rate after the warm-up may be at most :data:`CROSS_TEST_MARGIN` below
    iperf3's, when iperf3 reached the link's rate (:func:`reference_reached_the_link`;
    :func:`cross_test_line` says how the comparison went)."""
    report = read_report(yours.extra.get("client_report", ""))
    received = yours.parsed.summary["receiver_bytes"]
    problems = []
    printed = sum(r.nbytes for r in report.totals)
    if not report.totals or abs(printed - received) > sum(r.slack_bytes for r in report.totals):
        problems.append(f"your client's total rows add up to {printed} bytes, the kit's "
                        f"server received {received}")
    mine, theirs = yours.summary.steady_mbps, reference.summary.steady_mbps
    if mine < (1 - CROSS_TEST_MARGIN) * theirs and reference_reached_the_link(reference):
        problems.append(f"your simpleperf carried {mine:.2f} Mbit/s after the warm-up, iperf3 "
                        f"{theirs:.2f} Mbit/s on the same link: more than "
                        f"{CROSS_TEST_MARGIN:.0%} less (does your client hand its socket "
                        "small pieces, or wait between them? If the machine was busy, "
                        "measure again)")
    return problems + [quoted("your client", report.text)] if problems else []


def cross_test_line(yours: Any, reference: Any) -> str:
    """How the rates compared, in one line (graded, or only reported when iperf3 did not
    reach the link's rate)."""
    mine, theirs = yours.summary.steady_mbps, reference.summary.steady_mbps
    line = (f"your simpleperf {mine:.2f} Mbit/s, iperf3 {theirs:.2f} Mbit/s after the "
            f"warm-up ({(mine - theirs) / theirs:+.0%})")
    if reference_reached_the_link(reference):
        return line
    return (line + "; iperf3 did not reach the link's rate either: this machine set both "
            "rates, so the comparison is reported, not graded")
