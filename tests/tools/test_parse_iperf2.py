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

DIR = Path(__file__).resolve().parents[1] / "fixtures" / "iperf2"
ALL = sorted(p.name[: -len(".txt")] for p in DIR.glob("*.txt"))
#: real outputs the parser refuses (each has its own test below)
REFUSED = {"no_server", "udp_nothing_arrives.server"}
GOOD = [n for n in ALL if n not in REFUSED]
TEXT = [n for n in GOOD if "csv_" not in n]
LINE = re.compile(r"^\[\s*\*?(\d+|SUM)\]\s+([\d.]+)\s*-\s*([\d.]+) sec\s+([\d.]+) (\w+)\s+([\d.]+|-nan) ([KMG]?)bits/sec", re.M)
PER_MBIT = {"": 1e-6, "K": 1e-3, "M": 1.0, "G": 1e3}


def raw(name: str) -> str:
    return (DIR / f"{name}.txt").read_text()


def parse(name: str):
    return iperf2.parse(raw(name))


def test_every_fixture_records_tool_version_and_command():
    assert len(ALL) >= 40
    for name in ALL:
        meta = (DIR / f"{name}.meta").read_text()
        assert "tool: iperf" in meta and "version: iperf version 2." in meta, name
        assert re.search(r"^command: iperf -[cs] ", meta, re.MULTILINE), name


@pytest.mark.parametrize("name", TEXT)
def test_one_row_per_report_line(name):
    parsed = parse(name)
    assert parsed.tool == "iperf"
    assert list(parsed.table.columns) == iperf2.COLUMNS
    lines = LINE.findall(raw(name))
    assert len(parsed.table) == len(lines) > 0
    # -nan (0 bytes in 0 s: nothing received) is read as 0
    printed = [0.0 if x[5] == "-nan" else float(x[5]) * PER_MBIT[x[6]] for x in lines]
    assert list(parsed.table["rate_mbps"]) == pytest.approx(printed)
    assert list(parsed.table["end_s"]) == pytest.approx([float(x[2]) for x in lines])
    json.dumps(parsed.summary, allow_nan=False)
    assert set(parsed.table["kind"]) <= {"interval", "total", "server_report"}
    assert parsed.summary["format"] == "text"


@pytest.mark.parametrize("name", TEXT)
def test_transfer_is_binary_and_rate_is_decimal(name):
    # bytes * 8 / seconds must give the printed Mbit/s; with 1000-based bytes it is 5-7% off
    t = parse(name).table
    whole = t[(t["kind"] != "interval") & (t["stream"] >= 0) & (t["bytes"] > 200_000)]
    assert len(whole) > 0
    for _, row in whole.iterrows():
        computed = row["bytes"] * 8 / (row["end_s"] - row["start_s"]) / 1e6
        assert computed == pytest.approx(row["rate_mbps"], rel=0.01)


def test_units_convert_kbytes_and_mbytes():
    t = parse("tcp_interval").table
    lines = LINE.findall(raw("tcp_interval"))
    for (_, _, _, value, unit, _, _), got in zip(lines, t["bytes"]):
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
    # the run's rate is its streams' (this [SUM] total spans 3.3352 s, the streams ran
    # 3.7211 and 3.8826 s: its 22.3 Mbit/s is not what they carried)
    assert s["rate_mbps"] == pytest.approx(stream_totals["rate_mbps"].sum())
    assert s["bytes"] == stream_totals["bytes"].sum() and parsed.warnings == ()
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
    began = time.process_time()  # CPU time: a busy machine does not count
    parsed = iperf2.parse("\n".join(head + body) + "\n")
    took = time.process_time() - began
    assert len(parsed.rows) == 36_001 and parsed.summary["duration_s"] == 3600.0
    assert took < 10, f"{took:.1f} s"


