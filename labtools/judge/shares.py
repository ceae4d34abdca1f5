"""Judging concurrent flows: each flow against its max-min fair share, the flows together
against the shared link, and Jain's index over the connections.

Jain's index is computed on each connection's rate divided by its max-min fair share
(iperf3's own per-stream receiver rates for a flow with parallel connections), over the
connections whose share one link sets: fairness is about flows that compete. Flows that
share no bottleneck (each alone on its own link) have no index.

:func:`judge_flows` takes the flows and each one's parsed iperf3 output (nothing else), so
a saved set of flows is rebuilt from its raw outputs exactly as it was judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labtools.judge import policy, rate_verdicts
from labtools.judge.measurement import JudgeContext, Measurement, judge_parsed
from labtools.judge.together import JudgedTogether
from labtools.judge.verdicts import Verdict
from labtools.model.expect import (
    bottleneck,
    path_burst_ms,
    shaped_rates_mbps,
    tcp_goodput_ceiling_mbps,
)
from labtools.model.fairness import Flow, FlowShare, crossings, jain_index, max_min_shares
from labtools.model.topology import Topology
from labtools.tools.parsers.base import Parsed
from labtools.tools.rows import Rows
from labtools.tools.summaries import RateSummary, require_kind, steady_stream_mbps

#: columns of :attr:`FlowsMeasurement.table`
SHARES_COLUMNS = ["flow", "connections", "expected_share_mbps", "expected_goodput_mbps",
                  "measured_mbps", "sender_mbps", "limited_by"]
SHARES_DTYPES = {"flow": "object", "connections": "int64", "expected_share_mbps": "float64",
                 "expected_goodput_mbps": "float64", "measured_mbps": "float64",
                 "sender_mbps": "float64", "limited_by": "object"}


@dataclass(frozen=True)
class SharesSummary:
    """Concurrent flows in numbers: their total goodput (Mbit/s), what the shared link
    carries (Mbit/s, None when they share none), Jain's index of rate / fair share per
    connection (the lowest over the links two or more connections share; None when no two
    share one) and the spread of their start (ms)."""

    total_mbps: float
    capacity_mbps: Optional[float]
    jain_index: Optional[float]
    start_spread_ms: Optional[float]
    kind: str = "shares"

    def as_dict(self) -> Dict[str, Any]:
        """JSON form."""
        return {"total_mbps": self.total_mbps, "capacity_mbps": self.capacity_mbps,
                "jain_index": self.jain_index, "start_spread_ms": self.start_spread_ms,
                "kind": self.kind}


@dataclass
class FlowsMeasurement(JudgedTogether):
    """Concurrent flows, judged: one :class:`Measurement` per flow (each judged against
    its fair share), the shares (``rows``: :data:`SHARES_COLUMNS`), a summary and the
    verdicts of the whole set (the flows' rows, then the total and Jain's index)."""

    flows: List[Flow]
    measurements: List[Measurement]
    shares: List[FlowShare]
    summary: SharesSummary
    verdicts: List[Verdict]

    @property
    def jain_index(self) -> Optional[float]:
        """Jain's index of rate / fair share per connection (see :class:`SharesSummary`)."""
        return self.summary.jain_index



def flows_spec(flows: Sequence[Flow]) -> str:
    """``h1:h4x2,h2:h5`` (the form :func:`labtools.model.fairness.parse_flows` reads)."""
    return ",".join(f"{f.src}:{f.dst}" + (f"x{f.connections}" if f.connections > 1 else "")
                    for f in flows)


def _shared_capacity(topo: Topology, flows: Sequence[Flow],
                     shares: Sequence[FlowShare]) -> Optional[float]:
    """The goodput ceiling of the one link, in one direction, that limits every flow; None
    when the flows are limited by different links, or by one link in opposite directions
    (each direction of a link has its own rate)."""
    limits = set()
    for flow, share in zip(flows, shares):
        if share.limited_by:
            limits |= {key for key in crossings(topo, flow)
                       if topo.links[key[0]].label == share.limited_by}
    if len(limits) != 1:
        return None
    rate = topo.links[limits.pop()[0]].bw_mbps
    return None if rate is None else tcp_goodput_ceiling_mbps(rate)


