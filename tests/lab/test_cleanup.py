"""Cleanup: which processes and links count as the kit's leftovers, removing exactly those
(with real veth pairs, a bridge, namespaces and processes), signals turned into Ctrl-C,
and time-outs on external commands.

The root tests build their own leftovers with distinctive names (h91, s91, lt91,
labtools-t91) and remove only those, so nothing else on the machine is touched.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import time
from contextlib import redirect_stdout
from typing import Dict

import pytest

from labtools import settings
from labtools.cli import main
from labtools.system import cleanup, procfs, vm_leftovers
from labtools.system.cleanup import (
    INTERFACE_RE,
    LeftoverProcess,
    Leftovers,
    find_leftovers,
    kit_process_name,
    remove,
    run_mn_clean,
)
from labtools.system.signals import guard_signals
from labtools.tools.args import SIMPLEPERF

# --- pure parts ------------------------------------------------------------------------


@pytest.mark.parametrize("comm,argv,name", [
    ("iperf3", ["iperf3", "-s", "-1", "-p", "5201"], "iperf3"),
    ("iperf", ["/usr/bin/iperf", "-s", "-u"], "iperf"),
    ("ping", ["ping", "-c", "10", "10.0.0.4"], "ping"),
    ("python3", ["/work/.venv/bin/python3", "-m", "labtools.tools.simpleperf", "-s"], "simpleperf"),
    ("simpleperf", ["/work/.venv/bin/python3", "/work/.venv/bin/simpleperf", "-s"],
     "simpleperf"),
    ("python3", [*SIMPLEPERF, "-s", "-p", "8088"], "simpleperf"),  # as the kit starts it
    ("python3", ["python3", "-S", "/tmp/simpleperf.py", "-s"], None),
    ("mnexec", ["mnexec", "-cdn", "bash"], "mnexec"),
    ("bash", ["bash", "--norc", "--noediting", "-is", "mininet:h1"], "mininet:h1"),
    ("grep", ["grep", "mininet:h1"], None),
    ("pgrep", ["pgrep", "-f", "iperf3"], None),
    ("sleep", ["sleep", "300"], None),
    ("python3", ["python3", "-c", "print('labtools.tools.simpleperf')"], None),
])
def test_kit_process_name(comm, argv, name):
    assert kit_process_name(comm, argv) == name


@pytest.mark.parametrize("name,match", [
    ("h1-eth0", True), ("r1-eth2", True), ("s12-eth10", True), ("eth0", False),
    ("veth0", False), ("h1-eth0.10", False), ("H1-eth0", False), ("s1", False),
    ("docker0", False), ("h1-eth", False),
])
def test_interface_names(name, match):
    assert bool(INTERFACE_RE.match(name)) is match


def test_describe():
    procs = [LeftoverProcess(10, "iperf3", "iperf3 -s"), LeftoverProcess(11, "iperf3", "iperf3 -c"),
             LeftoverProcess(12, "mnexec", "mnexec -cdn"),
             LeftoverProcess(13, "mininet:h1", "bash -is mininet:h1"),
             LeftoverProcess(14, "mininet:h2", "bash -is mininet:h2")]
    found = Leftovers(procs, [f"h{i}-eth0" for i in range(12)], ["s1", "s2"])
    assert found.count() == 19
    assert found.describe() == ("5 processes (iperf3 x2, mininet x2, mnexec), "
                                "12 interfaces, 2 bridges")
    assert Leftovers(interfaces=["h1-eth0"], namespaces=["labtools-a"]).describe() == (
        "1 interface, 1 namespace")
    assert Leftovers().describe() == "nothing"
    assert json.loads(json.dumps(found.to_dict()))["count"] == 19


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_guard_signals(sig):
    before = signal.getsignal(sig)
    cleaned = []
    with pytest.raises(KeyboardInterrupt, match=signal.Signals(sig).name):
        with guard_signals():
            try:
                os.kill(os.getpid(), sig)
                time.sleep(5)  # the signal interrupts this
            finally:
                cleaned.append(True)
    assert cleaned == [True]
    assert signal.getsignal(sig) is before


def test_command_time_out_kills_the_whole_group(tmp_path, monkeypatch):
    """A hung ``mn -c`` (whose child keeps the output pipe open) gives up after the
    time-out instead of hanging."""
    fake = tmp_path / "mn"
    fake.write_text("#!/bin/sh\necho '*** Removing excess controllers'\nsleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    ok, out = run_mn_clean(timeout_s=1)
    assert not ok and out == "mn did not finish within 1 s"
    assert time.monotonic() - started < 8
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert run_mn_clean() == (False, "")


# --- real kernel objects ------------------------------------------------------------------
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare")
    or not shutil.which("iperf3"), reason="needs root, ip, unshare and iperf3")

NS = "labtools-t91"
KIT_LINKS = ["h91-eth0", "s91-eth1"]


def _sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=20)


def _quiet(*argv: str) -> None:
    subprocess.run(argv, capture_output=True, timeout=20)


def _started(proc: subprocess.Popen, comm: str, other_ns: bool) -> None:
    root_ns = cleanup.root_netns()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        now = procfs.comm(proc.pid) or ""
        netns = procfs.read_link(proc.pid, "ns/net") or ""
        if now == comm and (netns != root_ns) == other_ns:
            return
        time.sleep(0.05)
    raise RuntimeError(f"process {proc.args} did not start")


def _teardown(procs: Dict[str, subprocess.Popen]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    for link in ("h91-eth0", "s91-eth1", "s91", "lt91a"):
        if os.path.exists(f"/sys/class/net/{link}"):
            _quiet("ip", "link", "delete", "dev", link)
    _quiet("ip", "netns", "delete", NS)


@pytest.fixture()
def kit_leftovers():
    """Leftovers like a crashed lab leaves them, plus look-alikes that are not the kit's."""
    procs: Dict[str, subprocess.Popen] = {}
    try:
        _sh("ip", "link", "add", "h91-eth0", "type", "veth", "peer", "name", "s91-eth1")
        _sh("ip", "link", "add", "s91", "type", "bridge")
        _sh("ip", "link", "set", "s91-eth1", "master", "s91")
        _sh("tc", "qdisc", "add", "dev", "h91-eth0", "root", "handle", "1:", "htb")
        _sh("ip", "link", "add", "lt91a", "type", "veth", "peer", "name", "lt91b")
        _sh("ip", "netns", "add", NS)
        spawn = {  # name -> (argv, comm, in another namespace)
            "tool": (["unshare", "--net", "iperf3", "-s", "-1", "-p", "5999"], "iperf3", True),
            "shell": (["unshare", "--net", "bash", "--norc", "--noediting", "-is",
                       "mininet:h91"], "bash", True),
            "in_ns": (["ip", "netns", "exec", NS, "sleep", "300"], "sleep", True),
            "host_tool": (["iperf3", "-s", "-1", "-p", "5998", "-B", "127.0.0.1"], "iperf3",
                          False),
            "other_sleep": (["unshare", "--net", "sleep", "300"], "sleep", True),
        }
        for key, (argv, comm, other_ns) in spawn.items():
            procs[key] = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _started(procs[key], comm, other_ns)
        yield procs
    finally:
        _teardown(procs)


