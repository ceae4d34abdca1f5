"""``labtools expect``: expected values for a pair of nodes or for concurrent flows.

    labtools expect TOPOLOGY SRC DST [--json] [--frame-bytes N]
    labtools expect TOPOLOGY --flows h1:h4x2,h2:h5,h3:h6 [--json]

Pair keys (JSON): path, links, dst_ip, rtt_ms, bottleneck_mbps, bottleneck_link,
tcp_goodput_ceiling_mbps, udp_goodput_ceiling_mbps, bdp_bytes (and rtt_with_tx_ms with
--frame-bytes). Flow keys: flows = [{src, dst, connections, share_mbps,
per_connection_mbps, limited_by}].
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict

from labtools.errors import InputError


def add_parser(sub: Any) -> None:
    """Register ``labtools expect``."""
    p = sub.add_parser(
        "expect", help="expected RTT, bottleneck, goodput, BDP, or fair shares",
        description="Compute what a measurement should show, from the topology alone.",
    )
    p.add_argument("topology", metavar="TOPOLOGY",
                   help="a name from topologies/ (e.g. portfolio, dumbbell,pairs=3) or a file")
    p.add_argument("src", nargs="?", metavar="SRC", help="source host or router")
    p.add_argument("dst", nargs="?", metavar="DST", help="destination host or router")
    p.add_argument("--flows", metavar="SPEC",
                   help="concurrent flows SRC:DST[xN],... (N parallel connections)")
    p.add_argument("--frame-bytes", type=int, metavar="N",
                   help="also give the RTT with the transmission time of N-byte frames")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the expected values; return 0."""
    from labtools.catalog import load_topology

    if args.flows and (args.src or args.dst):
        raise InputError("give either SRC DST or --flows, not both")
    if not args.flows and not (args.src and args.dst):
        raise InputError("give SRC and DST, or --flows SRC:DST,...")
    topo = load_topology(args.topology)
    result = _flows(topo, args.flows) if args.flows else _pair(topo, args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(_text(result))
    return 0


def _pair(topo: Any, args: argparse.Namespace) -> Dict[str, Any]:
    from labtools.expect import expect_pair, rtt_ms

    result = expect_pair(topo, args.src, args.dst)
    if args.frame_bytes is not None:
        result["rtt_with_tx_ms"] = round(rtt_ms(topo, args.src, args.dst, args.frame_bytes), 6)
    return result


def _flows(topo: Any, spec: str) -> Dict[str, Any]:
    from labtools.fairness import max_min_shares, parse_flows

    shares = max_min_shares(topo, parse_flows(spec))
    return {"topology": topo.name, "flows": [s.as_dict() for s in shares]}


def _fmt(value: Any, unit: str) -> str:
    return "unlimited" if value is None else f"{value:g} {unit}"


def _text(result: Dict[str, Any]) -> str:
    if "flows" in result:
        lines = [f"{'flow':<12}{'conns':>6}{'share':>14}{'per conn':>14}  limited by"]
        for f in result["flows"]:
            lines.append(
                f"{f['src'] + '-' + f['dst']:<12}{f['connections']:>6}"
                f"{_fmt(f['share_mbps'], 'Mbit/s'):>14}{_fmt(f['per_connection_mbps'], 'Mbit/s'):>14}"
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
    return "\n".join(f"{k:<24}{v}" for k, v in rows)
