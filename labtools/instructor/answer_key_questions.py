"""The written questions of labs 00-03, answered for one student's network (labs 04-06:
:mod:`labtools.instructor.answer_key_sharing`).

One function per question (``topology -> QuestionKey``); the registry that names them by
the id the notebooks show (``02-Q3``) is :data:`labtools.instructor.answer_keys.ANSWER_KEYS`.
Each key holds the values the question gives (``given``: rates, delays, queue limits of the
student's links, from :data:`labtools.judge.question_givens.QUESTION_GIVENS`), the numbers
a full answer computes from them (``values``), the answer in words with those numbers, and
every yes/no conclusion of the rubric with its condition, as it holds for this network
(the key's form: :mod:`labtools.instructor.answer_key_form`). Units are in the names; pure
Python.

The keys are the instructor's: where expected values are hidden (a student's lab, a
course: :attr:`labtools.settings.Settings.answers_hidden`) no :class:`QuestionKey` is made;
each refuses with :data:`ANSWER_KEY_REFUSAL`, as :func:`labtools.judge.exercises.solve`
does.
"""

from __future__ import annotations

import math
from typing import Tuple

from labtools.frame_sizes import IPERF_UDP_FRAME_BYTES, IPERF_UDP_PAYLOAD_BYTES
from labtools.instructor.answer_key_form import (
    ANSWER_KEY_REFUSAL,
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
from labtools.judge.capacity import is_saturated
from labtools.judge.question_givens import LAB1_RATE_MBPS, givens
from labtools.model import expect
from labtools.model.expect import TCP_FRAME_BYTES, ping_frame_bytes
from labtools.model.queues import CUBIC_BETA
from labtools.model.topology import Link, Topology

__all__ = ["ANSWER_KEY_REFUSAL", "Conclusion", "QuestionKey", "LAB1_RATE_MBPS",
           "LAB1_SEARCH_MBPS", "LAB1_RESOLUTION_MBPS"]

#: lab 1's capacity search's range (the notebook's ``START_MBPS`` and ``MAX_MBPS``; its
#: offered rate ``RATE_MBPS`` is a given: :data:`LAB1_RATE_MBPS`)
LAB1_SEARCH_MBPS = (1, 200)
#: lab 1 Q3: the search's final range the question asks for (Mbit/s)
LAB1_RESOLUTION_MBPS = 2


def _frames(rate_mbps: float, ms: float) -> float:
    """Full 1514-byte frames a ``rate_mbps`` link sends in ``ms``."""
    return expect.bdp_bytes(rate_mbps, ms) / TCP_FRAME_BYTES


# --- lab 00 ----------------------------------------------------------------------------


def q00_1(topo: Topology) -> QuestionKey:
    """Why the first reply is slower: address resolution."""
    return worded_key("00-Q1", topo,
                      "ARP: before the first packet can leave, each host and router "
                      "learns the next hop's Ethernet address (a request and a reply per "
                      "segment, out and back); later packets find it cached.")


def q00_2(topo: Topology) -> QuestionKey:
    """Why the minimum RTT."""
    return worded_key("00-Q2", topo,
                      "Every sample holds at least the propagation RTT and waiting only "
                      "adds to it, so the minimum is the closest to it; a large gap between "
                      "average and minimum means samples waited (queues, ARP, a busy machine).")


def q00_3(topo: Topology) -> QuestionKey:
    """What adds to the propagation delay: the echo's transmission time on L1 and L2."""
    frame = ping_frame_bytes()
    l1, l2 = link_mbps(topo.link("L1")), link_mbps(topo.link("L2"))
    tx1, tx2 = expect.transmission_ms(frame, l1), expect.transmission_ms(frame, l2)
    total = 2 * (tx1 + tx2)
    return QuestionKey(
        "00-Q3", givens("00-Q3", topo),
        {"echo_frame_bytes": frame, "L1_transmission_ms": tx1, "L2_transmission_ms": tx2,
         "transmission_total_ms": total},
        f"(1) Transmission: a {frame}-byte echo takes {frame} × 8 / {l1:g} Mbit/s ≈ "
        f"{tx1:.3f} ms on L1 and {frame} × 8 / {l2:g} Mbit/s ≈ {tx2:.3f} ms on L2, each "
        f"direction: about {total:.2f} ms in all. (2) Processing, timers and scheduling of the "
        "emulating machine (the calibration at lab start measures it), a fraction of a ms "
        "to a few ms.")


# --- lab 01 ----------------------------------------------------------------------------


def _l2_also(l2: Link, frames_mbps: float, offered: str) -> Tuple[Conclusion, str]:
    """Whether ``frames_mbps`` of UDP frames (what ``offered`` names) also overflow L2, on
    the way to L3, and the sentence that says so."""
    name = "dropped at L2 too"
    found = compared(name, f"{offered}'s frame rate is above L2's rate", frames_mbps,
                     link_mbps(l2), policy.RATE_RESOLUTION_REL, above=True)
    frames, rate = apart(frames_mbps, link_mbps(l2), least=1)
    if found.holds:
        text = (f" L2 is a first bottleneck too: {frames} Mbit/s of frames against its "
                f"{rate} Mbit/s, so its queue ({l2.queue_pkts} packets) drops about "
                f"{100 * (1 - link_mbps(l2) / frames_mbps):.1f} % before L3 sees the rest.")
    else:
        text = (f" L2 ({rate} Mbit/s) carries the {frames} Mbit/s of frames without loss.")
    return found, text


def q01_1(topo: Topology) -> QuestionKey:
    """Where h1 -> h9's datagrams were dropped at the offered rate."""
    l3 = topo.link("L3")
    frames = LAB1_RATE_MBPS * IPERF_UDP_FRAME_BYTES / IPERF_UDP_PAYLOAD_BYTES
    lost = max(0.0, 1 - link_mbps(l3) / frames)
    at_l3 = compared("dropped at L3", "the offered frame rate (offered × 1512/1470) is above "
                     "L3's rate", frames, link_mbps(l3), policy.RATE_RESOLUTION_REL, above=True)
    at_l2, l2_text = _l2_also(topo.link("L2"), frames, "the offered")
    return QuestionKey(
        "01-Q1", givens("01-Q1", topo),
        {"offered_frames_mbps": frames, "loss_pct": 100 * lost},
        f"At the entrance of L3 (r3 → r4): {LAB1_RATE_MBPS} Mbit/s of payload is "
        f"{LAB1_RATE_MBPS} × {IPERF_UDP_FRAME_BYTES}/{IPERF_UDP_PAYLOAD_BYTES} ≈ "
        f"{mbps_text(frames)} "
        f"of frames, L3 sends {link_mbps(l3):g} Mbit/s, so its queue ({l3.queue_pkts} packets) "
        f"fills within milliseconds: the path loses about 1 − {link_mbps(l3):g}/{frames:.1f} ≈ "
        f"{100 * lost:.0f} % of the datagrams.{l2_text} UDP has no acknowledgements and no "
        "congestion control: iperf keeps its rate.",
        (at_l3, at_l2), at_l3.holds)


def q01_2(topo: Topology) -> QuestionKey:
    """Why jitter grows near capacity."""
    return worded_key("01-Q2", topo,
                      "Near capacity the bottleneck's queue fills and drains unevenly: "
                      "each datagram waits a different time in it, so the spacing of arrivals "
                      "varies.")


def ramp_and_bisect(capacity_mbps: float) -> Tuple[int, float, float, int]:
    """On an ideal path of UDP capacity ``capacity_mbps``: the ramp's steps (doubling
    from lab 1's start until a step is saturated), the last clean rate, the knee, and the
    bisections that narrow that range to :data:`LAB1_RESOLUTION_MBPS`."""
    start, top = LAB1_SEARCH_MBPS
    rate, clean, steps = float(start), float(start), 0
    while rate <= top:
        steps += 1
        received = min(rate, capacity_mbps)
        if is_saturated(rate, received, 100 * (1 - received / rate)):
            break
        clean, rate = rate, rate * 2
    width, halvings = rate - clean, 0
    while width > LAB1_RESOLUTION_MBPS:
        width, halvings = width / 2, halvings + 1
    return steps, clean, rate, halvings


def _search_words(capacity_mbps: float) -> str:
    """How lab 1's search reaches a path of UDP capacity ``capacity_mbps``, in words."""
    ramp, clean, knee, halvings = ramp_and_bisect(capacity_mbps)
    return (f"doubling from 1 Mbit/s passes the capacity in {ramp} steps (the knee at "
            f"{knee:g}, the last clean rate {clean:g}); each bisection halves the "
            f"{knee - clean:g} Mbit/s range: {halvings} more steps to reach about "
            f"{LAB1_RESOLUTION_MBPS} Mbit/s, {ramp + halvings} runs in all")


def q01_3(topo: Topology) -> QuestionKey:
    """Ramp and bisection against a sweep, for the path h1 -> h4."""
    rate = min(link_mbps(topo.link("L1")), link_mbps(topo.link("L2")))
    capacity = expect.udp_goodput_mbps(rate)
    ramp, clean, knee, halvings = ramp_and_bisect(capacity)
    sweep = math.floor(capacity) + 1
    clean_step = compared("the ramp's last clean step is below the capacity",
                          f"its rate ({clean:g} Mbit/s) is below the path's UDP capacity",
                          clean, capacity, policy.RATE_RESOLUTION_REL)
    other = ""
    if clean_step.borderline:
        other = (f" That step is within {100 * abs(clean_step.margin_rel or 0):.1f} % of the "
                 f"capacity, so a real run may already lose there; then "
                 f"{_search_words(clean * (1 - policy.RATE_RESOLUTION_REL))}.")
    return QuestionKey(
        "01-Q3", givens("01-Q3", topo),
        {"udp_capacity_h1_h4_mbps": capacity, "ramp_steps": ramp, "last_clean_mbps": clean,
         "knee_mbps": knee, "bisection_steps": halvings, "search_steps": ramp + halvings,
         "sweep_steps": sweep},
        f"On an ideal path of UDP capacity {mbps_text(capacity)}, "
        f"{_search_words(capacity)}, against about {sweep} for a 1-Mbit/s sweep, each "
        f"loading the path for seconds.{other}",
        (clean_step,))


def q01_4(topo: Topology) -> QuestionKey:
    """What explains the capacity estimate's shortfall."""
    rate = min(link_mbps(topo.link("L1")), link_mbps(topo.link("L2")))
    capacity = expect.udp_goodput_mbps(rate)
    headers = 100 * (IPERF_UDP_FRAME_BYTES - IPERF_UDP_PAYLOAD_BYTES) / IPERF_UDP_FRAME_BYTES
    return QuestionKey(
        "01-Q4", givens("01-Q4", topo),
        {"ideal_estimate_mbps": capacity, "ideal_shortfall_pct": 100 * (1 - capacity / rate),
         "headers_pct": headers},
        f"Headers: {IPERF_UDP_FRAME_BYTES - IPERF_UDP_PAYLOAD_BYTES} of every "
        f"{IPERF_UDP_FRAME_BYTES} bytes ({headers:.1f} %). On an ideal path that is all: the "
        f"knee's own step receives the capacity, so the kit's search estimates "
        f"{mbps_text(capacity)} of payload for {rate:g} Mbit/s whatever the bracket. The rest "
        "comes from the machine: steps that lose datagrams or fall short below the capacity "
        "(bursts into the queue, a CPU that cannot keep up) set the knee too early; then the "
        "estimate is at most what a step up to that knee received, and the refine steps the "
        "student's loop runs only narrow the range below it.",
        (Conclusion("an ideal path's estimate is the UDP capacity", True,
                    "the knee's step receives the capacity (received = min(offered, "
                    "capacity)), so the bracket's width costs nothing"),),
        True)


# --- lab 02 ----------------------------------------------------------------------------


def q02_1(topo: Topology) -> QuestionKey:
    """iperf3 and simpleperf: the receiver's count."""
    return worded_key("02-Q1", topo,
                      "Their medians agree within a few percent near the goodput ceiling, "
                      "within the spread of either tool over its runs (simpleperf's whole-run "
                      "total includes slow start); both report the bytes the server received, "
                      "data that crossed the link, unlike the sender's count.")


def q02_2(topo: Topology) -> QuestionKey:
    """How a sender "sends" faster than its link."""
    return worded_key("02-Q2", topo,
                      "The sender counts writes into its socket buffer, accepted at "
                      "memory speed until the buffer is full; that data has not crossed the "
                      "link yet. Where the student's intervals show no overshoot, the same "
                      "explanation with a reason it did not show (slow start still growing in "
                      "the first interval, a buffer that starts small) earns the point.")


def l2_idles_after_cut(link: Link) -> Tuple[float, float, float, bool]:
    """L2 after CUBIC's cut: (window at the top, window after the cut, BDP), all in
    1514-byte packets, and whether the link idles (the window after the cut is below its
    BDP)."""
    back = _frames(link_mbps(link), link.delay_ms)
    top = float(link.queue_pkts or 0) + back
    after = CUBIC_BETA * top
    bdp = _frames(link_mbps(link), 2 * link.delay_ms)
    return top, after, bdp, after < bdp


def q02_3(topo: Topology) -> QuestionKey:
    """Why TCP stays below L2's rate, and whether CUBIC's cut idles L2."""
    l2 = topo.link("L2")
    rate = link_mbps(l2)
    top, after, bdp, idles = l2_idles_after_cut(l2)
    ceiling = expect.tcp_goodput_ceiling_mbps(rate)
    cut = compared("L2 idles after CUBIC's cut", "0.7 × (queue limit + L2's packets on the "
                   "way back) < L2's BDP in packets", after, bdp,
                   policy.rtt_resolution_rel(2 * l2.delay_ms))
    shown_after, shown_bdp = apart(after, bdp)
    verdict = (f"After the cut about {shown_after} packets, below L2's BDP ({rate:g} Mbit/s × "
               f"{2 * l2.delay_ms:g} ms ≈ {shown_bdp} packets): the queue runs dry and L2 "
               "idles until the window grows back, so the rate falls a little below the "
               "header ceiling." if idles else
               f"After the cut about {shown_after} packets, still at least L2's BDP "
               f"({rate:g} Mbit/s × {2 * l2.delay_ms:g} ms ≈ {shown_bdp} packets): the queue "
               "shrinks but never runs dry, L2 does not idle, and the rate sits near the "
               "header ceiling.")
    return QuestionKey(
        "02-Q3", givens("02-Q3", topo),
        {"goodput_ceiling_mbps": ceiling, "headers_pct": 100 * (1 - ceiling / rate),
         "window_top_pkts": top, "window_after_cut_pkts": after, "bdp_pkts": bdp},
        f"(a) Headers: 1448 of every 1514 bytes, so a full L2 delivers {rate:g} × 1448/1514 "
        f"≈ {mbps_text(ceiling)} of payload ({100 * (1 - ceiling / rate):.1f} % below), set "
        "against the student's measured gap. (b) The rest: the machine (the calibration's late "
        "timers and forwarding limit, a verdict's reason), or the runs' spread where it is "
        "within their range; and the window cut. The window at "
        f"the top is L2's full queue ({l2.queue_pkts} packets, those serving the "
        f"{l2.delay_ms:g} ms delay included) plus the packets on the way back "
        f"({top - (l2.queue_pkts or 0):.0f}): about {top:.0f}. {verdict} The drops in `tc` "
        "show that the cuts happened.",
        (cut,), idles)


# --- lab 03 ----------------------------------------------------------------------------


def q03_1(topo: Topology) -> QuestionKey:
    """Same throughput, not the same RTT."""
    l1, l2, l3 = (topo.link(n) for n in ("L1", "L2", "L3"))
    rtt_long = 2 * (l1.delay_ms + l2.delay_ms + l3.delay_ms)
    rtt_short = 2 * (l2.delay_ms + l3.delay_ms)
    slowest = min((link_mbps(link), link.label) for link in (l1, l2, l3))
    same = slowest == min((link_mbps(link), link.label) for link in (l2, l3))
    return QuestionKey(
        "03-Q1", givens("03-Q1", topo),
        {"rtt_h1_h9_ms": rtt_long, "rtt_h7_h9_ms": rtt_short, "bottleneck_mbps": slowest[0]},
        f"Delays add up: L1 adds 2 × {l1.delay_ms:g} ms to h1-h9's RTT ({ms_text(rtt_long)} "
        f"against {ms_text(rtt_short)}). The rate is set by the slowest link alone, "
        f"{slowest[1]} at {slowest[0]:g} Mbit/s, which both paths cross; the faster links "
        "are not full.",
        (Conclusion("both paths have the same bottleneck", same,
                    "the slowest link of h1-h9 is also on h7-h9"),), same)


def q03_2(topo: Topology) -> QuestionKey:
    """The window asked for, the window granted."""
    return worded_key("03-Q2", topo,
                      "The measured rate follows window / RTT of the window the kernel "
                      "granted (snd_wnd), at or a little below it; where the asked and the "
                      "granted window's rates are closer together than the runs' range (1.5 % "
                      "apart in the lab VM), \"my runs cannot tell them apart\" is the right "
                      "conclusion. -w only sets the socket "
                      "buffers: Linux doubles them, keeps a share for bookkeeping and advertises "
                      "the rest, depending on the kernel version. Below window / RTT: a longer "
                      "RTT (ss's rtt:), sndbuf_limited, or slow start.")


def q03_3(topo: Topology) -> QuestionKey:
    """Three causes of a slow h7 -> h9."""
    l2, l3 = topo.link("L2"), topo.link("L3")
    rtt = 2 * (l2.delay_ms + l3.delay_ms)
    bdp = expect.bdp_bytes(min(link_mbps(l2), link_mbps(l3)), rtt)
    return QuestionKey(
        "03-Q3", givens("03-Q3", topo), {"rtt_h7_h9_ms": rtt, "bdp_h7_h9_bytes": bdp},
        f"(1) A busy CPU: check top or labtools doctor. (2) A window below h7-h9's BDP "
        f"({bytes_text(bdp)}: {min(link_mbps(l2), link_mbps(l3)):g} Mbit/s × {rtt:g} ms): "
        "compare the rate with window / RTT, read the window with ss -tin. (3) Competing "
        "traffic on L2 or L3: pgrep iperf, run tests one after another. Or another cause with "
        "a check.")
