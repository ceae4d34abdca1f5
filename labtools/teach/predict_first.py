"""Predict, then measure, on record: the notebooks' compute-it-first checks keep every
answer with its time, and say whether each prediction came before its measurement.

In a running lab, :func:`checked_answers` grades the answers on the lab's topology, saves
each one in the lab's results store (:class:`labtools.results.predictions.Prediction`),
and adds two columns: ``on_record`` (a right answer was recorded before the quantity was
first measured in this notebook, or it is not measured yet) and ``record`` (why, in one
line; :mod:`labtools.judge.prediction_order`). While nbgrader grades, the lab replays the
student's results file: nothing is saved, and the columns come from what the student
recorded, so a prediction is credited only when it was on record before the measurement.

An expected value a student may not see yet (graded work) appears in the table once the
answer is right or the quantity has been measured; a wrong answer's number stays hidden
until then, so checking cannot be used to read it.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Union

from labtools import settings
from labtools.judge.exercises import grade
from labtools.judge.prediction_order import MeasuredCall, first_measured, judge_record
from labtools.lab.replay import ReplaySession
from labtools.lab.session import LabSession
from labtools.results.columns import decode_json, decode_time
from labtools.results.predictions import Prediction
from labtools.results.store import ResultStore
from labtools.teach.modes import show_answers

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: the columns :func:`checked_answers` adds to the grade table
RECORD_COLUMNS = ["on_record", "record"]


def measured_calls(store: ResultStore, case: str) -> List[MeasuredCall]:
    """The probe calls of notebook ``case`` saved in ``store``, with their start times."""
    calls = []
    for row in store.query('SELECT call_json, started_at, id FROM runs WHERE "case" = ? '
                           "AND call_json IS NOT NULL ORDER BY id", (case,)):
        where = f"{store.path}: runs row {row['id']}"
        call = decode_json(row["call_json"], f"{where}: call_json")
        if isinstance(call.get("args"), dict):
            calls.append(MeasuredCall(str(call.get("probe", "")), call["args"],
                                      decode_time(row["started_at"], f"{where}: started_at")))
    return calls


def _store(lab: Union[LabSession, ReplaySession]) -> Optional[ResultStore]:
    if isinstance(lab, LabSession):
        lab.open_store()
    return getattr(lab, "store", None)


def _number(answer: Any) -> Optional[float]:
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return None
    return float(answer) if math.isfinite(answer) else None


def checked_answers(lab: Union[LabSession, ReplaySession],
                    answers: Mapping[str, Any]) -> "pd.DataFrame":
    """Grade ``{question id: answer}`` on the lab's topology, keep the answers on record (a
    running lab) and judge the order of prediction and measurement (module docstring)."""
    store = _store(lab)
    calls = measured_calls(store, lab.case) if store is not None else []
    measured = [q for q in answers if first_measured(q, calls) is not None]
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
    kept: Dict[str, List] = {}
    for p in store.predictions(case=lab.case):
        kept.setdefault(p.question, []).append(
            (decode_time(p.recorded_at, f"{store.path}: prediction {p.id}"), p.correct))
    judged = [judge_record(str(q), kept.get(str(q), []), calls) for q in table["question"]]
    table["on_record"] = [j.on_record for j in judged]
    table["record"] = [j.reason for j in judged]
    return table


def assert_predicted_first(feedback: "pd.DataFrame") -> None:
    """Fail with one line unless every prediction in ``feedback`` (a table of
    :func:`checked_answers`) was on record before its measurement."""
    late = feedback[~feedback["on_record"].astype(bool)]
    if len(late):
        more = f" (and {len(late) - 1} more)" if len(late) > 1 else ""
        raise AssertionError(f"{late['record'].iloc[0]}{more}")
