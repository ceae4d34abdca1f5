"""The course's record: what a post to the record service may say, the row it makes, who
may read whose rows, and the SQLite file that keeps them (append only).

The record service (record_service.py) takes each checked answer and each measurement a
student's kit posts, asks the hub whose token came with it, and keeps the row here with
that user's hub name and the service's own clock (UTC). What the body says about who,
when or whether an answer was right is refused (:data:`FORBIDDEN`): those are the hub's
to say, or the grader's to work out again. Standard library only; no hub needed (the
service and the kit's tests use it alike). A body or a request that is refused is a
:class:`RecordError` (one line).
"""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

#: what a post may be
KINDS = ("answer", "measurement")
#: keys a body may not bring: the service writes who and when; grading works out "right"
FORBIDDEN = ("user", "recorded_at", "correct", "id", "student")
#: the largest body taken, in bytes (a measurement's call or a typed command line)
MAX_BODY_BYTES = 64 * 1024
#: the longest text a field (question, case, topology, node, command) may hold
MAX_TEXT_CHARS = 4096
#: the record file's table; triggers refuse any change to a row once written
SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user TEXT NOT NULL,
    kind TEXT NOT NULL,
    "case" TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    body_json TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS events_kept_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the course record is append only'); END;
CREATE TRIGGER IF NOT EXISTS events_kept_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the course record is append only'); END;
"""


class RecordError(ValueError):
    """A post or a request the record refuses (one line); ``status`` is its HTTP code."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _text(body: Dict[str, Any], key: str, required: bool = False) -> str:
    value = body.get(key, "")
    if not isinstance(value, str) or len(value) > MAX_TEXT_CHARS:
        raise RecordError(f"{key} must be a string of at most {MAX_TEXT_CHARS} characters")
    if required and not value.strip():
        raise RecordError(f"{key} is missing")
    return value


def _answer(body: Dict[str, Any]) -> Dict[str, Any]:
    answer = body.get("answer")
    if answer is not None and (isinstance(answer, bool) or not isinstance(answer, (int, float))
                               or not math.isfinite(answer)):
        raise RecordError("answer must be a finite number or null")
    extra = set(body) - {"kind", "case", "topology", "question", "answer"}
    if extra:
        raise RecordError(f"an answer has no {sorted(extra)[0]!r}")
    return {"question": _text(body, "question", required=True),
            "answer": None if answer is None else float(answer)}


def _measurement(body: Dict[str, Any]) -> Dict[str, Any]:
    """A probe call (``call``: ``{"probe": NAME, "args": {...}}``) or commands typed on a
    node (``node`` and ``commands``, a list of command lines)."""
    if "call" in body:
        call = body["call"]
        if (not isinstance(call, dict) or not isinstance(call.get("probe"), str)
                or not isinstance(call.get("args"), dict)):
            raise RecordError('call must be {"probe": NAME, "args": {...}}')
        extra = set(body) - {"kind", "case", "topology", "call"}
        if extra:
            raise RecordError(f"a probe call's measurement has no {sorted(extra)[0]!r}")
        return {"call": call}
    commands = body.get("commands")
    if not isinstance(commands, list) or not all(
            isinstance(c, str) and len(c) <= MAX_TEXT_CHARS for c in commands):
        raise RecordError("a measurement needs a probe call (call) or typed commands "
                          "(node and commands, a list of command lines)")
    extra = set(body) - {"kind", "case", "topology", "node", "commands"}
    if extra:
        raise RecordError(f"typed commands have no {sorted(extra)[0]!r}")
    return {"node": _text(body, "node", required=True), "commands": list(commands)}


def checked_body(data: bytes) -> Dict[str, Any]:
    """The post ``data`` (a JSON object, at most :data:`MAX_BODY_BYTES`) checked: its kind,
    case and topology, and an answer's question and number or a measurement's call or
    typed commands. :class:`RecordError` (400) for anything else, a key of
    :data:`FORBIDDEN` first."""
    if len(data) > MAX_BODY_BYTES:
        raise RecordError(f"the body is larger than {MAX_BODY_BYTES} bytes", 413)
    try:
        body = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise RecordError("the body is not JSON") from None
    if not isinstance(body, dict):
        raise RecordError("the body must be a JSON object")
    for key in FORBIDDEN:
        if key in body:
            raise RecordError(f"{key!r} is the record's to write, not the post's")
    kind = body.get("kind")
    if kind not in KINDS:
        raise RecordError(f"kind must be one of {', '.join(KINDS)}")
    checked = {"kind": kind, "case": _text(body, "case"), "topology": _text(body, "topology")}
    checked.update(_answer(body) if kind == "answer" else _measurement(body))
    return checked


def utc_stamp(now: Optional[datetime] = None) -> str:
    """``now`` (default: this moment) as ISO 8601 UTC with microseconds, as the kit's
    results files write times."""
    when = now or datetime.now(timezone.utc)
    return when.astimezone(timezone.utc).isoformat(timespec="microseconds")


def event_row(user: str, body: Dict[str, Any], recorded_at: str) -> Dict[str, Any]:
    """The row of a checked ``body`` (:func:`checked_body`) posted by hub user ``user`` at
    ``recorded_at`` (the service's clock)."""
    rest = {k: v for k, v in body.items() if k not in ("kind", "case")}
    return {"user": user, "kind": body["kind"], "case": body["case"],
            "recorded_at": recorded_at, "body_json": json.dumps(rest, sort_keys=True)}


def readable_user(reader: str, asked: Optional[str], readers: Sequence[str]) -> Optional[str]:
    """Whose rows ``reader`` may have when asking for ``asked`` (None: everyone's): the
    course's ``readers`` (instructor, admins) anyone's or all; a student their own only
    (their own when they name nobody). :class:`RecordError` (403) otherwise."""
    if reader in readers:
        return asked
    if asked is None or asked == reader:
        return reader
    raise RecordError(f"{reader} may not read {asked}'s record", 403)


def connect(path: Path) -> sqlite3.Connection:
    """The record file at ``path`` (made with :data:`SCHEMA`, mode 600, when missing)."""
    new = not path.exists()
    con = sqlite3.connect(str(path), timeout=30, isolation_level=None,
                          check_same_thread=False)
    con.executescript(SCHEMA)
    if new:
        path.chmod(0o600)
    return con


def append(con: sqlite3.Connection, row: Dict[str, Any]) -> int:
    """Write ``row`` (:func:`event_row`); its id."""
    cursor = con.execute(
        'INSERT INTO events (user, kind, "case", recorded_at, body_json) VALUES (?, ?, ?, ?, ?)',
        (row["user"], row["kind"], row["case"], row["recorded_at"], row["body_json"]))
    return int(cursor.lastrowid or 0)


def events(con: sqlite3.Connection, user: Optional[str]) -> List[Dict[str, Any]]:
    """The rows of ``user`` (None: everyone's) in the order written, each with its body's
    fields beside ``id``, ``user``, ``kind``, ``case`` and ``recorded_at``."""
    sql = 'SELECT id, user, kind, "case", recorded_at, body_json FROM events'
    rows = con.execute(sql + (" WHERE user = ? ORDER BY id" if user is not None
                              else " ORDER BY id"), (user,) if user is not None else ())
    return [{**json.loads(body), "id": i, "user": u, "kind": k, "case": c, "recorded_at": t}
            for i, u, k, c, t, body in rows]
