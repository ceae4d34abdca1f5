"""The results store: every measurement saved the moment it completes, crash-safe.

One SQLite file (default ``results/labtools.sqlite``) with a rollback journal and
``synchronous=FULL`` (not WAL: the VM's shared project folder has no shared memory).
:meth:`ResultStore.save` writes one measurement in one transaction and returns only after
the commit reached the disk, so a crashed kernel, a ``kill -9`` or a Ctrl-C loses at most
the measurement still in flight, never a finished one, and never leaves half a run. Several
processes may write to the same file at once.

Schema (version 2; version 1 files are upgraded in place when opened, a newer version is
refused with :class:`StoreError`):

``schema_version(version INTEGER)`` — one row.

``runs`` — one row per measurement: ``id`` (increasing), ``schema_version``,
``started_at`` / ``finished_at`` (ISO 8601 UTC), ``topology`` (name), ``topology_json``
(:func:`labtools.model.catalog.to_dict`, or NULL), ``params_json``, ``src``, ``dst``,
``tool`` (ping, iperf, iperf3, simpleperf), ``tool_version``, ``command_json`` (argument
vector), ``command`` (the same, shell-quoted), ``kernel``, ``emulation`` (``native`` or
``vm``), ``host``, ``python``, ``labtools_version``, ``case``, ``label``, ``status`` (``ok``
or ``error``), ``error`` (one-line reason), ``summary_json`` (the parser's summary, Mbit/s
and ms), ``raw_output`` (always kept), ``verdicts_json`` (rows of metric, expected,
measured, unit, ratio, verdict, reason), ``table_json`` (``[[column, dtype], ...]``),
``n_samples``; since version 2: ``session_id`` (the lab session), ``step`` (its probe call
number in that session), ``call_json`` (probe and identifying arguments), ``group_id``
(concurrent flows or a capacity search), ``context_json`` (what judging needs: warm-up,
offered rate, load, the machine's calibration).

``groups`` (version 2) — one row per set of concurrent flows or capacity search: ``id``,
``kind`` (``flows`` or ``capacity``), ``session_id``, ``step``, ``call_json``, ``case``,
``spec_json`` (the flows, or the search's pair, phases and offered rates),
``summary_json``, ``verdicts_json``, ``context_json``, ``started_at``, ``finished_at``; its
runs carry its ``id`` as ``group_id``.

``samples(run_id, row, values_json)`` — one row per table row; :meth:`ResultStore.samples`
rebuilds the DataFrame with its columns and dtypes.

Judged measurements are rebuilt from their raw output (parse, summarise, judge) without a
network by :meth:`ResultStore.measurement` and :meth:`ResultStore.group`.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from labtools.errors import InputError, StoreError
from labtools.results.rebuild import rebuild_group, rebuild_measurement
from labtools.results.records import (
    RunRecord,
    dumps,
    environment_metadata,
    iso_time,
    rebuild_table,
    table_schema,
    table_values,
    utc_now,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

SCHEMA_VERSION = 2
DEFAULT_PATH = Path("results") / "labtools.sqlite"
BUSY_TIMEOUT_S = 30.0
#: columns of ``runs`` that :meth:`ResultStore.runs` accepts as filters
FILTERS = ("id", "topology", "src", "dst", "tool", "case", "label", "status", "emulation",
           "kernel", "host", "session_id", "group_id")

_RUNS_V1 = """CREATE TABLE IF NOT EXISTS runs (
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
#: version 2 columns of ``runs`` (added to a version 1 file by ALTER TABLE)
_RUNS_V2_COLUMNS = [
    ("session_id", "TEXT NOT NULL DEFAULT ''"), ("step", "INTEGER"), ("call_json", "TEXT"),
    ("group_id", "TEXT"), ("context_json", "TEXT"),
]
_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    _RUNS_V1,
    """CREATE TABLE IF NOT EXISTS samples (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        row INTEGER NOT NULL, values_json TEXT NOT NULL, PRIMARY KEY (run_id, row))""",
    'CREATE INDEX IF NOT EXISTS runs_case_tool ON runs ("case", tool)',
    """CREATE TABLE IF NOT EXISTS groups (
        id TEXT PRIMARY KEY, schema_version INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('flows', 'capacity')),
        session_id TEXT NOT NULL DEFAULT '', step INTEGER, call_json TEXT,
        "case" TEXT NOT NULL DEFAULT '', spec_json TEXT NOT NULL, summary_json TEXT NOT NULL,
        verdicts_json TEXT NOT NULL, context_json TEXT, started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL)""",
]

