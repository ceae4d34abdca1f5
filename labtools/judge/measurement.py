"""The judged measurement: one tool run, parsed, summarised, compared and judged.

Every probe returns a :class:`Measurement`: the raw output, the parsed table, a typed
summary (:mod:`labtools.tools.summaries`), the expected values of its pair
(:class:`~labtools.model.expect.PairExpectation`) and its verdicts. It is built by
:func:`judge_output` from text alone, so the same function rebuilds a saved measurement from
its raw output without a network (:meth:`labtools.results.store.ResultStore.measurement`).

What judging needs besides the output travels in a :class:`JudgeContext` (the warm-up left
out, the rate a UDP sender was asked for, the load the network carried, this machine's
calibration); it is saved with the measurement. :class:`ProbeCall` records which probe call
made a measurement, with the arguments that identify it (replayed grading matches them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from labtools.errors import InputError
from labtools.judge import policy, rate_verdicts, verdicts
from labtools.judge.judged import Judged
from labtools.judge.machine import MachineProfile
from labtools.judge.verdicts import Verdict
from labtools.model.expect import (
    PairExpectation,
    expect_pair,
    path,
    shaped_rates_mbps,
    window_rate_mbps,
)
from labtools.model.queues import loaded_rtt
from labtools.model.topology import Topology
from labtools.tools.parsers import parse
from labtools.tools.parsers.base import Parsed
from labtools.tools.summaries import (
    RateSummary,
    RttSummary,
    Summary,
    UdpSummary,
    require_kind,
    summarize,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


@dataclass(frozen=True)
class ProbeCall:
    """A probe call: the probe's name and the arguments that identify what it measured
    (source, destination, flows, offered rate, window...; durations and counts are not
    part of it: they follow the machine and the quick mode)."""

    probe: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        """A canonical text form (two calls with equal keys measured the same thing)."""
        return json.dumps({"probe": self.probe, "args": dict(self.args)}, sort_keys=True)

    def as_dict(self) -> Dict[str, Any]:
        """JSON form."""
        return {"probe": self.probe, "args": dict(self.args)}

    @classmethod
    def from_dict(cls, data: Optional[Mapping[str, Any]]) -> Optional["ProbeCall"]:
        """The call saved as :meth:`as_dict` (None for none)."""
        if not data:
            return None
        return cls(str(data["probe"]), dict(data.get("args") or {}))

    def describe(self) -> str:
        """``iperf3(src=h1, dst=h4)``."""
        return f"{self.probe}({', '.join(f'{k}={v}' for k, v in sorted(self.args.items()))})"


@dataclass(frozen=True)
class JudgeContext:
    """What judging a run needs besides its output.

    Attributes:
        warmup_s: seconds at the start of a throughput run left out of its rate.
        offered_mbps: the rate a UDP sender was asked to send (Mbit/s), if any.
        load_mbps: the total goodput the network had to carry while this ran (concurrent
            flows); None means this run's own expectation.
        machine: this machine's calibration, if the lab made one.
        window_bytes: the TCP window asked for (``iperf3 -w``), if any.
        load: ``(src, dst)`` of a TCP flow that ran during this run (a ping under load).
        load_received_mbps: what that flow's receiver got after its warm-up, Mbit/s.
        granted_window_bytes: the window the kernel advertised for ``window_bytes``, as
            ``ss`` read it during the run (None: not read).
        machine_late_ms: how late this machine's timers fired during the run, per delayed
            link crossing, 90th percentile (ms; :mod:`labtools.lab.machine_watch`).
    """

    warmup_s: float = 0.0
    offered_mbps: Optional[float] = None
    load_mbps: Optional[float] = None
    machine: Optional[MachineProfile] = None
    window_bytes: Optional[int] = None
    load: Optional[Tuple[str, str]] = None
    load_received_mbps: Optional[float] = None
    granted_window_bytes: Optional[int] = None
    machine_late_ms: Optional[float] = None

    def as_dict(self) -> Dict[str, Any]:
        """JSON form."""
        return {"warmup_s": self.warmup_s, "offered_mbps": self.offered_mbps,
                "load_mbps": self.load_mbps, "window_bytes": self.window_bytes,
                "machine": None if self.machine is None else self.machine.as_dict(),
                "load": None if self.load is None else list(self.load),
                "load_received_mbps": self.load_received_mbps,
                "granted_window_bytes": self.granted_window_bytes,
                "machine_late_ms": self.machine_late_ms}

    @classmethod
    def from_dict(cls, data: Optional[Mapping[str, Any]]) -> "JudgeContext":
        """The context saved as :meth:`as_dict` (older records have no load)."""
        data = dict(data or {})
        load = data.get("load")
        return cls(float(data.get("warmup_s") or 0.0), data.get("offered_mbps"),
                   data.get("load_mbps"), MachineProfile.from_dict(data.get("machine")),
                   data.get("window_bytes"), None if not load else (str(load[0]), str(load[1])),
                   data.get("load_received_mbps"), data.get("granted_window_bytes"),
                   data.get("machine_late_ms"))


@dataclass
class Measurement(Judged):
    """One judged tool run between ``src`` and ``dst``.

    ``summary`` is typed (``.min_ms``, ``.steady_mbps``...); ``parsed.summary`` keeps every
    number the tool printed. ``exit_status`` is the tool's own (None where not known: an
    output read from a file, a run saved before the store kept it). ``run_id`` is set once
    the store has saved it."""

    tool: str
    src: str
    dst: str
    command: List[str]
    parsed: Parsed
    summary: Summary
    expected: Optional[PairExpectation]
    verdicts: List[Verdict]
    context: JudgeContext = field(default_factory=JudgeContext)
    started_at: str = ""
    finished_at: str = ""
    run_id: Optional[int] = None
    call: Optional[ProbeCall] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    exit_status: Optional[int] = None

    @property
    def raw(self) -> str:
        """What the tool printed."""
        return self.parsed.raw

    @property
    def table(self) -> "pd.DataFrame":
        """The parser's tidy per-sample table."""
        return self.parsed.table

    def as_dict(self) -> Dict[str, Any]:
        """JSON form (no table, no raw output)."""
        return {"tool": self.tool, "src": self.src, "dst": self.dst, "command": self.command,
                "summary": self.summary.as_dict(),
                "expected": None if self.expected is None else self.expected.as_dict(),
                "verdicts": [v.as_dict() for v in self.verdicts], "verdict": self.verdict,
                "context": self.context.as_dict(), "started_at": self.started_at,
                "finished_at": self.finished_at, "run_id": self.run_id,
                "call": None if self.call is None else self.call.as_dict(),
                "exit_status": self.exit_status, **self.extra}


