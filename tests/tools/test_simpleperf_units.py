"""simpleperf's pure parts: option validation, amounts, the wire records, argument lists."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from labtools.errors import InputError
from labtools.tools.simpleperf import protocol
from labtools.tools.simpleperf.options import check_host, parse_amount, parse_options
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

    client = toolargs.SimpleperfOptions("10.0.0.4", duration_s=3, interval_s=0.5, parallel=2,
                                        port=5001).argv()
    assert client[:3] == toolargs.SIMPLEPERF
    opts = parse_options(client[3:])
    assert (opts.mode, opts.server, opts.port, opts.time_s, opts.interval_s, opts.parallel,
            opts.json) == ("client", "10.0.0.4", 5001, 3.0, 0.5, 2, True)
    server = parse_options(toolargs.simpleperf_server_args("10.0.0.4", port=5001)[3:])
    assert (server.mode, server.bind, server.port) == ("server", "10.0.0.4", 5001)
    with pytest.raises(InputError):
        toolargs.SimpleperfOptions("10.0.0.4", parallel=6)
    with pytest.raises(InputError):
        toolargs.simpleperf_server_args("10.0.0.4", port=0)


def test_importing_the_package_is_cheap() -> None:
    code = ("import sys, labtools.tools.simpleperf; "
            "print(sorted(m for m in ('pandas', 'socket', 'mininet') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def _tracker(*chunks: bytes) -> protocol.EndTracker:
    seen = protocol.EndTracker()
    for chunk in chunks:
        seen.add(memoryview(chunk))
    return seen


def test_the_end_record_is_found_however_the_bytes_arrive() -> None:
    stream = bytes(5000) + protocol.encode_end(5000)
    assert len(protocol.encode_end(5000)) == protocol.END.size == 12
    for size in (1, 5, 11, 12, 13, 4096):
        seen = _tracker(*(stream[i:i + size] for i in range(0, len(stream), size)))
        assert seen.ended and seen.data_bytes == 5000 and seen.received == 5012


@pytest.mark.parametrize("stream", [
    b"", bytes(5000), protocol.encode_end(0)[:11],
    bytes(5000) + protocol.encode_end(4999),  # the count must be the bytes before it
    bytes(100) + protocol.encode_end(100) + b"x",  # END must be the last thing sent
    bytes(100) + b"SPNX" + bytes(8),
], ids=["nothing", "no-end", "cut-end", "wrong-count", "data-after", "other-magic"])
def test_without_a_valid_end_record_every_byte_is_data(stream: bytes) -> None:
    seen = _tracker(stream)
    assert not seen.ended and seen.data_bytes == seen.received == len(stream)


def test_an_empty_transfer_can_end_as_planned() -> None:
    seen = _tracker(protocol.encode_end(0))
    assert seen.ended and seen.data_bytes == 0


@pytest.mark.parametrize("stream", [
    protocol.encode_record(protocol.MAGIC_PROG, 1.0, 500)
    + protocol.encode_record(protocol.MAGIC_PROG, 0.5, 600),  # time goes backwards
    protocol.encode_record(protocol.MAGIC_PROG, 1.0, 500)
    + protocol.encode_record(protocol.MAGIC_PROG, 1.5, 400),  # count goes backwards
    protocol.encode_record(protocol.MAGIC_PROG, 1.0, 500)
    + protocol.encode_record(protocol.MAGIC_ACK, 1.5, 499),  # the ACK counts less
])
def test_records_going_backwards_are_malformed(stream: bytes) -> None:
    reader = protocol.RecordReader([])
    reader.feed(stream)
    assert reader.malformed and reader.ack is None


def test_a_flood_of_progress_records_is_malformed() -> None:
    reader = protocol.RecordReader([])
    reader.feed(b"".join(protocol.encode_record(protocol.MAGIC_PROG, i / 1e3, i)
                         for i in range(protocol.MAX_PROGRESS + 1)))
    assert reader.malformed and len(reader.progress) == protocol.MAX_PROGRESS


@pytest.mark.parametrize("name", ["10.0.0.4", "::1", "localhost", "h4.lab.example.", "bücher.de",
                                  "under_score"])
def test_host_names_that_can_be_are_kept(name: str) -> None:
    assert check_host(name, "server address") == name


@pytest.mark.parametrize("name", ["", ".", "a..b", "a" * 64 + ".com", "xn--ñ.com",
                                  "exa mple", "-a.com", "a" * 250 + ".example", "[::1]"])
def test_names_that_cannot_be_hosts_cannot_be_resolved(name: str) -> None:
    with pytest.raises(InputError, match="cannot resolve server address"):
        check_host(name, "server address")


def test_defaults_are_kept_and_options_of_the_other_mode_refused() -> None:
    server = parse_options(["-s"])
    assert (server.bind, server.port) == ("0.0.0.0", 8088)
    client = parse_options(["-c"])
    assert (client.server, client.interval_s, client.parallel, client.wait_s) == (
        "127.0.0.1", 0.0, 1, 0.0)
    with pytest.raises(InputError, match="-t/--time does nothing on a server"):
        parse_options(["-s", "-t", "1"])
    with pytest.raises(InputError, match="-b/--bind does nothing on a client"):
        parse_options(["-c", "-b", "0.0.0.0"])


def test_amounts_have_an_upper_bound() -> None:
    assert parse_amount("1000000MB") == 10 ** 12
    with pytest.raises(InputError, match="more than 1000000MB"):
        parse_amount("1000001MB")


def test_a_reporter_whose_output_fails_stops_printing_and_says_so_once() -> None:
    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    calls: list = []
    reporter = Reporter(json_mode=True, unit="MB", out=Full(), on_failure=lambda: calls.append(1))
    reporter.emit({"type": "warning", "role": "server", "message": "x"})
    reporter.emit({"type": "warning", "role": "server", "message": "y"})
    assert isinstance(reporter.failed, OSError) and reporter.failed.errno == 28
    assert calls == [1]


@pytest.mark.parametrize("interval_ms, valid", [(0, True), (100, True), (3_600_000, True),
                                                (1, False), (99, False), (3_600_001, False)])
def test_a_hello_asks_for_a_report_interval_the_client_could_ask_for(interval_ms: int,
                                                                      valid: bool) -> None:
    """No report every millisecond: a peer could flood the server's output with rows."""
    data = protocol.Hello(1, 1, interval_ms, bytes(16)).encode()
    assert (protocol.decode_hello(data) is not None) is valid
