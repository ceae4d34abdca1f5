"""``labtools bundle --students DIR``: the student edition holds the student notebooks,
the package and the topologies, and not the solutions nor the source of what a lab asks a
student to write; it knows it is on a course (labtools/instructor/student_edition.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from labtools.errors import InputError
from labtools.instructor import student_edition

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def edition(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("edition") / "students"
    done = run_cli(["bundle", "--students", str(folder)])
    assert done.returncode == 0, done.stderr
    return folder


#: the edition runs in a venv of its own, where the kit is not installed; here the kit's
#: editable install (an import finder of this venv that maps ``labtools`` to the checkout)
#: is taken away first, or a module the edition leaves out would be found in the checkout
ALONE = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path "
         "if not getattr(f, '__module__', '').startswith('__editable__')]\n")


def _python(folder: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LABTOOLS_")}
    environ.update(PYTHONPATH=str(folder), **env)
    return subprocess.run([sys.executable, "-c", ALONE + code], capture_output=True, text=True,
                          cwd=str(folder.parent), env=environ, timeout=60)


def test_the_left_out_files_are_absent(edition):
    assert (ROOT / "solutions").is_dir()
    for omission in (*student_edition.LEFT_OUT, *student_edition.BYTECODE_ONLY):
        assert (ROOT / omission.path).exists(), omission.path  # the list is not stale
        assert not (edition / omission.path).exists(), omission.path
    assert not list(edition.rglob("*.ipynb_checkpoints"))
    assert not [p for p in edition.rglob("*") if "solution" in p.name.lower()]


def test_the_student_notebooks_and_the_topologies_are_there(edition):
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks and sorted(p.name for p in (edition / "notebooks").glob("*.ipynb")) \
        == notebooks
    assert (edition / "notebooks" / notebooks[0]).read_bytes() == \
        (ROOT / "notebooks" / notebooks[0]).read_bytes()
    assert (edition / "topologies" / "portfolio.py").is_file()
    assert (edition / "README.md").is_file() and (edition / "docs" / "students.md").is_file()


def test_the_package_imports_from_the_edition_and_knows_it_is_on_a_course(edition):
    done = _python(edition, "import labtools, labtools.cli, labtools.teach.notebook; "
                            "from labtools import settings; s = settings.current(); "
                            "print(labtools.__file__, s.on_course, s.mode)",
                   LABTOOLS_SHOW_ANSWERS="1")
    assert done.returncode == 0, done.stderr
    where, course, mode = done.stdout.split()
    assert Path(where).is_relative_to(edition) and course == "True" and mode == "student"


def test_the_kit_simpleperf_server_has_no_source_there_but_runs(edition):
    done = _python(edition, "import inspect; from labtools.tools.simpleperf import server; "
                            "inspect.getsource(server.Server)")
    assert done.returncode == 1 and "could not get source code" in done.stderr.splitlines()[-1]
    runs = subprocess.run([sys.executable, "-S", str(edition / "labtools/tools/simpleperf"),
                           "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(edition)})
    assert runs.returncode == 0 and "simpleperf" in runs.stdout


def test_the_capacity_search_is_refused_in_one_line(edition):
    done = _python(edition, "from labtools.lab.capacity import SearchSettings, search_rates\n"
                            "search_rates(lambda rate, phase: True, SearchSettings())")
    assert "InputError: the capacity search is what lab 1 asks you to write" in done.stderr
    assert "middle = (low + high) / 2" not in \
        (edition / "labtools/lab/capacity.py").read_text()


GIVEN_02_Q3 = "{'L2_bw_mbps': 25, 'L2_delay_ms': 25, 'L2_queue_pkts': 83}"


def test_the_instructors_wing_is_not_there(edition):
    assert (ROOT / "labtools/instructor/answer_keys.py").is_file()  # the list is not stale
    assert not (edition / "labtools/instructor").exists()
    assert not [p for p in edition.rglob("*.py") if "def q02_3" in p.read_text()]
    for module in ("labtools.instructor.answer_keys", "labtools.instructor.class_grading",
                   "labtools.instructor.commands.answer_key_cmd"):
        done = _python(edition, f"import {module}")
        last = done.stderr.splitlines()[-1]
        assert done.returncode == 1 and last.startswith("ModuleNotFoundError: "), last


def test_a_notebooks_given_values_are_there_without_the_keys(edition):
    done = _python(edition, "import sys\n"
                            "from labtools.judge.question_givens import kit_topology\n"
                            "from labtools.teach.question_values import question_values\n"
                            "class Lab:\n    topo = kit_topology('portfolio', 's0005')\n"
                            "print(question_values(Lab(), '02-Q3'))\n"
                            "print(sorted(m for m in sys.modules if 'answer_key' in m))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [GIVEN_02_Q3, "[]"]


@pytest.mark.parametrize("args", [["answer-key", "alice"], ["class-report", "submitted"],
                                  ["autograde", "lab1", "--jobs", "2"], ["bundle", "--help"]])
def test_the_instructors_commands_refuse_in_one_line_in_the_edition(edition, args):
    done = _python(edition, f"import runpy; sys.argv = ['labtools', *{args!r}]\n"
                            "runpy.run_module('labtools.cli', run_name='__main__')")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == (f"`labtools {args[0]}` is an instructor's command: not part of "
                           "the student edition\n")


def test_the_kits_package_data_is_the_one_the_edition_replaces():
    assert student_edition.PACKAGE_DATA in (ROOT / "pyproject.toml").read_text()
    assert list((ROOT / "labtools/teach/conformance").glob("exchanges.json*"))
    with pytest.raises(InputError, match="out of date"):
        student_edition.installable('[tool.setuptools.package-data]\nlabtools = ["x"]\n')


def test_labtools_expect_refuses_in_the_edition(edition):
    done = subprocess.run([sys.executable, "-m", "labtools.cli", "expect", "portfolio", "h1",
                           "h4"], capture_output=True, text=True, timeout=60, cwd=str(edition),
                          env={**os.environ, "PYTHONPATH": str(edition),
                               "LABTOOLS_SHOW_ANSWERS": "1"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1


def test_a_folder_with_something_in_it_is_refused_unless_forced(tmp_path):
    (tmp_path / "mine.txt").write_text("a student's work")
    done = run_cli(["bundle", "--students", str(tmp_path)])
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "not empty" in done.stderr and not (tmp_path / "labtools").exists()
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "old.ipynb").write_text("{}")
    assert run_cli(["bundle", "--students", str(tmp_path), "--force"]).returncode == 0
    assert (tmp_path / "mine.txt").is_file() and not (tmp_path / "solutions").exists()


def test_nothing_is_written_through_a_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "labtools").symlink_to(outside)
    done = run_cli(["bundle", "--students", str(dest), "--force"])
    assert done.returncode == 2 and "symbolic link" in done.stderr
    assert list(outside.iterdir()) == []
    (tmp_path / "linked").symlink_to(outside)
    assert run_cli(["bundle", "--students", str(tmp_path / "linked")]).returncode == 2


def test_a_link_in_the_kits_tree_is_not_followed(tmp_path):
    root = tmp_path / "kit"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text(student_edition.SETUPTOOLS_TABLE
                                         + student_edition.PACKAGE_DATA + "\n")
    secret = tmp_path / "secret.ipynb"
    secret.write_text("{}")
    (root / "notebooks" / "00.ipynb").write_text("{}")
    (root / "notebooks" / "leak.ipynb").symlink_to(secret)
    bundle = student_edition.write_edition(root, tmp_path / "out")
    assert bundle.skipped_links == ["notebooks/leak.ipynb"]
    assert not (tmp_path / "out" / "notebooks" / "leak.ipynb").exists()
    assert student_edition.EDITION_PACKAGE_DATA in (tmp_path / "out/pyproject.toml").read_text()


def test_a_stub_keeps_the_docstring_and_refuses():
    source = ('from labtools.errors import InputError\n\n\ndef f(x):\n    """Doc."""\n'
              '    return x + 1\n\n\ndef g():\n    return 2\n')
    stubbed = student_edition.stubbed_source(source, student_edition.Stub("m.py", "f", "no"))
    namespace: dict = {}
    exec(compile(stubbed, "m.py", "exec"), namespace)
    assert namespace["f"].__doc__ == "Doc." and namespace["g"]() == 2
    with pytest.raises(Exception, match="^no$"):
        namespace["f"](1)


def test_the_edition_starts_with_make_lab_and_vagrant_up(edition):
    """The edition's own Makefile runs the kit's setup and lab scripts, which are there,
    as is the lab VM's Vagrantfile (the lab itself is started by tests/instructor/test_edition_lab.py)."""
    shell = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}  # a student's
    planned = subprocess.run(["make", "--no-print-directory", "-n", "lab"],
                             capture_output=True, text=True, timeout=60, cwd=edition, env=shell)
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.split("\n")[:2] == ["bash scripts/setup.sh", "bash scripts/lab.sh"]
    for name in ("scripts/setup.sh", "scripts/lab.sh", "scripts/lab-service.sh",
                 "deploy/image/etc/labtools/jupyter/student/jupyter_server_config.json"):
        assert (edition / name).is_file(), name
    assert "scripts/setup.sh --service" in (edition / "vagrant" / "Vagrantfile").read_text()
    assert not (edition / "tests").exists() and "test:" not in (edition / "Makefile").read_text()


