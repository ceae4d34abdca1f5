"""Leftovers of crashed labs: find them, remove them, and keep a lab from leaving any.

A lab with Linux bridges (the default) cannot leave any: its whole network lives in a
sandbox that ends with its process (:mod:`labtools.lab.sandbox`). Its processes live in a
user namespace other than the machine's and are never taken for leftovers (they may be
another user's running lab); only a sandbox whose holder was killed too is
(:func:`labtools.system.sandbox_leftovers.orphaned_sandboxes`).

What remains are labs with Open vSwitch, which Mininet builds in the machine's own
namespace, and labs of older versions of the kit. Their hosts and routers are shells started
by ``mnexec`` in their own network namespaces (Mininet marks them ``mininet:<node>`` on their
command line); their links are veth pairs named ``<node>-eth<N>``; their switches are Linux
bridges (or Open vSwitch bridges) named ``s<N>``. What a crash can leave behind:

- processes: ``mnexec``, Mininet node shells (``mininet:h1``), and the measurement tools
  (``iperf``, ``iperf3``, ``ping``, ``simpleperf``) *running in a network namespace other
  than PID 1's* (and in the machine's user namespace) — the same tool started on the
  machine itself (a student's own iperf3) is never touched;
- interfaces in the root namespace named like ``h1-eth0``, ``s1-eth2`` (their qdiscs go
  with them);
- Linux bridges named ``s<N>``, and Open vSwitch bridges of that name when ``ovs-vsctl``
  works;
- named network namespaces starting with ``labtools-`` (and the processes inside);
- a lab VM (``vng``/``qemu``) whose ``labtools vm`` was killed without stopping it.

:func:`clean` removes them (processes get SIGTERM, then SIGKILL after
:data:`GRACE_S`), then runs Mininet's own ``mn -c`` (which also kills *every* ``ping``
on the machine and deletes ``/tmp/*.log`` and ``/tmp/*.out``; pass ``mininet=False`` to
skip it; it does not run while sandboxed labs run, whose pings it would kill). Every
external command has a time-out.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from labtools.errors import EnvironmentProblem
from labtools.system import procfs, sandbox_leftovers, vm_leftovers

#: measurement tools the kit starts inside host namespaces
KIT_TOOLS = ("iperf", "iperf3", "ping", "simpleperf")
#: Mininet-style interface names (``h1-eth0``, ``r1-eth2``, ``s1-eth1``)
INTERFACE_RE = re.compile(r"^[a-z]+[0-9]+-eth[0-9]+$")
#: the kit's switch names (``s1``, ``s2``...)
SWITCH_RE = re.compile(r"^s[0-9]+$")
_SHELLS = ("bash", "sh")
#: Mininet's mark of a node shell (``mininet:h1``), which the kit's node shells carry too
NODE_SHELL_MARK = "mininet:"
_NODE_SHELL_RE = re.compile(rf"^{NODE_SHELL_MARK}[A-Za-z0-9_.-]+$")
#: prefix of named network namespaces the kit creates
NETNS_PREFIX = "labtools-"
#: seconds between SIGTERM and SIGKILL
GRACE_S = 1.0
#: time-out of one ``ip``/``ovs-vsctl`` command, s
COMMAND_TIMEOUT_S = 10.0
#: time-out of ``mn -c``, s
MN_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class LeftoverProcess:
    """A process to stop: its pid, a short name (``iperf3``, ``mnexec``, ``mininet:h1``),
    its command line, and its start time in clock ticks (so a reused pid is never hit)."""

    pid: int
    name: str
    cmdline: str
    start_ticks: int = 0


@dataclass
class Leftovers:
    """Leftovers found (or removed). ``failed`` holds one line per item that could not be
    removed; ``mn_output`` what ``mn -c`` printed, when it ran."""

    processes: List[LeftoverProcess] = field(default_factory=list)
    interfaces: List[str] = field(default_factory=list)
    bridges: List[str] = field(default_factory=list)
    ovs_bridges: List[str] = field(default_factory=list)
    namespaces: List[str] = field(default_factory=list)
    folders: List[str] = field(default_factory=list)
    failed: List[str] = field(default_factory=list)
    mn_output: str = ""
    #: sandboxed labs running on the machine (not leftovers; ``mn -c`` then does not run)
    running_labs: int = 0

    def count(self) -> int:
        """How many items (processes, interfaces, bridges, namespaces, VM folders)."""
        return (len(self.processes) + len(self.interfaces) + len(self.bridges)
                + len(self.ovs_bridges) + len(self.namespaces) + len(self.folders))

    def describe(self) -> str:
        """One line: ``3 processes (iperf3 x2, mnexec), 12 interfaces, 2 bridges``, or
        ``nothing``."""
        parts = []
        if self.processes:
            names = Counter(p.name.split(":")[0] for p in self.processes)
            kinds = ", ".join(n if c == 1 else f"{n} x{c}" for n, c in sorted(names.items()))
            parts.append(f"{_plural(len(self.processes), 'process', 'processes')} ({kinds})")
        for items, word in ((self.interfaces, "interface"), (self.bridges, "bridge"),
                            (self.ovs_bridges, "OVS bridge"), (self.namespaces, "namespace"),
                            (self.folders, "VM folder")):
            if items:
                parts.append(_plural(len(items), word, word + "s"))
        return ", ".join(parts) if parts else "nothing"

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready form."""
        data = asdict(self)
        data["count"] = self.count()
        return data


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


