"""The judged measurement, built from real captured output: typed summaries, the warm-up
left out of the judged rate, concurrent flows and capacity searches judged from their
outputs, and every one of them saved and rebuilt from the store without a network."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from labtools.judge import policy
from labtools.judge.capacity import judge_capacity
from labtools.judge.machine import MachineProfile
from labtools.judge.measurement import JudgeContext, ProbeCall, judge_output, judge_summary
from labtools.judge.shares import flows_spec, judge_flows
from labtools.model import expect
from labtools.model.catalog import load_topology
from labtools.model.fairness import parse_flows
from labtools.results.records import GroupRecord, RunRecord
from labtools.results.store import ResultStore
from labtools.tools.parsers import parse
from labtools.tools.summaries import RateSummary, RttSummary, UdpSummary, steady_receiver_mbps
from tests.conftest import FIXTURES

#: the capture network of the iperf fixtures: one HTB 20 Mbit/s hop, no delay; as a topology
CAPTURE = "dumbbell,bw_mbps=20,delay_ms=0,pairs=2"


def _text(folder: str, name: str) -> str:
    return (FIXTURES / folder / name).read_text()


@pytest.fixture(scope="module")
def capture():
    return load_topology(CAPTURE)


def test_ping_is_summarised_with_percentiles(capture):
    m = judge_output("ping", _text("ping", "normal.txt"), capture, "a1", "b1")
    assert isinstance(m.summary, RttSummary)
    assert m.summary.min_ms == m.parsed.summary["min_ms"]
    rtts = sorted(m.table["rtt_ms"])
    assert m.summary.p50_ms == rtts[len(rtts) // 2 - 1] or m.summary.p50_ms in rtts
    assert m.summary.min_ms <= m.summary.p50_ms <= m.summary.p90_ms <= m.summary.max_ms
    assert [v.metric for v in m.verdicts] == ["rtt_min", "rtt_avg", "rtt_max"]
    assert m.summary.max_after_first_ms == m.table["rtt_ms"].iloc[1:].max()
    assert m.expected.rtt_ms == expect.rtt_ms(capture, "a1", "b1")


def test_the_judged_rate_leaves_out_the_warm_up():
    """The verdict judges the receiver after the warm-up, as the docs and the plots say:
    a real simpleperf run with 0.5 s intervals, the first second left out."""
    parsed = parse("simpleperf", _text("simpleperf", "client_t2_i0.5_P2.jsonl"))
    m = judge_output("simpleperf", parsed.raw, load_topology("dumbbell,bw_mbps=1000"), "a1", "b1",
                     JudgeContext(warmup_s=1.0))
    assert isinstance(m.summary, RateSummary)
    rows = parsed.table[(parsed.table["side"] == "receiver") & (parsed.table["start_s"] >= 1.0)]
    span = rows["end_s"].max() - rows["start_s"].min()
    assert m.summary.steady_mbps == pytest.approx(rows["bytes"].sum() * 8 / span / 1e6)
    assert m.summary.steady_mbps != pytest.approx(m.summary.receiver_mbps, rel=1e-3)
    assert m.verdicts[0].measured == m.summary.steady_mbps


def test_iperf3_omitted_intervals_are_the_warm_up():
    parsed = parse("iperf3", _text("iperf3", "tcp_omit.json"))
    # iperf3 restarts its clock after -O: the omitted rows are the warm-up, whatever warmup_s
    assert steady_receiver_mbps(parsed.rows, 1.0) == steady_receiver_mbps(parsed.rows, 0.0)


def test_udp_is_judged_against_what_was_sent(capture):
    m = judge_output("iperf", _text("iperf2", "udp_overload.txt"), capture, "a1", "b1",
                     JudgeContext(offered_mbps=30))
    assert isinstance(m.summary, UdpSummary)
    assert m.summary.loss_pct == m.parsed.summary["lost_pct"]
    assert [v.metric for v in m.verdicts] == ["receiver_rate", "loss_above_capacity"]
    assert m.verdict == "ok", m.verdicts


def test_a_starved_flow_is_not_fair(capture):
    """Jain's index counts a flow that received nothing: 0.5 for one full and one empty."""
    flows = parse_flows("a1:b1,a2:b2", capture)
    outputs = [parse("iperf3", _text("iperf3", "tcp_p1.json")),
               parse("iperf3", _text("iperf3", "client_interrupted.json"))]
    result = judge_flows(capture, flows, outputs, JudgeContext(warmup_s=0.0))
    assert result.table["measured_mbps"].iloc[1] is None or pd.isna(result.table["measured_mbps"].iloc[1])
    assert result.jain_index == pytest.approx(0.5)
    jain = next(v for v in result.verdicts if v.metric.startswith("Jain"))
    assert jain.verdict == "suspicious"


