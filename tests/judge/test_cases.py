"""The test cases' rows, built from judged results of real captured output (no network):
each row names its own flow, the rows of a whole set of flows name none, none is dropped."""

from __future__ import annotations

from types import SimpleNamespace

from labtools.judge.measurement import JudgeContext
from labtools.judge.shares import judge_flows
from labtools.lab import cases, probes
from labtools.model.catalog import load_topology
from labtools.tools.parsers import parse
from tests.conftest import FIXTURES


def test_flow_rows_name_their_flow_and_set_rows_name_none(monkeypatch):
    """Nine flows: every flow's row is there (rows beyond 8 were dropped) and the sum and
    Jain rows carry no flow's source, destination or run id (they carried the last one's)."""
    topo = load_topology("dumbbell,pairs=9")
    spec = [f"a{i}:b{i}" for i in range(1, 10)]
    output = parse("iperf3", (FIXTURES / "iperf3" / "tcp_p1.json").read_text())

    def fake_flows(lab, flows, duration_s=None):
        result = judge_flows(topo, flows, [output] * len(flows), JudgeContext())
        for run_id, m in enumerate(result.measurements, start=100):
            m.run_id = run_id
        return result

    monkeypatch.setattr(probes, "concurrent_iperf3", fake_flows)
    plan = cases.CasePlan(pairs=[("a1", "b1")], links=[], mux=[spec])
    rows = cases.run_case(SimpleNamespace(topo=topo), "mux", plan, say=lambda _t: None)["rows"]
    flow_rows = [r for r in rows if r["metric"].startswith("share ")]
    assert [(r["src"], r["dst"], r["run_id"]) for r in flow_rows] == [
        (f"a{i}", f"b{i}", 99 + i) for i in range(1, 10)]
    set_rows = [r for r in rows if not r["metric"].startswith(("share ", "sender"))]
    assert [r["metric"] for r in set_rows] == ["sum of shares",
                                               "Jain's index (rate / fair share on B)"]
    assert all((r["src"], r["dst"], r["run_id"]) == ("", "", None) for r in set_rows)
