"""Every autograde kernel in a sandbox of its own: a submission's code runs with none of the
instructor's rights.

The kernel fork server (:mod:`labtools.instructor.kernel_forks`) builds it in each forked
kernel, in two steps around ipykernel's start:

:meth:`KernelSandbox.before_start` (single-threaded, right after the fork)
    - *environment*: only what a kernel and the labs' replay read (:func:`kernel_env`):
      ``PATH``, the locale, ``NBGRADER_EXECUTION``, the kit's ``LABTOOLS_*`` settings,
      Jupyter's ``JPY_*``; ``HOME`` is the submission's folder; no token, no
      ``JUPYTERHUB_*``, nothing else of the instructor's;
    - *limits* (``setrlimit``, numbers in :mod:`labtools.judge.policy`): address space,
      processes, file size, open files, CPU time;
    - *files* (:class:`~labtools.instructor.kernel_mounts.View`): a mount namespace in which
      the course folder (``source/``, ``release/``, ``feedback/``, the gradebook, the other
      submissions) and the instructor's home are empty but for the submission's folder,
      the kit, the course's ``labtools-variants.csv`` (read-only: whose variant the
      submission is graded on) and the student's own file of the course hub's record
      (``course-record/STUDENT.json``, read-only), the kit is read-only (its
      ``solutions/`` hidden too, in a checkout) and ``/tmp`` is the kernel's own.

:meth:`KernelSandbox.after_bind` (once ipykernel has bound its sockets, before the first cell)
    - *network*: a network namespace of the kernel's own with only loopback, up (sockets
      keep the namespace they were made in: Jupyter's stay connected; lab 7's loopback
      transfers work);
    - *identity*: as root, the kernel becomes a user of its own (uid
      :data:`KERNEL_UID_BASE` + its PID: no file of anyone's is its own, its process limit
      is its own); the submission's folder is given to it for the kernel's life
      (:func:`give_back` returns it). Otherwise the kernel is this user in a user namespace
      of its own, its capabilities dropped. Either way no set-uid program raises it
      (``no_new_privs``).

A step this machine refuses is skipped with one line on the kernel's standard error
(nbgrader's log); grading goes on the same. :func:`probe` says once, for the server, which
protections this machine gives.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import resource
import socket
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from labtools import settings
from labtools.errors import EnvironmentProblem
from labtools.instructor import kernel_mounts
from labtools.judge import policy
from labtools.results import ownership
from labtools.results.course_record_file import RECORD_FOLDER

#: as root, a kernel's uid and gid are this plus its PID (no user of the machine's)
KERNEL_UID_BASE = 1_000_000_000
#: environment variables a kernel keeps, by name, besides the kit's own settings
KEPT_NAMES = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "MPLBACKEND",
                        settings.GRADING})
#: ... and by prefix
KEPT_PREFIXES = ("LC_", "JPY_")
#: names never kept, whatever their prefix
SECRET = re.compile(r"TOKEN|SECRET|KEY|PASSW|CREDENTIAL|COOKIE", re.IGNORECASE)
PR_SET_NO_NEW_PRIVS = 38
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


@dataclass
class Protections:
    """Which protections applied (their names) and which this machine refused (name: why)."""

    applied: List[str] = field(default_factory=list)
    refused: List[str] = field(default_factory=list)

    def line(self) -> str:
        """One line for the log."""
        said = f"autograde sandbox: {', '.join(self.applied) or 'nothing'} applied"
        if self.refused:
            said += f"; not applied: {'; '.join(self.refused)}"
        return said


def kernel_env(env: Mapping[str, str], folder: str) -> Dict[str, str]:
    """What a kernel keeps of the environment Jupyter gave it, ``HOME`` at ``folder``."""
    kit = {v.name for v in settings.VARIABLES if v.name.startswith(settings.PREFIX)}
    kept = {name: value for name, value in env.items()
            if (name in KEPT_NAMES or name in kit or name.startswith(KEPT_PREFIXES))
            and not SECRET.search(name)}
    kept["HOME"] = folder
    return kept


def set_limits(as_root: bool) -> None:
    """The kernel's limits (:mod:`labtools.judge.policy`); its processes counted on top of
    those this user already has when the kernel keeps the user's identity."""
    mib = 1 << 20
    processes = policy.GRADING_PROCESSES
    if not as_root:
        processes += _tasks_of(os.getuid())
    for which, value in ((resource.RLIMIT_AS, policy.GRADING_MEMORY_MIB * mib),
                         (resource.RLIMIT_NPROC, processes),
                         (resource.RLIMIT_FSIZE, policy.GRADING_FILE_MIB * mib),
                         (resource.RLIMIT_NOFILE, policy.GRADING_OPEN_FILES),
                         (resource.RLIMIT_CPU, policy.GRADING_CPU_S)):
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def _tasks_of(uid: int) -> int:
    """Processes and threads whose real user is ``uid`` (what ``RLIMIT_NPROC`` counts)."""
    from labtools.system import procfs

    count = 0
    for pid in procfs.pids():
        status = procfs.read_text(pid, "status")
        if status is None:
            continue  # gone meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1 0").split()[0]) == uid:
            count += int(fields.get("Threads", "1"))
    return count