def test_a_long_hostile_line_does_not_make_the_parser_backtrack():
    import time

    began = time.process_time()  # CPU time: a busy machine does not count
    for line in ("[  1] " + "-" * 200_000, "[  1] " + "7" * 200_000 + " datagrams received",
                 "WARNING: " + " " * 200_000 + "x"):
        with pytest.raises(ParseError):
            iperf2.parse(line)
    assert time.process_time() - began < 5


# --- -P with UDP: every stream's Server Report, summed ------------------------------------
REPORT = re.compile(r"Server Report:\n(?:\[ ID\].*\n)?\[\s*(\d+)\] .*? ([\d.]+) (K|M)bits/sec\s+[\d.]+ ms\s+(\d+)/\s*(\d+)")


@pytest.mark.parametrize("name", ["udp_p2", "udp_p3", "udp_p2_interval", "public_udp_p2"])
def test_udp_parallel_client_sums_every_server_report(name):
    s = parse(name).summary
    reports = REPORT.findall(raw(name))
    assert len(reports) == s["streams"] >= 2
    lost, total = sum(int(r[3]) for r in reports), sum(int(r[4]) for r in reports)
    assert s["lost"] == lost and s["total"] == total
    assert s["lost_pct"] == pytest.approx(100 * lost / total)
    assert s["receiver_mbps"] == pytest.approx(sum(float(r[1]) * PER_MBIT[r[2]] for r in reports))
    sent = [int(n) for n in re.findall(r"^\[\s*\d+\] Sent (\d+) datagrams", raw(name), re.M)]
    assert s["sent_datagrams"] == sum(sent) == int(re.search(r"^\[SUM(?:-\d)?\] Sent (\d+)", raw(name), re.M)[1])
    assert s["receiver_mbps"] > 0.9 * s["sender_mbps"]  # not one stream's share of the traffic


def test_udp_parallel_client_and_server_agree_with_the_servers_sum_line():
    client, server = parse("udp_p3").summary, parse("udp_p3.server").summary
    lost, total = map(int, re.search(r"^\[SUM\] .*\s(\d+)/(\d+) \(", raw("udp_p3.server"), re.M).groups())
    assert client["lost"] == server["lost"] == lost and client["total"] == server["total"] == total
    assert server["streams"] == 3 and server["role"] == "server"


@pytest.mark.parametrize("name, streams", [("public_udp_p3_sum_mismatch.server", 3),
                                           ("public_udp_p1_sum_first_twice.server", 1)])
def test_a_sum_that_counts_the_first_interval_twice_is_the_streams_sum_with_a_warning(name, streams):
    # real iperf 2.0.x servers: the [SUM] adds the first interval's count to its streams'
    parsed = parse(name)
    s, t = parsed.summary, parsed.table
    own = t[(t["kind"] == "total") & (t["stream"] >= 0)]
    printed = t[(t["kind"] == "total") & (t["stream"] == -1)].iloc[0]
    first = t[(t["kind"] == "interval") & (t["start_s"] == 0.0) & (t["stream"] >= 0)]
    assert len(own) == s["streams"] == streams
    assert printed["total"] == own["total"].sum() + first["total"].sum()  # what iperf 2.0.x did
    # one source: every number is the streams' own totals
    assert s["bytes"] == own["bytes"].sum() and s["total"] == own["total"].sum()
    assert s["lost"] == own["lost"].sum() and s["rate_mbps"] == pytest.approx(own["rate_mbps"].sum())
    assert s["jitter_ms"] == own["jitter_ms"].max()
    assert len(parsed.warnings) == 2 and set(parsed.warnings) <= set(s["warnings"])
    assert f"{int(printed['bytes'])} bytes" in parsed.warnings[0] and "first interval twice" in parsed.warnings[0]
    assert f"{int(printed['total'])} datagrams" in parsed.warnings[1]


