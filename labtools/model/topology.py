"""Topologies as data: nodes, links with their shaping, and validation.

A :class:`Topology` is plain data. It never imports Mininet; ``labtools.lab.network`` turns it
into a Mininet network, and ``labtools.model.expect`` computes what a student should measure on it.

Units are in the field names: ``bw_mbps`` is Mbit/s (10^6 bit/s), ``delay_ms`` is the
one-way delay in milliseconds applied in *each* direction (as Mininet's ``TCLink`` does, so
a link adds ``2 * delay_ms`` to a round trip), ``loss_pct`` is a percentage 0..100 per
direction, ``queue_pkts`` is the queue limit in packets.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from labtools.errors import TopologyError, UnknownNodeError

HOST, ROUTER, SWITCH = "host", "router", "switch"
NODE_KINDS = (HOST, ROUTER, SWITCH)

# Names become interface names (``h1-eth0``, at most 15 characters) and reach shells.
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,9}$")

#: Mininet's TCLink refuses rates above this (Mbit/s) and then leaves the link unshaped
TCLINK_MAX_MBPS = 1000.0
#: tc expresses delays in whole microseconds: a smaller delay would become none (ms)
TC_MIN_DELAY_MS = 0.001


@dataclass(frozen=True)
class Node:
    """A host, a router (a host that forwards) or a switch (layer 2, no address)."""

    name: str
    kind: str = HOST

    @property
    def forwards(self) -> bool:
        """True for nodes that carry other nodes' traffic at layer 3 (routers)."""
        return self.kind == ROUTER

    @property
    def has_ip(self) -> bool:
        """True for hosts and routers (switches have no addresses)."""
        return self.kind != SWITCH


@dataclass(frozen=True)
class Link:
    """A link between two nodes.

    Attributes:
        a, b: node names.
        bw_mbps: rate limit in Mbit/s per direction; ``None`` for an unshaped link.
        delay_ms: one-way delay in ms, applied in each direction.
        loss_pct: random loss in percent (0..100), applied in each direction.
        queue_pkts: queue limit in packets; ``None`` for the default.
        htb: shape with HTB (Mininet's ``use_htb``) rather than TBF.
        name: a label such as ``L1``; defaults to ``a-b``.
        addrs: interface addresses, ``{node: "10.0.1.1/24"}``; missing ones are assigned.
    """

    a: str
    b: str
    bw_mbps: Optional[float] = None
    delay_ms: float = 0.0
    loss_pct: float = 0.0
    queue_pkts: Optional[int] = None
    htb: bool = True
    name: str = ""
    addrs: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The link's name, or ``a-b`` when it has none."""
        return self.name or f"{self.a}-{self.b}"

    @property
    def shaped(self) -> bool:
        """True when the link changes rate, delay, loss or queue."""
        return (
            self.bw_mbps is not None
            or self.delay_ms > 0
            or self.loss_pct > 0
            or self.queue_pkts is not None
        )

    def other(self, node: str) -> str:
        """The endpoint that is not ``node``."""
        return self.b if node == self.a else self.a

    def joins(self, x: str, y: str) -> bool:
        """True when the link joins ``x`` and ``y`` (either order)."""
        return {self.a, self.b} == {x, y}


@dataclass(frozen=True, eq=False)
class Topology:
    """A named set of nodes and links, plus the parameters it was built with.

    Compared and hashed by identity, so derived tables (routing) can be cached per object.
    """

    name: str
    nodes: Tuple[Node, ...]
    links: Tuple[Link, ...]
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate(self)

    # --- look-ups -------------------------------------------------------------------
    def node(self, name: str) -> Node:
        """The node called ``name``; :class:`UnknownNodeError` if there is none."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise UnknownNodeError(
            f"unknown node {name!r} in topology {self.name!r} "
            f"(nodes: {', '.join(n.name for n in self.nodes)})"
        )

    def names(self, kind: Optional[str] = None) -> List[str]:
        """Node names in definition order, optionally only of one kind."""
        return [n.name for n in self.nodes if kind is None or n.kind == kind]

    @property
    def hosts(self) -> List[str]:
        """Names of the hosts."""
        return self.names(HOST)

    @property
    def routers(self) -> List[str]:
        """Names of the routers."""
        return self.names(ROUTER)

    @property
    def switches(self) -> List[str]:
        """Names of the switches."""
        return self.names(SWITCH)

    def links_of(self, name: str) -> List[Link]:
        """The links attached to node ``name``, in definition order."""
        return [link for link in self.links if name in (link.a, link.b)]

    def link(self, label: str) -> Link:
        """The link with this name (``L1``) or ``a-b`` label."""
        for link in self.links:
            if link.label == label or (
                "-" in label and link.joins(*label.split("-", 1))
            ):
                return link
        raise UnknownNodeError(f"no link {label!r} in topology {self.name!r}")

    def link_between(self, x: str, y: str) -> Link:
        """The first link joining ``x`` and ``y``."""
        for link in self.links:
            if link.joins(x, y):
                return link
        raise UnknownNodeError(f"no link between {x!r} and {y!r} in {self.name!r}")

    def interface_name(self, link: Link, node: str) -> str:
        """Mininet's interface name for ``node`` on ``link`` (``h1-eth0``...)."""
        index = [id(lk) for lk in self.links_of(node)].index(id(link))
        return f"{node}-eth{index}"

    def iter_endpoints(self) -> Iterator[Tuple[Link, str]]:
        """Every (link, node) pair, in definition order."""
        for link in self.links:
            yield link, link.a
            yield link, link.b


