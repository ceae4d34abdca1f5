"""What a student reads in the browser: a kit error as its one line, the network check's
summary line, a notebook that opens unchanged, and a lab without the instructor's tools."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, Tuple

import nbformat

ROOT = Path(__file__).resolve().parents[2]
MESSAGE = "iperf3 on h1 exited with status 1: unable to connect to server"


def _graded(source: str, cell_id: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, id=cell_id)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": cell_id, "locked": False,
                                 "points": 1, "schema_version": 3, "solution": False,
                                 "task": False}
    return cell


def test_a_kit_error_is_its_one_line_and_still_fails_the_cell():
    """In a real kernel (nbclient): the kit's error shows as ``ToolError: message`` with
    the traceback folded below it and ``%tb`` still printing it; nbclient gets the error
    reply and nbgrader gives the cell no points. Another error keeps its traceback."""
    from nbclient import NotebookClient
    from nbgrader.utils import determine_grade

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("from labtools.teach import kit_errors\n"
                                  "print(kit_errors.install())", id="setup"),
        _graded("from labtools.errors import ToolError\n"
                "def probe():\n"
                f"    raise ToolError({MESSAGE!r})\n"
                "probe()", "kit"),
        nbformat.v4.new_code_cell("%tb", id="tb"),
        _graded("def mine():\n    raise ValueError('my own bug')\nmine()", "mine"),
    ]
    failed = []
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(ROOT)}},
                            on_cell_error=lambda cell, cell_index, execute_reply:
                            failed.append(cell.id))
    client.execute()
    setup, kit, tb, mine = nb.cells
    assert setup.outputs[0]["text"].strip() == "True"
    assert failed == ["kit", "mine"]  # both replies are errors, as nbclient reads them

    error, folded = kit.outputs
    assert error["output_type"] == "error" and error["ename"] == "ToolError"
    assert error["traceback"] == [f"ToolError: {MESSAGE}"]  # the one line, nothing else
    page = folded["data"]["text/html"]
    assert folded["output_type"] == "display_data" and page.startswith("<details>")
    assert "Traceback (most recent call last)" in page and "probe()" in page
    assert "%tb" in folded["data"]["text/plain"]
    assert determine_grade(kit) == (0, 1.0)  # nbgrader: a failed cell, no points

    shown = "\n".join(line for o in tb.outputs for line in o.get("traceback", []))
    assert "probe()" in shown and MESSAGE in shown  # %tb: the whole traceback
    mine_error = [o for o in mine.outputs if o["output_type"] == "error"]
    assert len(mine_error) == 1 and len(mine_error[0]["traceback"]) > 1  # not folded
    assert determine_grade(mine) == (0, 1.0)


def test_a_wrong_answer_ends_its_check_with_one_line_and_no_traceback(tmp_path):
    """A graded check cell as the labs have it (the answers' feedback displayed, then an
    ``assert`` on it), run in a real kernel: the feedback reads as sentences (no table, no
    NaN, no False), the failed ``assert`` shows its one line with the traceback folded,
    the cell still fails for nbclient and gets no points from nbgrader; the kit's own
    failed check (``assert_predicted_first``) too. An ``assert`` inside another module (the
    student's own program) keeps its whole traceback."""
    from nbclient import NotebookClient
    from nbgrader.utils import determine_grade

    (tmp_path / "mine.py").write_text("def helper():\n    assert 1 + 1 == 3, 'my own bug'\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import os\nos.environ.pop('LABTOOLS_SHOW_ANSWERS', None)\n"
            "os.environ['LABTOOLS_MODE'] = 'student'\n"
            "from IPython.display import display\n"
            "from labtools.teach.notebook import assert_predicted_first, grade_answers, open_lab\n"
            "lab = open_lab('link')\ntopo = lab.topo", id="setup"),
        _graded('feedback = grade_answers(lab, {"rtt_ms r1 r2": topo.link("L1").delay_ms,\n'
                '                               "rtt_ms r2 r3": 2 * topo.link("L2").delay_ms})\n'
                "display(feedback)\n"
                'assert feedback["correct"].all(), "not all answers are right yet: read the '
                'messages above"', "check"),
        _graded("assert_predicted_first(feedback)", "hidden"),
        _graded("from mine import helper\nhelper()", "mine"),
        _graded("x = 1\nassert x == 2", "bare"),
    ]
    failed = []
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}},
                            on_cell_error=lambda cell, cell_index, execute_reply:
                            failed.append(cell.id))
    client.execute()
    setup, check, hidden, mine, bare = nb.cells
    assert not [o for o in setup.outputs if o["output_type"] == "error"], setup.outputs
    assert failed == ["check", "hidden", "mine", "bare"]

    shown = [o for o in check.outputs if o["output_type"] == "display_data"][0]["data"]
    text, page = shown["text/plain"], shown["text/html"]
    for said in (text, page):
        assert "not right yet" in said and "you answered" in said and "RTT r1 → r2 (ms)" in said
        assert "NaN" not in said and "False" not in said and "on_record" not in said
    assert "<table" not in page and "no right answer on record" not in text
    assert len(text.splitlines()) == 3  # one sentence per answer, then how many are right
    error = [o for o in check.outputs if o["output_type"] == "error"]
    assert len(error) == 1 and error[0]["ename"] == "AssertionError"
    assert error[0]["traceback"] == ["AssertionError: not all answers are right yet: read the "
                                     "messages above"]
    assert determine_grade(check) == (0, 1.0)

    late = [o for o in hidden.outputs if o["output_type"] == "error"][0]
    assert len(late["traceback"]) == 1 and "no right answer on record" in late["traceback"][0]
    assert determine_grade(hidden) == (0, 1.0)
    bare_error = [o for o in bare.outputs if o["output_type"] == "error"][0]
    assert bare_error["traceback"] == ["AssertionError: assert x == 2"]
    mine_error = [o for o in mine.outputs if o["output_type"] == "error"][0]
    assert len(mine_error["traceback"]) > 1 and "my own bug" in "".join(mine_error["traceback"])


