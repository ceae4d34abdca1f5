"""Property tests of the simpleperf parser (Hypothesis): whatever the input, the parser
returns a result or raises one of the kit's typed errors, and a result never holds a
negative, NaN or infinite rate, time or count.

The inputs grow from the real captures in tests/fixtures/simpleperf: their records with
fields replaced by any JSON value (NaN, infinities, huge numbers, text, lists...), records
of every known type with random fields, shuffled and cut lines, and plain random text.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labtools.errors import LabtoolsError
from labtools.tools.parsers.simpleperf import SCHEMA, parse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "simpleperf"
REAL: List[Dict[str, Any]] = [
    json.loads(line) for path in sorted(FIXTURES.glob("*.jsonl"))
    for line in path.read_text().splitlines() if line.startswith("{")
]
KNOWN_KEYS = sorted({key for record in REAL for key in record} |
                    {key for keys in SCHEMA.values() for key in keys})

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2 ** 70, max_value=2 ** 70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=3),
    max_leaves=6)


@st.composite
def edited_record(draw: st.DrawFn) -> Dict[str, Any]:
    """A real record with some of its fields replaced, dropped or added."""
    record = dict(draw(st.sampled_from(REAL)))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        key = draw(st.sampled_from(KNOWN_KEYS + ["type"]))
        if draw(st.booleans()):
            record[key] = draw(json_values)
        else:
            record.pop(key, None)
    return record


@st.composite
def made_up_record(draw: st.DrawFn) -> Dict[str, Any]:
    """A record of a known type whose fields are all drawn at random."""
    kind = draw(st.sampled_from(sorted(SCHEMA)))
    record: Dict[str, Any] = {"type": kind}
    for key in SCHEMA[kind]:
        if draw(st.integers(min_value=0, max_value=9)):
            record[key] = draw(json_values)
    return record


def lines_of(records: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(records, min_size=1, max_size=8).map(
        lambda recs: "\n".join(json.dumps(r) for r in recs))


def check(text: str) -> None:
    """The property: a Parsed without impossible numbers, or a typed error."""
    try:
        parsed = parse(text)
    except LabtoolsError:
        return
    values = list(parsed.summary.items())
    for row in parsed.rows.records:
        values += list(row.items())
        assert row["end_s"] >= row["start_s"]
    for key, value in values:
        if isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        assert isinstance(value, (int, float)), (key, value)
        assert math.isfinite(value) and value >= 0, (key, value)
    json.dumps(parsed.summary, allow_nan=False)
    len(parsed.rows.json_rows())  # the store's form of the rows can be made


@SETTINGS
@given(lines_of(edited_record()))
def test_real_records_with_any_field_replaced(text: str) -> None:
    check(text)


@SETTINGS
@given(lines_of(made_up_record()))
def test_records_of_every_type_with_random_fields(text: str) -> None:
    check(text)


@SETTINGS
@given(st.lists(st.sampled_from([json.dumps(r) for r in REAL]), max_size=12),
       st.integers(min_value=0, max_value=4000))
def test_real_lines_in_any_order_cut_anywhere(lines: List[str], cut: int) -> None:
    check("\n".join(lines)[:cut])


@SETTINGS
@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    check(text)
    check("{" + text)
