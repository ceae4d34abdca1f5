"""Grading a class with the real nbgrader: release, autograde from the student's own
recorded measurements, feedback, and the class grade table. No root, no Mininet, no VM.

A course folder is made from ``solutions/`` as an instructor would make it. The student's
measurements are a results file recorded on a real network (tests/fixtures/grading: capture.py
records it and capture.json says when and where), with the topology variant ``student1``. Marker ``grading``: these run nbgrader
for real (tens of seconds each).
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import sqlite3
from html import unescape
from pathlib import Path
from typing import Dict, List

import nbformat
import pytest

from labtools.instructor.hidden_test_feedback import HIDDEN_TESTS_LINE
from labtools.teach import notebook_files as notebooks
from labtools.teach.grading_figures import NOT_DRAWN_LINE

pytestmark = pytest.mark.grading

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
RECORDED = ROOT / "tests" / "fixtures" / "grading"
ASSIGNMENT = "labs"
NAMES = notebooks.notebook_names(SOLUTIONS)
#: the variant the recorded results file was measured on (student1's)
RECORDED_VARIANT = json.loads((RECORDED / "capture.json").read_text())["variant"]


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
    (root / "nbgrader_config.py").write_text(notebooks.course_config("netlab"))
    # student2 hands in the recording too, as student1's lab partner: one network, one variant
    (root / "labtools-variants.csv").write_text(
        f"student_id,variant\nstudent2,{RECORDED_VARIANT}\n")
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


#: student2's edits: reference-topology answers typed by hand (lab 0) and a wrong answer
#: behind a hidden test (lab 6's units); notebook -> cell id -> {old: new}
WRONG_ANSWERS = {"00-getting-started.ipynb": {"compute-answers": {
    "rtt_h1_h4_ms = 2 * (L1.delay_ms + L2.delay_ms)": "rtt_h1_h4_ms = L1.delay_ms + L2.delay_ms",
    "bottleneck_h1_h4_mbps = min(L1.bw_mbps, L2.bw_mbps)":
        "bottleneck_h1_h4_mbps = L1.bw_mbps + L2.bw_mbps"}},
    "06-measurement-pitfalls.ipynb": {"units": {
        "rate_10M_mbps = 1470 * 8 / 1121.52e-6 / 1e6": "rate_10M_mbps = 10.0"}}}


def _submit_class(course: Path) -> None:
    """The class's five submissions (each test below reads one of them)."""
    _submit(course, "student1")  # complete
    wrong = _submit(course, "student2", edit=WRONG_ANSWERS)  # student1's lab partner
    _checked_after_measuring(wrong / "results" / "labtools.sqlite", "link")
    _submit(course, "student3", results=False)  # no results file
    _submit(course, "student4")  # student1's results file as theirs
    folder = _submit(course, "student5", results=False)  # measured on student1's variant
    shutil.copytree(EARLIER, folder / "results")


def _autograde_class(course: Path) -> Dict[str, Dict]:
    """nbgrader autograde of every submission (one run, one student after the other, as an
    instructor runs it), then nbgrader's own grade export: each student's score and
    autograded notebooks."""
    notebooks.nbgrader(["autograde", ASSIGNMENT, "--create", "--force"], course, timeout_s=1800)
    notebooks.nbgrader(["export", "--to", str(course / "grades.csv")], course)
    with open(course / "grades.csv", newline="") as table:
        rows = {r["student_id"]: r for r in csv.DictReader(table)}
    graded = {}
    for student, row in rows.items():
        folder = course / "autograded" / student / ASSIGNMENT
        graded[student] = {"score": float(row["score"]), "max": float(row["max_score"]),
                           "notebooks": {name: nbformat.read(str(folder / name), 4)
                                         for name in NAMES}}
    return graded


@pytest.fixture(scope="module")
def graded(course) -> Dict[str, Dict]:
    """The class, submitted and autograded once for the tests below."""
    _submit_class(course)
    graded = _autograde_class(course)
    assert sorted(graded) == [f"student{i}" for i in range(1, 6)]
    return graded


