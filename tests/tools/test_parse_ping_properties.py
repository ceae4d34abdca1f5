"""Properties of the ping parser (Hypothesis): any text gives a result or a ParseError, never
another exception; any output it accepts has rows that agree with its own summary
(received = the replies that are not duplicates, when ping printed a count) and never a
negative, NaN or infinite RTT in a reply row.

Inputs are built from the real outputs in tests/fixtures/ping: their lines shuffled,
repeated, cut and mixed, numbers replaced by any number, and arbitrary text."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labtools.errors import ParseError
from labtools.tools.parsers import ping
from labtools.tools.summaries import summarize

DIR = Path(__file__).resolve().parents[1] / "fixtures" / "ping"
TEXTS = [p.read_text() for p in sorted(DIR.glob("*.txt"))]
LINES = sorted({line for text in TEXTS for line in text.splitlines()})
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def check(text: str) -> None:
    """Parse ``text``; if accepted, the result must be consistent with itself."""
    try:
        parsed = ping.parse(text)
    except ParseError as err:
        assert err.tool == "ping" and "\n" not in str(err)
        return
    s, records = parsed.summary, parsed.rows.records
    assert all(r["status"] in ping.STATUSES for r in records)
    replies = [r for r in records if r["status"] == "reply"]
    for r in replies:
        assert isinstance(r["rtt_ms"], float) and math.isfinite(r["rtt_ms"]) and r["rtt_ms"] >= 0
        assert isinstance(r["seq"], int) and r["seq"] >= 0
    for r in records:
        if r["status"] != "reply":
            assert math.isnan(r["rtt_ms"]) and not r["duplicate"]
    firsts = [r for r in replies if not r["duplicate"]]
    if s["complete"] and not s["quiet"]:
        assert len(firsts) == s["received"]
    if s["quiet"]:
        assert not records and s["received"] > 0
    for key in ("transmitted", "received", "duplicates", "errors", "timeouts", "loss_pct",
                "time_ms", "min_ms", "avg_ms", "max_ms", "mdev_ms", "unparsed_lines"):
        value = s[key]
        assert value is None or (math.isfinite(value) and value >= 0), (key, value)
    assert len(s["unparsed_sample"]) == min(s["unparsed_lines"], ping.UNPARSED_KEPT)
    check_one_source(parsed)
    json.dumps(s, allow_nan=False)
    typed = summarize(parsed)
    if firsts:
        rtts = {r["rtt_ms"] for r in firsts}
        got = [v for v in (typed.p50_ms, typed.p90_ms, typed.p99_ms, typed.p999_ms)
               if v is not None]
        assert typed.p50_ms is not None and typed.samples == len(firsts)
        assert all(v in rtts for v in got) and got == sorted(got)
    else:
        assert typed.p50_ms is None
    parsed.rows.frame()  # the table a notebook shows
    parsed.rows.json_rows()  # what the store keeps


def check_one_source(parsed) -> None:
    """The loss is the counts' (100 * (transmitted - received) / transmitted), whatever
    ping printed beside it; a printed figure beyond its last digit from it is a warning."""
    s = parsed.summary
    tx, rx = s["transmitted"], s["received"]
    if tx is None:
        assert s["loss_pct"] is None and s["printed_loss_pct"] is None and not parsed.warnings
        return
    if tx == 0 or rx > tx:
        assert s["loss_pct"] is None
    else:
        assert s["loss_pct"] == 100 * (tx - rx) / tx
    printed = re.search(r"(\d[\d.e+-]*)% packet loss", parsed.raw)
    if s["printed_loss_pct"] is not None and s["loss_pct"] is not None and printed:
        step = 10.0 ** -len(printed[1].partition(".")[2]) if "e" not in printed[1] else 0
        off = abs(s["printed_loss_pct"] - s["loss_pct"]) >= step * (1 + 1e-9)
        if "e" not in printed[1]:
            assert off == bool(parsed.warnings), (printed[1], s["loss_pct"], parsed.warnings)
    assert list(parsed.warnings) == s["warnings"]


@SETTINGS
@given(st.integers(1, 10**6), st.data())
def test_the_loss_is_the_counts_whatever_ping_printed(transmitted, data):
    # a real output whose statistics line says other counts and another loss
    received = data.draw(st.integers(0, transmitted + 2))
    value = (data.draw(st.floats(0, 100).map(lambda v: round(v, 4)))
             if data.draw(st.booleans())
             else max(0, 100 * (transmitted - received) // transmitted))  # iputils' figure
    form = data.draw(st.sampled_from(["{:.0f}", "{:.1f}", "{:g}"]))
    printed = str(int(value)) if form == "{:.0f}" and value == int(value) else form.format(value)
    text = (DIR / "fedora_truncated_loss.txt").read_text().replace(
        "1688 packets transmitted, 1553 received, +1 duplicates, 7% packet loss",
        f"{transmitted} packets transmitted, {received} received, +1 duplicates, "
        f"{printed}% packet loss")
    parsed = ping.parse(text)
    check_one_source(parsed)
    assert parsed.summary["printed_loss_pct"] == float(printed)
    assert bool(parsed.warnings) == (received > transmitted or abs(
        float(printed) - 100 * (transmitted - received) / transmitted) >= 10.0 ** -len(
        printed.partition(".")[2]) * (1 + 1e-9))


@SETTINGS
@given(st.text(max_size=400))
def test_any_text(text):
    check(text)


@SETTINGS
@given(st.lists(st.sampled_from(LINES), max_size=40))
def test_lines_of_real_outputs_in_any_order(lines):
    check("\n".join(lines) + "\n")


@SETTINGS
@given(st.sampled_from(TEXTS), st.data())
def test_real_outputs_cut_repeated_or_interleaved(text, data):
    lines = text.splitlines()
    n = len(lines)
    drop = data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=3))
    kept = [line for i, line in enumerate(lines) if i not in drop]
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(kept)))
        kept.insert(at, data.draw(st.sampled_from(LINES) | st.text(max_size=60)))
    joined = "\n".join(kept)
    cut = data.draw(st.integers(0, len(joined)))
    check(joined[:cut] if data.draw(st.booleans()) else joined + "\n")


@SETTINGS
@given(st.sampled_from(TEXTS), st.data())
def test_real_outputs_with_any_numbers(text, data):
    """Every number may become another: huge, zero, with a fraction, negative."""
    number = st.one_of(st.integers(0, 10**40).map(str), st.integers(10**9, 10**10).map(str),
                       st.text("0123456789", min_size=300, max_size=5000),
                       st.floats(allow_nan=True, allow_infinity=True).map(str),
                       st.integers(-10**6, -1).map(str))
    spots = list(re.finditer(r"\d+(?:\.\d+)?", text))
    chosen = data.draw(st.sets(st.integers(0, max(len(spots) - 1, 0)), max_size=4))
    out, last = [], 0
    for i, m in enumerate(spots):
        if i in chosen:
            out += [text[last:m.start()], data.draw(number)]
            last = m.end()
    check("".join(out) + text[last:])
