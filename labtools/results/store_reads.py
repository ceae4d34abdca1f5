"""The results store's named reads: every query the rest of the kit asks of a results file.

Replayed grading, the ownership checks, the class report and the predict-first check read
a few columns of a few rows; each read is a method here, so the store's SQL stays in the
results layer (``tests/test_layers.py`` checks that no module outside it holds any).
:class:`~labtools.results.store.ResultStore` takes these methods; the rows are
:class:`sqlite3.Row` (columns by name), in the order each method names.
"""

from __future__ import annotations

import sqlite3
from typing import Any, List, Optional, Sequence


class StoreReads:
    """The named reads of :class:`~labtools.results.store.ResultStore` (see the module)."""

    def query(self, sql: str, args: Sequence[Any] = ()) -> List[sqlite3.Row]:
        """Rows of a read-only SQL query: the store's own (:meth:`ResultStore.query`)."""
        raise NotImplementedError

    def cases(self) -> List[str]:
        """The cases (notebooks) the runs were measured for, in the order of their first
        run."""
        rows = self.query('SELECT "case", MIN(id) AS first FROM runs GROUP BY "case" '
                          "ORDER BY first")
        return [row["case"] for row in rows]

    def successful_runs(self) -> List[sqlite3.Row]:
        """``id``, ``raw_output``, ``topology_json`` of every run whose status is ``ok``,
        oldest first."""
        return self.query("SELECT id, raw_output, topology_json FROM runs "
                          "WHERE status = 'ok' ORDER BY id")

    def probe_call_runs(self, case: str) -> List[sqlite3.Row]:
        """``id``, ``session_id``, ``step``, ``call_json``, ``started_at`` of the runs of
        ``case`` that answer a probe call on their own (status ``ok``, a call recorded, in
        no group), oldest first."""
        return self.query(
            'SELECT id, session_id, step, call_json, started_at FROM runs WHERE "case" = ? '
            "AND status = ? AND call_json IS NOT NULL AND group_id IS NULL ORDER BY id",
            (case, "ok"))

    def probe_call_groups(self, case: str) -> List[sqlite3.Row]:
        """``id``, ``session_id``, ``step``, ``call_json``, ``started_at`` of the groups of
        ``case``, by start time."""
        return self.query(
            'SELECT id, session_id, step, call_json, started_at FROM groups WHERE "case" = ? '
            "ORDER BY started_at", (case,))

    def first_run_id(self, session_id: str) -> Optional[int]:
        """The id of lab session ``session_id``'s first run (None: it has none)."""
        rows = self.query("SELECT id FROM runs WHERE session_id = ? ORDER BY id LIMIT 1",
                          (session_id,))
        return int(rows[0]["id"]) if rows else None

    def call_times(self, case: str) -> List[sqlite3.Row]:
        """``call_json``, ``started_at``, ``id`` of every run of ``case`` with a probe call
        recorded (whatever its status), oldest first."""
        return self.query('SELECT call_json, started_at, id FROM runs WHERE "case" = ? '
                          "AND call_json IS NOT NULL ORDER BY id", (case,))

    def every_call_time(self) -> List[sqlite3.Row]:
        """``case``, ``topology``, ``call_json``, ``started_at``, ``id`` of every run with a
        probe call recorded, whatever its notebook or status, oldest first."""
        return self.query('SELECT "case", topology, call_json, started_at, id FROM runs '
                          "WHERE call_json IS NOT NULL ORDER BY id")

    def created_at(self) -> Optional[str]:
        """When the file was made (ISO 8601 UTC, :data:`labtools.results.schema.CREATED`);
        None for a file made before the kit kept it."""
        if not self.query("SELECT name FROM sqlite_master WHERE type = 'table' AND "
                          "name = 'store_created'"):
            return None
        rows = self.query("SELECT MIN(created_at) AS created_at FROM store_created")
        return str(rows[0]["created_at"]) if rows and rows[0]["created_at"] else None

    def owner_columns(self, case: str) -> List[sqlite3.Row]:
        """``id``, ``topology_json``, ``context_json`` of every run of ``case`` (who and
        what network each says it was measured by and on)."""
        return self.query('SELECT id, topology_json, context_json FROM runs WHERE "case" = ? '
                          "ORDER BY id", (case,))

    def topology_texts(self, case: str) -> List[str]:
        """The distinct ``topology_json`` texts of the runs of ``case`` (none missing)."""
        rows = self.query('SELECT DISTINCT topology_json FROM runs WHERE "case" = ? AND '
                          "topology_json IS NOT NULL", (case,))
        return [row["topology_json"] for row in rows]
