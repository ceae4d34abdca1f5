"""Verdicts on parsed real outputs: outliers, RTT series, rates, sender overshoot, UDP loss,
sharing, and what a calibrated machine changes. Thresholds come from the policy module."""

from __future__ import annotations

import re

import pytest

from labtools.errors import InputError
from labtools.judge import policy, rate_verdicts, verdicts
from labtools.judge.machine import MachineProfile
from labtools.model import expect
from labtools.tools.parsers import parse
from tests.conftest import FIXTURES

#: the capture network of tests/fixtures: HTB at 20 Mbit/s in the router (see the .meta files)
CAPTURE_LINK_MBPS = 20
#: a machine under software emulation as calibrated in the lab VM (numbers of that order)
SLOW_MACHINE = MachineProfile(unshaped_link_ms=0.1, delayed_link_late_ms=0.3, forward_mbps=35.0,
                              emulation="vm-tcg")


def _fixture(tool_dir: str, name: str, tool: str):
    return parse(tool, (FIXTURES / tool_dir / name).read_text())


def test_outliers_follow_the_policy_rule():
    parsed = _fixture("ping", "partial_loss.txt", "ping")
    flagged = verdicts.flag_rtt_outliers(parsed.table)
    limit = policy.outlier_threshold_ms(parsed.table["rtt_ms"].min())
    assert list(flagged["outlier"]) == [v > limit for v in parsed.table["rtt_ms"]]
    assert flagged["outlier"].any() and not flagged["outlier"].all()
    reasons = flagged.loc[flagged["outlier"], "reason"]
    assert all("queueing" in r or "ARP" in r for r in reasons)


def test_first_slow_sample_is_blamed_on_arp():
    parsed = _fixture("ping", "normal.txt", "ping")
    table = parsed.table.copy()
    # the same series, with the first reply as slow as an ARP round trip over the path
    table.loc[0, "rtt_ms"] = table["rtt_ms"].min() + 50
    flagged = verdicts.flag_rtt_outliers(table)
    assert flagged.loc[0, "outlier"] and "ARP" in flagged.loc[0, "reason"]
    assert not flagged.loc[1:, "outlier"].any()


def test_no_replies_no_outliers():
    parsed = _fixture("ping", "total_loss.txt", "ping")
    assert not verdicts.flag_rtt_outliers(parsed.table)["outlier"].any()
    row = verdicts.rtt_verdict(parsed.summary["min_ms"], 60)
    assert row.verdict == "invalid"
    assert verdicts.rtt_average_verdict(None, None).verdict == "ok"


@pytest.mark.parametrize("min_ms, expected, verdict, words", [
    (61.4, 60, "ok", "within"),                 # the reference student's h1-h4 minimum
    (55.0, 60, "invalid", "below the propagation delay"),
    (70.0, 60, "suspicious", "extra queueing"),
    (21.9, 20, "ok", "within 2.0 ms"),          # the 2 ms floor on short paths
])
def test_rtt_minimum_verdicts(min_ms, expected, verdict, words):
    row = verdicts.rtt_verdict(min_ms, expected)
    assert row.metric == "rtt_min" and row.verdict == verdict and words in row.reason
    assert row.ratio == pytest.approx(min_ms / expected, abs=1e-4)


def test_an_average_inflated_by_outliers_is_a_verdict_of_its_own():
    """The reference student's h1-h4: min 61.4 ms, average 153.4 ms. The minimum agrees
    with the links; the average says the series waited (it used to turn the minimum's
    verdict suspicious too)."""
    assert verdicts.rtt_verdict(61.4, 60).verdict == "ok"
    row = verdicts.rtt_average_verdict(61.4, 153.4)
    assert row.metric == "rtt_avg" and row.verdict == "suspicious"
    assert "inflated by outliers" in row.reason and row.expected == policy.outlier_threshold_ms(61.4)
    assert verdicts.rtt_average_verdict(61.4, 62.0).verdict == "ok"


def test_what_the_machine_adds_moves_the_expected_rtt():
    """63.5 ms on a 60 ms path (a CI run under software emulation): suspicious with the
    plain tolerance of 3 ms, ok once the machine's calibrated 2.4 ms are counted."""
    assert verdicts.rtt_verdict(63.5, 60).verdict == "suspicious"
    row = verdicts.rtt_verdict(63.5, 60, machine_ms=2.4)
    assert row.verdict == "ok" and "2.4 ms this machine adds (calibrated)" in row.reason
    assert verdicts.rtt_verdict(58.0, 60, machine_ms=2.4).verdict == "ok"


