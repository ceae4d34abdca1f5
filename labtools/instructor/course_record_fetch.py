"""``labtools course record``: the course's record fetched from the hub into the course
folder, one file per student, for grading.

On a course hub a service keeps every checked answer and every measurement under the
student's hub name, at the hub's time (``deploy/hub/record_service.py``). The instructor,
in their server (``LABTOOLS_RECORD_URL`` and their ``JUPYTERHUB_API_TOKEN`` are set there),
fetches the whole class's rows (``GET /events``: the course's instructor and admins only)
and the kit writes them to ``COURSE/course-record/STUDENT.json``
(:func:`labtools.results.course_record_file.write_class_record`), where grading finds
each student's own; the autograde sandbox binds only that file, read-only, into the
student's kernel. Fetch again before each autograde: the record only grows.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional

from labtools import settings
from labtools.errors import InputError, ToolError
from labtools.results.course_record import EVENTS_PATH
from labtools.results.course_record_file import write_class_record

#: how long the fetch may take, in seconds (a class's record is a few MB)
FETCH_TIMEOUT_S = 60.0
#: the largest answer read, in bytes
MAX_ANSWER_BYTES = 256 << 20


def fetch_events(url: str, token: str, timeout_s: float = FETCH_TIMEOUT_S
                 ) -> List[Dict[str, Any]]:
    """Every event of the course's record at ``url`` (``http://HOST:PORT``), read with
    ``token`` (the instructor's or an admin's). :class:`ToolError` (one line) when the
    record refuses or cannot be reached."""
    request = urllib.request.Request(url.rstrip("/") + EVENTS_PATH,
                                     headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            data = json.loads(answer.read(MAX_ANSWER_BYTES))
    except urllib.error.HTTPError as err:
        try:
            said = json.loads(err.read(4096) or b"{}").get("error", "")
        except (OSError, ValueError, AttributeError):
            said = ""
        raise ToolError(f"the course's record at {url} answered {err.code}"
                        + (f": {said}" if said else "")) from None
    except urllib.error.URLError as err:
        raise ToolError(f"the course's record at {url} cannot be reached: {err.reason}") from None
    except (OSError, ValueError) as err:
        raise ToolError(f"the course's record at {url}: {err}") from None
    events = data.get("events") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise ToolError(f"the course's record at {url} answered without its events")
    return events


def fetch_into(course: Path, url: Optional[str] = None) -> List[Path]:
    """Fetch the class's record (``url``, default ``LABTOOLS_RECORD_URL``; the token is
    ``JUPYTERHUB_API_TOKEN``) into ``course``; the files written."""
    found = settings.current()
    where = url or found.record_url
    if not where:
        raise InputError("no course record to fetch: give --url http://HOST:PORT (on the "
                         "hub, LABTOOLS_RECORD_URL is set in the instructor's server)")
    if not found.hub_token:
        raise InputError("JUPYTERHUB_API_TOKEN is not set: fetch the record from the "
                         "instructor's server on the hub")
    if not course.is_dir():
        raise InputError(f"--course {course}: no such folder")
    return write_class_record(fetch_events(where, found.hub_token), course)
