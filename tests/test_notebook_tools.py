"""Student notebooks made by the real nbgrader from solutions, and executing notebooks."""

from __future__ import annotations

import nbformat
import pytest

from labtools.errors import EnvironmentProblem
from labtools.teach import notebooks


def _solution():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    answer = nbformat.v4.new_code_cell("x = 1\n### BEGIN SOLUTION\nrtt_ms = 60\n### END SOLUTION",
                                       id="answer")
    answer.metadata["nbgrader"] = {"grade": False, "grade_id": "answer", "locked": False,
                                   "schema_version": 3, "solution": True, "task": False}
    check = nbformat.v4.new_code_cell("assert rtt_ms > 0\n### BEGIN HIDDEN TESTS\n"
                                      "assert rtt_ms == 60\n### END HIDDEN TESTS", id="check")
    check.metadata["nbgrader"] = {"grade": True, "grade_id": "check", "locked": True,
                                  "points": 1, "schema_version": 3, "solution": False,
                                  "task": False}
    nb.cells = [nbformat.v4.new_markdown_cell("Question?", id="q"), answer, check]
    return nb


def test_nbgrader_makes_the_student_version(tmp_path):
    solutions, students = tmp_path / "solutions", tmp_path / "notebooks"
    solutions.mkdir()
    nbformat.write(_solution(), str(solutions / "00-x.ipynb"))
    assert notebooks.stale(solutions, students) == [
        f"{students / '00-x.ipynb'} is missing (run `labtools notebooks build`)"]
    assert notebooks.build(solutions, students) == [students / "00-x.ipynb"]
    student = nbformat.read(str(students / "00-x.ipynb"), as_version=4)
    answer, check = student.cells[1].source, student.cells[2].source
    assert answer == "x = 1\n# YOUR CODE HERE\nraise NotImplementedError()"
    assert check == "assert rtt_ms > 0"  # the hidden test is gone
    assert student.cells[2].metadata["nbgrader"]["checksum"]  # nbgrader's own marks
    assert notebooks.stale(solutions, students) == []
    assert notebooks.build(solutions, students) == []
    nb = _solution()
    nb.cells[1].source = nb.cells[1].source.replace("60", "61")  # an answer: no change
    nbformat.write(nb, str(solutions / "00-x.ipynb"))
    assert notebooks.stale(solutions, students) == []
    nb.cells[1].source = nb.cells[1].source.replace("x = 1", "x = 2")
    nbformat.write(nb, str(solutions / "00-x.ipynb"))
    assert "differs from its solution" in notebooks.stale(solutions, students)[0]


def test_without_nbgrader_the_error_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(notebooks.shutil, "which", lambda *a, **k: None)
    with pytest.raises(EnvironmentProblem, match="nbgrader is not installed"):
        notebooks.nbgrader(["--version"], tmp_path)


def test_cell_timeout_from_metadata():
    cell = nbformat.v4.new_code_cell("x")
    assert notebooks.cell_timeout(cell, 30) == 30
    cell.metadata["timeout"] = 240
    assert notebooks.cell_timeout(cell, 30) == 240


def test_execute_records_cell_timings_and_reports_a_failing_cell(tmp_path):
    """A real kernel (nbclient + ipykernel): the per-cell timings come from its metadata."""
    from labtools.errors import LabtoolsError

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import time\ntime.sleep(0.5)", id="nap"),
                nbformat.v4.new_code_cell("x = 1", id="quick")]
    path = tmp_path / "00-timing.ipynb"
    nbformat.write(nb, str(path))
    executed = notebooks.execute(path, timeout_s=60)
    seconds = dict(notebooks.cell_seconds(executed))
    assert seconds["nap"] >= 0.5 and seconds["quick"] < seconds["nap"]
    assert notebooks.timing_line(executed).startswith("cells took ")
    assert "slowest: nap" in notebooks.timing_line(executed)

    nb.cells.append(nbformat.v4.new_code_cell("1 / 0", id="broken"))
    nbformat.write(nb, str(path))
    with pytest.raises(LabtoolsError, match="ZeroDivisionError"):
        notebooks.execute(path, timeout_s=60)


def test_the_kernel_gets_time_to_stop_the_network_when_a_notebook_ends(tmp_path):
    """A notebook's ``atexit`` (``lab.stop``) takes longer than Jupyter's default 5 s grace
    under emulation; the kernel must not be killed in the middle of it, even after a failure."""
    from labtools.errors import LabtoolsError

    marker = tmp_path / "stopped"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import atexit, pathlib, time\n"
        f"def stop():\n    time.sleep(7)\n    pathlib.Path({str(marker)!r}).write_text('ok')\n"
        "atexit.register(stop)", id="slow-stop"),
        nbformat.v4.new_code_cell("raise RuntimeError('a cell failed')", id="broken")]
    path = tmp_path / "00-stop.ipynb"
    nbformat.write(nb, str(path))
    with pytest.raises(LabtoolsError, match="cell broken failed: RuntimeError: a cell failed"):
        notebooks.execute(path, timeout_s=60)
    assert notebooks.KERNEL_SHUTDOWN_WAIT_S > 7
    assert marker.read_text() == "ok"