def test_flows_are_judged_per_flow_and_together(capture):
    flows = parse_flows("a1:b1,a2:b2", capture)
    outputs = [parse("iperf3", _text("iperf3", "tcp_p1.json")),
               parse("iperf3", _text("iperf3", "tcp_omit.json"))]
    result = judge_flows(capture, flows, outputs, JudgeContext(), start_spread_ms=12.5)
    assert [v.metric for v in result.verdicts] == [
        "share a1-b1", "share a2-b2", "sum of shares", "Jain's index (rate / fair share on B)",
        "start spread"]
    # two flows measured one after the other, each alone at ~19 Mbit/s: together impossible
    assert result.verdicts[2].verdict == "invalid"
    assert result.summary.start_spread_ms == 12.5
    assert flows_spec(flows) == "a1:b1,a2:b2"
    for m, row in zip(result.measurements, result.verdicts):
        assert m.verdicts[0] == row


def test_flows_in_opposite_directions_do_not_share_a_capacity(capture):
    """Each direction of a link has its own rate: two flows crossing B in opposite
    directions, each at ~19 Mbit/s, are not judged against one 20 Mbit/s capacity."""
    opposite = parse_flows("a1:b1,b2:a2", capture)
    outputs = [parse("iperf3", _text("iperf3", "tcp_p1.json")),
               parse("iperf3", _text("iperf3", "tcp_omit.json"))]
    result = judge_flows(capture, opposite, outputs, JudgeContext())
    assert result.summary.capacity_mbps is None
    assert "sum of shares" not in [v.metric for v in result.verdicts]
    assert all(v.verdict != "invalid" for v in result.verdicts), result.verdicts
    same = judge_flows(capture, parse_flows("a1:b1,a2:b2", capture), outputs, JudgeContext())
    assert same.summary.capacity_mbps == pytest.approx(
        expect.tcp_goodput_ceiling_mbps(capture.link("B").bw_mbps))


def test_capacity_is_judged_from_its_steps(capture):
    steps = [judge_output("iperf", _text("iperf2", name), capture, "a1", "b1",
                          JudgeContext(offered_mbps=rate))
             for name, rate in (("udp_interval.txt", 10.0), ("udp_overload.txt", 30.0))]
    search = judge_capacity(capture, "a1", "b1", steps, ["ramp", "ramp"], [10.0, 30.0])
    assert list(search.table["saturated"]) == [False, True]
    assert search.summary.knee_mbps == 30.0 and search.summary.last_clean_mbps == 10.0
    assert search.estimate_mbps == max(s.summary.receiver_mbps for s in steps)
    assert search.verdicts[0].metric == "capacity estimate"


@pytest.mark.parametrize("late_ms, verdict, words", [
    (None, "suspicious", "datagrams lost below the path's rate"),
    (12.0, "inconclusive", "timers fired up to 12.0 ms late")])
def test_a_low_capacity_estimate_says_why_with_the_steps_own_timers(capture, late_ms, verdict,
                                                                    words):
    """A search whose estimate came out low is judged with the lateness its own steps
    measured beside them (the lab's context has none): late timers make it inconclusive
    with the number; otherwise the reason is UDP's, not a TCP window's."""
    machine = MachineProfile(0.1, 0.2, 80.0, "vm-tcg")
    step = judge_output("iperf", _text("iperf2", "udp_interval.txt"), capture, "a1", "b1",
                        JudgeContext(offered_mbps=10.0, machine=machine, machine_late_ms=late_ms))
    search = judge_capacity(capture, "a1", "b1", [step], ["ramp"], [10.0],
                            JudgeContext(machine=machine))
    row = search.verdicts[0]
    assert row.measured < policy.RATE_OK_LOW * row.expected  # the estimate is low
    assert row.verdict == verdict and words in row.reason, row.reason
    assert "window" not in row.reason