# --- finding ---------------------------------------------------------------------------
def find_leftovers() -> Leftovers:
    """Everything a crashed lab may have left (see the module docstring)."""
    namespaces = _named_namespaces()
    table = _process_table()
    sandboxed = sandbox_leftovers.sandboxed(list(table))
    processes = _kit_processes({p: i for p, i in table.items() if p not in sandboxed})
    argvs = {pid: info.argv for pid, info in table.items()}
    for pid in sandbox_leftovers.orphaned_sandboxes(argvs, sandboxed):
        orphan = table[pid]
        processes.append(LeftoverProcess(pid, sandbox_leftovers.process_name(
            orphan.comm, orphan.argv), " ".join(orphan.argv), orphan.start_ticks))
    vm_pids = vm_leftovers.orphaned_vm_processes(
        {pid: (info.argv, info.session) for pid, info in table.items()})
    processes += [LeftoverProcess(pid, "vm", " ".join(table[pid].argv), table[pid].start_ticks)
                  for pid in vm_pids]
    seen = {p.pid for p in processes}
    for ns in namespaces:
        for pid in _netns_pids(ns):
            info = _process(pid)
            if info is not None and pid not in seen:
                processes.append(LeftoverProcess(pid, info.comm, " ".join(info.argv),
                                                 info.start_ticks))
                seen.add(pid)
    links = sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else []
    bridges = [n for n in links if SWITCH_RE.match(n) and _is_bridge(n)]
    interfaces = [n for n in links if INTERFACE_RE.match(n) and not _is_bridge(n)]
    return Leftovers(sorted(processes, key=lambda p: p.pid), interfaces, bridges,
                     _ovs_bridges(), namespaces,
                     vm_leftovers.stale_folders(table[pid].argv for pid in vm_pids),
                     running_labs=sandbox_leftovers.running_sandboxes())


def kit_process_name(comm: str, argv: Sequence[str]) -> Optional[str]:
    """The kit's name for a process from its ``comm`` and argument vector, or None when
    it is not a kind the kit starts: ``mnexec``, ``mininet:<node>`` (a Mininet node
    shell), or one of :data:`KIT_TOOLS`."""
    if comm == "mnexec":
        return "mnexec"
    base = os.path.basename(argv[0]) if argv else ""
    if base in _SHELLS:
        for arg in argv[1:]:
            if _NODE_SHELL_RE.match(arg):
                return arg
    for name in (comm, base):
        if name in KIT_TOOLS:
            return name
    if base.startswith("python") and "labtools.tools.simpleperf" in argv[1:4]:
        return "simpleperf"  # python [-S] -m labtools.tools.simpleperf
    script = next((arg for arg in argv[1:3] if not arg.startswith("-")), "")
    if os.path.basename(script.rstrip("/")) == "simpleperf":
        return "simpleperf"  # the installed script, or python -S .../tools/simpleperf (the kit)
    return None


