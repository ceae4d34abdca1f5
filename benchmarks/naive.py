"""Benchmark: the numbers a student gets by hand, on the same network as the kit's demo.

Needs root and netem (``bench.py`` runs it in the VM when needed). On ``portfolio``, with
the pairs and flow sets of the five test cases, ``--repeat`` times on a fresh network:

- ``ping -c 10`` (one per second): the *average* RTT, as a student reads it;
- plain ``iperf3 -c`` with its defaults (10 s, no warm-up left out): the whole-run
  average of the receiver, and the sender's number;
- ``iperf -u -b <bottleneck>M -t 10`` on the first pair: the rate the client prints (what
  it sent) and the server's report (what arrived), as the UDP "capacity";
- the flow sets of the multiplexing cases started one after the other (no common start)
  with plain ``iperf3 -c``: Jain's index of the senders' numbers.

Each figure is divided by the kit's expected value for it (RTT, TCP goodput ceiling,
bottleneck, a fair share), so it can sit beside the kit's own ratios.

    python benchmarks/naive.py --repeat 3 --out benchmarks/results/naive.json
"""

from __future__ import annotations

import sys
import time
from typing import Any, Dict, List

from common import run_repeated, say, spread

TOPOLOGY = "portfolio"
PORT = 5701


def one_network() -> Dict[str, List[float]]:
    """Every naive figure once, as ratios to the expected values, on one fresh network."""
    from labtools.lab.session import LabSession
    from labtools.model.cases import derive_plan
    from labtools.model.catalog import load_cases
    from labtools.tools.parsers import parse

    ratios: Dict[str, List[float]] = {k: [] for k in (
        "avg_rtt / expected", "min_rtt / expected", "iperf3 receiver avg / ceiling",
        "iperf3 sender / ceiling", "udp sent / bottleneck", "udp received / bottleneck",
        "jain of senders")}
    with LabSession(TOPOLOGY, results=None) as lab:
        plan = derive_plan(lab.topo, load_cases(TOPOLOGY))
        for src, dst in plan.pairs:
            exp, ip = lab.expected(src, dst), lab.ip_towards(src, dst)
            say(f"naive: ping -c 10 {src}->{dst}")
            ping = parse("ping", lab.run(src, ["ping", "-c", "10", ip], 40).text).summary
            ratios["avg_rtt / expected"].append(ping["avg_ms"] / exp.rtt_ms)
            ratios["min_rtt / expected"].append(ping["min_ms"] / exp.rtt_ms)
            say(f"naive: iperf3 -c (defaults) {src}->{dst}")
            with lab.server(dst, ["iperf3", "-s", "-1", "-p", str(PORT)], PORT):
                tcp = parse("iperf3", lab.run(src, ["iperf3", "-c", ip, "-p", str(PORT), "-J"],
                                              60).text).summary
            ratios["iperf3 receiver avg / ceiling"].append(
                tcp["receiver_mbps"] / exp.tcp_goodput_ceiling_mbps)
            ratios["iperf3 sender / ceiling"].append(
                tcp["sender_mbps"] / exp.tcp_goodput_ceiling_mbps)
        src, dst = plan.pairs[0]
        exp, ip = lab.expected(src, dst), lab.ip_towards(src, dst)
        say(f"naive: iperf -u -b {exp.bottleneck_mbps:g}M {src}->{dst}")
        with lab.server(dst, ["iperf", "-s", "-u", "-p", str(PORT)], PORT, udp=True):
            udp = parse("iperf", lab.run(src, ["iperf", "-c", ip, "-u", "-p", str(PORT), "-b",
                                               f"{exp.bottleneck_mbps:g}M", "-t", "10"],
                                         60).text).summary
        ratios["udp sent / bottleneck"].append(udp["sender_mbps"] / exp.bottleneck_mbps)
        if udp.get("receiver_mbps"):
            ratios["udp received / bottleneck"].append(udp["receiver_mbps"] / exp.bottleneck_mbps)
        for spec in plan.mux:
            ratios["jain of senders"].append(_flows_by_hand(lab, spec))
    return ratios


def _flows_by_hand(lab: Any, spec: List[str]) -> float:
    """Start each flow's client after the previous one (as typed by hand); Jain's index
    of the senders' own numbers."""
    from contextlib import ExitStack

    from labtools.model.fairness import jain_index
    from labtools.tools.parsers import parse

    say(f"naive: {' + '.join(spec)} started one after the other")
    pairs = [flow.split(":") for flow in spec]
    with ExitStack() as servers:
        procs = []
        for i, (_src, dst) in enumerate(pairs):
            port = PORT + 10 + i
            servers.enter_context(lab.server(dst, ["iperf3", "-s", "-1", "-p", str(port)], port))
        for i, (src, dst) in enumerate(pairs):
            procs.append(lab.start_process(src, ["iperf3", "-c", lab.ip_towards(src, dst), "-p",
                                                 str(PORT + 10 + i), "-J"]))
            time.sleep(1.0)  # a student starting the next one
        outputs = [p.communicate(timeout=60)[0] for p in procs]
    return jain_index([parse("iperf3", out).summary["sender_mbps"] for out in outputs])


def run(repeat: int) -> Dict[str, Any]:
    runs = []
    for i in range(repeat):
        say(f"naive: network {i + 1}/{repeat}")
        runs.append(one_network())
    keys = runs[0].keys()
    return {"topology": TOPOLOGY, "repeat": repeat,
            "ratios": {k: spread([v for r in runs for v in r[k]]) for k in keys}, "runs": runs}


def main() -> int:
    return run_repeated(__doc__, "naive", run)


if __name__ == "__main__":
    sys.exit(main())
