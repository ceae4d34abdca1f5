"""``labtools parse TOOL FILE``: the summary of a real tool's output, optionally judged.

    labtools parse {ping,iperf,iperf3,simpleperf} FILE [--json]
        [--topology T --src A --dst B]

FILE may be ``-`` for standard input. Numbers are in Mbit/s and ms. With a topology and
a pair, the verdicts against the expected values follow the summary (JSON key
``verdicts``: rows of metric, expected, measured, unit, ratio, verdict, reason); the
destination the output names must then be the pair's (else a one-line error, exit 2).

For ping the summary also holds the percentiles of the replies' RTTs (``p50_ms``,
``p90_ms``, ``p99_ms``, ``p999_ms``) and ``max_after_first_ms``. Lines of the output the
parser did not understand are counted in ``unparsed_lines``; a warning on standard error
says so. Where the tool's own output disagrees with itself (a ``[SUM]`` that is not the
sum of its streams, a printed loss its counts contradict, totals no run gives) the
summary's ``warnings`` say so, one warning line each goes to standard error, and with a
topology a ``tool_output`` verdict (suspicious) follows the others; the numbers are
those of the output's consistent part (each stream's final report, the counts).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, Dict, Sequence

from labtools.commands import options
from labtools.errors import InputError
from labtools.tools.registry import RTT, command_line_tools, descriptor

if TYPE_CHECKING:  # pragma: no cover
    from labtools.judge.measurement import Measurement

#: the tools this command reads (their descriptors say so: labtools.tools.registry)
TOOLS = command_line_tools()


def add_parser(sub: Any) -> None:
    """Register ``labtools parse``."""
    p = sub.add_parser("parse", help="parse a tool's output and judge it",
                       description=f"Parse the saved output of {', '.join(TOOLS)}.")
    p.add_argument("tool", choices=TOOLS, help="which tool wrote the output")
    p.add_argument("file", metavar="FILE", type=options.text,
                   help="the output file, or - for standard input")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--topology", metavar="T", type=options.text,
                   help="judge against this topology")
    p.add_argument("--src", metavar="A", type=options.text,
                   help="source node of the measurement")
    p.add_argument("--dst", metavar="B", type=options.text,
                   help="destination node of the measurement")
    p.set_defaults(handler=run)


#: the most output read (bytes): a day of 0.1 s iperf3 intervals is about 100 MB of JSON
MAX_INPUT_BYTES = 256 * 2**20


def _read(path: str) -> str:
    """The text of ``path`` (``-``: standard input), at most :data:`MAX_INPUT_BYTES`."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{path} holds more than {MAX_INPUT_BYTES // 2**20} MiB: not the "
                         "output of one run")
    return data.decode("utf-8", errors="replace")


#: keys of the typed ping summary shown beside what ping printed
RTT_KEYS = ("p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_after_first_ms")


def _shown(m: "Measurement") -> Dict[str, Any]:
    """The summary to print: the parser's, and for ping the percentiles of the replies."""
    summary = dict(m.parsed.summary)
    if descriptor(m.tool).summary_kind == RTT:
        typed = m.summary.as_dict()
        summary.update({key: typed.get(key) for key in RTT_KEYS})
    return summary


def _warn_unparsed(tool: str, summary: Dict[str, Any]) -> None:
    count = summary.get("unparsed_lines") or 0
    if count:
        first = (summary.get("unparsed_sample") or [""])[0]
        lines = "line" if count == 1 else "lines"
        print(f"labtools parse {tool}: warning: {count} {lines} of the output not understood "
              f"(first: {first!r})", file=sys.stderr)


def _warn_disagreements(tool: str, warnings: Sequence[str]) -> None:
    for warning in warnings:
        print(f"labtools parse {tool}: warning: {warning}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Parse, print, return 0."""
    from labtools.judge.destination import check_destination
    from labtools.judge.measurement import judge_output

    judged = [args.topology, args.src, args.dst]
    if any(judged) and not all(judged):
        raise InputError("--topology, --src and --dst go together")
    topo = None
    if args.topology:
        from labtools.model.catalog import load_topology

        topo = load_topology(args.topology)
    m = judge_output(args.tool, _read(args.file), topo, args.src or "", args.dst or "")
    if topo is not None:
        check_destination(m.parsed, topo, args.src, args.dst)
    summary = _shown(m)
    _warn_unparsed(args.tool, summary)
    _warn_disagreements(args.tool, m.parsed.warnings)
    result: Dict[str, Any] = {"tool": args.tool, "summary": summary}
    if topo is not None:
        result["verdicts"] = [v.as_dict() for v in m.verdicts]
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for key, value in summary.items():
        print(f"{key:<22}{_fmt(value)}")
    for row in result.get("verdicts", []):
        print(f"{row['verdict'].upper():<13}{row['metric']}: {row['reason']}")
    return 0


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return "-" if value is None else str(value)
