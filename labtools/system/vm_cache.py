"""The kit's Python read through cached shares inside the lab VM.

The guest sees the host's files through 9p, and virtme-ng mounts its shares without a
cache: every file a process opens costs several round trips through the emulated device,
and a process that imports what an earlier one imported reads it all again. Under software
emulation here (2 CPUs, Debian 6.1 guest), reading the 1,440 compiled modules of pandas
(39 MB) took 35-41 s; ``python -c "import pandas, matplotlib.pyplot"`` took 60-62 s each
time, ``import ipykernel.ipkernel`` 16-19 s. With the Python's own folders read through a
second share mounted with ``cache=loose`` (the guest keeps what it read), the second import
took 40.5 s and ipykernel 9.7 s: every notebook kernel of a lab imports them again.

Each folder of the running Python (its prefix, where a venv keeps the kit, and its standard
library) gets a QEMU 9p device of its own, mounted over the same path in the guest. It is
writable only when it lies inside a folder the guest may write anyway (``rwdirs``); the
guest is the only writer while it runs (``cache=loose`` does not see the host's changes).
A folder whose path QEMU's option syntax cannot carry (a comma, a space) stays uncached.
"""

from __future__ import annotations

import shlex
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence, Tuple

#: mount tags of the cached shares: this prefix and the share's index
TAG_PREFIX = "labtools-cache"
#: 9p mount options in the guest (virtme-ng's own, plus the page and attribute cache)
MOUNT_OPTIONS = "trans=virtio,version=9p2000.L,msize=524288,access=any,cache=loose"


@dataclass(frozen=True)
class CachedShare:
    """One host folder the guest reads through a cached 9p share, at the same path.

    Attributes:
        tag: the share's mount tag (``labtools-cache0``).
        path: the host folder (the guest mounts it over the same path).
        writable: whether the guest may write it (it lies inside one of the VM's rwdirs).
    """

    tag: str
    path: Path
    writable: bool


def python_dirs() -> Tuple[Path, ...]:
    """The running Python's folders that every process of the kit reads: its prefix (the
    kit's venv) and its standard library; a folder inside another is left out."""
    found = [Path(sys.prefix).resolve(), Path(sysconfig.get_paths()["stdlib"]).resolve()]
    dirs = [d for d in dict.fromkeys(found) if d.is_dir() and d != Path("/")]
    return tuple(d for d in dirs if not any(o != d and o in d.parents for o in dirs))


def _carried(path: Path) -> bool:
    """Whether QEMU's ``-fsdev path=`` and vng's option splitting carry ``path`` as it is."""
    text = str(path)
    return not any(c in text for c in ",= \t\n'\"\\")


def cached_shares(dirs: Sequence[Path], rwdirs: Sequence[Path]) -> Tuple[CachedShare, ...]:
    """The shares for ``dirs`` (those QEMU's options can carry), writable inside ``rwdirs``."""
    usable = [d for d in dirs if _carried(d)]
    return tuple(CachedShare(tag=f"{TAG_PREFIX}{i}", path=d,
                             writable=any(d == w or w in d.parents for w in rwdirs))
                 for i, d in enumerate(usable))


def qemu_opts(shares: Sequence[CachedShare]) -> str:
    """QEMU options that add one virtio-9p device per share."""
    opts = []
    for share in shares:
        fsdev = (f"local,id={share.tag},path={share.path},security_model=none,"
                 f"multidevs=remap{'' if share.writable else ',readonly=on'}")
        opts.append(f"-fsdev {fsdev} -device virtio-9p-pci,fsdev={share.tag},"
                    f"mount_tag={share.tag}")
    return " ".join(opts)


def guest_lines(shares: Sequence[CachedShare]) -> List[str]:
    """Guest script lines that mount each share over its folder; a share that does not
    mount leaves the folder as it was (uncached), with a note."""
    lines = []
    for share in shares:
        path = shlex.quote(str(share.path))
        mode = "rw" if share.writable else "ro"
        lines += [
            f"mount -t 9p -o {mode},{MOUNT_OPTIONS} {share.tag} {path} 2>/dev/null || "
            f"echo \"labtools vm: note: {share.tag} not mounted; {share.path} read "
            "uncached\" >&2",
        ]
    return lines
