"""A live demonstration on record: every sample and every knob change, with its time.

A demonstration (:mod:`labtools.lab.live`) samples the running lab about once a second
(queues, RTTs, rates, windows) and changes its links while flows run. Each of these is a
:class:`LiveEvent` saved in the lab's results store the moment it happens, so a
demonstration can be plotted again afterwards, exported and handed out. The store keeps
them in the table ``live_events`` (:data:`labtools.results.schema.LIVE_EVENTS`); only this
module turns a record into its columns and back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence

from labtools.errors import InputError, StoreError
from labtools.results.columns import decode_json, decode_time
from labtools.results.records import utc_now

#: what an event is: the demonstration's start (its flows and links), a flow started, a
#: sample, a knob change, its end
KINDS = ("start", "flow", "sample", "change", "end")
#: the columns of ``live_events`` a save writes (all but ``id``), in order
LIVE_EVENT_COLUMNS = ("demo_id", "kind", "t_s", "recorded_at", "session_id", "case",
                      "topology", "values_json")


@dataclass
class LiveEvent:
    """One event of demonstration ``demo_id``: ``kind`` (one of :data:`KINDS`), ``t_s``
    seconds after its start, ``values`` (JSON-ready; units in the keys), ``recorded_at``
    ISO 8601 UTC; ``session_id``, ``case`` and ``topology`` the lab's."""

    demo_id: str
    kind: str
    t_s: float
    values: Dict[str, Any]
    session_id: str = ""
    case: str = ""
    topology: str = ""
    recorded_at: str = field(default_factory=utc_now)
    id: Optional[int] = None


def live_event_row(event: LiveEvent) -> Dict[str, Any]:
    """The columns of ``event`` (:data:`LIVE_EVENT_COLUMNS`).

    Raises:
        StoreError: an unknown kind, no demonstration id, or values that are not JSON
            (NaN and infinities included: SQLite's JSON has none).
    """
    if event.kind not in KINDS:
        raise StoreError(f"a live event of kind {event.kind!r}: the kinds are {', '.join(KINDS)}")
    if not event.demo_id:
        raise StoreError("a live event needs its demonstration's id")
    try:
        values = json.dumps(event.values, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as err:
        raise StoreError(f"a live {event.kind} event's values are not JSON: {err}") from None
    return {"demo_id": event.demo_id, "kind": event.kind, "t_s": float(event.t_s),
            "recorded_at": event.recorded_at, "session_id": event.session_id,
            "case": event.case, "topology": event.topology, "values_json": values}


def live_event_record(row: Dict[str, Any], where: str) -> LiveEvent:
    """The record of a ``live_events`` row; :class:`StoreError` naming ``where`` for a row
    the kit does not save (an unknown kind, a time that is not ISO 8601, values not JSON)."""
    if row["kind"] not in KINDS:
        raise StoreError(f"{where}: kind {row['kind']!r} is not one of {', '.join(KINDS)}")
    decode_time(row["recorded_at"], f"{where}: recorded_at")
    try:
        t_s = float(row["t_s"])
    except (TypeError, ValueError):
        raise StoreError(f"{where}: t_s {row['t_s']!r} is not a number") from None
    return LiveEvent(
        demo_id=str(row["demo_id"]), kind=str(row["kind"]), t_s=t_s,
        values=decode_json(row["values_json"], f"{where}: values_json"),
        session_id=str(row["session_id"] or ""), case=str(row["case"] or ""),
        topology=str(row["topology"] or ""), recorded_at=str(row["recorded_at"]),
        id=int(row["id"]))


#: what names the latest demonstration of a store (:func:`pick_demo`)
LAST = "last"


def pick_demo(starts: Sequence[LiveEvent], wanted: str) -> str:
    """The id of the demonstration ``wanted`` names among those whose ``start`` events are
    ``starts`` (a store's ``live_events(kind="start")``): :data:`LAST` (the latest
    recorded), its id, or the beginning of its id when only one id begins so.

    Raises:
        InputError: no demonstration recorded, none named so, or several ids begin so.
    """
    if not starts:
        raise InputError("no live demonstration is recorded in this results store")
    if wanted == LAST:
        return max(starts, key=lambda e: (e.recorded_at, e.id or 0)).demo_id
    found = sorted({e.demo_id for e in starts if e.demo_id.startswith(wanted)})
    if len(found) == 1 and wanted:
        return found[0]
    known = ", ".join(f"{e.demo_id[:8]} ({e.case or 'no case'}, {e.recorded_at[:19]})"
                      for e in starts[-5:])
    what = "several demonstrations" if len(found) > 1 else "no demonstration"
    raise InputError(f"{what} with an id beginning {wanted!r}: name one by its id or "
                     f"{LAST!r} (the latest: {known})")
