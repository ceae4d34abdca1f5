"""Student notebooks from solutions (by nbgrader itself), and running notebooks top to bottom.

Single source: ``solutions/NAME.ipynb`` carry the answers between nbgrader's markers, and
``notebooks/NAME.ipynb`` are what ``nbgrader generate_assignment`` makes of them
(``labtools notebooks build`` runs it in a throwaway course folder and copies the result):
answers become ``# YOUR CODE HERE`` / ``YOUR ANSWER HERE``, hidden tests go, outputs are
cleared, cells are locked and checksummed. An instructor running nbgrader on
``solutions/`` therefore releases exactly the committed student notebooks.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from labtools.errors import EnvironmentProblem, InputError

#: the assignment name used in the throwaway course folder
ASSIGNMENT = "labs"
#: seconds nbgrader may take to generate the student notebooks
GENERATE_TIMEOUT_S = 300
#: seconds nbgrader gives one cell while it autogrades (its default is 30): lab 7's hidden
#: cross-tests run the kit's simpleperf server and client on loopback, a few seconds on an
#: idle machine and over 30 on a busy one (a CI run lost their points that way)
GRADING_CELL_TIMEOUT_S = 300


def course_config(course_id: str) -> str:
    """The ``nbgrader_config.py`` of a course that grades the kit's labs: its id,
    :data:`GRADING_CELL_TIMEOUT_S` for each cell, autograde's kernels forked from one
    that has imported what the labs import (:mod:`labtools.instructor.grading_kernels`), and
    feedback that shows no hidden test's source (:mod:`labtools.instructor.hidden_test_feedback`;
    where the kit is not installed, nbgrader's own steps)."""
    return (f"c = get_config()\nc.CourseDirectory.course_id = {course_id!r}\n"
            f"c.Execute.timeout = {GRADING_CELL_TIMEOUT_S}  # seconds per cell (nbgrader: 30)\n"
            "try:  # each kernel forked from one that imported the labs' modules\n"
            "    from labtools.instructor.grading_kernels import autograde_preprocessors\n"
            "    c.Autograde.autograde_preprocessors = autograde_preprocessors()\n"
            "    # the feedback: where hidden tests ran and what they raised, not their source\n"
            "    from labtools.instructor.hidden_test_feedback import feedback_preprocessors\n"
            "    c.GenerateFeedback.preprocessors = feedback_preprocessors()\n"
            "except ImportError:\n"
            "    pass\n")


#: the notebook metadata JupyterLab writes when a student's kernel starts: the kernelspec
#: and ipykernel's ``language_info`` on the labs' Python (Debian 12's 3.11.2: the lab VM,
#: the container image, a course hub's servers). A notebook carrying anything else is
#: changed by JupyterLab as it opens, and opens marked as modified.
LAB_NOTEBOOK_METADATA: Dict[str, Any] = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                   "name": "python3"},
    "language_info": {"codemirror_mode": {"name": "ipython", "version": 3},
                      "file_extension": ".py", "mimetype": "text/x-python", "name": "python",
                      "nbconvert_exporter": "python", "pygments_lexer": "ipython3",
                      "version": "3.11.2"},
}


def _pairs(solutions: Path, students: Path) -> List[Tuple[Path, Path]]:
    found = sorted(solutions.glob("*.ipynb"))
    if not found:
        raise InputError(f"no notebooks in {solutions}")
    return [(src, students / src.name) for src in found]


