"""Which checked answers on record earn anything: the record is read again, never trusted.

The results file keeps each compute-it-first answer a student checked
(:mod:`labtools.results.predictions`): its row id, question, number, time and the verdict
it got then. The file is the student's own, so grading believes none of what it says about
itself (:func:`vet_answers`):

- the verdict: every answer is checked again, its number against the value the kit
  computes for the question on the student's own network, with the notebook's tolerance
  (:func:`labtools.judge.exercises.check`); a stored "right" on a wrong number earns
  nothing, with one line that says so;
- the time: the kit writes it as it saves the row (the store stamps it, in the order of
  the row ids), so a row dated before a row saved ahead of it (a smaller id) was dated
  back, and a row dated before the results file was made cannot be; either earns nothing,
  with one line.

Off a course the file can still be rewritten whole, consistently: there the order is on the
honour system (``docs/students.md``). Pure: the caller passes the rows it read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Dict, List, Optional, Sequence, Tuple

from labtools.errors import InputError
from labtools.judge.exercises import check, parse_question_id
from labtools.model.topology import Topology


@dataclass(frozen=True)
class KeptAnswer:
    """One checked answer as the results file keeps it: its row ``id``, the question's id,
    the number given (None: not a number), when it was recorded (aware UTC) and whether
    the file says it was right (``claimed_right``: read, never believed); ``case`` the
    notebook it was checked in."""

    id: int
    question: str
    answer: Optional[float]
    recorded_at: datetime
    claimed_right: bool = False
    case: str = ""


@dataclass
class Vetted:
    """One question's answers after vetting: ``answers`` (time, right on the student's
    network) of the rows that may count, ``refused`` the one-line reasons of those that
    earn nothing (in row order)."""

    answers: List[Tuple[datetime, bool]] = field(default_factory=list)
    refused: List[str] = field(default_factory=list)


def right_on(question_id: str, answer: Optional[float], topo: Topology) -> bool:
    """Whether ``answer`` is right for ``question_id`` on ``topo`` (the notebook's check);
    an answer that is not a number, or a question the kit does not know, is not."""
    if answer is None:
        return False
    try:
        name, kw = parse_question_id(question_id)
        return check(name, answer, topo, **kw).correct
    except InputError:
        return False


def _clock(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def _dating(row: KeptAnswer, ahead: Optional[KeptAnswer],
            created_at: Optional[datetime]) -> str:
    """Why the time of ``row`` cannot be its own ('' when it can); ``ahead`` is the latest
    dated row saved before it."""
    if created_at is not None and row.recorded_at < created_at:
        return (f"{row.question}: the answer on record (predictions row {row.id}) is dated "
                f"{_clock(row.recorded_at)}, before the results file was made "
                f"({_clock(created_at)}): a time the kit did not write earns nothing")
    if ahead is not None and row.recorded_at < ahead.recorded_at:
        return (f"{row.question}: the answer on record (predictions row {row.id}) is dated "
                f"{_clock(row.recorded_at)}, before row {ahead.id} saved ahead of it "
                f"({_clock(ahead.recorded_at)}): a back-dated record earns nothing")
    return ""


def vet_answers(rows: Sequence[KeptAnswer], topo: Topology, case: str,
                created_at: Optional[datetime] = None) -> Dict[str, Vetted]:
    """The answers checked in notebook ``case``, by question, vetted as the module
    docstring says. ``rows`` are all the file's rows, whatever their notebook (the order is
    the file's); ``topo`` is the student's own network; ``created_at`` when the results file
    was made (None: not recorded, as in a file written before the kit kept it)."""
    vetted: Dict[str, Vetted] = {}
    ahead: Optional[KeptAnswer] = None
    for row in sorted(rows, key=lambda r: r.id):
        dating = _dating(row, ahead, created_at)
        if ahead is None or row.recorded_at > ahead.recorded_at:
            ahead = row
        if row.case != case:
            continue
        mine = vetted.setdefault(row.question, Vetted())
        if dating:
            mine.refused.append(dating)
            continue
        right = right_on(row.question, row.answer, topo)
        mine.answers.append((row.recorded_at, right))
        if row.claimed_right and not right:
            mine.refused.append(_claimed_wrongly(row))
    return vetted


def _claimed_wrongly(row: KeptAnswer) -> str:
    """The line for a row the file says was right whose number is not right on the
    student's network."""
    said = "no number" if row.answer is None else f"{row.answer:.10g}"
    return (f"{row.question}: the answer on record at {_clock(row.recorded_at)} ({said}) is "
            "not right on your network, whatever the results file says: it earns nothing")
