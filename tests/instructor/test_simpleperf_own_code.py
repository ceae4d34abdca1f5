"""Lab 7 grades the student's own code: the student's client, server and report.py run
with a Python that cannot import the kit (labtools/lab/kit_free_python.py), and a program
that hands its work to the kit fails with one line that says so. Everything runs for real
on 127.0.0.1: the solution notebook's program, copies of it that hand their work to the
kit (an import of labtools, ``python -m labtools.tools.simpleperf`` as a child, the kit's
``simpleperf`` command), and the kit's simpleperf server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from solution_program import write_program

from labtools.lab import kit_free_python
from labtools.lab.own_simpleperf import client_args, program_argv
from labtools.teach import conformance, simpleperf_runs
from labtools.teach.simpleperf_checks import client_problems, server_problems
from labtools.teach.simpleperf_runs import kit_server, load_module, student_client, student_server
from labtools.tools import args as toolargs

ROOT = Path(__file__).resolve().parents[2]
END = "lab 7 grades your own code; write it with the standard library only"
IMPORTS = "imports the kit (labtools): " + END
RUNS = "runs the kit's simpleperf: " + END

#: a client that hands the transfer to the kit's simpleperf (a child Python, which the
#: program starts as itself was started) and only prints its JSON's totals as rows
BY_THE_KIT = '''
import json, subprocess, sys
argv = [a for a in sys.argv[1:] if a not in ("-f", "B")]
kit = subprocess.run([sys.executable, "-m", "labtools.tools.simpleperf", *argv, "--json"],
                     stdout=subprocess.PIPE, text=True)
print("-" * 60)
records = [json.loads(line) for line in kit.stdout.splitlines()]
local = {r["conn"]: r["local"] for r in records if r.get("type") == "conn_start"}
for r in records:
    if r.get("type") == "conn_end":
        print(f"{local[r['conn']]}   0.00 - {r['duration_s']:.2f}   {r['bytes_sent']} B"
              f"   {r['sender_mbps']:.2f} Mbps")
sys.exit(kit.returncode)
'''




def test_the_programs_python_cannot_import_the_kit_even_started_again_plainly():
    """The program's own Python, started again as a program would (no option, ``-m``,
    its environment, its folder), finds no labtools; the kit's own Python does."""
    where = dict(env=kit_free_python.environment(), cwd=kit_free_python.folder(),
                 capture_output=True, text=True)
    mine = subprocess.run([kit_free_python.python(), "-m", "labtools.tools.simpleperf",
                           "--help"], **where)
    assert mine.returncode == 1 and "No module named 'labtools'" in mine.stderr
    plain = subprocess.run(["python3", "-c", "import sys, labtools"], **where)
    assert "No module named 'labtools'" in plain.stderr
    kits = subprocess.run([sys.executable, "-m", "labtools.tools.simpleperf", "--help"],
                          capture_output=True, text=True, cwd=ROOT)
    assert kits.returncode == 0  # the kit's Python hands it over


