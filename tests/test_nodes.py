"""The kit's node shells (marker ``root``: real namespaces on this machine, no netem needed):
each holds a network namespace of its own, runs a script there and reports what it printed,
runs tools there, is found by ``labtools clean`` under Mininet's mark, and leaves nothing
behind when terminated."""

from __future__ import annotations

import os
import shutil

import pytest

from labtools.errors import EnvironmentProblem
from labtools.lab.nodes import NodeShell, popen_in_namespace
from labtools.system.cleanup import find_leftovers

pytestmark = [pytest.mark.root, pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("mnexec") or not shutil.which("ip"),
    reason="needs root, mnexec (Mininet) and ip")]


def _netns(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


def test_a_node_holds_its_own_namespace_and_runs_scripts_and_tools(tmp_path):
    node = NodeShell("n91")
    try:
        assert _netns(node.pid) != _netns(os.getpid())
        good, bad = tmp_path / "good.sh", tmp_path / "bad.sh"
        good.write_text("set -e\nip link set lo up\necho configured\n")
        bad.write_text("set -e\nip link set nosuchdev up\necho not-reached\n")
        node.send_script(str(good))
        assert node.wait_output() == "configured\n"
        node.send_script(str(bad))
        out = node.wait_output()
        assert "nosuchdev" in out and "not-reached" not in out
        tool = popen_in_namespace(node.pid, ["ip", "-o", "link", "show", "up"])
        listing, _ = tool.communicate(timeout=30)
        assert tool.returncode == 0 and "lo:" in listing and "eth" not in listing
        assert node.proc.poll() is None  # a failing script does not end the node
        found = {p.pid: p.name for p in find_leftovers().processes}
        assert found.get(node.pid) == "mininet:n91"
    finally:
        node.terminate()
    assert node.proc.poll() is not None
    assert node.pid not in {p.pid for p in find_leftovers().processes}


def test_a_node_that_ended_says_so():
    node = NodeShell("n92")
    node.terminate()
    with pytest.raises(EnvironmentProblem, match="n92 is not running"):
        node.send_script("/dev/null")


def test_without_mnexec_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EnvironmentProblem, match="mnexec comes with Mininet"):
        NodeShell("n93")
