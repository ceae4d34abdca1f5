"""Topologies as data: the kit's topologies and validation of bad ones."""

from __future__ import annotations

import json
import re

import pytest

from labtools.errors import NoRouteError, TopologyError, UnknownNodeError
from labtools.model.catalog import available, from_dict, load_topology, split_spec, to_dict
from labtools.model.topology import HOST, ROUTER, SWITCH, Link, Node, Topology, mininet_link_params


def test_portfolio_is_the_reference_network_its_docstring_draws(portfolio):
    assert len(portfolio.hosts) == 9 and len(portfolio.routers) == 4
    assert len(portfolio.switches) == 2
    l1, l2, l3 = (portfolio.link(n) for n in ("L1", "L2", "L3"))
    assert (l1.a, l1.b, l1.bw_mbps, l1.delay_ms, l1.queue_pkts, l1.htb) == ("r1", "r2", 40, 10, 67, True)
    assert (l2.a, l2.b, l2.bw_mbps, l2.delay_ms, l2.queue_pkts, l2.htb) == ("r2", "r3", 30, 20, 100, True)
    assert (l3.a, l3.b, l3.bw_mbps, l3.delay_ms, l3.queue_pkts, l3.htb) == ("r3", "r4", 20, 10, 33, True)
    shaped = [lk.label for lk in portfolio.links if lk.shaped]
    assert shaped == ["L1", "L2", "L3"]
    assert portfolio.link_between("h8", "r3") and portfolio.link_between("r4", "h9")
    assert {lk.other("s2") for lk in portfolio.links_of("s2")} == {"h4", "h5", "h6", "r3"}


def test_every_kit_topology_loads():
    assert {"portfolio", "dumbbell", "line"} <= set(available())
    for name in available():
        topo = load_topology(name)
        assert topo.hosts


def test_parameters_like_mn_topo():
    assert split_spec("dumbbell,pairs=3,bw_mbps=2.5,x=a") == (
        "dumbbell", {"pairs": 3, "bw_mbps": 2.5, "x": "a"})
    topo = load_topology("dumbbell,pairs=3,bw_mbps=20,delay_ms=5")
    assert topo.hosts == ["a1", "b1", "a2", "b2", "a3", "b3"]
    assert topo.link("B").bw_mbps == 20 and topo.link("B").delay_ms == 5
    line = load_topology("line,n=4")
    assert len(line.routers) == 4 and len(load_topology("line").routers) == 7


def test_mininet_params_are_converted_in_one_place():
    link = Link("r1", "r2", bw_mbps=40, delay_ms=10, loss_pct=1.5, queue_pkts=67, htb=True)
    assert mininet_link_params(link) == {
        "bw": 40, "delay": "10ms", "loss": 1.5, "max_queue_size": 67}
    # TBF is TCIntf's use_tbf (it takes no use_htb: HTB is its default); only with a rate
    assert mininet_link_params(Link("a", "b", bw_mbps=5, htb=False)) == {"bw": 5, "use_tbf": True}
    assert mininet_link_params(Link("a", "b", delay_ms=5, htb=False)) == {"delay": "5ms"}
    assert mininet_link_params(Link("a", "b")) == {}
    # tc keeps whole microseconds: fractions of a millisecond are given in us
    assert mininet_link_params(Link("a", "b", delay_ms=0.5))["delay"] == "500us"
    assert mininet_link_params(Link("a", "b", delay_ms=0.0015))["delay"] == "2us"


@pytest.mark.parametrize("fields, words", [
    ({"bw_mbps": 1500}, "more than Mininet's TCLink shapes (1000 Mbit/s)"),
    ({"bw_mbps": 1000.5}, "it would run the link unshaped"),
    ({"delay_ms": 0.0004}, "below what tc can express"),
    ({"queue_pkts": 0}, "queue_pkts=0 must be an integer within 1..100000"),
])
def test_values_mininet_cannot_apply_are_refused(fields, words):
    """Mininet's TCLink ignores a rate above 1000 Mbit/s (the link runs unshaped while the
    kit would predict the rate), tc cannot express a delay below 1 us, and a queue of 0
    packets would drop everything: each is refused with a one-line reason."""
    with pytest.raises(TopologyError, match=re.escape(words)):
        _topo([Link("h1", "r1", **fields), Link("r1", "h2")])
    assert _topo([Link("h1", "r1", bw_mbps=1000, delay_ms=0.001), Link("r1", "h2")])


def test_a_mininet_file_keeps_a_queue_of_zero_and_an_unshaped_zero_rate():
    from labtools.model.mininet_import import from_mininet_topo

    class FakeTopo:  # the duck-typed interface of a Mininet Topo (no Mininet needed)
        def __init__(self, info):
            self.info = info

        def nodes(self, sort=False):
            return ["h1", "h2"]

        def isSwitch(self, name):
            return False

        def nodeInfo(self, name):
            return {}

        def links(self, sort=False, withInfo=False):
            return [("h1", "h2", self.info)]

    with pytest.raises(TopologyError, match="queue_pkts=0"):
        from_mininet_topo(FakeTopo({"max_queue_size": 0}), "q0")
    assert from_mininet_topo(FakeTopo({"bw": 0}), "bw0").links[0].bw_mbps is None
    # TBF as Mininet's TCIntf takes it; use_htb (older scripts) changes nothing, as in Mininet
    assert from_mininet_topo(FakeTopo({"bw": 5, "use_tbf": True}), "t").links[0].htb is False
    assert from_mininet_topo(FakeTopo({"bw": 5, "use_htb": False}), "t").links[0].htb is True
    with pytest.raises(TopologyError, match="use_tbf='yes' must be True or False"):
        from_mininet_topo(FakeTopo({"bw": 5, "use_tbf": "yes"}), "t")


