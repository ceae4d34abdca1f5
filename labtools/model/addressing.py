"""IP segments and interface addresses of a topology (pure, no root).

A *segment* is one IP subnet: either a direct link between two addressed nodes (hosts or
routers), or every link joined through switches (a LAN). Addresses given on a link
(``Link.addrs``) are kept; the others are assigned: ``10.0.K.0/24`` per segment in order
of first appearance, routers first, hosts after them, numbered from ``.1``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List, Optional, Set, Tuple

from labtools.errors import TopologyError
from labtools.model.limits import MAX_SUBNETS
from labtools.model.topology import SWITCH, Link, Topology


@dataclass(frozen=True)
class Interface:
    """One addressed interface: ``node`` on ``link`` in segment ``segment``."""

    node: str
    name: str  #: Mininet's interface name, e.g. ``r1-eth1``
    ip: str  #: dotted quad
    prefixlen: int
    segment: int  #: index into :attr:`Addressing.segments`
    link: Link

    @property
    def cidr(self) -> str:
        """``ip/prefixlen``."""
        return f"{self.ip}/{self.prefixlen}"


@dataclass(frozen=True)
class Segment:
    """One subnet: its links, the addressed nodes on it and its network."""

    index: int
    links: Tuple[Link, ...]
    members: Tuple[str, ...]  #: hosts and routers on it, in definition order
    network: str  #: e.g. ``10.0.1.0/24``


@dataclass(frozen=True)
class Addressing:
    """Segments and interfaces of one topology."""

    segments: Tuple[Segment, ...]
    interfaces: Tuple[Interface, ...]

    @cached_property
    def _by_node(self) -> Dict[str, List[Interface]]:
        index: Dict[str, List[Interface]] = {}
        for iface in self.interfaces:
            index.setdefault(iface.node, []).append(iface)
        return index

    def of_node(self, node: str) -> List[Interface]:
        """The node's interfaces, in link order (the first one is its primary address)."""
        return list(self._by_node.get(node, ()))

    def on_segment(self, node: str, segment: int) -> Optional[Interface]:
        """The node's interface on ``segment``, or None."""
        for iface in self._by_node.get(node, ()):
            if iface.segment == segment:
                return iface
        return None


def _group_links(topo: Topology) -> List[List[Link]]:
    """Links grouped into segments (links sharing a switch belong together)."""
    kinds = {n.name: n.kind for n in topo.nodes}
    parent = list(range(len(topo.links)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_switch: Dict[str, int] = {}
    for index, link in enumerate(topo.links):
        for end in (link.a, link.b):
            if kinds[end] == SWITCH:
                if end in by_switch:
                    parent[find(index)] = find(by_switch[end])
                else:
                    by_switch[end] = index
    groups: Dict[int, List[Link]] = {}  # in order of their first link
    for index, link in enumerate(topo.links):
        groups.setdefault(find(index), []).append(link)
    return list(groups.values())


#: where the kit's own subnets are drawn from: 10.0.K.0/24 for K = 0..255
_AUTO_RANGE = ipaddress.IPv4Network("10.0.0.0/16")


def _given_network(links: List[Link]) -> Optional[ipaddress.IPv4Network]:
    """The subnet of the addresses given on a segment's links (None if none are)."""
    given = {ipaddress.IPv4Interface(t).network for lk in links for t in lk.addrs.values()}
    if len(given) > 1:
        labels = ", ".join(lk.label for lk in links[:20])
        raise TopologyError(f"links {labels} form one segment but their addresses are in "
                            f"different subnets: {', '.join(sorted(map(str, given))[:5])}")
    return given.pop() if given else None


def _check_no_overlap(nets: List[Optional[ipaddress.IPv4Network]],
                      groups: List[List[Link]]) -> None:
    """Two segments with given addresses must not share a subnet (routes would clash)."""
    spans = sorted((int(net.network_address), int(net.broadcast_address), index)
                   for index, net in enumerate(nets) if net is not None)
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        if start <= end:
            raise TopologyError(f"links {groups[first][0].label} and {groups[second][0].label} are "
                                f"in different segments but their subnets {nets[first]} and "
                                f"{nets[second]} overlap")


def _auto_networks(nets: List[Optional[ipaddress.IPv4Network]]) -> List[ipaddress.IPv4Network]:
    """Each segment's subnet: the given one, else the next free 10.0.K.0/24."""
    blocked: Set[int] = set()
    for net in nets:
        if net is not None and net.overlaps(_AUTO_RANGE):  # the K values it covers
            low = max(int(net.network_address), int(_AUTO_RANGE.network_address))
            high = min(int(net.broadcast_address), int(_AUTO_RANGE.broadcast_address))
            blocked.update(range(low >> 8 & 0xFF, (high >> 8 & 0xFF) + 1))
    free = (k for k in range(256) if k not in blocked)
    out = []
    for net in nets:
        if net is None:
            k = next(free, None)
            if k is None:
                raise TopologyError("no free subnet 10.0.K.0/24 is left for a segment without "
                                    "addresses: give its addresses explicitly")
            net = ipaddress.IPv4Network(f"10.0.{k}.0/24")
        out.append(net)
    return out


def assign_addresses(topo: Topology) -> Addressing:
    """Segments and interface addresses of ``topo`` (deterministic)."""
    kinds = {n.name: n.kind for n in topo.nodes}
    groups = _group_links(topo)
    if len(groups) > MAX_SUBNETS:
        raise TopologyError(f"topology {topo.name!r} has {len(groups)} subnets (direct links and "
                            f"LANs): the kit takes at most {MAX_SUBNETS}, as every node holds a "
                            "route to each of them")
    given = [_given_network(links) for links in groups]  # auto subnets avoid these
    _check_no_overlap(given, groups)
    nets = _auto_networks(given)
    segments: List[Segment] = []
    interfaces: List[Interface] = []
    for index, links in enumerate(groups):
        network = nets[index]
        ends = [(lk, end) for lk in links for end in (lk.a, lk.b) if kinds[end] != SWITCH]
        members = tuple(dict.fromkeys(end for _, end in ends))
        taken = {str(ipaddress.ip_interface(lk.addrs[e]).ip) for lk, e in ends if e in lk.addrs}
        free = (str(ip) for ip in network.hosts() if str(ip) not in taken)
        ordered = [le for le in ends if kinds[le[1]] == "router"] + \
            [le for le in ends if kinds[le[1]] != "router"]
        chosen: Dict[Tuple[int, str], str] = {}
        for lk, end in ordered:
            if end in lk.addrs:
                chosen[(id(lk), end)] = str(ipaddress.ip_interface(lk.addrs[end]).ip)
            else:
                try:
                    chosen[(id(lk), end)] = next(free)
                except StopIteration:
                    raise TopologyError(f"subnet {network} of link {lk.label} is full") from None
        for lk, end in ends:
            interfaces.append(Interface(
                node=end, name=topo.interface_name(lk, end), ip=chosen[(id(lk), end)],
                prefixlen=network.prefixlen, segment=index, link=lk,
            ))
        segments.append(Segment(index, tuple(links), members, str(network)))
    _check_one_interface_per_segment(interfaces)
    return Addressing(tuple(segments), tuple(interfaces))


def _check_one_interface_per_segment(interfaces: List[Interface]) -> None:
    seen: Set[Tuple[str, int]] = set()
    for iface in interfaces:
        key = (iface.node, iface.segment)
        if key in seen:
            raise TopologyError(
                f"node {iface.node!r} has two interfaces on one segment (link {iface.link.label})"
            )
        seen.add(key)