def validate(topo: Topology) -> None:
    """Check a topology before anything runs; raise :class:`TopologyError` naming the
    offending element. Connectivity between hosts is checked by ``labtools.model.routing``."""
    seen: Dict[str, Node] = {}
    for node in topo.nodes:
        if node.kind not in NODE_KINDS:
            raise TopologyError(
                f"node {node.name!r}: kind {node.kind!r} is not one of {', '.join(NODE_KINDS)}"
            )
        if not isinstance(node.name, str) or not _NAME_RE.match(node.name):
            raise TopologyError(
                f"node name {node.name!r} is invalid: use a letter then up to 9 letters, "
                "digits or _"
            )
        if node.name in seen:
            raise TopologyError(f"duplicate node name {node.name!r}")
        seen[node.name] = node
    labels: Dict[str, Link] = {}
    for link in topo.links:
        _validate_link(link, seen)
        if link.name and link.name in labels:
            raise TopologyError(f"duplicate link name {link.name!r}")
        labels[link.name] = link
    _validate_addresses(topo)


def _validate_link(link: Link, nodes: Mapping[str, Node]) -> None:
    where = f"link {link.label}"
    for end in (link.a, link.b):
        if end not in nodes:
            raise UnknownNodeError(f"{where}: unknown node {end!r}")
    if link.a == link.b:
        raise TopologyError(f"{where}: joins {link.a!r} to itself")
    if link.bw_mbps is not None and not _positive_number(link.bw_mbps):
        raise TopologyError(f"{where}: rate bw_mbps={link.bw_mbps!r} must be a number > 0")
    if link.bw_mbps is not None and link.bw_mbps > TCLINK_MAX_MBPS:
        raise TopologyError(f"{where}: bw_mbps={link.bw_mbps:g} is more than Mininet's TCLink "
                            f"shapes ({TCLINK_MAX_MBPS:g} Mbit/s): it would run the link "
                            "unshaped")
    if not _number(link.delay_ms) or link.delay_ms < 0:
        raise TopologyError(f"{where}: delay_ms={link.delay_ms!r} must be a number >= 0")
    if 0 < link.delay_ms < TC_MIN_DELAY_MS:
        raise TopologyError(f"{where}: delay_ms={link.delay_ms:g} is below what tc can express "
                            f"({TC_MIN_DELAY_MS:g} ms = 1 µs): it would be no delay at all")
    if not _number(link.loss_pct) or not 0 <= link.loss_pct <= 100:
        raise TopologyError(f"{where}: loss_pct={link.loss_pct!r} must be within 0..100")
    if link.queue_pkts is not None and (
        not isinstance(link.queue_pkts, int) or isinstance(link.queue_pkts, bool)
        or link.queue_pkts < 1
    ):
        raise TopologyError(f"{where}: queue_pkts={link.queue_pkts!r} must be an integer >= 1")
    for owner in link.addrs:
        if owner not in (link.a, link.b):
            raise TopologyError(f"{where}: address given for {owner!r}, not an endpoint")
        if not nodes[owner].has_ip:
            raise TopologyError(f"{where}: switch {owner!r} cannot have an address")


def _validate_addresses(topo: Topology) -> None:
    used: Dict[str, str] = {}
    for link in topo.links:
        for owner, text in link.addrs.items():
            try:
                iface = ipaddress.ip_interface(text)
            except ValueError as err:
                raise TopologyError(
                    f"link {link.label}: bad address {text!r} for {owner}: {err}") from None
            if iface.version != 4 or iface.network.prefixlen > 30:
                raise TopologyError(
                    f"link {link.label}: address {text!r} must be IPv4 with a prefix of /30 "
                    "or wider"
                )
            ip = str(iface.ip)
            if ip in used:
                raise TopologyError(f"address {ip} is used by {used[ip]} and {owner}")
            used[ip] = owner


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _positive_number(value: Any) -> bool:
    return _number(value) and value > 0 and value != float("inf")


def mininet_link_params(link: Link) -> Dict[str, Any]:
    """The one place where the kit's units become Mininet's ``TCLink`` keywords.

    >>> mininet_link_params(Link("r1", "r2", bw_mbps=40, delay_ms=10, queue_pkts=67))
    {'bw': 40, 'delay': '10ms', 'max_queue_size': 67, 'use_htb': True}
    """
    params: Dict[str, Any] = {}
    if link.bw_mbps is not None:
        params["bw"] = link.bw_mbps
    if link.delay_ms > 0:  # whole microseconds: what tc keeps
        params["delay"] = f"{link.delay_ms:g}ms" if float(link.delay_ms).is_integer() else \
            f"{round(link.delay_ms * 1000)}us"
    if link.loss_pct > 0:
        params["loss"] = link.loss_pct
    if link.queue_pkts is not None:
        params["max_queue_size"] = link.queue_pkts
    if params:
        params["use_htb"] = link.htb
    return params
