"""Predictions a student forges in their own results file earn nothing: grading checks every
answer on record again on the student's network (never the stored verdict), counts every
measurement of the quantity whatever made it (a probe call of any case, ``run_on``,
``labtools shell``), and refuses a time the kit did not write (a back-dated row, a row
older than the file).

The measurements are the recorded grading fixture (tests/fixtures/grading: the solution
notebooks run on a real network, capture.json says where); what is forged here is what a
student could type into their own file."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import pytest

from labtools.errors import StoreError
from labtools.judge.answer_record import KeptAnswer, vet_answers
from labtools.judge.exercises import solve
from labtools.judge.prediction_order import MeasuredCall
from labtools.judge.typed_commands import node_addresses, typed_calls
from labtools.lab.session import LabSession
from labtools.model.catalog import load_topology
from labtools.model.routing import compute_routing
from labtools.results.columns import decode_time
from labtools.results.predictions import Prediction
from labtools.results.store import ResultStore
from labtools.results.transcripts import ShellCommand, ShellTranscript
from labtools.teach import notebook
from labtools.teach.predict_first import every_measurement
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "grading" / "results" / "labtools.sqlite"
#: lab 2's compute-it-first questions the tests answer (both asked in the recording)
R1R2, R2R3 = "rtt_ms r1 r2", "rtt_ms r2 r3"


@pytest.fixture()
def submitted(graded_folder):
    """The recorded results file of a submitted folder graded by nbgrader (replay)."""
    return ResultStore(graded_folder / "results" / "labtools.sqlite")


def _right_answers(lab) -> dict:
    """Lab 2's two RTT answers, right on the lab's network (the kit's own calculator)."""
    return {q: solve("rtt_ms", lab.topo, src=q.split()[1], dst=q.split()[2]).expected
            for q in (R1R2, R2R3)}


def _graded(lab) -> dict:
    feedback = notebook.grade_answers(lab, _right_answers(lab))
    return dict(zip(feedback["question"], zip(feedback["on_record"], feedback["record"])))


def _checked_at(store: ResultStore, question: str):
    return min(decode_time(p.recorded_at, "p") for p in store.predictions(case="link")
               if p.question == question)


def test_the_recorded_class_is_on_record_with_every_measurement_counted(submitted):
    """The recording checks each lab's answers before any measurement of them, its
    run_on pings and later labs' measurements included: no grade of it changes."""
    lab = notebook.open_lab("link")
    assert all(on_record for on_record, _ in _graded(lab).values())
    calls = every_measurement(submitted, "intro", lab.topo)
    assert any(c.source == "run_on on h1 in notebook intro" and c.probe == "ping"
               for c in calls)


def test_a_wrong_number_stored_as_right_earns_nothing(submitted):
    """The issue's forgery: a wrong answer of 1.0 saved with correct = 1, early."""
    with sqlite3.connect(submitted.path) as con:
        con.execute("UPDATE predictions SET answer = 1.0, correct = 1 WHERE question = ?",
                    (R2R3,))
    judged = _graded(notebook.open_lab("link"))
    assert judged[R1R2][0] and not judged[R2R3][0]
    assert judged[R2R3][1].startswith(f"{R2R3}: the answer on record at ")
    assert "(1) is not right on your network" in judged[R2R3][1]


def test_a_ping_by_hand_before_the_prediction_is_its_measurement(submitted):
    """run_on and labtools shell are measurements: a ping typed on r2 towards r3 before
    the answer was checked makes it no prediction, and the line says what measured it."""
    lab = notebook.open_lab("link")
    before = _checked_at(submitted, R2R3) - timedelta(seconds=20)
    submitted.save_transcript(ShellTranscript(
        node="r2", commands=[ShellCommand(f"ping -c 3 {lab.ip_towards('r2', 'r3')}", "")],
        started_at=before.isoformat(), ended_by="exit"))  # labtools shell, no lab case
    judged = _graded(lab)
    assert judged[R1R2][0] and not judged[R2R3][0]
    assert "labtools shell on r2): predict first" in judged[R2R3][1]
    submitted.save_transcript(ShellTranscript(
        node="r1", commands=[ShellCommand("sudo ping -c 1 r2", "")], case="link",
        topology="portfolio", started_at=before.isoformat(), ended_by="run_on"))
    assert "run_on on r1 in notebook link" in _graded(lab)[R1R2][1]


def test_a_measurement_in_another_case_comes_first(submitted):
    """A lab opened under another case (not one of the course's labs) measured r1-r2
    before lab 2's answer was checked: that answer is no prediction."""
    lab = notebook.open_lab("link")
    ping = submitted.get(int(submitted.query(
        "SELECT id FROM runs WHERE \"case\" = 'link' AND json_extract(call_json, "
        "'$.args.dst') = 'r2' AND json_extract(call_json, '$.probe') = 'ping'")[0]["id"]))
    ping.case, ping.id = "scratch", None
    ping.started_at = (_checked_at(submitted, R1R2) - timedelta(minutes=5)).isoformat()
    submitted.save(ping)
    judged = _graded(lab)
    assert not judged[R1R2][0] and judged[R2R3][0]
    assert "in notebook scratch): predict first" in judged[R1R2][1]


def test_a_back_dated_row_earns_nothing(submitted):
    """A row whose time was moved before a row saved ahead of it."""
    with sqlite3.connect(submitted.path) as con:
        con.execute("UPDATE predictions SET recorded_at = '2026-11-29T03:00:00+00:00' "
                    "WHERE question = ?", (R2R3,))
    judged = _graded(notebook.open_lab("link"))
    assert judged[R1R2][0] and not judged[R2R3][0]
    assert "a back-dated record earns nothing" in judged[R2R3][1]
    assert judged[R2R3][1].startswith(f"{R2R3}: the answer on record (predictions row ")


def test_a_row_older_than_its_file_earns_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results" / "labtools.sqlite"
    lab = LabSession("portfolio", results=results, case="intro", calibrate=False)
    rtt = solve("rtt_ms", lab.topo, src="h1", dst="h4").expected
    assert notebook.grade_answers(lab, {"rtt_ms h1 h4": rtt})["on_record"].iloc[0]
    with sqlite3.connect(results) as con:
        con.execute("UPDATE predictions SET recorded_at = '2025-01-01T00:00:00+00:00'")
    again = notebook.grade_answers(lab, {"rtt_ms h1 h4": rtt / 2})  # a wrong one, now
    assert not again["on_record"].iloc[0]
    assert "before the results file was made" in again["record"].iloc[0]


def test_the_kit_writes_a_predictions_time(tmp_path):
    store = ResultStore(tmp_path / "r.sqlite")
    with pytest.raises(StoreError, match="its time is written by the kit"):
        store.save_predictions([Prediction("rtt_ms h1 h4", 60.0, True, case="intro",
                                           recorded_at="2025-01-01T00:00:00+00:00")])
    assert store.predictions() == []
    kept = [Prediction("rtt_ms h1 h4", 60.0, True), Prediction("rtt_ms h1 h9", 1.0, False)]
    store.save_predictions(kept)
    made = decode_time(store.created_at() or "", "created")
    read = store.predictions()
    assert [p.recorded_at for p in read] == [p.recorded_at for p in kept]
    assert made <= decode_time(read[0].recorded_at, "0") <= decode_time(read[1].recorded_at, "1")
    before = RECORDED.read_bytes()  # a file made before the kit kept its time: none, unwritten
    assert ResultStore(RECORDED, create=False).created_at() is None
    assert RECORDED.read_bytes() == before


def test_vetting_reads_the_order_of_the_whole_file():
    """Rows of another notebook set the order too; only the asked notebook's are returned."""
    topo = load_topology("portfolio")
    rtt = solve("rtt_ms", topo, src="h1", dst="h4").expected
    t0 = decode_time("2026-01-01T10:00:00+00:00", "t0")
    rows = [KeptAnswer(1, "rtt_ms h1 h4", rtt, t0, True, "intro"),
            KeptAnswer(2, "rtt_ms h1 h9", 3.0, t0 + timedelta(minutes=5), True, "path"),
            KeptAnswer(3, "rtt_ms h1 h4", rtt * 1.004, t0 + timedelta(minutes=1), True, "path")]
    path = vet_answers(rows, topo, "path")
    assert set(path) == {"rtt_ms h1 h4", "rtt_ms h1 h9"}
    assert path["rtt_ms h1 h4"].answers == [] and "before row 2" in path["rtt_ms h1 h4"].refused[0]
    assert path["rtt_ms h1 h9"].answers == [(t0 + timedelta(minutes=5), False)]
    assert vet_answers(rows, topo, "intro")["rtt_ms h1 h4"].answers == [(t0, True)]
    assert vet_answers(rows[:1], topo, "intro", t0 + timedelta(seconds=1))[
        "rtt_ms h1 h4"].refused[0].endswith("a time the kit did not write earns nothing")
    within = [KeptAnswer(1, "rtt_ms h1 h4", rtt * 1.004, t0, False, "intro")]
    assert vet_answers(within, topo, "intro")["rtt_ms h1 h4"].answers == [(t0, True)]


def test_commands_typed_on_a_node_are_read_as_the_probe_calls_they_are():
    topo = load_topology("portfolio")
    h4 = compute_routing(topo).target("h1", "h4").ip
    nodes = node_addresses(topo)
    when = decode_time("2026-01-01T10:00:00+00:00", "when")

    def read(line: str):
        return [(c.probe, dict(c.args)) for c in typed_calls("h1", line, when, nodes, "x")]

    assert read(f"sudo ping -c 3 {h4}") == [("ping", {"src": "h1", "dst": "h4"})]
    assert read(f"timeout 5 iperf3 -c {h4} -w 25K -t 2") == [
        ("iperf3", {"src": "h1", "dst": "h4", "window_bytes": 25 * 1024})]
    assert read(f"iperf -c {h4} -u -b 10M") == [("iperf_udp", {"src": "h1", "dst": "h4"})]
    assert read(f"python3 mysimpleperf.py -c -I {h4} -t 5") == [
        ("simpleperf", {"src": "h1", "dst": "h4"})]
    assert read(f"ping -c 1 h4 && iperf3 -c {h4}") == [
        ("ping", {"src": "h1", "dst": "h4"}),
        ("iperf3", {"src": "h1", "dst": "h4", "window_bytes": None})]
    assert read("tc -s qdisc show") == [] and read(f"ip route get {h4}") == []
    assert read("ping 'unclosed") == [] and read("iperf3 -s") == []
    assert all(isinstance(c, MeasuredCall) and c.source == "x"
               for c in typed_calls("h1", f"ping {h4}", when, nodes, "x"))
