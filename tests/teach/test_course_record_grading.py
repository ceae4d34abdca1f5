"""Grading reads the course's record (labtools/results/course_record_file.py): on a course
hub the answers and their times come from the hub's record, not from the student's results
file, every answer is still checked again on the student's network, and the record's
measurements count beside the file's.

The results file is the recorded grading fixture (tests/fixtures/grading: the solution
notebooks run on a real network, capture.json says where). The course records here are
derived from it mechanically (:func:`record_of`: each answer and each probe call of the
file as an event, at the file's time), then moved as the hub would have seen a student who
forged their file."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any, Dict, List

import pytest

from labtools.errors import StoreError
from labtools.judge.exercises import solve
from labtools.judge.prediction_order import first_measured
from labtools.results import course_record_file as crf
from labtools.results.store import ResultStore
from labtools.teach import notebook
from labtools.teach.predict_first import every_measurement
from tests.conftest import RECORDED_RESULTS

#: lab 2's compute-it-first questions (both asked in the recording)
R1R2, R2R3 = "rtt_ms r1 r2", "rtt_ms r2 r3"


def record_of(store: ResultStore, user: str = "alice") -> List[Dict[str, Any]]:
    """The file's answers and probe calls as the course's record would hold them (ids in
    time order)."""
    events: List[Dict[str, Any]] = [
        {"user": user, "kind": "answer", "case": p.case, "topology": p.topology,
         "question": p.question, "answer": p.answer, "recorded_at": p.recorded_at}
        for p in store.predictions()]
    events += [{"user": user, "kind": "measurement", "case": row["case"] or "",
                "topology": row["topology"] or "", "call": json.loads(row["call_json"]),
                "recorded_at": row["started_at"]} for row in store.every_call_time()]
    events.sort(key=lambda e: crf.decode_time(e["recorded_at"], "event"))
    return [{**e, "id": i} for i, e in enumerate(events, 1)]


def write(path: Path, events: List[Dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"events": events}))
    return path


def graded(lab) -> Dict[str, Any]:
    right = {q: solve("rtt_ms", lab.topo, src=q.split()[1], dst=q.split()[2]).expected
             for q in (R1R2, R2R3)}
    feedback = notebook.grade_answers(lab, right)
    return dict(zip(feedback["question"], zip(feedback["on_record"], feedback["record"])))


@pytest.fixture()
def submitted(graded_folder):
    return ResultStore(graded_folder / "results" / "labtools.sqlite")


def _first_r2r3(store: ResultStore, lab):
    return first_measured(R2R3, every_measurement(store, "link", lab.topo))


def test_the_recorded_class_on_the_record_is_graded_as_from_its_file(submitted, monkeypatch):
    monkeypatch.setenv("LABTOOLS_COURSE_RECORD", str(write(
        submitted.path.parent / "record.json", record_of(submitted))))
    assert all(on for on, _ in graded(notebook.open_lab("link")).values())


def test_an_answer_the_hub_saw_after_the_measurement_earns_nothing_whatever_the_file_says(
        submitted, monkeypatch):
    """The file says the answer came first (the student rewrote it so); the hub's record
    says it came a minute after the first ping r2-r3: the record decides."""
    lab = notebook.open_lab("link")
    late = _first_r2r3(submitted, lab) + timedelta(minutes=1)
    events = [e if e.get("question") != R2R3 else {**e, "recorded_at": late.isoformat()}
              for e in record_of(submitted)]
    path = write(submitted.path.parent / "record.json", events)
    assert graded(lab)[R2R3][0]  # the file alone: on the honour system
    monkeypatch.setenv("LABTOOLS_COURSE_RECORD", str(path))
    on, reason = graded(lab)[R2R3]
    assert not on and "came after the measurement" in reason, reason
    assert graded(lab)[R1R2][0]


def test_a_verdict_forged_in_the_file_does_not_reach_the_record(submitted, monkeypatch):
    """The hub keeps the number given (a wrong 1.0); the file says 'right': the number is
    checked again on the student's network."""
    events = [e if e.get("question") != R2R3 else {**e, "answer": 1.0}
              for e in record_of(submitted)]
    monkeypatch.setenv("LABTOOLS_COURSE_RECORD", str(write(
        submitted.path.parent / "record.json", events)))
    on, reason = graded(notebook.open_lab("link"))[R2R3]
    assert not on and reason == f"{R2R3}: no right answer on record", reason


