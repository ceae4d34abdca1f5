"""A recorded live demonstration handed out (labtools.teach.live_export, ``labtools demo
--export``): the notebook, its results file and CSV, written from a demonstration a real
run saved (tests/fixtures/live/demo_dumbbell_rate: a TCP flow and a ping across
dumbbell's switch-to-switch link B, whose rate was changed at 6 s), and the notebook
executed with nbclient, without a network."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import pytest

from labtools.cli import main
from labtools.errors import InputError
from labtools.results.live_events import LAST, live_event_record, pick_demo
from labtools.results.store import ResultStore
from labtools.teach import notebook_files
from labtools.teach.live_export import CSV_COLUMNS, demo_rows
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "live" / "demo_dumbbell_rate.jsonl"


def recorded_events():
    rows = [json.loads(line) for line in RECORDED.read_text().splitlines()]
    return [live_event_record({**row, "id": n}, f"{RECORDED.name}:{n}")
            for n, row in enumerate(rows, 1)]


@pytest.fixture
def store(tmp_path):
    saved = ResultStore(tmp_path / "results" / "labtools.sqlite")
    saved.save_live_events([replace(e, id=None) for e in recorded_events()])
    return saved


def export(store, out, wanted=LAST):
    return main(["demo", "--export", wanted, "--out", str(out), "--results", str(store.path)])


def test_the_handout_is_a_notebook_without_outputs_and_its_files_beside_it(store, tmp_path,
                                                                           capsys):
    out = tmp_path / "handout" / "dumbbell.ipynb"
    assert export(store, out) == 0
    events = recorded_events()
    said = capsys.readouterr().out
    assert events[0].demo_id in said and f"{len(events)} events" in said
    nb = json.loads(out.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    import nbformat
    nbformat.validate(nbformat.reads(out.read_text(), as_version=4))
    copied = ResultStore(out.with_suffix(".sqlite"), create=False).live_events()
    assert [(e.kind, e.t_s, e.values) for e in copied] == [
        (e.kind, e.t_s, e.values) for e in events]
    assert "6s B bw_mbps=4" in nb["cells"][0]["source"]


def test_the_csv_holds_each_sampled_queue_and_the_change(store, tmp_path):
    out = tmp_path / "dumbbell.ipynb"
    assert export(store, out) == 0
    with out.with_suffix(".csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == CSV_COLUMNS
    events = recorded_events()
    sampled = [(e.t_s, e.values["links"]["B"]["backlog_pkts"]) for e in events
               if e.kind == "sample" and "B" in e.values["links"]]
    assert [(float(r["t_s"]), int(float(r["value"]))) for r in rows
            if r["plot"] == "queue"] == sampled
    change = next(e for e in events if e.kind == "change")
    assert [(float(r["t_s"]), r["text"]) for r in rows if r["plot"] == "change"] == [
        (change.t_s, change.values["text"])]
    assert len(rows) == len(demo_rows(events))


def test_the_handout_runs_anywhere_and_draws_the_demonstration(store, tmp_path):
    out = tmp_path / "handout" / "dumbbell.ipynb"
    assert export(store, out) == 0
    store.path.unlink()  # the notebook reads only what is beside it
    nb = notebook_files.execute(out, timeout_s=120)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    texts = "".join(o.get("text", "") + json.dumps(o.get("data", {}).get("text/plain", ""))
                    for o in outputs)
    events = recorded_events()
    assert f"{len(events)} events" in texts and "6s B bw_mbps=4" in texts
    assert any("image/png" in o.get("data", {}) for o in outputs)


def test_a_demonstration_is_named_by_last_its_id_or_the_start_of_it():
    first = recorded_events()[0]
    later = replace(first, demo_id="ab" + first.demo_id[2:], recorded_at="2099-01-01T00:00:00+00:00")
    twin = replace(first, demo_id="ab" + first.demo_id[3:] + "0")
    assert pick_demo([first, later], LAST) == later.demo_id
    assert pick_demo([first, later], first.demo_id[:6]) == first.demo_id
    with pytest.raises(InputError, match="several demonstrations"):
        pick_demo([first, later, twin], "ab")
    with pytest.raises(InputError, match="no demonstration with an id beginning 'zz'"):
        pick_demo([first], "zz")
    with pytest.raises(InputError, match="no live demonstration is recorded"):
        pick_demo([], LAST)


@pytest.mark.parametrize("args, message", [
    (["--export", "last"], "both, and no PRESET"),
    (["--export", "last", "--out", "x.txt"], "name the notebook NAME.ipynb"),
    (["--export", "zz", "--out", "x.ipynb"], "no demonstration with an id beginning 'zz'"),
    (["--export", "last", "--out", "taken.ipynb"], "exists already"),
    (["bdp", "--export", "last", "--out", "x.ipynb"], "no PRESET"),
    ([], "name a PRESET to run, or --export"),
])
def test_a_bad_export_is_refused_in_one_line(store, tmp_path, capsys, monkeypatch, args,
                                             message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken.csv").write_text("")
    assert main(["demo", *args, "--results", str(store.path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "x.ipynb").exists()
