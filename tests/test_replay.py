"""Replaying a student's recorded measurements (what graded notebooks do), from a results
file recorded on a real network (tests/fixtures/grading): no root, no network."""

from __future__ import annotations

import json
import shutil

import pytest

from labtools.errors import ReplayError
from labtools.lab import probes
from labtools.lab.capacity import SearchSettings, capacity_search
from labtools.lab.replay import MissingMeasurement, ReplaySession
from labtools.model.fairness import parse_flows
from labtools.results.store import ResultStore
from labtools.teach import notebook
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "grading" / "results" / "labtools.sqlite"


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    """A submitted assignment folder with its results file, as the working directory."""
    (tmp_path / "results").mkdir()
    shutil.copy(RECORDED, tmp_path / "results" / "labtools.sqlite")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.delenv("LABTOOLS_VARIANT", raising=False)
    return tmp_path


def test_under_nbgrader_a_notebook_replays_instead_of_measuring(folder, capsys):
    lab = notebook.open_lab("path")
    assert isinstance(lab, ReplaySession) and not lab.running
    lab.start()
    assert "grading: no network started; replaying" in capsys.readouterr().out
    # the variant the student measured, not the reference topology
    assert lab.topo.params.get("variant") == "student1"
    assert lab.machine is not None and lab.machine.forward_mbps > 0
    # the durations the student measured with (CI records with the quick set)
    recorded = json.loads((FIXTURES / "grading" / "capture.json").read_text())
    assert lab.durations.name == ("quick" if recorded["quick"] else "full")
    with pytest.raises(ReplayError, match="nothing runs on the hosts"):
        lab.run("h1", ["true"], 5)


def test_each_call_gets_the_students_own_measurement_in_order(folder):
    lab = notebook.open_lab("path")
    store = ResultStore("results/labtools.sqlite", create=False)
    recorded = store.runs(case="path", tool="ping")
    first, second = probes.ping(lab, "h1", "h4"), probes.ping(lab, "h1", "h9")
    assert (first.src, first.dst, second.dst) == ("h1", "h4", "h9")
    for m in (first, second):
        saved = store.get(m.run_id)
        assert saved.case == "path" and m.run_id in set(recorded["id"])
        assert [v.as_dict() for v in m.verdicts] == saved.verdicts  # judged again, the same
        assert m.expected.rtt_ms == lab.expected(m.src, m.dst).rtt_ms
    tcp = probes.iperf3(lab, "h1", "h4")
    assert tcp.tool == "iperf3" and tcp.summary.receiver_mbps > 0


def test_groups_are_replayed_whole(folder):
    mux = notebook.open_lab("mux")
    flows = probes.concurrent_iperf3(mux, parse_flows("h1:h4,h2:h5", mux.topo))
    assert [m.dst for m in flows.measurements] == ["h4", "h5"] and flows.verdicts
    udp = notebook.open_lab("udp")
    search = capacity_search(udp, "h1", "h4", SearchSettings(start_mbps=1, factor=2,
                                                             max_mbps=200,
                                                             refine_steps=udp.durations.refine_steps))
    assert search.estimate_mbps and len(search.table) == len(search.steps) > 2


def test_a_call_that_was_not_recorded_fails_only_where_it_is_used(folder):
    lab = notebook.open_lab("path")
    missing = probes.ping(lab, "h2", "h6")  # the student never measured this pair
    assert isinstance(missing, MissingMeasurement)
    with pytest.raises(ReplayError) as err:
        _ = missing.summary
    assert "has no recorded measurement for ping(dst=h6" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(ReplayError):
        notebook.check_network(missing)
    assert probes.ping(lab, "h1", "h4").summary.min_ms > 0  # the rest still replays


def test_without_a_results_file_every_measurement_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    lab = notebook.open_lab("intro")
    lab.start()
    assert "no results store at results/labtools.sqlite" in capsys.readouterr().out
    assert lab.topo.name == "portfolio" and "variant" not in lab.topo.params
    with pytest.raises(ReplayError, match="no results store"):
        _ = probes.ping(lab, "h1", "h4").table


def test_answers_show_only_in_self_study(folder, monkeypatch):
    lab = notebook.open_lab("intro")
    wrong = {"rtt_ms h1 h4": 1.0}
    assert "expected" not in notebook.grade_answers(lab, wrong).columns
    monkeypatch.setenv("LABTOOLS_SHOW_ANSWERS", "1")
    shown = notebook.grade_answers(lab, wrong)
    assert shown["expected"].iloc[0] == lab.expected("h1", "h4").rtt_ms


def test_the_variant_comes_from_the_environment_or_the_file_beside_the_notebook(tmp_path,
                                                                               monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.delenv("LABTOOLS_VARIANT", raising=False)
    assert notebook.open_lab("intro").topo.params == {}
    (tmp_path / "labtools-variant.txt").write_text("s42\n")
    from_file = notebook.open_lab("intro").topo
    monkeypatch.setenv("LABTOOLS_VARIANT", "s43")
    from_env = notebook.open_lab("intro").topo
    assert (from_file.params["variant"], from_env.params["variant"]) == ("s42", "s43")
    rates = [[lk.bw_mbps for lk in t.links if lk.name] for t in (from_file, from_env)]
    assert rates[0] != rates[1]
