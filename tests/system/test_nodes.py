"""The kit's node shells, in a real sandbox on this machine (no root and no netem needed):
each holds a network namespace of its own inside the lab's sandbox, runs a script there and
reports its exit status and what it printed, runs tools there, is not taken for a leftover
by ``labtools clean`` (it may be another user's running lab), and goes with its sandbox."""

from __future__ import annotations

import os
import shutil

import pytest

from labtools.errors import EnvironmentProblem
from labtools.lab.nodes import NodeShell
from labtools.lab.sandbox import Sandbox
from labtools.system import procfs
from labtools.system.cleanup import find_leftovers
from labtools.system.userns import sandbox_ok

pytestmark = pytest.mark.skipif(
    not shutil.which("mnexec") or not shutil.which("nsenter") or not sandbox_ok()[0],
    reason="needs mnexec (Mininet), nsenter and user namespaces")


def _ns(pid: int, kind: str = "net") -> str:
    found = procfs.read_link(pid, f"ns/{kind}")
    assert found is not None, f"process {pid} is gone"
    return found


@pytest.fixture
def sandbox():
    box = Sandbox()
    yield box
    box.close()


def test_a_node_holds_its_own_namespace_and_runs_scripts_and_tools(tmp_path, sandbox):
    node = NodeShell("n91", sandbox)
    try:
        assert _ns(node.pid) not in (_ns(os.getpid()), _ns(sandbox.pid))
        assert _ns(node.pid, "user") == _ns(sandbox.pid, "user") != _ns(os.getpid(), "user")
        good, bad, noisy = tmp_path / "good.sh", tmp_path / "bad.sh", tmp_path / "noisy.sh"
        good.write_text("set -e\nip link set lo up\necho configured\n")
        bad.write_text("set -e\nip link set nosuchdev up\necho not-reached\n")
        noisy.write_text("set -e\necho 'Warning: a command that worked said this' >&2\n")
        node.send_script(str(good))
        assert node.wait_script() == (0, "configured\n")
        node.send_script(str(bad))
        status, out = node.wait_script()
        assert status != 0 and "nosuchdev" in out and "not-reached" not in out
        node.send_script(str(noisy))  # tc of Linux 6.x warns about commands that worked
        assert node.wait_script() == (0, "Warning: a command that worked said this\n")
        tool = sandbox.popen_in(node.pid, ["ip", "-o", "link", "show", "up"])
        listing, _ = tool.communicate(timeout=30)
        assert tool.returncode == 0 and "lo:" in listing and "eth" not in listing
        assert node.proc.poll() is None  # a failing script does not end the node
        assert node.pid not in {p.pid for p in find_leftovers().processes}
    finally:
        node.terminate()
    assert node.proc.poll() is not None


def test_a_node_goes_with_its_sandbox():
    """Even a tool started just before the end: killed, or its ``nsenter`` finds no node
    ("cannot open /proc/PID/ns/net") - it never runs on in a namespace of its own."""
    box = Sandbox()
    node = NodeShell("n94", box)
    tool = box.popen_in(node.pid, ["sleep", "600"])
    box.close()
    assert not box.running
    assert node.proc.wait(timeout=30) == -9 and tool.wait(timeout=30) in (-9, 1)


def test_a_node_that_ended_says_so(sandbox):
    node = NodeShell("n92", sandbox)
    node.terminate()
    with pytest.raises(EnvironmentProblem, match="n92 is not running"):
        node.send_script("/dev/null")


def test_without_mnexec_the_error_says_what_to_install(sandbox):
    sandbox.env["PATH"] = "/nonexistent"
    with pytest.raises(EnvironmentProblem, match="mnexec comes with Mininet"):
        NodeShell("n93", sandbox)
