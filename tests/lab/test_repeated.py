"""Repeated runs of one probe call: each run kept, the set judged on its medians.

The runs are judged real captures (tests/fixtures); the repetition goes through the kit's
own step machinery (:func:`labtools.lab.probes.repeated` on a lab without a network)."""

from __future__ import annotations

import pytest

from labtools.errors import InputError
from labtools.judge.measurement import JudgeContext, ProbeCall, judge_output
from labtools.judge.repeated import RepeatedMeasurement, check_repeat, judge_repeated
from labtools.lab.base import LabBase
from labtools.lab.probes import repeated
from labtools.model.catalog import load_topology
from tests.conftest import FIXTURES

CAPTURE = "dumbbell,bw_mbps=20,delay_ms=0,pairs=2"
#: three real TCP runs over the capture network's 20 Mbit/s hop
RUNS = ["tcp_p1.json", "tcp_server_output.json", "tcp_omit.json"]


def _runs():
    topo = load_topology(CAPTURE)
    return [judge_output("iperf3", (FIXTURES / "iperf3" / name).read_text(), topo, "a1", "b1",
                         JudgeContext(warmup_s=1.0)) for name in RUNS]


def test_the_set_is_judged_on_the_median_run_of_each_number():
    runs = _runs()
    result = judge_repeated(runs)
    rates = [m.verdicts[0].measured for m in runs]
    spread = result.spread["receiver_rate"]
    assert (spread.low, spread.median, spread.high) == (min(rates), sorted(rates)[1], max(rates))
    assert spread.runs == 3
    row = result.verdicts[0]
    median_run = runs[rates.index(sorted(rates)[1])]
    assert row.measured == spread.median and row.verdict == median_run.verdicts[0].verdict
    assert "over 3 runs" in row.reason and median_run.verdicts[0].reason in row.reason
    assert result.median_run is median_run and result.summary is median_run.summary
    assert list(result.table["run"].unique()) == [0, 1, 2]


def test_an_even_number_of_runs_takes_the_lower_middle_run():
    runs = _runs()[:2]
    rates = sorted(m.verdicts[0].measured for m in runs)
    assert judge_repeated(runs).spread["receiver_rate"].median == rates[0]


def test_each_run_is_a_step_of_its_own_with_its_place_in_the_call():
    lab = LabBase(CAPTURE)
    runs, calls = _runs(), []

    def measure(call):
        calls.append(call)
        return runs[len(calls) - 1]

    call = ProbeCall("iperf3", {"src": "a1", "dst": "b1"})
    result = repeated(lab, call, 3, measure)
    assert isinstance(result, RepeatedMeasurement) and lab.step == 3
    assert [c.args["run"] for c in calls] == [0, 1, 2]
    assert all(c.args["repeat"] == 3 for c in calls)
    assert result.call.args == {"src": "a1", "dst": "b1", "repeat": 3}
    one = repeated(LabBase(CAPTURE), call, 1, lambda c: runs[0])
    assert one is runs[0]  # repeat=1: the measurement itself, its call unchanged


@pytest.mark.parametrize("bad", [0, -1, 21, 2.5, True, "3"])
def test_a_repeat_count_is_a_whole_number_of_runs(bad):
    with pytest.raises(InputError, match="repeat must be"):
        check_repeat(bad)