def window_limit_mbps(window_bytes: Optional[int], rtt_ms: float) -> Optional[float]:
    """The most a TCP window of ``window_bytes`` carries over ``rtt_ms``: one window per
    round trip, Mbit/s (None without a window or a delay)."""
    if not window_bytes or rtt_ms <= 0:
        return None
    return window_rate_mbps(window_bytes, rtt_ms)


def judge_summary(summary: Summary, expected: Optional[PairExpectation],
                  context: JudgeContext, topo: Optional[Topology] = None) -> List[Verdict]:
    """The verdicts of one run's summary against its pair's expectation (the judge of its
    kind of summary: :data:`JUDGES`)."""
    if expected is None:
        return []
    judge = JUDGES.get(type(summary))
    if judge is None:
        raise InputError(f"cannot judge a summary of kind {type(summary).__name__}")
    machine = (None if context.machine is None else
               context.machine.during(context.machine_late_ms, _shaped(topo, expected)))
    return judge(summary, expected, context, topo, machine)


def _judge_rtt(summary: Summary, expected: PairExpectation, context: JudgeContext,
               topo: Optional[Topology], _machine: Optional[MachineProfile]) -> List[Verdict]:
    return _rtt_verdicts(require_kind(summary, RttSummary), expected, context, topo)


def _judge_udp(summary: Summary, expected: PairExpectation, context: JudgeContext,
               _topo: Optional[Topology], machine: Optional[MachineProfile]) -> List[Verdict]:
    udp = require_kind(summary, UdpSummary)
    sent = udp.sender_mbps if udp.sender_mbps is not None else context.offered_mbps
    return rate_verdicts.udp_verdicts(udp.receiver_mbps, sent, udp.loss_pct,
                                 expected.udp_goodput_ceiling_mbps, machine)


