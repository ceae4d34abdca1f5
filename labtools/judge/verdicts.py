"""Verdicts: is a measurement believable, and does it agree with the physics?

Every verdict is ``ok``, ``suspicious``, ``invalid`` or ``inconclusive`` with a one-line
reason; the numbers behind them are in :mod:`labtools.judge.policy`. This module holds the
verdict itself and those of RTTs; the rates', UDP's and shared links' are in
:mod:`labtools.judge.rate_verdicts`.

RTT series
    The minimum is compared with the expected RTT (propagation, plus what this machine adds
    on the same links when it was calibrated): within the tolerance is ``ok``; below is
    ``invalid`` (faster than the propagation delay: the network is not what the topology
    says); above is ``suspicious``. An average above the outlier threshold is a verdict of
    its own (``rtt_avg``, ``suspicious``): compare the minimum. Each sample above the
    threshold is an outlier: the first one "includes ARP resolution", the others
    "queueing or CPU delay".
Worst RTT
    The largest sample is compared with the worst RTT of the steady state (a saturated
    link, every queue on the way full): a burst onto an idle link within one delay can
    exceed it, so a sample above it is ``suspicious`` (the links in their steady state do
    not explain it), never ``invalid``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from labtools.errors import InputError
from labtools.judge import policy
from labtools.judge.policy import INCONCLUSIVE, INVALID, OK, SUSPICIOUS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from labtools.model.queues import LoadedRtt

#: columns of a verdict table (:func:`compare`)
COMPARE_COLUMNS = ["metric", "expected", "measured", "unit", "ratio", "verdict", "reason"]


@dataclass(frozen=True)
class Verdict:
    """One judged number: what was expected, what was measured, the verdict and why."""

    metric: str
    expected: Optional[float]
    measured: Optional[float]
    unit: str
    verdict: str
    reason: str

    @property
    def ratio(self) -> Optional[float]:
        """measured / expected, rounded to 4 digits (None where undefined)."""
        if self.expected in (None, 0) or self.measured is None:
            return None
        return round(self.measured / self.expected, 4)

    def as_dict(self) -> Dict[str, Any]:
        """A row of :data:`COMPARE_COLUMNS`."""
        return {"metric": self.metric, "expected": self.expected, "measured": self.measured,
                "unit": self.unit, "ratio": self.ratio, "verdict": self.verdict,
                "reason": self.reason}

    @classmethod
    def from_dict(cls, row: Dict[str, Any]) -> "Verdict":
        """A verdict from its :meth:`as_dict` row."""
        return cls(str(row["metric"]), row.get("expected"), row.get("measured"),
                   str(row.get("unit", "")), str(row["verdict"]), str(row.get("reason", "")))


def compare(verdicts: Sequence[Verdict]) -> "pd.DataFrame":
    """Verdicts as a DataFrame with :data:`COMPARE_COLUMNS`."""
    import pandas as pd

    return pd.DataFrame([v.as_dict() for v in verdicts], columns=COMPARE_COLUMNS)


# --- RTT -----------------------------------------------------------------------------------
def flag_rtt_outliers(rtts: "pd.DataFrame") -> "pd.DataFrame":
    """A copy of a ping table with ``outlier`` (bool) and ``reason`` columns added."""
    if "rtt_ms" not in rtts.columns:
        raise InputError("RTT table has no rtt_ms column")
    out = rtts.copy()
    values = out["rtt_ms"].astype(float)
    if values.notna().sum() == 0:
        out["outlier"], out["reason"] = False, ""
        return out
    limit = policy.outlier_threshold_ms(float(values.min()))
    out["outlier"] = values > limit
    reasons = []
    for position, (flag, value) in enumerate(zip(out["outlier"], values)):
        if not flag:
            reasons.append("")
        elif position == 0:
            reasons.append(f"first packet: includes ARP resolution ({value:.1f} > {limit:.1f} ms)")
        else:
            reasons.append(f"queueing or CPU delay ({value:.1f} > {limit:.1f} ms)")
    out["reason"] = reasons
    return out


def rtt_verdict(min_ms: Optional[float], expected_ms: float, machine_ms: float = 0.0) -> Verdict:
    """The minimum RTT against ``expected_ms`` of propagation, plus ``machine_ms`` that a
    calibration says this machine adds on the same links."""
    if min_ms is None:
        return Verdict("rtt_min", expected_ms, None, "ms", INVALID, "no reply: nothing to compare")
    tol = policy.rtt_tolerance_ms(expected_ms)
    want = expected_ms + machine_ms
    said = (f"{expected_ms:g} ms of links + {machine_ms:.1f} ms this machine adds (calibrated)"
            if machine_ms else f"{expected_ms:g} ms")
    if min_ms < expected_ms - tol:
        verdict, reason = INVALID, (
            f"min RTT {min_ms:.1f} ms is below the propagation delay {expected_ms:g} ms: "
            "the network differs from the topology")
    elif min_ms > want + tol:
        verdict, reason = SUSPICIOUS, (
            f"min RTT {min_ms:.1f} ms exceeds {said} by more than {tol:.1f} ms: "
            "extra queueing or an overloaded CPU")
    else:
        verdict, reason = OK, f"min RTT {min_ms:.1f} ms ≈ {said} (within {tol:.1f} ms)"
    return Verdict("rtt_min", expected_ms, min_ms, "ms", verdict, reason)


def rtt_average_verdict(min_ms: Optional[float], avg_ms: Optional[float]) -> Verdict:
    """The average RTT against the series' outlier threshold: an average above it is
    inflated by outliers (``suspicious``: compare the minimum, not the average)."""
    if min_ms is None or avg_ms is None:
        return Verdict("rtt_avg", None, avg_ms, "ms", OK, "no average to compare")
    limit = policy.outlier_threshold_ms(min_ms)
    if avg_ms > limit:
        return Verdict("rtt_avg", limit, avg_ms, "ms", SUSPICIOUS,
                       f"average {avg_ms:.1f} ms is inflated by outliers (above {limit:.1f} "
                       "ms): it describes the waiting, not the links; trust the minimum")
    return Verdict("rtt_avg", limit, avg_ms, "ms", OK,
                   f"average {avg_ms:.1f} ms within {limit:.1f} ms: few or no outliers")


def rtt_bound_verdict(largest_ms: Optional[float], max_ms: Optional[float],
                      machine_ms: Optional[float] = None, unbounded: Tuple[str, ...] = (),
                      shaped: bool = True, full: str = "every queue on the way full",
                      short_load: Optional[str] = None,
                      late_allowance_ms: float = 0.0) -> Verdict:
    """The largest RTT sample (after the first, which also waits for address resolution)
    against the worst RTT of the steady state (``max_ms``, with ``full``: a saturated link
    holds a packet max(delay, drain time)), plus what this machine adds (``machine_ms``
    from its calibration; None: not calibrated).

    A sample above it is ``suspicious``: the links in their steady state do not explain it
    (a burst onto an idle link within one delay, or the machine, can), and the reason says
    what is known, not whom to blame. ``short_load``: why the run's load did not drive its
    link at the link's rate (the machine could not keep up): then ``inconclusive``.
    ``shaped``: False when no link on the way or back has a rate (no queue can build).
    ``late_allowance_ms``: what this machine's timers, measured late during the run, add
    to a round trip; a sample above the worst RTT (with the tolerance) by no more than
    that is ``inconclusive``."""
    metric = "rtt_max"
    if not shaped:
        return Verdict(metric, None, largest_ms, "ms", OK,
                       "no shaped link on the way: no queue builds here, the time is the "
                       "machine's own (no worst RTT from the links)")
    if max_ms is None:
        links = ", ".join(unbounded) or "a link"
        return Verdict(metric, None, largest_ms, "ms", OK,
                       f"no worst RTT: {links} has no queue limit, waiting there is unbounded")
    if largest_ms is None:
        return Verdict(metric, max_ms, None, "ms", OK, "too few replies to compare")
    if short_load is not None:
        return _load_fell_short(metric, max_ms, largest_ms, short_load, f"the largest sample "
                                f"was {largest_ms:.1f} ms against {max_ms:.1f} ms with {full}")
    return _against_worst_rtt(metric, largest_ms, max_ms, machine_ms, full, late_allowance_ms)


def _against_worst_rtt(metric: str, largest_ms: float, max_ms: float,
                       machine_ms: Optional[float], full: str,
                       late_allowance_ms: float) -> Verdict:
    """:func:`rtt_bound_verdict` once there is a bound and a sample to hold against it:
    ``ok`` within the tolerance and what the machine adds, ``inconclusive`` within the
    late timers' allowance on top, ``suspicious`` above (all in ms)."""
    added = machine_ms or 0.0
    tolerance = policy.rtt_tolerance_ms(max_ms)
    limit = max_ms + added + tolerance
    worst = f"the worst RTT of the steady state ({max_ms:.1f} ms with {full})"
    if largest_ms <= max_ms:
        return Verdict(metric, max_ms, largest_ms, "ms", OK,
                       f"every sample at or below {worst}")
    allowed = [f"the {tolerance:.1f} ms tolerance"] + (
        [f"the {added:.1f} ms this machine adds (calibrated)"] if added else [])
    above = f"{largest_ms - max_ms:.1f} ms above {worst}, no more than"
    if largest_ms <= limit:
        return Verdict(metric, max_ms, largest_ms, "ms", OK,
                       f"the largest sample, {largest_ms:.1f} ms, is {above} "
                       + _listed(allowed))
    if late_allowance_ms and largest_ms <= limit + late_allowance_ms:
        late = (f"the {late_allowance_ms:.1f} ms this machine's late timers added during the "
                "run (measured beside it)")
        return Verdict(metric, max_ms, largest_ms, "ms", INCONCLUSIVE,
                       f"inconclusive: a sample of {largest_ms:.1f} ms is {above} "
                       + _listed(allowed + [late]))
    known = (f"even with the {added:.1f} ms this machine adds (calibrated)"
             if machine_ms is not None else "(this machine was not calibrated: what it adds "
                                            "is unknown)")
    return Verdict(metric, max_ms, largest_ms, "ms", SUSPICIOUS,
                   f"a sample of {largest_ms:.1f} ms is above {worst} {known}: a saturated "
                   "link does not explain it; a burst onto an idle link within one delay (a "
                   "transfer's first round trips, traffic you did not start) or another "
                   "program's load on this machine can")


