"""The steps a lab asks a student to run by hand on a node, checked on what was recorded.

Every lab has a step typed on a node (``run_on(lab, "h1", "ping -c 3 {h4}")`` in the
notebook, or the same line in a terminal on the node: ``labtools shell h1``); the kit keeps
each command with its output (:mod:`labtools.results.transcripts`). A :class:`HandStep` says
what the lab asked: on which node, which tool, with which options and towards which node,
and what its output must show. :func:`check_step` reads the recorded commands and answers
None when one of them did what was asked, or one line saying what is missing. It grades
what the student typed (the tool, its options, the destination) and that the tool ran
(its output reads as that tool's), never what the network did.

Pure: the caller passes the recorded commands as ``(node, command line, output)`` and a
function giving the address one node reaches another at.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from labtools.errors import ParseError
from labtools.tools.parsers import parse

#: (node, command line, output) of one recorded command
Recorded = Tuple[str, str, str]
#: (node, other node) -> the address ``node`` reaches ``other`` at
AddressOf = Callable[[str, str], str]
#: rates iperf's ``-b`` takes for 10 Mbit/s
TEN_MBPS = ("10M", "10m", "10000000", "10000k", "10000K")


def option(argv: Sequence[str], flag: str) -> Optional[str]:
    """The value given to ``flag`` (``-c 3`` or ``-c3``); None when it is not there."""
    for i, word in enumerate(argv):
        if word == flag and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(flag) and len(word) > len(flag) and not word.startswith("--"):
            return word[len(flag):]
    return None


def _argv(line: str) -> List[str]:
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


def _tool(argv: Sequence[str]) -> str:
    return argv[0].rsplit("/", 1)[-1] if argv else ""


def _reads_as(tool: str, output: str) -> bool:
    try:
        parse(tool, output)
    except ParseError:
        return False
    return True


@dataclass(frozen=True)
class HandStep:
    """A by-hand step: ``tool`` run on each of ``nodes``; ``wanted`` says what of its
    command and output the lab asks for (None when the command did it, else what is wrong);
    ``asked`` is the step in words, for the one line when nothing did."""

    nodes: Tuple[str, ...]
    tool: str
    asked: str
    wanted: Callable[[List[str], str, str, AddressOf], Optional[str]]


def _ping_h1_h4(argv: List[str], output: str, node: str, address: AddressOf) -> Optional[str]:
    if argv[-1] not in (address(node, "h4"), "h4"):
        return f"towards {argv[-1]}, not h4 ({address(node, 'h4')})"
    if option(argv, "-c") != "3":
        return f"{option(argv, '-c') or 'no'} -c: the lab asks for 3 echo requests"
    return None if _reads_as("ping", output) else "its output is not ping's report"


def _iperf_udp(dst: str, rates: Tuple[str, ...], seconds: Optional[str]
               ) -> Callable[[List[str], str, str, AddressOf], Optional[str]]:
    def wanted(argv: List[str], output: str, node: str, address: AddressOf) -> Optional[str]:
        if option(argv, "-c") not in (address(node, dst), dst):
            return f"a client of {option(argv, '-c')}, not of {dst}"
        if "-u" not in argv:
            return "TCP: the lab asks for UDP (-u)"
        if option(argv, "-b") not in rates:
            return f"-b {option(argv, '-b')}: not a rate the lab asks for"
        if seconds is not None and option(argv, "-t") != seconds:
            return f"-t {option(argv, '-t')}: the lab asks for {seconds} s"
        try:
            kinds = set(parse("iperf", output).table["kind"])
        except ParseError:
            return "its output is not iperf's report"
        return None if "server_report" in kinds else "no server report: was the server up?"
    return wanted


def _tc_stats(argv: List[str], output: str, node: str, address: AddressOf) -> Optional[str]:
    if not {"qdisc", "show"} <= set(argv) or "-s" not in argv:
        return "the lab asks for tc -s qdisc show (-s: the counters)"
    return None if "netem" in output and "dropped" in output else "no netem queue listed"


def _route_to_h9(argv: List[str], output: str, node: str, address: AddressOf) -> Optional[str]:
    if argv[1:3] != ["route", "get"] or argv[-1] != address(node, "h9"):
        return f"the lab asks for ip route get {address(node, 'h9')} (h9)"
    return None if address(node, "h9") in output else "its output shows no route to h9"


def _iperf3_two(argv: List[str], output: str, node: str, address: AddressOf) -> Optional[str]:
    if option(argv, "-c") not in (address(node, "h4"), "h4"):
        return f"a client of {option(argv, '-c')}, not of h4"
    if option(argv, "-P") != "2":
        return f"-P {option(argv, '-P')}: the lab asks for 2 connections"
    return None if "[SUM]" in output and "receiver" in output else "no [SUM] receiver line"


#: the by-hand step each lab grades, by its id as the notebook names it
STEPS: Dict[str, HandStep] = {
    "00-ping": HandStep(("h1",), "ping", "ping -c 3 towards h4 on h1", _ping_h1_h4),
    "01-iperf-udp": HandStep(("h1",), "iperf", "iperf -c (h4) -u -b 10 Mbit/s -t 2 on h1",
                             _iperf_udp("h4", TEN_MBPS, "2")),
    "02-tc": HandStep(("r2",), "tc", "tc -s qdisc show on r2", _tc_stats),
    "03-route": HandStep(("h1", "r1", "r2", "r3"), "ip", "ip route get (h9) on each node",
                         _route_to_h9),
    "04-tc": HandStep(("r2", "r3"), "tc", "tc -s qdisc show on r2 and on r3", _tc_stats),
    "05-iperf3": HandStep(("h1",), "iperf3", "iperf3 -c (h4) -P 2 on h1", _iperf3_two),
    "06-units-M": HandStep(("a1",), "iperf", "iperf -c (b1) -u -b 10M on a1",
                           _iperf_udp("b1", ("10M",), None)),
    "06-units-bits": HandStep(("a1",), "iperf", "iperf -c (b1) -u -b 10000000 on a1",
                              _iperf_udp("b1", ("10000000",), None)),
}


def check_step(step_id: str, recorded: Sequence[Recorded], address: AddressOf) -> Optional[str]:
    """None when the recorded commands did step ``step_id`` on each of its nodes, else one
    line: what was asked, and what the nearest attempt got wrong.

    Raises:
        KeyError: an id not in :data:`STEPS` (the notebook's fault).
    """
    step = STEPS[step_id]
    for node in step.nodes:
        tried = [(_argv(line), output) for where, line, output in recorded
                 if where == node and _tool(_argv(line)) == step.tool]
        problems = [step.wanted(argv, output, node, address) for argv, output in tried]
        if not tried:
            return (f"no {step.tool} recorded on {node}: run {step.asked} by hand (run_on "
                    f"above, or in a terminal: labtools shell {node})")
        if None not in problems:
            return f"{step.tool} on {node}: {problems[-1]} (asked: {step.asked})"
    return None
