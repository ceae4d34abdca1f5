"""The written questions of labs 04-06, answered for one student's network: flows that
share links, parallel connections, the pitfalls lab's dumbbell (and, for its Q6, lab 1's
network). See :mod:`labtools.instructor.answer_key_form` for the keys' form.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from labtools.frame_sizes import IPERF_UDP_FRAME_BYTES, IPERF_UDP_PAYLOAD_BYTES
from labtools.instructor.answer_key_form import (
    Conclusion,
    QuestionKey,
    apart,
    bytes_text,
    compared,
    link_mbps,
    mbps_text,
    ms_text,
    worded_key,
)
from labtools.judge import policy
from labtools.judge.question_givens import LAB1_RATE_MBPS, givens
from labtools.model import expect
from labtools.model.expect import TCP_FRAME_BYTES, TCP_MSS_BYTES, path
from labtools.model.queues import loaded_rtt
from labtools.model.topology import Link, Topology

#: lab 6: the windows of the sweep and the large window of the sharing test (bytes)
LAB6_WINDOWS_BYTES = (10_000, 25_000, 50_000, 100_000, 200_000)
LAB6_LARGE_WINDOW_BYTES = 400_000
#: iperf 2 reads ``-b 25M`` as 25 x 2**20 bit/s
BINARY_MEGA = 2 ** 20 / 1e6


# --- lab 04 ----------------------------------------------------------------------------


def q04_1(topo: Topology) -> QuestionKey:
    """Scenario C: why h7 -> h9's share is not set by L3."""
    l2, l3 = link_mbps(topo.link("L2")), link_mbps(topo.link("L3"))
    found = compared("h7-h9's share is set by L2", "L2's rate / 2 < L3's rate", l2 / 2, l3,
                     policy.RATE_RESOLUTION_REL)
    half, third = apart(l2 / 2, l3)
    reason = (f"Half of L2 ({half} Mbit/s) is below L3's {third} Mbit/s, so L2 is the "
              "tighter constraint and L3 is not full." if found.holds else
              f"Here L3 ({third} Mbit/s) is below half of L2 ({half}), so L3 does limit "
              "h7-h9 and h1-h4 gets the rest of L2.")
    return QuestionKey(
        "04-Q1", givens("04-Q1", topo),
        {"half_of_L2_mbps": l2 / 2}, reason, (found,), found.holds)


def _rated(topo: Topology, src: str, dst: str) -> Dict[Tuple[str, str], float]:
    """``(link label, side the data leaves from) -> rate`` of the shaped links on the way."""
    info = path(topo, src, dst)
    return {(link.label, info.nodes[i]): float(link.bw_mbps)
            for i, link in enumerate(info.links) if link.bw_mbps is not None}


def q04_2(topo: Topology) -> QuestionKey:
    """Scenario D: two flows through r3 that do not slow each other down."""
    apart = not set(_rated(topo, "h1", "h4")) & set(_rated(topo, "h8", "h9"))
    return QuestionKey(
        "04-Q2", givens("04-Q2", topo),
        {}, "The limits are on the links, not in the router: h1-h4 and h8-h9 share no "
        "rate-limited link in the direction of their data, so each runs at its own "
        f"bottleneck (L2 at {link_mbps(topo.link('L2')):g}, L3 at {link_mbps(topo.link('L3')):g} "
        "Mbit/s); only the CPU could matter when it cannot forward both.",
        (Conclusion("the two flows share no rate-limited link", apart,
                    "no shaped link is crossed by both in the data's direction"),), apart)


def q04_3(topo: Topology) -> QuestionKey:
    """Why shares are unequal over a few seconds."""
    return worded_key("04-Q3", topo,
                      "Which flow is dropped at the full queue is chance; RTT, window "
                      "and start order differ; the emulating CPU adds noise. The repeated runs' "
                      "range shows the chance part; the median is what to report.")


def bottleneck_margin(topo: Topology, load: str) -> Optional[float]:
    """How much faster the load's second-slowest shaped link is than its slowest
    (``second / slowest - 1``): near 0, a run cannot tell which queue the load fills. None
    for a load that crosses fewer than two shaped links."""
    rates = sorted(_rated(topo, *load.split(":")).values())
    return rates[1] / rates[0] - 1 if len(rates) > 1 else None


