"""The compute-it-first questions' solvers: each one's expected value and the values the
usual mistakes produce, with what to say about each (:mod:`labtools.judge.exercises`
checks answers against them).

Every solver takes the topology and the question's arguments and returns a
:class:`Solution`: the expected value in the question's unit, the :class:`Mistake` values
(one-way instead of round trip, the sum of rates, bits instead of bytes...) and a hint
that names the links of the path.
"""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union

from labtools.errors import InputError
from labtools.frame_sizes import (
    IPERF_UDP_FRAME_BYTES,
    IPERF_UDP_PAYLOAD_BYTES,
    MTU_BYTES,
    TCP_FRAME_BYTES,
    TCP_MSS_BYTES,
)
from labtools.model import expect
from labtools.model.fairness import Flow, crossings, max_min_shares, parse_flows
from labtools.model.topology import Link, Topology

_MAX_SUBSET_LINKS = 6  #: paths with more delayed links skip the per-subset RTT mistakes


@dataclass(frozen=True)
class Mistake:
    """A value a known mistake produces, and what to say about it."""

    code: str
    value: float
    explanation: str


@dataclass(frozen=True)
class Solution:
    """A question's expected value, its unit, the known mistakes and a generic hint."""

    expected: float
    unit: str
    mistakes: List[Mistake] = field(default_factory=list)
    hint: str = ""



# --- describing paths ------------------------------------------------------------------
def _describe(link: Link) -> str:
    parts = []
    if link.bw_mbps is not None:
        parts.append(f"{link.bw_mbps:g} Mbit/s")
    if link.delay_ms:
        parts.append(f"{link.delay_ms:g} ms")
    return f"{link.label} ({', '.join(parts)})" if parts else link.label


def _known(value: Optional[float], what: str) -> float:
    """``value``, which the question's own answer implies exists (a flow with a share
    crosses a rate-limited link); InputError naming ``what`` otherwise."""
    if value is None:
        raise InputError(f"{what} is not defined on this topology")
    return float(value)


def _names(links: Sequence[Link]) -> str:
    labels = [link.label for link in links]
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _path_hint(info: expect.PathInfo, rule: str) -> str:
    shaped = [link for link in info.links if link.shaped]
    where = ", ".join(_describe(link) for link in shaped) or "no shaped link"
    return f"the path {info.src} → {info.dst} crosses {where}; {rule}"


# --- the questions -----------------------------------------------------------------------
def rtt(topo: Topology, src: str, dst: str) -> Solution:
    info = expect.path(topo, src, dst)
    rtt = expect.rtt_ms(topo, src, dst)
    delayed = [link for link in info.links if link.delay_ms > 0]
    both = "a link's delay applies in each direction, so RTT = 2 × the sum of the delays"
    mistakes = [Mistake("one_way", sum(link.delay_ms for link in info.links),
                        f"you gave the one-way delay: {both}")]
    if len(delayed) <= _MAX_SUBSET_LINKS:
        for size in range(1, len(delayed)):
            for subset in itertools.combinations(delayed, size):
                once = sum(link.delay_ms for link in subset)
                mistakes.append(Mistake(
                    "one_direction", rtt - once,
                    f"you counted {_names(subset)} in one direction only: each link delays "
                    "both the request and the reply, so it adds 2 × its delay to the RTT"))
                mistakes.append(Mistake(
                    "left_out", rtt - 2 * once,
                    f"you left out {_names(subset)}: every link on the path adds 2 × its delay"))
    everywhere = 2 * sum(link.delay_ms for link in topo.links)
    mistakes.append(Mistake(
        "off_path", everywhere,
        f"you added links that are not on the path: {src} → {dst} crosses only "
        f"{_names(delayed) if delayed else 'links without delay'}"))
    mistakes.append(Mistake("twice", 2 * rtt, "you doubled twice: delay_ms is already the "
                            "delay of one direction, so RTT = 2 × the sum of the delays"))
    mistakes.append(Mistake("seconds", rtt / 1000, "the answer is asked in milliseconds"))
    return Solution(rtt, "ms", mistakes, _path_hint(info, "RTT = 2 × the sum of one-way delays"))


