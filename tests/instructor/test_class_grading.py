"""``labtools autograde``: a class graded several submissions at once, with the real
nbgrader, leaves the gradebook as nbgrader's own serial run does.

Lab 0 is the assignment here (one notebook: every submission is a real autograde of a real
lab, replayed from the results file recorded on a real network, tests/fixtures/grading).
Four submissions: a complete one, its lab partner's with two wrong answers, one without a
results file, one whose notebook is not a notebook. Marker ``grading``: nbgrader runs for
real.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import nbformat
import pytest

from labtools.teach import notebook_files as notebooks

pytestmark = pytest.mark.grading

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "grading"
ASSIGNMENT = "labs"
LAB = "00-getting-started.ipynb"
COURSE_ID = "netlab"
STUDENTS = ["student1", "student2", "student3", "student4"]
WRONG = {"compute-answers": {
    "rtt_h1_h4_ms = 2 * (L1.delay_ms + L2.delay_ms)": "rtt_h1_h4_ms = L1.delay_ms + L2.delay_ms"}}


def _submit(course: Path, student: str, results: bool = True, edit: Dict = None,
            broken: bool = False) -> None:
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    nb = nbformat.read(str(ROOT / "solutions" / LAB), as_version=4)
    for cell in nb.cells:
        for old, new in (edit or {}).get(cell.get("id"), {}).items():
            assert old in cell.source, (cell.id, old)
            cell.source = cell.source.replace(old, new)
    if broken:
        (folder / LAB).write_text("this is not a notebook\n")
    else:
        nbformat.write(nb, str(folder / LAB))
    if results:
        shutil.copytree(RECORDED / "results", folder / "results")
    (folder / "timestamp.txt").write_text("2026-11-20 12:00:00.000000 UTC")


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """A course with lab 0 released and four submissions collected, not yet graded."""
    root = tmp_path_factory.mktemp("course")
    (root / "nbgrader_config.py").write_text(notebooks.course_config(COURSE_ID))
    variant = json.loads((RECORDED / "capture.json").read_text())["variant"]
    (root / "labtools-variants.csv").write_text(f"student_id,variant\nstudent2,{variant}\n")
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / LAB, root / "source" / ASSIGNMENT / LAB)
    notebooks.nbgrader(["generate_assignment", ASSIGNMENT, "--create", "--force"], root)
    _submit(root, "student1")
    _submit(root, "student2", edit=WRONG)
    _submit(root, "student3", results=False)
    _submit(root, "student4", broken=True)
    return root


def _labtools(args: List[str], cwd: Path, tmp: Optional[Path] = None
              ) -> subprocess.CompletedProcess:
    """``labtools ARGS`` in ``cwd``; with ``tmp``, its temporary folders there (TMPDIR), apart
    from those of tests running at the same time (`make test` grades files in parallel)."""
    env = notebooks.nbgrader_env()
    if tmp is not None:
        tmp.mkdir(exist_ok=True)
        env["TMPDIR"] = str(tmp)
    return subprocess.run([sys.executable, "-m", "labtools.cli", *args], cwd=str(cwd),
                          env=env, capture_output=True, text=True, timeout=900)


def _gradebook(course: Path) -> Dict[tuple, tuple]:
    """Every grade and comment of the gradebook, keyed by student and cell (no ids, no
    times of the run)."""
    from nbgrader.api import Gradebook

    rows = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        for student in gb.students:
            for sub in student.submissions:
                rows[(student.id, "submission")] = (sub.timestamp, sub.needs_manual_grade)
                for nb in sub.notebooks:
                    for grade in nb.grades:
                        rows[(student.id, nb.name, grade.name)] = (
                            grade.auto_score, grade.manual_score, grade.needs_manual_grade)
                    for comment in nb.comments:
                        rows[(student.id, nb.name, "comment", comment.name)] = (
                            comment.auto_comment, comment.manual_comment)
    return rows


@pytest.fixture(scope="module")
def both(released, tmp_path_factory) -> Dict:
    """The same class graded by nbgrader's serial autograde and by ``labtools autograde``."""
    serial = tmp_path_factory.mktemp("serial") / "course"
    parallel = tmp_path_factory.mktemp("parallel") / "course"
    shutil.copytree(released, serial)
    shutil.copytree(released, parallel)
    exe = shutil.which("nbgrader", path=notebooks.nbgrader_env()["PATH"])
    done_serial = subprocess.run([exe, "autograde", ASSIGNMENT, "--create"], cwd=str(serial),
                                 env=notebooks.nbgrader_env(), capture_output=True, text=True,
                                 timeout=900)
    done = _labtools(["autograde", ASSIGNMENT, "--jobs", "3", "--create"], parallel)
    return {"serial": serial, "parallel": parallel, "serial_run": done_serial, "run": done}


def test_the_gradebook_is_the_serial_runs(both):
    serial, parallel = _gradebook(both["serial"]), _gradebook(both["parallel"])
    assert serial == parallel
    scores = {key[0]: value[0] for key, value in serial.items()
              if key[1:] == (LAB[: -len(".ipynb")], "compute-check")}
    # the complete submission got the check's points, the wrong answers lost them
    assert scores["student1"] > 0 and scores["student2"] == 0, scores
    for course in (both["serial"], both["parallel"]):
        notebooks.nbgrader(["export", "--to", str(course / "grades.csv")], course)
    tables = [sorted(csv.DictReader(open(both[run] / "grades.csv")),
                     key=lambda row: row["student_id"]) for run in ("serial", "parallel")]
    assert tables[0] == tables[1] and len(tables[0]) == len(STUDENTS)