def test_sender_overshoot_is_flagged_and_receiver_is_used():
    parsed = _fixture("iperf3", "tcp_server_output.json", "iperf3")
    sender, receiver = parsed.summary["sender_mbps"], parsed.summary["receiver_mbps"]
    assert sender > CAPTURE_LINK_MBPS > receiver  # what the real capture shows
    ceiling = expect.tcp_goodput_ceiling_mbps(CAPTURE_LINK_MBPS)
    guard = rate_verdicts.sender_guard(sender, ceiling)
    assert guard is not None and guard.verdict == "invalid" and "socket buffer" in guard.reason
    assert rate_verdicts.sender_guard(receiver, ceiling) is None
    per_interval = parsed.table[(parsed.table["stream"] == -1) & (parsed.table["side"] == "sender")]
    marked = rate_verdicts.flag_sender_intervals(per_interval, CAPTURE_LINK_MBPS)
    assert marked["above_link"].iloc[0]  # the first second overshoots (slow start into buffers)


@pytest.mark.parametrize("measured, verdict", [(25.0, "ok"), (15.0, "suspicious"), (35.0, "invalid")])
def test_rate_verdicts_follow_the_policy_band(measured, verdict):
    assert rate_verdicts.rate_verdict(measured, 28.69).verdict == verdict
    assert (verdict == "ok") == policy.rate_ok(measured, 28.69)


def test_a_low_rate_on_a_machine_that_cannot_carry_the_load_is_inconclusive():
    """Notebook 04 in CI: h1-h4 got 13.3 Mbit/s beside h8-h9 on a disjoint path (28.7 +
    19.1 = 47.8 Mbit/s together), on a machine that forwards about 35."""
    row = rate_verdicts.rate_verdict(13.3, 28.69, load_mbps=47.8, machine=SLOW_MACHINE)
    assert row.verdict == "inconclusive"
    assert "forwards at most 35.0 Mbit/s" in row.reason and "47.8" in row.reason
    # the same rate where the machine could carry the load: a finding about the network
    fast = MachineProfile(0.01, 0.02, 900.0)
    assert rate_verdicts.rate_verdict(13.3, 28.69, load_mbps=47.8, machine=fast).verdict == "suspicious"
    # a rate in the band stays ok, and an impossible one invalid, whatever the machine
    assert rate_verdicts.rate_verdict(25.0, 28.69, load_mbps=47.8, machine=SLOW_MACHINE).verdict == "ok"
    assert rate_verdicts.rate_verdict(31.0, 28.69, load_mbps=47.8, machine=SLOW_MACHINE).verdict == "invalid"


def test_udp_overload_must_lose_datagrams():
    parsed = _fixture("iperf2", "udp_overload.txt", "iperf")
    s = parsed.summary
    ceiling = expect.udp_goodput_mbps(CAPTURE_LINK_MBPS)
    rows = rate_verdicts.udp_verdicts(s["receiver_mbps"], s["sender_mbps"], s["lost_pct"], ceiling)
    assert [r.metric for r in rows] == ["receiver_rate", "loss_above_capacity"]
    assert rows[0].verdict == "ok" and rows[1].verdict == "ok", rows
    # the same overload with (impossibly) no loss is flagged
    rows = rate_verdicts.udp_verdicts(s["receiver_mbps"], s["sender_mbps"], 0.0, ceiling)
    assert rows[1].verdict == "invalid"


def test_share_and_total_verdicts():
    ceiling = expect.tcp_goodput_ceiling_mbps(30.0)
    fair = expect.tcp_goodput_ceiling_mbps(15.0)
    assert rate_verdicts.share_verdict("h1-h4", 14.0, fair, ceiling, True).verdict == "ok"
    assert rate_verdicts.total_verdict(28.5, ceiling, ceiling, None).verdict == "ok"
    assert rate_verdicts.total_verdict(40.0, ceiling, ceiling, None).verdict == "invalid"


def test_a_share_above_fair_is_uneven_not_impossible():
    """Measured in the VM (labtools run portfolio mux, 10 s): h1-h4 20.69, h2-h5 5.77."""
    ceiling = expect.tcp_goodput_ceiling_mbps(30.0)
    fair = expect.tcp_goodput_ceiling_mbps(15.0)
    high = rate_verdicts.share_verdict("h1-h4", 20.69, fair, ceiling, True)
    low = rate_verdicts.share_verdict("h2-h5", 5.77, fair, ceiling, True)
    assert high.verdict == low.verdict == "suspicious"
    assert "uneven sharing" in high.reason and "uneven sharing" in low.reason
    impossible = rate_verdicts.share_verdict("h1-h4", 30.5, fair, ceiling, False)
    assert impossible.verdict == "invalid" and "even alone" in impossible.reason
    # a low share while the link was not full is not blamed on the other flow
    alone = rate_verdicts.share_verdict("a", 5.0, fair, ceiling, False)
    assert "uneven" not in alone.reason and alone.verdict == "suspicious"
    slow = rate_verdicts.share_verdict("a", 5.0, fair, ceiling, False, 47.8, SLOW_MACHINE)
    assert slow.verdict == "inconclusive"


