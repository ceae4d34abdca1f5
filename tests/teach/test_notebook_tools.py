"""Student notebooks made by the real nbgrader from solutions, and executing notebooks."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from labtools.errors import EnvironmentProblem
from labtools.teach import notebook_files as notebooks


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


# --- what ran: the command and the raw output beside every result ---------------------------
def _capture_topo():
    from labtools.model.topology import ROUTER, Link, Node, Topology

    return Topology("capture", (Node("cli"), Node("rtr", ROUTER), Node("srv")),
                    (Link("cli", "rtr", bw_mbps=20, queue_pkts=50),
                     Link("rtr", "srv", bw_mbps=20, queue_pkts=50)))


def _judged(tool, folder, name, command):
    """A judged measurement of a real capture, with the command its .meta names."""
    from labtools.judge.measurement import judge_output
    from tests.conftest import FIXTURES

    return judge_output(tool, (FIXTURES / folder / name).read_text(), _capture_topo(), "cli",
                        "srv", command=command.split())


PING = "ping -c 10 -i 0.2 10.77.2.1"                                  # ping/normal.meta
UDP = "iperf -c 10.77.2.1 -p 5417 -u -b 10M -t 3 -i 1"               # iperf2/udp_interval.meta
TCP = "iperf3 -c 10.77.2.1 -p 5316 -J -t 3 -i 1 --get-server-output"  # tcp_server_output.meta


def test_every_tool_run_shows_its_command_and_its_output_folded():
    from labtools.judge.capacity import judge_capacity
    from labtools.judge.repeated import judge_repeated
    from labtools.teach.tool_runs import RunsDisplay, command_line, runs_html, tool_runs

    ping = _judged("ping", "ping", "normal.txt", PING)
    assert command_line(ping) == f"cli$ {PING}"
    html = runs_html(ping)
    assert html.startswith("<details><summary>") and html.count("<details>") == 1
    assert f"<code>cli$ {PING}</code>" in html
    assert all(line in html for line in ping.raw.splitlines() if "<" not in line and "&" not in line)

    udp = [_judged("iperf", "iperf2", "udp_interval.txt", UDP) for _ in range(2)]
    search = judge_capacity(_capture_topo(), "cli", "srv", udp, ["ramp", "refine"], [10.0, 15.0])
    labels = [label for label, _m in tool_runs(search)]
    assert labels == ["step 1: cli → srv (iperf)", "step 2: cli → srv (iperf)"]
    repeated = judge_repeated([ping, ping, ping])
    assert [label for label, _m in tool_runs(repeated)] == [
        f"run {k} of 3: cli → srv (ping)" for k in (1, 2, 3)]
    shown = RunsDisplay((ping, search))
    assert shown.text.splitlines() == [f"cli$ {PING}", f"cli$ {UDP}", f"cli$ {UDP}"]
    assert shown._repr_html_().count("<details>") == 3


def test_a_long_output_is_cut_where_the_notebook_shows_it():
    from labtools.teach import tool_runs

    tcp = _judged("iperf3", "iperf3", "tcp_server_output.json", TCP)
    assert len(tcp.raw) > tool_runs.SHOWN_CHARS
    html = tool_runs.runs_html(tcp)
    assert f"{len(tcp.raw) - tool_runs.SHOWN_CHARS} more characters: print(m.raw)" in html
    assert len(html) < tool_runs.SHOWN_CHARS * 1.5


def test_concurrent_flows_show_each_flow_and_a_missing_measurement_says_why():
    from labtools.errors import InputError, ReplayError
    from labtools.judge.measurement import JudgeContext, ProbeCall
    from labtools.judge.shares import judge_flows
    from labtools.lab.replay import MissingMeasurement
    from labtools.model.fairness import Flow
    from labtools.teach.tool_runs import runs_html
    from labtools.tools.parsers import parse
    from tests.conftest import FIXTURES

    run = parse("iperf3", (FIXTURES / "iperf3" / "tcp_server_output.json").read_text())
    flows = judge_flows(_capture_topo(), [Flow("cli", "srv", 1)], [run], JudgeContext(),
                        [TCP.split()])
    assert "flow cli → srv (iperf3)" in runs_html(flows) and f"cli$ {TCP}" in runs_html(flows)
    missing = MissingMeasurement(ProbeCall("ping", {"src": "h1"}), "no recorded ping")
    with pytest.raises(ReplayError, match="no recorded ping"):
        runs_html(missing)
    with pytest.raises(InputError):
        runs_html()


class _HandLab:
    """What run_on needs of a lab, recording what it was asked to run."""

    replaying = False

    def __init__(self):
        self.ran, self.served = [], []

    def ip_towards(self, src, dst):
        return {"h4": "10.0.4.2", "b1": "10.0.1.2"}[dst]

    def check_node(self, name):
        return name

    def run(self, node, argv, timeout_s):
        from labtools.lab.processes import ToolOutput

        self.ran.append((node, argv, timeout_s))
        return ToolOutput("3 packets transmitted, 3 received\n", 0)

    def server(self, host, argv, port, udp=False):
        import contextlib

        self.served.append((host, argv, port, udp))
        return contextlib.nullcontext()


def test_run_on_runs_the_command_line_as_typed_with_addresses_filled_in():
    from labtools.errors import InputError
    from labtools.teach.tool_runs import run_on

    lab = _HandLab()
    assert run_on(lab, "h1", "ping -c 3 {h4}").startswith("3 packets")
    assert lab.ran == [("h1", ["ping", "-c", "3", "10.0.4.2"], 60.0)]
    run_on(lab, "a1", "iperf -c {b1} -u -b 10M -t 1", server=("b1", "iperf -s -u"))
    run_on(lab, "a1", "iperf3 -c {b1} -P 2", server=("b1", "iperf3 -s -1"))
    run_on(lab, "a1", "iperf3 -c {b1} -p 5999", server=("b1", "iperf3 -s -p 5999"))
    assert lab.served == [("b1", ["iperf", "-s", "-u"], 5001, True),
                          ("b1", ["iperf3", "-s", "-1"], 5201, False),
                          ("b1", ["iperf3", "-s", "-p", "5999"], 5999, False)]
    for bad in ("", "ping 'unclosed"):
        with pytest.raises(InputError):
            run_on(lab, "h1", bad)
    with pytest.raises(InputError, match="which port"):
        run_on(lab, "a1", "nc {b1} 9", server=("b1", "nc -l 9"))
    lab.replaying = True
    said = run_on(lab, "h1", "ping -c 3 {h4}")
    assert said.startswith("(grading: nothing runs") and "h1$ ping -c 3 10.0.4.2" in said
    assert len(lab.ran) == 4  # nothing more ran


# --- a student's workspace and a student's lab ---------------------------------------------------
def test_a_students_workspace_holds_the_student_notebooks_and_keeps_their_work(tmp_path):
    from labtools.errors import InputError

    students = tmp_path / "notebooks"
    students.mkdir()
    for name in ("00-a.ipynb", "01-b.ipynb", "skeleton.py", ".hidden"):
        (students / name).write_text(name)
    work = tmp_path / "workspace"
    added, kept, links = notebooks.make_workspace(students, work)
    assert sorted(p.name for p in work.iterdir()) == ["00-a.ipynb", "01-b.ipynb", "skeleton.py"]
    assert [p.name for p in added] == ["00-a.ipynb", "01-b.ipynb", "skeleton.py"] and kept == []
    assert links == [] and (work / "01-b.ipynb").read_text() == "01-b.ipynb"
    (work / "00-a.ipynb").write_text("the student's answers")
    (students / "02-c.ipynb").write_text("a new lab")
    added, kept, links = notebooks.make_workspace(students, work)
    assert [p.name for p in added] == ["02-c.ipynb"] and len(kept) == 3 and links == []
    assert (work / "00-a.ipynb").read_text() == "the student's answers"
    with pytest.raises(InputError, match="no student notebooks"):
        notebooks.make_workspace(tmp_path / "nothing", work)


def test_in_student_mode_the_lab_and_labtools_expect_hand_out_no_expected_values(
        tmp_path, monkeypatch, capsys):
    from labtools import cli
    from labtools.errors import InputError
    from labtools.lab.session import LabSession
    from labtools.teach.notebook import StudentLabSession, open_lab

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.delenv("LABTOOLS_SHOW_ANSWERS", raising=False)
    monkeypatch.delenv("LABTOOLS_VARIANT", raising=False)
    monkeypatch.delenv("LABTOOLS_MODE", raising=False)
    instructor = open_lab("intro")  # not started: nothing runs
    assert type(instructor) is LabSession and instructor.expected("h1", "h4").rtt_ms == 60
    assert cli.main(["expect", "portfolio", "h1", "h4", "--json"]) == 0
    capsys.readouterr()

    monkeypatch.setenv("LABTOOLS_MODE", "student")
    lab = open_lab("intro")
    assert isinstance(lab, StudentLabSession)
    with pytest.raises(InputError, match="what the labs ask you to compute"):
        lab.expected("h1", "h4")
    assert cli.main(["expect", "portfolio", "--flows", "h1:h4,h2:h5"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "student's lab" in err

    monkeypatch.setenv("LABTOOLS_SHOW_ANSWERS", "1")  # self-study: shown
    assert type(open_lab("intro")) is LabSession
    assert cli.main(["expect", "portfolio", "h1", "h4"]) == 0
    monkeypatch.setenv("LABTOOLS_MODE", "teacher")
    with pytest.raises(InputError, match="student or instructor"):
        open_lab("intro")


def test_the_network_check_reports_and_never_fails(capsys):
    from labtools.judge import policy
    from labtools.judge.verdicts import Verdict
    from labtools.teach.notebook import NETWORK_LINE, check_network

    ping = _judged("ping", "ping", "normal.txt", PING)
    assert check_network(ping) in policy.VERDICT_ORDER
    assert capsys.readouterr().out.splitlines()[-1].startswith(NETWORK_LINE)
    ping.verdicts = [Verdict("rtt_min", 1.0, 50.0, "ms", policy.INVALID, "impossible"),
                     Verdict("sender_rate", 1.0, 9.0, "Mbit/s", policy.INVALID, "its buffer")]
    assert check_network(ping) == policy.INVALID  # reported, not raised
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(f"{NETWORK_LINE} invalid") and "rtt_min" in last
    ping.verdicts = ping.verdicts[1:]  # only the sender's own count: not the network's
    assert check_network(ping) == policy.OK


def test_a_repeated_call_missing_from_the_results_is_missing_as_a_whole(tmp_path):
    """Grading without the student's runs: a repeated probe call stands in as one missing
    measurement (the checks that use it fail with the replay's reason), as a single call
    does; it is not judged on nothing."""
    from labtools.errors import ReplayError
    from labtools.lab import probes
    from labtools.lab.replay import MissingMeasurement, ReplaySession

    lab = ReplaySession("portfolio", tmp_path / "none.sqlite", "intro")
    m = probes.ping(lab, "h1", "h4", repeat=3)
    assert isinstance(m, MissingMeasurement) and lab.step == 3
    with pytest.raises(ReplayError, match="no results store"):
        _ = m.summary


@pytest.mark.parametrize("script", ["scripts/lab.sh", "scripts/lab-service.sh"])
def test_the_lab_launchers_take_a_students_or_an_instructors_mode(script, tmp_path):
    """make lab and the lab VM's service: a student's lab by default, LABTOOLS_MODE=instructor
    the whole kit; another mode is one line and exit status 2, before anything is started
    or written."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = (root / script).read_text()
    assert "LABTOOLS_MODE:-student" in text and "notebooks workspace" in text
    assert "--ServerApp.root_dir=$root" in text or '--ServerApp.root_dir="$root"' in text
    env = dict(os.environ, LABTOOLS_MODE="teacher", LAB_PORT="8899")
    proc = subprocess.run(["bash", str(root / script), str(tmp_path / "venv")], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and proc.stderr.strip().endswith("student or instructor")
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "venv").exists()


def test_a_course_gives_each_graded_cell_more_than_nbgraders_30_s():
    """Lab 7's hidden cross-tests took over 30 s on a busy machine (a CI run lost their
    points): the kit's course configuration, and the hub's, give each cell more."""
    from labtools.teach.notebook_files import GRADING_CELL_TIMEOUT_S, course_config

    config: dict = {}
    exec(course_config("netlab"), {"get_config": lambda: _Config(config)})
    from labtools.instructor.grading_kernels import ForkingExecute

    steps = config.pop("Autograde.autograde_preprocessors")
    from labtools.instructor.hidden_test_feedback import HideHiddenTests

    assert HideHiddenTests in config.pop("GenerateFeedback.preprocessors")  # no hidden source
    assert config == {"CourseDirectory.course_id": "netlab",
                      "Execute.timeout": GRADING_CELL_TIMEOUT_S}
    assert ForkingExecute in steps and issubclass(ForkingExecute, steps[0].__mro__[1])
    hub = (Path(__file__).resolve().parents[2] / "deploy" / "image" / "etc" / "jupyter"
           / "nbgrader_config.py").read_text()
    assert f"c.Execute.timeout = {GRADING_CELL_TIMEOUT_S}\n" in hub
    # and the hub's autograde forks its kernels too
    seen: dict = {}
    exec(hub, {"get_config": lambda: _Config(seen)})
    assert seen["Execute.timeout"] == GRADING_CELL_TIMEOUT_S
    assert ForkingExecute in seen["Autograde.autograde_preprocessors"]
    assert HideHiddenTests in seen["GenerateFeedback.preprocessors"]  # no hidden source


class _Config:
    """Records what a configuration file sets (``c.Section.name = value``)."""

    def __init__(self, seen: dict, prefix: str = "") -> None:
        object.__setattr__(self, "_seen", seen)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> "_Config":
        return _Config(self._seen, f"{self._prefix}{name}.")

    def __setattr__(self, name: str, value: object) -> None:
        self._seen[f"{self._prefix}{name}"] = value


def test_describe_shows_the_students_own_links_and_nothing_computed_from_them(monkeypatch):
    """Before the first compute-it-first check, ``describe(lab)`` prints every shaped link
    of the student's network (their variant): its name, the nodes it joins, rate, one-way
    delay and queue limit. With expected values hidden nothing computed from them is there
    (no RTT, bottleneck, goodput ceiling or BDP of a pair)."""
    import re
    from types import SimpleNamespace

    from labtools import settings
    from labtools.judge.machine import MachineProfile
    from labtools.model.catalog import load_topology
    from labtools.model.expect import expect_pair
    from labtools.teach.notebook import describe

    monkeypatch.setenv("LABTOOLS_MODE", "student")
    monkeypatch.delenv("LABTOOLS_SHOW_ANSWERS", raising=False)
    assert settings.current().answers_hidden
    topo = load_topology("portfolio,variant=s0042")
    text = describe(SimpleNamespace(topo=topo, machine=MachineProfile(0.05, 0.4, 120.0)))
    lines = text.splitlines()
    assert "variant s0042" in text
    shaped = [link for link in topo.links if link.shaped]
    givens = set()
    for link in shaped:
        row = next(line for line in lines if line.split()[:2] == [link.label, f"{link.a}-{link.b}"])
        assert row.split()[2:] == [f"{link.bw_mbps:g}", f"{link.delay_ms:g}", str(link.queue_pkts)]
        givens |= set(row.split()[2:])
    table = [line for line in lines if line.split()[:1] in ([lk.label] for lk in shaped)]
    assert {n for row in table for n in re.findall(r"(?<![A-Za-z\d.])\d+(?:\.\d+)?", row)} == givens
    computed = set()
    for a, b in [("h1", "h4"), ("h1", "h9"), ("h7", "h9"), ("r1", "r2"), ("r2", "r3"), ("r3", "r4")]:
        e = expect_pair(topo, a, b)
        computed |= {f"{v:g}" for v in (e.rtt_ms, e.tcp_goodput_ceiling_mbps, e.bdp_bytes,
                                         e.max_rtt_ms) if v is not None}
        computed |= {f"{v:.2f}" for v in (e.tcp_goodput_ceiling_mbps,) if v is not None}
    shown = set(re.findall(r"\d+(?:\.\d+)?", text))
    assert not (computed - givens) & shown, (computed - givens) & shown


def test_a_labs_tables_show_a_verdicts_reason_whole(tmp_path, monkeypatch):
    """pandas cuts a table's text at 50 characters: from ``open_lab`` on, a verdict's
    reason (a sentence the student must read to its end) is shown whole."""
    import pandas as pd

    from labtools.judge.verdicts import Verdict
    from labtools.teach.notebook import open_lab, verdict_table

    class Run:
        src, dst, tool = "r1", "r2", "iperf3"
        verdicts = [Verdict("receiver_rate", 38.26, 29.84, "Mbit/s", "ok", "78% of the "
                            "expected 38.26 Mbit/s (29.84 measured): this machine forwarded at "
                            "most 33.0 Mbit/s when calibrated")]

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    reason = Run.verdicts[0].reason
    with pd.option_context("display.max_colwidth", 50):
        assert reason not in verdict_table(Run())._repr_html_()  # pandas' default: cut
        open_lab("link")  # not started: nothing runs
        table = verdict_table(Run())[["metric", "verdict", "reason"]]
        assert reason in table._repr_html_() and reason in table.to_string()
