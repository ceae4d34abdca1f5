"""The tools whose output the kit reads: one descriptor per tool.

A descriptor is the one place that says, for a tool, which module parses its output, how
a run of it is summarized (:mod:`labtools.tools.summaries`: a round-trip time, or a rate,
TCP or UDP as its output says), what in its output names the destination
(:mod:`labtools.tools.destinations`), whether ``labtools parse`` reads it, and where the
version saved with its runs comes from. The command line, the summaries and the judge
look a tool up here; adding a tool is its parser module and one entry in :data:`TOOLS`
(docs/developers.md, "Add a tool").
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from labtools.errors import InputError
from labtools.tools import destinations
from labtools.tools.parsers.base import Parsed

#: how a tool's runs are summarized: a round-trip time, a rate (TCP, or UDP when the output
#: says so), or not at all (a reading such as ``ss``'s, not a measurement of a path)
RTT, RATE, NOT_MEASURED = "rtt", "rate", "none"
DestinationReader = Callable[[Parsed], List[Optional[str]]]


@dataclass(frozen=True)
class ToolDescriptor:
    """One tool the kit reads.

    Attributes:
        name: the tool's name, as on the command line and in saved runs.
        parser_module: the module whose ``parse(text) -> Parsed`` reads its output
            (imported when the tool is first parsed).
        summary_kind: :data:`RTT`, :data:`RATE` or :data:`NOT_MEASURED`.
        on_command_line: ``labtools parse TOOL FILE`` reads it.
        destinations: what in its parsed output names the destination (None: nothing).
        udp_count_keys: the parser's summary keys of the datagrams lost and sent.
        kits_own: the kit's own tool: its version is the kit's.
    """

    name: str
    parser_module: str
    summary_kind: str
    on_command_line: bool = True
    destinations: Optional[DestinationReader] = None
    udp_count_keys: Tuple[str, str] = ("lost_packets", "packets")
    kits_own: bool = False

    def parse(self, text: str) -> Parsed:
        """``text``, the tool's output, parsed (its parser module's ``parse``)."""
        parser: Callable[[str], Parsed] = importlib.import_module(self.parser_module).parse
        return parser(text)


#: tool name -> its descriptor
TOOLS: Dict[str, ToolDescriptor] = {
    "ping": ToolDescriptor("ping", "labtools.tools.parsers.ping", RTT,
                           destinations=destinations.ping_destinations),
    "iperf": ToolDescriptor("iperf", "labtools.tools.parsers.iperf2", RATE,
                            destinations=destinations.iperf2_destinations,
                            udp_count_keys=("lost", "total")),
    "iperf3": ToolDescriptor("iperf3", "labtools.tools.parsers.iperf3", RATE,
                             destinations=destinations.iperf3_destinations),
    "simpleperf": ToolDescriptor("simpleperf", "labtools.tools.parsers.simpleperf", RATE,
                                 destinations=destinations.simpleperf_destinations,
                                 kits_own=True),
    "ss": ToolDescriptor("ss", "labtools.tools.parsers.ss", NOT_MEASURED,
                         on_command_line=False),
}


def descriptor(name: str) -> ToolDescriptor:
    """The descriptor of tool ``name``; an :class:`InputError` for a tool the kit does not
    read."""
    found = TOOLS.get(name)
    if found is None:
        raise InputError(f"unknown tool {name!r}: choose one of {', '.join(TOOLS)}")
    return found


def command_line_tools() -> Tuple[str, ...]:
    """The tools ``labtools parse`` reads, in the registry's order."""
    return tuple(name for name, tool in TOOLS.items() if tool.on_command_line)
