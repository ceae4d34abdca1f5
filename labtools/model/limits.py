"""What the lab can build: the bounds of rates, delays, loss and queues, switch ports, loops
of switches, host addresses, and the size of a topology (pure, no root).

:func:`labtools.model.topology.validate` applies them to every topology, whichever way it
was made (a kit's topology, a ``.py`` or ``.json`` file, a Mininet ``Topo``), so a value
the lab cannot apply as given is refused before anything runs, with the reason.
"""

from __future__ import annotations

import ipaddress
import math
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

from labtools.errors import TopologyError


class LinkFields(Protocol):
    """What the loop check reads of a link (:class:`labtools.model.topology.Link`, which
    imports this module: this one does not import it back); the shaping check is given
    the values themselves."""

    @property
    def a(self) -> str: ...
    @property
    def b(self) -> str: ...
    @property
    def label(self) -> str: ...

#: Mininet's TCLink refuses rates above this (Mbit/s) and then leaves the link unshaped
TCLINK_MAX_MBPS = 1000.0
#: the slowest rate the kit shapes (Mbit/s). Measured with tc 6.1 on Mininet's HTB class
#: (``rate R burst 15k``): below 0.08 Mbit/s HTB's quantum is less than one frame (tc
#: warns "quantum of class is small"), below 0.0005 Mbit/s the 15 kB burst no longer fits
#: HTB's timer and tc shrinks it without a word, below 1 bit/s Mininet writes
#: ``0.000000Mbit`` and tc refuses the link ('"rate" is required'). At 0.1 Mbit/s one
#: full-size frame already takes 121 ms to send.
MIN_RATE_MBPS = 0.1
#: tc expresses delays in whole microseconds: a smaller delay would become none (ms)
TC_MIN_DELAY_MS = 0.001
#: the longest one-way delay of a link (ms): a round trip over one such link takes 10 s,
#: half of what the kit's probes wait beyond a run before they give up
MAX_DELAY_MS = 5000.0
#: Mininet (and the kit) give tc the loss with five decimals: less would be no loss (%)
MIN_LOSS_PCT = 0.00001
#: the longest queue (packets): netem's default is 1000; a full queue of 100,000
#: full-size frames holds about 150 MB per direction, of a lab VM's 2 GB
MAX_QUEUE_PKTS = 100_000
#: a Linux bridge (the lab's switches) takes at most 1023 ports: the kernel refused the
#: 1024th with "Exchange full" (its BR_MAX_PORTS is 1024, and port 0 is reserved)
MAX_SWITCH_PORTS = 1023
#: the largest topology the kit loads (nodes, and links): one of this size loads and
#: routes in about a second (tests/model/test_scale_topologies.py), while a lab machine starts
#: networks of about 1000 nodes (BENCHMARKS.md)
MAX_NODES = 10_000
MAX_LINKS = 10_000
#: the most subnets (segments) a topology may have: the kit's own addresses are the 256
#: subnets 10.0.K.0/24, and every node holds a route to every subnet (nodes x subnets)
MAX_SUBNETS = 256

#: the longest a ``.py`` topology file may take to load, in a Python of its own (s); one
#: still running then is stopped (:mod:`labtools.model.python_topology`). Natively the
#: kit's own take 0.2 s (star,hosts=1000: 0.35 s; 10,000 nodes: 1.9 s, on 2 busy cores);
#: in the lab VM under software emulation the kit runs 30-60 times slower (BENCHMARKS.md:
#: star,hosts=10 starts in 6.2 s there, 0.1 s natively), so 1000 hosts may take 20 s
PYTHON_LOAD_TIME_S = 60.0
#: the longest variant ID (characters): a student's ID or user name fits, and it is shown in
#: one-line messages and kept with every result
MAX_VARIANT_CHARS = 64

_THIS_NETWORK = ipaddress.IPv4Network("0.0.0.0/8")


def check_size(name: str, nodes: int, links: int) -> None:
    """Refuse a topology with more than :data:`MAX_NODES` nodes or :data:`MAX_LINKS` links."""
    for what, count, most in (("nodes", nodes, MAX_NODES), ("links", links, MAX_LINKS)):
        if count > most:
            raise TopologyError(f"topology {name!r} has {count} {what}: the kit takes at most "
                                f"{most} (a lab machine starts networks of about 1000 nodes)")


