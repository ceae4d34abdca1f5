"""Labs without root (marker ``root``: root switches to ordinary users; this kernel's HTB
suffices, no netem): labs of two users, and two labs of one user, run at once on the same
node names, measure, never touch the machine's own network namespace, are not taken for
leftovers, and a lab whose process is SIGKILLed leaves nothing - no process, no namespace,
no interface - while the others go on.

Each lab is ``tests/support/sandbox_lab.py`` run as an ordinary user (``setpriv``: uid 65534 and
65533, no groups, the ``PATH`` an ordinary user has, no ``/usr/sbin``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, Set

import pytest

from labtools.system import procfs, userns
from labtools.system.cleanup import INTERFACE_RE, SWITCH_RE, Leftovers, find_leftovers

ROOT = Path(__file__).resolve().parents[2]
#: delay-free, rates only: HTB, which this kernel has (no netem)
TOPOLOGY = "star,hosts=3,bw_mbps=50"
USER_A, USER_B = 65534, 65533
START_S = 120.0

pytestmark = [pytest.mark.root, pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in ("setpriv", "unshare", "nsenter",
                                                           "mnexec", "iperf3", "ping")),
    reason="needs root (to become ordinary users), setpriv, unshare, nsenter, mnexec, "
           "iperf3 and ping")]


@pytest.fixture(scope="module", autouse=True)
def _ordinary_users_may_make_sandboxes():
    ok, detail, _ = userns.sandbox_ok()
    if not ok or "ordinary users' labs cannot start" in detail:
        pytest.skip(f"this machine gives ordinary users no user namespaces: {detail}")


class Lab:
    """``tests/support/sandbox_lab.py`` running as user ``uid``: its process and what it said."""

    def __init__(self, uid: int, home: Path) -> None:
        home.mkdir()
        os.chown(home, uid, uid)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
               "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
        self.proc = subprocess.Popen(
            ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--",
             sys.executable, str(ROOT / "tests" / "support" / "sandbox_lab.py"), TOPOLOGY,
             str(home / "results.sqlite")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(home), env=env)
        self.uid = uid
        self.info: Dict = {}

    def started(self) -> Dict:
        """The lab's first line: its holder's and nodes' PIDs."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the lab of uid {self.uid} ended at start ({self.proc.wait()})"
        self.info = json.loads(line)
        assert self.info["uid"] == self.uid
        return self.info

    def ask(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def answer(self) -> Dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the lab of uid {self.uid} ended ({self.proc.wait()})"
        return json.loads(line)

    def quit(self) -> None:
        if self.proc.poll() is None:
            self.ask("quit")
        assert self.proc.wait(timeout=60) == 0

    def namespaces(self) -> Set[str]:
        """The user namespace and every network namespace of the lab (``net:[...]``)."""
        pids = [self.info["holder"], *self.info["nodes"].values()]
        found = {procfs.read_link(self.info["holder"], "ns/user")}
        found |= {procfs.read_link(pid, "ns/net") for pid in pids}
        assert None not in found, "a process of the running lab is gone"
        return {ns for ns in found if ns is not None}


@pytest.fixture
def homes() -> Iterator[Path]:
    """A folder the ordinary users can reach (pytest's own is root's only), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="labtools-sandbox-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def labs() -> Iterator[List[Lab]]:
    """Every lab made is stopped (killed) at the end, whatever happens."""
    made: List[Lab] = []
    yield made
    for lab in made:
        if lab.proc.poll() is None:
            lab.proc.kill()
            lab.proc.wait()


def _kit_like_links() -> Set[str]:
    """Links of the machine's own namespace named like a lab's (``s1``, ``h1-eth0``)."""
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                         check=True).stdout
    names = {re.split(r"[:@]", line.split(": ", 2)[1])[0] for line in out.splitlines()}
    return {n for n in names if INTERFACE_RE.match(n) or SWITCH_RE.match(n)}


def _holders_of(namespaces: Set[str]) -> List[str]:
    """Every process (``pid: comm``) with one of ``namespaces`` as its user or network
    namespace, or an open file of one; zombies included."""
    found = []
    for pid in procfs.pids():
        links = ["ns/user", "ns/net", *(f"fd/{fd}" for fd in procfs.list_dir(pid, "fd"))]
        if any(procfs.read_link(pid, link) in namespaces for link in links):
            found.append(f"{pid}: {procfs.comm(pid) or '(gone)'}")
    return found


def _of_our_users(found: Leftovers) -> List[str]:
    """The leftovers ``labtools clean`` found that belong to the test's users (other
    software on this machine may have leftovers of its own)."""
    ours = []
    for proc in found.processes:
        if procfs.owner_uid(proc.pid) in (USER_A, USER_B):
            ours.append(f"{proc.pid}: {proc.name}")
    return ours


def _start(labs: List[Lab], homes: Path, *uids: int) -> List[Lab]:
    new = [Lab(uid, homes / f"lab{len(labs) + i}") for i, uid in enumerate(uids)]
    labs += new
    for lab in new:
        lab.started()
    return new


def _measure_all(labs: List[Lab]) -> List[Dict]:
    for lab in labs:  # all at once
        lab.ask("measure h1 h2")
    return [lab.answer() for lab in labs]


def _assert_measured(result: Dict) -> None:
    """Every echo came back, and TCP crossed the lab within its own link's rate (HTB in the
    lab's namespaces). How close to the ceiling depends on the machine: natively here 47.8 of
    47.8 Mbit/s each; three labs at once in the lab VM under software emulation, 12."""
    assert result["received"] == 5 and result["min_ms"] is not None
    assert 0 < result["receiver_mbps"] <= 1.02 * result["ceiling_mbps"]


def test_labs_of_two_users_run_side_by_side_on_the_same_names(labs, homes):
    before = _kit_like_links()
    a, a2, b = _start(labs, homes, USER_A, USER_A, USER_B)  # a2: a second notebook of A
    sandboxes = [lab.namespaces() for lab in (a, a2, b)]
    assert not (sandboxes[0] & sandboxes[1] or sandboxes[0] & sandboxes[2]
                or sandboxes[1] & sandboxes[2])
    for lab in (a, a2, b):  # the same bridge name in each, none in the machine's namespace
        links = subprocess.run(["nsenter", f"--target={lab.info['holder']}", "--net", "ip",
                                "-o", "link", "show", "s1"], capture_output=True, text=True)
        assert links.returncode == 0 and "s1:" in links.stdout
        owner = procfs.owner_uid(lab.info["holder"])
        assert owner == lab.uid
    assert _kit_like_links() == before
    for result in _measure_all([a, a2, b]):
        _assert_measured(result)
    found = find_leftovers()  # the labs run: not leftovers, and counted as running
    assert _of_our_users(found) == [] and found.running_labs >= 3
    for lab in (a, a2, b):
        lab.quit()
    assert _kit_like_links() == before
    assert not [n for ns in sandboxes for n in _holders_of({*ns})]


def test_a_killed_lab_leaves_nothing_and_the_others_go_on(labs, homes):
    before = _kit_like_links()
    a, b = _start(labs, homes, USER_A, USER_B)
    killed = a.namespaces()
    assert _holders_of(killed)  # its processes hold them while it runs
    _measure_all([a, b])
    a.ask("serve h3")  # a server that would run for ever
    server = a.answer()["serving"]
    assert procfs.read_link(server, "ns/net") in killed
    a.ask("measure h1 h2")  # killed while it measures
    time.sleep(1.5)
    a.proc.send_signal(signal.SIGKILL)
    assert a.proc.wait(timeout=10) == -signal.SIGKILL
    deadline = time.monotonic() + 20
    while _holders_of(killed) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _holders_of(killed) == []  # no process: its namespaces and interfaces are gone
    assert _kit_like_links() == before
    assert _of_our_users(find_leftovers()) == []
    _assert_measured(_measure_all([b])[0])  # the other lab did not notice
    b.quit()
    assert _kit_like_links() == before


def test_open_vswitch_needs_root_and_says_so(homes):
    script = ("from labtools.lab.session import LabSession\n"
              "LabSession('star,hosts=2', switch='ovs', results=None, calibrate=False).start()\n")
    proc = subprocess.run(["setpriv", f"--reuid={USER_A}", f"--regid={USER_A}", "--clear-groups",
                           "--", sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=str(homes), env={"PATH": "/usr/bin:/bin", "HOME": str(homes)},
                          timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "labtools.errors.EnvironmentProblem: Open vSwitch switches need root: Mininet builds "
        "them in this machine's own network namespace. Run as root (sudo), or use Linux "
        "bridges (the default, --switch lxbr), which need no root")
