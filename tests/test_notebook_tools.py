"""Generating student notebooks from solutions (nbgrader markers)."""

from __future__ import annotations

import nbformat
import pytest

from labtools.errors import InputError
from labtools.teach import notebooks


def _solution():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("Question?\n### BEGIN SOLUTION\nThe answer.\n### END SOLUTION"),
        nbformat.v4.new_code_cell("x = 1\n### BEGIN SOLUTION\nrtt_ms = 60\n### END SOLUTION\nprint(x)"),
        nbformat.v4.new_code_cell("assert rtt_ms > 0\n### BEGIN HIDDEN TESTS\nassert rtt_ms == 60\n"
                                  "### END HIDDEN TESTS"),
        nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 2\n    ### END SOLUTION"),
    ]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="1\n")]
    nb.cells[1].execution_count = 3
    nb.cells[1].metadata["nbgrader"] = {"solution": True, "grade_id": "q1"}
    return nb


def test_student_version_replaces_answers_and_keeps_metadata():
    student = notebooks.student_version(_solution())
    md, code, tests, func = (c.source for c in student.cells)
    assert md == "Question?\nYOUR ANSWER HERE"
    assert code == "x = 1\n# YOUR CODE HERE\nraise NotImplementedError()\nprint(x)"
    assert tests == "assert rtt_ms > 0"
    assert func == "def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert student.cells[1].outputs == [] and student.cells[1].execution_count is None
    assert student.cells[1].metadata["nbgrader"]["grade_id"] == "q1"


@pytest.mark.parametrize("source, words", [
    ("### BEGIN SOLUTION\nx = 1", "never closed"),
    ("x = 1\n### END SOLUTION", "without"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "nested"),
])
def test_broken_markers_are_refused(source, words):
    with pytest.raises(InputError, match=words):
        notebooks.student_cell_source(source, "code", "nb cell 1")


def test_build_and_stale(tmp_path):
    solutions, students = tmp_path / "solutions", tmp_path / "notebooks"
    solutions.mkdir()
    nb = notebooks.clear_outputs(_solution())
    nbformat.write(nb, str(solutions / "00-x.ipynb"))
    assert notebooks.stale(solutions, students) == [
        f"{students / '00-x.ipynb'} is missing (run `labtools notebooks build`)"]
    assert notebooks.build(solutions, students) == [students / "00-x.ipynb"]
    assert notebooks.stale(solutions, students) == []
    assert notebooks.build(solutions, students) == []
    nb.cells[1].source = nb.cells[1].source.replace("60", "61")  # answers only: no change
    nbformat.write(nb, str(solutions / "00-x.ipynb"))
    assert notebooks.stale(solutions, students) == []
    nb.cells[1].source = nb.cells[1].source.replace("x = 1", "x = 2")
    nbformat.write(nb, str(solutions / "00-x.ipynb"))
    assert "differs from its solution" in notebooks.stale(solutions, students)[0]


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