def test_the_edition_refuses_an_instructors_lab_in_one_line(edition):
    done = subprocess.run(["bash", str(edition / "scripts" / "lab.sh")], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "LABTOOLS_MODE": "instructor"})
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0
    assert "student edition" in done.stderr


def test_every_package_of_the_kit_but_the_instructors_is_in_the_edition(edition):
    packages = {p.parent.relative_to(ROOT) for p in (ROOT / "labtools").rglob("__init__.py")
                if not p.is_relative_to(ROOT / "labtools/instructor")}
    missing = sorted(str(p) for p in packages if not (edition / p / "__init__.py").is_file())
    assert not missing, missing


def test_every_module_of_the_edition_imports(edition):
    done = _python(edition, (
        "import importlib, pkgutil, labtools\n"
        "for m in pkgutil.walk_packages(labtools.__path__, 'labtools.'):\n"
        "    try:\n        importlib.import_module(m.name)\n        print('ok', m.name)\n"
        "    except Exception as err:\n"
        "        print('refused', m.name, type(err).__name__, str(err).replace(chr(10), ' '))\n"))
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = {line.split()[1]: line for line in done.stdout.splitlines()}
    refused = [line for line in outcomes.values() if line.startswith("refused")]
    assert not refused, refused  # nothing the edition left out is imported by what it holds
    assert len(outcomes) > 100 and outcomes["labtools.results.store"].startswith("ok")


