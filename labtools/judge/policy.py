"""How the kit judges a measurement, in one place: warm-up, tolerances, cut-offs, durations.

Everything that decides a verdict or a graded check reads its numbers from here: the
verdicts (:mod:`labtools.judge.verdicts`), the probes (warm-up left out), the test cases,
the widgets and the notebooks' checks. Change a number here and every one of them follows.

RTT
    A sample is an *outlier* when it exceeds ``min + max(OUTLIER_ABS_MS, OUTLIER_REL x
    min)`` of its series. The minimum RTT agrees with the expectation when it is within
    ``max(RTT_TOL_MS, RTT_TOL_REL x expected)`` of it (plus what this machine adds, when
    that was calibrated).
Rates
    A receiver's rate is ``ok`` from ``RATE_OK_LOW`` to ``RATE_MAX`` times its expectation;
    above ``RATE_MAX`` it is more than the path can carry.
Warm-up
    The first ``min(WARMUP_MAX_S, WARMUP_FRACTION x duration)`` seconds of a throughput run
    are left out of its rate (slow start, buffers filling).
Windows
    A transfer with a window (``-w``) smaller than the bandwidth-delay product is judged
    against window / RTT, with the window the kernel granted when the probe read it
    (``ss``), else the one asked for; more than ``WINDOW_GRANT_MAX`` times the asked
    window / RTT is impossible on any Linux.
Percentiles
    A percentile p of a ping series is reported only when at least one reply lies beyond
    it: ``ceil(1 / (1 - p))`` replies (p90 10, p99 100, p99.9 1000), else it is just the
    largest sample. Every percentile reported says how many replies it rests on.
Loss
    The loss-limited rate (Mathis et al.) is Reno's estimate: a TCP rate above it but not
    more than the path carries is ``ok`` with a note (CUBIC may exceed it), never
    ``invalid``.
Fairness
    Jain's index of each connection's rate / its max-min fair share, over the connections
    one link shares out, is ``ok`` from ``JAIN_OK`` up. A flow from ``RATE_OK_LOW`` to
    ``SHARE_HIGH`` times its fair share is ``ok``: TCP flows do not split a link exactly.
UDP above capacity
    Offered more than ``UDP_OVERLOAD`` times what the path carries, a UDP stream must lose
    more than ``UDP_LOSS_ABOVE_CAPACITY_PCT`` percent.
Capacity search
    A step is saturated when it loses more than ``SATURATION_LOSS_PCT`` percent or receives
    less than ``SATURATION_GROWTH`` times the offered rate.
The machine
    A rate below expectation says something about the network only when the load fits in
    what this machine forwards: at most ``CAPACITY_HEADROOM`` times its calibrated
    forwarding rate. Otherwise the verdict is ``inconclusive``.
Graded conclusions
    A yes/no conclusion of an answer key is *borderline* when the student's network sits
    closer to the condition's boundary (relative) than a lab's run can resolve there: rates
    within ``RATE_RESOLUTION_REL`` of each other, RTTs within :func:`rtt_tolerance_ms`,
    windows within ``WINDOW_GRANT_SHORTFALL_REL`` (what the kernel grants less than asked)
    plus the RTT's resolution. Either answer with the student's arithmetic earns the point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from labtools.errors import InputError

# --- verdict names ----------------------------------------------------------------------
OK, SUSPICIOUS, INVALID, INCONCLUSIVE = "ok", "suspicious", "invalid", "inconclusive"
#: verdicts from best to worst (``inconclusive`` says nothing about the network)
VERDICT_ORDER = (OK, INCONCLUSIVE, SUSPICIOUS, INVALID)

# --- RTT ---------------------------------------------------------------------------------
OUTLIER_ABS_MS = 2.0
OUTLIER_REL = 0.10
RTT_TOL_MS = 2.0
RTT_TOL_REL = 0.05
#: the median RTT under a TCP load agrees with the queue model within this fraction
#: (labtools.model.queues; measured in the lab VM: 2.6 % off at 5 Mbit/s)
LOADED_RTT_TOL_REL = 0.10
#: the queue model holds when the load drives its link at the link's rate: a load that
#: receives less than this share of what TCP reaches there drained the queue more slowly
#: (lab VM: loads at 95 % of the ceiling matched the model; one at 88 % and ones at 52-76 %
#: had medians 11-34 % off and samples up to 969 ms)
LOAD_AT_RATE = 0.90
#: a minimum RTT comes from a dense train: 60 echoes 50 ms apart (3 s). Under software
#: emulation an idle emulated CPU wakes late for every timer; a busy one answers sooner
#: (docs/running.md, "Where the kernel cannot emulate").
MIN_RTT_PING_COUNT = 60
MIN_RTT_PING_INTERVAL_S = 0.05

# --- percentiles -------------------------------------------------------------------------
#: replies that must lie beyond a percentile before it is reported: with none beyond it,
#: a percentile is simply the largest sample (p99.9 of 200 pings is their maximum)
PERCENTILE_REPLIES_BEYOND = 1

# --- rates -------------------------------------------------------------------------------
RATE_OK_LOW = 0.70
RATE_MAX = 1.02
#: an ``ok`` rate below this share of its expectation says why it is still ok (this
#: machine's calibrated limit, or the tolerance from ``RATE_OK_LOW``)
RATE_SHORTFALL_EXPLAINED = 0.90

# --- warm-up -----------------------------------------------------------------------------
WARMUP_MAX_S = 2.0
WARMUP_FRACTION = 0.25

# --- windows -----------------------------------------------------------------------------
#: ``iperf3 -w W`` sets both socket buffers to W; Linux doubles a buffer a program asks for,
#: and advertises part of it as the window: Debian's 6.1 (the lab VM; tcp_adv_win_scale 1)
#: advertised 98 552 bytes for W = 100 000, the 6.18 host kernel (scaling_ratio) 1.31-1.74 x
#: W (tests/fixtures/ss). No kernel advertises more than the doubled buffer.
WINDOW_GRANT_MAX = 2.0

# --- fairness ----------------------------------------------------------------------------
JAIN_OK = 0.9
#: repeated multiplexing sets in the lab VM (2-4 flows on one bottleneck, 10 s each, 68
#: flow runs): a flow's rate / its fair share reached 1.20 at most, 1.05 on a quiet machine
SHARE_HIGH = 1.25
#: concurrent flows released together start within this share of their run of each other
#: (the start gate: under 100 ms on an idle lab VM; 3.1 s once, on a host loaded 4 x over)
START_SPREAD_MAX_FRACTION = 0.05

# --- UDP ---------------------------------------------------------------------------------
UDP_OVERLOAD = 1.05
UDP_LOSS_ABOVE_CAPACITY_PCT = 5.0

# --- capacity search ---------------------------------------------------------------------
SATURATION_LOSS_PCT = 1.0
SATURATION_GROWTH = 0.90
#: the demonstration's search starts at this fraction of the path's bottleneck rate and
#: doubles (a quarter: three clean steps below the link rate, then the knee)
SEARCH_START_FRACTION = 0.25

# --- the machine -------------------------------------------------------------------------
CAPACITY_HEADROOM = 0.9
#: a shaped link's timers (HTB's, netem's) that fire later than this share of the time
#: HTB's burst lasts cost the link its rate: in the lab VM on a busy host, timers 0.6-1.4 x
#: the burst time late (90th percentile, beside the run) left iperf3 at 26-60 % of the
#: ceiling, 1.9-4.2 x at 21-37 %. A path crosses several shaped links, each losing
#: late / burst of its time, so the share is of the bursts together
#: (:func:`~labtools.model.expect.path_burst_ms`): on a quiet host, h1-h9 of the reference
#: network (three shaped links) reached 58-67 % at 0.6-0.9 x its bottleneck's burst alone
TIMERS_LATE_FRACTION = 0.5

# --- live demonstrations (labtools.lab.live) ----------------------------------------------
#: seconds between a live demonstration's samples
LIVE_SAMPLE_INTERVAL_S = 1.0
#: samples further apart than this (median, seconds) cannot show cause and effect on a
#: projector: the demonstration says the machine is too slow, with the numbers
LIVE_SLOW_SAMPLE_S = 1.5
#: seconds within which the RTT must follow a change of a link's delay
LIVE_FOLLOW_S = 2.0
#: how far (relative to the new RTT of the empty path; at least ``RTT_TOL_MS``) the RTT
#: after a delay change may sit from the RTT before it plus the expected step: the median's
#: step, and the first reply that counts as having followed
#: (:func:`labtools.lab.live_plan.rtt_follow`)
LIVE_RTT_TOL_REL = 0.25


# --- the autograde sandbox (labtools.instructor.kernel_sandbox) -----------------------------
#: address space of one autograde kernel, MiB (a kernel that has imported the labs' modules
#: maps about 260 MiB and keeps about 130 resident; 8 GiB asked for at once is refused)
GRADING_MEMORY_MIB = 4096
#: processes and threads of one kernel's identity (the kernel's own threads, lab 7's
#: client and server with theirs)
GRADING_PROCESSES = 256
#: largest file a kernel may write, MiB
GRADING_FILE_MIB = 256
#: files one kernel may hold open
GRADING_OPEN_FILES = 1024
#: CPU seconds of one kernel (a replayed lab costs 2.5-5, BENCHMARKS.md "Grading a class")
GRADING_CPU_S = 900
#: size of a kernel's own /tmp, /var/tmp and /dev/shm (each), MiB
GRADING_TMP_MIB = 256

# --- graded conclusions ------------------------------------------------------------------
#: two rates closer than this fraction are not told apart by one lab's runs: a UDP stream
#: is judged overloaded only above ``UDP_OVERLOAD`` (5 %) of what the path carries, and
#: repeated sharing runs on a quiet lab VM reached 1.05 of the fair share
RATE_RESOLUTION_REL = UDP_OVERLOAD - 1
#: the lab VM's kernel (Debian's 6.1) advertised 98 552 bytes for ``-w 100000``: 1.45 %
#: less than asked (tests/fixtures/ss/vm_cubic_window_100000)
WINDOW_GRANT_SHORTFALL_REL = 1 - 98_552 / 100_000


def rtt_resolution_rel(rtt_ms: float) -> float:
    """What a run resolves of an RTT of ``rtt_ms`` (a fraction of it): the tolerance a
    minimum RTT agrees within (:func:`rtt_tolerance_ms`: at least the 2 ms this machine's
    timers and calibration add)."""
    if rtt_ms <= 0:
        raise InputError(f"an RTT must be > 0 ms, got {rtt_ms:g}")
    return rtt_tolerance_ms(rtt_ms) / rtt_ms


def window_resolution_rel(rtt_ms: float) -> float:
    """What a run resolves of window / RTT against a threshold (a fraction): the window
    the kernel grants less than asked, plus the RTT's resolution."""
    return WINDOW_GRANT_SHORTFALL_REL + rtt_resolution_rel(rtt_ms)


