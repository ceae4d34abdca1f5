"""Whose network a results file was measured on: the student of an nbgrader folder, the
variant bound to them (their id, or the course's list), and what a lab records about who
measured. The results file is the one recorded on a real network (tests/fixtures/grading)."""

from __future__ import annotations

import json

import pytest

from labtools.errors import InputError
from labtools.lab.session import LabSession
from labtools.model.catalog import load_topology
from labtools.model.choice import TopologyChoice
from labtools.model.json_topology import check_variant, variant_of
from labtools.results import ownership
from labtools.results.store import ResultStore
from labtools.teach import notebook
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "grading" / "results" / "labtools.sqlite"
RECORDED_VARIANT = json.loads((FIXTURES / "grading" / "capture.json").read_text())["variant"]
PORTFOLIO = TopologyChoice("portfolio")


def test_the_student_is_read_from_nbgraders_autograded_folder(tmp_path):
    folder = tmp_path / "course" / "autograded" / "s0042" / "lab1"
    folder.mkdir(parents=True)
    assert ownership.graded_student(folder) == ("s0042", (tmp_path / "course").resolve())
    assert ownership.graded_student(tmp_path / "course" / "submitted" / "s0042" / "lab1") is None
    assert ownership.graded_student(tmp_path) is None
    assert ownership.graded_binding(folder) == ownership.Binding("s0042", "s0042")


def test_the_course_list_binds_partners_to_one_variant(tmp_path):
    course = tmp_path / "course"
    (course / "autograded" / "ann" / "lab1").mkdir(parents=True)
    (course / "labtools-variants.csv").write_text(
        "student_id,variant\nann,team3\n bob , team3\n\ncid,s9\n")
    ann = ownership.graded_binding(course / "autograded" / "ann" / "lab1")
    assert ann == ownership.Binding("ann", "team3", "labtools-variants.csv", frozenset({"bob"}))
    assert "shared with bob" in ann.describe()
    assert ownership.bind("dan", ownership.course_variants(course)).variant == "dan"


@pytest.mark.parametrize("text, reason", [
    ("ann\n", "line 1: write student_id,variant"),
    ("ann,team1,extra\n", "line 1: write student_id,variant"),
    ("ann,\n", "line 1: write student_id,variant"),
    ("ann,t1\nann,t2\n", "line 2: ann is listed twice"),
    ("ann,a=b\n", "line 1: variant='a=b' must be 1..64 letters, digits"),
    ('ann,"t,1"\n', "line 1: variant='t,1' must be 1..64 letters, digits"),
    ("ann,team 3\n", "line 1: variant='team 3' must be 1..64 letters, digits"),
    (f"ann,{'t' * 65}\n", "line 1: variant=.* must be 1..64 letters, digits"),
])
def test_a_bad_course_list_is_one_line(tmp_path, text, reason):
    path = tmp_path / "labtools-variants.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=reason) as err:
        ownership.read_variant_list(path)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("student", ["o'neil", "jane doe", "a,b", "x=y", "s" * 70, "ünal ö"])
def test_a_student_id_a_topology_cannot_take_is_bound_to_its_mapped_form(student):
    """Never unbound: grading, the answer keys and the notebook on a hub draw the same
    network from the id (labtools.model.json_topology.variant_of)."""
    binding = ownership.bind(student)
    assert binding.variant == variant_of(student) != student
    assert check_variant(binding.variant, "test") == binding.variant
    assert "in the form a topology takes" in binding.describe()
    topo = ownership.bound_topology(PORTFOLIO, binding, None)
    assert topo is not None and topo.params["variant"] == binding.variant
    assert topo.link("L2") == load_topology(f"portfolio,variant={binding.variant}").link("L2")


def test_mapped_forms_are_stable_and_apart():
    assert variant_of("student1") == "student1" and variant_of(" s42 ") == "s42"
    assert variant_of("o'neil") == "o_neil-eb1aed4f" != variant_of("o_neil") == "o_neil"
    assert len(variant_of("s" * 70)) == 64 and variant_of("s" * 70) != variant_of("s" * 71)
    with pytest.raises(InputError, match="student id '  ': a student id is empty"):
        ownership.bind("  ")


