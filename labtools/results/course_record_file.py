"""The course's record as grading reads it: a student's rows of the hub's record, in a file.

On a course hub every checked answer and every measurement is also kept by a service of
the hub, under the student's hub name and at the hub's time
(:mod:`labtools.results.course_record`, ``deploy/hub/record_service.py``). The instructor
fetches it (``labtools course record``) into the course folder, one file per student:
``COURSE/course-record/STUDENT.json`` (:func:`record_path`; ``{"events": [...]}``, each
event as the service answers it: ``id``, ``user``, ``kind``, ``case``, ``recorded_at``,
``topology``, and an answer's ``question`` and ``answer`` or a measurement's ``call`` or
``node`` and ``commands``).

While nbgrader grades ``COURSE/autograded/STUDENT/ASSIGNMENT``, :func:`grading_record_file`
finds that student's file (``LABTOOLS_COURSE_RECORD`` names another; a replayed notebook
reads it once, through its :class:`GradingRecord`), and the
predict-first check takes the answers and their times from it
(:func:`kept_answers`) and counts its measurements beside the results file's
(:func:`recorded_calls`). The autograde sandbox binds only that file, read-only, into the
kernel. No file: grading reads the results file alone, as off a course (the honour
system there).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from labtools import settings
from labtools.errors import StoreError
from labtools.judge.answer_record import KeptAnswer
from labtools.judge.prediction_order import MeasuredCall
from labtools.judge.question_givens import LAB_CASES
from labtools.judge.typed_commands import node_addresses, typed_calls
from labtools.model.topology import Topology
from labtools.results.columns import decode_time
from labtools.results.ownership import graded_student

#: the course folder's folder of the students' records
RECORD_FOLDER = "course-record"
#: the largest record file read, in bytes
MAX_RECORD_BYTES = 64 << 20


@dataclass
class CourseRecord:
    """One student's rows of the course's record (``path`` the file), in the hub's order."""

    path: Path
    events: List[Dict[str, Any]] = field(default_factory=list)

    def of_kind(self, kind: str) -> List[Dict[str, Any]]:
        """The events of ``kind`` (``answer`` or ``measurement``)."""
        return [e for e in self.events if e.get("kind") == kind]


def record_path(course: Path, student: str) -> Path:
    """Where ``student``'s rows of the course's record are kept in ``course``."""
    if not student or "/" in student or student in (".", ".."):
        raise StoreError(f"{student!r} cannot name a record file")
    return course / RECORD_FOLDER / f"{student}.json"


def write_class_record(events: Iterable[Mapping[str, Any]], course: Path) -> List[Path]:
    """Write each student's events into their file of ``course`` (mode 600, the folder
    700); the files written. Events are kept in the order given (the hub's)."""
    by_user: Dict[str, List[Dict[str, Any]]] = {}
    for event in events:
        by_user.setdefault(str(event.get("user", "")), []).append(dict(event))
    folder = course / RECORD_FOLDER
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        written = []
        for user, rows in sorted(by_user.items()):
            path = record_path(course, user)
            part = path.with_suffix(".part")
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"events": rows}, out, indent=1)
            os.replace(part, path)
            written.append(path)
    except OSError as err:
        raise StoreError(f"cannot write the course's record into {folder}: "
                         f"{err.strerror}") from None
    return written