def _judge_tcp(summary: Summary, expected: PairExpectation, context: JudgeContext,
               topo: Optional[Topology], machine: Optional[MachineProfile]) -> List[Verdict]:
    tcp = require_kind(summary, RateSummary)
    # the goodput ceiling, or less: a queue limit's cap or the loss-limited estimate
    ceiling = expected.tcp_limit_mbps
    if ceiling is None:  # no link limits the path: the machine does
        return [rate_verdicts.machine_rate_verdict(tcp.steady_mbps, machine)]
    carry = carry_limit_mbps(expected)
    limit = window_limit_mbps(context.window_bytes, expected.rtt_ms)
    if limit is not None and limit < ceiling:
        granted = window_limit_mbps(context.granted_window_bytes, expected.rtt_ms)
        cap = ceiling if carry is None else carry  # a window above the loss estimate may hold
        return [rate_verdicts.window_verdict(tcp.steady_mbps, limit, machine,
                                        None if granted is None else min(granted, cap))]
    rows = [tcp_rate_verdict(tcp.steady_mbps, expected, context.load_mbps, machine)]
    if tcp.reverse_receiver_mbps is not None and topo is not None:  # --bidir
        rows.append(tcp_rate_verdict(tcp.reverse_receiver_mbps,
                                     expect_pair(topo, expected.dst, expected.src), None,
                                     machine, "reverse receiver_rate"))
    guard = rate_verdicts.sender_guard(tcp.sender_mbps, carry)
    if guard is not None:
        rows.append(guard)
    return rows


SummaryJudge = Callable[[Summary, PairExpectation, JudgeContext, Optional[Topology],
                         Optional[MachineProfile]], List[Verdict]]
#: a summary's type (:mod:`labtools.tools.summaries`, as its tool's descriptor chose it)
#: -> the judge of it
JUDGES: Dict[type, SummaryJudge] = {
    RttSummary: _judge_rtt, UdpSummary: _judge_udp, RateSummary: _judge_tcp,
}


def _shaped(topo: Optional[Topology], expected: PairExpectation) -> Tuple[float, ...]:
    """The rates of the shaped links the pair's data crosses (Mbit/s); without the
    topology, its bottleneck alone."""
    if topo is not None:
        return shaped_rates_mbps(topo, expected.src, expected.dst)
    return () if expected.bottleneck_mbps is None else (expected.bottleneck_mbps,)


def carry_limit_mbps(expected: PairExpectation) -> Optional[float]:
    """The TCP goodput the pair's path can carry (Mbit/s): its goodput ceiling, or less
    where a queue limit caps it; unlike ``tcp_limit_mbps``, without the loss-limited rate,
    which is an estimate (None: no link limits the path)."""
    return replace(expected, mathis_limit_mbps=None).tcp_limit_mbps


def tcp_rate_verdict(measured_mbps: Optional[float], expected: PairExpectation,
                     load_mbps: Optional[float] = None, machine: Optional[MachineProfile] = None,
                     metric: str = "receiver_rate") -> Verdict:
    """A TCP receiver's rate against what its path allows: on a path whose loss-limited
    rate (Mathis et al.) is below what it carries, that rate is an estimate (above it is
    ``ok`` with a note: CUBIC may exceed it); else against ``tcp_limit_mbps``."""
    carry, estimate = carry_limit_mbps(expected), expected.mathis_limit_mbps
    if estimate is not None and (carry is None or estimate < carry):
        return rate_verdicts.loss_limited_verdict(measured_mbps, estimate, carry, metric, load_mbps,
                                             machine)
    return rate_verdicts.rate_verdict(measured_mbps, expected.tcp_limit_mbps, metric, load_mbps,
                                 machine)


