"""Expected values on the reference topology: the numbers docs/reference.md gives for it."""

from __future__ import annotations

import json

import pytest

from labtools.errors import InputError, NoRouteError, UnknownNodeError
from labtools.model import expect
from labtools.model.catalog import load_topology
from labtools.model.routing import compute_routing
from labtools.model.topology import HOST, Link, Node, Topology
from tests.conftest import run_cli

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


def test_the_worst_rtt_the_links_can_produce(portfolio):
    """h1 -> h4 crosses L1 (40 Mbit/s, 10 ms, 67 packets) and L2 (30 Mbit/s, 20 ms, 100
    packets). netem's limit holds the packets serving their delay too, so a full queue keeps
    a packet max(delay, Q x 1514 B / R) on a link: L1 max(10, 20.3), L2 max(20, 40.4) ms.
    The replies cross both links with their delay alone: 30 ms. About 90.7 ms, not the
    120.7 ms that delay + drain gave (contradicted by the kit's own loaded pings)."""
    e = expect.expect_pair(portfolio, "h1", "h4")
    l1 = 67 * 1514 * 8 / 40e6 * 1e3
    l2 = 100 * 1514 * 8 / 30e6 * 1e3
    assert l1 > 10 and l2 > 20  # both queues, full, outlast their link's delay
    assert e.max_rtt_ms == pytest.approx(l1 + l2 + 30) and 90.6 < e.max_rtt_ms < 90.7
    assert e.queue_delay_ms == pytest.approx(l1 + l2 - 30)  # waiting beyond the delays
    # with the replies' queues (L2 and L1 the other way) full as well
    assert e.max_rtt_both_loaded_ms == pytest.approx(2 * (l1 + l2))
    assert e.unbounded_links == () and e.mathis_limit_mbps is None
    assert e.tcp_limit_mbps == e.tcp_goodput_ceiling_mbps


def test_a_full_queue_shorter_than_the_delay_adds_nothing_and_caps_the_rate():
    """A queue limit below the link's own bandwidth-delay product: the queue is all delay
    (no waiting beyond it), and at most Q frames per delay leave: 10 x 1514 B x 8 / 50 ms
    = 2.42 Mbit/s on a 10 Mbit/s link."""
    nodes = (Node("a", HOST), Node("b", HOST))
    link = Link("a", "b", bw_mbps=10, delay_ms=50, queue_pkts=10)
    topo = Topology("short-queue", nodes, (link,))
    e = expect.expect_pair(topo, "a", "b")
    assert expect.link_full_ms(link) == 50 and e.max_rtt_ms == 100 and e.queue_delay_ms == 0
    cap = 10 * 1514 * 8 / 0.050 / 1e6
    assert e.queue_cap_mbps == pytest.approx(cap)
    assert e.tcp_limit_mbps == pytest.approx(cap * 1448 / 1514)
    assert e.tcp_limit_mbps < e.tcp_goodput_ceiling_mbps


def test_bounds_on_a_topology_with_loss_several_paths_and_an_unbounded_queue(tmp_path):
    """Hand calculations on a topology that is not one of the kit's."""
    spec = tmp_path / "diamond.json"
    spec.write_text(json.dumps({"name": "diamond", "nodes": [
        {"name": "a"}, {"name": "b"}, {"name": "ra", "kind": "router"},
        {"name": "rb", "kind": "router"}], "links": [
        {"a": "a", "b": "ra"},
        {"a": "ra", "b": "rb", "bw_mbps": 10, "delay_ms": 25, "loss_pct": 1, "queue_pkts": 50},
        {"a": "rb", "b": "b", "bw_mbps": 50, "delay_ms": 5}]}))
    topo = load_topology(str(spec))
    e = expect.expect_pair(topo, "a", "b")
    assert e.rtt_ms == 60
    assert e.unbounded_links == ("rb-b",)  # rated, no queue limit: no bound
    assert e.queue_delay_ms is None and e.max_rtt_ms is None
    assert e.loss_pct == pytest.approx(1.0)
    # Mathis: 1448 B x 8 / 60 ms x sqrt(3/2) / sqrt(0.01) = 2.364 Mbit/s, below 9.56
    assert e.mathis_limit_mbps == pytest.approx(1448 * 8 / 0.060 * 1.2247449 / 0.1 / 1e6, rel=1e-6)
    assert e.tcp_limit_mbps == e.mathis_limit_mbps < e.tcp_goodput_ceiling_mbps
    two_lossy = expect.path_loss(tuple(topo.links[1:2]) * 2)
    assert two_lossy == pytest.approx(1 - 0.99 ** 2)


