"""Kernels forked from one that has imported what the labs import, while nbgrader grades:
the server.

Autograding starts a kernel for every notebook of every student: a new Python that imports
ipykernel, IPython, NumPy, pandas, matplotlib and the kit, about 1.5 CPU seconds of the
2.5-5 a replayed lab costs (BENCHMARKS.md, "Grading a class"). This *kernel fork server*
imports them once, then forks a child for each kernel asked for: the child takes the
working folder, environment and standard streams of the process Jupyter started
(:mod:`labtools.instructor.kernel_fork_client`), then runs ipykernel as
``python -m ipykernel_launcher`` would. What the notebook's cells do is the same; what they
import is already there. nbgrader's side is :mod:`labtools.instructor.grading_kernels`.

A kernel nbgrader grades with (``NBGRADER_EXECUTION`` set) is built in a sandbox of its
own (:mod:`labtools.instructor.kernel_sandbox`): its environment, limits and files before
ipykernel starts, its network and identity once its sockets are bound; the server says
once which protections this machine gives, and after such a kernel ends what it left
running and the folder it was given back (root).

``python -m labtools.instructor.kernel_forks SOCKET`` runs it (no root); it ends when its
standard input closes, after its kernels.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys
import traceback
from typing import Any, Dict, List, Optional, Tuple

from labtools import settings
from labtools.instructor import kernel_sandbox

#: what the server imports before it forks: what the labs' cells import (pyplot without a
#: backend yet: the kernel's own is chosen in the kernel), what ipykernel imports while a
#: kernel starts (its debugger, with debugpy; psutil) and ipywidgets, whose registration
#: with the kernel it is imported in is done again in each kernel (:func:`_start_kernel`)
PREIMPORTED = ("numpy", "pandas", "matplotlib", "matplotlib.pyplot", "IPython",
               "IPython.display", "ipykernel.kernelapp", "ipykernel.ipkernel",
               "ipykernel.debugger", "psutil", "ipywidgets", "labtools.teach.widgets",
               "labtools.teach.notebook", "labtools.teach.plots", "labtools.teach.tool_runs",
               "labtools.lab.probes", "labtools.teach.question_values",
               "labtools.teach.topology_plot", "labtools.tools.parsers",
               "labtools.judge.verdicts", "labtools.judge.exercises", "labtools.model.fairness",
               "labtools.model.queues", "labtools.judge.capacity", "labtools.lab.capacity",
               "labtools.teach.simpleperf_checks", "labtools.teach.simpleperf_runs",
               "labtools.teach.conformance", "labtools.teach.pitfall_plots",
               "labtools.judge.by_hand", "labtools.lab.load",
               # what a kernel imported anew in a profile of a whole submission: the tools'
               # parsers (imported when a tool is first parsed: their patterns), IPython's
               # inspector, completer and debugger, pdb, the Agg renderer under the inline
               # backend, the kit's variants (a student's network)
               "labtools.tools.parsers.ping", "labtools.tools.parsers.iperf2",
               "labtools.tools.parsers.iperf2_csv", "labtools.tools.parsers.iperf3",
               "labtools.tools.parsers.iperf3_json", "labtools.tools.parsers.ss",
               "labtools.tools.parsers.simpleperf", "IPython.core.oinspect",
               "IPython.core.completerlib", "IPython.core.debugger", "pdb",
               "IPython.extensions.storemagic", "tornado.platform.asyncio",
               "matplotlib.backends.backend_agg", "labtools.model.variants",
               "labtools.teach.kit_errors", "labtools.lab.mn_custom")
#: how Jupyter starts a kernel of this Python (after the executable)
LAUNCHER = ["-m", "ipykernel_launcher"]
#: how the kernels' Unix sockets beside the server's are named
#: (:class:`labtools.instructor.kernel_fork_manager.ForkingKernelManager`)
KERNEL_SOCKET_PREFIX = "kernel-"
#: largest request (the kernel's environment) in bytes
REQUEST_BYTES = 1 << 20


# --- the server --------------------------------------------------------------------------
def _preimport() -> None:
    """Import what the kernels will import, with the backend ipykernel chooses."""
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for name in PREIMPORTED:
        __import__(name)


def _become_kernel(request: Dict[str, Any], fds: List[int], keep_closed: List[int],
                   sockets: str) -> None:
    """In the forked child: take the client's folder and streams, build the kernel's
    sandbox (:mod:`labtools.instructor.kernel_sandbox`; ``sockets``: the kernels' socket
    folder), run ipykernel, and exit (never returns)."""
    code = 1
    try:
        for fd in keep_closed:
            os.close(fd)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        os.setsid()  # as Jupyter starts a kernel: Ctrl-C at nbgrader's terminal is nbgrader's
        sandbox = kernel_sandbox.KernelSandbox(
            request["cwd"], request["env"], request["argv"][len(LAUNCHER):], sockets) \
            if _grading(request) else None
        env = sandbox.before_start() if sandbox is not None else request["env"]
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(env)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()  # a kernel of its own draws numbers of its own
        sys.argv = ["ipykernel_launcher", *request["argv"][len(LAUNCHER):]]
        parent = request["env"].get("JPY_PARENT_PID")  # ipykernel read it when imported
        if parent:
            sys.argv.append(f"--IPKernelApp.parent_handle={parent}")
        sys.path[0] = request["cwd"]  # as for `python -m`
        _start_kernel(sandbox)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001 - a kernel that fails says why, then exits
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _grading(request: Dict[str, Any]) -> bool:
    """True for a kernel nbgrader grades with (autograde, validate: it sets
    ``NBGRADER_EXECUTION``): sandboxed. The solutions executed on a real network by the
    kit's tests are not."""
    return bool(request["env"].get(settings.GRADING))


