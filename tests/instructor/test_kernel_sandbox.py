"""Every autograde kernel in a sandbox (labtools.instructor.kernel_sandbox): a hostile
submission's code, run by a real kernel forked as nbgrader's are, in a course's layout,
tries what a student who wants the answers would, and each attempt is refused."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any, Dict

import pytest

from labtools.instructor import kernel_sandbox
from labtools.instructor.kernel_fork_manager import ForkingKernelManager
from labtools.judge import policy
from labtools.system import procfs

ROOT = Path(__file__).resolve().parents[2]
#: what the hostile cell tries; each entry says what happened ("refused: ..." or what it got)
HOSTILE = r'''
import glob, json, os, socket, time
tried = {}
def attempt(name, action):
    try:
        tried[name] = action()
    except (OSError, MemoryError) as err:
        tried[name] = "refused: " + type(err).__name__
def read(path):
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")
def write(path):
    with open(path, "w") as f:
        f.write("left")
    return "written"
attempt("solutions", lambda: [read(p) for p in glob.glob("../../../source/labs/*.ipynb")]
        or "refused: none seen")
attempt("gradebook", lambda: read("../../../gradebook.db"))
attempt("kit_solutions", lambda: [read(p) for p in glob.glob(KIT_SOLUTIONS + "/*.ipynb")]
        or "refused: none seen")
attempt("other_submitted", lambda: read("../../../submitted/bob/lab1/lab1.ipynb"))
attempt("other_autograded", lambda: read("../../bob/lab1/lab1.ipynb"))
attempt("home", lambda: read(HOME_FILE))
attempt("tokens", lambda: {k: v for k, v in os.environ.items()
                           if "TOKEN" in k or "SECRET" in k or k.startswith("JUPYTERHUB")
                           or k == "INSTRUCTOR_ONLY"} or "refused: none seen")
def connect(host):
    with socket.create_connection((host, 80), timeout=3):
        return "connected"
attempt("network", lambda: connect("192.0.2.1"))
def loopback():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0)); server.listen()
        with socket.create_connection(server.getsockname(), timeout=3):
            return "connected"
attempt("loopback", loopback)
def fork_many():
    children = []
    try:
        for _ in range(10000):
            pid = os.fork()
            if pid == 0:
                time.sleep(10)
                os._exit(0)
            children.append(pid)
        return "forked %d" % len(children)
    finally:
        for pid in children:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
attempt("processes", fork_many)
attempt("memory", lambda: len(bytearray(8 << 30)))
attempt("outside", lambda: write("../../../left-behind.txt"))
attempt("kit", lambda: write(KIT_FILE))
attempt("tmp", lambda: write(TMP_FILE))
attempt("own_folder", lambda: write("mine.txt"))
attempt("variants", lambda: read("../../../labtools-variants.csv"))
attempt("variants_write", lambda: write("../../../labtools-variants.csv"))
attempt("record", lambda: read("../../../course-record/alice.json"))
attempt("record_write", lambda: write("../../../course-record/alice.json"))
attempt("other_record", lambda: read("../../../course-record/bob.json"))
tried["uid"] = os.getuid()
import subprocess
tried["daemon"] = subprocess.Popen(["sleep", "300"], start_new_session=True).pid
print(json.dumps(tried))
'''


def _course(tmp_path: Path) -> Dict[str, Path]:
    """A course's layout with answers in each place a submission must not see."""
    course = tmp_path / "course"
    for part in ("source/labs/lab1.ipynb", "release/lab1/lab1.ipynb",
                 "submitted/bob/lab1/lab1.ipynb", "autograded/bob/lab1/lab1.ipynb",
                 "feedback/bob/lab1/lab1.html", "gradebook.db"):
        (course / part).parent.mkdir(parents=True, exist_ok=True)
        (course / part).write_text("THE ANSWER")
    folder = course / "autograded" / "alice" / "lab1"
    folder.mkdir(parents=True)
    (course / "labtools-variants.csv").write_text("alice,blue\n")
    (course / "course-record").mkdir()
    for student in ("alice", "bob"):
        (course / "course-record" / f"{student}.json").write_text(f'{{"events": ["{student}"]}}')
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("THE ANSWER")
    return {"course": course, "folder": folder, "home": home}


