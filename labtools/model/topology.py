"""Topologies as data: nodes, links with their shaping, and validation.

A :class:`Topology` is plain data. It never imports Mininet; ``labtools.lab.network`` turns it
into a Mininet network, and ``labtools.model.expect`` computes what a student should measure on it.

Units are in the field names: ``bw_mbps`` is Mbit/s (10^6 bit/s), ``delay_ms`` is the
one-way delay in milliseconds applied in *each* direction (as Mininet's ``TCLink`` does, so
a link adds ``2 * delay_ms`` to a round trip), ``loss_pct`` is a percentage 0..100 per
direction, ``queue_pkts`` is the queue limit in packets.

A topology is checked when it is made (:func:`validate`): names, types, the bounds of
:mod:`labtools.model.limits` (what the lab can apply as given), no loop of switches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, List, Mapping, Optional, Tuple

from labtools.errors import TopologyError, UnknownNodeError
from labtools.model import limits
from labtools.model.limits import TC_MIN_DELAY_MS, TCLINK_MAX_MBPS, name_of, show

__all__ = ["HOST", "ROUTER", "SWITCH", "NODE_KINDS", "Node", "Link", "Topology", "validate",
           "mininet_link_params", "needs_netem", "TCLINK_MAX_MBPS", "TC_MIN_DELAY_MS"]

HOST, ROUTER, SWITCH = "host", "router", "switch"
NODE_KINDS = (HOST, ROUTER, SWITCH)

# Names become interface names (``h1-eth0``, at most 15 characters) and reach shells.
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,9}")
# Link names are labels in the kit's output (``L1``): one short word.
_LINK_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:+-]{0,31}")


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
        htb: shape the rate with HTB (Mininet's default) rather than TBF (``False``:
            Mininet's ``use_tbf=True``; a link without a rate has neither).
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

    def rate_limit_mbps(self) -> float:
        """The rate limit (Mbit/s) of a link the caller knows to be rate-limited.

        Raises:
            TopologyError: the link has none (``bw_mbps`` is None).
        """
        if self.bw_mbps is None:
            raise TopologyError(f"link {self.label} has no rate limit")
        return float(self.bw_mbps)

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
        for what in ("nodes", "links"):  # lists from a user's topology() are welcome too
            value = getattr(self, what)
            if not isinstance(value, (tuple, list)):
                raise TopologyError(f"topology {what} must be a list, not {_type_name(value)}")
            object.__setattr__(self, what, tuple(value))
        validate(self)

    # --- look-ups (indexed once: a topology may have thousands of nodes) ---------------
    @cached_property
    def _by_name(self) -> Dict[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def _links_by_node(self) -> Dict[str, List[Link]]:
        index: Dict[str, List[Link]] = {n.name: [] for n in self.nodes}
        for link in self.links:
            index[link.a].append(link)
            index[link.b].append(link)
        return index

    @cached_property
    def _port_numbers(self) -> Dict[Tuple[int, str], int]:
        """(id(link), node) -> the link's position among the node's links."""
        return {(id(link), name): port for name, links in self._links_by_node.items()
                for port, link in enumerate(links)}

    def node(self, name: str) -> Node:
        """The node called ``name``; :class:`UnknownNodeError` if there is none."""
        found = self._by_name.get(name) if isinstance(name, str) else None
        if found is not None:
            return found
        shown = ", ".join(n.name for n in self.nodes[:30])
        more = f" and {len(self.nodes) - 30} more" if len(self.nodes) > 30 else ""
        raise UnknownNodeError(
            f"unknown node {show(name)} in topology {self.name!r} (nodes: {shown}{more})")

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
        return list(self._links_by_node.get(name, ()))

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
        index = self._port_numbers.get((id(link), node))
        if index is None:
            raise UnknownNodeError(f"link {link.label} is not a link of {node!r}")
        return f"{node}-eth{index}"


def validate(topo: Topology) -> None:
    """Check a topology before anything runs; raise :class:`TopologyError` naming the
    offending element. Connectivity between hosts is checked by ``labtools.model.routing``."""
    _validate_header(topo)
    seen: Dict[str, Node] = {}
    for node in topo.nodes:
        if not isinstance(node, Node):
            raise TopologyError(f"topology nodes must be Node objects, not {_type_name(node)}")
        if not isinstance(node.name, str) or not _NAME_RE.fullmatch(node.name):
            raise TopologyError(
                f"node name {show(node.name)} is invalid: use a letter then up to 9 letters, "
                "digits or _"
            )
        if not isinstance(node.kind, str) or node.kind not in NODE_KINDS:
            raise TopologyError(f"node {node.name!r}: kind {show(node.kind)} is not one of "
                                f"{', '.join(NODE_KINDS)}")
        if node.name in seen:
            raise TopologyError(f"duplicate node name {node.name!r}")
        seen[node.name] = node
    labels: Dict[str, Link] = {}
    for link in topo.links:
        if not isinstance(link, Link):
            raise TopologyError(f"topology links must be Link objects, not {_type_name(link)}")
        _validate_link(link, seen)
        if link.name and link.name in labels:
            raise TopologyError(f"duplicate link name {link.name!r}")
        labels[link.name] = link
    limits.check_switches(topo.links, {name: node.kind for name, node in seen.items()},
                          {name: i for i, name in enumerate(seen)})
    _validate_addresses(topo)


def _validate_header(topo: Topology) -> None:
    """The topology's name, parameters and size."""
    if not isinstance(topo.name, str) or not 0 < len(topo.name) <= 64 \
            or not topo.name.isprintable():
        raise TopologyError(f"topology name {show(topo.name)} must be text on one line, "
                            "1 to 64 characters")
    if not isinstance(topo.params, Mapping):
        raise TopologyError(f"topology {topo.name!r}: params must be a mapping (a JSON object), "
                            f"not {_type_name(topo.params)}")
    limits.check_size(topo.name, len(topo.nodes), len(topo.links))


