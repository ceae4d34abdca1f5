"""A lab's sandbox: a user namespace and a network namespace of the user who starts the lab.

Every Linux-bridge lab, whoever starts it (root included), builds its whole network inside
one: its bridges and switch ports live in the sandbox's network namespace, each host and
router in a network namespace of its own created there (:mod:`labtools.lab.nodes`). The
machine's own namespace is never touched, so no root is needed, two labs (two users, or two
notebooks of one) use the same names (``s1``, ``h1-eth0``) side by side, and a lab cannot
reach another's.

The sandbox is held by one small shell, the *holder* (``unshare --user --map-root-user
--net sh``; its ``$0`` is ``labtools-sandbox``), in a session of its own. It waits on a pipe
from the lab's process. When that pipe closes - the lab stops, or its process dies, even by
SIGKILL - it kills every process left in its user namespace, once more a moment later (a
tool that was entering the sandbox then), and exits; the namespaces, and every
interface and qdisc in them, go with the last process. So a lab leaves nothing behind, by
construction. (A process with threads, such as a Jupyter kernel, cannot enter a new user
namespace itself: everything runs through this separate process.)

Commands run in the sandbox through ``nsenter``: :meth:`Sandbox.command` in the sandbox's
own namespace (the switches' ``ip``/``tc`` batches), :meth:`Sandbox.popen_in` in a node's.
Inside the user namespace they are root (uid 0, mapped to the user who started the lab),
with every capability over the lab's network and none over the machine.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
from typing import Dict, List, Optional

from labtools.errors import EnvironmentProblem
from labtools.system.sandbox_leftovers import HOLDER_MARK
from labtools.system.toolenv import tools_env

#: seconds the holder may take to start (it is one ``unshare`` and a shell)
START_S = 60.0
#: seconds the holder may take to clear the sandbox at the end
CLOSE_S = 30.0
#: seconds after which the holder clears its sandbox once more (then exits): a tool whose
#: ``nsenter`` had opened a node's namespaces but not yet entered them when the lab ended is
#: caught then. After the lab's process died (nothing can be waiting for the holder); after
#: :meth:`Sandbox.close`, which waits for it, :data:`CLOSE_AGAIN_S`
LAST_CLEAR_S = 1.0
CLOSE_AGAIN_S = 0.1
#: the holder: say it is ready, wait until the lab's pipe says ``close`` or closes, then kill
#: every process left in its user namespace (zombies only wait to be reaped: skipped), round
#: after round until none is left (a process may fork meanwhile; at most 50 rounds), and once
#: more a little later
HOLDER_SCRIPT = r"""
clear() {
    me=/proc/$$/ns/user
    rounds=0
    while [ "$rounds" -lt 50 ]; do
        found=
        for p in /proc/[0-9]*; do
            [ "${p#/proc/}" = "$$" ] && continue
            [ "$p/ns/user" -ef "$me" ] || continue
            read -r stat 2>/dev/null < "$p/stat" || continue
            state=${stat##*) }
            [ "${state%% *}" = Z ] && continue
            kill -KILL "${p#/proc/}" 2>/dev/null && found=1
        done
        [ -n "$found" ] || break
        rounds=$((rounds + 1))
    done
}
trap 'clear; exit 0' TERM HUP
echo ready
pause=$1
read -r why && [ "$why" = close ] && pause=$2
clear
sleep "$pause"
clear
"""


def holder_argv() -> List[str]:
    """The holder's command line: a new user namespace (this user as its root) with a new
    network namespace, and the shell of :data:`HOLDER_SCRIPT` in them."""
    return ["unshare", "--user", "--map-root-user", "--net", "--",
            "sh", "-c", HOLDER_SCRIPT, HOLDER_MARK, f"{LAST_CLEAR_S:g}", f"{CLOSE_AGAIN_S:g}"]


def enter_argv(pid: int, argv: List[str], mounts: bool = False) -> List[str]:
    """``argv`` run in the user and network namespaces of process ``pid`` (and its mount
    namespace with ``mounts``: a node's own ``/sys``), as the namespace's root."""
    return ["nsenter", f"--target={pid}", "--user", "--net", *(["--mount"] if mounts else []),
            "--preserve-credentials", "--", *argv]


class Sandbox:
    """A running sandbox (started at construction); :meth:`close` ends it and everything
    in it. Raises :class:`EnvironmentProblem` with what to change when this machine does
    not let this user make one."""

    def __init__(self, start_s: float = START_S) -> None:
        #: the environment of everything run in the sandbox: ``PATH`` with ``/usr/sbin``
        #: (``ip``, ``tc`` and ``ethtool`` are there; an ordinary user's ``PATH`` lacks it)
        self.env: Dict[str, str] = tools_env()
        try:
            self.proc = subprocess.Popen(
                holder_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, start_new_session=True, env=self.env)
        except OSError as err:
            raise EnvironmentProblem(f"cannot start the lab's sandbox: {err.strerror} "
                                     "(unshare and nsenter come with util-linux)") from None
        first = _line_within(self.proc, start_s)
        if first is None:
            self._end(kill=True)
            raise EnvironmentProblem(f"the lab's sandbox did not start within {start_s:g} s")
        if first != "ready":  # unshare refused: it said why and exits
            rest = self.proc.stdout.read() if self.proc.stdout else ""
            self._end(kill=True)
            raise _refused(f"{first}\n{rest}")
        #: PID of the holder: its namespaces are the sandbox's
        self.pid = self.proc.pid

    def command(self, argv: List[str]) -> List[str]:
        """``argv`` to run in the sandbox's own namespace (where the switches are), with
        :attr:`env`."""
        return enter_argv(self.pid, argv)

    def popen_in(self, pid: int, argv: List[str]) -> "subprocess.Popen[str]":
        """Start ``argv`` in the namespaces of node process ``pid`` (a node shell), the
        leader of its own process group; text stdout with stderr merged."""
        return subprocess.Popen(enter_argv(pid, argv, mounts=True), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                                start_new_session=True, env=self.env)

    @property
    def running(self) -> bool:
        """True until the sandbox is closed (or its holder has died)."""
        stdin = self.proc.stdin
        return self.proc.poll() is None and stdin is not None and not stdin.closed

    def close(self, timeout_s: float = CLOSE_S) -> None:
        """End the sandbox: every process in it is killed, and its namespaces, interfaces
        and qdiscs go with them. Returns once the holder has done so (idempotent)."""
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.write("close\n")
                stdin.flush()
            except OSError:  # the holder is gone: _end collects it
                pass
        self._end(kill=False, timeout_s=timeout_s)

    def _end(self, kill: bool, timeout_s: float = CLOSE_S) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        if kill and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:  # it cannot clear: what is left dies on its own
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _line_within(proc: "subprocess.Popen[str]", timeout_s: float) -> Optional[str]:
    """The first line ``proc`` prints (without its newline), None if none comes in time."""
    if proc.stdout is None:  # pragma: no cover - always a pipe
        return None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            return None
    return proc.stdout.readline().rstrip("\n")


def _refused(said: str) -> EnvironmentProblem:
    """The error for a sandbox this machine refused, with what to change."""
    from labtools.system.userns import explain_failure, in_container, read_sysctls

    detail, fix = explain_failure(said, read_sysctls(), in_container())
    who = "root" if os.geteuid() == 0 else "this user"
    return EnvironmentProblem(f"a lab needs a user namespace of its own, which this machine "
                              f"does not give {who}: {detail}; fix: {fix}")
