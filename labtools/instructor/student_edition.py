"""The student edition of the kit: what ``labtools bundle --students DIR`` writes, and what
it leaves out, as explicit lists.

A course hands its students the student edition, not the kit's checkout: the student
notebooks (``notebooks/``, without the solutions), the package and the topologies, its own
README and the students' documentation. What a lab asks a student to write is not there
as source:

- :data:`LEFT_OUT`: files and folders not copied at all (``solutions/``, the instructor's
  wing of the package, :mod:`labtools.instructor`, with the answer keys, grading and this
  module; the instructors' and developers' pages). Nothing on the student's side imports
  the wing; its commands (``labtools answer-key``, ``autograde``, ``class-report``,
  ``bundle``) say in one line that they are not part of the edition;
- :data:`BYTECODE_ONLY`: the kit's own simpleperf client, server, report and option
  parsing (lab 7's answer), and lab 1's rules of a capacity search. Labs 2 and 7 measure
  with the kit's simpleperf (its server counts what your client sends), lab 1 judges your
  search's steps with those rules, so they ship compiled for the Python that bundled them,
  without docstrings or asserts (:data:`BYTECODE_OPTIMIZE`): they run, their source is not
  there (``inspect.getsource`` fails);
- :data:`STUBBED`: functions whose body is replaced by a one-line refusal that says how to
  get the real thing (lab 1's capacity search: ``search_rates``). A notebook's given values
  come from :mod:`labtools.judge.question_givens`, which holds no answer and is there;
- :data:`KEPT`: reference code the kit's own judging needs, kept on purpose, with why
  (lab 4's prediction of which pings cross the queue a transfer fills: the verdicts of a
  ping under load are computed from it; a measurement's verdicts show its values once
  measured, as in every lab).

The edition runs as the kit does: ``make lab`` (its own Makefile and README,
:data:`PLACED`: only what the edition holds) and the lab VM (``cd vagrant && vagrant up``)
use the kit's setup and lab scripts, which install the edition's package (editable) in the
edition's own venv, without nbgrader: :data:`EDITED` says what the edition's copies of the
package's ``pyproject.toml`` and the student server's Jupyter config change so that
``make lab`` prints no warning and no error on the way.

The edition's package holds :data:`labtools.settings.EDITION_FILE` (``student``): the kit
then knows it is on a course (:attr:`labtools.settings.Settings.on_course`): expected
values stay hidden whatever ``LABTOOLS_SHOW_ANSWERS`` says.

Copying never follows a symbolic link: a link in the kit's tree is not copied, and a
folder or file in ``DIR`` that is a link is refused (nothing is written through it).
"""

from __future__ import annotations

import ast
import json
import os
import py_compile
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Tuple

from labtools import __version__, settings
from labtools.errors import InputError

#: what the edition holds, relative to the kit's source folder (folders copied whole,
#: except :data:`SKIPPED_NAMES` and :data:`LEFT_OUT`)
INCLUDED = ("pyproject.toml", "labtools", "topologies", "notebooks",
            "docs/students.md", "docs/reference.md", "docs/running.md",
            # what `make lab` and the lab VM (`vagrant up`) run
            "scripts/setup.sh", "scripts/lab.sh", "scripts/lab-service.sh",
            "vagrant/Vagrantfile", "deploy/image/etc/labtools/jupyter/student",
            # what a student with Docker runs the image their instructor built with
            "scripts/lab-container.sh", "deploy/image/seccomp-userns.json")
#: files of the kit written in the edition under another name: the edition's own Makefile
#: (make lab, setup, clean: the kit's has the developers' targets, whose tests are not there)
#: and README (the kit's speaks of what the edition leaves out: tests, solutions, the
#: instructors' and developers' pages)
PLACED = {"deploy/edition/Makefile": "Makefile", "deploy/edition/README.md": "README.md"}
#: the student server's Jupyter config (:mod:`labtools.teach.deferred_extensions`)
SERVER_CONFIG = "deploy/image/etc/labtools/jupyter/student/jupyter_server_config.json"
#: the server extension that loads nbgrader's once the lab answers: off in the edition, which
#: installs no nbgrader (``scripts/setup.sh``: the ``lab`` extra only)
DEFERRED_EXTENSIONS = "labtools.teach.deferred_extensions"
#: the config's section naming what :data:`DEFERRED_EXTENSIONS` loads (dropped with it)
DEFERRED_SECTION = "DeferredExtensions"
#: names never copied, wherever they are (caches, a lab's own results, a student's work),
#: except a folder of the package (``labtools/results`` holds the results store's code)
SKIPPED_NAMES = frozenset({"__pycache__", ".ipynb_checkpoints", ".pytest_cache", "results",
                           ".mypy_cache", "mysimpleperf", "EDITION"})
