"""Verdicts: is a measurement believable, and does it agree with the physics?

Every verdict is one of ``ok``, ``suspicious`` or ``invalid`` with a one-line reason.

Rules (thresholds are the module constants below):

RTT outliers, per sample
    A sample is an outlier when ``rtt_ms > min_ms + max(OUTLIER_ABS_MS, OUTLIER_REL *
    min_ms)``, where ``min_ms`` is the smallest RTT of the series. The first sample gets
    the reason "first packet: includes ARP resolution"; the others "queueing or CPU delay".
RTT series
    The minimum is compared with the expected RTT: within ``max(RTT_TOL_MS, RTT_TOL_REL *
    expected)`` is ``ok``; below that is ``invalid`` (faster than the propagation delay: the
    network is not what the topology says); above is ``suspicious`` (extra delay). An
    average above ``min + max(OUTLIER_ABS_MS, OUTLIER_REL * min)`` makes the series
    ``suspicious``: the average is inflated by outliers, so compare the minimum.
Rates
    Only the receiver's rate is compared with the expectation (the sender counts what it
    wrote into its socket buffer). ``measured / expected`` within ``RATE_OK_LOW ..
    RATE_MAX`` is ``ok``; below ``RATE_OK_LOW`` ``suspicious``; above ``RATE_MAX``
    ``invalid`` (more than the link can carry). A sender rate above the link rate or above
    the goodput ceiling (by more than ``RATE_MAX``) is flagged ``invalid`` with the reason.
Warm-up
    Intervals that start before ``WARMUP_S`` seconds are discarded before averaging
    (slow start and buffer filling).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from labtools.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

OK, SUSPICIOUS, INVALID = "ok", "suspicious", "invalid"
OUTLIER_ABS_MS = 2.0
OUTLIER_REL = 0.10
RTT_TOL_MS = 2.0
RTT_TOL_REL = 0.05
RATE_OK_LOW = 0.70
RATE_MAX = 1.02
WARMUP_S = 1.0

#: columns of :func:`compare` and :func:`verdicts_for`
COMPARE_COLUMNS = ["metric", "expected", "measured", "unit", "ratio", "verdict", "reason"]


def outlier_threshold_ms(min_ms: float) -> float:
    """RTTs above this (ms) are outliers in a series whose minimum is ``min_ms``."""
    return min_ms + max(OUTLIER_ABS_MS, OUTLIER_REL * min_ms)


def flag_rtt_outliers(rtts: "pd.DataFrame") -> "pd.DataFrame":
    """A copy of a ping table with ``outlier`` (bool) and ``reason`` columns added.

    ``rtts`` needs an ``rtt_ms`` column (rows in the order the replies came)."""
    if "rtt_ms" not in rtts.columns:
        raise InputError("RTT table has no rtt_ms column")
    out = rtts.copy()
    values = out["rtt_ms"].astype(float)
    if values.notna().sum() == 0:
        out["outlier"] = False
        out["reason"] = ""
        return out
    limit = outlier_threshold_ms(float(values.min()))
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


def rtt_verdict(min_ms: Optional[float], avg_ms: Optional[float],
                expected_ms: float) -> Dict[str, Any]:
    """Verdict for one RTT series (see the module docstring); a row of :func:`compare`."""
    if min_ms is None:
        return _row("rtt_min", expected_ms, None, "ms", INVALID, "no reply: nothing to compare")
    tol = max(RTT_TOL_MS, RTT_TOL_REL * expected_ms)
    if min_ms < expected_ms - tol:
        verdict, reason = INVALID, (
            f"min RTT {min_ms:.1f} ms is below the propagation delay {expected_ms:g} ms: "
            "the network differs from the topology")
    elif min_ms > expected_ms + tol:
        verdict, reason = SUSPICIOUS, (
            f"min RTT {min_ms:.1f} ms exceeds {expected_ms:g} ms by more than {tol:.1f} ms: "
            "extra queueing or an overloaded CPU")
    else:
        verdict, reason = OK, f"min RTT within {tol:.1f} ms of the expected {expected_ms:g} ms"
    if avg_ms is not None and avg_ms > outlier_threshold_ms(min_ms):
        if verdict == OK:
            verdict = SUSPICIOUS
        reason += (f"; average {avg_ms:.1f} ms is inflated by outliers "
                   f"(above {outlier_threshold_ms(min_ms):.1f} ms): trust the minimum")
    return _row("rtt_min", expected_ms, min_ms, "ms", verdict, reason)


def rate_verdict(measured_mbps: Optional[float], expected_mbps: Optional[float],
                 metric: str = "receiver_rate") -> Dict[str, Any]:
    """Verdict for a receiver-side rate against its expectation (Mbit/s)."""
    if measured_mbps is None:
        return _row(metric, expected_mbps, None, "Mbit/s", INVALID, "no receiver rate reported")
    if expected_mbps is None:
        return _row(metric, None, measured_mbps, "Mbit/s", OK, "path is not rate-limited")
    ratio = measured_mbps / expected_mbps
    if ratio > RATE_MAX:
        verdict, reason = INVALID, (
            f"{measured_mbps:.2f} Mbit/s is more than the path can carry ({expected_mbps:.2f})")
    elif ratio < RATE_OK_LOW:
        verdict, reason = SUSPICIOUS, (
            f"only {ratio:.0%} of {expected_mbps:.2f} Mbit/s: too small a window, loss, "
            "competing traffic or an overloaded CPU")
    else:
        verdict, reason = OK, f"{ratio:.0%} of the expected {expected_mbps:.2f} Mbit/s"
    return _row(metric, expected_mbps, measured_mbps, "Mbit/s", verdict, reason)


def sender_guard(sender_mbps: Optional[float], link_mbps: Optional[float],
                 ceiling_mbps: Optional[float]) -> Optional[Dict[str, Any]]:
    """An ``invalid`` row when the sender claims more than the link or the goodput ceiling
    allows (the sender counts bytes written to its socket buffer); else None."""
    if sender_mbps is None or link_mbps is None:
        return None
    limit, what = (ceiling_mbps, "goodput ceiling") if ceiling_mbps else (link_mbps, "link rate")
    if sender_mbps <= limit * RATE_MAX:
        return None
    return _row("sender_rate", limit, sender_mbps, "Mbit/s", INVALID,
                f"sender reports {sender_mbps:.2f} Mbit/s, above the {what} {limit:.2f}: it "
                "counts bytes put into its socket buffer, not bytes that crossed the link; "
                "use the receiver's rate")


def flag_sender_intervals(intervals: "pd.DataFrame", link_mbps: float) -> "pd.DataFrame":
    """A copy of a per-interval table with ``above_link`` set where ``rate_mbps`` exceeds
    the link rate (sender-side overshoot)."""
    out = intervals.copy()
    out["above_link"] = out["rate_mbps"].astype(float) > link_mbps * RATE_MAX
    return out


def discard_warmup(intervals: "pd.DataFrame", warmup_s: float = WARMUP_S) -> "pd.DataFrame":
    """Intervals that start at or after ``warmup_s`` seconds (needs ``start_s``)."""
    if warmup_s < 0:
        raise InputError(f"warm-up must be >= 0 s, got {warmup_s}")
    return intervals[intervals["start_s"].astype(float) >= warmup_s - 1e-9].copy()


def compare(rows: Sequence[Dict[str, Any]]) -> "pd.DataFrame":
    """Rows of verdicts as a DataFrame with :data:`COMPARE_COLUMNS`."""
    import pandas as pd

    return pd.DataFrame(list(rows), columns=COMPARE_COLUMNS)


def share_verdicts(measured_mbps: Sequence[Optional[float]], expected_mbps: Sequence[Optional[float]],
                   labels: Sequence[str], bottleneck_mbps: Optional[float] = None,
                   alone_mbps: Optional[Sequence[Optional[float]]] = None) -> List[Dict[str, Any]]:
    """Per-flow rows comparing measured shares with max-min shares (Mbit/s of goodput), plus
    a total row when ``bottleneck_mbps`` (the shared link's goodput ceiling) is given.

    A flow above its fair share is ``suspicious`` (uneven sharing), not ``invalid``: only
    more than its own path could carry alone (``alone_mbps``) or a total above the shared
    bottleneck is impossible.
    """
    alone = list(alone_mbps) if alone_mbps is not None else [None] * len(labels)
    known = [x for x in measured_mbps if x is not None]
    total = sum(known)
    link_full = bottleneck_mbps is not None and total >= bottleneck_mbps * RATE_OK_LOW
    rows = [_share_row(label, got, want, limit, link_full)
            for label, got, want, limit in zip(labels, measured_mbps, expected_mbps, alone)]
    if bottleneck_mbps is not None:
        verdict = INVALID if total > bottleneck_mbps * RATE_MAX else OK
        rows.append(_row("sum of shares", bottleneck_mbps, total, "Mbit/s", verdict,
                         "shares add up to no more than the bottleneck" if verdict == OK
                         else "shares add up to more than the bottleneck can carry"))
    return rows


def _share_row(label: str, got: Optional[float], want: Optional[float],
               alone: Optional[float], link_full: bool) -> Dict[str, Any]:
    """One flow's share: ok within 70-102 % of the fair share; above it uneven sharing;
    above what its path carries alone, invalid; below it, why depends on ``link_full``."""
    metric = f"share {label}"
    if got is None or want is None:
        return rate_verdict(got, want, metric=metric)
    ratio = got / want
    if alone is not None and got > alone * RATE_MAX:
        return _row(metric, want, got, "Mbit/s", INVALID,
                    f"{got:.2f} Mbit/s is more than this path can carry even alone ({alone:.2f})")
    if ratio > RATE_MAX:
        return _row(metric, want, got, "Mbit/s", SUSPICIOUS,
                    f"{ratio:.0%} of its fair share {want:.2f} Mbit/s: uneven sharing (a flow "
                    "that starts first or has a larger window keeps more; longer runs even out)")
    if ratio < RATE_OK_LOW:
        why = ("the shared link was full, so another flow took more: uneven sharing" if link_full
               else "too small a window, loss or an overloaded CPU")
        return _row(metric, want, got, "Mbit/s", SUSPICIOUS,
                    f"only {ratio:.0%} of its fair share {want:.2f} Mbit/s: {why}")
    return _row(metric, want, got, "Mbit/s", OK, f"{ratio:.0%} of its fair share {want:.2f} Mbit/s")


def _row(metric: str, expected: Optional[float], measured: Optional[float], unit: str,
         verdict: str, reason: str) -> Dict[str, Any]:
    ratio = None
    if expected not in (None, 0) and measured is not None:
        ratio = round(measured / expected, 4)  # type: ignore[operator]
    return {"metric": metric, "expected": expected, "measured": measured, "unit": unit,
            "ratio": ratio, "verdict": verdict, "reason": reason}


def verdicts_for(parsed: Any, topo: Any, src: str, dst: str) -> "pd.DataFrame":
    """Expected-vs-measured rows for one parsed run between ``src`` and ``dst`` of ``topo``.

    ping: min RTT against the propagation RTT (with the average checked for outliers).
    iperf3 / iperf / simpleperf: the receiver's rate against the TCP goodput ceiling (UDP:
    against the smaller of the offered rate and the UDP goodput ceiling), plus the sender
    guard.
    """
    from labtools.model import expect

    summary = parsed.summary
    if parsed.tool == "ping":
        expected = expect.rtt_ms(topo, src, dst)
        return compare([rtt_verdict(summary.get("min_ms"), summary.get("avg_ms"), expected)])
    link_mbps, _label = expect.bottleneck(topo, src, dst)
    udp = str(summary.get("protocol", "tcp")).lower() == "udp"
    ceiling = None
    if link_mbps is not None:
        ceiling = expect.udp_goodput_mbps(link_mbps) if udp else expect.tcp_goodput_ceiling_mbps(link_mbps)
    expected_rate = ceiling
    offered = summary.get("sender_mbps")
    if udp and offered is not None and (ceiling is None or offered < ceiling):
        expected_rate = offered
    rows = [rate_verdict(summary.get("receiver_mbps"), expected_rate)]
    guard = sender_guard(summary.get("sender_mbps"), link_mbps, None if udp else ceiling)
    if guard is not None and not udp:
        rows.append(guard)
    return compare(rows)