def _listed(parts: List[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _load_fell_short(metric: str, want: float, got: float, short_load: str,
                     detail: str) -> Verdict:
    """``inconclusive``: the run's load did not drive its link at the link's rate
    (``short_load`` says why), so the RTT ``got`` (ms) says little about ``want``."""
    return Verdict(metric, want, got, "ms", INCONCLUSIVE, f"inconclusive: {short_load}; {detail}")


def loaded_rtt_verdict(p50_ms: Optional[float], model: "LoadedRtt", machine_ms: float = 0.0,
                       short_load: Optional[str] = None, replies: Optional[int] = None
                       ) -> Verdict:
    """The median RTT under a TCP load against the queue model's typical RTT
    (:mod:`labtools.model.queues`) plus what this machine adds: within
    :data:`~labtools.judge.policy.LOADED_RTT_TOL_REL` is ``ok``. ``short_load``: why the
    load did not drive its link at the link's rate (then ``inconclusive``). ``replies``:
    how many replies the median rests on (named in the reason)."""
    metric = "rtt_p50 under load"
    want = model.typical_ms + machine_ms
    of = "" if replies is None else f" of {policy.replies_text(replies)}"
    where = (f"{model.load_src}->{model.load_dst} fills {model.queue_link}'s queue: RTT "
             f"{model.low_ms:.1f}-{model.high_ms:.1f} ms" if model.queue_link else
             f"{model.load_src}->{model.load_dst} fills no queue on this pair's way")
    if p50_ms is None:
        return Verdict(metric, want, None, "ms", INVALID, "no reply: nothing to compare")
    if short_load is not None:
        return _load_fell_short(metric, want, p50_ms, short_load, f"the queue model ({where}) "
                                "assumes the link ran at its rate")
    tol = max(policy.RTT_TOL_MS, policy.LOADED_RTT_TOL_REL * want)
    if abs(p50_ms - want) <= tol:
        return Verdict(metric, want, p50_ms, "ms", OK,
                       f"median {p50_ms:.1f} ms{of} ≈ the model's {want:.1f} ms ({where})")
    side = "above" if p50_ms > want else "below"
    return Verdict(metric, want, p50_ms, "ms", SUSPICIOUS,
                   f"median {p50_ms:.1f} ms{of} is {abs(p50_ms / want - 1):.0%} {side} the model's "
                   f"{want:.1f} ms ({where}): another flow, a different congestion control "
                   "or queue than the topology says")


# --- rates ---------------------------------------------------------------------------------