_RUN_COLUMNS = (
    "schema_version", "started_at", "finished_at", "topology", "topology_json",
    "params_json", "src", "dst", "tool", "tool_version", "command_json", "command",
    "kernel", "emulation", "host", "python", "labtools_version", "case", "label",
    "status", "error", "summary_json", "raw_output", "verdicts_json", "table_json",
    "n_samples", "session_id", "step", "call_json", "group_id", "context_json",
)
_GROUP_COLUMNS = ("id", "schema_version", "kind", "session_id", "step", "call_json", "case",
                  "spec_json", "summary_json", "verdicts_json", "context_json", "started_at",
                  "finished_at")

#: RunRecord field -> the JSON column it is read back from
_DECODED = {"topology_dict": "topology_json", "params": "params_json",
            "command": "command_json", "summary": "summary_json", "verdicts": "verdicts_json",
            "call": "call_json", "context": "context_json"}


def store_file(path: Union[Path, str]) -> Path:
    """The store's file for ``path``: a folder (existing, or written with a trailing ``/``)
    means ``labtools.sqlite`` inside it."""
    text = str(path)
    if Path(text).is_dir() or text.endswith("/"):
        return Path(text) / DEFAULT_PATH.name
    return Path(text)


class ResultStore:
    """A results file. Opening creates it (and its folder) unless ``create`` is False.

    Every method opens its own short connection, so a store object can be kept across a
    whole lab session (and across ``fork``) safely.
    """

    def __init__(self, path: Union[Path, str] = DEFAULT_PATH, create: bool = True) -> None:
        self.path = store_file(path)
        if not self.path.exists():
            if not create:
                raise StoreError(f"no results store at {self.path}")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise StoreError(f"cannot create the results store folder {self.path.parent}: "
                                 f"{err.strerror}") from None
        self._init_schema()

    # --- connections ---------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            con = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
            # A rollback journal, not WAL: WAL needs shared memory, which the VM's shared
            # project folder (9p) lacks; with synchronous=FULL it is just as crash-safe.
            con.execute("PRAGMA journal_mode=DELETE")
            con.execute("PRAGMA synchronous=FULL")
            con.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as err:
            raise StoreError(f"cannot open results store {self.path}: {err}") from None
        return con

    def _init_schema(self) -> None:
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                con.execute(statement)
            found = con.execute("SELECT max(version) FROM schema_version").fetchone()[0]
            if found is None:
                con.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            if found is None or found < SCHEMA_VERSION:
                _upgrade(con)
            con.execute("COMMIT")
        except sqlite3.Error as err:
            _rollback(con)
            raise StoreError(f"{self.path} is not a usable results store: {err}") from None
        finally:
            con.close()
        if found is not None and found > SCHEMA_VERSION:
            raise StoreError(f"{self.path} has schema version {found}; this labtools reads "
                             f"up to {SCHEMA_VERSION}: upgrade labtools")

    # --- writing -------------------------------------------------------------------
    def save(self, record: RunRecord) -> int:
        """Write one measurement and its table in one transaction; return its run id.

        When this returns, the run is on disk (a crash right after loses nothing).
        """
        row = _run_row(record)
        values = table_values(record.table)
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            cursor = con.execute(_insert("runs", _RUN_COLUMNS), [row[c] for c in _RUN_COLUMNS])
            run_id = int(cursor.lastrowid)  # type: ignore[arg-type]
            con.executemany("INSERT INTO samples (run_id, row, values_json) VALUES (?, ?, ?)",
                            ((run_id, i, v) for i, v in enumerate(values)))
            con.execute("COMMIT")
        except sqlite3.Error as err:
            _rollback(con)
            raise StoreError(f"cannot save the {record.tool} run to {self.path}: {err}") from None
        finally:
            con.close()
        record.id = run_id
        return run_id

    def save_group(self, group_id: str, kind: str, spec: Dict[str, Any], summary: Dict[str, Any],
                   verdicts: Sequence[Dict[str, Any]], *, session_id: str = "",
                   step: Optional[int] = None, call: Optional[Dict[str, Any]] = None,
                   case: str = "", context: Optional[Dict[str, Any]] = None,
                   started_at: str = "", finished_at: str = "") -> str:
        """Write the record of concurrent flows or a capacity search (its runs are saved
        on their own, with ``group_id``); return the group id."""
        if kind not in ("flows", "capacity"):
            raise InputError(f"group kind must be 'flows' or 'capacity', not {kind!r}")
        row = {"id": group_id, "schema_version": SCHEMA_VERSION, "kind": kind,
               "session_id": session_id, "step": step,
               "call_json": None if call is None else dumps(call), "case": case,
               "spec_json": dumps(spec), "summary_json": dumps(summary),
               "verdicts_json": dumps(list(verdicts)),
               "context_json": None if context is None else dumps(context),
               "started_at": iso_time(started_at or utc_now()),
               "finished_at": iso_time(finished_at or utc_now())}
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            con.execute(_insert("groups", _GROUP_COLUMNS), [row[c] for c in _GROUP_COLUMNS])
            con.execute("COMMIT")
        except sqlite3.Error as err:
            _rollback(con)
            raise StoreError(f"cannot save the {kind} group to {self.path}: {err}") from None
        finally:
            con.close()
        return group_id

    # --- reading -------------------------------------------------------------------
    def query(self, sql: str, args: Sequence[Any] = ()) -> List[sqlite3.Row]:
        """Rows of a read-only SQL query (columns by name)."""
        con = self._connect()
        con.row_factory = sqlite3.Row
        try:
            return con.execute(sql, list(args)).fetchall()
        except sqlite3.Error as err:
            raise StoreError(f"cannot read {self.path}: {err}") from None
        finally:
            con.close()

    def runs(self, **filters: Any) -> pd.DataFrame:
        """One row per run (oldest first), the ``runs`` columns except ``summary_json``
        and ``table_json``, plus the summary flattened into ``summary.<key>`` columns.

        Filters are column=value (or a list of values), for the columns in
        :data:`FILTERS`: ``store.runs(case='udp', tool=['iperf', 'iperf3'])``.
        """
        import pandas as pd

        where, args = _where(filters)
        rows = self.query(f"SELECT * FROM runs{where} ORDER BY id", args)
        columns = ["id", *_RUN_COLUMNS]
        frame = pd.DataFrame([tuple(r) for r in rows], columns=rows[0].keys() if rows else columns)
        summaries = [json.loads(s) for s in frame["summary_json"]]
        frame = frame.drop(columns=["summary_json", "table_json"])
        for column in ("started_at", "finished_at"):
            frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
        if summaries:
            flat = pd.json_normalize(summaries, sep=".").add_prefix("summary.")
            frame = pd.concat([frame, flat.set_index(frame.index)], axis=1)
        return frame

    def groups(self, **filters: Any) -> List[Dict[str, Any]]:
        """The groups (oldest first) as dicts with their JSON columns decoded; filters as
        for :meth:`runs` on ``id``, ``kind``, ``session_id``, ``case``."""
        allowed = ("id", "kind", "session_id", "case")
        where, args = _where(filters, allowed)
        rows = self.query(f"SELECT * FROM groups{where} ORDER BY started_at, id", args)
        return [_decode_group(dict(r)) for r in rows]

    def samples(self, run_id: int) -> pd.DataFrame:
        """The table of run ``run_id`` with the columns and dtypes it was saved with."""
        head = self.query("SELECT table_json FROM runs WHERE id = ?", (int(run_id),))
        if not head:
            raise StoreError(f"no run {run_id} in {self.path}")
        schema = json.loads(head[0]["table_json"])
        rows = self.query("SELECT values_json FROM samples WHERE run_id = ? ORDER BY row",
                          (int(run_id),))
        return rebuild_table(schema, [json.loads(r["values_json"]) for r in rows])

    def get(self, run_id: int) -> RunRecord:
        """The whole record of run ``run_id`` (table included)."""
        rows = self.query("SELECT * FROM runs WHERE id = ?", (int(run_id),))
        if not rows:
            raise StoreError(f"no run {run_id} in {self.path}")
        row = dict(rows[0])
        known = {f.name for f in fields(RunRecord)}
        values = {k: v for k, v in row.items() if k in known}
        for name, column in _DECODED.items():
            values[name] = json.loads(row[column]) if row.get(column) else None
        values["params"] = values["params"] or {}
        values["command"] = values["command"] or []
        values["summary"] = values["summary"] or {}
        return RunRecord(table=self.samples(run_id), **values)

    def measurement(self, run_id: int) -> Any:
        """Run ``run_id`` judged again from its raw output (no network needed): a
        :class:`~labtools.judge.measurement.Measurement` equal to the one that was saved."""
        return rebuild_measurement(self.get(run_id))

    def group(self, group_id: str) -> Any:
        """Concurrent flows or a capacity search judged again from their runs' raw output."""
        found = self.groups(id=group_id)
        if not found:
            raise StoreError(f"no group {group_id} in {self.path}")
        members = [self.get(int(i)) for i in self.runs(group_id=group_id)["id"]]
        return rebuild_group(found[0], members)

    def export_csv(self, folder: Union[Path, str], **filters: Any) -> List[Path]:
        """Write ``runs.csv`` (as :meth:`runs`) and ``samples.csv`` (run_id, row, then the
        union of all tables' columns) into ``folder``; return both paths."""
        import pandas as pd

        out = Path(folder)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"cannot create {out}: {err.strerror}") from None
        runs = self.runs(**filters)
        tables = []
        for run_id in runs["id"]:
            table = self.samples(int(run_id))
            table.insert(0, "row", range(len(table)))
            table.insert(0, "run_id", int(run_id))
            tables.append(table)
        samples = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(
            columns=["run_id", "row"])
        paths = [out / "runs.csv", out / "samples.csv"]
        try:
            runs.to_csv(paths[0], index=False)
            samples.to_csv(paths[1], index=False)
        except OSError as err:
            raise StoreError(f"cannot write CSV into {out}: {err.strerror}") from None
        return paths


