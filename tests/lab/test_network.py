"""Real measurements on a real Mininet network built from the reference topology.

Marker ``network``: needs root and a kernel with netem; `make test` runs these inside the
lab VM when the host kernel cannot. Expected values come from the kit's own calculator and
the bands from labtools.judge.policy. A rate check is conclusive only where this machine
(calibrated at lab start) can carry the load; otherwise the test is skipped with the
numbers ("inconclusive"), and it still fails on anything the network cannot produce.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from labtools.errors import ProbeTimeout, ToolError
from labtools.judge import policy
from labtools.judge.policy import INCONCLUSIVE, OK
from labtools.lab import probes
from labtools.lab.processes import wait_output
from labtools.lab.session import LabSession
from labtools.model import expect
from labtools.model.fairness import parse_flows
from labtools.tools.args import Iperf3Options

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
    with LabSession("portfolio", results=db, case="test",
                    durations=policy.durations(quick=True)) as session:
        print(f"\n{session.machine.describe() if session.machine else 'not calibrated'}")
        yield session
    assert _leftovers() == before


def conclusive(verdict) -> None:
    """Fail on a verdict that is neither ok nor inconclusive; skip, with the numbers, on an
    inconclusive one (this machine could not carry the load)."""
    if verdict.verdict == INCONCLUSIVE:
        pytest.skip(verdict.reason)
    assert verdict.verdict == OK, verdict


def test_the_machine_is_calibrated_and_saved_with_every_run(lab):
    machine = lab.machine
    assert machine is not None and machine.forward_mbps > 0
    assert 0 < machine.unshaped_link_ms < 5 and 0 <= machine.delayed_link_late_ms < 5
    m = probes.ping(lab, "r1", "r2")
    assert lab.store.get(m.run_id).context.machine == machine


@pytest.mark.parametrize("src, dst", LINKS + PATHS)
def test_min_rtt_matches_the_topology(lab, src, dst):
    m = probes.ping(lab, src, dst)
    s = m.summary
    assert s.transmitted == lab.durations.ping_count
    assert s.received == s.transmitted, m.raw  # an idle network loses nothing
    assert m.expected.rtt_ms == expect.rtt_ms(lab.topo, src, dst)
    assert m.verdicts[0].metric == "rtt_min"  # the minimum; an inflated average is rtt_avg's
    conclusive(m.verdicts[0])
    saved = lab.store.get(m.run_id)
    assert saved.verdicts == m.verdicts and saved.step == lab.step
    assert saved.exit_status == m.exit_status == 0


@pytest.mark.parametrize("src, dst", PATHS)
def test_tcp_goodput_within_the_ceiling(lab, src, dst):
    m = probes.iperf3(lab, src, dst, duration_s=10)
    ceiling = expect.tcp_goodput_ceiling_mbps(expect.bottleneck(lab.topo, src, dst)[0])
    receiver = m.verdicts[0]
    assert receiver.metric == "receiver_rate" and receiver.expected == ceiling
    # how late this machine's timers were during the run, measured beside it
    assert m.context.machine_late_ms is not None and m.context.machine_late_ms >= 0
    guard = [v for v in m.verdicts if v.metric == "sender_rate"]
    assert bool(guard) == (m.summary.sender_mbps > ceiling * policy.RATE_MAX), m.verdicts
    assert all(v.verdict == "invalid" for v in guard)
    # the receiver's own intervals (the server's JSON report) after iperf3's own warm-up
    # (-O: intervals marked omitted) give the steady rate
    assert m.parsed.summary["server_output"] == "json"
    t = m.table
    sums = t[(t["source"] == "server") & (t["stream"] == -1)]
    assert sums["omitted"].astype(bool).any(), "iperf3 left no warm-up out"
    late = sums[~sums["omitted"].astype(bool)]
    assert len(late) >= 5
    assert m.summary.steady_mbps == pytest.approx(
        late["bytes"].sum() * 8 / (late["end_s"].max() - late["start_s"].min()) / 1e6)
    conclusive(receiver)


def test_concurrent_flows_are_judged_and_saved_with_their_start(lab):
    result = probes.concurrent_iperf3(lab, parse_flows("h1:h4,h2:h5", lab.topo), duration_s=8)
    assert [v.verdict for v in result.verdicts].count("invalid") == 0, result.verdicts
    spread = next(v for v in result.verdicts if v.metric == "start spread")
    assert spread.measured == result.summary.start_spread_ms
    runs = lab.store.runs(group_id=result.group_id)
    assert len(runs) == 2
    for _, run in runs.iterrows():
        took = (run["finished_at"] - run["started_at"]).total_seconds()
        assert took >= 8, (run["started_at"], run["finished_at"])
        extra = lab.store.get(int(run["id"])).extra
        assert extra["start_spread_ms"] == result.summary.start_spread_ms
    back = lab.store.group(result.group_id)
    assert back.verdicts == result.verdicts and back.summary == result.summary
    conclusive(spread)  # released together (a machine too slow to start them: inconclusive)
    conclusive(next(v for v in result.verdicts if v.metric == "sum of shares"))


# iperf3's own words for a peer that vanished; which socket notices first varies from run
# to run (CI saw "control socket has closed unexpectedly" and "unable to write to stream
# socket: Connection reset by peer").
PEER_GONE = ("closed unexpectedly", "Connection reset by peer", "Broken pipe")


def _established(lab, host: str, port: int) -> int:
    """TCP connections established to ``port`` on ``host`` (iperf3: control + data)."""
    out = lab.run(host, ["ss", "-Htn", "state", "established", "sport", f"= :{port}"], 10).text
    return len([line for line in out.splitlines() if line.strip()])


def test_killed_server_gives_a_clear_error_and_keeps_the_output(lab):
    errors = []

    def measure():
        try:
            probes.iperf3(lab, "h1", "h4", duration_s=6, port=5301)
        except (ToolError, ProbeTimeout) as err:
            errors.append(err)

    worker = threading.Thread(target=measure)
    worker.start()
    # kill the server mid-transfer: once the data connection is established (how long the
    # client takes to start varies with the machine's load: killed any earlier, the client
    # meets "Connection refused", a different fault), and a second into the transfer
    deadline = time.monotonic() + 60
    while _established(lab, "h4", 5301) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _established(lab, "h4", 5301) >= 2, "the transfer never started"
    time.sleep(1.0)
    os.killpg(lab._servers[-1].pid, signal.SIGKILL)
    started = time.monotonic()
    worker.join(60)
    assert time.monotonic() - started < 30
    assert len(errors) == 1 and type(errors[0]) is ToolError, errors
    message = str(errors[0])
    assert message.startswith("iperf3: ") and any(w in message for w in PEER_GONE), message
    failed = lab.store.runs(status="error").iloc[-1]
    assert failed["error"] == str(errors[0]) and '"error"' in failed["raw_output"]


def test_hung_server_times_out(lab):
    options = Iperf3Options(lab.ip_towards("h2", "h5"), duration_s=3, port=5302)
    argv = options.argv()
    with lab.server("h5", options.server_argv(), 5302) as server:
        os.killpg(server.pid, signal.SIGSTOP)
        try:
            client = lab.start_process("h2", argv)
            started = time.monotonic()
            with pytest.raises(ProbeTimeout, match="did not finish within 8 s"):
                wait_output(client, argv, "h2", timeout_s=8)
            assert time.monotonic() - started < 12
        finally:
            os.killpg(server.pid, signal.SIGCONT)
