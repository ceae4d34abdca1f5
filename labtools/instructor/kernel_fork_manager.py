"""Kernels forked from a server that has imported what the labs import
(:mod:`labtools.instructor.kernel_forks`), for whoever runs notebooks many at a time: nbgrader
while it grades (:mod:`labtools.instructor.grading_kernels`) and the tests that execute the
solutions (:func:`labtools.teach.notebook_files.execute` with ``forked=True``).

:class:`ForkingKernelManager` is Jupyter's kernel manager. For a kernel of this Python
(``-m ipykernel_launcher``) it starts the fork server once per process and has Jupyter
start :mod:`labtools.instructor.kernel_fork_client` instead; any other kernel, or a server that
does not start, is started as before. The server ends with the process and is waited for,
so its kernels' CPU time is the process's, as a plain kernel's is. It imports nothing of
nbgrader.

Its kernels talk to Jupyter over Unix sockets (Jupyter's ``ipc`` transport) in this
process's folder of kernels, not over TCP: Jupyter picks a TCP port free and the kernel
binds it a moment later, and while a class was graded several submissions at once (lab
7's loopback transfers taking ephemeral ports all the time) another process took one in
between now and then: ``Address already in use``, that submission failed. Where the
folder's path is too long for a Unix socket, kernels keep TCP.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import List, Optional

from jupyter_client.manager import AsyncKernelManager
from traitlets import default

from labtools import settings
from labtools.instructor.kernel_forks import KERNEL_SOCKET_PREFIX, LAUNCHER

#: seconds the server may take to listen (its imports: 1.5 s here, about 30 s in the lab VM
#: under software emulation) before kernels start as before
SERVER_READY_S = 90.0
#: longest path of a Unix socket (Linux's sun_path holds 108 bytes with its final zero)
UNIX_SOCKET_PATH_MAX = 107
#: a kernel's sockets in the folder: ``kernel-ID-N`` (ID 12 hex digits, N Jupyter's 1-5)
IPC_NAME_MAX = len("kernel-123456789012-99")
#: seconds the server gets to end once the process that started it is done
SERVER_STOP_S = 30.0
CLIENT = Path(__file__).resolve().parent / "kernel_fork_client.py"


_folder: Optional[str] = None


def kernels_folder() -> str:
    """This process's folder for its fork server's and kernels' sockets, made when first
    asked for, removed when the process ends (after the server, which is stopped first)."""
    global _folder
    if _folder is None:
        _folder = tempfile.mkdtemp(prefix="labtools-kernels-")
        atexit.register(shutil.rmtree, _folder, True)
    return _folder


class _Server:
    """The one fork server of this process, started when a kernel is first asked for."""

    def __init__(self) -> None:
        self.folder = kernels_folder()
        self.path = os.path.join(self.folder, "forks.sock")
        self.proc = subprocess.Popen([sys.executable, "-m", "labtools.instructor.kernel_forks",
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
        """Close its input, wait for it (its kernels' CPU is then counted as ours); the
        folder goes after it (:func:`kernels_folder`)."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=SERVER_STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


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


def ipc_fits() -> bool:
    """True when a kernel's sockets in :func:`kernels_folder` fit a Unix socket's path."""
    return len(kernels_folder()) + 1 + IPC_NAME_MAX <= UNIX_SOCKET_PATH_MAX


class ForkingKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels of this Python come from the fork server, talking
    over Unix sockets where their path fits."""

    @default("transport")
    def _transport_default(self) -> str:
        return "ipc" if ipc_fits() else "tcp"

    @default("ip")
    def _ip_default(self) -> str:
        if self.transport != "ipc":
            return super()._ip_default()
        return os.path.join(kernels_folder(), f"{KERNEL_SOCKET_PREFIX}{uuid.uuid4().hex[:12]}")

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
