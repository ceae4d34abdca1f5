"""The tools' argument lists: what each tool is asked to do, checked against what the real
tool did with the same arguments (captured outputs in tests/fixtures)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labtools.errors import InputError
from labtools.tools import args

FIXTURES = Path(__file__).resolve().parent / "fixtures"


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
    argv = args.iperf2_udp_client_args("10.0.0.2", rate_mbps=10, datagram_bytes=1470)
    assert _b_value(argv) == "10000000"
    # the real iperf 2, given these arguments, offered 10.00 Mbit/s
    meta = (FIXTURES / "iperf2" / "udp_bps.meta").read_text()
    assert "-b 10000000 -l 1470" in meta
    assert _offered_mbps("udp_bps.txt") == pytest.approx(10.0, rel=1e-4)


@pytest.mark.parametrize("rate_mbps, bps", [(25, "25000000"), (0.5, "500000"),
                                            (26.25, "26250000"), (1000, "1000000000")])
def test_offered_rates_are_bits_per_second_for_both_iperfs(rate_mbps, bps):
    assert _b_value(args.iperf2_udp_client_args("10.0.0.2", rate_mbps)) == bps
    assert _b_value(args.iperf3_client_args("10.0.0.2", udp=True, rate_mbps=rate_mbps)) == bps
    assert _b_value(args.iperf3_client_args("10.0.0.2", rate_mbps=rate_mbps)) == bps


def test_iperf3_reads_m_as_a_power_of_ten():
    # iperf3's own JSON says what it took -b 30M for
    assert "-b 30M" in (FIXTURES / "iperf3" / "udp_p1.meta").read_text()
    assert '"target_bitrate":\t30000000' in (FIXTURES / "iperf3" / "udp_p1.json").read_text()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), True, "10", 1e9])
def test_bad_rates_are_refused(bad):
    with pytest.raises(InputError):
        args.iperf2_udp_client_args("10.0.0.2", bad)


def test_a_ping_too_small_to_carry_its_timestamp_is_refused():
    # iputils prints no time for echoes below 16 bytes (tests/fixtures/ping/size_untimed.txt)
    with pytest.raises(InputError, match="size=8 is outside 16..65507"):
        args.ping_args("10.0.0.2", size_bytes=8)
    assert args.ping_args("10.0.0.2", size_bytes=16)[-3:] == ["-s", "16", "10.0.0.2"]


def test_ss_reads_the_connections_to_one_address():
    assert args.ss_args("10.0.0.2") == ["ss", "-tin", "dst", "10.0.0.2"]
    with pytest.raises(InputError):
        args.ss_args("10.0.0.2; reboot")
