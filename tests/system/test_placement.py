"""Where a lab runs: one decision (:mod:`labtools.lab.placement`) for LabSession, ``labtools
run``, ``labtools notebooks execute``, ``labtools vm --if-needed`` and the benchmarks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from labtools.lab import placement
from labtools.model.catalog import load_topology

ROOT = Path(__file__).resolve().parents[2]
#: rates only (HTB): no netem needed
DELAY_FREE = "star,hosts=3,bw_mbps=50"


@pytest.fixture
def machine(monkeypatch):
    """A machine with Mininet, brctl and a sandbox; netem as each test says."""
    from labtools import settings
    from labtools.system import capabilities as caps
    from labtools.system import userns

    monkeypatch.setattr(caps, "mininet_available", lambda: (True, "2.3.0"))
    monkeypatch.setattr(caps, "find_tool", lambda name: f"/usr/sbin/{name}")
    monkeypatch.setattr(userns, "sandbox_ok", lambda: (True, "works", ""))
    monkeypatch.setenv(settings.IN_VM, "0")

    def netem(ok: bool) -> None:
        monkeypatch.setattr(caps, "kernel_has_netem",
                            lambda: (ok, "sch_netem found" if ok else "sch_netem is missing"))
    return netem


def test_a_delay_free_lab_runs_natively_on_a_kernel_without_netem(machine):
    machine(False)
    assert placement.runs_natively(load_topology(DELAY_FREE))
    for needing in (load_topology("portfolio"), None):  # None: a lab of the course
        assert not placement.runs_natively(needing)
        assert "need netem" in placement.native_lab_problem(needing)
    machine(True)
    assert placement.runs_natively(load_topology("portfolio")) and placement.runs_natively()


def test_what_else_keeps_a_lab_off_this_machine(machine, monkeypatch):
    from labtools.system import capabilities as caps
    from labtools.system import userns

    machine(True)
    topo = load_topology(DELAY_FREE)
    monkeypatch.setattr(userns, "sandbox_ok", lambda: (False, "user namespaces are off", "x"))
    assert "sandbox here: user namespaces are off" in placement.native_lab_problem(topo)
    monkeypatch.setattr(caps, "find_tool", lambda name: None)
    assert "brctl" in placement.native_lab_problem(topo)
    monkeypatch.setattr(caps, "mininet_available", lambda: (False, "no module mininet"))
    assert "Mininet is not usable here" in placement.native_lab_problem(topo)


def test_labtools_run_starts_a_delay_free_lab_here_as_labsession_does(tmp_path):
    """``labtools run`` asks LabSession's question: a delay-free lab on this machine starts
    natively (no VM boot) wherever a notebook's LabSession would start it."""
    topo = load_topology(DELAY_FREE)
    problem = placement.native_lab_problem(topo)
    if problem is not None:
        pytest.skip(f"this machine cannot run even a delay-free lab natively: {problem}")
    proc = subprocess.run(
        [sys.executable, "-m", "labtools.cli", "run", DELAY_FREE, "path", "--duration", "2",
         "--results", str(tmp_path / "r.sqlite")],
        capture_output=True, text=True, cwd=str(ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "labtools vm" not in proc.stderr and "== path ==" in proc.stdout
