"""The iperf 2.x text parser against outputs captured from real iperf 2.1 runs
(tests/fixtures/iperf2, made by scripts/capture_fixtures.sh; see the .meta files).
``NAME.txt`` is the client's output, ``NAME.server.txt`` the server's for the same run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labtools.errors import ParseError
from labtools.tools.parsers import iperf2

DIR = Path(__file__).resolve().parent / "fixtures" / "iperf2"
ALL = sorted(p.name[: -len(".txt")] for p in DIR.glob("*.txt"))
GOOD = [n for n in ALL if n != "no_server"]
LINE = re.compile(r"^\[\s*(\d+|SUM)\]\s+([\d.]+)-([\d.]+) sec\s+([\d.]+) (\w+)\s+([\d.]+) Mbits/sec", re.M)


def raw(name: str) -> str:
    return (DIR / f"{name}.txt").read_text()


def parse(name: str):
    return iperf2.parse(raw(name))


def test_every_fixture_records_tool_version_and_command():
    assert len(ALL) >= 13
    for name in ALL:
        meta = (DIR / f"{name}.meta").read_text()
        assert "tool: iperf" in meta and "version: iperf version 2." in meta, name
        assert re.search(r"^command: iperf -[cs] ", meta, re.MULTILINE), name


@pytest.mark.parametrize("name", GOOD)
def test_one_row_per_report_line(name):
    parsed = parse(name)
    assert parsed.tool == "iperf"
    assert list(parsed.table.columns) == iperf2.COLUMNS
    lines = LINE.findall(raw(name))
    assert len(parsed.table) == len(lines) > 0
    assert list(parsed.table["rate_mbps"]) == pytest.approx([float(x[5]) for x in lines])
    assert list(parsed.table["end_s"]) == pytest.approx([float(x[2]) for x in lines])
    json.dumps(parsed.summary, allow_nan=False)
    assert set(parsed.table["kind"]) <= {"interval", "total", "server_report"}


@pytest.mark.parametrize("name", GOOD)
def test_transfer_is_binary_and_rate_is_decimal(name):
    # bytes * 8 / seconds must give the printed Mbit/s; with 1000-based bytes it is 5-7% off
    t = parse(name).table
    whole = t[(t["kind"] != "interval") & (t["stream"] >= 0) & (t["bytes"] > 500_000)]
    assert len(whole) > 0
    for _, row in whole.iterrows():
        computed = row["bytes"] * 8 / (row["end_s"] - row["start_s"]) / 1e6
        assert computed == pytest.approx(row["rate_mbps"], rel=0.01)


def test_units_convert_kbytes_and_mbytes():
    t = parse("tcp_interval").table
    lines = LINE.findall(raw("tcp_interval"))
    for (_, _, _, value, unit, _), got in zip(lines, t["bytes"]):
        factor = {"KBytes": 1024, "MBytes": 1024 * 1024}[unit]
        assert got == round(float(value) * factor)
    assert "KBytes" in {x[4] for x in lines}


def test_tcp_without_interval_has_only_the_total():
    parsed = parse("tcp")
    s = parsed.summary
    assert list(parsed.table["kind"]) == ["total"]
    assert s["protocol"] == "TCP" and s["role"] == "client" and s["streams"] == 1
    assert s["sender_mbps"] == s["rate_mbps"] == parsed.table["rate_mbps"].item()
    assert s["receiver_mbps"] is None and s["lost"] is None and s["jitter_ms"] is None


def test_tcp_intervals_add_up_to_the_total():
    parsed = parse("tcp_interval")
    t = parsed.table
    intervals, total = t[t["kind"] == "interval"], t[t["kind"] == "total"]
    assert len(intervals) >= 3 and len(total) == 1
    assert intervals["bytes"].sum() == pytest.approx(total["bytes"].item(), rel=0.01)
    assert intervals["end_s"].max() == total["end_s"].item()
    assert parsed.summary["duration_s"] == pytest.approx(total["end_s"].item())


def test_parallel_streams_and_sum_rows():
    parsed = parse("tcp_p2")
    t, s = parsed.table, parsed.summary
    assert s["streams"] == 2 and sorted(set(t["stream"])) == [-1, 1, 2]
    totals = t[t["kind"] == "total"]
    assert sorted(totals["stream"]) == [-1, 1, 2]
    stream_totals = totals[totals["stream"] > 0]
    assert s["sender_mbps"] == pytest.approx(stream_totals["rate_mbps"].sum())
    assert s["rate_mbps"] == totals.loc[totals["stream"] == -1, "rate_mbps"].item()
    assert totals.loc[totals["stream"] == -1, "bytes"].item() == pytest.approx(stream_totals["bytes"].sum(), rel=0.01)
    # each full one-second [SUM] interval is the sum of the two streams' lines
    full = t[(t["kind"] == "interval") & (t["end_s"] - t["start_s"] == 1.0)]
    for start, group in full.groupby("start_s"):
        per_stream = group.loc[group["stream"] > 0, "bytes"].sum()
        assert group.loc[group["stream"] == -1, "bytes"].item() == pytest.approx(per_stream, rel=0.02), start


def test_parallel_without_interval_is_all_totals():
    parsed = parse("tcp_p2_nointerval")
    assert set(parsed.table["kind"]) == {"total"} and len(parsed.table) == 3
    assert parsed.summary["streams"] == 2


def test_udp_server_report_shows_the_loss():
    parsed = parse("udp_overload")
    t, s = parsed.table, parsed.summary
    lost, total = map(int, re.search(r"ms\s+(\d+)/\s*(\d+) \(", raw("udp_overload")).groups())
    report = t[t["kind"] == "server_report"]
    assert len(report) == 1 and report["lost"].item() == lost and report["total"].item() == total
    assert s["protocol"] == "UDP" and s["lost"] == lost > 0 and s["total"] == total
    assert s["lost_pct"] == pytest.approx(100 * lost / total)
    assert s["sent_datagrams"] == int(re.search(r"Sent (\d+) datagrams", raw("udp_overload")).group(1))
    assert s["receiver_mbps"] == s["server_rate_mbps"] == report["rate_mbps"].item()
    assert s["sender_mbps"] > 25 and s["receiver_mbps"] < 20  # -b 30M over 20 Mbit/s
    assert s["jitter_ms"] == report["jitter_ms"].item() and s["out_of_order"] == 0


def test_udp_with_interval_and_no_loss():
    parsed = parse("udp_interval")
    t, s = parsed.table, parsed.summary
    assert list(t["kind"]) == ["interval"] * 3 + ["total", "server_report"]
    assert t.loc[t["kind"] != "server_report", "jitter_ms"].isna().all()
    assert s["lost"] == 0 and s["lost_pct"] == 0.0 and s["total"] > 0


def test_server_side_text_matches_the_client():
    for name in ("tcp", "udp_overload", "udp_interval"):
        client, server = parse(name), parse(f"{name}.server")
        assert server.summary["role"] == "server" and client.summary["role"] == "client"
        assert server.summary["receiver_mbps"] == server.summary["rate_mbps"]
        assert server.summary["sender_mbps"] is None
        if server.summary["protocol"] == "UDP":
            assert server.summary["lost"] == client.summary["lost"]
            assert server.summary["total"] == client.summary["total"]
        else:
            assert server.summary["bytes"] == client.summary["bytes"]


def test_udp_server_interval_rows_carry_jitter_and_loss():
    t = parse("udp_interval.server").table
    assert t["jitter_ms"].notna().all() and t["lost"].notna().all()
    intervals = t[t["kind"] == "interval"]
    whole = t.loc[t["kind"] == "total", "total"].item()
    # the few datagrams after the last full interval appear only in the total
    assert whole - 10 <= intervals["total"].sum() <= whole


def test_no_server_raises_quoting_iperf():
    with pytest.raises(ParseError) as err:
        parse("no_server")
    assert err.value.tool == "iperf" and "Connection refused" in err.value.reason


@pytest.mark.parametrize("source", ["", "\n\n", "iperf3", "ping"])
def test_malformed_raises(source):
    text = {"iperf3": DIR.parent / "iperf3" / "tcp_p1.json", "ping": DIR.parent / "ping" / "normal.txt"}.get(source)
    with pytest.raises(ParseError) as err:
        iperf2.parse(text.read_text() if text else source)
    assert err.value.tool == "iperf" and "\n" not in str(err.value)


def test_byte_rate_units_are_refused_not_guessed():
    line = LINE.search(raw("tcp")).group(0).replace("Mbits/sec", "MBytes/sec")
    with pytest.raises(ParseError) as err:
        iperf2.parse(line)
    assert "bit rate" in err.value.reason


# --- numbers iperf 2 never prints, real lines it does, long runs ----------------------------
# Each case is a real capture with ONE piece of a report line replaced by the test itself.
WRONG_LINES = [
    ("tcp_interval", "7.88 MBytes  19.1 Mbits/sec", "7.88 MBytes  nan Mbits/sec"),
    ("tcp_interval", "7.88 MBytes  19.1 Mbits/sec", "7.88 MBytes  inf Mbits/sec"),
    ("tcp_interval", "7.88 MBytes  19.1 Mbits/sec", "7.88 MBytes  -19.1 Mbits/sec"),
    ("tcp_interval", "7.88 MBytes  19.1 Mbits/sec", "-7.88 MBytes  19.1 Mbits/sec"),
    ("tcp_interval", "7.88 MBytes  19.1 Mbits/sec", "7.88 MBytes  " + "9" * 400 + " Mbits/sec"),
    ("tcp_interval", "7.88 MBytes  19.1 Mbits/sec", "9" * 400 + " MBytes  19.1 Mbits/sec"),
    ("tcp_interval", "7.88 MBytes  19.1 Mbits/sec", "999999999999 TBytes  19.1 Mbits/sec"),
    ("tcp_interval", "0.0000-3.4663 sec  7.88", "3.4663-0.0000 sec  7.88"),
    ("tcp_interval", "0.0000-3.4663 sec  7.88", "zero-3.4663 sec  7.88"),
    ("tcp_p2", "8.85 MBytes  22.3 Mbits/sec", "8.85 MBytes  -22.3 Mbits/sec"),
    ("udp_interval", "0.003 ms 0/2678", "nan ms 0/2678"),
    ("udp_interval", "0.003 ms 0/2678", "0.003 ms 5000/2678"),
    ("udp_interval", "Sent 2679 datagrams", "Sent -2679 datagrams"),
]


@pytest.mark.parametrize("name, old, new", WRONG_LINES, ids=[w[2][:30] for w in WRONG_LINES])
def test_a_line_with_numbers_iperf_never_prints_is_refused_quoting_it(name, old, new):
    text = raw(name)
    assert old in text
    with pytest.raises(ParseError) as err:
        iperf2.parse(text.replace(old, new, 1))
    assert "\n" not in str(err.value) and (new[:10] in str(err.value) or "Sent" in new)


def test_every_iperf_run_of_the_grading_capture_parses():
    """The real runs saved in tests/fixtures/grading (made by its capture.py), the
    out-of-order line of iperf 2's Server Report among them."""
    import sqlite3

    store = DIR.parent / "grading" / "results" / "labtools.sqlite"
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    texts = [r[0] for r in con.execute("SELECT raw_output FROM runs WHERE tool = 'iperf'")]
    con.close()
    assert any("received out-of-order" in t for t in texts)
    for text in texts:
        parsed = iperf2.parse(text)
        if "received out-of-order" in text:
            assert parsed.summary["out_of_order"] > 0


