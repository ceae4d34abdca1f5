"""``labtools demo PRESET``: rehearse a live demonstration without a browser.

    labtools demo bufferbloat
    labtools demo bdp --change "5s L2 delay_ms=40" --change "20s L2 delay_ms=5" --duration-s 30
    labtools demo --export last --out handout/bufferbloat.ipynb

Starts the preset's network and flows (:mod:`labtools.lab.live_presets`), applies its
timed knob changes (or those given with ``--change``, which replace the preset's own: ``Ns
LINK knob=value...``, knobs ``bw_mbps``, ``delay_ms``, ``loss_pct``, ``queue_pkts``) to the
running network, and prints a line every sample (about once a second): each watched
link's queue (packets) and the rate it sent, each TCP flow's rate, cwnd and RTT, each
ping's RTTs, with the values the kit expects now, redrawn after each change. Everything
is saved in the results store (``live_events``). A machine too slow to sample once a
second is told so, with its numbers. Where this kernel cannot emulate links, the command
re-runs itself inside the lab VM (``labtools vm``), as ``labtools run`` does.

``--export DEMO --out NAME.ipynb`` hands a recorded demonstration out (``DEMO``: ``last``,
its id, or the beginning of it, as the rehearsal prints it): a notebook without outputs
that draws it again from ``NAME.sqlite`` beside it, and ``NAME.csv`` with the same points
(:mod:`labtools.teach.live_export`). No network is started.

For instructors: it shows expected values (refused in a student's lab).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, Optional

from labtools.commands import options

#: the longest rehearsal (s): iperf3 runs at most 600 s
MAX_DURATION_S = 540.0


def add_parser(sub: Any) -> None:
    """Register ``labtools demo``."""
    from labtools.lab.live_presets import PRESETS

    p = sub.add_parser(
        "demo", help="rehearse a live demonstration: flows, timed link changes, samples",
        description="Run a live demonstration's preset on a real network without a browser: "
        "flows start, links change while they run, and the queue, RTT and rates are printed "
        "and saved every second.")
    p.add_argument("preset", nargs="?", choices=list(PRESETS), metavar="PRESET",
                   help=", ".join(PRESETS))
    p.add_argument("--change", action="append", default=[], metavar="'Ns LINK knob=value'",
                   type=options.text,
                   help="a timed change (repeatable; replaces the preset's own), e.g. "
                   "'5s L2 delay_ms=40'")
    p.add_argument("--duration-s", type=options.seconds, metavar="S",
                   help="seconds the demonstration runs (default: the preset's)")
    p.add_argument("--results", default="results/labtools.sqlite", metavar="PATH",
                   type=options.text, help="results store (default results/labtools.sqlite)")
    p.add_argument("--export", metavar="DEMO", type=options.text,
                   help="instead of running: hand out the recorded demonstration DEMO (last, "
                   "or its id) as a notebook (--out), with its results file and a CSV beside")
    p.add_argument("--out", metavar="NAME.ipynb", type=options.path,
                   help="the notebook --export writes (NAME.sqlite and NAME.csv beside it)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Rehearse the preset here, or in the lab VM when this kernel cannot emulate links."""
    from labtools.errors import InputError
    from labtools.lab.live_plan import changed_topology, parse_change
    from labtools.lab.live_presets import preset
    from labtools.lab.placement import runs_natively
    from labtools.model.catalog import load_topology
    from labtools.results.store import ResultStore
    from labtools.system.vm import run_in_vm

    options.instructors_only("demo")
    if args.export is not None or args.out is not None:
        return _export(args)
    if args.preset is None:
        raise InputError("labtools demo: name a PRESET to run, or --export a recorded "
                         "demonstration with --out NAME.ipynb")
    chosen = preset(args.preset)
    changes = [parse_change(c) for c in args.change] if args.change else list(chosen.changes)
    duration_s = args.duration_s if args.duration_s is not None else chosen.duration_s
    if duration_s > MAX_DURATION_S:
        raise InputError(f"--duration-s {duration_s:g}: at most {MAX_DURATION_S:g} s")
    topo = load_topology(chosen.topology)
    for change in changes:  # refuse a bad change before anything starts
        topo = changed_topology(topo, change)
    args.results = str(ResultStore(args.results).path)
    if not runs_natively(topo, "lxbr"):
        return run_in_vm([sys.executable, "-m", "labtools.cli", *args.argv],
                         rwdirs=[Path(args.results).resolve().parent])
    return _rehearse(chosen, changes, duration_s, args.results)


