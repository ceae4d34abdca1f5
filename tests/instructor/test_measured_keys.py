"""Answer keys on the network a student measured (labtools/instructor/measured_keys.py): the
rate scale of their submission and their own measured values beside the model's, read from
a class of real results files (tests/fixtures/grading, as tests/instructor/test_class_report.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from labtools.instructor.answer_key_page import key_page_name
from labtools.instructor.answer_keys import keys_for
from labtools.instructor.measured_keys import MeasuredLab, measured_keys
from labtools.judge.question_givens import LAB_CASES
from labtools.model.catalog import load_topology
from labtools.teach.question_values import question_values
from tests.conftest import ROOT, run_cli
from tests.instructor.test_class_report import RECORDED, make_class


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("course")
    make_class(root, {"student1": RECORDED, "student3": None}, listing="")
    return root


def test_every_lab_records_under_the_case_the_keys_read():
    for lab, case in LAB_CASES.items():
        notebook = next((ROOT / "solutions").glob(f"{lab}-*.ipynb")).read_text()
        assert f'open_lab(\\"{case}\\"' in notebook, (lab, case)


def test_the_key_shows_what_the_student_measured_beside_the_model(course, tmp_path):
    proc = run_cli(["answer-key", "student1", "student3", "--json", "--course", str(course)])
    assert proc.returncode == 0, proc.stderr
    one, three = json.loads(proc.stdout)
    assert three["measured"] == []  # no results file: the model's key alone
    labs = {m["lab"]: m for m in one["measured"]}
    assert set(labs) == set(LAB_CASES) and {m["rate_scale"] for m in labs.values()} == {1.0}
    pings = [v for v in labs["02"]["values"] if v["quantity"].endswith("rtt_min")]
    assert pings and all(v["unit"] == "ms" and v["measured"] > 0 and v["expected"] > 0
                         for v in pings)
    # unscaled, the keys are the model's on the student's variant
    assert [q["given"] for q in one["questions"]] == \
        [k.as_dict()["given"] for k in keys_for("student1")]
    text = run_cli(["answer-key", "student1", "--lab", "2", "--course", str(course)]).stdout
    assert "Lab 02: what the student measured (link)" in text and "rtt_min" in text
    run_cli(["answer-key", "student1", "--html", str(tmp_path), "--course", str(course)])
    page = (tmp_path / key_page_name("student1")).read_text()
    assert page.count("What the student measured") == len(LAB_CASES)


@pytest.mark.parametrize("factor", [0.5, 0.25])
def test_a_scaled_lab_gets_its_key_on_the_values_its_notebook_printed(factor):
    measured = {lab: MeasuredLab(lab, case, factor, ()) for lab, case in LAB_CASES.items()}
    keys = {k.question_id: k for k in measured_keys("student1", None, measured)}
    for spec, question in (("portfolio", "02-Q3"), ("portfolio", "01-Q1"),
                           ("dumbbell,pairs=4,bw_mbps=20,delay_ms=20,queue_pkts=100", "06-Q1")):
        lab = SimpleNamespace(topo=load_topology(f"{spec},variant=student1,rate_scale={factor:g}"))
        assert keys[question].given == question_values(lab, question), question
    unscaled = {k.question_id: k for k in keys_for("student1")}
    assert keys["02-Q3"].given["L2_bw_mbps"] == factor * unscaled["02-Q3"].given["L2_bw_mbps"]
    assert keys["02-Q3"].values["bdp_pkts"] == pytest.approx(
        factor * unscaled["02-Q3"].values["bdp_pkts"])
