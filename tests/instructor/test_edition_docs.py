"""The student edition's pages name only what the edition holds.

A student reads README.md, docs/students.md, docs/running.md and docs/reference.md in the
edition a course handed out (``labtools bundle --students DIR``). Every relative link there
lands on a file of the edition, every ``make`` target it offers is in the edition's own
Makefile, and every path of the kit it names (``scripts/...``, ``deploy/...``, ``docs/...``,
a top-level page) is in the edition, unless the same line says it belongs to "the whole
kit" (how an instructor builds the container image, the kit's benchmarks).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Tuple

import pytest
from conftest import run_cli

#: the pages of the edition a student reads
PAGES = ("README.md", "docs/students.md", "docs/running.md", "docs/reference.md")
#: what a line says when it names a file of the whole kit on purpose
WHOLE_KIT = "whole kit"
#: a path of the kit named in a page: a top folder and a file below it, or a top-level page
KIT_PATH = re.compile(r"(?<![\w./-])((?:scripts|deploy|docs|tests|solutions|benchmarks|vagrant)"
                      r"/[\w./-]*[\w-]|[A-Z]+\.md)(?![\w/-])")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
MAKE = re.compile(r"(?:`|^\s*)make ([a-z][a-z-]*)")


@pytest.fixture(scope="module")
def edition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("edition-docs") / "students"
    done = run_cli(["bundle", "--students", str(folder)])
    assert done.returncode == 0, done.stderr
    return folder


def named(edition: Path) -> List[Tuple[str, int, str, str]]:
    """(page, line number, kind, what) for every link, make target and kit path named."""
    found = []
    for page in PAGES:
        for number, line in enumerate((edition / page).read_text().splitlines(), 1):
            if WHOLE_KIT in line:
                continue
            found += [(page, number, "link", t) for t in LINK.findall(line) if "://" not in t]
            found += [(page, number, "make", t) for t in MAKE.findall(line)]
            found += [(page, number, "path", t) for t in KIT_PATH.findall(line)]
    return found


def missing(edition: Path, page: str, kind: str, what: str) -> bool:
    if kind == "make":
        return not re.search(rf"^{re.escape(what)}:", (edition / "Makefile").read_text(), re.M)
    if kind == "link":
        return not ((edition / page).parent / what).exists()
    return not any((edition / base / what.rstrip(".")).exists()
                   for base in (".", Path(page).parent))


def test_every_page_is_in_the_edition(edition):
    assert all((edition / page).is_file() for page in PAGES)


def test_the_pages_name_only_what_the_edition_holds(edition):
    found = named(edition)
    assert len(found) > 20  # the pages do name files and targets: the scan reads them
    absent = [f"{page}:{line} {kind} {what}" for page, line, kind, what in found
              if missing(edition, page, kind, what)]
    assert not absent, absent


def test_a_file_left_out_is_found_when_named(edition, tmp_path):
    """The scan sees a kit-only file named without 'whole kit' (what it exists to catch)."""
    page = edition / "docs" / "students.md"
    kept = page.read_text()
    try:
        page.write_text(kept + "\nRun `bash scripts/image.sh` and `make test`; see "
                        "[BENCHMARKS.md](../BENCHMARKS.md).\n")
        absent = {(kind, what) for p, _, kind, what in named(edition)
                  if missing(edition, p, kind, what)}
    finally:
        page.write_text(kept)
    assert {("path", "scripts/image.sh"), ("make", "test"),
            ("link", "../BENCHMARKS.md")} <= absent
