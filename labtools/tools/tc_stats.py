"""Parse ``tc -s qdisc show dev DEV`` (iproute2): each queueing discipline's counters.

What a live demonstration samples once a second on a shaped link's sending end: how many
packets wait in its queue (``backlog``), how many bytes and packets it has sent and how
many it dropped. A shaped link of the kit is Mininet's ``TCLink``: an HTB (or TBF) root
whose child netem holds the delay, the loss and the queue limit, so the queue a student
watches is netem's (:func:`link_queue`).

One :class:`QdiscStats` per ``qdisc`` line, in the order printed. tc prints a backlog's
bytes with a unit (``151400b``, ``148Kb``, ``2Mb``: ``K`` and ``M`` are 1024 and 1024**2,
tc's ``print_size``) and its packets as ``100p``; every other counter is a whole number.
Text with no ``qdisc`` line, a ``qdisc`` line without its ``Sent`` and ``backlog``
counters (``tc qdisc show`` without ``-s``), or a counter that is not a whole number >= 0
raises :class:`~labtools.errors.ParseError` (tool ``tc``) naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional

from labtools.errors import ParseError

TOOL = "tc"
#: tc's units of a backlog's size (``print_size``: powers of 1024)
SIZE_UNITS: Dict[str, int] = {"b": 1, "Kb": 1024, "Mb": 1024 ** 2}

_HEAD = re.compile(r"^qdisc (?P<kind>[A-Za-z_][\w-]*) (?P<handle>[0-9a-f]{1,8}:[0-9a-f]{0,8})"
                   r"(?: dev (?P<dev>\S+))? (?:(?P<root>root)|parent (?P<parent>\S+))"
                   r"(?P<options>.*)$")
_SENT = re.compile(r"^\s*Sent (?P<bytes>\d{1,20}) bytes (?P<pkts>\d{1,20}) pkt "
                   r"\(dropped (?P<dropped>\d{1,20}), overlimits (?P<over>\d{1,20}) "
                   r"requeues (?P<req>\d{1,20})\)")
_BACKLOG = re.compile(r"^\s*backlog (?P<size>\d{1,20}(?:\.\d{1,9})?)(?P<unit>b|Kb|Mb) "
                      r"(?P<pkts>\d{1,20})p")


@dataclass(frozen=True)
class QdiscStats:
    """One queueing discipline's counters (since it was made; sizes in bytes).

    ``handle`` as tc prints it (``10:``), ``parent`` (``5:1``; None for the root),
    ``options`` the rest of its line (``limit 100 delay 20ms``), ``dev`` the interface
    when tc named it (``tc qdisc show`` without ``dev``)."""

    kind: str
    handle: str
    parent: Optional[str]
    options: str
    sent_bytes: int
    sent_pkts: int
    dropped_pkts: int
    overlimits: int
    requeues: int
    backlog_bytes: int
    backlog_pkts: int
    dev: Optional[str] = None


def _counters(lines: List[str], first: int) -> Dict[str, int]:
    """The ``Sent`` and ``backlog`` counters in the lines after a ``qdisc`` line."""
    found: Dict[str, int] = {}
    for line in lines:
        sent = _SENT.match(line)
        if sent is not None:
            found.update(sent_bytes=int(sent["bytes"]), sent_pkts=int(sent["pkts"]),
                         dropped_pkts=int(sent["dropped"]), overlimits=int(sent["over"]),
                         requeues=int(sent["req"]))
        backlog = _BACKLOG.match(line)
        if backlog is not None:
            found.update(backlog_bytes=round(float(backlog["size"]) * SIZE_UNITS[backlog["unit"]]),
                         backlog_pkts=int(backlog["pkts"]))
    if "sent_bytes" not in found or "backlog_pkts" not in found:
        raise ParseError(TOOL, f"line {first}: a qdisc without its Sent and backlog counters "
                               "(was it tc -s qdisc show?)")
    return found


def parse_qdisc_stats(text: str) -> List[QdiscStats]:
    """Every qdisc of ``tc -s qdisc show [dev DEV]`` output with its counters.

    Raises:
        ParseError: no ``qdisc`` line, a line starting with ``qdisc`` that is not one, or
            a qdisc without its counters.
    """
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("qdisc ")]
    if not starts:
        raise ParseError(TOOL, "no qdisc line (was it tc -s qdisc show?)")
    result: List[QdiscStats] = []
    for n, start in enumerate(starts):
        head = _HEAD.match(lines[start].rstrip())
        if head is None:
            raise ParseError(TOOL, f"line {start + 1}: not a qdisc line: {lines[start][:60]!r}")
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        result.append(QdiscStats(
            kind=head["kind"], handle=head["handle"], parent=head["parent"],
            options=head["options"].strip(), dev=head["dev"],
            **_counters(lines[start + 1:end], start + 1)))
    return result


def link_queue(stats: List[QdiscStats]) -> QdiscStats:
    """The qdisc that holds a shaped link's queue: its netem (delay, loss, queue limit),
    else its root (a link shaped by rate alone queues in HTB's or TBF's own queue).

    Raises:
        ParseError: neither a netem nor a root qdisc is listed.
    """
    found = next((q for q in stats if q.kind == "netem"), None) or \
        next((q for q in stats if q.parent is None), None)
    if found is None:
        raise ParseError(TOOL, "neither a netem nor a root qdisc listed")
    return found