@pytest.mark.parametrize("index, total_ok, verdict", [
    (0.97, True, "ok"), (0.5, True, "suspicious"), (0.5, False, "inconclusive"),
    (None, True, "invalid")])
def test_jain_verdict_uses_the_policy_cut_off(index, total_ok, verdict):
    row = rate_verdicts.jain_verdict(index, total_ok)
    assert row.verdict == verdict
    if index is not None:
        assert (index >= policy.JAIN_OK) == (verdict == "ok")


def test_verdict_rows_round_trip_and_order():
    row = rate_verdicts.rate_verdict(15.0, 28.69)
    assert verdicts.Verdict.from_dict(row.as_dict()) == row
    table = verdicts.compare([row, verdicts.rtt_verdict(61, 60)])
    assert list(table.columns) == verdicts.COMPARE_COLUMNS and len(table) == 2
    assert policy.worst(["ok", "inconclusive", "suspicious"]) == "suspicious"
    assert policy.worst(["ok", "inconclusive"]) == "inconclusive"
    assert policy.worst([]) == "ok"


def test_an_rtt_above_what_the_links_can_produce_is_suspicious_without_blame():
    """The reference student: h1-h4 samples of 153 ms where every full queue on the way
    gives about 90.7 ms in the steady state. Without evidence about the machine the verdict
    says what is known, and blames nobody; it calls the figure the steady state's (a burst
    onto an idle link can exceed it), never a bound nothing in the links can pass."""
    from labtools.model.catalog import load_topology

    e = expect.expect_pair(load_topology("portfolio"), "h1", "h4")
    row = verdicts.rtt_bound_verdict(153.4, e.max_rtt_ms, machine_ms=1.2)
    assert row.verdict == "suspicious" and "emulator" not in row.reason
    assert "even with the 1.2 ms this machine adds (calibrated)" in row.reason
    uncalibrated = verdicts.rtt_bound_verdict(153.4, e.max_rtt_ms)
    assert "not calibrated" in uncalibrated.reason
    for said in (row.reason, uncalibrated.reason):
        assert "worst RTT of the steady state" in said and "a burst onto an idle link" in said
        assert "nothing in the links" not in said and "bound" not in said
    assert verdicts.rtt_bound_verdict(89.0, e.max_rtt_ms).verdict == "ok"
    none = verdicts.rtt_bound_verdict(500.0, None, unbounded=("L9",))
    assert none.verdict == "ok" and "no worst RTT: L9 has no queue limit" in none.reason
    # the machine could not drive the load's link at its rate: inconclusive, with the numbers
    short = verdicts.rtt_bound_verdict(153.4, e.max_rtt_ms, 1.2, short_load="the load ...")
    assert short.verdict == "inconclusive" and "153.4" in short.reason


def test_a_pair_with_no_shaped_link_has_no_bound():
    """Notebook 00 showed 'rtt_max expected 0, measured 3.85, suspicious' for h1-h2 (one
    switch between them): no queue builds there, so there is nothing to exceed."""
    from labtools.judge.measurement import judge_output
    from labtools.model.catalog import load_topology

    raw = (FIXTURES / "ping" / "normal.txt").read_text()
    m = judge_output("ping", raw, load_topology("portfolio"), "h1", "h2")
    bound = next(v for v in m.verdicts if v.metric == "rtt_max")
    assert bound.verdict == "ok" and bound.expected is None
    assert "no shaped link" in bound.reason


def test_a_window_limited_rate_is_judged_against_the_window_the_kernel_granted():
    """iperf3 -w 100000 on the lab VM's kernel: ss read snd_wnd 98 552 bytes (the capture
    in tests/fixtures/ss); the 6.18 host kernel granted 131 070 for the same request."""
    from labtools.tools.parsers import parse as parse_tool

    granted = parse_tool("ss", (FIXTURES / "ss" / "vm_cubic_window_100000.txt").read_text())
    rtt_s = 0.040
    asked = 100_000 * 8 / rtt_s / 1e6
    real = granted.summary["snd_wnd_bytes"] * 8 / rtt_s / 1e6
    row = rate_verdicts.window_verdict(0.95 * real, asked, granted_limit_mbps=real)
    assert row.verdict == "ok" and row.expected == real and "granted" in row.reason
    # more than one window per round trip: not what a window-limited TCP does
    assert rate_verdicts.window_verdict(1.2 * real, asked, granted_limit_mbps=real).verdict == "suspicious"
    # more than the doubled buffer allows: impossible on any Linux
    assert rate_verdicts.window_verdict(2.1 * asked, asked).verdict == "invalid"
    # the kernel's window not read: judged against the asked window, said so
    unread = rate_verdicts.window_verdict(0.95 * asked, asked)
    assert unread.verdict == "ok" and "not read" in unread.reason