def _export(args: argparse.Namespace) -> int:
    """``--export DEMO --out NAME.ipynb``: write the handout (no network)."""
    from labtools.errors import InputError
    from labtools.results.store import ResultStore
    from labtools.teach.live_export import export_demo

    if args.export is None or args.out is None or args.preset is not None:
        raise InputError("labtools demo --export DEMO --out NAME.ipynb: both, and no PRESET "
                         "(exporting runs nothing)")
    done = export_demo(ResultStore(args.results, create=False), args.export, args.out)
    print(f"demonstration {done.demo_id} ({done.events} events) handed out as {done.notebook}, "
          f"reading {done.results.name} (its results) and {done.table.name} (its points) "
          "beside it")
    return 0


def _rehearse(chosen: Any, changes: Any, duration_s: float, results: str) -> int:
    from labtools.lab.live import LiveDemo
    from labtools.lab.session import LabSession

    notes = dict(zip((c.text for c in chosen.changes), chosen.change_notes))
    print(f"== {chosen.name} on {chosen.topology}, {duration_s:g} s ==")
    print(f"what to look at: {chosen.look_at}", flush=True)
    with LabSession(chosen.topology, results=results, case=f"demo {chosen.name}",
                    calibrate=False) as lab:
        demo = LiveDemo(lab, chosen.flows, duration_s=duration_s)
        told: Dict[str, Optional[str]] = {"slow": None}

        def on_sample(values: Dict[str, Any]) -> None:
            t_s = demo.events[-1].t_s
            print(sample_line(t_s, values), flush=True)
            slow = demo.slow_note()
            if slow and not told["slow"]:
                print(f"!! {slow}", flush=True)
            told["slow"] = slow

        def on_change(values: Dict[str, Any]) -> None:
            t_s = demo.events[-1].t_s
            if "refused" in values:
                print(f"-> {t_s:5.1f} s  {values['text']}: refused: {values['refused']}")
                return
            note = notes.get(values["text"], "")
            print(f"-> {t_s:5.1f} s  {values['text']}{': ' + note if note else ''}", flush=True)

        demo.run(duration_s, changes, on_sample=on_sample, on_change=on_change)
    median = demo.median_interval_s()
    print(f"{len(demo.intervals_s)} samples, median interval "
          f"{'-' if median is None else f'{median:.2f} s'}; "
          f"{demo.slow_note() or 'the samples kept up'}")
    print(f"saved to {results} (demonstration {demo.demo_id}, live_events)")
    return 0


def _num(value: Optional[float], digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def sample_line(t_s: float, values: Dict[str, Any]) -> str:
    """One printed line of a sample: links, TCP flows, pings, with what is expected."""
    parts = [f"{t_s:6.1f} s"]
    for label, link in values.get("links", {}).items():
        if not link.get("new", True):
            parts.append(f"{label} (no new sample)")
            continue
        parts.append(f"{label} queue {link['backlog_pkts']:4d} pkts, sent "
                     f"{_num(link['sent_mbps'])} Mbit/s, drops/s {_num(link['dropped_per_s'], 0)}")
    expected = values.get("expected", {})
    for label, flow in values.get("tcp", {}).items():
        if "missing" in flow or not flow.get("new", True):
            parts.append(f"{label}: {flow.get('missing', 'no new sample')}")
            continue
        want = expected.get(label, {})
        parts.append(f"{label} {_num(flow['rate_mbps'])} Mbit/s (exp {_num(want.get('rate_mbps'))})"
                     f" cwnd {flow['cwnd'] or '-'} rtt {_num(flow['rtt_ms'])} ms")
    for label, replies in values.get("pings", {}).items():
        want = expected.get(label, {})
        rtts = [rtt for _, rtt in replies]
        shown = f"{min(rtts):.1f}..{max(rtts):.1f}" if rtts else "-"
        parts.append(f"{label} rtt {shown} ms (exp {_num(want.get('rtt_ms'))}.."
                     f"{_num(want.get('max_rtt_ms'))})")
    return " | ".join(parts)
