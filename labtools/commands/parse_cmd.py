"""``labtools parse TOOL FILE``: the summary of a real tool's output, optionally judged.

    labtools parse {ping,iperf,iperf3,simpleperf} FILE [--json]
        [--topology T --src A --dst B]

FILE may be ``-`` for standard input. Numbers are in Mbit/s and ms. With a topology and
a pair, the verdicts against the expected values follow the summary (JSON key
``verdicts``: rows of metric, expected, measured, unit, ratio, verdict, reason).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict

from labtools.errors import InputError

TOOLS = ("ping", "iperf", "iperf3", "simpleperf")


def add_parser(sub: Any) -> None:
    """Register ``labtools parse``."""
    p = sub.add_parser("parse", help="parse a tool's output and judge it",
                       description="Parse the saved output of ping, iperf, iperf3 or simpleperf.")
    p.add_argument("tool", choices=TOOLS, help="which tool wrote the output")
    p.add_argument("file", metavar="FILE", help="the output file, or - for standard input")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--topology", metavar="T", help="judge against this topology")
    p.add_argument("--src", metavar="A", help="source node of the measurement")
    p.add_argument("--dst", metavar="B", help="destination node of the measurement")
    p.set_defaults(handler=run)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror}") from None


def run(args: argparse.Namespace) -> int:
    """Parse, print, return 0."""
    from labtools.judge.measurement import judge_output

    judged = [args.topology, args.src, args.dst]
    if any(judged) and not all(judged):
        raise InputError("--topology, --src and --dst go together")
    topo = None
    if args.topology:
        from labtools.model.catalog import load_topology

        topo = load_topology(args.topology)
    m = judge_output(args.tool, _read(args.file), topo, args.src or "", args.dst or "")
    result: Dict[str, Any] = {"tool": args.tool, "summary": m.parsed.summary}
    if topo is not None:
        result["verdicts"] = [v.as_dict() for v in m.verdicts]
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for key, value in m.parsed.summary.items():
        print(f"{key:<22}{_fmt(value)}")
    for row in result.get("verdicts", []):
        print(f"{row['verdict'].upper():<13}{row['metric']}: {row['reason']}")
    return 0


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return "-" if value is None else str(value)