def test_a_sum_line_off_by_one_is_read_from_the_streams_naming_both():
    # real captures with the [SUM]'s count changed by one (the streams left as printed)
    for name, old, new, both in [("udp_p3", "[SUM-3] Sent 5364", "[SUM-3] Sent 5365", ("5365", "5364")),
                                 ("udp_p3.server", "3/5361 (", "3/5362 (", ("5362", "5361"))]:
        assert old in raw(name)
        changed = iperf2.parse(raw(name).replace(old, new))
        assert changed.summary == {**parse(name).summary, "warnings": list(changed.warnings)}
        assert len(changed.warnings) == 1 and all(n in changed.warnings[0] for n in both)
        assert parse(name).warnings == ()


# --- a receiver that got nothing ------------------------------------------------------------
def test_a_server_report_of_nothing_received_keeps_the_clients_numbers():
    from labtools.tools.summaries import summarize

    parsed = parse("public_nothing_received")
    s = parsed.summary
    assert s["role"] == "client" and s["sender_mbps"] == 3270.0 and s["sent_datagrams"] == 2781856
    assert s["receiver_mbps"] == 0.0 and s["total"] == 0
    assert s["lost"] is None and s["lost_pct"] is None and s["jitter_ms"] is None
    assert iperf2.NOTHING_RECEIVED in s["warnings"]
    report = parsed.table[parsed.table["kind"] == "server_report"]
    assert report["rate_mbps"].item() == 0.0 and report["bytes"].item() == 0
    u = summarize(parsed)
    assert u.receiver_mbps == 0.0 and u.sender_mbps == 3270.0 and u.loss_pct is None


def test_a_nan_rate_with_bytes_received_is_still_refused():
    text = raw("udp_gap.server").replace("2.87 KBytes  23.5 Kbits/sec", "2.87 KBytes  -nan bits/sec")
    with pytest.raises(ParseError) as err:
        iperf2.parse(text)
    assert "-nan" in err.value.reason


def test_a_server_interval_with_nothing_received_is_read():
    parsed = parse("udp_gap.server")
    t = parsed.table
    empty = t[(t["kind"] == "interval") & (t["total"] == 0)]
    assert len(empty) == 1 and empty["rate_mbps"].item() == 0.0 and empty["bytes"].item() == 0
    lost, total = map(int, re.search(r"(\d+)/(\d+) \(55%\)", raw("udp_gap.server")).groups())
    assert parsed.summary["lost"] == lost and parsed.summary["total"] == total
    assert parse("udp_gap").summary["lost"] == lost


def test_a_server_that_got_no_datagram_is_refused_saying_so_and_the_client_is_read():
    with pytest.raises(ParseError) as err:
        parse("udp_nothing_arrives.server")
    assert "no connection" in err.value.reason
    s = parse("udp_nothing_arrives").summary
    assert s["sender_mbps"] == 1.06 and s["sent_datagrams"] == 183
    assert s["receiver_mbps"] is None and s["total"] is None
    assert any("did not receive ack" in w for w in s["warnings"])


# --- -y C (CSV) -----------------------------------------------------------------------------
def csv_fields(name):
    return [line.split(",") for line in raw(name).splitlines() if line]


@pytest.mark.parametrize("name", ["csv_tcp", "csv_tcp.server", "csv_udp", "csv_udp.server",
                                  "csv_udp_p2_interval", "csv_udp_p2_interval.server"])
def test_csv_rows_are_its_lines_with_exact_bytes_and_rates(name):
    parsed = parse(name)
    t, fields = parsed.table, csv_fields(name)
    assert parsed.summary["format"] == "csv" and len(t) == len(fields)
    assert list(t["bytes"]) == [int(f[7]) for f in fields]
    assert list(t["rate_mbps"]) == pytest.approx([int(f[8]) / 1e6 for f in fields])
    assert list(t["stream"]) == [int(f[5]) for f in fields]
    json.dumps(parsed.summary, allow_nan=False)


def test_csv_tcp_does_not_say_which_side_printed_it():
    s = parse("csv_tcp").summary
    assert s["protocol"] == "TCP" and s["role"] is None
    assert s["rate_mbps"] == int(csv_fields("csv_tcp")[0][8]) / 1e6
    assert s["sender_mbps"] is None and s["receiver_mbps"] is None


