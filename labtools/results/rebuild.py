"""Saved measurements judged again from their raw output: no network, no root.

A run's record holds what its tool printed, the topology it ran on, the probe call and
the judging context; parsing and judging that again gives back the measurement as it was
judged when it was made (replayed grading and ``labtools results`` build on this).
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Union

from labtools.errors import StoreError
from labtools.judge.capacity import CapacitySearch, judge_capacity
from labtools.judge.measurement import JudgeContext, Measurement, judge_output
from labtools.judge.shares import FlowsMeasurement, judge_flows
from labtools.model.catalog import from_dict
from labtools.model.fairness import parse_flows
from labtools.model.topology import Topology
from labtools.results.records import GroupRecord, RunRecord
from labtools.tools.parsers import parse


def record_topology(record: RunRecord) -> Topology:
    """The topology a run was measured on, as saved with it."""
    if not record.topology_dict:
        raise StoreError(f"run {record.id} was saved without its topology: cannot judge it")
    return from_dict(record.topology_dict)


def _usable(record: RunRecord) -> None:
    if record.status != "ok":
        raise StoreError(f"run {record.id} ({record.tool} {record.src}-{record.dst}) failed: "
                         f"{record.error}")


def rebuild_measurement(record: RunRecord) -> Measurement:
    """The judged measurement of a saved run."""
    _usable(record)
    return judge_output(
        record.tool, record.raw_output, record_topology(record), record.src, record.dst,
        record.context or JudgeContext(), record.command, **_member_meta(record))


def rebuild_group(group: GroupRecord, members: Sequence[RunRecord]
                  ) -> Union[FlowsMeasurement, CapacitySearch]:
    """Concurrent flows or a capacity search from the group's record and its runs (in the
    order they were saved)."""
    if not members:
        raise StoreError(f"group {group.id} has no saved runs")
    for record in members:
        _usable(record)
    topo = record_topology(members[0])
    context = group.context or JudgeContext()
    spec = group.spec
    result: Union[FlowsMeasurement, CapacitySearch]
    if group.kind == "flows":
        result = judge_flows(
            topo, parse_flows(spec["flows"], topo),
            [parse("iperf3", r.raw_output) for r in members],
            context, [r.command for r in members], spec.get("start_spread_ms"),
            [_member_meta(r) for r in members])
    else:
        steps: List[Measurement] = [rebuild_measurement(r) for r in members]
        result = judge_capacity(topo, spec["src"], spec["dst"], steps, spec["phases"],
                                spec["offered_mbps"], context)
    result.group_id = group.id
    result.call = group.call
    result.started_at, result.finished_at = group.started_at, group.finished_at
    return result


def _member_meta(record: RunRecord) -> Dict[str, Any]:
    """What a rebuilt measurement keeps of its record besides the judging."""
    return {"started_at": record.started_at, "finished_at": record.finished_at or "",
            "run_id": record.id, "call": record.call, "extra": dict(record.extra),
            "exit_status": record.exit_status}
