"""Replaying a student's recorded measurements (what graded notebooks do), from a results
file recorded on a real network (tests/fixtures/grading): no root, no network."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace

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
#: a class recorded with an earlier kit (lab 1 ran the kit's capacity search)
EARLIER = FIXTURES / "grading" / "earlier" / "results" / "labtools.sqlite"


@pytest.fixture()
def folder(graded_folder):
    """A submitted assignment folder with its results file, as the working directory."""
    return graded_folder


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
        # judged again, the same (a reason's words are the judging kit's, not the file's)
        assert [replace(v, reason="") for v in m.verdicts] == \
            [replace(v, reason="") for v in saved.verdicts]
        assert m.expected.rtt_ms == lab.expected(m.src, m.dst).rtt_ms
    tcp = probes.iperf3(lab, "h1", "h4", repeat=lab.durations.repeat)  # as lab 3 measures
    assert len(tcp.runs) == lab.durations.repeat > 1
    assert tcp.tool == "iperf3" and tcp.summary.receiver_mbps > 0
    with pytest.raises(ReplayError, match="no recorded measurement for iperf3"):
        _ = probes.iperf3(lab, "h1", "h4").summary  # asked once: not what was recorded


def test_groups_are_replayed_whole(folder):
    mux = notebook.open_lab("mux")
    flows = probes.concurrent_iperf3(mux, parse_flows("h1:h4,h2:h5", mux.topo),
                                     repeat=mux.durations.repeat)  # as lab 4 measures
    assert len(flows.runs) == mux.durations.repeat > 1 and flows.verdicts
    for run in flows.runs:
        assert [m.dst for m in run.measurements] == ["h4", "h5"] and run.verdicts


def test_an_earlier_classs_capacity_search_is_replayed_whole(folder):
    """Lab 1 now has the student write the search loop; a class graded with the kit's
    search before (the earlier fixture) still replays it as one group."""
    shutil.copy(EARLIER, folder / "results" / "labtools.sqlite")
    udp = notebook.open_lab("udp")
    # its notebook called it with quick mode's refine steps (its records name no durations)
    settings = SearchSettings(start_mbps=1, factor=2, max_mbps=200, refine_steps=2)
    search = capacity_search(udp, "h1", "h4", settings)
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


def test_a_wrong_answers_number_shows_only_once_measured_or_in_self_study(folder, monkeypatch):
    lab = notebook.open_lab("intro")  # the recording pinged h1-h4, measured no rate
    table = notebook.grade_answers(lab, {"bottleneck_mbps h1 h4": 1.0, "rtt_ms h1 h4": 1.0})
    assert math.isnan(table["expected"].iloc[0])
    assert table["expected"].iloc[1] == lab.expected("h1", "h4").rtt_ms
    wrong = {"rtt_ms h1 h4": 1.0}
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


# --- the lab is bound to the student whose folder nbgrader autogrades ------------------------
RECORDED_VARIANT = json.loads((FIXTURES / "grading" / "capture.json").read_text())["variant"]


def _autograded(tmp_path, monkeypatch, student: str, results=RECORDED, variants: str = ""):
    """``COURSE/autograded/STUDENT/labs`` holding ``results``, as the working directory
    (nbgrader's kernel runs there); optionally the course's variant list."""
    folder = tmp_path / "autograded" / student / "labs"
    (folder / "results").mkdir(parents=True)
    shutil.copy(results, folder / "results" / "labtools.sqlite")
    if variants:
        (tmp_path / "labtools-variants.csv").write_text(variants)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.delenv("LABTOOLS_VARIANT", raising=False)
    return folder


def test_the_student_who_measured_replays_their_own_measurements(tmp_path, monkeypatch,
                                                                  capsys):
    _autograded(tmp_path, monkeypatch, RECORDED_VARIANT)
    lab = notebook.open_lab("intro")
    lab.start()
    out = capsys.readouterr().out
    assert f"{RECORDED_VARIANT}'s variant is '{RECORDED_VARIANT}' (their student id)" in out
    assert "replaying" in out and not lab.problem
    assert probes.ping(lab, "h1", "h4").summary.min_ms > 0


def test_another_students_results_file_fails_every_measured_check_with_one_line(
        tmp_path, monkeypatch, capsys):
    _autograded(tmp_path, monkeypatch, "student4")
    lab = notebook.open_lab("path")
    lab.start()
    out = capsys.readouterr().out
    # the network the answers are checked on is the student's own, not the recorded one
    assert lab.topo.params["variant"] == "student4"
    assert f"made on variant '{RECORDED_VARIANT}'" in out and "the measured checks fail" in out
    for call in (lambda: probes.ping(lab, "h1", "h4"), lambda: probes.iperf3(lab, "h1", "h4")):
        with pytest.raises(ReplayError) as err:
            _ = call().summary
        reason = str(err.value)
        assert "\n" not in reason and "student4's variant is 'student4'" in reason
        assert f"variant '{RECORDED_VARIANT}'" in reason and "measure on your own network" in reason


def test_lab_partners_listed_by_the_course_share_one_results_file(tmp_path, monkeypatch,
                                                                  capsys):
    listing = f"student_id,variant\nstudent9,{RECORDED_VARIANT}\n"
    _autograded(tmp_path, monkeypatch, "student9", variants=listing)
    lab = notebook.open_lab("intro")
    lab.start()
    assert f"student9's variant is '{RECORDED_VARIANT}' (labtools-variants.csv" in \
        capsys.readouterr().out
    assert not lab.problem and probes.ping(lab, "h1", "h4").summary.min_ms > 0


def _edited(tmp_path, sql: str, *args) -> object:
    """A copy of the recorded results file with one UPDATE applied (an edited file)."""
    import sqlite3

    path = tmp_path / "edited.sqlite"
    shutil.copy(RECORDED, path)
    con = sqlite3.connect(path)
    con.execute(sql, args)
    con.commit()
    con.close()
    return path


def test_a_results_file_whose_topology_was_edited_is_found(tmp_path, monkeypatch):
    from labtools.model.catalog import load_topology, to_dict

    changed = to_dict(load_topology(f"portfolio,variant={RECORDED_VARIANT}"))
    l2 = next(lk for lk in changed["links"] if lk["name"] == "L2")
    l2["bw_mbps"] += 5  # a rate that makes a slow measurement look right
    edited = _edited(tmp_path, "UPDATE runs SET topology_json = ? WHERE \"case\" = 'path' AND "
                     "tool = 'iperf3'", json.dumps(changed))
    _autograded(tmp_path, monkeypatch, RECORDED_VARIANT, results=edited)
    lab = notebook.open_lab("path")
    with pytest.raises(ReplayError, match="recorded link L2 .* is not the kit's for this variant"):
        _ = probes.ping(lab, "h1", "h4").summary
    assert not notebook.open_lab("intro").problem  # the other notebooks are untouched


def test_runs_recorded_by_another_student_are_found(tmp_path, monkeypatch):
    edited = _edited(tmp_path, "UPDATE runs SET context_json = json_set(context_json, "
                     "'$.student', 'student7') WHERE \"case\" = 'intro'")
    _autograded(tmp_path, monkeypatch, RECORDED_VARIANT, results=edited)
    lab = notebook.open_lab("intro")
    assert "recorded by student7, not by " + RECORDED_VARIANT in lab.problem
    assert not notebook.open_lab("path").problem


def test_outside_nbgraders_folders_the_variant_is_not_checked(folder, monkeypatch, capsys):
    lab = notebook.open_lab("intro")
    lab.start()
    assert lab.binding is None and not lab.problem
    assert "the student is unknown" in capsys.readouterr().out
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")  # a student checking their work
    notebook.open_lab("intro").start()
    assert "unknown" not in capsys.readouterr().out