def test_a_saved_measurement_is_rebuilt_without_a_network(tmp_path, capture):
    store = ResultStore(tmp_path / "r.sqlite")
    call = ProbeCall("iperf3", {"src": "a1", "dst": "b1"})
    m = judge_output("iperf3", _text("iperf3", "tcp_server_output.json"), capture, "a1", "b1",
                     JudgeContext(warmup_s=1.0), ["iperf3", "-c", "10.0.0.3"], call=call,
                     started_at="2026-11-22T10:00:00+00:00")
    run_id = store.save(RunRecord.from_measurement(m, topology=capture, session_id="s1", step=3))
    saved = store.get(run_id)
    assert saved.verdicts == m.verdicts and saved.verdicts
    assert saved.call == call and saved.step == 3 and saved.session_id == "s1"
    assert saved.context == m.context and saved.exit_status is None  # parsed from a file
    back = store.measurement(run_id)
    assert back.verdicts == m.verdicts and back.summary == m.summary
    assert back.call == call and back.context == m.context and back.run_id == run_id
    pd.testing.assert_frame_equal(back.table, m.table)


def test_a_saved_group_is_rebuilt(tmp_path, capture):
    store = ResultStore(tmp_path / "r.sqlite")
    flows = parse_flows("a1:b1,a2:b2", capture)
    raws = [_text("iperf3", "tcp_p1.json"), _text("iperf3", "tcp_p3.json")]
    result = judge_flows(capture, flows, [parse("iperf3", r) for r in raws], JudgeContext(), start_spread_ms=3.0)
    for m in result.measurements:
        store.save(RunRecord.from_measurement(m, topology=capture, group_id="g1"))
    store.save_group(GroupRecord("g1", "flows", {"flows": flows_spec(flows),
                                                 "start_spread_ms": 3.0},
                                 result.summary, result.verdicts))
    assert store.groups()[0].summary == result.summary
    back = store.group("g1")
    assert back.verdicts == result.verdicts and back.summary == result.summary
    assert [m.verdicts for m in back.measurements] == [m.verdicts for m in result.measurements]


def test_policy_durations():
    quick, full = policy.durations(True), policy.durations(False)
    assert quick.tcp_s < full.tcp_s and quick.sharing_s == full.sharing_s == 10
    assert quick.warmup_s == policy.warmup_s(quick.tcp_s) == 1.0
    assert full.warmup_s == policy.WARMUP_MAX_S


def test_jain_uses_each_connections_own_rate(capture):
    """A -P 3 flow: iperf3's server report gives each connection's receiver intervals
    (5.85, 6.87, 6.40 Mbit/s after the warm-up); the index is computed on those, not on the
    flow's rate split evenly (which is always 1.0)."""
    from labtools.model.fairness import jain_index
    from labtools.tools.summaries import steady_receiver_mbps, steady_stream_mbps

    parsed = parse("iperf3", _text("iperf3", "tcp_p3_server_output.json"))
    streams = steady_stream_mbps(parsed.rows, 1.0)
    # the connections add up to the receiver's own per-interval sums
    assert len(streams) == 3 and sum(streams) == pytest.approx(
        steady_receiver_mbps(parsed.rows, 1.0), rel=1e-3)
    result = judge_flows(capture, parse_flows("a1:b1x3", capture), [parsed],
                         JudgeContext(warmup_s=1.0))
    assert result.jain_index == pytest.approx(jain_index(streams))
    assert result.jain_index < 1.0  # the even split of the flow's rate would give exactly 1


def test_flows_that_share_no_bottleneck_have_no_fairness_index():
    """Notebook 04's scenario D: h1-h4 (limited by L2) and h8-h9 (by L3) share no link, so
    Jain's index says nothing about them (it said '0.927 ok: even sharing')."""
    from labtools.model.catalog import load_topology

    topo = load_topology("portfolio")
    output = parse("iperf3", _text("iperf3", "tcp_p1.json"))
    result = judge_flows(topo, parse_flows("h1:h4,h8:h9", topo), [output, output],
                         JudgeContext())
    assert result.jain_index is None
    assert not any(v.metric.startswith("Jain") for v in result.verdicts)
    shared = judge_flows(topo, parse_flows("h1:h4,h2:h5,h8:h9", topo), [output] * 3,
                         JudgeContext())
    assert [v.metric for v in shared.verdicts if v.metric.startswith("Jain")] == [
        "Jain's index (rate / fair share on L2)"]


def test_flows_that_started_far_apart_say_little_about_sharing(capture):
    """The start gate released two flows 3.1 s apart once, on a host loaded four times
    over: the first ran alone for a third of the run. The set says so (inconclusive)."""
    flows = parse_flows("a1:b1,a2:b2", capture)
    outputs = [parse("iperf3", _text("iperf3", "tcp_p1.json"))] * 2
    run_s = judge_flows(capture, flows, outputs, JudgeContext()).measurements[0].summary.duration_s
    limit_ms = policy.START_SPREAD_MAX_FRACTION * run_s * 1e3
    near = judge_flows(capture, flows, outputs, JudgeContext(), start_spread_ms=limit_ms / 2)
    far = judge_flows(capture, flows, outputs, JudgeContext(), start_spread_ms=2 * limit_ms)
    assert next(v for v in near.verdicts if v.metric == "start spread").verdict == "ok"
    row = next(v for v in far.verdicts if v.metric == "start spread")
    assert row.verdict == "inconclusive" and "ran alone" in row.reason


