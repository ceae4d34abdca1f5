"""Property tests of the iperf3 and iperf 2 parsers (Hypothesis).

Whatever the input - random text, or a real capture of tests/fixtures/iperf3 and
tests/fixtures/iperf2 cut short, with a JSON field given another type or value, or with a
number replaced by a negative, NaN, infinite or huge one - a parser returns a Parsed or
raises a LabtoolsError (ParseError, or ToolError for iperf3's own error), never another
exception. And what it returns never holds a negative, NaN or infinite rate, time, size or
jitter: each is a finite number >= 0, or missing where the parser's docstring says it may
be (None in the summary, NaN in the columns listed below). Loss counts may be negative:
iperf3 prints reordered datagrams as negative loss.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from labtools.errors import LabtoolsError
from labtools.tools.parsers import iperf2, iperf3, ss
from labtools.tools.parsers.base import Parsed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
IPERF3 = {p.stem: p.read_text() for p in sorted((FIXTURES / "iperf3").glob("*.json"))}
IPERF2 = {p.name: p.read_text() for p in sorted((FIXTURES / "iperf2").glob("*.txt"))}
DOCS: Dict[str, Any] = {}
for _name, _text in IPERF3.items():
    try:
        DOCS[_name] = json.loads(_text)
    except ValueError:  # a capture that is not one JSON document (usage text, twice...)
        pass

#: table columns that may be missing (NaN/None), by parser; the others never are
MAY_BE_MISSING = {
    "iperf3": {"rate_mbps", "retransmits", "packets", "lost", "jitter_ms"},
    "iperf": {"jitter_ms", "lost", "total"},
}
#: numbers that are counts of lost datagrams, or their share (may be negative), in either
#: direction (iperf 2's ``-d``/``-r`` report the server-to-client one as ``reverse_...``)
SIGNED = {"lost", "lost_packets", "lost_pct", "reverse_lost", "reverse_lost_pct"}
NUMERIC_COLUMNS = {"start_s", "end_s", "bytes", "rate_mbps", "retransmits", "packets", "lost",
                   "jitter_ms", "total"}
SUMMARY_NUMBER = re.compile(r"(_mbps|_s|_ms|bytes|packets|_pct|^lost|^total|retransmits"
                            r"|out_of_order|sent_datagrams)$")
INT64_MAX = 2**63 - 1

PROPERTY = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def check_sane(parsed: Parsed) -> None:
    """The invariants every parsed result keeps (see the module docstring)."""
    json.dumps(parsed.summary, allow_nan=False)  # also: no NaN or infinity in the summary
    for key, value in parsed.summary.items():
        if SUMMARY_NUMBER.search(key) and value is not None:
            assert isinstance(value, (int, float)) and not isinstance(value, bool), (key, value)
            assert math.isfinite(value), (key, value)
            assert key in SIGNED or value >= 0, (key, value)
    missing_ok = MAY_BE_MISSING[parsed.tool]
    for row in parsed.rows.records:
        for column in NUMERIC_COLUMNS & set(row):
            value = row[column]
            if value is None or (isinstance(value, float) and math.isnan(value)):
                assert column in missing_ok, (column, row)
                continue
            assert math.isfinite(value), (column, row)
            assert column in SIGNED or value >= 0, (column, row)
        for column in (c for c, t in parsed.rows.dtypes.items() if t == "int64"):
            assert type(row[column]) is int and abs(row[column]) <= INT64_MAX, (column, row)
        assert row["end_s"] >= row["start_s"], row
    parsed.rows.json_rows()  # what the store saves


def outcome(parse: Callable[[str], Parsed], text: str) -> None:
    """Parse ``text``: a sane Parsed, or a LabtoolsError; any other exception fails."""
    try:
        parsed = parse(text)
    except LabtoolsError as err:
        assert "\n" not in str(err), str(err)
        return
    check_sane(parsed)
    if parsed.tool == "iperf3":
        check_iperf3_ranges(parsed)
    else:
        check_iperf2_one_source(parsed)


def check_iperf2_one_source(parsed: Parsed) -> None:
    """One consistent source: the forward direction's bytes (and a server's datagram
    counts) are the sums of its streams' own totals, whatever its [SUM] line says; a
    [SUM] total that is not their sum (beyond iperf's rounding) is a warning."""
    s, rows = parsed.summary, parsed.rows.records
    own = [r for r in rows if r["kind"] == "total" and r["stream"] >= 0
           and r["direction"] == "forward"]
    assert s["bytes"] == (sum(r["bytes"] for r in own) if own else None)
    counts = [r["total"] for r in own]
    if s["role"] == "server" and s["total"] is not None:
        assert s["total"] == sum(int(c) for c in counts)
    printed = [r for r in rows if r["kind"] == "total" and r["stream"] == -1]
    if printed and own and not s["bidirectional"]:
        parts = sum(r["bytes"] for r in own)
        off = abs(printed[-1]["bytes"] - parts) > 0.01 * max(printed[-1]["bytes"], parts) + 1024
        assert off <= any("[SUM]" in w and "bytes" in w for w in parsed.warnings)
    assert set(parsed.warnings) <= set(s["warnings"])


# --- random text ---------------------------------------------------------------------
@PROPERTY
@given(st.text())
def test_random_text(text):
    outcome(iperf3.parse, text)
    outcome(iperf2.parse, text)


@PROPERTY
@given(st.lists(st.sampled_from(["{", "}", "[", "]", '"start"', '"error"', ":", ",", "\n",
                                 "null", "NaN", "-1", "1e400", '"intervals"', '"end"', "{}"]),
                max_size=60))
def test_random_json_like_text(tokens):
    text = "".join(tokens)
    outcome(iperf3.parse, text)
    outcome(iperf3.parse, "{" + text)


# --- real captures, cut short ---------------------------------------------------------
@PROPERTY
@given(st.sampled_from(sorted(IPERF3)), st.floats(0, 1))
def test_iperf3_capture_cut_short(name, fraction):
    text = IPERF3[name]
    outcome(iperf3.parse, text[: int(len(text) * fraction)])


@PROPERTY
@given(st.sampled_from(sorted(IPERF2)), st.floats(0, 1))
def test_iperf2_capture_cut_short(name, fraction):
    text = IPERF2[name]
    outcome(iperf2.parse, text[: int(len(text) * fraction)])


# --- real captures with a field of another type or value --------------------------------
def paths(value: Any, prefix: tuple = ()) -> List[tuple]:
    """Every path into a JSON document (object keys and list positions)."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, prefix + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            found += paths(item, prefix + (i,))
    return found


PATHS = {name: paths(document) for name, document in DOCS.items()}
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.text(max_size=8), st.integers(-10**6, 10**6),
    st.integers(min_value=2**63, max_value=10**40), st.just(-(10**30)),
    st.floats(allow_nan=True, allow_infinity=True), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def replaced(document: Any, path: tuple, value: Any) -> Any:
    copy = json.loads(json.dumps(document))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


@PROPERTY
@given(st.sampled_from(sorted(DOCS)), st.data(), ODD_VALUES)
def test_iperf3_capture_with_a_field_changed(name, data, value):
    path = data.draw(st.sampled_from(PATHS[name]))
    # json.dumps writes NaN and Infinity as NaN/Infinity, as older iperf3 prints nan/inf
    outcome(iperf3.parse, json.dumps(replaced(DOCS[name], path, value), indent="\t"))


NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")
ODD_NUMBERS = st.sampled_from(["-1", "-0.5", "NaN", "nan", "-nan", "inf", "-inf", "Infinity",
                               "1e400", "1" + "0" * 40, "9" * 400, "0", "-0"])


def with_number_replaced(text: str, index: int, new: str) -> str:
    spans = [m.span() for m in NUMBER.finditer(text)]
    if not spans:
        return text
    start, end = spans[index % len(spans)]
    return text[:start] + new + text[end:]


@PROPERTY
@given(st.sampled_from(sorted(IPERF3)), st.integers(0, 10_000), ODD_NUMBERS)
def test_iperf3_capture_with_a_number_replaced(name, index, new):
    outcome(iperf3.parse, with_number_replaced(IPERF3[name], index, new))


@PROPERTY
@given(st.sampled_from(sorted(IPERF2)), st.integers(0, 10_000), ODD_NUMBERS)
# found in fresh-clone run 37: -1 lost datagrams server to client, a negative reverse loss
@example(name="udp_dualtest.txt", index=139, new="-1")
def test_iperf2_capture_with_a_number_replaced(name, index, new):
    outcome(iperf2.parse, with_number_replaced(IPERF2[name], index, new))


@PROPERTY
@given(st.sampled_from(sorted(IPERF2)), st.integers(0, 10_000), st.text(max_size=6))
def test_iperf2_capture_with_a_word_replaced(name, index, new):
    text = IPERF2[name]
    words = [m.span() for m in re.finditer(r"\S+", text)]
    start, end = words[index % len(words)]
    outcome(iperf2.parse, text[:start] + new + text[end:])


def test_every_capture_is_sane():
    """The real captures themselves keep the invariants (or fail with the kit's error)."""
    for text in IPERF3.values():
        outcome(iperf3.parse, text)
    for text in IPERF2.values():
        outcome(iperf2.parse, text)


# --- iperf3's ranges: real documents with numbers mutated -------------------------------
#: how far iperf3's parser lets an interval start before the previous one ended
SLACK_S = iperf3.CLOCK_SLACK_S
RANGES = settings(max_examples=200, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def check_iperf3_ranges(parsed: Parsed) -> None:
    """What iperf3's parser returns is within range: its totals' loss a count and a
    percentage of 0 to 100 (only an interval's loss may be negative), no more datagrams
    lost than counted, and the intervals of each stream in order (an omitted interval
    aside: iperf3 restarts its clock when -O ends)."""
    s = parsed.summary
    if s["lost_pct"] is not None:
        assert 0 <= s["lost_pct"] <= 100, s
    if s["lost_packets"] is not None:
        assert 0 <= s["lost_packets"] and (s["packets"] is None
                                           or s["lost_packets"] <= s["packets"]), s
    last: Dict[tuple, dict] = {}
    for row in parsed.rows.records:
        lost, packets = row["lost"], row["packets"]
        if None not in (lost, packets) and not (math.isnan(lost) or math.isnan(packets)):
            assert lost <= packets, row
        key = (row["source"], row["stream"], row["direction"])
        before = last.get(key)
        if before is not None and not before["omitted"] and not row["omitted"]:
            assert row["start_s"] >= before["end_s"] - SLACK_S, (before, row)
        last[key] = row


def numeric_paths(value: Any, prefix: tuple = ()) -> List[tuple]:
    """Every path to a number in a JSON document (the first 4 items of each list)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in numeric_paths(v, prefix + (k,))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value[:4]) for p in numeric_paths(v, prefix + (i,))]
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return [prefix] if is_number else []


NUMERIC = {name: found for name, found in
           ((name, numeric_paths(document)) for name, document in DOCS.items()) if found}
#: numbers iperf3 never writes where they go, and some it does (times for reordering)
MUTANT_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**20), 10**20),
    st.floats(0, 10), st.integers(0, 1000), st.sampled_from([0, -1, 100, 100.5, 250]),
)


@RANGES
@given(st.sampled_from(sorted(NUMERIC)), st.data())
def test_iperf3_capture_with_numbers_mutated(name, data):
    document = DOCS[name]
    changes = data.draw(st.lists(st.tuples(st.sampled_from(NUMERIC[name]), MUTANT_NUMBERS),
                                 min_size=1, max_size=4))
    for path, value in changes:
        document = replaced(document, path, value)
    outcome(iperf3.parse, json.dumps(document, indent="\t"))


@RANGES
@given(st.sampled_from(sorted(DOCS)), st.randoms(use_true_random=False))
def test_iperf3_capture_with_intervals_reordered(name, rnd):
    document = json.loads(json.dumps(DOCS[name]))
    intervals = document.get("intervals") or []
    rnd.shuffle(intervals)
    if intervals and rnd.random() < 0.5:  # or one interval repeated later on
        intervals.append(json.loads(json.dumps(rnd.choice(intervals))))
    outcome(iperf3.parse, json.dumps(document, indent="\t"))


# --- ss: real captures with a number replaced --------------------------------------------
SS = [p.read_text() for p in sorted((FIXTURES / "ss").glob("*.txt"))]
SS_NUMBER = re.compile(r"(?<=[:( /])-?\d+(?:\.\d+)?(?=[%/ a-z)]|$)", re.MULTILINE)
SS_NUMBERS = st.one_of(ODD_NUMBERS, st.integers(-5, 10**20).map(str),
                       st.floats(-10, 1000, allow_nan=False).map(lambda x: f"{x:.1f}"))


def check_ss(text: str) -> None:
    """Parse ``text`` as ss: a ParseError, or every number within its range."""
    try:
        parsed = ss.parse(text)
    except LabtoolsError as err:
        assert "\n" not in str(err), str(err)
        return
    json.dumps(parsed.summary, allow_nan=False)
    for row in parsed.rows.records:
        for column, value in row.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                assert math.isfinite(value) and value >= 0, (column, row)
        shares = [row[c] or 0 for c in ("rwnd_limited_pct", "sndbuf_limited_pct")]
        assert all(0 <= x <= 100 for x in shares) and sum(shares) <= 100.1, row
        for column in ("cwnd", "mss_bytes", "unacked", "rtt_ms", "min_rtt_ms"):
            assert row[column] is None or row[column] > 0, (column, row)
    parsed.rows.json_rows()


@RANGES
@given(st.sampled_from(range(len(SS))), st.integers(0, 10_000), SS_NUMBERS)
def test_ss_capture_with_a_number_replaced(which, index, new):
    text = SS[which]
    spans = [m.span() for m in SS_NUMBER.finditer(text)]
    start, end = spans[index % len(spans)]
    check_ss(text[:start] + new + text[end:])


# --- one consistent source: iperf3's end totals against its streams' final reports ---------
def _streams_sum(doc: Dict[str, Any], part: str, key: str) -> int:
    return sum(stream[part][key] for stream in doc["end"]["streams"])


WHOLE = sorted(n for n, d in DOCS.items() if d.get("end", {}).get("streams")
               and not d.get("error") and "sum_sent" in d["end"])


@PROPERTY
@given(st.sampled_from(WHOLE), st.sampled_from(["sum", "sum_sent", "sum_received"]),
       st.data())
def test_iperf3_totals_are_the_sums_of_the_streams_reports(name, total, data):
    # a real capture whose end.<total> says other bytes or another loss: its streams'
    # reports are whole, so it is read, from them, with a warning where the total is wrong
    doc = json.loads(json.dumps(DOCS[name]))
    udp = doc["start"]["test_start"]["protocol"] == "UDP"
    if total not in doc["end"] or doc["end"].get("sum_sent_bidir_reverse"):
        return
    field = data.draw(st.sampled_from(["bytes", "lost_packets", "lost_percent"] if udp
                                      else ["bytes"]))
    value = data.draw(st.integers(0, 10**12) if field == "bytes" else
                      st.integers(-10**6, 10**7) if field == "lost_packets" else
                      st.floats(-500, 500))
    was = doc["end"][total].get(field)
    doc["end"][total][field] = value
    parsed = iperf3.parse(json.dumps(doc))
    s = parsed.summary
    part = "udp" if udp else "sender"
    assert s["sender_bytes"] == _streams_sum(doc, part, "bytes")
    if not udp:
        assert s["receiver_bytes"] == _streams_sum(doc, "receiver", "bytes")
    else:
        lost = _streams_sum(doc, "udp", "lost_packets")
        assert s["lost_packets"] == lost
        packets = _streams_sum(doc, "udp", "packets")
        if s["lost_pct"] is not None and value != was:
            assert s["lost_pct"] == pytest.approx(100 * lost / packets) or \
                s["lost_pct"] == doc["end"]["sum_received"]["lost_percent"]
    out_of_range = field != "bytes" and (value < 0 or (field == "lost_percent" and value > 100))
    if out_of_range or (value != was and field in ("bytes", "lost_packets")
                        and not (udp and total == "sum_received" and field == "bytes")
                        and not (udp and total == "sum_sent" and field == "lost_packets")):
        assert any(f"end.{total}" in w for w in parsed.warnings)
    assert list(parsed.warnings) == s["warnings"]
    check_sane(parsed)
