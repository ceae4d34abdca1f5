"""A node of a network the kit builds itself: a small shell that holds a network namespace.

Each host and router is ``mnexec -cdnp sh -s mininet:NAME``: Mininet's ``mnexec`` gives it
a network and mount namespace of its own and prints its process id; ``sh -s`` keeps the
namespace alive and reads commands from a pipe (the node's configuration script). The
``mininet:NAME`` mark is the one Mininet gives its node shells, so ``labtools clean`` and
``mn -c`` find a shell a killed lab left behind.

Mininet's own ``Host`` does the same with an interactive bash on a terminal and a few
round trips to set it up: under software emulation 19 of them took 4.2 s to start, these
1.5 s. Tools run in a node's namespace through ``mnexec -da PID`` (:func:`popen_in_namespace`).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from typing import IO, List

from labtools.errors import EnvironmentProblem
from labtools.system.cleanup import NODE_SHELL_MARK

#: the line a node shell prints when a script it ran has finished
_DONE = "labtools: script done"


class NodeShell:
    """The shell holding node ``name``'s network namespace (started at construction).

    Raises :class:`EnvironmentProblem` when it cannot start (no ``mnexec``: Mininet is
    not installed)."""

    def __init__(self, name: str) -> None:
        self.name = name
        try:
            self.proc = subprocess.Popen(
                ["mnexec", "-cdnp", "sh", "-s", f"{NODE_SHELL_MARK}{name}"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as err:
            raise EnvironmentProblem(f"cannot start a shell for {name}: {err.strerror} "
                                     "(mnexec comes with Mininet: make setup)") from None
        first = self._stdout.readline()  # mnexec -p: "\x01PID"
        if not first.startswith("\x01") or not first[1:].strip().isdigit():
            self.terminate()
            raise EnvironmentProblem(f"the shell of {name} did not start: {first.strip()!r}")
        #: process id of the shell: its network namespace is the node's
        self.pid = int(first[1:])

    @property
    def _stdout(self) -> IO[str]:
        if self.proc.stdout is None:  # pragma: no cover - always a pipe
            raise EnvironmentProblem(f"the shell of {self.name} has no output")
        return self.proc.stdout

    def send_script(self, path: str) -> None:
        """Start running the shell script at ``path`` in the node (in a subshell: the
        node's shell goes on whatever the script does); :meth:`wait_output` collects it."""
        if self.proc.stdin is None or self.proc.poll() is not None:
            raise EnvironmentProblem(f"the shell of {self.name} is not running")
        try:
            self.proc.stdin.write(f"( . {shlex.quote(path)} ) 2>&1; echo {shlex.quote(_DONE)}\n")
            self.proc.stdin.flush()
        except OSError as err:
            raise EnvironmentProblem(f"the shell of {self.name} stopped: {err}") from None

    def wait_output(self) -> str:
        """What the script sent with :meth:`send_script` printed, once it has finished."""
        lines: List[str] = []
        for line in self._stdout:
            if line.rstrip("\n") == _DONE:
                return "".join(lines)
            lines.append(line)
        raise EnvironmentProblem(f"the shell of {self.name} ended while configuring it: "
                                 f"{''.join(lines).strip()[-300:]}")

    def terminate(self, timeout_s: float = 10.0) -> None:
        """Stop the shell (and whatever runs in its process group); the namespace goes with
        the last process in it."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:  # stuck in the kernel: the kill lands later
            pass
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass


def popen_in_namespace(pid: int, argv: List[str]) -> "subprocess.Popen[str]":
    """Start ``argv`` in the network namespace of process ``pid`` (a node's shell, the kit's
    or Mininet's), the leader of its own process group (``mnexec -da``, as Mininet runs
    commands on its hosts); text stdout with stderr merged."""
    return subprocess.Popen(["mnexec", "-da", str(pid), *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
