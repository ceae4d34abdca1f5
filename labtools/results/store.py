"""The results store: every measurement saved the moment it completes, crash-safe.

One SQLite file (default ``results/labtools.sqlite``) with a rollback journal and
``synchronous=FULL`` (not WAL: the VM's shared project folder has no shared memory).
:meth:`ResultStore.save` writes one measurement in one transaction and returns only after
the commit reached the disk, so a crashed kernel, a ``kill -9`` or a Ctrl-C loses at most the measurement still in flight, never a finished one, and never
leaves half a run. Several processes may write to the same file at once.

Schema (version 1; a file with a newer version is refused with :class:`StoreError`):

``schema_version(version INTEGER)`` — one row.

``runs`` — one row per measurement: ``id`` (increasing), ``schema_version``,
``started_at`` / ``finished_at`` (ISO 8601 UTC; ``save`` sets the finish time when not
given), ``topology`` (name), ``topology_json`` (:func:`labtools.model.catalog.to_dict`, or NULL),
``params_json`` (the topology's parameters), ``src``, ``dst``, ``tool`` (ping, iperf,
iperf3, simpleperf), ``tool_version``, ``command_json`` (argument vector as a JSON list),
``command`` (the same, shell-quoted), ``kernel`` (``uname -r``), ``emulation`` (``native``
or ``vm``), ``host`` (host name), ``python``, ``labtools_version``, ``case`` (udp, link,
path, mux, parallel or empty), ``label`` (free text), ``status`` (``ok`` or ``error``),
``error`` (one-line reason, NULL when ok), ``summary_json`` (the parser's summary, Mbit/s
and ms), ``raw_output`` (the tool's text, always kept), ``verdicts_json`` (rows of metric,
expected, measured, unit, ratio, verdict, reason), ``table_json`` (the table's columns and
dtypes, ``[[name, dtype], ...]``), ``n_samples`` (table rows).

``samples(run_id, row, values_json)`` — one row per table row, the values as a JSON list
in column order; :meth:`ResultStore.samples` rebuilds the DataFrame with its columns and
dtypes (datetimes, nullable integers and booleans included).
"""

from __future__ import annotations

import json
import math
import os
import platform
import shlex
import socket
import sqlite3
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import pandas as pd

from labtools.errors import InputError, StoreError

