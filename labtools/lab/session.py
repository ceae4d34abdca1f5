"""A lab session: a real Mininet network from a topology, probes on its hosts, results saved.

    from labtools.lab.session import LabSession
    from labtools.lab import probes
    with LabSession("portfolio") as lab:
        m = probes.ping(lab, "h1", "h4")
        print(m.summary.min_ms, m.expected.rtt_ms, m.verdict)

Stopping always happens (exceptions, Ctrl-C and SIGTERM included). Every measurement is
saved to the results store the moment it completes, with its verdicts; failures with their
raw output too. At start the session calibrates this machine (:mod:`.calibration`) on a
small network of its own (:mod:`labtools.model.calibration`), built beside the lab's, and
every verdict takes that into account. The calibration is a client of the session: it gets
the session as a :class:`~labtools.lab.base.HostRunner` and never imports this module.

Each probe call is one *step* of the session (:meth:`LabSession.perform`), saved with its
arguments; a replaying session (:mod:`labtools.lab.replay`) answers the same calls from a
results file instead of a network.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Tuple,
    TypeVar,
    Union,
)

from labtools import settings
from labtools.errors import (
    EnvironmentProblem,
    LabtoolsError,
    ProbeTimeout,
    ToolError,
)
from labtools.judge import policy
from labtools.judge.measurement import Measurement, ProbeCall
from labtools.lab.base import HostRunner, LabBase
from labtools.lab.processes import (
    SERVER_POLL_S,
    SERVER_READY_S,
    SERVER_START_S,
    ToolOutput,
    ask_to_stop,
    last_line,
    listening,
    terminate,
    wait_output,
)
from labtools.model.calibration import CalibrationNetwork
from labtools.model.choice import TopologyChoice
from labtools.model.topology import Topology, needs_netem
from labtools.results.records import RunRecord, utc_now

if TYPE_CHECKING:  # pragma: no cover
    from labtools.lab.network import MininetBackend
    from labtools.results.store import ResultStore

T = TypeVar("T")
DEFAULT_RESULTS = "results/labtools.sqlite"


class LabSession(LabBase, HostRunner):
    """Start ``topology`` as a real network; stop it on exit, whatever happens.

    Args:
        topology: a topology, a :class:`~labtools.model.choice.TopologyChoice`, or a spec.
        switch: ``lxbr`` (Linux bridge) or ``ovs``.
        results: the results store's file (None: nothing is saved).
        case: a label saved with every measurement (the notebook or test case).
        durations: default durations of the probes (:func:`labtools.judge.policy.durations`).
        calibrate: measure this machine at start (a few seconds); the verdicts use it.
    """

    def __init__(self, topology: Union[str, TopologyChoice, Topology], switch: str = "lxbr",
                 results: Union[str, Path, None] = DEFAULT_RESULTS, case: str = "",
                 durations: Optional[policy.Durations] = None, calibrate: bool = True) -> None:
        super().__init__(topology, case, durations)
        self.switch = switch
        self.calibrate = calibrate
        self.session_id = uuid.uuid4().hex
        self._results_path = results
        self.store: Optional["ResultStore"] = None
        self._backend: Optional["MininetBackend"] = None
        self._calibration_net: Optional[CalibrationNetwork] = None
        self._servers: List["subprocess.Popen[str]"] = []
        self._server_on: Dict[Tuple[str, Optional[int]], "subprocess.Popen[str]"] = {}
        self._guard: Any = None
        self._group: Optional[str] = None
        self._versions: Dict[str, Optional[str]] = {}
        self._record: Optional[Path] = None  # how a terminal enters the nodes

    # --- lifecycle --------------------------------------------------------------------
    def __enter__(self) -> "LabSession":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """True while the network is up."""
        return self._backend is not None

    @property
    def calibration_net(self) -> Optional[CalibrationNetwork]:
        """The calibration network beside the lab's while it runs (None without one)."""
        return self._calibration_net if self._backend is not None else None

    def start(self) -> None:
        """Check the machine, open the results store, start the network, calibrate.

        With Linux bridges (the default) the network lives in a sandbox of this user
        (:mod:`labtools.lab.sandbox`): no root needed, nothing left when the process ends.
        While it runs, a record says how to enter its nodes (``labtools shell NODE``,
        :mod:`labtools.lab.running_labs`); :meth:`stop` removes it."""
        from labtools.lab import running_labs
        from labtools.lab.network import MininetBackend
        from labtools.system.signals import guard_signals

        if self.running:
            return
        net = (CalibrationNetwork.beside(self.topo, _calibration_delays(self.topo))
               if self.calibrate else None)
        backend = MininetBackend(self.topo, self.switch, beside=(net.topo,) if net else ())
        _require_capable_kernel(backend)
        self.open_store()
        self._guard = guard_signals()
        self._guard.__enter__()
        self._backend, self._calibration_net = backend, net
        try:
            self._backend.start()
            self._record = running_labs.register(
                self._backend, self.topo, self.session_id, self.case,
                self.store.path if self.store is not None else None)
            if net is not None:
                from labtools.lab.calibration import calibrate, remember

                self.machine = calibrate(self, net)
                remember(self.machine)
        except BaseException:
            self.stop()
            raise

    def open_store(self) -> None:
        """Open the results store (before anything runs, so a bad path fails first)."""
        if self._results_path is not None and self.store is None:
            from labtools.results.store import ResultStore

            self.store = ResultStore(self._results_path)

    def stop(self) -> None:
        """Stop servers and the network (idempotent)."""
        from labtools.lab.running_labs import unregister

        record, self._record = self._record, None
        unregister(record)
        try:
            for proc in self._servers:
                terminate(proc)
            self._servers.clear()
            self._server_on.clear()
            if self._backend is not None:
                backend, self._backend = self._backend, None
                backend.stop()
        finally:
            if self._guard is not None:
                guard, self._guard = self._guard, None
                guard.__exit__(None, None, None)

    # --- steps ------------------------------------------------------------------------------
    def perform(self, call: ProbeCall, measure: Callable[[], T]) -> T:
        """Run one probe call as the next step of the session (calls made inside a group,
        such as the steps of a capacity search, are part of the group's step)."""
        if self._group is not None:
            return measure()
        return super().perform(call, measure)

    @contextmanager
    def group(self) -> Iterator[str]:
        """Runs saved inside the block belong to one new group (its id is yielded)."""
        previous, self._group = self._group, uuid.uuid4().hex
        try:
            yield self._group
        finally:
            self._group = previous

    # --- running things on hosts --------------------------------------------------------
    def _backend_or_fail(self) -> "MininetBackend":
        if self._backend is None:
            raise EnvironmentProblem("the lab network is not running: run lab.start() first")
        return self._backend

    def start_process(self, host: str, argv: List[str]) -> "subprocess.Popen[str]":
        """Start ``argv`` on ``host`` (no shell); the caller waits for it."""
        return self._backend_or_fail().popen(self._node(host), argv)

    def _node(self, host: str) -> str:
        self._backend_or_fail()
        net = self._calibration_net
        return host if net is not None and host in net.nodes else self.check_node(host)

    def run(self, host: str, argv: List[str], timeout_s: float) -> ToolOutput:
        """Run ``argv`` on ``host``; its output (stdout and stderr together) and exit status.

        Raises :class:`ProbeTimeout` when it takes longer than ``timeout_s`` seconds."""
        proc = self.start_process(host, argv)
        return wait_output(proc, argv, host, timeout_s)

    def start_beside_switches(self, argv: List[str]) -> "subprocess.Popen[str]":
        """Start ``argv`` where the lab's switch ports are (the sandbox's own namespace;
        the machine's with Open vSwitch), without waiting: ``tc`` on ``s1-eth3``."""
        return self._backend_or_fail().popen_beside_switches(argv)

    def run_beside_switches(self, argv: List[str], timeout_s: float) -> ToolOutput:
        """As :meth:`run`, where the lab's switch ports are (:meth:`start_beside_switches`)."""
        return wait_output(self.start_beside_switches(argv), argv, "the switches", timeout_s)

    @contextmanager
    def server(self, host: str, argv: List[str], port: Optional[int] = None,
               udp: bool = False, wait: bool = True) -> Iterator["subprocess.Popen[str]"]:
        """A server running on ``host`` for the duration of the block; with ``port``, the
        block starts only once the server listens on it (at most ``SERVER_READY_S``), or
        at once without ``wait`` (for a client that waits for the server itself).

        After the block the server is asked to stop and exits while the measurement is
        judged and saved (a third of a second under software emulation); the next server on
        the same host and port waits until it is gone, and :meth:`stop` waits for all."""
        previous = self._server_on.pop((host, port), None)
        if previous is not None:
            terminate(previous)
        self._servers = [p for p in self._servers if p.poll() is None]
        proc = self.start_process(host, argv)
        self._servers.append(proc)
        self._server_on[(host, port)] = proc
        try:
            if wait:
                _await_server(proc, argv, host, port, udp)
            yield proc
        finally:
            ask_to_stop(proc, argv)

    def await_server(self, proc: "subprocess.Popen[str]", argv: List[str], host: str,
                     port: int, udp: bool = False) -> None:
        """Return once a server started by :meth:`server` without ``wait`` listens on
        ``port`` (several servers then start side by side)."""
        _await_server(proc, argv, host, port, udp)

    # --- saving ---------------------------------------------------------------------------
    def _meta(self, tool: str, call: Optional[ProbeCall]) -> Dict[str, Any]:
        meta: Dict[str, Any] = dict(
            topology=self.topo, case=self.case, tool_version=self.tool_version(tool) or "",
            session_id=self.session_id, group_id=self._group)
        if self._group is None and call is not None:
            meta["step"] = self.step
        return meta

    def save(self, m: Measurement) -> Optional[int]:
        """Save a judged measurement now (the store commits before this returns), with the
        session's durations (a replay follows them) and who measured (grading checks it)."""
        m.finished_at = m.finished_at or utc_now()
        if self.store is not None:
            m.run_id = self.store.save(RunRecord.from_measurement(
                m, durations=self.durations.name, student=settings.current().student,
                **self._meta(m.tool, m.call)))
        return m.run_id

    def save_failure(self, tool: str, src: str, dst: str, argv: List[str],
                     output: Union[ToolOutput, str], err: LabtoolsError, started_at: str = "",
                     call: Optional[ProbeCall] = None) -> None:
        """Keep the raw output (and exit status, where the tool ended) of a failed
        measurement, with the reason."""
        if self.store is None:
            return
        text, status = ((output.text, output.exit_status) if isinstance(output, ToolOutput)
                        else (output, None))
        self.store.save(RunRecord.from_error(
            tool, err, text, src=src, dst=dst, command=argv, started_at=started_at or utc_now(),
            call=call, exit_status=status, **self._meta(tool, call)))

    def tool_version(self, tool: str) -> Optional[str]:
        """The version the tool reports (asked once per session)."""
        if tool not in self._versions:
            from labtools import __version__
            from labtools.system.capabilities import tool_info
            from labtools.tools.registry import TOOLS

            own = tool in TOOLS and TOOLS[tool].kits_own
            self._versions[tool] = __version__ if own else tool_info(tool).version
        return self._versions[tool]


