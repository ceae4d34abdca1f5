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
    groups: Dict[int, List[Link]] = {}
    for index, link in enumerate(topo.links):
        groups.setdefault(find(index), []).append(link)
    return sorted(groups.values(), key=lambda links: topo.links.index(links[0]))


def _segment_network(links: List[Link],
                     used: Set[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    given = {ipaddress.IPv4Interface(t).network for lk in links for t in lk.addrs.values()}
    if len(given) > 1:
        labels = ", ".join(lk.label for lk in links)
        raise TopologyError(f"links {labels} form one segment but their addresses are in "
                            f"different subnets: {', '.join(sorted(map(str, given)))}")
    if given:
        return given.pop()
    for k in range(256):
        candidate = ipaddress.IPv4Network(f"10.0.{k}.0/24")
        if not any(candidate.overlaps(net) for net in used):
            return candidate
    raise TopologyError("more than 256 segments: give addresses explicitly")


def assign_addresses(topo: Topology) -> Addressing:
    """Segments and interface addresses of ``topo`` (deterministic)."""
    kinds = {n.name: n.kind for n in topo.nodes}
    groups = _group_links(topo)
    used: Set[ipaddress.IPv4Network] = set()
    nets = []
    for links in groups:  # explicit networks first, so auto ones avoid them
        given = [lk for lk in links if lk.addrs]
        nets.append(_segment_network(links, used) if given else None)
        if nets[-1] is not None:
            used.add(nets[-1])
    segments: List[Segment] = []
    interfaces: List[Interface] = []
    for index, links in enumerate(groups):
        network = nets[index] or _segment_network(links, used)
        used.add(network)
        ends = [(lk, end) for lk in links for end in (lk.a, lk.b) if kinds[end] != SWITCH]
        members = tuple(dict.fromkeys(end for _, end in ends))
        taken = {str(ipaddress.ip_interface(lk.addrs[e]).ip) for lk, e in ends if e in lk.addrs}
        free = (str(ip) for ip in network.hosts() if str(ip) not in taken)
        ordered = sorted(ends, key=lambda le: (kinds[le[1]] != "router", ends.index(le)))
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
