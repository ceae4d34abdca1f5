"""The results store's SQLite schema: its tables, its version, and how an older file is
upgraded (when written to) or read as the current version (when only read).

The tables and their columns are described in :mod:`labtools.results.store`. A file is
upgraded in place only by a command that writes to it; a command that only reads an older
file sees it through temporary views with the current columns (missing ones read as their
defaults), so listing a version 1 or 2 file on a read-only medium works and leaves it as it
was.

Versions: 2 added a run's session, step, probe call, group and judging context (columns
added with ``ALTER TABLE``) and the ``groups`` table. 3 added the tool's ``exit_status``
and took the ``CHECK (emulation IN ('native', 'vm'))`` off ``runs``: the emulation is one
word of :class:`labtools.settings.Emulation` (``native``, ``vm-tcg``, ``vm-kvm``; an older
run's ``vm`` stays as it was saved: in the lab VM, acceleration not recorded), checked by
the kit when it saves. SQLite cannot drop a constraint, so the upgrade to 3 rebuilds
``runs`` the way SQLite documents for changes ``ALTER TABLE`` cannot make
(https://www.sqlite.org/lang_altertable.html#otheralter): foreign keys off (``samples``
references ``runs``), one transaction: create the new table, copy every row (ids kept, and
the id sequence), drop the old one, rename the new one, make its index again, check the
foreign keys, commit.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from typing import Optional, Set

from labtools.errors import StoreError

SCHEMA_VERSION = 3

#: the columns ``runs`` gained after version 1 and the value an older row reads as:
#: version 2's, then version 3's
ADDED_COLUMNS = [("session_id", "''"), ("step", "NULL"), ("call_json", "NULL"),
                 ("group_id", "NULL"), ("context_json", "NULL"), ("exit_status", "NULL")]
#: ``runs`` (``{name}``: the table's name; the upgrade builds it beside the old one)
RUNS = """CREATE TABLE IF NOT EXISTS {name} (
    id INTEGER PRIMARY KEY AUTOINCREMENT, schema_version INTEGER NOT NULL,
    started_at TEXT NOT NULL, finished_at TEXT NOT NULL,
    topology TEXT NOT NULL DEFAULT '', topology_json TEXT, params_json TEXT NOT NULL,
    src TEXT NOT NULL DEFAULT '', dst TEXT NOT NULL DEFAULT '',
    tool TEXT NOT NULL, tool_version TEXT NOT NULL DEFAULT '',
    command_json TEXT NOT NULL, command TEXT NOT NULL,
    kernel TEXT NOT NULL, emulation TEXT NOT NULL,
    host TEXT NOT NULL, python TEXT NOT NULL, labtools_version TEXT NOT NULL,
    "case" TEXT NOT NULL DEFAULT '', label TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL CHECK (status IN ('ok', 'error')), error TEXT,
    summary_json TEXT NOT NULL, raw_output TEXT NOT NULL, verdicts_json TEXT NOT NULL,
    table_json TEXT NOT NULL, n_samples INTEGER NOT NULL,
    session_id TEXT NOT NULL DEFAULT '', step INTEGER, call_json TEXT, group_id TEXT,
    context_json TEXT, exit_status INTEGER)"""
RUNS_INDEX = 'CREATE INDEX IF NOT EXISTS runs_case_tool ON runs ("case", tool)'
GROUPS = """CREATE TABLE IF NOT EXISTS groups (
        id TEXT PRIMARY KEY, schema_version INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('flows', 'capacity')),
        session_id TEXT NOT NULL DEFAULT '', step INTEGER, call_json TEXT,
        "case" TEXT NOT NULL DEFAULT '', spec_json TEXT NOT NULL, summary_json TEXT NOT NULL,
        verdicts_json TEXT NOT NULL, context_json TEXT, started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL)"""
#: what was typed on a node and what it printed (:mod:`labtools.results.transcripts`); a
#: file written before it existed reads as holding none (created at its next write)
TRANSCRIPTS = """CREATE TABLE IF NOT EXISTS shell_transcripts (
        id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL DEFAULT '',
        "case" TEXT NOT NULL DEFAULT '', topology TEXT NOT NULL DEFAULT '',
        node TEXT NOT NULL, student TEXT, started_at TEXT NOT NULL, ended_at TEXT NOT NULL,
        ended_by TEXT NOT NULL, commands_json TEXT NOT NULL, transcript TEXT NOT NULL)"""
#: the compute-it-first answers a student checked, with their time
#: (:mod:`labtools.results.predictions`); a file written before it existed reads as holding
#: none (created at its next write)
PREDICTIONS = """CREATE TABLE IF NOT EXISTS predictions (
        id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL DEFAULT '',
        "case" TEXT NOT NULL DEFAULT '', topology TEXT NOT NULL DEFAULT '', student TEXT,
        question TEXT NOT NULL, answer REAL, correct INTEGER NOT NULL,
        recorded_at TEXT NOT NULL)"""
#: a live demonstration's samples and knob changes (:mod:`labtools.results.live_events`);
#: a file written before it existed reads as holding none (created at its next write)
LIVE_EVENTS = """CREATE TABLE IF NOT EXISTS live_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT, demo_id TEXT NOT NULL, kind TEXT NOT NULL,
        t_s REAL NOT NULL, recorded_at TEXT NOT NULL, session_id TEXT NOT NULL DEFAULT '',
        "case" TEXT NOT NULL DEFAULT '', topology TEXT NOT NULL DEFAULT '',
        values_json TEXT NOT NULL)"""
#: when the file was made (one row, written by the kit as it makes a new file; a file made
#: before it existed has none): a checked answer cannot be older
#: (:mod:`labtools.judge.answer_record`)
CREATED = "CREATE TABLE IF NOT EXISTS store_created (created_at TEXT NOT NULL)"
#: the columns of ``runs`` a save writes (all but ``id``), in order
RUN_COLUMNS = (
    "schema_version", "started_at", "finished_at", "topology", "topology_json",
    "params_json", "src", "dst", "tool", "tool_version", "command_json", "command",
    "kernel", "emulation", "host", "python", "labtools_version", "case", "label",
    "status", "error", "summary_json", "raw_output", "verdicts_json", "table_json",
    "n_samples", *(name for name, _ in ADDED_COLUMNS),
)
#: the columns of ``groups``, in order
GROUP_COLUMNS = ("id", "schema_version", "kind", "session_id", "step", "call_json", "case",
                  "spec_json", "summary_json", "verdicts_json", "context_json", "started_at",
                  "finished_at")
STATEMENTS = [
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    RUNS.format(name="runs"),
    """CREATE TABLE IF NOT EXISTS samples (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        row INTEGER NOT NULL, values_json TEXT NOT NULL, PRIMARY KEY (run_id, row))""",
    RUNS_INDEX,
    GROUPS,
    TRANSCRIPTS,
    PREDICTIONS,
    LIVE_EVENTS,
    CREATED,
]


def tables(con: sqlite3.Connection, schema: str = "main") -> Set[str]:
    """The tables (and views) of one of the connection's databases."""
    return {r[0] for r in con.execute(
        f"SELECT name FROM {schema}.sqlite_master WHERE type IN ('table', 'view')")}