def root_netns() -> Optional[str]:
    """The machine's own network namespace (``net:[inode]``): PID 1's, or this process's
    where PID 1's cannot be read (containers, sandboxes)."""
    return _netns_of(1) or _netns_of(os.getpid())


class ProcessInfo(NamedTuple):
    """What ``/proc/PID`` says of a live process."""

    comm: str
    argv: List[str]
    session: int
    start_ticks: int


def _process_table() -> Dict[int, ProcessInfo]:
    """Every live user process but this one, read from ``/proc`` once; not those of
    containers (another PID namespace: their PIDs and files are not this machine's, a lab
    VM in a student's container is not a leftover of the machine)."""
    table = {}
    ours = sandbox_leftovers.pid_namespace_of(os.getpid())
    for pid in procfs.pids():
        if pid != os.getpid():
            theirs = sandbox_leftovers.pid_namespace_of(pid)
            info = _process(pid)
            if info is not None and (theirs is None or theirs == ours):
                table[pid] = info
    return table


def _kit_processes(table: Dict[int, ProcessInfo]) -> List[LeftoverProcess]:
    root_ns = root_netns()
    found = []
    for pid, info in table.items():
        name = kit_process_name(info.comm, info.argv)
        if name is None:
            continue
        if name in KIT_TOOLS:
            netns = _netns_of(pid)
            if netns is None or netns == root_ns:
                continue  # on the machine itself (or not ours to inspect): not the kit's
        found.append(LeftoverProcess(pid, name, " ".join(info.argv), info.start_ticks))
    return found


def _process(pid: int) -> Optional[ProcessInfo]:
    """A live process, None if gone, a zombie or a kernel thread."""
    fields, name, argv = procfs.stat_fields(pid), procfs.comm(pid), procfs.argv(pid)
    if fields is None or not name or not argv or fields[0] in ("Z", "X"):
        return None
    return ProcessInfo(name, argv, int(fields[3]), int(fields[19]))


def _netns_of(pid: int) -> Optional[str]:
    return procfs.read_link(pid, "ns/net")


def _is_bridge(name: str) -> bool:
    return os.path.isdir(f"/sys/class/net/{name}/bridge")