def _ours(found: Leftovers, procs: Dict[str, subprocess.Popen]) -> Leftovers:
    pids = {procs[k].pid for k in ("tool", "shell", "in_ns")}
    return Leftovers(
        processes=[p for p in found.processes if p.pid in pids],
        interfaces=[n for n in found.interfaces if n in KIT_LINKS],
        bridges=[n for n in found.bridges if n == "s91"],
        namespaces=[n for n in found.namespaces if n == NS],
    )


@pytest.mark.root
@needs_root
def test_find_leftovers_sees_only_the_kits(kit_leftovers):
    procs = kit_leftovers
    found = find_leftovers()
    ours = _ours(found, procs)
    names = {p.pid: p.name for p in ours.processes}
    assert names == {procs["tool"].pid: "iperf3", procs["shell"].pid: "mininet:h91",
                     procs["in_ns"].pid: "sleep"}
    assert ours.interfaces == KIT_LINKS and ours.bridges == ["s91"]
    assert ours.namespaces == [NS]
    found_pids = {p.pid for p in found.processes}
    assert procs["host_tool"].pid not in found_pids  # iperf3 on the machine itself
    assert procs["other_sleep"].pid not in found_pids  # not a kit tool
    assert not {"lt91a", "lt91b"} & set(found.interfaces)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["clean", "--dry-run", "--json"]) == 0
    shown = json.loads(out.getvalue())
    assert shown["dry_run"] is True and set(KIT_LINKS) <= set(shown["interfaces"])
    assert all(proc.poll() is None for proc in procs.values())  # a dry run touches nothing
    assert os.path.exists("/sys/class/net/h91-eth0")


