"""Rows: a parser's rows and their column types, judged and saved without pandas; the
DataFrame made from them matches what the store gives back."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from labtools.errors import InputError
from labtools.results.columns import rebuild_table
from labtools.tools.parsers import parse
from labtools.tools.rows import TIME_DTYPE, Rows

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_a_column_needs_a_known_dtype():
    with pytest.raises(InputError, match="rate: float32"):
        Rows(("rate",), {"rate": "float32"})
    with pytest.raises(InputError, match="no column 'rtt'"):
        Rows.of(["rtt_ms"], {"rtt_ms": "float64"}).column("rtt")


def test_ping_times_are_the_microseconds_ping_printed():
    """ping -D prints Unix seconds to the microsecond; the table shows that time exactly."""
    text = (FIXTURES / "ping" / "timestamps.txt").read_text()
    rows = parse("ping", text).rows
    first = text.split("[", 1)[1].split("]", 1)[0]  # e.g. 1795275082.645398
    table = rows.frame()
    assert str(table["received_at"].dtype) == TIME_DTYPE
    assert table["received_at"].iloc[0].value == int(first.replace(".", "")) * 1000
    saved = json.loads(rows.json_rows()[0])[rows.columns.index("received_at")]
    assert pd.Timestamp(saved).value == table["received_at"].iloc[0].value


@pytest.mark.parametrize("tool, name", [("ping", "partial_loss.txt"), ("iperf3", "tcp_bidir.json"),
                                        ("iperf", "udp_overload.txt"),
                                        ("simpleperf", "client_t2_i0.5_P2.jsonl")])
def test_what_the_store_keeps_rebuilds_the_same_table(tool, name):
    folder = {"iperf": "iperf2"}.get(tool, tool)
    rows = parse(tool, (FIXTURES / folder / name).read_text()).rows
    back = rebuild_table(rows.schema(), [json.loads(r) for r in rows.json_rows()])
    pd.testing.assert_frame_equal(back, rows.frame())


def test_missing_numbers_are_null_in_json_and_left_out_of_numbers():
    rows = Rows.of(["lost", "ok"], {"lost": "float64", "ok": "bool"},
                   [{"lost": float("nan"), "ok": None}, {"lost": 2}])
    assert [json.loads(r) for r in rows.json_rows()] == [[None, False], [2.0, False]]
    assert rows.numbers("lost") == [2.0]
    assert rows.frame()["lost"].isna().tolist() == [True, False]
