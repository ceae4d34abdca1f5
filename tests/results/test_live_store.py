"""A live demonstration's events in the results store (``live_events``): saved, read back,
filtered; a file written before the table existed reads as holding none and gains it at
its next write; what the kit does not save is refused."""

from __future__ import annotations

import sqlite3

import pytest

from labtools.errors import StoreError
from labtools.results.live_events import LiveEvent
from labtools.results.schema import tables
from labtools.results.store import ResultStore


def events(demo_id: str = "d1"):
    return [LiveEvent(demo_id, "start", 0.0, {"flows": ["tcp h1>h4"]}, case="demo"),
            LiveEvent(demo_id, "sample", 1.02, {"links": {"L2": {"backlog_pkts": 12}},
                                                "interval_s": None}),
            LiveEvent(demo_id, "change", 5.3, {"link": "L2", "knobs": {"delay_ms": 40.0}})]


def test_events_are_saved_and_read_back_in_order(tmp_path):
    store = ResultStore(tmp_path / "r.sqlite")
    saved = events()
    store.save_live_events(saved)
    store.save_live_events(events("d2"))
    assert all(e.id for e in saved)
    back = store.live_events(demo_id="d1")
    assert [(e.kind, e.t_s, e.values) for e in back] == [(e.kind, e.t_s, e.values) for e in saved]
    assert [e.kind for e in store.live_events(kind="change")] == ["change", "change"]
    assert back[0].case == "demo"


def test_a_file_written_before_the_table_existed_holds_none_until_written(tmp_path):
    path = tmp_path / "old.sqlite"
    ResultStore(path)
    con = sqlite3.connect(path)
    con.execute("DROP TABLE live_events")
    con.commit()
    con.close()
    assert ResultStore(path, create=False).live_events() == []
    store = ResultStore(path)
    store.save_live_events(events())
    assert len(store.live_events()) == 3
    con = sqlite3.connect(path)
    assert "live_events" in tables(con)
    con.close()


@pytest.mark.parametrize("event, message", [
    (LiveEvent("d", "guess", 0.0, {}), "kind 'guess'"),
    (LiveEvent("", "sample", 0.0, {}), "needs its demonstration's id"),
    (LiveEvent("d", "sample", 0.0, {"rtt_ms": float("nan")}), "not JSON"),
])
def test_what_the_kit_does_not_save_is_refused(tmp_path, event, message):
    with pytest.raises(StoreError, match=message):
        ResultStore(tmp_path / "r.sqlite").save_live_events([event])


def test_a_row_that_is_not_the_kits_names_its_row(tmp_path):
    path = tmp_path / "r.sqlite"
    ResultStore(path).save_live_events(events())
    con = sqlite3.connect(path)
    con.execute("UPDATE live_events SET values_json = 'nope' WHERE kind = 'change'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="live_events row 3: values_json is not valid JSON"):
        ResultStore(path).live_events()
