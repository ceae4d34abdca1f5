"""Labs with every link rate scaled for a slow machine (labtools.model.scaling)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtools.errors import TopologyError
from labtools.model import expect, scaling
from labtools.model.catalog import load_topology


def test_rate_scale_scales_rates_only_and_the_expected_values_follow():
    full = load_topology("portfolio")
    half = load_topology("portfolio,rate_scale=0.5")
    for a, b in zip(full.links, half.links):
        assert (a.delay_ms, a.queue_pkts, a.loss_pct) == (b.delay_ms, b.queue_pkts, b.loss_pct)
        assert b.bw_mbps == (None if a.bw_mbps is None else pytest.approx(a.bw_mbps / 2))
    assert scaling.rate_scale(half) == 0.5 and scaling.rate_scale(full) == 1.0
    e_full, e_half = expect.expect_pair(full, "h1", "h4"), expect.expect_pair(half, "h1", "h4")
    assert e_half.bottleneck_mbps == pytest.approx(e_full.bottleneck_mbps / 2)
    assert e_half.rtt_ms == e_full.rtt_ms  # delays unchanged
    assert e_half.tcp_goodput_ceiling_mbps == pytest.approx(e_full.tcp_goodput_ceiling_mbps / 2)
    assert "scaled by 0.5" in scaling.rate_note(half) and scaling.rate_note(full) == ""


def test_a_variant_can_be_scaled_too():
    topo = load_topology("portfolio,variant=s1,rate_scale=0.25")
    assert topo.params["variant"] == "s1" and topo.params["rate_scale"] == 0.25


@pytest.mark.parametrize("bad", ["0", "1.5", "fast", "-1"])
def test_bad_factors_are_refused_with_one_line(bad):
    with pytest.raises(TopologyError, match="rate_scale"):
        load_topology(f"portfolio,rate_scale={bad}")


def test_the_suggested_scale_keeps_the_peak_load_within_the_headroom():
    topo = load_topology("portfolio")
    load = scaling.peak_load_mbps(topo)
    assert load == sum(lk.bw_mbps for lk in topo.links if lk.bw_mbps)
    assert scaling.suggested_rate_scale(topo, None, 0.9) == 1.0
    assert scaling.suggested_rate_scale(topo, load * 2, 0.9) == 1.0
    factor = scaling.suggested_rate_scale(topo, load / 3, 0.9)
    assert factor * load <= 0.9 * load / 3 + 1e-9
    assert (factor + scaling.SCALE_STEP) * load > 0.9 * load / 3
    assert scaling.suggested_rate_scale(topo, 0.01, 0.9) == scaling.MIN_SCALE


def test_labtools_expect_says_the_rates_are_scaled():
    from tests.conftest import run_cli

    text = run_cli(["expect", "portfolio,rate_scale=0.5", "h1", "h4"]).stdout
    assert text.startswith("note: link rates scaled by 0.5 for this machine")
    data = json.loads(run_cli(["expect", "portfolio,rate_scale=0.5", "h1", "h4", "--json"]).stdout)
    full = json.loads(run_cli(["expect", "portfolio", "h1", "h4", "--json"]).stdout)
    assert data["rate_scale"] == 0.5 and full["rate_scale"] == 1.0
    assert data["bottleneck_mbps"] == pytest.approx(full["bottleneck_mbps"] / 2)
    assert "note:" not in run_cli(["expect", "portfolio", "h1", "h4"]).stdout


def test_notebooks_take_the_scale_from_the_environment(monkeypatch, tmp_path):
    from labtools.judge.machine import MachineProfile
    from labtools.judge.policy import CAPACITY_HEADROOM
    from labtools.lab import calibration
    from labtools.teach import notebook

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.delenv("LABTOOLS_VARIANT", raising=False)
    monkeypatch.setenv("LABTOOLS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LABTOOLS_RATE_SCALE", "0.5")
    assert notebook.open_lab("path").topo.params["rate_scale"] == 0.5
    load = scaling.peak_load_mbps(load_topology("portfolio"))
    calibration.remember(MachineProfile(0.1, 0.3, round(load / (4 * CAPACITY_HEADROOM), 4),
                                        "vm-tcg", "2026-11-22T22:00", 6))
    monkeypatch.setenv("LABTOOLS_RATE_SCALE", "auto")
    lab = notebook.open_lab("path")
    assert lab.topo.params["rate_scale"] == 0.25
    assert "scaled by 0.25" in notebook.describe(lab)
    monkeypatch.setenv("LABTOOLS_RATE_SCALE", "2")
    with pytest.raises(TopologyError, match="outside"):
        notebook.open_lab("path")


def test_a_scale_of_hundreds_of_digits_is_refused_in_one_line():
    """Found by the topology property test: an integer too large for a float."""
    with pytest.raises(TopologyError, match="too large"):
        load_topology("portfolio,rate_scale=" + "9" * 400)


@pytest.mark.parametrize("factor, words", [
    (True, "rate_scale=True must be a number within 0.05..1, not true/false"),
    ("0.5", "rate_scale='0.5' must be a number within 0.05..1, not text"),
    (None, "rate_scale=None must be a number within 0.05..1, not none"),
    (float("nan"), "rate_scale=nan is outside 0.05..1"),
    (float("inf"), "rate_scale=inf is outside 0.05..1"),
    (1.0000001, "rate_scale=1.0000001 is outside 0.05..1"),
    (10**400, "the number is too large"),
])
def test_a_factor_is_a_finite_number_within_the_range(factor, words):
    with pytest.raises(TopologyError) as err:
        scaling.check_scale(factor, "here")
    assert str(err.value).startswith("here: ") and words in str(err.value)
    assert len(str(err.value).splitlines()) == 1
    assert scaling.check_scale(1) == 1.0 and scaling.check_scale(scaling.MIN_SCALE) == 0.05


def _scaled_file(tmp_path, factor) -> str:
    from labtools.model.catalog import to_dict

    path = tmp_path / "scaled.json"
    path.write_text(json.dumps(to_dict(load_topology(f"portfolio,rate_scale={factor}"))))
    return str(path)


def test_a_file_scaled_already_is_not_scaled_twice(tmp_path):
    path = _scaled_file(tmp_path, 0.5)
    half = load_topology(path)
    assert scaling.rate_scale(half) == 0.5 and "scaled by 0.5" in scaling.rate_note(half)
    # the same factor (as a results file records it) leaves the file as it is
    same = load_topology(f"{path},rate_scale=0.5")
    assert [lk.bw_mbps for lk in same.links] == [lk.bw_mbps for lk in half.links]
    assert "scaled by 0.5 " in scaling.rate_note(same)
    for other in ("0.25", "1"):
        with pytest.raises(TopologyError) as err:
            load_topology(f"{path},rate_scale={other}")
        assert str(err.value) == (f"topology portfolio has its rates scaled by 0.5 already (its "
                                  f"params rate_scale): rate_scale={other} would scale them "
                                  "again; leave rate_scale out, or change it in the file")


def test_a_file_at_full_rate_is_scaled_as_asked(tmp_path):
    path = _scaled_file(tmp_path, 1)
    assert "rate_scale" not in load_topology(path).params
    data = json.loads(Path(path).read_text())
    data["params"] = {"rate_scale": 1}
    Path(path).write_text(json.dumps(data))
    quarter = load_topology(f"{path},rate_scale=0.25")
    assert scaling.rate_scale(quarter) == 0.25
    full = load_topology("portfolio")
    assert [lk.bw_mbps for lk in quarter.links] == [
        None if lk.bw_mbps is None else pytest.approx(lk.bw_mbps / 4) for lk in full.links]


def test_labtools_expect_refuses_scaling_a_scaled_file_in_one_line(tmp_path):
    from tests.conftest import run_cli

    path = _scaled_file(tmp_path, 0.5)
    result = run_cli(["expect", f"{path},rate_scale=0.25", "h1", "h4"])
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and "rates scaled by 0.5 already" in result.stderr
    text = run_cli(["expect", path, "h1", "h4"]).stdout
    assert text.startswith("note: link rates scaled by 0.5 for this machine")