@pytest.fixture(scope="module")
def full(graded) -> Dict:
    """student1's complete submission."""
    return graded["student1"]


def test_the_release_is_exactly_the_kits_student_notebooks(course):
    for name in NAMES:
        released = (course / "release" / ASSIGNMENT / name).read_bytes()
        # the same notebook, cell for cell and metadata too (nbgrader writes no final
        # newline; the kit's generator writes as Jupyter does)
        assert json.loads(released) == json.loads((ROOT / "notebooks" / name).read_bytes()), name
        text = released.decode()
        assert "BEGIN HIDDEN TESTS" not in text and "Rubric (" not in text, name


def test_what_the_network_did_carries_no_points(course):
    """check_network reports; every point is the student's (their computation, their
    measurement, their explanation)."""
    for name in NAMES:
        nb = nbformat.read(str(SOLUTIONS / name), as_version=4)
        graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("points")]
        assert graded and not [c.id for c in graded if "check_network(" in c.source], name


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
        # no figure rendered while grading (labtools.teach.grading_figures), and it says so
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert not [o for o in outputs if "image/png" in o.get("data", {})], name
        assert any(NOT_DRAWN_LINE in o.get("text", "") for o in outputs), name


def _page_text(course: Path, student: str, name: str) -> str:
    """The text of the feedback page of ``student``'s notebook ``name``, without markup."""
    page = course / "feedback" / student / ASSIGNMENT / name.replace(".ipynb", ".html")
    return unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def _hidden_source_shown(course: Path, student: str) -> Dict[str, List[str]]:
    """Each notebook -> the lines of its hidden tests (in solutions/) that ``student``'s
    feedback page shows; a line that is also part of a line outside them is not counted."""
    shown = {}
    for name in NAMES:
        hidden, visible = set(), set()
        for cell in nbformat.read(str(SOLUTIONS / name), as_version=4).cells:
            inside = False
            for line in cell.source.split("\n"):
                inside = inside or "BEGIN HIDDEN TESTS" in line
                (hidden if inside else visible).add(line.strip())
                inside = inside and "END HIDDEN TESTS" not in line
        text = _page_text(course, student, name)
        hidden = {line for line in hidden if line and not any(line in v for v in visible)}
        shown[name] = sorted(line for line in hidden if line in text)
    return shown


def _checked_after_measuring(results: Path, case: str) -> None:
    """The student of ``results`` checked the answers of notebook ``case`` only after its
    last measurement: their predictions on record carry that time."""
    with sqlite3.connect(results) as con:
        con.execute('UPDATE predictions SET recorded_at = (SELECT max(finished_at) FROM runs '
                    'WHERE "case" = ?) WHERE "case" = ?', (case, case))