#: file endings never copied
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".sqlite")


@dataclass(frozen=True)
class Omission:
    """One thing the edition does not carry as source: its path in the kit and why."""

    path: str
    why: str


@dataclass(frozen=True)
class Stub:
    """A function whose body the edition replaces with ``raise InputError(message)``."""

    path: str
    function: str
    message: str


#: not copied at all
LEFT_OUT: Tuple[Omission, ...] = (
    Omission("solutions", "every lab's solutions and hidden tests"),
    Omission("labtools/instructor", "the instructor's wing: answer keys, grading, the class "
             "report, the student edition"),
    Omission("docs/instructors.md", "for instructors: grading, answer keys"),
    Omission("docs/developers.md", "for developers"),
    Omission("docs/testing.md", "for developers"),
    Omission("docs/test-runs.md", "for developers"),
    Omission("docs/course-server.md", "for a course's administrators"),
)
#: copied as bytecode only (the source left out)
BYTECODE_ONLY: Tuple[Omission, ...] = (
    Omission("labtools/tools/simpleperf/client.py", "lab 7: the simpleperf client you write"),
    Omission("labtools/tools/simpleperf/server.py", "lab 7: the simpleperf server you write"),
    Omission("labtools/tools/simpleperf/report.py", "lab 7: the report you write"),
    Omission("labtools/tools/simpleperf/options.py",
             "lab 7: the options you parse (parse_amount); the kit's client and server use it"),
    Omission("labtools/judge/capacity.py",
             "lab 1: the rules of the capacity search you write (saturated, the knee, the "
             "estimate); the kit judges your search's steps with it"),
)
#: how the bytecode-only modules are compiled: ``-OO`` (no docstrings, no asserts), so
#: that the bytecode carries only what runs
BYTECODE_OPTIMIZE = 2
#: functions replaced by a refusal
STUBBED: Tuple[Stub, ...] = (
    Stub("labtools/lab/capacity.py", "search_rates",
         "the capacity search is what lab 1 asks you to write (find_capacity in "
         "01-udp-bandwidth-probing.ipynb); it is not in the student edition"),
)
#: reference code kept on purpose, and why
KEPT: Tuple[Omission, ...] = (
    Omission("labtools/model/queues.py",
             "lab 4's prediction of which pings cross the queue a transfer fills "
             "(loaded_rtt): the kit judges a ping under load with it"),
)


@dataclass
class Bundle:
    """What :func:`write_edition` wrote: the files copied, compiled and stubbed (a
    function stubbed: :data:`STUBBED`), paths relative to the edition's folder."""

    folder: Path
    copied: List[str] = field(default_factory=list)
    compiled: List[str] = field(default_factory=list)
    stubbed: List[str] = field(default_factory=list)
    skipped_links: List[str] = field(default_factory=list)


def _left_out(rel: str) -> bool:
    return any(rel == o.path or rel.startswith(o.path + "/") for o in LEFT_OUT)


def source_files(root: Path) -> Tuple[List[str], List[str]]:
    """The files of the edition, relative to the kit's source folder ``root``, in order,
    and the symbolic links met on the way (never followed, never copied)."""
    files: List[str] = []
    links: List[str] = []
    for top in INCLUDED:
        start = root / top
        if start.is_symlink():
            links.append(top)
            continue
        if start.is_file():
            files.append(top)
            continue
        for folder, dirs, names in os.walk(start, followlinks=False):
            here = Path(folder)
            for name in sorted(dirs):
                if (here / name).is_symlink():
                    links.append(str((here / name).relative_to(root)))
            dirs[:] = sorted(d for d in dirs if (d not in SKIPPED_NAMES
                                                 or (here / d / "__init__.py").is_file())
                             and not (here / d).is_symlink()
                             and not _left_out(str((here / d).relative_to(root))))
            for name in sorted(names):
                rel = str((here / name).relative_to(root))
                if (here / name).is_symlink():
                    links.append(rel)
                elif name not in SKIPPED_NAMES and not name.endswith(SKIPPED_SUFFIXES) \
                        and not _left_out(rel):
                    files.append(rel)
    return files, links


