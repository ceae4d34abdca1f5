"""Finding an unknown path's capacity with UDP, as a student would by hand, automated.

1. Start low (``start_mbps``) and multiply the offered rate by ``factor`` each step.
2. Watch the receiver: the knee is the first saturated step (loss or no growth, see
   :func:`labtools.judge.capacity.is_saturated`).
3. Refine between the last clean rate and the knee by bisection (``refine_steps``).
4. The estimate is the highest received rate at or below the knee.

:func:`search_rates` is the pure search (any ``step(rate, phase) -> saturated`` function);
:func:`capacity_search` drives it with iperf UDP probes on a real network and returns the
judged :class:`~labtools.judge.capacity.CapacitySearch`, saved as a group of runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, List, Optional

from labtools.errors import InputError
from labtools.judge.capacity import CapacitySearch, is_saturated, judge_capacity
from labtools.judge.measurement import Measurement, ProbeCall
from labtools.results.records import GroupRecord, utc_now
from labtools.tools.summaries import UdpSummary, require_kind

if TYPE_CHECKING:  # pragma: no cover
    from labtools.lab.session import LabSession


@dataclass(frozen=True)
class SearchSettings:
    """How the capacity search proceeds (rates in Mbit/s)."""

    start_mbps: float = 1.0
    factor: float = 2.0
    max_mbps: float = 1000.0
    refine_steps: int = 3

    def check(self) -> None:
        """Refuse settings that cannot converge."""
        if not 0 < self.start_mbps <= self.max_mbps:
            raise InputError("start rate must be > 0 and at most the maximum rate")
        if self.factor <= 1:
            raise InputError("the rate factor must be > 1")
        if not 0 <= self.refine_steps <= 10:
            raise InputError("refine steps must be within 0..10")


def search_rates(step: Callable[[float, str], bool], settings: SearchSettings) -> None:
    """Ramp up by ``factor`` until ``step(rate, "ramp")`` says saturated (or ``max_mbps``
    is passed), then bisect ``refine_steps`` times between the last clean rate and it."""
    settings.check()
    clean: Optional[float] = None
    knee: Optional[float] = None
    rate = settings.start_mbps
    while rate <= settings.max_mbps:
        if step(rate, "ramp"):
            knee = rate
            break
        clean = rate
        rate *= settings.factor
    if knee is None or clean is None:
        return
    low, high = clean, knee
    for _ in range(settings.refine_steps):
        middle = (low + high) / 2
        if step(middle, "refine"):
            high = middle
        else:
            low = middle


def capacity_search(lab: "LabSession", src: str, dst: str,
                    settings: Optional[SearchSettings] = None,
                    step_s: Optional[float] = None,
                    progress: Optional[Callable[[str], None]] = None) -> CapacitySearch:
    """Search the UDP capacity from ``src`` to ``dst`` with iperf UDP steps of ``step_s``
    seconds (default: the session's ``capacity_step_s``); every step is saved as it
    completes, the search as a group at the end."""
    from labtools.lab import probes

    settings = settings or SearchSettings()
    settings.check()
    call = ProbeCall("capacity_search", {"src": src, "dst": dst,
                                         "start_mbps": settings.start_mbps,
                                         "factor": settings.factor,
                                         "max_mbps": settings.max_mbps,
                                         "refine_steps": settings.refine_steps})
    seconds = lab.durations.capacity_step_s if step_s is None else step_s
    lab.check_node(src)
    lab.check_node(dst)

    def run() -> CapacitySearch:
        steps: List[Measurement] = []
        phases: List[str] = []
        offered: List[float] = []
        started = utc_now()
        with lab.group() as group_id:
            def step(rate: float, phase: str) -> bool:
                if progress is not None:
                    progress(f"{phase}: offering {rate:.3g} Mbit/s")
                m = probes.one_run(probes.iperf_udp(lab, src, dst, rate, duration_s=seconds))
                steps.append(m)
                phases.append(phase)
                offered.append(rate)
                s = require_kind(m.summary, UdpSummary)
                return is_saturated(rate, s.receiver_mbps, s.loss_pct)

            search_rates(step, settings)
            result = judge_capacity(lab.topo, src, dst, steps, phases, offered, lab.context())
            result.group_id, result.call, result.started_at = group_id, call, started
            result.finished_at = utc_now()
            if lab.store is not None:
                lab.store.save_group(GroupRecord(
                    group_id, "capacity", {"src": src, "dst": dst, "phases": phases,
                                           "offered_mbps": offered},
                    result.summary, result.verdicts, lab.session_id, lab.step, call,
                    lab.case, result.context, started, result.finished_at))
        return result

    return lab.perform(call, run)
