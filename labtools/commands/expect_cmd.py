"""``labtools expect``: expected values for a pair of nodes or for concurrent flows.

    labtools expect TOPOLOGY SRC DST [--json] [--frame-bytes N] [--load LSRC:LDST]
    labtools expect TOPOLOGY --flows h1:h4x2,h2:h5,h3:h6 [--json]
    labtools expect TOPOLOGY [--json]     # every pair and scenario of the five test cases

Pair keys (JSON): path, links, dst_ip, rtt_ms, bottleneck_mbps, bottleneck_link,
tcp_goodput_ceiling_mbps, udp_goodput_ceiling_mbps, bdp_bytes, queue_delay_ms, max_rtt_ms
and max_rtt_both_loaded_ms (worst RTTs of the steady state, which a burst can exceed),
unbounded_links, loss_pct, mathis_limit_mbps (the loss-limited estimate, which CUBIC may
exceed), queue_cap_mbps, tcp_limit_mbps (the TCP rate expected), rate_scale, load,
loaded_rtt_low_ms, loaded_rtt_ms, loaded_rtt_high_ms, loaded_queue_link,
loaded_queue_frames_low (the RTT under one TCP flow: by default the pair's own, with
--load another's), and rtt_with_tx_ms with --frame-bytes. Flow keys: flows = [{src, dst,
connections, share_mbps, per_connection_mbps, limited_by}]. Overview keys: topology,
link, path (lists of pair results), mux, parallel (lists of {spec, flows}).

In a student's lab (``LABTOOLS_MODE=student``, :mod:`labtools.teach.modes`) the command
refuses with one line: its values are what the labs' graded questions ask for. On a course
(the student edition, a hub student's server, the student image) it refuses even with
``LABTOOLS_SHOW_ANSWERS=1``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict, List, Tuple

from labtools.commands import options
from labtools.errors import InputError


def add_parser(sub: Any) -> None:
    """Register ``labtools expect``."""
    p = sub.add_parser(
        "expect", help="expected RTT, bottleneck, goodput, BDP, or fair shares",
        description="Compute what a measurement should show, from the topology alone.",
    )
    p.add_argument("topology", metavar="TOPOLOGY", type=options.text,
                   help="a name from topologies/ (e.g. portfolio, dumbbell,pairs=3) or a file")
    p.add_argument("src", nargs="?", metavar="SRC", type=options.text,
                   help="source host or router")
    p.add_argument("dst", nargs="?", metavar="DST", type=options.text,
                   help="destination host or router")
    p.add_argument("--flows", metavar="SPEC", type=options.text,
                   help="concurrent flows SRC:DST[xN],... (N parallel connections)")
    p.add_argument("--frame-bytes", type=options.frame_bytes, metavar="N",
                   help="with SRC DST: also give the RTT with the transmission time of "
                   f"N-byte frames ({options.MIN_FRAME_BYTES}..{options.MAX_FRAME_BYTES})")
    p.add_argument("--load", metavar="LSRC:LDST", type=options.text,
                   help="with SRC DST: the RTT under one TCP flow LSRC -> LDST (by default "
                   "the pair's own flow)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the expected values; return 0."""
    from labtools.model.catalog import load_topology
    from labtools.teach.modes import STUDENT_MODE_REFUSAL, answers_hidden, on_course

    if answers_hidden(note=False):
        where = "on a course" if on_course() else "in a student's lab"
        raise InputError(f"labtools expect is not available {where}: {STUDENT_MODE_REFUSAL}")

    if args.flows and (args.src or args.dst):
        raise InputError("give either SRC DST or --flows, not both")
    if bool(args.src) != bool(args.dst):
        raise InputError("give both SRC and DST (or neither, for every test case)")
    if args.frame_bytes is not None and not args.src:
        raise InputError("--frame-bytes is for a pair: give SRC and DST")
    if args.load is not None and not args.src:
        raise InputError("--load is for a pair: give SRC and DST")
    from labtools.model.scaling import rate_note, rate_scale

    topo = load_topology(args.topology)
    if not args.flows and not args.src:
        result = _overview(topo, args.topology)
    else:
        result = _flows(topo, args.flows) if args.flows else _pair(topo, args)
    result["rate_scale"] = rate_scale(topo)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    if rate_note(topo):
        print(f"note: {rate_note(topo)}")
    print(_overview_text(result) if not args.flows and not args.src else _text(result))
    return 0


