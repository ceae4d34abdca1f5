"""Whose lab this is: a student's or an instructor's (``LABTOOLS_MODE``), and self-study.

The student's lab launchers (``make lab``, the lab VM's service) set
``LABTOOLS_MODE=student``; unset, or ``instructor``, is the instructor's lab (demonstrations,
grading, CI). In a student's lab the kit does not hand out the values the labs' graded
questions ask for: ``lab.expected()``, ``exercises.solve()`` and ``labtools expect`` refuse
with :data:`STUDENT_MODE_REFUSAL`. ``LABTOOLS_SHOW_ANSWERS=1`` (self-study with the full
kit) shows them anyway, except on a course (:func:`on_course`: the student edition, a hub
student's server, the student image), where it does nothing and the kit says so once
(:func:`note_ignored_answers`).

Both are settings of :mod:`labtools.settings` (no imports beyond the standard library: the
command line reads this before anything else).
"""

from __future__ import annotations

import sys
from typing import List

from labtools import settings

MODE_VARIABLE = "LABTOOLS_MODE"
SHOW_ANSWERS_VARIABLE = "LABTOOLS_SHOW_ANSWERS"
#: the modes ``LABTOOLS_MODE`` takes; unset is the instructor's
MODES = settings.MODES
#: why a student's lab does not give expected values away
STUDENT_MODE_REFUSAL = ("the expected values are what the labs ask you to compute "
                        "(LABTOOLS_MODE=student); a measurement's verdicts show them once "
                        "you have measured")
#: said once when ``LABTOOLS_SHOW_ANSWERS=1`` is set on a course
SHOW_ANSWERS_IGNORED = settings.SHOW_ANSWERS_IGNORED
_noted: List[bool] = []


def student_mode() -> bool:
    """True in a student's lab (``LABTOOLS_MODE=student``); unset or ``instructor``: the
    instructor's. Another value is an :class:`~labtools.errors.InputError`."""
    return settings.current().student_mode


def show_answers() -> bool:
    """True in self-study mode (``LABTOOLS_SHOW_ANSWERS=1``, not on a course): expected
    values are shown."""
    chosen = settings.current()
    return chosen.show_answers and not chosen.on_course


def on_course() -> bool:
    """True on a course: the student edition, or student mode on a hub student's server
    or in the student image (``LABTOOLS_ON_COURSE=1``)."""
    return settings.current().on_course


def answers_hidden(note: bool = True) -> bool:
    """True when expected values must not be handed out: on a course, and in student mode
    unless self-study (``LABTOOLS_SHOW_ANSWERS=1``) asks for them. When self-study is asked
    for on a course, says once (:func:`note_ignored_answers`) that it does nothing, unless
    ``note`` is False (a refusal that says it in its own line)."""
    chosen = settings.current()
    if note and chosen.show_answers_ignored:
        note_ignored_answers()
    return chosen.answers_hidden


def note_ignored_answers() -> None:
    """Print :data:`SHOW_ANSWERS_IGNORED` on standard error, once in this process."""
    if not _noted:
        _noted.append(True)
        print(f"note: {SHOW_ANSWERS_IGNORED}", file=sys.stderr)
