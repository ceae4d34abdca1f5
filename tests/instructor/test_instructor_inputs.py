"""The instructor's tools go on past one bad input and never read or write outside their
folder: the class report over a class with tampered and linked submissions (built from the
recorded grading fixture, tests/fixtures/grading, as tests/instructor/test_class_report.py builds one),
the student's workspace with links in it and a parent it cannot use, and the doctor on VM
settings this machine cannot give a VM."""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from labtools.commands import doctor_cmd
from labtools.errors import InputError
from labtools.system import capabilities as caps
from labtools.system import doctor
from labtools.teach import notebook_files as notebooks
from tests.conftest import ROOT, run_cli
from tests.instructor.test_class_report import RECORDED, make_class

RESULTS = Path("labs") / "results" / "labtools.sqlite"
#: student -> (what was tampered with, SQL run on their copy of the recorded file, what
#: the note on their submission says)
TAMPERED = {
    "student2": ("a topology that is not a JSON object",
                 "UPDATE runs SET topology_json = '[1, 2]' WHERE id = 1",
                 "runs row 1: topology_json is a list, not an object"),
    "student3": ("a topology that is broken JSON",
                 "UPDATE runs SET topology_json = '{\"name\": \"portf' WHERE id = 1",
                 "runs row 1: topology_json is not valid JSON"),
    "student4": ("a probe call that is broken JSON",
                 "UPDATE runs SET call_json = '{\"probe\": ' WHERE id = 1",
                 "JSONDecodeError: "),
    "student5": ("a topology whose nodes are not a list",
                 "UPDATE runs SET topology_json = '{\"name\": \"portfolio\", \"nodes\": 5}'",
                 "topology 'nodes' must be a JSON list"),
}


def _tamper(path: Path, sql: str) -> None:
    con = sqlite3.connect(path)
    try:
        con.execute(sql)
        con.commit()
    finally:
        con.close()


def _report(submitted: Path, out: Path) -> subprocess.CompletedProcess:
    done = run_cli(["class-report", str(submitted), "--out", str(out)])
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done


# --- the class report -------------------------------------------------------------------
def test_a_tampered_submission_is_a_note_and_the_others_are_reported_as_before(tmp_path):
    files = {"student1": RECORDED, **{s: RECORDED for s in TAMPERED}, "student6": RECORDED}
    submitted = make_class(tmp_path / "course", files, listing="")
    for student, (_, sql, _) in TAMPERED.items():
        _tamper(submitted / student / RESULTS, sql)
    done = _report(submitted, tmp_path / "out")
    lines = done.stdout.splitlines()
    for student, (what, _, reason) in TAMPERED.items():
        file = submitted / student / RESULTS
        note = [ln for ln in lines if ln.startswith(f"  {student} (labs): ")]
        assert len(note) == 1, (what, done.stdout)
        assert f"results file not readable: {file}: " in note[0] and reason in note[0], what
    subs = pd.read_csv(tmp_path / "out" / "submissions.csv").set_index("student")
    assert list(subs.index) == list(files)
    table = pd.read_csv(tmp_path / "out" / "measurements.csv")
    assert set(table["student"]) == {"student1", "student6"}
    for student in TAMPERED:
        assert subs.loc[student, "judged"] == 0 and subs.loc[student, "runs"] == 0
    # the others, as a class without the tampered files reports them
    clean = make_class(tmp_path / "clean", {"student1": RECORDED, "student6": RECORDED},
                       listing="")
    _report(clean, tmp_path / "clean-out")
    before = pd.read_csv(tmp_path / "clean-out" / "measurements.csv")
    pd.testing.assert_frame_equal(table.reset_index(drop=True), before)
    copies = pd.read_csv(tmp_path / "out" / "copies.csv")
    assert list(zip(copies["student_a"], copies["student_b"])) == [("student1", "student6")]


def _outside(root: Path) -> Path:
    """A real results file outside the course folder (where links in it point)."""
    place = root / "elsewhere" / "labs"
    (place / "results").mkdir(parents=True)
    shutil.copy(RECORDED, place / "results" / "labtools.sqlite")
    return place