def stored_version(con: sqlite3.Connection, path: object) -> Optional[int]:
    """The file's schema version; None for a file without the kit's tables (a new one).

    Raises:
        StoreError: the file holds other tables than the kit's, its version is not a
            whole number, is missing beside saved runs, or is newer than this labtools.
    """
    have = tables(con)
    if "schema_version" not in have:
        if have:
            raise StoreError(f"{path} is not a labtools results store (it has tables "
                             f"{', '.join(sorted(have)[:5])}, no schema_version)")
        return None
    rows = con.execute("SELECT rowid, version, typeof(version) FROM schema_version").fetchall()
    for rowid, version, kind in rows:
        if kind != "integer":
            raise StoreError(f"{path}: schema_version row {rowid}: version {version!r} is "
                             "not a whole number")
    if not rows:
        if "runs" in have and con.execute("SELECT 1 FROM runs LIMIT 1").fetchone():
            raise StoreError(f"{path}: schema_version has no row, but the file holds runs")
        return None
    found = max(int(r[1]) for r in rows)
    if found > SCHEMA_VERSION:
        raise StoreError(f"{path} has schema version {found}; this labtools reads up to "
                         f"{SCHEMA_VERSION}: upgrade labtools")
    if found < 1:
        raise StoreError(f"{path}: schema_version {found} is not a version labtools wrote")
    return found


