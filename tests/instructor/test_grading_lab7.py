"""Grading lab 7 ("write your own simpleperf") with the real nbgrader: a course that
releases the lab on its own, autograde and feedback for a correct simpleperf, the
skeleton handed in as it was released, a client that leaves out its END record, and a
report in units of 1024 bytes.

The programming checks run the submitted program for real on 127.0.0.1 while nbgrader
executes the notebook; the link check replays the measurement recorded on a real network
(tests/fixtures/grading, appended by ``capture.py 07-write-simpleperf.ipynb``), and fails
when the program that is graded is not the one that measured. The course binds the
students who hand in that recording to its variant (``labtools-variants.csv``, as lab
partners). The whole course, all labs together, is graded in tests/instructor/test_grading.py.
Marker ``grading``: nbgrader runs for real (about a minute).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict

import nbformat
import pytest

from labtools.teach import notebook_files as notebooks

pytestmark = pytest.mark.grading

ROOT = Path(__file__).resolve().parents[2]
NAME = "07-write-simpleperf.ipynb"
RECORDED = ROOT / "tests" / "fixtures" / "grading"
ASSIGNMENT = "simpleperf"
COURSE_ID = "netlab"
#: the grading cells that run the program (the rest: the link check, replayed)
PROGRAMMING = {"report-check": 2, "loopback-check": 3, "kit-server-check": 3,
               "kit-client-check": 3}
LINK = {"link-check": 2}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A course that releases lab 7 alone; the students below measured on the recorded
    variant (student1's network, as lab partners)."""
    root = tmp_path_factory.mktemp("lab7-course")
    (root / "nbgrader_config.py").write_text(notebooks.course_config(COURSE_ID))
    variant = json.loads((RECORDED / "capture.json").read_text())["variant"]
    (root / "labtools-variants.csv").write_text(
        "student_id,variant\n" + "".join(f"{s},{variant}\n"
                                          for s in ("skeleton", "no-end", "in-1024")))
    source = root / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / NAME, source / NAME)
    notebooks.nbgrader(["generate_assignment", ASSIGNMENT, "--create", "--force"], root)
    return root


def _submit(course: Path, student: str, nb) -> None:
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / NAME))
    shutil.copytree(RECORDED / "results", folder / "results")
    (folder / "timestamp.txt").write_text("2026-11-25 12:00:00.000000 UTC")