def course_of(folder: Path) -> Optional[Path]:
    """The course of a submission's folder ``COURSE/autograded/STUDENT/ASSIGNMENT``."""
    if len(folder.parents) >= 3 and folder.parents[1].name == "autograded":
        return folder.parents[2]
    return None


def connection_file(argv: List[str]) -> Optional[Path]:
    """Jupyter's connection file in a kernel's arguments (``-f FILE`` or ``--f=FILE``)."""
    for i, arg in enumerate(argv):
        if arg == "-f" and i + 1 < len(argv):
            return Path(argv[i + 1]).resolve()
        if arg.startswith(("--f=", "-f=")):
            return Path(arg.split("=", 1)[1]).resolve()
    return None


def _kit_folders() -> List[Path]:
    """The kit and the Python it runs on: the kit's folder (first), its package and
    topologies (kept where the kit's folder holds what is covered), the prefixes,
    sys.path."""
    import labtools

    package = Path(labtools.__file__).resolve().parent
    found = [package.parent, package, package.parent / "topologies", Path(sys.prefix),
             Path(sys.base_prefix), Path(sys.exec_prefix)]
    found += [Path(p).resolve() for p in sys.path if p and os.path.isdir(p)]
    return found


class KernelSandbox:
    """One forked kernel's sandbox: ``folder`` its submission's, ``env`` and ``argv`` what
    Jupyter gave it, ``sockets`` the folder of the kernels' Unix sockets."""

    def __init__(self, folder: str, env: Mapping[str, str], argv: List[str],
                 sockets: str) -> None:
        self.folder = Path(folder).resolve()
        self.env = env
        self.argv = argv
        self.sockets = Path(sockets).resolve()
        self.as_root = os.geteuid() == 0
        self.protections = Protections()
        self.private_files = False

    def _step(self, name: str, problem: Optional[EnvironmentProblem]) -> None:
        if problem is None:
            self.protections.applied.append(name)
        else:
            self.protections.refused.append(f"{name} ({problem})")
            print(f"labtools: this kernel's sandbox has no {name}: {problem}",
                  file=sys.stderr, flush=True)

    def before_start(self) -> Dict[str, str]:
        """Limits and files (single-threaded); returns the kernel's environment."""
        self._step("environment", None)
        try:
            set_limits(self.as_root)
            self._step("limits", None)
        except (OSError, ValueError) as err:
            self._step("limits", EnvironmentProblem(str(err)))
        try:
            self._view().build(self.as_root)
            self.private_files = True
            self._step("files", None)
        except (OSError, EnvironmentProblem) as err:
            self._step("files", err if isinstance(err, EnvironmentProblem)
                       else EnvironmentProblem(str(err)))
        env = kernel_env(self.env, str(self.folder))
        if self.private_files:  # IPython's and matplotlib's files in the kernel's /tmp
            env.update(IPYTHONDIR="/tmp/ipython", MPLCONFIGDIR="/tmp/matplotlib")
        return env

    def _view(self) -> kernel_mounts.View:
        kept = _kit_folders()
        conn = connection_file(self.argv)
        if conn is not None:
            kept.append(conn)
        homes = {Path(self.env.get("HOME", "/")), Path(os.path.expanduser("~"))}
        course = course_of(self.folder)
        if course is not None:  # whose variant the submission is graded on
            kept.append(course / ownership.VARIANTS_FILE)
            # the student's own rows of the course hub's record (read-only), no one else's
            kept.append(course / RECORD_FOLDER / f"{self.folder.parent.name}.json")
        # the kit's own solutions/ when it is a checkout of the kit's sources
        covered = [h.resolve() for h in homes] + ([course] if course else []) + \
            [_kit_folders()[0] / "solutions"]
        return kernel_mounts.View(kept=kept, read_only=_kit_folders()[:1],
                                  covered=covered, writable=[self.folder, self.sockets])

    def after_bind(self) -> None:
        """Network and identity, once the kernel's sockets are bound (this thread, where
        the cells run, and what it starts)."""
        if self.as_root or self.private_files:  # a user namespace of its own otherwise
            try:
                kernel_mounts.unshare(kernel_mounts.CLONE_NEWNET, "a network namespace")
                loopback_up()
                self._step("network (loopback only)", None)
            except (OSError, EnvironmentProblem) as err:
                self._step("network (loopback only)", EnvironmentProblem(str(err)))
        else:
            self._step("network (loopback only)",
                       EnvironmentProblem("no user namespace to make it in"))
        try:
            _no_new_privileges()
            if self.as_root:
                become(kernel_uid(os.getpid()), [self.folder, Path("/tmp")]
                       if self.private_files else [self.folder])
            else:
                drop_capabilities()
            self._step("identity", None if self.as_root or self.private_files else
                       EnvironmentProblem("no user namespace: the grading user's own"))
        except OSError as err:
            self._step("identity", EnvironmentProblem(str(err)))