SCHEMA_VERSION = 1
DEFAULT_PATH = Path("results") / "labtools.sqlite"
BUSY_TIMEOUT_S = 30.0
#: columns of ``runs`` that :meth:`ResultStore.runs` accepts as filters
FILTERS = ("id", "topology", "src", "dst", "tool", "case", "label", "status", "emulation",
           "kernel", "host")

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (
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
        table_json TEXT NOT NULL, n_samples INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS samples (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        row INTEGER NOT NULL, values_json TEXT NOT NULL, PRIMARY KEY (run_id, row))""",
    'CREATE INDEX IF NOT EXISTS runs_case_tool ON runs ("case", tool)',
]

_RUN_COLUMNS = (
    "schema_version", "started_at", "finished_at", "topology", "topology_json",
    "params_json", "src", "dst", "tool", "tool_version", "command_json", "command",
    "kernel", "emulation", "host", "python", "labtools_version", "case", "label",
    "status", "error", "summary_json", "raw_output", "verdicts_json", "table_json",
    "n_samples",
)

#: RunRecord field -> the JSON column it is read back from
_DECODED = {"topology_dict": "topology_json", "params": "params_json",
            "command": "command_json", "summary": "summary_json", "verdicts": "verdicts_json"}


def utc_now() -> str:
    """The current time as ISO 8601 UTC text (microseconds)."""
    return datetime.now(timezone.utc).isoformat()


def environment_metadata() -> Dict[str, str]:
    """Where a measurement runs: kernel (``uname -r``), host name, emulation mode
    (``vm`` when ``LABTOOLS_IN_VM=1``, which the VM runner sets, else ``native``),
    Python version and labtools version."""
    from labtools import __version__

    return {
        "kernel": platform.release(),
        "host": socket.gethostname(),
        "emulation": "vm" if os.environ.get("LABTOOLS_IN_VM") == "1" else "native",
        "python": platform.python_version(),
        "labtools_version": __version__,
    }


@dataclass
class RunRecord:
    """One measurement as saved in the store (see the module docstring for the fields).

    ``command`` is the argument vector (a list of str); ``topology_dict`` the JSON form of
    the topology; ``params`` its parameters; ``table`` the parser's tidy table;
    ``summary`` its totals (Mbit/s, ms); ``verdicts`` rows or a DataFrame of verdicts.
    Environment fields left empty are filled in by :meth:`ResultStore.save`.
    """

    tool: str
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    summary: Dict[str, Any] = field(default_factory=dict)
    raw_output: str = ""
    status: str = "ok"
    error: Optional[str] = None
    started_at: str = field(default_factory=utc_now)
    finished_at: Optional[str] = None
    topology: str = ""
    topology_dict: Optional[Dict[str, Any]] = None
    params: Dict[str, Any] = field(default_factory=dict)
    src: str = ""
    dst: str = ""
    tool_version: str = ""
    command: List[str] = field(default_factory=list)
    kernel: str = ""
    emulation: str = ""
    host: str = ""
    python: str = ""
    labtools_version: str = ""
    case: str = ""
    label: str = ""
    verdicts: Any = None
    id: Optional[int] = None

    @classmethod
    def from_parsed(cls, parsed: Any, **meta: Any) -> "RunRecord":
        """A record from a :class:`labtools.tools.parsers.base.Parsed` plus metadata fields.

        ``topo=<Topology>`` (or ``topology=<Topology>``) fills topology, topology_dict
        and params. The status is
        ``error`` (with the summary's ``error`` text) when the summary reports one,
        unless ``status`` is given. The tool version defaults to the summary's
        ``version`` when the output carried one.
        """
        meta = _with_topology(meta)
        summary = dict(parsed.summary or {})
        failed = summary.get("error")
        meta.setdefault("status", "error" if failed else "ok")
        if meta["status"] == "error":
            meta.setdefault("error", str(failed) if failed else "failed")
        if summary.get("version") and not meta.get("tool_version"):
            meta["tool_version"] = str(summary["version"])
        return cls(tool=parsed.tool, table=parsed.table, summary=summary,
                   raw_output=parsed.raw or "", **meta)

    @classmethod
    def from_error(cls, tool: str, error: Union[str, BaseException], raw_output: str = "",
                   **meta: Any) -> "RunRecord":
        """A record of a failed measurement (the tool failed, timed out or its output did
        not parse): status ``error``, the one-line reason and whatever it printed."""
        meta = _with_topology(meta)
        return cls(tool=tool, status="error", error=str(error) or type(error).__name__,
                   raw_output=raw_output, **meta)


def _with_topology(meta: Dict[str, Any]) -> Dict[str, Any]:
    meta = dict(meta)
    topo = meta.pop("topo", None)
    if meta.get("topology") is not None and not isinstance(meta["topology"], str):
        topo = meta.pop("topology")  # a Topology object given as ``topology=``
    if not meta.get("error"):
        meta.pop("error", None)
    if topo is not None:
        from labtools.model.catalog import to_dict

        meta.setdefault("topology", topo.name)
        meta.setdefault("topology_dict", to_dict(topo))
        meta.setdefault("params", dict(topo.params))
    return meta


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
        table_values = _table_values(record.table)
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            names = ", ".join(f'"{c}"' for c in _RUN_COLUMNS)
            marks = ", ".join("?" for _ in _RUN_COLUMNS)
            cursor = con.execute(f"INSERT INTO runs ({names}) VALUES ({marks})",
                                 [row[c] for c in _RUN_COLUMNS])
            run_id = int(cursor.lastrowid)
            con.executemany("INSERT INTO samples (run_id, row, values_json) VALUES (?, ?, ?)",
                            ((run_id, i, v) for i, v in enumerate(table_values)))
            con.execute("COMMIT")
        except sqlite3.Error as err:
            _rollback(con)
            raise StoreError(f"cannot save the {record.tool} run to {self.path}: {err}") from None
        finally:
            con.close()
        record.id = run_id
        return run_id

    # --- reading -------------------------------------------------------------------
    def _query(self, sql: str, args: Sequence[Any] = ()) -> List[sqlite3.Row]:
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
        where, args = _where(filters)
        rows = self._query(f"SELECT * FROM runs{where} ORDER BY id", args)
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

    def samples(self, run_id: int) -> pd.DataFrame:
        """The table of run ``run_id`` with the columns and dtypes it was saved with."""
        head = self._query("SELECT table_json FROM runs WHERE id = ?", (int(run_id),))
        if not head:
            raise StoreError(f"no run {run_id} in {self.path}")
        schema = json.loads(head[0]["table_json"])
        rows = self._query("SELECT values_json FROM samples WHERE run_id = ? ORDER BY row",
                           (int(run_id),))
        return _rebuild(schema, [json.loads(r["values_json"]) for r in rows])

    def get(self, run_id: int) -> RunRecord:
        """The whole record of run ``run_id`` (table included)."""
        rows = self._query("SELECT * FROM runs WHERE id = ?", (int(run_id),))
        if not rows:
            raise StoreError(f"no run {run_id} in {self.path}")
        row = dict(rows[0])
        known = {f.name for f in fields(RunRecord)}
        values = {k: v for k, v in row.items() if k in known}
        for name, column in _DECODED.items():
            values[name] = json.loads(row[column]) if row[column] else None
        return RunRecord(table=self.samples(run_id), **values)

    def export_csv(self, folder: Union[Path, str], **filters: Any) -> List[Path]:
        """Write ``runs.csv`` (as :meth:`runs`) and ``samples.csv`` (run_id, row, then the
        union of all tables' columns) into ``folder``; return both paths."""
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


def _rollback(con: sqlite3.Connection) -> None:
    if con.in_transaction:
        try:
            con.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the connection is closed next; SQLite rolls back on close


def _where(filters: Dict[str, Any]) -> "tuple[str, list]":
    clauses, args = [], []
    for key, value in filters.items():
        if key not in FILTERS:
            raise InputError(f"cannot filter runs by {key!r}: use {', '.join(FILTERS)}")
        values = list(value) if isinstance(value, (list, tuple, set)) else [value]
        clauses.append(f'"{key}" IN ({", ".join("?" for _ in values)})')
        args.extend(values)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), args


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
    verdicts = record.verdicts
    if isinstance(verdicts, pd.DataFrame):
        verdicts = json.loads(verdicts.to_json(orient="records"))
    table = record.table if record.table is not None else pd.DataFrame()
    return {
        "schema_version": SCHEMA_VERSION, "started_at": _iso(record.started_at),
        "finished_at": _iso(record.finished_at or utc_now()), "topology": record.topology,
        "topology_json": _dumps(record.topology_dict) if record.topology_dict else None,
        "params_json": _dumps(record.params or {}), "src": record.src, "dst": record.dst,
        "tool": record.tool, "tool_version": record.tool_version,
        "command_json": json.dumps(argv), "command": shlex.join(argv),
        "kernel": record.kernel or env["kernel"], "emulation": emulation,
        "host": record.host or env["host"], "python": record.python or env["python"],
        "labtools_version": record.labtools_version or env["labtools_version"],
        "case": record.case, "label": record.label, "status": record.status,
        "error": record.error, "summary_json": _dumps(record.summary or {}),
        "raw_output": record.raw_output or "", "verdicts_json": _dumps(verdicts or []),
        "table_json": json.dumps([[str(c), str(table[c].dtype)] for c in table.columns]),
        "n_samples": len(table),
    }


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InputError(f"time {value} has no time zone: give UTC times")
        return value.astimezone(timezone.utc).isoformat()
    return str(value)


def _plain(value: Any) -> Any:
    """A JSON-ready Python value (NaN/NA -> None, numpy -> Python, times -> text)."""
    if isinstance(value, (list, tuple, dict, str)) or value is None:
        return value
    if isinstance(value, pd.Timestamp):
        return None if pd.isna(value) else value.isoformat()
    if isinstance(value, pd.Timedelta):
        return None if pd.isna(value) else value.total_seconds()
    if pd.isna(value):
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=_plain, allow_nan=False)


def _table_values(table: Optional[pd.DataFrame]) -> List[str]:
    if table is None or table.empty:
        return []
    return [json.dumps([_plain(v) for v in row], default=str, allow_nan=False)
            for row in table.itertuples(index=False, name=None)]


def _rebuild(schema: List[List[str]], rows: List[List[Any]]) -> pd.DataFrame:
    names = [name for name, _ in schema]
    frame = pd.DataFrame(rows, columns=names) if rows else pd.DataFrame(
        {name: pd.Series(dtype=object) for name in names})
    for name, dtype in schema:
        frame[name] = _cast(frame[name], dtype)
    return frame


def _cast(column: pd.Series, dtype: str) -> pd.Series:
    try:
        if dtype.startswith("datetime64"):
            utc = "UTC" in dtype or "," in dtype
            out = pd.to_datetime(column, utc=utc, format="ISO8601")
            return out.astype(dtype) if utc else out
        if dtype.startswith("timedelta64"):
            return pd.to_timedelta(column, unit="s")
        if dtype.startswith("int") and column.isna().any():
            return column.astype("Int64")
        return column.astype(dtype)
    except (TypeError, ValueError):
        return column
