"""``labtools autograde``: nbgrader's autograde for a whole class, several at once.

    labtools autograde ASSIGNMENT [--jobs N] [--course DIR] [--student ID]... [--create] [--force]

For the instructor (refused in a student's lab). Runs nbgrader's autograde of ASSIGNMENT
for every submission in the course's ``submitted/`` folder (or the ones named), as
``nbgrader autograde ASSIGNMENT --student ID`` does, ``--jobs`` at once (default: four
for each CPU, as many as the memory holds), and prints a line as each ends; see
:mod:`labtools.instructor.class_grading`.
Exit status 0 when every submission was graded, 1 when one or more failed or timed out
(each named, with nbgrader's last line and its log), 2 for a bad course or assignment.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any

from labtools.commands import options


def add_parser(sub: Any) -> None:
    """Register ``labtools autograde``."""
    p = sub.add_parser(
        "autograde", help="nbgrader autograde for a class, several submissions at once",
        description="Run nbgrader's autograde for every submission of ASSIGNMENT (or the "
        "students named), several at once, into the course's one gradebook.")
    p.add_argument("assignment", metavar="ASSIGNMENT", type=options.text,
                   help="the assignment, as nbgrader names it (its folder in submitted/STUDENT/)")
    options.add_course_folder(p, "the course folder (nbgrader_config.py, submitted/; "
                                 "default: here)")
    p.add_argument("--student", metavar="ID", action="append", dest="students",
                   type=options.text, help="only this student (may be given again)")
    p.add_argument("--jobs", "-j", metavar="N", type=options.count,
                   help="submissions graded at once (default: 4 for each CPU, as many as the "
                        "memory holds, 500 MiB each)")
    p.add_argument("--create", action="store_true",
                   help="add students missing from the gradebook (nbgrader's --create)")
    p.add_argument("--force", action="store_true",
                   help="grade again what was graded before (nbgrader's --force)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Grade, print a line per submission and a summary; 0 if all were graded, else 1."""
    from labtools.errors import EnvironmentProblem, InputError
    from labtools.instructor import class_grading, kernel_sandbox

    options.instructors_only("autograde")
    course = args.course.resolve()
    if not course.is_dir():
        raise InputError(f"--course {args.course}: no such folder")
    found = class_grading.submitted_students(course, args.assignment)
    students = found if not args.students else list(dict.fromkeys(args.students))
    missing = [s for s in students if s not in found]
    if missing:
        raise InputError(f"no submission of {args.assignment!r} by {', '.join(missing)} in "
                         f"{course / 'submitted'}")
    if not students:
        raise InputError(f"no submission of {args.assignment!r} in {course / 'submitted'}")
    if not (course / "gradebook.db").is_file() and class_grading.gradebook_url(course):
        raise InputError(f"no gradebook in {course}: run nbgrader generate_assignment "
                         f"{args.assignment} there first")
    if importlib.util.find_spec("nbgrader") is None:
        raise EnvironmentProblem("nbgrader is not installed: pip install 'labtools[dev]'")
    jobs = args.jobs or class_grading.default_jobs()
    print(f"labtools autograde: {len(students)} submissions of {args.assignment}, "
          f"{min(jobs, len(students))} at once", flush=True)
    print(kernel_sandbox.announce(), flush=True)
    results = class_grading.grade_class(course, args.assignment, students, jobs,
                                        sys.executable, _print_progress, args.create,
                                        args.force)
    bad = [r for r in results if r.status != class_grading.GRADED]
    print(f"labtools autograde: {len(results) - len(bad)} graded, {len(bad)} not"
          + "".join(f"\n  {r.student}: {r.status}: {r.reason} (log: {r.log})" for r in bad))
    return 1 if bad else 0


def _print_progress(result: Any, done: int, total: int, running: int) -> None:
    cpu = "" if result.cpu_s is None else f", {result.cpu_s:.0f} s of CPU"
    print(f"[{done}/{total}] {result.student}: {result.status} in {result.seconds:.0f} s"
          f"{cpu} ({running} running)", flush=True)