def nbgrader_env() -> Dict[str, str]:
    """The environment for nbgrader's commands: this Python's scripts first on PATH
    (nbgrader runs ``alembic`` from there to create its gradebook)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def nbgrader(args: List[str], course: Path, timeout_s: float = GENERATE_TIMEOUT_S) -> str:
    """Run ``nbgrader ARGS`` in the course folder ``course``; its output, or
    :class:`EnvironmentProblem` with nbgrader's last line when it fails."""
    exe = shutil.which("nbgrader", path=nbgrader_env()["PATH"])
    if exe is None:
        raise EnvironmentProblem("nbgrader is not installed: pip install 'labtools[dev]' "
                                 "(bash scripts/setup.sh installs it)")
    proc = subprocess.run([exe, *args], cwd=str(course), env=nbgrader_env(), text=True,
                          capture_output=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit status {proc.returncode}"
        raise EnvironmentProblem(f"nbgrader {args[0]} failed: {last}")
    return proc.stdout + proc.stderr


def generate(solutions: Path, into: Path) -> List[Path]:
    """The student notebooks nbgrader makes of ``solutions``, written into ``into``."""
    pairs = _pairs(solutions, into)
    with tempfile.TemporaryDirectory(prefix="labtools-course-") as tmp:
        course = Path(tmp)
        source = course / "source" / ASSIGNMENT
        source.mkdir(parents=True)
        for src, _ in pairs:
            shutil.copy(src, source / src.name)
        (course / "nbgrader_config.py").write_text(course_config("labtools"))
        nbgrader(["generate_assignment", ASSIGNMENT, "--create", "--force"], course)
        into.mkdir(parents=True, exist_ok=True)
        for src, dst in pairs:
            _as_the_lab_opens_it(course / "release" / ASSIGNMENT / src.name, dst)
    return [dst for _, dst in pairs]


def _as_the_lab_opens_it(made: Path, dst: Path) -> None:
    """Write nbgrader's notebook ``made`` to ``dst`` with the metadata a student's kernel
    reports (:data:`LAB_NOTEBOOK_METADATA`), as nbformat (and so Jupyter) writes it."""
    import copy

    import nbformat

    nb = nbformat.read(str(made), as_version=4)
    nb.metadata.update(copy.deepcopy(LAB_NOTEBOOK_METADATA))
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as err:
        raise InputError(f"{made.name}: not a valid notebook: {err.message}") from None
    nbformat.write(nb, str(dst))


def build(solutions: Path = Path("solutions"), students: Path = Path("notebooks")) -> List[Path]:
    """Write every student notebook (nbgrader's release of the solutions); returns the
    ones that changed."""
    with tempfile.TemporaryDirectory(prefix="labtools-release-") as tmp:
        changed = []
        for made in generate(solutions, Path(tmp)):
            dst = students / made.name
            if not dst.is_file() or dst.read_bytes() != made.read_bytes():
                students.mkdir(parents=True, exist_ok=True)
                shutil.copy(made, dst)
                changed.append(dst)
    return changed


class WorkspaceFiles(NamedTuple):
    """What :func:`make_workspace` did: the files it ``added``, those it ``kept`` (the
    student's work), and the symbolic ``links`` it found in their place and left alone."""

    added: List[Path]
    kept: List[Path]
    links: List[Path]


def make_workspace(students: Path, folder: Path) -> WorkspaceFiles:
    """A student's workspace in ``folder``: a copy of every file of ``students`` (the
    student notebooks, and any file a lab hands out beside them, e.g. a skeleton module)
    that is not there yet; a file already there is the student's work and stays as it is.
    Nothing is written outside ``folder`` or through a link: a symbolic link in the place
    of a file (dangling or not) is left alone and returned in ``links``. Nothing from
    ``solutions/`` ever goes in.

    Raises:
        InputError: no student notebooks; ``folder`` (or a folder above it) is a file, a
            dangling link, or a folder this user may not write.
    """
    if not notebook_names(students):
        raise InputError(f"no student notebooks in {students} (labtools notebooks build)")
    names = sorted(p.name for p in students.iterdir()
                   if p.is_file() and not p.name.startswith("."))
    if (folder.exists() or folder.is_symlink()) and not folder.is_dir():
        raise InputError(f"{folder} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the workspace {folder}: {err.strerror}") from None
    done = WorkspaceFiles([], [], [])
    for name in names:
        target = folder / name
        if _copy_new(students / name, target):
            done.added.append(target)
        else:
            (done.links if target.is_symlink() else done.kept).append(target)
    return done


def _copy_new(source: Path, target: Path) -> bool:
    """Copy ``source`` to a new file ``target``; False when ``target`` exists (a file, a
    folder or a link, dangling or not: ``O_EXCL`` never follows one).

    Raises:
        InputError: ``target`` cannot be written (its folder may not be written, a full
            disk); nothing is left of it.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        fd = os.open(target, flags, source.stat().st_mode & 0o777)
    except FileExistsError:
        return False
    except OSError as err:
        raise InputError(f"cannot write {target}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            shutil.copyfileobj(src, out)
    except OSError as err:
        target.unlink(missing_ok=True)
        raise InputError(f"cannot write {target}: {err.strerror}") from None
    return True


def stale(solutions: Path = Path("solutions"), students: Path = Path("notebooks")) -> List[str]:
    """Reasons why the committed notebooks are out of date (empty when all is well)."""
    import nbformat

    problems = []
    for src, _ in _pairs(solutions, students):
        solution = nbformat.read(str(src), as_version=4)
        if any(c.cell_type == "code" and c.outputs for c in solution.cells):
            problems.append(f"{src} carries outputs (clear them before committing)")
    with tempfile.TemporaryDirectory(prefix="labtools-release-") as tmp:
        for made in generate(solutions, Path(tmp)):
            dst = students / made.name
            if not dst.is_file():
                problems.append(f"{dst} is missing (run `labtools notebooks build`)")
            elif dst.read_bytes() != made.read_bytes():
                problems.append(f"{dst} differs from its solution (run `labtools notebooks build`)")
    extra = {p.name for p in students.glob("*.ipynb")} - {p.name for p in solutions.glob("*.ipynb")}
    problems += [f"{students / name} has no solution" for name in sorted(extra)]
    return problems


#: seconds a kernel gets to exit on its own (its ``atexit`` stops the lab's network, which
#: takes a while under emulation) before it is killed; Jupyter's default is 5 s
KERNEL_SHUTDOWN_WAIT_S = 120.0
#: seconds a kernel gets to start; nbclient's default (60 s) is too short for a busy
#: machine under software emulation, where a kernel takes 15-30 s
KERNEL_STARTUP_S = 300


def execute(path: Path, timeout_s: int = 900, cwd: Optional[Path] = None,
            kernel: str = "python3", kernel_manager: Optional[Callable[..., Any]] = None
            ) -> Any:
    """Run a notebook top to bottom with nbclient; returns the executed notebook.

    A cell may declare its own time-out in its metadata (``"timeout": seconds``), as long
    measurement cells do; otherwise ``timeout_s`` applies to each cell. ``kernel_manager``:
    the class of Jupyter kernel manager to start the kernel with, for a caller that runs
    many notebooks (the instructor's forked kernels,
    :class:`labtools.instructor.kernel_fork_manager.ForkingKernelManager`, as when
    grading); by default, and always for a student, the kernel is started anew."""
    import nbformat
    from jupyter_client import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from labtools.errors import LabtoolsError

    nb = nbformat.read(str(path), as_version=4)
    km = (kernel_manager or KernelManager)(kernel_name=kernel,
                                           shutdown_wait_time=KERNEL_SHUTDOWN_WAIT_S)
    client = NotebookClient(nb, km=km, timeout=timeout_s, kernel_name=kernel,
                            startup_timeout=KERNEL_STARTUP_S,
                            resources={"metadata": {"path": str(cwd or path.parent)}},
                            timeout_func=lambda cell: cell_timeout(cell, timeout_s))
    try:
        client.execute(cleanup_kc=True)  # shut the kernel down gracefully, even though we made km
    except CellExecutionError as err:
        failed = next((c for c in nb.cells if c.cell_type == "code" and any(
            o.get("output_type") == "error" for o in c.get("outputs", []))), None)
        where = f"cell {failed.get('id', '?')}" if failed is not None else "a cell"
        reason = f"{err.ename}: {err.evalue}".strip().rstrip(":")
        raise LabtoolsError(f"{path.name}: {where} failed: {reason}") from None
    return nb


def cell_seconds(nb: Any) -> List[Tuple[str, float]]:
    """(cell id, seconds) for each executed code cell of ``nb``, from the timings nbclient
    records in the cell metadata (``execution``: ``iopub.execute_input`` to
    ``shell.execute_reply``)."""
    from datetime import datetime

    out = []
    for cell in nb.cells:
        timing = cell.metadata.get("execution", {}) if cell.cell_type == "code" else {}
        begin, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        if begin and end:
            took = datetime.fromisoformat(end.replace("Z", "+00:00")) - \
                datetime.fromisoformat(begin.replace("Z", "+00:00"))
            out.append((cell.get("id", "?"), round(took.total_seconds(), 1)))
    return out


def timing_line(nb: Any, slowest: int = 3) -> str:
    """One line: total seconds of the executed cells and the ``slowest`` cells."""
    seconds = cell_seconds(nb)
    worst = sorted(seconds, key=lambda item: -item[1])[:slowest]
    return (f"cells took {sum(s for _, s in seconds):.0f} s; slowest: "
            + ", ".join(f"{cid} {s:.0f} s" for cid, s in worst))


def cell_timeout(cell: Any, default_s: int) -> int:
    """The time-out a cell declares in its metadata, or ``default_s``."""
    value = cell.metadata.get("timeout")
    if isinstance(value, (int, float)) and value > 0:
        return int(value)
    return default_s


def notebook_names(folder: Path) -> List[str]:
    """Notebook file names in ``folder``, in course order."""
    return sorted(p.name for p in folder.glob("*.ipynb") if re.match(r"^\d\d-", p.name))
