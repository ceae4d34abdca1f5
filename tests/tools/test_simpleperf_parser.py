"""The simpleperf parser on output captured from real runs (tests/fixtures/simpleperf)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtools.errors import ParseError, ToolError
from labtools.tools.parsers import parse as parse_tool
from labtools.tools.parsers.simpleperf import COLUMNS, INCOMPLETE, KILLED, parse

END_MISSING = "the data ended without the client's END record"

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "simpleperf"


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
    assert s["complete"] is True
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
    assert s["connections"] == 3 and s["exact"] is True and s["complete"] is True
    assert parsed.table.empty and list(parsed.table.columns) == COLUMNS


def test_interrupted_client_keeps_what_was_measured() -> None:
    """Ctrl-C: the counts so far are kept (the server's ACK came), the run is incomplete."""
    text = fixture("client_sigint.jsonl")
    parsed = parse(text)
    s = parsed.summary
    assert s["interrupted"] is True and s["complete"] is False and s["error"] == INCOMPLETE
    assert s["exact"] is True
    assert s["receiver_bytes"] == last_record(text, "end")["server_bytes"] > 0
    assert s["duration_s"] < 30
    receiver = parsed.table[parsed.table["side"] == "receiver"]
    assert receiver["bytes"].sum() == s["receiver_bytes"]


def test_refused_connection_is_an_error_summary_not_an_exception() -> None:
    parsed = parse(fixture("client_refused.jsonl"))
    assert "connection refused" in parsed.summary["error"]
    assert parsed.summary["complete"] is False
    assert parsed.summary["receiver_bytes"] is None and parsed.table.empty
    assert parsed.summary["error"] in fixture("client_refused.stderr")


def test_server_output_counts_every_connection() -> None:
    text = fixture("server.jsonl")
    parsed = parse(text)
    s = parsed.summary
    ends = [json.loads(line) for line in text.splitlines() if "server_conn_end" in line]
    # complete: 2 + 3 + 2 connections; Ctrl-C, two SIGKILLs, the server stopped: 1 each
    assert s["role"] == "server" and s["connections"] == len(ends) == 2 + 3 + 2 + 4
    assert s["sessions"] == 7 and s["interrupted"] is True and s["complete"] is False
    assert [e["interrupted"] for e in ends] == [False] * 7 + [True] * 4
    assert [e["error"][:len(END_MISSING)] for e in ends[7:10]] == [END_MISSING] * 3
    assert ends[10]["error"] == "the server was stopped during the transfer"
    assert s["error"].startswith(END_MISSING)
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


def test_a_killed_clients_output_is_an_incomplete_run() -> None:
    """SIGKILL after 0.5 s: the client printed its start and nothing more."""
    assert fixture("client_killed.status").strip().endswith("137")
    s = parse(fixture("client_killed.jsonl")).summary
    assert s["complete"] is False and s["interrupted"] is True and s["error"] == KILLED
    assert s["receiver_bytes"] is None and s["time_s"] == 30
    lines = fixture("client_t2_i0.5_P2.jsonl").splitlines()  # the same, cut by hand
    cut = parse("\n".join(line for line in lines if '"type": "end"' not in line))
    assert cut.summary["error"] == KILLED and len(cut.rows) > 0


@pytest.mark.parametrize("name", ["client_server_killed", "client_server_stopped"])
def test_a_server_gone_mid_run_leaves_an_incomplete_client_run(name: str) -> None:
    s = parse(fixture(f"{name}.jsonl")).summary
    assert s["interrupted"] is True and s["complete"] is False and s["exact"] is False
    assert s["receiver_bytes"] is None and s["sender_bytes"] > 0
    assert s["error"].startswith("connection 1: connection lost while sending")
    assert s["error"] in fixture(f"{name}.stderr")
    assert fixture(f"{name}.status").strip().endswith("1")


def _edited(name: str, kind: str, key: str, value) -> str:
    """A real capture with one field of its first ``kind`` record replaced."""
    out, done = [], False
    for line in fixture(name).splitlines():
        record = json.loads(line)
        if record["type"] == kind and not done:
            record[key], done = value, True
            line = json.dumps(record)
        out.append(line)
    assert done
    return "\n".join(out)


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("name, kind, key, value", [
    ("client_t2_i0.5_P2.jsonl", "end", "type", 5),
    ("client_t2_i0.5_P2.jsonl", "end", "bytes_sent", "lots"),
    ("client_t2_i0.5_P2.jsonl", "end", "server_bytes", -1),
    ("client_t2_i0.5_P2.jsonl", "end", "receiver_mbps", -5.0),
    ("client_t2_i0.5_P2.jsonl", "end", "receiver_mbps", NAN),
    ("client_t2_i0.5_P2.jsonl", "end", "sender_mbps", INF),
    ("client_t2_i0.5_P2.jsonl", "end", "duration_s", -1.0),
    ("client_t2_i0.5_P2.jsonl", "end", "duration_s", NAN),
    ("client_t2_i0.5_P2.jsonl", "end", "interrupted", "no"),
    ("client_t2_i0.5_P2.jsonl", "end", "exact", 1),
    ("client_t2_i0.5_P2.jsonl", "end", "error", 5),
    ("client_t2_i0.5_P2.jsonl", "end", "connections", True),
    ("client_t2_i0.5_P2.jsonl", "interval", "bytes", 10 ** 30),
    ("client_t2_i0.5_P2.jsonl", "interval", "bytes", 1.5),
    ("client_t2_i0.5_P2.jsonl", "interval", "start_s", "0"),
    ("client_t2_i0.5_P2.jsonl", "interval", "end_s", -0.5),
    ("client_t2_i0.5_P2.jsonl", "interval", "side", "both"),
    ("client_t2_i0.5_P2.jsonl", "interval", "conn", 0),
    ("client_t2_i0.5_P2.jsonl", "start", "session", 5),
    ("client_t2_i0.5_P2.jsonl", "start", "time_s", -3),
    ("client_t2_i0.5_P2.jsonl", "start", "port", "x"),
    ("server.jsonl", "server_conn_end", "bytes", "lots"),
    ("server.jsonl", "server_conn_end", "duration_s", "2s"),
    ("server.jsonl", "server_conn_end", "duration_s", NAN),
    ("server.jsonl", "server_conn_end", "session", None),
    ("server.jsonl", "server_interval", "rate_mbps", -1),
    ("server.jsonl", "server_end", "bytes", 1e400),
    ("client_refused.jsonl", "error", "message", 5),
])
def test_wrongly_typed_or_impossible_values_are_parse_errors(name, kind, key, value) -> None:
    with pytest.raises(ParseError, match=key if key != "type" else "'type' must be text"):
        parse(_edited(name, kind, key, value))


@pytest.mark.parametrize("name, kind", [("server.jsonl", "server_interval"),
                                        ("client_t2_i0.5_P2.jsonl", "interval")])
def test_an_interval_that_ends_before_it_starts_is_a_parse_error(name: str, kind: str) -> None:
    with pytest.raises(ParseError, match="ends before it starts"):
        parse(_edited(name, kind, "start_s", 9.0))


@pytest.mark.parametrize("text, reason", [
    ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ('{"type": "end", "bytes_sent": ' + "9" * 5000 + "}", "not valid JSON"),
    ('{"type": null}', "'type' must be text"),
    ('{"type": ["end"]}', "'type' must be text"),
])
def test_hostile_lines_are_parse_errors(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse(text)


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
                 "client_refused.jsonl", "client_server_killed.jsonl"):
        json.dumps(parse(fixture(name)).summary, allow_nan=False)


@pytest.mark.parametrize("name, complete", [
    ("client_t2_i0.5_P2.jsonl", True), ("client_n10MB_P3.jsonl", True),
    ("client_sigint.jsonl", False), ("client_server_killed.jsonl", False),
    ("client_server_stopped.jsonl", False), ("client_refused.jsonl", False),
    ("client_killed.jsonl", False),
])
def test_the_probe_refuses_an_incomplete_run(name: str, complete: bool) -> None:
    """``probes.simpleperf`` on a lab whose client printed a real capture: a run cut short
    is a ToolError (saved as a failure), a complete one a measurement."""
    from contextlib import contextmanager

    from labtools.lab import probes
    from labtools.lab.processes import ToolOutput
    from labtools.lab.session import LabSession

    class Running:
        def poll(self) -> None:
            return None

    @contextmanager
    def server(host, argv, port=None, udp=False, wait=True):
        yield Running()

    lab = LabSession("portfolio", results=None)
    failures: list = []
    lab.run = lambda host, argv, timeout_s: ToolOutput(fixture(name), 0)  # type: ignore[method-assign]
    lab.server = server  # type: ignore[method-assign]
    lab.save_failure = lambda *args, **kw: failures.append(args)  # type: ignore[method-assign]
    if complete:
        assert probes.simpleperf(lab, "h1", "h4", duration_s=2).summary.receiver_mbps > 0
        assert failures == []
    else:
        with pytest.raises(ToolError, match="^simpleperf: "):
            probes.simpleperf(lab, "h1", "h4", duration_s=2)
        assert len(failures) == 1


def test_the_servers_tables_mark_a_killed_client() -> None:
    """Text and JSON agree: the server's human output of a client SIGKILLed after 0.5 s."""
    text = fixture("server_human.txt")
    assert f"interrupted: {END_MISSING}" in text
    assert "2 connection(s), some interrupted" in text
    assert text.count("interrupted:") == 1  # the complete -n 10MB client is not
