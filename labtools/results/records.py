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
import socket
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from labtools import __version__
from labtools.errors import InputError
from labtools.model.catalog import to_dict
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


def rebuild_table(schema: List[List[str]], rows: List[List[Any]]) -> pd.DataFrame:
    """A table from its ``[[column, dtype], ...]`` schema and its JSON rows."""
    import pandas as pd

    names = [name for name, _ in schema]
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
    except (TypeError, ValueError):
        return column