def test_each_submission_is_reported_and_a_broken_one_is_its_own(both):
    done = both["run"]
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"labtools autograde: 4 submissions of {ASSIGNMENT}, 3 at once"
    # which protections the kernels get, said once (labtools.instructor.kernel_sandbox)
    assert lines[1].startswith("autograde sandbox: ") and "files" in lines[1], lines[1]
    assert sum(line.startswith("autograde sandbox") for line in lines) == 1
    lines = lines[1:]
    ended = sorted(line.split("]")[1].split(":")[0].strip() for line in lines[1:5])
    assert ended == STUDENTS and all(line.startswith("[") for line in lines[1:5])
    assert [int(line[1:].split("/")[0]) for line in lines[1:5]] == [1, 2, 3, 4]
    assert "labtools autograde: 3 graded, 1 not" in done.stdout
    failed = [line for line in lines if line.startswith("  student4: failed: ")]
    assert len(failed) == 1 and "log: " in failed[0], done.stdout
    log = Path(failed[0].split("log: ")[1].rstrip(")"))
    assert log.is_file() and log.parent.name == ASSIGNMENT
    for student in STUDENTS[:3]:  # the others were graded, each notebook executed
        assert (both["parallel"] / "autograded" / student / ASSIGNMENT / LAB).is_file()
        assert f"] {student}: graded in " in done.stdout


def test_bad_requests_are_one_line(released, tmp_path):
    unknown = _labtools(["autograde", ASSIGNMENT, "--student", "nobody"], released)
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    assert "no submission of 'labs' by nobody" in unknown.stderr
    nowhere = _labtools(["autograde", ASSIGNMENT, "--course", str(tmp_path)], released)
    assert nowhere.returncode == 2 and "no submitted/ folder" in nowhere.stderr
    (tmp_path / "submitted" / "alice" / ASSIGNMENT).mkdir(parents=True)
    ungraded = _labtools(["autograde", ASSIGNMENT, "--course", str(tmp_path)], released)
    assert ungraded.returncode == 2 and "no gradebook" in ungraded.stderr
    jobs = _labtools(["autograde", ASSIGNMENT, "--jobs", "0"], released)
    assert jobs.returncode == 2 and "--jobs" in jobs.stderr
    env = dict(notebooks.nbgrader_env(), LABTOOLS_MODE="student")
    student = subprocess.run([sys.executable, "-m", "labtools.cli", "autograde", ASSIGNMENT],
                             cwd=str(released), env=env, capture_output=True, text=True,
                             timeout=120)
    assert student.returncode == 2 and "for instructors" in student.stderr
    assert not (released / "autograded").exists()  # nothing of the above graded anything


def test_a_submission_that_kills_its_grader_is_its_own(released, tmp_path):
    """A notebook that kills the process grading it (its kernel's parent) fails alone: the
    worker that died is replaced and the next submission is graded as before. Graded by
    root, the kernel is a user of its own (labtools.instructor.kernel_sandbox) and cannot:
    both are graded."""
    course = tmp_path / "course"
    shutil.copytree(released, course)
    kill = ("\nimport os, signal\nos.kill(int(os.environ['JPY_PARENT_PID']), signal.SIGKILL)"
            "\n")
    folder = course / "submitted" / "killer" / ASSIGNMENT
    shutil.copytree(course / "submitted" / "student1" / ASSIGNMENT, folder)
    nb = nbformat.read(str(folder / LAB), as_version=4)
    cell = next(c for c in nb.cells if c.get("id") == "compute-answers")  # the student's
    cell.source += kill
    nbformat.write(nb, str(folder / LAB))
    # not root: its temporary folders its own (another file's grading may run beside it);
    # root grades in the kernels' sandbox, which must reach them in the system's /tmp
    tmp = tmp_path / "tmp" if os.geteuid() != 0 else None
    done = _labtools(["autograde", ASSIGNMENT, "--jobs", "1", "--create",
                      "--student", "killer", "--student", "student1"], course, tmp)
    if os.geteuid() == 0:  # the kill refused: the kernel is not its grader's user
        assert done.returncode == 0, done.stdout + done.stderr
        assert "labtools autograde: 2 graded, 0 not" in done.stdout, done.stdout
        assert "PermissionError" in (course / "autograded" / "killer" / ASSIGNMENT
                                     / LAB).read_text()
        return
    assert done.returncode == 1, done.stdout + done.stderr
    # the killed worker's kernels folder (its fork server's and kernels' sockets) is gone
    assert tmp is not None and not list(tmp.glob("labtools-kernels-*"))
    assert "labtools autograde: 1 graded, 1 not" in done.stdout, done.stdout
    assert "  killer: failed: its grading process ended with status -9" in done.stdout
    assert "] student1: graded in " in done.stdout
    assert (course / "autograded" / "student1" / ASSIGNMENT / LAB).is_file()