def check_shaping(where: str, bw: Any, delay: Any, loss: Any, queue: Any, htb: Any) -> None:
    """A link's rate (Mbit/s), delay (ms), loss (%), queue (packets) and HTB flag, as given
    (any type): typed, finite, and within what tc applies as given."""
    if bw is not None and not (finite(bw) and bw > 0):
        raise TopologyError(f"{where}: rate bw_mbps={show(bw)} must be a number > 0")
    if bw is not None and bw > TCLINK_MAX_MBPS:
        raise TopologyError(f"{where}: bw_mbps={show(bw)} is more than Mininet's TCLink "
                            f"shapes ({TCLINK_MAX_MBPS:g} Mbit/s): it would run the link "
                            "unshaped")
    if bw is not None and bw < MIN_RATE_MBPS:
        raise TopologyError(f"{where}: bw_mbps={show(bw)} is below the {MIN_RATE_MBPS:g} Mbit/s "
                            "the kit shapes: HTB's quantum and Mininet's 15 kB burst no longer "
                            "fit, and one full-size frame would take over 0.12 s to send")
    if not finite(delay) or delay < 0:
        raise TopologyError(f"{where}: delay_ms={show(delay)} must be a number >= 0")
    if 0 < delay < TC_MIN_DELAY_MS:
        raise TopologyError(f"{where}: delay_ms={show(delay)} is below what tc can express "
                            f"({TC_MIN_DELAY_MS:g} ms = 1 µs): it would be no delay at all")
    if delay > MAX_DELAY_MS:
        raise TopologyError(f"{where}: delay_ms={show(delay)} is more than {MAX_DELAY_MS:g} ms "
                            "one way: a round trip would outlast the kit's probes")
    if not finite(loss) or not 0 <= loss < 100:
        raise TopologyError(f"{where}: loss_pct={show(loss)} must be a number within 0..100, "
                            "below 100 (a link that loses everything carries nothing)")
    if 0 < loss < MIN_LOSS_PCT:
        raise TopologyError(f"{where}: loss_pct={show(loss)} is below the {MIN_LOSS_PCT:g} % "
                            "tc is given (five decimals): it would be no loss at all")
    if queue is not None and (not isinstance(queue, int) or isinstance(queue, bool)
                              or not 1 <= queue <= MAX_QUEUE_PKTS):
        raise TopologyError(f"{where}: queue_pkts={show(queue)} must be an integer within "
                            f"1..{MAX_QUEUE_PKTS}")
    if not isinstance(htb, bool):
        raise TopologyError(f"{where}: htb={show(htb)} must be true or false")


def check_switches(links: Sequence["LinkFields"], kinds: Mapping[str, str],
                   order: Mapping[str, int]) -> None:
    """No switch with more ports than a Linux bridge takes, and no loop of switches: the
    lab's switches are Linux bridges without STP, where one broadcast would circle a loop
    for ever. ``kinds``: node -> kind; ``order``: node -> position in the topology."""
    ports: Dict[str, int] = {}
    parent: Dict[str, str] = {}  # union-find over switches joined by switch-switch links
    forest: Dict[str, List[Tuple[str, "LinkFields"]]] = {}

    def root(name: str) -> str:
        while parent.setdefault(name, name) != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for link in links:
        ends = [end for end in (link.a, link.b) if kinds[end] == "switch"]
        for end in ends:
            ports[end] = ports.get(end, 0) + 1
            if ports[end] > MAX_SWITCH_PORTS:
                raise TopologyError(f"switch {end!r} has more than {MAX_SWITCH_PORTS} links: a "
                                    f"Linux bridge (the lab's switches) takes at most "
                                    f"{MAX_SWITCH_PORTS} ports; join more switches in a tree")
        if len(ends) < 2:
            continue
        if root(link.a) == root(link.b):
            raise TopologyError(_loop_message(_forest_path(forest, link.a, link.b), link, order))
        parent[root(link.a)] = root(link.b)
        forest.setdefault(link.a, []).append((link.b, link))
        forest.setdefault(link.b, []).append((link.a, link))