def test_the_programs_environment_is_clean_and_its_path_holds_no_kit_command(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    env = kit_free_python.environment()
    assert sorted(env) == ["HOME", "LANG", "LC_ALL", "PATH"]
    folders = env["PATH"].split(os.pathsep)
    assert folders[0] == str(kit_free_python.folder() / "bin")
    assert str(Path(sys.executable).parent) not in folders
    for folder in folders:
        for command in kit_free_python.KIT_COMMANDS:
            assert not (Path(folder) / command).exists(), (folder, command)
    assert (Path(sys.executable).parent / "simpleperf").exists()  # the kit's, left out


def test_a_process_leaves_no_bare_python_behind_and_removes_those_of_ended_ones(tmp_path):
    """A process that ended without its exit handlers (a kernel killed at its shutdown)
    left its folder: the next one made removes it; a live process's stays."""
    import tempfile
    under = Path(tempfile.gettempdir())
    ended = under / f"{kit_free_python.PREFIX}999999999-left"  # above any pid_max
    live = under / f"{kit_free_python.PREFIX}{os.getpid()}-live"
    ended.mkdir()
    live.mkdir()
    try:
        made = subprocess.run([sys.executable, "-c", "from labtools.lab import "
                               "kit_free_python as k; print(k.folder())"],
                              capture_output=True, text=True, check=True).stdout.strip()
        assert not ended.exists() and live.exists()
        assert not Path(made).exists()  # its own, removed when it exited
    finally:
        for folder in (ended, live):
            if folder.exists():
                folder.rmdir()


def test_a_program_runs_with_its_folder_on_its_path_and_no_python_variable(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    (tmp_path / "helper.py").write_text("WORD = 'helper'\n")
    program = tmp_path / "prog.py"
    program.write_text("import os, sys\nimport helper\n"
                       "print(helper.WORD, sys.path[0], 'PYTHONPATH' in os.environ)\n")
    ran = simpleperf_runs.run(program_argv(program), "prog", own=True)
    assert ran.out == f"helper {tmp_path} False\n", ran


def test_a_client_on_a_labs_host_runs_in_the_clean_environment(tmp_path):
    options = toolargs.SimpleperfOptions(server_ip="10.0.0.2", duration_s=2)
    argv = client_args(tmp_path, options)
    settings = [f"{key}={value}" for key, value in kit_free_python.environment().items()]
    assert argv[:4] == [argv[0], "-i", "-C", str(kit_free_python.folder())]
    assert Path(argv[0]).name == "env"
    assert argv[4:4 + len(settings)] == settings
    assert argv[4 + len(settings):] == [*program_argv(tmp_path), *options.options()]


def test_the_solution_passes_as_its_own_code(tmp_path):
    program = write_program(tmp_path)
    with kit_server() as server:
        run = student_client(program, server.port, "-n", "1MB", "-f", "B")
    assert client_problems(run, 1, amount_bytes=1_000_000, unit="B") == []
    report = load_module(program / "report.py")
    assert report.parse_amount("1.5MB") == 1_500_000
    assert report.format_amount(1500, "KB") == "1.50 KB"
    assert report.UNITS == {"B": 1, "KB": 1000, "MB": 1000 * 1000}
    with pytest.raises(ValueError, match="needs a unit"):
        report.parse_amount("10")


def test_a_client_that_imports_the_kit_fails_in_one_line(tmp_path):
    program = write_program(tmp_path, {"client.py": {"import socket\n": "import socket\n"
                                                "import labtools.tools.simpleperf\n"}})
    with kit_server() as server:
        with pytest.raises(AssertionError) as failed:
            student_client(program, server.port, "-n", "1MB", "-f", "B")
    assert str(failed.value) == "your client " + IMPORTS
    with pytest.raises(AssertionError) as conforming:
        conformance.client_conformance(program)
    assert str(conforming.value) == "your client " + IMPORTS


def test_a_client_that_runs_the_kits_simpleperf_as_a_child_fails_in_one_line(tmp_path):
    program = write_program(tmp_path, files={"__main__.py": BY_THE_KIT})
    with kit_server() as server:
        with pytest.raises(AssertionError) as failed:
            student_client(program, server.port, "-n", "1MB", "-f", "B")
    assert str(failed.value) == "your client " + IMPORTS
    # the kit's own Python, as the checks started programs before, hands it over
    with kit_server() as server:
        handed = simpleperf_runs.run([sys.executable, "-B", str(program), "-c", "-I",
                                      simpleperf_runs.LOOPBACK, "-p", str(server.port),
                                      "-n", "1MB"], "your client")
    assert handed.status == 0 and " 1000000 B " in handed.out, handed


def test_a_client_that_runs_the_kits_command_fails_in_one_line(tmp_path):
    command = BY_THE_KIT.replace('[sys.executable, "-m", "labtools.tools.simpleperf", ',
                                 '["simpleperf", ')
    program = write_program(tmp_path, files={"__main__.py": command})
    with kit_server() as server:
        with pytest.raises(AssertionError) as failed:
            student_client(program, server.port, "-n", "1MB", "-f", "B")
    assert str(failed.value) == "your client " + RUNS


def test_a_server_that_imports_the_kit_fails_in_one_line(tmp_path):
    program = write_program(tmp_path, {"server.py": {"import socket\n": "import socket\n"
                                                "from labtools.tools.simpleperf import "
                                                "server as kit\n"}})
    with pytest.raises(AssertionError) as failed:
        with student_server(program, "-f", "B"):
            pass  # never reached: it stops at once
    assert str(failed.value) == "your server " + IMPORTS
    with pytest.raises(AssertionError) as conforming:
        conformance.server_conformance(program)
    assert str(conforming.value) == "your server " + IMPORTS


def test_a_report_that_hands_parse_amount_to_the_kit_fails_in_one_line(tmp_path):
    program = write_program(tmp_path, files={"report.py": (
        "from labtools.tools.simpleperf.options import parse_amount\n")})
    with pytest.raises(AssertionError) as failed:
        load_module(program / "report.py")
    assert str(failed.value) == "your report.py " + IMPORTS


def test_the_reports_checks_name_a_handoff_alone():
    said = ("Traceback (most recent call last):\n"
            "ModuleNotFoundError: No module named 'labtools'\n")
    run = simpleperf_runs.Finished(["x"], 1, "", said)
    assert client_problems(run, 1, amount_bytes=10) == ["your client " + IMPORTS]
    assert server_problems(said, {"127.0.0.1:4000": 10}) == ["your server " + IMPORTS]
    assert kit_free_python.handoff("your client", "no such option: -x") is None


def test_a_files_functions_raise_and_print_as_they_would_here(tmp_path):
    (tmp_path / "mine.py").write_text(
        "import time\n"
        "class Wrong(ValueError):\n    pass\n"
        "def bad(text):\n    print('noise')\n    raise Wrong(f'no {text}')\n"
        "def loud(n):\n    print('noise')\n    return [n, n / 2, 'x']\n"
        "def slow():\n    time.sleep(30)\n"
        "def odd():\n    return object()\n")
    mine = simpleperf_runs.StudentModule(tmp_path / "mine.py", timeout_s=2)
    assert mine.loud(3) == [3, 1.5, "x"]
    with pytest.raises(ValueError, match="^Wrong: no way$"):
        mine.bad("way")
    with pytest.raises(AttributeError):
        mine.nothing  # noqa: B018 - the attribute's absence is the point
    with pytest.raises(AssertionError, match="^odd\\(\\) in mine.py gave <object object"):
        mine.odd()
    started = time.monotonic()
    with pytest.raises(AssertionError, match="^your mine.py: slow\\(\\) did not return "
                                             "within 2 s$"):
        mine.slow()
    assert time.monotonic() - started < 10
