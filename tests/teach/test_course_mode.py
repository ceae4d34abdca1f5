"""On a course (the student edition, a hub student's server, the student image) the kit
hands out no expected values, whatever LABTOOLS_SHOW_ANSWERS says; self-study with the
full kit keeps them (labtools/settings.py, labtools/teach/modes.py)."""

from __future__ import annotations

import math

import pytest
from conftest import run_cli

from labtools import settings
from labtools.errors import InputError
from labtools.judge import exercises
from labtools.model.catalog import load_topology
from labtools.system.doctor import settings_lines
from labtools.teach import modes

COURSE_VARIABLES = ("LABTOOLS_MODE", "LABTOOLS_SHOW_ANSWERS", "LABTOOLS_ON_COURSE",
                    "JUPYTERHUB_USER")


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for name in COURSE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(modes, "_noted", [])


@pytest.mark.parametrize("environ, edition, course", [
    ({"LABTOOLS_MODE": "student", "JUPYTERHUB_USER": "ada"}, "", True),
    # a hub student's server as the spawner makes it: the course's id in LABTOOLS_COURSE
    # (nbgrader's course), which is not the on-course flag
    ({"LABTOOLS_MODE": "student", "JUPYTERHUB_USER": "ada", "LABTOOLS_COURSE": "hubtest"},
     "", True),
    ({"LABTOOLS_MODE": "student", "LABTOOLS_ON_COURSE": "1"}, "", True),
    ({}, "student", True),
    ({"LABTOOLS_MODE": "instructor"}, "student", True),
    ({"LABTOOLS_MODE": "student"}, "", False),
    ({"LABTOOLS_ON_COURSE": "1"}, "", False),
    ({"LABTOOLS_MODE": "instructor", "JUPYTERHUB_USER": "prof"}, "", False),
])
def test_what_counts_as_a_course(environ, edition, course):
    chosen = settings.Settings.from_environ({**environ, "LABTOOLS_SHOW_ANSWERS": "1"}, edition)
    assert chosen.on_course is course
    assert chosen.answers_hidden is course  # self-study asked for: only a course hides
    assert chosen.show_answers_ignored is course


def test_the_student_edition_is_always_student_mode():
    assert settings.Settings.from_environ({"LABTOOLS_MODE": "instructor"}, "student").mode \
        == "student"


def test_the_course_variable_is_documented():
    names = [v.name for v in settings.VARIABLES]
    assert settings.COURSE in names


def _on_course(monkeypatch):
    monkeypatch.setenv("LABTOOLS_MODE", "student")
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    monkeypatch.setenv("LABTOOLS_SHOW_ANSWERS", "1")


def test_solve_refuses_on_a_course_even_in_self_study(monkeypatch):
    _on_course(monkeypatch)
    topo = load_topology("portfolio")
    with pytest.raises(InputError) as refused:
        exercises.solve("rtt_ms", topo, src="h1", dst="h4")
    assert "\n" not in str(refused.value) and "exercises.solve()" in str(refused.value)


def test_check_and_grade_still_judge_on_a_course_but_give_no_number(monkeypatch):
    topo = load_topology("portfolio")
    right = exercises.solve("rtt_ms", topo, src="h1", dst="h4").expected  # the full kit
    _on_course(monkeypatch)
    feedback = exercises.check("rtt_ms", right, topo, src="h1", dst="h4")
    assert feedback.correct and math.isnan(feedback.expected)
    table = exercises.grade({"rtt_ms h1 h4": right + 50}, topo)
    assert not table["correct"][0] and math.isnan(table["expected"][0])


def test_self_study_with_the_full_kit_keeps_the_answers(monkeypatch):
    monkeypatch.setenv("LABTOOLS_MODE", "student")
    monkeypatch.setenv("LABTOOLS_SHOW_ANSWERS", "1")
    topo = load_topology("portfolio")
    assert exercises.solve("rtt_ms", topo, src="h1", dst="h4").expected > 0
    assert not modes.answers_hidden() and modes.show_answers()
    assert run_cli(["expect", "portfolio", "h1", "h4"]).returncode == 0


def test_a_students_lab_without_self_study_refuses_solve(monkeypatch):
    monkeypatch.setenv("LABTOOLS_MODE", "student")
    with pytest.raises(InputError):
        exercises.solve("rtt_ms", load_topology("portfolio"), src="h1", dst="h4")


def test_labtools_expect_refuses_on_a_course_in_one_line(monkeypatch):
    _on_course(monkeypatch)
    done = run_cli(["expect", "portfolio", "h1", "h4"])
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "not available on a course" in done.stderr


def test_the_ignored_setting_is_said_once(monkeypatch, capsys):
    _on_course(monkeypatch)
    assert modes.answers_hidden() and modes.answers_hidden()
    assert not modes.show_answers()
    said = capsys.readouterr().err.splitlines()
    assert said == [f"note: {settings.SHOW_ANSWERS_IGNORED}"]


def test_doctor_says_the_setting_does_nothing_on_a_course(monkeypatch):
    assert not any(settings.SHOW_ANSWERS_IGNORED in line for line in settings_lines())
    _on_course(monkeypatch)
    assert sum(settings.SHOW_ANSWERS_IGNORED in line for line in settings_lines()) == 1


class _Lab:
    def __init__(self, topo) -> None:
        self.topo = topo


def test_the_answer_keys_are_refused_on_a_course_even_in_self_study(monkeypatch):
    from labtools.instructor.answer_key_questions import ANSWER_KEY_REFUSAL
    from labtools.instructor.answer_keys import keys_for, kit_topology
    from labtools.teach.question_values import question_values

    topo = kit_topology("portfolio", "s0005")
    assert keys_for("s0005", "02")[2].given == question_values(_Lab(topo), "02-Q3")
    _on_course(monkeypatch)
    with pytest.raises(InputError) as refused:
        keys_for("s0005", "02")
    assert str(refused.value) == ANSWER_KEY_REFUSAL and "\n" not in ANSWER_KEY_REFUSAL
    assert question_values(_Lab(topo), "02-Q3") == \
        {"L2_bw_mbps": 25, "L2_delay_ms": 25, "L2_queue_pkts": 83}
    done = run_cli(["answer-key", "alice"])
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
