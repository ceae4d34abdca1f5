"""The simpleperf parser on output captured from real runs (tests/fixtures/simpleperf)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtools.errors import ParseError
from labtools.tools.parsers import parse as parse_tool
from labtools.tools.parsers.simpleperf import COLUMNS, parse

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "simpleperf"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def last_record(text: str, kind: str) -> dict:
    return [json.loads(line) for line in text.splitlines() if f'"type": "{kind}"' in line][-1]


def test_timed_run_with_intervals_and_two_connections() -> None:
    text = fixture("client_t2_i0.5_P2.jsonl")
    parsed = parse(text)
    assert parsed.tool == "simpleperf"
    assert list(parsed.table.columns) == COLUMNS
    s = parsed.summary
    assert s["connections"] == 2 and s["parallel"] == 2 and s["time_s"] == 2.0
    assert s["exact"] is True and s["interrupted"] is False and s["error"] is None
    assert s["receiver_bytes"] == s["sender_bytes"] > 0
    assert s["receiver_mbps"] == pytest.approx(
        s["receiver_bytes"] * 8 / s["server_duration_s"] / 1e6, rel=1e-4)
    assert 1.9 < s["duration_s"] < 2.5
    table = parsed.table
    assert set(table["side"]) == {"sender", "receiver"} and set(table["conn"]) == {1, 2}
    # interval rows add up to each side's total
    by_side = table.groupby("side")["bytes"].sum()
    assert by_side["sender"] == s["sender_bytes"] and by_side["receiver"] == s["receiver_bytes"]
    assert (table["end_s"] >= table["start_s"]).all()
    assert table["session"].nunique() == 1


def test_registered_for_labtools_parse() -> None:
    for other in ("iperf2", "iperf3", "ping"):  # the registry imports every parser
        pytest.importorskip(f"labtools.tools.parsers.{other}")
    text = fixture("client_n10MB_P3.jsonl")
    assert parse_tool("simpleperf", text).summary == parse(text).summary


def test_amount_run_has_no_interval_rows_and_exact_counts() -> None:
    parsed = parse(fixture("client_n10MB_P3.jsonl"))
    s = parsed.summary
    assert s["amount_bytes_per_conn"] == 10_000_000 and s["time_s"] is None
    assert s["sender_bytes"] == s["receiver_bytes"] == 30_000_000
    assert s["connections"] == 3 and s["exact"] is True
    assert parsed.table.empty and list(parsed.table.columns) == COLUMNS


def test_interrupted_client_keeps_what_was_measured() -> None:
    text = fixture("client_sigint.jsonl")
    parsed = parse(text)
    s = parsed.summary
    assert s["interrupted"] is True and s["error"] is None
    assert s["receiver_bytes"] == last_record(text, "end")["server_bytes"] > 0
    assert s["duration_s"] < 30
    receiver = parsed.table[parsed.table["side"] == "receiver"]
    assert receiver["bytes"].sum() == s["receiver_bytes"]


def test_refused_connection_is_an_error_summary_not_an_exception() -> None:
    parsed = parse(fixture("client_refused.jsonl"))
    assert "connection refused" in parsed.summary["error"]
    assert parsed.summary["receiver_bytes"] is None and parsed.table.empty
    assert parsed.summary["error"] in fixture("client_refused.stderr")


def test_server_output_counts_every_connection() -> None:
    text = fixture("server.jsonl")
    parsed = parse(text)
    s = parsed.summary
    ends = [json.loads(line) for line in text.splitlines() if "server_conn_end" in line]
    assert s["role"] == "server" and s["connections"] == len(ends) == 2 + 3 + 2 + 1
    assert s["sessions"] == 4 and s["interrupted"] is True
    assert s["receiver_bytes"] == sum(r["bytes"] for r in ends)
    assert s["receiver_mbps"] is None  # several sessions: no single rate
    assert set(parsed.table["side"]) == {"receiver"} and not parsed.table.empty


def test_server_receiver_rows_match_the_clients_copy() -> None:
    """The server's interval rows of a session equal the receiver rows its client printed."""
    client = parse(fixture("client_t2_i0.5_P2.jsonl")).table
    server = parse(fixture("server.jsonl")).table
    session = client["session"].iloc[0]
    ours = server[server["session"] == session].sort_values(["conn", "start_s"])
    theirs = client[client["side"] == "receiver"].sort_values(["conn", "start_s"])
    assert list(ours["bytes"]) == list(theirs["bytes"])


def test_human_output_is_rejected() -> None:
    with pytest.raises(ParseError, match="--json"):
        parse(fixture("client_t2_i0.5_P2_human.txt"))


def test_missing_end_record_is_a_parse_error() -> None:
    lines = fixture("client_n10MB_P3.jsonl").splitlines()
    truncated = "\n".join(line for line in lines if '"type": "end"' not in line)
    with pytest.raises(ParseError, match="no 'end' record"):
        parse(truncated)


def test_cut_line_is_a_parse_error() -> None:
    text = fixture("client_n10MB_P3.jsonl")
    with pytest.raises(ParseError, match="not valid JSON"):
        parse(text[: len(text) - 40])


def test_record_without_a_key_is_a_parse_error() -> None:
    lines = fixture("client_n10MB_P3.jsonl").splitlines()
    end = json.loads(lines[-1])
    del end["server_bytes"]
    with pytest.raises(ParseError, match="lacks server_bytes"):
        parse("\n".join(lines[:-1] + [json.dumps(end)]))


def test_shell_noise_around_the_records_is_ignored() -> None:
    text = fixture("client_n10MB_P3.jsonl")
    noisy = "mininet> h1 simpleperf ...\n" + text + "\n*** done\n"
    assert parse(noisy).summary == parse(text).summary


def test_summary_is_json_serialisable() -> None:
    for name in ("client_t2_i0.5_P2.jsonl", "client_sigint.jsonl", "server.jsonl",
                 "client_refused.jsonl"):
        json.dumps(parse(fixture(name)).summary, allow_nan=False)
