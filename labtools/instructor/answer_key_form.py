"""The form of a written question's answer key: :class:`QuestionKey` and its rubric's
:class:`Conclusion`, and how a key writes its numbers.

A key holds the values the question gives (``given``: rates, delays, queue limits of the
student's links, from :data:`labtools.judge.question_givens.QUESTION_GIVENS`), the numbers
a full answer computes from them (``values``), the answer in words with those numbers, and
every yes/no conclusion of the rubric with its condition, as it holds for this network; a
conclusion that compares two numbers knows how far this network sits from its boundary and
whether a run of the lab can decide it (``borderline``). The keys themselves:
:mod:`labtools.instructor.answer_key_questions` (labs 00-03) and
:mod:`labtools.instructor.answer_key_sharing` (labs 04-06). Units are in the names; pure
Python.

The keys are the instructor's: where expected values are hidden (a student's lab, a
course: :attr:`labtools.settings.Settings.answers_hidden`) no :class:`QuestionKey` is made;
each refuses with :data:`ANSWER_KEY_REFUSAL`, as :func:`labtools.judge.exercises.solve`
does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from labtools import settings
from labtools.errors import InputError
from labtools.judge.question_givens import givens
from labtools.model.topology import Link, Topology

__all__ = ["ANSWER_KEY_REFUSAL", "BORDERLINE_NOTE", "Conclusion", "QuestionKey", "compared",
           "apart", "bytes_text", "link_mbps", "mbps_text", "ms_text", "worded_key"]

#: why no answer key is made where expected values are hidden
ANSWER_KEY_REFUSAL = ("the answer keys are for instructors: not available in a student's "
                      "lab or on a course (the expected values are what the labs ask you "
                      "to compute)")


@dataclass(frozen=True)
class Conclusion:
    """A yes/no statement of a rubric: ``holds`` for this network, by ``condition``.

    Attributes:
        margin_rel: how far this network sits from the condition's boundary, a signed
            fraction (``value / threshold - 1``); None where the conclusion follows from
            the network's shape, not from a comparison of numbers.
        resolution_rel: what a run of the lab resolves on that comparison, a fraction
            (:mod:`labtools.judge.policy`, "Graded conclusions").
    """

    name: str
    holds: bool
    condition: str
    margin_rel: Optional[float] = None
    resolution_rel: Optional[float] = None

    @property
    def borderline(self) -> bool:
        """True when the network is closer to the boundary than a run resolves: the
        student's measurement cannot decide the conclusion."""
        return (self.margin_rel is not None and self.resolution_rel is not None
                and abs(self.margin_rel) < self.resolution_rel)

    def as_dict(self) -> Dict[str, Any]:
        """JSON form; ``margin`` and ``resolution`` (fractions) where they apply."""
        out: Dict[str, Any] = {"name": self.name, "holds": self.holds,
                               "condition": self.condition, "borderline": self.borderline}
        if self.margin_rel is not None:
            out["margin"] = _rounded(self.margin_rel)
            out["resolution"] = _rounded(self.resolution_rel)
        return out


def compared(name: str, condition: str, value: float, threshold: float,
             resolution_rel: float, above: bool = False) -> Conclusion:
    """The conclusion "``value`` is below ``threshold``" (``above``: above it), with its
    margin (``value / threshold - 1``) and the resolution a run has on it."""
    holds = value > threshold if above else value < threshold
    return Conclusion(name, holds, condition, value / threshold - 1, resolution_rel)


#: what the key says of a question with a borderline conclusion
BORDERLINE_NOTE = ("Borderline on this network: {which} {margin:.1f} % from its boundary, "
                   "within the {resolution:.1f} % a run of this lab resolves there; either "
                   "answer with the student's arithmetic shown earns the point.")


@dataclass(frozen=True)
class QuestionKey:
    """One written question answered for one network.

    Attributes:
        question_id: as the notebook shows it, ``02-Q3`` (lab 02, **Q3.**).
        given: the values the question gives (the student's links), units in the names.
        values: what a full answer computes from them, units in the names.
        answer: the full answer in words, with this network's numbers.
        conclusions: the rubric's yes/no statements as they hold here.
        yes: for a yes/no question, its answer (None for other questions).

    Raises:
        InputError: :data:`ANSWER_KEY_REFUSAL` where expected values are hidden (a
            student's lab, a course).
    """

    question_id: str
    given: Dict[str, Any]
    values: Dict[str, float] = field(default_factory=dict)
    answer: str = ""
    conclusions: Tuple[Conclusion, ...] = ()
    yes: Optional[bool] = None

    def __post_init__(self) -> None:
        if settings.current().answers_hidden:
            raise InputError(ANSWER_KEY_REFUSAL)

    @property
    def borderline(self) -> bool:
        """True when any of the rubric's conclusions is borderline on this network."""
        return any(c.borderline for c in self.conclusions)

    @property
    def borderline_notes(self) -> Tuple[str, ...]:
        """:data:`BORDERLINE_NOTE` for each borderline conclusion, in words."""
        return tuple(BORDERLINE_NOTE.format(which=f"“{c.name}” is",
                                            margin=100 * abs(c.margin_rel or 0),
                                            resolution=100 * (c.resolution_rel or 0))
                     for c in self.conclusions if c.borderline)

    @property
    def full_answer(self) -> str:
        """The answer, followed by its :attr:`borderline_notes`."""
        return " ".join([self.answer, *self.borderline_notes])

    def as_dict(self) -> Dict[str, Any]:
        """JSON form: numbers rounded to 4 decimals; ``yes`` only for a yes/no question;
        ``borderline`` where the student's run cannot decide a conclusion."""
        out: Dict[str, Any] = {
            "question": self.question_id,
            "given": {k: _rounded(v) for k, v in self.given.items()},
            "values": {k: _rounded(v) for k, v in self.values.items()},
            "answer": self.full_answer,
            "borderline": self.borderline,
            "conclusions": [c.as_dict() for c in self.conclusions],
        }
        if self.yes is not None:
            out["yes"] = self.yes
        return out


def _rounded(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


def mbps_text(value: float) -> str:
    """A rate of ``value`` Mbit/s in words, to one decimal: ``"12.5 Mbit/s"``."""
    return f"{value:.1f} Mbit/s"


def ms_text(value: float) -> str:
    """A time of ``value`` ms in words, to one decimal: ``"60.0 ms"``."""
    return f"{value:.1f} ms"


def apart(first: float, second: float, least: int = 0) -> Tuple[str, str]:
    """``first`` and ``second`` rounded to as few decimals (``least`` to 3) as keep them
    apart, so two numbers a conclusion compares never print equal when they are not."""
    shown = (f"{first:.{least}f}", f"{second:.{least}f}")
    for digits in range(least, 4):
        shown = (f"{first:.{digits}f}", f"{second:.{digits}f}")
        if shown[0] != shown[1]:
            break
    return shown


def bytes_text(value: float) -> str:
    """A size of ``value`` bytes in words, whole, thousands apart: ``"125 000 bytes"``."""
    return f"{round(value):,}".replace(",", " ") + " bytes"


def link_mbps(link: Link) -> float:
    """The rate ``link`` is shaped to, Mbit/s; 0.0 for a link without a rate limit."""
    return float(link.bw_mbps or 0.0)


def worded_key(question_id: str, topo: Topology, text: str) -> QuestionKey:
    """The key of a question whose answer, ``text``, takes no number of the network."""
    return QuestionKey(question_id, givens(question_id, topo), answer=text)