def test_the_notebook_on_a_hub_draws_what_grading_binds(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LABTOOLS_VARIANT", raising=False)
    monkeypatch.setenv("JUPYTERHUB_USER", "o'neil")
    assert notebook.variant() == ownership.bind("o'neil").variant


def test_the_recorded_owners_of_each_notebook():
    store = ResultStore(RECORDED, create=False)
    for case in ("intro", "path", "pitfalls"):
        owners = ownership.recorded_owners(store, case)
        assert [o.variant for o in owners] == [RECORDED_VARIANT], case
    mine = ownership.Binding(RECORDED_VARIANT, RECORDED_VARIANT)
    assert ownership.ownership_problem(mine, ownership.recorded_owners(store, "intro"), "f") == ""
    other = ownership.ownership_problem(ownership.Binding("s2", "s2"),
                                        ownership.recorded_owners(store, "intro"), "f")
    assert other.startswith("f: this notebook's measurements (1 of 1) were made on variant")


def test_a_variant_stays_text_from_the_spec_to_the_network():
    """``007`` is a student id, not the number 7: its own network, not student 7's."""
    from labtools.model.catalog import load_topology, split_spec

    assert split_spec("portfolio,variant=007,pairs=007") == (
        "portfolio", {"variant": "007", "pairs": 7})
    mine, seven = load_topology("portfolio,variant=007"), load_topology("portfolio,variant=7")
    assert mine.params == {"variant": "007"} and seven.params == {"variant": "7"}
    shaped = [[(link.bw_mbps, link.delay_ms) for link in t.links if link.bw_mbps]
              for t in (mine, seven)]
    assert shaped[0] != shaped[1]
    for text in ("1e3", "true", "none", "-4"):
        assert load_topology(f"portfolio,variant={text}").params == {"variant": text}


def test_runs_recorded_when_a_number_like_id_read_as_a_number_stay_the_students():
    """Before variants stayed text, student 007's runs were recorded on variant '7' (the
    network '7' draws): they are still theirs, bound to that network; their new runs are
    on '007'. Another variant is not."""
    from labtools.model.catalog import load_topology

    binding = ownership.Binding("007", "007")
    for recorded in ("7", "007"):
        owners = [ownership.RecordedOwner(recorded, None, 3)]
        assert ownership.ownership_problem(binding, owners, "f") == ""
        topo = load_topology(f"portfolio,variant={recorded}")
        own = ownership.bound_topology(PORTFOLIO, binding, topo)
        assert own is not None and ownership.topology_problem(topo, own, "f") == ""
    other = [ownership.RecordedOwner("8", None, 3)]
    assert "were made on variant '8'" in ownership.ownership_problem(binding, other, "f")
    eight = load_topology("portfolio,variant=8")
    own = ownership.bound_topology(PORTFOLIO, binding, eight)
    assert own is not None and own.params == {"variant": "007"}


def test_a_lab_records_who_measured_with_every_run(tmp_path, monkeypatch):
    """A run judged again from the recorded file, saved by a lab session as a probe saves
    it: its context names the JupyterHub user (nbgrader's student id on a course server)."""
    measurement = ResultStore(RECORDED, create=False).measurement(1)
    for user, expected in (("s0042", "s0042"), ("", None)):
        monkeypatch.setenv("JUPYTERHUB_USER", user)
        lab = LabSession(f"portfolio,variant={RECORDED_VARIANT}",
                         results=tmp_path / f"{user or 'none'}.sqlite", case="intro")
        lab.open_store()
        run_id = lab.save(measurement)
        saved = ResultStore(tmp_path / f"{user or 'none'}.sqlite", create=False)
        assert saved.get(run_id).student == expected
        assert [o.student for o in ownership.recorded_owners(saved, "intro")] == [expected]


def test_on_jupyterhub_the_variant_defaults_to_the_students_id(tmp_path, monkeypatch):
    from labtools.teach import notebook

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LABTOOLS_VARIANT", raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setenv("JUPYTERHUB_USER", "s0042")
    assert notebook.variant() == "s0042"
    monkeypatch.setenv("LABTOOLS_VARIANT", "team3")  # the student's own choice wins
    assert notebook.variant() == "team3"


def test_the_bound_topology_keeps_the_students_rate_scale(tmp_path):
    from labtools.model.catalog import load_topology

    recorded = load_topology("portfolio,variant=x,rate_scale=0.5")
    own = ownership.bound_topology(PORTFOLIO.with_variant("x"), ownership.Binding("s1", "s1"),
                                   recorded)
    assert own is not None and own.params == {"variant": "s1", "rate_scale": 0.5}
    spec = str(tmp_path / "mine.json")
    (tmp_path / "mine.json").write_text(json.dumps(
        ownership.to_dict(load_topology("portfolio"))))
    assert ownership.bound_topology(TopologyChoice(spec), ownership.Binding("s1", "s1"),
                                    None) is None