def test_a_kit_error_outside_a_notebook_is_left_alone():
    from labtools.teach import kit_errors

    assert kit_errors.install() is False  # no IPython kernel here: nothing installed


def test_the_network_line_says_when_the_senders_count_was_flagged(capsys):
    """A sender's count above the path is printed INVALID: the last line still calls the
    network ok, and says so about the sender, never "ok" alone under an INVALID line."""
    from labtools.judge import policy
    from labtools.judge.verdicts import Verdict
    from labtools.teach.notebook import NETWORK_LINE, check_network

    class Flows:
        src, dst, tool = "h1", "h4", "iperf3"
        verdicts = [Verdict("receiver_rate", 9.5, 9.4, "Mbit/s", policy.OK, "99% of 9.5"),
                    Verdict("sender_rate", 9.5, 14.0, "Mbit/s", policy.INVALID,
                            "above the goodput ceiling")]

    assert check_network(Flows()) == policy.OK  # the network did nothing wrong
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("INVALID") and "sender_rate" in lines[1]
    last = lines[-1]
    assert last.startswith(f"{NETWORK_LINE} ok;") and "h1-h4 iperf3: sender_rate invalid" in last
    assert last.endswith("(reported, not graded)")

    Flows.verdicts = Flows.verdicts[:1]  # nothing flagged: the plain line
    check_network(Flows())
    assert capsys.readouterr().out.splitlines()[-1] == f"{NETWORK_LINE} ok (reported, not graded)"


#: nbgrader's instructor-side tools: lab extensions (plugins) and server extensions
INSTRUCTOR_PLUGINS = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                      "@jupyter/nbgrader:course-list")
INSTRUCTOR_SERVER = ("nbgrader.server_extensions.formgrader",
                     "nbgrader.server_extensions.course_list")
#: what a student's server does not load either: the language-server bridge (no language
#: server is installed; its import took 13 s of the lab VM's start under emulation)
NOT_LOADED = ("jupyter_lsp",)
#: what a student on a course uses: the assignment list (fetch, submit) and validation,
#: loaded once the server runs (labtools.teach.deferred_extensions)
STUDENT_SERVER = ("nbgrader.server_extensions.assignment_list",
                  "nbgrader.server_extensions.validate_assignment")

WHAT_JUPYTER_LOADS = """
import json
from jupyter_server.serverapp import ServerApp
from jupyterlab.commands import get_app_info
app = ServerApp()
app.load_config_file()
app.find_server_extensions()
print(json.dumps({"server": app.jpserver_extensions,
                  "lab_disabled": sorted(get_app_info().get("disabled", {}))}))
"""


