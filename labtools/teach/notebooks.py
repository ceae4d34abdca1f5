"""Student notebooks from solutions, and running notebooks top to bottom.

Single source: ``solutions/NAME.ipynb`` carry the answers between nbgrader's markers, and
``notebooks/NAME.ipynb`` are generated from them (``labtools notebooks build``):

- in code cells, the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` become
  ``# YOUR CODE HERE`` and ``raise NotImplementedError()`` (as nbgrader writes them);
- in markdown cells, the text between the markers becomes ``YOUR ANSWER HERE``;
- the lines between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` are removed;
- outputs and execution counts are cleared; nbgrader cell metadata is kept, so instructors
  can also use nbgrader directly on ``solutions/``.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, List, Optional, Tuple

from labtools.errors import InputError

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
CODE_STUB = ["# YOUR CODE HERE", "raise NotImplementedError()"]
MARKDOWN_STUB = ["YOUR ANSWER HERE"]


def _replace_between(lines: List[str], begin: str, end: str, stub: List[str],
                     where: str) -> List[str]:
    out: List[str] = []
    inside = False
    indent = ""
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped == begin:
            if inside:
                raise InputError(f"{where}: nested {begin!r} at line {number}")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + s for s in stub)
        elif stripped == end:
            if not inside:
                raise InputError(f"{where}: {end!r} without {begin!r} at line {number}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise InputError(f"{where}: {begin!r} is never closed")
    return out


def student_cell_source(source: str, cell_type: str, where: str = "cell") -> str:
    """The student version of one cell's source."""
    lines = source.split("\n")
    stub = CODE_STUB if cell_type == "code" else MARKDOWN_STUB
    lines = _replace_between(lines, BEGIN_SOLUTION, END_SOLUTION, stub, where)
    lines = _replace_between(lines, BEGIN_HIDDEN, END_HIDDEN, [], where)
    return "\n".join(lines)


def clear_outputs(nb: Any) -> Any:
    """A copy of ``nb`` with outputs and execution counts removed."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
    return nb


def student_version(solution: Any, name: str = "notebook") -> Any:
    """The student notebook made from a solution notebook."""
    nb = clear_outputs(solution)
    for index, cell in enumerate(nb.cells):
        cell.source = student_cell_source(cell.source, cell.cell_type, f"{name} cell {index}")
    return nb


def _dump(nb: Any) -> str:
    import nbformat

    return nbformat.writes(nb) + "\n"


def _pairs(solutions: Path, students: Path) -> List[Tuple[Path, Path]]:
    found = sorted(solutions.glob("*.ipynb"))
    if not found:
        raise InputError(f"no notebooks in {solutions}")
    return [(src, students / src.name) for src in found]


def build(solutions: Path = Path("solutions"), students: Path = Path("notebooks")) -> List[Path]:
    """Write every student notebook; returns the ones that changed."""
    import nbformat

    changed = []
    students.mkdir(parents=True, exist_ok=True)
    for src, dst in _pairs(solutions, students):
        text = _dump(student_version(nbformat.read(str(src), as_version=4), src.stem))
        if not dst.is_file() or dst.read_text() != text:
            dst.write_text(text)
            changed.append(dst)
    return changed


def stale(solutions: Path = Path("solutions"), students: Path = Path("notebooks")) -> List[str]:
    """Reasons why the committed notebooks are out of date (empty when all is well)."""
    import nbformat

    problems = []
    for src, dst in _pairs(solutions, students):
        solution = nbformat.read(str(src), as_version=4)
        if any(c.cell_type == "code" and c.outputs for c in solution.cells):
            problems.append(f"{src} carries outputs (clear them before committing)")
        want = _dump(student_version(solution, src.stem))
        if not dst.is_file():
            problems.append(f"{dst} is missing (run `labtools notebooks build`)")
        elif dst.read_text() != want:
            problems.append(f"{dst} differs from its solution (run `labtools notebooks build`)")
    extra = {p.name for p in students.glob("*.ipynb")} - {p.name for p in solutions.glob("*.ipynb")}
    problems += [f"{students / name} has no solution" for name in sorted(extra)]
    return problems


#: seconds a kernel gets to exit on its own (its ``atexit`` stops the lab's network, which
#: takes a while under emulation) before it is killed; Jupyter's default is 5 s
KERNEL_SHUTDOWN_WAIT_S = 120.0


def execute(path: Path, timeout_s: int = 900, cwd: Optional[Path] = None,
            kernel: str = "python3") -> Any:
    """Run a notebook top to bottom with nbclient; returns the executed notebook.

    A cell may declare its own time-out in its metadata (``"timeout": seconds``), as long
    measurement cells do; otherwise ``timeout_s`` applies to each cell."""
    import nbformat
    from jupyter_client import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from labtools.errors import LabtoolsError

    nb = nbformat.read(str(path), as_version=4)
    km = KernelManager(kernel_name=kernel, shutdown_wait_time=KERNEL_SHUTDOWN_WAIT_S)
    client = NotebookClient(nb, km=km, timeout=timeout_s, kernel_name=kernel,
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