def _overview(topo: Any, spec: str) -> Dict[str, Any]:
    """Expected values for every pair and flow set the five test cases use."""
    from labtools.model.cases import derive_plan
    from labtools.model.catalog import load_cases
    from labtools.model.expect import expect_pair

    plan = derive_plan(topo, load_cases(spec))
    return {
        "topology": topo.name,
        "link": [expect_pair(topo, a, b).as_dict() for a, b in plan.links],
        "path": [expect_pair(topo, a, b).as_dict() for a, b in plan.pairs],
        "mux": [{"spec": ",".join(s), **_flows(topo, ",".join(s))} for s in plan.mux],
        "parallel": [{"spec": ",".join(s), **_flows(topo, ",".join(s))} for s in plan.parallel],
    }


def _overview_text(result: Dict[str, Any]) -> str:
    lines = [f"expected values on {result['topology']} (labtools expect {result['topology']} "
             "SRC DST for the details of one pair)"]
    for case in ("link", "path"):
        lines += ["", f"== {case} ==",
                  f"{'pair':<10}{'RTT':>9}{'bottleneck':>14}{'TCP ceiling':>14}"
                  f"{'UDP ceiling':>14}{'BDP':>12}"]
        for r in result[case]:
            lines.append(f"{r['path'][0] + '-' + r['path'][-1]:<10}{r['rtt_ms']:>6g} ms"
                         f"{_fmt(r['bottleneck_mbps'], 'Mbit/s'):>14}"
                         f"{_fmt(r['tcp_goodput_ceiling_mbps'], 'Mbit/s'):>14}"
                         f"{_fmt(r['udp_goodput_ceiling_mbps'], 'Mbit/s'):>14}"
                         f"{_fmt(r['bdp_bytes'], 'B'):>12}")
    for case in ("mux", "parallel"):
        for scenario in result[case]:
            lines += ["", f"== {case}: {scenario['spec']} ==", _text(scenario)]
    return "\n".join(lines)


def _pair(topo: Any, args: argparse.Namespace) -> Dict[str, Any]:
    from labtools.model.expect import expect_pair, rtt_ms
    from labtools.model.queues import loaded_rtt

    result = expect_pair(topo, args.src, args.dst).as_dict()
    load_src, load_dst = _load(topo, args.load)
    result.update(loaded_rtt(topo, args.src, args.dst, load_src, load_dst).as_dict())
    if args.frame_bytes is not None:
        result["rtt_with_tx_ms"] = round(rtt_ms(topo, args.src, args.dst, args.frame_bytes), 6)
    return result


def _load(topo: Any, spec: Any) -> Tuple[Any, Any]:
    """The load's two ends from ``LSRC:LDST`` (both nodes of ``topo``), or (None, None)."""
    if spec is None:
        return None, None
    ends = spec.split(":")
    if len(ends) != 2 or not all(ends):
        raise InputError(f"--load takes LSRC:LDST (e.g. h2:h5), got {spec!r}")
    for node in ends:
        topo.node(node)  # TopologyError for an unknown node
    if ends[0] == ends[1]:
        raise InputError(f"--load {spec}: a flow needs two different nodes")
    return ends[0], ends[1]


def _flows(topo: Any, spec: str) -> Dict[str, Any]:
    from labtools.model.fairness import max_min_shares, parse_flows

    shares = max_min_shares(topo, parse_flows(spec, topo))
    return {"topology": topo.name, "flows": [s.as_dict() for s in shares]}


def _fmt(value: Any, unit: str) -> str:
    return "unlimited" if value is None else f"{round(value, 3):g} {unit}"


