"""A live demonstration as data (labtools.lab.live_plan, live_presets): timed changes, the
topology and tc commands they give, the values expected after them, the presets, and how
an RTT is judged to follow a change. Expected values come from the kit's calculator."""

from __future__ import annotations

import pytest

from labtools.errors import InputError, TopologyError
from labtools.judge import policy
from labtools.lab.live_plan import (
    SWITCHES,
    FlowSpec,
    KnobChange,
    changed_topology,
    expectations,
    parse_change,
    rtt_follow,
    site,
    tc_change_lines,
    watched_ends,
)
from labtools.lab.live_presets import PRESETS, preset
from labtools.lab.netplan import link_devices, tc_lines
from labtools.model import expect
from labtools.model.catalog import load_topology
from labtools.model.fairness import Flow, max_min_shares
from labtools.model.topology import mininet_link_params
from tests.conftest import FIXTURES

PORTFOLIO = load_topology("portfolio")


def test_a_change_is_read_as_the_command_line_writes_it():
    change = parse_change("5s L2 delay_ms=40 queue_pkts=50")
    assert change == KnobChange("L2", (("delay_ms", 40.0), ("queue_pkts", 50)), 5.0)
    assert parse_change(change.text) == change


@pytest.mark.parametrize("text, message", [
    ("L2 delay_ms=40", "write it as"),
    ("5s L2 speed=3", "unknown knob 'speed'"),
    ("5s L2 queue_pkts=1.5", "is not a whole number"),
    ("5s L2 delay_ms=far", "is not a number"),
])
def test_a_change_that_is_not_one_is_refused_in_one_line(text, message):
    with pytest.raises(InputError, match=message):
        parse_change(text)


def test_a_delay_change_moves_the_expected_rtt_by_twice_the_change():
    after = changed_topology(PORTFOLIO, parse_change("0s L2 delay_ms=40"))
    before_rtt = expect.expect_pair(PORTFOLIO, "h1", "h4").rtt_ms
    after_rtt = expect.expect_pair(after, "h1", "h4").rtt_ms
    assert after_rtt - before_rtt == pytest.approx(2 * (40 - PORTFOLIO.link("L2").delay_ms))
    assert after.link("L1") == PORTFOLIO.link("L1")


@pytest.mark.parametrize("text, message", [
    ("0s h1-s1 delay_ms=5", "is not shaped"),
    ("0s L2 delay_ms=-1", "delay_ms=-1"),
    ("0s L2 queue_pkts=0", "queue_pkts=0"),
    ("0s L9 delay_ms=1", "no link 'L9'"),
])
def test_a_change_the_lab_cannot_make_is_refused(text, message):
    with pytest.raises(TopologyError, match=message):
        changed_topology(PORTFOLIO, parse_change(text))


def test_the_delay_change_is_the_command_that_was_run_in_the_lab_vm():
    """tests/fixtures/tc/vm_htb_netem_delay_changed shows the result of this command."""
    meta = (FIXTURES / "tc" / "vm_htb_netem_delay_changed.meta").read_text()
    (_, dev), _ = link_devices(PORTFOLIO, PORTFOLIO.link("L2"))
    before = PORTFOLIO.link("L2")
    after = changed_topology(PORTFOLIO, parse_change("0s L2 delay_ms=40")).link("L2")
    lines = tc_change_lines(before, after, dev)
    netem = next(line for line in lines if "netem" in line)
    assert " ".join(netem) in meta


def test_the_sending_end_of_each_shaped_link_a_data_flow_crosses_is_watched_once():
    flows = [FlowSpec("tcp", "h1", "h4"), FlowSpec("udp", "h1", "h4", rate_mbps=5),
             FlowSpec("tcp", "h4", "h1"), FlowSpec("ping", "h7", "h8")]
    sending = [(lk.label, *min(link_devices(PORTFOLIO, lk), key=lambda end: order.index(end[0])))
               for f, order in ((f, expect.path(PORTFOLIO, f.src, f.dst).nodes) for f in flows
                                if f.kind != "ping")
               for lk in expect.path(PORTFOLIO, f.src, f.dst).links if lk.shaped]
    got = watched_ends(PORTFOLIO, flows)
    assert got == list(dict.fromkeys(sending))  # each end once, the flows' order
    assert {end[1] for end in got} == {"r1", "r2", "r3"}  # both directions: both ends of L2
    assert all(site(PORTFOLIO, node) == node for _, node, _ in got)


def test_a_link_between_switches_is_watched_at_its_sending_port_beside_the_switches():
    dumbbell = load_topology("dumbbell")
    (label, node, dev), = watched_ends(dumbbell, [FlowSpec("tcp", "a1", "b1")])
    assert (label, node) == ("B", "s1") and dev in dict(link_devices(dumbbell,
                                                                      dumbbell.link("B"))).values()
    assert site(dumbbell, node) == SWITCHES and site(dumbbell, "a1") == "a1"
    assert watched_ends(dumbbell, [FlowSpec("ping", "a1", "b1")]) == []