def test_expect_json_names_the_bounds():
    proc = run_cli(["expect", "portfolio", "h1", "h4", "--json"])
    data = json.loads(proc.stdout)
    for key in ("queue_delay_ms", "max_rtt_ms", "max_rtt_both_loaded_ms", "unbounded_links",
                "loss_pct", "mathis_limit_mbps", "tcp_limit_mbps"):
        assert key in data
    assert data["max_rtt_ms"] == pytest.approx(90.661, abs=1e-3)


def test_expect_text_shows_the_bounds(tmp_path):
    """The worst RTT, links without one and the loss-limited estimate, in the text as in the
    JSON."""
    text = run_cli(["expect", "portfolio", "h1", "h4"]).stdout
    assert "worst RTT (full queues) 90.661 ms" in text
    assert "121.322 ms with both directions' queues full" in text
    assert "loss" not in text  # no loss on the reference path
    spec = tmp_path / "lossy.json"
    spec.write_text(json.dumps({"name": "lossy", "nodes": [
        {"name": "a"}, {"name": "b"}, {"name": "r", "kind": "router"}], "links": [
        {"a": "a", "b": "r", "bw_mbps": 10, "delay_ms": 25, "loss_pct": 1, "queue_pkts": 50},
        {"a": "r", "b": "b", "bw_mbps": 50, "delay_ms": 5}]}))
    data = json.loads(run_cli(["expect", str(spec), "a", "b", "--json"]).stdout)
    text = run_cli(["expect", str(spec), "a", "b"]).stdout
    assert "worst RTT (full queues)" not in text and "no worst RTT" in text and "r-b" in text
    assert f"loss-limited estimate   {data['mathis_limit_mbps']:g} Mbit/s (Mathis" in text
    assert f"TCP rate expected       {data['tcp_limit_mbps']:g} Mbit/s" in text


def test_expect_calls_the_worst_rtt_steady_state_and_the_loss_rate_an_estimate(tmp_path):
    """One wording of the physics: the worst RTT of full queues is the steady state's (a
    burst can exceed it), the loss-limited rate an estimate CUBIC may exceed, never a limit
    TCP "can reach"."""
    spec = tmp_path / "lossy.json"
    spec.write_text(json.dumps({"name": "lossy", "nodes": [
        {"name": "a"}, {"name": "b"}, {"name": "r", "kind": "router"}], "links": [
        {"a": "a", "b": "r", "bw_mbps": 10, "delay_ms": 25, "loss_pct": 1, "queue_pkts": 50},
        {"a": "r", "b": "b", "bw_mbps": 50, "delay_ms": 5, "queue_pkts": 50}]}))
    text = run_cli(["expect", str(spec), "a", "b"]).stdout
    rows = {line[:24].strip(): line[24:] for line in text.splitlines()}
    assert "in the steady state" in rows["worst RTT (full queues)"]
    assert "a burst" in rows["worst RTT (full queues)"]
    assert "CUBIC may exceed it" in rows["loss-limited estimate"]
    for wrong in ("limit from loss", "can reach", "loss limit", "bound"):
        assert wrong not in text.lower(), wrong


def test_expect_shows_the_rtt_under_a_tcp_flow():
    data = json.loads(run_cli(["expect", "portfolio", "h1", "h4", "--json"]).stdout)
    from labtools.model.queues import loaded_rtt

    model = loaded_rtt(load_topology("portfolio"), "h1", "h4")
    assert data["loaded_rtt_ms"] == pytest.approx(model.typical_ms, abs=1e-3)
    assert data["loaded_queue_link"] == "L2" and data["load"] == "h1->h4"
    text = run_cli(["expect", "portfolio", "h1", "h4"]).stdout
    assert f"typically {round(model.typical_ms, 3):g} ms" in text


def test_one_window_per_round_trip_is_the_inverse_of_the_bdp():
    from labtools.frame_sizes import IPERF_UDP_FRAME_BYTES, TCP_FRAME_BYTES, TCP_MSS_BYTES

    assert (TCP_MSS_BYTES, TCP_FRAME_BYTES, IPERF_UDP_FRAME_BYTES) == (1448, 1514, 1512)
    assert expect.window_rate_mbps(expect.bdp_bytes(30, 40), 40) == pytest.approx(30)
    assert expect.window_rate_mbps(100_000, 60) == pytest.approx(13.333, abs=1e-3)
    with pytest.raises(InputError, match="RTT must be > 0 ms"):
        expect.window_rate_mbps(100_000, 0)
