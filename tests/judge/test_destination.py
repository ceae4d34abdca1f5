"""Judge what was measured: the destination each tool's output names must be the pair's
(labtools.judge.destination), on real captures of every tool. The capture network of the
fixtures (scripts/capture_fixtures.sh) is written here as a topology with its addresses."""

from __future__ import annotations

import json
import re

import pytest

from labtools.errors import InputError
from labtools.judge.destination import check_destination, named_destinations
from labtools.model.expect import expect_pair
from labtools.model.topology import ROUTER, Link, Node, Topology
from labtools.tools.parsers import parse
from tests.conftest import FIXTURES, run_cli

#: tool, fixture, what it names
NAMED = [
    ("ping", "ping/normal.txt", ["10.77.2.1"]),
    ("ping", "ping/names.txt", ["10.77.2.1"]),
    ("ping", "ping/ipv6_names.txt", ["fd77:2::1"]),
    ("ping", "ping/macos_ipv6.txt", ["::1"]),
    ("ping", "ping/unreachable.txt", ["10.77.2.99"]),
    ("iperf3", "iperf3/tcp_p1.json", ["10.77.2.1"]),
    ("iperf3", "iperf3/tcp_reverse.json", ["10.77.2.1"]),
    ("iperf3", "iperf3/tcp_server_output.json", ["10.77.2.1"]),
    ("iperf", "iperf2/tcp.txt", ["10.77.2.1"]),
    ("iperf", "iperf2/tcp.server.txt", ["10.77.2.1"]),
    ("iperf", "iperf2/udp_interval.server.txt", ["10.77.2.1"]),
    ("simpleperf", "simpleperf/client_t2_i0.5_P2.jsonl", ["127.0.0.1"]),
    ("simpleperf", "simpleperf/server.jsonl", ["127.0.0.1"]),
]
#: the capture network: cli -- rtr -- srv with the addresses the fixtures show
CAPTURE_JSON = {"name": "capture",
                "nodes": [{"name": "cli"}, {"name": "rtr", "kind": "router"}, {"name": "srv"}],
                "links": [{"a": "cli", "b": "rtr", "bw_mbps": 20,
                           "addrs": {"cli": "10.77.1.1/24", "rtr": "10.77.1.254/24"}},
                          {"a": "rtr", "b": "srv", "bw_mbps": 20,
                           "addrs": {"rtr": "10.77.2.254/24", "srv": "10.77.2.1/24"}}]}


@pytest.fixture(scope="module")
def capture() -> Topology:
    return Topology("capture", (Node("cli"), Node("rtr", ROUTER), Node("srv")),
                    (Link("cli", "rtr", bw_mbps=20,
                          addrs={"cli": "10.77.1.1/24", "rtr": "10.77.1.254/24"}),
                     Link("rtr", "srv", bw_mbps=20,
                          addrs={"rtr": "10.77.2.254/24", "srv": "10.77.2.1/24"})))


def parsed(tool: str, fixture: str):
    return parse(tool, (FIXTURES / fixture).read_text())


@pytest.mark.parametrize("tool, fixture, named", NAMED)
def test_each_tool_names_where_it_measured(tool, fixture, named):
    assert named_destinations(parsed(tool, fixture)) == named


def test_the_capture_topology_has_the_captured_addresses(capture):
    assert expect_pair(capture, "cli", "srv").dst_ip == "10.77.2.1"


@pytest.mark.parametrize("tool, fixture", [(t, f) for t, f, n in NAMED if n == ["10.77.2.1"]])
def test_the_pair_that_was_measured_is_judged(capture, tool, fixture):
    check_destination(parsed(tool, fixture), capture, "cli", "srv")


@pytest.mark.parametrize("tool, fixture", [(t, f) for t, f, n in NAMED if n == ["10.77.2.1"]])
def test_another_pair_is_refused_naming_both(capture, tool, fixture):
    with pytest.raises(InputError) as err:
        check_destination(parsed(tool, fixture), capture, "cli", "rtr")
    assert "measured 10.77.2.1 (srv), not rtr (10.77.1.254)" in str(err.value)


def test_an_address_of_no_node_is_refused(capture):
    with pytest.raises(InputError, match=r"10\.77\.2\.99 \(no node of topology 'capture'"):
        check_destination(parsed("ping", "ping/unreachable.txt"), capture, "cli", "srv")


def test_output_that_names_no_destination_is_not_checked(capture):
    headless = "\n".join((FIXTURES / "ping" / "killed.txt").read_text().splitlines()[1:])
    run = parse("ping", headless + "\n")
    assert named_destinations(run) == []
    check_destination(run, capture, "cli", "rtr")


def test_a_ping_of_h9_is_not_judged_as_h1_h4(portfolio):
    """The reading of issue 22: a real ping, its destination written as h9's address
    (derived in the test: the capture's 10.77.2.1 replaced), judged as h1-h4."""
    h9 = expect_pair(portfolio, "h1", "h9").dst_ip
    text = (FIXTURES / "ping" / "normal.txt").read_text().replace("10.77.2.1", h9)
    run = parse("ping", text)
    check_destination(run, portfolio, "h1", "h9")
    with pytest.raises(InputError, match=rf"measured {re.escape(h9)} \(h9\), not h4"):
        check_destination(run, portfolio, "h1", "h4")


def test_labtools_parse_refuses_another_pair_in_one_line(tmp_path):
    topo = tmp_path / "capture.json"
    topo.write_text(json.dumps(CAPTURE_JSON))
    ping_out = str(FIXTURES / "ping" / "normal.txt")
    proc = run_cli(["parse", "ping", ping_out, "--topology", str(topo), "--src", "cli",
                    "--dst", "rtr"])
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "measured 10.77.2.1 (srv), not rtr" in lines[0]
    proc = run_cli(["parse", "ping", ping_out, "--topology", str(topo), "--src", "cli",
                    "--dst", "srv", "--json"])
    assert proc.returncode == 0, proc.stderr
    assert [v["metric"] for v in json.loads(proc.stdout)["verdicts"]] == ["rtt_min", "rtt_avg", "rtt_max"]