def test_a_rate_change_changes_the_htb_class_tc_lines_made():
    before = PORTFOLIO.link("L2")
    after = changed_topology(PORTFOLIO, parse_change("0s L2 bw_mbps=10")).link("L2")
    lines = [" ".join(line) for line in tc_change_lines(before, after, "r2-eth2")]
    made = [line for line in tc_lines(after, "r2-eth2") if line.startswith("class add")]
    assert lines[0] == "tc " + made[0].replace("class add", "class change")
    assert all(not line.startswith("tc qdisc add") for line in lines)


def test_netem_taken_off_a_link_leaves_its_default_queue():
    link = PORTFOLIO.link("L2")
    bare = changed_topology(PORTFOLIO, KnobChange("L2", (("delay_ms", 0.0),)))
    bare_link = bare.link("L2")
    unqueued = type(bare_link)(**{**bare_link.__dict__, "queue_pkts": None})
    assert "delay" not in mininet_link_params(unqueued)
    last = tc_change_lines(link, unqueued, "r2-eth2")[-1]
    assert last[-3:] == ["netem", "limit", "1000"] and "replace" in last


def test_two_tcp_flows_expect_their_max_min_share_and_a_window_its_rate():
    flows = [FlowSpec("tcp", "h1", "h4"), FlowSpec("tcp", "h2", "h5", window_bytes=50_000)]
    got = expectations(PORTFOLIO, flows)
    shares = max_min_shares(PORTFOLIO, [Flow("h1", "h4"), Flow("h2", "h5")])
    first = got["tcp h1>h4"]
    assert first["share_mbps"] == shares[0].share_mbps
    assert first["rate_mbps"] == pytest.approx(expect.tcp_goodput_ceiling_mbps(shares[0].share_mbps))
    rtt = expect.expect_pair(PORTFOLIO, "h2", "h5").rtt_ms
    assert got["tcp h2>h5 w=50000"]["rate_mbps"] == pytest.approx(
        min(expect.window_rate_mbps(50_000, rtt), expect.tcp_goodput_ceiling_mbps(shares[1].share_mbps)))


def test_a_udp_flow_expects_what_the_path_carries_of_its_offer():
    slow = changed_topology(PORTFOLIO, parse_change("0s L2 bw_mbps=15"))
    flow = FlowSpec("udp", "h1", "h4", rate_mbps=20)
    assert expectations(slow, [flow])[flow.label]["rate_mbps"] == pytest.approx(
        expect.udp_goodput_mbps(15))
    assert expectations(PORTFOLIO, [flow])[flow.label]["rate_mbps"] == 20


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_tells_its_story_in_under_a_minute_on_the_reference_network(name):
    chosen = preset(name)
    topo = load_topology(chosen.topology)
    assert chosen.duration_s < 60 and chosen.look_at
    assert len(chosen.change_notes) == len(chosen.changes)
    for change in chosen.changes:
        assert change.at_s < chosen.duration_s
        topo = changed_topology(topo, change)
    assert expectations(topo, chosen.flows)


def test_an_unknown_preset_names_the_presets():
    with pytest.raises(InputError, match="bufferbloat"):
        preset("nope")


def test_an_rtt_that_steps_at_once_follows_and_one_that_lags_does_not():
    old = expect.expect_pair(PORTFOLIO, "h1", "h4").rtt_ms
    new = expect.expect_pair(changed_topology(PORTFOLIO, parse_change("0s L2 delay_ms=40")),
                             "h1", "h4").rtt_ms
    ticks = [i * 0.2 for i in range(50)]
    prompt = [(t, old if t < 5 else new) for t in ticks]
    follow = rtt_follow(prompt, 5.0, old, new)
    assert follow.ok and follow.step_ms == pytest.approx(new - old)
    assert follow.followed_after_s == pytest.approx(0.0, abs=0.21)
    lag = policy.LIVE_FOLLOW_S + 1
    late = [(t, old if t < 5 + lag else new) for t in ticks]
    assert not rtt_follow(late, 5.0, old, new).ok
    settling = [(t, old if t < 6.8 else new) for t in ticks if t < 8]  # 1.8 s to settle
    slow = rtt_follow(settling, 5.0, old, new)
    assert slow.ok and slow.after_ms == new and slow.followed_after_s == pytest.approx(1.8)
    loaded = [(t, rtt + 25.0) for t, rtt in prompt]  # a machine that adds 25 ms stays
    assert rtt_follow(loaded, 5.0, old, new).ok
    late_loaded = [(t, rtt + 50.0) for t, rtt in late]  # above the new RTT all along, late
    assert rtt_follow(late_loaded, 5.0, old, new).followed_after_s == pytest.approx(lag)
    flat = rtt_follow([(t, old + 2 * (new - old)) for t in ticks], 5.0, old, new)
    assert flat.followed_after_s is None or not flat.ok  # high all along: no step
    never = rtt_follow([(t, old) for t in ticks], 5.0, old, new)
    assert never.followed_after_s is None and not never.ok and "never" in never.describe()
