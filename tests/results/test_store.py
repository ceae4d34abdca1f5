"""The results store: round trips of real parsed output, errors kept, schema versions,
CSV export, crash safety under SIGKILL, and two processes writing at once."""

from __future__ import annotations

import importlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import FIXTURES, ROOT, run_cli

from labtools.errors import InputError, LabtoolsError, StoreError
from labtools.judge.verdicts import Verdict
from labtools.results.records import environment
from labtools.results.store import SCHEMA_VERSION, ResultStore, RunRecord
from labtools.settings import Emulation

SP_FIXTURES = sorted((FIXTURES / "simpleperf").glob("*.jsonl"))
#: parser module -> (tool name, fixture folder, fixture pattern)
OTHER_PARSERS = {
    "ping": ("ping", "ping", "*.txt"),
    "iperf3": ("iperf3", "iperf3", "*.json"),
    "iperf2": ("iperf", "iperf2", "*.txt"),
}


def _parse_simpleperf(path: Path):
    from labtools.tools.parsers.simpleperf import parse

    return parse(path.read_text())


def _record(path: Path, **meta) -> RunRecord:
    return RunRecord.from_parsed(_parse_simpleperf(path), **meta)


@pytest.fixture()
def store(tmp_path):
    return ResultStore(tmp_path / "results" / "labtools.sqlite")


@pytest.mark.parametrize("fixture", SP_FIXTURES, ids=lambda p: p.name)
def test_simpleperf_round_trip(store, portfolio, fixture):
    parsed = _parse_simpleperf(fixture)
    argv = ["simpleperf", "-c", "-I", "10.0.2.4", "-t", "2", "--json"]
    run_id = store.save(RunRecord.from_parsed(parsed, topology=portfolio, src="h1", dst="h4",
                                              command=argv, case="path", label="it's h1-h4"))
    table = store.samples(run_id)
    pd.testing.assert_frame_equal(table, parsed.table, check_dtype=True)
    back = store.get(run_id)
    assert back.summary == json.loads(json.dumps(parsed.summary))
    assert back.raw_output == parsed.raw
    assert back.command == argv
    assert back.topology == "portfolio" and back.topology_dict["name"] == "portfolio"
    assert len(back.topology_dict["links"]) == len(portfolio.links)
    assert back.tool_version == parsed.summary.get("version", "") or ""
    assert back.status == ("error" if parsed.summary.get("error") else "ok")
    row = store.runs().iloc[0]
    assert row["command"] == "simpleperf -c -I 10.0.2.4 -t 2 --json"
    assert row["label"] == "it's h1-h4" and row["case"] == "path"
    assert row["n_samples"] == len(parsed.table)


@pytest.mark.parametrize("module", sorted(OTHER_PARSERS))
def test_other_parsers_round_trip(store, module):
    tool, folder, pattern = OTHER_PARSERS[module]
    files = sorted((FIXTURES / folder).glob(pattern))
    try:
        parser = importlib.import_module(f"labtools.tools.parsers.{module}")
    except ModuleNotFoundError:
        pytest.skip(f"no parser labtools.tools.parsers.{module} yet")
    if not files:
        pytest.skip(f"no {tool} fixtures in tests/fixtures/{folder}")
    for path in files:
        text = path.read_text()
        try:
            parsed = parser.parse(text)
        except LabtoolsError as err:
            run_id = store.save(RunRecord.from_error(tool, err, raw_output=text))
            assert store.get(run_id).raw_output == text
            continue
        run_id = store.save(RunRecord.from_parsed(parsed, src="h1", dst="h4"))
        pd.testing.assert_frame_equal(store.samples(run_id), parsed.table)
        assert store.get(run_id).summary == json.loads(json.dumps(parsed.summary))


