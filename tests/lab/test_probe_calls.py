"""A probe's saved call is the key its recorded results are replayed by for grading
(:mod:`labtools.lab.replay`): the probes build it from their options value
(:mod:`labtools.tools.args`), and every call recorded in the grading fixture (real runs in
the lab VM, two classes) is made again by the probe today, key for key."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Callable, Dict, List, Tuple

import pytest

from labtools.judge.measurement import ProbeCall
from labtools.lab import load, probes
from labtools.lab.base import LabBase
from labtools.model.fairness import parse_flows
from labtools.model.json_topology import from_dict
from tests.conftest import FIXTURES

STORES = (FIXTURES / "grading" / "results" / "labtools.sqlite",
          FIXTURES / "grading" / "earlier" / "results" / "labtools.sqlite")


class _Enough(Exception):
    """The call looked for has been made."""


class CallRecorder(LabBase):
    """A lab that measures nothing: it keeps each probe call it is asked to perform, and
    stops the probe after ``calls`` of them."""

    def __init__(self, topology: Any, calls: int = 1) -> None:
        super().__init__(topology)
        self.calls: List[ProbeCall] = []
        self.stop_after = calls

    def perform(self, call: ProbeCall, measure: Callable[[], Any]) -> Any:
        self.calls.append(call)
        if len(self.calls) >= self.stop_after:
            raise _Enough()
        return None


def _concurrent(lab: CallRecorder, flows: str, **rest: Any) -> Any:
    return probes.concurrent_iperf3(lab, parse_flows(flows, lab.topo), **rest)


#: probe name -> how a notebook calls it with the saved arguments
PROBES: Dict[str, Callable[..., Any]] = {
    "ping": probes.ping, "iperf3": probes.iperf3, "iperf_udp": probes.iperf_udp,
    "simpleperf": probes.simpleperf, "concurrent_iperf3": _concurrent,
    "ping_under_load": load.ping_under_load,
}


def _recorded() -> List[Tuple[str, str]]:
    """(topology JSON, call JSON) of every distinct recorded call of those probes."""
    found = set()
    for path in STORES:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = db.execute(
                "SELECT r.topology_json, COALESCE(g.call_json, r.call_json) FROM runs r "
                "LEFT JOIN groups g ON g.id = r.group_id").fetchall()
        finally:
            db.close()
        found |= {(topo, call) for topo, call in rows
                  if call and json.loads(call)["probe"] in PROBES}
    return sorted(found)


RECORDED = _recorded()


def test_the_fixture_holds_a_call_of_every_probe_with_options():
    assert {json.loads(call)["probe"] for _, call in RECORDED} == set(PROBES)


@pytest.mark.parametrize("topology_json, call_json", RECORDED,
                         ids=[ProbeCall.from_dict(json.loads(c)).describe()
                              for _, c in RECORDED])
def test_each_recorded_call_is_the_call_the_probe_makes_today(topology_json, call_json):
    """A run of a repeated call (``run`` k of ``repeat``) is the probe's k-th step when
    the call is made again with ``repeat``."""
    recorded = ProbeCall.from_dict(json.loads(call_json))
    args = dict(recorded.args)
    run = args.pop("run", None)
    lab = CallRecorder(from_dict(json.loads(topology_json)), 1 if run is None else run + 1)
    with pytest.raises(_Enough):
        PROBES[recorded.probe](lab, **args)
    assert [call.key() for call in lab.calls[-1:]] == [recorded.key()]
    assert len(lab.calls) == (1 if run is None else run + 1)