def _text(result: Dict[str, Any]) -> str:
    if "flows" in result:
        lines = [f"{'flow':<12}{'conns':>6}{'share':>16}{'per conn':>16}  limited by"]
        for f in result["flows"]:
            lines.append(
                f"{f['src'] + '-' + f['dst']:<12}{f['connections']:>6}"
                f"{_fmt(f['share_mbps'], 'Mbit/s'):>16}"
                f"{_fmt(f['per_connection_mbps'], 'Mbit/s'):>16}"
                f"  {f['limited_by'] or '-'}"
            )
        return "\n".join(lines)
    rows = [
        ("path", " -> ".join(result["path"])),
        ("links", ", ".join(result["links"])),
        ("destination address", result["dst_ip"]),
        ("RTT (propagation)", f"{result['rtt_ms']:g} ms"),
        ("bottleneck", _fmt(result["bottleneck_mbps"], "Mbit/s")
         + (f" ({result['bottleneck_link']})" if result["bottleneck_link"] else "")),
        ("TCP goodput ceiling", _fmt(result["tcp_goodput_ceiling_mbps"], "Mbit/s")),
        ("UDP goodput ceiling", _fmt(result["udp_goodput_ceiling_mbps"], "Mbit/s")),
        ("bandwidth-delay product", _fmt(result["bdp_bytes"], "bytes")),
    ]
    if "rtt_with_tx_ms" in result:
        rows.insert(4, ("RTT with transmission", f"{result['rtt_with_tx_ms']:g} ms"))
    rows += _queue_and_loss_rows(result)
    return "\n".join(f"{k:<24}{v}" for k, v in rows)


def _queue_and_loss_rows(result: Dict[str, Any]) -> List[Tuple[str, str]]:
    """What the queues and the loss do: the worst RTT of the steady state and the
    loss-limited estimate (Mathis et al.)."""
    rows: List[Tuple[str, str]] = []
    if result["max_rtt_ms"] is not None:
        both = result["max_rtt_both_loaded_ms"]
        rows.append(("worst RTT (full queues)",
                     f"{result['max_rtt_ms']:g} ms in the steady state: "
                     f"{result['queue_delay_ms']:g} ms more than the propagation, every queue "
                     "on the way full (a saturated link holds a packet max(delay, queue drain "
                     "time); a burst onto an idle link within one delay can take longer)"
                     + (f"; {both:g} ms with both directions' queues full" if both else "")))
    if result.get("loaded_queue_link"):
        rows.append(("RTT under a TCP flow",
                     f"{result['loaded_rtt_low_ms']:g}-{result['loaded_rtt_high_ms']:g} ms, "
                     f"typically {result['loaded_rtt_ms']:g} ms (one flow {result['load']} "
                     f"fills {result['loaded_queue_link']}'s queue; CUBIC's cut leaves "
                     f"{result['loaded_queue_frames_low']:g} frames in it)"))
    elif result.get("load") and result["load"] != f"{result['path'][0]}->{result['path'][-1]}":
        rows.append(("RTT under a TCP flow",
                     f"{result['loaded_rtt_ms']:g} ms: the flow {result['load']} fills no "
                     "queue this pair's packets cross"))
    if result["unbounded_links"]:
        rows.append(("no worst RTT", ", ".join(result["unbounded_links"])
                     + ": rate-limited without a queue limit (waiting is unbounded)"))
    if result["loss_pct"]:
        rows += [("loss on the path", f"{result['loss_pct']:g} %"),
                 ("loss-limited estimate", _fmt(result["mathis_limit_mbps"], "Mbit/s")
                  + " (Mathis et al.: MSS / RTT x sqrt(3/2) / sqrt(p); Reno with periodic "
                    "loss, an ACK per segment, no time-outs; CUBIC may exceed it)"),
                 ("TCP rate expected", _fmt(result["tcp_limit_mbps"], "Mbit/s")
                  + " (the lowest of the goodput ceiling, a queue limit's cap and the "
                    "loss-limited estimate; a rate above the estimate is fine up to what "
                    "the path carries)")]
    return rows
