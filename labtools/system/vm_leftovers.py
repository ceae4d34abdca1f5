"""What a killed ``labtools vm`` can leave on the host: the VM's processes and the runner's
temporary folder.

The runner (:mod:`labtools.system.vm`) makes a folder ``labtools-vm-XXXX`` in the temporary
directory, writes its own PID to ``owner.pid`` there, and starts ``vng`` (which starts
``virtme-run`` and ``qemu``) in a session of its own whose command lines name the folder.
A runner that exits normally stops the VM and removes the folder; one killed with SIGKILL
cannot. Then the owner PID is gone, and :mod:`labtools.system.cleanup` (which reads the process
table once and hands it over) removes what is left.

Inside a VM nothing here applies (the guest sees the host's temporary folder, but not its
processes): both functions return nothing there.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, List, Mapping, Sequence, Tuple

from labtools import settings
from labtools.system import procfs

#: prefix of the runner's temporary folder
VM_MARK = "labtools-vm-"
#: in that folder: the PID of the ``labtools vm`` that owns the VM
VM_OWNER_FILE = "owner.pid"
_FOLDER_RE = re.compile(r"/[^\s]*" + VM_MARK + r"[A-Za-z0-9_]+")


def orphaned_vm_processes(processes: Mapping[int, Tuple[Sequence[str], int]]) -> List[int]:
    """PIDs of every process in the session of a VM whose runner is gone; a VM whose runner
    is alive is never listed. ``processes``: pid -> (argv, session id) of the live ones."""
    if settings.current().in_vm:
        return []
    leaders = {pid for pid, (argv, sid) in processes.items()
               if sid == pid and folder_named(argv) and not owner_alive(folder_named(argv))}
    return sorted(pid for pid, (_argv, sid) in processes.items() if sid in leaders)


def stale_folders(vm_commands: Iterable[Sequence[str]] = ()) -> List[str]:
    """Runner folders in the temporary directory whose owner is gone and whose VM no
    longer runs (``vm_commands``: the command lines of the VM processes still running)."""
    if settings.current().in_vm:
        return []
    running = {folder_named(argv) for argv in vm_commands}
    found = []
    for path in sorted(Path(tempfile.gettempdir()).glob(VM_MARK + "*")):
        if path.is_dir() and not owner_alive(str(path)) and str(path) not in running:
            found.append(str(path))
    return found


def remove_own_stale_folders() -> List[str]:
    """Remove this user's runner folders whose owner is gone and whose VM no longer runs
    (a runner or a notebook's VM kernel killed with SIGKILL leaves one behind); other
    users' folders are left to ``labtools clean``. Returns the folders removed."""
    if settings.current().in_vm:
        return []
    running = [argv for argv in map(procfs.argv, procfs.pids()) if argv and folder_named(argv)]
    removed = []
    for folder in stale_folders(running):
        try:
            if os.lstat(folder).st_uid != os.getuid():
                continue
            shutil.rmtree(folder)
        except OSError:
            continue  # removed meanwhile, or not ours to remove
        removed.append(folder)
    return removed


def folder_named(argv: Sequence[str]) -> str:
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
    return procfs.is_alive(pid)

