"""Every layer of a saved image read for what a student must not get.

``docker save IMAGE`` writes every layer of the image, the ones a later step deleted from
too: a file copied in one layer and removed in the next is still there for whoever has the
saved image. :func:`leaks` reads the saved stream layer by layer and names every file that
is the kit's answer to something (byte for byte one of :func:`withheld_files`: what the
student edition leaves out, stubs, replaces or ships only as bytecode), any solution
notebook, and any file holding nbgrader's solution or hidden-test markers. Used by
tests/deploy/test_hub.py on the student image.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path
from typing import IO, Dict, Iterator, List, Tuple

#: markers of an answer in a notebook or a source file (nbgrader's, in the kit's solutions)
MARKERS = (b"### BEGIN SOLUTION", b"### BEGIN HIDDEN TESTS")
#: the installed packages' folders: of them, only the kit's own is read for markers
#: (nbgrader's source names the markers too)
PACKAGES = ("site-packages/", "dist-packages/")


def kit_file(name: str) -> bool:
    """Is ``name`` (a path in a layer) the kit's: its package installed, or anywhere outside
    the installed packages (its notebooks, a copy of its tree)?"""
    if any(folder in name for folder in PACKAGES):
        return any(f"{folder}labtools/" in name for folder in PACKAGES)
    return True
#: files larger than this are not read for markers (the kit's sources are far smaller)
READ_LIMIT_BYTES = 2_000_000
#: suffixes of the files read for markers
READ_SUFFIXES = (".py", ".ipynb", ".md", ".txt", ".json")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def withheld_files(kit: Path, edition: Path) -> Dict[str, str]:
    """sha256 -> path, of every file of the kit's package and solutions that the edition
    does not hold as it is (absent, stubbed, replaced or bytecode only)."""
    found = {}
    for path in [*(kit / "labtools").rglob("*.py"), *(kit / "solutions").glob("*.ipynb")]:
        rel = path.relative_to(kit)
        if "__pycache__" in rel.parts:
            continue
        copy = edition / rel
        data = path.read_bytes()
        if not copy.is_file() or copy.read_bytes() != data:
            found[digest(data)] = str(rel)
    return found


def _layers(saved: IO[bytes]) -> Iterator[Tuple[str, tarfile.TarFile]]:
    """(name, tar) of each layer of ``docker save``'s stream, in the order they come."""
    with tarfile.open(fileobj=saved, mode="r|") as outer:
        for member in outer:
            if member.isfile() and member.name.endswith("layer.tar"):
                stream = outer.extractfile(member)
                if stream is not None:
                    with tarfile.open(fileobj=stream, mode="r|") as layer:
                        yield member.name, layer


def _reasons(name: str, data: bytes, withheld: Dict[str, str]) -> List[str]:
    reasons = []
    if "/solutions/" in f"/{name}" and name.endswith(".ipynb"):
        reasons.append("a solution notebook")
    if digest(data) in withheld:
        reasons.append(f"the kit's {withheld[digest(data)]}")
    if kit_file(name):
        reasons += [f"holds {m.decode()}" for m in MARKERS if m in data]
    return reasons


def leaks(saved: IO[bytes], withheld: Dict[str, str]) -> Tuple[List[str], int]:
    """What a student must not get, found in any layer of ``saved`` (a ``docker save``
    stream): "layer: path: why" each; and how many layers were read."""
    found: List[str] = []
    layers = 0
    for layer_name, layer in _layers(saved):
        layers += 1
        for member in layer:
            if not member.isfile() or member.size > READ_LIMIT_BYTES:
                continue
            if not member.name.endswith(READ_SUFFIXES):
                continue
            stream = layer.extractfile(member)
            data = stream.read() if stream is not None else b""
            found += [f"{layer_name}: {member.name}: {why}"
                      for why in _reasons(member.name, data, withheld)]
    return found, layers


def saved_tar(files: Dict[str, bytes]) -> io.BytesIO:
    """A ``docker save``-shaped stream of one layer holding ``files`` (for the scanner's
    own test)."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    outer = io.BytesIO()
    with tarfile.open(fileobj=outer, mode="w") as tar:
        info = tarfile.TarInfo("0123abcd/layer.tar")
        info.size = layer.getbuffer().nbytes
        layer.seek(0)
        tar.addfile(info, layer)
    outer.seek(0)
    return outer
