"""One consistent source: where a tool's own output disagrees with itself, the parsers
read its consistent part and say so (``warnings``), and the verdicts and ``labtools
parse`` show it. Real outputs: tests/fixtures/{ping,iperf2,iperf3}/*.meta (published
captures and derivations say so there); the properties are in test_iperf_properties.py and
test_parse_ping_properties.py."""

from __future__ import annotations

import json
import re

import pytest

from labtools.judge.measurement import judge_output
from labtools.model.catalog import load_topology
from labtools.tools.parsers import iperf2, iperf3, ping
from labtools.tools.summaries import summarize
from tests.conftest import FIXTURES, run_cli

#: the capture network of the iperf fixtures (as in test_measurement.py)
CAPTURE = "dumbbell,bw_mbps=20,delay_ms=0,pairs=2"


def text(folder: str, name: str) -> str:
    return (FIXTURES / folder / name).read_text()


# --- ping: the loss is the counts' ---------------------------------------------------------
def test_a_truncated_loss_is_read_from_the_counts_and_the_printed_figure_kept():
    # a published Fedora output: iputils printed 135 of 1688 lost as 7% (integer division)
    parsed = ping.parse(text("ping", "fedora_truncated_loss.txt"))
    tx, rx = map(int, re.search(r"(\d+) packets transmitted, (\d+) received",
                                parsed.raw).groups())
    s = parsed.summary
    assert s["loss_pct"] == 100 * (tx - rx) / tx and s["printed_loss_pct"] == 7.0
    assert s["duplicates"] == 1 and s["received"] == rx  # duplicates apart
    assert parsed.warnings == () and s["warnings"] == []  # within what truncation loses
    assert summarize(parsed).loss_pct == s["loss_pct"]


def test_a_printed_loss_the_counts_contradict_is_a_warning():
    # a real capture's printed loss changed from 50% to 40% (its counts left as printed)
    real = text("ping", "partial_loss.txt")
    assert ", 50% packet loss" in real
    parsed = ping.parse(real.replace(", 50% packet loss", ", 40% packet loss"))
    assert parsed.summary["loss_pct"] == ping.parse(real).summary["loss_pct"] == 50.0
    assert parsed.summary["printed_loss_pct"] == 40.0
    assert len(parsed.warnings) == 1 and "40%" in parsed.warnings[0] and "50%" in parsed.warnings[0]
    assert ping.parse(real).warnings == ()


def test_more_replies_than_packets_is_a_warning_and_no_loss():
    real = text("ping", "quiet.txt")
    counts = re.search(r"(\d+) packets transmitted, (\d+) received", real)
    tx = int(counts[1])
    parsed = ping.parse(real.replace(counts[0], f"{tx - 1} packets transmitted, {tx} received"))
    assert parsed.summary["loss_pct"] is None and "no loss can be read" in parsed.warnings[0]


# --- iperf 2: --dualtest and --tradeoff in CSV ---------------------------------------------
def csv_lines(name: str):
    return [line.split(",") for line in text("iperf2", f"{name}.txt").splitlines()
            if re.match(r"^\d{14},", line)]


@pytest.mark.parametrize("name", ["csv_tcp_dualtest", "csv_tcp_tradeoff", "csv_udp_dualtest",
                                  "csv_udp_tradeoff", "csv_udp_dualtest_interval"])
@pytest.mark.parametrize("side", ["", ".server"])
def test_csv_dualtest_and_tradeoff_read_as_two_directions(name, side):
    # iperf 2.1.8 numbers the client's own stream 1, the connection back 2 (the .meta's -L)
    parsed = iperf2.parse(text("iperf2", f"{name}{side}.txt"))
    s, t = parsed.summary, parsed.table
    assert s["bidirectional"] is True and s["streams"] == 1 and parsed.warnings == ()
    assert s["role"] == ("server" if side else "client")
    assert set(t.loc[t["stream"] == 1, "direction"]) == {"forward"}
    assert set(t.loc[t["stream"] == 2, "direction"]) == {"reverse"}
    whole = {int(f[5]): f for f in csv_lines(name + side) if f[6].startswith("0.0-")
             and float(f[6].split("-")[1]) >= 2}
    assert s["rate_mbps"] == int(whole[1][8]) / 1e6 and s["bytes"] == int(whole[1][7])
    rev_rate = s["reverse_sender_mbps"] if side else s["reverse_receiver_mbps"]
    assert rev_rate == int(whole[2][8]) / 1e6
    if "udp" in name:  # each direction's receiver numbers are its receiver's line
        received = whole[1] if side else whole[2]
        lost, total = (s["lost"], s["total"]) if side else (s["reverse_lost"], s["reverse_total"])
        assert (lost, total) == (int(received[10]), int(received[11]))
        assert int((whole[2] if side else whole[1])[11]) == -1  # the sender's own line
        typed = summarize(parsed)
        assert typed.reverse_loss_pct == (None if side else 100 * lost / total)


