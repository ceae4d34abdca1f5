"""The lab notebooks: student versions up to date, nbgrader metadata, time-outs, what a
student can read (no answer in a visible check, hidden tests instead), what is graded
(the student's work, never what the network did), rubrics, and (marker ``network``) every
solution notebook executed top to bottom on a real network.

The unit part reads the committed files only. The network part copies each solution into a
temporary folder (so its results store lands there), with a last cell that stops the network
as a student does when done (a notebook leaves it up for its measurement panel), runs it
with ``LABTOOLS_QUICK=1`` (the short durations CI uses) and checks that every grading cell
passed, that the measurements were saved and that nothing was left behind. Under software emulation a rendered figure
costs tens of seconds, so the kernel draws with matplotlib's non-interactive Agg backend
(every plotting call runs, no PNG is rendered; tests/teach/test_plots.py renders them), and the
font cache is kept in ``.cache/matplotlib`` so that it is built once, not per VM boot. The
kernels are forked from one that has imported the labs' modules, as when grading
(``execute`` with the instructor's ``ForkingKernelManager``): started anew, each cost
16-26 s of start and 14-28 s of imports under emulation, eight times. A student's kernel,
started anew, is tested by tests/system/test_vm_kernel.py and the browser tests.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Dict, List

import nbformat
import pytest

from labtools.instructor.kernel_fork_manager import ForkingKernelManager
from labtools.teach import notebook_files as notebooks

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
STUDENTS = ROOT / "notebooks"

#: the measuring labs, in order (the introduction, the five test cases, the pitfalls)
LABS = [
    "00-getting-started.ipynb",
    "01-udp-bandwidth-probing.ipynb",
    "02-link-latency-throughput.ipynb",
    "03-path-latency-throughput.ipynb",
    "04-multiplexing.ipynb",
    "05-parallel-connections.ipynb",
    "06-measurement-pitfalls.ipynb",
]
#: the course's notebooks, in order: the measuring labs, then any other lab (the
#: programming lab, 07-write-simpleperf)
NAMES = notebooks.notebook_names(SOLUTIONS)
NBGRADER_KEYS = {"grade", "grade_id", "locked", "schema_version", "solution", "task"}
#: a cell that measures or drives the network (a call on probes or on the lab session)
MEASURES = re.compile(r"\bprobes\.\w+\(|\blab\.(?!expected\(|context\()\w+\(|\bprobe_capacity\(|MeasurementPanel\("
                      r"|\brun_on\(|\bping_under_load\(|\bcapacity_search\(")


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
    assert NAMES[:len(LABS)] == LABS
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
    assert len(tests) >= 2, f"{name}: too few grading cells"
    for cell in tests:
        meta = _nbgrader(cell)
        assert meta["locked"] is True, (name, cell.id)
        assert isinstance(meta.get("points"), (int, float)) and meta["points"] > 0, (name, cell.id)
        assert "assert " in cell.source or "check_by_hand(" in cell.source, (name, cell.id)
    written = [c for c in nb.cells if c.cell_type == "markdown" and _nbgrader(c).get("grade")]
    assert written and all(_nbgrader(c).get("points", 0) > 0 for c in written), name


def test_what_the_network_did_is_reported_never_graded(solution):
    """check_network reports the network and the machine; no point rests on it, and no
    grade cell calls it (a grade cell grades what the student can influence)."""
    from labtools.teach.notebook import check_network  # noqa: F401 - it exists, and reports

    name, nb = solution
    for cell in _code_cells(nb):
        if "check_network(" in cell.source:
            assert not _nbgrader(cell), (name, cell.id, "a check_network cell is not graded")


def _visible(source: str) -> str:
    """A cell's source as a student's notebook shows it: hidden tests and answers cut."""
    for begin, end in (("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"),
                       ("### BEGIN SOLUTION", "### END SOLUTION")):
        source = re.sub(rf"{begin}.*?{end}", "", source, flags=re.S)
    return source


#: what a visible check must not hold: the kit's calculators and the formulas' constants
ANSWER_IN_SIGHT = re.compile(r"\bexpect\.|\blab\.expected\(|\.expected\.|exercises\.solve|"
                             r"\bjain_index\(|\bjudge_capacity\(|\bloaded_rtt\(|"
                             r"\b(1448|1514|1470|1512)\b")


def test_visible_checks_hold_no_answer(solution):
    """A grade cell the student can read shows no expected value, no formula and no kit
    calculator that would answer it: such checks are nbgrader's hidden tests."""
    name, nb = solution
    for cell in _code_cells(nb):
        if _nbgrader(cell).get("grade") and not _nbgrader(cell).get("solution"):
            found = ANSWER_IN_SIGHT.findall(_visible(cell.source))
            assert not found, (name, cell.id, found)
            if "### BEGIN HIDDEN TESTS" in cell.source:
                assert cell.source.count("### BEGIN HIDDEN TESTS") == \
                    cell.source.count("### END HIDDEN TESTS"), (name, cell.id)
                assert "assert " in _visible(cell.source), \
                    (name, cell.id, "a hidden check keeps a visible one: the answer's form")


