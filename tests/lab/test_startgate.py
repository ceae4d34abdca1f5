"""The start gate of concurrent flows, with real processes (no network needed)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from labtools.errors import ToolError
from labtools.lab.startgate import StartGate

#: prints the moment it runs (seconds, monotonic clock of this machine)
STAMP = [sys.executable, "-c", "import time; print(time.monotonic())"]


def _spawn(gate: StartGate, count: int):
    return [subprocess.Popen(gate.wrap(STAMP, i), stdout=subprocess.PIPE, text=True)
            for i in range(count)]


def test_nothing_runs_before_the_gate_opens_and_all_run_after():
    with StartGate(3) as gate:
        procs = _spawn(gate, 3)
        gate.wait_ready(procs, timeout_s=10)
        time.sleep(0.3)
        assert all(p.poll() is None for p in procs)  # held at the gate
        opened = time.monotonic()
        spread_s = gate.release([p.pid for p in procs])
        stamps = [float(p.communicate(timeout=30)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert min(stamps) >= opened  # none of them ran before the release
    assert 0 <= spread_s < 5


def test_a_closed_gate_stops_its_waiting_processes():
    with StartGate(2) as gate:
        procs = _spawn(gate, 2)
        gate.wait_ready(procs, timeout_s=10)
    assert [p.wait(timeout=10) for p in procs] == [125, 125]
    assert not gate.fifo.parent.exists()


def test_a_process_that_dies_before_the_gate_is_reported():
    with StartGate(2) as gate:
        procs = [subprocess.Popen(gate.wrap(STAMP, 0), stdout=subprocess.DEVNULL),
                 subprocess.Popen(["sh", "-c", "exit 3"])]
        with pytest.raises(ToolError, match="exit status 3"):
            gate.wait_ready(procs, timeout_s=10)
    with StartGate(2) as gate:
        procs = [subprocess.Popen(gate.wrap(STAMP, 0), stdout=subprocess.DEVNULL)]
        with pytest.raises(ToolError, match="only 1 of 2"):
            gate.wait_ready(procs, timeout_s=0.5)
    assert procs[0].wait(timeout=10) == 125
