"""Every lab's by-hand step, graded on what was recorded: the grading fixture holds the
commands the solution notebooks ran by hand on a real network, each with what it printed
(tests/fixtures/grading, capture.json says where). A step done as asked passes; the same
output under a command line typed differently (what the student influences) fails with one
line; so does a results file without the step."""

from __future__ import annotations

import sqlite3
from typing import Dict, List, Tuple

import pytest

from labtools.judge.by_hand import STEPS, check_step, option
from labtools.lab.replay import ReplaySession
from labtools.results.store import ResultStore
from labtools.teach import notebook
from labtools.teach.tool_runs import check_by_hand
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "grading" / "results" / "labtools.sqlite"
#: the notebook (case) whose by-hand step each step id is
CASES: Dict[str, str] = {"00-ping": "intro", "01-iperf-udp": "udp", "02-tc": "link",
                         "03-route": "path", "04-tc": "mux", "05-iperf3": "parallel",
                         "06-units-M": "pitfalls", "06-units-bits": "pitfalls"}


@pytest.fixture()
def submitted(graded_folder):
    """A submitted folder with the recorded results file, graded by nbgrader (replay)."""
    return graded_folder


def _recorded(case: str) -> List[Tuple[str, str, str]]:
    store = ResultStore(RECORDED, create=False)
    return [(t.node, c.command, c.output) for t in store.transcripts(case=case)
            for c in t.commands]


def test_every_step_has_its_lab():
    assert set(CASES) == set(STEPS)


@pytest.mark.parametrize("step_id", sorted(STEPS))
def test_the_recorded_step_passes(submitted, step_id):
    lab = notebook.open_lab(CASES[step_id])
    assert isinstance(lab, ReplaySession)
    recorded = _recorded(CASES[step_id])
    assert recorded, f"the recording holds no by-hand command of {CASES[step_id]}"
    assert check_step(step_id, recorded, lab.ip_towards) is None
    check_by_hand(lab, step_id)


@pytest.mark.parametrize("step_id, old, new, says", [
    ("00-ping", "-c 3", "-c 2", "the lab asks for 3 echo requests"),
    ("01-iperf-udp", " -u", "", "the lab asks for UDP"),
    ("01-iperf-udp", "-t 2", "-t 5", "the lab asks for 2 s"),
    ("02-tc", "tc -s", "tc", "-s: the counters"),
    ("05-iperf3", "-P 2", "-P 1", "the lab asks for 2 connections"),
    ("06-units-M", "-b 10M", "-b 10m", "not a rate the lab asks for (asked: iperf -c (b1) -u -b 10M"),
])
def test_a_command_typed_otherwise_fails_with_what_was_asked(submitted, step_id, old, new,
                                                             says):
    lab = notebook.open_lab(CASES[step_id])
    recorded = [(node, line.replace(old, new), output)
                for node, line, output in _recorded(CASES[step_id])]
    found = check_step(step_id, recorded, lab.ip_towards)
    assert found is not None and says in found and "\n" not in found


def test_a_route_asked_of_another_host_fails(submitted):
    lab = notebook.open_lab("path")
    h4 = {node: lab.ip_towards(node, "h4") for node in ("h1", "r1", "r2", "r3")}
    recorded = [(node, f"ip route get {h4[node]}", output)
                for node, _line, output in _recorded("path")]
    found = check_step("03-route", recorded, lab.ip_towards)
    assert found is not None and "ip route get" in found and "(h9)" in found


def test_a_results_file_without_the_step_fails_with_one_line(submitted):
    with sqlite3.connect(submitted / "results" / "labtools.sqlite") as con:
        con.execute("DELETE FROM shell_transcripts WHERE \"case\" = 'intro'")
    lab = notebook.open_lab("intro")
    with pytest.raises(AssertionError, match=r"^no ping recorded on h1: run ping -c 3 "):
        check_by_hand(lab, "00-ping")


def test_an_unknown_step_is_the_notebooks_fault(submitted):
    from labtools.errors import InputError

    with pytest.raises(InputError, match="by-hand steps are 00-ping"):
        check_by_hand(notebook.open_lab("intro"), "00-pong")


@pytest.mark.parametrize("argv, flag, value", [
    (["ping", "-c", "3", "10.0.0.4"], "-c", "3"), (["ping", "-c3", "x"], "-c", "3"),
    (["iperf", "-u", "--bind", "x"], "-b", None), (["iperf3", "-P"], "-P", None)])
def test_an_options_value_is_read_as_a_shell_passes_it(argv, flag, value):
    assert option(argv, flag) == value
