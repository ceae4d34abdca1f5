"""The live demonstration's runtime (labtools.lab.live, live_readers) without a network: a
stand-in lab whose nodes print what real ones printed (tests/fixtures/live: a sampler loop
on r1 and on h1 of ``line,n=2,delay_ms=0,bw_mbps=20`` while h1 sent to h2; a ``ping -D``),
and records the commands it is asked to run. Expected values come from the kit's
calculator, bands from the policy."""

from __future__ import annotations

import io
from contextlib import contextmanager

import pytest

from labtools.errors import InputError, ToolError
from labtools.judge import policy
from labtools.lab.live import FIRST_PORT, LiveDemo
from labtools.lab.live_plan import SWITCHES, FlowSpec, changed_topology, parse_change
from labtools.lab.live_readers import PingReader, read_blocks, sampler_argv
from labtools.lab.processes import ToolOutput
from labtools.model import expect
from labtools.model.catalog import load_topology
from labtools.results.store import ResultStore
from tests.conftest import FIXTURES

LINE = "line,n=2,delay_ms=0,bw_mbps=20"


def lines(name: str):
    return (FIXTURES / name).read_text().splitlines()


class Proc:
    """A finished process that printed ``text``."""

    def __init__(self, text: str = "") -> None:
        self.stdout = io.StringIO(text)
        self.pid = 0

    def poll(self):
        return 0


class Lab:
    """What LiveDemo uses of a lab session, with no network behind it."""

    def __init__(self, topology: str, tmp_path) -> None:
        self.topo = load_topology(topology)
        self.store = ResultStore(tmp_path / "r.sqlite")
        self.session_id, self.case = "s1", "demo test"
        self.ran, self.started = [], []

    def start_process(self, node, argv):
        self.started.append((node, argv))
        if argv[0] == "ping":
            return Proc((FIXTURES / "ping" / "timestamps.txt").read_text())
        return Proc()

    @contextmanager
    def server(self, node, argv, port=None, udp=False, wait=True):
        self.started.append((node, argv))
        yield Proc()

    def run(self, node, argv, timeout_s):
        self.ran.append((node, argv))
        return ToolOutput("", 0)

    def start_beside_switches(self, argv):
        return self.start_process(SWITCHES, argv)

    def run_beside_switches(self, argv, timeout_s):
        return self.run(SWITCHES, argv, timeout_s)


class Fixed:
    def __init__(self, block) -> None:
        self.block = block

    def latest(self):
        return self.block


@pytest.fixture
def demo(tmp_path):
    lab = Lab(LINE, tmp_path)
    live = LiveDemo(lab, [FlowSpec("tcp", "h1", "h2"), FlowSpec("ping", "h1", "h2")])
    live.start()
    for flow in live.flows:
        live.start_flow(flow)
    yield live
    live.stop()


def feed(demo, n: int):
    tc = read_blocks(lines("live/sampler_tc_r1.txt"))
    ss = read_blocks(lines("live/sampler_ss_h1.txt"))
    demo._samplers = {"r1": Fixed(tc[n]), "h1": Fixed(ss[n])}


def test_the_sending_end_of_the_shaped_link_is_watched_and_samplers_start(demo):
    assert demo.watched == [("L1", "r1", "r1-eth1")]
    started = demo.lab.started
    assert ("r1", sampler_argv(True, False, policy.LIVE_SAMPLE_INTERVAL_S)) in started
    assert ("h1", sampler_argv(False, True, policy.LIVE_SAMPLE_INTERVAL_S)) in started
    assert [argv[0] for node, argv in started if node == "h1"][1:] == ["iperf3", "ping"]


def test_two_samples_give_the_link_and_the_flow_rates_within_what_the_link_carries(demo):
    feed(demo, 0)
    first = demo.sample()
    assert first["links"]["L1"]["backlog_pkts"] == 9 and first["links"]["L1"]["sent_mbps"] is None
    feed(demo, 1)
    second = demo.sample()
    link_mbps = demo.topo.link("L1").bw_mbps
    sent = second["links"]["L1"]["sent_mbps"]
    assert policy.RATE_OK_LOW * link_mbps <= sent <= policy.RATE_MAX * link_mbps
    flow = second["tcp"]["tcp h1>h2"]
    ceiling = expect.tcp_goodput_ceiling_mbps(link_mbps)
    assert policy.RATE_OK_LOW * ceiling <= flow["rate_mbps"] <= policy.RATE_MAX * ceiling
    assert flow["local"] == "10.0.0.2:54972" and flow["cwnd"] > 0  # the data connection
    assert 0.5 < second["interval_s"] < policy.LIVE_SLOW_SAMPLE_S
    assert second["expected"]["tcp h1>h2"]["rate_mbps"] == pytest.approx(ceiling)


def test_ping_replies_come_with_their_own_times():
    reader = PingReader("p", Proc((FIXTURES / "ping" / "timestamps.txt").read_text()))
    reader.join()
    replies = reader.take()
    assert len(replies) == 10 and replies[0] == (1795567079.041017, 0.033)
    assert reader.take() == []