@pytest.mark.root
@needs_root
def test_clean_removes_exactly_the_kits(kit_leftovers, monkeypatch):
    procs = kit_leftovers
    ours = _ours(find_leftovers(), procs)
    assert ours.count() == 7
    real_find = cleanup.find_leftovers
    # Other software on this machine may have leftovers of its own: clean only ours.
    monkeypatch.setattr(cleanup, "find_leftovers", lambda: _ours(real_find(), procs))
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["clean", "--no-mn"]) == 0
    text = out.getvalue()
    assert text.startswith("removed 3 processes (iperf3, mininet, sleep), 2 interfaces, "
                           "1 bridge, 1 namespace\n"), text
    assert "interfaces: h91-eth0 s91-eth1" in text and "bridges: s91" in text
    assert _ours(real_find(), procs).count() == 0
    for key in ("tool", "shell", "in_ns"):
        assert procs[key].wait(timeout=5) in (-signal.SIGTERM, -signal.SIGKILL, 0, 1, 143)
    assert procs["host_tool"].poll() is None and procs["other_sleep"].poll() is None
    assert not os.path.exists("/sys/class/net/h91-eth0")
    assert not os.path.exists("/sys/class/net/s91")
    assert os.path.exists("/sys/class/net/lt91a")
    assert NS not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                    timeout=10).stdout
    with redirect_stdout(io.StringIO()) as again:
        assert main(["clean", "--no-mn"]) == 0
    assert again.getvalue() == "nothing to clean\n"


@pytest.mark.root
@needs_root
def test_remove_reports_what_is_gone(kit_leftovers):
    procs = kit_leftovers
    ours = _ours(find_leftovers(), procs)
    done = remove(ours)
    assert done.failed == []
    assert sorted(p.pid for p in done.processes) == sorted(p.pid for p in ours.processes)
    assert done.interfaces == ours.interfaces and done.bridges == ["s91"]
    assert done.count() == ours.count() == 7
    assert remove(ours).count() == 7  # already gone counts as gone, no errors


# --- a lab VM whose runner died ---------------------------------------------------------
def test_a_vm_whose_runner_died_is_a_leftover_and_a_live_ones_is_not(tmp_path):
    """A real process standing in for the VM's session (vng, qemu): in its own session,
    naming the runner's folder, like ``labtools vm`` starts them."""
    folder = tmp_path / f"{vm_leftovers.VM_MARK}t91"
    folder.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    owner = folder / vm_leftovers.VM_OWNER_FILE
    owner.write_text(f"{dead.pid}\n")
    vm = subprocess.Popen(["sh", "-c", "sleep 300", str(folder / "guest.sh")],
                          start_new_session=True)
    try:
        ours = [p for p in find_leftovers().processes if p.pid == vm.pid]
        assert [p.name for p in ours] == ["vm"]
        owner.write_text(f"{os.getpid()}\n")  # its runner is alive: not a leftover
        assert vm.pid not in {p.pid for p in find_leftovers().processes}
        owner.write_text(f"{dead.pid}\n")
        done = remove(Leftovers(processes=[p for p in find_leftovers().processes
                                           if p.pid == vm.pid]))
        assert vm.wait(timeout=10) is not None and not done.failed
    finally:
        if vm.poll() is None:
            vm.kill()


@pytest.mark.skipif(not shutil.which("unshare") or not shutil.which("setsid"),
                    reason="needs unshare and setsid")
def test_a_vm_in_a_container_is_not_a_leftover_of_the_machine(tmp_path):
    """A student's container runs its own lab VM: its owner's PID and its folder are the
    container's (another PID namespace), never this machine's leftovers."""
    folder = tmp_path / f"{vm_leftovers.VM_MARK}t92"
    folder.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (folder / vm_leftovers.VM_OWNER_FILE).write_text(f"{dead.pid}\n")
    outer = subprocess.Popen(["unshare", "--user", "--map-root-user", "--pid", "--fork",
                              "--kill-child", "--",
                              "setsid", "sh", "-c", "sleep 300", str(folder / "guest.sh")],
                             start_new_session=True)
    try:
        deadline, vm = time.monotonic() + 10, None
        while vm is None and time.monotonic() < deadline:
            vm = next((pid for pid in procfs.pids()
                       if str(folder) in " ".join(procfs.argv(pid) or [])
                       and procfs.comm(pid) == "sh"), None)
            time.sleep(0.05)
        assert vm is not None
        assert procfs.read_link(vm, "ns/pid") not in (None, procfs.read_link(os.getpid(), "ns/pid"))
        assert vm not in {p.pid for p in find_leftovers().processes}
    finally:
        os.killpg(outer.pid, signal.SIGKILL)
        outer.wait()