def test_student_notebooks_call_no_expected_values(solution):
    """In a student's lab ``lab.expected()`` refuses (LABTOOLS_MODE=student): no cell a
    student runs may call it."""
    name, nb = solution
    for cell in _code_cells(nb):
        assert not re.search(r"\blab\.expected\(", _visible(cell.source)), (name, cell.id)


def test_every_written_answer_has_a_rubric_for_the_grader(solution):
    """Each free-text question's solution says what a full answer names, point by point,
    for the instructor in formgrader (the rubric sits inside the solution: students never
    see it)."""
    name, nb = solution
    written = [c for c in nb.cells if c.cell_type == "markdown" and _nbgrader(c).get("grade")]
    for cell in written:
        answer = cell.source.split("### BEGIN SOLUTION", 1)[-1].split("### END SOLUTION")[0]
        rubric = re.search(r"Rubric \((\d+) points?\)", answer)
        assert rubric, (name, cell.id, "no rubric inside the solution")
        assert int(rubric.group(1)) == _nbgrader(cell)["points"], (name, cell.id)


def _asked(cell: Any) -> List[str]:
    """The numbers of the written questions a markdown cell asks (``**Q3.**``)."""
    if cell.cell_type != "markdown" or _nbgrader(cell):
        return []
    return re.findall(r"\*\*Q(\d+)\.\*\*", cell.source)


@pytest.mark.parametrize("name", LABS)
def test_every_question_has_its_values_printed_right_above_it(name):
    """A written question that takes values of the student's network (rates, delays, queue
    limits: labtools.judge.question_givens) has the cell that prints them from the student's
    own network directly above it; a question that takes none has no such cell."""
    from labtools.judge.question_givens import givens, kit_topology, question_topology

    cells = _read(SOLUTIONS / name).cells
    asked = [(above, f"{name[:2]}-Q{n}") for above, cell in zip(cells, cells[1:])
             for n in _asked(cell)]
    assert asked, name
    for above, question in asked:
        given = givens(question, kit_topology(question_topology(question)))
        shown = above.cell_type == "code" and \
            f'show_question_values(lab, "{question}")' in above.source
        assert shown == bool(given), (name, question, sorted(given))


def test_every_notebook_says_how_long_it_takes(solution):
    name, nb = solution
    intro = nb.cells[0].source
    assert re.search(r"\*\*(Time:|How long it takes\.)\*\*[^\n]*\d+ (minutes|hours?)", intro), name


def test_every_lab_has_a_step_run_by_hand(solution):
    """At least one step where the student runs a tool on a node and reads its output."""
    name, nb = solution
    assert any(re.search(r"\b(run_on|by_hand)\(", c.source) for c in _code_cells(nb)), name


