"""Grading a class with the real nbgrader: release, autograde from the student's own
recorded measurements, feedback, and the class grade table. No root, no Mininet, no VM.

A course folder is made from ``solutions/`` as an instructor would make it. The student's
measurements are a results file recorded on a real network (tests/fixtures/grading, see
its README), with the topology variant ``student1``. Marker ``grading``: these run nbgrader
for real (tens of seconds each).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Dict

import nbformat
import pytest

from labtools.teach import notebooks

pytestmark = pytest.mark.grading

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
RECORDED = ROOT / "tests" / "fixtures" / "grading"
ASSIGNMENT = "labs"
NAMES = notebooks.notebook_names(SOLUTIONS)


def _grade_cells(name: str) -> Dict[str, Dict]:
    nb = nbformat.read(str(SOLUTIONS / name), as_version=4)
    return {c.id: {"points": c.metadata["nbgrader"].get("points", 0),
                   "measured": "measured" in c.metadata.get("tags", []),
                   "code": c.cell_type == "code"}
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


def _auto_points(name: str, measured: bool) -> float:
    """Points of the autograded (code) cells, measured or not."""
    return sum(c["points"] for c in _grade_cells(name).values()
               if c["code"] and c["measured"] == measured)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A course folder: the solutions as the assignment's source, released by nbgrader."""
    root = tmp_path_factory.mktemp("course")
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'netlab'\n")
    source = root / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    for name in NAMES:
        shutil.copy(SOLUTIONS / name, source / name)
    notebooks.nbgrader(["generate_assignment", ASSIGNMENT, "--create", "--force"], root)
    return root


def _submit(course: Path, student: str, results: bool = True,
            edit: Dict[str, Dict[str, str]] = None) -> Path:
    """A student's submission: the completed notebooks (the solutions, answers filled in,
    optionally edited), with the results file recorded on a real network."""
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    for name in NAMES:
        nb = nbformat.read(str(SOLUTIONS / name), as_version=4)
        for cell in nb.cells:
            for old, new in (edit or {}).get(name, {}).get(cell.get("id"), {}).items():
                assert old in cell.source, (name, cell.id, old)
                cell.source = cell.source.replace(old, new)
        nbformat.write(nb, str(folder / name))
    if results:
        shutil.copytree(RECORDED / "results", folder / "results")
    (folder / "timestamp.txt").write_text("2026-11-20 12:00:00.000000 UTC")
    return folder


def _autograde(course: Path, student: str) -> Dict[str, float]:
    """nbgrader autograde, then nbgrader's own grade export: the score of each notebook."""
    notebooks.nbgrader(["db", "student", "add", student], course)
    notebooks.nbgrader(["autograde", ASSIGNMENT, "--student", student, "--create", "--force"],
                       course, timeout_s=900)
    scores = {}
    for name in NAMES:
        executed = nbformat.read(str(course / "autograded" / student / ASSIGNMENT / name), 4)
        scores[name] = executed
    notebooks.nbgrader(["export", "--to", str(course / "grades.csv")], course)
    with open(course / "grades.csv", newline="") as table:
        rows = [r for r in csv.DictReader(table) if r["student_id"] == student]
    assert len(rows) == 1, rows
    return {"score": float(rows[0]["score"]), "max": float(rows[0]["max_score"]),
            "notebooks": scores}


@pytest.fixture(scope="module")
def full(course) -> Dict:
    """student1's complete submission, autograded once for the tests below."""
    _submit(course, "student1")
    return _autograde(course, "student1")


def test_the_release_is_exactly_the_kits_student_notebooks(course):
    for name in NAMES:
        released = (course / "release" / ASSIGNMENT / name).read_bytes()
        assert released == (ROOT / "notebooks" / name).read_bytes(), name


def test_a_completed_submission_gets_full_marks_from_its_recorded_measurements(full):
    result = full
    manual = sum(c["points"] for name in NAMES for c in _grade_cells(name).values()
                 if not c["code"])
    assert result["max"] == sum(_auto_points(n, True) + _auto_points(n, False)
                                for n in NAMES) + manual
    assert result["score"] == result["max"] - manual, result  # the written answers wait for a person
    for name, nb in result["notebooks"].items():
        errors = [c.id for c in nb.cells if c.cell_type == "code" and any(
            o.get("output_type") == "error" for o in c.get("outputs", []))]
        assert errors == [], (name, errors)
        start = next(c for c in nb.cells if c.get("id") == "start")
        text = "".join(o.get("text", "") for o in start.outputs)
        assert "grading: no network started; replaying" in text, (name, text)


def test_a_wrong_answer_loses_exactly_its_cells_points_and_gets_its_explanation(course, full):
    """Reference-topology answers typed by hand are wrong for the student's variant
    (student1): the compute-it-first check of lab 0 loses its points and explains why,
    without giving the expected number away."""
    edit = {"00-getting-started.ipynb": {"compute-answers": {
        "rtt_h1_h4_ms = 2 * (L1.delay_ms + L2.delay_ms)": "rtt_h1_h4_ms = L1.delay_ms + L2.delay_ms"}}}
    _submit(course, "student2", edit=edit)
    wrong = _autograde(course, "student2")
    lost = _grade_cells("00-getting-started.ipynb")["compute-check"]["points"]
    assert wrong["score"] == full["score"] - lost, (wrong, full)
    notebooks.nbgrader(["generate_feedback", ASSIGNMENT, "--student", "student2", "--force"],
                       course)
    html = (course / "feedback" / "student2" / ASSIGNMENT /
            "00-getting-started.html").read_text()
    answers = next(t for t in html.split("<table")[1:] if "you gave the one-way delay" in t)
    header = answers.split("</thead>")[0]
    assert "answer</th>" in header and "expected" not in header  # no expected column
    from labtools.model.catalog import load_topology
    from labtools.model.expect import expect_pair

    rtt_ms = expect_pair(load_topology("portfolio,variant=student1"), "h1", "h4").rtt_ms
    assert f"{rtt_ms:g}" not in answers.split("</table>")[0]  # nor the expected RTT


def test_a_missing_results_file_loses_exactly_the_measured_checks(course, full):
    _submit(course, "student3", results=False)
    missing = _autograde(course, "student3")
    measured = sum(_auto_points(n, True) for n in NAMES)
    assert missing["score"] == full["score"] - measured, (missing, full, measured)
    nb = missing["notebooks"]["00-getting-started.ipynb"]
    check = next(c for c in nb.cells if c.get("id") == "pick-rtt-check")
    errors = [o for o in check.outputs if o.get("output_type") == "error"]
    assert errors and errors[0]["ename"] == "ReplayError"
    assert "no results store at results/labtools.sqlite" in errors[0]["evalue"]


def test_the_recording_is_described(course):
    meta = json.loads((RECORDED / "capture.json").read_text())
    assert meta["variant"] == "student1" and meta["notebooks"] == NAMES
    assert meta["tools"]["iperf3"] and meta["kernel"]