def warmup_s(duration_s: float) -> float:
    """Seconds left out at the start of a ``duration_s`` throughput run."""
    if duration_s <= 0:
        raise InputError(f"duration must be > 0 s, got {duration_s:g}")
    return min(WARMUP_MAX_S, WARMUP_FRACTION * duration_s)


def rtt_tolerance_ms(expected_ms: float) -> float:
    """How far (ms) a minimum RTT may sit from ``expected_ms`` and still agree."""
    return max(RTT_TOL_MS, RTT_TOL_REL * expected_ms)


def outlier_threshold_ms(min_ms: float) -> float:
    """RTT samples above this (ms) are outliers in a series whose minimum is ``min_ms``."""
    return min_ms + max(OUTLIER_ABS_MS, OUTLIER_REL * min_ms)


def percentile_replies_needed(p: float) -> int:
    """Replies a percentile ``p`` (a fraction, 0 < p < 1) needs before it is reported:
    :data:`PERCENTILE_REPLIES_BEYOND` beyond it, ``ceil(1 / (1 - p))``: 10 for p90, 100
    for p99, 1000 for p99.9; a median needs one reply."""
    if not 0 < p < 1:
        raise InputError(f"a percentile is a fraction within 0..1 (exclusive), got {p!r}")
    if p <= 0.5:
        return 1
    return PERCENTILE_REPLIES_BEYOND * math.ceil(round(1 / (1 - p), 9))


