"""Autograding a class with nbgrader, several submissions at once.

    labtools autograde ASSIGNMENT [--jobs N] [--course DIR] [--student ID]... [--create] [--force]

``nbgrader autograde ASSIGNMENT`` grades one submission after the other, each notebook in
a kernel of its own. Here every submission is one ``nbgrader autograde ASSIGNMENT
--student ID`` (nbgrader's own command, its own process and log), ``jobs`` of them at
once: one submission's failure or hang is that submission's, and the others go on. They
all write into the course's one gradebook: nbgrader opens it for each short write, and a
write that finds the SQLite file locked by another waits up to :data:`GRADEBOOK_WAIT_S`
for it (SQLite's ``timeout``) instead of its 5 s default. What each run printed is kept
in ``autograde-log/ASSIGNMENT/STUDENT.log`` in the course folder.

The gradebook ends as a serial run leaves it: the same students, submissions, scores and
comments (``tests/test_class_grading.py`` compares the two).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from labtools.errors import InputError
from labtools.teach.notebook_files import nbgrader_env

#: how long a gradebook write waits for another submission's write to end, s
GRADEBOOK_WAIT_S = 120.0
#: how long one submission may take, all its notebooks together, s (nbgrader's own limit
#: per cell comes first: ``Execute.timeout`` in the course's nbgrader_config.py)
SUBMISSION_TIMEOUT_S = 3600.0
#: the folder of the runs' logs, in the course folder
LOG_FOLDER = "autograde-log"
#: seconds between two looks at the running submissions
POLL_S = 0.2

GRADED, FAILED, TIMED_OUT, STOPPED = "graded", "failed", "timed out", "stopped"


@dataclass(frozen=True)
class SubmissionGrading:
    """One submission's autograde.

    Attributes:
        student: the student's id.
        status: ``graded``, ``failed`` (nbgrader's exit status was not 0), ``timed out``
            (over :data:`SUBMISSION_TIMEOUT_S`) or ``stopped`` (the run was interrupted).
        seconds: wall time, s.
        cpu_s: CPU time of nbgrader and the kernels it waited for, s (None: it did not
            end by itself).
        reason: nbgrader's last line when it failed, else empty.
        log: the file with what nbgrader printed.
    """

    student: str
    status: str
    seconds: float
    cpu_s: Optional[float]
    reason: str
    log: Path


def submitted_students(course: Path, assignment: str) -> List[str]:
    """The students with a submission of ``assignment`` in ``course``'s ``submitted/``
    folder (``submitted/STUDENT/ASSIGNMENT/``), sorted."""
    folder = course / "submitted"
    if not folder.is_dir():
        raise InputError(f"no submitted/ folder in {course}: give the course folder with "
                         "--course (collect the submissions first)")
    return sorted(p.name for p in folder.iterdir()
                  if (p / assignment).is_dir() and not p.name.startswith("."))


def gradebook_url(course: Path) -> Optional[str]:
    """The course's default SQLite gradebook with writes that wait
    :data:`GRADEBOOK_WAIT_S` (None when the course's nbgrader_config.py names a gradebook
    of its own: nbgrader's setting is then kept)."""
    config = course / "nbgrader_config.py"
    if config.is_file() and "db_url" in config.read_text(encoding="utf-8", errors="replace"):
        return None
    return f"sqlite:///{(course / 'gradebook.db').resolve()}?timeout={GRADEBOOK_WAIT_S:g}"


def autograde_args(assignment: str, student: str, db_url: Optional[str],
                   create: bool = False, force: bool = False) -> List[str]:
    """nbgrader's arguments for one student's autograde."""
    args = ["autograde", assignment, "--student", student]
    if db_url is not None:
        args.append(f"--CourseDirectory.db_url={db_url}")
    return args + (["--create"] if create else []) + (["--force"] if force else [])


@dataclass
class _Running:
    student: str
    proc: "subprocess.Popen[bytes]"
    started: float
    log: Path


def _start(exe: str, args: List[str], course: Path, student: str, logs: Path) -> _Running:
    log = logs / f"{student}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe, *args], cwd=str(course), env=nbgrader_env(),
                                stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    return _Running(student, proc, time.monotonic(), log)


def _last_line(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace")
             .splitlines() if ln.strip()]
    return lines[-1] if lines else "nbgrader printed nothing"


def _stop(run: _Running) -> None:
    """Stop a submission's nbgrader and its kernels (its process group)."""
    try:
        os.killpg(run.proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        run.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(run.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        run.proc.wait()


def _finished(run: _Running) -> Optional[SubmissionGrading]:
    """The run's result when it has ended (its CPU from ``wait4``), else None."""
    pid, status, usage = os.wait4(run.proc.pid, os.WNOHANG)
    if pid == 0:
        return None
    code = run.proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - run.started
    cpu = usage.ru_utime + usage.ru_stime
    if code == 0:
        return SubmissionGrading(run.student, GRADED, seconds, cpu, "", run.log)
    return SubmissionGrading(run.student, FAILED, seconds, cpu,
                             f"nbgrader exit status {code}: {_last_line(run.log)}", run.log)


Progress = Callable[[SubmissionGrading, int, int, int], None]


def grade_class(course: Path, assignment: str, students: Sequence[str], jobs: int,
                exe: str, progress: Optional[Progress] = None, create: bool = False,
                force: bool = False) -> List[SubmissionGrading]:
    """Autograde ``students``' submissions of ``assignment``, ``jobs`` at once, with
    nbgrader at ``exe``; ``progress(result, done, total, running)`` after each. On
    Ctrl-C the running ones are stopped (``stopped``) and KeyboardInterrupt goes on."""
    if jobs < 1:
        raise InputError(f"jobs must be at least 1, got {jobs}")
    logs = course / LOG_FOLDER / assignment
    logs.mkdir(parents=True, exist_ok=True)
    url = gradebook_url(course)
    waiting, running = list(students), []  # type: List[str], List[_Running]
    results: Dict[str, SubmissionGrading] = {}
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                student = waiting.pop(0)
                running.append(_start(exe, autograde_args(assignment, student, url, create,
                                                          force), course, student, logs))
            for run in list(running):
                result = _finished(run)
                if result is None and time.monotonic() - run.started > SUBMISSION_TIMEOUT_S:
                    _stop(run)
                    result = SubmissionGrading(run.student, TIMED_OUT,
                                               time.monotonic() - run.started, None,
                                               f"over {SUBMISSION_TIMEOUT_S:g} s", run.log)
                if result is not None:
                    running.remove(run)
                    results[run.student] = result
                    if progress is not None:
                        progress(result, len(results), len(students), len(running))
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        for run in running:
            _stop(run)
            results[run.student] = SubmissionGrading(
                run.student, STOPPED, time.monotonic() - run.started, None,
                "interrupted", run.log)
        raise
    return [results[s] for s in students if s in results]
