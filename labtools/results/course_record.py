"""The course's record: on a course hub, every checked answer and every measurement is also
posted to a service of the hub, which keeps it under the student's hub name at the hub's
time (``deploy/hub/record_service.py``).

The results file is the student's own, so its times and names can be rewritten; the
hub's record cannot. When ``LABTOOLS_RECORD_URL`` (the hub sets it in a student's
server) and ``JUPYTERHUB_API_TOKEN`` are set, the store posts, after each save (the local
save always comes first: nothing is lost when the hub is away):

- each checked answer (:meth:`ResultStore.save_predictions
  <labtools.results.store.ResultStore.save_predictions>`): its question, number, notebook
  and topology; never whether it was right, nor a time, nor a name (the service refuses
  them: grading checks the number again, the hub writes who and when);
- each run with its probe call (:meth:`ResultStore.save
  <labtools.results.store.ResultStore.save>`), and each terminal session's commands
  (``run_on``, ``labtools shell``: :meth:`ResultStore.save_transcript
  <labtools.results.store.ResultStore.save_transcript>`).

A post that fails prints one line (``not on the course's record: REASON``) and raises
nothing. Standard library only (urllib), :data:`POST_TIMEOUT_S` at most each.
Grading reads the record back (:mod:`labtools.results.course_record_file`).
"""

from __future__ import annotations

import json
import sys
import urllib.error
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence, Tuple

from labtools import settings
from labtools.errors import LabtoolsError

if TYPE_CHECKING:
    from labtools.results.predictions import Prediction
    from labtools.results.records import RunRecord
    from labtools.results.transcripts import ShellTranscript

#: how long one post may take, in seconds
POST_TIMEOUT_S = 5.0
#: the service's place for posts and reads
EVENTS_PATH = "/events"


def _endpoint() -> Optional[Tuple[str, str]]:
    """``(url, token)`` of the course's record, or None off a hub (or when unreadable)."""
    try:
        found = settings.current()
    except LabtoolsError as err:
        print(f"not on the course's record: {err}", file=sys.stderr)
        return None
    if not found.record_url or not found.hub_token:
        return None
    return found.record_url.rstrip("/") + EVENTS_PATH, found.hub_token


def _reason(err: BaseException) -> str:
    """One line saying why a post failed (the service's own words when it answered)."""
    if isinstance(err, urllib.error.HTTPError):
        try:
            said = json.loads(err.read(4096) or b"{}").get("error", "")
        except (OSError, ValueError, AttributeError):
            said = ""
        return f"the record answered {err.code}" + (f": {said}" if said else "")
    if isinstance(err, urllib.error.URLError):
        return f"the record cannot be reached ({err.reason})"
    return str(err) or type(err).__name__


def post_event(body: Dict[str, Any]) -> bool:
    """Post one event ``body`` (an answer or a measurement) to the course's record; True
    when it was recorded, False off a hub or when the post failed (one line printed)."""
    endpoint = _endpoint()
    if endpoint is None:
        return False
    url, token = endpoint
    import urllib.request  # only on a hub: http.client and ssl cost a lab's start under emulation

    try:
        data = json.dumps(body, default=str).encode()
        request = urllib.request.Request(url, data=data, method="POST", headers={
            "Authorization": f"token {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=POST_TIMEOUT_S) as answer:
            answer.read(4096)
        return True
    except (OSError, ValueError) as err:
        print(f"not on the course's record: {' '.join(_reason(err).split())}", file=sys.stderr)
        return False


def post_answers(records: Sequence["Prediction"]) -> None:
    """Post each checked answer of ``records`` (saved: see the module docstring)."""
    for record in records:
        post_event({"kind": "answer", "case": record.case, "topology": record.topology,
                    "question": record.question, "answer": record.answer})


def post_run(record: "RunRecord") -> None:
    """Post the measurement of a saved run that has a probe call (others measure nothing
    the predict-first check asks about)."""
    if record.call is not None:
        post_event({"kind": "measurement", "case": record.case, "topology": record.topology,
                    "call": record.call.as_dict()})


def post_transcript(record: "ShellTranscript") -> None:
    """Post the commands typed in a saved terminal session on a node."""
    commands = [c.command for c in record.commands]
    if commands:
        post_event({"kind": "measurement", "case": record.case, "topology": record.topology,
                    "node": record.node, "commands": commands})
