"""Reads of ``/proc`` survive processes that exit meanwhile (labtools.system.procfs).

A CI machine or a class server starts and ends short processes all the time; a process
listed in ``/proc`` can be gone before its files are read. These tests run the kit's
readers while other processes churn beside them, and check that no module but
``procfs`` builds a per-process ``/proc`` path.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from process_churn import churning

from labtools.system import cleanup, procfs, sandbox_leftovers, vm_leftovers

ROOT = Path(__file__).resolve().parents[2]
#: a per-process path of /proc built in Python, or the listing of /proc
_PER_PROCESS = re.compile(r"""/proc/\{|\(\s*["']/proc["']\s*[,)]|/proc/["']\s*\+|/proc/%""")


def _gone_pid() -> int:
    dead = subprocess.Popen(["true"])
    dead.wait()
    return dead.pid


def test_a_gone_process_reads_as_none_everywhere():
    pid = _gone_pid()
    assert procfs.read_bytes(pid, "cmdline") is None
    assert procfs.read_text(pid, "stat") is None
    assert procfs.read_link(pid, "ns/net") is None
    assert procfs.list_dir(pid, "fd") == []
    assert procfs.owner_uid(pid) is None
    assert procfs.comm(pid) is None and procfs.argv(pid) is None
    assert procfs.stat_fields(pid) is None and procfs.cpu_seconds(pid) is None
    assert not procfs.is_alive(pid)


def test_this_process_reads_as_itself():
    me = os.getpid()
    assert procfs.argv(me)[0].endswith(("python", "python3")) or "pytest" in " ".join(
        procfs.argv(me))
    assert procfs.owner_uid(me) == os.getuid()
    assert procfs.stat_fields(me)[0] in ("R", "S")
    assert procfs.cpu_seconds(me) > 0
    assert procfs.read_link(me, "ns/net") == os.readlink("/proc/self/ns/net")
    assert me in procfs.pids()


def test_the_readers_meet_exited_processes_and_never_raise():
    """Under churn, naive reads of listed PIDs fail (so the race is real here), and the
    kit's readers and leftover scans answer without an exception."""
    naive_failures = met_gone = 0
    deadline = time.monotonic() + 20
    with churning(threads=2) as count:
        while time.monotonic() < deadline and (naive_failures < 3 or met_gone < 3):
            listed = procfs.pids()
            time.sleep(0.01)  # some of them end meanwhile
            for pid in listed:
                try:
                    Path(f"/proc/{pid}/cmdline").read_bytes()
                except (FileNotFoundError, ProcessLookupError):
                    naive_failures += 1
                if procfs.argv(pid) is None and procfs.stat_fields(pid) is None:
                    met_gone += 1
                procfs.read_link(pid, "ns/user")
                procfs.list_dir(pid, "fd")
                procfs.owner_uid(pid)
            sandbox_leftovers.running_sandboxes()
            sandbox_leftovers.sandboxed(listed)
            sandbox_leftovers.owned_by(listed, os.getuid())
            vm_leftovers.stale_folders()
        found = cleanup.find_leftovers()
    assert naive_failures >= 3, f"no race seen ({count[0]} processes churned)"
    assert met_gone >= 3
    assert found is not None


def test_no_module_but_procfs_builds_a_per_process_path():
    sources = [*ROOT.glob("labtools/**/*.py"), *ROOT.glob("tests/*.py"),
               *ROOT.glob("benchmarks/*.py"), *ROOT.glob("deploy/**/*.py")]
    allowed = {ROOT / "labtools/system/procfs.py", Path(__file__).resolve()}
    offenders = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
                 for path in sources if path.resolve() not in allowed
                 for number, line in enumerate(path.read_text().splitlines(), 1)
                 if _PER_PROCESS.search(line)]
    assert offenders == []


@pytest.mark.parametrize("line", ['Path(f"/proc/{pid}/comm")', 'os.listdir("/proc")',
                                  'Path("/proc", entry, "cmdline")', '"/proc/" + str(pid)',
                                  'Path("/proc").glob("[0-9]*/stat")'])
def test_the_path_rule_sees_each_form(line):
    assert _PER_PROCESS.search(line)
