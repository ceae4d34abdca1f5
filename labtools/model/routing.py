"""Shortest-path routing computed from the topology (pure, no root).

For every segment, a breadth-first search from the nodes on it builds a tree of next hops:
fewest router hops first, ties broken by the smaller node name, so the result never depends
on dict order or chance. Only routers forward; a host is never a transit node.

The same tables feed the expected values (``labtools.model.expect`` follows them hop by hop) and
the static routes that ``labtools.lab.network`` installs, so what the kit predicts is the path the
packets take.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Tuple

from labtools.errors import NoRouteError
from labtools.model.addressing import Addressing, Interface, assign_addresses
from labtools.model.topology import ROUTER, SWITCH, Link, Topology


@dataclass(frozen=True)
class Route:
    """A static route on ``node``: ``network`` via ``gateway`` out of ``dev``."""

    node: str
    network: str
    gateway: str
    dev: str


@dataclass(frozen=True)
class Hop:
    """One layer-3 hop: from ``src`` to ``dst`` across segment ``segment`` over ``links``."""

    src: str
    dst: str
    segment: int
    links: Tuple[Link, ...]  #: in travel order (through switches on a LAN)
    nodes: Tuple[str, ...]  #: src, any switches, dst


@dataclass(frozen=True)
class Routing:
    """Addresses plus, for each segment, each node's next hop towards it."""

    topo: Topology
    addressing: Addressing
    #: next_hop[segment][node] = (neighbour, shared segment); absent = no route
    next_hop: Tuple[Dict[str, Tuple[str, int]], ...]

    def routes(self, node: str) -> List[Route]:
        """The static routes ``node`` needs: one per segment it is not attached to."""
        attached = {i.segment for i in self.addressing.of_node(node)}
        out = []
        for seg in self.addressing.segments:
            if seg.index in attached or node not in self.next_hop[seg.index]:
                continue
            neighbour, shared = self.next_hop[seg.index][node]
            gateway = self.addressing.on_segment(neighbour, shared)
            mine = self.addressing.on_segment(node, shared)
            if gateway is None or mine is None:  # pragma: no cover - built consistently
                continue
            out.append(Route(node, seg.network, gateway.ip, mine.name))
        return out

    def target(self, src: str, dst: str) -> Interface:
        """The address of ``dst`` that ``src`` talks to: the one on a segment they share,
        else ``dst``'s primary (first) interface."""
        mine = {i.segment for i in self.addressing.of_node(src)}
        theirs = self.addressing.of_node(dst)
        for iface in theirs:
            if iface.segment in mine:
                return iface
        if not theirs:
            raise NoRouteError(f"{dst!r} has no address (is it a switch?)")
        return theirs[0]

    def hops(self, src: str, target: Interface) -> List[Hop]:
        """The layer-3 hops from ``src`` to the address ``target``, following the tables."""
        hops: List[Hop] = []
        here, seen = src, {src}
        routers = _routers(self.topo)
        while True:
            on_target = self.addressing.on_segment(here, target.segment)
            if on_target is not None:
                if here != target.node:
                    hops.append(self._hop(here, target.node, target.segment))
                return hops
            step = self.next_hop[target.segment].get(here)
            if step is None or (hops and here not in routers):
                raise NoRouteError(f"no route from {src!r} to {target.node!r} ({target.ip})")
            neighbour, shared = step
            if neighbour in seen:  # pragma: no cover - trees have no loops
                raise NoRouteError(f"routing loop from {src!r} to {target.node!r}")
            hops.append(self._hop(here, neighbour, shared))
            seen.add(neighbour)
            here = neighbour

    def _hop(self, a: str, b: str, segment: int) -> Hop:
        links, nodes = _l2_path(self.addressing.segments[segment].links, a, b, self.topo)
        return Hop(a, b, segment, links, nodes)


def _routers(topo: Topology) -> set:
    return set(topo.routers)


def _l2_path(links: Tuple[Link, ...], a: str, b: str,
             topo: Topology) -> Tuple[Tuple[Link, ...], Tuple[str, ...]]:
    """Links from ``a`` to ``b`` inside one segment (through switches, BFS by name)."""
    adjacent: Dict[str, List[Link]] = {}
    for link in links:
        adjacent.setdefault(link.a, []).append(link)
        adjacent.setdefault(link.b, []).append(link)
    prev: Dict[str, Tuple[str, Link]] = {}
    frontier, seen = [a], {a}
    while frontier and b not in seen:
        nxt = []
        for node in sorted(frontier):
            if node != a and topo.node(node).kind != SWITCH:
                continue
            for link in adjacent.get(node, ()):
                other = link.other(node)
                if other not in seen:
                    seen.add(other)
                    prev[other] = (node, link)
                    nxt.append(other)
        frontier = nxt
    if b not in seen:  # pragma: no cover - members of one segment are connected
        raise NoRouteError(f"{a!r} and {b!r} are not connected within their segment")
    path_links: List[Link] = []
    nodes = [b]
    while nodes[-1] != a:
        node, link = prev[nodes[-1]]
        path_links.append(link)
        nodes.append(node)
    return tuple(reversed(path_links)), tuple(reversed(nodes))


