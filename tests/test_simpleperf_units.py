"""simpleperf's pure parts: option validation, amounts, the wire records, argument lists."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from labtools.errors import InputError
from labtools.tools.simpleperf import protocol
from labtools.tools.simpleperf.options import parse_amount, parse_options
from labtools.tools.simpleperf.report import Reporter, format_bytes, mbps


@pytest.mark.parametrize("text, nbytes", [
    ("10MB", 10_000_000), ("500kb", 500_000), ("1000B", 1000), ("1.5MB", 1_500_000),
    (" 2 KB ", 2000), ("0.001KB", 1),
])
def test_amounts_use_decimal_units(text: str, nbytes: int) -> None:
    assert parse_amount(text) == nbytes


@pytest.mark.parametrize("text, reason", [
    ("10", "needs a unit"), ("10GB", "bad unit"), ("MB", "bad amount"), ("-5MB", "bad amount"),
    ("0MB", "less than one byte"), ("0.0001KB", "less than one byte"),
])
def test_bad_amounts_are_refused(text: str, reason: str) -> None:
    with pytest.raises(InputError, match=reason):
        parse_amount(text)


def test_client_defaults_follow_the_assignment() -> None:
    opts = parse_options(["-c"])
    assert (opts.mode, opts.port, opts.time_s, opts.interval_s, opts.parallel, opts.unit) == (
        "client", 8088, 25.0, 0.0, 1, "MB")
    assert opts.amount_bytes is None


def test_amount_replaces_time_and_format_is_case_insensitive() -> None:
    opts = parse_options(["-c", "-n", "3mb", "-f", "kb", "-P", "5"])
    assert opts.amount_bytes == 3_000_000 and opts.unit == "KB" and opts.parallel == 5


@pytest.mark.parametrize("argv", [
    ["-c", "-t", "3601"], ["-c", "-t", "nan"], ["-c", "-i", "0.05"], ["-c", "-p", "0"],
    ["-s", "-f", "Mb/s"], ["-c", "-P", "x"], ["-c", "--bogus"],
])
def test_out_of_range_options_are_input_errors(argv) -> None:
    with pytest.raises(InputError):
        parse_options(argv)


def test_hello_round_trip_and_rejects() -> None:
    hello = protocol.Hello(conn=2, parallel=3, interval_ms=500, session=bytes(range(16)))
    data = hello.encode()
    assert len(data) == protocol.HELLO.size == 28
    assert protocol.decode_hello(data) == hello
    assert protocol.decode_hello(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n ") is None
    assert protocol.decode_hello(protocol.Hello(4, 3, 0, bytes(16)).encode()) is None
    assert protocol.decode_hello(protocol.Hello(1, 6, 0, bytes(16)).encode()) is None


def test_welcome_accept_and_refuse() -> None:
    assert protocol.decode_welcome(protocol.encode_welcome(True)) == (True, protocol.VERSION)
    assert protocol.decode_welcome(protocol.encode_welcome(False)) == (False, protocol.VERSION)
    assert protocol.decode_welcome(b"HTTP/1.1") == (False, 0)


def test_record_reader_handles_records_split_anywhere() -> None:
    stream = (protocol.encode_record(protocol.MAGIC_PROG, 0.5, 1000)
              + protocol.encode_record(protocol.MAGIC_PROG, 1.0, 2500)
              + protocol.encode_record(protocol.MAGIC_ACK, 1.25, 3000))
    reader = protocol.RecordReader([])
    for i in range(0, len(stream), 7):
        reader.feed(stream[i:i + 7])
    assert reader.progress == [(0.5, 1000), (1.0, 2500)]
    assert reader.ack == (1.25, 3000) and not reader.malformed
    bad = protocol.RecordReader([])
    bad.feed(b"XXXX" + bytes(16))
    assert bad.malformed and bad.ack is None


def test_rates_and_byte_formats() -> None:
    assert mbps(1_250_000, 1.0) == 10.0
    assert mbps(100, 0.0) is None
    assert format_bytes(12_345_678, "MB") == "12.35 MB"
    assert format_bytes(1500, "KB") == "1.50 KB"
    assert format_bytes(1500, "B") == "1500 B"


def test_reporter_json_mode_prints_one_object_per_line() -> None:
    out = io.StringIO()
    reporter = Reporter(json_mode=True, unit="MB", out=out)
    reporter.emit({"type": "warning", "role": "server", "message": "x"})
    reporter.emit({"type": "error", "role": "client", "message": "y"})
    assert [json.loads(line)["type"] for line in out.getvalue().splitlines()] == [
        "warning", "error"]


def test_the_kits_argument_lists_are_what_the_tool_accepts() -> None:
    """The probes' builders (labtools.tools.args) produce options the tool's own parser
    accepts with the same values; values the tool would refuse are refused first."""
    from labtools.tools import args as toolargs

    client = toolargs.simpleperf_client_args("10.0.0.4", duration_s=3, interval_s=0.5,
                                             parallel=2, port=5001)
    assert client[:3] == toolargs.SIMPLEPERF
    opts = parse_options(client[3:])
    assert (opts.mode, opts.server, opts.port, opts.time_s, opts.interval_s, opts.parallel,
            opts.json) == ("client", "10.0.0.4", 5001, 3.0, 0.5, 2, True)
    server = parse_options(toolargs.simpleperf_server_args("10.0.0.4", port=5001)[3:])
    assert (server.mode, server.bind, server.port) == ("server", "10.0.0.4", 5001)
    with pytest.raises(InputError):
        toolargs.simpleperf_client_args("10.0.0.4", parallel=6)
    with pytest.raises(InputError):
        toolargs.simpleperf_server_args("10.0.0.4", port=0)


def test_importing_the_package_is_cheap() -> None:
    code = ("import sys, labtools.tools.simpleperf; "
            "print(sorted(m for m in ('pandas', 'socket', 'mininet') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"