def test_dtypes_survive(store):
    """Columns a parser may produce: UTC times, nullable ints, bools, categories, NaN."""
    table = pd.DataFrame({
        "time": pd.to_datetime([1_700_000_000.25, None, 1_700_000_001.5], unit="s", utc=True),
        "seq": pd.array([1, None, 3], dtype="Int64"),
        "lost": [False, True, False],
        "side": pd.Categorical(["sender", "receiver", "sender"]),
        "rtt_ms": [0.043, float("nan"), 61.4],
        "bytes": [1448, 0, 2896],
        "span": pd.to_timedelta([0.5, 1.0, 1.5], unit="s"),
    })
    run_id = store.save(RunRecord(tool="ping", table=table, summary={"min_ms": 0.043}))
    pd.testing.assert_frame_equal(store.samples(run_id), table)
    empty = table.iloc[0:0]
    run_id = store.save(RunRecord(tool="ping", table=empty))
    back = store.samples(run_id)
    assert list(back.columns) == list(table.columns) and back.empty
    assert back["rtt_ms"].dtype == "float64" and back["bytes"].dtype == "int64"


def test_errors_are_kept(store):
    refused = FIXTURES / "simpleperf" / "client_refused.jsonl"
    run_id = store.save(_record(refused, src="h7", dst="h9"))
    failed = store.save(RunRecord.from_error("iperf3", "iperf3 on h1 did not finish within 15 s",
                                             raw_output="partial\n", src="h1", dst="h4"))
    runs = store.runs(status="error")
    assert list(runs["id"]) == [run_id, failed]
    assert "connection refused" in runs.iloc[0]["error"]
    assert runs.iloc[1]["raw_output"] == "partial\n"
    assert store.samples(failed).empty


def test_runs_filters_and_summary_columns(store):
    for path, case in zip(SP_FIXTURES[:3], ("udp", "path", "path")):
        store.save(_record(path, case=case, src="h1", dst="h4"))
    runs = store.runs()
    assert list(runs["id"]) == [1, 2, 3]
    assert "summary.receiver_mbps" in runs.columns
    assert str(runs["started_at"].dtype).startswith("datetime64")
    assert (runs["finished_at"] >= runs["started_at"]).all()
    assert list(store.runs(case="path")["id"]) == [2, 3]
    assert list(store.runs(case=["udp", "path"], id=[1, 3])["id"]) == [1, 3]
    assert store.runs(tool="iperf3").empty
    with pytest.raises(InputError):
        store.runs(colour="red")
    with pytest.raises(StoreError):
        store.samples(99)


def test_bad_records_refused(store):
    with pytest.raises(InputError):
        store.save(RunRecord(tool="ping", status="maybe"))
    with pytest.raises(InputError):
        store.save(RunRecord(tool="ping", emulation="cloud"))
    assert store.runs().empty


@pytest.mark.parametrize("in_vm, mode, word", [("1", "kvm", "vm-kvm"), ("1", "tcg", "vm-tcg"),
                                               ("", "", "native")])
def test_environment(monkeypatch, store, in_vm, mode, word):
    """The run says where it ran in the calibration's words (one vocabulary)."""
    monkeypatch.setenv("LABTOOLS_IN_VM", in_vm)
    monkeypatch.setenv("LABTOOLS_VM_MODE", mode)
    env = environment()
    assert env.emulation.value == word
    assert env.kernel == os.uname().release and env.host == os.uname().nodename
    run_id = store.save(RunRecord(tool="ping"))
    assert store.get(run_id).emulation is Emulation(word)
    assert list(store.runs(emulation=word)["id"]) == [run_id]


def test_schema_version(tmp_path):
    path = tmp_path / "r.sqlite"
    ResultStore(path)
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # a rollback journal: works on the VM shared folder too
    con.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}"):
        ResultStore(path)


