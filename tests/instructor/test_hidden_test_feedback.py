"""The feedback's step that hides the hidden tests' source (labtools.instructor.hidden_test_feedback).

A small notebook is executed by a real IPython kernel (its errors are IPython's own, frames
and all), then given to the step as nbgrader's ``generate_feedback`` gives it: each hidden
region becomes one line, the outputs stay, and no output quotes a hidden line. The real
nbgrader's feedback of a graded class is checked in tests/instructor/test_grading.py.
"""

from __future__ import annotations

import copy
import html
import re

import nbformat
from nbclient import NotebookClient

from labtools.instructor.hidden_test_feedback import (
    HIDDEN_OUTPUT_LINE,
    HIDDEN_TESTS_LINE,
    HideHiddenTests,
    feedback_preprocessors,
)

#: the student's own function (called by a hidden test, it fails there)
HELPER = "def rate_mbps(bits, gap_s):\n    return bits / gap_s.total / 1e6\n"
#: a grading cell: a visible check, then hidden tests, one of them calling the student's code
CHECK = ("assert isinstance(answer, float), 'assign answer a number'\n"
         "### BEGIN HIDDEN TESTS\n"
         "expected_secret = 2 * 21.5\n"
         "assert rate_mbps(11760, 0.00112) > 0\n"
         "### END HIDDEN TESTS")
#: a grading cell whose hidden test fails with its message
FAILS = ("### BEGIN HIDDEN TESTS\n"
         "assert answer == 42.0, \\\n"
         "    'one 1470-byte datagram per gap'\n"
         "### END HIDDEN TESTS\n"
         "print('visible after the hidden tests')")
#: a grading cell whose hidden test is a bare assert (the kit's one line quotes it)
BARE = "### BEGIN HIDDEN TESTS\nassert answer == 42.0\n### END HIDDEN TESTS"


def _grade(source: str, cell_id: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, id=cell_id)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": cell_id, "points": 1,
                                 "solution": False, "locked": True, "schema_version": 3}
    return cell


def _executed() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    # a failed check is its one line, its traceback folded below (as in the labs)
    setup = "from labtools.teach import kit_errors\nkit_errors.install();"
    nb.cells = [nbformat.v4.new_markdown_cell("## Rates\nOne datagram per gap.", id="text"),
                nbformat.v4.new_code_cell(setup, id="setup"),
                nbformat.v4.new_code_cell(HELPER, id="helper"),
                nbformat.v4.new_code_cell("answer = 43.0", id="answer"),
                _grade(CHECK, "check"), _grade(FAILS, "fails"), _grade(BARE, "bare"),
                nbformat.v4.new_code_cell("rate_mbps(1, 2)", id="own-error")]
    NotebookClient(nb, allow_errors=True, kernel_name="python3", timeout=60).execute()
    return nb


def _shown(node: object) -> str:
    """Every text in ``node`` (a notebook, its cells, outputs), without colour codes."""
    if isinstance(node, dict):
        return _shown(list(node.values()))
    if isinstance(node, list):
        return "\n".join(_shown(item) for item in node)
    return re.sub(r"\x1b\[[0-9;]*m", "", html.unescape(str(node)))


def _hidden_lines(*sources: str) -> list:
    return [line.strip() for source in sources
            for line in source.split("BEGIN HIDDEN TESTS\n")[1].split("###")[0].splitlines()]


def test_feedback_shows_where_hidden_tests_ran_and_what_they_raised_not_their_source():
    graded = _executed()
    before = copy.deepcopy(graded)
    errors = {c.id: o for c in before.cells for o in c.get("outputs", [])
              if o.output_type == "error"}
    assert set(errors) == {"check", "fails", "bare", "own-error"}
    # unhidden, the outputs quote the hidden lines: IPython's frames around the line that
    # failed, the folded traceback of a failed check, the one line of a bare assert
    for line in _hidden_lines(CHECK):
        assert line in _shown(errors["check"]["traceback"]), line
    ran = {c.id: c for c in before.cells}
    assert _hidden_lines(FAILS)[0] in _shown(ran["fails"].outputs[1])
    assert errors["bare"]["traceback"] == ["AssertionError: assert answer == 42.0"]

    shown, resources = HideHiddenTests().preprocess(graded, {"nbgrader": {}})

    assert resources == {"nbgrader": {}}
    cells = {c.id: c for c in shown.cells}
    assert cells["check"].source == ("assert isinstance(answer, float), 'assign answer a "
                                     f"number'\n{HIDDEN_TESTS_LINE}")
    assert cells["fails"].source == f"{HIDDEN_TESTS_LINE}\nprint('visible after the hidden tests')"
    assert cells["bare"].source == HIDDEN_TESTS_LINE
    text = _shown(shown)
    for line in _hidden_lines(CHECK, FAILS, BARE):
        assert line not in text, line
    assert "BEGIN HIDDEN TESTS" not in text
    # each error stays: its name and message, the frames that quote no hidden line
    for cell_id in ("check", "fails", "bare"):
        error = next(o for o in cells[cell_id].outputs if o.output_type == "error")
        assert (error["ename"], error["evalue"]) == (errors[cell_id]["ename"],
                                                     errors[cell_id]["evalue"])
        assert len(error["traceback"]) == len(errors[cell_id]["traceback"])
    assert cells["fails"].outputs[0] == errors["fails"]  # a check's one line: nothing hidden
    assert cells["check"].outputs[0]["traceback"][-1] == errors["check"]["traceback"][-1]
    assert cells["bare"].outputs[0]["traceback"] == [f"AssertionError: {HIDDEN_OUTPUT_LINE.strip()}"]
    frames = cells["check"].outputs[0]["traceback"]
    hidden_frame = next(f for f in frames if HIDDEN_OUTPUT_LINE in f)
    assert ", line 4" in hidden_frame  # where: the cell's fourth line, a hidden one...
    assert "assign answer a number" in _shown(hidden_frame)  # ...below the visible check
    assert hidden_frame.count(HIDDEN_OUTPUT_LINE) == 1  # one line for the hidden lines
    assert "return bits / gap_s.total / 1e6" in _shown(frames)  # the student's own code
    folded = _shown(cells["fails"].outputs[1])  # the check's traceback, folded
    assert HIDDEN_OUTPUT_LINE in folded and "^" not in folded
    assert f"{errors['fails']['traceback'][0]}\n</pre></details>" in folded
    # everything else as it was: the cells without hidden tests (the student's own error
    # with all its frames), the number of outputs, the notebook's metadata
    for cell_id in ("text", "setup", "helper", "answer", "own-error"):
        assert cells[cell_id] == ran[cell_id], cell_id
    for cell in before.cells:
        assert len(cells[cell.id].get("outputs", [])) == len(cell.get("outputs", []))
    assert shown.metadata == before.metadata


def test_a_region_without_its_end_hides_the_rest_of_the_cell():
    source, hidden = HideHiddenTests().without_hidden_tests(
        "x = 1\n    ### BEGIN HIDDEN TESTS\n    assert x == 1\n")
    assert source == f"x = 1\n    {HIDDEN_TESTS_LINE}"
    assert hidden == {"### BEGIN HIDDEN TESTS", "assert x == 1"}


def test_the_step_comes_after_nbgraders_own_feedback_steps():
    from nbgrader.converters.generate_feedback import GenerateFeedback

    steps = feedback_preprocessors()
    assert steps[:-1] == GenerateFeedback.class_traits()["preprocessors"].default()
    assert steps[-1] is HideHiddenTests
