"""Max-min fair shares of concurrent flows, and Jain's fairness index (pure Python).

Every TCP connection is a flow of its own: a pair that opens two parallel connections gets
two slots on each link it uses. Capacity is per direction (a link's rate applies to each
direction separately), so flows that cross a link in opposite directions do not compete.

Water-filling: repeatedly find the link whose remaining capacity divided by the number of
still-growing connections on it is the smallest; freeze those connections at that share;
subtract; repeat. Ties go to the link that comes first in the topology.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from labtools.errors import InputError
from labtools.model.expect import path
from labtools.model.topology import Link, Topology

_FLOW_RE = re.compile(r"([A-Za-z][A-Za-z0-9_]*):([A-Za-z][A-Za-z0-9_]*)")
_CONNECTIONS_RE = re.compile(r"(.+?)x([0-9]+)")
MAX_CONNECTIONS = 64


@dataclass(frozen=True)
class Flow:
    """A source-destination pair with ``connections`` parallel TCP connections."""

    src: str
    dst: str
    connections: int = 1


@dataclass(frozen=True)
class FlowShare:
    """A flow's max-min share in Mbit/s (all its connections together)."""

    src: str
    dst: str
    connections: int
    share_mbps: Optional[float]  #: None when no rate-limited link constrains it
    per_connection_mbps: Optional[float]
    limited_by: Optional[str]  #: label of the link that froze the flow

    def as_dict(self) -> Dict[str, object]:
        """JSON-friendly form (the command line's schema)."""
        return {
            "src": self.src, "dst": self.dst, "connections": self.connections,
            "share_mbps": None if self.share_mbps is None else round(self.share_mbps, 6),
            "per_connection_mbps": None if self.per_connection_mbps is None
            else round(self.per_connection_mbps, 6),
            "limited_by": self.limited_by,
        }


def _shown(part: str, limit: int = 40) -> str:
    """``part`` quoted for an error, at most ``limit`` characters as printed (an escaped
    character prints as up to 10): cut, with ``...`` inside the quotes, where longer."""
    if len(repr(part)) <= limit:
        return repr(part)
    cut = part[:limit - 3]
    while len(repr(cut + "...")) > limit:
        cut = cut[:-1]
    return repr(cut + "...")


def parse_flows(spec: str, topo: Optional[Topology] = None) -> List[Flow]:
    """Parse ``h1:h4x2,h2:h5`` into flows (``xN`` = N parallel connections, 1..64).

    A destination whose whole name is a node of ``topo`` is taken as it is, so a host
    called ``hx2`` can be named (``h1:hx2``, or ``h1:hx2x3`` for three connections)."""
    if not isinstance(spec, str):
        raise InputError(f"flows must be text like h1:h4x2,h2:h5, not {type(spec).__name__}")
    flows = []
    names = set(topo.names()) if topo is not None else set()
    for part in (p.strip() for p in spec.split(",")):
        shown = _shown(part)
        match = _FLOW_RE.fullmatch(part)
        if not match:
            raise InputError(f"bad flow {shown}: write SRC:DST or SRC:DSTxN, e.g. h1:h4x2")
        src, dst, count = match.group(1), match.group(2), 1
        counted = _CONNECTIONS_RE.fullmatch(dst)
        if counted and dst not in names:
            digits = counted.group(2).lstrip("0") or "0"  # at most 3 digits: no huge int
            dst, count = counted.group(1), int(digits) if len(digits) <= 3 else MAX_CONNECTIONS + 1
        if not 1 <= count <= MAX_CONNECTIONS:
            raise InputError(f"flow {shown}: parallel connections must be within "
                             f"1..{MAX_CONNECTIONS}")
        flows.append(Flow(src, dst, count))
    if not flows:
        raise InputError("no flows given")
    return flows


def crossings(topo: Topology, flow: Flow) -> List[Tuple[int, bool]]:
    """The rate-limited links the flow's data crosses: (index in ``topo.links``, True when
    it crosses from ``a`` to ``b``), in travel order."""
    info = path(topo, flow.src, flow.dst)
    nodes = list(info.nodes)
    out = []
    for link in info.links:
        if link.bw_mbps is None:
            continue
        index = next(i for i, lk in enumerate(topo.links) if lk is link)
        out.append((index, nodes.index(link.a) < nodes.index(link.b)))
    return out


def max_min_shares(topo: Topology, flows: Sequence[Flow]) -> List[FlowShare]:
    """Max-min fair shares (at the configured link rates) for flows running together."""
    if not flows:
        raise InputError("no flows given")
    usage = [crossings(topo, flow) for flow in flows]
    remaining: Dict[Tuple[int, bool], float] = {}
    for used in usage:
        for key in used:
            remaining[key] = topo.links[key[0]].rate_limit_mbps()
    rate: Dict[int, float] = {}
    limiter: Dict[int, Link] = {}
    growing = {i for i, used in enumerate(usage) if used}
    while growing:
        best: Optional[Tuple[float, Tuple[int, bool]]] = None
        for key in sorted(remaining):
            slots = sum(flows[i].connections for i in growing if key in usage[i])
            if slots:
                fair = remaining[key] / slots
                if best is None or fair < best[0] - 1e-12:
                    best = (fair, key)
        if best is None:  # pragma: no cover - every growing flow uses some link
            break
        fair, key = best
        for i in sorted(growing):
            if key in usage[i]:
                rate[i] = fair
                limiter[i] = topo.links[key[0]]
                for crossed in usage[i]:
                    remaining[crossed] -= fair * flows[i].connections
        growing -= set(rate)
    shares = []
    for i, flow in enumerate(flows):
        per = rate.get(i)
        shares.append(FlowShare(
            flow.src, flow.dst, flow.connections,
            None if per is None else per * flow.connections, per,
            limiter[i].label if i in limiter else None,
        ))
    return shares


def jain_index(rates: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n * sum x^2): 1.0 when all are equal, 1/n when
    one flow takes everything. Values must be >= 0 and not all zero.

    The kit's verdicts (:mod:`labtools.judge.shares`) pass each connection's rate divided
    by its max-min fair share, not raw rates: then 1.0 means every connection got its fair
    share, also where the fair shares differ (Jain, Chiu and Hawe's x = throughput /
    fair throughput)."""
    values = [float(r) for r in rates]
    if not values:
        raise InputError("Jain's index needs at least one rate")
    if any(v < 0 or v != v for v in values):
        raise InputError(f"rates must be numbers >= 0, got {values}")
    squares = sum(v * v for v in values)
    if squares == 0:
        raise InputError("Jain's index is undefined when every rate is 0")
    return sum(values) ** 2 / (len(values) * squares)