def _validate_link(link: Link, nodes: Mapping[str, Node]) -> None:
    ends = f"{name_of(link.a)}-{name_of(link.b)}"
    for end in (link.a, link.b):
        if not isinstance(end, str):
            raise TopologyError(f"link {ends}: endpoints must be node names, not {show(end)}")
        if end not in nodes:
            raise UnknownNodeError(f"link {ends}: unknown node {show(end)}")
    if not isinstance(link.name, str) or (link.name and not _LINK_NAME_RE.fullmatch(link.name)):
        raise TopologyError(f"link {ends}: name {show(link.name)} is invalid: use up to 32 "
                            "letters, digits or _.:+- (e.g. L1)")
    where = f"link {link.label}"
    if link.a == link.b:
        raise TopologyError(f"{where}: joins {link.a!r} to itself")
    limits.check_shaping(where, link.bw_mbps, link.delay_ms, link.loss_pct, link.queue_pkts,
                         link.htb)
    if not isinstance(link.addrs, Mapping):
        raise TopologyError(f"{where}: addrs must map node names to addresses, not "
                            f"{_type_name(link.addrs)}")
    for owner in link.addrs:
        if owner not in (link.a, link.b):
            raise TopologyError(f"{where}: address given for {show(owner)}, not an endpoint")
        if not nodes[owner].has_ip:
            raise TopologyError(f"{where}: switch {owner!r} cannot have an address")


def _validate_addresses(topo: Topology) -> None:
    used: Dict[str, str] = {}
    for link in topo.links:
        for owner, text in link.addrs.items():
            ip = limits.check_address(text, owner, link.label)
            if ip in used:
                raise TopologyError(f"address {ip} is used by {used[ip]} and {owner}")
            used[ip] = owner


def _type_name(value: Any) -> str:
    return type(value).__name__


def needs_netem(topo: Topology) -> bool:
    """Whether a link of ``topo`` has a delay, a loss rate or a queue limit: the kernel's
    netem applies those (a rate alone is HTB or TBF, which every kernel here has)."""
    return any(link.delay_ms > 0 or link.loss_pct > 0 or link.queue_pkts is not None
               for link in topo.links)


def mininet_link_params(link: Link) -> Dict[str, Any]:
    """The one place where the kit's units become Mininet's ``TCLink`` keywords.

    >>> mininet_link_params(Link("r1", "r2", bw_mbps=40, delay_ms=10, queue_pkts=67))
    {'bw': 40, 'delay': '10ms', 'max_queue_size': 67}
    >>> mininet_link_params(Link("r1", "r2", bw_mbps=40, htb=False))
    {'bw': 40, 'use_tbf': True}

    HTB is what ``TCIntf`` uses unless told otherwise; ``use_tbf`` is its keyword for TBF.
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
    if "bw" in params and not link.htb:
        params["use_tbf"] = True
    return params
