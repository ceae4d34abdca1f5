"""Predict, then measure, on record: the notebooks' compute-it-first checks keep every
answer with its time, and say whether each prediction came before its measurement.

In a running lab, :func:`checked_answers` grades the answers on the lab's topology, saves
each one in the lab's results store (:class:`labtools.results.predictions.Prediction`),
and adds two columns: ``on_record`` (a right answer was recorded before the quantity was
first measured, or it is not measured yet) and ``record`` (why, in one line;
:mod:`labtools.judge.prediction_order`). While nbgrader grades, the lab replays the
student's results file: nothing is saved, and the columns come from what the student
recorded, so a prediction is credited only when it was on record before the measurement.

Nothing the file says about itself is taken on trust: each answer on record is checked
again on the lab's network (the student's own, when grading), whatever verdict was stored,
and a row dated before the file was made or before a row saved ahead of it earns nothing
(:mod:`labtools.judge.answer_record`). A measurement counts whatever made it
(:func:`every_measurement`): a probe call of any notebook, ``run_on``, ``labtools shell``.
On a course hub the answers and measurements are also on the course's record, kept by the
hub under the student's hub name at its own time (:mod:`labtools.results.course_record`);
when grading finds it (:class:`labtools.results.course_record_file.GradingRecord`), the
answers and their times come from it, never from the results file, and its measurements
count beside the file's; a replayed notebook reads it once for all its checks
(:attr:`labtools.lab.replay.ReplaySession.course_record`). Off a course the file is the
student's own and can still be rewritten whole: the order is on the honour system there
(``docs/students.md``).

An expected value a student may not see yet (graded work) appears in the table once the
answer is right or the quantity has been measured; a wrong answer's number stays hidden
until then, so checking cannot be used to read it.

What the student reads is :class:`AnswerFeedback`: the same table, shown as whole
sentences (:func:`feedback_lines`), one per answer: what was asked, the answer, right or
not and why, and whether a right one is on record before its measurement.
"""

from __future__ import annotations

import html
import math
import numbers
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional, Union

import pandas as pd

from labtools import settings
from labtools.judge.answer_record import KeptAnswer, Vetted, vet_answers
from labtools.judge.exercises import NO_ANSWER, grade, question_text
from labtools.judge.prediction_order import MeasuredCall, first_measured, judge_record
from labtools.judge.question_givens import LAB_CASES
from labtools.judge.typed_commands import node_addresses, typed_calls
from labtools.lab.replay import ReplaySession
from labtools.lab.session import LabSession
from labtools.model.topology import Topology
from labtools.results.columns import decode_json, decode_time
from labtools.results.course_record_file import kept_answers, recorded_calls
from labtools.results.predictions import Prediction
from labtools.results.store import ResultStore
from labtools.teach.modes import show_answers

#: the columns :func:`checked_answers` adds to the grade table
RECORD_COLUMNS = ["on_record", "record"]


def measured_calls(store: ResultStore, case: str) -> List[MeasuredCall]:
    """The probe calls of notebook ``case`` saved in ``store``, with their start times."""
    calls = []
    for row in store.call_times(case):
        where = f"{store.path}: runs row {row['id']}"
        call = decode_json(row["call_json"], f"{where}: call_json")
        if isinstance(call.get("args"), dict):
            calls.append(MeasuredCall(str(call.get("probe", "")), call["args"],
                                      decode_time(row["started_at"], f"{where}: started_at")))
    return calls


def _on(topology: str, topo: Topology) -> bool:
    """Whether a record saved on ``topology`` (a name or a spec; '' unknown) was made on a
    network of ``topo``'s name (its node names and addresses mean the same)."""
    return not topology or topology.split(",")[0].strip() == topo.name


def _began(store: ResultStore, case: str) -> Optional[datetime]:
    """When notebook ``case`` first left a record in ``store`` (a run, a checked answer,
    a command typed on a node); None when it left none."""
    times = [decode_time(row["started_at"], f"{store.path}: runs row {row['id']}")
             for row in store.call_times(case)]
    times += [decode_time(p.recorded_at, f"{store.path}: predictions row {p.id}")
              for p in store.predictions(case=case)]
    times += [decode_time(t.started_at, f"{store.path}: shell_transcripts row {t.id}")
              for t in store.transcripts(case=case)]
    return min(times) if times else None


