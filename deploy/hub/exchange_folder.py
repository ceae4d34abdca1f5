"""The course's folder in nbgrader's exchange, made by the hub and owned by the instructor
before any server starts.

nbgrader's exchange (``/srv/nbgrader/exchange`` in every server, the course's Docker volume)
is writable by everyone (mode 1777), and the instructor's first release makes
``COURSE/`` and fails when it is there and not the instructor's ("You don't own the
directory"). A student whose server started first could make it, own it and so stop the
course's releases, or fill ``COURSE/outbound`` with assignments of their own. So the hub
makes ``COURSE/`` and its folders itself (:func:`make`), as the instructor's server's user
id and group, before it starts any server, with nbgrader's modes (:data:`MODES`, as its
release and its feedback make them without ``groupshared``): ``COURSE/`` and
``outbound/`` 755 (everyone reads, the instructor writes), ``inbound/`` 2733 (everyone
submits, nobody lists the others' submissions; the instructor's group on every
submission), ``feedback/`` 711 (a student reads only the feedback whose name they know).

A folder of these that is not the instructor's (a student's, made before the hub made
them, or a symbolic link) is taken back: moved aside to ``.COURSE-not-the-instructors-N``
in the same folder (its content kept for whoever looks into it, never read, never
trusted, nothing in it followed) and made anew, with one line in the hub's log. Taken
back rather than refused: refusing would leave the course without releases until an
administrator moved it by hand, and what a student made there is no reason to stop the
course. Standard library only; the hub runs as root.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable, Dict, List

#: the exchange's root: everyone makes their own folders, nobody removes another's
ROOT_MODE = 0o1777
#: the course's folder and those in it, with nbgrader's modes (``groupshared`` off)
COURSE_MODE = 0o755
MODES: Dict[str, int] = {"outbound": 0o755, "inbound": 0o2733, "feedback": 0o711}
#: the name a folder that was not the instructor's is moved aside to (``{n}``: 1, 2, ...)
ASIDE = ".{name}-not-the-instructors-{n}"


class ExchangeError(OSError):
    """The exchange's folder cannot be made (one line)."""


def _aside(name: str, parent: int) -> str:
    """A free name in the folder open as ``parent`` to move ``name`` to."""
    n = 1
    while True:
        target = ASIDE.format(name=name, n=n)
        try:
            os.lstat(target, dir_fd=parent)
        except FileNotFoundError:
            return target
        n += 1


def _ensure(parent: int, place: Path, mode: int, uid: int, gid: int,
            say: Callable[[str], None]) -> int:
    """Folder ``place`` (its name in the folder open as ``parent``), owned by ``uid:gid`` with
    ``mode``: made, or taken back from whoever else made it (moved aside, made anew, said
    in one line); it is returned open. Everything is done on open folders, never through
    a path a user could turn into a symbolic link meanwhile. Made by another between the
    look and the making (the root is everyone's): looked at again."""
    name = place.name
    for _ in range(3):
        try:
            found = os.lstat(name, dir_fd=parent)
        except FileNotFoundError:
            found = None
        if found is not None and not (stat.S_ISDIR(found.st_mode) and found.st_uid == uid):
            target = _aside(name, parent)
            os.rename(name, target, src_dir_fd=parent, dst_dir_fd=parent)  # the entry only
            kind = "a folder" if stat.S_ISDIR(found.st_mode) else "not a folder"
            say(f"exchange: {place} was {kind} of user id {found.st_uid}, not the "
                f"instructor's ({uid}): moved aside to {target} and made anew, the "
                "instructor's")
            found = None
        try:
            if found is None:
                os.mkdir(name, 0o700, dir_fd=parent)  # nobody enters it before it is ready
            opened = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        except (FileExistsError, NotADirectoryError, FileNotFoundError):
            continue  # another made, moved or replaced it meanwhile: look again
        now = os.fstat(opened)
        if now.st_uid in (uid, os.geteuid()):  # the instructor's, or the one made here
            os.fchown(opened, uid, gid)
            os.fchmod(opened, mode)
            return opened
        os.close(opened)
    raise ExchangeError(f"exchange: {place} is made again and again by another user")


def make(root: Path, course_id: str, uid: int, gid: int,
         say: Callable[[str], None] = print) -> List[Path]:
    """The exchange's root (``root``, made if missing) mode 1777, and ``COURSE/`` with its
    ``outbound``, ``inbound`` and ``feedback`` folders owned by ``uid:gid`` (the
    instructor's server's) with nbgrader's modes; the course's folders, in that order.
    A folder that was not the instructor's is moved aside and made anew, in one line to
    ``say`` (the hub's log).

    Raises:
        ExchangeError: the root is not a folder, or a folder cannot be made (one line).
    """
    if not course_id or "/" in course_id or course_id.startswith("."):
        raise ExchangeError(f"exchange: {course_id!r} cannot be a course's folder name")
    course = root / course_id
    try:
        if not os.path.lexists(root):
            root.mkdir(parents=True)
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as err:
        raise ExchangeError(f"exchange: {root} is not a folder the hub can open: "
                            f"{err.strerror or err}") from None
    opened = [top]
    try:
        os.fchmod(top, ROOT_MODE)
        opened.append(_ensure(top, course, COURSE_MODE, uid, gid, say))
        for name, mode in MODES.items():
            opened.append(_ensure(opened[1], course / name, mode, uid, gid, say))
    except ExchangeError:
        raise
    except OSError as err:
        raise ExchangeError(f"exchange: cannot make {course}: "
                            f"{err.strerror or err}") from None
    finally:
        for folder in opened:
            os.close(folder)
    return [course, *(course / name for name in MODES)]