def _served_config_path(tmp_path: Path, mode: str) -> str:
    """JUPYTER_CONFIG_PATH as ``scripts/lab.sh --serve`` hands it to ``jupyter lab`` (a
    stand-in for the venv's ``python``, which starts the lab, records it instead)."""
    venv = tmp_path / mode / "venv"
    (venv / "bin").mkdir(parents=True)
    record = tmp_path / mode / "config-path"
    fake = venv / "bin" / "python"
    fake.write_text(f'#!/bin/sh\nprintf %s "${{JUPYTER_CONFIG_PATH:-}}" > {record}\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_CONFIG_PATH"}
    env.update(LABTOOLS_VENV=str(venv), LABTOOLS_MODE=mode, JUPYTER_TOKEN="t", LAB_PORT="8899")
    subprocess.run(["bash", str(ROOT / "scripts" / "lab.sh"), "--serve"], env=env,
                   check=True, timeout=60, capture_output=True)
    return record.read_text()


def _what_jupyter_loads(tmp_path: Path, mode: str) -> Tuple[str, Dict[str, Any]]:
    """(the JUPYTER_CONFIG_PATH the launcher passes for ``mode``, what Jupyter itself then
    loads: its server extensions and the lab plugins it disables)."""
    import sys

    config_path = _served_config_path(tmp_path, mode)
    env = dict(os.environ, JUPYTER_CONFIG_PATH=config_path)
    proc = subprocess.run([sys.executable, "-c", WHAT_JUPYTER_LOADS], env=env, check=True,
                          capture_output=True, text=True, timeout=120)
    return config_path, json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_students_lab_has_no_instructor_tools(tmp_path):
    """make lab (and the lab VM's service) for a student: nbgrader's formgrader, course list
    and Create Assignment are off, in the lab and in the server, as Jupyter itself reads
    the config the launcher passes."""
    config_path, loaded = _what_jupyter_loads(tmp_path, "student")
    assert config_path == str(ROOT / "deploy/image/etc/labtools/jupyter/student")
    assert set(INSTRUCTOR_PLUGINS) <= set(loaded["lab_disabled"])
    assert not [p for p in loaded["lab_disabled"] if "assignment-list" in p]
    assert not [name for name in INSTRUCTOR_SERVER + NOT_LOADED if loaded["server"].get(name)]
    # the student's two are loaded once the server runs (tests/teach/test_lab_server.py)
    from labtools.teach.deferred_extensions import DEFERRED

    assert loaded["server"].get("labtools.teach.deferred_extensions")
    assert DEFERRED == STUDENT_SERVER
    assert not [name for name in STUDENT_SERVER if loaded["server"].get(name)]

    service = (ROOT / "scripts" / "lab-service.sh").read_text()
    student_branch = service.split('if [ "$mode" = student ]; then', 1)[1].split("\nfi\n")[0]
    assert f"Environment=JUPYTER_CONFIG_PATH=$here/{config_path[len(str(ROOT)) + 1:]}" \
        in student_branch


def test_an_instructors_lab_has_every_nbgrader_tool_loaded_once_it_answers(tmp_path):
    """make lab (and the lab VM's service) for an instructor: Jupyter, reading the config the
    launcher passes, imports none of nbgrader's server extensions before it serves; the
    kit's deferred loader then loads all four (the formgrader and the course list too), and
    no lab plugin is off."""
    from labtools.teach.deferred_extensions import deferred_modules

    config_path, loaded = _what_jupyter_loads(tmp_path, "instructor")
    assert config_path == str(ROOT / "deploy/lab/instructor")
    assert loaded["server"].get("labtools.teach.deferred_extensions")
    assert not [name for name in INSTRUCTOR_SERVER + STUDENT_SERVER if loaded["server"].get(name)]
    assert not [p for p in loaded["lab_disabled"] if "nbgrader" in p]
    config = json.loads((ROOT / "deploy/lab/instructor/jupyter_server_config.json").read_text())
    assert set(deferred_modules(config)) == set(INSTRUCTOR_SERVER + STUDENT_SERVER)

    service = (ROOT / "scripts" / "lab-service.sh").read_text()
    assert "Environment=JUPYTER_CONFIG_PATH=$here/deploy/lab/instructor" in service


def test_a_generated_notebook_opens_unchanged(tmp_path):
    """What JupyterLab changes on opening a notebook marks it modified: an older nbformat
    (cell ids added), or metadata other than what the student's kernel reports
    (``language_info`` and ``kernelspec`` are rewritten when the kernel starts). A notebook
    nbgrader generates carries exactly those, and nbformat reads, validates and writes it
    back byte for byte."""
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelspec import get_kernel_dict

    from labtools.teach import notebook_files as notebooks

    solution = nbformat.v4.new_notebook()
    solution.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    solution.metadata["language_info"] = {"name": "python"}  # what the solutions carry
    answer = nbformat.v4.new_code_cell("### BEGIN SOLUTION\nrtt_ms = 60\n### END SOLUTION",
                                       id="answer")
    answer.metadata["nbgrader"] = {"grade": False, "grade_id": "answer", "locked": False,
                                   "schema_version": 3, "solution": True, "task": False}
    solution.cells = [nbformat.v4.new_markdown_cell("Question?", id="q"), answer]
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    nbformat.write(solution, str(solutions / "lab.ipynb"))

    made = notebooks.generate(solutions, tmp_path / "notebooks")[0]
    raw = made.read_text()
    nb = nbformat.reads(raw, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert (nb.nbformat, nb.nbformat_minor) == (4, nbformat.current_nbformat_minor)
    assert all(cell.get("id") for cell in nb.cells)
    copy = tmp_path / "copy.ipynb"
    nbformat.write(nb, str(copy))  # how Jupyter's server saves it
    assert copy.read_text() == raw

    lab = notebooks.LAB_NOTEBOOK_METADATA
    assert nb.metadata == lab
    kernel = dict(IPythonKernel.language_info)  # what the kernel reports, but its Python
    assert {**kernel, "version": lab["language_info"]["version"]} == lab["language_info"]
    spec = get_kernel_dict()
    assert lab["kernelspec"] == {"name": "python3", "display_name": spec["display_name"],
                                 "language": spec["language"]}