def test_a_change_runs_tc_on_both_ends_and_redraws_what_is_expected(demo):
    done = demo.change(parse_change("3s L1 bw_mbps=5"))
    assert [(node, argv[:3]) for node, argv in demo.lab.ran] == [
        ("r1", ["tc", "class", "change"]), ("r2", ["tc", "class", "change"])]
    assert done["expected"]["tcp h1>h2"]["rate_mbps"] == pytest.approx(
        expect.tcp_goodput_ceiling_mbps(5))
    demo.lab.ran.clear()
    demo.change(parse_change("4s L1 delay_ms=30"))
    assert all(argv[:3] == ["tc", "qdisc", "replace"] for _, argv in demo.lab.ran)
    kinds = [e.kind for e in demo.lab.store.live_events(demo_id=demo.demo_id)]
    assert kinds == ["start", "flow", "flow", "change", "change"]


def test_a_failed_tc_is_a_tool_error(demo):
    demo.lab.run = lambda node, argv, timeout_s: ToolOutput("RTNETLINK answers: nope", 2)
    with pytest.raises(ToolError, match="RTNETLINK answers: nope"):
        demo.change(parse_change("0s L1 bw_mbps=5"))


def test_a_link_between_switches_is_sampled_and_changed_beside_the_switches(tmp_path):
    lab = Lab("dumbbell", tmp_path)
    live = LiveDemo(lab, [FlowSpec("tcp", "a1", "b1"), FlowSpec("ping", "a1", "b1")])
    assert live.watched == [("B", "s1", "s1-eth1")]  # Mininet's name of s1's first port
    live.start()
    assert (SWITCHES, sampler_argv(True, False, policy.LIVE_SAMPLE_INTERVAL_S)) in lab.started
    assert ("a1", sampler_argv(False, True, policy.LIVE_SAMPLE_INTERVAL_S)) in lab.started
    for flow in live.flows:
        live.start_flow(flow)
    done = live.change(parse_change("3s B delay_ms=30 bw_mbps=5"))
    assert [(where, argv[:3], argv[4]) for where, argv in lab.ran] == [
        (SWITCHES, ["tc", "class", "change"], "s1-eth1"),
        (SWITCHES, ["tc", "qdisc", "replace"], "s1-eth1"),
        (SWITCHES, ["tc", "class", "change"], "s2-eth1"),
        (SWITCHES, ["tc", "qdisc", "replace"], "s2-eth1")]
    changed = changed_topology(lab.topo, parse_change("0s B delay_ms=30 bw_mbps=5"))
    assert done["expected"]["ping a1>b1"]["rtt_ms"] == pytest.approx(
        expect.expect_pair(changed, "a1", "b1").rtt_ms)
    live.stop()


def test_a_slow_machine_is_named_with_its_numbers(demo):
    assert demo.slow_note() is None
    demo._intervals += [2.8, 2.9, 2.7]
    note = demo.slow_note()
    assert note.startswith("samples every 2.8 s") and "too slow for a live demo" in note


def test_a_whole_run_starts_flows_applies_changes_samples_and_ends(tmp_path):
    lab = Lab(LINE, tmp_path)
    live = LiveDemo(lab, [FlowSpec("ping", "h1", "h2")], interval_s=0.2)
    seen = []
    live.run(1.0, [parse_change("0.3s L1 delay_ms=5")], on_sample=seen.append)
    kinds = [e.kind for e in live.events]
    assert kinds[:2] == ["start", "flow"] and "change" in kinds and kinds[-1] == "end"
    assert seen and len(seen) == kinds.count("sample")
    assert live.lab.store.live_events(demo_id=live.demo_id)[-1].kind == "end"


def test_a_burst_of_slow_changes_leaves_a_sample_between_each_two(tmp_path):
    """Under emulation a change takes seconds (tc in a node); three asked at once are
    applied one by one with a sample between, not in one block without samples."""
    import time

    lab = Lab(LINE, tmp_path)
    live = LiveDemo(lab, [FlowSpec("ping", "h1", "h2")], interval_s=0.2)
    applied = live.change

    def slow_change(change):
        time.sleep(0.3)  # longer than a sampling interval, as on a slow machine
        return applied(change)

    live.change = slow_change
    burst = [parse_change(f"0.2s L1 delay_ms={d}") for d in (5, 10, 15)]
    live.run(1.6, burst)
    kinds = [e.kind for e in live.events if e.kind in ("change", "sample")]
    changes = [i for i, kind in enumerate(kinds) if kind == "change"]
    assert len(changes) == 3
    assert all("sample" in kinds[a:b] for a, b in zip(changes, changes[1:])), kinds


def test_a_refused_change_is_recorded_and_the_run_goes_on(tmp_path):
    lab = Lab(LINE, tmp_path)
    live = LiveDemo(lab, [FlowSpec("ping", "h1", "h2")], interval_s=0.2)
    told = []
    live.run(0.5, [parse_change("0s h1-r1 delay_ms=5")], on_change=told.append)
    assert "is not shaped" in told[0]["refused"]


def test_a_sampler_interval_out_of_range_is_refused():
    with pytest.raises(InputError, match="choose 0.1..60 s"):
        sampler_argv(True, True, 0.01)
    assert FIRST_PORT > 1024
