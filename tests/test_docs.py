"""The documentation, by reader: a README of at most 150 lines that leads to the pages
under ``docs/``, links that lead somewhere (a file, and a heading there when the link names
one), and every topology of the kit named in the README's table of topologies."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, List, Set, Tuple

import pytest

from labtools.model.catalog import available

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 150
#: the pages the README must lead to
READER_PAGES = ["students.md", "instructors.md", "developers.md"]

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (a ``# comment`` there is no heading)."""
    return _FENCE.sub("", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as
    hyphens (``"`labtools expect` keys (JSON)"`` -> ``labtools-expect-keys-json``)."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> Set[str]:
    """The anchors of the headings of a Markdown page."""
    return {slug(h) for h in _HEADING.findall(_prose(page.read_text()))}


def relative_links(page: Path) -> Iterator[str]:
    """The links of ``page`` that point into the repository (not http, not mail)."""
    for target in _LINK.findall(_prose(page.read_text())):
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target):
            yield target


def broken_links(page: Path) -> List[Tuple[str, str]]:
    """(link, why) for each relative link of ``page`` that leads nowhere."""
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append((target, "no such file"))
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append((target, f"no heading #{anchor} in {file.name}"))
    return broken


DOC_PAGES = sorted(DOCS.glob("*.md"))


def test_the_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"


def test_the_readme_leads_to_each_readers_page():
    linked = {Path(t.partition("#")[0]).name for t in relative_links(README)
              if t.startswith("docs/")}
    missing = [name for name in READER_PAGES if name not in linked]
    assert not missing, f"README.md links to no {missing}"


@pytest.mark.parametrize("page", [README] + DOC_PAGES, ids=lambda p: p.name)
def test_every_relative_link_leads_somewhere(page):
    assert broken_links(page) == []


def test_every_doc_page_is_reached_from_the_readme_or_another_page():
    reached = {(README.parent / t.partition("#")[0]).resolve()
               for page in [README] + DOC_PAGES for t in relative_links(page)}
    orphans = [p.name for p in DOC_PAGES if p.resolve() not in reached]
    assert not orphans, f"no page links to {orphans}"


def test_every_topology_of_the_kit_is_in_the_readmes_table():
    text = README.read_text()
    missing = [name for name in available() if f"| `{name}` |" not in text]
    assert not missing, f"README.md's table of topologies lacks {missing}"


def test_the_checks_see_what_is_broken(tmp_path):
    """The link check is not vacuous: a missing file, a missing heading, a heading that
    only a code block holds are caught; links to the web and good links pass."""
    (tmp_path / "other.md").write_text("# Other page\n\n## The lab in a container (Docker)\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n```sh\n# not a heading\n[x](nowhere-in-code.md)\n```\n\n"
        "[a](other.md) [b](other.md#the-lab-in-a-container-docker) [c](https://example.org)\n"
        "[d](missing.md) [e](other.md#no-such-heading) [f](#not-a-heading) [g](#page)\n")
    assert broken_links(page) == [("missing.md", "no such file"),
                                  ("other.md#no-such-heading", "no heading #no-such-heading in other.md"),
                                  ("#not-a-heading", "no heading #not-a-heading in page.md")]
    assert slug("`labtools expect` keys (JSON)") == "labtools-expect-keys-json"
    assert slug("Your lab and the students'") == "your-lab-and-the-students"
