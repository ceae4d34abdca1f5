"""Autograding a class with nbgrader, several submissions at once.

    labtools autograde ASSIGNMENT [--jobs N] [--course DIR] [--student ID]... [--create] [--force]

``nbgrader autograde ASSIGNMENT`` grades one submission after the other, each notebook in
a kernel of its own. Here ``jobs`` workers (:mod:`labtools.instructor.autograde_worker`) grade
at once, each one submission after the other with nbgrader's own autograde, set up once
as ``nbgrader autograde`` sets itself up (nbgrader's imports and the kernel fork server's
are paid once per worker, not once per submission). One submission's failure or hang is
that submission's: a worker that fails, dies or goes over :data:`SUBMISSION_TIMEOUT_S`
has that submission marked, a hung or dead worker is replaced, and the others go on. They
all write into the course's one gradebook: nbgrader opens it for each short write, and a
write that finds the SQLite file locked by another waits up to :data:`GRADEBOOK_WAIT_S`
for it (SQLite's ``timeout``) instead of its 5 s default. What nbgrader and the kernels
printed for each submission is kept in ``autograde-log/ASSIGNMENT/STUDENT.log`` in the
course folder.

The gradebook ends as a serial run leaves it: the same students, submissions, scores and
comments (``tests/instructor/test_class_grading.py`` compares the two).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from labtools.errors import InputError
from labtools.system import procfs
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
#: seconds a worker gets to end once it has no more submissions (its kernels, its fork
#: server)
WORKER_END_S = 60.0
#: workers per CPU by default: a submission keeps a CPU busy about a third of its time
#: (lab 7's paced loopback transfers wait). A class of 100 on 2 cores (BENCHMARKS.md,
#: "Grading a class"): 6 workers 696 s (1.73 CPUs busy), 8 657 s (1.82), 10 664 s (1.90,
#: each submission costing more CPU beside the others)
JOBS_PER_CPU = 4
#: memory one worker takes with its fork server and a kernel (MiB; 8 workers of a class
#: of 100 took 3.1 GiB at most together, 10 took 3.9)
WORKER_MEMORY_MIB = 500

GRADED, FAILED, TIMED_OUT, STOPPED = "graded", "failed", "timed out", "stopped"


@dataclass(frozen=True)
class SubmissionGrading:
    """One submission's autograde.

    Attributes:
        student: the student's id.
        status: ``graded``, ``failed`` (nbgrader failed, or its worker died), ``timed out``
            (over :data:`SUBMISSION_TIMEOUT_S`) or ``stopped`` (the run was interrupted).
        seconds: wall time, s.
        cpu_s: CPU time of the worker, its fork server and the kernels they waited for
            since the worker's previous submission (the first carries the worker's start),
            s (None: it did not end by itself).
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


def autograde_options(db_url: Optional[str], create: bool = False,
                      force: bool = False) -> List[str]:
    """nbgrader's autograde options (after the assignment) the workers configure it with."""
    options = [] if db_url is None else [f"--CourseDirectory.db_url={db_url}"]
    return options + (["--create"] if create else []) + (["--force"] if force else [])