def kernel_uid(pid: int) -> int:
    """The uid (and gid) of root's kernel ``pid``."""
    return KERNEL_UID_BASE + pid


def loopback_up() -> None:
    """Bring ``lo`` up in this network namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def _libc_call(name: str, *args: object) -> None:
    if getattr(kernel_mounts._libc, name)(*args) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}: {os.strerror(errno)}")


def _no_new_privileges() -> None:
    """No set-uid program raises this process or its children."""
    _libc_call("prctl", PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0),
               ctypes.c_ulong(0), ctypes.c_ulong(0))


def drop_capabilities() -> None:
    """This thread (and what it starts) keeps no capability (``capset(2)``, all zero)."""
    header = struct.pack("Ii", _LINUX_CAPABILITY_VERSION_3, 0)
    data = bytes(24)  # two sets of effective, permitted, inheritable
    _libc_call("capset", ctypes.c_char_p(header), ctypes.c_char_p(data))


def become(uid: int, folders: List[Path]) -> None:
    """Root only: give ``folders`` (their files, not the mounts in them) to ``uid`` and
    become ``uid`` (gid the same), every thread, with no capability left."""
    for folder in folders:
        _chown_tree(folder, uid, uid)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def give_back(folder: str, uid: int, gid: int) -> None:
    """The server, after a kernel: ``folder`` and what the kernel made in it to their
    owner again."""
    _chown_tree(Path(folder), uid, gid)


def _chown_tree(folder: Path, uid: int, gid: int) -> None:
    try:
        device = folder.stat().st_dev
    except OSError:
        return  # gone: nothing to give
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if os.lstat(os.path.join(top, d)).st_dev == device]
        for name in [top, *(os.path.join(top, f) for f in files)]:
            try:
                os.lchown(name, uid, gid)
            except OSError:
                pass  # a file bound in from elsewhere, or gone meanwhile


def kill_identity(uid: int) -> None:
    """The server, after root's kernel: end every process still running as ``uid`` (what
    the kernel left running in the background)."""
    import signal

    from labtools.system import procfs

    for pid in procfs.pids():
        if procfs.owner_uid(pid) == uid:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue  # gone meanwhile


def probe() -> Protections:
    """Which protections this machine gives a forked kernel, tried in a child (for the
    server's one line)."""
    as_root = os.geteuid() == 0
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: try each namespace, say which failed
        os.close(read)
        said = []
        try:
            if not as_root:
                kernel_mounts.enter_user_namespace()
            kernel_mounts.unshare(kernel_mounts.CLONE_NEWNS, "a mount namespace")
            kernel_mounts.unshare(kernel_mounts.CLONE_NEWNET, "a network namespace")
        except (OSError, EnvironmentProblem) as err:
            said.append(str(err))
        os.write(write, "\n".join(said).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        refused = answer.read().decode()
    os.waitpid(pid, 0)
    protections = Protections(applied=["environment", "limits"])
    names = ["files", "network (loopback only)", "identity"]
    if not refused:
        protections.applied += names
    elif as_root:  # its own uid needs no namespace
        protections.applied.append(names[2])
        protections.refused += [f"{name} ({refused})" for name in names[:2]]
    else:
        protections.refused += [f"{name} ({refused})" for name in names]
    return protections


def announce() -> str:
    """The line ``labtools autograde`` prints once: which protections its kernels get."""
    if not settings.current().forked_kernels:
        return ("autograde sandbox: none (LABTOOLS_FORKED_KERNELS=0: each kernel is started "
                "anew, with the instructor's rights)")
    return probe().line()
