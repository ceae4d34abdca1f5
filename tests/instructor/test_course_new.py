"""``labtools course new DIR``: a course folder the kit grades, made in one command; real
nbgrader then generates the student notebooks from it, the kit's own notebooks/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from labtools.teach.notebook_files import course_config, nbgrader

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("course") / "netlab-2026"
    done = run_cli(["course", "new", str(folder)])
    assert done.returncode == 0, done.stderr
    assert "course 'netlab-2026'" in done.stdout and "8 labs" in done.stdout
    return folder


def test_the_course_holds_its_config_labs_and_variants_file(course):
    assert (course / "nbgrader_config.py").read_text() == course_config("netlab-2026")
    labs = sorted(p.name for p in (course / "source" / "labs").iterdir())
    assert labs == sorted(p.name for p in (ROOT / "solutions").glob("*.ipynb"))
    assert (course / "labtools-variants.csv").read_text() == "student_id,variant\n"


def test_nbgrader_generates_the_kits_student_notebooks_from_it(course):
    nbgrader(["generate_assignment", "labs", "--create"], course)
    for ours in sorted((ROOT / "notebooks").glob("*.ipynb")):
        made = json.loads((course / "release" / "labs" / ours.name).read_text())
        kit = json.loads(ours.read_text())
        assert [c["source"] for c in made["cells"]] == [c["source"] for c in kit["cells"]]


@pytest.mark.parametrize("args, words", [
    (["--id", "intro to nets"], "use 1 to 64 letters"),
    (["--id", "x" * 65], "use 1 to 64 letters")])
def test_a_bad_course_id_is_refused_in_one_line(tmp_path, args, words):
    done = run_cli(["course", "new", str(tmp_path / "c"), *args])
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "c").exists()


def test_a_folder_with_something_in_it_or_the_kit_is_refused(course):
    before = sorted(p.name for p in ROOT.iterdir())
    for folder, words in ((course, "is not empty"), (ROOT / "course", "inside it or around"),
                          (ROOT, "the kit's folder")):
        done = run_cli(["course", "new", str(folder)])
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in ROOT.iterdir()) == before


def test_a_students_lab_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("LABTOOLS_MODE", "student")
    done = run_cli(["course", "new", str(tmp_path / "c")])
    assert done.returncode == 2 and "for instructors" in done.stderr