def create_or_upgrade(con: sqlite3.Connection, path: object) -> None:
    """Inside a write transaction, with foreign keys off (:func:`rebuild_runs`): create the
    tables of a new file, or bring an older one to :data:`SCHEMA_VERSION`."""
    found = stored_version(con, path)
    older = "runs" in tables(con) and not _columns(con, "main", "runs") >= set(RUN_COLUMNS)
    for statement in STATEMENTS:
        con.execute(statement)
    if older:
        rebuild_runs(con, path)
    if found is None:
        con.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
        con.execute("INSERT INTO store_created VALUES (?)",
                    (datetime.now(timezone.utc).isoformat(),))
    con.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))


def rebuild_runs(con: sqlite3.Connection, path: object) -> None:
    """Inside a write transaction: ``runs`` made again with the current columns and no
    CHECK on ``emulation``, every row kept with its id (SQLite's procedure for what ALTER
    TABLE cannot change; see the module docstring). Foreign keys must be off: with them on,
    dropping ``runs`` would delete every sample with it.

    Raises:
        StoreError: foreign keys are on, or a sample is left without its run.
    """
    if con.execute("PRAGMA foreign_keys").fetchone()[0]:
        raise StoreError(f"{path}: the results store is rebuilt with foreign keys off only")
    have = _columns(con, "main", "runs")
    sequence = con.execute("SELECT seq FROM sqlite_sequence WHERE name = 'runs'").fetchone()
    con.execute(RUNS.format(name="runs_rebuilt"))
    copied = ", ".join(f'"{c}"' for c in ("id", *RUN_COLUMNS) if c in have)
    con.execute(f"INSERT INTO runs_rebuilt ({copied}) SELECT {copied} FROM runs")
    con.execute("DROP TABLE runs")
    con.execute("ALTER TABLE runs_rebuilt RENAME TO runs")
    if sequence is not None:  # ids are never taken again, as before
        con.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'runs'",
                    (sequence[0],))
    con.execute(RUNS_INDEX)
    orphans = con.execute("PRAGMA foreign_key_check").fetchall()
    if orphans:
        raise StoreError(f"{path}: {len(orphans)} sample row(s) have no run: not upgraded")


def check_readable(con: sqlite3.Connection, path: object) -> int:
    """The version of an existing store opened for reading.

    Raises:
        StoreError: an empty file, not the kit's store, or a version it cannot read.
    """
    found = stored_version(con, path)
    if found is None:
        raise StoreError(f"{path} is not a labtools results store (no saved schema; "
                         "an empty file?)")
    missing = {"runs", "samples"} - tables(con)
    if missing:
        raise StoreError(f"{path} is not a usable results store: no table "
                         f"{', '.join(sorted(missing))}")
    return found


def current_views(con: sqlite3.Connection) -> None:
    """On a connection to an older file opened for reading: temporary views that show it
    with the current columns, without writing to the file."""
    con.execute("PRAGMA temp_store=MEMORY")
    have = _columns(con, "main", "runs")
    extra = [f'{default} AS "{name}"' for name, default in ADDED_COLUMNS if name not in have]
    if extra:
        con.execute(f"CREATE TEMP VIEW runs AS SELECT *, {', '.join(extra)} FROM main.runs")
    if "groups" not in tables(con):
        con.execute(GROUPS.replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1))


def _columns(con: sqlite3.Connection, schema: str, table: str) -> Set[str]:
    return {r[1] for r in con.execute(f'PRAGMA {schema}.table_info("{table}")')}
