"""Shared fixtures. Unit tests run anywhere without root; real-network tests carry the
``network`` marker and run where the kernel can emulate links (natively or in the VM)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
#: a student's results file recorded on a real network (tests/fixtures/grading)
RECORDED_RESULTS = FIXTURES / "grading" / "results" / "labtools.sqlite"


#: the quick subset (``make quick``, ``--quick``): a few files of every layer, the layers'
#: own check among them, under two minutes on two cores
QUICK_FILES = (
    "test_layers.py",                                     # what may import what
    "test_topology.py", "test_expect.py", "test_fairness.py", "test_queues.py",  # model
    "test_args.py", "test_parse_ping.py", "test_parse_iperf3.py", "test_parse_iperf2.py",
    "test_tool_registry.py",                              # tools
    "test_capabilities.py", "test_settings.py",           # system, base
    "test_verdicts.py", "test_measurement.py", "test_answer_keys.py",  # judge
    "test_store.py",                                      # results
    "test_lab.py", "test_cases.py",                       # lab (their unit tests)
    "test_notebook_tools.py", "test_plots.py",            # teach
    "test_cli.py", "test_docs.py",                        # commands, docs
)


def stage_markers(config: pytest.Config) -> List[str]:
    """The markers of the stages beyond the unit tests: every marker ``pyproject.toml``
    declares but ``root`` (unit tests that need root carry it; they skip without)."""
    names = [line.split(":", 1)[0].strip() for line in config.getini("markers")]
    return [name for name in names if name != "root"]


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as from a terminal. A run started in the background by a shell without job
    control (``cmd &`` in a script, as some CI runners start ``make test``) inherits SIGINT
    ignored, and Python keeps it ignored: the tests of what Ctrl-C does then never see it
    (an xdist worker waited 60 s on a topology file it should have stopped at once), and
    neither do the programs the tests start. Every pytest process (xdist's workers too)
    gives SIGINT its default handler back."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--unit", action="store_true",
                     help="only the unit tests: none marked with a stage's marker "
                          "(every marker of pyproject.toml but root)")
    parser.addoption("--quick", action="store_true",
                     help="only the unit tests of the quick subset (tests/conftest.py, "
                          "QUICK_FILES): every layer, in under two minutes")


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """``--unit`` and ``--quick`` leave out what they do not select (said as deselected)."""
    quick = config.getoption("--quick")
    if not (config.getoption("--unit") or quick):
        return
    stages = stage_markers(config)
    keep, drop = [], []
    for item in items:
        staged = any(item.get_closest_marker(name) is not None for name in stages)
        outside = quick and item.path.name not in QUICK_FILES
        (drop if staged or outside else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


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
