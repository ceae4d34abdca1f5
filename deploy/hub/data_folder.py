"""The hub's data folder (``hub.data_dir``): which folders may be one, the mark the hub
leaves in the folder it makes, and whether ``purge`` may remove it.

The hub makes its data folder at its first start and writes :data:`MARK` in it, holding
the course id; ``purge`` removes only a folder that holds that mark with the same course
id, and never a system folder, a home folder or a folder holding the settings file or
the kit. Standard library only; the functions return a reason (one line) or ``None``.
"""

from __future__ import annotations

import functools
import os
import pwd
from pathlib import Path
from typing import Iterable, Optional, Tuple

#: the file the hub writes into the data folder it makes (its content: the course id)
MARK = ".labhub-data"
#: the kit's own folder (never removed, never a data folder)
KIT = Path(__file__).resolve().parents[2]
#: folders that are the system's: never a data folder, nor anything holding one of them
SYSTEM_FOLDERS: Tuple[str, ...] = (
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
    "/lost+found", "/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/snap",
    "/srv", "/sys", "/tmp", "/usr", "/usr/bin", "/usr/lib", "/usr/lib64", "/usr/local",
    "/usr/sbin", "/usr/share", "/usr/src", "/var", "/var/backups", "/var/cache", "/var/lib",
    "/var/local", "/var/log", "/var/mail", "/var/opt", "/var/spool", "/var/tmp", "/var/www")
#: folders nothing inside of which is a data folder (the kernel's and the devices')
SYSTEM_TREES: Tuple[str, ...] = ("/boot", "/dev", "/proc", "/sys")


class FolderError(ValueError):
    """A data folder the hub may not make or use (one line)."""


@functools.lru_cache(maxsize=1)
def home_folders() -> Tuple[Path, ...]:
    """Every account's home folder (``pwd``), resolved; none when they cannot be read
    (read once a process)."""
    try:
        homes = {entry.pw_dir for entry in pwd.getpwall() if entry.pw_dir}
    except (OSError, KeyError):
        return ()
    return tuple(Path(home).resolve() for home in sorted(homes) if home.startswith("/"))


def _resolved(names: Iterable[str]) -> Tuple[Path, ...]:
    return tuple(dict.fromkeys(p for name in names for p in (Path(name), Path(name).resolve())))


def unsafe(folder: Path, settings_dir: Path,
           homes: Optional[Iterable[Path]] = None) -> Optional[str]:
    """Why ``folder`` (resolved, symbolic links followed) may not be a data folder, or
    ``None``: a system folder or one holding one, a folder inside the kernel's or the
    devices' trees, a home folder (``/home/NAME``, ``/root``, any account's) or one
    holding one, or a folder holding (or being) the settings file's folder or the kit."""
    path = folder.resolve()
    if any(path == tree or tree in path.parents for tree in _resolved(SYSTEM_TREES)):
        return f"{path} is inside a system folder"
    for kind, places in (("a system folder", _resolved(SYSTEM_FOLDERS)),
                         ("a home folder", tuple(home_folders() if homes is None else homes))):
        if any(path == place or path in place.parents for place in places):
            return f"{path} is {kind}" + ("" if path in places else " or holds one")
    if path.parent == Path("/home"):
        return f"{path} is a home folder"
    for what, place in (("the settings file's folder", settings_dir.resolve()),
                        ("the kit's folder", KIT)):
        if path == place or path in place.parents:
            return f"{path} is or holds {what}"
    return None


def mark_of(folder: Path) -> Optional[str]:
    """The course id in ``folder``'s mark, or ``None`` when it has none (or unreadable)."""
    try:
        with open(folder / MARK, "rb") as mark:
            return mark.read(64).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def purge_refusal(folder: Path, settings_dir: Path, course_id: str,
                  homes: Optional[Iterable[Path]] = None) -> Optional[str]:
    """Why ``purge`` may not remove ``folder``, or ``None`` (it may: the hub made it for
    course ``course_id``, or it does not exist)."""
    if folder.is_symlink():
        return f"{folder} is a symbolic link: the hub never makes one"
    reason = unsafe(folder, settings_dir, homes)
    if reason:
        return reason
    path = folder.resolve()
    if not path.exists():
        return None
    if not path.is_dir():
        return f"{path} is not a folder"
    mark = mark_of(path)
    if mark is None:
        return (f"{path} has no {MARK} mark: the hub did not make it; remove it by hand "
                "if it is the course's")
    if mark != course_id:
        return f"{path} is the data folder of course {mark!r:.40}, not {course_id!r}"
    return None


def make(folder: Path, settings_dir: Path, course_id: str) -> Path:
    """The data folder made (mode 700) and marked for ``course_id``, or found marked so;
    its resolved path. :class:`FolderError` (one line) when it may not be the course's."""
    reason = unsafe(folder, settings_dir)
    if reason:
        raise FolderError(f"hub.data_dir: {reason}")
    path = folder.resolve()
    if not path.exists():
        path.mkdir(parents=True, mode=0o700)
    if not path.is_dir():
        raise FolderError(f"hub.data_dir: {path} is not a folder")
    mark = mark_of(path)
    if mark is None and any(path.iterdir()):
        raise FolderError(f"hub.data_dir: {path} holds files but no {MARK} mark, so the hub "
                         f"did not make it: choose a new folder (or, if it holds this "
                         f"course's hub data, write {course_id} into {path / MARK})")
    if mark not in (None, course_id):
        raise FolderError(f"hub.data_dir: {path} is the data folder of course {mark!r}")
    if mark is None:
        (path / MARK).write_text(course_id + "\n", encoding="ascii")
    os.chmod(path, 0o700)
    return path