def every_measurement(store: ResultStore, case: str, topo: Topology) -> List[MeasuredCall]:
    """Every measurement of ``topo``'s network in ``store`` that a prediction of notebook
    ``case`` must come before, whatever made it: the probe calls of any notebook (or of a
    lab opened under any other case) and the commands typed on its nodes (``run_on``,
    ``labtools shell``; :mod:`labtools.judge.typed_commands`). Left out: what another lab
    of the course (:data:`~labtools.judge.question_givens.LAB_CASES`) measured before this
    notebook left its first record, which is that lab's work done earlier in the course
    (a later lab may ask a quantity again)."""
    began, labs = _began(store, case), set(LAB_CASES.values())

    def earlier_lab(other: str, when: datetime) -> bool:
        return other != case and other in labs and began is not None and when < began

    calls = []
    for row in store.every_call_time():
        where = f"{store.path}: runs row {row['id']}"
        call = decode_json(row["call_json"], f"{where}: call_json")
        when = decode_time(row["started_at"], f"{where}: started_at")
        other = str(row["case"] or "")
        if (isinstance(call.get("args"), dict) and _on(str(row["topology"] or ""), topo)
                and not earlier_lab(other, when)):
            source = "" if other == case else f"in notebook {other or '(none)'}"
            calls.append(MeasuredCall(str(call.get("probe", "")), call["args"], when, source))
    nodes = node_addresses(topo)
    for kept in store.transcripts():
        when = decode_time(kept.started_at, f"{store.path}: shell_transcripts row {kept.id}")
        if not _on(kept.topology, topo) or earlier_lab(kept.case, when):
            continue
        how = "run_on" if kept.ended_by == "run_on" else "labtools shell"
        source = f"{how} on {kept.node}" + (f" in notebook {kept.case}" if kept.case else "")
        for command in kept.commands:
            calls += typed_calls(kept.node, command.command, when, nodes, source)
    return calls


def _vetted(store: ResultStore, topo: Topology, case: str) -> Dict[str, Vetted]:
    """The answers checked in notebook ``case``, read again against the whole file and
    ``topo`` (:mod:`labtools.judge.answer_record`)."""
    rows = [KeptAnswer(int(p.id or 0), p.question, p.answer,
                       decode_time(p.recorded_at, f"{store.path}: predictions row {p.id}"),
                       p.correct, p.case) for p in store.predictions()]
    created = store.created_at()
    made = decode_time(created, f"{store.path}: store_created") if created else None
    return vet_answers(rows, topo, case, made)


def _store(lab: Union[LabSession, ReplaySession]) -> Optional[ResultStore]:
    if isinstance(lab, LabSession):
        lab.open_store()
    return getattr(lab, "store", None)


def _number(answer: Any) -> Optional[float]:
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return None
    return float(answer) if math.isfinite(answer) else None


def checked_answers(lab: Union[LabSession, ReplaySession],
                    answers: Mapping[str, Any]) -> pd.DataFrame:
    """Grade ``{question id: answer}`` on the lab's topology, keep the answers on record (a
    running lab) and judge the order of prediction and measurement (module docstring)."""
    store = _store(lab)
    own = measured_calls(store, lab.case) if store is not None else []
    measured = [q for q in answers if first_measured(q, own) is not None]
    table = grade(answers, lab.topo, measured)
    if not show_answers():  # graded work: a wrong answer's number waits for its measurement
        secret = ~(table["correct"].astype(bool) | table["question"].isin(measured))
        table["expected"] = table["expected"].where(~secret, math.nan)
    if store is not None and not lab.replaying:

        store.save_predictions([
            Prediction(question=str(row["question"]), answer=_number(row["answer"]),
                       correct=bool(row["correct"]), case=lab.case,
                       session_id=str(getattr(lab, "session_id", "")),
                       topology=lab.topo.name, student=settings.current().student)
            for row in table.to_dict("records")])
    problem = str(getattr(lab, "problem", "") or "")
    if store is None or problem:
        reason = problem or "this lab keeps no results file: nothing is on record"
        table["on_record"], table["record"] = False, reason
        return table
    record = lab.course_record.read() if isinstance(lab, ReplaySession) else None
    kept = (_vetted(store, lab.topo, lab.case) if record is None
            else vet_answers(kept_answers(record), lab.topo, lab.case))
    calls = every_measurement(store, lab.case, lab.topo)
    if record is not None:  # the hub's: answers and their times; its measurements too
        calls += recorded_calls(record, lab.case, lab.topo)
    judged = [judge_record(str(q), kept.get(str(q), Vetted()).answers, calls,
                           kept.get(str(q), Vetted()).refused) for q in table["question"]]
    table["on_record"] = [j.on_record for j in judged]
    table["record"] = [j.reason for j in judged]
    return table