def fills_queue_crossed(topo: Topology, ping: str, load: str) -> bool:
    """True when the load fills the queue of its own bottleneck link on the side its
    data leaves, and the pinged pair crosses that queue (either way of its round trip)."""
    rated = _rated(topo, *load.split(":"))
    if not rated:
        return False
    slowest = min(rated, key=lambda key: rated[key])  # the first of ties, as on the way
    src, dst = ping.split(":")
    return slowest in set(_rated(topo, src, dst)) | set(_rated(topo, dst, src))


def q04_4(topo: Topology) -> QuestionKey:
    """Which loads raise which pair's RTT."""
    l2, l3 = link_mbps(topo.link("L2")), link_mbps(topo.link("L3"))
    cases = (("h1-h4 waits under h2-h5 (A)", "h1:h4", "h2:h5"),
             ("h1-h4 waits under h7-h9 (C)", "h1:h4", "h7:h9"),
             ("h7-h9 waits under h1-h4 (C)", "h7:h9", "h1:h4"))
    found = tuple(Conclusion(name, fills_queue_crossed(topo, ping, load),
                             "the load's bottleneck queue (on the side its data leaves) is "
                             "one the ping crosses", bottleneck_margin(topo, load),
                             policy.RATE_RESOLUTION_REL) for name, ping, load in cases)
    return QuestionKey(
        "04-Q4", givens("04-Q4", topo), {},
        "A transfer fills the queue of its own bottleneck; only pings that cross it in the "
        "data's direction wait. h2-h5 is held by L2 and fills L2's queue (r2 → r3), which "
        f"h1-h4's echoes cross. h7-h9 is held by L3 ({l3:g} Mbit/s, below L2's {l2:g}): its "
        f"queue builds in front of L3 on r3, which h1-h4 never crosses, and L2 carries only "
        f"{l3:g} of its {l2:g} Mbit/s, without a queue. h1-h4 fills L2's queue, which "
        "h7-h9's echoes cross. The tc counters show drops on r2 into L2 and r3 into L3.",
        found)


# --- lab 05 ----------------------------------------------------------------------------


def q05_1(topo: Topology) -> QuestionKey:
    """Two connections' advantage, and five."""
    l2 = link_mbps(topo.link("L2"))
    return QuestionKey(
        "05-Q1", givens("05-Q1", topo),
        {"share_h1_h4_mbps": l2 / 2, "share_single_mbps": l2 / 4,
         "five_connections_per_connection_mbps": l2 / 7, "five_connections_h1_h4_mbps": 5 * l2 / 7,
         "five_connections_advantage": 5.0},
        f"Close to 2: the fair shares are {l2 / 2:.2f} against {l2 / 4:.2f} Mbit/s; single "
        "runs spread widely, so report the median over runs with its range. With 5 "
        f"connections, 7 share L2, {l2:g}/7 ≈ {l2 / 7:.1f} Mbit/s each: h1-h4 gets 5/7 of "
        f"the link, about {mbps_text(5 * l2 / 7)}, five times each of the others.")


def q05_2(topo: Topology) -> QuestionKey:
    """Is it fair to open more connections?"""
    return worded_key("05-Q2", topo,
                      "Per connection it is fair (the network cannot tell which "
                      "connections belong together); per user it is not: a user with many "
                      "connections takes from those with one (remedies: per-host or per-user "
                      "fair queueing, limits on parallel connections).")


def q05_3(topo: Topology) -> QuestionKey:
    """A quarter of the BDP per connection."""
    l1, l2 = topo.link("L1"), topo.link("L2")
    rtt = 2 * (l1.delay_ms + l2.delay_ms)
    bdp = expect.bdp_bytes(link_mbps(l2), rtt)
    return QuestionKey(
        "05-Q3", givens("05-Q3", topo),
        {"rtt_h1_h4_ms": rtt, "bdp_h1_h4_bytes": bdp, "window_per_connection_bytes": bdp / 4},
        f"Together the four connections must keep one BDP in flight ({bytes_text(bdp)} for "
        f"{link_mbps(l2):g} Mbit/s and {rtt:g} ms), a quarter ({bytes_text(bdp / 4)}) each. "
        "Smaller windows cap each at window / RTT: the total stays below the link rate and L2 "
        "idles.")


# --- lab 06 (the dumbbell; Q6 asks about lab 1's network) --------------------------------


def _b(topo: Topology) -> Link:
    return topo.link("B")