def _neighbours(addressing: Addressing, forwarders: set) -> Dict[str, List[Tuple[str, int]]]:
    """Forwarding node -> [(neighbour, shared segment)], sorted by name then segment.

    Only forwarders lead anywhere, so only theirs are listed: a segment of M members and R
    routers costs R x M entries, not M x M (4000 hosts on one switch: 16 million)."""
    out: Dict[str, List[Tuple[str, int]]] = {}
    for seg in addressing.segments:
        for node in seg.members:
            if node in forwarders:
                out.setdefault(node, []).extend(
                    (other, seg.index) for other in seg.members if other != node)
    return {node: sorted(pairs) for node, pairs in out.items()}


def _tree_towards(segment: int, addressing: Addressing, forwarders: set,
                  neighbours: Dict[str, List[Tuple[str, int]]]) -> Dict[str, Tuple[str, int]]:
    """Each node's next hop towards ``segment`` (BFS, ties by smaller name)."""
    members = addressing.segments[segment].members
    dist = {m: 0 for m in members}
    tree: Dict[str, Tuple[str, int]] = {}
    level = sorted(members)
    while level:
        nxt: Dict[str, Tuple[str, int]] = {}
        for via in level:  # sorted, so the first parent found is the smallest name
            if via not in forwarders:
                continue
            for other, shared in neighbours.get(via, []):
                if other not in dist and other not in nxt:
                    nxt[other] = (via, shared)
        for node, step in nxt.items():
            dist[node] = dist[level[0]] + 1
            tree[node] = step
        level = sorted(nxt)
    return tree


@lru_cache(maxsize=64)
def compute_routing(topo: Topology) -> Routing:
    """Addresses and next-hop tables of ``topo``; raises :class:`NoRouteError` if two hosts
    cannot reach each other."""
    addressing = assign_addresses(topo)
    forwarders = {n.name for n in topo.nodes if n.kind == ROUTER}
    neighbours = _neighbours(addressing, forwarders)
    tables = tuple(
        _tree_towards(seg.index, addressing, forwarders, neighbours)
        for seg in addressing.segments
    )
    routing = Routing(topo, addressing, tables)
    check_hosts_connected(routing)
    return routing


def check_hosts_connected(routing: Routing) -> None:
    """Raise :class:`NoRouteError` naming the first pair of hosts with no route.

    A host reaches another when they share a segment, or when the routing table towards
    the other's primary segment has the host (the tables only lead through routers), so
    this takes hosts x segments steps, not hosts x hosts paths."""
    topo = routing.topo
    addressing = routing.addressing
    for node in topo.nodes:
        if node.kind != SWITCH and not addressing.of_node(node.name):
            raise NoRouteError(f"node {node.name!r} has no link")
    hosts = topo.hosts
    order = {h: i for i, h in enumerate(hosts)}
    attached = {h: {i.segment for i in addressing.of_node(h)} for h in hosts}
    by_primary: Dict[int, List[str]] = {}
    for h in hosts:
        by_primary.setdefault(addressing.of_node(h)[0].segment, []).append(h)
    for src in hosts:
        unreachable = [dst for seg, dsts in by_primary.items()
                       if seg not in attached[src] and src not in routing.next_hop[seg]
                       for dst in dsts if dst != src and not attached[src] & attached[dst]]
        if unreachable:
            dst = min(unreachable, key=order.__getitem__)
            raise NoRouteError(f"hosts {src!r} and {dst!r} have no route between them")


def find_route_hops(topo: Topology, src: str, dst: str) -> List[Hop]:
    """The layer-3 hops from ``src`` to ``dst`` (both hosts or routers)."""
    routing = compute_routing(topo)
    for name in (src, dst):
        if topo.node(name).kind == SWITCH:
            raise NoRouteError(f"{name!r} is a switch: it has no address to measure from or to")
    if src == dst:
        raise NoRouteError(f"source and destination are both {src!r}")
    return routing.hops(src, routing.target(src, dst))
