"""Which pairs and flow sets the five test cases of the assignment use on a topology (pure:
no network; :mod:`labtools.lab.cases` runs them).

A topology file may define ``CASES = {"path": ["h1:h4", ...], "mux": [["h1:h4", "h2:h5"],
...], "parallel": [["h1:h4x2", "h2:h5", "h3:h6"]]}``; otherwise they are derived:
rate-limited host pairs with the longest RTTs first, disjoint pairs for the concurrent
flows, the last of them with two connections on its first pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from labtools.errors import TopologyError
from labtools.model.expect import bottleneck, rtt_ms
from labtools.model.topology import Topology

CASE_NAMES = ("udp", "link", "path", "mux", "parallel")


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
