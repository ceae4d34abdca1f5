"""The results store's SQLite schema: its tables, its version, and how an older file is
upgraded (when written to) or read as the current version (when only read).

The tables and their columns are described in :mod:`labtools.results.store`. A file is
upgraded in place only by a command that writes to it; a command that only reads an older
file sees it through temporary views with the current columns (missing ones read as their
defaults), so listing a version 1 file on a read-only medium works and leaves it as it was.
"""

from __future__ import annotations

import sqlite3
from typing import Optional, Set

from labtools.errors import StoreError

SCHEMA_VERSION = 2

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
#: version 2 columns of ``runs`` (added to a version 1 file by ALTER TABLE), with the
#: value a version 1 row reads as
RUNS_V2_COLUMNS = [
    ("session_id", "TEXT NOT NULL DEFAULT ''", "''"), ("step", "INTEGER", "NULL"),
    ("call_json", "TEXT", "NULL"), ("group_id", "TEXT", "NULL"),
    ("context_json", "TEXT", "NULL"),
]
GROUPS = """CREATE TABLE IF NOT EXISTS groups (
        id TEXT PRIMARY KEY, schema_version INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('flows', 'capacity')),
        session_id TEXT NOT NULL DEFAULT '', step INTEGER, call_json TEXT,
        "case" TEXT NOT NULL DEFAULT '', spec_json TEXT NOT NULL, summary_json TEXT NOT NULL,
        verdicts_json TEXT NOT NULL, context_json TEXT, started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL)"""
#: the columns of ``runs`` a save writes (all but ``id``), in order
RUN_COLUMNS = (
    "schema_version", "started_at", "finished_at", "topology", "topology_json",
    "params_json", "src", "dst", "tool", "tool_version", "command_json", "command",
    "kernel", "emulation", "host", "python", "labtools_version", "case", "label",
    "status", "error", "summary_json", "raw_output", "verdicts_json", "table_json",
    "n_samples", "session_id", "step", "call_json", "group_id", "context_json",
)
#: the columns of ``groups``, in order
GROUP_COLUMNS = ("id", "schema_version", "kind", "session_id", "step", "call_json", "case",
                  "spec_json", "summary_json", "verdicts_json", "context_json", "started_at",
                  "finished_at")
STATEMENTS = [
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    RUNS_V1,
    """CREATE TABLE IF NOT EXISTS samples (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        row INTEGER NOT NULL, values_json TEXT NOT NULL, PRIMARY KEY (run_id, row))""",
    'CREATE INDEX IF NOT EXISTS runs_case_tool ON runs ("case", tool)',
    GROUPS,
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
    """Inside a write transaction: create the tables of a new file, or bring an older one
    to :data:`SCHEMA_VERSION`."""
    found = stored_version(con, path)
    for statement in STATEMENTS:
        con.execute(statement)
    if found is None:
        con.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
    if found is None or found < SCHEMA_VERSION:
        have = _columns(con, "main", "runs")
        for name, kind, _ in RUNS_V2_COLUMNS:
            if name not in have:
                con.execute(f'ALTER TABLE runs ADD COLUMN "{name}" {kind}')
        con.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))


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
    extra = [f'{default} AS "{name}"' for name, _, default in RUNS_V2_COLUMNS
             if name not in have]
    if extra:
        con.execute(f"CREATE TEMP VIEW runs AS SELECT *, {', '.join(extra)} FROM main.runs")
    if "groups" not in tables(con):
        con.execute(GROUPS.replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1))


def _columns(con: sqlite3.Connection, schema: str, table: str) -> Set[str]:
    return {r[1] for r in con.execute(f'PRAGMA {schema}.table_info("{table}")')}
