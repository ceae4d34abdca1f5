"""What this machine adds to an emulated network and what it can carry (a calibration).

The lab measures it at start (:mod:`labtools.lab.calibration`) on a small network of its
own beside the lab's: one unshaped hop, one delayed hop, and a TCP transfer through two
emulated routers whose links do not limit the rate. Under software emulation every number
here is far from zero: timers fire late and the CPU, not the links, sets the rate.

The verdicts use it (:mod:`labtools.judge.verdicts`): an RTT is expected to be the links'
propagation plus what this machine adds on the same links, and a rate below expectation is
``inconclusive`` when the load did not fit in what the machine forwards.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Dict, Optional, Sequence, Tuple

from labtools.errors import InputError
from labtools.judge import policy
from labtools.model.expect import htb_burst_ms, path_burst_ms
from labtools.model.topology import Link


@dataclass(frozen=True)
class MachineProfile:
    """A calibration of this machine.

    Attributes:
        unshaped_link_ms: what one crossing of an unshaped link costs, ms (half the
            minimum RTT of a ping over one such link).
        delayed_link_late_ms: how late one crossing of a delayed (netem) link arrives
            beyond its delay, ms (half of: minimum RTT minus twice the delay).
        forward_mbps: TCP goodput (Mbit/s) that this machine forwards through two
            emulated routers when no link limits it: the CPU's limit.
        emulation: ``native``, ``vm-kvm`` or ``vm-tcg`` (software emulation).
        measured_at: ISO 8601 UTC time of the calibration.
        seconds: how long the calibration took, s.
    """

    unshaped_link_ms: float
    delayed_link_late_ms: float
    forward_mbps: float
    emulation: str = "native"
    measured_at: str = ""
    seconds: float = 0.0
    #: measured during one run, not at calibration (:meth:`during`): the 90th percentile
    #: of how late a delayed link delivered, per crossing (ms), beside the run
    run_late_ms: Optional[float] = None
    #: the rates of the shaped links the run's data crossed (Mbit/s)
    run_shaped_mbps: Tuple[float, ...] = ()

    def during(self, late_ms: Optional[float],
               shaped_mbps: Sequence[float]) -> "MachineProfile":
        """This calibration with what was measured during one run (see
        :mod:`labtools.lab.machine_watch`): ``late_ms``, how late the timers fired, and
        ``shaped_mbps``, the rates of the shaped links the run's data crossed (Mbit/s)."""
        rates = tuple(float(rate) for rate in shaped_mbps)
        return replace(self, run_late_ms=late_ms, run_shaped_mbps=rates)

    def timers_limit(self) -> Optional[str]:
        """Why this machine could not drive the run's links at their rates, or None: its
        timers fired later than :data:`~labtools.judge.policy.TIMERS_LATE_FRACTION` of the
        time HTB's bursts last on the shaped links crossed, together (each late timer
        costs its link late / burst of its time, and the flow crosses every link)."""
        # how late the timers may fire on these links together (ms)
        late, burst = self.run_late_ms, path_burst_ms(self.run_shaped_mbps)
        if late is None or burst is None or late <= policy.TIMERS_LATE_FRACTION * burst:
            return None
        bursts = ", ".join(f"{htb_burst_ms(rate):.1f}" for rate in self.run_shaped_mbps)
        links = len(self.run_shaped_mbps)
        where = (f"the {bursts} ms HTB's burst lasts on the one shaped link" if links == 1
                 else f"the {burst:.1f} ms the bursts of the {links} shaped links crossed "
                      f"allow together ({bursts} ms each)")
        return (f"during this run this machine's timers fired up to {late:.1f} ms late (90th "
                f"percentile, a delayed link measured beside the lab), against {where}: the "
                "links could not run at their rates")

    def forward_limit(self, load_mbps: float) -> Optional[str]:
        """Why a rate below expectation may be this machine's doing, not the links': when
        the network had to carry more (``load_mbps``, Mbit/s) than this machine forwards
        reliably (:func:`~labtools.judge.policy.fits_machine`), a sentence naming its
        calibrated limit with its number; None when the load fits."""
        if policy.fits_machine(load_mbps, self.forward_mbps):
            return None
        reliable = policy.CAPACITY_HEADROOM * self.forward_mbps
        return (f"this machine forwarded at most {self.forward_mbps:.1f} Mbit/s when "
                f"calibrated ({self.emulation}; {policy.CAPACITY_HEADROOM:.0%} of that, "
                f"{reliable:.1f}, is what it carries reliably), less than the "
                f"{load_mbps:.1f} the network had to carry: its CPU, not the links, can hold "
                "the rate this low")

    def added_ms(self, links: Sequence[Link]) -> float:
        """What this machine adds (ms) to a packet crossing ``links`` once each (a
        forward path, or a forward path plus the return path for an RTT)."""
        return sum(self.delayed_link_late_ms if link.delay_ms > 0 else self.unshaped_link_ms
                   for link in links)

    def as_dict(self) -> Dict[str, Any]:
        """JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Optional[Dict[str, Any]]) -> Optional["MachineProfile"]:
        """The profile saved as :meth:`as_dict`, or None for no data."""
        if not data:
            return None
        fields = dict(data)
        fields.pop("run_burst_ms", None)  # saved by earlier versions: now derived
        if isinstance(fields.get("run_shaped_mbps"), list):  # JSON has no tuples
            fields["run_shaped_mbps"] = tuple(fields["run_shaped_mbps"])
        try:
            return cls(**fields)
        except TypeError as err:
            raise InputError(f"not a machine profile: {err}") from None

    def describe(self) -> str:
        """One line for people."""
        return (f"this machine ({self.emulation}) adds {self.unshaped_link_ms:.2f} ms per "
                f"unshaped link, {self.delayed_link_late_ms:.2f} ms per delayed link, and "
                f"forwards at most {self.forward_mbps:.1f} Mbit/s")