def _readme_links(text: str) -> list:
    """The relative targets of the Markdown links in ``text`` (no URL, no anchor)."""
    import re

    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    return [t for t in targets if "://" not in t and not t.startswith("mailto:")]


def test_the_editions_readme_shows_only_what_the_edition_holds(edition):
    """The edition's README links only to files the edition has, offers only its own
    Makefile's targets (no `make test`), and speaks of no folder it leaves out."""
    import re

    readme = (edition / "README.md").read_text(encoding="utf-8")
    assert readme == (ROOT / "deploy" / "edition" / "README.md").read_text(encoding="utf-8")
    links = _readme_links(readme)
    assert links and all((edition / link).exists() for link in links), links
    targets = set(re.findall(r"^([a-z-]+):", (edition / "Makefile").read_text(), re.M))
    offered = set(re.findall(r"`make ([a-z-]+)", readme))
    assert offered and offered <= targets, offered - targets
    for absent in ("solutions/", "tests/", "make test", "instructors.md", "developers.md",
                   "course-server.md", "BENCHMARKS.md"):
        assert absent not in readme, absent
    # the students' page's link to the reference topology still lands
    assert "## The reference topology" in readme
    assert "../README.md#the-reference-topology" in (edition / "docs" / "students.md").read_text()


def test_the_editions_lab_loads_no_nbgrader_extension(edition):
    """The edition installs no nbgrader (the `lab` extra only): its student server's config
    enables no extension that imports it, so `make lab` logs no "[E] ... No module named
    'nbgrader'" (the deferred loader is off, nbgrader's own extensions stay off)."""
    import json

    config = json.loads((edition / student_edition.SERVER_CONFIG).read_text())
    enabled = [name for name, on in config["ServerApp"]["jpserver_extensions"].items() if on]
    assert student_edition.DEFERRED_EXTENSIONS not in enabled
    assert not [name for name in enabled if name.startswith("nbgrader")]
    assert "DeferredExtensions" not in config
    kit = json.loads((ROOT / student_edition.SERVER_CONFIG).read_text())
    assert kit["ServerApp"]["jpserver_extensions"][student_edition.DEFERRED_EXTENSIONS]
    assert "nbgrader" not in (edition / "pyproject.toml").read_text().split("[project.optional-dependencies]")[1].split("dev =")[0]


