"""Verdicts on rates: a transfer against what its path carries, a loss-limited or
window-limited rate, UDP, flows sharing a link (the verdict itself and those of RTTs:
:mod:`labtools.judge.verdicts`).

Rates
    Only the receiver's rate after the warm-up is judged (the sender counts bytes it put
    into its socket buffer; the first seconds are slow start). Within ``RATE_OK_LOW ..
    RATE_MAX`` of its expectation is ``ok``; above, ``invalid`` (more than the path can
    carry); below, ``suspicious`` when this machine could carry the load and
    ``inconclusive`` when it could not (its calibrated forwarding rate). A sender rate above
    the goodput ceiling gets an ``invalid`` row of its own. On a lossy path the loss-limited
    rate (Mathis et al.) is an estimate, not a ceiling: TCP above it is ``ok``, with a note
    (CUBIC may exceed it), unless it is more than the path carries. A reason calls a rate
    "within" a figure only when it is not above it.
UDP
    The received rate is judged against the smaller of the sent rate and the path's UDP
    goodput ceiling; offered clearly more than the path carries, it must lose datagrams.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from labtools.judge import policy
from labtools.judge.machine import MachineProfile
from labtools.judge.policy import INCONCLUSIVE, INVALID, OK, SUSPICIOUS
from labtools.judge.verdicts import Verdict

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


#: what else holds a TCP transfer's rate low, besides a busy machine
TCP_LOW_CAUSES = "too small a window, loss or competing traffic"
#: what else holds a UDP rate (a capacity search's estimate) low: a step lost datagrams
#: below the path's rate
UDP_LOW_CAUSES = ("datagrams lost below the path's rate: competing traffic, or a CPU too "
                  "busy to forward them")


def rate_verdict(measured_mbps: Optional[float], expected_mbps: Optional[float],
                 metric: str = "receiver_rate", load_mbps: Optional[float] = None,
                 machine: Optional[MachineProfile] = None,
                 low_causes: str = TCP_LOW_CAUSES) -> Verdict:
    """A receiver-side rate against its expectation (Mbit/s). ``load_mbps``: the total the
    network had to carry at the time (default: ``expected_mbps``), compared with what the
    ``machine`` forwards when the rate comes out low; ``low_causes``: what else makes such
    a rate low (:data:`TCP_LOW_CAUSES`, :data:`UDP_LOW_CAUSES`)."""
    if measured_mbps is None:
        return Verdict(metric, expected_mbps, None, "Mbit/s", INVALID, "no receiver rate reported")
    if expected_mbps is None:
        return Verdict(metric, None, measured_mbps, "Mbit/s", OK, "path is not rate-limited")
    ratio = measured_mbps / expected_mbps
    if ratio > policy.RATE_MAX:
        return Verdict(metric, expected_mbps, measured_mbps, "Mbit/s", INVALID,
                       f"{measured_mbps:.2f} Mbit/s is more than the path can carry "
                       f"({expected_mbps:.2f})")
    if ratio >= policy.RATE_OK_LOW:
        return Verdict(metric, expected_mbps, measured_mbps, "Mbit/s", OK,
                       f"{ratio:.0%} of the expected {expected_mbps:.2f} Mbit/s"
                       + _shortfall_note(measured_mbps, expected_mbps,
                                         load_mbps or expected_mbps, machine))
    return _low_rate(metric, measured_mbps, expected_mbps, load_mbps or expected_mbps, machine,
                     low_causes)


def loss_limited_verdict(measured_mbps: Optional[float], estimate_mbps: float,
                         carry_mbps: Optional[float], metric: str = "receiver_rate",
                         load_mbps: Optional[float] = None,
                         machine: Optional[MachineProfile] = None) -> Verdict:
    """A TCP rate on a lossy path: ``estimate_mbps`` is the loss-limited rate (Mathis et
    al., Reno's), ``carry_mbps`` what the path carries (its goodput ceiling or queue cap).
    More than the path carries (beyond :data:`~labtools.judge.policy.RATE_MAX` x it) is
    ``invalid``; above the estimate but not that, ``ok`` with a note (an estimate, which
    CUBIC may exceed); else judged against the estimate."""
    if (measured_mbps is not None and carry_mbps is not None
            and measured_mbps > carry_mbps * policy.RATE_MAX):
        return rate_verdict(measured_mbps, carry_mbps, metric)
    if measured_mbps is None or measured_mbps <= estimate_mbps * policy.RATE_MAX:
        return rate_verdict(measured_mbps, estimate_mbps, metric, load_mbps, machine)
    return Verdict(metric, estimate_mbps, measured_mbps, "Mbit/s", OK,
                   f"{measured_mbps:.2f} Mbit/s is above the loss-limited estimate "
                   f"{estimate_mbps:.2f} (Mathis et al., Reno's; CUBIC may exceed it), "
                   + _against_carry(measured_mbps, carry_mbps))


def _against_carry(measured_mbps: float, carry_mbps: Optional[float],
                   carrier: str = "the path") -> str:
    """How a rate that is not more than ``carrier`` carries stands against ``carry_mbps``
    (Mbit/s; None: no link limits the path): "within" only when it is not above it."""
    if carry_mbps is None:
        return "and no link limits the path"
    if measured_mbps <= carry_mbps:
        return f"within the {carry_mbps:.2f} {carrier} carries"
    return (f"{measured_mbps / carry_mbps - 1:.1%} above the {carry_mbps:.2f} {carrier} "
            f"carries, which a measured rate may be (up to {policy.RATE_MAX - 1:.0%} above)")


def _shortfall_note(measured: float, expected: float, load: float,
                    machine: Optional[MachineProfile]) -> str:
    """Why an ``ok`` rate below ``expected`` (Mbit/s) is still ok, or "": this machine's
    calibrated limit when the ``load`` did not fit in it; below
    :data:`~labtools.judge.policy.RATE_SHORTFALL_EXPLAINED` of expected, the tolerance."""
    limit = None if machine is None else machine.forward_limit(load)
    if measured < expected and limit is not None:
        return f" ({measured:.2f} measured): {limit}"
    if measured >= policy.RATE_SHORTFALL_EXPLAINED * expected:
        return ""
    known = ("this machine was not calibrated" if machine is None else
             f"this machine forwarded {machine.forward_mbps:.1f} Mbit/s when calibrated, "
             "enough for this load")
    return (f" ({measured:.2f} measured): a rate from {policy.RATE_OK_LOW:.0%} of the "
            f"expected is ok (one run on an emulated network; {known})")


def _low_rate(metric: str, measured: float, expected: float, load: float,
              machine: Optional[MachineProfile], causes: str = "") -> Verdict:
    ratio = measured / expected
    if machine is not None and not policy.fits_machine(load, machine.forward_mbps):
        return Verdict(metric, expected, measured, "Mbit/s", INCONCLUSIVE,
                       f"inconclusive: only {ratio:.0%} of {expected:.2f} Mbit/s, but this "
                       f"machine forwards at most {machine.forward_mbps:.1f} Mbit/s and the "
                       f"network had to carry {load:.1f}: the CPU, not the links, set the rate")
    late = None if machine is None else machine.timers_limit()
    if late is not None:
        return Verdict(metric, expected, measured, "Mbit/s", INCONCLUSIVE,
                       f"inconclusive: only {ratio:.0%} of {expected:.2f} Mbit/s; {late}")
    why = causes or TCP_LOW_CAUSES
    if machine is None:
        why += ", or an overloaded CPU (not calibrated)"
    return Verdict(metric, expected, measured, "Mbit/s", SUSPICIOUS,
                   f"only {ratio:.0%} of {expected:.2f} Mbit/s: {why}")


def machine_rate_verdict(measured_mbps: Optional[float],
                         machine: Optional[MachineProfile]) -> Verdict:
    """A transfer on a path no link limits: the CPU sets its rate, so it is compared with
    what this machine forwarded when it was calibrated (more is fine: fewer hops)."""
    metric = "receiver_rate"
    if measured_mbps is None:
        return Verdict(metric, None, None, "Mbit/s", INVALID, "no receiver rate reported")
    if machine is None:
        return Verdict(metric, None, measured_mbps, "Mbit/s", OK, "path is not rate-limited")
    expected = machine.forward_mbps
    if measured_mbps >= policy.RATE_OK_LOW * expected:
        return Verdict(metric, expected, measured_mbps, "Mbit/s", OK,
                       f"no link limits this path; this machine forwarded {expected:.0f} "
                       "Mbit/s when calibrated, and still does")
    return Verdict(metric, expected, measured_mbps, "Mbit/s", SUSPICIOUS,
                   f"only {measured_mbps / expected:.0%} of the {expected:.0f} Mbit/s this "
                   "machine forwarded when calibrated: its CPU is busy with something else, "
                   "and the emulated network slows down with it")


def window_verdict(measured_mbps: Optional[float], limit_mbps: float,
                   machine: Optional[MachineProfile] = None,
                   granted_limit_mbps: Optional[float] = None) -> Verdict:
    """A transfer held by its window: about window / RTT. ``limit_mbps``: the window asked
    for / RTT; ``granted_limit_mbps``: the window the kernel advertised (read with ``ss``)
    / RTT, which the rate is judged against when known. Above
    :data:`~labtools.judge.policy.WINDOW_GRANT_MAX` x the asked limit is impossible."""
    metric = "window_limited_rate"
    want = granted_limit_mbps if granted_limit_mbps is not None else limit_mbps
    which = ("the window the kernel granted / RTT" if granted_limit_mbps is not None
             else "the window asked for / RTT (the kernel's own was not read)")
    if measured_mbps is None:
        return Verdict(metric, want, None, "Mbit/s", INVALID, "no receiver rate reported")
    if measured_mbps > policy.WINDOW_GRANT_MAX * policy.RATE_MAX * limit_mbps:
        return Verdict(metric, want, measured_mbps, "Mbit/s", INVALID,
                       f"{measured_mbps:.2f} Mbit/s is more than any Linux grants for that "
                       f"window ({policy.WINDOW_GRANT_MAX:g} × {limit_mbps:.2f})")
    return (_in_band(metric, measured_mbps, want, policy.RATE_MAX, f"{which} =",
                     "more than one window per round trip", ": the window holds the rate")
            or _low_rate(metric, measured_mbps, want, want, machine))


def _in_band(metric: str, got: float, want: float, high: float, of_what: str,
             too_high: str, within: str = "") -> Optional[Verdict]:
    """A rate ``got`` against ``want`` (Mbit/s): suspicious above ``high`` x ``want``
    (``too_high`` says why), ok from :data:`~labtools.judge.policy.RATE_OK_LOW` x ``want``;
    None below that (the caller judges a low rate). The reason starts ``95% of {of_what}
    {want} Mbit/s``."""
    ratio = got / want
    share = f"{ratio:.0%} of {of_what} {want:.2f} Mbit/s"
    if ratio > high:
        return Verdict(metric, want, got, "Mbit/s", SUSPICIOUS, f"{share}: {too_high}")
    if ratio >= policy.RATE_OK_LOW:
        return Verdict(metric, want, got, "Mbit/s", OK, share + within)
    return None


def sender_guard(sender_mbps: Optional[float], ceiling_mbps: Optional[float]) -> Optional[Verdict]:
    """An ``invalid`` verdict when the sender claims more than the goodput ceiling allows
    (it counts bytes written to its socket buffer); else None."""
    if sender_mbps is None or ceiling_mbps is None or sender_mbps <= ceiling_mbps * policy.RATE_MAX:
        return None
    return Verdict("sender_rate", ceiling_mbps, sender_mbps, "Mbit/s", INVALID,
                   f"sender reports {sender_mbps:.2f} Mbit/s, above the goodput ceiling "
                   f"{ceiling_mbps:.2f}: it counts bytes put into its socket buffer, not bytes "
                   "that crossed the link; use the receiver's rate")


def flag_sender_intervals(intervals: "pd.DataFrame", link_mbps: float) -> "pd.DataFrame":
    """A copy of a per-interval table with ``above_link`` set where ``rate_mbps`` exceeds
    the link rate (sender-side overshoot)."""
    out = intervals.copy()
    out["above_link"] = out["rate_mbps"].astype(float) > link_mbps * policy.RATE_MAX
    return out


def udp_verdicts(received_mbps: Optional[float], sent_mbps: Optional[float],
                 loss_pct: Optional[float], ceiling_mbps: Optional[float],
                 machine: Optional[MachineProfile] = None) -> List[Verdict]:
    """A UDP stream: the received rate against min(sent, UDP ceiling); above the ceiling by
    :data:`~labtools.judge.policy.UDP_OVERLOAD`, loss must show."""
    expected = ceiling_mbps
    if sent_mbps is not None and (ceiling_mbps is None or sent_mbps < ceiling_mbps):
        expected = sent_mbps
    rows = [rate_verdict(received_mbps, expected, machine=machine)]
    overloaded = (sent_mbps is not None and ceiling_mbps is not None
                  and sent_mbps > policy.UDP_OVERLOAD * ceiling_mbps)
    if overloaded and loss_pct is not None:
        want = policy.UDP_LOSS_ABOVE_CAPACITY_PCT
        ok = loss_pct > want
        rows.append(Verdict("loss_above_capacity", want, loss_pct, "%", OK if ok else INVALID,
                            f"{loss_pct:.1f} % lost with {sent_mbps:.2f} Mbit/s sent into a path "
                            f"of {ceiling_mbps:.2f}" + ("" if ok else
                                                       ": too little loss for that overload")))
    return rows


# --- sharing -------------------------------------------------------------------------------
def share_verdict(label: str, got: Optional[float], want: Optional[float],
                  alone: Optional[float], link_full: bool, load_mbps: Optional[float] = None,
                  machine: Optional[MachineProfile] = None) -> Verdict:
    """One flow's rate against its fair share (Mbit/s of goodput): ok from
    :data:`~labtools.judge.policy.RATE_OK_LOW` to :data:`~labtools.judge.policy.SHARE_HIGH`
    times it; above that uneven sharing; above what its path carries alone, invalid; below it,
    uneven sharing when the shared link was full, else inconclusive when the machine could
    not carry ``load_mbps`` (all flows together), else suspicious."""
    metric = f"share {label}"
    if got is None or want is None:
        return rate_verdict(got, want, metric=metric)
    ratio = got / want
    if alone is not None and got > alone * policy.RATE_MAX:
        return Verdict(metric, want, got, "Mbit/s", INVALID,
                       f"{got:.2f} Mbit/s is more than this path can carry even alone "
                       f"({alone:.2f})")
    judged = _in_band(metric, got, want, policy.SHARE_HIGH, "its fair share", "uneven "
                      "sharing (a flow that starts first or has a larger window keeps more)")
    if judged is not None:
        return judged
    if link_full:
        return Verdict(metric, want, got, "Mbit/s", SUSPICIOUS,
                       f"only {ratio:.0%} of its fair share {want:.2f} Mbit/s: the shared link "
                       "was full, so another flow took more: uneven sharing")
    return _low_rate(metric, got, want, load_mbps or want, machine)


def total_verdict(total_mbps: float, capacity_mbps: float, load_mbps: float,
                  machine: Optional[MachineProfile]) -> Verdict:
    """The flows' rates added up, against what the shared link carries (``capacity_mbps``
    of goodput). ``load_mbps``: what all the flows together should have received."""
    if total_mbps > capacity_mbps * policy.RATE_MAX:
        return Verdict("sum of shares", capacity_mbps, total_mbps, "Mbit/s", INVALID,
                       "shares add up to more than the bottleneck can carry")
    low = rate_verdict(total_mbps, capacity_mbps, "sum of shares", load_mbps, machine)
    if low.verdict == INCONCLUSIVE:
        return low
    said = ("no more than the bottleneck" if total_mbps <= capacity_mbps else f"{total_mbps:.2f} "
            f"Mbit/s, {_against_carry(total_mbps, capacity_mbps, 'the bottleneck')}")
    return Verdict("sum of shares", capacity_mbps, total_mbps, "Mbit/s", OK,
                   f"shares add up to {said}")


def jain_verdict(index: Optional[float], total_ok: bool, link: str = "") -> Verdict:
    """Jain's index of the connections whose share ``link`` sets (each connection's rate
    divided by its fair share) against :data:`~labtools.judge.policy.JAIN_OK`; when the
    total was not conclusive, uneven sharing may be the CPU's doing."""
    metric = "Jain's index (rate / fair share" + (f" on {link})" if link else ")")
    if index is None:
        return Verdict(metric, 1.0, None, "", INVALID, "no connection received anything")
    if index >= policy.JAIN_OK:
        verdict, reason = OK, f"{index:.3f} ≥ {policy.JAIN_OK}: each got about its fair share"
    elif not total_ok:
        verdict, reason = INCONCLUSIVE, (f"inconclusive: {index:.3f}, but the machine could "
                                         "not carry the load, so the CPU shared it out")
    else:
        verdict, reason = SUSPICIOUS, (f"{index:.3f} < {policy.JAIN_OK}: uneven sharing (1.0 "
                                       "= every connection at its fair share; short runs and "
                                       "large windows make it uneven)")
    return Verdict(metric, 1.0, round(index, 4), "", verdict, reason)
