"""``labtools run TOPOLOGY CASE``: one of the five test cases on a real network.

    labtools run portfolio path [--duration 10] [--json]
    labtools run portfolio all          # all five: the instructor's demonstration

Prints expected vs measured with verdicts; every measurement is saved to the results
store (``results/labtools.sqlite`` by default) the moment it completes. Where this kernel
cannot emulate links, the command re-runs itself inside the lab VM (``labtools vm``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List

from labtools.commands import options

CASES = ("udp", "link", "path", "mux", "parallel", "all")


def add_parser(sub: Any) -> None:
    """Register ``labtools run``."""
    p = sub.add_parser("run", help="run a test case on a real Mininet network",
                       description="Run udp, link, path, mux, parallel (or all) on a real "
                       "network built from TOPOLOGY; print expected vs measured with verdicts.")
    p.add_argument("topology", metavar="TOPOLOGY", type=options.text,
                   help="e.g. portfolio, dumbbell,pairs=3, or a file")
    p.add_argument("case", choices=CASES, metavar="CASE", help=", ".join(CASES))
    p.add_argument("--duration", type=float, default=10, metavar="S",
                   help="seconds per throughput run (default 10)")
    p.add_argument("--rate", type=float, metavar="MBPS",
                   help="UDP offered rate (default: the path's bottleneck)")
    p.add_argument("--results", default="results/labtools.sqlite", metavar="PATH",
                   type=options.text,
                   help="results store (default results/labtools.sqlite)")
    p.add_argument("--switch", choices=("lxbr", "ovs"), default="lxbr",
                   help="switch kind (default: Linux bridge)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the case(s) here, or in the VM when this kernel cannot."""
    from labtools.lab.cases import CASE_NAMES
    from labtools.lab.placement import runs_natively
    from labtools.model.cases import derive_plan
    from labtools.model.catalog import load_cases, load_topology
    from labtools.results.store import ResultStore
    from labtools.system.vm import run_in_vm
    from labtools.tools.args import check_duration, check_rate

    check_duration(args.duration)
    if args.rate is not None:
        check_rate(args.rate)
    topo = load_topology(args.topology)  # refuse bad input before anything boots
    plan = derive_plan(topo, load_cases(args.topology))
    plan.require_pairs(topo)
    args.results = str(ResultStore(args.results).path)  # a store that cannot open fails here, first
    if not runs_natively(topo, args.switch):  # LabSession's own question
        results_dir = Path(args.results).resolve().parent
        return run_in_vm([sys.executable, "-m", "labtools.cli", *args.argv],
                         rwdirs=[results_dir])
    names = list(CASE_NAMES) if args.case == "all" else [args.case]
    return _run_here(args, topo, plan, names)


def _run_here(args: argparse.Namespace, topo: Any, plan: Any, names: List[str]) -> int:
    from labtools.judge.policy import run_durations
    from labtools.lab.cases import run_case
    from labtools.lab.session import LabSession

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    results: List[Dict[str, Any]] = []
    say(f"starting {topo.name} ({len(topo.hosts)} hosts, {len(topo.routers)} routers, "
        f"{len(topo.switches)} switches)...")
    with LabSession(topo, switch=args.switch, results=args.results,
                    durations=run_durations(args.duration)) as lab:
        if lab.machine is not None:
            say(lab.machine.describe())
        for name in names:
            lab.case = name
            results.append(run_case(lab, name, plan, args.duration, args.rate, say))
            if not args.json:
                print(_table(results[-1]), flush=True)
    if args.json:
        print(json.dumps({"topology": topo.name, "results": args.results, "cases": results},
                         indent=2, default=str))
    else:
        print(f"saved to {args.results} (labtools results --db {args.results})")
    return 0


def _num(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _table(result: Dict[str, Any]) -> str:
    lines = [f"== {result['case']} ==",
             f"{'what':<26}{'tool':<11}{'metric':<28}{'expected':>10}{'measured':>10} "
             f"{'unit':<7}verdict"]
    for row in result["rows"]:
        lines.append(f"{row['what']:<26}{row['tool']:<11}{row['metric']:<28}"
                     f"{_num(row['expected']):>10}{_num(row['measured']):>10} {row['unit']:<7}"
                     f"{row['verdict']}")
        if row["verdict"] != "ok":
            lines.append(f"{'':<26}-> {row['reason']}")
    return "\n".join(lines)
