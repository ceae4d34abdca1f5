"""What every lab shares, whether it runs a network or replays one: the topology, its
names and addresses, the expected values, the durations, the calibration and the steps.

:class:`~labtools.lab.session.LabSession` runs a real network on top of this;
:class:`~labtools.lab.replay.ReplaySession` answers the same probe calls from a results
file (graded notebooks).
"""

from __future__ import annotations

import subprocess
from typing import Any, Callable, ContextManager, List, Optional, Protocol, TypeVar, Union

from labtools.errors import NoRouteError, UnknownNodeError
from labtools.judge import policy
from labtools.judge.machine import MachineProfile
from labtools.judge.measurement import JudgeContext, ProbeCall
from labtools.lab.processes import ToolOutput
from labtools.model.calibration import CalibrationNetwork
from labtools.model.choice import TopologyChoice, choose
from labtools.model.expect import PairExpectation, expect_pair
from labtools.model.routing import compute_routing
from labtools.model.topology import SWITCH, Topology

T = TypeVar("T")


class HostRunner(Protocol):
    """What a client of a running lab is handed to run tools on its nodes, the calibration
    network's included: the machine's calibration (:mod:`labtools.lab.calibration`) and
    the lateness watch (:mod:`labtools.lab.machine_watch`) take one, and
    :class:`~labtools.lab.session.LabSession` is one. Its clients never import the session."""

    @property
    def calibration_net(self) -> Optional[CalibrationNetwork]:
        """The calibration network beside the lab's while it runs (None without one)."""

    def run(self, host: str, argv: List[str], timeout_s: float) -> ToolOutput:
        """Run ``argv`` on ``host``; its output and exit status (``ProbeTimeout`` after
        ``timeout_s`` s)."""

    def start_process(self, host: str, argv: List[str]) -> "subprocess.Popen[str]":
        """Start ``argv`` on ``host``; the caller waits for it."""

    def server(self, host: str, argv: List[str], port: Optional[int] = None,
               udp: bool = False, wait: bool = True) -> ContextManager["subprocess.Popen[str]"]:
        """A server on ``host`` for the length of a ``with`` block (listening on ``port``
        when the block starts, unless not ``wait``)."""


def load_topology(topology: Union[str, TopologyChoice, Topology]) -> Topology:
    """A topology by choice, by spec (``portfolio``, ``dumbbell,pairs=3``, a file: the
    Python API's text) or as given."""
    if isinstance(topology, Topology):
        compute_routing(topology)
        return topology
    return choose(topology).build()


class LabBase:
    """A lab's topology and everything known without a network.

    Attributes:
        topo: the topology.
        case: a label saved with every measurement (the notebook or test case).
        durations: default durations of the probes (:mod:`labtools.judge.policy`).
        machine: this machine's calibration (None until measured).
        step: the number of the last probe call (:meth:`perform`).
    """

    replaying = False

    def __init__(self, topology: Union[str, TopologyChoice, Topology], case: str = "",
                 durations: Optional[policy.Durations] = None) -> None:
        self.topo = load_topology(topology)
        self._choice = topology if isinstance(topology, TopologyChoice) else None
        self.case = case
        self.durations = durations or policy.durations(quick=False)
        self.machine: Optional[MachineProfile] = None
        self.step = 0

    @property
    def choice(self) -> TopologyChoice:
        """What the topology was chosen as: the choice the lab was given, else the one
        read off :attr:`topo` (its name and params)."""
        return self._choice or TopologyChoice.of_topology(self.topo)

    def check_node(self, name: str) -> str:
        """``name`` if it is a host or router of the topology; a typed error otherwise."""
        node = self.topo.node(name)
        if node.kind == SWITCH:
            raise UnknownNodeError(f"{name!r} is a switch: measure between hosts or routers")
        return name

    def ip_towards(self, src: str, dst: str) -> str:
        """The address of ``dst`` that ``src`` reaches it at."""
        self.check_node(src)
        self.check_node(dst)
        if src == dst:
            raise NoRouteError(f"source and destination are both {src!r}")
        return compute_routing(self.topo).target(src, dst).ip

    def expected(self, src: str, dst: str) -> PairExpectation:
        """Expected values between ``src`` and ``dst`` (see :mod:`labtools.model.expect`)."""
        return expect_pair(self.topo, src, dst)

    def context(self, **values: Any) -> JudgeContext:
        """A judging context with this lab's calibration."""
        return JudgeContext(machine=self.machine, **values)

    def perform(self, call: ProbeCall, measure: Callable[[], T]) -> T:
        """Run one probe call as the next step (subclasses decide how)."""
        self.step += 1
        return measure()
