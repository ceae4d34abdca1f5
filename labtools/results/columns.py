"""The store's side of a record: a :class:`RunRecord` or :class:`GroupRecord` as the columns
of its row (JSON text where JSON goes), and a row read back into the record with the
judge's types. Nothing outside the store writes or reads this JSON.

A row that does not hold what the kit saved is a :class:`StoreError` naming the row and the
column (``runs row 3: summary_json is not valid JSON``). The run's ``context_json`` holds
the judging context (:meth:`JudgeContext.as_dict`) and, beside it, ``extra``,
``durations`` and ``student`` (the keys the kit has always written there).
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import fields
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

from labtools.errors import InputError, LabtoolsError, StoreError
from labtools.judge.capacity import CapacitySummary
from labtools.judge.measurement import JudgeContext, ProbeCall
from labtools.judge.shares import SharesSummary
from labtools.judge.verdicts import Verdict
from labtools.results.records import (
    GROUP_KINDS,
    STUDENT_KEY,
    Environment,
    GroupRecord,
    GroupSummary,
    RunRecord,
    utc_now,
)
from labtools.results.schema import SCHEMA_VERSION
from labtools.settings import Emulation
from labtools.tools.rows import Rows

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: RunRecord field -> the JSON column it is read back from, the JSON kind it holds, and
#: what an empty column reads as
_RUN_JSON: Dict[str, Tuple[str, type, Any]] = {
    "topology_dict": ("topology_json", dict, None), "params": ("params_json", dict, {}),
    "command": ("command_json", list, []), "summary": ("summary_json", dict, {})}


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


def decode_verdicts(text: Any, where: str) -> List[Verdict]:
    """Saved verdicts: a JSON list of verdict rows, each with a metric and a known
    ``verdict``.

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
    return [_typed(Verdict.from_dict, row, f"{where}[{i}]") for i, row in enumerate(rows)]


def _typed(make: Callable[[Any], Any], data: Any, where: str) -> Any:
    """``make(data)``; what it refuses is a :class:`StoreError` naming ``where``."""
    try:
        return make(data)
    except (KeyError, TypeError, ValueError, LabtoolsError) as err:
        raise StoreError(f"{where} is not what the kit saves there ({err})") from None


def check_run_row(row: Dict[str, Any], where: str) -> Dict[str, Any]:
    """Check a ``runs`` row as the store shows it (its times made ISO 8601 UTC in place);
    return its summary.

    Raises:
        StoreError: a schema version, time, emulation, verdict or summary the kit does not
            save.
    """
    version = row.get("schema_version")
    if type(version) is not int or not 1 <= version <= SCHEMA_VERSION:
        raise StoreError(f"{where}: schema_version {version!r} is not a version "
                         f"labtools {SCHEMA_VERSION} reads")
    for column in ("started_at", "finished_at"):
        row[column] = decode_time(row[column], f"{where}: {column}").isoformat()
    _typed(Emulation.parse, row.get("emulation"), f"{where}: emulation")
    decode_verdicts(row.get("verdicts_json"), f"{where}: verdicts_json")
    summary: Dict[str, Any] = decode_json(row.get("summary_json"), f"{where}: summary_json")
    return summary


def rebuild_table(schema: Any, rows: List[Any]) -> "pd.DataFrame":
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


def _cast(column: "pd.Series", dtype: str) -> "pd.Series":
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


def _context_json(record: RunRecord) -> Optional[str]:
    """The run's ``context_json``: its judging context and what was kept beside it."""
    data: Dict[str, Any] = {} if record.context is None else record.context.as_dict()
    if record.extra:
        data["extra"] = record.extra
    if record.durations:
        data["durations"] = record.durations
    if record.student is not None or data:
        data[STUDENT_KEY] = record.student
    return dumps(data) if data else None


def run_row(record: RunRecord, env: Environment) -> Dict[str, Any]:
    """The ``runs`` row of a record; checks the fields and fills in the environment."""
    if not record.tool:
        raise InputError("a run record needs a tool name")
    if record.status not in ("ok", "error"):
        raise InputError(f"run status must be 'ok' or 'error', not {record.status!r}")
    if record.exit_status is not None and not isinstance(record.exit_status, int):
        raise InputError(f"exit status must be a whole number, not {record.exit_status!r}")
    emulation = Emulation.parse(record.emulation or env.emulation)
    argv = shlex.split(record.command) if isinstance(record.command, str) else [
        str(a) for a in record.command]
    return {
        "schema_version": SCHEMA_VERSION, "started_at": iso_time(record.started_at),
        "finished_at": iso_time(record.finished_at or utc_now()), "topology": record.topology,
        "topology_json": dumps(record.topology_dict) if record.topology_dict else None,
        "params_json": dumps(record.params or {}), "src": record.src, "dst": record.dst,
        "tool": record.tool, "tool_version": record.tool_version,
        "command_json": json.dumps(argv), "command": shlex.join(argv),
        "kernel": record.kernel or env.kernel, "emulation": emulation.value,
        "host": record.host or env.host, "python": record.python or env.python,
        "labtools_version": record.labtools_version or env.labtools_version,
        "case": record.case, "label": record.label, "status": record.status,
        "error": record.error, "exit_status": record.exit_status,
        "summary_json": dumps(record.summary or {}), "raw_output": record.raw_output or "",
        "verdicts_json": dumps([v.as_dict() for v in record.verdicts]),
        "table_json": json.dumps(table_schema(record.table)),
        "n_samples": 0 if record.table is None else len(record.table),
        "session_id": record.session_id, "step": record.step,
        "call_json": None if record.call is None else dumps(record.call.as_dict()),
        "group_id": record.group_id, "context_json": _context_json(record),
    }


