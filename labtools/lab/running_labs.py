"""Where a running lab says how to enter its nodes, for ``labtools shell NODE``.

A lab session that starts its network writes a small JSON record into a folder of its
user's own, ``/tmp/labtools-labs-UID`` (mode 700, checked: owned by the user, writable by
no one else; a folder that is not is refused, never used): the lab's process, the
sandbox's holder and each node's process (PID and start time, so a PID taken again by
another process is not mistaken for the lab's), the lab's owner, its results file, its
session and case, and this machine's boot id. The record goes when the lab stops; a record
whose processes are gone (a kernel killed with SIGKILL) is stale: it is ignored and removed
by the next reader. A record written in another kernel (the lab VM's, whose ``/tmp`` may be
the host's) names a boot id that is not this machine's: such a lab runs in the VM, where a
terminal here cannot enter it.

A node of a sandboxed lab is entered as the lab enters it to run tools
(:func:`labtools.lab.sandbox.enter_argv`: its user, network and mount namespaces); a
switch of a sandboxed lab lives in the sandbox's own network namespace (the holder's). A
root Mininet lab's node is entered with Mininet's ``mnexec -a PID`` (root only).
"""

from __future__ import annotations

import json
import os
import stat
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from labtools import settings
from labtools.errors import EnvironmentProblem, InputError, UnknownNodeError
from labtools.lab.sandbox import enter_argv
from labtools.results.records import utc_now
from labtools.system import procfs

if TYPE_CHECKING:  # pragma: no cover
    from labtools.lab.network import MininetBackend
    from labtools.model.topology import Topology

#: the folder the users' record folders are made in
RECORDS_ROOT = Path("/tmp")
#: the version of the record's form
RECORD_FORMAT = 1
#: where the kernel says which boot this is (a VM's differs from its host's)
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
#: the module a lab VM's kernel runs as on the host (:mod:`labtools.system.vm_kernel`)
VM_KERNEL_MODULE = "labtools.system.vm_kernel"
#: a process: its PID and its start time (clock ticks since boot, as ``/proc`` says)
ProcessRef = Tuple[int, str]


def records_dir(uid: Optional[int] = None) -> Path:
    """This user's record folder (not made here)."""
    return RECORDS_ROOT / f"labtools-labs-{os.getuid() if uid is None else uid}"


def boot_id() -> str:
    """This kernel's boot id ('' where it cannot be read)."""
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def process_ref(pid: int) -> ProcessRef:
    """``pid`` with its start time ('' when it is gone)."""
    fields = procfs.stat_fields(pid)
    return pid, (fields[19] if fields else "")


def still_running(ref: ProcessRef) -> bool:
    """True while the process of ``ref`` runs (the same one: same start time)."""
    return bool(ref[1]) and process_ref(ref[0]) == tuple(ref)


@dataclass(frozen=True)
class RunningLab:
    """What a running lab's record says (see the module docstring). ``mode`` is
    ``sandbox`` or ``root`` (Mininet in this machine's namespaces)."""

    uid: int
    boot_id: str
    mode: str
    lab: ProcessRef
    nodes: Dict[str, ProcessRef]
    holder: Optional[ProcessRef] = None
    switches: Tuple[str, ...] = ()
    results: Optional[str] = None
    session_id: str = ""
    case: str = ""
    topology: str = ""
    started_at: str = ""
    in_vm: bool = False
    path: Path = field(default=Path(), compare=False)

    def describe(self) -> str:
        """One line: the topology, case, results file and start time."""
        case = f", case {self.case}" if self.case else ""
        return (f"{self.topology or 'a lab'}{case}, results {self.results or '(none)'}, "
                f"started {self.started_at[:19].replace('T', ' ')} UTC")

    def alive(self) -> bool:
        """True while the lab's process (and its sandbox's holder) runs."""
        return still_running(self.lab) and (self.holder is None or still_running(self.holder))

    def enter(self, node: str, argv: List[str], workdir: str = "") -> List[str]:
        """``argv`` run inside ``node`` (a host, router or, in a sandbox, a switch), in
        ``workdir`` when given. :class:`UnknownNodeError` for another name."""
        if node in self.nodes:
            ref = self.nodes[node]
            if not still_running(ref):
                raise EnvironmentProblem(f"the shell of {node} is gone: the lab is stopping")
            if self.mode == "root":
                return ["mnexec", "-a", str(ref[0]), *argv]
            return with_workdir(enter_argv(ref[0], argv, mounts=True), workdir)
        if node in self.switches and self.holder is not None:
            return with_workdir(enter_argv(self.holder[0], argv), workdir)
        names = sorted(self.nodes) + sorted(self.switches)
        raise UnknownNodeError(f"no node {node!r} in this lab ({self.topology}): "
                               f"choose one of {', '.join(names)}")


def with_workdir(argv: List[str], workdir: str) -> List[str]:
    """An ``nsenter`` command line that starts in ``workdir`` (the same path in the
    node's mount namespace; '' leaves nsenter's default)."""
    return [argv[0], f"--wd={workdir}", *argv[1:]] if workdir else argv


# --- writing ---------------------------------------------------------------------------------
def _own_dir(make: bool) -> Optional[Path]:
    """This user's record folder, checked; None when it does not exist (and ``make`` is
    False). :class:`EnvironmentProblem` when it is not the user's own and private."""
    folder = records_dir()
    if make:
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError as err:
            raise EnvironmentProblem(f"cannot make {folder}: {err.strerror}") from None
    try:
        info = folder.lstat()
    except FileNotFoundError:
        return None
    if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
            or info.st_mode & 0o077):
        raise EnvironmentProblem(f"{folder} is not a private folder of this user "
                                 "(mode 700): remove it, then start the lab again")
    return folder


