"""The course's record (deploy/hub/record_rows.py, record_service.py) without a hub: what a
post may say, the row it makes, who may read whose rows, the file kept append only. The
service with a real hub, a real student's server and its token: tests/deploy/test_hub.py."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy" / "hub"))

import record_rows as rr  # noqa: E402
import record_service  # noqa: E402

ANSWER = {"kind": "answer", "case": "intro", "topology": "triangle",
          "question": "rtt_ms h1 h2", "answer": 12.5}
PING = {"kind": "measurement", "case": "intro", "topology": "triangle",
        "call": {"probe": "ping", "args": {"src": "h1", "dst": "h2"}}}
TYPED = {"kind": "measurement", "case": "", "topology": "triangle", "node": "h1",
         "commands": ["ping -c 3 10.0.0.2"]}


def post(body) -> bytes:
    return json.dumps(body).encode()


@pytest.mark.parametrize("body", [ANSWER, PING, TYPED, {**ANSWER, "answer": None}])
def test_a_post_of_an_answer_or_a_measurement_is_taken(body):
    checked = rr.checked_body(post(body))
    assert checked["kind"] == body["kind"] and checked["case"] == body["case"]


@pytest.mark.parametrize("key, value", [("user", "bob"), ("recorded_at", "2025-01-01T00:00:00"),
                                        ("correct", True), ("student", "bob"), ("id", 1)])
def test_a_post_that_says_who_when_or_right_is_refused_in_one_line(key, value):
    for body in (ANSWER, PING):
        with pytest.raises(rr.RecordError) as err:
            rr.checked_body(post({**body, key: value}))
        assert err.value.status == 400 and f"{key!r} is the record's to write" in str(err.value)
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("data, words", [
    (b"not json", "not JSON"), (b"[1, 2]", "JSON object"),
    (post({**ANSWER, "kind": "guess"}), "kind must be"),
    (post({**ANSWER, "question": ""}), "question is missing"),
    (post({**ANSWER, "answer": True}), "finite number"),
    (post({**ANSWER, "answer": "12"}), "finite number"),
    (b'{"kind": "answer", "question": "rtt_ms h1 h2", "answer": NaN}', "finite number"),
    (post({**ANSWER, "verdict": "right"}), "no 'verdict'"),
    (post({**PING, "call": {"probe": "ping"}}), "call must be"),
    (post({"kind": "measurement", "case": "intro"}), "needs a probe call"),
    (post({**TYPED, "commands": "ping h2"}), "needs a probe call"),
    (post({**TYPED, "node": ""}), "node is missing"),
    (post({**ANSWER, "case": "x" * (rr.MAX_TEXT_CHARS + 1)}), "case must be"),
    (b" " * (rr.MAX_BODY_BYTES + 1), "larger than"),
])
def test_a_body_that_is_not_an_answer_or_a_measurement_is_refused(data, words):
    with pytest.raises(rr.RecordError, match=words):
        rr.checked_body(data)


def test_the_row_carries_the_hubs_name_and_time_not_the_posts():
    when = rr.utc_stamp()
    row = rr.event_row("alice", rr.checked_body(post(ANSWER)), when)
    assert (row["user"], row["kind"], row["case"], row["recorded_at"]) == (
        "alice", "answer", "intro", when)
    assert json.loads(row["body_json"]) == {"question": "rtt_ms h1 h2", "answer": 12.5,
                                            "topology": "triangle"}
    assert when.endswith("+00:00")


def test_readers_read_anyone_a_student_only_their_own():
    readers = ("teacher", "ta")
    assert rr.readable_user("teacher", "alice", readers) == "alice"
    assert rr.readable_user("ta", None, readers) is None  # everyone's
    assert rr.readable_user("alice", None, readers) == "alice"
    assert rr.readable_user("alice", "alice", readers) == "alice"
    with pytest.raises(rr.RecordError) as err:
        rr.readable_user("bob", "alice", readers)
    assert err.value.status == 403


def test_the_record_file_keeps_rows_in_order_and_refuses_changes(tmp_path: Path):
    con = rr.connect(tmp_path / "record.sqlite")
    assert (tmp_path / "record.sqlite").stat().st_mode & 0o777 == 0o600
    first = rr.append(con, rr.event_row("alice", rr.checked_body(post(ANSWER)), rr.utc_stamp()))
    rr.append(con, rr.event_row("bob", rr.checked_body(post(PING)), rr.utc_stamp()))
    third = rr.append(con, rr.event_row("alice", rr.checked_body(post(TYPED)), rr.utc_stamp()))
    mine = rr.events(con, "alice")
    assert [e["id"] for e in mine] == [first, third]
    assert mine[0]["question"] == "rtt_ms h1 h2" and mine[1]["commands"] == TYPED["commands"]
    assert [e["user"] for e in rr.events(con, None)] == ["alice", "bob", "alice"]
    for sql in ("UPDATE events SET recorded_at = '2025-01-01T00:00:00+00:00'",
                "DELETE FROM events WHERE user = 'alice'"):
        with pytest.raises(sqlite3.Error, match="append only"):
            con.execute(sql)
    assert len(rr.events(rr.connect(tmp_path / "record.sqlite"), None)) == 3


@pytest.mark.parametrize("header", ["", "token", "token   ", "Basic abc"])
def test_a_request_without_a_token_is_refused_before_the_hub_is_asked(header):
    with pytest.raises(rr.RecordError) as err:
        record_service.token_owner("http://127.0.0.1:9/hub/api", header)
    assert err.value.status == 403