def test_a_flow_a_little_above_its_share_is_ordinary_tcp():
    """Repeated sets in the lab VM put single flows up to 1.20 x their fair share; a flow
    at 1.05 x was 'suspicious: uneven sharing' under the old band (RATE_MAX)."""
    fair = 14.346
    assert rate_verdicts.share_verdict("a1-b1", 1.05 * fair, fair, 28.7, True).verdict == "ok"
    assert rate_verdicts.share_verdict("a1-b1", 1.20 * fair, fair, 28.7, True).verdict == "ok"
    above = rate_verdicts.share_verdict("a1-b1", 1.30 * fair, fair, 28.7, True)
    assert above.verdict == "suspicious" and "uneven sharing" in above.reason


# --- the loss-limited rate is an estimate ------------------------------------------------
#: a 20 Mbit/s, 10 ms link losing 1 %: RTT 20 ms, Mathis' estimate 1448 B x 8 / 20 ms x
#: sqrt(3/2) / sqrt(0.01) = 7.09 Mbit/s, below the goodput ceiling 19.13
LOSSY_ESTIMATE = expect.mathis_limit_mbps(20.0, 0.01)
LOSSY_CEILING = expect.tcp_goodput_ceiling_mbps(20)


def test_tcp_above_the_loss_limited_estimate_is_not_invalid():
    """CUBIC may exceed Mathis et al.'s rate (Reno's): above it, within what the path
    carries, is ok with a note; only above the path's ceiling is invalid."""
    assert LOSSY_ESTIMATE == pytest.approx(7.094, abs=1e-3)
    above = rate_verdicts.loss_limited_verdict(12.0, LOSSY_ESTIMATE, LOSSY_CEILING)
    assert above.verdict == "ok" and above.expected == LOSSY_ESTIMATE
    assert "above the loss-limited estimate 7.09" in above.reason
    assert "CUBIC may exceed it" in above.reason and "within the 19.13" in above.reason
    # the case: 19.50 is above the 19.13 the path carries, by less than the
    # tolerance of a measured rate: ok, but never "within" it
    close = rate_verdicts.loss_limited_verdict(19.50, LOSSY_ESTIMATE, LOSSY_CEILING)
    assert close.verdict == "ok" and "within" not in close.reason
    assert "1.9% above the 19.13 the path carries" in close.reason
    impossible = rate_verdicts.loss_limited_verdict(20.0, LOSSY_ESTIMATE, LOSSY_CEILING)
    assert impossible.verdict == "invalid" and impossible.expected == LOSSY_CEILING
    # near the estimate: judged against it like any expectation
    near = rate_verdicts.loss_limited_verdict(6.5, LOSSY_ESTIMATE, LOSSY_CEILING)
    assert near.verdict == "ok" and "of the expected 7.09" in near.reason
    assert rate_verdicts.loss_limited_verdict(2.0, LOSSY_ESTIMATE, LOSSY_CEILING).verdict == "suspicious"
    # no link limits the rate: above the estimate is still no more than a note
    free = rate_verdicts.loss_limited_verdict(50.0, LOSSY_ESTIMATE, None)
    assert free.verdict == "ok" and "no link limits the path" in free.reason




def _rows_at(ratio: float) -> list:
    """A verdict of each kind that names a figure, with the measured value ``ratio`` x it."""
    rtt = 90.66
    return [
        rate_verdicts.loss_limited_verdict(ratio * LOSSY_CEILING, LOSSY_ESTIMATE, LOSSY_CEILING),
        rate_verdicts.rate_verdict(ratio * LOSSY_CEILING, LOSSY_CEILING),
        rate_verdicts.total_verdict(ratio * LOSSY_CEILING, LOSSY_CEILING, LOSSY_CEILING, None),
        rate_verdicts.window_verdict(ratio * LOSSY_CEILING, LOSSY_CEILING),
        rate_verdicts.share_verdict("a1-b1", ratio * LOSSY_CEILING, LOSSY_CEILING,
                               2 * LOSSY_CEILING, True),
        verdicts.rtt_bound_verdict(ratio * rtt, rtt),
        verdicts.rtt_bound_verdict(ratio * rtt, rtt, machine_ms=1.2, late_allowance_ms=3.0),
    ]


