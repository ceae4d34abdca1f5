"""The five test cases of the assignment, on any topology: short loops over judged probes.

``udp``: iperf UDP at a chosen rate on each pair, then the capacity search on the first
pair. ``link``: ping, iperf3 and simpleperf across each rate-limited link between two
routers. ``path``: ping and iperf3 on each pair. ``mux``: concurrent iperf3 flows on
different pairs. ``parallel``: the same with the first pair using two connections.

Which pairs: a topology file may define ``CASES = {"path": ["h1:h4", ...], "mux":
[["h1:h4", "h2:h5"], ...], "parallel": [["h1:h4x2", "h2:h5", "h3:h6"]]}``; otherwise they
are derived: rate-limited host pairs with the longest RTTs first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from labtools.errors import InputError, TopologyError
from labtools.judge import policy
from labtools.model.expect import bottleneck, rtt_ms
from labtools.model.fairness import parse_flows
from labtools.model.topology import Topology

if TYPE_CHECKING:  # pragma: no cover
    from labtools.judge.verdicts import Verdict
    from labtools.lab.session import LabSession

CASE_NAMES = ("udp", "link", "path", "mux", "parallel")
Say = Callable[[str], None]


@dataclass
class CasePlan:
    """The pairs and flow sets each case uses on one topology."""

    pairs: List[Tuple[str, str]]
    links: List[Tuple[str, str]]
    mux: List[List[str]]
    parallel: List[List[str]] = field(default_factory=list)

    def require_pairs(self, topo: Topology) -> None:
        """:class:`TopologyError` when the plan has no pair to measure."""
        if not self.pairs:
            raise TopologyError(
                f"topology {topo.name!r} has no rate-limited path between two hosts: the test "
                f"cases need one (labtools expect {topo.name} shows the paths)")


def derive_plan(topo: Topology, declared: Optional[Dict[str, Any]] = None) -> CasePlan:
    """The case plan: what the topology file declares, the rest derived (a topology with
    no rate-limited path between two hosts gets an empty plan)."""
    declared = declared or {}
    candidates = []
    for src in topo.hosts:
        for dst in topo.hosts:
            if src < dst and bottleneck(topo, src, dst)[0] is not None:
                candidates.append((-rtt_ms(topo, src, dst), src, dst))
    ranked = [(s, d) for _, s, d in sorted(candidates)]
    pairs: List[Tuple[str, str]] = [
        (p.split(":")[0], p.split(":")[1]) for p in declared.get("path", [])] or ranked[:3]
    links = [(lk.a, lk.b) for lk in topo.links
             if lk.bw_mbps is not None and topo.node(lk.a).has_ip and topo.node(lk.b).has_ip]
    mux = declared.get("mux") or _disjoint_sets(pairs + ranked)
    parallel = declared.get("parallel") or (
        [[f"{mux[-1][0]}x2", *mux[-1][1:]]] if mux else [])
    return CasePlan(list(pairs), links or list(pairs), mux, parallel)


def _disjoint_sets(pairs: List[Tuple[str, str]]) -> List[List[str]]:
    chosen: List[Tuple[str, str]] = []
    used: set = set()
    for src, dst in pairs:
        if src not in used and dst not in used:
            chosen.append((src, dst))
            used |= {src, dst}
    flows = [f"{s}:{d}" for s, d in chosen]
    return [flows[:n] for n in (2, 3) if len(flows) >= n] or ([flows] if flows else [])


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