def _bottleneck_groups(topo: Topology, flows: Sequence[Flow], shares: Sequence[FlowShare],
                       outputs: Sequence[Parsed], rates: Sequence[Optional[float]],
                       warmup_s: float) -> Dict[str, List[Tuple[float, float]]]:
    """The connections of the flows, grouped by the link (in one direction) that sets their
    max-min share, for the groups of two or more: (rate / fair share, fair share in Mbit/s
    of goodput) each. A connection's rate is iperf3's own per-stream receiver rate when the
    output has it, else its flow's rate split evenly."""
    groups: Dict[Tuple[int, bool], List[Tuple[float, float]]] = {}
    for flow, share, parsed, rate in zip(flows, shares, outputs, rates):
        if share.per_connection_mbps is None or share.limited_by is None:
            continue
        fair = tcp_goodput_ceiling_mbps(share.per_connection_mbps)
        streams = steady_stream_mbps(parsed.rows, warmup_s)
        if len(streams) != flow.connections:
            streams = [(rate or 0.0) / flow.connections] * flow.connections
        key = next(k for k in crossings(topo, flow)
                   if topo.links[k[0]].label == share.limited_by)
        groups.setdefault(key, []).extend((got / fair, fair) for got in streams)
    return {topo.links[key[0]].label: pairs for key, pairs in sorted(groups.items())
            if len(pairs) > 1}


def _spread_verdict(spread_ms: Optional[float], measured: Sequence[Measurement],
                    warmup_s: float) -> Optional[Verdict]:
    """How far apart the flows started, against
    :data:`~labtools.judge.policy.START_SPREAD_MAX_FRACTION` of the run: further apart, the
    first flow ran alone for a while and the shares say little (``inconclusive``)."""
    durations = [require_kind(m.summary, RateSummary).duration_s for m in measured]
    run_s = max((d for d in durations if d), default=0.0) + warmup_s
    if spread_ms is None or run_s <= 0:
        return None
    limit_ms = policy.START_SPREAD_MAX_FRACTION * run_s * 1e3
    if spread_ms <= limit_ms:
        return Verdict("start spread", limit_ms, spread_ms, "ms", policy.OK,
                       f"the flows started within {spread_ms:.0f} ms of each other")
    return Verdict("start spread", limit_ms, spread_ms, "ms", policy.INCONCLUSIVE,
                   f"inconclusive: the flows started {spread_ms:.0f} ms apart, more than "
                   f"{policy.START_SPREAD_MAX_FRACTION:.0%} of the {run_s:.0f} s run (this "
                   "machine was slow to start them): the first ran alone for a while")


def _most_shaped(topo: Topology, flows: Sequence[Flow]) -> Tuple[float, ...]:
    """The rates of the shaped links (Mbit/s) on the flow's path whose timers may fire
    the least late (:func:`~labtools.model.expect.path_burst_ms`): the first to lose its
    rate when they do."""
    paths = [shaped_rates_mbps(topo, f.src, f.dst) for f in flows]
    rated = [rates for rates in paths if rates]
    return min(rated, key=lambda rates: path_burst_ms(rates) or 0.0, default=())


