"""Reading ``/proc/PID/...`` of processes that may exit at any moment.

A process listed by ``os.listdir("/proc")`` can be gone before its files are read (on a
CI machine or a class server, short processes start and end all the time): every read
here answers ``None`` for a process that is gone or unreadable, never an exception. The
kit's code and its tests read per-process files of ``/proc`` only through this module
(``tests/system/test_procfs.py`` checks that no other module builds such a path). The machine's
memory figures (``/proc/meminfo``) are read here too.
"""

from __future__ import annotations

import os
from typing import List, Optional

#: where the kernel shows its processes
PROC = "/proc"
#: the machine's memory figures (kB)
MEMINFO = os.path.join(PROC, "meminfo")
#: clock ticks per second, the unit of the CPU times in ``/proc/PID/stat``
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def pids() -> List[int]:
    """The PIDs listed in ``/proc`` now (some may be gone by the time they are read)."""
    try:
        return [int(entry) for entry in os.listdir(PROC) if entry.isdigit()]
    except OSError:
        return []


def _path(pid: int, name: str) -> str:
    return f"{PROC}/{int(pid)}/{name}" if name else f"{PROC}/{int(pid)}"


def read_bytes(pid: int, name: str) -> Optional[bytes]:
    """The bytes of ``/proc/PID/NAME``; None when the process is gone or the file
    unreadable."""
    try:
        with open(_path(pid, name), "rb") as handle:
            return handle.read()
    except (OSError, ValueError):
        return None


def read_text(pid: int, name: str) -> Optional[str]:
    """``/proc/PID/NAME`` as text (undecodable bytes replaced); None when gone."""
    raw = read_bytes(pid, name)
    return None if raw is None else raw.decode("utf-8", "replace")


def read_link(pid: int, name: str) -> Optional[str]:
    """The target of the link ``/proc/PID/NAME`` (``ns/net`` -> ``net:[4026531840]``);
    None when the process is gone or the link unreadable."""
    try:
        return os.readlink(_path(pid, name))
    except (OSError, ValueError):
        return None


def list_dir(pid: int, name: str) -> List[str]:
    """The entries of the folder ``/proc/PID/NAME`` (``fd``); empty when gone."""
    try:
        return os.listdir(_path(pid, name))
    except (OSError, ValueError):
        return []


def owner_uid(pid: int) -> Optional[int]:
    """The user id that owns process ``pid``; None when it is gone."""
    try:
        return os.stat(_path(pid, "")).st_uid
    except (OSError, ValueError):
        return None


def is_alive(pid: int) -> bool:
    """True while ``/proc/PID`` exists (a zombie too)."""
    return os.path.exists(_path(pid, ""))


def comm(pid: int) -> Optional[str]:
    """The process's command name (``/proc/PID/comm``, without its newline)."""
    text = read_text(pid, "comm")
    return None if text is None else text.strip()


def argv(pid: int) -> Optional[List[str]]:
    """The process's command line as a list (empty for a kernel thread or a zombie);
    None when it is gone."""
    raw = read_bytes(pid, "cmdline")
    if raw is None:
        return None
    if not raw:
        return []
    return [arg.decode("utf-8", "replace") for arg in raw.rstrip(b"\0").split(b"\0")]


def stat_fields(pid: int) -> Optional[List[str]]:
    """The fields of ``/proc/PID/stat`` after the command name: index 0 is the state
    (``R``, ``S``, ``Z``...), 1 the parent's PID, 3 the session, 11/12 user/system CPU
    ticks, 19 the start time in ticks. None when gone or cut short."""
    text = read_text(pid, "stat")
    if text is None or ")" not in text:
        return None
    fields = text.rpartition(")")[2].split()
    return fields if len(fields) >= 20 else None


def cpu_seconds(pid: int, children: bool = False) -> Optional[float]:
    """User + system CPU time of process ``pid`` so far, seconds (``children``: and of
    the children it has waited for); None when gone."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / CLOCK_TICKS_PER_S


def meminfo_mib(field: str) -> Optional[float]:
    """A field of ``/proc/meminfo`` (``MemTotal``, ``MemAvailable``...) in MiB; None when
    the file cannot be read or has no such field."""
    try:
        with open(MEMINFO) as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