def _forest_path(forest: Mapping[str, List[Tuple[str, "LinkFields"]]], a: str,
                 b: str) -> List[Tuple[str, Optional["LinkFields"]]]:
    """The path from ``a`` to ``b`` in a forest: [(node, the link that led to it)...]."""
    came: Dict[str, Tuple[str, "LinkFields"]] = {}
    frontier, seen = [a], {a}
    while frontier and b not in seen:
        here = frontier.pop()
        for other, link in forest.get(here, ()):
            if other not in seen:
                seen.add(other)
                came[other] = (here, link)
                frontier.append(other)
    path: List[Tuple[str, Optional["LinkFields"]]] = []
    node = b
    while node != a:
        prev, link = came[node]
        path.append((node, link))
        node = prev
    path.append((a, None))
    return path[::-1]


def _loop_message(path: List[Tuple[str, Optional["LinkFields"]]], closing: "LinkFields",
                  order: Mapping[str, int]) -> str:
    """``switches s1-s2-s3 form a loop (links ...)``: from the first defined switch, towards
    the earlier defined of its two neighbours."""
    names = [name for name, _ in path]
    links = [lk for _, lk in path[1:] if lk is not None] + [closing]  # links[i]: names[i]->[i+1]
    start = min(range(len(names)), key=lambda i: order[names[i]])
    names, links = names[start:] + names[:start], links[start:] + links[:start]
    if len(names) > 2 and order[names[-1]] < order[names[1]]:
        names, links = [names[0]] + names[1:][::-1], links[::-1]
    return (f"switches {'-'.join(names)} form a loop (links "
            f"{', '.join(lk.label for lk in links)}): the lab's switches are Linux bridges "
            "without STP, where one broadcast would circle the loop for ever; remove a link")


def check_address(text: Any, owner: str, label: str) -> str:
    """The IP of ``text`` (``10.0.1.1/24``), given for ``owner`` on link ``label``; a
    :class:`TopologyError` unless it is a host address of an IPv4 subnet of /30 or wider."""
    if not isinstance(text, str):
        raise TopologyError(f"link {label}: address {show(text)} for {owner} must be text like "
                            "10.0.1.1/24")
    try:
        iface = ipaddress.ip_interface(text)
    except ValueError as err:
        raise TopologyError(f"link {label}: bad address {show(text)} for {owner}: "
                            f"{one_line(str(err))}") from None
    if iface.version != 4 or iface.network.prefixlen > 30:
        raise TopologyError(f"link {label}: address {text!r} must be IPv4 with a prefix of /30 "
                            "or wider")
    ip, net = iface.ip, iface.network
    problem = ""
    if ip == net.network_address:
        problem = f"the network address of {net}"
    elif ip == net.broadcast_address:
        problem = f"the broadcast address of {net}"
    elif ip.is_loopback or ip.is_multicast or ip.is_reserved or ip in _THIS_NETWORK:
        problem = "a loopback, multicast or reserved address"
    if problem:
        raise TopologyError(f"link {label}: address {text!r} for {owner} is {problem}: give a "
                            "host address of its subnet")
    return str(ip)


def finite(value: Any) -> bool:
    """True for a real number (not a boolean) that is neither infinite nor NaN."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def one_line(text: str) -> str:
    """``text`` with every run of white space (line breaks too) made one space."""
    return " ".join(text.split())


def name_of(value: Any) -> str:
    """A node name as it is when it reads as one (printable, no spaces, short), else its
    :func:`show` (for messages about names not yet checked)."""
    if isinstance(value, str) and value.isprintable() and " " not in value \
            and 0 < len(value) <= 32:
        return value
    return show(value, 30)


def show(value: Any, width: int = 40) -> str:
    """``repr(value)``, at most ``width`` characters (for one-line messages)."""
    try:
        text = repr(value)
    except ValueError:  # an integer longer than Python prints
        return f"<{type(value).__name__} too large to show>"
    return one_line(text) if len(text) <= width else one_line(text[: width - 3]) + "..."
