"""The ping parser against real outputs of iputils, busybox, macOS and FreeBSD
(tests/fixtures/ping: captured here by scripts/capture_fixtures.sh, or published with their
provenance; see each .meta). Expectations are read from the text with simple patterns of
this file, not with the parser's."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from labtools.errors import ParseError
from labtools.tools.parsers import ping
from labtools.tools.summaries import summarize
from tests.conftest import run_cli

DIR = Path(__file__).resolve().parents[1] / "fixtures" / "ping"
ALL = sorted(p.stem for p in DIR.glob("*.txt"))
#: fixture -> words of the ParseError it must give
REFUSED = {
    "unknown_host": "Temporary failure in name resolution",
    "busybox_unknown_host": "bad address",
    "size_untimed": "no time",
    "windows7": "Windows ping output is not read",
}
PARSED = [name for name in ALL if name not in REFUSED]
REPLY = re.compile(r"bytes from .+?[:,] (?:icmp_)?seq=(\d+) .*time=([\d.]+) ms")
TIMEOUT = re.compile(r"(?:no answer yet for icmp_seq=|Request timeout for icmp_seq )(\d+)$")
ERROR = re.compile(r"^(?:\[[\d.]+\] )?From \S+.*?(?:icmp_seq=(\d+) )?(?:Destination|Time)"
                   r"|^\d+ bytes from .*: Destination")
COUNTS = re.compile(r"^(\d+) packets transmitted, (\d+) (?:packets )?received")


def raw(name: str) -> str:
    return (DIR / f"{name}.txt").read_text()


def meta(name: str) -> dict:
    return dict(line.split(": ", 1) for line in (DIR / f"{name}.meta").read_text().splitlines())


def events(name: str) -> list:
    """(status, seq, rtt) of each per-packet line of the text, in order."""
    out = []
    for line in raw(name).splitlines():
        if m := REPLY.search(line):
            out.append(("reply", int(m[1]), float(m[2])))
        elif m := TIMEOUT.search(line):
            out.append(("timeout", int(m[1]), None))
        elif m := ERROR.search(line):
            out.append(("error", int(m[1]) if m.lastindex and m[1] else None, None))
    return out


def rows(name: str) -> list:
    return list(ping.parse(raw(name)).rows.records)


# --- the fixtures ---------------------------------------------------------------------------
#: what makes the real captures again: the namespaces of capture_fixtures.sh, or (for the
#: lateness watch's ping across a delayed link) a lab in the VM
CAPTURE_SCRIPTS = ("capture_fixtures.sh", "capture_watch.py")


def test_every_fixture_says_where_it_comes_from():
    assert len(ALL) >= 50, ALL
    for name in ALL:
        m = meta(name)
        assert m["tool"] == "ping" and m["form"] in ("iputils", "busybox", "bsd", "windows")
        for key in ("system", "version", "command", "made", "captured"):
            assert m.get(key), (name, key)
        if "published" in m["made"]:
            assert "https://github.com/" in m["made"] and "License" in m["made"], name
        else:
            assert m["made"].startswith("real capture")
            assert any(script in m["captured"] for script in CAPTURE_SCRIPTS), name
            assert m["command"].split()[0] in ("ping", "busybox"), name


def test_the_fixtures_cover_every_form_the_parser_reads():
    forms = {(meta(n)["form"], ping.parse(raw(n)).summary["ip_version"]) for n in PARSED}
    assert {("iputils", 4), ("iputils", 6), ("busybox", 4), ("busybox", 6), ("bsd", 4),
            ("bsd", 6)} <= forms
    commands = " ".join(meta(n)["command"] for n in ALL if meta(n)["form"] == "iputils")
    for option in (" -D ", " -O ", " -p ", " -s ", " -I ", " -q ", " -f ", " -b "):
        assert option in commands, option
    systems = {meta(n)["system"].split(",")[0] for n in ALL}
    assert {"macOS 10.14.6", "FreeBSD 12"} <= systems


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_is_not_read_is_refused_with_its_form_named(name):
    with pytest.raises(ParseError) as err:
        ping.parse(raw(name))
    assert err.value.tool == "ping" and REFUSED[name] in err.value.reason
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", PARSED)
def test_rows_are_the_per_packet_lines_and_nothing_is_left_over(name):
    parsed = ping.parse(raw(name))
    assert list(parsed.table.columns) == ping.COLUMNS
    got = [(r["status"], r["seq"], None if math.isnan(r["rtt_ms"]) else r["rtt_ms"])
           for r in parsed.rows.records]
    assert got == events(name)
    assert parsed.summary["unparsed_lines"] == 0, parsed.summary["unparsed_sample"]
    json.dumps(parsed.summary, allow_nan=False)


@pytest.mark.parametrize("name", PARSED)
def test_received_counts_the_replies_that_are_not_duplicates(name):
    parsed = ping.parse(raw(name))
    s = parsed.summary
    counts = [COUNTS.match(line) for line in raw(name).splitlines() if COUNTS.match(line)]
    assert s["complete"] == bool(counts)
    if not counts:
        assert s["received"] is None and s["transmitted"] is None
        return
    assert (s["transmitted"], s["received"]) == (int(counts[-1][1]), int(counts[-1][2]))
    replies = [r for r in parsed.rows.records if r["status"] == "reply"]
    firsts = [r for r in replies if not r["duplicate"]]
    if s["quiet"]:
        assert not parsed.rows.records and s["received"] > 0
    else:
        assert len(firsts) == s["received"]
        assert len(replies) - len(firsts) == s["duplicates"]


@pytest.mark.parametrize("name", PARSED)
def test_a_duplicate_is_a_sequence_number_answered_before(name):
    seen, expected = set(), []
    for status, seq, _ in events(name):
        if status == "reply":
            expected.append(seq in seen)
            seen.add(seq)
    got = [r["duplicate"] for r in rows(name) if r["status"] == "reply"]
    assert got == expected
    marked = raw(name).count("(DUP!)")
    assert sum(got) >= marked


@pytest.mark.parametrize("name", PARSED)
def test_rtt_statistics_match_the_replies(name):
    parsed = ping.parse(raw(name))
    s = parsed.summary
    rtts = [r["rtt_ms"] for r in parsed.rows.records if r["status"] == "reply"]
    if s["min_ms"] is None:  # no reply, or no statistics
        assert not s["complete"] or s["received"] == 0
        return
    if not rtts:  # ping -q, -f
        assert s["quiet"]
        return
    # ping prints each RTT rounded (3 decimals below 1 ms, 1 decimal from 10 ms, none >100)
    assert s["min_ms"] == pytest.approx(min(rtts), abs=0.5)
    assert s["max_ms"] == pytest.approx(max(rtts), abs=0.5)
    assert s["min_ms"] <= s["avg_ms"] <= s["max_ms"]
    assert (s["mdev_ms"] is None) == (s["form"] == "busybox")
    typed = summarize(parsed)
    assert typed.p50_ms is not None and typed.min_ms == s["min_ms"]


# --- each form ------------------------------------------------------------------------------
@pytest.mark.parametrize("name, destination, address", [
    ("normal", "10.77.2.1", "10.77.2.1"),
    ("names", "srv.lab", "10.77.2.1"),
    ("names_source", "srv.lab", "10.77.2.1"),
    ("interface", "10.77.2.1", "10.77.2.1"),
    ("empty_name", "", "10.77.2.1"),
    ("centos7_empty_name", "", "100.68.105.124"),
    ("ipv6", "fd77:2::1", "fd77:2::1"),
    ("ipv6_names", "srv6.lab", "fd77:2::1"),
    ("ipv6_other_name", "dual.lab", "fd77:2::1"),
    ("ipv6_interface", "fd77:2::1", "fd77:2::1"),
    ("localhost", "localhost", "::1"),
    ("centos7_ipv6_duplicates", "ff02::1%ens33", "ff02::1%ens33"),
    ("fedora32_ipv6_timestamps_pattern", "www.cnn.com", "2a04:4e42:200::323"),
    ("busybox_names", "srv.lab", "10.77.2.1"),
    ("busybox_ipv6_names", "srv6.lab", "fd77:2::1"),
    ("macos_names", "cnn.com", "151.101.1.67"),
    ("macos_ipv6", "::1", "::1"),
    ("macos_ipv6_names_size", "cnn.com", "2a04:4e42:600::323"),
    ("freebsd_ipv6_names_pattern", "localhost", "::1"),
])
def test_destination_and_address_of_every_header_form(name, destination, address):
    s = ping.parse(raw(name)).summary
    assert (s["destination"], s["address"]) == (destination, address)
    assert s["ip_version"] == (6 if ":" in address else 4)


@pytest.mark.parametrize("name, form", [("normal", "iputils"), ("ipv6", "iputils"),
                                        ("busybox_normal", "busybox"),
                                        ("busybox_total_loss", "busybox"),
                                        ("alpine_names", "busybox"), ("macos_names", "bsd"),
                                        ("freebsd_ipv6", "bsd"), ("killed", "iputils")])
def test_the_form_is_named(name, form):
    assert ping.parse(raw(name)).summary["form"] == form


def test_the_kits_own_probe_is_read_exactly():
    """ping -D -n as tools/args.py builds it: every printed number, to the microsecond."""
    text = raw("kit_probe")
    assert meta("kit_probe")["command"].startswith("ping -D -n -c 20 -i 0.05 -s 56 ")
    printed = re.findall(r"^\[(\d+)\.(\d{6})\] 64 bytes from 10\.77\.2\.1: icmp_seq=(\d+) "
                         r"ttl=(\d+) time=([\d.]+) ms$", text, re.MULTILINE)
    parsed = ping.parse(text)
    table = parsed.table
    assert len(printed) == len(table) == 20
    assert [t.value for t in table["received_at"]] == [int(s + us) * 1000 for s, us, *_ in printed]
    assert list(table["seq"]) == [int(p[2]) for p in printed]
    assert list(table["ttl"]) == [int(p[3]) for p in printed]
    assert list(table["rtt_ms"]) == [float(p[4]) for p in printed]
    assert set(table["status"]) == {"reply"} and not table["duplicate"].any()
    stats = re.search(r"(\d+) packets transmitted, (\d+) received, 0% packet loss, time (\d+)ms\n"
                      r"rtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", text)
    s = parsed.summary
    assert (s["transmitted"], s["received"], s["time_ms"]) == (
        int(stats[1]), int(stats[2]), float(stats[3]))
    assert (s["min_ms"], s["avg_ms"], s["max_ms"], s["mdev_ms"]) == tuple(
        float(stats[i]) for i in range(4, 8))
    assert s["loss_pct"] == 0.0 and s["errors"] == 0 and s["duplicates"] == 0


def test_busybox_reads_seq_and_a_three_number_summary():
    parsed = ping.parse(raw("busybox_normal"))
    s = parsed.summary
    assert list(parsed.table["seq"]) == [0, 1, 2, 3, 4]
    m = re.search(r"round-trip min/avg/max = ([\d.]+)/([\d.]+)/([\d.]+) ms", raw("busybox_normal"))
    assert (s["min_ms"], s["avg_ms"], s["max_ms"]) == tuple(float(x) for x in m.groups())
    assert s["mdev_ms"] is None and s["time_ms"] is None and s["loss_pct"] == 0.0


@pytest.mark.parametrize("name", ["outstanding", "outstanding_names",
                                  "ubuntu1804_ipv6_outstanding", "macos_unreachable"])
def test_timeouts_are_rows_without_a_time(name):
    parsed = ping.parse(raw(name))
    lost = [int(m[1]) for line in raw(name).splitlines() if (m := TIMEOUT.search(line))]
    timeouts = [r for r in parsed.rows.records if r["status"] == "timeout"]
    assert [r["seq"] for r in timeouts] == lost and lost
    assert all(math.isnan(r["rtt_ms"]) and r["ttl"] is None for r in timeouts)
    assert parsed.summary["timeouts"] == len(lost)
    answered = {r["seq"] for r in parsed.rows.records if r["status"] == "reply"}
    assert not answered & set(lost)
    if "-D" in meta(name)["command"]:
        assert all(not math.isnan(r["received_at"]) for r in timeouts)


def test_percentiles_and_the_worst_rtt_leave_out_duplicates_and_timeouts():
    """iputils does not mark the duplicates of a broadcast ping: the replies of the other
    hosts, slower than the first, must not make the tail."""
    parsed = ping.parse(raw("duplicates"))
    assert "(DUP!)" not in raw("duplicates")
    firsts, seen = [], set()
    for _status, seq, rtt in events("duplicates"):
        if seq not in seen:
            firsts.append(rtt)
        seen.add(seq)
    typed = summarize(parsed)
    assert typed.samples == len(firsts) and typed.p50_ms == sorted(firsts)[1]
    assert max(firsts) < parsed.summary["max_ms"]  # the slowest was a duplicate
    assert typed.max_after_first_ms == max(firsts[1:])
    outstanding = summarize(ping.parse(raw("outstanding")))
    replies = [rtt for status, _, rtt in events("outstanding") if status == "reply"]
    assert outstanding.max_after_first_ms == max(replies[1:])
    assert outstanding.p50_ms in replies


@pytest.mark.parametrize("name, count_printed", [
    ("unreachable", True), ("ttl_exceeded", True), ("ipv6_unreachable", True),
    ("outstanding_unreachable", True), ("macos_unreachable", False)])
def test_error_lines_of_every_form_are_counted_and_listed(name, count_printed):
    parsed = ping.parse(raw(name))
    errors = [e for e in events(name) if e[0] == "error"]
    rows_ = [r for r in parsed.rows.records if r["status"] == "error"]
    assert len(rows_) == len(errors) > 0
    assert [r["seq"] for r in rows_] == [seq for _, seq, _ in errors]
    printed = re.search(r"\+(\d+) errors", raw(name))
    assert bool(printed) == count_printed
    assert parsed.summary["errors"] == (int(printed[1]) if printed else len(errors))
    listed = parsed.summary["error_messages"]
    assert listed and all(msg in raw(name) for msg in listed)
    assert all(r["message"] in listed for r in rows_)


@pytest.mark.parametrize("name", ["quiet", "flood", "busybox_quiet"])
def test_no_per_packet_lines_is_quiet_with_pings_own_statistics(name):
    parsed = ping.parse(raw(name))
    s = parsed.summary
    assert s["quiet"] and s["complete"] and parsed.table.empty and s["received"] > 0
    assert s["min_ms"] is not None
    assert summarize(parsed).p50_ms is None


@pytest.mark.parametrize("name", ["killed", "busybox_killed"])
def test_a_killed_ping_keeps_its_rows_and_says_incomplete(name):
    parsed = ping.parse(raw(name))
    s = parsed.summary
    assert "statistics" not in raw(name) and not s["complete"]
    assert len(parsed.table) == len(events(name)) > 0
    for key in ("transmitted", "received", "loss_pct", "min_ms", "avg_ms", "max_ms"):
        assert s[key] is None, key
    assert summarize(parsed).p50_ms is not None  # rows, so percentiles


def test_notes_keep_pings_own_messages():
    assert ping.parse(raw("duplicates")).summary["notes"] == ["WARNING: pinging broadcast address"]
    assert any("sock4.fd" in n for n in ping.parse(raw("verbose")).summary["notes"])


# --- nothing dropped in silence (inputs derived in the test from real captures) --------------
OTHER_TOOL_LINE = (DIR.parent / "iperf2" / "tcp.txt").read_text().splitlines()[2]


def test_a_line_not_understood_is_counted_and_kept():
    lines = raw("normal").splitlines()
    lines.insert(3, OTHER_TOOL_LINE)
    s = ping.parse("\n".join(lines) + "\n").summary
    assert s["unparsed_lines"] == 1 and s["unparsed_sample"] == [OTHER_TOOL_LINE.strip()]
    many = lines[:3] + [OTHER_TOOL_LINE] * 9 + lines[3:]
    s = ping.parse("\n".join(many) + "\n").summary
    assert s["unparsed_lines"] == 10 and len(s["unparsed_sample"]) == ping.UNPARSED_KEPT


def test_a_reply_the_statistics_count_but_the_parser_cannot_read_is_refused():
    lines = raw("normal").splitlines()
    lines[4] = lines[4].replace("time=", "time~")  # a reply line made unreadable
    with pytest.raises(ParseError, match=r"count 10 replies but the output has 9.*time~"):
        ping.parse("\n".join(lines) + "\n")
    del lines[4]  # cut
    with pytest.raises(ParseError, match="count 10 replies but the output has 9"):
        ping.parse("\n".join(lines) + "\n")


def test_a_header_and_nothing_else_understood_is_refused():
    """As a translated ping would look: its header read, every other line not."""
    lines = raw("normal").splitlines()[:1] + [OTHER_TOOL_LINE] * 3
    with pytest.raises(ParseError, match="nothing read but the header: 3 lines"):
        ping.parse("\n".join(lines) + "\n")


def test_two_runs_in_one_text_are_refused():
    with pytest.raises(ParseError, match="2 ping runs"):
        ping.parse(raw("normal") + raw("names"))


@pytest.mark.parametrize("text", ["", "   \n", (DIR.parent / "iperf3" / "no_server.json")])
def test_empty_or_other_tools_output_raises(text):
    if isinstance(text, Path):
        text = text.read_text()
    with pytest.raises(ParseError) as err:
        ping.parse(text)
    assert err.value.tool == "ping" and err.value.reason
    assert "\n" not in str(err.value)


def test_header_only_is_incomplete_with_no_rows():
    first_line = raw("normal").splitlines()[0]  # what a ping killed at once leaves
    parsed = ping.parse(first_line + "\n")
    assert parsed.table.empty and not parsed.summary["complete"]
    assert parsed.summary["received"] is None
    assert parsed.summary["destination"] == "10.77.2.1"


def test_the_columns_keep_their_types_with_timeouts_and_errors():
    table = ping.parse(raw("outstanding_unreachable")).table
    assert {c: str(t) for c, t in table.dtypes.items()} == {
        "seq": "Int64", "ttl": "Int64", "rtt_ms": "float64", "bytes": "Int64",
        "received_at": "datetime64[ns, UTC]", "duplicate": "bool", "status": "object",
        "message": "object"}
    assert table["ttl"].isna().all() and table["rtt_ms"].isna().all()


# --- labtools parse ping -----------------------------------------------------------------------
def test_parse_ping_json_shows_the_percentiles():
    proc = run_cli(["parse", "ping", str(DIR / "normal.txt"), "--json"])
    assert proc.returncode == 0 and proc.stderr == ""
    summary = json.loads(proc.stdout)["summary"]
    rtts = sorted(rtt for _, _, rtt in events("normal"))
    assert summary["p50_ms"] == rtts[4] and summary["p90_ms"] == rtts[8]
    # ten replies: p99 and p99.9 would be the largest sample, so they are not shown
    assert summary["p99_ms"] is None and summary["p999_ms"] is None
    assert {"max_after_first_ms", "unparsed_lines"} <= set(summary)


def test_parse_ping_warns_when_a_line_was_not_understood():
    lines = raw("names").splitlines()
    lines.insert(2, OTHER_TOOL_LINE)
    proc = run_cli(["parse", "ping", "-"], stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0
    warning = proc.stderr.strip().splitlines()
    assert len(warning) == 1 and "warning: 1 line" in warning[0]
    assert OTHER_TOOL_LINE.strip() in warning[0]
    assert re.search(r"^unparsed_lines\s+1$", proc.stdout, re.MULTILINE)


def test_parse_ping_refuses_a_form_in_one_line():
    proc = run_cli(["parse", "ping", str(DIR / "windows7.txt")])
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Windows ping output is not read" in proc.stderr


def test_a_time_no_clock_shows_is_a_line_not_understood():
    """[9999999999.1] is past what the table's times hold (year 2262): the line is counted
    as not understood (and the statistics then disagree), never an overflow."""
    text = re.sub(r"^\[\d+", "[9999999999", raw("timestamps"), count=1, flags=re.MULTILINE)
    with pytest.raises(ParseError, match="not understood: '\\[9999999999"):
        ping.parse(text)
    killed = "\n".join(raw("timestamps").splitlines()[:3]).replace("[17", "[99", 1)
    parsed = ping.parse(killed)
    assert parsed.summary["unparsed_lines"] == 1 and len(parsed.table) == 1
    parsed.table  # noqa: B018 - the table is made without an overflow


@pytest.mark.parametrize("p, needs", [(0.9, 10), (0.99, 100), (0.999, 1000)])
def test_a_tail_percentile_needs_a_sample_beyond_it(p, needs):
    """p99.9 of 100 pings is their maximum: a percentile is shown only when at least one
    reply lies beyond it."""
    from labtools.tools.summaries import percentile_needs

    assert percentile_needs(p) == needs
