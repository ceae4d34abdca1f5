"""nbgrader's side of the forked kernels (:mod:`labtools.teach.kernel_forks`).

:class:`ForkingExecute` is nbgrader's ``Execute`` with :class:`ForkingKernelManager`, put
in nbgrader's autograde steps by a course the kit made (:func:`autograde_preprocessors`,
:func:`labtools.teach.notebook_files.course_config`). For a kernel of this Python
(``-m ipykernel_launcher``) the manager starts the fork server once per nbgrader process
and has Jupyter start :mod:`labtools.teach.kernel_fork_client` instead; any other kernel,
or a server that does not start, is started as before. The server ends with nbgrader and
is waited for, so its kernels' CPU time is nbgrader's, as a plain kernel's is.
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
from typing import Any, List, Optional

from jupyter_client.manager import AsyncKernelManager
from nbgrader.preprocessors import Execute

from labtools import settings
from labtools.teach.kernel_forks import LAUNCHER

#: seconds the server may take to listen (its imports) before kernels start as before
SERVER_READY_S = 30.0
#: seconds the server gets to end once nbgrader is done
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


class ForkingExecute(Execute):
    """nbgrader's ``Execute`` (its configuration too), its kernels from the fork server."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("kernel_manager_class", ForkingKernelManager)
        super().__init__(*args, **kwargs)


def autograde_preprocessors() -> List[Any]:
    """nbgrader's autograde steps, ``Execute`` replaced by :class:`ForkingExecute`."""
    from nbgrader.converters.autograde import Autograde

    steps = Autograde.class_traits()["autograde_preprocessors"].default()
    return [ForkingExecute if step is Execute else step for step in steps]