def _lossy():
    """Two hosts on one 20 Mbit/s, 10 ms link that loses 1 %: the loss-limited estimate
    (Mathis et al.) 7.09 Mbit/s is below the goodput ceiling 19.13."""
    from labtools.model.topology import Link, Node, Topology

    return Topology("lossy", (Node("h1"), Node("h2")),
                    (Link("h1", "h2", bw_mbps=20, delay_ms=10, loss_pct=1.0),))


def test_tcp_above_the_loss_limited_estimate_is_a_note_not_invalid():
    """CUBIC may exceed Mathis et al.'s (Reno's) rate: a receiver at 12 Mbit/s and a sender
    at 12.4 on the lossy link are within what it carries, so nothing is invalid."""
    topo = _lossy()
    e = expect.expect_pair(topo, "h1", "h2")
    assert e.tcp_limit_mbps == e.mathis_limit_mbps < e.tcp_goodput_ceiling_mbps
    run = RateSummary(sender_mbps=12.4, receiver_mbps=12.0, steady_mbps=12.0, warmup_s=0.0,
                      duration_s=10.0, streams=1)
    rows = judge_summary(run, e, JudgeContext(), topo)
    assert [(v.metric, v.verdict) for v in rows] == [("receiver_rate", "ok")]
    assert "above the loss-limited estimate" in rows[0].reason
    # above what the link carries stays impossible, for the receiver and the sender
    over = replace(run, sender_mbps=21.0, steady_mbps=20.5, receiver_mbps=20.5)
    rows = judge_summary(over, e, JudgeContext(), topo)
    assert [(v.metric, v.verdict) for v in rows] == [("receiver_rate", "invalid"),
                                                     ("sender_rate", "invalid")]
    assert rows[0].expected == pytest.approx(e.tcp_goodput_ceiling_mbps)


def test_a_rate_just_above_what_the_path_carries_is_not_called_within_it():
    """19.50 Mbit/s on the lossy link: above the 19.13 it carries by less than a measured
    rate may be (``policy.RATE_MAX``), so ``ok``; the reason says "above", never "within"."""
    topo = _lossy()
    e = expect.expect_pair(topo, "h1", "h2")
    carry = e.tcp_goodput_ceiling_mbps
    got = 19.50
    assert carry < got <= carry * policy.RATE_MAX
    run = RateSummary(sender_mbps=got, receiver_mbps=got, steady_mbps=got, warmup_s=0.0,
                      duration_s=10.0, streams=1)
    row = judge_summary(run, e, JudgeContext(), topo)[0]
    assert row.verdict == "ok" and "within" not in row.reason
    assert f"{got / carry - 1:.1%} above the {carry:.2f} the path carries" in row.reason


def test_the_median_under_load_names_its_replies(capture):
    """A real ping judged as if a2 -> b2 loaded the capture dumbbell: the median's reason
    carries the replies it rests on."""
    m = judge_output("ping", _text("ping", "normal.txt"), capture, "a1", "b1",
                     JudgeContext(load=("a2", "b2")))
    median = next(v for v in m.verdicts if v.metric == "rtt_p50 under load")
    assert m.summary.samples > 0
    assert f"median {m.summary.p50_ms:.1f} ms of {m.summary.samples} replies" in median.reason


def test_check_network_names_repeated_flows_by_what_ran(capture, capsys):
    """Lab 5's repeated parallel flows were printed as "RepeatedMeasurement: share h1-h4"
    in a browser: a set of flows is named by what ran, repeated or not."""
    from labtools.judge.repeated import judge_repeated
    from labtools.teach.notebook import check_network

    flows = parse_flows("a1:b1,a2:b2", capture)
    outputs = [parse("iperf3", _text("iperf3", "tcp_p1.json")),
               parse("iperf3", _text("iperf3", "tcp_omit.json"))]
    once = judge_flows(capture, flows, outputs, JudgeContext())
    check_network(judge_repeated([once, once]), once)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "share a1-b1" in ln]
    assert len(lines) == 2 and all("flows together: share a1-b1" in ln for ln in lines), lines
    assert not any("Measurement" in ln for ln in lines)