def test_not_a_store(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_text("this is not a database\n" * 100)
    with pytest.raises(StoreError):
        ResultStore(junk)
    with pytest.raises(StoreError, match="no results store"):
        ResultStore(tmp_path / "missing.sqlite", create=False)


def test_a_folder_means_the_store_inside_it(tmp_path):
    assert ResultStore(tmp_path).path == tmp_path / "labtools.sqlite"
    assert ResultStore(f"{tmp_path}/new/").path == tmp_path / "new" / "labtools.sqlite"
    assert (tmp_path / "new" / "labtools.sqlite").is_file()


def test_run_refuses_a_store_it_cannot_open_before_anything_starts(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder\n")
    result = run_cli(["run", "portfolio", "path", "--results", str(blocker / "r.sqlite")])
    assert result.returncode == 2 and "results store" in result.stderr
    assert "booting" not in result.stderr and "starting" not in result.stderr


def test_export_csv(store, tmp_path):
    for path in SP_FIXTURES:
        store.save(_record(path, src="h1", dst="h4"))
    runs_csv, samples_csv = store.export_csv(tmp_path / "csv")
    runs = pd.read_csv(runs_csv)
    samples = pd.read_csv(samples_csv)
    assert len(runs) == len(SP_FIXTURES)
    assert len(samples) == runs["n_samples"].sum() > 0
    assert {"run_id", "row", "rate_mbps", "side"} <= set(samples.columns)


def test_results_command(store, tmp_path):
    store.save(_record(FIXTURES / "simpleperf" / "client_t2_i0.5_P2.jsonl",
                       topology="portfolio", src="h1", dst="h4", case="path"))
    store.save(_record(FIXTURES / "simpleperf" / "client_refused.jsonl", src="h7", dst="h9"))
    done = run_cli(["results", "--db", str(store.path)])
    assert done.returncode == 0, done.stderr
    receiver = store.runs().iloc[0]["summary.receiver_mbps"]
    assert f"{receiver:.2f} Mbit/s" in done.stdout and "h1-h4" in done.stdout
    assert "connection refused" in done.stdout
    rows = json.loads(run_cli(["results", "--db", str(store.path), "--json",
                               "--case", "path"]).stdout)
    assert [r["headline"] for r in rows] == [receiver]
    done = run_cli(["results", "--db", str(store.path), "--csv", str(tmp_path / "out")])
    assert (tmp_path / "out" / "samples.csv").is_file(), done.stderr
    missing = run_cli(["results", "--db", str(tmp_path / "none.sqlite")])
    assert missing.returncode == 2 and "no results store" in missing.stderr


# --- crash safety, for real ---------------------------------------------------------
_CHILD = textwrap.dedent("""
    import sys, time
    import labtools.results.store as st
    from labtools.tools.parsers.simpleperf import parse

    db, mode, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    parsed = parse(open(sys.argv[4]).read())
    store = st.ResultStore(db)
    if mode == "hang":
        for _ in range(count):
            print(store.save(st.RunRecord.from_parsed(parsed, label=mode)), flush=True)
        encode = st.table_values

        def hanging(table):
            for i, value in enumerate(encode(table)):
                if i == 5:
                    print("in-transaction", flush=True)
                    time.sleep(300)
                yield value

        st.table_values = hanging
        store.save(st.RunRecord.from_parsed(parsed, label=mode))
    else:
        for _ in range(count):
            print(store.save(st.RunRecord.from_parsed(parsed, label=mode)), flush=True)
""")
_TABLE = FIXTURES / "simpleperf" / "client_t2_i0.5_P2.jsonl"


def _child(db: Path, mode: str, count: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", _CHILD, str(db), mode, str(count),
                             str(_TABLE)], stdout=subprocess.PIPE, text=True, env=env)


def _assert_complete(db: Path) -> pd.DataFrame:
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    orphans = con.execute("SELECT count(*) FROM samples WHERE run_id NOT IN "
                          "(SELECT id FROM runs)").fetchone()[0]
    con.close()
    assert orphans == 0
    store = ResultStore(db)
    runs = store.runs()
    for run_id, n in zip(runs["id"], runs["n_samples"]):
        assert len(store.samples(int(run_id))) == n > 0
    return runs


def test_sigkill_inside_a_save_loses_only_that_run(tmp_path):
    db = tmp_path / "crash.sqlite"
    child = _child(db, "hang", 3)
    try:
        lines = [child.stdout.readline().strip() for _ in range(4)]
        assert lines == ["1", "2", "3", "in-transaction"]
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    runs = _assert_complete(db)
    assert list(runs["id"]) == [1, 2, 3]
    assert ResultStore(db).save(RunRecord(tool="ping")) == 4  # writable again


def test_sigkill_while_saving_in_a_loop(tmp_path):
    db = tmp_path / "loop.sqlite"
    child = _child(db, "loop", 100000)
    try:
        saved = [child.stdout.readline().strip() for _ in range(10)]
        time.sleep(0.3)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    runs = _assert_complete(db)
    assert [int(s) for s in saved] == list(runs["id"])[:10]  # every reported save is there


def test_two_writers(tmp_path):
    db = tmp_path / "two.sqlite"
    children = [_child(db, "loop", 25), _child(db, "loop", 25)]
    outs = [c.communicate(timeout=120)[0].split() for c in children]
    assert [c.returncode for c in children] == [0, 0]
    runs = _assert_complete(db)
    assert len(runs) == 50
    assert sorted(int(i) for out in outs for i in out) == list(range(1, 51))


def test_a_version_1_file_is_upgraded_in_place(tmp_path):
    """A results file written by the kit before schema 2 keeps its runs and gains the
    columns of version 2 (session, step, call, group, context) and the groups table."""
    path = _version_1_file(tmp_path / "v1.sqlite")
    store = ResultStore(path)
    runs = store.runs()
    assert list(runs["id"]) == [1] and runs.iloc[0]["summary.min_ms"] == 61.2
    assert runs.iloc[0]["session_id"] == "" and pd.isna(runs.iloc[0]["step"])
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    con.close()
    assert store.groups() == []
    assert store.save(RunRecord(tool="ping", session_id="s", step=1)) == 2


# --- a bad row is named; reading never writes -------------------------------------------
def _saved_store(tmp_path) -> Path:
    """A store holding real iperf3 runs (tests/fixtures/iperf3), saved by the kit."""
    from labtools.tools.parsers import iperf3

    store = ResultStore(tmp_path / "r.sqlite")
    for name in ("tcp_p1", "udp_p1", "tcp_p3"):
        parsed = iperf3.parse((FIXTURES / "iperf3" / f"{name}.json").read_text())
        store.save(RunRecord.from_parsed(parsed, src="h1", dst="h4", case="path", verdicts=[
            Verdict("receiver_mbps", 28.7, 27.9, "Mbit/s", "ok", "as expected")]))
    return store.path


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


BAD_ROWS = [
    ("UPDATE runs SET summary_json = '{not json' WHERE id = 2", "runs row 2: summary_json is not valid JSON"),
    ("UPDATE runs SET summary_json = '[1, 2]' WHERE id = 2", "runs row 2: summary_json is a list, not an object"),
    ("UPDATE runs SET summary_json = 'null' WHERE id = 2", "runs row 2: summary_json is null"),
    ("UPDATE runs SET started_at = 'yesterday' WHERE id = 3", "runs row 3: started_at is 'yesterday'"),
    ("UPDATE runs SET finished_at = '2026-13-45T99:00' WHERE id = 1", "runs row 1: finished_at is"),
    ("UPDATE runs SET verdicts_json = '[{' WHERE id = 2", "runs row 2: verdicts_json is not valid JSON"),
    ("""UPDATE runs SET verdicts_json = '[{"verdict": "great"}]' WHERE id = 2""",
     "runs row 2: verdicts_json[0]: verdict 'great' is none of ok"),
    ("""UPDATE runs SET verdicts_json = '["ok"]' WHERE id = 2""", "verdicts_json[0] is a text"),
    ("UPDATE runs SET schema_version = 'x' WHERE id = 3", "runs row 3: schema_version 'x'"),
    ("UPDATE schema_version SET version = 'two'", "schema_version row 1: version 'two' is not a whole"),
    ("DELETE FROM schema_version", "schema_version has no row"),
]


@pytest.mark.parametrize("sql, message", BAD_ROWS, ids=[b[1][:40] for b in BAD_ROWS])
def test_a_bad_row_is_a_store_error_naming_the_row(tmp_path, sql, message):
    path = _saved_store(tmp_path)
    con = sqlite3.connect(path)
    con.execute(sql)
    con.commit()
    con.close()
    before = _sha(path)
    with pytest.raises(StoreError, match=re.escape(message)):
        ResultStore(path, create=False).runs()
    if sql.startswith(("UPDATE runs SET summary", "UPDATE runs SET verdicts_json = '[{'",
                       "UPDATE schema_version")):  # the command's way, for a few
        done = run_cli(["results", "--db", str(path)])
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert _sha(path) == before  # reading wrote nothing


@pytest.mark.parametrize("sql, message", [
    ("UPDATE runs SET table_json = 'nope' WHERE id = 2", "runs row 2: table_json is not valid JSON"),
    ("UPDATE samples SET values_json = '[1,' WHERE run_id = 2 AND row = 0",
     "samples row (2, 0): values_json is not valid JSON"),
    ("UPDATE samples SET values_json = '[1]' WHERE run_id = 2 AND row = 0",
     "runs row 2: sample row 0 is not a list of 14 values"),
    ("""UPDATE samples SET values_json = '["client", "sender", "one", 5, 0, 1, 1, 1, 0,
        null, null, null, false, "forward"]' WHERE run_id = 2 AND row = 0""",
     "runs row 2: column stream does not hold int64 values"),
])
def test_a_bad_sample_row_is_named_on_export(tmp_path, sql, message):
    path = _saved_store(tmp_path)
    con = sqlite3.connect(path)
    con.execute(sql)
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=re.escape(message)):
        ResultStore(path, create=False).samples(2)
    with pytest.raises(StoreError, match=re.escape(message)):
        ResultStore(path, create=False).export_csv(tmp_path / "csv")