@pytest.mark.parametrize("ratio", [0.5, 0.9, 1.0, 1.001, 1.01, 1.019, 1.02, 1.05, 1.1])
def test_no_verdict_calls_a_value_above_its_figure_within_it(ratio):
    """A rate (or the largest RTT) above the figure it is judged against is never "within"
    it, even where the tolerance makes it ``ok``; at or below it may be."""
    for row in _rows_at(ratio):
        for figure in re.findall(r"\bwithin the (\d+(?:\.\d+)?)", row.reason):
            assert row.measured <= float(figure) + 0.005, row.reason  # as printed, 2 decimals
        if "within what" in row.reason:  # the figure it judges against, in words
            assert row.measured <= row.expected, row.reason


# --- percentiles say how many replies they rest on ---------------------------------------
def test_a_percentile_needs_a_reply_beyond_it():
    assert [policy.percentile_replies_needed(p) for p in (0.5, 0.9, 0.99, 0.999)] == [
        1, 10, 100, 1000]
    assert policy.describe_percentile(0.999, 250.0, 200) == (
        "p99.9 needs >= 1000 replies; 200 here")
    assert policy.describe_percentile(0.99, 231.04, 200) == "p99 231.0 ms (of 200 replies)"
    assert policy.describe_percentile(0.5, 3.0, 1) == "p50 3.0 ms (of 1 reply)"
    with pytest.raises(InputError):
        policy.percentile_replies_needed(1.0)


def test_the_summaries_leave_out_what_the_policy_says_is_not_there():
    """The typed ping summary (tools layer, which cannot import the policy) leaves out a
    percentile exactly when the policy's rule says it needs more replies."""
    from labtools.tools.summaries import PERCENTILES, percentile_needs

    for p in PERCENTILES:
        if p > 0.5:
            assert percentile_needs(p) == policy.percentile_replies_needed(p)


def test_the_median_under_load_says_how_many_replies_it_rests_on():
    from labtools.model.catalog import load_topology
    from labtools.model.queues import loaded_rtt

    topo = load_topology("dumbbell,pairs=2,bw_mbps=5,delay_ms=23,queue_pkts=105")
    model = loaded_rtt(topo, "a1", "b1", "a2", "b2")
    ok = verdicts.loaded_rtt_verdict(model.typical_ms, model, replies=200)
    assert ok.verdict == "ok" and f"median {model.typical_ms:.1f} ms of 200 replies" in ok.reason
    off = verdicts.loaded_rtt_verdict(100.0, model, replies=1)
    assert off.verdict == "suspicious" and "median 100.0 ms of 1 reply is" in off.reason


def test_an_ok_rate_well_below_its_expectation_says_why_it_is_ok():
    """Lab 2 in a student's browser: iperf3 on L1 at 78 % of its goodput ceiling, judged
    ok. The reason says why: this machine's calibrated limit, with its number, when the
    load did not fit in what it forwards; else the tolerance, and that the machine could
    carry the load (or was not calibrated). Near its expectation: the plain reason."""
    ceiling = expect.tcp_goodput_ceiling_mbps(40)  # L1 of the reference network
    measured = 0.78 * ceiling
    slow = rate_verdicts.rate_verdict(measured, ceiling, machine=SLOW_MACHINE)
    assert slow.verdict == "ok" and f"{measured:.2f} measured" in slow.reason
    assert (f"this machine forwarded at most {SLOW_MACHINE.forward_mbps:.1f} Mbit/s when "
            "calibrated") in slow.reason and f"the {ceiling:.1f} the network had" in slow.reason
    fast = MachineProfile(0.01, 0.02, 900.0)
    roomy = rate_verdicts.rate_verdict(measured, ceiling, machine=fast)
    assert roomy.verdict == "ok" and "900.0 Mbit/s" in roomy.reason
    assert f"a rate from {policy.RATE_OK_LOW:.0%} of the expected is ok" in roomy.reason
    assert "not calibrated" in rate_verdicts.rate_verdict(measured, ceiling).reason
    near = rate_verdicts.rate_verdict(0.97 * ceiling, ceiling, machine=fast)
    assert near.reason == f"97% of the expected {ceiling:.2f} Mbit/s"
    # below expectation on a machine that cannot carry the load: always said
    assert "forwarded at most" in rate_verdicts.rate_verdict(0.97 * ceiling, ceiling,
                                                        machine=SLOW_MACHINE).reason
