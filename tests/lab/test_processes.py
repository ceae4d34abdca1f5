"""Tools as processes (labtools.lab.processes), on real processes of this machine: the signal
each server gets once its client is done, that nothing waits for it, and what a tool leaves
(its output and its exit status) and how a failed one is named."""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess

import pytest
from conftest import FIXTURES

from labtools.errors import ParseError, ToolError
from labtools.lab.processes import (
    STOP_SIGNALS,
    ToolOutput,
    ask_to_stop,
    parse_output,
    server_failure,
    terminate,
    wait_output,
)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _started(argv):
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


@pytest.mark.skipif(shutil.which("iperf") is None, reason="iperf 2 is not installed")
def test_an_iperf2_server_is_killed_its_report_went_to_the_client():
    """iperf 2 waits half a second on SIGTERM; it gets SIGKILL instead."""
    assert STOP_SIGNALS["iperf"] == signal.SIGKILL
    argv = ["iperf", "-s", "-u", "-p", str(_free_port())]
    proc = _started(argv)
    try:
        ask_to_stop(proc, argv)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        terminate(proc)


def test_other_servers_get_sigterm_and_the_call_does_not_wait():
    argv = ["sh", "-c", "trap 'sleep 1; exit 7' TERM; echo ready; while :; do sleep 0.05; done"]
    proc = _started(argv)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        ask_to_stop(proc, argv)
        assert proc.poll() is None  # still handling its SIGTERM: nobody waited
        assert proc.wait(timeout=10) == 7
    finally:
        terminate(proc)


def test_asking_a_finished_server_to_stop_does_nothing():
    argv = ["true"]
    proc = _started(argv)
    proc.wait(timeout=10)
    ask_to_stop(proc, argv)
    assert proc.returncode == 0


def test_a_server_that_exited_says_why_one_that_runs_says_nothing():
    """A client that waited for its server in vain reports the server's own last line."""
    gone = _started(["sh", "-c", "echo starting; echo 'port 8088 is already in use'; exit 1"])
    gone.wait(timeout=10)
    error = server_failure(gone, "simpleperf", "h4")
    assert error is not None
    assert str(error) == "simpleperf server on h4 exited at once: port 8088 is already in use"
    running = _started(["sleep", "30"])
    try:
        assert server_failure(running, "simpleperf", "h4") is None
    finally:
        terminate(running)


# --- what a tool left: its output and its exit status ------------------------------------
def _finished(argv):
    proc = _started(argv)
    return wait_output(proc, argv, "here", timeout_s=20)


@pytest.mark.parametrize("tool, argv, status, said", [
    ("ping", ["ping", "-c", "1", "-Q", "xyz", "127.0.0.1"], 2, "ping: bad TOS value: xyz"),
    ("ss", ["ss", "--no-such-option"], 255, ""),
])
def test_a_failed_tool_whose_output_does_not_parse_is_the_tools_error(tool, argv, status, said):
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed")
    output = _finished(argv)
    assert output.exit_status == status
    with pytest.raises(ToolError, match=rf"^{tool} on here failed \(exit status {status}\): "
                       + re.escape(said)) as caught:
        parse_output(tool, "here", output)
    assert not isinstance(caught.value, ParseError)


@pytest.mark.skipif(shutil.which("iperf") is None, reason="iperf 2 is not installed")
def test_output_that_does_not_parse_from_a_tool_that_ended_well_is_a_parse_error():
    """iperf 2 that found no server prints no report and still exits 0."""
    output = _finished(["iperf", "-c", "127.0.0.1", "-p", str(_free_port()), "-t", "1"])
    assert output.exit_status == 0
    with pytest.raises(ParseError, match="iperf said: connect failed"):
        parse_output("iperf", "here", output)


def test_a_failed_tool_whose_output_parses_is_measured_with_its_status():
    """ping exits 1 when no reply came (ping(8)); what it printed is still a measurement."""
    text = (FIXTURES / "ping" / "total_loss.txt").read_text()
    parsed = parse_output("ping", "h1", ToolOutput(text, 1))
    assert parsed.summary["loss_pct"] == 100.0


def test_a_killed_tool_is_named_by_its_signal():
    output = _finished(["sh", "-c", "echo half a line; kill -9 $$"])
    assert output.exit_status == -signal.SIGKILL
    assert output.describe_status() == "killed by signal 9 (SIGKILL)"
    with pytest.raises(ToolError, match=r"ping on here failed \(killed by signal 9 \(SIGKILL\)\): "
                                        "half a line"):
        parse_output("ping", "here", output)


@pytest.mark.parametrize("text, status", [
    ((FIXTURES / "ping" / "timestamps.txt").read_text(), 0),
    ((FIXTURES / "ping" / "unknown_host.txt").read_text(), 2),  # ping(8): 2 for an error
])
def test_a_probe_keeps_the_exit_status_with_the_measurement_or_the_failure(tmp_path, text,
                                                                          status):
    """``probes.ping`` on a lab whose ping printed a real capture: the status is part of
    the judged measurement and of its saved run; a failed ping that printed no report is
    a ToolError naming the tool, the host and the status, saved with what it printed."""
    from labtools.lab import probes
    from labtools.lab.session import LabSession
    from labtools.results.store import ResultStore

    lab = LabSession("portfolio", results=tmp_path / "r.sqlite", calibrate=False)
    lab.open_store()
    lab.run = lambda host, argv, timeout_s: ToolOutput(text, status)  # type: ignore[method-assign]
    store = ResultStore(tmp_path / "r.sqlite", create=False)
    if status == 0:
        m = probes.ping(lab, "h1", "h4")
        assert m.exit_status == 0 and store.get(m.run_id).exit_status == 0
        return
    with pytest.raises(ToolError, match=r"^ping on h1 failed \(exit status 2\): ping: "
                                        "nosuchhost.invalid: Temporary failure"):
        probes.ping(lab, "h1", "h4")
    failed = store.runs(status="error").iloc[0]
    assert failed["exit_status"] == 2 and failed["raw_output"] == text
    assert failed["error"].startswith("ping on h1 failed (exit status 2)")