@pytest.mark.parametrize("content", [b"", b"this is not a database\n" * 100])
def test_reading_an_empty_or_foreign_file_leaves_it_as_it_was(tmp_path, content):
    path = tmp_path / "r.sqlite"
    path.write_bytes(content)
    with pytest.raises(StoreError, match="not a (labtools|usable) results store"):
        ResultStore(path, create=False)
    done = run_cli(["results", "--db", str(path)])
    assert done.returncode == 2 and "results store" in done.stderr
    assert path.read_bytes() == content  # a 0-byte file used to get the kit's schema


def test_another_programs_database_is_not_taken_over(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT)")
    con.commit()
    con.close()
    before = _sha(path)
    for create in (False, True):
        with pytest.raises(StoreError, match="not a labtools results store"):
            ResultStore(path, create=create)
    assert _sha(path) == before


#: ``runs`` as labtools made it at schema versions 1 and 2 (RUNS_V1 in
#: git show f208bc0:labtools/results/schema.py; version 2 added columns to it)
RUNS_V1 = """CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, schema_version INTEGER NOT NULL,
    started_at TEXT NOT NULL, finished_at TEXT NOT NULL,
    topology TEXT NOT NULL DEFAULT '', topology_json TEXT, params_json TEXT NOT NULL,
    src TEXT NOT NULL DEFAULT '', dst TEXT NOT NULL DEFAULT '',
    tool TEXT NOT NULL, tool_version TEXT NOT NULL DEFAULT '',
    command_json TEXT NOT NULL, command TEXT NOT NULL,
    kernel TEXT NOT NULL, emulation TEXT NOT NULL CHECK (emulation IN ('native', 'vm')),
    host TEXT NOT NULL, python TEXT NOT NULL, labtools_version TEXT NOT NULL,
    "case" TEXT NOT NULL DEFAULT '', label TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL CHECK (status IN ('ok', 'error')), error TEXT,
    summary_json TEXT NOT NULL, raw_output TEXT NOT NULL, verdicts_json TEXT NOT NULL,
    table_json TEXT NOT NULL, n_samples INTEGER NOT NULL)"""


