"""Predictions on record: each compute-it-first answer a student checks, with its time.

A lab asks for a value before it is measured (an RTT, a ceiling, a fair share). When a
student checks the answers (:func:`labtools.teach.notebook.grade_answers`), each one is
saved in the lab's results store as a :class:`Prediction`: the question's id (as
:mod:`labtools.judge.exercises` names it, ``"rtt_ms h1 h4"``), the number given, whether it
was right, and when. Grading replays the results file and credits a prediction only when a
right one was recorded before the quantity was measured
(:mod:`labtools.judge.prediction_order`). A prediction's time is the kit's, never the
caller's: the store writes ``recorded_at`` as it saves the row, inside the write
transaction, so the times follow the row ids (:meth:`ResultStore.save_predictions
<labtools.results.store.ResultStore.save_predictions>` refuses a record that brings its
own). Grading reads them again and believes neither the time nor the stored verdict
blindly (:mod:`labtools.judge.answer_record`). The store keeps them in the table ``predictions``
(:data:`labtools.results.schema.PREDICTIONS`); only this module turns a record into its
columns and back.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

from labtools.errors import StoreError
from labtools.results.columns import decode_time
from labtools.results.records import utc_now

#: the columns of ``predictions`` a save writes (all but ``id``), in order
PREDICTION_COLUMNS = ("session_id", "case", "topology", "student", "question", "answer",
                      "correct", "recorded_at")


@dataclass
class Prediction:
    """One checked answer to a compute-it-first question.

    ``question`` is the question's id (``"rtt_ms h1 h4"``); ``answer`` the number given (None
    when the answer was not a number), in the question's unit; ``correct`` whether it was
    right on the lab's topology; ``recorded_at`` ISO 8601 UTC, written by the store when it
    saves the record (empty until then; a record read back carries it); ``session_id`` and
    ``case`` the lab's; ``student`` who answered (the JupyterHub user, None elsewhere)."""

    question: str
    answer: Optional[float]
    correct: bool
    case: str = ""
    session_id: str = ""
    topology: str = ""
    student: Optional[str] = None
    recorded_at: str = ""
    id: Optional[int] = None


def check_unsaved(record: Prediction) -> None:
    """Refuse a record that is not a new checked answer: it needs its question's id, and
    its time is the kit's to write (:class:`StoreError` with one line)."""
    if not record.question.strip():
        raise StoreError("a prediction needs its question's id")
    if record.recorded_at or record.id is not None:
        raise StoreError(f"prediction {record.question!r}: its time is written by the kit as "
                         "it is saved; give no recorded_at (or id)")


def prediction_row(record: Prediction, recorded_at: Optional[str] = None) -> Dict[str, Any]:
    """The columns of ``record`` (:data:`PREDICTION_COLUMNS`) saved at ``recorded_at``
    (ISO 8601 UTC; now when not given); a NaN or infinite answer is saved as NULL (SQLite
    has no NaN)."""
    check_unsaved(record)
    row = asdict(record)
    row["recorded_at"] = recorded_at or utc_now()
    answer = record.answer
    row["answer"] = None if answer is None or not math.isfinite(answer) else float(answer)
    row["correct"] = 1 if record.correct else 0
    return {name: row[name] for name in PREDICTION_COLUMNS}


def prediction_record(row: Dict[str, Any], where: str) -> Prediction:
    """The record of a ``predictions`` row; :class:`StoreError` naming ``where`` for a row
    that is not what the kit saves (a time that is not ISO 8601, a verdict not 0 or 1)."""
    if row["correct"] not in (0, 1):
        raise StoreError(f"{where}: correct is {row['correct']!r}, not 0 or 1")
    decode_time(row["recorded_at"], f"{where}: recorded_at")
    try:
        answer = None if row["answer"] is None else float(row["answer"])
    except (TypeError, ValueError):
        raise StoreError(f"{where}: answer {row['answer']!r} is not a number") from None
    return Prediction(
        question=str(row["question"]), answer=answer, correct=bool(row["correct"]),
        case=str(row["case"] or ""), session_id=str(row["session_id"] or ""),
        topology=str(row["topology"] or ""), student=row["student"],
        recorded_at=str(row["recorded_at"]), id=int(row["id"]))
