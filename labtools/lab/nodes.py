"""A node of a network the kit builds itself: a small shell that holds a network namespace.

Each host and router is ``mnexec -cdnp sh -s labtools-node:NAME``, started inside the lab's
sandbox (:mod:`labtools.lab.sandbox`): Mininet's ``mnexec`` gives it a network and mount
namespace of its own (its own ``/sys``) and prints its process id; ``sh -s`` keeps the
namespace alive and reads commands from a pipe (the node's configuration script). The
``labtools-node:`` mark is not Mininet's ``mininet:``, so ``mn -c`` and ``labtools clean``
leave a running lab alone (a sandboxed lab cannot leave leftovers: its sandbox ends with it).

Mininet's own ``Host`` does the same with an interactive bash on a terminal and a few
round trips to set it up: under software emulation 19 of them took 4.2 s to start, these
1.5 s. Tools run in a node's namespace through :meth:`Sandbox.popen_in`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from typing import IO, List, Tuple

from labtools.errors import EnvironmentProblem
from labtools.lab.sandbox import Sandbox
from labtools.system.sandbox_leftovers import NODE_MARK

#: the line a node shell prints when a script it ran has finished
_DONE = "labtools: script done"


class NodeShell:
    """The shell holding node ``name``'s network namespace, inside ``sandbox`` (started at
    construction).

    Raises :class:`EnvironmentProblem` when it cannot start (no ``mnexec``: Mininet is
    not installed)."""

    def __init__(self, name: str, sandbox: Sandbox) -> None:
        self.name = name
        if shutil.which("mnexec", path=sandbox.env.get("PATH")) is None:
            raise EnvironmentProblem(f"cannot start a shell for {name}: no mnexec "
                                     "(mnexec comes with Mininet: make setup)")
        try:
            self.proc = subprocess.Popen(
                sandbox.command(["mnexec", "-cdnp", "sh", "-s", f"{NODE_MARK}{name}"]),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, env=sandbox.env)
        except OSError as err:
            raise EnvironmentProblem(f"cannot start a shell for {name}: {err.strerror} "
                                     "(nsenter comes with util-linux)") from None
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
        node's shell goes on whatever the script does); :meth:`wait_script` collects it."""
        if self.proc.stdin is None or self.proc.poll() is not None:
            raise EnvironmentProblem(f"the shell of {self.name} is not running")
        try:
            self.proc.stdin.write(f"( . {shlex.quote(path)} ) 2>&1; echo {_DONE} $?\n")
            self.proc.stdin.flush()
        except OSError as err:
            raise EnvironmentProblem(f"the shell of {self.name} stopped: {err}") from None

    def wait_script(self) -> Tuple[int, str]:
        """(exit status, what it printed) of the script sent with :meth:`send_script`, once
        it has finished. Only the status says whether it failed: ``tc`` of Linux 6.x prints
        warnings of commands that worked ("quantum of class 50001 is big")."""
        lines: List[str] = []
        for line in self._stdout:
            done, _, status = line.rstrip("\n").rpartition(" ")
            if done == _DONE and status.isdigit():
                return int(status), "".join(lines)
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