def _version_1_file(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    con.execute("INSERT INTO schema_version VALUES (1)")
    con.execute(RUNS_V1)
    con.execute("CREATE TABLE samples (run_id INTEGER NOT NULL, row INTEGER NOT NULL, "
                "values_json TEXT NOT NULL, PRIMARY KEY (run_id, row))")
    con.execute(
        "INSERT INTO runs (schema_version, started_at, finished_at, params_json, tool, "
        "command_json, command, kernel, emulation, host, python, labtools_version, status, "
        "summary_json, raw_output, verdicts_json, table_json, n_samples) VALUES (1, "
        "'2026-11-01T10:00:00+00:00', '2026-11-01T10:00:05+00:00', '{}', 'ping', '[]', '', "
        "'6.1.0', 'vm', 'h', '3.11', '0.1.0', 'ok', '{\"min_ms\": 61.2}', 'PING', '[]', '[]', 0)")
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("writable", [True, False], ids=["writable", "read-only medium"])
def test_an_old_store_is_listed_without_being_upgraded(tmp_path, monkeypatch, writable):
    path = _version_1_file(tmp_path / "v1.sqlite")
    before = _sha(path)
    if not writable:  # as on a read-only mount: the store opens the file with mode=ro
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode == os.W_OK
                            else real_access(p, mode, **kw))
    store = ResultStore(path, create=False)
    runs = store.runs()
    assert list(runs["id"]) == [1] and runs.iloc[0]["summary.min_ms"] == 61.2
    assert runs.iloc[0]["session_id"] == "" and store.groups() == []
    assert store.get(1).summary == {"min_ms": 61.2}
    assert _sha(path) == before
    if writable:  # the first save upgrades it
        assert store.save(RunRecord(tool="ping", session_id="s")) == 2
        con = sqlite3.connect(path)
        assert con.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        con.close()


