"""Benchmark: grading a class with nbgrader. What a submission costs, lab by lab, against
nbgrader's floor; a class autograded one after the other and several at once.

1. **The floor**: nbgrader autograding 8 trivial notebooks (one cell, ``x = 1``: a kernel
   each, nothing imported) for one student, in CPU seconds (nbgrader and the kernels it
   waited for, from ``wait4``), and one trivial notebook alone.
2. **Each lab** of the kit, autograded alone (``--notebook``) from the recorded results
   file (tests/fixtures/grading), and the whole submission (the 8 labs in one run): CPU
   seconds and wall time, as ratios to the floor.
3. **A class** of ``--students`` submissions (default 100), lab partners of the recorded
   variant (labtools-variants.csv), autograded by nbgrader's own serial
   ``nbgrader autograde labs`` and by ``labtools autograde labs`` (this machine's CPUs at
   once) in copies of one course, in the same run; their gradebooks compared. Then the
   class's answer keys (``labtools answer-key --all``) and the class report timed.

No root, no network. ``python benchmarks/grading.py --students 100 --out
benchmarks/results/grading.json``; `make bench` runs it as the part ``grading``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import nbformat
from common import RESULTS, ROOT, machine_info, say, write_json

from labtools.instructor import class_grading
from labtools.teach import notebook_files as notebooks

PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").is_dir() else sys.executable
RECORDED = ROOT / "tests" / "fixtures" / "grading"
COURSE_ID = "netlab"
ASSIGNMENT, FLOOR = "labs", "floor"


def run_timed(argv: List[str], cwd: Path, forked: bool = True) -> Dict[str, Any]:
    """Run ``argv`` in ``cwd``: its wall time (s), CPU time (s, the process and the
    children it waited for) and exit status. ``forked``: the kernels forked from one that
    imported the labs' modules (the kit's course), else each started anew (nbgrader's)."""
    start = time.monotonic()
    env = dict(notebooks.nbgrader_env(), LABTOOLS_FORKED_KERNELS="1" if forked else "0")
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(argv, cwd=str(cwd), env=env,
                                stdout=sink, stderr=subprocess.STDOUT)
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"wall_s": round(time.monotonic() - start, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "status": proc.returncode}


def make_course(root: Path, students: List[str]) -> Path:
    """A course with the kit's labs and 8 trivial notebooks released, and ``students``'
    complete submissions of the labs (the recorded results file each; lab partners of the
    recorded variant) and of the trivial ones."""
    root.mkdir(parents=True)
    (root / "nbgrader_config.py").write_text(notebooks.course_config(COURSE_ID))
    variant = json.loads((RECORDED / "capture.json").read_text())["variant"]
    (root / "labtools-variants.csv").write_text(
        "student_id,variant\n" + "".join(f"{s},{variant}\n" for s in students))
    names = notebooks.notebook_names(ROOT / "solutions")
    for assignment in (ASSIGNMENT, FLOOR):
        (root / "source" / assignment).mkdir(parents=True)
    for name in names:
        shutil.copy(ROOT / "solutions" / name, root / "source" / ASSIGNMENT / name)
        trivial = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
        nbformat.write(trivial, str(root / "source" / FLOOR / name))
    for assignment in (ASSIGNMENT, FLOOR):
        notebooks.nbgrader(["generate_assignment", assignment, "--create", "--force"], root)
    for student in students:
        for assignment in (ASSIGNMENT, FLOOR):
            folder = root / "submitted" / student / assignment
            shutil.copytree(root / "source" / assignment, folder)
            (folder / "timestamp.txt").write_text("2026-11-20 12:00:00.000000 UTC")
        shutil.copytree(RECORDED / "results", root / "submitted" / student / ASSIGNMENT /
                        "results")
    return root


def nbgrader_exe() -> str:
    exe = shutil.which("nbgrader", path=notebooks.nbgrader_env()["PATH"])
    if exe is None:
        raise SystemExit("bench grading: nbgrader is not installed (make dev)")
    return exe


def per_lab(released: Path, student: str) -> Dict[str, Any]:
    """Each lab alone, the whole submission, and the floor, for ``student`` (in a copy of
    the course)."""
    exe, names = nbgrader_exe(), notebooks.notebook_names(ROOT / "solutions")
    course = released.parent / "alone"
    shutil.copytree(released, course)
    base = [exe, "autograde", "--student", student, "--create", "--force"]
    out: Dict[str, Any] = {"labs": {}}
    for name in names:
        say(f"grading: {name} alone")
        out["labs"][name] = run_timed(base + [ASSIGNMENT, "--notebook", name[:-6]], course)
    say("grading: one trivial notebook alone, 8 trivial notebooks (nbgrader's own kernels), "
        "the whole submission with forked kernels and with kernels started anew")
    out["trivial_one"] = run_timed(base + [FLOOR, "--notebook", names[0][:-6]], course,
                                   forked=False)
    out["floor"] = run_timed(base + [FLOOR], course, forked=False)
    out["submission"] = run_timed(base + [ASSIGNMENT], course)
    forked_grades = gradebook_rows(course)
    out["submission_kernels_anew"] = run_timed(base + [ASSIGNMENT], course, forked=False)
    out["same_grades_kernels_anew"] = forked_grades == gradebook_rows(course)
    out["ratio_to_floor"] = round(out["submission"]["cpu_s"] / out["floor"]["cpu_s"], 2)
    return out


def gradebook_rows(course: Path) -> Dict[Tuple, Tuple]:
    """Every grade of the labs in the gradebook, by student and cell."""
    from nbgrader.api import Gradebook

    rows = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        for sub in gb.assignment_submissions(ASSIGNMENT):
            for nb in sub.notebooks:
                for grade in nb.grades:
                    rows[(sub.student_id, nb.name, grade.name)] = (grade.auto_score,
                                                                   grade.needs_manual_grade)
    return rows


def class_of(course: Path, students: List[str], jobs: int) -> Dict[str, Any]:
    """The class graded serially (nbgrader) and ``jobs`` at once (labtools), in copies."""
    serial, parallel = course.parent / "serial", course.parent / "parallel"
    for copy in (serial, parallel):
        shutil.copytree(course, copy)
    say(f"grading: {len(students)} submissions, one after the other (nbgrader autograde)")
    one_by_one = run_timed([nbgrader_exe(), "autograde", ASSIGNMENT, "--create"], serial)
    say(f"grading: {len(students)} submissions, {jobs} at once (labtools autograde)")
    at_once = run_timed([str(Path(PY).parent / "labtools"), "autograde", ASSIGNMENT,
                         "--create", "--jobs", str(jobs)], parallel)
    same = gradebook_rows(serial) == gradebook_rows(parallel)
    say("grading: the class's answer keys and its report")
    keys = run_timed([str(Path(PY).parent / "labtools"), "answer-key", "--all", "--course",
                      str(parallel), "--json"], parallel)
    report = run_timed([str(Path(PY).parent / "labtools"), "class-report",
                        str(parallel / "autograded")], parallel)
    return {"students": len(students), "jobs": jobs, "serial": one_by_one,
            "parallel": at_once, "speedup": round(one_by_one["wall_s"] / at_once["wall_s"], 2),
            "same_gradebook": same, "answer_keys": keys, "class_report": report}


def report_lines(data: Dict[str, Any]) -> List[str]:
    """The BENCHMARKS.md section of one run."""
    lab = data["per_lab"]
    trivial = lab["trivial_one"]["cpu_s"]
    lines = ["## Grading a class (nbgrader, replayed labs)", "",
             f"{data['machine']['cores']} cores, load {data['load_before'][0]:.1f} before and "
             f"{data['load_after'][0]:.1f} after; CPU is nbgrader's and its kernels' "
             "(`wait4`). One trivial notebook (a kernel, nothing imported) alone: "
             f"{trivial:.1f} s of CPU.", "",
             "| autograded | wall s | CPU s | CPU over the trivial notebook's |",
             "|---|---|---|---|"]
    for name, run in lab["labs"].items():
        lines.append(f"| {name} alone | {run['wall_s']:.1f} | {run['cpu_s']:.1f} | "
                     f"{run['cpu_s'] - trivial:+.1f} |")
    lines += [f"| 8 trivial notebooks (the floor) | {lab['floor']['wall_s']:.1f} | "
              f"{lab['floor']['cpu_s']:.1f} | |",
              f"| the whole submission (8 labs) | {lab['submission']['wall_s']:.1f} | "
              f"{lab['submission']['cpu_s']:.1f} | {lab['ratio_to_floor']:.2f} x the floor |"]
    anew = lab.get("submission_kernels_anew")
    if anew:
        lines += [f"| the whole submission, each kernel started anew | {anew['wall_s']:.1f} | "
                  f"{anew['cpu_s']:.1f} | {anew['cpu_s'] / lab['floor']['cpu_s']:.2f} x the "
                  "floor |", "",
                  "The labs' kernels are forked from one that has imported their modules "
                  "(labtools.instructor.grading_kernels; the floor's are nbgrader's own); the "
                  "same grades with kernels started anew: "
                  f"{'yes' if lab['same_grades_kernels_anew'] else 'NO'}."]
    lines.append("")
    klass = data.get("class")
    if klass:
        lines += [f"A class of {klass['students']}: nbgrader's serial autograde "
                  f"{klass['serial']['wall_s'] / 60:.1f} min, `labtools autograde --jobs "
                  f"{klass['jobs']}` {klass['parallel']['wall_s'] / 60:.1f} min "
                  f"({klass['speedup']:.2f} x), the same gradebook: "
                  f"{'yes' if klass['same_gradebook'] else 'NO'}; the class's answer keys "
                  f"{klass['answer_keys']['wall_s']:.1f} s, its class report "
                  f"{klass['class_report']['wall_s']:.1f} s.", ""]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=class_grading.default_jobs(),
                        help="labtools autograde's workers (default: its own default)")
    parser.add_argument("--out", type=Path, default=RESULTS / "grading.json")
    args = parser.parse_args()
    students = [f"s{i:04d}" for i in range(1, args.students + 1)]
    with tempfile.TemporaryDirectory(prefix="labtools-bench-grading-") as tmp:
        say(f"grading: a course of {len(students)} submissions")
        course = make_course(Path(tmp) / "course", students)
        data = {"machine": machine_info(), "load_before": os.getloadavg(),
                "per_lab": per_lab(course, students[0])}
        if args.students > 1:
            data["class"] = class_of(course, students, args.jobs)
        data["load_after"] = os.getloadavg()
    write_json(args.out, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
