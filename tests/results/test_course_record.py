"""The kit posts to the course's record (labtools/results/course_record.py): on a hub every
checked answer, every run with a probe call and every terminal session is posted after it
is saved, in a body the record service takes (deploy/hub/record_rows.py checks each one
here); off a hub nothing is posted; a post that fails loses nothing and says so in one line.

The receiver below is a plain HTTP server on loopback that checks each body with the
service's own rules; the service with a real hub and a student's server is in
tests/deploy/test_hub.py."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from labtools.judge.measurement import ProbeCall
from labtools.results.predictions import Prediction
from labtools.results.records import RunRecord
from labtools.results.store import ResultStore
from labtools.results.transcripts import ShellCommand, ShellTranscript

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "deploy" / "hub"))

import record_rows  # noqa: E402

TOKEN = "a0" * 16


class Receiver(BaseHTTPRequestHandler):
    """Takes ``POST /events`` as the record service does (its body checks), keeps what
    came (headers, checked body) in ``received``."""

    received: List[Tuple[str, dict]] = []
    refuse_with = 0
    #: what GET /events answers: the rows of a record file, as the service reads them
    kept: List[dict] = []

    def do_GET(self) -> None:  # noqa: N802
        status, answer = (403, {"error": "alice may not read bob's record"}) \
            if self.headers["Authorization"] != f"token {TOKEN}" else (200, {"events": self.kept})
        out = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_POST(self) -> None:  # noqa: N802
        data = self.rfile.read(int(self.headers["Content-Length"]))
        try:
            if self.refuse_with:
                raise record_rows.RecordError("the hub does not know this token (403)",
                                              self.refuse_with)
            body = record_rows.checked_body(data)
            status, answer = 201, {"id": len(self.received) + 1}
            self.received.append((self.headers["Authorization"], body))
        except record_rows.RecordError as err:
            status, answer = err.status, {"error": str(err)}
        out = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture()
def record(monkeypatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    Receiver.received, Receiver.refuse_with = [], 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("LABTOOLS_RECORD_URL", url)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", TOKEN)
    yield url
    server.shutdown()
    server.server_close()


def _save_all(store: ResultStore) -> None:
    store.save_predictions([Prediction("rtt_ms h1 h4", 12.5, True, case="intro",
                                       topology="portfolio", student="alice")])
    store.save(RunRecord(tool="ping", case="intro", topology="portfolio",
                         call=ProbeCall("ping", {"src": "h1", "dst": "h4"})))
    store.save(RunRecord(tool="ping"))  # no probe call: nothing to post
    store.save_transcript(ShellTranscript("h1", [ShellCommand("ping -c 1 10.0.0.4", "")],
                                          case="intro", topology="portfolio"))


def test_on_a_hub_each_answer_run_and_typed_command_is_posted_after_its_save(record, tmp_path):
    store = ResultStore(tmp_path / "r.sqlite")
    _save_all(store)
    tokens = {header for header, _ in Receiver.received}
    bodies = [body for _, body in Receiver.received]
    assert tokens == {f"token {TOKEN}"}
    assert bodies == [
        {"kind": "answer", "case": "intro", "topology": "portfolio",
         "question": "rtt_ms h1 h4", "answer": 12.5},
        {"kind": "measurement", "case": "intro", "topology": "portfolio",
         "call": {"probe": "ping", "args": {"src": "h1", "dst": "h4"}}},
        {"kind": "measurement", "case": "intro", "topology": "portfolio", "node": "h1",
         "commands": ["ping -c 1 10.0.0.4"]}]
    assert len(store.predictions()) == 1 and len(store.transcripts()) == 1


def test_off_a_hub_nothing_is_posted(record, tmp_path, monkeypatch):
    monkeypatch.delenv("LABTOOLS_RECORD_URL")
    _save_all(ResultStore(tmp_path / "r.sqlite"))
    monkeypatch.setenv("LABTOOLS_RECORD_URL", record)
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN")
    _save_all(ResultStore(tmp_path / "r2.sqlite"))
    assert Receiver.received == []


def test_a_refused_post_is_one_line_and_the_save_stands(record, tmp_path, capsys):
    Receiver.refuse_with = 403
    store = ResultStore(tmp_path / "r.sqlite")
    _save_all(store)
    said = capsys.readouterr().err.splitlines()
    assert said == ["not on the course's record: the record answered 403: the hub does "
                    "not know this token (403)"] * 3
    assert len(store.predictions()) == 1 and len(store.runs()) == 2


def test_an_unreachable_record_loses_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABTOOLS_RECORD_URL", "http://127.0.0.1:9")  # discard: nobody there
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", TOKEN)
    store = ResultStore(tmp_path / "r.sqlite")
    _save_all(store)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 3 and all(line.startswith(
        "not on the course's record: the record cannot be reached") for line in said), said
    assert len(store.predictions()) == 1 and len(store.transcripts()) == 1


def test_the_instructor_fetches_the_record_into_a_file_per_student(record, tmp_path, monkeypatch):
    from labtools.instructor.course_record_fetch import fetch_into
    from labtools.results.course_record_file import read_record, record_path

    con = record_rows.connect(tmp_path / "record.sqlite")
    for user, body in (("alice", {"kind": "answer", "case": "link", "question": "rtt_ms r1 r2",
                                  "answer": 7.5}),
                       ("bob", {"kind": "measurement", "case": "link", "node": "r1",
                                "commands": ["ping -c 1 r2"]}),
                       ("alice", {"kind": "measurement", "case": "link",
                                  "call": {"probe": "ping", "args": {"src": "r1", "dst": "r2"}}})):
        row = record_rows.event_row(user, record_rows.checked_body(json.dumps(body).encode()),
                                    record_rows.utc_stamp())
        record_rows.append(con, row)
    Receiver.kept = record_rows.events(con, None)
    course = tmp_path / "course"
    course.mkdir()
    written = fetch_into(course)
    assert written == [record_path(course, "alice"), record_path(course, "bob")]
    alice = read_record(written[0])
    assert [e["kind"] for e in alice.events] == ["answer", "measurement"]
    assert alice.events[0]["question"] == "rtt_ms r1 r2" and alice.events[0]["user"] == "alice"
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "b1" * 16)
    from labtools.errors import ToolError

    with pytest.raises(ToolError, match="answered 403: alice may not read bob's record"):
        fetch_into(course)
