"""What an autograde kernel sees of the files: a mount namespace of its own
(:mod:`labtools.instructor.kernel_sandbox`).

In the forked kernel, single-threaded, before ipykernel starts: a new mount namespace
(``CLONE_NEWNS``; with a user namespace of this user when not root), nothing in it
propagated back to the machine. There:

- the kit (the ``labtools`` package's folder, the Python's prefixes and ``sys.path``) is
  bound over itself read-only;
- the folders that must not be seen (the course folder, the instructor's home) are
  *covered*: an empty read-only tmpfs over each, in which only the paths the kernel needs
  (its submission's folder, the kit, Jupyter's connection file and socket folder) are bound
  back, each at its own path;
- ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are tmpfs of the kernel's own (gone with it), the
  kernels' socket folder bound back into ``/tmp``.

The calls are Linux's ``unshare(2)`` and ``mount(2)`` through ctypes (Python 3.11 has no
``os.unshare``). Each raises :class:`~labtools.errors.EnvironmentProblem` with the
system's reason.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from labtools.errors import EnvironmentProblem

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
#: the places anyone may write to, each replaced by a tmpfs of the kernel's own
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise EnvironmentProblem(f"{what}: {os.strerror(errno)}")


def unshare(flags: int, what: str) -> None:
    """``unshare(2)``; raises :class:`EnvironmentProblem` saying ``what`` failed and why."""
    _check(_libc.unshare(ctypes.c_int(flags)), what)


def mount(source: Optional[str], target: str, fstype: Optional[str], flags: int,
          data: Optional[str] = None) -> None:
    """``mount(2)``; raises :class:`EnvironmentProblem` naming the target."""
    _check(_libc.mount(None if source is None else source.encode(), target.encode(),
                       None if fstype is None else fstype.encode(), ctypes.c_ulong(flags),
                       None if data is None else data.encode()), f"mount {target}")


def enter_user_namespace() -> None:
    """A user namespace in which this user is itself (its uid and gid mapped to themselves),
    with every capability over the namespaces it then makes (single-threaded only)."""
    uid, gid = os.geteuid(), os.getegid()
    unshare(CLONE_NEWUSER, "a user namespace")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as out:
            out.write(text)


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


class View:
    """The kernel's view of the files, built in a new mount namespace.

    ``kept``: paths the kernel needs wherever they are (its folder, the kit, Jupyter's
    files, the course's variants file), bound back read-only but for those in
    ``writable``; ``read_only``: the kit's folders, bound read-only; ``covered``: folders
    hidden but for the kept paths in them.
    """

    def __init__(self, kept: Iterable[Path], read_only: Iterable[Path],
                 covered: Iterable[Path], writable: Iterable[Path] = ()) -> None:
        self.writable = set(writable)
        self.covered = sorted({p for p in covered if p.is_dir() and p != Path("/")},
                              key=lambda p: len(p.parts))
        # never a covered folder or one around it (the fork server's sys.path[0] is the
        # folder nbgrader started in: the course's)
        self.kept = sorted({p for p in kept if p.exists() and not any(
            _under(c, p) for c in self.covered)} | self.writable)
        self.read_only = sorted({p for p in read_only if p.is_dir()})
        self._fds: Dict[Path, int] = {}

    def build(self, as_root: bool) -> None:
        """Make the mount namespace (a user namespace first unless ``as_root``) and the
        view in it; raises :class:`EnvironmentProblem` at the first step refused."""
        if not as_root:
            enter_user_namespace()
        unshare(CLONE_NEWNS, "a mount namespace")
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        # the kept paths as they are now (writable where they are), before any mount
        self._fds = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in self.kept}
        try:
            for folder in self.read_only:
                mount(str(folder), str(folder), None, MS_BIND | MS_REC)
                mount(None, str(folder), None, MS_REMOUNT | MS_BIND | MS_RDONLY)
            covers = [(f, False) for f in self.covered] + \
                [(Path(name), True) for name in SCRATCH if os.path.isdir(name)]
            for folder, writable in sorted(covers, key=lambda c: len(c[0].parts)):
                self._cover(folder, writable)  # outermost first: a course in /tmp hidden
        finally:
            for fd in self._fds.values():
                os.close(fd)

    def _cover(self, folder: Path, writable: bool) -> None:
        """An empty tmpfs over ``folder``, the kept paths under it bound back."""
        from labtools.judge.policy import GRADING_TMP_MIB

        if not folder.is_dir():  # under a folder covered already, with nothing kept
            return
        mode = "1777" if writable else "0755"
        mount("tmpfs", str(folder), "tmpfs", MS_NOSUID | MS_NODEV,
              f"size={GRADING_TMP_MIB if writable else 1}m,mode={mode}")
        for path in self._inside(folder):
            if os.path.isdir(f"/proc/self/fd/{self._fds[path]}"):
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            mount(f"/proc/self/fd/{self._fds[path]}", str(path), None, MS_BIND | MS_REC)
            if path not in self.writable:
                mount(None, str(path), None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        if not writable:
            mount(None, str(folder), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID
                  | MS_NODEV)

    def _inside(self, folder: Path) -> List[Path]:
        """The kept paths under ``folder``, outermost first, none under another."""
        inside = [p for p in self.kept if p != folder and _under(p, folder)]
        outer: List[Path] = []
        for path in sorted(inside, key=lambda p: len(p.parts)):
            if not any(_under(path, o) for o in outer):
                outer.append(path)
        return outer