def read_record(path: Path) -> CourseRecord:
    """The record file at ``path``; :class:`StoreError` (naming the file) when it is not
    one (unreadable, not JSON, an event without a hub time)."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(MAX_RECORD_BYTES + 1) or b"{}")
    except OSError as err:
        raise StoreError(f"cannot read the course's record {path}: {err.strerror}") from None
    except ValueError:
        raise StoreError(f"{path} is not a course record (not JSON)") from None
    events = data.get("events") if isinstance(data, dict) else None
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise StoreError(f"{path} is not a course record (no list of events)")
    for event in events:
        decode_time(event.get("recorded_at"), f"{path}: event {event.get('id')}: recorded_at")
    return CourseRecord(path, sorted(events, key=lambda e: int(e.get("id") or 0)))


def grading_record_file(folder: Optional[Path] = None) -> Optional[Path]:
    """The course's record file of the submission graded in ``folder`` (default: here),
    without reading it: ``LABTOOLS_COURSE_RECORD``'s file, else
    ``COURSE/course-record/STUDENT.json`` when ``folder`` is
    ``COURSE/autograded/STUDENT/ASSIGNMENT`` and the file exists; None otherwise."""
    chosen = settings.current().course_record
    if chosen is not None:
        return chosen
    found = graded_student(folder or Path.cwd())
    if found is None:
        return None
    student, course = found
    path = record_path(course, student)
    return path if path.is_file() else None


class GradingRecord:
    """The course's record for the grading of one notebook (the file
    :func:`grading_record_file` finds): :meth:`read` reads the file
    once and gives the same rows again while the file to read is the same one, unchanged
    (its path, size in bytes and time of change, ns). One per replayed notebook
    (:class:`labtools.lab.replay.ReplaySession` makes it), so nothing read for one
    student's submission is kept for another's."""

    def __init__(self, folder: Optional[Path] = None) -> None:
        self._folder = folder
        self._read: Optional[Tuple[Tuple[Path, int, int], CourseRecord]] = None

    def read(self) -> Optional[CourseRecord]:
        """The course's record (None when there is none); read from the file only when it
        is not the one read last, or changed."""
        path = grading_record_file(self._folder)
        if path is None:
            return None
        try:
            stat = path.stat()
        except OSError:
            return read_record(path)  # not there: the StoreError naming the file
        key = (path, stat.st_mtime_ns, stat.st_size)
        if self._read is None or self._read[0] != key:
            self._read = (key, read_record(path))
        return self._read[1]


def _when(record: CourseRecord, event: Mapping[str, Any]) -> datetime:
    return decode_time(event["recorded_at"], f"{record.path}: event {event.get('id')}")


def kept_answers(record: CourseRecord) -> List[KeptAnswer]:
    """The checked answers on the record, at the hub's time, for
    :func:`labtools.judge.answer_record.vet_answers` (no verdict: each is checked again)."""
    kept = []
    for event in record.of_kind("answer"):
        answer = event.get("answer")
        number = (float(answer) if isinstance(answer, (int, float))
                  and not isinstance(answer, bool) else None)
        kept.append(KeptAnswer(int(event.get("id") or 0), str(event.get("question", "")),
                               number, _when(record, event), False,
                               str(event.get("case") or "")))
    return kept


def _on(topology: Any, topo: Topology) -> bool:
    text = str(topology or "")
    return not text or text.split(",")[0].strip() == topo.name


def recorded_calls(record: CourseRecord, case: str, topo: Topology) -> List[MeasuredCall]:
    """The measurements on the record of ``topo``'s network that a prediction of notebook
    ``case`` must come before, at the hub's time (when they were saved), as
    :func:`labtools.teach.predict_first.every_measurement` reads the results file's: what
    another lab of the course measured before this notebook's first event is left out."""
    mine = [_when(record, e) for e in record.events if (e.get("case") or "") == case]
    began, labs = (min(mine) if mine else None), set(LAB_CASES.values())
    nodes = node_addresses(topo)
    calls: List[MeasuredCall] = []
    for event in record.of_kind("measurement"):
        when, other = _when(record, event), str(event.get("case") or "")
        if not _on(event.get("topology"), topo) or (
                other != case and other in labs and began is not None and when < began):
            continue
        source = "on the course's record" + (f", notebook {other}" if other != case else "")
        call = event.get("call")
        if isinstance(call, dict) and isinstance(call.get("args"), dict):
            calls.append(MeasuredCall(str(call.get("probe", "")), call["args"], when, source))
        elif isinstance(event.get("commands"), list):
            node = str(event.get("node", ""))
            for line in event["commands"]:
                calls += typed_calls(node, str(line), when, nodes,
                                     f"typed on {node}, {source}")
    return calls