def _topo(links, nodes=None):
    nodes = nodes or [Node("h1"), Node("h2"), Node("r1", ROUTER), Node("s1", SWITCH)]
    return Topology("t", tuple(nodes), tuple(links))


@pytest.mark.parametrize("link, words", [
    (Link("h1", "h9"), "unknown node 'h9'"),
    (Link("h1", "r1", bw_mbps=0), "bw_mbps=0"),
    (Link("h1", "r1", bw_mbps=-5), "bw_mbps=-5"),
    (Link("h1", "r1", delay_ms=-1), "delay_ms=-1"),
    (Link("h1", "r1", loss_pct=101), "loss_pct=101"),
    (Link("h1", "r1", loss_pct=-0.1), "loss_pct=-0.1"),
    (Link("h1", "r1", queue_pkts=0), "queue_pkts=0"),
    (Link("h1", "h1"), "to itself"),
    (Link("h1", "s1", addrs={"s1": "10.0.0.1/24"}), "switch 's1'"),
    (Link("h1", "r1", addrs={"h1": "10.0.0.300/24"}), "bad address"),
])
def test_bad_links_are_refused_naming_the_element(link, words):
    with pytest.raises(TopologyError) as err:
        _topo([link])
    assert words in str(err.value)
    assert "\n" not in str(err.value)


def test_duplicate_names_and_bad_kinds():
    with pytest.raises(TopologyError, match="duplicate node name 'h1'"):
        Topology("t", (Node("h1"), Node("h1")), ())
    with pytest.raises(TopologyError, match="kind 'hub'"):
        Topology("t", (Node("x1", "hub"),), ())
    with pytest.raises(TopologyError, match="invalid"):
        Topology("t", (Node("h 1"),), ())
    with pytest.raises(TopologyError, match="duplicate link name 'L1'"):
        _topo([Link("h1", "r1", name="L1"), Link("r1", "h2", name="L1")])


def test_hosts_without_a_route_are_refused(tmp_path):
    data = {"nodes": [{"name": "h1"}, {"name": "h2"}, {"name": "h3"}, {"name": "r1", "kind": "router"}],
            "links": [{"a": "h1", "b": "r1"}, {"a": "r1", "b": "h2"}]}
    spec = tmp_path / "island.json"
    spec.write_text(json.dumps(data))
    with pytest.raises(NoRouteError, match="'h3'"):
        load_topology(str(spec))
    # a host is never a transit node
    data = {"nodes": [{"name": "h1"}, {"name": "h2"}, {"name": "h3"}],
            "links": [{"a": "h1", "b": "h2"}, {"a": "h2", "b": "h3"}]}
    spec.write_text(json.dumps(data))
    with pytest.raises(NoRouteError, match="'h1' and 'h3'"):
        load_topology(str(spec))


def test_json_round_trip(portfolio, tmp_path):
    spec = tmp_path / "copy.json"
    spec.write_text(json.dumps(to_dict(portfolio)))
    again = load_topology(str(spec))
    assert to_dict(again) == to_dict(portfolio)
    with pytest.raises(TopologyError, match="unknown field"):
        from_dict({"nodes": [{"name": "h1"}], "links": [{"a": "h1", "b": "h1", "bandwidth": 3}]})


def test_unknown_names_and_files():
    with pytest.raises(TopologyError, match="unknown topology 'nope'"):
        load_topology("nope")
    with pytest.raises(TopologyError, match="not found"):
        load_topology("/nonexistent/topo.py")
    with pytest.raises(TopologyError, match="pairs=0"):
        load_topology("dumbbell,pairs=0")
    with pytest.raises(UnknownNodeError, match="'h99'"):
        load_topology("portfolio").node("h99")


def test_plain_mininet_custom_file(tmp_path):
    pytest.importorskip("mininet.topo")
    spec = tmp_path / "mine.py"
    spec.write_text(
        "from mininet.topo import Topo\n"
        "class Two(Topo):\n"
        "    def build(self, bw=8):\n"
        "        h1, h2 = self.addHost('h1'), self.addHost('h2')\n"
        "        r1 = self.addHost('r1')\n"
        "        self.addLink(h1, r1, bw=bw, delay='5ms')\n"
        "        self.addLink(r1, h2, bw=100, delay='2500us', loss=1, max_queue_size=50)\n"
        "topos = {'two': Two}\n")
    topo = load_topology(f"{spec},bw=4")
    assert topo.node("r1").kind == ROUTER and topo.node("h1").kind == HOST
    first, second = topo.links
    assert (first.bw_mbps, first.delay_ms) == (4, 5)
    assert (second.delay_ms, second.loss_pct, second.queue_pkts) == (2.5, 1, 50)


def test_a_rate_limit_is_asked_of_a_rate_limited_link_only():
    assert Link("r1", "r2", bw_mbps=40, name="L1").rate_limit_mbps() == 40.0
    with pytest.raises(TopologyError, match="link h1-s1 has no rate limit"):
        Link("h1", "s1").rate_limit_mbps()
