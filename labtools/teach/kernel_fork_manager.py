"""Kernels forked from a server that has imported what the labs import
(:mod:`labtools.teach.kernel_forks`), for whoever runs notebooks many at a time: nbgrader
while it grades (:mod:`labtools.teach.grading_kernels`) and the tests that execute the
solutions (:func:`labtools.teach.notebook_files.execute` with ``forked=True``).

:class:`ForkingKernelManager` is Jupyter's kernel manager. For a kernel of this Python
(``-m ipykernel_launcher``) it starts the fork server once per process and has Jupyter
start :mod:`labtools.teach.kernel_fork_client` instead; any other kernel, or a server that
does not start, is started as before. The server ends with the process and is waited for,
so its kernels' CPU time is the process's, as a plain kernel's is. It imports nothing of
nbgrader.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

from jupyter_client.manager import AsyncKernelManager

from labtools import settings
from labtools.teach.kernel_forks import LAUNCHER

#: seconds the server may take to listen (its imports: 1.5 s here, about 30 s in the lab VM
#: under software emulation) before kernels start as before
SERVER_READY_S = 90.0
#: seconds the server gets to end once the process that started it is done
SERVER_STOP_S = 30.0
CLIENT = Path(__file__).resolve().parent / "kernel_fork_client.py"


class _Server:
    """The one fork server of this process, started when a kernel is first asked for."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="labtools-kernels-")
        self.path = os.path.join(self.folder, "forks.sock")
        self.proc = subprocess.Popen([sys.executable, "-m", "labtools.teach.kernel_forks",
                                      self.path], stdin=subprocess.PIPE)
        atexit.register(self.stop)

    def ready(self) -> bool:
        """True once it listens (up to :data:`SERVER_READY_S`), False if it cannot."""
        deadline = time.monotonic() + SERVER_READY_S
        while not os.path.exists(self.path):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self) -> None:
        """Close its input, wait for it (its kernels' CPU is then counted as ours)."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=SERVER_STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_server: Optional[_Server] = None


def fork_server_path() -> Optional[str]:
    """This process's fork server's socket, the server started if need be; None when it
    cannot start (kernels then start as usual)."""
    global _server
    if _server is None:
        _server = _Server()
    return _server.path if _server.ready() else None


def current_server() -> Optional[_Server]:
    """This process's fork server, None before a kernel was asked for."""
    return _server


class ForkingKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels of this Python come from the fork server."""

    def format_kernel_cmd(self, extra_arguments: Optional[List[str]] = None) -> List[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        this_python = len(cmd) >= 3 and cmd[1:3] == LAUNCHER and \
            os.path.realpath(cmd[0]) == os.path.realpath(sys.executable)
        if not (this_python and settings.current().forked_kernels):
            return cmd
        path = fork_server_path()
        if path is None:
            return cmd
        return [sys.executable, "-S", "-B", str(CLIENT), path, *cmd[1:]]
