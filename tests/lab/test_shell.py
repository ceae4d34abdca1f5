"""``labtools shell NODE``: a recorded terminal on a node of a running sandboxed lab.

The labs here are delay-free (HTB only, no netem) and uncalibrated, so they start natively
in a few seconds. Each test's labs write their records into a folder of the test's own
(``running_labs.RECORDS_ROOT``), so other labs running on this machine are not seen; the
command line runs in a subprocess told the same folder (:data:`LAUNCH`)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labtools.errors import EnvironmentProblem
from labtools.lab import running_labs, terminal
from labtools.system import procfs
from labtools.system.userns import sandbox_ok

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = "star,hosts=3,bw_mbps=50"
CASE = "shell-test"
OTHER_USER = 65534
#: ``labtools ARGS`` with the record folder of the test (its first argument)
LAUNCH = ("import sys; from pathlib import Path; from labtools.lab import running_labs; "
          "running_labs.RECORDS_ROOT = Path(sys.argv.pop(1)); from labtools.cli import main; "
          "sys.exit(main(sys.argv[1:]))")
PROMPT = r"h\d:[^\r\n]*[#$] "

needs_sandbox = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("mnexec", "nsenter", "bash")) or not sandbox_ok()[0],
    reason="needs mnexec (Mininet), nsenter, bash and user namespaces")


@pytest.fixture
def records(tmp_path, monkeypatch):
    root = tmp_path / "records"
    root.mkdir(mode=0o700)
    monkeypatch.setattr(running_labs, "RECORDS_ROOT", root)
    return root


@pytest.fixture
def lab(records, tmp_path):
    from labtools.lab.session import LabSession

    with LabSession(TOPOLOGY, results=tmp_path / "results.sqlite", calibrate=False,
                    case=CASE) as running:
        yield running


def shell(records, *args, env=None):
    """``labtools shell ARGS`` as a user runs it (stdout, stderr, status)."""
    return subprocess.run([sys.executable, "-c", LAUNCH, str(records), "shell", *args],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=60,
                          env=env)


def spawn(records, home, *args):
    """``labtools shell ARGS`` on a terminal (pexpect); ``.log`` is what it showed."""
    import pexpect

    child = pexpect.spawn(sys.executable, ["-c", LAUNCH, str(records), "shell", *args],
                          cwd=str(ROOT), timeout=30, env={**os.environ, "HOME": str(home)})
    child.log = io.BytesIO()
    child.logfile_read = child.log
    return child


def host_addresses():
    out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True,
                         check=True).stdout
    return {a for a in re.findall(r"inet (\S+)/", out) if not a.startswith("127.")}


# --- a node's terminal on a running lab ----------------------------------------------------
@needs_sandbox
def test_one_command_runs_in_the_node_and_is_kept(records, lab):
    h1 = lab.ip_towards("h2", "h1")
    done = shell(records, "h1", "-c", "ip -o addr show")
    assert done.returncode == 0, done.stderr
    assert f"inet {h1}/" in done.stdout and "h1-eth0" in done.stdout
    assert not host_addresses() & set(re.findall(r"inet (\S+)/", done.stdout))
    [kept] = lab.store.transcripts()
    assert (kept.node, kept.session_id, kept.case, kept.ended_by) == (
        "h1", lab.session_id, CASE, "command")
    assert [(c.command, c.output, c.exit_status) for c in kept.commands] == [
        ("ip -o addr show", done.stdout, 0)]
    assert shell(records, "h3", "-c", "exit 3").returncode == 3


@needs_sandbox
def test_an_interactive_session_keeps_each_command_and_its_output(records, lab, tmp_path):
    import pexpect

    child = spawn(records, tmp_path, "h2")
    child.expect(PROMPT)
    child.sendline("hostname; ip route")
    child.expect(PROMPT)
    child.sendline("")  # an empty line is no command
    child.expect(PROMPT)
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    shown = child.log.getvalue()
    assert b"h2:" in shown and b"6973" not in shown  # the kit's marks are never shown
    [kept] = lab.store.transcripts(node="h2")
    assert kept.ended_by == "exit"
    assert [c.command for c in kept.commands] == ["hostname; ip route", "exit"]
    first = kept.commands[0]
    h2 = lab.ip_towards("h1", "h2")
    assert first.exit_status == 0 and first.output.startswith(socket.gethostname() + "\n")
    assert re.search(rf"dev h2-eth0 .*src {re.escape(h2)}", first.output)
    assert "hostname; ip route" in kept.transcript and first.output in kept.transcript


@needs_sandbox
def test_a_terminal_that_closes_still_saves_and_ends_what_ran(records, lab, tmp_path):
    import pexpect

    child = spawn(records, tmp_path, "h3", "--lab", str(lab.store.path))
    child.expect(PROMPT)
    child.sendline("echo before-hangup")
    child.expect(PROMPT)
    child.sendline("sleep 31.5")
    time.sleep(0.5)
    child.kill(signal.SIGHUP)
    child.expect(pexpect.EOF, timeout=10)
    child.close()
    assert child.exitstatus == 129
    [kept] = lab.store.transcripts(node="h3")
    assert kept.ended_by == "hangup"
    assert [(c.command, c.output, c.exit_status) for c in kept.commands] == [
        ("echo before-hangup", "before-hangup\n", 0), ("sleep 31.5", "", None)]
    assert not [p for p in procfs.pids() if procfs.argv(p) == ["sleep", "31.5"]]


# --- what is refused, in one line ---------------------------------------------------------
def _one_line_error(done, *words):
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


@needs_sandbox
def test_an_unknown_node_or_lab_is_one_line(records, lab, tmp_path):
    _one_line_error(shell(records, "h9", "-c", "true"), "no node 'h9'", "h1, h2, h3, s1")
    _one_line_error(shell(records, "h1", "--lab", str(tmp_path / "elsewhere.sqlite")),
                    "no lab of yours is running with results")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    if os.geteuid() == 0:  # a folder of another user (only root can make one)
        os.chown(theirs, OTHER_USER, OTHER_USER)
        _one_line_error(shell(records, "h1", "--lab", str(theirs)), "another user's")
    assert lab.store.transcripts() == []


@needs_sandbox
def test_with_two_labs_the_lab_is_named(records, lab, tmp_path):
    from labtools.lab.session import LabSession

    with LabSession(TOPOLOGY, results=tmp_path / "second" / "results.sqlite",
                    calibrate=False, case="second") as second:
        _one_line_error(shell(records, "h1", "-c", "true"), "2 labs of yours are running",
                        f"--lab {lab.store.path}", f"--lab {second.store.path}")
        done = shell(records, "h1", "--lab", str(second.store.path.parent), "-c", "echo hi")
        assert done.returncode == 0 and done.stdout == "hi\n"
        assert [t.case for t in second.store.transcripts()] == ["second"]
        assert lab.store.transcripts() == []


@needs_sandbox
def test_a_stopped_lab_leaves_no_record_and_no_lab_runs(records, tmp_path):
    from labtools.lab.session import LabSession

    lab = LabSession(TOPOLOGY, results=tmp_path / "results.sqlite", calibrate=False)
    lab.start()
    try:
        [record] = list(running_labs.records_dir().iterdir())
        assert record.stat().st_mode & 0o777 == 0o600
        assert running_labs.records_dir().stat().st_mode & 0o777 == 0o700
        assert json.loads(record.read_text())["results"] == str(lab.store.path.resolve())
    finally:
        lab.stop()
    assert list(running_labs.records_dir().iterdir()) == []
    _one_line_error(shell(records, "h1"), "no lab of yours is running")


# --- records: stale, in the lab VM ---------------------------------------------------------
@needs_sandbox
def test_a_stale_record_is_removed_and_a_record_of_the_vm_says_so(records, lab):
    [path] = list(running_labs.records_dir().iterdir())
    data = json.loads(path.read_text())
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = running_labs.records_dir() / "stale.json"
    stale.write_text(json.dumps({**data, "lab": list(running_labs.process_ref(gone.pid))}))
    assert running_labs.choose().session_id == lab.session_id
    assert not stale.exists() and path.exists()
    lab_vm = running_labs.records_dir() / "vm.json"
    lab_vm.write_text(json.dumps({**data, "boot_id": "another-kernel"}))
    path.rename(path.with_suffix(".kept"))
    try:
        with pytest.raises(EnvironmentProblem, match="runs in the lab VM.*run_on"):
            running_labs.choose()
        assert lab_vm.exists()  # not this kernel's to clean
    finally:
        path.with_suffix(".kept").rename(path)


def test_a_notebook_kernel_in_the_lab_vm_is_named_instead_of_no_lab(records):
    kernel = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "-m",
                               running_labs.VM_KERNEL_MODULE, "-f", "kernel-1.json"])
    try:
        # the child shows its own command line only once it has exec'd Python
        deadline = time.monotonic() + 30
        while kernel.pid not in running_labs.vm_kernels() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert kernel.pid in running_labs.vm_kernels()
        with pytest.raises(EnvironmentProblem, match="runs in the lab VM.*run_on"):
            running_labs.choose()
    finally:
        kernel.kill()
        kernel.wait()


def test_a_folder_that_is_not_private_is_refused(records):
    folder = running_labs.records_dir()
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    with pytest.raises(EnvironmentProblem, match="not a private folder"):
        running_labs.choose()


# --- the notebooks' API ----------------------------------------------------------------------
@needs_sandbox
def test_the_notebook_reads_the_sessions_of_a_node(records, lab):
    from labtools.teach.tool_runs import run_on, shell_transcripts

    assert shell(records, "h1", "-c", "ip route").returncode == 0
    assert shell(records, "h2", "-c", "ip link").returncode == 0
    printed = run_on(lab, "h1", "ping -c 1 -W 2 {h2}")
    on_h1 = shell_transcripts(lab, "h1")
    assert [t.ended_by for t in on_h1] == ["command", "run_on"]
    assert on_h1[1].commands[0].command == f"ping -c 1 -W 2 {lab.ip_towards('h1', 'h2')}"
    assert on_h1[1].outputs("ping") == [printed] and "1 received" in printed
    assert [t.node for t in shell_transcripts(lab)] == ["h1", "h2", "h1"]


# --- what the terminal shows and keeps, from a real bash ------------------------------------
class _KeepingReader(terminal.TranscriptReader):
    """Keeps every byte the shell printed, as it came."""

    def __init__(self):
        super().__init__()
        self.raw = bytearray()

    def feed(self, data):
        self.raw += data
        return super().feed(data)


def test_the_marks_are_cut_out_however_the_output_is_split(tmp_path):
    if not shutil.which("bash"):
        pytest.skip("needs bash")
    rc = tmp_path / "rc"
    rc.write_text(terminal.BASH_RC.replace("{prompt}", terminal.prompt("n1")))
    keys = tmp_path / "keys"
    keys.write_text("printf 'a\\033[1mb\\033[0m\\n'; (exit 4)\n\necho 'x  y'\nexit\n")
    argv, _ = terminal.shell_argv("n1", str(rc))
    out, reader = tmp_path / "out", _KeepingReader()
    with open(keys, "rb") as typed, open(out, "wb") as shown:
        whole = terminal.interactive(argv, {**os.environ, "HOME": str(tmp_path)}, "n1",
                                     out_fd=shown.fileno(), in_fd=typed.fileno(),
                                     reader=reader)
    assert whole.ended_by == "exit"
    assert [(c.command, c.output, c.exit_status) for c in whole.commands] == [
        ("printf 'a\\033[1mb\\033[0m\\n'; (exit 4)", "ab\n", 4),
        ("echo 'x  y'", "x  y\n", 0), ("exit", "exit\n", None)]
    assert b"\x1b]6973;" in reader.raw  # bash printed the marks ...
    assert b"6973" not in out.read_bytes() and b"n1:" in out.read_bytes()  # ... not shown
    again = terminal.TranscriptReader()  # the same bytes one at a time: the same commands
    shown = b"".join(again.feed(reader.raw[i:i + 1]) for i in range(len(reader.raw)))
    assert shown == out.read_bytes()
    assert again.transcript("n1", "", "exit").commands == whole.commands


# --- the store -----------------------------------------------------------------------------
def test_a_results_file_from_before_shell_sessions_reads_as_none_until_one_is_saved(tmp_path):
    import sqlite3

    from labtools.errors import StoreError
    from labtools.results.store import ResultStore
    from labtools.results.transcripts import ShellCommand, ShellTranscript

    path = tmp_path / "results.sqlite"
    ResultStore(path)
    with sqlite3.connect(path) as con:
        con.execute("DROP TABLE shell_transcripts")
    before = path.read_bytes()
    older = ResultStore(path, create=False)
    assert older.transcripts() == [] and path.read_bytes() == before
    kept = ShellTranscript("h1", [ShellCommand("echo kept", "kept\n", 0)],
                           ended_by="command", case="c", ended_at="2026-01-05T10:00:00+00:00")
    assert older.save_transcript(kept) == 1 == kept.id
    [back] = ResultStore(path, create=False).transcripts(node="h1", case="c")
    assert back == kept
    with sqlite3.connect(path) as con:
        con.execute("UPDATE shell_transcripts SET commands_json = '{\"not\": 1}'")
    with pytest.raises(StoreError, match="shell_transcripts row 1: commands_json"):
        older.transcripts()
    with pytest.raises(StoreError, match="ends by"):
        older.save_transcript(ShellTranscript("h1", ended_by="logout"))