def test_results_lists_an_old_store_on_a_read_only_mount(tmp_path):
    """For real: a read-only bind mount in a mount namespace of its own (root only)."""
    import shutil

    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare for a read-only mount")
    folder = tmp_path / "ro"
    folder.mkdir()
    path = _version_1_file(folder / "v1.sqlite")
    before = _sha(path)
    script = (f"mount --bind -o ro {folder} {folder} && "
              f"{sys.executable} -m labtools.cli results --db {path} --json")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                          text=True, cwd=str(ROOT), timeout=120)
    if "mount" in done.stderr and done.returncode != 0 and "results" not in done.stderr:
        pytest.skip(f"no read-only mount here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert [r["headline"] for r in json.loads(done.stdout)] == [61.2]
    assert _sha(path) == before


# --- version 3: the tool's exit status, one emulation vocabulary ------------------------
#: a results file the kit wrote at schema version 2 (a real recording, in the lab VM)
VERSION_2 = FIXTURES / "grading" / "earlier" / "results" / "labtools.sqlite"


def _copy_of_version_2(tmp_path: Path) -> Path:
    import shutil

    path = tmp_path / "v2.sqlite"
    shutil.copyfile(VERSION_2, path)
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(2,)]
    con.close()
    return path


def _tables(path: Path) -> dict:
    con = sqlite3.connect(path)
    found = {
        "runs": con.execute("SELECT * FROM runs ORDER BY id").fetchall(),
        "samples": con.execute("SELECT * FROM samples ORDER BY run_id, row").fetchall(),
        "groups": con.execute("SELECT * FROM groups ORDER BY id").fetchall(),
        "sequence": con.execute("SELECT seq FROM sqlite_sequence WHERE name = 'runs'").fetchone(),
        "runs_sql": con.execute("SELECT sql FROM sqlite_master WHERE name = 'runs'").fetchone()[0],
        "indexes": sorted(r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs'")),
        "columns": [r[1] for r in con.execute("PRAGMA table_info(runs)")],
    }
    con.close()
    return found


def test_a_real_version_2_file_is_upgraded_keeping_every_run_and_sample(tmp_path):
    path = _copy_of_version_2(tmp_path)
    before = _tables(path)
    assert "CHECK (emulation IN ('native', 'vm'))" in before["runs_sql"]
    assert len(before["runs"]) == 40 and len(before["samples"]) == 839
    store = ResultStore(path)  # opening to write upgrades it
    after = _tables(path)
    assert after["columns"] == ["id", *before["columns"][1:], "exit_status"]
    assert [row + (None,) for row in before["runs"]] == after["runs"]  # ids and values kept
    assert after["samples"] == before["samples"] and after["groups"] == before["groups"]
    assert after["sequence"] == before["sequence"] and after["indexes"] == ["runs_case_tool"]
    assert "CHECK (emulation" not in after["runs_sql"] and "CHECK (status" in after["runs_sql"]
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    con.close()
    old = store.get(1)
    assert old.emulation is Emulation.VM and old.exit_status is None  # as it was saved
    again = store.measurement(1)  # judged again from its raw output, by today's rules
    assert (again.run_id, again.call, again.context) == (1, old.call, old.context)
    new = store.save(RunRecord(tool="ping", emulation=Emulation.VM_TCG, exit_status=1))
    assert new == 41  # the id sequence went on where it stood
    assert (store.get(new).emulation, store.get(new).exit_status) == (Emulation.VM_TCG, 1)
    con = sqlite3.connect(path)
    con.execute("PRAGMA foreign_keys=ON")
    with pytest.raises(sqlite3.IntegrityError):  # samples still belong to a run
        con.execute("INSERT INTO samples VALUES (999, 0, '[]')")
    con.close()


def test_a_version_2_file_is_read_without_being_upgraded(tmp_path, monkeypatch):
    path = _copy_of_version_2(tmp_path)
    before = _sha(path)
    real_access = os.access  # as on a read-only mount: the store opens the file with mode=ro
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode == os.W_OK
                        else real_access(p, mode, **kw))
    store = ResultStore(path, create=False)
    runs = store.runs()
    assert len(runs) == 40 and set(runs["emulation"]) == {"vm"}
    assert runs["exit_status"].isna().all()
    record = store.get(1)
    assert record.emulation is Emulation.VM and record.exit_status is None
    assert record.call is not None and record.context is not None and record.verdicts
    assert all(isinstance(v, Verdict) for v in record.verdicts)
    assert len(store.groups()) == 6 and store.group(store.groups()[0].id).verdicts
    assert _sha(path) == before