def _rated(topo: Topology, src: str, dst: str) -> Tuple[expect.PathInfo, List[Link], float]:
    info = expect.path(topo, src, dst)
    rated = [link for link in info.links if link.bw_mbps is not None]
    if not rated:
        raise InputError(f"the path {src} → {dst} has no rate-limited link: nothing to compute")
    return info, rated, min(link.rate_limit_mbps() for link in rated)


def _wrong_rates(topo: Topology, info: expect.PathInfo, rated: List[Link],
                 rule: str) -> List[Tuple[str, float, str]]:
    """(code, wrong rate in Mbit/s, explanation) for the usual ways of picking the rate."""
    slowest = "the slowest link sets the rate: a path carries no more than its slowest link"
    first = rated[0]
    fastest = max(rated, key=Link.rate_limit_mbps)
    out = [("sum", sum(link.rate_limit_mbps() for link in rated),
            f"you added the rates of {_names(rated)}; {slowest}"),
           ("first_link", first.rate_limit_mbps(), f"you took {first.label}'s rate; {slowest}"),
           ("max", fastest.rate_limit_mbps(), f"you took {fastest.label}'s rate; {slowest}")]
    everywhere = [link for link in topo.links if link.bw_mbps is not None]
    lowest = min(everywhere, key=Link.rate_limit_mbps)
    if not any(lowest is link for link in rated):
        out.append(("off_path", lowest.rate_limit_mbps(),
                    f"{lowest.label} is not on the path {info.src} → {info.dst}; {rule}"))
    return out


def bottleneck(topo: Topology, src: str, dst: str) -> Solution:
    info, rated, rate = _rated(topo, src, dst)
    rule = "compare the rates of the links on the path and take the smallest"
    mistakes = [Mistake(code, value, text)
                for code, value, text in _wrong_rates(topo, info, rated, rule)]
    mistakes.append(Mistake("goodput", expect.tcp_goodput_ceiling_mbps(rate),
                            "that is the TCP goodput ceiling; the question asks for the link "
                            "rate itself"))
    mistakes.append(Mistake("bytes", rate / 8, "the answer is in Mbit/s (bits), not Mbyte/s"))
    return Solution(rate, "Mbit/s", mistakes,
                    _path_hint(info, "the slowest link sets the rate"))


_OVERHEAD = ("HTB counts whole Ethernet frames: each 1514-byte frame carries 1448 bytes of "
             "TCP payload (14 Ethernet + 20 IP + 32 TCP header with timestamps), so goodput "
             "≤ rate × 1448/1514")
#: (code, payload bytes, frame bytes, explanation) of wrong overhead assumptions
_WRONG_OVERHEADS = [
    ("mss_1460", 1460, TCP_FRAME_BYTES,
     "Linux sends TCP timestamps (12 bytes): the payload per segment is 1448 bytes, not 1460"),
    ("no_ethernet", TCP_MSS_BYTES, MTU_BYTES,
     "HTB also counts the 14-byte Ethernet header: a full frame is 1514 bytes, not 1500"),
    ("udp", IPERF_UDP_PAYLOAD_BYTES, IPERF_UDP_FRAME_BYTES,
     "that is iperf's UDP goodput (1470 bytes in a 1512-byte frame); TCP carries 1448 bytes "
     "in a 1514-byte frame"),
    ("mss_1460_no_ethernet", 1460, MTU_BYTES,
     "the payload is 1448 bytes (TCP timestamps) and the frame 1514 bytes (Ethernet header)"),
]


def goodput(topo: Topology, src: str, dst: str) -> Solution:
    info, rated, rate = _rated(topo, src, dst)
    ratio = expect.TCP_PAYLOAD_SHARE
    mistakes = [Mistake("link_rate", rate, f"that is the link rate: {_OVERHEAD}")]
    mistakes += [Mistake(code, rate * payload / frame, text)
                 for code, payload, frame, text in _WRONG_OVERHEADS]
    rule = "the slowest link on the path sets the rate"
    mistakes += [Mistake(code, value * ratio, text)
                 for code, value, text in _wrong_rates(topo, info, rated, rule)]
    return Solution(expect.tcp_goodput_ceiling_mbps(rate), "Mbit/s", mistakes,
                    _path_hint(info, "take the slowest rate, then the TCP overhead per frame"))