def test_csv_udp_client_and_server():
    client = parse("csv_udp_p2_interval").summary
    server = parse("csv_udp_p2_interval.server")
    assert client["role"] == "client" and client["protocol"] == "UDP" and client["streams"] == 2
    assert client["lost"] is None and client["receiver_mbps"] is None  # 2.1.8 sends no report in CSV
    whole = [f for f in csv_fields("csv_udp_p2_interval.server") if f[6] == "0.0-2.0"]
    s = server.summary
    assert s["role"] == "server" and s["total"] == sum(int(f[11]) for f in whole)
    assert s["lost"] == sum(int(f[10]) for f in whole) and s["out_of_order"] == sum(int(f[13]) for f in whole)
    assert s["jitter_ms"] == max(float(f[9]) for f in whole)
    assert list(server.table["kind"]) == ["interval"] * 4 + ["total"] * 2


@pytest.mark.parametrize("change", ["drop_field", "text_rate"])
def test_a_malformed_csv_line_is_refused_naming_csv(change):
    line = raw("csv_udp.server").splitlines()[0]
    bad = line.rsplit(",", 1)[0] if change == "drop_field" else line.replace(",5254384,", ",fast,")
    with pytest.raises(ParseError) as err:
        iperf2.parse(bad + "\n")
    assert "CSV" in err.value.reason and "\n" not in str(err.value)


# --- --dualtest (-d) and --tradeoff (-r): both directions -----------------------------------
def whole_rate(name, stream):
    """The printed whole-run rate (Mbit/s) of a stream's line (its last line from 0)."""
    lines = [x for x in LINE.findall(raw(name)) if x[0] == stream and float(x[1]) == 0.0]
    return float(lines[-1][5]) * PER_MBIT[lines[-1][6]]


@pytest.mark.parametrize("name, forward, reverse", [
    ("tcp_dualtest", "1", "2"), ("tcp_tradeoff", "1", "2"), ("udp_dualtest", "1", "2"),
    ("public_udp_dualtest", "4", "3")])
def test_dualtest_and_tradeoff_clients_have_both_directions(name, forward, reverse):
    parsed = parse(name)
    s, t = parsed.summary, parsed.table
    assert s["role"] == "client" and s["bidirectional"] is True
    assert set(t.loc[t["stream"] == int(forward), "direction"]) == {"forward"}
    assert set(t.loc[t["stream"] == int(reverse), "direction"]) == {"reverse"}
    assert s["sender_mbps"] == pytest.approx(whole_rate(name, forward))
    assert s["reverse_receiver_mbps"] == pytest.approx(whole_rate(name, reverse))
    assert s["reverse_sender_mbps"] is None


@pytest.mark.parametrize("name, forward, reverse", [
    ("tcp_dualtest.server", "1", "2"), ("tcp_tradeoff.server", "1", "2"),
    ("udp_dualtest.server", "1", "2"), ("public_udp_dualtest.server", "3", "5")])
def test_dualtest_and_tradeoff_servers_have_both_directions(name, forward, reverse):
    s = parse(name).summary
    assert s["role"] == "server" and s["bidirectional"] is True
    assert s["receiver_mbps"] == pytest.approx(whole_rate(name, forward))
    assert s["reverse_sender_mbps"] == pytest.approx(whole_rate(name, reverse))
    assert s["sender_mbps"] is None


def test_udp_dualtest_reports_each_directions_receiver():
    from labtools.tools.summaries import summarize

    client, server = parse("udp_dualtest"), parse("udp_dualtest.server")
    # the client's Server Report is the server's forward total; the server's the client's reverse
    assert client.summary["total"] == server.summary["total"]
    assert client.summary["reverse_total"] == server.summary["reverse_total"]
    u = summarize(client)
    assert u.reverse_receiver_mbps == client.summary["reverse_receiver_mbps"] > 0
    assert u.reverse_loss_pct == 0.0 and u.loss_pct == 0.0
