"""The five test cases of the assignment, on any topology: short loops over judged probes.

``udp``: iperf UDP at a chosen rate on each pair, then the capacity search on the first
pair. ``link``: ping, iperf3 and simpleperf across each rate-limited link between two
routers. ``path``: ping and iperf3 on each pair. ``mux``: concurrent iperf3 flows on
different pairs. ``parallel``: the same with the first pair using two connections.

Which pairs: :mod:`labtools.model.cases` plans them (pure, testable without a network).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from labtools.errors import InputError
from labtools.judge import policy
from labtools.model.cases import CASE_NAMES, CasePlan
from labtools.model.expect import bottleneck
from labtools.model.fairness import parse_flows

if TYPE_CHECKING:  # pragma: no cover
    from labtools.judge.verdicts import Verdict
    from labtools.lab.session import LabSession

Say = Callable[[str], None]


def _rows(rows: List[Dict[str, Any]], what: str, tool: str, src: str, dst: str,
          run_id: Any, found: "List[Verdict]") -> None:
    for v in found:
        rows.append({"what": what, "src": src, "dst": dst, "tool": tool, "run_id": run_id,
                     **v.as_dict()})


def run_case(lab: "LabSession", name: str, plan: CasePlan, duration_s: float = 10,
             rate_mbps: Optional[float] = None, say: Say = print) -> Dict[str, Any]:
    """Run one case on a running lab; returns ``{"case", "rows": [...]}`` where each row has
    what, src, dst, tool, run_id and the verdict's metric, expected, measured, unit, ratio,
    verdict, reason (rows of a whole set of flows or of a search have no src, dst, run_id)."""
    plan.require_pairs(lab.topo)
    handlers = {"udp": _udp, "link": _latency_throughput, "path": _latency_throughput,
                "mux": _flows, "parallel": _flows}
    if name not in handlers:
        raise InputError(f"unknown case {name!r}: choose one of {', '.join(CASE_NAMES)} or all")
    rows: List[Dict[str, Any]] = []
    handlers[name](lab, name, plan, duration_s, rate_mbps, say, rows)
    return {"case": name, "rows": rows}


def _latency_throughput(lab: "LabSession", name: str, plan: CasePlan, duration_s: float,
                        rate_mbps: Optional[float], say: Say, rows: List[Dict[str, Any]]) -> None:
    from labtools.lab import probes

    tools = ("ping", "iperf3", "simpleperf") if name == "link" else ("ping", "iperf3")
    runners = {"ping": lambda s, d: probes.ping(lab, s, d),
               "iperf3": lambda s, d: probes.iperf3(lab, s, d, duration_s=duration_s),
               "simpleperf": lambda s, d: probes.simpleperf(lab, s, d, duration_s=duration_s)}
    for src, dst in (plan.links if name == "link" else plan.pairs):
        for tool in tools:
            say(f"[{name}] {src}-{dst}: {tool}")
            m = runners[tool](src, dst)
            _rows(rows, f"{src}-{dst}", m.tool, src, dst, m.run_id, m.verdicts)


def _udp(lab: "LabSession", name: str, plan: CasePlan, duration_s: float,
         rate_mbps: Optional[float], say: Say, rows: List[Dict[str, Any]]) -> None:
    from labtools.lab import probes
    from labtools.lab.capacity import SearchSettings, capacity_search

    for src, dst in plan.pairs:
        rate = rate_mbps or bottleneck(lab.topo, src, dst)[0] or 10.0
        say(f"[udp] {src}-{dst}: iperf UDP at {rate:g} Mbit/s for {duration_s:g} s")
        m = probes.iperf_udp(lab, src, dst, rate, duration_s=duration_s)
        _rows(rows, f"{src}-{dst} at {rate:g}M", "iperf", src, dst, m.run_id, m.verdicts)
    src, dst = plan.pairs[0]
    link_mbps = bottleneck(lab.topo, src, dst)[0] or 8.0
    settings = SearchSettings(start_mbps=max(1.0, link_mbps * policy.SEARCH_START_FRACTION),
                              max_mbps=4 * link_mbps)
    search = capacity_search(lab, src, dst, settings,
                             progress=lambda t: say(f"[udp] capacity {src}-{dst}: {t}"))
    _rows(rows, f"{src}-{dst} capacity search", "iperf", "", "", None, search.verdicts)


def _flows(lab: "LabSession", name: str, plan: CasePlan, duration_s: float,
           rate_mbps: Optional[float], say: Say, rows: List[Dict[str, Any]]) -> None:
    from labtools.lab import probes

    for spec in (plan.mux if name == "mux" else plan.parallel):
        flows = parse_flows(",".join(spec), lab.topo)
        label = " + ".join(spec)
        say(f"[{name}] {label}: {len(flows)} concurrent iperf3 flows, {duration_s:g} s")
        result = probes.concurrent_iperf3(lab, flows, duration_s=duration_s)
        for flow, m in zip(flows, result.measurements):
            _rows(rows, label, "iperf3", flow.src, flow.dst, m.run_id, m.verdicts)
        _rows(rows, label, "iperf3", "", "", None, result.verdicts[len(flows):])
