"""The star and tree topologies the scale benchmark starts (pure: no root)."""

from __future__ import annotations

import pytest

from labtools.errors import TopologyError
from labtools.model.catalog import load_topology
from labtools.model.routing import compute_routing, find_route_hops


@pytest.mark.parametrize("spec, hosts, switches", [
    ("star,hosts=1000", 1000, 1), ("tree,hosts=1000,fanout=10", 1000, 111),
    ("tree,hosts=100,fanout=10", 100, 11), ("tree,hosts=10,fanout=4", 10, 4),
])
def test_sizes_and_one_subnet(spec, hosts, switches):
    topo = load_topology(spec)
    assert len(topo.hosts) == hosts and len(topo.switches) == switches
    routing = compute_routing(topo)
    ips = [i.ip for i in routing.addressing.interfaces]
    assert len(set(ips)) == hosts and len(routing.addressing.segments) == 1
    hops = find_route_hops(topo, "h1", f"h{hosts}")
    assert len(hops) == 1  # one layer-2 hop through the switches


def test_a_tree_path_climbs_and_descends_the_switches():
    topo = load_topology("tree,hosts=100,fanout=10")
    (hop,) = find_route_hops(topo, "h1", "h100")
    assert hop.nodes == ("h1", "s1", "s11", "s10", "h100")


@pytest.mark.parametrize("spec, message", [
    ("star,hosts=1", "within 2..1000"), ("star,hosts=1001", "within 2..1000"),
    ("tree,hosts=50,fanout=1", "fanout=1"), ("tree,hosts=abc", "hosts='abc'"),
])
def test_bad_sizes_are_refused(spec, message):
    with pytest.raises(TopologyError, match=message):
        load_topology(spec)


def test_they_also_build_as_mininet_topos_for_mn_custom():
    pytest.importorskip("mininet.topo")
    from labtools.model.catalog import _import_file, topologies_dir

    for name, params in (("star", {"hosts": 20}), ("tree", {"hosts": 20, "fanout": 4})):
        module = _import_file(topologies_dir() / f"{name}.py")
        mn_topo = module.topos[name](**params)
        assert len(mn_topo.hosts()) == 20
