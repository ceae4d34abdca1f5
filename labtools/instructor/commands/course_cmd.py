"""``labtools course new``: a course folder the kit grades, as ``nbgrader quickstart`` makes
one for nbgrader.

    labtools course new DIR [--id COURSE]
    labtools course record [--url URL] [--course DIR]

For the instructor (refused in a student's lab). Writes into ``DIR`` (new or empty):

- ``nbgrader_config.py``: the course's id and what the kit's grading needs
  (:func:`labtools.teach.notebook_files.course_config`: a cell's time at grading,
  autograde's forked kernels, feedback without the hidden tests' source);
- ``source/labs/``: the kit's labs as nbgrader source notebooks (``solutions/``), the
  assignment ``labs``;
- ``labtools-variants.csv``: its header only (every student measures on the network of
  their own id); lab partners go there as ``student_id,variant`` lines.

``record`` fetches a course hub's record of answers and measurements into
``DIR/course-record/`` (:mod:`labtools.instructor.course_record_fetch`).

Then, in ``DIR``: ``nbgrader generate_assignment labs --create`` and the steps of
docs/instructors.md. ``COURSE`` (default: ``DIR``'s name) is what nbgrader and a hub's
exchange call the course: letters, digits, ``_`` and ``-``. Built from the kit's source
folder (a checkout: ``solutions/`` is not installed); never inside or around it.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path
from typing import Any, List

from labtools.commands import options
from labtools.errors import InputError

#: what nbgrader and a hub's exchange accept as a course id
COURSE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
#: the assignment the labs are released as
ASSIGNMENT = "labs"
#: the variants file's header (labtools.results.ownership reads it)
VARIANTS_HEADER = "student_id,variant\n"


def add_parser(sub: Any) -> None:
    """Register ``labtools course``."""
    p = sub.add_parser("course", help="set up a course the kit grades (nbgrader)",
                       description="Set up a course folder for nbgrader with the kit's labs.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    new = actions.add_parser("new", help="write a new course folder",
                             description="Write nbgrader_config.py, source/labs/ and "
                             "labtools-variants.csv into DIR (new or empty).")
    new.add_argument("folder", metavar="DIR", type=options.path, help="the course folder")
    new.add_argument("--id", dest="course_id", metavar="COURSE", type=options.text,
                     help="the course's id for nbgrader (default: DIR's name)")
    new.set_defaults(handler=run_new)
    record = actions.add_parser(
        "record", help="fetch the course's record from the hub",
        description="Fetch the course hub's record (every checked answer and measurement, "
        "at the hub's time) into DIR/course-record/STUDENT.json, where grading reads it.")
    record.add_argument("--url", metavar="URL", type=options.text,
                        help="the record's address (default: LABTOOLS_RECORD_URL)")
    options.add_course_folder(record)
    record.set_defaults(handler=run_record)


def run_record(args: argparse.Namespace) -> int:
    """Fetch the record into the course folder; print how many students and events; 0."""
    from labtools.instructor.course_record_fetch import fetch_into
    from labtools.results.course_record_file import read_record

    options.instructors_only("course record")
    written = fetch_into(args.course, args.url)
    events = sum(len(read_record(path).events) for path in written)
    print(f"course record: {events} events of {len(written)} users in "
          f"{args.course / 'course-record'}")
    return 0


def check_course_id(course_id: str) -> str:
    """``course_id`` if nbgrader and a hub's exchange can take it, else InputError."""
    if not COURSE_ID.fullmatch(course_id):
        raise InputError(f"course id {course_id!r}: use 1 to 64 letters, digits, '_' and '-', "
                         "starting with a letter or digit (--id COURSE)")
    return course_id


def _check_folder(folder: Path, kit: Path) -> None:
    where, root = folder.resolve(), kit.resolve()
    if where == root or root in where.parents or where in root.parents:
        raise InputError(f"{folder} is the kit's folder, inside it or around it: write the "
                         "course outside the kit")
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise InputError(f"{folder} is not a folder")
    if folder.is_dir() and any(folder.iterdir()):
        raise InputError(f"{folder} is not empty: a new course goes into a new or empty folder")


def write_course(folder: Path, course_id: str, kit: Path) -> List[Path]:
    """Write the course folder; the files written."""
    from labtools.teach.notebook_files import course_config

    solutions = sorted((kit / "solutions").glob("[0-9][0-9]-*.ipynb"))
    if not solutions:
        raise InputError(f"{kit / 'solutions'} holds no lab: the course is made from the "
                         "whole kit's checkout")
    _check_folder(folder, kit)
    source = folder / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    written = [folder / "nbgrader_config.py", folder / "labtools-variants.csv"]
    written[0].write_text(course_config(course_id), encoding="utf-8")
    written[1].write_text(VARIANTS_HEADER, encoding="utf-8")
    for notebook in solutions:
        shutil.copyfile(notebook, source / notebook.name)
        written.append(source / notebook.name)
    return written


def run_new(args: argparse.Namespace) -> int:
    """Write the course; print what was written and what comes next; 0."""
    from labtools.paths import checkout_root

    options.instructors_only("course new")
    kit = checkout_root()
    if kit is None:
        raise InputError("labtools course new needs the kit's source folder (its solutions/): "
                         "run it from a checkout of the kit, installed with pip install -e")
    course_id = check_course_id(args.course_id or args.folder.resolve().name)
    written = write_course(args.folder, course_id, kit)
    labs = len(written) - 2
    print(f"course {course_id!r} in {args.folder}: nbgrader_config.py, labtools-variants.csv, "
          f"source/{ASSIGNMENT}/ ({labs} labs)")
    print(f"next, in {args.folder}: nbgrader generate_assignment {ASSIGNMENT} --create "
          "(the student notebooks in release/); then docs/instructors.md, \"Releasing, "
          "grading and feedback with nbgrader\"")
    return 0
