"""Expected values on the reference topology: the numbers of the BRIEF."""

from __future__ import annotations

import pytest

from labtools.errors import InputError, NoRouteError, UnknownNodeError
from labtools.model import expect
from labtools.model.catalog import load_topology
from labtools.model.routing import compute_routing

LINKS = [("r1", "r2", 20, 40, "L1"), ("r2", "r3", 40, 30, "L2"), ("r3", "r4", 20, 20, "L3")]
PATHS = [("h1", "h4", 60, 30, "L2"), ("h1", "h9", 80, 20, "L3"), ("h7", "h9", 60, 20, "L3")]


@pytest.mark.parametrize("src, dst, rtt, rate, label", LINKS + PATHS)
def test_rtt_and_bottleneck(portfolio, src, dst, rtt, rate, label):
    assert expect.rtt_ms(portfolio, src, dst) == pytest.approx(rtt)
    assert expect.rtt_ms(portfolio, dst, src) == pytest.approx(rtt)
    assert expect.bottleneck(portfolio, src, dst) == (rate, label)


def test_paths_follow_the_routers(portfolio):
    assert expect.path(portfolio, "h1", "h4").nodes == ("h1", "s1", "r1", "r2", "r3", "s2", "h4")
    assert expect.path(portfolio, "h7", "h9").nodes == ("h7", "r2", "r3", "r4", "h9")
    assert expect.path(portfolio, "h1", "h4").link_labels[2:4] == ["L1", "L2"]
    info = expect.path(portfolio, "h9", "h1")
    assert info.dst_ip == "10.0.0.2"
    assert [lk.label for lk in info.reverse_links] == ["h1-s1", "s1-r1", "L1", "L2", "L3", "r4-h9"]


def test_goodput_ceilings():
    assert expect.tcp_goodput_ceiling_mbps(30) == pytest.approx(30 * 1448 / 1514)
    assert expect.tcp_goodput_ceiling_mbps(100) == pytest.approx(95.64, abs=0.01)
    assert expect.udp_goodput_mbps(100) == pytest.approx(97.22, abs=0.01)
    assert expect.udp_goodput_mbps(10, 1000) == pytest.approx(10 * 1000 / 1042)
    for bad in (0, -1, "10", None):
        with pytest.raises(InputError):
            expect.tcp_goodput_ceiling_mbps(bad)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        expect.udp_goodput_mbps(10, 2000)


def test_bdp_and_windows_of_the_hardin_paper():
    # 1 Gbit/s and 116 ms RTT: the windows per flow for 1..5 flows.
    windows_mb = [expect.window_per_flow_bytes(1000, 116, n) / 1e6 for n in range(1, 6)]
    assert windows_mb == pytest.approx([14.5, 7.25, 4.833, 3.625, 2.9], abs=0.001)
    assert expect.bdp_bytes(30, 60) == pytest.approx(225_000)
    with pytest.raises(InputError):
        expect.window_per_flow_bytes(1000, 116, 0)


def test_rtt_with_transmission_time(portfolio):
    frame = expect.ping_frame_bytes(56)
    assert frame == 98
    # 98 bytes on L1 (40), L2 (30) each way: 2 * 98 * 8 * (1/40e6 + 1/30e6) s
    extra = 2 * 98 * 8 * (1 / 40e6 + 1 / 30e6) * 1e3
    assert expect.rtt_ms(portfolio, "h1", "h4", frame) == pytest.approx(60 + extra)
    with pytest.raises(InputError):
        expect.rtt_ms(portfolio, "h1", "h4", 0)


def test_expect_pair_keys(portfolio):
    result = expect.expect_pair(portfolio, "h1", "h9").as_dict()
    assert {"path", "rtt_ms", "bottleneck_mbps", "bottleneck_link",
            "tcp_goodput_ceiling_mbps", "bdp_bytes"} <= set(result)
    assert result["bdp_bytes"] == 200_000


def test_bad_pairs(portfolio):
    with pytest.raises(UnknownNodeError, match="'h10'"):
        expect.path(portfolio, "h1", "h10")
    with pytest.raises(NoRouteError, match="switch"):
        expect.path(portfolio, "h1", "s1")
    with pytest.raises(NoRouteError):
        expect.path(portfolio, "h1", "h1")


def test_unshaped_path_has_no_bottleneck():
    topo = load_topology("dumbbell")
    assert expect.bottleneck(topo, "a1", "a2") == (None, None)
    assert expect.expect_pair(topo, "a1", "a2").bdp_bytes is None


def test_routes_feed_the_same_paths(portfolio):
    routing = compute_routing(portfolio)
    routes = {r.network: r for r in routing.routes("r2")}
    assert routes["10.0.4.0/24"].gateway == "10.0.3.2"  # to h4's LAN via r3 on L2
    assert routes["10.0.0.0/24"].gateway == "10.0.1.1"  # to h1's LAN via r1 on L1
    assert routes["10.0.4.0/24"].dev == "r2-eth2"
    h1 = routing.routes("h1")
    assert {r.gateway for r in h1} == {"10.0.0.1"} and len(h1) == 7


def test_equal_paths_break_ties_by_name():
    from labtools.model.topology import HOST, ROUTER, Link, Node, Topology

    nodes = (Node("h1", HOST), Node("h2", HOST), Node("ra", ROUTER), Node("rc", ROUTER),
             Node("rb", ROUTER), Node("rd", ROUTER))
    links = (Link("h1", "ra"), Link("ra", "rc", delay_ms=7), Link("ra", "rb", delay_ms=3),
             Link("rc", "rd"), Link("rb", "rd"), Link("rd", "h2"))
    topo = Topology("square", nodes, links)
    assert expect.path(topo, "h1", "h2").nodes == ("h1", "ra", "rb", "rd", "h2")
    assert expect.rtt_ms(topo, "h1", "h2") == pytest.approx(6)