def q06_1(topo: Topology) -> QuestionKey:
    """Which windows of the sweep held the rate below the ceiling."""
    b = _b(topo)
    rtt = 2 * b.delay_ms
    bdp = expect.bdp_bytes(link_mbps(b), rtt)
    ceiling = expect.tcp_goodput_ceiling_mbps(link_mbps(b))
    threshold = bdp * TCP_MSS_BYTES / TCP_FRAME_BYTES
    found = tuple(compared(f"a window of {w} bytes holds the rate below the ceiling",
                           "window < BDP × 1448/1514 (window / RTT below the goodput "
                           "ceiling)", w, threshold, policy.window_resolution_rel(rtt))
                  for w in LAB6_WINDOWS_BYTES)
    held = [w for w, c in zip(LAB6_WINDOWS_BYTES, found) if c.holds]
    rates = {f"window_{w}_mbps": expect.window_rate_mbps(w, rtt) for w in LAB6_WINDOWS_BYTES}
    listed = ", ".join(str(w) for w in held) or "none of them"
    return QuestionKey(
        "06-Q1", givens("06-Q1", topo),
        {"rtt_ms": rtt, "bdp_bytes": bdp, "window_at_ceiling_bytes": threshold,
         "goodput_ceiling_mbps": ceiling, **rates},
        f"A window holds the rate below the {mbps_text(ceiling)} ceiling while window / RTT is "
        f"below it: below the BDP ({bytes_text(bdp)}: {link_mbps(b):g} Mbit/s × {rtt:g} ms) times "
        f"1448/1514, {bytes_text(threshold)}. Those were {listed} bytes, each at about window / "
        "RTT of the window the kernel granted (snd_wnd), at or a little below it; the larger "
        "ones reach the ceiling. -w sets the socket buffers; the kernel doubles them, keeps "
        "a share and advertises the rest (kernel-dependent).",
        found)


def q06_2(topo: Topology) -> QuestionKey:
    """Large windows against a quarter of the BDP."""
    b = _b(topo)
    bdp = expect.bdp_bytes(link_mbps(b), 2 * b.delay_ms)
    large = compared("the large window is above the whole BDP",
                     f"{LAB6_LARGE_WINDOW_BYTES} bytes > B's rate × RTT",
                     LAB6_LARGE_WINDOW_BYTES, bdp, policy.window_resolution_rel(2 * b.delay_ms),
                     above=True)
    return QuestionKey(
        "06-Q2", givens("06-Q2", topo),
        {"bdp_bytes": bdp, "share_window_bytes": bdp / 4,
         "large_window_over_bdp": LAB6_LARGE_WINDOW_BYTES / bdp},
        f"With windows of a quarter of the BDP ({bytes_text(bdp / 4)}) the flows just fill B and "
        f"the queue stays short: Jain's index near 1. Windows of {LAB6_LARGE_WINDOW_BYTES} "
        f"bytes ({LAB6_LARGE_WINDOW_BYTES / bdp:.1f} × the BDP) fill B's {b.queue_pkts}-packet "
        "queue until it overflows; drops hit flows by timing, and the one that loses backs "
        "off while the others grow. Only ranges that do not overlap support the conclusion.",
        (large,), large.holds)


def q06_3(topo: Topology) -> QuestionKey:
    """--bidir against two separate pairs."""
    rate = link_mbps(_b(topo))
    return QuestionKey(
        "06-Q3", givens("06-Q3", topo),
        {"goodput_ceiling_mbps": expect.tcp_goodput_ceiling_mbps(rate)},
        "Each direction's data shares its queue with the other direction's ACKs, and one "
        "iperf3 process per host does both; the separate pairs have their own processes. "
        f"At {rate:g} Mbit/s the CPU has room, so the difference is usually smaller than the "
        "paper's, but the separate pairs are the cleaner measurement.")


