"""The results store read back: its rows as records, tables and judged measurements.

:class:`~labtools.results.store.ResultStore` takes these methods: the runs as one
DataFrame with their summaries flattened (:meth:`StoreRecords.runs`), a run's table with
the columns and dtypes it was saved with, a run or a group as its record, judged again
from its raw output without a network, the terminal sessions, checked answers and live
demonstrations, and the runs with their tables written out as CSV. Every row is checked as
it is turned back into a record (:mod:`labtools.results.columns`): one that does not hold
what the kit saved is a :class:`~labtools.errors.StoreError` naming the table and the row.
Filters are column=value (or a list of values) for the columns each method names; another
column is an :class:`~labtools.errors.InputError`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Sequence, Tuple, Union

from labtools.errors import InputError, StoreError
from labtools.judge.capacity import CapacitySearch
from labtools.judge.measurement import Measurement
from labtools.judge.shares import FlowsMeasurement
from labtools.results.columns import (
    check_run_row,
    decode_json,
    group_record,
    rebuild_table,
    run_record,
)
from labtools.results.live_events import LiveEvent, live_event_record
from labtools.results.predictions import Prediction, prediction_record
from labtools.results.rebuild import rebuild_group, rebuild_measurement
from labtools.results.records import GroupRecord, RunRecord
from labtools.results.schema import RUN_COLUMNS, tables
from labtools.results.store_reads import StoreReads
from labtools.results.transcripts import ShellTranscript, transcript_record
from labtools.tools.rows import Rows

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: columns of ``runs`` that :meth:`StoreRecords.runs` accepts as filters
FILTERS = ("id", "topology", "src", "dst", "tool", "case", "label", "status", "emulation",
           "kernel", "host", "session_id", "group_id", "exit_status")


class StoreRecords(StoreReads):
    """The reads of :class:`~labtools.results.store.ResultStore` that give records back
    (see the module); the store gives them its file and its connections."""

    #: the store's file
    path: Path

    def _connect(self, write: bool = False) -> sqlite3.Connection:
        """A connection to the store's file: the store's own (:meth:`ResultStore._connect`)."""
        raise NotImplementedError

    def live_events(self, **filters: Any) -> List[LiveEvent]:
        """A live demonstration's events (oldest first); filters on ``demo_id``, ``kind``,
        ``session_id``, ``case``."""
        rows = self._optional_rows("live_events", filters,
                                   ("demo_id", "kind", "session_id", "case"))
        return [live_event_record(dict(r), f"{self.path}: live_events row {r['id']}")
                for r in rows]

    def transcripts(self, **filters: Any) -> List[ShellTranscript]:
        """The terminal sessions on nodes (oldest first); filters as for :meth:`runs` on
        ``session_id``, ``case``, ``node``, ``student``."""
        rows = self._optional_rows("shell_transcripts", filters,
                                   ("session_id", "case", "node", "student"))
        return [transcript_record(dict(r), f"{self.path}: shell_transcripts row {r['id']}")
                for r in rows]

    def predictions(self, **filters: Any) -> List[Prediction]:
        """The checked compute-it-first answers (oldest first); filters on ``session_id``,
        ``case``, ``student``, ``question``."""
        rows = self._optional_rows("predictions", filters,
                                   ("session_id", "case", "student", "question"))
        return [prediction_record(dict(r), f"{self.path}: predictions row {r['id']}")
                for r in rows]

    def _optional_rows(self, table: str, filters: Dict[str, Any],
                       allowed: Sequence[str]) -> List[sqlite3.Row]:
        """The rows of a table a file written before it existed does not have (none)."""
        where, args = _where(filters, allowed)
        con = self._connect()
        try:
            if table not in tables(con):
                return []
        except sqlite3.Error as err:
            raise StoreError(f"cannot read {self.path}: {err}") from None
        finally:
            con.close()
        return self.query(f"SELECT * FROM {table}{where} ORDER BY id", args)

    def runs(self, **filters: Any) -> pd.DataFrame:
        """One row per run (oldest first), the ``runs`` columns except ``summary_json``
        and ``table_json``, plus the summary flattened into ``summary.<key>`` columns.

        Filters are column=value (or a list of values), for the columns in
        :data:`FILTERS`: ``store.runs(case='udp', tool=['iperf', 'iperf3'])``.

        Raises:
            StoreError: a row whose summary, verdicts, times or schema version are not
                what the kit saves (the error names the row).
        """
        import pandas as pd

        where, args = _where(filters)
        rows = [dict(r) for r in self.query(f"SELECT * FROM runs{where} ORDER BY id", args)]
        summaries = [check_run_row(row, f"{self.path}: runs row {row['id']}") for row in rows]
        columns = list(rows[0]) if rows else ["id", *RUN_COLUMNS]
        frame = pd.DataFrame([[row[c] for c in columns] for row in rows], columns=columns)
        frame = frame.drop(columns=["summary_json", "table_json"])
        for column in ("started_at", "finished_at"):
            frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
        if summaries:
            flat = pd.json_normalize(summaries, sep=".").add_prefix("summary.")
            frame = pd.concat([frame, flat.set_index(frame.index)], axis=1)
        return frame

    def groups(self, **filters: Any) -> List[GroupRecord]:
        """The groups (oldest first); filters as for :meth:`runs` on ``id``, ``kind``,
        ``session_id``, ``case``."""
        where, args = _where(filters, ("id", "kind", "session_id", "case"))
        rows = self.query(f"SELECT * FROM groups{where} ORDER BY started_at, id", args)
        return [group_record(dict(r), f"{self.path}: groups row {r['id']!r}") for r in rows]

    def samples(self, run_id: int) -> pd.DataFrame:
        """The table of run ``run_id`` with the columns and dtypes it was saved with."""
        head = self.query("SELECT table_json FROM runs WHERE id = ?", (int(run_id),))
        if not head:
            raise StoreError(f"no run {run_id} in {self.path}")
        where = f"{self.path}: runs row {int(run_id)}"
        schema = decode_json(head[0]["table_json"], f"{where}: table_json", list, [])
        rows = self.query("SELECT row, values_json FROM samples WHERE run_id = ? ORDER BY row",
                          (int(run_id),))
        values = [decode_json(r["values_json"],
                              f"{self.path}: samples row ({int(run_id)}, {r['row']}): values_json",
                              list) for r in rows]
        try:
            return rebuild_table(schema, values)
        except StoreError as err:
            raise StoreError(f"{where}: {err}") from None

    def get(self, run_id: int, table: bool = True) -> RunRecord:
        """The whole record of run ``run_id`` (its table too, unless ``table`` is False:
        judging it again needs only its raw output)."""
        rows = self.query("SELECT * FROM runs WHERE id = ?", (int(run_id),))
        if not rows:
            raise StoreError(f"no run {run_id} in {self.path}")
        return run_record(dict(rows[0]), f"{self.path}: runs row {int(run_id)}",
                          self.samples(run_id) if table else Rows.empty())

    def measurement(self, run_id: int) -> Measurement:
        """Run ``run_id`` judged again from its raw output (no network needed): a
        :class:`~labtools.judge.measurement.Measurement` equal to the one that was saved."""
        return rebuild_measurement(self.get(run_id, table=False))

    def group(self, group_id: str) -> Union[FlowsMeasurement, CapacitySearch]:
        """Concurrent flows or a capacity search judged again from their runs' raw output."""
        found = self.groups(id=group_id)
        if not found:
            raise StoreError(f"no group {group_id} in {self.path}")
        ids = self.query("SELECT id FROM runs WHERE group_id = ? ORDER BY id", (group_id,))
        members = [self.get(int(row["id"]), table=False) for row in ids]
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


def _where(filters: Dict[str, Any], allowed: Sequence[str] = FILTERS) -> Tuple[str, list]:
    clauses, args = [], []
    for key, value in filters.items():
        if key not in allowed:
            raise InputError(f"cannot filter by {key!r}: use {', '.join(sorted(allowed))}")
        values = list(value) if isinstance(value, (list, tuple, set)) else [value]
        clauses.append(f'"{key}" IN ({", ".join("?" for _ in values)})')
        args.extend(values)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), args