def bdp(topo: Topology, src: str, dst: str) -> Solution:
    info, rated, rate = _rated(topo, src, dst)
    rtt = expect.rtt_ms(topo, src, dst)
    one_way = sum(link.delay_ms for link in info.links)
    bdp = expect.bdp_bytes(rate, rtt)
    half = expect.bdp_bytes(rate, one_way)
    bits = "a BDP in bits: divide by 8 for bytes"
    mistakes = [
        Mistake("bits", bdp * 8, f"you gave {bits}"),
        Mistake("one_way", half, "you used the one-way delay: the window must cover a full "
                                 "round trip (data out, acknowledgement back), BDP = rate × RTT"),
        Mistake("bits_one_way", half * 8, f"you used the one-way delay and gave {bits}; "
                                          "BDP = rate × RTT"),
        Mistake("kilobytes", bdp / 1000, "the answer is in bytes, not kilobytes"),
        Mistake("kibibytes", bdp / 1024, "the answer is in bytes, not KiB"),
        Mistake("units", rate * rtt, "mind the units: Mbit/s × ms is kbit; convert to bytes "
                                     "(× 1000 / 8)"),
        Mistake("goodput", bdp * expect.TCP_PAYLOAD_SHARE,
                "you used the TCP goodput; the BDP uses the bottleneck link rate"),
    ]
    rule = "the slowest link on the path sets the rate"
    mistakes += [Mistake(code, expect.bdp_bytes(value, rtt), text)
                 for code, value, text in _wrong_rates(topo, info, rated, rule)]
    return Solution(bdp, "bytes", mistakes,
                    _path_hint(info, "BDP = bottleneck rate × RTT, in bytes"))


# --- fair shares -------------------------------------------------------------------------
def _flow_index(flows: List[Flow], flow: Union[int, str]) -> int:
    if isinstance(flow, bool):
        raise InputError(f"flow must be an index or SRC:DST, got {flow!r}")
    if isinstance(flow, numbers.Integral):
        flow = int(flow)
        if not 0 <= flow < len(flows):
            raise InputError(f"flow index {flow} is out of range 0..{len(flows) - 1}")
        return flow
    for index, f in enumerate(flows):
        if f"{f.src}:{f.dst}" == str(flow):
            return index
    raise InputError(f"no flow {flow!r} among {', '.join(f'{f.src}:{f.dst}' for f in flows)}")


def _crossings(topo: Topology, flow: Flow) -> List[Tuple[Link, bool]]:
    """(rate-limited link, forward?) pairs the flow's data crosses."""
    return [(topo.links[index], forward) for index, forward in crossings(topo, flow)]


def _equal_split(topo: Topology, flows: List[Flow], index: int) -> float:
    """The flow's share if every link were split evenly, with no leftovers passed on."""
    mine = _crossings(topo, flows[index])
    others = [_crossings(topo, f) for f in flows]
    best = math.inf
    for link, forward in mine:
        count = sum(f.connections for f, used in zip(flows, others)
                    if any(lk is link and fw == forward for lk, fw in used))
        best = min(best, link.rate_limit_mbps() / count)
    return best * flows[index].connections


