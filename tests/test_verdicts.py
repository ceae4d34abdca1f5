"""Verdicts on parsed real outputs: outliers, RTT series, rates, sender overshoot."""

from __future__ import annotations

import pytest

from labtools.model import expect
from labtools.judge import verdicts
from labtools.model.catalog import load_topology
from labtools.errors import InputError
from labtools.tools.parsers import parse
from tests.conftest import FIXTURES

#: the capture network of tests/fixtures: HTB at 20 Mbit/s in the router (see the .meta files)
CAPTURE_LINK_MBPS = 20


def _fixture(tool_dir: str, name: str, tool: str):
    return parse(tool, (FIXTURES / tool_dir / name).read_text())


def test_outliers_follow_the_documented_rule():
    parsed = _fixture("ping", "partial_loss.txt", "ping")
    flagged = verdicts.flag_rtt_outliers(parsed.table)
    limit = verdicts.outlier_threshold_ms(parsed.table["rtt_ms"].min())
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
    row = verdicts.rtt_verdict(parsed.summary["min_ms"], parsed.summary["avg_ms"], 60)
    assert row["verdict"] == "invalid"


@pytest.mark.parametrize("min_ms, avg_ms, expected, verdict, words", [
    (61.4, 62.0, 60, "ok", "within"),          # min matches, average close
    (61.4, 153.4, 60, "suspicious", "inflated by outliers"),  # the reference student's h1-h4
    (55.0, 56.0, 60, "invalid", "below the propagation delay"),
    (70.0, 71.0, 60, "suspicious", "extra queueing"),
    (21.9, 22.0, 20, "ok", "within 2.0 ms"),    # 2 ms floor on short paths
])
def test_rtt_series_verdicts(min_ms, avg_ms, expected, verdict, words):
    row = verdicts.rtt_verdict(min_ms, avg_ms, expected)
    assert row["verdict"] == verdict and words in row["reason"]
    assert row["ratio"] == pytest.approx(min_ms / expected, abs=1e-4)


def test_sender_overshoot_is_flagged_and_receiver_is_used():
    parsed = _fixture("iperf3", "tcp_server_output.json", "iperf3")
    sender, receiver = parsed.summary["sender_mbps"], parsed.summary["receiver_mbps"]
    assert sender > CAPTURE_LINK_MBPS > receiver  # what the real capture shows
    guard = verdicts.sender_guard(sender, CAPTURE_LINK_MBPS, None)
    assert guard is not None and guard["verdict"] == "invalid" and "socket buffer" in guard["reason"]
    assert verdicts.sender_guard(receiver, CAPTURE_LINK_MBPS, None) is None
    per_interval = parsed.table[(parsed.table["stream"] == -1) & (parsed.table["side"] == "sender")]
    marked = verdicts.flag_sender_intervals(per_interval, CAPTURE_LINK_MBPS)
    assert marked["above_link"].iloc[0]  # the first second overshoots (slow start into buffers)


def test_warmup_is_discarded():
    parsed = _fixture("iperf3", "tcp_p1.json", "iperf3")
    kept = verdicts.discard_warmup(parsed.table, 1.0)
    assert len(kept) < len(parsed.table) and (kept["start_s"] >= 1.0 - 1e-9).all()
    with pytest.raises(InputError):
        verdicts.discard_warmup(parsed.table, -1)


@pytest.mark.parametrize("measured, verdict", [(25.0, "ok"), (15.0, "suspicious"), (35.0, "invalid")])
def test_rate_verdicts(measured, verdict):
    assert verdicts.rate_verdict(measured, 28.69)["verdict"] == verdict


def test_verdicts_for_iperf3_against_a_topology():
    topo = load_topology("dumbbell,bw_mbps=20,delay_ms=1")
    parsed = _fixture("iperf3", "tcp_server_output.json", "iperf3")
    table = verdicts.verdicts_for(parsed, topo, "a1", "b1")
    assert list(table.columns) == verdicts.COMPARE_COLUMNS
    rows = table.set_index("metric")
    assert rows.loc["receiver_rate", "measured"] == parsed.summary["receiver_mbps"]
    assert rows.loc["receiver_rate", "verdict"] == "ok"
    assert rows.loc["sender_rate", "verdict"] == "invalid"


def test_share_verdicts_sum_check():
    rows = verdicts.share_verdicts([14.0, 14.5], [14.35, 14.35], ["h1-h4", "h2-h5"], 28.69)
    assert [r["verdict"] for r in rows] == ["ok", "ok", "ok"]
    rows = verdicts.share_verdicts([20.0, 20.0], [14.35, 14.35], ["a", "b"], 28.69)
    assert rows[-1]["verdict"] == "invalid"


def test_a_share_above_fair_is_uneven_not_impossible():
    """Measured in the VM (labtools run portfolio mux, 10 s): h1-h4 20.69, h2-h5 5.77."""
    ceiling = expect.tcp_goodput_ceiling_mbps(30.0)
    fair = expect.tcp_goodput_ceiling_mbps(15.0)
    rows = verdicts.share_verdicts([20.69, 5.77], [fair, fair], ["h1-h4", "h2-h5"], ceiling,
                                   [ceiling, ceiling])
    assert [r["verdict"] for r in rows] == ["suspicious", "suspicious", "ok"]
    assert "uneven sharing" in rows[0]["reason"] and "uneven sharing" in rows[1]["reason"]
    # more than the path carries alone is impossible
    rows = verdicts.share_verdicts([30.5, 0.5], [fair, fair], ["h1-h4", "h2-h5"], None,
                                   [ceiling, ceiling])
    assert rows[0]["verdict"] == "invalid" and "even alone" in rows[0]["reason"]
    # a low share while the link was not full is not blamed on the other flow
    rows = verdicts.share_verdicts([5.0, 5.0], [fair, fair], ["a", "b"], ceiling)
    assert "uneven" not in rows[0]["reason"] and rows[0]["verdict"] == "suspicious"
