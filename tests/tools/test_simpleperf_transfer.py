"""simpleperf end to end: real server and client processes over real loopback sockets.

Each test starts ``python -m labtools.tools.simpleperf`` in subprocesses on 127.0.0.1 with a
free ephemeral port; transfers are short (at most about 2 s).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, List

import pytest
from simpleperf_procs import (
    ROOT,
    TOOL,
    ServerProcess,
    free_port,
    of_type,
    records,
    run_client,
    serve,
)


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    yield from serve()


@pytest.mark.parametrize("parallel", [1, 3, 5])
def test_amount_arrives_exactly_on_every_connection(server: ServerProcess, parallel: int) -> None:
    done = run_client(server.port, "-n", "3MB", "-P", str(parallel), "--json")
    assert done.returncode == 0, done.stderr
    recs = records(done.stdout)
    end = of_type(recs, "end")[0]
    assert end["connections"] == parallel
    assert end["bytes_sent"] == end["server_bytes"] == parallel * 3_000_000
    assert end["exact"] is True and end["interrupted"] is False and end["error"] is None
    conn_ends = of_type(recs, "conn_end")
    assert sorted(c["conn"] for c in conn_ends) == list(range(1, parallel + 1))
    assert all(c["bytes_sent"] == c["server_bytes"] == 3_000_000 for c in conn_ends)
    assert len(of_type(recs, "conn_start")) == parallel
    # the server's own report of the session agrees
    session = of_type(recs, "start")[0]["session"]
    total = server.wait_for("server_session_end", session)
    assert total["connections"] == parallel and total["bytes"] == parallel * 3_000_000


def _rows(recs: List[dict], side: str, conn: int) -> List[dict]:
    return [r for r in of_type(recs, "interval") if r["side"] == side and r["conn"] == conn]


def test_interval_rows_add_up_to_the_totals(server: ServerProcess) -> None:
    done = run_client(server.port, "-t", "1.5", "-i", "0.25", "-P", "2", "--json")
    assert done.returncode == 0, done.stderr
    recs = records(done.stdout)
    for conn_end in of_type(recs, "conn_end"):
        sender = _rows(recs, "sender", conn_end["conn"])
        receiver = _rows(recs, "receiver", conn_end["conn"])
        assert 5 <= len(sender) <= 8 and 5 <= len(receiver) <= 8
        assert sum(r["bytes"] for r in sender) == conn_end["bytes_sent"]
        assert sum(r["bytes"] for r in receiver) == conn_end["server_bytes"]
        for rows in (sender, receiver):
            assert rows[0]["start_s"] == 0.0
            assert all(a["end_s"] == b["start_s"] for a, b in zip(rows, rows[1:]))
    end = of_type(recs, "end")[0]
    assert end["server_bytes"] == end["bytes_sent"] > 0
    assert 1.4 < end["duration_s"] < 2.0


def test_server_reports_receiver_intervals_matching_the_client(server: ServerProcess) -> None:
    done = run_client(server.port, "-t", "1", "-i", "0.5", "--json")
    assert done.returncode == 0, done.stderr
    recs = records(done.stdout)
    session = of_type(recs, "start")[0]["session"]
    server_end = server.wait_for("server_conn_end", session)
    server_rows = [r for r in server.seen
                   if r["type"] == "server_interval" and r["session"] == session]
    client_rows = _rows(recs, "receiver", 1)
    assert [r["bytes"] for r in server_rows] == [r["bytes"] for r in client_rows]
    assert server_end["bytes"] == of_type(recs, "end")[0]["server_bytes"]


def test_two_clients_at_once_are_both_counted(server: ServerProcess) -> None:
    args = TOOL + ["-c", "-I", "127.0.0.1", "-p", str(server.port), "-t", "1", "-P", "2",
                   "--json"]
    procs = [subprocess.Popen(args, cwd=str(ROOT), stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outputs = [p.communicate(timeout=30)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    sessions = set()
    for out in outputs:
        recs = records(out)
        end = of_type(recs, "end")[0]
        assert end["exact"] and end["connections"] == 2
        sessions.add(of_type(recs, "start")[0]["session"])
    assert len(sessions) == 2
    finished = [server.wait_for("server_session_end") for _ in range(2)]
    assert {r["session"] for r in finished} == sessions


def test_human_table_in_kilobytes(server: ServerProcess) -> None:
    done = run_client(server.port, "-n", "2500KB", "-P", "2", "-f", "kb")
    assert done.returncode == 0, done.stderr
    assert "Interval" in done.stdout and "Receiver rate" in done.stdout
    assert "[SUM]" in done.stdout
    rows = [line.split() for line in done.stdout.splitlines() if line[:3] in ("[1]", "[2]")]
    rows = [row for row in rows if len(row) == 12]  # ID, interval, sent, received, rates
    assert [row[4:8] for row in rows] == [["2500.00", "KB", "2500.00", "KB"]] * 2
    assert "5000.00 KB" in done.stdout


def test_sigint_on_the_client_prints_partial_results(server: ServerProcess) -> None:
    proc = subprocess.Popen(TOOL + ["-c", "-I", "127.0.0.1", "-p", str(server.port), "-t",
                                    "60", "-i", "0.2", "--json"], cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    while json.loads(proc.stdout.readline())["type"] != "interval":
        pass
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 5
    assert "Traceback" not in err
    end = of_type(records(out), "end")[0]
    assert end["interrupted"] is True and end["exact"] is True
    assert end["server_bytes"] == end["bytes_sent"] > 0 and end["duration_s"] < 10
    session_end = server.wait_for("server_conn_end")
    assert session_end["bytes"] == end["server_bytes"]


def test_stopping_the_server_reports_what_it_received(server: ServerProcess) -> None:
    proc = subprocess.Popen(TOOL + ["-c", "-I", "127.0.0.1", "-p", str(server.port), "-t",
                                    "60", "--json"], cwd=str(ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    server.wait_for("server_conn_start")
    time.sleep(0.5)
    assert server.stop(signal.SIGTERM) == 143
    out, err = proc.communicate(timeout=40)
    conn_end = server.wait_for("server_conn_end")
    assert conn_end["interrupted"] is True and conn_end["bytes"] > 0
    assert conn_end["error"] == "the server was stopped during the transfer"
    stopped = server.wait_for("server_end")
    assert stopped["interrupted"] is True and stopped["bytes"] == conn_end["bytes"]
    # the client notices the lost server: one error line, exit status 1, partial counts
    assert proc.returncode == 1
    assert err.count("\n") == 1 and err.startswith("simpleperf: error: connection 1:")
    end = of_type(records(out), "end")[0]
    assert end["bytes_sent"] >= conn_end["bytes"] and end["server_bytes"] is None


def _one_error_line(done: subprocess.CompletedProcess, status: int) -> str:
    assert done.returncode == status, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("simpleperf: error: "), done.stderr
    return lines[0]


@pytest.mark.parametrize("args, reason", [
    (["-P", "6"], "parallel 6"),
    (["-P", "0"], "parallel 0"),
    (["-n", "10XB"], "bad unit"),
    (["-n", "10"], "needs a unit"),
    (["-t", "-1"], "time -1"),
    (["-t", "0"], "time 0"),
    (["-i", "-1"], "interval -1"),
    (["-t", "1", "-n", "1MB"], "not both"),
    (["-f", "GB"], "bad format"),
    (["-w", "-1"], "wait -1 s is outside"),
])
def test_bad_client_options_give_one_line_and_status_2(args: List[str], reason: str) -> None:
    done = run_client(free_port(), *args)
    assert reason in _one_error_line(done, 2)


@pytest.mark.parametrize("argv, reason", [
    (["-s", "-p", "70000"], "outside 1..65535"),
    (["-s", "-c"], "not allowed with"),
    ([], "required"),
])
def test_bad_usage_gives_one_line_and_status_2(argv: List[str], reason: str) -> None:
    done = subprocess.run(TOOL + argv, cwd=str(ROOT), capture_output=True, text=True,
                          timeout=30)
    assert reason in _one_error_line(done, 2)


def test_unreachable_server_gives_one_line_and_status_1() -> None:
    done = run_client(free_port(), "-t", "1", "--json")
    assert "connection refused" in _one_error_line(done, 1)
    assert of_type(records(done.stdout), "error")[0]["message"].startswith("cannot connect")


def test_a_client_told_to_wait_connects_to_a_server_that_starts_after_it() -> None:
    """``--wait``: the client keeps trying while the port refuses, so the kit starts the
    server and the client together (each Python start takes a second or more under
    software emulation); without it the same client fails at once."""
    port = free_port()
    client = subprocess.Popen(TOOL + ["-c", "-I", "127.0.0.1", "-p", str(port), "-n", "1MB",
                                      "-w", "20", "--json"], cwd=str(ROOT),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # the client is trying: nothing listens yet
    assert client.poll() is None
    server = ServerProcess(port)
    try:
        out, _ = client.communicate(timeout=30)
    finally:
        server.stop()
    assert client.returncode == 0
    assert of_type(records(out), "end")[0]["server_bytes"] == 1_000_000
    done = run_client(port, "-n", "1MB", "-w", "0.3", "--json")
    assert "connection refused for 0.3 s" in _one_error_line(done, 1)


def test_port_in_use_gives_one_line_and_status_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(TOOL + ["-s", "-b", "127.0.0.1", "-p", str(port)],
                              cwd=str(ROOT), capture_output=True, text=True, timeout=30)
    assert "already in use" in _one_error_line(done, 1)


def test_not_a_simpleperf_server_is_refused_quickly() -> None:
    """A listener that accepts but never answers: the client gives up after its time-out."""
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        started = time.monotonic()
        done = run_client(mute.getsockname()[1], "-t", "1")
    assert "handshake" in _one_error_line(done, 1)
    assert time.monotonic() - started < 15


def test_console_script_and_module_agree() -> None:
    script = Path(sys.executable).with_name("simpleperf")
    if not script.exists():
        pytest.skip("the simpleperf console script is not installed in this environment")
    outputs: Dict[str, str] = {}
    for name, cmd in (("script", [str(script)]), ("module", TOOL)):
        outputs[name] = subprocess.run(cmd + ["--version"], capture_output=True, text=True,
                                       timeout=30).stdout
    assert outputs["script"] == outputs["module"] != ""


def test_no_row_covers_a_sliver_of_time(server: ServerProcess) -> None:
    """A last interval of a few milliseconds gives a rate the transfer never had (seen:
    ``3.00 - 3.00  21.89 MB  47975.94 Mbps`` at the end of a 15 Gbit/s loopback run): it is
    folded into the row before it, in the client's rows and in the server's alike."""
    from labtools.tools.simpleperf.report import SLIVER_FRACTION

    for args in (("-t", "3", "-i", "1"), ("-n", "300MB", "-i", "0.5")):
        done = run_client(server.port, *args, "--json")
        assert done.returncode == 0, done.stderr
        recs = records(done.stdout)
        interval = float(args[-1])
        session = of_type(recs, "start")[0]["session"]
        server.wait_for("server_conn_end", session)
        server_rows = [r for r in server.seen
                       if r["type"] == "server_interval" and r["session"] == session]
        for row in of_type(recs, "interval") + server_rows:
            assert row["end_s"] - row["start_s"] >= SLIVER_FRACTION * interval, row
        conn_end = of_type(recs, "conn_end")[0]
        assert sum(r["bytes"] for r in _rows(recs, "sender", 1)) == conn_end["bytes_sent"]
        assert sum(r["bytes"] for r in _rows(recs, "receiver", 1)) == conn_end["server_bytes"]
        assert [r["bytes"] for r in server_rows] == [r["bytes"] for r in _rows(recs, "receiver", 1)]


def test_a_last_sliver_is_folded_into_the_row_before() -> None:
    """The numbers of the run quoted above: 1.80 GB in the third second, then 21.89 MB
    counted in the 3.6 ms after the last tick."""
    from labtools.tools.simpleperf.report import HeldRows

    printed: List[tuple] = []
    rows = HeldRows(1.0, lambda *row: printed.append(row))
    rows.add(0.0, 1.0, 1_850_000_000)
    rows.add(1.0, 2.0, 1_870_000_000)
    assert printed == [(0.0, 1.0, 1_850_000_000)]  # one interval late
    rows.add(2.0, 3.0, 1_800_000_000)
    rows.close(3.0, 3.0036, 21_890_000)
    assert printed[-1] == (2.0, 3.0036, 1_821_890_000) and len(printed) == 3
    rows = HeldRows(1.0, lambda *row: printed.append(row))
    rows.add(0.0, 1.0, 100)
    rows.close(1.0, 1.5, 50)  # half an interval is a real interval: kept
    assert printed[-2:] == [(0.0, 1.0, 100), (1.0, 1.5, 50)]
