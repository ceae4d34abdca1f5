"""Shared fixtures. Unit tests run anywhere without root; real-network tests carry the
``network`` marker and run where the kernel can emulate links (natively or in the VM)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
#: a student's results file recorded on a real network (tests/fixtures/grading)
RECORDED_RESULTS = FIXTURES / "grading" / "results" / "labtools.sqlite"


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``root`` skips, saying so, for a contributor who is not root (``make
    unit`` on a laptop)."""
    if item.get_closest_marker("root") is not None and os.geteuid() != 0:
        pytest.skip("needs root (marker root): namespaces, veth and bridges of this machine")


@pytest.fixture()
def graded_folder(tmp_path, monkeypatch) -> Path:
    """A submitted assignment folder with the recorded results file, as the working
    directory, while nbgrader grades it (the labs replay)."""
    (tmp_path / "results").mkdir()
    shutil.copy(RECORDED_RESULTS, tmp_path / "results" / "labtools.sqlite")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.delenv("LABTOOLS_VARIANT", raising=False)
    return tmp_path


@pytest.fixture(scope="session")
def portfolio():
    """The reference topology."""
    from labtools.model.catalog import load_topology

    return load_topology("portfolio")


def run_cli(args: List[str], stdin: str = "") -> subprocess.CompletedProcess:
    """Run ``labtools ARGS`` as a user would, in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "labtools.cli", *args], input=stdin, capture_output=True,
        text=True, cwd=str(ROOT), timeout=120,
    )