def test_nothing_outside_the_course_folder_is_read_through_a_link(tmp_path):
    outside = _outside(tmp_path)
    files = {"student1": RECORDED, "student2": None, "student3": None, "student4": RECORDED}
    submitted = make_class(tmp_path / "course", files, listing="")
    links = {  # link -> who and where it points
        submitted / "linked": ("linked", outside.parent),
        submitted / "dangling": ("dangling", tmp_path / "nowhere"),
        submitted / "student2" / "lab2": ("student2 (lab2)", outside),
        submitted / "student2" / "labs" / "results": ("student2 (labs)", outside / "results"),
        submitted / "student3" / RESULTS: ("student3 (labs)",
                                           outside / "results" / "labtools.sqlite"),
        submitted / "student4" / "labs" / "results" / "labtools.sqlite-journal":
            ("student4 (labs)", outside / "results" / "labtools.sqlite"),
    }
    (submitted / "student3" / RESULTS).parent.mkdir()
    for link, (_, target) in links.items():
        link.symlink_to(target)
    done = _report(submitted, tmp_path / "out")
    for link, (who, target) in links.items():
        assert (f"  {who}: {link} is a symbolic link (to {target}): skipped (nothing is read "
                "through a link)") in done.stdout.splitlines(), done.stdout
    table = pd.read_csv(tmp_path / "out" / "measurements.csv")
    assert set(table["student"]) == {"student1"}
    subs = pd.read_csv(tmp_path / "out" / "submissions.csv")
    assert sorted(subs["student"] + " " + subs["assignment"].fillna("")) == [
        "dangling ", "linked ", "student1 labs", "student2 lab2", "student2 labs",
        "student3 labs", "student4 labs"]
    assert (subs["note"].fillna("").str.contains("symbolic link")).sum() == len(links)


def test_a_results_file_resolving_outside_the_folder_read_is_not_read(tmp_path):
    from labtools.instructor.class_data import _results_file

    submitted = make_class(tmp_path / "course", {"student1": RECORDED}, listing="")
    place = submitted / "student1" / "labs"
    assert _results_file(place, submitted.resolve()) == (submitted / "student1" / RESULTS, "")
    other = (tmp_path / "other").resolve()
    assert _results_file(place, other) == (
        None, f"{submitted / 'student1' / RESULTS} lies outside {other}: not read")


# --- the student's workspace ------------------------------------------------------------
def _students(root: Path) -> Path:
    students = root / "notebooks"
    students.mkdir(parents=True)
    for name in ("00-a.ipynb", "01-b.ipynb", "skeleton.py"):
        (students / name).write_text(f"the kit's {name}")
    return students


def test_the_workspace_never_writes_through_a_link(tmp_path):
    students, work = _students(tmp_path), tmp_path / "workspace"
    work.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kept.ipynb").write_text("not the workspace's")
    (work / "00-a.ipynb").symlink_to(elsewhere / "new.ipynb")  # dangling
    (work / "skeleton.py").symlink_to(elsewhere / "kept.ipynb")
    done = run_cli(["notebooks", "workspace", str(work), "--students", str(students)])
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == ["kept.ipynb"]
    assert (elsewhere / "kept.ipynb").read_text() == "not the workspace's"
    assert (work / "01-b.ipynb").read_text() == "the kit's 01-b.ipynb"
    assert "1 notebook(s) added, 0 kept" in done.stdout
    assert "2 symbolic link(s) left alone" in done.stdout
    for name in ("00-a.ipynb", "skeleton.py"):
        assert (work / name).is_symlink()
        assert (f"labtools notebooks: {work / name} is a symbolic link: left alone (nothing "
                "is written through a link)") in done.stderr.splitlines()
    added, kept, links = notebooks.make_workspace(students, work)
    assert added == [] and kept == [work / "01-b.ipynb"]
    assert links == [work / "00-a.ipynb", work / "skeleton.py"]


