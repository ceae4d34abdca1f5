"""A lab session: a real Mininet network from a topology, probes on its hosts, results saved.

    from labtools.lab.session import LabSession
    with LabSession("portfolio") as lab:
        m = lab.ping("h1", "h4", count=10)
        print(m.summary["min_ms"], lab.expected("h1", "h4")["rtt_ms"])

Stopping always happens (exceptions, Ctrl-C and SIGTERM included). Every measurement is
saved to the results store the moment it completes, errors with their raw output too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Union

from labtools.errors import (
    EnvironmentProblem, LabtoolsError, NoRouteError, ProbeTimeout, ToolError, UnknownNodeError,
)
from labtools.tools.parsers.base import Parsed
from labtools.model.topology import SWITCH, Topology

#: seconds a probe may take beyond its own duration before it counts as hung
TIMEOUT_MARGIN_S = 20.0
SERVER_START_S = 0.5
#: seconds a server may take to start listening (slow under software emulation)
SERVER_READY_S = 30.0


@dataclass
class Measurement:
    """One finished measurement: the parsed output and where it was saved."""

    tool: str
    src: str
    dst: str
    command: List[str]
    parsed: Parsed
    run_id: Optional[int] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    started_at: str = ""  #: ISO 8601 UTC, when the tool was started

    @property
    def summary(self) -> Dict[str, Any]:
        """The parser's summary (Mbit/s, ms)."""
        return self.parsed.summary

    @property
    def table(self) -> Any:
        """The parser's tidy per-sample table."""
        return self.parsed.table


def _load(topology: Union[str, Topology]) -> Topology:
    if isinstance(topology, Topology):
        from labtools.model.routing import compute_routing

        compute_routing(topology)
        return topology
    from labtools.model.catalog import load_topology

    return load_topology(topology)