def test_a_wrong_answer_loses_exactly_its_cells_points_and_gets_its_explanation(course, full,
                                                                               graded):
    """Reference-topology answers typed by hand are wrong for the student's variant
    (student1): the compute-it-first check of lab 0 loses its points and explains why,
    without giving away an expected number the lab did not measure. A wrong answer behind a
    hidden test (lab 6's units, whose visible check only asks for a number) loses its points
    too: autograding puts the hidden test back. Lab 2's right answers, checked only after measuring, lose
    their cell's points with the record's one line. The feedback shows what the hidden tests
    raised, never their source (the autograded notebook keeps it)."""
    wrong = graded["student2"]
    lost = (_grade_cells("00-getting-started.ipynb")["compute-check"]["points"]
            + _grade_cells("06-measurement-pitfalls.ipynb")["units-check"]["points"]
            + _grade_cells("02-link-latency-throughput.ipynb")["compute-check"]["points"])
    assert wrong["score"] == full["score"] - lost, (wrong, full)
    late = next(c for c in wrong["notebooks"]["02-link-latency-throughput.ipynb"].cells
                if c.get("id") == "compute-check")
    error = next(o for o in late.outputs if o.get("output_type") == "error")
    assert "came after the measurement" in error["evalue"] and "\n" not in error["evalue"]
    units = next(c for c in wrong["notebooks"]["06-measurement-pitfalls.ipynb"].cells
                 if c.get("id") == "units-check")
    assert "### BEGIN HIDDEN TESTS" in units.source  # nbgrader restored the hidden test
    error = next(o for o in units.outputs if o.get("output_type") == "error")
    assert "one 1470-byte datagram per gap" in error["evalue"]
    autograded = course / "autograded" / "student2" / ASSIGNMENT / "06-measurement-pitfalls.ipynb"
    kept = autograded.read_bytes()
    notebooks.nbgrader(["generate_feedback", ASSIGNMENT, "--student", "student2", "--force"],
                       course)
    assert autograded.read_bytes() == kept
    assert _hidden_source_shown(course, "student2") == {name: [] for name in NAMES}
    units_page = _page_text(course, "student2", "06-measurement-pitfalls.ipynb")
    assert HIDDEN_TESTS_LINE in units_page and error["evalue"] in units_page
    html = (course / "feedback" / "student2" / ASSIGNMENT /
            "00-getting-started.html").read_text()
    # the answers' feedback: one sentence per answer, no table of NaN and False
    answers = next(t for t in html.split("<ul")[1:] if "you gave the one-way delay" in t)
    lines = re.findall(r"<li>(.*?)</li>", answers.split("</ul>")[0])
    from labtools.judge.exercises import question_text
    from labtools.model.catalog import load_topology
    from labtools.model.expect import expect_pair

    pair = expect_pair(load_topology("portfolio,variant=student1"), "h1", "h4")
    said = {q: next(line for line in lines if question_text(q) in line)
            for q in ("bottleneck_mbps h1 h4", "rtt_ms h1 h4")}
    for line in said.values():
        assert line.startswith("✗ ") and "not right yet" in line and "NaN" not in line
    assert "value:" not in said["bottleneck_mbps h1 h4"]  # wrong, not measured: no number
    # wrong, but lab 0 measured that RTT, so its number is no secret (the verdict shows it)
    assert said["rtt_ms h1 h4"].endswith(f"The kit's value: {pair.rtt_ms:.10g}.")
    check = next(c for c in wrong["notebooks"]["00-getting-started.ipynb"].cells
                 if c.get("id") == "compute-check")
    failed = next(o for o in check.outputs if o.get("output_type") == "error")
    assert failed["traceback"] == [f"AssertionError: {failed['evalue']}"]  # one line


def test_a_missing_results_file_loses_exactly_the_measured_checks(full, graded):
    missing = graded["student3"]
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


# --- grading integrity: the variant is bound to the student ----------------------------------
EARLIER = RECORDED / "earlier" / "results"  # a second real recording, on student1's variant
COURSE_ID = "netlab"


def _grades(course: Path, student: str) -> Dict[tuple, float]:
    """(notebook, grade cell) -> its automatic score, from nbgrader's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        return {(name, grade.name): grade.auto_score for name in NAMES
                for grade in gb.find_submission_notebook(name[: -len(".ipynb")], ASSIGNMENT,
                                                         student).grades
                if grade.auto_score is not None}


def _measured_cells() -> set:
    return {(n, c) for n in NAMES for c, g in _grade_cells(n).items()
            if g["measured"] and g["code"]}


def _errors(nb, cell_id: str) -> list:
    cell = next(c for c in nb.cells if c.get("id") == cell_id)
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def _start_text(nb) -> str:
    start = next(c for c in nb.cells if c.get("id") == "start")
    return "".join(o.get("text", "") for o in start.outputs)


@pytest.fixture(scope="module")
def copied(graded) -> Dict:
    """student4 hands in student1's results file as theirs."""
    return graded["student4"]


