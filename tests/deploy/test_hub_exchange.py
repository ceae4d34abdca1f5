"""The course's folder in nbgrader's exchange, made by the hub (deploy/hub/exchange_folder.py)
before any server starts: owned by the instructor's server's user id, with nbgrader's
modes, and taken back from a student who made it first. Made in a temporary folder as
the hub makes it in the exchange's volume (root: the tests change owners); what the
instructor and a student can then do there is tried as their user ids, with nbgrader's
own checks."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List

import pytest

HUB = Path(__file__).resolve().parents[2] / "deploy" / "hub"
sys.path.insert(0, str(HUB))

from course_settings import FIRST_UID  # noqa: E402
from exchange_folder import ExchangeError, make  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="changes owners: needs root")

COURSE = "net101"
INSTRUCTOR = FIRST_UID + 1
STUDENT = FIRST_UID + 2
#: nbgrader's modes, without groupshared (nbgrader/exchange/default/release_assignment.py,
#: release_feedback.py)
WANTED = {"": 0o755, "outbound": 0o755, "inbound": 0o2733, "feedback": 0o711}


def _made(root: Path) -> List[str]:
    said: List[str] = []
    folders = make(root, COURSE, INSTRUCTOR, INSTRUCTOR, say=said.append)
    assert folders == [root / COURSE, *(root / COURSE / n for n in ("outbound", "inbound",
                                                                      "feedback"))]
    return said


def _check(root: Path) -> None:
    assert stat.S_IMODE(root.stat().st_mode) == 0o1777
    for name, mode in WANTED.items():
        found = os.lstat(root / COURSE / name)
        assert stat.S_ISDIR(found.st_mode), name
        assert (found.st_uid, found.st_gid) == (INSTRUCTOR, INSTRUCTOR), name
        assert stat.S_IMODE(found.st_mode) == mode, (name, oct(found.st_mode))


def _as(uid: int, code: str) -> str:
    """``code`` run by Python as user id ``uid``; what it printed."""
    done = subprocess.run([sys.executable, "-c", code], user=uid, group=uid,
                          extra_groups=[], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _student(root: Path, name: str = COURSE) -> Path:
    """A folder a student made in ``root`` before the hub did, with a file in it."""
    folder = root / name
    folder.mkdir(mode=0o755)
    (folder / "outbound").mkdir()
    (folder / "outbound" / "planted.ipynb").write_text("{}")
    for path in (folder, folder / "outbound", folder / "outbound" / "planted.ipynb"):
        os.chown(path, STUDENT, STUDENT)
    return folder


def test_the_hub_makes_the_course_folder_the_instructors_with_nbgraders_modes(tmp_path):
    root = tmp_path / "exchange"
    assert _made(root) == []
    _check(root)
    assert _made(root) == []  # again at the next server's start: nothing to say
    _check(root)


@pytest.fixture
def open_tmp():
    """A temporary folder other users can pass through (pytest's own are root's only)."""
    folder = Path(tempfile.mkdtemp(prefix="labtools-exchange-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder)


def test_the_instructor_releases_and_a_student_submits_but_reads_no_others_work(open_tmp):
    """The instructor owns the course's folders (nbgrader's release checks it) and writes
    into outbound; a student (nbgrader's own check of the folders) writes into inbound without listing it, and makes nothing in the
    course's folder."""
    root = open_tmp / "exchange"
    _made(root)
    course = root / COURSE
    folders = [str(course / n) for n in WANTED]
    owned = _as(INSTRUCTOR, f"""
import os
print(all(os.stat(p).st_uid == os.getuid() for p in {folders!r}))  # nbgrader's self_owned
os.mkdir({str(course / 'outbound' / 'lab1')!r})
""")
    assert owned == "True"
    student = _as(STUDENT, f"""
import os
from nbgrader.utils import check_directory
print(check_directory({str(course / 'inbound')!r}, write=True, execute=True),
      check_directory({str(root)!r}, write=True, execute=True))
open(os.path.join({str(course / 'inbound')!r}, 'me+lab1+2026'), 'w').close()
for what in (lambda: os.listdir({str(course / 'inbound')!r}),
             lambda: os.mkdir({str(course / 'outbound' / 'mine')!r}),
             lambda: os.rename({str(course)!r}, {str(root / 'gone')!r})):
    try:
        what()
        print('allowed')
    except PermissionError:
        print('refused')
""")
    assert student.split() == ["True", "True", "refused", "refused", "refused"]
    submitted = os.lstat(course / "inbound" / "me+lab1+2026")
    assert submitted.st_gid == INSTRUCTOR  # inbound's set-group-id: the instructor reads it


def test_a_course_folder_a_student_made_first_is_taken_back(tmp_path):
    root = tmp_path / "exchange"
    root.mkdir(mode=0o1777)
    _student(root)
    said = _made(root)
    aside = root / f".{COURSE}-not-the-instructors-1"
    assert said == [f"exchange: {root / COURSE} was a folder of user id {STUDENT}, not the "
                    f"instructor's ({INSTRUCTOR}): moved aside to {aside.name} and made "
                    "anew, the instructor's"]
    _check(root)
    assert list((root / COURSE / "outbound").iterdir()) == []  # nothing of theirs kept
    assert os.lstat(aside / "outbound" / "planted.ipynb").st_uid == STUDENT  # left as it was


def test_a_link_or_a_students_folder_inside_the_course_is_taken_back_not_followed(tmp_path):
    root, elsewhere = tmp_path / "exchange", tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    root.mkdir(mode=0o1777)
    (root / COURSE).symlink_to(elsewhere)
    said = _made(root)
    assert said[0].startswith(f"exchange: {root / COURSE} was not a folder of user id 0")
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o700 and elsewhere.stat().st_uid == 0
    assert list(elsewhere.iterdir()) == []
    _check(root)
    os.rmdir(root / COURSE / "inbound")
    _student(root / COURSE, "inbound")
    said = _made(root)
    assert said == [f"exchange: {root / COURSE / 'inbound'} was a folder of user id "
                    f"{STUDENT}, not the instructor's ({INSTRUCTOR}): moved aside to "
                    ".inbound-not-the-instructors-1 and made anew, the instructor's"]
    _check(root)


def test_a_root_that_is_not_a_folder_is_one_line(tmp_path):
    (tmp_path / "exchange").write_text("")
    with pytest.raises(ExchangeError, match="^exchange: .* is not a folder the hub can "
                                            "open: Not a directory$"):
        make(tmp_path / "exchange", COURSE, INSTRUCTOR, INSTRUCTOR)
    with pytest.raises(ExchangeError, match="cannot be a course's folder name"):
        make(tmp_path / "other", "../etc", INSTRUCTOR, INSTRUCTOR)