@pytest.mark.parametrize("name", LABS)
def test_every_measurement_shows_its_command_and_output(name):
    """Beside every result, the exact command that ran and its raw output (folded)."""
    nb = _read(SOLUTIONS / name)
    for cell in _code_cells(nb):
        if any(call in cell.source for call in MEASURING_CALLS):
            assert "show_runs(" in cell.source, (name, cell.id)


#: formulas a compute-it-first question must not find above it (outside a folded hint)
FORMULAS = re.compile(r"× ?1448 ?/ ?1514|× ?1470 ?/ ?1512|window / RTT|rate × RTT|"
                      r"bottleneck ×|step by step: count|J = |time to\s+drain every full queue")


@pytest.mark.parametrize("name", LABS)
def test_compute_it_first_questions_come_before_their_formula(name):
    """The text between a section's start and a compute-it-first answer cell gives the
    facts, not the formula that answers it (a formula may sit in a folded hint)."""
    nb = _read(SOLUTIONS / name)
    above: List[str] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            above = []
        if cell.cell_type == "markdown" and not _nbgrader(cell):
            above.append(re.sub(r"<details>.*?</details>", "", cell.source, flags=re.S))
        if _nbgrader(cell).get("solution") and cell.cell_type == "code":
            found = [f for text in above for f in FORMULAS.findall(text)]
            assert not found, (name, cell.id, found)
            above = []


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
    # then what a student does when done: a lab's network outlives "Run All" (the panel
    # measures on it) until its kernel shuts down, and a forked kernel exits without atexit
    nb = _read(SOLUTIONS / name)
    nb.cells.append(nbformat.v4.new_code_cell("lab.stop()", metadata={"timeout": 300}))
    nbformat.write(nb, str(path))
    before = _leftovers()
    start = time.monotonic()
    executed = notebooks.execute(path, cwd=folder, kernel_manager=ForkingKernelManager)
    took = time.monotonic() - start
    print(f"\n{name}: executed in {took:.0f} s; {notebooks.timing_line(executed)}")
    for cell in _code_cells(executed):
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        assert not errors, (cell.id, errors)
        # a warning is red text under the cell for the student (lab 6's fillna("-") under
        # pandas 3, seen in a browser)
        warned = [o["text"] for o in cell.outputs if o.get("name") == "stderr"
                  and "Warning" in o.get("text", "")]
        assert not warned, (cell.id, warned)
    graded = [c for c in _code_cells(executed) if _nbgrader(c).get("grade")]
    assert graded and all(c.execution_count for c in graded), name
    # not graded, but a network that produced the impossible is the kit's fault (or the VM's)
    from labtools.teach.notebook import NETWORK_LINE

    reports = [line for c in _code_cells(executed) if "check_network(" in c.source
               for o in c.outputs for line in o.get("text", "").splitlines()
               if line.startswith(NETWORK_LINE)]
    assert reports and not [r for r in reports if r.startswith(f"{NETWORK_LINE} invalid")], reports
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