class LabSession:
    """Start ``topology`` as a real network; stop it on exit, whatever happens."""

    def __init__(self, topology: Union[str, Topology], switch: str = "lxbr",
                 results: Union[str, Path, None] = "results/labtools.sqlite",
                 case: str = "") -> None:
        self.topo = _load(topology)
        self.switch = switch
        self.case = case
        self._results_path = results
        self.store: Any = None
        self._backend: Any = None
        self._servers: List[subprocess.Popen] = []
        self._guard: Any = None
        self._versions: Dict[str, Optional[str]] = {}

    # --- lifecycle --------------------------------------------------------------------
    def __enter__(self) -> "LabSession":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Check the machine, open the results store and start the network."""
        from labtools.system.cleanup import guard_signals
        from labtools.lab.network import MininetBackend

        _require_capable_kernel()
        if self._results_path is not None:
            from labtools.results.store import ResultStore

            self.store = ResultStore(self._results_path)
        self._guard = guard_signals()
        self._guard.__enter__()
        self._backend = MininetBackend(self.topo, self.switch)
        try:
            self._backend.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop servers and the network (idempotent)."""
        try:
            for proc in self._servers:
                _terminate(proc)
            self._servers.clear()
            if self._backend is not None:
                self._backend.stop()
                self._backend = None
        finally:
            if self._guard is not None:
                guard, self._guard = self._guard, None
                guard.__exit__(None, None, None)

    # --- names and expectations -------------------------------------------------------
    def check_node(self, name: str) -> str:
        """``name`` if it is a host or router of the topology; a typed error otherwise."""
        node = self.topo.node(name)
        if node.kind == SWITCH:
            raise UnknownNodeError(f"{name!r} is a switch: measure between hosts or routers")
        return name

    def ip_towards(self, src: str, dst: str) -> str:
        """The address of ``dst`` that ``src`` reaches it at."""
        from labtools.model.routing import compute_routing

        self.check_node(src)
        self.check_node(dst)
        if src == dst:
            raise NoRouteError(f"source and destination are both {src!r}")
        return compute_routing(self.topo).target(src, dst).ip

    def expected(self, src: str, dst: str) -> Dict[str, Any]:
        """Expected values between ``src`` and ``dst`` (see ``labtools.model.expect``)."""
        from labtools.model.expect import expect_pair

        return expect_pair(self.topo, src, dst)

    # --- running things on hosts --------------------------------------------------------
    def _backend_or_fail(self) -> Any:
        if self._backend is None:
            raise EnvironmentProblem("the lab network is not running (use `with LabSession(...)`)")
        return self._backend

    def start_process(self, host: str, argv: List[str]) -> subprocess.Popen:
        """Start ``argv`` on ``host`` (no shell); the caller waits for it."""
        return self._backend_or_fail().popen(self.check_node(host), argv)

    def run(self, host: str, argv: List[str], timeout_s: float) -> str:
        """Run ``argv`` on ``host`` and return its output (stdout and stderr together).

        Raises :class:`ProbeTimeout` when it takes longer than ``timeout_s`` seconds."""
        proc = self.start_process(host, argv)
        return wait_output(proc, argv, host, timeout_s)

    @contextmanager
    def server(self, host: str, argv: List[str], port: Optional[int] = None,
               udp: bool = False) -> Iterator[subprocess.Popen]:
        """A server running on ``host`` for the duration of the block; with ``port``, the
        block starts only once the server listens on it (at most ``SERVER_READY_S``)."""
        proc = self.start_process(host, argv)
        self._servers.append(proc)
        try:
            deadline = time.monotonic() + SERVER_READY_S
            while True:
                if proc.poll() is not None:
                    out = proc.stdout.read() if proc.stdout else ""
                    raise ToolError(f"{argv[0]} server on {host} exited at once: "
                                    f"{_last_line(out) or 'no output'}")
                if port is None:
                    time.sleep(SERVER_START_S)
                    break
                if listening(proc.pid, port, udp):
                    break
                if time.monotonic() > deadline:
                    raise ProbeTimeout(f"{argv[0]} server on {host} did not listen on port "
                                       f"{port} within {SERVER_READY_S:g} s")
                time.sleep(0.05)
            yield proc
        finally:
            _terminate(proc)
            if proc in self._servers:
                self._servers.remove(proc)

    # --- saving ---------------------------------------------------------------------------
    def save(self, measurement: Measurement, status: str = "ok", error: str = "") -> Optional[int]:
        """Save a measurement now (the store commits before this returns)."""
        if self.store is None:
            return None
        from labtools.results.store import RunRecord

        meta = dict(topology=self.topo, src=measurement.src, dst=measurement.dst,
                    command=measurement.command, case=self.case,
                    tool_version=self.tool_version(measurement.tool))
        if measurement.started_at:
            meta["started_at"] = measurement.started_at
        if status == "ok":
            record = RunRecord.from_parsed(measurement.parsed, **meta)
        else:
            record = RunRecord.from_error(measurement.tool, error, measurement.parsed.raw, **meta)
        measurement.run_id = self.store.save(record)
        return measurement.run_id

    def save_failure(self, tool: str, src: str, dst: str, argv: List[str], raw: str,
                     err: LabtoolsError, started_at: str = "") -> None:
        """Keep the raw output of a failed measurement, with the reason."""
        import pandas as pd

        failed = Measurement(tool, src, dst, argv, Parsed(tool, pd.DataFrame(), {}, raw),
                             started_at=started_at)
        self.save(failed, status="error", error=str(err))

    def tool_version(self, tool: str) -> Optional[str]:
        """The version the tool reports (asked once per session)."""
        if tool not in self._versions:
            from labtools.system.capabilities import tool_info

            from labtools import __version__

            self._versions[tool] = (
                __version__ if tool == "simpleperf" else tool_info(tool).version)
        return self._versions[tool]


def wait_output(proc: subprocess.Popen, argv: List[str], host: str, timeout_s: float) -> str:
    """Wait for ``proc``; its output, or :class:`ProbeTimeout` after killing it."""
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _terminate(proc)
        raise ProbeTimeout(
            f"{argv[0]} on {host} did not finish within {timeout_s:g} s "
            "(is the server hung or gone?)") from None
    except BaseException:
        _terminate(proc)
        raise
    return out or ""


def _terminate(proc: subprocess.Popen, grace_s: float = 2.0) -> None:
    """Stop a tool and its process group: SIGTERM, then SIGKILL after ``grace_s``."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                return
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def listening(pid: int, port: int, udp: bool = False) -> bool:
    """True when a socket in the network namespace of process ``pid`` is bound to ``port``
    (TCP: in LISTEN state). Reads ``/proc/PID/net``: no command runs."""
    kinds = ("udp", "udp6") if udp else ("tcp", "tcp6")
    wanted = f":{port:04X}"
    for kind in kinds:
        try:
            with open(f"/proc/{pid}/net/{kind}", encoding="ascii") as table:
                next(table, None)
                for line in table:
                    fields = line.split()
                    if len(fields) > 3 and fields[1].endswith(wanted) and (udp or fields[3] == "0A"):
                        return True
        except OSError:
            continue
    return False


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _require_capable_kernel() -> None:
    from labtools.system.capabilities import native_network_ok

    if os.geteuid() != 0:
        raise EnvironmentProblem("the lab needs root (network namespaces): run as root")
    if not native_network_ok():
        raise EnvironmentProblem(
            "this kernel cannot emulate links (no netem): run inside the lab VM, "
            "e.g. `labtools vm -- labtools run portfolio link`")
