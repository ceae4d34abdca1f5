"""The test cases' plan, without a network: which pairs and flow sets each case measures
(labtools.model.cases), on the reference topology and on one that declares its own."""

from __future__ import annotations

from labtools.model.cases import derive_plan
from labtools.model.catalog import load_cases, load_topology
from labtools.model.expect import bottleneck, rtt_ms


def test_the_longest_rate_limited_paths_come_first():
    topo = load_topology("dumbbell,pairs=3")
    plan = derive_plan(topo)
    assert plan.pairs and all(bottleneck(topo, a, b)[0] is not None for a, b in plan.pairs)
    rtts = [rtt_ms(topo, a, b) for a, b in plan.pairs]
    assert rtts == sorted(rtts, reverse=True)
    hosts = [h for flows in plan.mux[:1] for f in flows for h in f.split(":")]
    assert len(hosts) == len(set(hosts))  # concurrent flows on disjoint pairs
    assert plan.parallel and plan.parallel[0][0].endswith("x2")


def test_the_reference_topology_declares_the_assignments_cases():
    plan = derive_plan(load_topology("portfolio"), load_cases("portfolio"))
    assert plan.pairs == [("h1", "h4"), ("h1", "h9"), ("h7", "h9")]
    assert plan.parallel == [["h1:h4x2", "h2:h5", "h3:h6"]]