class _Worker:
    """A worker process (:mod:`labtools.instructor.autograde_worker`) in its own session: its
    kernels, its fork server and itself are stopped together."""

    def __init__(self, python: str, course: Path, assignment: str, options: List[str],
                 student: str, log: Path) -> None:
        read_fd, write_fd = os.pipe()
        try:
            with open(log, "wb") as out:  # what it says while it starts: the first log
                self.proc = subprocess.Popen(
                    [python, "-m", "labtools.instructor.autograde_worker", str(write_fd),
                     assignment, *options], cwd=str(course), env=nbgrader_env(),
                    stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                    pass_fds=(write_fd,), start_new_session=True)
        finally:
            os.close(write_fd)
        self.replies = os.fdopen(read_fd, "r")
        self._send(student, log)

    def give(self, student: str, log: Path) -> None:
        """Grade ``student`` next, what it prints into ``log``."""
        log.write_bytes(b"")
        self._send(student, log)

    def _send(self, student: str, log: Path) -> None:
        self.student: Optional[str] = student
        self.started, self.log = time.monotonic(), log
        stdin = self.proc.stdin
        if stdin is not None:
            try:
                stdin.write(json.dumps({"student": student, "log": str(log)}).encode()
                            + b"\n")
                stdin.flush()
            except BrokenPipeError:
                pass  # it has ended: result() says so

    def result(self) -> Optional[SubmissionGrading]:
        """The student's result once the worker replied or died, else None."""
        assert self.student is not None
        seconds = time.monotonic() - self.started
        line = self.replies.readline() if _readable(self.replies) else ""
        if line:
            said = json.loads(line)
            self.student = None
            status, reason = (GRADED, "") if said["ok"] else (
                FAILED, f"nbgrader failed: {_last_line(self.log)}")
            return SubmissionGrading(said["student"], status, seconds, said["cpu_s"],
                                     reason, self.log)
        if self.proc.poll() is None:
            return None
        student, self.student = self.student, None
        return SubmissionGrading(student, FAILED, seconds, None,
                                 f"its grading process ended with status "
                                 f"{self.proc.returncode}: {_last_line(self.log)}", self.log)

    def stop(self, kill: bool) -> None:
        """End it: its input closed (it ends after its submission), or its session
        stopped (``kill``: SIGTERM, then SIGKILL after 10 s)."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        if kill:
            _signal_session(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10 if kill else WORKER_END_S)
        except subprocess.TimeoutExpired:
            _signal_session(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if not self.replies.closed:
            self.replies.close()


def _readable(stream: Any) -> bool:
    return bool(select.select([stream], [], [], 0)[0])


def _signal_session(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass


def _last_line(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace")
             .splitlines() if ln.strip()] if log.is_file() else []
    return lines[-1] if lines else "nbgrader printed nothing"


Progress = Callable[[SubmissionGrading, int, int, int], None]


def default_jobs() -> int:
    """Workers at once when none is asked for: :data:`JOBS_PER_CPU` for each CPU this
    process may use, as many as the available memory holds (:data:`WORKER_MEMORY_MIB`
    each), at least one."""
    jobs = JOBS_PER_CPU * len(os.sched_getaffinity(0))
    memory = procfs.meminfo_mib("MemAvailable")
    if memory is not None:
        jobs = min(jobs, int(memory // WORKER_MEMORY_MIB))
    return max(1, jobs)


def grade_class(course: Path, assignment: str, students: Sequence[str], jobs: int,
                python: str, progress: Optional[Progress] = None, create: bool = False,
                force: bool = False) -> List[SubmissionGrading]:
    """Autograde ``students``' submissions of ``assignment`` with ``jobs`` workers of the
    Python ``python`` (nbgrader installed in it); ``progress(result, done, total,
    running)`` after each. On Ctrl-C the running ones are stopped (``stopped``) and
    KeyboardInterrupt goes on."""
    if jobs < 1:
        raise InputError(f"jobs must be at least 1, got {jobs}")
    logs = course / LOG_FOLDER / assignment
    logs.mkdir(parents=True, exist_ok=True)
    options = autograde_options(gradebook_url(course), create, force)
    waiting, workers = list(students), []  # type: List[str], List[_Worker]
    results: Dict[str, SubmissionGrading] = {}
    try:
        while waiting or any(w.student for w in workers):
            for worker in [w for w in workers if not w.student and w.proc.poll() is not None]:
                worker.stop(kill=False)
                workers.remove(worker)
            for worker in workers:
                if worker.student is None and waiting:
                    student = waiting.pop(0)
                    worker.give(student, logs / f"{student}.log")
            while waiting and len(workers) < jobs:
                student = waiting.pop(0)
                workers.append(_Worker(python, course, assignment, options, student,
                                       logs / f"{student}.log"))
            for worker in [w for w in workers if w.student]:
                result = _result_or_time_out(worker)
                if result is not None:
                    results[result.student] = result
                    if progress is not None:
                        progress(result, len(results), len(students),
                                 sum(1 for w in workers if w.student))
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        _stop_interrupted(workers, results)
        raise
    for worker in workers:  # none has a submission left: each ends once its input closes
        worker.stop(kill=False)
    return [results[s] for s in students if s in results]


def _result_or_time_out(worker: _Worker) -> Optional[SubmissionGrading]:
    """The result of ``worker``'s submission; past :data:`SUBMISSION_TIMEOUT_S` the worker
    is killed and the submission ``timed out`` (the worker then holds none); None while it
    is still being graded."""
    result = worker.result()
    if result is None and time.monotonic() - worker.started > SUBMISSION_TIMEOUT_S:
        student = worker.student or ""
        worker.stop(kill=True)
        result = SubmissionGrading(student, TIMED_OUT, time.monotonic() - worker.started, None,
                                   f"over {SUBMISSION_TIMEOUT_S:g} s", worker.log)
        worker.student = None
    return result


def _stop_interrupted(workers: List[_Worker], results: Dict[str, SubmissionGrading]) -> None:
    """On Ctrl-C: each submission still being graded is ``stopped`` in ``results``, and
    every worker is killed."""
    for worker in workers:
        if worker.student:
            results[worker.student] = SubmissionGrading(
                worker.student, STOPPED, time.monotonic() - worker.started, None,
                "interrupted", worker.log)
        worker.stop(kill=True)
