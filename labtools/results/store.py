"""The results store: every measurement saved the moment it completes, crash-safe.

One SQLite file (default ``results/labtools.sqlite``) with a rollback journal and
``synchronous=FULL`` (not WAL: the VM's shared project folder has no shared memory).
:meth:`ResultStore.save` writes one measurement in one transaction and returns only after
the commit reached the disk, so a crashed kernel, a ``kill -9`` or a Ctrl-C loses at most
the measurement still in flight, never a finished one, and never leaves half a run. Several
processes may write to the same file at once.

Schema (version 3; an older file is upgraded in place by the first command that writes to
it, and read as it is by one that only reads (:mod:`labtools.results.schema`); a newer
version is refused with :class:`StoreError`). A store opened with ``create=False`` is only
read until something is saved to it: listing it never writes to the file. A row that does
not hold what the kit saved (text that is not JSON where JSON goes, a time that is not ISO
8601, a verdict the kit does not give, a version that is not a whole number) is a
:class:`StoreError` naming the table and the row (``runs row 3: summary_json is not valid
JSON``):

``schema_version(version INTEGER)`` — one row.

``runs`` — one row per measurement: ``id`` (increasing), ``schema_version``,
``started_at`` / ``finished_at`` (ISO 8601 UTC), ``topology`` (name), ``topology_json``
(:func:`labtools.model.catalog.to_dict`, or NULL), ``params_json``, ``src``, ``dst``,
``tool`` (ping, iperf, iperf3, simpleperf), ``tool_version``, ``command_json`` (argument
vector), ``command`` (the same, shell-quoted), ``kernel``, ``emulation`` (``native``,
``vm-tcg`` or ``vm-kvm``, :class:`labtools.settings.Emulation`; ``vm`` in a run saved before
version 3: in the lab VM, acceleration not recorded), ``host``, ``python``,
``labtools_version``, ``case``, ``label``, ``status`` (``ok`` or ``error``), ``error``
(one-line reason), ``summary_json`` (the parser's summary, Mbit/s and ms), ``raw_output``
(always kept), ``verdicts_json`` (rows of metric, expected, measured, unit, ratio, verdict,
reason), ``table_json`` (``[[column, dtype], ...]``), ``n_samples``; since version 2:
``session_id`` (the lab session), ``step`` (its probe call number in that session),
``call_json`` (probe and identifying arguments), ``group_id`` (concurrent flows or a
capacity search), ``context_json`` (what judging needs: warm-up, offered rate, load, the
machine's calibration; and the durations' name, who measured, what else the run kept);
since version 3: ``exit_status`` (the tool's; NULL where not known).

``groups`` (version 2) — one row per set of concurrent flows or capacity search: ``id``,
``kind`` (``flows`` or ``capacity``), ``session_id``, ``step``, ``call_json``, ``case``,
``spec_json`` (the flows, or the search's pair, phases and offered rates),
``summary_json``, ``verdicts_json``, ``context_json``, ``started_at``, ``finished_at``; its
runs carry its ``id`` as ``group_id``.

``shell_transcripts`` — one row per terminal session on a node (``labtools shell``, a
notebook's ``run_on``): ``id``, ``session_id``, ``case``, ``topology``, ``node``,
``student``, ``started_at``, ``ended_at``, ``ended_by``, ``commands_json`` (each command,
its output and exit status), ``transcript`` (what the terminal showed); see
:mod:`labtools.results.transcripts`. A file written before it existed reads as holding none.

``predictions`` — one row per compute-it-first answer a student checked: ``id``,
``session_id``, ``case``, ``topology``, ``student``, ``question`` (its id, ``rtt_ms h1
h4``), ``answer`` (NULL when not a number), ``correct`` (0 or 1), ``recorded_at``; see
:mod:`labtools.results.predictions`. A file written before it existed reads as holding none.

``live_events`` — one row per sample or knob change of a live demonstration: ``id``,
``demo_id``, ``kind``, ``t_s`` (seconds after its start), ``recorded_at``, ``session_id``,
``case``, ``topology``, ``values_json``; see :mod:`labtools.results.live_events`. A file
written before it existed reads as holding none.

``store_created(created_at)`` — one row: when the file was made (ISO 8601 UTC), written
with its first tables; a file made before the kit kept it has none.

``samples(run_id, row, values_json)`` — one row per table row; :meth:`ResultStore.samples`
rebuilds the DataFrame with its columns and dtypes.

A record (:mod:`labtools.results.records`) holds the judge's own types; only the store
turns them into these columns and back (:mod:`labtools.results.columns`). Judged
measurements are rebuilt from their raw output (parse, summarise, judge) without a network
by :meth:`ResultStore.measurement` and :meth:`ResultStore.group`.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, List, Sequence, Union

from labtools.errors import StoreError
from labtools.results.columns import group_row, run_row, table_values
from labtools.results.course_record import post_answers, post_run, post_transcript
from labtools.results.live_events import LIVE_EVENT_COLUMNS, LiveEvent, live_event_row
from labtools.results.predictions import (
    PREDICTION_COLUMNS,
    Prediction,
    check_unsaved,
    prediction_row,
)
from labtools.results.records import GroupRecord, RunRecord, environment, utc_now
from labtools.results.schema import (
    GROUP_COLUMNS,
    RUN_COLUMNS,
    SCHEMA_VERSION,
    check_readable,
    create_or_upgrade,
    current_views,
)
from labtools.results.store_records import FILTERS, StoreRecords
from labtools.results.transcripts import TRANSCRIPT_COLUMNS, ShellTranscript, transcript_row

__all__ = ["SCHEMA_VERSION", "DEFAULT_PATH", "FILTERS", "ResultStore", "RunRecord",
           "GroupRecord", "ShellTranscript", "Prediction", "LiveEvent", "store_file"]

DEFAULT_PATH = Path("results") / "labtools.sqlite"
BUSY_TIMEOUT_S = 30.0


def store_file(path: Union[Path, str]) -> Path:
    """The store's file for ``path``: a folder (existing, or written with a trailing ``/``)
    means ``labtools.sqlite`` inside it."""
    text = str(path)
    if Path(text).is_dir() or text.endswith("/"):
        return Path(text) / DEFAULT_PATH.name
    return Path(text)


class ResultStore(StoreRecords):
    """A results file. Opening creates it (and its folder) unless ``create`` is False.

    With ``create=False`` the file must exist and is only read (an older version is read
    as it is, nothing is written) until a measurement is saved to it. Every method opens
    its own short connection, so a store object can be kept across a whole lab session
    (and across ``fork``) safely. Its reads are those of
    :class:`~labtools.results.store_records.StoreRecords` (records, tables, judged
    measurements, CSV) and :class:`~labtools.results.store_reads.StoreReads` (named reads).
    """

    def __init__(self, path: Union[Path, str] = DEFAULT_PATH, create: bool = True) -> None:
        self.path = store_file(path)
        self._version = SCHEMA_VERSION  # as reading sees it
        self._written = False  # tables created or upgraded by this object
        if not self.path.exists():
            if not create:
                raise StoreError(f"no results store at {self.path}")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise StoreError(f"cannot create the results store folder {self.path.parent}: "
                                 f"{err.strerror}") from None
        if create:
            self._init_schema()
        else:
            self._version = self._read_version()

    # --- connections ---------------------------------------------------------------
    def _connect(self, write: bool = False) -> sqlite3.Connection:
        """A connection for writing, or for reading only: that one never changes the file
        (opened read-only where the file cannot be written; an older file seen through
        temporary views of the current version)."""
        try:
            if write:
                con = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S,
                                      isolation_level=None)
                # A rollback journal, not WAL: WAL needs shared memory, which the VM's shared
                # project folder (9p) lacks; with synchronous=FULL it is just as crash-safe.
                con.execute("PRAGMA journal_mode=DELETE")
                con.execute("PRAGMA synchronous=FULL")
                con.execute("PRAGMA foreign_keys=ON")
                return con
            # rw where allowed: a reader then rolls back what a crashed writer left
            mode = "rw" if os.access(self.path, os.W_OK) else "ro"
            con = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode={mode}", uri=True,
                                  timeout=BUSY_TIMEOUT_S, isolation_level=None)
            if self._version < SCHEMA_VERSION:
                current_views(con)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open results store {self.path}: {err}") from None
        return con

    def _read_version(self) -> int:
        con = self._connect()
        try:
            return check_readable(con, self.path)
        except sqlite3.Error as err:
            raise StoreError(f"{self.path} is not a usable results store: {err}") from None
        finally:
            con.close()

    def _init_schema(self) -> None:
        """Create the tables of a new file or upgrade an older one (a write; foreign keys
        off while ``runs`` may be rebuilt, as :func:`~labtools.results.schema.rebuild_runs`
        needs)."""
        with self._transaction(f"{self.path} is not a usable results store",
                               upgrading=True) as con:
            create_or_upgrade(con, self.path)
        self._version, self._written = SCHEMA_VERSION, True

    @contextmanager
    def _transaction(self, failure: str, upgrading: bool = False
                     ) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``) committed when the block ends, rolled
        back when it raises; an SQLite error becomes ``StoreError("{failure}: {error}")``.
        An older file is upgraded before the first write; the upgrade's own transaction
        (``upgrading``) runs with foreign keys off."""
        if not upgrading and not self._written:
            self._init_schema()
        con = self._connect(write=True)
        try:
            if upgrading:
                con.execute("PRAGMA foreign_keys=OFF")  # no effect inside a transaction
            con.execute("BEGIN IMMEDIATE")
            yield con
            con.execute("COMMIT")
        except sqlite3.Error as err:
            _rollback(con)
            raise StoreError(f"{failure}: {err}") from None
        except BaseException:
            _rollback(con)
            raise
        finally:
            con.close()

    # --- writing -------------------------------------------------------------------
    def save(self, record: RunRecord) -> int:
        """Write one measurement and its table in one transaction; return its run id.

        When this returns, the run is on disk (a crash right after loses nothing).
        """
        row = run_row(record, environment())
        values = table_values(record.table)
        with self._transaction(f"cannot save the {record.tool} run to {self.path}") as con:
            cursor = con.execute(_insert("runs", RUN_COLUMNS), [row[c] for c in RUN_COLUMNS])
            run_id = cursor.lastrowid
            if run_id is None:  # pragma: no cover - an INSERT always sets it
                raise StoreError(f"{self.path}: SQLite gave the saved run no id")
            con.executemany("INSERT INTO samples (run_id, row, values_json) VALUES (?, ?, ?)",
                            ((run_id, i, v) for i, v in enumerate(values)))
        record.id = run_id
        post_run(record)  # on a course hub: the course's record too
        return run_id

    def save_group(self, group: GroupRecord) -> str:
        """Write the record of concurrent flows or a capacity search (its runs are saved
        on their own, with ``group_id``); return the group id."""
        row = group_row(group)
        with self._transaction(f"cannot save the {group.kind} group to {self.path}") as con:
            con.execute(_insert("groups", GROUP_COLUMNS), [row[c] for c in GROUP_COLUMNS])
        return group.id

    def save_transcript(self, record: ShellTranscript) -> int:
        """Write a terminal session on a node in one transaction; return its id."""
        row = transcript_row(record)
        with self._transaction(f"cannot save the shell session on {record.node} to "
                               f"{self.path}") as con:
            cursor = con.execute(_insert("shell_transcripts", TRANSCRIPT_COLUMNS),
                                 [row[c] for c in TRANSCRIPT_COLUMNS])
            record.id = int(cursor.lastrowid or 0)
        post_transcript(record)  # on a course hub: the course's record too
        return record.id

    def save_predictions(self, records: Sequence[Prediction]) -> None:
        """Write checked answers in one transaction, each stamped with the time it is
        written (set, with its id, on the record): the times follow the row ids. A record
        that brings its own ``recorded_at`` is refused (:class:`StoreError`)."""
        for record in records:
            check_unsaved(record)
        with self._transaction(f"cannot save the checked answers to {self.path}") as con:
            for record in records:
                row = prediction_row(record, utc_now())
                cursor = con.execute(_insert("predictions", PREDICTION_COLUMNS),
                                     [row[c] for c in PREDICTION_COLUMNS])
                record.id, record.recorded_at = int(cursor.lastrowid or 0), row["recorded_at"]
        post_answers(records)  # on a course hub: the course's record too

    def save_live_events(self, events: Sequence[LiveEvent]) -> None:
        """Write a live demonstration's events in one transaction (their ids are set)."""
        rows = [live_event_row(e) for e in events]
        with self._transaction(f"cannot save the live demonstration to {self.path}") as con:
            for event, row in zip(events, rows):
                cursor = con.execute(_insert("live_events", LIVE_EVENT_COLUMNS),
                                     [row[c] for c in LIVE_EVENT_COLUMNS])
                event.id = int(cursor.lastrowid or 0)

    # --- reading (the rest: StoreRecords, StoreReads) ------------------------------
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


def _insert(table: str, columns: Sequence[str]) -> str:
    names = ", ".join(f'"{c}"' for c in columns)
    return f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' for _ in columns)})"


def _rollback(con: sqlite3.Connection) -> None:
    if con.in_transaction:
        try:
            con.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the connection is closed next; SQLite rolls back on close

