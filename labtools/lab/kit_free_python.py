"""A Python that cannot import the kit, for a student's own programs (lab 7's simpleperf).

Lab 7 grades the student's own code: their client, server and ``report.py`` run with the
standard library only. Run with the kit's Python, a program could hand its work to the kit
(``import labtools``, or ``python -m labtools.tools.simpleperf`` as a child process) and
only reformat what the kit printed. So the kit runs such a program:

- with :func:`python`: a bare virtual environment made once a process in a temporary
  folder from the machine's own Python (no ``site-packages`` of its own, none of the
  system's, no pip), so that ``sys.executable`` started again by the program, with or
  without options, imports the standard library and nothing else;
- with ``-B -E -s -S`` (:data:`FLAGS`): no bytecode files, no ``PYTHON*`` variables, no
  user site, no ``site`` (isolated mode, ``-I``, less ``-P``: the program's own folder is
  on its path, as ``python PROGRAM`` puts it there);
- in :func:`environment`: a clean environment (no ``PYTHONPATH``, no ``VIRTUAL_ENV``, no
  variable of the kit or the notebook) whose ``PATH`` starts with the bare environment's
  ``bin`` (``python3`` is this Python) and leaves out every folder that holds the kit's
  ``labtools`` or ``simpleperf`` command, and the kit's own Python's folder;
- in :func:`folder` (the bare environment's folder, which holds no package) as its
  current folder, where ``python -m`` would look first.

A program that hands its work to the kit then fails, and :func:`handoff` reads the
failure in its output (Python's ``No module named 'labtools'``, a shell's or Python's
word that ``simpleperf`` or ``labtools`` is not found) and says so in one line.

The kit's files are not hidden: a program that puts the kit's folder on its own path by
name can still import it; grading a course runs each submission where the kit's folders
are out of its reach.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
import venv
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from labtools.errors import EnvironmentProblem

#: the Python options a student's program starts with: no bytecode files (a ``.pyc`` a
#: second old could outlive an edit), no ``PYTHON*`` variables (``-E``), no user site
#: (``-s``), no ``site`` (``-S``: no installed package, no ``exit()`` builtin; and 30-40 ms
#: less for each start). That is isolated mode (``-I``) but for ``-P``: the program's own
#: folder stays first on its path, where its files import each other from
FLAGS = ("-B", "-E", "-s", "-S")
#: the kit's commands: a folder on ``PATH`` that holds one of them is left out
KIT_COMMANDS = ("labtools", "simpleperf")
#: the folders of the program's ``PATH`` (those that exist), after the bare environment's
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
#: what says that a program handed its work to the kit: Python's failed import of the
#: kit, or the kit's command not found (by a shell, or by ``subprocess``)
_IMPORTS_KIT = re.compile(r"No module named '?labtools\b")
_RUNS_KIT = re.compile(r"No such file or directory: '(?:[^']*/)?(?:labtools|simpleperf)'"
                       r"|\b(?:labtools|simpleperf): (?:command )?not found")
#: the one line's end
OWN_CODE = "lab 7 grades your own code; write it with the standard library only"

#: the bare environments' folders: PREFIX + the process id that made it + "-" + a random tail
PREFIX = "labtools-kit-free-"

_made: Dict[int, Path] = {}  # process id -> its bare environment's folder


def _remove(pid: int) -> None:
    """Remove the bare environment this process made (not a parent's, after a fork)."""
    where = _made.pop(pid, None)
    if where is not None and os.getpid() == pid:
        shutil.rmtree(where, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


def _remove_stale(under: Path) -> None:
    """Remove the bare environments under ``under`` that this user's processes made and
    left when they ended without their exit handlers (a kernel killed at its shutdown)."""
    for found in under.glob(PREFIX + "*"):
        pid = found.name[len(PREFIX):].split("-", 1)[0]
        try:
            mine = found.lstat().st_uid == os.geteuid() and found.is_dir()
        except OSError:
            continue
        if mine and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(found, ignore_errors=True)


def folder() -> Path:
    """The bare environment's folder, made at the first call of this process (a process
    forked from one that made it makes its own; those of ended processes are removed
    then).

    Raises:
        EnvironmentProblem: the machine's Python cannot make a virtual environment, or
            the temporary folder cannot be written.
    """
    pid = os.getpid()
    where = _made.get(pid)
    if where is not None and (where / "pyvenv.cfg").is_file():
        return where
    try:
        _remove_stale(Path(tempfile.gettempdir()))
        where = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{pid}-"))
        venv.EnvBuilder(system_site_packages=False, clear=False, symlinks=True,
                        with_pip=False).create(str(where))
    except (OSError, ValueError, RuntimeError) as err:
        raise EnvironmentProblem(f"cannot make a Python without the kit for your program: "
                                 f"{err}") from None
    if not _made:
        atexit.register(lambda: _remove(os.getpid()))
    _made[pid] = where
    return where


def python() -> str:
    """The bare environment's Python (see the module's description)."""
    return str(folder() / "bin" / "python")


def _holds_the_kit(place: str) -> bool:
    here = Path(place)
    return here.resolve() == Path(sys.executable).parent.resolve() or any(
        (here / command).exists() for command in KIT_COMMANDS)


def program_path() -> str:
    """``PATH`` for a student's program: the bare environment's ``bin`` first, then the
    system's folders (:data:`SYSTEM_PATH`) that exist and hold none of the kit's
    commands (:data:`KIT_COMMANDS`) and are not the kit's Python's folder."""
    kept = [p for p in SYSTEM_PATH if Path(p).is_dir() and not _holds_the_kit(p)]
    return os.pathsep.join([str(folder() / "bin"), *kept])


def environment() -> Dict[str, str]:
    """The whole environment of a student's program: ``PATH`` (:func:`program_path`),
    ``HOME`` (the bare environment's folder) and a UTF-8 locale; nothing else."""
    return {"PATH": program_path(), "HOME": str(folder()), "LC_ALL": "C.UTF-8",
            "LANG": "C.UTF-8"}


def argv(program: Path) -> List[str]:
    """The command that starts ``program`` (a file, or a folder with ``__main__.py``):
    the bare Python with :data:`FLAGS` and the program's absolute path."""
    return [python(), *FLAGS, str(program.resolve())]


def with_environment(command: List[str]) -> List[str]:
    """``command`` run through ``env``: in :func:`environment` alone, in :func:`folder`
    (for where the kit cannot pass them itself: a command on a lab's host)."""
    settings = [f"{key}={value}" for key, value in environment().items()]
    return [shutil.which("env") or "/usr/bin/env", "-i", "-C", str(folder()), *settings,
            *command]


def handoff(who: str, output: str) -> Optional[str]:
    """The one line that says ``who`` (``your client``) handed its work to the kit, when
    its ``output`` says so (see the module's description), else None."""
    found: Tuple[Tuple["re.Pattern[str]", str], ...] = (
        (_IMPORTS_KIT, "imports the kit (labtools)"),
        (_RUNS_KIT, "runs the kit's simpleperf"))
    for pattern, what in found:
        if pattern.search(output):
            return f"{who} {what}: {OWN_CODE}"
    return None
