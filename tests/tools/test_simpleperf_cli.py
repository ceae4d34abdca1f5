"""simpleperf at the command line when things are wrong: standard output that cannot be
written, host names that cannot be, options that do nothing in the mode given. Each is
one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Iterator, List

import pytest
from simpleperf_procs import ROOT, TOOL, ServerProcess, free_port, of_type, records, serve

#: as the kit starts it (labtools.tools.args.SIMPLEPERF): without site-packages
KIT_TOOL = [sys.executable, "-S", str(ROOT / "labtools" / "tools" / "simpleperf")]


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    yield from serve()


def one_error_line(done: "subprocess.CompletedProcess[str]", status: int) -> str:
    assert done.returncode == status, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("simpleperf: error: "), done.stderr
    return lines[0]


def run_full(argv: List[str], timeout_s: float = 30) -> "subprocess.CompletedProcess[str]":
    """``argv`` with its standard output on /dev/full (every write fails: no space)."""
    with open("/dev/full", "w") as full:
        return subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True,
                              cwd=str(ROOT), timeout=timeout_s)


@pytest.mark.parametrize("args", [["-n", "1MB", "--json"], ["-n", "1MB", "-i", "0.1"]])
def test_a_client_writing_to_a_full_disk_says_so(server: ServerProcess, args) -> None:
    done = run_full(KIT_TOOL + ["-c", "-I", "127.0.0.1", "-p", str(server.port), *args])
    assert "cannot write to standard output: No space left on device" in one_error_line(done, 1)


@pytest.mark.parametrize("args", [["--json"], []])
def test_a_server_writing_to_a_full_disk_stops_at_once(args) -> None:
    started = time.monotonic()
    done = run_full(KIT_TOOL + ["-s", "-b", "127.0.0.1", "-p", str(free_port()), *args])
    assert "cannot write to standard output" in one_error_line(done, 1)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_to_a_full_disk_says_so(flag: str) -> None:
    assert "cannot write to standard output" in one_error_line(run_full(KIT_TOOL + [flag]), 1)


def test_a_closed_pipe_ends_the_client_quietly(server: ServerProcess) -> None:
    proc = subprocess.Popen(KIT_TOOL + ["-c", "-I", "127.0.0.1", "-p", str(server.port), "-t",
                                        "5", "-i", "0.2", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and err == ""


def test_a_server_whose_reader_left_stops_quietly() -> None:
    port = free_port()
    proc = subprocess.Popen(KIT_TOOL + ["-s", "-b", "127.0.0.1", "-p", str(port), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline()
    proc.stdout.close()
    client = subprocess.run(KIT_TOOL + ["-c", "-I", "127.0.0.1", "-p", str(port), "-n", "1MB",
                                        "--json"], capture_output=True, text=True, timeout=30)
    _, err = proc.communicate(timeout=10)  # it stops by itself: nobody reads its results
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert client.returncode in (0, 1)


LONG_LABEL = "a" * 64 + ".com"


@pytest.mark.parametrize("argv, reason", [
    (["-c", "-I", LONG_LABEL], "not a valid host name (label empty or too long)"),
    (["-c", "-I", "xn--ñ.com"], "not a valid host name (Label starts with ACE prefix)"),
    (["-c", "-I", "a..b"], "not a valid host name"),
    (["-c", "-I", "\udcff.example"], "not a valid host name"),  # byte 0xff in argv
    (["-c", "-I", "exa mple.com"], "not a valid host name"),
    (["-c", "-I", ""], "the name is empty"),
    (["-s", "-b", LONG_LABEL], "not a valid host name"),
    (["-s", "-b", ""], "the name is empty"),
    (["-c", "-I", "no-such-host.invalid"], "no-such-host.invalid"),
    (["-s", "-b", "999.1.1.1"], "999.1.1.1"),
])
def test_a_name_that_cannot_be_resolved_is_one_line_and_status_2(argv, reason: str) -> None:
    done = subprocess.run(KIT_TOOL + argv + ["-p", str(free_port())], capture_output=True,
                          text=True, timeout=30, errors="replace")
    line = one_error_line(done, 2)
    assert "cannot resolve" in line and reason in line


@pytest.mark.parametrize("argv, option", [
    (["-s", "-t", "5"], "-t/--time"), (["-s", "-n", "1MB"], "-n/--num"),
    (["-s", "-P", "3"], "-P/--parallel"), (["-s", "-I", "10.0.0.1"], "-I/--serverip"),
    (["-s", "-i", "1"], "-i/--interval"), (["-s", "-w", "5"], "-w/--wait"),
    (["-c", "-b", "127.0.0.1"], "-b/--bind"),
])
def test_an_option_of_the_other_mode_is_refused(argv, option: str) -> None:
    done = subprocess.run(KIT_TOOL + argv + ["-p", str(free_port())], capture_output=True,
                          text=True, timeout=30)
    assert f"{option} does nothing on a" in one_error_line(done, 2)


@pytest.mark.parametrize("value, reason", [
    ("99999999999999999999MB", "more than 1000000MB"), ("", "bad amount"),
    ("nanMB", "bad amount"),
])
def test_nonsensical_amounts_are_refused(value: str, reason: str) -> None:
    done = subprocess.run(KIT_TOOL + ["-c", "-n", value, "-p", str(free_port())],
                          capture_output=True, text=True, timeout=30)
    assert reason in one_error_line(done, 2)


def test_a_name_the_resolver_refuses_is_also_a_json_error_record() -> None:
    done = subprocess.run(TOOL + ["-c", "-I", "no-such-host.invalid", "-p", str(free_port()),
                                  "--json"], capture_output=True, text=True, timeout=30,
                          cwd=str(ROOT))
    line = one_error_line(done, 2)
    assert of_type(records(done.stdout), "error")[0]["message"] in line