def test_a_measurement_on_the_record_counts_when_the_file_lost_it(submitted, monkeypatch):
    """A ping r2-r3 the hub recorded before the answer, deleted from the file."""
    lab = notebook.open_lab("link")
    events = record_of(submitted)
    answered = min(crf.decode_time(e["recorded_at"], "e") for e in events
                   if e.get("question") == R2R3)
    ping = {"user": "alice", "kind": "measurement", "case": "", "topology": "portfolio",
            "node": "r2", "commands": [f"ping -c 3 {lab.ip_towards('r2', 'r3')}"],
            "recorded_at": (answered - timedelta(seconds=30)).isoformat(), "id": 0}
    monkeypatch.setenv("LABTOOLS_COURSE_RECORD", str(write(
        submitted.path.parent / "record.json", [ping, *events])))
    on, reason = graded(lab)[R2R3]
    assert not on and "typed on r2, on the course's record" in reason, reason


def test_a_replayed_notebook_reads_the_record_once_for_all_its_checks(submitted, monkeypatch):
    """Every check of one notebook reads the record's file once; a changed file, or the
    next notebook's lab, reads it again."""
    path = write(submitted.path.parent / "record.json", record_of(submitted))
    monkeypatch.setenv("LABTOOLS_COURSE_RECORD", str(path))
    reads: List[Path] = []
    read = crf.read_record
    monkeypatch.setattr(crf, "read_record", lambda p: reads.append(p) or read(p))
    lab = notebook.open_lab("link")
    first = graded(lab)
    assert all(on for on, _ in first.values())
    assert graded(lab) == first and reads == [path]
    write(path, [e if e.get("question") != R2R3 else {**e, "answer": 1.0, "note": "changed"}
                 for e in record_of(submitted)])
    assert not graded(lab)[R2R3][0] and reads == [path, path]
    graded(notebook.open_lab("link"))
    assert len(reads) == 3


def test_grading_finds_the_graded_students_record_in_the_course(tmp_path, monkeypatch):
    course = tmp_path / "course"
    folder = course / "autograded" / "alice" / "labs"
    (folder / "results").mkdir(parents=True)
    shutil.copy(RECORDED_RESULTS, folder / "results" / "labtools.sqlite")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.delenv("LABTOOLS_VARIANT", raising=False)
    monkeypatch.delenv("LABTOOLS_COURSE_RECORD", raising=False)
    store = ResultStore(folder / "results" / "labtools.sqlite")
    assert crf.GradingRecord().read() is None
    events = record_of(store, "alice")
    written = crf.write_class_record(
        [*events, *({**e, "user": "bob", "answer": 1.0} for e in record_of(store, "bob"))],
        course)
    assert written == [crf.record_path(course, "alice"), crf.record_path(course, "bob")]
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in written)
    found = crf.GradingRecord().read()
    assert found is not None and found.path == written[0]
    assert {e["user"] for e in found.events} == {"alice"} and len(found.events) == len(events)


@pytest.mark.parametrize("text, words", [
    ("not json", "not JSON"), ('{"runs": []}', "no list of events"),
    ('{"events": [{"kind": "answer", "recorded_at": "yesterday"}]}', "not an ISO 8601 time")])
def test_a_record_file_that_is_not_one_is_refused_naming_it(tmp_path, text, words):
    path = tmp_path / "record.json"
    path.write_text(text)
    with pytest.raises(StoreError, match=words):
        crf.read_record(path)


def test_a_student_id_that_names_no_file_is_refused(tmp_path):
    for name in ("", "..", "a/b"):
        with pytest.raises(StoreError):
            crf.record_path(tmp_path, name)