@pytest.fixture(scope="module")
def wrong_variant(graded) -> Dict:
    """student5 hands in measurements of their own, made on student1's variant (the first
    recording of the fixture: notebooks 00-05, none of its runs the same as student1's)."""
    return graded["student5"]


def _lost_exactly_the_measured_checks(course: Path, student: str) -> None:
    mine, full_marks = _grades(course, student), _grades(course, "student1")
    measured = _measured_cells()
    assert measured and set(mine) == set(full_marks)
    for key, score in mine.items():
        assert score == (0 if key in measured else full_marks[key]), key


def test_a_copied_results_file_fails_every_measured_check_with_one_line(course, full, copied):
    _lost_exactly_the_measured_checks(course, "student4")
    assert copied["score"] == full["score"] - sum(_grades(course, "student1")[k]
                                                  for k in _measured_cells())
    reason = (f"were made on variant '{RECORDED_VARIANT}'; student4's variant is 'student4' (their "
              "student id): measure on your own network")
    replayed = []
    for name, nb in copied["notebooks"].items():
        assert reason in _start_text(nb), name  # the lab's first line says why
        cells = [c for n, c in _measured_cells() if n == name]
        errors = [e for c in cells for e in _errors(nb, c)]
        assert len(errors) == len(cells), name  # every measured check failed...
        # ...with the reason where it used a measurement (a check that reads what an
        # ungraded cell could not compute fails on that instead)
        replayed += [e for e in errors if e["ename"] == "ReplayError"]
    assert replayed and all(reason in e["evalue"] and "\n" not in e["evalue"]
                            for e in replayed)
    notebooks.nbgrader(["generate_feedback", ASSIGNMENT, "--student", "student4", "--force"],
                       course)
    html = (course / "feedback" / "student4" / ASSIGNMENT / NAMES[0].replace(".ipynb", ".html"))
    assert "measure on your own network" in html.read_text()


def test_measurements_made_on_another_variant_fail_the_measured_checks(course, full,
                                                                        wrong_variant):
    _lost_exactly_the_measured_checks(course, "student5")
    recorded = json.loads((EARLIER.parent / "capture.json").read_text())["notebooks"]
    for name, nb in wrong_variant["notebooks"].items():
        text = _start_text(nb)
        assert "student5's variant is 'student5'" in text
        if name in recorded:
            assert "were made on variant 'student1'" in text, name
        else:  # a notebook the recording has no measurement of
            assert "holds no measurement of this notebook" in text, name


def test_the_class_report_of_the_graded_class(course, full, copied, wrong_variant, tmp_path):
    """``labtools class-report`` on nbgrader's folders: the copy is found, the partners are
    not a copy, and each student's expected values are the kit's for their own variant."""
    from labtools.model.catalog import load_topology
    from labtools.model.expect import expect_pair
    from tests.conftest import run_cli

    for folder in ("submitted", "autograded"):
        out = tmp_path / folder
        done = run_cli(["class-report", str(course / folder), "--out", str(out)])
        assert done.returncode == 0, done.stderr
        assert "student1 (labs) and student4 (labs): " in done.stdout
        copies = {(r["student_a"], r["student_b"]): r["partners"]
                  for r in csv.DictReader(open(out / "copies.csv"))}
        assert copies == {("student1", "student2"): "True", ("student1", "student4"): "False",
                          ("student2", "student4"): "False"}
        subs = {r["student"]: r for r in csv.DictReader(open(out / "submissions.csv"))}
        assert not subs["student1"]["not_their_own"] and not subs["student2"]["not_their_own"]
        assert subs["student4"]["not_their_own"] and subs["student5"]["not_their_own"]
        for row in csv.DictReader(open(out / "measurements.csv")):
            if row["case"] == "intro" and row["metric"] == "rtt_min":
                topo = load_topology(f"portfolio,variant={row['variant']}")
                assert float(row["expected"]) == pytest.approx(
                    expect_pair(topo, "h1", "h4").rtt_ms), row["student"]
        assert (out / "lab-path.png").is_file() and (out / "calibrations.png").is_file()
