"""Tools running on Mininet hosts: waiting with a time-out, stopping, servers listening.

Every process the lab starts is the leader of its own process group (``mnexec -d``), so
stopping it stops whatever it started. What a tool leaves is its output and its exit status
(:class:`ToolOutput`), both part of what was measured: a tool that exited with an error and
printed what its parser cannot read is the tool's failure, named with its host and status
(:func:`parse_output`), not a parse error.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import List, Optional

from labtools.errors import ParseError, ProbeTimeout, ToolError
from labtools.system import procfs
from labtools.tools.parsers import parse
from labtools.tools.parsers.base import Parsed

#: seconds a probe may take beyond its own duration before it counts as hung
TIMEOUT_MARGIN_S = 20.0
#: seconds a server may take to start listening (slow under software emulation)
SERVER_READY_S = 30.0
#: seconds between checks while a server starts
SERVER_POLL_S = 0.05
#: seconds a server without a port to watch gets before its client starts
SERVER_START_S = 0.5


@dataclass(frozen=True)
class ToolOutput:
    """What a tool run on a host left: its output (stdout and stderr together) and its exit
    status (negative: killed by that signal, as :attr:`subprocess.Popen.returncode` says)."""

    text: str
    exit_status: int

    def describe_status(self) -> str:
        """``exit status 1`` or ``killed by signal 9 (SIGKILL)``."""
        if self.exit_status >= 0:
            return f"exit status {self.exit_status}"
        number = -self.exit_status
        try:
            name = signal.Signals(number).name
        except ValueError:
            return f"killed by signal {number}"
        return f"killed by signal {number} ({name})"


def wait_output(proc: "subprocess.Popen[str]", argv: List[str], host: str,
                timeout_s: float) -> ToolOutput:
    """Wait for ``proc``; its output and exit status, or :class:`ProbeTimeout` after
    stopping it."""
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        terminate(proc)
        raise ProbeTimeout(
            f"{argv[0]} on {host} did not finish within {timeout_s:g} s "
            "(is the server hung or gone?)") from None
    except BaseException:
        terminate(proc)
        raise
    return ToolOutput(out or "", proc.returncode)


def parse_output(tool: str, host: str, output: ToolOutput) -> Parsed:
    """``output`` parsed as ``tool``'s.

    Raises:
        ToolError: the tool exited with an error and printed what does not parse (the
            message names the tool, the host, the status and the tool's last line).
        ParseError: the tool exited well and printed what does not parse.
    """
    try:
        return parse(tool, output.text)
    except ParseError:
        if output.exit_status == 0:
            raise
        raise ToolError(f"{tool} on {host} failed ({output.describe_status()}): "
                        f"{last_line(output.text) or 'no output'}") from None


#: the signal that stops a server once its client is done (others: SIGTERM). iperf 2 waits
#: half a second on SIGTERM or SIGINT before it exits (a second under software emulation);
#: its report has already reached the client, so it is killed.
STOP_SIGNALS = {"iperf": signal.SIGKILL}


def ask_to_stop(proc: "subprocess.Popen[str]", argv: List[str]) -> None:
    """Signal a server's process group to stop (:data:`STOP_SIGNALS`), without waiting for
    it (:func:`terminate` waits)."""
    if proc.poll() is not None:
        return
    _signal_group(proc, STOP_SIGNALS.get(os.path.basename(argv[0]), signal.SIGTERM))


def terminate(proc: "subprocess.Popen[str]", grace_s: float = 2.0) -> None:
    """Stop a tool and its process group: SIGTERM, then SIGKILL after ``grace_s``."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _signal_group(proc, sig):
            return
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _signal_group(proc: "subprocess.Popen[str]", sig: int) -> bool:
    """Send ``sig`` to the process group ``proc`` leads (to ``proc`` alone where the group
    cannot be signalled); False when the process is gone."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            return False
    return True


def listening(pid: int, port: int, udp: bool = False) -> bool:
    """True when a socket in the network namespace of process ``pid`` is bound to ``port``
    (TCP: in LISTEN state). Reads ``/proc/PID/net``: no command runs."""
    kinds = ("udp", "udp6") if udp else ("tcp", "tcp6")
    wanted = f":{port:04X}"
    for kind in kinds:
        table = procfs.read_text(pid, f"net/{kind}")
        for line in (table or "").splitlines()[1:]:
            fields = line.split()
            bound = len(fields) > 3 and fields[1].endswith(wanted)
            if bound and (udp or fields[3] == "0A"):  # 0A: LISTEN
                return True
    return False


def server_failure(proc: "subprocess.Popen[str]", tool: str,
                   host: str) -> Optional[ToolError]:
    """The error to report when a server has already exited (why its client failed), with
    the last line it printed; None while it still runs."""
    if proc.poll() is None:
        return None
    out = proc.stdout.read() if proc.stdout else ""
    return ToolError(f"{tool} server on {host} exited at once: {last_line(out) or 'no output'}")


def last_line(text: str) -> str:
    """The last non-empty line of ``text`` ('' for none)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""