def run_record(row: Dict[str, Any], where: str,
               table: Union[Rows, "pd.DataFrame"]) -> RunRecord:
    """The record of a ``runs`` row (its table given), with the judge's types.

    Raises:
        StoreError: a column that does not hold what the kit saves (the error names it).
    """
    check_run_row(dict(row), where)
    known = {f.name for f in fields(RunRecord)} - set(_RUN_JSON) - {
        "verdicts", "call", "context", "emulation", "table", "extra", "durations", "student"}
    values = {k: v for k, v in row.items() if k in known}
    for name, (column, kind, empty) in _RUN_JSON.items():
        values[name] = decode_json(row.get(column), f"{where}: {column}", kind) or empty
    context = decode_json(row.get("context_json"), f"{where}: context_json", dict, {})
    return RunRecord(
        table=table, emulation=Emulation.parse(row["emulation"]),
        verdicts=decode_verdicts(row.get("verdicts_json"), f"{where}: verdicts_json"),
        call=_call(row.get("call_json"), f"{where}: call_json"),
        context=(_typed(JudgeContext.from_dict, context, f"{where}: context_json")
                 if "warmup_s" in context else None),
        extra=dict(context.get("extra") or {}), durations=str(context.get("durations") or ""),
        student=None if not context.get(STUDENT_KEY) else str(context[STUDENT_KEY]), **values)


def _call(text: Any, where: str) -> Optional[ProbeCall]:
    data = decode_json(text, where, dict)
    return None if data is None else _typed(ProbeCall.from_dict, data, where)


def group_row(group: GroupRecord) -> Dict[str, Any]:
    """The ``groups`` row of a group record."""
    return {"id": group.id, "schema_version": SCHEMA_VERSION, "kind": group.kind,
            "session_id": group.session_id, "step": group.step,
            "call_json": None if group.call is None else dumps(group.call.as_dict()),
            "case": group.case, "spec_json": dumps(group.spec),
            "summary_json": dumps(group.summary.as_dict()),
            "verdicts_json": dumps([v.as_dict() for v in group.verdicts]),
            "context_json": None if group.context is None else dumps(group.context.as_dict()),
            "started_at": iso_time(group.started_at or utc_now()),
            "finished_at": iso_time(group.finished_at or utc_now())}


def group_record(row: Dict[str, Any], where: str) -> GroupRecord:
    """The record of a ``groups`` row, with the judge's types.

    Raises:
        StoreError: a column that does not hold what the kit saves (the error names it).
    """
    for column in ("started_at", "finished_at"):
        decode_time(row[column], f"{where}: {column}")
    kind = row.get("kind")
    if kind not in GROUP_KINDS:
        raise StoreError(f"{where}: kind {kind!r} is not flows or capacity")
    context = decode_json(row.get("context_json"), f"{where}: context_json", dict)
    summary = decode_json(row.get("summary_json"), f"{where}: summary_json", dict, {})
    return GroupRecord(
        id=str(row["id"]), kind=kind,
        spec=decode_json(row.get("spec_json"), f"{where}: spec_json", dict, {}),
        summary=_typed(lambda data: _group_summary(kind, data), summary,
                       f"{where}: summary_json"),
        verdicts=decode_verdicts(row.get("verdicts_json"), f"{where}: verdicts_json"),
        session_id=row.get("session_id") or "", step=row.get("step"),
        call=_call(row.get("call_json"), f"{where}: call_json"), case=row.get("case") or "",
        context=(None if context is None else
                 _typed(JudgeContext.from_dict, context, f"{where}: context_json")),
        started_at=row["started_at"], finished_at=row["finished_at"])


def _group_summary(kind: str, data: Dict[str, Any]) -> GroupSummary:
    """A group's typed summary from its JSON form (keys it does not know left out)."""
    if kind == "flows":
        return SharesSummary(**_known(SharesSummary, data))
    return CapacitySummary(**_known(CapacitySummary, data))


def _known(kind: Any, data: Dict[str, Any]) -> Dict[str, Any]:
    """The items of ``data`` that are fields of the dataclass ``kind``."""
    names = {f.name for f in fields(kind)}
    return {k: v for k, v in data.items() if k in names}
