"""A measurement as the results store keeps it: the record, its environment, and how its
values become JSON and come back (tables with their dtypes included).

Field names follow the store's columns (:mod:`labtools.results.store`). The parser's
summary (``summary``) keeps every number the tool printed; the verdicts, the probe call and
the judging context are saved beside it, so a record can be judged again without a network.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shlex
import socket
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from labtools import __version__
from labtools.errors import InputError, StoreError
from labtools.model.catalog import to_dict
from labtools.results.schema import SCHEMA_VERSION
from labtools.tools.rows import Rows

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def utc_now() -> str:
    """The current time as ISO 8601 UTC text (microseconds)."""
    return datetime.now(timezone.utc).isoformat()


def environment_metadata() -> Dict[str, str]:
    """Where a measurement runs: kernel (``uname -r``), host name, emulation mode
    (``vm`` when ``LABTOOLS_IN_VM=1``, which the VM runner sets, else ``native``),
    Python version and labtools version."""
    return {
        "kernel": platform.release(),
        "host": socket.gethostname(),
        "emulation": "vm" if os.environ.get("LABTOOLS_IN_VM") == "1" else "native",
        "python": platform.python_version(),
        "labtools_version": __version__,
    }


@dataclass
class RunRecord:
    """One measurement as saved in the store (see :mod:`labtools.results.store` for the
    columns).

    ``command`` is the argument vector (a list of str); ``topology_dict`` the JSON form of
    the topology; ``params`` its parameters; ``table`` the parser's tidy rows
    (:class:`~labtools.tools.rows.Rows`; a DataFrame when read back from the store);
    ``summary`` its totals (Mbit/s, ms); ``verdicts`` rows or a DataFrame of verdicts;
    ``session_id`` and ``step`` say which lab session made it and as which probe call
    (``call``: probe and arguments); ``group_id`` ties the runs of concurrent flows or of a
    capacity search together; ``context`` is what judging needs besides the output.
    Environment fields left empty are filled in by :meth:`ResultStore.save`.
    """

    tool: str
    table: Union[Rows, "pd.DataFrame"] = field(default_factory=Rows.empty)
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
    session_id: str = ""
    step: Optional[int] = None
    call: Optional[Dict[str, Any]] = None
    group_id: Optional[str] = None
    context: Optional[Dict[str, Any]] = None
    id: Optional[int] = None

    @classmethod
    def from_measurement(cls, m: Any, **meta: Any) -> "RunRecord":
        """A record of a judged :class:`~labtools.judge.measurement.Measurement`: its output,
        table, verdicts, probe call and judging context, plus metadata fields."""
        meta.setdefault("started_at", m.started_at or utc_now())
        meta.setdefault("finished_at", m.finished_at or None)
        meta.setdefault("src", m.src)
        meta.setdefault("dst", m.dst)
        meta.setdefault("command", list(m.command))
        context = m.context.as_dict()
        if m.extra:
            context["extra"] = dict(m.extra)  # e.g. the start spread of concurrent flows
        return cls.from_parsed(
            m.parsed, verdicts=[v.as_dict() for v in m.verdicts],
            call=None if m.call is None else m.call.as_dict(), context=context, **meta)

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
        return cls(tool=parsed.tool, table=parsed.rows, summary=summary,
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
        meta.setdefault("topology", topo.name)
        meta.setdefault("topology_dict", to_dict(topo))
        meta.setdefault("params", dict(topo.params))
    return meta


def iso_time(value: Any) -> str:
    """ISO 8601 UTC text of a time (a timezone-aware datetime, or text kept as it is)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InputError(f"time {value} has no time zone: give UTC times")
        return value.astimezone(timezone.utc).isoformat()
    return str(value)


def plain(value: Any) -> Any:
    """A JSON-ready Python value (NaN/NA -> None, numpy -> Python, times -> text)."""
    if isinstance(value, (list, tuple, dict, str, bool, int)) or value is None:
        return value  # numpy's integers are not int: they go on to .item() below
    if type(value) is float:
        return value if math.isfinite(value) else None
    import pandas as pd

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


def dumps(obj: Any) -> str:
    """JSON text of ``obj`` (NaN and numpy values made plain; never NaN in the text)."""
    return json.dumps(obj, default=plain, allow_nan=False)


def table_schema(table: Union[Rows, "pd.DataFrame", None]) -> List[List[str]]:
    """``[[column, dtype], ...]`` of a table (rows or a DataFrame)."""
    if table is None:
        return []
    if isinstance(table, Rows):
        return table.schema()
    return [[str(c), str(table[c].dtype)] for c in table.columns]


