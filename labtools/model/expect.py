"""Expected values: what a student should measure, computed from the topology alone.

Pure Python: no root, no Mininet, no pandas. Units are in the names: ``_ms`` milliseconds,
``_mbps`` Mbit/s (10^6 bit/s), ``_bytes`` bytes.

Physics used (see docs/reference.md, "The physics behind the expected values"):

- A link with ``delay_ms = d`` delays each direction by ``d``: it adds ``2d`` to an RTT.
- Rate limits act on Ethernet frames (HTB counts the 14-byte Ethernet header). A full TCP
  segment carries 1448 payload bytes (with timestamps) in a 1514-byte frame, so TCP goodput
  is at most 1448/1514 = 95.6 % of the rate; an iperf UDP datagram of 1470 bytes travels in a
  1512-byte frame (97.2 %).
- The window that fills a path is its bandwidth-delay product: rate x RTT.
- A shaped link is Mininet's ``TCLink``: an HTB class (the rate) whose child is netem
  (delay, loss and the queue limit). netem's ``limit`` counts every packet it holds, also
  those still serving their delay, so the delay and the wait for the rate happen in the
  same queue at once: a packet that finds the queue full (Q frames of 1514 bytes) spends
  max(delay, Q x 1514 x 8 / R) on the link, not the delay plus that (measured with
  ``tc -s qdisc``: :mod:`labtools.model.queues`). The kit's networks send one frame per
  packet (no segmentation offload), so Q packets are Q frames.
- The worst RTT of a saturated path (the steady state): every link the data crosses with
  its queue full, the replies' links with their delay. It is a steady-state value, not a
  bound: packets that reach an idle link within one delay (a burst: a transfer's first
  windows) serve the delay together and then drain, so the last of them can exceed it by
  up to min(delay, drain time) of each full queue. A rate-limited link without a queue
  limit has no worst RTT (its waiting is unbounded).
- A queue limit below the link's own bandwidth-delay product caps its rate: at most Q
  frames per delay leave it (``queue_cap_mbps``).
- Loss slows TCP: Mathis et al. (1997) estimate Reno's rate as MSS / RTT x C / sqrt(p),
  with C = sqrt(3/2) ~ 1.22 for periodic loss and one ACK per segment, p the probability
  that a data segment is lost on the way. It is an estimate, not a limit: CUBIC (Linux's
  default) grows its window faster and may exceed it (``mathis_limit_mbps`` keeps its
  name in the JSON).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labtools.errors import InputError
from labtools.frame_sizes import (  # the sizes are written once, there
    ETH_HEADER_BYTES,
    ICMP_HEADER_BYTES,
    IPERF_UDP_PAYLOAD_BYTES,
    IPV4_HEADER_BYTES,
    MAX_UDP_PAYLOAD_BYTES,
    MTU_BYTES,
    TCP_FRAME_BYTES,
    TCP_MSS_BYTES,
    UDP_HEADER_BYTES,
)
from labtools.model.routing import Hop, compute_routing, find_route_hops
from labtools.model.topology import Link, Topology

__all__ = ["MTU_BYTES", "TCP_FRAME_BYTES", "TCP_MSS_BYTES", "TCP_PAYLOAD_SHARE",
           "IPERF_UDP_PAYLOAD_BYTES", "HTB_BURST_BYTES", "MATHIS_C"]

#: the share of a rate TCP payload can have: 1448 / 1514 (95.6 %)
TCP_PAYLOAD_SHARE = TCP_MSS_BYTES / TCP_FRAME_BYTES
#: HTB's burst on a shaped link (Mininet's ``burst 15k``: tc's k is 1024): what a class may
#: send at once after waiting, so a timer that fires up to this late costs it no rate
HTB_BURST_BYTES = 15 * 1024
#: Mathis et al.'s constant sqrt(3/2): periodic loss, an ACK for every segment
MATHIS_C = (3 / 2) ** 0.5


@dataclass(frozen=True)
class PathInfo:
    """The route between two nodes and what it implies."""

    src: str
    dst: str
    dst_ip: str  #: the address ``src`` talks to
    nodes: Tuple[str, ...]  #: every node on the way, switches included
    links: Tuple[Link, ...]  #: forward links in travel order
    reverse_links: Tuple[Link, ...]  #: links the replies take

    @property
    def link_labels(self) -> List[str]:
        """Labels of the forward links (``L1``... or ``a-b``)."""
        return [link.label for link in self.links]


def _flatten(hops: List[Hop]) -> Tuple[Tuple[str, ...], Tuple[Link, ...]]:
    nodes: List[str] = []
    links: List[Link] = []
    for hop in hops:
        nodes.extend(hop.nodes if not nodes else hop.nodes[1:])
        links.extend(hop.links)
    return tuple(nodes), tuple(links)


def path(topo: Topology, src: str, dst: str) -> PathInfo:
    """The route from ``src`` to ``dst`` and the route the replies take back."""
    routing = compute_routing(topo)
    hops = find_route_hops(topo, src, dst)  # checks the names first
    target = routing.target(src, dst)
    nodes, links = _flatten(hops)
    source = routing.addressing.on_segment(src, hops[0].segment)
    back = routing.hops(dst, source) if source is not None else []
    _, reverse_links = _flatten(back)
    return PathInfo(src, dst, target.ip, nodes, links, reverse_links)


def ping_frame_bytes(payload_bytes: int = 56) -> int:
    """Ethernet frame size of an ICMP echo with ``payload_bytes`` (ping's ``-s``)."""
    return payload_bytes + ICMP_HEADER_BYTES + IPV4_HEADER_BYTES + ETH_HEADER_BYTES


def transmission_ms(frame_bytes: int, bw_mbps: float) -> float:
    """Time to put one frame of ``frame_bytes`` on a ``bw_mbps`` link, in ms."""
    return frame_bytes * 8 / (bw_mbps * 1e6) * 1e3


def rtt_ms(topo: Topology, src: str, dst: str, frame_bytes: Optional[int] = None) -> float:
    """Expected round-trip time in ms: the propagation delays out and back, plus (with
    ``frame_bytes``) the transmission time of a frame of that size on each rate-limited
    link in both directions."""
    info = path(topo, src, dst)
    total = sum(link.delay_ms for link in info.links + info.reverse_links)
    if frame_bytes is not None:
        if frame_bytes <= 0:
            raise InputError(f"frame size must be > 0 bytes, got {frame_bytes}")
        total += sum(
            transmission_ms(frame_bytes, link.bw_mbps)
            for link in info.links + info.reverse_links
            if link.bw_mbps is not None
        )
    return total


def bottleneck(topo: Topology, src: str, dst: str) -> Tuple[Optional[float], Optional[str]]:
    """The smallest rate on the forward path in Mbit/s and the label of the link that sets
    it (the first one on the way when several tie); ``(None, None)`` if nothing is shaped."""
    rated = [(link.bw_mbps, link) for link in path(topo, src, dst).links
             if link.bw_mbps is not None]
    if not rated:
        return None, None
    rate, slowest = min(rated, key=lambda pair: pair[0])  # min keeps the first of ties
    return rate, slowest.label


def shaped_rates_mbps(topo: Topology, src: str, dst: str) -> Tuple[float, ...]:
    """The rates (Mbit/s) of the shaped links on the forward path from ``src`` to ``dst``,
    in path order (empty when nothing is shaped)."""
    return tuple(float(link.bw_mbps) for link in path(topo, src, dst).links
                 if link.bw_mbps is not None)


def tcp_goodput_ceiling_mbps(rate_mbps: float) -> float:
    """Most TCP payload a ``rate_mbps`` link can carry: 1448 bytes per 1514-byte frame."""
    _check_rate(rate_mbps)
    return rate_mbps * TCP_PAYLOAD_SHARE


def udp_goodput_mbps(rate_mbps: float, datagram_bytes: int = IPERF_UDP_PAYLOAD_BYTES) -> float:
    """Most UDP payload a ``rate_mbps`` link carries with datagrams of ``datagram_bytes``
    (iperf's default 1470 travels in a 1512-byte frame)."""
    _check_rate(rate_mbps)
    if not 0 < datagram_bytes <= MAX_UDP_PAYLOAD_BYTES:
        raise InputError(f"UDP datagram size must be within 1..{MAX_UDP_PAYLOAD_BYTES} bytes, "
                         f"got {datagram_bytes}")
    frame = datagram_bytes + UDP_HEADER_BYTES + IPV4_HEADER_BYTES + ETH_HEADER_BYTES
    return rate_mbps * datagram_bytes / frame


def htb_burst_ms(rate_mbps: float) -> float:
    """How long HTB's burst lasts at ``rate_mbps`` (ms): a class whose timer fires later
    than that loses sending time it cannot make up."""
    _check_rate(rate_mbps)
    return HTB_BURST_BYTES * 8 / (rate_mbps * 1e6) * 1e3


def path_burst_ms(rates_mbps: Sequence[float]) -> Optional[float]:
    """How late (ms) timers may fire on a chain of shaped links of ``rates_mbps`` before
    the chain loses as much sending time as one link loses when its timers are a whole
    burst late: 1 / sum(1 / burst) over the links (each link's late timers cost it
    late / burst of its time, and a flow crossing them loses them all). None without a
    shaped link."""
    if not rates_mbps:
        return None
    return 1.0 / sum(1.0 / htb_burst_ms(rate) for rate in rates_mbps)


def window_rate_mbps(window_bytes: float, rtt_ms_value: float) -> float:
    """The most a TCP window of ``window_bytes`` carries over ``rtt_ms_value``: one window
    per round trip, Mbit/s (the inverse of :func:`bdp_bytes`)."""
    if rtt_ms_value <= 0:
        raise InputError(f"RTT must be > 0 ms for a window to limit a rate, got {rtt_ms_value}")
    return window_bytes * 8 / (rtt_ms_value / 1e3) / 1e6


def bdp_bytes(rate_mbps: float, rtt_ms_value: float) -> float:
    """Bandwidth-delay product in bytes: the data in flight that fills the path."""
    _check_rate(rate_mbps)
    if rtt_ms_value < 0:
        raise InputError(f"RTT must be >= 0 ms, got {rtt_ms_value}")
    return rate_mbps * 1e6 * rtt_ms_value / 1e3 / 8


def window_per_flow_bytes(rate_mbps: float, rtt_ms_value: float, flows: int) -> float:
    """TCP window each of ``flows`` equal flows needs so that together they fill the path."""
    if not isinstance(flows, int) or flows < 1:
        raise InputError(f"number of flows must be an integer >= 1, got {flows!r}")
    return bdp_bytes(rate_mbps, rtt_ms_value) / flows


def queue_drain_ms(link: Link) -> Optional[float]:
    """Time (ms) to send a full queue of ``link`` at its rate (full 1514-byte frames); None
    when the link has no rate (it queues nothing) or no queue limit (its queue has no end)."""
    if link.bw_mbps is None or link.queue_pkts is None:
        return None
    return link.queue_pkts * TCP_FRAME_BYTES * 8 / (link.bw_mbps * 1e6) * 1e3


def link_full_ms(link: Link) -> Optional[float]:
    """One-way time (ms) on ``link`` of a packet that finds its queue full in the steady
    state (the link saturated): netem's limit holds the packets serving their delay too,
    so max(delay, full queue drained at the rate); the delay alone on a link without a
    rate; None for a rated link without a queue limit (its waiting is unbounded). A burst
    onto the idle link can take up to delay + drain (the module docstring)."""
    if link.bw_mbps is None:
        return link.delay_ms
    drain = queue_drain_ms(link)
    return None if drain is None else max(link.delay_ms, drain)


def queue_cap_mbps(link: Link) -> Optional[float]:
    """The rate (Mbit/s of frames) ``link``'s queue limit allows: netem holds each packet
    for its delay and at most Q packets at once, so at most Q frames per delay leave; None
    without a queue limit or a delay (no cap)."""
    if link.queue_pkts is None or link.delay_ms <= 0:
        return None
    return link.queue_pkts * TCP_FRAME_BYTES * 8 / (link.delay_ms / 1e3) / 1e6


def unbounded_links(links: Tuple[Link, ...]) -> Tuple[str, ...]:
    """Labels of the rate-limited links that have no queue limit (waiting is unbounded)."""
    return tuple(link.label for link in links
                 if link.bw_mbps is not None and link.queue_pkts is None)


def queue_delay_ms(links: Tuple[Link, ...]) -> Optional[float]:
    """The waiting (ms) beyond their delays a packet meets crossing ``links`` with every
    queue full, in the steady state (:func:`link_full_ms`; a burst can wait longer); None
    when one of them has no queue limit."""
    if unbounded_links(links):
        return None
    return sum((link_full_ms(link) or 0.0) - link.delay_ms for link in links)


def path_loss(links: Tuple[Link, ...]) -> float:
    """Probability (0..1) that a packet crossing ``links`` is lost on one of them."""
    kept = 1.0
    for link in links:
        kept *= 1 - link.loss_pct / 100
    return 1 - kept


def mathis_limit_mbps(rtt_ms_value: float, loss: float,
                      mss_bytes: int = TCP_MSS_BYTES) -> Optional[float]:
    """The loss-limited TCP rate (Mbit/s) with ``loss`` (0..1) over ``rtt_ms_value``:
    MSS / RTT x C / sqrt(p) (Mathis et al.), an estimate for Reno that CUBIC may exceed,
    not a limit; None without loss or without delay (no estimate)."""
    if loss <= 0 or rtt_ms_value <= 0:
        return None
    return mss_bytes * 8 / (rtt_ms_value / 1e3) * MATHIS_C / loss ** 0.5 / 1e6


@dataclass(frozen=True)
class PairExpectation:
    """Everything expected between two nodes (units in the names; None where the path is
    not rate-limited). :meth:`as_dict` is the command line's JSON.

    ``max_rtt_ms`` (and ``max_rtt_both_loaded_ms``) is the worst RTT of the steady state,
    every queue full, which a burst can exceed; ``mathis_limit_mbps`` the loss-limited
    estimate (Mathis et al.), which CUBIC may exceed."""

    src: str
    dst: str
    dst_ip: str
    path: Tuple[str, ...]
    links: Tuple[str, ...]
    rtt_ms: float
    bottleneck_mbps: Optional[float]
    bottleneck_link: Optional[str]
    tcp_goodput_ceiling_mbps: Optional[float]
    udp_goodput_ceiling_mbps: Optional[float]
    bdp_bytes: Optional[float]
    queue_delay_ms: Optional[float] = None
    max_rtt_ms: Optional[float] = None
    max_rtt_both_loaded_ms: Optional[float] = None
    unbounded_links: Tuple[str, ...] = ()
    loss_pct: float = 0.0
    mathis_limit_mbps: Optional[float] = None
    #: the lowest rate a queue limit on the way allows (Mbit/s of frames; None: no cap)
    queue_cap_mbps: Optional[float] = None

    @property
    def tcp_limit_mbps(self) -> Optional[float]:
        """The TCP rate expected (Mbit/s): the lowest of the goodput ceiling, the
        loss-limited estimate and the goodput a queue limit on the way allows. Where the
        estimate is the lowest, it is an estimate CUBIC may exceed, not a limit (the
        verdicts judge such a rate against what the path carries:
        :func:`labtools.judge.measurement.tcp_rate_verdict`)."""
        capped = (None if self.queue_cap_mbps is None
                  else self.queue_cap_mbps * TCP_PAYLOAD_SHARE)
        limits = [v for v in (self.tcp_goodput_ceiling_mbps, self.mathis_limit_mbps, capped)
                  if v is not None]
        return min(limits) if limits else None

    def as_dict(self) -> Dict[str, Any]:
        """JSON form: ``path`` and ``links`` as lists, numbers rounded as printed."""
        def rounded(value: Optional[float], digits: int) -> Optional[float]:
            return None if value is None else round(value, digits)

        return {
            "src": self.src, "dst": self.dst, "dst_ip": self.dst_ip,
            "path": list(self.path), "links": list(self.links),
            "rtt_ms": round(self.rtt_ms, 6), "bottleneck_mbps": self.bottleneck_mbps,
            "bottleneck_link": self.bottleneck_link,
            "tcp_goodput_ceiling_mbps": rounded(self.tcp_goodput_ceiling_mbps, 3),
            "udp_goodput_ceiling_mbps": rounded(self.udp_goodput_ceiling_mbps, 3),
            "bdp_bytes": None if self.bdp_bytes is None else round(self.bdp_bytes),
            "queue_delay_ms": rounded(self.queue_delay_ms, 3),
            "max_rtt_ms": rounded(self.max_rtt_ms, 3),
            "max_rtt_both_loaded_ms": rounded(self.max_rtt_both_loaded_ms, 3),
            "unbounded_links": list(self.unbounded_links),
            "loss_pct": round(self.loss_pct, 6),
            "mathis_limit_mbps": rounded(self.mathis_limit_mbps, 3),
            "queue_cap_mbps": rounded(self.queue_cap_mbps, 3),
            "tcp_limit_mbps": rounded(self.tcp_limit_mbps, 3),
        }


def expect_pair(topo: Topology, src: str, dst: str) -> PairExpectation:
    """Everything expected between two nodes (see :class:`PairExpectation`)."""
    info = path(topo, src, dst)
    rtt = rtt_ms(topo, src, dst)
    rate, label = bottleneck(topo, src, dst)
    forward, back = queue_delay_ms(info.links), queue_delay_ms(info.reverse_links)
    loss = path_loss(info.links)
    return PairExpectation(
        src=src, dst=dst, dst_ip=info.dst_ip, path=info.nodes,
        links=tuple(info.link_labels), rtt_ms=rtt, bottleneck_mbps=rate,
        bottleneck_link=label,
        tcp_goodput_ceiling_mbps=None if rate is None else tcp_goodput_ceiling_mbps(rate),
        udp_goodput_ceiling_mbps=None if rate is None else udp_goodput_mbps(rate),
        bdp_bytes=None if rate is None else bdp_bytes(rate, rtt),
        queue_delay_ms=forward,
        max_rtt_ms=None if forward is None else rtt + forward,
        max_rtt_both_loaded_ms=None if forward is None or back is None else rtt + forward + back,
        unbounded_links=tuple(dict.fromkeys(unbounded_links(info.links + info.reverse_links))),
        loss_pct=100 * loss, mathis_limit_mbps=mathis_limit_mbps(rtt, loss),
        queue_cap_mbps=min((c for c in map(queue_cap_mbps, info.links) if c is not None),
                           default=None),
    )


def _check_rate(rate_mbps: float) -> None:
    if isinstance(rate_mbps, bool) or not isinstance(rate_mbps, (int, float)) or not rate_mbps > 0:
        raise InputError(f"rate must be a number > 0 Mbit/s, got {rate_mbps!r}")