def test_the_rebuild_refuses_to_run_with_foreign_keys_on(tmp_path):
    """With foreign keys on, dropping the old runs table would delete every sample."""
    from labtools.results.schema import rebuild_runs

    path = _copy_of_version_2(tmp_path)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA foreign_keys=ON")
    con.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreError, match="foreign keys off"):
        rebuild_runs(con, path)
    con.execute("ROLLBACK")
    con.close()
    assert len(_tables(path)["samples"]) == 839


def test_a_version_1_file_with_samples_is_upgraded_to_version_3(tmp_path):
    path = _version_1_file(tmp_path / "v1.sqlite")
    con = sqlite3.connect(path)
    con.execute("INSERT INTO samples VALUES (1, 0, '[61.2]')")
    con.commit()
    con.close()
    store = ResultStore(path)
    assert _tables(path)["samples"] == [(1, 0, "[61.2]")]
    record = store.get(1, table=False)
    assert (record.session_id, record.step, record.exit_status) == ("", None, None)
    assert record.emulation is Emulation.VM and record.summary == {"min_ms": 61.2}


def test_the_exit_status_and_the_judges_types_round_trip(store, portfolio):
    from labtools.judge.measurement import JudgeContext, ProbeCall, judge_output

    raw = (FIXTURES / "ping" / "timestamps.txt").read_text()
    call = ProbeCall("ping", {"src": "h1", "dst": "h4", "size_bytes": 56})
    m = judge_output("ping", raw, portfolio, "h1", "h4", JudgeContext(warmup_s=0.0), ["ping"],
                     call=call, exit_status=0, extra={"load": "iperf3 h2 -> h5"})
    run_id = store.save(RunRecord.from_measurement(m, topology=portfolio, durations="quick",
                                                   student="s1"))
    back = store.get(run_id)
    assert (back.exit_status, back.call, back.context) == (0, call, m.context)
    assert back.verdicts == m.verdicts and back.extra == {"load": "iperf3 h2 -> h5"}
    assert (back.durations, back.student) == ("quick", "s1")
    again = store.measurement(run_id)
    assert again.exit_status == 0 and again.extra == m.extra and again.verdicts == m.verdicts
    failed = store.save(RunRecord.from_error("iperf3", "iperf3 on h1 failed (exit status 1): "
                                             "unable to connect", raw_output="refused\n",
                                             exit_status=1))
    assert store.runs(exit_status=1)["id"].tolist() == [failed]


@pytest.mark.parametrize("column, value, message", [
    ("emulation", "cloud", "runs row 1: emulation is not what the kit saves there"),
    ("call_json", '{"args": {}}', "runs row 1: call_json is not what the kit saves there"),
    ("context_json", '{"warmup_s": "soon"}', "runs row 1: context_json is not what the kit"),
])
def test_a_typed_column_that_does_not_read_back_is_named(tmp_path, column, value, message):
    store = ResultStore(tmp_path / "r.sqlite")
    store.save(RunRecord(tool="ping", call=None))
    con = sqlite3.connect(store.path)
    con.execute(f"UPDATE runs SET {column} = ? WHERE id = 1", (value,))
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=re.escape(message)):
        ResultStore(store.path, create=False).get(1)