def _upgrade(con: sqlite3.Connection) -> None:
    """Bring a version 1 file to version 2 (new columns; the groups table already exists)."""
    have = {r[1] for r in con.execute("PRAGMA table_info(runs)")}
    for name, kind in _RUNS_V2_COLUMNS:
        if name not in have:
            con.execute(f'ALTER TABLE runs ADD COLUMN "{name}" {kind}')
    con.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))


def _insert(table: str, columns: Sequence[str]) -> str:
    names = ", ".join(f'"{c}"' for c in columns)
    return f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' for _ in columns)})"


def _rollback(con: sqlite3.Connection) -> None:
    if con.in_transaction:
        try:
            con.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the connection is closed next; SQLite rolls back on close


def _where(filters: Dict[str, Any], allowed: Sequence[str] = FILTERS) -> Tuple[str, list]:
    clauses, args = [], []
    for key, value in filters.items():
        if key not in allowed:
            raise InputError(f"cannot filter by {key!r}: use {', '.join(sorted(allowed))}")
        values = list(value) if isinstance(value, (list, tuple, set)) else [value]
        clauses.append(f'"{key}" IN ({", ".join("?" for _ in values)})')
        args.extend(values)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), args


def _decode_group(row: Dict[str, Any]) -> Dict[str, Any]:
    for column in ("call_json", "spec_json", "summary_json", "verdicts_json", "context_json"):
        row[column[: -len("_json")]] = json.loads(row.pop(column)) if row.get(column) else None
    return row