def judge_flows(topo: Topology, flows: Sequence[Flow], outputs: Sequence[Parsed],
                context: JudgeContext, commands: Sequence[Sequence[str]] = (),
                start_spread_ms: Optional[float] = None,
                member_meta: Sequence[Dict[str, Any]] = ()) -> FlowsMeasurement:
    """Judge concurrent flows from their parsed iperf3 outputs (one per flow, in order)."""
    shares = max_min_shares(topo, flows)
    goodput = [None if s.share_mbps is None else tcp_goodput_ceiling_mbps(s.share_mbps)
               for s in shares]
    load = sum(g for g in goodput if g is not None)
    member_context = JudgeContext(context.warmup_s, None, load or None, context.machine,
                                  machine_late_ms=context.machine_late_ms)
    machine = (None if context.machine is None
               else context.machine.during(context.machine_late_ms, _most_shaped(topo, flows)))
    measured = [judge_parsed(p, topo, f.src, f.dst, member_context,
                             commands[i] if i < len(commands) else (),
                             **(member_meta[i] if i < len(member_meta) else {}))
                for i, (f, p) in enumerate(zip(flows, outputs))]
    summaries = [require_kind(m.summary, RateSummary) for m in measured]
    rates = [s.steady_mbps for s in summaries]
    capacity = _shared_capacity(topo, flows, shares)
    total = sum(r for r in rates if r is not None)
    link_full = capacity is not None and total >= capacity * policy.RATE_OK_LOW
    rows: List[Verdict] = []
    for flow, want, got, m, s in zip(flows, goodput, rates, measured, summaries):
        alone_rate = bottleneck(topo, flow.src, flow.dst)[0]
        alone = None if alone_rate is None else tcp_goodput_ceiling_mbps(alone_rate)
        row = rate_verdicts.share_verdict(f"{flow.src}-{flow.dst}", got, want, alone, link_full,
                                     load or None, machine)
        guard = rate_verdicts.sender_guard(s.sender_mbps, alone)
        m.verdicts = [row] + ([guard] if guard is not None else [])
        rows.append(row)
    total_ok = True
    if capacity is not None:
        total_row = rate_verdicts.total_verdict(total, capacity, load, machine)
        total_ok = total_row.verdict != policy.INCONCLUSIVE
        rows.append(total_row)
    jain_rows, jain = _fairness_verdicts(topo, flows, shares, outputs, rates,
                                         context.warmup_s, total_ok)
    rows += jain_rows
    spread_row = _spread_verdict(start_spread_ms, measured, context.warmup_s)
    if spread_row is not None:
        rows.append(spread_row)
    table = _shares_table(flows, shares, goodput, rates, summaries)
    summary = SharesSummary(total, capacity, jain, start_spread_ms)
    return FlowsMeasurement(list(flows), measured, shares, summary, rows, rows=table,
                            context=context)


def _fairness_verdicts(topo: Topology, flows: Sequence[Flow], shares: Sequence[FlowShare],
                       outputs: Sequence[Parsed], rates: Sequence[Optional[float]],
                       warmup_s: float, total_ok: bool
                       ) -> Tuple[List[Verdict], Optional[float]]:
    """Jain's index of the connections on each link two or more of them share (a verdict
    per link), and the lowest of those indexes (None: no two share a link, or none
    carried anything)."""
    rows: List[Verdict] = []
    jains: List[Optional[float]] = []
    for label, pairs in _bottleneck_groups(topo, flows, shares, outputs, rates,
                                           warmup_s).items():
        jain = jain_index([x for x, _w in pairs]) if any(x for x, _w in pairs) else None
        rows.append(rate_verdicts.jain_verdict(jain, total_ok, label))
        jains.append(jain)
    return rows, min((j for j in jains if j is not None), default=None)


def _shares_table(flows: Sequence[Flow], shares: Sequence[FlowShare],
                  goodput: Sequence[Optional[float]], rates: Sequence[Optional[float]],
                  summaries: Sequence[RateSummary]) -> Rows:
    """The table of :attr:`FlowsMeasurement.rows`: per flow, its share, the goodput
    expected of it and what it measured (Mbit/s)."""
    return Rows.of(SHARES_COLUMNS, SHARES_DTYPES, [{
        "flow": f"{f.src}-{f.dst}", "connections": f.connections,
        "expected_share_mbps": s.share_mbps, "expected_goodput_mbps": g, "measured_mbps": r,
        "sender_mbps": mine.sender_mbps, "limited_by": s.limited_by}
        for f, s, g, r, mine in zip(flows, shares, goodput, rates, summaries)])