def stubbed_source(text: str, stub: Stub) -> str:
    """``text`` (a module's source) with ``stub.function``'s body, after its docstring,
    replaced by ``raise InputError(stub.message)``."""
    tree = ast.parse(text)
    found = next((n for n in tree.body if isinstance(n, ast.FunctionDef)
                  and n.name == stub.function), None)
    if found is None or "InputError" not in text:
        raise InputError(f"{stub.path}: no function {stub.function} raising InputError to "
                         "stub (the list in labtools/instructor/student_edition.py is out of date)")
    body = found.body
    keep = body[0] if isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0], "value", None), ast.Constant) else None
    lines = text.splitlines(keepends=True)
    first = (keep.end_lineno or keep.lineno) if keep else found.body[0].lineno - 1
    last = found.end_lineno or found.lineno
    indent = " " * (body[0].col_offset)
    refusal = f"{indent}raise InputError({stub.message!r})\n"
    return "".join(lines[:first]) + refusal + "".join(lines[last:])


#: the package data of the kit's pyproject.toml, and the edition's (its marker, bytecode)
PACKAGE_DATA = 'labtools = ["py.typed", "teach/conformance/exchanges.json*"]'
EDITION_PACKAGE_DATA = ('labtools = ["py.typed", "EDITION", "tools/simpleperf/*.pyc", '
                        '"judge/*.pyc", "teach/conformance/exchanges.json*"]')
#: the kit's setuptools table, and the edition's: the package at the top of the folder,
#: said so, makes ``pip install -e`` (``scripts/setup.sh``) put the folder on the path
#: quietly (otherwise setuptools installs an import finder and prints a warning block)
SETUPTOOLS_TABLE = "[tool.setuptools]\ninclude-package-data = true\n"
EDITION_SETUPTOOLS_TABLE = SETUPTOOLS_TABLE + 'package-dir = {"" = "."}\n'


def installable(pyproject: str) -> str:
    """The kit's ``pyproject.toml`` with the edition's package data, so that ``pip install``
    of the edition installs its marker and bytecode too, and the edition's setuptools table
    (:data:`EDITION_SETUPTOOLS_TABLE`: its editable install prints no warning).

    Raises:
        InputError: the kit's package data is not :data:`PACKAGE_DATA`, or its setuptools
            table not :data:`SETUPTOOLS_TABLE`.
    """
    for line in (PACKAGE_DATA, SETUPTOOLS_TABLE):
        if line not in pyproject:
            raise InputError(f"pyproject.toml has no {line.strip()!r}: what "
                             "labtools/instructor/student_edition.py replaces is out of date")
    return pyproject.replace(PACKAGE_DATA, EDITION_PACKAGE_DATA).replace(
        SETUPTOOLS_TABLE, EDITION_SETUPTOOLS_TABLE)


def edition_server_config(text: str) -> str:
    """The student server's Jupyter config (``text``, JSON) as the edition carries it:
    :data:`DEFERRED_EXTENSIONS` off, since the edition installs no nbgrader (its server
    would log, in red, that nbgrader's extensions did not load).

    Raises:
        InputError: ``text`` is not a config with ``ServerApp.jpserver_extensions``.
    """
    try:
        config = json.loads(text)
        extensions = config["ServerApp"]["jpserver_extensions"]
    except (ValueError, KeyError, TypeError) as err:
        raise InputError(f"{SERVER_CONFIG} has no ServerApp.jpserver_extensions: "
                         f"{type(err).__name__}: {err}") from None
    if not isinstance(extensions, dict):
        raise InputError(f"{SERVER_CONFIG}: ServerApp.jpserver_extensions is not a table")
    extensions[DEFERRED_EXTENSIONS] = False
    config.pop(DEFERRED_SECTION, None)
    return json.dumps(config, indent=2) + "\n"


#: files the edition holds changed: their path in the kit -> what makes the edition's text
EDITED: Dict[str, Callable[[str], str]] = {"pyproject.toml": installable,
                                           SERVER_CONFIG: edition_server_config}


