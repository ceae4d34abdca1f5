"""``labtools answer-key``: each written question answered for a student's own network.

    labtools answer-key STUDENT... [--lab NN] [--json] [--html DIR] [--course DIR]
    labtools answer-key --all --html DIR

With submissions in the course (``submitted/``, else ``autograded/``), each lab's key is on
the network the student measured (their rate scale, ``LABTOOLS_RATE_SCALE``) and shows their
own measured values of the lab beside the model's (``"measured"`` in ``--json``):
:mod:`labtools.instructor.measured_keys`.

For the instructor and the TAs (refused in a student's lab, ``LABTOOLS_MODE=student``). A
student's network is the variant the course binds them to: ``labtools-variants.csv`` in
the course folder (``--course``, default the current folder), read as grading reads it
(:mod:`labtools.results.ownership`); a student it does not list measures on their id, if
nbgrader knows them (a folder in ``submitted/`` or ``autograded/``). For each question
(``02-Q3``): the values the student's network gives, the full answer with its numbers, and
each yes/no conclusion of the rubric as it holds there; ``--json`` prints a list of the
students' keys (``"yes"``: the answer of a yes/no question; ``"borderline": true`` on a
question, and on each conclusion, where the student's network sits closer to the boundary
than a run resolves: either answer with the arithmetic shown earns the point); ``--html
DIR`` writes one page per student (:func:`labtools.instructor.answer_key_page.key_page_name`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Set

from labtools.commands import options
from labtools.errors import InputError


def add_parser(sub: Any) -> None:
    """Register ``labtools answer-key``."""
    p = sub.add_parser(
        "answer-key", help="the written questions answered for each student's network",
        description="Answer every written question of labs 00-06 for a student's own "
        "network (the variant the course binds them to), for the TA who grades it.")
    p.add_argument("students", nargs="*", metavar="STUDENT", type=options.text,
                   help="nbgrader student ids")
    p.add_argument("--all", action="store_true",
                   help="every student of the course (listed or with a submission)")
    p.add_argument("--lab", metavar="NN", type=options.text, help="one lab only (00..06)")
    options.add_course_folder(p, "the course folder with labtools-variants.csv (default: here)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--html", metavar="DIR", type=options.path,
                   help="write one HTML page per student into DIR")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print (or write) the keys; return 0."""
    from labtools.instructor.measured_keys import SUBMISSION_FOLDERS, measured_keys, measured_labs
    from labtools.results import ownership

    options.instructors_only("answer-key")
    if bool(args.students) == bool(args.all):
        raise InputError("give STUDENT ids or --all (one of them)")
    listed = args.course / ownership.VARIANTS_FILE
    if not listed.is_file():
        raise InputError(f"no {ownership.VARIANTS_FILE} in {args.course}: give the course "
                         "folder with --course")
    variants = ownership.read_variant_list(listed)
    known = set(variants) | _submitters(args.course)
    students = sorted(known) if args.all else list(dict.fromkeys(args.students))
    for student in students:
        if student not in known:
            raise InputError(f"unknown student {student!r}: not listed in {listed} and no "
                             f"folder of theirs in {args.course}'s "
                             f"{' or '.join(f + '/' for f in SUBMISSION_FOLDERS)}")
    if args.lab is not None:
        from labtools.instructor.answer_keys import lab_number
        args.lab = lab_number(args.lab)
    submitted = measured_labs(args.course, students, listed)
    found = []
    for student in students:
        binding = ownership.bind(student, variants)
        measured = {lab: m for lab, m in submitted.get(student, {}).items()
                    if args.lab in (None, lab)}
        found.append((binding, measured_keys(binding.variant, args.lab, measured), measured))
    if args.html is not None:
        _write_pages(args.html, found)
    elif args.json:
        print(json.dumps([_as_json(*f) for f in found], indent=2))
    else:
        for binding, keys, measured in found:
            print(_as_text(binding, keys, measured))
    return 0


def _submitters(course: Path) -> Set[str]:
    names: Set[str] = set()
    from labtools.instructor.measured_keys import SUBMISSION_FOLDERS

    for folder in SUBMISSION_FOLDERS:
        place = course / folder
        if place.is_dir():
            names |= {p.name for p in place.iterdir() if p.is_dir()}
    return names


def _as_json(binding: Any, keys: List[Any], measured: Dict[str, Any]) -> Dict[str, Any]:
    return {"student": binding.student, "variant": binding.variant, "source": binding.source,
            "questions": [k.as_dict() for k in keys],
            "measured": [m.as_dict() for _lab, m in sorted(measured.items())]}


def _measured_lines(measured: Any) -> List[str]:
    """What the student measured in one lab, as the key's text shows it."""
    from labtools.instructor.answer_key_page import measured_rows

    scale = "" if measured.rate_scale == 1 else f", every rate × {measured.rate_scale:g}"
    lines = [f"\nLab {measured.lab}: what the student measured ({measured.case}{scale})"]
    return lines + [f"  {row}" for row in measured_rows(measured)]


def _as_text(binding: Any, keys: List[Any], measured: Dict[str, Any]) -> str:
    from labtools.teach.question_values import format_values

    lines = [f"# {binding.describe()}"]
    shown = set()
    for key in keys:
        lab = key.question_id[:2]
        if lab in measured and lab not in shown:  # before the lab's first question
            shown.add(lab)
            lines += _measured_lines(measured[lab])
        answer = "" if key.yes is None else f" (yes/no: {'yes' if key.yes else 'no'})"
        edge = " BORDERLINE: either answer" if key.borderline else ""
        lines.append(f"\n{key.question_id}{answer}{edge}")
        if key.given:
            lines += [f"  {line}" for line in format_values(key.given).splitlines()]
        lines.append(f"  {key.full_answer}")
        lines += [f"  [{'yes' if c.holds else 'no'}{', borderline' if c.borderline else ''}] "
                  f"{c.name} ({c.condition})" for c in key.conclusions]
    return "\n".join(lines) + "\n"


def _write_pages(folder: Path, found: List[Any]) -> None:
    from labtools.instructor.answer_key_page import write_page

    for binding, keys, measured in found:
        write_page(folder, binding.student, binding.describe(), keys, measured)
    print(f"{len(found)} answer key page(s) written into {folder}")
