"""Real measurements on a real Mininet network built from the reference topology.

Marker ``network``: needs root and a kernel with netem; `make test` runs these inside the
lab VM when the host kernel cannot. Expected values come from the kit's own calculator.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from labtools.model import expect
from labtools.lab import probes
from labtools.errors import LabtoolsError, ProbeTimeout, ToolError
from labtools.model.fairness import parse_flows
from labtools.lab.session import LabSession, wait_output
from labtools.tools.args import iperf3_client_args, iperf3_server_args
from labtools.judge.verdicts import verdicts_for

pytestmark = pytest.mark.network

LINKS = [("r1", "r2"), ("r2", "r3"), ("r3", "r4")]
PATHS = [("h1", "h4"), ("h1", "h9"), ("h7", "h9")]


def _leftovers() -> int:
    from labtools.system.cleanup import find_leftovers

    return find_leftovers().count()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    before = _leftovers()
    db = tmp_path_factory.mktemp("results") / "lab.sqlite"
    with LabSession("portfolio", results=db, case="test") as session:
        session.leftovers_before = before
        yield session
    assert _leftovers() == before


@pytest.mark.parametrize("src, dst", LINKS + PATHS)
def test_min_rtt_matches_the_topology(lab, src, dst):
    m = probes.ping(lab, src, dst, count=probes.MIN_RTT_PING_COUNT,
                    interval_s=probes.MIN_RTT_PING_INTERVAL_S)
    want = expect.rtt_ms(lab.topo, src, dst)
    tol = max(2.0, 0.05 * want)
    assert m.summary["received"] >= 18
    assert abs(m.summary["min_ms"] - want) <= tol, m.parsed.raw
    assert m.run_id is not None


@pytest.mark.parametrize("src, dst", PATHS)
def test_tcp_goodput_within_the_ceiling(lab, src, dst):
    m = probes.iperf3(lab, src, dst, duration_s=10, omit_s=2)
    rate, _ = expect.bottleneck(lab.topo, src, dst)
    ceiling = expect.tcp_goodput_ceiling_mbps(rate)
    got = m.summary["receiver_mbps"]
    assert 0.70 * ceiling <= got <= 1.0 * ceiling * 1.01, (got, ceiling)
    verdicts = verdicts_for(m.parsed, lab.topo, src, dst)
    sender = m.summary["sender_mbps"]
    overshoot = sender > ceiling * 1.02
    flagged = ((verdicts["metric"] == "sender_rate") & (verdicts["verdict"] == "invalid")).any()
    assert flagged == overshoot, (sender, ceiling, verdicts.to_dict("records"))


def test_concurrent_shares_fit_the_bottleneck(lab):
    flows = parse_flows("h1:h4,h2:h5")
    ms = probes.concurrent_iperf3(lab, flows, duration_s=8, omit_s=2)
    shares = probes.shares_table(lab, flows, ms)
    total = sum(m.summary["receiver_mbps"] for m in ms)
    assert total <= expect.tcp_goodput_ceiling_mbps(30) * 1.02
    assert all(m.extra["start_spread_ms"] < 500 for m in ms)
    assert 0.5 <= shares["jain_index"] <= 1.0


def test_killed_server_gives_a_clear_error_in_time(lab):
    argv = iperf3_client_args(lab.ip_towards("h1", "h4"), duration_s=6, port=5301)
    with lab.server("h4", iperf3_server_args(5301), 5301) as server:
        client = lab.start_process("h1", argv)
        time.sleep(2)
        os.killpg(server.pid, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(LabtoolsError) as err:
            out = wait_output(client, argv, "h1", timeout_s=20)
            from labtools.tools.parsers import parse

            probes._iperf3_ok(parse("iperf3", out))
    assert time.monotonic() - started < 20
    assert isinstance(err.value, (ToolError, ProbeTimeout)) or "iperf3" in str(err.value)
    assert "\n" not in str(err.value)


def test_hung_server_times_out(lab):
    argv = iperf3_client_args(lab.ip_towards("h2", "h5"), duration_s=3, port=5302)
    with lab.server("h5", iperf3_server_args(5302), 5302) as server:
        os.killpg(server.pid, signal.SIGSTOP)
        try:
            client = lab.start_process("h2", argv)
            started = time.monotonic()
            with pytest.raises(ProbeTimeout, match="did not finish within 8 s"):
                wait_output(client, argv, "h2", timeout_s=8)
            assert time.monotonic() - started < 12
        finally:
            os.killpg(server.pid, signal.SIGCONT)