def _target(dest: Path, rel: str) -> Path:
    """``dest / rel``, refusing a path whose existing part under ``dest`` is a link."""
    path = dest
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink():
            raise InputError(f"{path} is a symbolic link: the student edition is not "
                             "written through links")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def check_destination(dest: Path, force: bool, root: Path) -> None:
    """Refuse a destination that is a link, a file, a folder with something in it (unless
    ``force``), or one that is the kit ``root`` itself, inside it or around it (``--force``
    there would write over the kit's own files)."""
    where, kit = dest.resolve(), root.resolve()
    if where == kit or kit in where.parents or where in kit.parents:
        relation = ("the kit's own folder" if where == kit else
                    "inside the kit's folder" if kit in where.parents else
                    "a folder around the kit")
        raise InputError(f"{dest} is {relation} ({kit}): write the student edition outside "
                         "the kit")
    if dest.is_symlink():
        raise InputError(f"{dest} is a symbolic link: give a real folder")
    if dest.exists() and not dest.is_dir():
        raise InputError(f"{dest} is not a folder")
    if dest.is_dir() and any(dest.iterdir()) and not force:
        raise InputError(f"{dest} is not empty: give an empty folder, or --force to write "
                         "over it")


def _clear_left_out(dest: Path) -> None:
    """Remove what an earlier copy left in ``dest`` that the edition must not hold (a link
    is removed, never followed)."""
    for omission in (*LEFT_OUT, *BYTECODE_ONLY):
        path = dest / omission.path
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)


def _copy_placed(root: Path, dest: Path) -> List[str]:
    """Copy the files of :data:`PLACED` that ``root`` has (a link is never copied) into
    ``dest`` under their names there; the names copied."""
    copied = []
    for rel, placed in PLACED.items():
        source = root / rel
        if source.is_symlink() or not source.is_file():
            continue
        out = _target(dest, placed)
        if out.is_file():
            out.unlink()
        shutil.copyfile(source, out, follow_symlinks=False)
        copied.append(placed)
    return copied


def write_edition(root: Path, dest: Path, force: bool = False) -> Bundle:
    """Write the student edition of the kit in ``root`` (its source folder) into ``dest``.

    Raises:
        InputError: ``dest`` not empty (without ``force``), a link, not a folder, or the
            kit's folder, inside it or around it;
            ``root`` not the kit's source folder, or itself a student edition.
    """
    if not (root / "pyproject.toml").is_file() or not (root / "notebooks").is_dir():
        raise InputError(f"{root} is not the kit's source folder (a checkout with "
                         "notebooks/): the student edition is built from the full kit")
    if (root / "labtools" / settings.EDITION_FILE.name).exists():
        raise InputError(f"{root} is already a student edition")
    check_destination(dest, force, root)
    dest.mkdir(parents=True, exist_ok=True)
    _clear_left_out(dest)
    bundle = Bundle(dest)
    files, bundle.skipped_links = source_files(root)
    compiled = {o.path for o in BYTECODE_ONLY}
    stubs = {s.path: s for s in STUBBED}
    for rel in files:
        if rel in compiled:
            out = _target(dest, rel[:-len(".py")] + ".pyc")
            py_compile.compile(str(root / rel), cfile=str(out), dfile=rel, doraise=True,
                               optimize=BYTECODE_OPTIMIZE)
            bundle.compiled.append(rel)
            continue
        out = _target(dest, rel)
        if out.is_file():
            out.unlink()
        if rel in EDITED:
            out.write_text(EDITED[rel]((root / rel).read_text(encoding="utf-8")),
                           encoding="utf-8")
            bundle.copied.append(rel)
        elif rel in stubs:
            out.write_text(stubbed_source((root / rel).read_text(encoding="utf-8"),
                                          stubs[rel]), encoding="utf-8")
            bundle.stubbed.append(rel)
        else:
            shutil.copyfile(root / rel, out, follow_symlinks=False)
            bundle.copied.append(rel)
    bundle.copied.extend(_copy_placed(root, dest))
    marker = _target(dest, str(Path("labtools") / settings.EDITION_FILE.name))
    marker.write_text(f"{settings.STUDENT_EDITION}\nlabtools {__version__}, bytecode for "
                      f"Python {sys.version_info.major}.{sys.version_info.minor}\n",
                      encoding="utf-8")
    return bundle
