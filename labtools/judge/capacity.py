"""Judging a UDP capacity search from its steps.

A search (:mod:`labtools.lab.capacity`) offers UDP at rising rates, then bisects around the
knee. Each step is a judged iperf UDP :class:`~labtools.judge.measurement.Measurement`;
:func:`judge_capacity` derives everything else from the steps alone, so a saved search is
rebuilt from its raw outputs:

- a step is *saturated* when it loses more than
  :data:`~labtools.judge.policy.SATURATION_LOSS_PCT` percent or receives less than
  :data:`~labtools.judge.policy.SATURATION_GROWTH` times the offered rate;
- the *knee* is the lowest saturated offered rate, the *last clean* rate the highest
  unsaturated one below it;
- the *estimate* is the highest received rate at or below the knee (all steps when none
  saturated), judged against the path's UDP goodput ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from labtools.judge import policy, rate_verdicts
from labtools.judge.machine import MachineProfile
from labtools.judge.measurement import JudgeContext, Measurement
from labtools.judge.together import JudgedTogether
from labtools.judge.verdicts import Verdict
from labtools.model.expect import PairExpectation, expect_pair, shaped_rates_mbps
from labtools.model.topology import Topology
from labtools.tools.rows import Rows
from labtools.tools.summaries import UdpSummary, require_kind

#: columns of the capacity table
CAPACITY_COLUMNS = ["step", "phase", "offered_mbps", "received_mbps", "loss_pct", "jitter_ms",
                    "saturated"]
CAPACITY_DTYPES = {"step": "int64", "phase": "object", "offered_mbps": "float64",
                   "received_mbps": "float64", "loss_pct": "float64", "jitter_ms": "float64",
                   "saturated": "bool"}


def is_saturated(offered_mbps: float, received_mbps: Optional[float],
                 loss_pct: Optional[float]) -> bool:
    """True when a step lost too much or received too little of what was offered."""
    if received_mbps is None:
        return True
    return (loss_pct or 0.0) > policy.SATURATION_LOSS_PCT or \
        received_mbps < policy.SATURATION_GROWTH * offered_mbps


@dataclass(frozen=True)
class CapacitySummary:
    """A search's result (Mbit/s): the estimate of the path's UDP capacity, the knee and
    the last clean offered rate (None where the search did not find one)."""

    estimate_mbps: Optional[float]
    knee_mbps: Optional[float]
    last_clean_mbps: Optional[float]
    steps: int
    kind: str = "capacity"

    def as_dict(self) -> Dict[str, Any]:
        """JSON form."""
        return {"estimate_mbps": self.estimate_mbps, "knee_mbps": self.knee_mbps,
                "last_clean_mbps": self.last_clean_mbps, "steps": self.steps, "kind": self.kind}


@dataclass
class CapacitySearch(JudgedTogether):
    """A judged capacity search: its steps, one row per step (``rows``:
    :data:`CAPACITY_COLUMNS`), the summary and the verdict."""

    src: str
    dst: str
    steps: List[Measurement]
    summary: CapacitySummary
    expected: Optional[PairExpectation]
    verdicts: List[Verdict]

    @property
    def estimate_mbps(self) -> Optional[float]:
        """The capacity estimate, Mbit/s of UDP payload."""
        return self.summary.estimate_mbps


def capacity_rows(steps: Sequence[Measurement], phases: Sequence[str],
                  offered: Sequence[float]) -> Rows:
    """One row per step (:data:`CAPACITY_COLUMNS`)."""
    rows = []
    for index, (m, phase, rate) in enumerate(zip(steps, phases, offered), start=1):
        s = require_kind(m.summary, UdpSummary)
        rows.append({"step": index, "phase": phase, "offered_mbps": float(rate),
                     "received_mbps": s.receiver_mbps, "loss_pct": s.loss_pct,
                     "jitter_ms": s.jitter_ms,
                     "saturated": is_saturated(float(rate), s.receiver_mbps, s.loss_pct)})
    return Rows.of(CAPACITY_COLUMNS, CAPACITY_DTYPES, rows)


def summarize_search(rows: Rows) -> CapacitySummary:
    """Knee, last clean rate and estimate from a search's rows."""
    knee = min(rows.where(lambda r: r["saturated"]).numbers("offered_mbps"), default=None)
    clean_rows = rows.where(lambda r: not r["saturated"] and (
        knee is None or r["offered_mbps"] < knee))
    clean = max(clean_rows.numbers("offered_mbps"), default=None)
    usable = rows if knee is None else rows.where(lambda r: r["offered_mbps"] <= knee)
    estimate = max(usable.numbers("received_mbps"), default=None)
    return CapacitySummary(estimate, knee, clean, len(rows))


def _machine_during(topo: Topology, src: str, dst: str, steps: Sequence[Measurement],
                    context: Optional[JudgeContext]) -> Optional[MachineProfile]:
    """The lab's calibration with the latest its timers fired during any step of the search
    (each step's run measured it beside the lab: a loss that ends a search early may be the
    machine's), on the shaped links of ``src`` -> ``dst``; None when not calibrated."""
    if context is None or context.machine is None:
        return None
    late = [s.context.machine_late_ms for s in steps if s.context.machine_late_ms is not None]
    return context.machine.during(max(late, default=None), shaped_rates_mbps(topo, src, dst))


def judge_capacity(topo: Topology, src: str, dst: str, steps: Sequence[Measurement],
                   phases: Sequence[str], offered: Sequence[float],
                   context: Optional[JudgeContext] = None) -> CapacitySearch:
    """The judged search from its steps (in the order they ran)."""
    rows = capacity_rows(steps, phases, offered)
    summary = summarize_search(rows)
    expected = expect_pair(topo, src, dst)
    row = rate_verdicts.rate_verdict(summary.estimate_mbps, expected.udp_goodput_ceiling_mbps,
                                metric="capacity estimate",
                                machine=_machine_during(topo, src, dst, steps, context),
                                low_causes=rate_verdicts.UDP_LOW_CAUSES)
    return CapacitySearch(src, dst, list(steps), summary, expected, [row], rows=rows,
                          context=context or JudgeContext())
