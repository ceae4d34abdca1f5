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


def _one_segment(hosts: int, per_switch: int = 100):
    """``hosts`` hosts under leaf switches of ``per_switch`` each, joined by one root switch:
    one segment, addresses given in 10.0.0.0/8."""
    from labtools.model.topology import HOST, SWITCH, Link, Node, Topology

    leaves = -(-hosts // per_switch)
    nodes = [Node("s0", SWITCH)] + [Node(f"s{j}", SWITCH) for j in range(1, leaves + 1)]
    nodes += [Node(f"h{i}", HOST) for i in range(1, hosts + 1)]
    links = [Link(f"s{j}", "s0") for j in range(1, leaves + 1)]
    links += [Link(f"h{i}", f"s{1 + (i - 1) // per_switch}",
                   addrs={f"h{i}": f"10.{i >> 16}.{i >> 8 & 255}.{i & 255}/8"})
              for i in range(1, hosts + 1)]
    return Topology("big", tuple(nodes), tuple(links))


def test_the_largest_topology_routes_in_memory_linear_in_its_size():
    """10,000 nodes on one segment (9900 hosts): routing kept every host's list of every
    other member (98 million pairs; 4000 hosts took 1.1 GB and 17 s under tracemalloc),
    now it holds only the routers' lists: 12.5 MiB here."""
    import tracemalloc

    from labtools.model import limits

    topo = _one_segment(9900)
    assert len(topo.nodes) == limits.MAX_NODES
    tracemalloc.start()
    try:
        routing = compute_routing(topo)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(routing.addressing.interfaces) == 9900
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    (hop,) = find_route_hops(topo, "h1", "h9900")
    assert hop.nodes == ("h1", "s1", "s0", "s99", "h9900")


def test_one_node_more_than_the_largest_is_refused_at_once(tmp_path):
    import json
    import time

    from labtools.model.catalog import to_dict

    data = to_dict(_one_segment(9900))
    data["nodes"].append({"name": "h10001"})
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    began = time.process_time()  # CPU time: a busy machine does not count
    with pytest.raises(TopologyError, match="has 10001 nodes: the kit takes at most 10000"):
        load_topology(str(path))
    assert time.process_time() - began < 5  # before: 10,000 hosts took 46 s and 7.9 GB


def test_a_switch_takes_at_most_what_a_linux_bridge_does():
    with pytest.raises(TopologyError, match="switch 's1' has more than 1023 links"):
        _one_segment(1023, per_switch=1023)  # and the link to s0
    assert len(_one_segment(1022, per_switch=1022).switches) == 2


def test_at_most_256_subnets():
    from labtools.model.topology import HOST, ROUTER, Link, Node, Topology

    nodes = [Node(f"r{i}", ROUTER) for i in range(1, 258)] + [Node("h1", HOST)]
    links = [Link(f"r{i}", f"r{i + 1}", addrs={f"r{i}": f"10.1.{i}.1/30",
                                               f"r{i + 1}": f"10.1.{i}.2/30"})
             for i in range(1, 256)] + [Link("h1", "r1"), Link("r256", "r257")]
    with pytest.raises(TopologyError, match="has 257 subnets .* at most 256"):
        compute_routing(Topology("many", tuple(nodes), tuple(links)))


def test_every_topology_file_runs_as_mn_custom_execs_it(tmp_path):
    """``mn --custom FILE`` execs the file with the system's Python, outside the kit's
    venv and elsewhere than the checkout: each file still finds the kit, and its ``topos``
    entry builds a Mininet Topo (its hosts include Mininet's hosts for routers)."""
    import subprocess

    from labtools.model.catalog import topologies_dir

    system_python = "/usr/bin/python3"
    probe = subprocess.run([system_python, "-c", "import mininet.topo"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("the system's Python has no Mininet (mn --custom runs with it)")
    for path in sorted(topologies_dir().glob("*.py")):
        name = path.stem
        code = (f"f = {str(path)!r}; d = {{}}\n"
                "exec(compile(open(f).read(), f, 'exec'), d, d)\n"
                f"t = d['topos'][{name!r}]()\n"
                "print(len(t.hosts()), len(t.links()))\n")
        proc = subprocess.run([system_python, "-c", code], capture_output=True, text=True,
                              cwd=str(tmp_path), timeout=120, env={"PATH": "/usr/bin:/bin"})
        assert proc.returncode == 0, (name, proc.stderr[-1500:])
        hosts, links = map(int, proc.stdout.split())
        assert hosts >= 2 and links >= 1, (name, proc.stdout)


def test_every_topology_file_finds_the_kit_with_the_same_one_line():
    """The only lines a topology file cannot share (they find the shared code) are one line,
    the same in every file: no file grows its own variant of the fallback."""
    from labtools.model.catalog import topologies_dir

    finder = [line for line in
              (topologies_dir() / "star.py").read_text().splitlines() if "sys.path" in line]
    assert len(finder) == 1 and finder[0].startswith("sys.path.append("), finder
    for path in sorted(topologies_dir().glob("*.py")):
        text = path.read_text()
        lines = [line for line in text.splitlines() if "sys.path" in line]
        assert lines == finder, (path.name, lines)
        assert "except ImportError" not in text, path.name
        assert text.count("mininet_topos(") == 1, path.name