def table_values(table: Union[Rows, "pd.DataFrame", None]) -> List[str]:
    """Each table row as a JSON list, in column order."""
    if table is None or not len(table):
        return []
    if isinstance(table, Rows):
        return table.json_rows()
    return [json.dumps([plain(v) for v in row], default=str, allow_nan=False)
            for row in table.itertuples(index=False, name=None)]


def decode_json(text: Any, where: str, kind: type = dict, empty: Any = None) -> Any:
    """A JSON column's value: ``kind`` (dict or list), or ``empty`` for NULL/"".

    Args:
        where: the row and column, for the error (``runs row 3: summary_json``).

    Raises:
        StoreError: not JSON, or JSON of another kind.
    """
    if text is None or text == "":
        return empty
    if not isinstance(text, str):
        raise StoreError(f"{where} is {type(text).__name__} {text!r}, not JSON text")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise StoreError(f"{where} is not valid JSON ({err})") from None
    if not isinstance(value, kind):
        raise StoreError(f"{where} is {_json_kind(value)}, not "
                         f"{'an object' if kind is dict else 'a list'}")
    return value


def _json_kind(value: Any) -> str:
    kinds = {dict: "an object", list: "a list", str: "a text", bool: "true/false",
             int: "a number", float: "a number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def decode_time(text: Any, where: str) -> datetime:
    """A saved ISO 8601 time as an aware UTC datetime (a time without zone is UTC).

    Raises:
        StoreError: not an ISO 8601 time.
    """
    try:
        value = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise StoreError(f"{where} is {text!r}, not an ISO 8601 time") from None
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def decode_verdicts(text: Any, where: str) -> List[Dict[str, Any]]:
    """Saved verdict rows: a JSON list of objects, each with a known ``verdict``.

    Raises:
        StoreError: not such a list.
    """
    from labtools.judge.policy import VERDICT_ORDER

    rows = decode_json(text, where, list, [])
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise StoreError(f"{where}[{i}] is {_json_kind(row)}, not a verdict row (an object)")
        if row.get("verdict") not in VERDICT_ORDER:
            raise StoreError(f"{where}[{i}]: verdict {row.get('verdict')!r} is none of "
                             f"{', '.join(VERDICT_ORDER)}")
    return rows


def check_run_row(row: Dict[str, Any], where: str) -> Dict[str, Any]:
    """Check a ``runs`` row as the store shows it (its times made ISO 8601 UTC in place);
    return its summary.

    Raises:
        StoreError: a schema version, time, verdict or summary the kit does not save.
    """
    version = row.get("schema_version")
    if type(version) is not int or not 1 <= version <= SCHEMA_VERSION:
        raise StoreError(f"{where}: schema_version {version!r} is not a version "
                         f"labtools {SCHEMA_VERSION} reads")
    for column in ("started_at", "finished_at"):
        row[column] = decode_time(row[column], f"{where}: {column}").isoformat()
    decode_verdicts(row.get("verdicts_json"), f"{where}: verdicts_json")
    summary: Dict[str, Any] = decode_json(row.get("summary_json"), f"{where}: summary_json")
    return summary


def rebuild_table(schema: Any, rows: List[Any]) -> pd.DataFrame:
    """A table from its ``[[column, dtype], ...]`` schema and its rows (JSON lists).

    Raises:
        StoreError: a malformed schema, a row of another length, or values that do not
            fit their column's dtype.
    """
    import pandas as pd

    if not isinstance(schema, list) or not all(
            isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c)
            for c in schema):
        raise StoreError("table_json is not a list of [column, dtype]")
    names = [name for name, _ in schema]
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(names):
            raise StoreError(f"sample row {i} is not a list of {len(names)} values")
    frame = pd.DataFrame(rows, columns=names) if rows else pd.DataFrame(
        {name: pd.Series(dtype=object) for name in names})
    for name, dtype in schema:
        frame[name] = _cast(frame[name], dtype)
    return frame


def _cast(column: pd.Series, dtype: str) -> pd.Series:
    import pandas as pd

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
    except (TypeError, ValueError, OverflowError) as err:
        raise StoreError(f"column {column.name} does not hold {dtype} values "
                         f"({str(err).splitlines()[0][:80]})") from None


def run_row(record: RunRecord) -> Dict[str, Any]:
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