def _run(argv: List[str], timeout_s: float = COMMAND_TIMEOUT_S) -> Tuple[int, str]:
    """Run a command with a time-out; (exit status, output). On time-out its whole
    process group is killed and the status is 124; 127 when the program is missing."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    except OSError as err:
        return 127, f"cannot run {argv[0]}: {err.strerror}"
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return 124, f"{argv[0]} did not finish within {timeout_s:g} s"
    except BaseException:
        _kill_group(proc)
        raise
    return proc.returncode, (out or "").strip()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipe
        if proc.stdout is not None:
            proc.stdout.close()
        proc.wait()


def _named_namespaces() -> List[str]:
    if not shutil.which("ip"):
        return []
    status, out = _run(["ip", "netns", "list"])
    names = [line.split()[0] for line in out.splitlines() if line.strip()] if status == 0 else []
    return sorted(n for n in names if n.startswith(NETNS_PREFIX))


def _netns_pids(name: str) -> List[int]:
    status, out = _run(["ip", "netns", "pids", name])
    return [int(tok) for tok in out.split() if tok.isdigit()] if status == 0 else []


def _ovs_bridges() -> List[str]:
    if not shutil.which("ovs-vsctl"):
        return []
    status, out = _run(["ovs-vsctl", "--timeout=2", "list-br"], timeout_s=5)
    if status != 0:
        return []  # Open vSwitch is not running: it holds no bridges
    return sorted(n for n in out.split() if SWITCH_RE.match(n))


# --- removing --------------------------------------------------------------------------
def remove(found: Leftovers) -> Leftovers:
    """Remove exactly the items of ``found``; return those that are gone now (items
    that could not be removed are listed in ``failed``)."""
    done = Leftovers()
    done.processes = _stop_processes(found.processes, done.failed)
    for name in found.interfaces + found.bridges:
        if _remove_link(name, done.failed):
            (done.bridges if name in found.bridges else done.interfaces).append(name)
    for name in found.ovs_bridges:
        status, out = _run(["ovs-vsctl", "--timeout=5", "--if-exists", "del-br", name])
        if status == 0:
            done.ovs_bridges.append(name)
        else:
            done.failed.append(f"OVS bridge {name}: {out or 'ovs-vsctl failed'}")
    for name in found.namespaces:
        status, out = _run(["ip", "netns", "delete", name])
        if status == 0 or name not in _named_namespaces():
            done.namespaces.append(name)
        else:
            done.failed.append(f"namespace {name}: {out}")
    for folder in found.folders:
        shutil.rmtree(folder, ignore_errors=True)
        (done.failed.append(f"VM folder {folder}: could not remove it") if os.path.exists(folder)
         else done.folders.append(folder))
    return done


def _remove_link(name: str, failed: List[str]) -> bool:
    if not os.path.exists(f"/sys/class/net/{name}"):
        return True  # went with its veth peer
    status, out = _run(["ip", "link", "delete", "dev", name])
    if status == 0 or not os.path.exists(f"/sys/class/net/{name}"):
        return True
    failed.append(f"interface {name}: {out}")
    return False


def _alive(proc: LeftoverProcess) -> bool:
    info = _process(proc.pid)
    return info is not None and info.start_ticks == proc.start_ticks


def _signal_all(procs: List[LeftoverProcess], sig: int) -> None:
    for proc in procs:
        if _alive(proc):
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                pass
            except PermissionError:
                pass  # reported as failed below, when it is still alive


def _stop_processes(procs: List[LeftoverProcess], failed: List[str],
                    grace_s: float = GRACE_S) -> List[LeftoverProcess]:
    """SIGTERM, wait up to ``grace_s``, SIGKILL, wait; return the processes now gone."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        living = [p for p in procs if _alive(p)]
        if not living:
            break
        _signal_all(living, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(_alive(p) for p in living):
            time.sleep(0.05)
    stopped = []
    for proc in procs:
        if _alive(proc):
            failed.append(f"process {proc.pid} ({proc.name}) is still running")
        else:
            stopped.append(proc)
    return stopped


def run_mn_clean(timeout_s: float = MN_TIMEOUT_S) -> Tuple[bool, str]:
    """Run Mininet's ``mn -c`` (if installed) with a time-out; (ran and succeeded, its
    output). ``(False, '')`` when ``mn`` is not installed."""
    if not shutil.which("mn"):
        return False, ""
    status, out = _run(["mn", "-c"], timeout_s=timeout_s)
    return status == 0, out


def clean(dry_run: bool = False, mininet: bool = True) -> Leftovers:
    """Remove the leftovers of crashed runs, then run ``mn -c`` when ``mininet`` (and
    Mininet is installed). Returns what was removed (with ``dry_run``: what would be,
    touching nothing). :class:`EnvironmentProblem` when there is something to remove and
    this process is not root."""
    found = find_leftovers()
    if dry_run:
        return found
    mine = found.count() == len(found.processes) and sandbox_leftovers.owned_by(
        [p.pid for p in found.processes], os.getuid())  # a sandbox of this user's own
    if found.count() and os.geteuid() != 0 and not mine:
        raise EnvironmentProblem(f"found {found.describe()}; removing them needs root "
                                 "(run: sudo labtools clean)")
    done = remove(found) if found.count() else Leftovers()
    done.running_labs = found.running_labs
    if mininet and os.geteuid() == 0 and not found.running_labs:
        ok, out = run_mn_clean()
        done.mn_output = out
        if out and not ok:
            done.failed.append(f"mn -c: {out.splitlines()[-1]}")
    return done
