"""What a TCP load does to the round-trip time: the queue model of a shaped link.

Pure Python, like :mod:`labtools.model.expect` (whose per-link formulas it uses).

What a shaped link's queue holds was measured on the kit's own networks in the lab VM
(Debian's 6.1 kernel): ``tc -s qdisc`` backlogs sampled while one iperf3 TCP flow filled a
dumbbell's bottleneck, with a 20 ms-spaced ping through the same queue.

- netem's ``limit`` counts the packets still serving their delay: with 5 Mbit/s, 23 ms and
  a limit of 105 the queue held 84-101 packets, and pings took 189-270 ms, never the
  300 ms that delay + a full queue drained at the rate would give; max(delay, drain) + the
  return delay is 277 ms.
- With segmentation offloads on, the sender's super-packets count once each: 2586-2814
  bytes per queued packet, 190-276 kB in a "105-packet" queue and pings up to 950 ms.
  With one segment per packet (``gso_max_segs 1``, what the kit's networks set) 1410-1500
  bytes per packet: a packet is a frame, and the model below holds.

The model, for one TCP flow (the *load*) and a ping that crosses the load's bottleneck
queue in the same direction as the load's data:

- The load fills the bottleneck queue (Q frames, link rate R) until netem drops a packet.
  The ping then spends ``max(delay, Q x 1514 B / R)`` on that link (the link drains at
  its rate, so the delay and the drain overlap): the RTT's top.
- On a drop, CUBIC (Linux's default) cuts its window to :data:`CUBIC_BETA` of itself. The
  window is the queue plus the packets on the rest of the path (R x the rest of the RTT),
  so the queue falls to ``beta x (Q + rest) - rest`` frames: the RTT's bottom.
- The queue then grows back: a ping sees RTTs between the two, typically (median) near
  their midpoint (measured: 242 ms against the model's 236 ms).

The model is the steady state of a saturated link: the load past its slow start, the
link draining at its rate all the time (the kit's pings under load start 2 s after the
load). A burst onto an idle link is another case, which the model does not cover: up to Q
packets that arrive within one delay serve it together and then drain at R, so the last
waits ``delay + Q x 1514 B / R`` (not the max of the two): 277 ms on the link above, where
the steady state gives 254 ms (docs/reference.md, "The physics behind the expected values").

A ping that does not cross the load's bottleneck queue (another path, or the other
direction) sees the idle RTT. A rate the machine cannot drive (under software emulation)
drains the queue more slowly: then the RTTs say more about the machine than the links
(:mod:`labtools.judge.verdicts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from labtools.errors import InputError
from labtools.model.expect import (
    TCP_FRAME_BYTES,
    bottleneck,
    link_full_ms,
    path,
    queue_cap_mbps,
    rtt_ms,
    transmission_ms,
)
from labtools.model.topology import Link, Topology

#: Linux CUBIC's multiplicative decrease: after a loss the window is 717/1024 of itself
#: (``beta_cubic`` in net/ipv4/tcp_cubic.c; 0.7 in RFC 8312)
CUBIC_BETA = 717 / 1024


@dataclass(frozen=True)
class LoadedRtt:
    """The RTT of ``src`` -> ``dst`` while one TCP flow ``load_src`` -> ``load_dst`` runs.

    Attributes:
        idle_ms: the propagation RTT.
        low_ms: right after the load's window was cut (its queue at its lowest), ms.
        typical_ms: the midpoint of ``low_ms`` and ``high_ms``: what a median comes near.
        high_ms: the load's bottleneck queue full, ms: the worst RTT of the steady state
            (a burst onto the idle link can exceed it; the module docstring).
        queue_link: the link whose queue the load fills, when the ping crosses it in the
            load's direction; None when the ping crosses no queue of the load's.
        queue_frames_low: frames in that queue right after a cut (0 without one).
    """

    src: str
    dst: str
    load_src: str
    load_dst: str
    idle_ms: float
    low_ms: float
    typical_ms: float
    high_ms: float
    queue_link: Optional[str]
    queue_frames_low: float

    def as_dict(self) -> Dict[str, Any]:
        """JSON form, numbers rounded to the microsecond."""
        return {"load": f"{self.load_src}->{self.load_dst}",
                "loaded_rtt_low_ms": round(self.low_ms, 3),
                "loaded_rtt_ms": round(self.typical_ms, 3),
                "loaded_rtt_high_ms": round(self.high_ms, 3),
                "loaded_queue_link": self.queue_link,
                "loaded_queue_frames_low": round(self.queue_frames_low, 1)}


def directed_links(topo: Topology, src: str, dst: str) -> List[Tuple[str, str]]:
    """``(link label, node the packet leaves from)`` for each link ``src`` -> ``dst``
    crosses, in order (a link's queue is the one of the side a packet leaves)."""
    info = path(topo, src, dst)
    return [(link.label, info.nodes[i]) for i, link in enumerate(info.links)]


def _load_queue(topo: Topology, load_src: str, load_dst: str) -> Optional[Tuple[Link, str]]:
    """The load's bottleneck link and the side its queue builds on; None when the load's
    path has no rate limit or its queue never waits (a queue cap below the rate)."""
    rate, label = bottleneck(topo, load_src, load_dst)
    if rate is None or label is None:
        return None
    link = topo.link(label)
    cap = queue_cap_mbps(link)
    if link.queue_pkts is None or (cap is not None and cap <= rate):
        return None
    side = dict(directed_links(topo, load_src, load_dst))[label]
    return link, side


def queue_frames_after_cut(link: Link, rest_ms: float, beta: float = CUBIC_BETA) -> float:
    """Frames left in ``link``'s full queue right after the load's window is cut to
    ``beta`` of itself; ``rest_ms``: the load's RTT outside that queue, ms."""
    if link.bw_mbps is None or link.queue_pkts is None:
        raise InputError(f"link {link.label} has no rate or no queue limit: it keeps no queue")
    rest_frames = rest_ms / transmission_ms(TCP_FRAME_BYTES, link.bw_mbps)
    return max(0.0, beta * (link.queue_pkts + rest_frames) - rest_frames)


def _sojourn_ms(link: Link, frames: float, rate_mbps: float) -> float:
    return max(link.delay_ms, frames * transmission_ms(TCP_FRAME_BYTES, rate_mbps))


def loaded_rtt(topo: Topology, src: str, dst: str, load_src: Optional[str] = None,
               load_dst: Optional[str] = None, beta: float = CUBIC_BETA) -> LoadedRtt:
    """The RTT of ``src`` -> ``dst`` under one TCP flow ``load_src`` -> ``load_dst`` (by
    default the pair itself): see the module docstring."""
    load_src, load_dst = load_src or src, load_dst or dst
    idle = rtt_ms(topo, src, dst)
    found = _load_queue(topo, load_src, load_dst)
    crossed = set(directed_links(topo, src, dst)) | set(directed_links(topo, dst, src))
    if found is None or (found[0].label, found[1]) not in crossed:
        return LoadedRtt(src, dst, load_src, load_dst, idle, idle, idle, idle, None, 0.0)
    link, _side = found
    rest_ms = rtt_ms(topo, load_src, load_dst) - link.delay_ms
    frames_low = queue_frames_after_cut(link, rest_ms, beta)
    high_wait = (link_full_ms(link) or link.delay_ms) - link.delay_ms
    low_wait = _sojourn_ms(link, frames_low, link.bw_mbps or 1.0) - link.delay_ms
    low, high = idle + low_wait, idle + high_wait
    return LoadedRtt(src, dst, load_src, load_dst, idle, low, (low + high) / 2, high,
                     link.label, frames_low)