def _await_server(proc: "subprocess.Popen[str]", argv: List[str], host: str,
                  port: Optional[int], udp: bool) -> None:
    deadline = time.monotonic() + SERVER_READY_S
    while True:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise ToolError(f"{argv[0]} server on {host} exited at once: "
                            f"{last_line(out) or 'no output'}")
        if port is None:
            time.sleep(SERVER_START_S)
            return
        if listening(proc.pid, port, udp):
            return
        if time.monotonic() > deadline:
            raise ProbeTimeout(f"{argv[0]} server on {host} did not listen on port "
                               f"{port} within {SERVER_READY_S:g} s")
        time.sleep(SERVER_POLL_S)


def _calibration_delays(topo: Topology) -> bool:
    """Whether the calibration network may delay its link: when the lab's own links need
    netem (then the kernel must have it), or the kernel has it; a delay-free lab on a
    kernel without netem (a container, a course server) calibrates without a delay."""
    from labtools.system.capabilities import kernel_has_netem

    return needs_netem(topo) or kernel_has_netem()[0]


def _require_capable_kernel(backend: "MininetBackend") -> None:
    """Refuse, before anything starts, a lab this machine cannot run: Open vSwitch
    without root, or links with a delay, a loss rate or a queue limit without netem
    (:mod:`.placement` decides it for every entry point)."""
    from labtools.lab.placement import kernel_problem

    problem = kernel_problem(backend.needs_netem, backend.switch)
    if problem is not None:
        raise EnvironmentProblem(problem)