def q06_4(topo: Topology) -> QuestionKey:
    """The loaded latency against the steady-state worst and the model's middle."""
    b = _b(topo)
    drain = expect.queue_drain_ms(b) or 0.0
    worst = max(b.delay_ms, drain) + b.delay_ms
    model = loaded_rtt(topo, "a1", "b1", "a2", "b2")
    drain_longer = compared("the full queue's drain outlasts B's delay",
                            "queue limit × 1514 × 8 / rate > delay: the steady-state worst "
                            "is drain + delay", drain, b.delay_ms,
                            policy.rtt_resolution_rel(2 * b.delay_ms), above=True)
    return QuestionKey(
        "06-Q4", givens("06-Q4", topo),
        {"idle_rtt_ms": 2 * b.delay_ms, "drain_ms": drain, "max_rtt_ms": worst,
         "delay_plus_drain_ms": drain + 2 * b.delay_ms, "model_middle_ms": model.typical_ms},
        f"From the {ms_text(2 * b.delay_ms)} propagation towards the {ms_text(worst)} a "
        f"saturated B gives in steady state; the median near the model's middle (about "
        f"{ms_text(model.typical_ms)}). That worst is max({b.delay_ms:g}, {drain:.1f}) + "
        f"{b.delay_ms:g} ms, not delay + drain + delay ({ms_text(drain + 2 * b.delay_ms)}): "
        "netem's queue holds the packets serving their delay. It is a steady-state value, "
        "not a bound: a burst of packets that reach an idle B within one delay (at most the "
        "queue limit) serves the delay together and then drains, so the last one's RTT can "
        f"reach delay + drain + delay ({ms_text(drain + 2 * b.delay_ms)}) after all; the pings "
        "under load start after the load's slow start. The average mixes idle and queued "
        "samples; report a tail percentile from a dense train for the worst case, p50 for "
        "the typical.",
        (drain_longer,), None)


def q06_5(topo: Topology) -> QuestionKey:
    """The CPU is part of the network."""
    return worded_key("06-Q5", topo,
                      "The CPU of the one emulating machine, taken by the busy loops. "
                      "On a shaped path: a minimum RTT above propagation + calibration, rates "
                      "below the ceiling alone on a path, samples under a steady load above the "
                      "steady state's worst RTT.")


def q06_6(topo: Topology) -> QuestionKey:
    """iperf 2's -b 25M on lab 1's network (the portfolio topology)."""
    l3 = link_mbps(topo.link("L3"))
    sent = LAB1_RATE_MBPS * BINARY_MEGA
    frames = sent * IPERF_UDP_FRAME_BYTES / IPERF_UDP_PAYLOAD_BYTES
    meant = LAB1_RATE_MBPS * IPERF_UDP_FRAME_BYTES / IPERF_UDP_PAYLOAD_BYTES
    l2 = link_mbps(topo.link("L2"))
    h1_h4 = compared("-b 25M overflows L2 (h1-h4 loses datagrams)",
                     "the binary rate's frames (25 × 2^20 × 1512/1470 bit/s) are above L2's "
                     "rate", frames, l2, policy.RATE_RESOLUTION_REL, above=True)
    return QuestionKey(
        "06-Q6", givens("06-Q6", topo),
        {"binary_ratio": BINARY_MEGA, "sent_payload_mbps": sent, "sent_frames_mbps": frames,
         "loss_binary_pct": 100 * (1 - l3 / frames), "loss_decimal_pct": 100 * (1 - l3 / meant),
         "loss_h1_h4_binary_pct": 100 * max(0.0, 1 - l2 / frames),
         "loss_h1_h4_decimal_pct": 100 * max(0.0, 1 - l2 / meant)},
        f"-b 10M is 10 × 2^20 bit/s, {100 * (BINARY_MEGA - 1):.1f} % more. -b 25M sends "
        f"{mbps_text(sent)} ({frames:.2f} Mbit/s of frames): every offered rate, the predicted "
        f"loss on h1-h9 (1 − {l3:g}/{frames:.1f} ≈ {100 * (1 - l3 / frames):.0f} % instead of "
        f"{100 * (1 - l3 / meant):.0f} %) and the search's ramp and knee would be "
        f"{100 * (BINARY_MEGA - 1):.1f} % off.{_h1_h4_words(l2, frames, meant)}",
        (h1_h4,))


def _h1_h4_words(l2_mbps: float, binary_frames_mbps: float, decimal_frames_mbps: float) -> str:
    """What iperf 2's binary -b 25M does to lab 1's h1-h4 (L2 its bottleneck)."""
    frames, rate = apart(binary_frames_mbps, l2_mbps, least=1)
    if binary_frames_mbps <= l2_mbps:
        return f" h1-h4 stays loss-free: L2 ({rate} Mbit/s) carries its {frames} Mbit/s of frames."
    before = ("it already lost about "
              f"{100 * (1 - l2_mbps / decimal_frames_mbps):.1f} % at 25 × 10^6 bit/s"
              if decimal_frames_mbps > l2_mbps else "it lost nothing at 25 × 10^6 bit/s")
    return (f" h1-h4 overflows L2 too ({frames} Mbit/s of frames against {rate}): it would "
            f"lose about {100 * (1 - l2_mbps / binary_frames_mbps):.1f} % ({before}), so the "
            "conclusion about which paths lose datagrams changes with it.")
