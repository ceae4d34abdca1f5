"""Compute-it-first questions about what arrives and what a window allows: their expected
values and the values the usual mistakes produce (see :mod:`labtools.judge.solvers`, whose
:class:`~labtools.judge.solvers.Solution` they return).

- :func:`udp_received` (``udp_received_mbps SRC DST OFFERED``): the UDP payload rate
  (Mbit/s) that arrives when iperf offers ``OFFERED`` Mbit/s of payload: all of it below
  the path's UDP ceiling, the ceiling above it (the rest is dropped at the full queue).
- :func:`window_rate` (``window_rate_mbps SRC DST WINDOW``): the most a TCP window of
  ``WINDOW`` bytes carries over the path: one window per round trip, at most the goodput
  ceiling.
- :func:`connection_window` (``connection_window_bytes FLOWS FLOW``): the window one
  connection of a flow needs to keep its max-min share moving: that share x the flow's RTT
  (the path's BDP over the connections when all share one link).

Arguments come as text from a question id (``"window_rate_mbps h1 h9 25000"``): numbers
are read here and refused with one line when they are not positive numbers.
"""

from __future__ import annotations

import math
from typing import Any, List, Sequence, Union

from labtools.errors import InputError
from labtools.judge.solvers import (
    Mistake,
    Solution,
    _describe,
    _flow_index,
    _path_hint,
    _rated,
    _wrong_rates,
)
from labtools.model import expect
from labtools.model.fairness import Flow, max_min_shares, parse_flows
from labtools.model.topology import Topology

#: iperf 2 reads ``M`` as 2^20 bit/s: what ``-b 25M`` really offers, per Mbit/s asked
BINARY_MEGA = 2 ** 20 / 1e6


def _positive(name: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise InputError(f"{name} must be a number > 0, got {value!r}")
    return number


def udp_received(topo: Topology, src: str, dst: str, offered_mbps: Any) -> Solution:
    """Payload Mbit/s that arrives when ``offered_mbps`` of UDP payload is sent."""
    offered = _positive("the offered rate", offered_mbps)
    info, rated, rate = _rated(topo, src, dst)
    ceiling = expect.udp_goodput_mbps(rate)
    frames = "the link counts whole frames: each 1470-byte datagram travels in a 1512-byte frame"
    mistakes = [
        Mistake("no_overhead", min(offered, rate),
                f"{frames}, so a full link delivers rate × 1470/1512 of payload"),
        Mistake("tcp_overhead", min(offered, expect.tcp_goodput_ceiling_mbps(rate)),
                "that is TCP's payload per frame (1448 of 1514 bytes); iperf's UDP datagram "
                "carries 1470 bytes in a 1512-byte frame"),
        Mistake("binary", min(offered * BINARY_MEGA, ceiling),
                "the kit gives iperf its rate in bits per second: the offered rate is "
                "offered × 10^6 bit/s, not × 2^20"),
        Mistake("all_arrives", offered,
                f"UDP does not slow down, but a link carries no more than its rate: above "
                f"the ceiling the queue fills and the rest is dropped; {frames}"),
    ]
    rule = "the slowest link on the path sets what arrives"
    mistakes += [Mistake(code, min(offered, expect.udp_goodput_mbps(value)), text)
                 for code, value, text in _wrong_rates(topo, info, rated, rule)]
    return Solution(min(offered, ceiling), "Mbit/s", mistakes, _path_hint(
        info, "below the path's UDP ceiling (bottleneck × 1470/1512) everything arrives; "
              "above it, the ceiling"))


def window_rate(topo: Topology, src: str, dst: str, window_bytes: Any) -> Solution:
    """The most a window of ``window_bytes`` carries over the path (Mbit/s of payload)."""
    window = _positive("the window", window_bytes)
    info, _rated_links, rate = _rated(topo, src, dst)
    rtt = expect.rtt_ms(topo, src, dst)
    if rtt <= 0:
        raise InputError(f"the path {src} → {dst} has no delay: a window does not limit it")
    ceiling = expect.tcp_goodput_ceiling_mbps(rate)

    def capped(mbps: float) -> float:
        return min(mbps, ceiling)

    limit = expect.window_rate_mbps(window, rtt)
    one_way = sum(link.delay_ms for link in info.links)
    mistakes = [
        Mistake("one_way", capped(expect.window_rate_mbps(window, one_way)) if one_way
                else math.inf,
                "one window per round trip: the data goes out and the acknowledgement comes "
                "back before the next window, so divide by the RTT, not the one-way delay"),
        Mistake("bytes", capped(window / (rtt / 1e3) / 1e6),
                "the window is in bytes: × 8 for bits"),
        Mistake("milliseconds", capped(window * 8 / rtt / 1e6),
                "the RTT is in milliseconds: divide by RTT / 1000 for seconds"),
        Mistake("kbit", capped(limit * 1000), "the answer is in Mbit/s (10^6 bit/s)"),
        Mistake("kibibytes", capped(expect.window_rate_mbps(window * 1024, rtt)),
                "the window is already in bytes"),
        Mistake("no_cap", limit, "a window cannot carry more than the path: at most its "
                                 "goodput ceiling"),
    ]
    return Solution(capped(limit), "Mbit/s", mistakes, _path_hint(
        info, f"one window per round trip (RTT {rtt:g} ms): rate = window × 8 / RTT, and "
              "never more than the goodput ceiling"))


def connection_window(topo: Topology, flows: Union[str, Sequence[Flow]],
                      flow: Union[int, str]) -> Solution:
    """The window (bytes) one connection of ``flow`` needs to keep its max-min share of
    the link rate moving: per-connection share × the flow's RTT."""
    spec: List[Flow] = parse_flows(flows) if isinstance(flows, str) else list(flows)
    index = _flow_index(spec, flow)
    shares = max_min_shares(topo, spec)
    mine, me = shares[index], spec[index]
    if mine.per_connection_mbps is None or mine.share_mbps is None:
        raise InputError(f"flow {me.src}:{me.dst} crosses no rate-limited link: no window to "
                         "compute")
    rtt = expect.rtt_ms(topo, me.src, me.dst)
    one_way = rtt / 2
    per_connection = expect.bdp_bytes(mine.per_connection_mbps, rtt)
    rate = expect.bottleneck(topo, me.src, me.dst)[0] or mine.share_mbps
    connections = sum(f.connections for f in spec)
    pairs = len(spec)
    mistakes = [
        Mistake("whole_bdp", expect.bdp_bytes(rate, rtt),
                "that is the whole path's BDP: the connections share the link, each needs "
                "only its share of it"),
        Mistake("bits", per_connection * 8, "a window is in bytes: divide the bits by 8"),
        Mistake("one_way", expect.bdp_bytes(mine.per_connection_mbps, one_way),
                "the window must cover a full round trip (data out, acknowledgement back)"),
        Mistake("goodput", per_connection * expect.TCP_PAYLOAD_SHARE,
                "use the share of the link rate, as the BDP uses the link rate"),
    ]
    if me.connections > 1 or connections != pairs:
        mistakes.append(Mistake(
            "per_pair", expect.bdp_bytes(mine.share_mbps, rtt) if me.connections > 1
            else expect.bdp_bytes(rate / pairs, rtt),
            f"a window belongs to one connection: count the {connections} connections on "
            f"{mine.limited_by}, not the {pairs} host pairs"))
    return Solution(per_connection, "bytes", mistakes,
                    f"{me.src}-{me.dst} crosses {_describe(topo.link(mine.limited_by or ''))} "
                    "with other connections; one connection's window = its max-min share of "
                    "the link rate × the RTT, in bytes")