def percentile_name(p: float) -> str:
    """``p50``, ``p99``, ``p99.9`` for 0.5, 0.99, 0.999."""
    return f"p{round(100 * p, 6):g}"


def replies_text(count: int) -> str:
    """``1 reply``, ``200 replies``."""
    return f"{count} repl{'y' if count == 1 else 'ies'}"


def describe_percentile(p: float, value_ms: Optional[float], replies: int) -> str:
    """A percentile of an RTT series with the replies it rests on: ``p99 231.0 ms (of 200
    replies)``; one that needs more replies than there are says so instead of a number:
    ``p99.9 needs >= 1000 replies; 200 here``."""
    needed = percentile_replies_needed(p)
    if replies < needed:
        return f"{percentile_name(p)} needs >= {replies_text(needed)}; {replies} here"
    if value_ms is None:
        return f"{percentile_name(p)}: no value (of {replies_text(replies)})"
    return f"{percentile_name(p)} {value_ms:.1f} ms (of {replies_text(replies)})"


def rate_ok(measured_mbps: float, expected_mbps: float) -> bool:
    """True when a receiver's rate is within ``RATE_OK_LOW .. RATE_MAX`` of expected."""
    return RATE_OK_LOW * expected_mbps <= measured_mbps <= RATE_MAX * expected_mbps


