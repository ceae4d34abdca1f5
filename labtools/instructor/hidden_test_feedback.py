"""The feedback a student gets says where hidden tests ran, never what they are.

nbgrader's ``generate_feedback`` turns each autograded notebook (``autograded/``, where
autograde put the hidden tests back into their cells) into the student's HTML page in
``feedback/``, and by default that page shows each cell's whole source, hidden tests
included: a class would hand them on to the next year's. :class:`HideHiddenTests`, one of
``GenerateFeedback.preprocessors`` in a course the kit set up
(:func:`feedback_preprocessors`, put there by
:func:`labtools.teach.notebook_files.course_config` and by the course hub's
``nbgrader_config.py``), replaces each hidden-test region (from its ``### BEGIN HIDDEN
TESTS`` line to its ``### END HIDDEN TESTS`` line, or the markers a course configured for
nbgrader's ``ClearHiddenTests``) with one line, :data:`HIDDEN_TESTS_LINE`.

The cell's outputs stay: the error a hidden test raised is what tells the student what
failed (a failed check is its one line, :mod:`labtools.teach.kit_errors`). What an output
quotes of the hidden tests goes, line by line: IPython's frames quote the code around
each frame's line (``Cell In[12], line 4``, then lines 1 to 6), and a failed check's folded
traceback (:func:`labtools.teach.kit_errors.folded_traceback`) quotes the line that failed;
each run of such lines becomes :data:`HIDDEN_OUTPUT_LINE`, the others stay.

Only the page changes: nbgrader reads the autograded notebook and writes the page, so the
notebook in ``autograded/`` (which the instructor grades by hand in formgrader) keeps its
hidden tests.
"""

from __future__ import annotations

import html
import re
from typing import Any, List, Set, Tuple

from nbformat import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests

#: what a hidden-test region's lines become in the feedback
HIDDEN_TESTS_LINE = "# hidden tests: their results are below"
#: what the lines of hidden tests an output quotes (a traceback) become
HIDDEN_OUTPUT_LINE = "      (hidden tests: their lines are not shown)"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: IPython's prefix of a quoted line: its number, an arrow before the line that ran
_QUOTE_PREFIX = re.compile(r"^\s*(?:-*>\s*)?\d+ ")
#: Python's marks under the part of a quoted line that failed
_CARETS = re.compile(r"^\s*[~^]+\s*$")
#: an error's last line (``AssertionError: assert x == 17`` for a bare ``assert``)
_ERROR_LINE = re.compile(r"^(\s*[A-Za-z_][\w.]*(?:Error|Exception): )(.*)$")
#: an HTML line: its leading tags, its text, its trailing tags
_MARKUP_LINE = re.compile(r"^((?:<[^>]*>)*)(.*?)((?:<[^>]*>)*)$")


class HideHiddenTests(ClearHiddenTests):
    """nbgrader's step of ``generate_feedback`` that shows :data:`HIDDEN_TESTS_LINE` in
    place of each hidden-test region and keeps every output, without the lines of hidden
    tests it quotes (module docstring). Its markers are ``ClearHiddenTests``'s
    (``begin_test_delimeter``, ``end_test_delimeter``), configured as nbgrader's are."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> Tuple[NotebookNode, Any]:
        """The notebook ``nb`` with its hidden tests' source replaced, and in its outputs
        the lines that quote them; ``resources`` unchanged."""
        hidden: Set[str] = set()
        for cell in nb.cells:
            cell.source, lines = self.without_hidden_tests(cell.source)
            hidden.update(lines)
        if hidden:
            for cell in nb.cells:
                for output in cell.get("outputs", []):
                    _scrub(output, hidden)
        return nb, resources

    def without_hidden_tests(self, source: str) -> Tuple[str, Set[str]]:
        """``source`` with each hidden-test region replaced by :data:`HIDDEN_TESTS_LINE`
        (indented as its first marker), and the region's lines, stripped. A region
        without its end marker runs to the end of the cell."""
        kept: List[str] = []
        hidden: Set[str] = set()
        inside = False
        for line in source.split("\n"):
            if self.begin_test_delimeter in line:
                if not inside:
                    indent = line[:len(line) - len(line.lstrip())]
                    kept.append(indent + HIDDEN_TESTS_LINE)
                inside = True
            elif self.end_test_delimeter in line:
                inside = False
            elif not inside:
                kept.append(line)
                continue
            if line.strip():
                hidden.add(line.strip())
        return "\n".join(kept), hidden


def _scrub(output: NotebookNode, hidden: Set[str]) -> None:
    """Take the lines of ``hidden`` out of the texts of one output (in place): an error's
    traceback, a stream's text, a display's ``text/*`` data."""
    if output.get("output_type") == "error":
        output["traceback"] = [_without_lines(entry, hidden, False)
                               for entry in output.get("traceback", [])]
    elif output.get("output_type") == "stream":
        output["text"] = _without_lines(_text(output.get("text", "")), hidden, False)
    for mime, value in output.get("data", {}).items():
        if mime.startswith("text/"):
            output["data"][mime] = _without_lines(_text(value), hidden, mime == "text/html")


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _without_lines(text: str, hidden: Set[str], markup: bool) -> str:
    """``text`` with each run of lines that quote a line of ``hidden`` (stripped lines;
    quoted by IPython or Python, with colours, in HTML when ``markup``) replaced by
    :data:`HIDDEN_OUTPUT_LINE`, and the marks Python puts under them left out."""
    kept: List[str] = []
    dropped = False
    for line in text.split("\n"):
        parts = _MARKUP_LINE.match(line) if markup else None
        plain = _ANSI.sub("", html.unescape(parts.group(2)) if parts else line)
        error = _ERROR_LINE.match(plain)
        if error and error.group(2).strip() in hidden:  # a bare assert's one line
            kept.append(f"{error.group(1)}{HIDDEN_OUTPUT_LINE.strip()}")
            dropped = False
        elif plain.strip() in hidden or _QUOTE_PREFIX.sub("", plain, count=1).strip() in hidden:
            shown = (f"{parts.group(1)}{html.escape(HIDDEN_OUTPUT_LINE)}{parts.group(3)}"
                     if parts else HIDDEN_OUTPUT_LINE)
            if not (dropped and kept and kept[-1] == shown):
                kept.append(shown)
            dropped = True
        elif dropped and _CARETS.match(plain):
            continue
        else:
            kept.append(line)
            dropped = False
    return "\n".join(kept)


def feedback_preprocessors() -> List[Any]:
    """nbgrader's ``generate_feedback`` steps, then :class:`HideHiddenTests`."""
    from nbgrader.converters.generate_feedback import GenerateFeedback

    steps = GenerateFeedback.class_traits()["preprocessors"].default()
    return [*steps, HideHiddenTests]
