"""Whose lab this is: a student's or an instructor's (``LABTOOLS_MODE``), and self-study.

The student's lab launchers (``make lab``, the lab VM's service) set
``LABTOOLS_MODE=student``; unset, or ``instructor``, is the instructor's lab (demonstrations,
grading, CI). In a student's lab the kit does not hand out the values the labs' graded
questions ask for: ``lab.expected()`` and ``labtools expect`` refuse with
:data:`STUDENT_MODE_REFUSAL`. ``LABTOOLS_SHOW_ANSWERS=1`` (self-study) shows them anyway.

Both are settings of :mod:`labtools.settings` (no imports beyond the standard library: the
command line reads this before anything else).
"""

from __future__ import annotations

from labtools import settings

MODE_VARIABLE = "LABTOOLS_MODE"
SHOW_ANSWERS_VARIABLE = "LABTOOLS_SHOW_ANSWERS"
#: the modes ``LABTOOLS_MODE`` takes; unset is the instructor's
MODES = settings.MODES
#: why a student's lab does not give expected values away
STUDENT_MODE_REFUSAL = ("the expected values are what the labs ask you to compute "
                        "(LABTOOLS_MODE=student); a measurement's verdicts show them once "
                        "you have measured")


def student_mode() -> bool:
    """True in a student's lab (``LABTOOLS_MODE=student``); unset or ``instructor``: the
    instructor's. Another value is an :class:`~labtools.errors.InputError`."""
    return settings.current().student_mode


def show_answers() -> bool:
    """True in self-study mode (``LABTOOLS_SHOW_ANSWERS=1``): expected values are shown."""
    return settings.current().show_answers


def answers_hidden() -> bool:
    """True when expected values must not be handed out: student mode, unless self-study
    (``LABTOOLS_SHOW_ANSWERS=1``) asks for them."""
    return settings.current().answers_hidden
