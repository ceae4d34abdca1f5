"""Stopping the tools' servers (labtools.lab.processes), on real processes of this machine:
the signal each server gets once its client is done, and that nothing waits for it."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess

import pytest

from labtools.lab.processes import STOP_SIGNALS, ask_to_stop, server_failure, terminate


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
