"""The course's record: a service of the hub that keeps every checked answer and every
measurement a student's kit posts, under the student's hub name, at the hub's time.

    python record_service.py --listen 0.0.0.0:8082 --db DATA/course_record.sqlite \\
        --readers teacher,admin1

The hub starts it (a managed service, jupyterhub_config.py); the servers reach it at the
host's address on their network (firewall.py lets them; lab_spawner.py puts the address
in ``LABTOOLS_RECORD_URL``).

- ``POST /events`` with ``Authorization: token TOKEN`` (the server's
  ``JUPYTERHUB_API_TOKEN``) and a JSON body (record_rows.checked_body): the service asks
  the hub whose token it is (``GET {hub API}/user`` with that token), stamps the row with
  that name and its own clock, and appends it to the SQLite file; answers 201 and the
  row's id and time. A body that names a user, a time or a verdict is refused (400).
- ``GET /events?user=NAME`` with a token: the course's instructor and admins
  (``--readers``) read anyone's rows (everyone's without ``user``), a student their own;
  anyone else is refused (403). A token the hub does not know is refused (403).

Every refusal is one line of JSON (``{"error": ...}``). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_rows import (  # noqa: E402
    MAX_BODY_BYTES,
    RecordError,
    append,
    checked_body,
    connect,
    event_row,
    events,
    readable_user,
    utc_stamp,
)

#: how long the service waits for the hub to say whose token it is, in seconds
HUB_TIMEOUT_S = 10


def token_owner(api_url: str, header: str) -> str:
    """The hub name of the user whose token is in the ``Authorization`` ``header``
    (``token TOKEN``), asking the hub at ``api_url``; :class:`RecordError` (403) when the
    hub does not know it, (502) when the hub cannot be asked."""
    kind, _, token = header.partition(" ")
    if kind.lower() not in ("token", "bearer") or not token.strip():
        raise RecordError("a token is needed: Authorization: token TOKEN", 403)
    request = urllib.request.Request(f"{api_url.rstrip('/')}/user", headers={
        "Authorization": f"token {token.strip()}"})
    try:
        with urllib.request.urlopen(request, timeout=HUB_TIMEOUT_S) as answer:
            model = json.loads(answer.read(1 << 20))
    except urllib.error.HTTPError as err:
        raise RecordError(f"the hub does not know this token ({err.code})", 403) from None
    except (OSError, ValueError) as err:
        raise RecordError(f"the hub could not be asked whose token it is: {err}", 502) from None
    if not isinstance(model, dict) or model.get("kind", "user") != "user" or not isinstance(
            model.get("name"), str):
        raise RecordError("the token is not a user's", 403)
    return str(model["name"])


class Record:
    """The record file and who may read it; one connection, one writer at a time."""

    def __init__(self, db: Path, readers: Tuple[str, ...], api_url: str) -> None:
        self.con = connect(db)
        self.readers = readers
        self.api_url = api_url
        self.lock = threading.Lock()

    def post(self, header: str, data: bytes) -> Dict[str, Any]:
        """Check ``data``, identify the token, append the row; the row's id and time."""
        body = checked_body(data)
        user = token_owner(self.api_url, header)
        with self.lock:
            row = event_row(user, body, utc_stamp())
            try:
                row_id = append(self.con, row)
            except sqlite3.Error as err:
                raise RecordError(f"the record could not be written: {err}", 500) from None
        return {"id": row_id, "user": user, "recorded_at": row["recorded_at"]}

    def read(self, header: str, asked: Optional[str]) -> List[Dict[str, Any]]:
        """The rows the token's owner may read of ``asked`` (None: all they may)."""
        reader = token_owner(self.api_url, header)
        whose = readable_user(reader, asked, self.readers)
        with self.lock:
            return events(self.con, whose)


class Handler(BaseHTTPRequestHandler):
    """``POST /events`` and ``GET /events`` (the module's description)."""

    record: Record
    server_version = "labhub-record"

    def _answer(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _path(self) -> Tuple[str, Dict[str, List[str]]]:
        parts = urllib.parse.urlsplit(self.path)
        return parts.path.rstrip("/"), urllib.parse.parse_qs(parts.query)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        path, _ = self._path()
        try:
            if path != "/events":
                raise RecordError(f"no such place: {path}", 404)
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY_BYTES:
                raise RecordError(f"a body of 1 to {MAX_BODY_BYTES} bytes is needed", 413)
            data = self.rfile.read(length)
            self._answer(201, self.record.post(self.headers.get("Authorization", ""), data))
        except (RecordError, ValueError) as err:
            self._answer(getattr(err, "status", 400), {"error": str(err).splitlines()[0]})

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path, query = self._path()
        try:
            if path != "/events":
                raise RecordError(f"no such place: {path}", 404)
            asked = query.get("user", [None])[0]
            rows = self.record.read(self.headers.get("Authorization", ""), asked)
            self._answer(200, {"events": rows})
        except RecordError as err:
            self._answer(err.status, {"error": str(err)})

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's
        sys.stderr.write(f"[course record] {self.address_string()} {format % args}\n")


def main(argv: Optional[List[str]] = None) -> int:
    """Serve the record until stopped (the hub stops it with itself)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", required=True, help="ADDRESS:PORT")
    parser.add_argument("--db", required=True, type=Path, help="the record's SQLite file")
    parser.add_argument("--readers", default="", help="who reads anyone's rows (a,b,...)")
    args = parser.parse_args(argv)
    api_url = os.environ.get("JUPYTERHUB_API_URL", "")
    if not api_url:
        parser.error("JUPYTERHUB_API_URL is not set: the hub starts this service")
    host, _, port = args.listen.rpartition(":")
    Handler.record = Record(args.db, tuple(r for r in args.readers.split(",") if r), api_url)
    server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler)
    server.daemon_threads = True
    print(f"[course record] listening on {args.listen}, keeping {args.db}", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
