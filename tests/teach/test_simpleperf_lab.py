"""Lab 7, "write your own simpleperf": the program the notebook writes, the checks that
grade it, and the probe that measures with it. Everything runs for real: the solution's
program (the solution notebook's ``%%writefile`` cells), the student's skeleton (the
student notebook's), and the kit's simpleperf, as processes on 127.0.0.1.

A check that cannot fail is a defect: each kind of mistake a student can make in the
protocol or the report (no END record, the END counted as data, rates in MB/s, interval
rows that miss the rest, a server that never answers) is made in a copy of the solution
and must be caught with a line that says what is wrong.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sqlite3
import struct
import sys
from pathlib import Path
from typing import Dict, Optional

import nbformat
import pytest

from labtools.errors import InputError
from labtools.lab.own_simpleperf import program_sha256
from labtools.teach import simpleperf_runs
from labtools.teach.simpleperf_checks import (
    client_problems,
    kit_client_problems,
    kit_server_problems,
    read_report,
    server_problems,
)
from labtools.teach.simpleperf_runs import (
    kit_client,
    kit_server,
    student_client,
    student_server,
)
from labtools.tools.simpleperf import protocol as kit_protocol

ROOT = Path(__file__).resolve().parents[2]
NAME = "07-write-simpleperf.ipynb"
SOLUTION = ROOT / "solutions" / NAME
STUDENT = ROOT / "notebooks" / NAME
RECORDED = ROOT / "tests" / "fixtures" / "grading" / "results" / "labtools.sqlite"
WRITEFILE = "%%writefile mysimpleperf/"
CHECKS = ("report-check", "loopback-check", "kit-server-check", "kit-client-check")


def program_files(notebook: Path) -> Dict[str, str]:
    """File name -> contents, as the notebook's ``%%writefile`` cells write them."""
    nb = nbformat.read(str(notebook), as_version=4)
    files = {}
    for cell in nb.cells:
        first, _, rest = cell.source.partition("\n")
        if cell.cell_type == "code" and first.startswith(WRITEFILE):
            files[first[len(WRITEFILE):].strip()] = rest + "\n"  # %%writefile adds "\n"
    return files


def write_program(folder: Path, notebook: Path, edits: Optional[Dict[str, Dict[str, str]]] = None
                  ) -> Path:
    """The notebook's program in ``folder/mysimpleperf``, with ``edits`` (file -> old -> new)."""
    program = folder / "mysimpleperf"
    program.mkdir()
    for name, text in program_files(notebook).items():
        for old, new in (edits or {}).get(name, {}).items():
            assert old in text, (name, old)
            text = text.replace(old, new)
        (program / name).write_text(text)
    return program


@pytest.fixture(scope="module")
def solution(tmp_path_factory) -> Path:
    return write_program(tmp_path_factory.mktemp("solution"), SOLUTION)


@pytest.fixture(scope="module")
def skeleton(tmp_path_factory) -> Path:
    return write_program(tmp_path_factory.mktemp("skeleton"), STUDENT)


def check_cells(notebook: Path) -> Dict[str, str]:
    """The grading cells' code, hidden tests included (in the solution notebook)."""
    nb = nbformat.read(str(notebook), as_version=4)
    return {c.id: c.source for c in nb.cells if c.id in CHECKS}


def run_check(source: str, program: Path) -> None:
    """A grading cell's code, run as the notebook runs it (its names from the setup cell)."""
    namespace = {"PROGRAM": program}
    exec("from labtools.teach.simpleperf_checks import *\n"  # noqa: S102 - the notebook's code
         "from labtools.teach.simpleperf_runs import *\n"
         "from labtools.teach.conformance import client_conformance, server_conformance\n",
         namespace)
    exec(compile(source, "<grading cell>", "exec"), namespace)  # noqa: S102


def test_the_program_has_its_five_files_and_the_student_gets_the_same_given_ones():
    mine, theirs = program_files(SOLUTION), program_files(STUDENT)
    assert sorted(mine) == sorted(theirs) == ["__main__.py", "client.py", "protocol.py",
                                              "report.py", "server.py"]
    for given in ("__main__.py", "protocol.py"):
        assert mine[given] == theirs[given]
    for written in ("client.py", "report.py", "server.py"):
        assert "BEGIN SOLUTION" in mine[written] and "BEGIN SOLUTION" not in theirs[written]
        assert "raise NotImplementedError()" in theirs[written]
        ast.parse(theirs[written])  # the skeleton is a program that runs