def test_the_editions_editable_install_is_a_plain_path_entry(edition):
    """`pip install -e` of the edition (scripts/setup.sh) puts its folder on the path: the
    package sits at the top of the folder and pyproject.toml says so, so setuptools does
    not install an import finder with its warning block."""
    pyproject = (edition / "pyproject.toml").read_text()
    assert student_edition.EDITION_SETUPTOOLS_TABLE in pyproject
    assert 'package-dir = {"" = "."}' in pyproject and (edition / "labtools" / "__init__.py").is_file()
    with pytest.raises(InputError, match="out of date"):
        student_edition.installable(student_edition.PACKAGE_DATA)  # no setuptools table


@pytest.mark.parametrize("where, words", [(".", "the kit's own folder"),
                                          ("edition", "inside the kit's folder"),
                                          ("solutions", "inside the kit's folder"),
                                          ("..", "a folder around the kit")])
def test_the_kit_itself_inside_or_around_it_is_refused_even_forced(where, words):
    """`labtools bundle --students . --force` in the kit's folder once deleted 16 of its
    files: the kit's folder, a folder in it or one around it is refused in one line, and
    nothing is written or removed."""
    before = sorted(p.name for p in ROOT.iterdir())
    solutions = sorted(p.name for p in (ROOT / "solutions").iterdir())
    done = run_cli(["bundle", "--students", str(ROOT / where), "--force"])
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert sorted(p.name for p in ROOT.iterdir()) == before
    assert sorted(p.name for p in (ROOT / "solutions").iterdir()) == solutions


def test_lab_7s_options_and_lab_1s_rules_run_without_source_or_docstrings(edition):
    """parse_amount (lab 7 asks for it) and the capacity search's rules (lab 1) run in the
    edition, from bytecode with no docstring and no source to read."""
    done = _python(edition, "import inspect\n"
                   "from labtools.tools.simpleperf import options, server\n"
                   "from labtools.judge import capacity\n"
                   "print(options.parse_amount('10MB'), options.__doc__, server.__doc__,\n"
                   "      capacity.summarize_search.__doc__, capacity.__file__.endswith('.pyc'))\n"
                   "inspect.getsource(options.parse_amount)\n")
    assert done.stdout.split() == ["10000000", "None", "None", "None", "True"], done.stderr
    assert done.returncode == 1 and "could not get source code" in done.stderr


def test_an_installed_edition_carries_its_bytecode_only_modules():
    """pip installs a package's .py files and only the package data named: every folder of
    a bytecode-only module is named (the student image lost lab 1's judge/capacity.pyc)."""
    import re

    from labtools.instructor.student_edition import BYTECODE_ONLY, EDITION_PACKAGE_DATA

    globs = re.findall(r'"([^"]+)"', EDITION_PACKAGE_DATA)
    for omission in BYTECODE_ONLY:
        folder = str(Path(omission.path).parent.relative_to("labtools"))
        assert f"{folder}/*.pyc" in globs, (omission.path, globs)