def fair_share(topo: Topology, flows: Union[str, Sequence[Flow]],
                flow: Union[int, str]) -> Solution:
    spec = parse_flows(flows) if isinstance(flows, str) else list(flows)
    index = _flow_index(spec, flow)
    shares = max_min_shares(topo, spec)
    mine, me = shares[index], spec[index]
    if mine.share_mbps is None:
        raise InputError(f"flow {me.src}:{me.dst} crosses no rate-limited link: no share")
    name = f"{me.src}-{me.dst}"
    limit = mine.limited_by
    own_rate = _known(expect.bottleneck(topo, me.src, me.dst)[0], f"{name}'s bottleneck")
    total = sum(f.connections for f in spec)
    mistakes = []
    if any(f.connections > 1 for f in spec):
        per_pair = max_min_shares(topo, [Flow(f.src, f.dst, 1) for f in spec])[index]
        many = ", ".join(f"{f.src}-{f.dst} opens {f.connections}"
                         for f in spec if f.connections > 1)
        mistakes.append(Mistake(
            "per_pair", _known(per_pair.share_mbps, f"{name}'s share per host pair"),
            f"you split per host pair; max-min fairness is per connection ({many} "
            f"connections), so count the connections that cross {limit}"))
    if me.connections > 1:
        mistakes.append(Mistake(
            "per_connection", _known(mine.per_connection_mbps, f"{name}'s share per connection"),
            f"that is the share of one connection; the question asks for all "
            f"{me.connections} connections of {name} together"))
    mistakes += [
        Mistake("no_sharing", own_rate,
                f"that is {name}'s bottleneck alone; it shares {limit} with the other flows"),
        Mistake("all_flows", own_rate * me.connections / total,
                f"not every flow crosses {limit}: only connections on the same link (and in the "
                "same direction) divide it"),
        Mistake("no_leftover", _equal_split(topo, spec, index),
                "max-min fairness passes on what a flow held lower elsewhere leaves unused: "
                "freeze the most constrained link first, subtract, then share the rest"),
        Mistake("goodput", mine.share_mbps * expect.TCP_PAYLOAD_SHARE,
                "that is the TCP goodput of the share; the question asks for the share of the "
                "link rate"),
    ]
    crossed = ", ".join(_describe(link) for link, _fw in _crossings(topo, me))
    hint = (f"{name} crosses {crossed}; count the connections of all flows on each of these "
            "links, give the most crowded link's rate out evenly, then share what is left")
    return Solution(float(mine.share_mbps), "Mbit/s", mistakes, hint)



def _full_with(links: Sequence[Link], frame_bytes: int = expect.TCP_FRAME_BYTES,
               bits: int = 8, both: bool = False) -> float:
    """One way across ``links`` with every queue full, from a frame size and bits per
    byte (the mistakes change those); ``both``: the delay and the drain added."""
    total = 0.0
    for link in links:
        drain = (0.0 if link.bw_mbps is None or link.queue_pkts is None
                 else link.queue_pkts * frame_bytes * bits / (link.bw_mbps * 1e6) * 1e3)
        total += link.delay_ms + drain if both else max(link.delay_ms, drain)
    return total


def max_rtt(topo: Topology, src: str, dst: str) -> Solution:
    """The worst RTT the links produce with the data direction loaded: each link the data
    crosses with its queue full (netem holds a packet max(delay, drain) there), the
    replies' links with their delay."""
    e = expect.expect_pair(topo, src, dst)
    info = expect.path(topo, src, dst)
    if e.max_rtt_ms is None:
        raise InputError(f"{', '.join(e.unbounded_links)} has no queue limit: no worst RTT "
                         "to compute")
    back = sum(link.delay_ms for link in info.reverse_links)
    drain = "a full queue of Q packets in front of a link of rate R holds Q × 1514 × 8 / R"
    mistakes = [
        Mistake("no_queue", e.rtt_ms, f"that is the propagation RTT alone: {drain} of waiting"),
        Mistake("delay_plus_queue", back + _full_with(info.links, both=True),
                "the link's queue holds the packets serving their delay too (netem's limit "
                "counts them): on a full link a packet spends the larger of the delay and "
                "the drain time, not both"),
        Mistake("frame_1500", back + _full_with(info.links, expect.MTU_BYTES),
                "HTB counts whole Ethernet frames: 1514 bytes, not 1500"),
        Mistake("bytes", back + _full_with(info.links, bits=1),
                "mind bits and bytes: Q × 1514 bytes × 8 bits"),
        Mistake("one_way", _full_with(info.links),
                "that is one way: the replies still cross the links back, with their delay"),
    ]
    if e.max_rtt_both_loaded_ms is not None and e.max_rtt_both_loaded_ms != e.max_rtt_ms:
        mistakes.append(Mistake("both_directions", e.max_rtt_both_loaded_ms,
                                "only the data direction is loaded: the replies find the "
                                "queues the other way empty"))
    return Solution(e.max_rtt_ms, "ms", mistakes, _path_hint(
        info, "each link the data crosses takes the larger of its delay and its full queue's "
              f"drain time ({drain}); the replies take the delays back"))