def fits_machine(load_mbps: float, forward_capacity_mbps: float) -> bool:
    """True when this machine can carry ``load_mbps`` (its calibrated forwarding rate
    ``forward_capacity_mbps``, with :data:`CAPACITY_HEADROOM`)."""
    return load_mbps <= CAPACITY_HEADROOM * forward_capacity_mbps


def worst(verdicts: "list[str] | tuple[str, ...]") -> str:
    """The worst of some verdicts (:data:`VERDICT_ORDER`); ``ok`` for none."""
    return max(verdicts, key=VERDICT_ORDER.index, default=OK)


@dataclass(frozen=True)
class Durations:
    """How long a notebook's or a case's measurements run (s), how many pings, and how
    many times a notebook repeats a measurement it draws a conclusion from (``repeat``:
    the probes' ``repeat=``, judged on the median run).

    ``quick`` runs are what CI uses; TCP runs stay 10 s where sharing is judged (shorter
    runs are too noisy)."""

    tcp_s: float
    sharing_s: float
    udp_s: float
    capacity_step_s: float
    refine_steps: int
    ping_count: int
    ping_interval_s: float = MIN_RTT_PING_INTERVAL_S
    #: "full" or "quick" for the kit's two sets (saved with each run; replay uses it)
    name: str = "custom"
    #: runs of a measurement a notebook concludes from (notebook 05's advantage of two
    #: connections ranged from 1 to 2.4 over single runs: one run proves nothing)
    repeat: int = 1

    @property
    def warmup_s(self) -> float:
        """Warm-up left out of a ``tcp_s`` run."""
        return warmup_s(self.tcp_s)


FULL = Durations(tcp_s=10, sharing_s=10, udp_s=10, capacity_step_s=4, refine_steps=3,
                 ping_count=100, name="full", repeat=3)
QUICK = Durations(tcp_s=4, sharing_s=10, udp_s=4, capacity_step_s=2, refine_steps=2,
                  ping_count=MIN_RTT_PING_COUNT, name="quick", repeat=2)
#: the named sets, by name
NAMED_DURATIONS = {d.name: d for d in (FULL, QUICK)}


def durations(quick: bool) -> Durations:
    """The durations of a full run, or of a quick one (``LABTOOLS_QUICK=1``, CI)."""
    return QUICK if quick else FULL


def run_durations(duration_s: float) -> Durations:
    """Durations of ``labtools run``: every throughput run ``duration_s`` long, capacity
    search steps a third of it (at least 2 s), the minimum RTT from the dense ping train."""
    return Durations(tcp_s=duration_s, sharing_s=duration_s, udp_s=duration_s,
                     capacity_step_s=max(2.0, duration_s / 3), refine_steps=3,
                     ping_count=MIN_RTT_PING_COUNT)