async def _run_hostile(folder: Path, env: Dict[str, str], code: str) -> Dict[str, Any]:
    km = ForkingKernelManager(kernel_name="python3")
    await km.start_kernel(cwd=str(folder), env=env)
    kc = km.client()
    kc.start_channels()
    out = []
    try:
        await kc.wait_for_ready(timeout=60)
        reply = await kc.execute_interactive(
            code, timeout=120, output_hook=lambda m: out.append(m["content"].get("text", "")))
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        await km.shutdown_kernel(now=False)
    return json.loads("".join(out).strip().splitlines()[-1])


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Dict[str, Any]:
    tmp_path = tmp_path_factory.mktemp("sandbox")
    where = _course(tmp_path)
    kit_file = Path(kernel_sandbox.__file__).with_name("left-behind.txt")
    tmp_file = Path("/tmp") / f"labtools-left-behind-{os.getpid()}.txt"
    code = (f"HOME_FILE = {str(where['home'] / 'secret.txt')!r}\n"
            f"KIT_FILE = {str(kit_file)!r}\nTMP_FILE = {str(tmp_file)!r}\n"
            f"KIT_SOLUTIONS = {str(ROOT / 'solutions')!r}\n" + HOSTILE)
    env = dict(os.environ, HOME=str(where["home"]), JUPYTERHUB_API_TOKEN="t0ken",
               JUPYTERHUB_USER="instructor", MY_SECRET="s3cret", INSTRUCTOR_ONLY="1",
               NBGRADER_EXECUTION="autograde")
    tried = asyncio.run(_run_hostile(where["folder"], env, code))
    tried["_left"] = [p for p in (kit_file, tmp_file, where["course"] / "left-behind.txt")
                      if p.exists()]
    tried["_folder"] = where["folder"]
    return tried


@pytest.mark.parametrize("name", ["solutions", "kit_solutions", "gradebook", "other_submitted",
                                  "other_autograded", "home", "tokens", "network",
                                  "memory", "outside", "kit", "variants_write",
                                  "record_write", "other_record"])
def test_a_hostile_submission_is_refused(hostile, name):
    assert str(hostile[name]).startswith("refused"), hostile[name]


def test_its_processes_are_limited(hostile):
    said = hostile["processes"]
    assert said.startswith("refused") or int(said.split()[1]) < policy.GRADING_PROCESSES


def test_what_grading_needs_still_works(hostile):
    assert hostile["loopback"] == "connected"  # lab 7's cross-tests on 127.0.0.1
    assert hostile["own_folder"] == "written"
    assert hostile["tmp"] == "written"  # in a /tmp of its own
    assert hostile["variants"] == "alice,blue\n"  # whose variant it is graded on
    assert hostile["record"] == '{"events": ["alice"]}'  # their own rows of the hub's record


def _running(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped has ended)."""
    fields = procfs.stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def test_it_leaves_nothing_behind(hostile):
    assert hostile["_left"] == []
    folder: Path = hostile["_folder"]
    owner = folder.stat()
    assert (folder / "mine.txt").stat().st_uid == owner.st_uid  # given back
    if os.geteuid() == 0:
        assert hostile["uid"] >= kernel_sandbox.KERNEL_UID_BASE  # a user of its own
        assert not _running(hostile["daemon"])  # what it left running is ended
        mine = [p for p in procfs.pids() if _running(p)
                and (procfs.owner_uid(p) or 0) >= kernel_sandbox.KERNEL_UID_BASE]
        assert mine == []


def test_the_environment_keeps_only_what_a_kernel_needs():
    env = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "HOME": "/root",
           "JPY_PARENT_PID": "12", "NBGRADER_EXECUTION": "autograde",
           "LABTOOLS_QUICK": "1", "LABTOOLS_API_TOKEN": "x", "JUPYTERHUB_API_TOKEN": "x",
           "JUPYTERHUB_USER": "instructor", "AWS_SECRET_ACCESS_KEY": "x", "EDITOR": "vi"}
    assert kernel_sandbox.kernel_env(env, "/course/autograded/a/lab1") == {
        "PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "JPY_PARENT_PID": "12",
        "NBGRADER_EXECUTION": "autograde", "LABTOOLS_QUICK": "1",
        "HOME": "/course/autograded/a/lab1"}


def test_the_server_says_which_protections_applied():
    line = kernel_sandbox.probe().line()
    assert line.startswith("autograde sandbox: ")
    for name in ("environment", "limits", "files", "network", "identity"):
        assert name in line


def test_a_kernel_nbgrader_does_not_grade_with_is_not_sandboxed(tmp_path):
    """The solutions executed on a real network by the kit's tests keep their rights."""
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    env["EDITOR"] = "vi"
    said = asyncio.run(_run_hostile(tmp_path, env, "import json, os\nprint(json.dumps("
                                    "{'uid': os.getuid(), 'editor': os.environ['EDITOR']}))"))
    assert said == {"uid": os.getuid(), "editor": "vi"}
