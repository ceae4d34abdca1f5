"""The five test cases of the assignment, on any topology.

``udp``: iperf UDP at a chosen rate on each pair, then the automated capacity probe on the
first pair. ``link``: ping and iperf3 (and simpleperf) across each rate-limited link between
two routers. ``path``: ping and iperf3 on each pair. ``mux``: concurrent iperf3 flows on
different pairs. ``parallel``: the same with the first pair using two connections.

Which pairs: a topology file may define ``CASES = {"path": ["h1:h4", ...], "mux":
[["h1:h4", "h2:h5"], ...], "parallel": [["h1:h4x2", "h2:h5", "h3:h6"]]}``; otherwise they
are derived: rate-limited host pairs with the longest RTTs first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from labtools.errors import InputError
from labtools.model.topology import Topology

CASE_NAMES = ("udp", "link", "path", "mux", "parallel")


@dataclass
class CasePlan:
    """The pairs and flow sets each case uses on one topology."""

    pairs: List[Tuple[str, str]]
    links: List[Tuple[str, str]]
    mux: List[List[str]]
    parallel: List[List[str]] = field(default_factory=list)


def derive_plan(topo: Topology, declared: Optional[Dict[str, Any]] = None) -> CasePlan:
    """The case plan: what the topology file declares, the rest derived."""
    from labtools.model.expect import bottleneck, rtt_ms

    declared = declared or {}
    candidates = []
    for src in topo.hosts:
        for dst in topo.hosts:
            if src < dst and bottleneck(topo, src, dst)[0] is not None:
                candidates.append((-rtt_ms(topo, src, dst), src, dst))
    ranked = [(s, d) for _, s, d in sorted(candidates)]
    pairs = [tuple(p.split(":")) for p in declared.get("path", [])] or ranked[:3]
    links = [(lk.a, lk.b) for lk in topo.links
             if lk.bw_mbps is not None and topo.node(lk.a).has_ip and topo.node(lk.b).has_ip]
    mux = declared.get("mux") or _disjoint_sets(pairs + ranked)  # flows with no host in common
    parallel = declared.get("parallel") or (
        [[f"{mux[-1][0]}x2", *mux[-1][1:]]] if mux else [])
    return CasePlan(list(pairs), links or list(pairs), mux, parallel)  # type: ignore[arg-type]


def _disjoint_sets(pairs: List[Tuple[str, str]]) -> List[List[str]]:
    chosen: List[Tuple[str, str]] = []
    used: set = set()
    for src, dst in pairs:
        if src not in used and dst not in used:
            chosen.append((src, dst))
            used |= {src, dst}
    flows = [f"{s}:{d}" for s, d in chosen]
    return [flows[:n] for n in (2, 3) if len(flows) >= n] or ([flows] if flows else [])


def run_case(lab: Any, name: str, plan: CasePlan, duration_s: float = 10,
             rate_mbps: Optional[float] = None, say: Callable[[str], None] = print) -> Dict[str, Any]:
    """Run one case on a running lab; returns ``{"case", "rows": [...]}`` where each row has
    what, src, dst, tool, metric, expected, measured, unit, verdict, reason, run_id."""
    handlers = {"udp": _udp, "link": _latency_throughput, "path": _latency_throughput,
                "mux": _mux, "parallel": _mux}
    if name not in handlers:
        raise InputError(f"unknown case {name!r}: choose one of {', '.join(CASE_NAMES)} or all")
    rows: List[Dict[str, Any]] = []
    handlers[name](lab, name, plan, duration_s, rate_mbps, say, rows)
    return {"case": name, "rows": rows}


def _rows(rows: List[Dict[str, Any]], m: Any, what: str, verdicts: Any) -> None:
    for record in verdicts.to_dict(orient="records"):
        rows.append({"what": what, "src": m.src, "dst": m.dst, "tool": m.tool,
                     "run_id": m.run_id, **record})


def _latency_throughput(lab: Any, name: str, plan: CasePlan, duration_s: float,
                        rate_mbps: Optional[float], say: Callable[[str], None],
                        rows: List[Dict[str, Any]]) -> None:
    from labtools.lab import probes
    from labtools.judge.verdicts import verdicts_for

    pairs = plan.links if name == "link" else plan.pairs
    for src, dst in pairs:
        what = f"{src}-{dst}"
        say(f"[{name}] {what}: ping")
        m = probes.ping(lab, src, dst, count=probes.MIN_RTT_PING_COUNT,
                        interval_s=probes.MIN_RTT_PING_INTERVAL_S)
        _rows(rows, m, what, verdicts_for(m.parsed, lab.topo, src, dst))
        say(f"[{name}] {what}: iperf3 TCP {duration_s:g} s")
        m = probes.iperf3(lab, src, dst, duration_s=duration_s, omit_s=min(2, duration_s / 4))
        _rows(rows, m, what, verdicts_for(m.parsed, lab.topo, src, dst))
        if name == "link":
            say(f"[{name}] {what}: simpleperf {duration_s:g} s")
            m = probes.simpleperf(lab, src, dst, duration_s=duration_s)
            _rows(rows, m, what, verdicts_for(m.parsed, lab.topo, src, dst))


def _udp(lab: Any, name: str, plan: CasePlan, duration_s: float, rate_mbps: Optional[float],
         say: Callable[[str], None], rows: List[Dict[str, Any]]) -> None:
    from labtools.lab import probes
    from labtools.lab.capacity import SearchSettings, probe_capacity
    from labtools.model.expect import bottleneck
    from labtools.judge.verdicts import rate_verdict

    for src, dst in plan.pairs:
        rate = rate_mbps or bottleneck(lab.topo, src, dst)[0] or 10.0
        say(f"[udp] {src}-{dst}: iperf UDP at {rate:g} Mbit/s for {duration_s:g} s")
        m = probes.iperf_udp(lab, src, dst, rate, duration_s=duration_s)
        from labtools.judge.verdicts import verdicts_for

        _rows(rows, m, f"{src}-{dst} at {rate:g}M", verdicts_for(m.parsed, lab.topo, src, dst))
    src, dst = plan.pairs[0]
    link_mbps = bottleneck(lab.topo, src, dst)[0]
    settings = SearchSettings(start_mbps=max(1.0, (link_mbps or 8) / 8),
                              max_mbps=4 * (link_mbps or 1000))

    def measure(rate: float) -> Dict[str, Any]:
        m = probes.iperf_udp(lab, src, dst, rate, duration_s=max(2.0, duration_s / 3))
        s = m.summary
        return {"received_mbps": s.get("receiver_mbps"), "loss_pct": s.get("lost_pct"),
                "jitter_ms": s.get("jitter_ms")}

    result = probe_capacity(measure, settings, progress=lambda t: say(f"[udp] capacity {src}-{dst}: {t}"))
    from labtools.model.expect import udp_goodput_mbps

    expected = udp_goodput_mbps(link_mbps) if link_mbps else None
    row = rate_verdict(result["estimate_mbps"], expected, metric="capacity estimate")
    rows.append({"what": f"{src}-{dst} capacity probe", "src": src, "dst": dst, "tool": "iperf",
                 "run_id": None, **row})
    lab.last_capacity = result


def _mux(lab: Any, name: str, plan: CasePlan, duration_s: float, rate_mbps: Optional[float],
         say: Callable[[str], None], rows: List[Dict[str, Any]]) -> None:
    from labtools.lab import probes
    from labtools.model.fairness import parse_flows

    for spec in (plan.mux if name == "mux" else plan.parallel):
        flows = parse_flows(",".join(spec))
        label = " + ".join(spec)
        say(f"[{name}] {label}: {len(flows)} concurrent iperf3 flows, {duration_s:g} s")
        ms = probes.concurrent_iperf3(lab, flows, duration_s=duration_s,
                                      omit_s=min(2, duration_s / 4))
        shares = probes.shares_table(lab, flows, ms)
        for m, record in zip(ms + [ms[-1]] * 8, shares["verdicts"].to_dict(orient="records")):
            rows.append({"what": label, "src": m.src, "dst": m.dst, "tool": "iperf3",
                         "run_id": m.run_id, **record})
        if shares["jain_index"] is not None:
            rows.append({"what": label, "src": "", "dst": "", "tool": "iperf3", "run_id": None,
                         "metric": "Jain's index (per connection)", "expected": 1.0,
                         "measured": round(shares["jain_index"], 4), "unit": "",
                         "ratio": round(shares["jain_index"], 4), "verdict":
                         "ok" if shares["jain_index"] >= 0.9 else "suspicious",
                         "reason": "1.0 = perfectly even sharing per connection"})