def test_iperf_2_0_csv_dualtests_of_a_client_read_as_two_directions():
    # published iperf 2.0.4 outputs: each line prints the client's own address and port
    # first; the UDP client's own line has 9 fields, its Server Report comes last
    tcp = iperf2.parse(text("iperf2", "public_csv_tcp_dualtest.txt"))
    lines = csv_lines("public_csv_tcp_dualtest")
    out = next(f for f in lines if f[4] == "5001")  # to the server's port 5001
    back = next(f for f in lines if f[2] == "5001")  # to the client's own port 5001
    assert tcp.summary["role"] == "client" and tcp.summary["bidirectional"]
    assert tcp.summary["sender_mbps"] == int(out[8]) / 1e6
    assert tcp.summary["reverse_receiver_mbps"] == int(back[8]) / 1e6
    udp = iperf2.parse(text("iperf2", "public_csv_udp_dualtest.txt"))
    own, received, report = csv_lines("public_csv_udp_dualtest")
    s = udp.summary
    assert len(own) == 9 and s["role"] == "client" and s["sender_mbps"] == int(own[8]) / 1e6
    assert (s["receiver_mbps"], s["lost"], s["total"]) == (
        int(report[8]) / 1e6, int(report[10]), int(report[11]))
    assert (s["reverse_receiver_mbps"], s["reverse_lost"], s["reverse_total"]) == (
        int(received[8]) / 1e6, int(received[10]), int(received[11]))
    assert list(udp.table["kind"]) == ["total", "total", "server_report"]


def test_csv_client_and_server_of_one_dualtest_agree():
    client = iperf2.parse(text("iperf2", "csv_udp_dualtest.txt")).summary
    server = iperf2.parse(text("iperf2", "csv_udp_dualtest.server.txt")).summary
    assert client["bytes"] == server["bytes"] and client["sender_mbps"] > 0
    assert client["reverse_total"] is not None and server["total"] is not None


# --- iperf3: totals no run gives ----------------------------------------------------------
@pytest.mark.parametrize("name, total", [("derived_sum_impossible", "sum"),
                                         ("derived_received_impossible", "sum_received")])
def test_iperf3_totals_out_of_range_are_read_from_the_streams_with_a_warning(name, total):
    parsed, real = iperf3.parse(text("iperf3", f"{name}.json")), iperf3.parse(
        text("iperf3", "udp_p1.json"))
    doc = json.loads(text("iperf3", "udp_p1.json"))
    streams = doc["end"]["streams"]
    assert parsed.summary["lost_packets"] == sum(st["udp"]["lost_packets"] for st in streams)
    for key in ("sender_bytes", "receiver_bytes", "lost_packets", "packets", "jitter_ms"):
        assert parsed.summary[key] == real.summary[key], key
    assert parsed.summary["lost_pct"] == pytest.approx(real.summary["lost_pct"])
    assert parsed.warnings == (f"end.{total} says lost_packets -3 and lost_percent 250, "
                               "which no run counts",)
    assert parsed.summary["warnings"] == list(parsed.warnings) and real.warnings == ()


def test_iperf3_bytes_not_the_sum_of_the_streams_are_the_streams():
    real = text("iperf3", "tcp_p3.json")
    doc = json.loads(real)
    receiver = sum(st["receiver"]["bytes"] for st in doc["end"]["streams"])
    doc["end"]["sum_received"]["bytes"] = receiver + 5000
    parsed = iperf3.parse(json.dumps(doc))
    assert parsed.summary["receiver_bytes"] == receiver == iperf3.parse(real).summary[
        "receiver_bytes"]
    assert len(parsed.warnings) == 1 and str(receiver + 5000) in parsed.warnings[0]


# --- the verdicts and labtools parse show it -----------------------------------------------
def test_the_verdicts_say_when_the_output_disagrees_with_itself():
    topo = load_topology(CAPTURE)
    name = "public_udp_p1_sum_first_twice.server.txt"
    m = judge_output("iperf", text("iperf2", name), topo, "a1", "b1")
    rows = [v for v in m.verdicts if v.metric == "tool_output"]
    assert len(rows) == 1 and rows[0].verdict == "suspicious"
    assert "[SUM]" in rows[0].reason and m.summary.warnings == m.parsed.warnings
    assert m.summary.receiver_mbps == m.parsed.summary["rate_mbps"]  # the stream's own
    clean = judge_output("iperf", text("iperf2", "udp_p3.server.txt"), topo, "a1", "b1")
    assert not [v for v in clean.verdicts if v.metric == "tool_output"]


def test_labtools_parse_shows_the_warnings():
    path = str(FIXTURES / "iperf2" / "public_udp_p3_sum_mismatch.server.txt")
    result = run_cli(["parse", "iperf", path, "--json"])
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)["summary"]
    expected = iperf2.parse(text("iperf2", "public_udp_p3_sum_mismatch.server.txt"))
    assert shown["bytes"] == expected.summary["bytes"] and shown["streams"] == 3
    assert set(expected.warnings) <= set(shown["warnings"]) and len(expected.warnings) == 2
    assert result.stderr.count("labtools parse iperf: warning: the [SUM] line's") == 2
