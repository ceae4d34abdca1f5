"""``labtools class-report``: what a class measured, for the instructor after a lab.

    labtools class-report FOLDER [--out DIR] [--variants FILE]

FOLDER is nbgrader's ``submitted/`` or ``autograded/`` folder (``STUDENT/ASSIGNMENT/
results/labtools.sqlite``). Prints a summary (submissions, who did not measure their own
network, identical raw measurements, slow machines, each lab's measured / expected over the
class) and writes CSV tables and PNG plots into DIR (default: ``class-report`` in the
course folder); see :mod:`labtools.instructor.class_report`. Each student's variant is their
student id, or what ``--variants`` (default: ``labtools-variants.csv`` in the course
folder) lists for them.
"""

from __future__ import annotations

import argparse
from typing import Any

from labtools.commands import options


def add_parser(sub: Any) -> None:
    """Register ``labtools class-report``."""
    p = sub.add_parser(
        "class-report", help="a class's measurements against each student's expected values",
        description="Read every submission's results file in nbgrader's submitted/ or "
        "autograded/ folder; print a summary and write CSV tables and PNG plots.")
    p.add_argument("folder", metavar="FOLDER", type=options.path,
                   help="nbgrader's submitted/ or autograded/ folder")
    p.add_argument("--out", metavar="DIR", type=options.path,
                   help="where the tables and plots go (default: class-report in the "
                   "course folder)")
    p.add_argument("--variants", metavar="FILE", type=options.path,
                   help="the course's student_id,variant list (default: "
                   "labtools-variants.csv in the course folder, if there is one)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Collect, write, print; return 0."""
    from labtools.errors import InputError
    from labtools.instructor.class_report import make_report

    if args.variants is not None and not args.variants.is_file():
        raise InputError(f"--variants {args.variants}: no such file")
    _data, written, lines = make_report(args.folder, args.out, args.variants)
    for line in lines:
        print(line)
    print(f"written into {written[0].parent}: {', '.join(p.name for p in written)}")
    return 0
