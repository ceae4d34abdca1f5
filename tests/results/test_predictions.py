"""Predict, then measure, on record: checked answers are kept with their time, and a
prediction counts only when a right one came before the quantity's first measurement.

The measurements are the recorded grading fixture (tests/fixtures/grading: the solution
notebooks run on a real network, capture.json says where); the predictions in these tests
are what a student types, saved at chosen times around those measurements."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from datetime import timedelta

import pytest

from labtools.errors import StoreError
from labtools.judge.prediction_order import MeasuredCall, first_measured, judge_record
from labtools.lab.session import LabSession
from labtools.results.columns import decode_time
from labtools.results.predictions import Prediction
from labtools.results.store import ResultStore
from labtools.teach import notebook
from labtools.teach.predict_first import assert_predicted_first, measured_calls
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "grading" / "results" / "labtools.sqlite"
#: a class recorded with an earlier kit, before predictions were kept
EARLIER = FIXTURES / "grading" / "earlier" / "results" / "labtools.sqlite"


def _first_run(where: str, case: str):
    """The start of the first run of ``case`` whose call matches the SQL ``where``."""
    con = sqlite3.connect(f"file:{RECORDED}?mode=ro", uri=True)
    try:
        row = con.execute(
            "SELECT min(started_at) FROM runs WHERE \"case\" = ? AND call_json IS NOT NULL "
            f"AND {where}", (case,)).fetchone()
    finally:
        con.close()
    assert row[0], (case, where)
    return decode_time(row[0], "runs")


PROBE = "json_extract(call_json, '$.probe')"
WINDOW = "json_extract(call_json, '$.args.window_bytes')"
PAIR = ("((json_extract(call_json, '$.args.src') = '{a}' AND json_extract(call_json, "
        "'$.args.dst') = '{b}') OR (json_extract(call_json, '$.args.src') = '{b}' AND "
        "json_extract(call_json, '$.args.dst') = '{a}'))")


@pytest.mark.parametrize("case, question, where", [
    ("link", "rtt_ms r1 r2", f"{PROBE} = 'ping' AND " + PAIR.format(a="r1", b="r2")),
    ("link", "tcp_goodput_ceiling_mbps r2 r3",
     f"{PROBE} IN ('iperf3', 'simpleperf') AND " + PAIR.format(a="r2", b="r3")),
    ("pitfalls", "tcp_goodput_ceiling_mbps a1 b1",
     f"{PROBE} = 'iperf3' AND {WINDOW} IS NULL AND " + PAIR.format(a="a1", b="b1")),
    ("pitfalls", "bdp_bytes a1 b1",
     f"{PROBE} = 'iperf3' AND {WINDOW} IS NOT NULL AND " + PAIR.format(a="a1", b="b1")),
    ("pitfalls", "max_rtt_ms a1 b1",
     f"{PROBE} IN ('ping', 'ping_under_load') AND " + PAIR.format(a="a1", b="b1")),
    ("path", "window_rate_mbps h1 h9 25000",
     f"{PROBE} = 'iperf3' AND {WINDOW} = 25000 AND " + PAIR.format(a="h1", b="h9")),
    ("mux", "fair_share_mbps h1:h4,h2:h5 h2:h5",
     f"{PROBE} = 'concurrent_iperf3' AND json_extract(call_json, '$.args.flows') = "
     "'h1:h4,h2:h5'"),
])
def test_each_quantity_is_first_measured_by_its_own_kind_of_call(case, question, where):
    calls = measured_calls(ResultStore(RECORDED, create=False), case)
    assert first_measured(question, calls) == _first_run(where, case)


def test_lab_6s_bdp_is_measured_by_the_window_runs_not_the_first_tcp_test():
    calls = measured_calls(ResultStore(RECORDED, create=False), "pitfalls")
    assert (first_measured("bdp_bytes a1 b1", calls)
            > first_measured("tcp_goodput_ceiling_mbps a1 b1", calls))


def test_a_quantity_the_notebook_never_measures_is_not_measured():
    calls = measured_calls(ResultStore(RECORDED, create=False), "intro")
    assert calls and first_measured("bottleneck_mbps h1 h4", calls) is None
    assert first_measured("rtt_ms h1 h4", calls) is not None


def test_the_order_of_right_answers_and_the_measurement_decides():
    calls = measured_calls(ResultStore(RECORDED, create=False), "link")
    measured = first_measured("rtt_ms r1 r2", calls)
    assert measured is not None
    early, late = measured - timedelta(seconds=30), measured + timedelta(seconds=30)
    question = "rtt_ms r1 r2"
    assert judge_record(question, [(early, True)], calls).on_record
    assert judge_record(question, [(early, False), (late, True)], calls).on_record is False
    assert "after the measurement" in judge_record(question, [(late, True)], calls).reason
    assert "no right answer" in judge_record(question, [(early, False)], calls).reason
    assert "no checked answer" in judge_record(question, [], calls).reason
    assert judge_record("bottleneck_mbps r1 r2", [(late, True)],
                        [c for c in calls if c.probe == "ping"]).on_record  # not measured


def test_checked_answers_are_kept_with_their_time_and_read_back(tmp_path):
    store = ResultStore(tmp_path / "r.sqlite")
    store.save_predictions([Prediction("rtt_ms h1 h4", 60.0, True, case="intro"),
                            Prediction("bottleneck_mbps h1 h4", math.nan, False, case="intro")])
    kept = store.predictions(case="intro")
    assert [(p.question, p.answer, p.correct) for p in kept] == [
        ("rtt_ms h1 h4", 60.0, True), ("bottleneck_mbps h1 h4", None, False)]
    assert kept[0].recorded_at <= kept[1].recorded_at and kept[0].id < kept[1].id
    with sqlite3.connect(tmp_path / "r.sqlite") as con:
        con.execute("UPDATE predictions SET recorded_at = 'yesterday' WHERE id = 2")
    with pytest.raises(StoreError, match="predictions row 2: recorded_at"):
        store.predictions()


def test_a_file_from_before_predictions_reads_as_holding_none_and_is_not_written():
    before = EARLIER.read_bytes()
    assert ResultStore(EARLIER, create=False).predictions() == []
    assert EARLIER.read_bytes() == before


def test_the_recorded_labs_checked_every_answer_before_measuring_it():
    """The solution notebooks, run on a real network, check first and measure after."""
    store = ResultStore(RECORDED, create=False)
    kept = store.predictions()
    assert {p.case for p in kept} == {"intro", "udp", "link", "path", "mux", "parallel",
                                     "pitfalls"}
    for p in kept:
        calls = measured_calls(store, p.case)
        judged = judge_record(p.question, [(decode_time(p.recorded_at, "p"), p.correct)], calls)
        assert p.correct and judged.on_record, judged.reason
    unmeasured = {(p.case, p.question) for p in kept
                  if first_measured(p.question, measured_calls(store, p.case)) is None}
    assert unmeasured == {("intro", "bottleneck_mbps h1 h4"),  # lab 0 only pings
                          ("path", "bdp_bytes h1 h4"), ("path", "bdp_bytes h7 h9")}  # h1-h9's


@pytest.fixture()
def submitted(graded_folder):
    """The recorded results file of a submitted folder graded by nbgrader (replay)."""
    return ResultStore(graded_folder / "results" / "labtools.sqlite")


def test_grading_credits_only_a_right_prediction_made_before_the_measurement(submitted):
    lab = notebook.open_lab("link")
    answers = {"rtt_ms r1 r2": 2 * lab.topo.link("L1").delay_ms,
               "rtt_ms r2 r3": 2 * lab.topo.link("L2").delay_ms}
    feedback = notebook.grade_answers(lab, answers)
    assert feedback["correct"].all() and feedback["on_record"].all()
    assert_predicted_first(feedback)
    rows_before = len(submitted.predictions())
    assert rows_before and len(submitted.predictions()) == rows_before  # grading writes nothing
    measured = first_measured("rtt_ms r2 r3", measured_calls(submitted, "link"))
    assert measured is not None
    with sqlite3.connect(submitted.path) as con:  # as if checked only after measuring
        con.execute("UPDATE predictions SET recorded_at = ? WHERE question = 'rtt_ms r2 r3'",
                    ((measured + timedelta(minutes=5)).isoformat(),))
    feedback = notebook.grade_answers(lab, answers)
    assert list(feedback["on_record"]) == [True, False]
    with pytest.raises(AssertionError, match=r"^rtt_ms r2 r3: the first right answer .* after"):
        assert_predicted_first(feedback)


def test_a_results_file_without_predictions_credits_none_with_one_line(submitted):
    shutil.copy(EARLIER, submitted.path)
    lab = notebook.open_lab("link")
    feedback = notebook.grade_answers(lab, {"rtt_ms r1 r2": 1.0})
    with pytest.raises(AssertionError, match="no checked answer on record"):
        assert_predicted_first(feedback)


def test_a_running_lab_keeps_every_check_and_says_where_each_stands(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lab = LabSession("portfolio", results=tmp_path / "results" / "labtools.sqlite",
                     case="intro", calibrate=False)  # not started: no network needed
    rtt = 2 * (lab.topo.link("L1").delay_ms + lab.topo.link("L2").delay_ms)
    first = notebook.grade_answers(lab, {"rtt_ms h1 h4": rtt / 2})
    second = notebook.grade_answers(lab, {"rtt_ms h1 h4": rtt})
    assert not first["correct"].iloc[0] and second["correct"].iloc[0]
    assert math.isnan(first["expected"].iloc[0]) and second["expected"].iloc[0] == rtt
    assert not first["on_record"].iloc[0] and second["on_record"].iloc[0]
    assert "not measured yet" in second["record"].iloc[0]
    kept = ResultStore(tmp_path / "results" / "labtools.sqlite").predictions(case="intro")
    assert [(p.correct, p.answer, p.session_id) for p in kept] == [
        (False, rtt / 2, lab.session_id), (True, rtt, lab.session_id)]
    assert json.loads(json.dumps([p.recorded_at for p in kept]))  # ISO text, in order
    assert kept[0].recorded_at <= kept[1].recorded_at


def test_the_calls_read_from_a_store_are_the_notebooks_own():
    calls = measured_calls(ResultStore(RECORDED, create=False), "udp")
    assert calls and all(isinstance(c, MeasuredCall) for c in calls)
    assert {c.probe for c in calls} <= {"iperf_udp", "capacity_search"}


def test_a_tampered_call_is_a_store_error_naming_its_row(tmp_path):
    copy = tmp_path / "r.sqlite"
    shutil.copy(RECORDED, copy)
    with sqlite3.connect(copy) as con:
        con.execute("UPDATE runs SET call_json = '{not json' WHERE id = 1")
    with pytest.raises(StoreError, match=r"runs row 1: call_json"):
        measured_calls(ResultStore(copy, create=False), "intro")


def test_the_feedback_reads_as_one_sentence_per_answer(tmp_path, monkeypatch):
    """What a student reads under a check: one whole sentence per answer (what was asked,
    the answer, right or not and why; for a right one, where its record stands), then how
    many are right; no table, no NaN, no False. A wrong answer's number stays hidden in
    graded work and shows in self-study."""
    from labtools.judge.exercises import question_text
    from labtools.teach.predict_first import AnswerFeedback, feedback_lines

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LABTOOLS_SHOW_ANSWERS", raising=False)
    monkeypatch.setenv("LABTOOLS_MODE", "student")
    lab = LabSession("portfolio,variant=s0042", results=tmp_path / "results" / "labtools.sqlite",
                     case="link", calibrate=False)  # not started: no network needed
    one_way, l2 = lab.topo.link("L1").delay_ms, lab.topo.link("L2").delay_ms
    feedback = notebook.grade_answers(lab, {"rtt_ms r1 r2": one_way, "rtt_ms r2 r3": 2 * l2,
                                            "rtt_ms r3 r4": None})
    assert isinstance(feedback, AnswerFeedback) and not feedback["correct"].all()
    lines = repr(feedback).splitlines()
    assert lines == feedback_lines(feedback) and len(lines) == 4
    wrong, right, empty, total = lines
    assert wrong.startswith(f"✗ {question_text('rtt_ms r1 r2')}: you answered {one_way:g}: "
                            "not right yet: you gave the one-way delay")
    assert "kit's value" not in wrong and f"{2 * one_way:g}" not in wrong
    assert right.startswith(f"✓ {question_text('rtt_ms r2 r3')}: you answered {2 * l2:g}: right")
    assert "on record as a prediction" in right and "not measured yet" in right
    assert empty == f"✗ {question_text('rtt_ms r3 r4')}: no answer yet."
    assert total == "1 of 3 answers right: read the sentences above."
    page = feedback._repr_html_()
    for said in (repr(feedback), page):
        assert "NaN" not in said and "False" not in said and "<table" not in said
    assert page.count("<li>") == 4
    monkeypatch.setenv("LABTOOLS_SHOW_ANSWERS", "1")  # self-study: the kit's value too
    monkeypatch.delenv("LABTOOLS_MODE")
    shown = feedback_lines(notebook.grade_answers(lab, {"rtt_ms r1 r2": one_way}))
    assert shown[0].endswith(f"The kit's value: {2 * one_way:g}.") and len(shown) == 2


def test_a_right_answer_after_its_measurement_says_it_is_no_prediction():
    """A right answer checked only after its measurement: the sentence says so."""
    import pandas as pd

    from labtools.teach.predict_first import feedback_lines

    table = pd.DataFrame([{"question": "rtt_ms r2 r3", "answer": 38.0, "expected": 38.0,
                           "correct": True, "message": "correct: 38 ms", "on_record": False,
                           "record": "rtt_ms r2 r3: the first right answer (2026-01-01 "
                                     "10:05:00 UTC) came after the measurement (2026-01-01 "
                                     "10:00:00 UTC): predict first"}])
    line, total = feedback_lines(table)
    assert line == ("✓ RTT r2 → r3 (ms): you answered 38: right, but it does not count as a "
                    "prediction: the first right answer (2026-01-01 10:05:00 UTC) came after "
                    "the measurement (2026-01-01 10:00:00 UTC): predict first.")
    assert total == "The answer is right."
