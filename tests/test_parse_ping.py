"""The ping parser against outputs captured from real iputils ping runs
(tests/fixtures/ping, made by scripts/capture_fixtures.sh; see the .meta files)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labtools.errors import ParseError
from labtools.tools.parsers import ping

DIR = Path(__file__).resolve().parent / "fixtures" / "ping"
REPLY = re.compile(r"icmp_seq=(\d+) ttl=\d+ time=([\d.]+) ms")
ALL = sorted(p.stem for p in DIR.glob("*.txt"))
PARSABLE = [name for name in ALL if name != "unknown_host"]


def raw(name: str) -> str:
    return (DIR / f"{name}.txt").read_text()


def raw_replies(name: str) -> list[tuple[int, float]]:
    return [(int(s), float(t)) for s, t in REPLY.findall(raw(name))]


def test_every_fixture_records_tool_version_and_command():
    assert ALL, "no ping fixtures"
    for name in ALL:
        meta = (DIR / f"{name}.meta").read_text()
        assert "tool: ping" in meta and "version: ping from iputils" in meta
        assert re.search(r"^command: .*ping ", meta, re.MULTILINE), name


@pytest.mark.parametrize("name", PARSABLE)
def test_rows_are_the_reply_lines_and_summary_is_json(name):
    parsed = ping.parse(raw(name))
    assert parsed.tool == "ping"
    assert list(parsed.table.columns) == ping.COLUMNS
    replies = raw_replies(name)
    assert list(parsed.table["seq"]) == [s for s, _ in replies]
    assert list(parsed.table["rtt_ms"]) == pytest.approx([t for _, t in replies])
    json.dumps(parsed.summary, allow_nan=False)
    if parsed.summary["complete"]:
        assert len(parsed.table) == parsed.summary["received"]


@pytest.mark.parametrize("name", ["normal", "timestamps", "partial_loss", "interrupted"])
def test_rtt_statistics_match_the_rows(name):
    parsed = ping.parse(raw(name))
    s, rtt = parsed.summary, parsed.table["rtt_ms"]
    # ping prints each RTT rounded (3 decimals below 1 ms, 1 decimal from 10 ms)
    assert s["min_ms"] == pytest.approx(rtt.min(), abs=0.001)
    assert s["max_ms"] == pytest.approx(rtt.max(), abs=0.05)
    assert s["avg_ms"] == pytest.approx(rtt.mean(), abs=0.05)
    assert s["min_ms"] <= s["avg_ms"] <= s["max_ms"] and s["mdev_ms"] >= 0
    assert (parsed.table["ttl"] == 63).all()  # one router between client and server


def test_normal_has_everything_and_no_timestamps():
    parsed = ping.parse(raw("normal"))
    s = parsed.summary
    assert s["transmitted"] == s["received"] == 10 and s["loss_pct"] == 0.0
    assert s["destination"] == s["address"] == "10.77.2.1"
    assert s["complete"] and s["errors"] == 0 and s["error_messages"] == []
    assert parsed.table["received_at"].isna().all()
    assert (parsed.table["bytes"] == 64).all()


def test_timestamps_follow_the_interval():
    table = ping.parse(raw("timestamps")).table
    stamps = [float(x) for x in re.findall(r"^\[(\d+\.\d+)\]", raw("timestamps"), re.MULTILINE)]
    assert str(table["received_at"].dtype) == "datetime64[ns, UTC]"  # shown as times
    seconds = [t.timestamp() for t in table["received_at"]]
    assert seconds == pytest.approx(stamps, abs=1e-6)
    gaps = table["received_at"].diff().dropna().dt.total_seconds()
    assert gaps.between(0.15, 0.3).all()  # ping -i 0.2


def test_partial_loss_counts_and_gaps():
    parsed = ping.parse(raw("partial_loss"))
    s = parsed.summary
    assert 0 < s["received"] < s["transmitted"]
    assert s["loss_pct"] == pytest.approx(100 * (s["transmitted"] - s["received"]) / s["transmitted"], abs=1)
    assert len(parsed.table) == s["received"]
    assert parsed.table["seq"].diff().max() > 1  # the lost ones are missing
    assert (parsed.table["bytes"] == 1408).all()


def test_total_loss_has_no_rtt():
    parsed = ping.parse(raw("total_loss"))
    s = parsed.summary
    assert parsed.table.empty and list(parsed.table.columns) == ping.COLUMNS
    assert s["received"] == 0 and s["transmitted"] > 0 and s["loss_pct"] == 100.0
    assert s["min_ms"] is None and s["avg_ms"] is None and s["max_ms"] is None
    assert s["complete"]


def test_unreachable_counts_errors():
    parsed = ping.parse(raw("unreachable"))
    s = parsed.summary
    lines = re.findall(r"Destination Host Unreachable", raw("unreachable"))
    assert parsed.table.empty
    assert s["errors"] == len(lines) == s["transmitted"]
    assert s["error_messages"] == ["Destination Host Unreachable"]
    assert s["loss_pct"] == 100.0 and s["min_ms"] is None


def test_killed_ping_keeps_rows_and_says_incomplete():
    parsed = ping.parse(raw("killed"))
    s = parsed.summary
    assert "statistics" not in raw("killed")
    assert not s["complete"]
    assert len(parsed.table) == len(raw_replies("killed")) > 0
    for key in ("transmitted", "received", "loss_pct", "min_ms", "avg_ms", "max_ms"):
        assert s[key] is None, key


def test_interrupted_ping_is_complete():
    s = ping.parse(raw("interrupted")).summary
    assert s["complete"] and s["transmitted"] >= s["received"] > 0


def test_name_resolution_error_raises_with_pings_message():
    with pytest.raises(ParseError) as err:
        ping.parse(raw("unknown_host"))
    assert err.value.tool == "ping"
    assert "name resolution" in err.value.reason


@pytest.mark.parametrize("text", ["", "   \n", (DIR.parent / "iperf3" / "no_server.json")])
def test_empty_or_other_tools_output_raises(text):
    if isinstance(text, Path):
        text = text.read_text()
    with pytest.raises(ParseError) as err:
        ping.parse(text)
    assert err.value.tool == "ping" and err.value.reason
    assert "\n" not in str(err.value)


def test_header_only_is_incomplete_with_no_rows():
    first_line = raw("normal").splitlines()[0]  # what a ping killed at once leaves
    parsed = ping.parse(first_line + "\n")
    assert parsed.table.empty and not parsed.summary["complete"]
    assert parsed.summary["received"] is None
    assert parsed.summary["destination"] == "10.77.2.1"
