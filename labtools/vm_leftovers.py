"""What a killed ``labtools vm`` can leave on the host: the VM's processes and the runner's
temporary folder.

The runner (:mod:`labtools.vm`) makes a folder ``labtools-vm-XXXX`` in the temporary
directory, writes its own PID to ``owner.pid`` there, and starts ``vng`` (which starts
``virtme-run`` and ``qemu``) in a session of its own whose command lines name the folder.
A runner that exits normally stops the VM and removes the folder; one killed with SIGKILL
cannot. Then the owner PID is gone, and :mod:`labtools.cleanup` removes what is left.

Inside a VM nothing here applies (the guest sees the host's temporary folder, but not its
processes): both functions return nothing there.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

#: prefix of the runner's temporary folder
VM_MARK = "labtools-vm-"
#: in that folder: the PID of the ``labtools vm`` that owns the VM
VM_OWNER_FILE = "owner.pid"
#: set to 1 inside a guest started by the runner
IN_VM_VARIABLE = "LABTOOLS_IN_VM"
_FOLDER_RE = re.compile(r"/[^\s]*" + VM_MARK + r"[A-Za-z0-9_]+")


def orphaned_vm_processes() -> List[Tuple[int, List[str], int]]:
    """(pid, argv, start ticks) of every process in the session of a VM whose runner is
    gone; a VM whose runner is alive is never listed."""
    if os.environ.get(IN_VM_VARIABLE) == "1":
        return []
    procs: Dict[int, Tuple[List[str], int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _read(int(entry))
            if info is not None:
                procs[int(entry)] = info
    leaders = {pid for pid, (argv, sid, _t) in procs.items()
               if sid == pid and folder_named(argv) and not owner_alive(folder_named(argv))}
    return [(pid, argv, ticks) for pid, (argv, sid, ticks) in sorted(procs.items())
            if sid in leaders]


def stale_folders() -> List[str]:
    """Runner folders in the temporary directory whose owner is gone and whose VM no
    longer runs."""
    if os.environ.get(IN_VM_VARIABLE) == "1":
        return []
    running = {folder_named(argv) for _p, argv, _t in orphaned_vm_processes()}
    found = []
    for path in sorted(Path(tempfile.gettempdir()).glob(VM_MARK + "*")):
        if path.is_dir() and not owner_alive(str(path)) and str(path) not in running:
            found.append(str(path))
    return found


def folder_named(argv: List[str]) -> str:
    """The runner folder a command line names, or ''."""
    for arg in argv:
        match = _FOLDER_RE.search(arg)
        if match:
            return match.group(0)
    return ""


def owner_alive(folder: str) -> bool:
    """True when the ``labtools vm`` that wrote ``FOLDER/owner.pid`` still runs."""
    try:
        pid = int(Path(folder, VM_OWNER_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return False
    return os.path.exists(f"/proc/{pid}")


def _read(pid: int) -> Optional[Tuple[List[str], int, int]]:
    """(argv, session id, start ticks) of a live process, None if gone or a kernel thread."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    if not raw or len(fields) < 20:
        return None
    argv = [a.decode("utf-8", "replace") for a in raw.rstrip(b"\0").split(b"\0")]
    return argv, int(fields[3]), int(fields[19])
