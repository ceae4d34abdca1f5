"""Cleanup after failures on a real Mininet network: nothing is left behind.

Marker ``network`` (see tests/lab/test_network.py). Leftovers (processes, interfaces, bridges,
namespaces) are counted before and after, with the kit's own finder, plus every process
in a user namespace other than the machine's (a lab's sandbox: none may outlive its lab).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from labtools.lab.session import LabSession
from labtools.tools.args import iperf3_server_args

pytestmark = pytest.mark.network


def _leftovers() -> int:

    from labtools.system import procfs
    from labtools.system.cleanup import find_leftovers
    from labtools.system.sandbox_leftovers import sandboxed

    in_sandboxes = sandboxed(procfs.pids())
    return find_leftovers().count() + len(in_sandboxes)


def test_a_stopped_network_leaves_no_interface_for_the_next_one():
    """Right after stop, not a few seconds later: under software emulation a dying namespace
    took its switch port with it only seconds after stop returned, and the next network on
    the same names failed with 'File exists'."""
    from labtools.lab.network import MininetBackend
    from labtools.model.catalog import load_topology

    before = _leftovers()
    topo = load_topology("tree,hosts=10,fanout=10")
    for _ in range(2):  # the second start needs the same names
        backend = MininetBackend(topo, "lxbr")
        backend.start()
        backend.stop()
        assert _leftovers() == before


def test_forced_failure_leaves_nothing_behind(tmp_path):
    before = _leftovers()
    with pytest.raises(RuntimeError):
        with LabSession("dumbbell", results=tmp_path / "r.sqlite", calibrate=False) as session:
            with session.server("b1", iperf3_server_args(5401), 5401):
                raise RuntimeError("forced failure")
    assert _leftovers() == before


def test_sigterm_leaves_nothing_behind(tmp_path):
    before = _leftovers()
    script = textwrap.dedent(f"""
        import os, signal, time
        from labtools.lab.session import LabSession
        with LabSession("dumbbell", results={str(tmp_path / 'r.sqlite')!r},
                        calibrate=False) as lab:
            with lab.server("b1", ["iperf3", "-s", "-p", "5402"], 5402):
                print("ready", flush=True)
                time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) != 0
    assert _leftovers() == before


def test_sigkill_leaves_nothing_behind(tmp_path):
    """A lab's process killed outright cannot stop anything: its sandbox ends with it."""
    import time

    before = _leftovers()
    script = textwrap.dedent(f"""
        import time
        from labtools.lab.session import LabSession
        lab = LabSession("dumbbell", results={str(tmp_path / 'r.sqlite')!r}, calibrate=False)
        lab.start()
        lab.start_process("b1", ["iperf3", "-s", "-p", "5403"])
        print("ready", flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    assert _leftovers() > before  # the lab runs
    proc.kill()
    assert proc.wait(timeout=30) == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while _leftovers() != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _leftovers() == before


def test_a_shell_that_fails_to_start_leaves_nothing_behind(monkeypatch):
    from labtools.lab import network
    from labtools.model.catalog import load_topology

    topo = load_topology("dumbbell")
    failing = topo.names()[len(topo.names()) // 2]
    real = network.NodeShell

    def shell_node(name, sandbox):
        if name == failing:
            raise OSError(f"forced: no shell for {name}")
        return real(name, sandbox)

    monkeypatch.setattr(network, "NodeShell", shell_node)
    before = _leftovers()
    backend = network.MininetBackend(topo, "lxbr")
    with pytest.raises(OSError, match="forced"):
        backend.start()
    assert _leftovers() == before
