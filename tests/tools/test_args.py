"""The tools' argument lists: what each tool is asked to do, checked against what the real
tool did with the same arguments (captured outputs in tests/fixtures)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labtools.errors import InputError
from labtools.tools import args

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _offered_mbps(capture: str) -> float:
    """The rate an iperf 2 UDP client offered, from its own "IPG target" line: one datagram
    of the printed size every IPG microseconds."""
    text = (FIXTURES / "iperf2" / capture).read_text()
    match = re.search(r"Sending (\d+) byte datagrams, IPG target: ([\d.]+) us", text)
    assert match, capture
    return int(match.group(1)) * 8 / float(match.group(2))  # bit/us = Mbit/s


def _b_value(argv: list) -> str:
    return argv[argv.index("-b") + 1]


def test_iperf2_reads_an_m_suffix_as_a_power_of_two():
    # the capture the kit's old arguments made: -b 10M offered 10.49 Mbit/s, not 10
    assert "-b 10M" in (FIXTURES / "iperf2" / "udp_interval.meta").read_text()
    assert _offered_mbps("udp_interval.txt") == pytest.approx(10 * 2**20 / 1e6, rel=1e-4)


def test_iperf2_offers_exactly_the_rate_the_kit_asks_for():
    argv = args.Iperf2UdpOptions("10.0.0.2", rate_mbps=10, datagram_bytes=1470).argv()
    assert _b_value(argv) == "10000000"
    # the real iperf 2, given these arguments, offered 10.00 Mbit/s
    meta = (FIXTURES / "iperf2" / "udp_bps.meta").read_text()
    assert "-b 10000000 -l 1470" in meta
    assert _offered_mbps("udp_bps.txt") == pytest.approx(10.0, rel=1e-4)


@pytest.mark.parametrize("rate_mbps, bps", [(25, "25000000"), (0.5, "500000"),
                                            (26.25, "26250000"), (1000, "1000000000")])
def test_offered_rates_are_bits_per_second_for_both_iperfs(rate_mbps, bps):
    assert _b_value(args.Iperf2UdpOptions("10.0.0.2", rate_mbps).argv()) == bps
    assert _b_value(args.Iperf3Options("10.0.0.2", udp=True, rate_mbps=rate_mbps).argv()) == bps
    assert _b_value(args.Iperf3Options("10.0.0.2", rate_mbps=rate_mbps).argv()) == bps


def test_iperf3_reads_m_as_a_power_of_ten():
    # iperf3's own JSON says what it took -b 30M for
    assert "-b 30M" in (FIXTURES / "iperf3" / "udp_p1.meta").read_text()
    assert '"target_bitrate":\t30000000' in (FIXTURES / "iperf3" / "udp_p1.json").read_text()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), True, "10", 1e9])
def test_bad_rates_are_refused(bad):
    with pytest.raises(InputError):
        args.Iperf2UdpOptions("10.0.0.2", bad)
    with pytest.raises(InputError):
        args.Iperf3Options("10.0.0.2", udp=True, rate_mbps=bad)


def test_a_ping_too_small_to_carry_its_timestamp_is_refused():
    # iputils prints no time for echoes below 16 bytes (tests/fixtures/ping/size_untimed.txt)
    with pytest.raises(InputError, match="size=8 is outside 16..65507"):
        args.ping_args("10.0.0.2", size_bytes=8)
    assert args.ping_args("10.0.0.2", size_bytes=16)[-3:] == ["-s", "16", "10.0.0.2"]


def test_ss_reads_the_connections_to_one_address():
    assert args.ss_args("10.0.0.2") == ["ss", "-tin", "dst", "10.0.0.2"]
    with pytest.raises(InputError):
        args.ss_args("10.0.0.2; reboot")


def test_an_iperf3_client_is_one_value_giving_its_argv_its_server_and_its_call():
    options = args.Iperf3Options("10.0.0.2", duration_s=3, interval_s=0.5, omit_s=1,
                                 window_bytes=100_000, parallel=2, reverse=True, port=5202)
    assert options.argv() == ["iperf3", "-c", "10.0.0.2", "-p", "5202", "-t", "3", "-i", "0.5",
                              "-J", "--get-server-output", "-O", "1", "-w", "100000",
                              "-P", "2", "-R"]
    assert options.server_argv() == ["iperf3", "-s", "-1", "-J", "-p", "5202"]
    # what identifies the measurement, as given (recorded results are replayed by it);
    # durations, warm-up, interval and port are not part of it
    assert options.call_args() == {"window_bytes": 100_000, "parallel": 2, "reverse": True,
                                   "bidir": False, "udp": False, "rate_mbps": None}
    assert args.Iperf3Options("10.0.0.2", udp=True, rate_mbps=25).call_args()["rate_mbps"] == 25
    udp = args.Iperf3Options("10.0.0.2", udp=True).argv()
    assert udp[-3:] == ["-u", "-b", "1000000"]  # UDP without a rate: iperf3's own 1 Mbit/s


def test_options_are_checked_when_made_named_and_frozen():
    with pytest.raises(InputError, match="reverse or bidirectional"):
        args.Iperf3Options("10.0.0.2", reverse=True, bidir=True)
    with pytest.raises(InputError, match="omit=5 s is outside 0..3 s"):
        args.Iperf3Options("10.0.0.2", duration_s=3, omit_s=5)
    with pytest.raises(InputError, match="not an IPv4 address"):
        args.SimpleperfOptions("10.0.0.2; reboot")
    with pytest.raises(TypeError):  # no options by position (booleans side by side)
        args.Iperf3Options("10.0.0.2", 10, 1, 0, None, 1, True)
    options = args.Iperf2UdpOptions("10.0.0.2", 10, interval_s=1)
    with pytest.raises(AttributeError):
        options.rate_mbps = 20
    assert options.argv()[-2:] == ["-i", "1"] and options.call_args() == {
        "rate_mbps": 10, "datagram_bytes": 1470}
    assert options.server_argv() == ["iperf", "-s", "-p", "5001", "-u"]


def test_a_simpleperf_client_gives_a_students_program_the_same_options():
    options = args.SimpleperfOptions("10.0.0.4", duration_s=3, parallel=2, wait_s=5)
    assert options.argv() == [*args.SIMPLEPERF, *options.options(), "--json"]
    assert options.options() == ["-c", "-I", "10.0.0.4", "-p", "8088", "-t", "3", "-i", "1",
                                 "-P", "2", "-w", "5"]
    assert options.call_args() == {"parallel": 2}