def assert_predicted_first(feedback: pd.DataFrame) -> None:
    """Fail with one line unless every prediction in ``feedback`` (a table of
    :func:`checked_answers`) was on record before its measurement."""
    late = feedback[~feedback["on_record"].astype(bool)]
    if len(late):
        more = f" (and {len(late) - 1} more)" if len(late) > 1 else ""
        raise AssertionError(f"{late['record'].iloc[0]}{more}")


#: what a wrong answer's message starts with (:func:`labtools.judge.exercises.check`)
_WRONG_PREFIX = "not quite: "


def _shown_value(value: Any) -> str:
    """An answer or a value as the student reads it: a number without trailing zeros."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return repr(value)
    return f"{float(value):.10g}"


def _record_words(question: str, reason: str) -> str:
    """The record's reason without the question id it starts with (the sentence names it)."""
    return reason[len(question) + 2:] if reason.startswith(f"{question}: ") else reason


def _answer_line(row: Mapping[str, Any]) -> str:
    question = str(row["question"])
    asked = question_text(question)
    message = str(row.get("message", "")).strip().rstrip(".")
    if row["answer"] is None or message == NO_ANSWER:  # None, or NaN in a numeric column
        return f"✗ {asked}: {NO_ANSWER}."
    said = f"{asked}: you answered {_shown_value(row['answer'])}"
    if not bool(row["correct"]):
        why = message[len(_WRONG_PREFIX):] if message.startswith(_WRONG_PREFIX) else message
        expected = row.get("expected")
        value = ("" if not isinstance(expected, numbers.Real) or math.isnan(expected)
                 else f" The kit's value: {_shown_value(expected)}.")
        return f"✗ {said}: not right yet: {why}.{value}"
    record = _record_words(question, str(row.get("record", "")))
    if "on_record" not in row or not record:
        return f"✓ {said}: right."
    if bool(row["on_record"]):
        return f"✓ {said}: right; on record as a prediction: {record}."
    return f"✓ {said}: right, but it does not count as a prediction: {record}."


def feedback_lines(table: pd.DataFrame) -> List[str]:
    """The sentences a student reads for a table of :func:`checked_answers` (or of
    :func:`labtools.judge.exercises.grade`): one per answer (what was asked, the answer,
    right or not and the explanation; the kit's value only where the table shows it), then
    how many are right."""
    rows = table.to_dict("records")
    lines = [_answer_line(row) for row in rows]
    right = sum(bool(row["correct"]) for row in rows)
    lines.append(f"All {len(rows)} answers are right." if right == len(rows) > 1 else
                 "The answer is right." if right == len(rows) == 1 else
                 f"{right} of {len(rows)} answers right: read the sentences above.")
    return lines


class AnswerFeedback(pd.DataFrame):
    """The table of :func:`checked_answers`, shown in a notebook as whole sentences
    (:func:`feedback_lines`) instead of columns a student would have to widen; it is the
    same table for the checks (``feedback["correct"].all()``) and for
    :func:`assert_predicted_first`. ``pd.DataFrame(feedback)`` shows the columns."""

    def __repr__(self) -> str:
        return "\n".join(feedback_lines(self))

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in feedback_lines(self))
        return f'<ul style="list-style: none; padding-left: 0">{items}</ul>'
