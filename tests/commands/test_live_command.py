"""``labtools demo`` without a network: what it refuses in one line before anything starts,
and the line it prints for a sample (the rehearsal itself runs on a real network:
test_live_network.py drives the same runtime)."""

from __future__ import annotations

import pytest

from labtools.cli import main
from labtools.commands.demo_cmd import sample_line
from labtools.lab.live_presets import PRESETS


@pytest.mark.parametrize("args, message", [
    (["demo", "nope"], "invalid choice: 'nope'"),
    (["demo", "bdp", "--change", "L2 delay_ms=40"], "write it as '5s L2 delay_ms=40'"),
    (["demo", "bdp", "--change", "5s L2 delay_ms=-3"], "delay_ms=-3"),
    (["demo", "bdp", "--change", "5s h1-s1 delay_ms=3"], "is not shaped"),
    (["demo", "bdp", "--duration-s", "9000"], "--duration-s 9000: at most"),
    (["demo", "bdp", "--duration-s", "0"], "not a time limit"),
])
def test_a_bad_demo_is_refused_in_one_line(capsys, args, message):
    try:
        status = main(args)
    except SystemExit as stop:  # argparse's own refusals exit
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_students_lab_has_no_demo(capsys, monkeypatch):
    import labtools.commands.demo_cmd as demo_cmd
    import labtools.system.vm as vm

    def never(*args, **kwargs):
        raise AssertionError("the demonstration started")
    monkeypatch.setattr(vm, "run_in_vm", never)  # should the refusal be missing
    monkeypatch.setattr(demo_cmd, "_rehearse", never)
    monkeypatch.setenv("LABTOOLS_MODE", "student")
    assert main(["demo", "bufferbloat"]) == 2
    assert "for instructors" in capsys.readouterr().err


def test_the_presets_are_the_commands_choices(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in PRESETS)


def test_a_sample_line_shows_measured_and_expected_and_says_when_nothing_is_new():
    values = {
        "links": {"L2": {"new": True, "backlog_pkts": 57, "sent_mbps": 28.4,
                         "dropped_per_s": 3.0},
                  "L1": {"new": False, "backlog_pkts": 3, "sent_mbps": None,
                         "dropped_per_s": None}},
        "tcp": {"tcp h1>h4": {"new": True, "rate_mbps": 27.9, "cwnd": 120, "rtt_ms": 95.2},
                "tcp h2>h5": {"missing": "no ss sample from the sender yet"}},
        "pings": {"ping h1>h4": [[1.0, 93.0], [1.2, 97.5]]},
        "expected": {"tcp h1>h4": {"rate_mbps": 28.69}, "ping h1>h4": {"rtt_ms": 60.0,
                                                                      "max_rtt_ms": 74.5}}}
    line = sample_line(12.0, values)
    assert line.startswith("  12.0 s")
    assert "L2 queue   57 pkts, sent 28.4 Mbit/s, drops/s 3" in line
    assert "L1 (no new sample)" in line
    assert "tcp h1>h4 27.9 Mbit/s (exp 28.7) cwnd 120 rtt 95.2 ms" in line
    assert "tcp h2>h5: no ss sample from the sender yet" in line
    assert "ping h1>h4 rtt 93.0..97.5 ms (exp 60.0..74.5)" in line