def _run_row(record: RunRecord) -> Dict[str, Any]:
    """The ``runs`` row of a record; checks the fields and fills in the environment."""
    if not record.tool:
        raise InputError("a run record needs a tool name")
    if record.status not in ("ok", "error"):
        raise InputError(f"run status must be 'ok' or 'error', not {record.status!r}")
    env = environment_metadata()
    emulation = record.emulation or env["emulation"]
    if emulation not in ("native", "vm"):
        raise InputError(f"emulation must be 'native' or 'vm', not {emulation!r}")
    argv = shlex.split(record.command) if isinstance(record.command, str) else [
        str(a) for a in record.command]
    found = record.verdicts
    if hasattr(found, "to_json"):  # a DataFrame of verdicts
        found = json.loads(found.to_json(orient="records"))
    return {
        "schema_version": SCHEMA_VERSION, "started_at": iso_time(record.started_at),
        "finished_at": iso_time(record.finished_at or utc_now()), "topology": record.topology,
        "topology_json": dumps(record.topology_dict) if record.topology_dict else None,
        "params_json": dumps(record.params or {}), "src": record.src, "dst": record.dst,
        "tool": record.tool, "tool_version": record.tool_version,
        "command_json": json.dumps(argv), "command": shlex.join(argv),
        "kernel": record.kernel or env["kernel"], "emulation": emulation,
        "host": record.host or env["host"], "python": record.python or env["python"],
        "labtools_version": record.labtools_version or env["labtools_version"],
        "case": record.case, "label": record.label, "status": record.status,
        "error": record.error, "summary_json": dumps(record.summary or {}),
        "raw_output": record.raw_output or "", "verdicts_json": dumps(found or []),
        "table_json": json.dumps(table_schema(record.table)),
        "n_samples": 0 if record.table is None else len(record.table),
        "session_id": record.session_id, "step": record.step,
        "call_json": None if record.call is None else dumps(record.call),
        "group_id": record.group_id,
        "context_json": None if record.context is None else dumps(record.context),
    }
