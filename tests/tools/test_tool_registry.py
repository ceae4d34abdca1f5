"""One descriptor per tool (labtools.tools.registry): the parser, the summary, the judge,
the destination and the command line all look the tool up there, on real captures of
every tool (tests/fixtures/*/*.meta say how each was made)."""

from __future__ import annotations

import importlib
from dataclasses import replace

import pytest

from labtools.commands import parse_cmd
from labtools.errors import InputError
from labtools.judge.destination import named_destinations
from labtools.judge.measurement import JUDGES
from labtools.tools import registry
from labtools.tools.parsers import parse
from labtools.tools.summaries import RateSummary, RttSummary, UdpSummary, summarize
from tests.conftest import FIXTURES

#: a real capture of each tool, and the summary its descriptor leads to
CAPTURES = [("ping", "ping/normal.txt", RttSummary), ("iperf3", "iperf3/tcp_p1.json", RateSummary),
            ("iperf", "iperf2/tcp.txt", RateSummary),
            ("simpleperf", "simpleperf/client_t2_i0.5_P2.jsonl", RateSummary)]


def test_every_descriptor_names_a_parser_that_reads_its_tool():
    for name, tool in registry.TOOLS.items():
        assert tool.name == name
        assert callable(importlib.import_module(tool.parser_module).parse), name
        assert tool.summary_kind in (registry.RTT, registry.RATE, registry.NOT_MEASURED)
    assert registry.TOOLS["simpleperf"].kits_own and not registry.TOOLS["iperf3"].kits_own


@pytest.mark.parametrize("tool, fixture, kind", CAPTURES)
def test_a_capture_goes_through_its_descriptor(tool, fixture, kind):
    parsed = parse(tool, (FIXTURES / fixture).read_text())
    assert parsed.tool == tool
    summary = summarize(parsed)
    assert type(summary) is kind and type(summary) in JUDGES
    assert named_destinations(parsed)  # each of these captures names where it went


def test_udp_counts_are_read_under_each_tools_own_keys():
    iperf3 = summarize(parse("iperf3", (FIXTURES / "iperf3/lo_udp_loss.json").read_text()))
    iperf2 = summarize(parse("iperf", (FIXTURES / "iperf2/udp_bps.txt").read_text()))
    for udp in (iperf3, iperf2):
        assert isinstance(udp, UdpSummary) and udp.total and udp.lost is not None
    assert registry.TOOLS["iperf"].udp_count_keys == ("lost", "total")


def test_a_reading_is_not_a_measurement_and_an_unknown_tool_is_refused():
    ss = parse("ss", (FIXTURES / "ss/window_100000.txt").read_text())
    with pytest.raises(InputError, match="a reading, not a measurement"):
        summarize(ss)
    assert named_destinations(ss) == []
    with pytest.raises(InputError, match="unknown tool 'tcpdump'"):
        parse("tcpdump", "")


def test_the_command_line_reads_the_tools_the_registry_offers_it():
    assert parse_cmd.TOOLS == registry.command_line_tools() == (
        "ping", "iperf", "iperf3", "simpleperf")


def test_a_new_tool_is_one_descriptor(monkeypatch):
    """A tool added to the registry (here a second name for ping's parser) is parsed,
    summarized, judged and read for its destination with nothing else changed."""
    monkeypatch.setitem(registry.TOOLS, "ping6",
                        replace(registry.TOOLS["ping"], name="ping6"))
    text = (FIXTURES / "ping" / "ipv6_names.txt").read_text()
    parsed = replace(parse("ping6", text), tool="ping6")
    assert isinstance(summarize(parsed), RttSummary)
    assert named_destinations(parsed) == ["fd77:2::1"]