def _rtt_verdicts(summary: RttSummary, expected: PairExpectation, context: JudgeContext,
                  topo: Optional[Topology]) -> List[Verdict]:
    """A ping: idle, its minimum against the propagation and its largest sample against
    every queue full; under a load (``context.load``), its median against the queue model
    and its largest sample against the load's queue full."""
    machine, added, shaped = context.machine, 0.0, True
    if topo is not None:
        info = path(topo, expected.src, expected.dst)
        shaped = any(link.bw_mbps is not None for link in info.links + info.reverse_links)
        if machine is not None:
            added = machine.added_ms(info.links + info.reverse_links)
    known = None if machine is None else added
    late = _late_allowance_ms(topo, expected, context)
    if context.load is None or topo is None:
        return [verdicts.rtt_verdict(summary.min_ms, expected.rtt_ms, added),
                verdicts.rtt_average_verdict(summary.min_ms, summary.avg_ms),
                verdicts.rtt_bound_verdict(summary.max_after_first_ms, expected.max_rtt_ms,
                                           known, expected.unbounded_links, shaped,
                                           late_allowance_ms=late)]
    model = loaded_rtt(topo, expected.src, expected.dst, *context.load)
    short = _short_load(topo, context)
    full = (f"{model.queue_link}'s queue full" if model.queue_link
            else "no queue of the load's on the way")
    return [verdicts.loaded_rtt_verdict(summary.p50_ms, model, added, short, summary.samples),
            verdicts.rtt_bound_verdict(summary.max_after_first_ms, model.high_ms, known,
                                       expected.unbounded_links, shaped, full, short, late)]


def _late_allowance_ms(topo: Optional[Topology], expected: PairExpectation,
                       context: JudgeContext) -> float:
    """What late timers, measured during the run, add to a round trip: the lateness per
    delayed link crossing times the delayed links crossed out and back (ms)."""
    if topo is None or not context.machine_late_ms:
        return 0.0
    info = path(topo, expected.src, expected.dst)
    crossings = sum(1 for link in info.links + info.reverse_links if link.delay_ms > 0)
    return crossings * context.machine_late_ms


def _short_load(topo: Topology, context: JudgeContext) -> Optional[str]:
    """Why the run's load fell short of its path's rate, or None: a TCP flow alone on its
    path that receives less than :data:`~labtools.judge.policy.LOAD_AT_RATE` of the TCP
    rate expected there (``tcp_limit_mbps``) did not drive its bottleneck at the link's
    rate (the machine could not keep up), so its queue drained more slowly than the link's
    rate."""
    if context.load is None or context.load_received_mbps is None:
        return None
    limit = expect_pair(topo, *context.load).tcp_limit_mbps
    got = context.load_received_mbps
    if limit is None or got >= policy.LOAD_AT_RATE * limit:
        return None
    return (f"the load {context.load[0]}->{context.load[1]} received only {got:.2f} of "
            f"{limit:.2f} Mbit/s, so this machine did not drive its link at the link's rate")


def judge_parsed(parsed: Parsed, topo: Optional[Topology], src: str, dst: str,
                 context: Optional[JudgeContext] = None, command: Sequence[str] = (),
                 **meta: Any) -> Measurement:
    """A :class:`Measurement` from a parsed run; with no topology it has no expectation
    and no verdicts. ``meta``: started_at, finished_at, run_id, call, extra, exit_status."""
    context = context or JudgeContext()
    summary = summarize(parsed, context.warmup_s)
    expected = expect_pair(topo, src, dst) if topo is not None and src and dst else None
    found = judge_summary(summary, expected, context, topo)
    if expected is not None and parsed.warnings:
        found.append(output_verdict(parsed.warnings))
    return Measurement(parsed.tool, src, dst, list(command), parsed, summary, expected, found,
                       context, **meta)


def output_verdict(warnings: Sequence[str]) -> Verdict:
    """A ``suspicious`` verdict (metric ``tool_output``) saying where the tool's own output
    disagrees with itself (:attr:`Parsed.warnings`): the numbers judged come from its
    consistent part, but the tool printed something no run gives."""
    return Verdict("tool_output", None, None, "", policy.SUSPICIOUS,
                   "the tool's output disagrees with itself: " + "; ".join(warnings))


def judge_output(tool: str, raw: str, topo: Optional[Topology], src: str, dst: str,
                 context: Optional[JudgeContext] = None, command: Sequence[str] = (),
                 **meta: Any) -> Measurement:
    """Parse a tool's raw output and judge it (the three stages: parse, summarise, judge).

    Raises :class:`~labtools.errors.ParseError` for output that is not ``tool``'s."""
    if not isinstance(raw, str):
        raise InputError(f"raw output must be text, got {type(raw).__name__}")
    return judge_parsed(parse(tool, raw), topo, src, dst, context, command, **meta)
