"""A measurement as the results store keeps it: the record of a run, the record of a group of
runs (concurrent flows, a capacity search), and where the run was made.

A record holds the judge's own types: the probe call (:class:`ProbeCall`), the judging
context (:class:`JudgeContext`), the verdicts (:class:`Verdict`), the group's typed summary;
a run's ``summary`` is the parser's own summary (every number the tool printed, as the
parser gives it: a dict), kept beside its raw output so a record can be judged again
without a network. Only the store turns them into JSON and back
(:mod:`labtools.results.columns`).
"""

from __future__ import annotations

import platform
import socket
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from labtools import __version__, settings
from labtools.errors import InputError
from labtools.judge.capacity import CapacitySummary
from labtools.judge.measurement import JudgeContext, Measurement, ProbeCall
from labtools.judge.shares import SharesSummary
from labtools.judge.verdicts import Verdict
from labtools.model.catalog import to_dict
from labtools.settings import Emulation
from labtools.tools.parsers.base import Parsed
from labtools.tools.rows import Rows

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: what a group record sums up: concurrent flows or a capacity search
GroupSummary = Union[SharesSummary, CapacitySummary]
#: the kinds of group, and their summaries' types
GROUP_KINDS = {"flows": SharesSummary, "capacity": CapacitySummary}


def utc_now() -> str:
    """The current time as ISO 8601 UTC text (microseconds)."""
    return datetime.now(timezone.utc).isoformat()


#: the run context's key of the student who measured (``RunRecord.student``)
STUDENT_KEY = "student"

@dataclass(frozen=True)
class Environment:
    """Where a measurement runs: kernel (``uname -r``), host name, emulation (the VM runner
    says which in its guest, :mod:`labtools.settings`), Python and labtools versions."""

    kernel: str
    host: str
    emulation: Emulation
    python: str
    labtools_version: str


def environment() -> Environment:
    """This machine's :class:`Environment` now."""
    return Environment(platform.release(), socket.gethostname(),
                       settings.current().emulation, platform.python_version(), __version__)


@dataclass
class RunRecord:
    """One measurement as saved in the store (see :mod:`labtools.results.store` for the
    columns).

    ``command`` is the argument vector; ``topology_dict`` the JSON form of the topology;
    ``params`` its parameters; ``table`` the parser's tidy rows
    (:class:`~labtools.tools.rows.Rows`; a DataFrame when read back from the store);
    ``summary`` the parser's totals (Mbit/s, ms); ``exit_status`` the tool's own exit
    status (None where not known: a saved output, a run saved before the store kept it);
    ``verdicts`` the judge's; ``session_id`` and ``step`` say which lab session made it and
    as which probe call (``call``); ``group_id`` ties the runs of concurrent flows or of a
    capacity search together; ``context`` is what judging needs besides the output;
    ``extra`` what the run kept beside it (e.g. the flows' start spread); ``durations``
    the name of the session's durations (a replay follows them); ``student`` who measured
    (the JupyterHub user; grading checks it). Environment fields left empty are filled in
    when the store saves the record.
    """

    tool: str
    table: Union[Rows, "pd.DataFrame"] = field(default_factory=Rows.empty)
    summary: Dict[str, Any] = field(default_factory=dict)
    raw_output: str = ""
    exit_status: Optional[int] = None
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
    emulation: Optional[Emulation] = None
    host: str = ""
    python: str = ""
    labtools_version: str = ""
    case: str = ""
    label: str = ""
    verdicts: List[Verdict] = field(default_factory=list)
    session_id: str = ""
    step: Optional[int] = None
    call: Optional[ProbeCall] = None
    group_id: Optional[str] = None
    context: Optional[JudgeContext] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    durations: str = ""
    student: Optional[str] = None
    id: Optional[int] = None

    @classmethod
    def from_measurement(cls, m: Measurement, **meta: Any) -> "RunRecord":
        """A record of a judged measurement: its output, table, exit status, verdicts,
        probe call, judging context and what it kept beside them, plus metadata fields."""
        meta.setdefault("started_at", m.started_at or utc_now())
        meta.setdefault("finished_at", m.finished_at or None)
        meta.setdefault("src", m.src)
        meta.setdefault("dst", m.dst)
        meta.setdefault("command", list(m.command))
        meta.setdefault("exit_status", m.exit_status)
        return cls.from_parsed(m.parsed, verdicts=list(m.verdicts), call=m.call,
                               context=m.context, extra=dict(m.extra), **meta)

    @classmethod
    def from_parsed(cls, parsed: Parsed, **meta: Any) -> "RunRecord":
        """A record of a parsed run plus metadata fields.

        ``topo=<Topology>`` (or ``topology=<Topology>``) fills topology, topology_dict
        and params. The status is ``error`` (with the summary's ``error`` text) when the
        summary reports one, unless ``status`` is given. The tool version defaults to the
        summary's ``version`` when the output carried one.
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


@dataclass
class GroupRecord:
    """The record of concurrent flows or a capacity search (its runs are saved on their
    own, with ``group_id`` = ``id``).

    ``kind`` is ``flows`` or ``capacity``; ``spec`` what was measured, in the form the
    judge reads it back (the flows as ``h1:h4x2,h2:h5`` and their start spread in ms, or the
    search's pair, phases and offered rates in Mbit/s); ``summary`` the judged summary."""

    id: str
    kind: str
    spec: Dict[str, Any]
    summary: GroupSummary
    verdicts: List[Verdict]
    session_id: str = ""
    step: Optional[int] = None
    call: Optional[ProbeCall] = None
    case: str = ""
    context: Optional[JudgeContext] = None
    started_at: str = field(default_factory=utc_now)
    finished_at: str = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        if self.kind not in GROUP_KINDS:
            raise InputError(f"group kind must be 'flows' or 'capacity', not {self.kind!r}")


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