def _filled(statement) -> set:
    """Names of the lists a statement appends to (``my_runs.append(m)`` inside a function
    that measures: the list holds the probes' own results)."""
    import ast

    return {node.func.value.id for node in ast.walk(statement)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend") and isinstance(node.func.value, ast.Name)}


def test_grade_cells_that_need_a_measurement_are_tagged_measured(solution):
    """Replayed grading: without a results file exactly the cells tagged ``measured`` lose
    their points. The tags must therefore match what the cells depend on: a name is
    measured when a cell that calls a probe, or reads a measured name, assigns it; a check
    of compute-it-first answers depends on the file too (the predictions on record)."""
    name, nb = solution
    measured: set = set()
    tagged = []
    for cell in _code_cells(nb):  # in order: what a cell reads was assigned above it
        stored, loaded = _names(cell.source)
        if _nbgrader(cell).get("grade"):
            depends = (bool(loaded & measured) or "grade_answers(" in cell.source
                       or "check_by_hand(" in cell.source)
            assert ("measured" in cell.metadata.get("tags", [])) == depends, (name, cell.id)
            tagged.append(depends)
        if any(call in cell.source for call in MEASURING_CALLS) or loaded & measured:
            measured |= stored - {"lab", "topo"}
    assert any(tagged), name  # every lab grades something from its results file


def test_measured_checks_read_the_measurement_before_the_students_answer(solution):
    """Without a results file a measured check must fail with the replay's own reason
    ("... has no recorded measurement for ping(...)"), not with a NameError about a name
    whose cell failed for that same reason. So its first statement reads, of what was
    measured, only the probes' own results (which replay as a missing measurement): no
    answer, no table derived from a measurement in another cell. A check of compute-it-first
    answers is the exception: it grades the answers first and then fails on the record's
    own one-line reason (``assert_predicted_first``), and so does a check of a by-hand step
    (``check_by_hand``)."""
    import ast

    name, nb = solution
    measured: set = set()
    probe_results: set = set()
    for cell in _code_cells(nb):
        stored, loaded = _names(cell.source)
        if "grade_answers(" in cell.source:
            assert "assert_predicted_first(feedback)" in cell.source, (name, cell.id)
        elif "check_by_hand(" in cell.source:  # fails with its own one line
            assert cell.source.startswith("check_by_hand(lab, "), (name, cell.id)
        elif "measured" in cell.metadata.get("tags", []):
            first = ast.parse(cell.source).body[0]
            reads = {n.id for n in ast.walk(first)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            assert reads & measured <= probe_results, (name, cell.id, reads & measured)
            # and it uses one (an attribute of a recorded measurement: a missing one raises)
            assert any(isinstance(n, ast.Attribute) for n in ast.walk(first)), (name, cell.id)
        code = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln
                         for ln in cell.source.splitlines())  # IPython magics: no Python
        for statement in ast.parse(code).body:
            text = ast.get_source_segment(code, statement) or ""
            if any(call in text for call in MEASURING_CALLS):
                probe_results |= (_names(text)[0] | _filled(statement)) - {"lab", "topo"}
        if any(call in cell.source for call in MEASURING_CALLS) or loaded & measured:
            measured |= stored - {"lab", "topo"}


#: the measurements labs 1-3 draw their conclusions from (the start of each call): lab 1's
#: UDP runs and its capacity search's steps, lab 2's links, lab 3's paths and window test
CONCLUDED_FROM = {
    "01-udp-bandwidth-probing.ipynb": ["probes.iperf_udp(lab, src, dst, RATE_MBPS",
                                       'probes.iperf_udp(lab, "h1", "h4", rate_mbps'],
    "02-link-latency-throughput.ipynb": ["probes.iperf3(lab, a, b", "probes.simpleperf(lab, a, b"],
    "03-path-latency-throughput.ipynb": ["probes.iperf3(lab, src, dst",
                                         'probes.iperf3(lab, "h1", "h9", window_bytes'],
}


@pytest.mark.parametrize("name", sorted(CONCLUDED_FROM))
def test_labs_1_to_3_repeat_what_they_conclude_from(name):
    """A conclusion rests on repeated runs, judged on their median (as in labs 4-6)."""
    code = "\n".join(c.source for c in _code_cells(nbformat.read(str(SOLUTIONS / name),
                                                                 as_version=4)))
    for start in CONCLUDED_FROM[name]:
        calls = [code[i:code.index(")", i)] for i in range(len(code))
                 if code.startswith(start, i)]
        assert calls and all("repeat=lab.durations.repeat" in c for c in calls), (name, start)


def test_a_grade_cells_id_is_its_grade_id(solution):
    """nbgrader's gradebook names a cell by its grade id, the notebook by its cell id: the
    grading tests (and an instructor reading both) match them."""
    name, nb = solution
    for cell in nb.cells:
        grade_id = _nbgrader(cell).get("grade_id")
        assert grade_id is None or cell.id == grade_id, (name, cell.id, grade_id)
