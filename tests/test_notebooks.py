"""The lab notebooks: student versions up to date, nbgrader metadata, time-outs, and (marker
``network``) every solution notebook executed top to bottom on a real network.

The unit part reads the committed files only. The network part copies each solution into a
temporary folder (so its results store lands there), runs it with ``LABTOOLS_QUICK=1`` (the
short durations CI uses) and checks that every grading cell passed, that the measurements
were saved and that nothing was left behind. Under software emulation a rendered figure
costs tens of seconds, so the kernel draws with matplotlib's non-interactive Agg backend
(every plotting call runs, no PNG is rendered; tests/test_plots.py renders them), and the
font cache is kept in ``.cache/matplotlib`` so that it is built once, not per VM boot.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any, Dict, List

import nbformat
import pytest

from labtools.teach import notebooks

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
STUDENTS = ROOT / "notebooks"

#: the course's notebooks, in order
NAMES = [
    "00-getting-started.ipynb",
    "01-udp-bandwidth-probing.ipynb",
    "02-link-latency-throughput.ipynb",
    "03-path-latency-throughput.ipynb",
    "04-multiplexing.ipynb",
    "05-parallel-connections.ipynb",
    "06-measurement-pitfalls.ipynb",
    "07-write-simpleperf.ipynb",
]
NBGRADER_KEYS = {"grade", "grade_id", "locked", "schema_version", "solution", "task"}
#: a cell that measures or drives the network (a call on probes or on the lab session)
MEASURES = re.compile(r"\bprobes\.\w+\(|\blab\.(?!expected\()\w+\(|\bprobe_capacity\(|MeasurementPanel\(")


def _read(path: Path) -> Any:
    return nbformat.read(str(path), as_version=4)


def _code_cells(nb: Any) -> List[Any]:
    return [c for c in nb.cells if c.cell_type == "code"]


def _nbgrader(cell: Any) -> Dict[str, Any]:
    return cell.metadata.get("nbgrader", {})


@pytest.fixture(scope="module", params=NAMES)
def solution(request):
    return request.param, _read(SOLUTIONS / request.param)


def test_the_course_has_these_notebooks():
    assert notebooks.notebook_names(SOLUTIONS) == NAMES
    assert notebooks.notebook_names(STUDENTS) == NAMES
    assert sorted(p.name for p in SOLUTIONS.glob("*.ipynb")) == NAMES


def test_student_notebooks_are_up_to_date():
    assert notebooks.stale(SOLUTIONS, STUDENTS) == []


@pytest.mark.parametrize("folder", [SOLUTIONS, STUDENTS], ids=["solutions", "notebooks"])
def test_committed_notebooks_carry_no_outputs(folder):
    for name in NAMES:
        for cell in _code_cells(_read(folder / name)):
            assert cell.outputs == [] and cell.execution_count is None, (name, cell.id)


def test_student_notebooks_hold_no_answers():
    for name in NAMES:
        text = (STUDENTS / name).read_text()
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, name
        nb = _read(STUDENTS / name)
        stubs = [c for c in nb.cells if _nbgrader(c).get("solution")]
        assert stubs and all("NotImplementedError" in c.source or "YOUR ANSWER HERE" in c.source
                             for c in stubs), name


def test_answers_sit_in_nbgrader_solution_cells(solution):
    name, nb = solution
    for cell in nb.cells:
        meta = _nbgrader(cell)
        if "### BEGIN SOLUTION" in cell.source:
            assert meta.get("solution") is True, (name, cell.id)
        if meta:
            assert NBGRADER_KEYS <= set(meta), (name, cell.id, meta)
            assert meta["schema_version"] == 3 and meta["task"] is False, (name, cell.id)
        if meta.get("solution"):
            assert "### BEGIN SOLUTION" in cell.source, (name, cell.id)
            assert meta["locked"] is False, (name, cell.id)
    ids = [_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c)]
    assert len(ids) == len(set(ids)), f"{name}: grade ids must be unique"


def test_grading_cells_are_locked_and_carry_points(solution):
    name, nb = solution
    tests = [c for c in _code_cells(nb)
             if _nbgrader(c).get("grade") and not _nbgrader(c).get("solution")]
    assert len(tests) >= 3, f"{name}: too few grading cells"
    for cell in tests:
        meta = _nbgrader(cell)
        assert meta["locked"] is True, (name, cell.id)
        assert isinstance(meta.get("points"), (int, float)) and meta["points"] > 0, (name, cell.id)
        assert "assert " in cell.source or "check_network(" in cell.source, (name, cell.id)
    written = [c for c in nb.cells if c.cell_type == "markdown" and _nbgrader(c).get("grade")]
    assert written and all(_nbgrader(c).get("points", 0) > 0 for c in written), name


def test_every_measuring_cell_declares_a_timeout(solution):
    name, nb = solution
    measuring = [c for c in _code_cells(nb) if MEASURES.search(c.source)]
    assert measuring, name
    for cell in measuring:
        timeout = cell.metadata.get("timeout")
        assert isinstance(timeout, int) and 30 < timeout <= 600, (name, cell.id, timeout)


#: numbers that belong to labtools.judge.policy, never typed into a notebook's code
POLICY_NUMBERS = {0.7, 1.02, 1.05, 0.9, 0.6, 0.5}


def _numbers(source: str) -> List[float]:
    import ast

    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, float)]


def test_policy_numbers_come_from_the_policy_module(solution):
    """Tolerances, bands and cut-offs live in labtools.judge.policy; a notebook that types
    them (0.70, 1.02, a Jain cut-off...) drifts from the verdicts it shows."""
    name, nb = solution
    for cell in _code_cells(nb):
        found = [v for v in _numbers(cell.source) if v in POLICY_NUMBERS]
        assert not found, (name, cell.id, found)


def test_one_widget_cell_per_notebook(solution):
    name, nb = solution
    panels = [c for c in _code_cells(nb) if "MeasurementPanel(" in c.source]
    assert len(panels) == 1, name


# --- executed for real ---------------------------------------------------------------


def _leftovers() -> int:
    from labtools.system.cleanup import find_leftovers

    return find_leftovers().count()


@pytest.mark.network
@pytest.mark.parametrize("name", NAMES, ids=[n[:2] for n in NAMES])
def test_solution_runs_top_to_bottom_on_a_real_network(name, tmp_path, monkeypatch):
    from labtools.results.store import ResultStore

    monkeypatch.setenv("LABTOOLS_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "agg")
    monkeypatch.setenv("MPLCONFIGDIR", str(ROOT / ".cache" / "matplotlib"))
    folder = tmp_path / "solutions"
    folder.mkdir()
    path = folder / name
    shutil.copy(SOLUTIONS / name, path)
    before = _leftovers()
    start = time.monotonic()
    executed = notebooks.execute(path, cwd=folder)
    took = time.monotonic() - start
    print(f"\n{name}: executed in {took:.0f} s; {notebooks.timing_line(executed)}")
    for cell in _code_cells(executed):
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        assert not errors, (cell.id, errors)
    graded = [c for c in _code_cells(executed) if _nbgrader(c).get("grade")]
    assert graded and all(c.execution_count for c in graded), name
    runs = ResultStore(folder / "results" / "labtools.sqlite").runs()  # beside the notebook
    assert len(runs) >= 1 and (runs["status"] == "ok").all(), runs
    assert _leftovers() == before


#: calls that measure (their results, and whatever is computed from them, are measurements)
MEASURING_CALLS = ("probes.", "capacity_search(", "ping_under_load(")


def _names(source: str):
    """(names a cell assigns with ``=``, names it reads), from its syntax (loop variables
    are not results)."""
    import ast

    tree = ast.parse("\n".join(ln for ln in source.splitlines()
                               if not ln.lstrip().startswith(("%", "!"))))
    stored, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                stored |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loaded.add(node.id)
    return stored, loaded


def test_grade_cells_that_need_a_measurement_are_tagged_measured(solution):
    """Replayed grading: without a results file exactly the cells tagged ``measured`` lose
    their points. The tags must therefore match what the cells depend on: a name is
    measured when a cell that calls a probe, or reads a measured name, assigns it."""
    name, nb = solution
    measured: set = set()
    tagged = []
    for cell in _code_cells(nb):  # in order: what a cell reads was assigned above it
        stored, loaded = _names(cell.source)
        if _nbgrader(cell).get("grade"):
            depends = bool(loaded & measured)
            assert ("measured" in cell.metadata.get("tags", [])) == depends, (name, cell.id)
            tagged.append(depends)
        if any(call in cell.source for call in MEASURING_CALLS) or loaded & measured:
            measured |= stored - {"lab", "topo"}
    assert any(tagged) and not all(tagged), name


def test_measured_checks_read_the_measurement_before_the_students_answer(solution):
    """Without a results file a measured check must fail with the replay's own reason
    ("... has no recorded measurement for ping(...)"), not with a NameError about a name
    whose cell failed for that same reason. So its first statement reads, of what was
    measured, only the probes' own results (which replay as a missing measurement): no
    answer, no table derived from a measurement in another cell."""
    import ast

    name, nb = solution
    measured: set = set()
    probe_results: set = set()
    for cell in _code_cells(nb):
        stored, loaded = _names(cell.source)
        if "measured" in cell.metadata.get("tags", []):
            first = ast.parse(cell.source).body[0]
            reads = {n.id for n in ast.walk(first)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            assert reads & measured <= probe_results, (name, cell.id, reads & measured)
        code = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln
                         for ln in cell.source.splitlines())  # IPython magics: no Python
        for statement in ast.parse(code).body:
            text = ast.get_source_segment(code, statement) or ""
            if any(call in text for call in MEASURING_CALLS):
                probe_results |= _names(text)[0] - {"lab", "topo"}
        if any(call in cell.source for call in MEASURING_CALLS) or loaded & measured:
            measured |= stored - {"lab", "topo"}
