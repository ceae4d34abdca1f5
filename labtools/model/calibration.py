"""The calibration network (pure): the small network a lab builds beside its own to
measure this machine (:mod:`labtools.lab.calibration`) and to watch its timers while a probe
runs (:mod:`labtools.lab.machine_watch`).

    A ---- R1 ==== R2 ---- B      A-R1, R2-B: unshaped; R1=R2: CALIBRATION_DELAY_MS one way,
                                  shaped at CALIBRATION_RATE_MBPS (HTB, like the lab's links)

Its nodes have names of their own, none of the lab's, and no link to the lab's nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Tuple

from labtools.model.routing import compute_routing
from labtools.model.topology import HOST, ROUTER, Link, Node, Topology

#: one-way delay of the R1=R2 link (ms)
CALIBRATION_DELAY_MS = 5.0
#: rate the R1=R2 link is shaped at (Mbit/s): more than the machine forwards
CALIBRATION_RATE_MBPS = 1000.0
#: name prefixes tried in turn until one is not taken by the lab's nodes
_PREFIXES = ("cal", "kcal", "zcal")


def calibration_topology(taken: Iterable[str], delayed: bool = True) -> Topology:
    """The calibration network, with node names that are not in ``taken``; without
    ``delayed`` its R1=R2 link has no delay (a kernel without netem: a delay-free lab)."""
    names = set(taken)
    prefix = next(p for p in _PREFIXES if not {f"{p}{i}" for i in range(1, 5)} & names)
    a, r1, r2, b = (f"{prefix}{i}" for i in range(1, 5))
    nodes = (Node(a, HOST), Node(r1, ROUTER), Node(r2, ROUTER), Node(b, HOST))
    links = (Link(a, r1), Link(r1, r2, bw_mbps=CALIBRATION_RATE_MBPS,
                                delay_ms=CALIBRATION_DELAY_MS if delayed else 0.0, name="CAL"),
             Link(r2, b))
    return Topology("calibration", nodes, links)


@dataclass(frozen=True)
class CalibrationNetwork:
    """The calibration network built beside a lab: its topology and its four nodes' roles."""

    topo: Topology

    @classmethod
    def beside(cls, lab: Topology, delayed: bool = True) -> "CalibrationNetwork":
        """The calibration network for a lab of topology ``lab`` (names it does not use);
        ``delayed``: its R1=R2 link delays (needs netem)."""
        return cls(calibration_topology(lab.names(), delayed))

    @property
    def delay_ms(self) -> float:
        """The one-way delay of the R1=R2 link (ms; 0 without netem)."""
        return self.topo.link("CAL").delay_ms

    @property
    def nodes(self) -> Tuple[str, str, str, str]:
        """The nodes A, R1, R2 and B, in this order."""
        a, r1, r2, b = self.topo.names()
        return a, r1, r2, b

    def address(self, src: str, dst: str) -> str:
        """The address of ``dst`` that ``src`` reaches it at."""
        return compute_routing(self.topo).target(src, dst).ip