def test_a_runner_folder_is_stale_only_when_its_owner_is_gone(tmp_path, monkeypatch):
    monkeypatch.setattr(vm_leftovers.tempfile, "gettempdir", lambda: str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale, live = tmp_path / f"{vm_leftovers.VM_MARK}old", tmp_path / f"{vm_leftovers.VM_MARK}now"
    for folder, pid in ((stale, dead.pid), (live, os.getpid())):
        folder.mkdir()
        (folder / vm_leftovers.VM_OWNER_FILE).write_text(f"{pid}\n")
    found = find_leftovers()
    assert found.folders == [str(stale)] and "1 VM folder" in found.describe()
    done = remove(Leftovers(folders=found.folders))
    assert done.folders == [str(stale)] and not stale.exists() and live.exists()
    monkeypatch.setenv(settings.IN_VM, "1")  # a guest never touches them
    (live / vm_leftovers.VM_OWNER_FILE).write_text(f"{dead.pid}\n")
    assert find_leftovers().folders == []


# --- sandboxed labs -----------------------------------------------------------------------
def test_sandboxes_are_told_apart_by_their_marks():
    from labtools.lab.sandbox import holder_argv
    from labtools.system import sandbox_leftovers as sl

    holder = holder_argv()[holder_argv().index("sh"):]  # what unshare leaves running
    node = ["sh", "-s", "labtools-node:h1"]
    tool = ["iperf3", "-s", "-p", "5201"]
    assert sl.is_holder(holder) and not sl.is_holder(node) and not sl.is_holder(tool)
    assert sl.is_node_shell(node) and not sl.is_node_shell(["sh", "-s", "mininet:h1"])
    assert sl.process_name("sh", node) == "labtools-node:h1"
    assert sl.process_name("iperf3", tool) == "iperf3"
    argvs = {1: holder, 2: node, 3: tool, 4: node, 5: tool, 6: ["chromium", "--type=zygote"]}
    spaces = {1: "user:[1]", 2: "user:[1]", 3: "user:[1]",  # a running lab
              4: "user:[2]", 5: "user:[2]",  # a lab whose holder was killed too
              6: "user:[3]"}  # another program's sandbox
    assert sl.orphaned_sandboxes(argvs, spaces) == [4, 5]
    assert sl.running_sandboxes(argvs) == 1


_can_sandbox = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("mnexec", "nsenter", "iperf3")),
    reason="needs mnexec (Mininet), nsenter and iperf3")


@_can_sandbox
def test_a_sandbox_whose_holder_was_killed_is_a_leftover_and_clean_removes_it():
    """The only way a sandboxed lab leaves anything: its holder killed with its process."""
    from labtools.lab.nodes import NodeShell
    from labtools.lab.sandbox import Sandbox

    box = Sandbox()
    node = NodeShell("n95", box)
    tool = box.popen_in(node.pid, ["iperf3", "-s", "-p", "5995"])  # a kit tool in a netns
    try:
        time.sleep(0.2)  # nsenter has become iperf3
        running = find_leftovers()  # another user's lab, maybe: never a leftover
        assert not {node.pid, tool.pid} & {p.pid for p in running.processes}
        assert running.running_labs >= 1
        box.proc.kill()  # the holder cannot clear anything now
        box.proc.wait()
        found = [p for p in find_leftovers().processes if p.pid in (node.pid, tool.pid)]
        assert sorted(p.name for p in found) == ["iperf3", "labtools-node:n95"]
        done = remove(Leftovers(processes=found))
        assert not done.failed and tool.wait(timeout=10) is not None
        assert node.proc.wait(timeout=10) is not None
    finally:
        for proc in (tool, node.proc):
            if proc.poll() is None:
                proc.kill()
        box.close()


@pytest.mark.root
@needs_root
@_can_sandbox
def test_clean_leaves_running_labs_and_mn_c_alone(monkeypatch):
    """``mn -c`` kills every ping on the machine: not while a sandboxed lab runs."""
    from labtools.lab.sandbox import Sandbox

    box = Sandbox()
    try:
        monkeypatch.setattr(cleanup, "run_mn_clean", lambda: pytest.fail("ran mn -c"))
        with redirect_stdout(io.StringIO()) as out:
            assert main(["clean"]) == 0
        assert "did not run mn -c: " in out.getvalue() and box.running
    finally:
        box.close()