def _start_kernel(sandbox: Optional["kernel_sandbox.KernelSandbox"]) -> None:
    """What ``python -m ipykernel_launcher`` does (``IPKernelApp.launch_instance``), with
    ipywidgets' import-time step done once the kernel exists: imported in the server, it
    found no kernel to register its comm target with (ipywidgets 8: ``_handle_ipython``);
    the sandbox's network and identity (``sandbox.after_bind``, when grading) once the
    kernel's sockets are bound, before it runs a cell."""
    from ipykernel import kernelapp

    app = kernelapp.IPKernelApp.instance()
    app.initialize()
    if sandbox is not None:
        sandbox.after_bind()
    widgets = sys.modules.get("ipywidgets")
    register = getattr(widgets, "_handle_ipython", None)
    if callable(register):
        register()
    app.start()


class ForkServer:
    """Accepts clients on a Unix socket, forks a kernel for each, passes signals on and
    says how each kernel ended; ends when its standard input closes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(path)
        self.listener.listen(64)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(0, selectors.EVENT_READ)  # standard input
        self.kernel_of: Dict[socket.socket, int] = {}
        self.client_of: Dict[int, Optional[socket.socket]] = {}
        #: a kernel's submission folder, with its owner's uid and gid
        self.owner_of: Dict[int, Tuple[str, int, int]] = {}

    def serve(self) -> None:
        """Serve until standard input closes."""
        running = True
        while running:
            for key, _events in self.selector.select(timeout=0.1):
                if key.fileobj is self.listener:
                    conn, _addr = self.listener.accept()
                    self.selector.register(conn, selectors.EVENT_READ)
                elif key.fileobj == 0:
                    running = bool(os.read(0, 1024))
                elif isinstance(key.fileobj, socket.socket):  # a client's connection
                    self._message(key.fileobj)
            self._reap(block=False)

    def stop_kernels(self) -> None:
        """Kill the kernels still running and wait for them."""
        for pid in list(self.client_of):
            self._signal(pid, signal.SIGKILL)
        self._reap(block=True)

    def _message(self, conn: socket.socket) -> None:
        try:
            message, fds, _flags, _addr = socket.recv_fds(conn, REQUEST_BYTES, 3)
        except OSError:
            message, fds = b"", []
        pid = self.kernel_of.get(conn)
        if not message:  # the client is gone: so is its kernel
            self.selector.unregister(conn)
            conn.close()
            if pid is not None:
                self.kernel_of.pop(conn)
                self.client_of[pid] = None
                self._signal(pid, signal.SIGKILL)
            return
        said = json.loads(message)
        if "signal" in said and pid is not None:
            self._signal(pid, int(said["signal"]))
        elif "argv" in said and pid is None:
            sys.stdout.flush()
            sys.stderr.flush()
            try:  # the folder is the kernel's while it runs
                owner: Optional[os.stat_result] = os.stat(said["cwd"])
            except OSError:
                owner = None  # the kernel says so itself
            child = os.fork()
            if child == 0:
                others = [s.fileno() for s in self.kernel_of] + [conn.fileno(),
                                                                 self.listener.fileno()]
                _become_kernel(said, fds, others, os.path.dirname(self.path))
            for fd in fds:
                os.close(fd)
            self.kernel_of[conn], self.client_of[child] = child, conn
            if owner is not None and _grading(said):
                self.owner_of[child] = (said["cwd"], owner.st_uid, owner.st_gid)

    @staticmethod
    def _signal(pid: int, signum: int) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass  # it ended meanwhile: reaped next

    def _clear_after(self, pid: int) -> None:
        """Root's kernel ``pid`` ended: end what it left running, give its folder back
        to the folder's owner (:mod:`labtools.instructor.kernel_sandbox`)."""
        owner = self.owner_of.pop(pid, None)
        if os.geteuid() != 0 or owner is None:
            return
        kernel_sandbox.kill_identity(kernel_sandbox.kernel_uid(pid))
        kernel_sandbox.give_back(*owner)

    def _reap(self, block: bool) -> None:
        while self.client_of:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            code = os.waitstatus_to_exitcode(status)
            self._clear_after(pid)
            conn = self.client_of.pop(pid, None)
            if conn is not None:
                self.kernel_of.pop(conn, None)
                try:
                    conn.send(json.dumps({"exit": code if code >= 0 else 128 - code}).encode())
                except OSError:
                    pass  # the client went at the same moment
                self.selector.unregister(conn)
                conn.close()


def _stop_serving(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def serve(path: str) -> None:
    """Import, then serve kernels on the Unix socket ``path`` until stdin closes (or a
    signal stops it); its kernels are stopped and its socket removed either way."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop_serving)
    _preimport()
    print(kernel_sandbox.probe().line(), file=sys.stderr, flush=True)
    server = ForkServer(path)
    try:
        server.serve()
    finally:
        server.stop_kernels()
        _remove_sockets(path)


def _remove_sockets(path: str) -> None:
    """Remove the server's socket, the sockets its kernels left beside it (``kernel-*``:
    a kernel killed before Jupyter removed them, or a process gone without its exit
    handlers) and the folder once it is empty."""
    folder = os.path.dirname(path)
    try:
        left = [os.path.join(folder, name) for name in os.listdir(folder)
                if name.startswith(KERNEL_SOCKET_PREFIX)]
    except OSError:
        left = []
    for name in [path, *left]:
        try:
            os.unlink(name)
        except OSError:
            pass  # removed already by the one who made it
    try:
        os.rmdir(folder)
    except OSError:
        pass  # removed already, or something else is in it


if __name__ == "__main__":
    serve(sys.argv[1])