def register(backend: "MininetBackend", topo: "Topology", session_id: str, case: str,
             results: Optional[Path]) -> Optional[Path]:
    """Write the record of a lab session (``session_id``, ``case``, its results file),
    whose network ``backend`` of ``topo`` has just started; the record's path (None, with
    a warning, when it cannot be written: the lab runs, only a terminal cannot find it)."""
    names = [*topo.hosts, *topo.routers]
    sandboxed = backend.sandbox_pid is not None
    record = RunningLab(
        uid=os.getuid(), boot_id=boot_id(), mode="sandbox" if sandboxed else "root",
        lab=process_ref(os.getpid()), nodes={n: process_ref(backend.pid(n)) for n in names},
        holder=process_ref(backend.sandbox_pid) if backend.sandbox_pid else None,
        switches=tuple(topo.switches) if sandboxed else (),
        results=str(results.resolve()) if results is not None else None,
        session_id=session_id, case=case, topology=topo.name,
        started_at=utc_now(), in_vm=settings.current().in_vm)
    data = asdict(record)
    data.pop("path")
    data["format"] = RECORD_FORMAT
    try:
        folder = _own_dir(make=True)
        if folder is None:  # pragma: no cover - just made
            return None
        path = folder / f"{session_id}.json"
        part = path.with_suffix(".part")
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle)
        os.replace(part, path)
    except (OSError, EnvironmentProblem) as err:
        warnings.warn(f"`labtools shell` will not find this lab: {err}", stacklevel=2)
        return None
    return path


def unregister(path: Optional[Path]) -> None:
    """Remove a lab's record (it may be gone already)."""
    if path is not None:
        try:
            path.unlink()
        except OSError:
            pass


# --- reading ---------------------------------------------------------------------------------
def _read(path: Path) -> Optional[RunningLab]:
    try:
        if path.lstat().st_uid != os.getuid():
            return None
        data = json.loads(path.read_text())
        if data.pop("format", None) != RECORD_FORMAT:
            return None
        data["lab"] = tuple(data["lab"])
        data["holder"] = tuple(data["holder"]) if data.get("holder") else None
        data["nodes"] = {k: tuple(v) for k, v in data["nodes"].items()}
        data["switches"] = tuple(data.get("switches") or ())
        return RunningLab(path=path, **data)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def recorded_labs() -> Tuple[List[RunningLab], List[RunningLab]]:
    """(labs running in this kernel, labs recorded by another kernel: the lab VM's).
    Stale records (their processes gone, or unreadable) are removed."""
    folder = _own_dir(make=False)
    here: List[RunningLab] = []
    elsewhere: List[RunningLab] = []
    for path in sorted(folder.glob("*.json")) if folder is not None else []:
        lab = _read(path)
        if lab is not None and lab.boot_id and lab.boot_id != boot_id():
            elsewhere.append(lab)
        elif lab is not None and lab.alive():
            here.append(lab)
        else:
            unregister(path)
    return here, elsewhere


def vm_kernels() -> List[int]:
    """PIDs of this user's notebook kernels that run in the lab VM (their host side)."""
    found = []
    for pid in procfs.pids():
        argv = procfs.argv(pid) or []
        if (VM_KERNEL_MODULE in argv and "--guest" not in argv
                and procfs.owner_uid(pid) == os.getuid()):
            found.append(pid)
    return found


def choose(lab: Optional[str] = None) -> RunningLab:
    """The running lab to enter: the only one, or the one whose results file is ``lab``
    (a results file, or the folder it is in). A one-line typed error otherwise."""
    here, elsewhere = recorded_labs()
    if lab is not None:
        here = [r for r in here if _matches(r, lab)]
    if len(here) == 1:
        return here[0]
    if here:
        listed = "; ".join(f"--lab {r.results or '?'}: {r.describe()}" for r in here)
        raise InputError(f"{len(here)} labs of yours are running: choose one with --lab "
                         f"({listed})")
    if lab is not None:
        _refuse_another_users(lab)
    if elsewhere or vm_kernels():
        raise EnvironmentProblem(VM_LAB)
    where = f" with results {lab}" if lab is not None else ""
    raise EnvironmentProblem(f"no lab of yours is running{where}: start one first "
                             "(lab.start() in a notebook)")


#: why a terminal cannot enter a lab in the lab VM, and what to do instead
VM_LAB = ("your lab runs in the lab VM (the notebook's kernel is a VM): a terminal here "
          "cannot enter its nodes; type the command in the notebook instead, "
          "run_on(lab, \"h1\", \"ip route\"), which is recorded the same way")


def _matches(lab: RunningLab, wanted: str) -> bool:
    if lab.results is None:
        return False
    path = Path(wanted).expanduser().resolve()
    return str(path) == lab.results or str(path) == str(Path(lab.results).parent)


def _refuse_another_users(wanted: str) -> None:
    """A one-line error when ``wanted`` (a results file or folder) is another user's."""
    path = Path(wanted).expanduser()
    try:
        owner = path.stat().st_uid
    except OSError:
        return
    if owner != os.getuid():
        raise InputError(f"{wanted} is another user's (uid {owner}): a terminal enters "
                         "only the labs you started")