@pytest.mark.parametrize("where, reason", [
    ("file/workspace", "cannot create the workspace {folder}: Not a directory"),
    ("file", "{folder} is not a folder"),
    ("dangling", "{folder} is not a folder"),
])
def test_a_workspace_it_cannot_make_is_one_line(tmp_path, where, reason):
    students = _students(tmp_path)
    (tmp_path / "file").write_text("a file")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    folder = tmp_path / where
    done = run_cli(["notebooks", "workspace", str(folder), "--students", str(students)])
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == ("labtools notebooks: error: " + reason.format(folder=folder) + "\n")
    assert not (tmp_path / "nowhere").exists()


def _as_nobody(args: list) -> subprocess.CompletedProcess:
    """``labtools ARGS`` as the ordinary user nobody (uid 65534)."""
    return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           sys.executable, "-m", "labtools.cli", *args], capture_output=True,
                          text=True, cwd=str(ROOT), timeout=120, check=False)


@pytest.fixture
def shared_folder():
    """A folder an ordinary user may enter (tmp_path is root's own), removed afterwards."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the check as an ordinary user")
    folder = Path(tempfile.mkdtemp(prefix="labtools-workspace-"))
    folder.chmod(0o755)
    probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            sys.executable, "-c", "import labtools"], capture_output=True,
                           cwd=str(ROOT), check=False)
    if probe.returncode != 0:
        shutil.rmtree(folder)
        pytest.skip("the user nobody cannot run this checkout's Python")
    yield folder
    shutil.rmtree(folder)


@pytest.mark.parametrize("where", ["locked/workspace", "locked"])
def test_a_workspace_this_user_may_not_write_is_one_line(shared_folder, where):
    students = _students(shared_folder)
    (shared_folder / "locked").mkdir(mode=0o755)  # root's: nobody may not write in it
    folder = shared_folder / where
    done = _as_nobody(["notebooks", "workspace", str(folder), "--students", str(students)])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    first = folder / "00-a.ipynb"
    assert done.stderr == ("labtools notebooks: error: " + (
        f"cannot create the workspace {folder}: Permission denied" if where != "locked"
        else f"cannot write {first}: Permission denied") + "\n")
    assert list((shared_folder / "locked").iterdir()) == []


# --- the doctor on the VM's settings ----------------------------------------------------
def _checks(monkeypatch, **env: str) -> dict:
    for name in [n for n in os.environ if n.startswith("LABTOOLS_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(caps, "kvm_usable", lambda **kw: (False, "not probed in tests"))
    return {c.name: c for c in doctor.collect_checks()}


def _beyond_memory() -> str:
    total = doctor.machine_memory_mib()
    assert total is not None and total > 0
    return f"{total + 1}M"


@pytest.mark.parametrize("name, value, reason", [
    ("LABTOOLS_VM_MEMORY", "-5", "LABTOOLS_VM_MEMORY='-5' is not like 2G or 1536M"),
    ("LABTOOLS_VM_MEMORY", "0", "LABTOOLS_VM_MEMORY='0' is not like 2G or 1536M"),
    ("LABTOOLS_VM_MEMORY", "0G", "LABTOOLS_VM_MEMORY='0G' is not like 2G or 1536M"),
    ("LABTOOLS_VM_MEMORY", "lots", "LABTOOLS_VM_MEMORY='lots' is not like 2G or 1536M"),
    ("LABTOOLS_VM_MEMORY", "2GB", "LABTOOLS_VM_MEMORY='2GB' is not like 2G or 1536M"),
    ("LABTOOLS_VM_MEMORY", None, "LABTOOLS_VM_MEMORY={value} is more than this machine's "),
    ("LABTOOLS_VM_CPUS", None, "LABTOOLS_VM_CPUS={value} is more than this machine's "),
    ("LABTOOLS_VM_KERNEL", "/nonexistent/vmlinuz", "LABTOOLS_VM_KERNEL=/nonexistent/vmlinuz "
     "is not a file"),
    ("LABTOOLS_VM_KERNEL", "/", "LABTOOLS_VM_KERNEL=/ is not a file"),
])
def test_the_doctor_fails_a_vm_setting_this_machine_cannot_use(monkeypatch, name, value,
                                                              reason):
    if value is None:
        value = _beyond_memory() if name == "LABTOOLS_VM_MEMORY" else str(os.cpu_count() + 1)
    by_name = _checks(monkeypatch, **{name: value})
    check = by_name["VM settings"]
    assert not check.ok and check.required and check.fix
    assert check.detail.startswith(reason.format(value=value)) and "\n" not in check.detail
    assert doctor.format_line(check).startswith(f"FAIL VM settings: {name}=")
    assert by_name["settings"].ok and not doctor.kit_can_work(list(by_name.values()))


def test_the_doctor_fails_kvm_asked_for_where_dev_kvm_cannot_be_opened(monkeypatch):
    monkeypatch.setattr(caps, "kvm_device_ok", lambda: (False, "/dev/kvm does not exist"))
    check = _checks(monkeypatch, LABTOOLS_VM_KVM="1")["VM settings"]
    assert not check.ok and check.detail == "LABTOOLS_VM_KVM=1 but /dev/kvm does not exist"
    monkeypatch.setattr(caps, "kvm_device_ok", lambda: (True, "/dev/kvm is accessible"))
    assert _checks(monkeypatch, LABTOOLS_VM_KVM="1")["VM settings"].ok


@pytest.mark.parametrize("name, value", [
    ("LABTOOLS_VM_CPUS", "-5"), ("LABTOOLS_VM_CPUS", "0"), ("LABTOOLS_VM_CPUS", "two"),
    ("LABTOOLS_VM_KVM", "yes"), ("LABTOOLS_VM_IDLE_POLL", "2"), ("LABTOOLS_VM_MODE", "fast"),
    ("LABTOOLS_IN_VM", "true"),
])
def test_a_vm_setting_of_the_wrong_kind_fails_the_settings_check(monkeypatch, name, value):
    checks = list(_checks(monkeypatch, **{name: value}).values())
    assert len(checks) == 1 and not checks[0].ok and checks[0].detail.startswith(f"{name} ")


def test_vm_settings_this_machine_can_use_pass(monkeypatch, tmp_path):
    kernel = tmp_path / "vmlinuz"
    kernel.write_bytes(b"\0")
    check = _checks(monkeypatch, LABTOOLS_VM_MEMORY="1536M", LABTOOLS_VM_CPUS="1",
                    LABTOOLS_VM_KERNEL=str(kernel))["VM settings"]
    assert check.ok and check.detail == f"memory 1536M, cpus 1, kernel {kernel}"
    guest = _checks(monkeypatch, LABTOOLS_IN_VM="1", LABTOOLS_VM_MEMORY="-5")["VM settings"]
    assert guest.ok and guest.detail == "not used inside the VM runner's guest"


def test_the_doctor_command_fails_a_negative_vm_memory(monkeypatch, capsys, tmp_path):
    _checks(monkeypatch, LABTOOLS_VM_MEMORY="-5", LABTOOLS_CACHE_DIR=str(tmp_path))
    status = doctor_cmd.run(argparse.Namespace(json=False, recheck=False))
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    assert out[1].startswith("FAIL VM settings: LABTOOLS_VM_MEMORY='-5' is not like 2G or "
                             "1536M — fix: unset the variable")
    assert "  LABTOOLS_VM_MEMORY=-5" in out


def test_a_vm_memory_the_vm_runner_refuses_is_the_one_the_doctor_fails():
    from labtools.system.vm import memory_mib

    assert memory_mib("2G") == 2048 and memory_mib("1536M") == 1536
    for bad in ("-5", "0", "0G", "2GB", "2g", ""):
        with pytest.raises(InputError, match="is not like 2G or 1536M"):
            memory_mib(bad)