def test_an_hour_of_tenth_of_a_second_intervals_parses_in_seconds():
    import time

    # tcp_interval (a real capture) as if run with -i 0.1 for an hour: its first interval
    # line repeated with shifted times, then a whole-run line (a mechanical derivation)
    lines = raw("tcp_interval").splitlines()
    first = next(ln for ln in lines if LINE.match(ln))
    head = lines[: lines.index(first)]
    body = [first.replace("0.0000-1.0000", f"{i / 10:.4f}-{(i + 1) / 10:.4f}")
            for i in range(36_000)]
    body.append(first.replace("0.0000-1.0000", "0.0000-3600.0000"))
    began = time.perf_counter()
    parsed = iperf2.parse("\n".join(head + body) + "\n")
    took = time.perf_counter() - began
    assert len(parsed.rows) == 36_001 and parsed.summary["duration_s"] == 3600.0
    assert took < 10, f"{took:.1f} s"


def test_a_long_hostile_line_does_not_make_the_parser_backtrack():
    import time

    began = time.perf_counter()
    for line in ("[  1] " + "-" * 200_000, "[  1] " + "7" * 200_000 + " datagrams received",
                 "WARNING: " + " " * 200_000 + "x"):
        with pytest.raises(ParseError):
            iperf2.parse(line)
    assert time.perf_counter() - began < 5