def _imported_here(path: Path):
    """``path`` imported in this Python (its ``struct`` objects compared with the kit's)."""
    spec = importlib.util.spec_from_file_location(f"given_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_given_protocol_is_the_kits(solution):
    given = _imported_here(solution / "protocol.py")
    assert given.VERSION == kit_protocol.VERSION
    for name in ("HELLO", "WELCOME", "END", "RECORD"):
        assert getattr(given, name).format == getattr(kit_protocol, name).format, name
    session = bytes(range(16))
    assert given.hello(2, 3, 0.25, session) == kit_protocol.Hello(2, 3, 250, session).encode()
    assert given.welcome(True) == kit_protocol.encode_welcome(True)
    assert given.welcome(False) == kit_protocol.encode_welcome(False)
    assert given.end(12345) == kit_protocol.encode_end(12345)
    assert given.ack(1.5, 999) == kit_protocol.encode_record(kit_protocol.MAGIC_ACK, 1.5, 999)
    assert given.ends_with_end(kit_protocol.encode_end(100), 112)
    assert not given.ends_with_end(kit_protocol.encode_end(100), 113)


def test_the_solution_passes_every_grading_cell_hidden_tests_included(solution):
    cells = check_cells(SOLUTION)
    assert sorted(cells) == sorted(CHECKS)
    assert all("### BEGIN HIDDEN TESTS" in source for source in cells.values())
    for cell_id, source in cells.items():
        run_check(source, solution)  # raises on a failed check
        assert cell_id


@pytest.mark.parametrize("cell_id, message", [
    ("report-check", None),  # NotImplementedError from the student's own function
    ("loopback-check", "your server stopped at once (exit status 1); its last line: "
                       "mysimpleperf: error: serve() in server.py is not written yet"),
    ("kit-server-check", "your client ended with exit status 1; last line: mysimpleperf: "
                         "error: parse_amount() in report.py is not written yet"),
    ("kit-client-check", "your server stopped at once"),
])
def test_the_skeleton_fails_every_grading_cell_saying_what_is_missing(skeleton, cell_id, message):
    source = check_cells(STUDENT)[cell_id]
    assert "HIDDEN" not in source
    if message is None:
        with pytest.raises(NotImplementedError):
            run_check(source, skeleton)
        return
    with pytest.raises(AssertionError) as failed:
        run_check(source, skeleton)
    assert message in str(failed.value)


def test_the_skeleton_runs_and_says_which_function_is_missing(skeleton):
    port = simpleperf_runs.free_port()
    done = student_client(skeleton, port, "-t", "1")
    assert done.status == 1 and done.out == ""
    assert done.err == "mysimpleperf: error: run_client() in client.py is not written yet\n"
    usage = student_client(skeleton, port, "-P", "9")
    assert usage.status == 2 and "invalid choice: 9" in usage.err


def test_the_report_of_a_real_run_is_read_row_by_row(solution):
    with kit_server() as server:
        run = student_client(solution, server.port, "-t", "1", "-i", "0.25", "-P", "2", "-f", "KB")
    report = read_report(run.out)
    assert len(report.totals) == 2 and {r.unit for r in report.totals} == {"KB"}
    received = {r["peer"]: r["bytes"] for r in map(json.loads, server.output.splitlines())
                if r["type"] == "server_conn_end"}
    assert {r.ident for r in report.totals} == set(received)
    for total in report.totals:
        assert total.counts(received[total.ident])
        rows = report.intervals_of(total.ident)
        assert 3 <= len(rows) <= 6 and rows[0].start_s == 0


def test_clients_on_loopback_are_paced_by_the_kernel(solution):
    """Flat out, a timed run on loopback burns a CPU second per second on each side (about
    20 Gbit/s in Python); the kit's runs cap each connection (SO_MAX_PACING_RATE). What the
    socket buffers take at once (a few MB) comes on top of the paced rate in a 1-s run."""
    cap = simpleperf_runs.LOOPBACK_PACE_MBPS * 2
    said = f"at {simpleperf_runs.LOOPBACK_PACE_MBPS:.0f} Mbit/s"
    assert said in " ".join(nbformat.read(str(SOLUTION), as_version=4).cells[0].source.split())
    with kit_server() as server:
        mine = student_client(solution, server.port, "-t", "1", "-P", "2", "-f", "B")
    assert not kit_server_problems(server.output, mine, 2)
    rates = [row.rate_mbps for row in read_report(mine.out).totals]
    assert len(rates) == 2 and all(0 < rate <= cap for rate in rates), rates
    with student_server(solution, "-f", "B") as server:
        kit = kit_client(server.port, "-t", "1")
    assert not kit_client_problems(kit, server.output)
    ends = [r for r in map(json.loads, kit.out.splitlines()) if r["type"] == "conn_end"]
    assert len(ends) == 1 and 0 < ends[0]["sender_mbps"] <= cap, ends


def test_the_paced_start_runs_a_program_as_python_does(tmp_path):
    """Its own folder first on the path, its arguments, output and exit status."""
    (tmp_path / "helper.py").write_text("WORD = 'helper'\n")
    program = tmp_path / "prog.py"
    program.write_text("import sys\nimport helper\n"
                       "print(helper.WORD, sys.argv[1:], sys.path[0])\n"
                       "sys.exit('stopped: ' + sys.argv[0])\n")
    plain = [sys.executable, "-B", str(program), "-c", "x"]
    assert simpleperf_runs.paced(plain, 8.0) == [
        sys.executable, "-B", str(simpleperf_runs.PACED_START), "1000000", str(program), "-c", "x"]
    runs = [simpleperf_runs.run(argv, "prog") for argv in (plain, simpleperf_runs.paced(plain))]
    assert runs[0].out == runs[1].out == f"helper ['-c', 'x'] {tmp_path}\n"
    assert runs[0].status == runs[1].status == 1
    assert runs[0].err == runs[1].err == f"stopped: {program}\n"


def _mistake(tmp_path: Path, file: str, old: str, new: str) -> Path:
    return write_program(tmp_path, SOLUTION, {file: {old: new}})


def test_a_client_without_end_record_is_caught_by_the_kits_server(tmp_path):
    program = _mistake(tmp_path, "client.py", 'sock.sendall(protocol.end(conn["sent"]))', "pass")
    with kit_server() as server:
        run = student_client(program, server.port, "-n", "1MB", "-f", "B")
    problems = kit_server_problems(server.output, run, 1)
    assert problems[0] == ("the kit's server says: the data ended without the client's END "
                           "record (the client was stopped or killed, or its connection broke)")


def test_a_server_counting_the_end_record_is_caught_by_the_kits_client(tmp_path):
    program = _mistake(tmp_path, "server.py",
                       "data_bytes = received - protocol.END.size if complete else received",
                       "data_bytes = received")
    with student_server(program, "-f", "B") as server:
        kit = kit_client(server.port, "-n", "1MB")
    problems = kit_client_problems(kit, server.output)
    assert problems[0] == ("the kit's client says: connection 1: the server counted 1000012 "
                           "bytes, 1000000 were sent")


#: the commonest slip of lab 7: amounts in units of 1024 bytes (report.py's format_amount,
#: which the client and the server both print with)
IN_1024 = ("report.py", 'return f"{nbytes / UNITS[unit]:.2f} {unit}"',
           'return f"{nbytes / {\'KB\': 1024, \'MB\': 1024 * 1024}[unit]:.2f} {unit}"')


def test_amounts_in_units_of_1024_are_named_by_the_checks_with_the_kits_tools(tmp_path):
    """The kit's client against the student's server run with -f KB, and the kit's server
    against the student's client: the check, given the -f, says the unit is wrong (not
    "2441410 bytes received, 2500000 were sent")."""
    program = _mistake(tmp_path, *IN_1024)
    with student_server(program, "-f", "KB") as server:
        kit = kit_client(server.port, "-n", "2.5MB", "-P", "2")
    problems = kit_client_problems(kit, server.output, unit="KB")
    assert problems[0].startswith("with -f KB your server printed 1024-byte units; KB is "
                                  "1000 bytes: ") and "2441.41 KB" in problems[0], problems
    with kit_server() as server:
        run = student_client(program, server.port, "-n", "1.5MB", "-f", "KB")
    problems = kit_server_problems(server.output, run, 1, unit="KB")
    assert problems[0].startswith("with -f KB your client printed 1024-byte units; KB is "
                                  "1000 bytes: ") and "1464.84 KB" in problems[0], problems


def test_a_timed_client_in_units_of_1024_is_told_so_by_its_rates(tmp_path):
    """Without a count to compare with (-t), the rows' rates (computed from the bytes)
    give the unit away: every amount read in MB is 4.9 % short of its rate."""
    program = _mistake(tmp_path, *IN_1024)
    with student_server(program, "-f", "MB") as server:
        run = student_client(program, server.port, "-t", "1", "-f", "MB")
    problems = client_problems(run, 1, seconds=1, unit="MB")
    assert problems[0].startswith("with -f MB your client printed 1048576-byte units; MB is "
                                  "1000000 bytes: "), problems
    assert len(problems) == 2 and problems[1].startswith("your client printed:\n")


def test_a_simpleperf_in_units_of_1024_is_told_its_unit_and_first_what_the_student_saw(
        tmp_path, capsys):
    """The grading cells as nbgrader runs them (hidden tests included) on a submission
    with the slip: the feedback's first line names the unit, and in the kit checks it is
    the visible conformance check's line, the one the student's own notebook showed; no
    cell prints its success line before a hidden check fails."""
    program = _mistake(tmp_path, *IN_1024)
    graded, released = check_cells(SOLUTION), check_cells(STUDENT)
    first = {}
    for cell_id in ("loopback-check", "kit-server-check", "kit-client-check"):
        with pytest.raises(AssertionError) as failed:
            run_check(graded[cell_id], program)
        first[cell_id] = str(failed.value).splitlines()[0]
    assert first["loopback-check"].startswith(  # its visible part runs -f B, its hidden -f mb
        "with -f mb your client printed 1048576-byte units; MB is 1000000 bytes: ")
    assert first["kit-server-check"].startswith(
        "with -f MB your client printed 1048576-byte units; MB is 1000000 bytes: ")
    assert first["kit-client-check"].startswith(
        "with -f MB your server printed 1048576-byte units; MB is 1000000 bytes: ")
    for cell_id in ("kit-server-check", "kit-client-check"):
        with pytest.raises(AssertionError) as seen:
            run_check(released[cell_id], program)
        line = str(seen.value).splitlines()[0]
        assert line.split(": '")[0] == first[cell_id].split(": '")[0], (line, first[cell_id])
    assert "agree" not in capsys.readouterr().out


def test_rates_in_megabytes_per_second_are_caught(tmp_path):
    program = _mistake(tmp_path, "report.py", "return nbytes * 8 / seconds / 1e6",
                       "return nbytes / seconds / 1e6")
    with student_server(program, "-f", "B") as server:
        run = student_client(program, server.port, "-t", "1", "-f", "B")
    problems = client_problems(run, 1, seconds=1)
    assert "is not the row's amount over its time" in problems[0]


def test_interval_rows_that_leave_out_the_rest_are_caught(tmp_path):
    program = _mistake(tmp_path, "client.py", 'if interval_s and conn["sent"] > row_bytes:',
                       "if False:")
    with student_server(program, "-f", "B") as server:
        run = student_client(program, server.port, "-t", "1.2", "-i", "0.5", "-f", "B")
    problems = client_problems(run, 1, seconds=1.2, interval_s=0.5)
    assert any("the last interval row ends at" in p for p in problems), problems
    assert any("the interval rows add up to" in p for p in problems), problems


def test_a_server_that_reports_nothing_is_caught(tmp_path):
    program = _mistake(tmp_path, "server.py", "    say(*lines)\n", "")
    with student_server(program, "-f", "B") as server:
        run = student_client(program, server.port, "-n", "1MB", "-f", "B")
    ident = read_report(run.out).totals[0].ident
    assert server_problems(server.output, {ident: 1_000_000})[0] == \
        f"your server printed no row for the connection from {ident}"


def test_a_client_waiting_for_an_ack_that_never_comes_fails_within_its_time_out(
        tmp_path, monkeypatch):
    monkeypatch.setattr(simpleperf_runs, "CLIENT_TIMEOUT_S", 3.0)
    program = _mistake(tmp_path, "server.py", "        sock.sendall(protocol.ack(seconds, data_bytes))\n",
                       "        time.sleep(60)\n")
    with student_server(program) as server:
        with pytest.raises(AssertionError) as failed:
            student_client(program, server.port, "-n", "1MB")
    assert str(failed.value).startswith("your client did not finish within 3 s")


def test_a_server_that_never_listens_fails_within_its_time_out(tmp_path, monkeypatch):
    monkeypatch.setattr(simpleperf_runs, "SERVER_READY_S", 2.0)
    program = _mistake(tmp_path, "server.py", "    listener = socket.create_server((bind, port))\n",
                       "    time.sleep(60)\n")
    with pytest.raises(AssertionError) as failed:
        with student_server(program):
            pass
    assert "your server did not listen on port" in str(failed.value)


def test_the_program_digest_covers_every_python_file(tmp_path, solution):
    digest = program_sha256(solution)
    assert digest == program_sha256(str(solution)) and len(digest) == 64
    copy = write_program(tmp_path, SOLUTION)
    assert program_sha256(copy) == digest
    (copy / "report.py").write_text((copy / "report.py").read_text() + "\n")
    assert program_sha256(copy) != digest
    (copy / "notes.txt").write_text("not Python")
    single = tmp_path / "one.py"
    single.write_text("print(1)\n")
    assert program_sha256(single) != program_sha256(tmp_path / "mysimpleperf")
    with pytest.raises(InputError, match="no program at"):
        program_sha256(tmp_path / "missing")
    with pytest.raises(InputError, match="has no __main__.py"):
        program_sha256(tmp_path)


def test_the_grading_recording_measured_the_solution_as_it_is(solution):
    """The grading tests replay notebook 07's link measurement from the recorded results
    file: it must have been made with the solution's program as it is now (the graded
    check compares the digests), or the recording is stale (tests/fixtures/grading/capture.py
    07-write-simpleperf.ipynb records it again)."""
    with sqlite3.connect(f"file:{RECORDED}?mode=ro", uri=True) as con:
        rows = con.execute('SELECT context_json FROM runs WHERE "case" = ? AND tool = ? '
                           "AND status = 'ok'", ("simpleperf", "simpleperf")).fetchall()
    assert rows, "no recorded measurement of notebook 07"
    digests = {json.loads(r[0])["extra"]["program_sha256"] for r in rows}
    assert digests == {program_sha256(solution)}


def test_hello_and_ack_bytes_as_the_kit_packs_them():
    """The notebook's protocol table gives the layouts: they are the kit's."""
    assert kit_protocol.HELLO.size == 28 and kit_protocol.WELCOME.size == 8
    assert kit_protocol.END.size == 12 and kit_protocol.RECORD.size == 20
    assert struct.calcsize("!4sHBBI16s") == 28
    text = SOLUTION.read_text()
    for layout in ("!4sHBBI16s", "!4sH2x", "!4sQ", "!4sQQ"):
        assert layout in text


# --- the probe on a real network (a sandboxed lab; HTB only: no netem needed) -----------


def _lab_possible() -> bool:
    import shutil

    return sys.platform == "linux" and all(shutil.which(t) for t in ("mnexec", "nsenter",
                                                                        "unshare", "iperf3"))


@pytest.mark.root
@pytest.mark.skipif(not _lab_possible(), reason="needs mnexec, nsenter, unshare and iperf3")
def test_the_probe_measures_with_a_students_client_and_replays_it(solution, skeleton, tmp_path):
    from labtools.errors import ToolError
    from labtools.lab import probes
    from labtools.lab.replay import ReplaySession
    from labtools.lab.session import LabSession
    from labtools.results.store import ResultStore

    results = tmp_path / "results.sqlite"
    topology = "line,n=2,bw_mbps=20,delay_ms=0"
    with LabSession(topology, results=str(results), case="simpleperf", calibrate=False) as lab:
        mine = probes.simpleperf(lab, "h1", "h2", duration_s=3, program=solution)
        with pytest.raises(ToolError) as failed:
            probes.simpleperf(lab, "h1", "h2", duration_s=3, program=skeleton)
    assert mine.call.args == {"src": "h1", "dst": "h2", "parallel": 1, "program": "mysimpleperf"}
    assert mine.parsed.summary["role"] == "server" and mine.parsed.summary["complete"]
    assert mine.verdict == "ok", mine.verdicts
    assert 15 < mine.summary.steady_mbps <= 20
    assert mine.extra["program_sha256"] == program_sha256(solution)
    totals = read_report(mine.extra["client_report"]).totals
    assert len(totals) == 1 and totals[0].counts(mine.parsed.summary["receiver_bytes"])
    assert "run_client() in client.py is not written yet" in str(failed.value)
    assert "the kit's server on h2 says: no transfer reached the server" in str(failed.value)
    statuses = list(ResultStore(results, create=False).runs()["status"])
    assert statuses == ["ok", "error"]
    replayed = probes.simpleperf(ReplaySession(topology, results, "simpleperf"), "h1", "h2",
                                 program=Path("elsewhere") / "mysimpleperf")
    assert replayed.extra == mine.extra
    assert replayed.summary.steady_mbps == pytest.approx(mine.summary.steady_mbps)



# --- the cross-test on a link, on measurements recorded on a real network ------------------


@pytest.fixture(scope="module")
def recorded():
    """The grading fixture's recorded runs: (case, measurement) in the order measured."""
    from labtools.results.store import ResultStore

    store = ResultStore(RECORDED, create=False)
    runs = store.runs()
    ok = runs[runs["status"] == "ok"]
    return [(case, store.measurement(int(i))) for i, case in zip(ok["id"], ok["case"])]


def _reached(m) -> bool:
    return any(v.metric == "receiver_rate" and v.verdict == "ok" for v in m.verdicts)


def _lab7(recorded):
    mine = next(m for case, m in recorded if case == "simpleperf" and m.tool == "simpleperf")
    iperf3 = next(m for case, m in recorded if case == "simpleperf" and m.tool == "iperf3")
    return mine, iperf3


def test_the_recorded_cross_test_passes_and_says_by_how_much(recorded):
    from labtools.teach.simpleperf_checks import cross_test_line, link_problems

    mine, iperf3 = _lab7(recorded)
    assert mine.call.args["program"] == "mysimpleperf" and _reached(iperf3)
    assert link_problems(mine, iperf3) == []
    mbps = (mine.summary.steady_mbps, iperf3.summary.steady_mbps)
    assert cross_test_line(mine, iperf3) == (
        f"your simpleperf {mbps[0]:.2f} Mbit/s, iperf3 {mbps[1]:.2f} Mbit/s after the warm-up "
        f"({(mbps[0] - mbps[1]) / mbps[1]:+.0%})")


def test_q1s_key_cites_a_link_measurement_of_this_labs_own_network(recorded):
    """Q1's solution quotes the recorded run (the student's client on a variant of the
    network the notebook builds) and the range of L1's rates the variants draw."""
    import re

    from labtools.model.catalog import load_topology
    from labtools.model.variants import around

    nb = nbformat.read(str(SOLUTION), as_version=4)
    cells = {c.id: c.source for c in nb.cells}
    built = re.search(r'open_lab\("simpleperf", topology="([^"]+)"\)', cells["setup"])[1]
    capture = json.loads((RECORDED.parents[1] / "capture.json").read_text())
    link = load_topology(f"{built},variant={capture['variant']}").link("L1")
    reference = load_topology(built).link("L1")
    low, high = around(reference.bw_mbps, reference.delay_ms).bw_mbps
    mine, _ = _lab7(recorded)
    total = read_report(mine.extra["client_report"]).totals[0]
    counted = mine.parsed.summary
    gap_s = counted["duration_s"] - total.end_s
    key = " ".join(cells["q1-answer"].split())
    for said in (f"L1 of {link.bw_mbps:g} Mbit/s and {link.delay_ms:g} ms each way",
                 f"a {round(total.end_s)}-s run",
                 f"{total.nbytes / 1e6:.2f} MB in {total.end_s:.2f} s, {total.rate_mbps:.2f} Mbps",
                 f"{counted['receiver_bytes']:,} bytes".replace(",", " "),
                 f"in {counted['duration_s']:.2f} s, {counted['receiver_mbps']:.2f} Mbit/s",
                 f"{gap_s:.2f} s later: about {gap_s * link.bw_mbps / 8:.1f} MB at "
                 f"{link.bw_mbps:g} Mbit/s",
                 f"{low:g} to {high:g} Mbit/s"):
        assert said in key, said
    assert total.rate_mbps > link.bw_mbps > counted["receiver_mbps"]  # what the key says


def test_a_client_far_slower_than_an_iperf3_that_reached_its_link_fails(recorded):
    """The recorded student's run against a recorded iperf3 run of over twice its rate
    with an ok verdict (another link: the rule, not the lab, is under test)."""
    from labtools.teach.simpleperf_checks import link_problems

    mine, _ = _lab7(recorded)
    faster = next(m for _, m in recorded if m.tool == "iperf3" and _reached(m)
                  and m.summary.steady_mbps > 2 * mine.summary.steady_mbps)
    problems = link_problems(mine, faster)
    assert problems[0].startswith(f"your simpleperf carried {mine.summary.steady_mbps:.2f} "
                                  f"Mbit/s after the warm-up, iperf3 "
                                  f"{faster.summary.steady_mbps:.2f} Mbit/s on the same link: "
                                  "more than 15% less")
    assert problems[-1].startswith("your client printed:\n")


def test_against_an_iperf3_that_did_not_reach_its_link_the_rates_are_only_reported(recorded):
    """A machine (or a network) that held iperf3 below the link's rate says nothing about
    the student's tool: reported, not graded."""
    from labtools.teach.simpleperf_checks import cross_test_line, link_problems

    mine, _ = _lab7(recorded)
    held = next(m for _, m in recorded if m.tool == "iperf3" and m.verdicts and not _reached(m)
                and m.summary.steady_mbps > 2 * mine.summary.steady_mbps)
    assert link_problems(mine, held) == []
    assert cross_test_line(mine, held).endswith(
        "iperf3 did not reach the link's rate either: this machine set both rates, so the "
        "comparison is reported, not graded")


def test_a_report_that_does_not_count_what_arrived_fails(recorded):
    """The recorded report with its total row edited (a derived report: 3.89 MB -> 4.89 MB)."""
    from dataclasses import replace

    from labtools.teach.simpleperf_checks import link_problems, read_report

    mine, iperf3 = _lab7(recorded)
    total = read_report(mine.extra["client_report"]).totals[0]
    edited = mine.extra["client_report"].replace(
        total.line, total.line.replace(f"{total.nbytes / 1e6:.2f} MB", f"{total.nbytes / 1e6 + 1:.2f} MB"))
    assert edited != mine.extra["client_report"]
    wrong = replace(mine, extra={**mine.extra, "client_report": edited})
    received = mine.parsed.summary["receiver_bytes"]
    assert link_problems(wrong, iperf3)[0] == (
        f"your client's total rows add up to {total.nbytes + 1_000_000} bytes, the kit's server "
        f"received {received}")


def test_loopback_servers_get_ports_below_the_ephemeral_ones_and_free(monkeypatch, tmp_path):
    """A port the kernel could give some connection between the pick and the server's bind
    (a class graded several at once: lab 7's transfers take ephemeral ports all along) is
    not picked, nor one in use; without room below the ephemeral ports, any free one."""
    import socket

    start = int(simpleperf_runs.EPHEMERAL_RANGE.read_text().split()[0])
    ports = {simpleperf_runs.free_port() for _ in range(20)}
    assert all(simpleperf_runs.SERVER_PORT_FLOOR <= p < start for p in ports)
    with socket.socket() as taken:
        taken.bind((simpleperf_runs.LOOPBACK, 0))
        busy = taken.getsockname()[1]
        taken.listen()
        free = simpleperf_runs.free_port()
        monkeypatch.setattr(simpleperf_runs.random, "sample",
                            lambda population, k: [busy, free])
        assert simpleperf_runs.free_port() == free
    no_room = tmp_path / "ip_local_port_range"
    no_room.write_text(f"{simpleperf_runs.SERVER_PORT_FLOOR}\t60999\n")
    monkeypatch.setattr(simpleperf_runs, "EPHEMERAL_RANGE", no_room)
    assert simpleperf_runs.free_port() >= start  # the kernel's pick


def test_a_students_program_runs_with_the_standard_library_only(tmp_path):
    """As lab 7 says: ``python3 -S``, no installed package on the path (NumPy is one in
    the kit's Python) and no ``site`` builtins; the standard library is there."""
    from labtools.lab.own_simpleperf import program_argv

    program = tmp_path / "prog.py"
    program.write_text("import sys, socket, argparse, threading\n"
                       "print('site' in sys.modules, 'exit' in dir(__builtins__))\n"
                       "import numpy\n")
    ran = simpleperf_runs.run(program_argv(program), "prog")
    assert ran.out == "False False\n"
    assert ran.status == 1 and "No module named 'numpy'" in ran.err