def _autograde(course: Path, student: str) -> Dict:
    """nbgrader autograde and feedback; each grading cell's score, the executed notebook
    and the feedback page."""
    from nbgrader.api import Gradebook

    notebooks.nbgrader(["db", "student", "add", student], course)
    notebooks.nbgrader(["autograde", ASSIGNMENT, "--student", student, "--create", "--force"],
                       course, timeout_s=600)
    notebooks.nbgrader(["generate_feedback", ASSIGNMENT, "--student", student, "--force"],
                       course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        notebook = gb.find_submission_notebook(NAME[:-len(".ipynb")], ASSIGNMENT, student)
        scores = {g.name: g.auto_score for g in notebook.grades
                  if g.name in PROGRAMMING or g.name in LINK}  # the written answers wait
    executed = nbformat.read(str(course / "autograded" / student / ASSIGNMENT / NAME), 4)
    html = (course / "feedback" / student / ASSIGNMENT / NAME.replace(".ipynb", ".html"))
    return {"scores": scores, "notebook": executed, "feedback": html.read_text()}


def _errors(nb) -> Dict[str, str]:
    """Cell id -> the error it ended with ('ename: evalue')."""
    return {c.id: f"{o['ename']}: {o['evalue']}" for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if o.get("output_type") == "error"}


def _solution_with(edits: Dict[str, Dict[str, str]]):
    nb = nbformat.read(str(ROOT / "solutions" / NAME), as_version=4)
    for cell in nb.cells:
        for old, new in edits.get(cell.id, {}).items():
            assert old in cell.source, (cell.id, old)
            cell.source = cell.source.replace(old, new)
    return nb


def test_a_correct_simpleperf_gets_every_automatic_point(course):
    _submit(course, "student1", _solution_with({}))
    graded = _autograde(course, "student1")
    assert graded["scores"] == {**PROGRAMMING, **LINK}
    assert _errors(graded["notebook"]) == {}
    assert "cross-test passed" in graded["feedback"]


def test_the_skeleton_as_released_gets_no_point_and_is_told_what_is_missing(course):
    released = nbformat.read(str(course / "release" / ASSIGNMENT / NAME), as_version=4)
    _submit(course, "skeleton", released)
    graded = _autograde(course, "skeleton")
    assert graded["scores"] == {cell: 0 for cell in {**PROGRAMMING, **LINK}}
    errors = _errors(graded["notebook"])
    assert errors["report-check"] == "NotImplementedError: "
    assert errors["loopback-check"] == (
        "AssertionError: your server stopped at once (exit status 1); its last line: "
        "mysimpleperf: error: serve() in server.py is not written yet")
    assert errors["kit-server-check"].startswith(  # the visible check's line first
        "AssertionError: with -n 2MB -f B: your client ended with exit status 1; last line: "
        "mysimpleperf: error: parse_amount() in report.py is not written yet")
    assert errors["link-check"] == ("AssertionError: your program changed after you "
                                    "measured it on the link: run section 4 again")
    feedback = graded["feedback"]
    for line in ("serve() in server.py is not written yet",
                 "parse_amount() in report.py is not written yet",
                 "your program changed after you measured it on the link"):
        assert line in feedback, line


def test_a_client_without_end_record_passes_with_its_own_server_but_not_with_the_kits(course):
    """Its own server reports the transfer (cut short, all bytes counted), so the
    loopback check passes; the kit's side of the recorded exchanges (the visible check,
    before the hidden ones with the kit's real server) says what is wrong. The link check
    fails too: the program is not the one that measured."""
    nb = _solution_with({"write-client": {'    sock.sendall(protocol.end(conn["sent"]))\n': ""}})
    _submit(course, "no-end", nb)
    graded = _autograde(course, "no-end")
    assert graded["scores"] == {**PROGRAMMING, "kit-server-check": 0, "link-check": 0}
    assert _errors(graded["notebook"])["kit-server-check"].startswith(
        "AssertionError: with -n 2MB -f B: the data on 127.0.0.1:")
    assert "did not end with an END record counting it" in graded["feedback"]


def test_amounts_in_units_of_1024_are_told_in_the_feedback_by_the_visible_checks(course):
    """The report's amounts divided by 1024 (client and server): the feedback's lines name
    the unit, and in the kit checks it is the visible conformance check's line (-f MB),
    not the hidden checks' (-f B, -f KB) that run after it."""
    nb = _solution_with({"write-report": {
        'return f"{nbytes / UNITS[unit]:.2f} {unit}"':
            'return f"{nbytes / {\'KB\': 1024, \'MB\': 1024 * 1024}[unit]:.2f} {unit}"'}})
    _submit(course, "in-1024", nb)
    graded = _autograde(course, "in-1024")
    assert graded["scores"] == {cell: 0 for cell in {**PROGRAMMING, **LINK}}
    errors = _errors(graded["notebook"])
    assert errors["loopback-check"].startswith(
        "AssertionError: with -f mb your client printed 1048576-byte units; MB is 1000000 bytes")
    for cell, who in (("kit-server-check", "client"), ("kit-client-check", "server")):
        assert errors[cell].startswith(f"AssertionError: with -f MB your {who} printed "
                                       "1048576-byte units; MB is 1000000 bytes"), errors[cell]
    assert "1048576-byte units" in graded["feedback"]
    assert "your server reports" not in graded["feedback"]  # no count without its unit
