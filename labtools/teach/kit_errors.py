"""The kit's errors and failed checks in a notebook: the one-line message first, the
traceback folded.

A kit error (:class:`labtools.errors.LabtoolsError` and its subclasses) carries a one-line
reason meant for the student (``ToolError: iperf3 on h1 exited with status 1: ...``).
IPython would print it under some sixty lines of the kit's own frames (probes, session,
network). So does a failed check: an ``assert`` of a notebook's graded cell (``not all
answers are right yet: read the sentences above``) or a check of the kit that fails with
:class:`AssertionError` on purpose (:func:`labtools.teach.predict_first.assert_predicted_first`,
``check_by_hand``): a wrong answer is not a crash (:func:`is_check_failure`). For both,
:func:`install` makes the notebook's kernel show instead:

- an error output whose text is that one line, ``KitErrorName: message``, so the cell
  still counts as failed: nbclient sees the error reply, and nbgrader's autograding sees
  the ``error`` output it gives no points for;
- below it, the full traceback folded in a ``<details>`` block (click to open), and
  ``%tb`` prints it too.

Any other exception (a mistake in the student's own code, or a bug of the kit), and an
``AssertionError`` raised inside another module (the student's own program, a library),
keeps IPython's full traceback. :func:`labtools.teach.notebook.open_lab` installs it.
"""

from __future__ import annotations

import html
import sys
import traceback
from types import TracebackType
from typing import Any, List, Optional, Type

from labtools.errors import LabtoolsError

#: the folded block's title (the traceback is one click away)
FOLD_TITLE = "the kit's traceback (click to open, or run %tb)"
#: what a front end without HTML shows in its place
PLAIN_HINT = "(the kit's traceback: run %tb)"


#: the modules whose ``AssertionError`` is a check's verdict: a notebook's own cells (they
#: run as ``__main__``) and the kit's (which never asserts to check its input)
CHECK_MODULES = ("__main__", "labtools")


def message_line(value: BaseException, tb: Optional[TracebackType] = None) -> str:
    """``KitErrorName: message``: what the student reads first. A failed ``assert`` without
    a message reads as the statement that failed (from ``tb``, when given)."""
    text = str(value).strip().replace("\n", " ")
    if not text and tb is not None:
        text = (traceback.extract_tb(tb)[-1].line or "").strip()
    return f"{type(value).__name__}: {text}" if text else type(value).__name__


def is_check_failure(value: BaseException, tb: Optional[TracebackType]) -> bool:
    """True for an :class:`AssertionError` raised by a check: directly in a notebook's cell
    or in the kit (:data:`CHECK_MODULES`), not inside another module the cell called."""
    if not isinstance(value, AssertionError) or tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    module = str(tb.tb_frame.f_globals.get("__name__", ""))
    return any(module == name or module.startswith(f"{name}.") for name in CHECK_MODULES)


def folded_traceback(etype: Type[BaseException], value: BaseException,
                     tb: Optional[TracebackType]) -> dict:
    """The full traceback as a display bundle: an HTML ``<details>`` block, folded, and
    a plain-text hint for front ends without HTML."""
    text = "".join(traceback.format_exception(etype, value, tb))
    folded = (f"<details><summary>{html.escape(FOLD_TITLE)}</summary>"
              f"<pre>{html.escape(text)}</pre></details>")
    return {"text/html": folded, "text/plain": PLAIN_HINT}


def show_kit_error(shell: Any, etype: Type[BaseException], value: BaseException,
                   tb: Optional[TracebackType], tb_offset: Optional[int] = None) -> List[str]:
    """IPython's custom exception handler for the kit's errors (see the module's
    docstring). Returns the one line it showed as the error's traceback."""
    from IPython.display import display

    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # for %tb
    if sys.version_info >= (3, 12):
        sys.last_exc = value
    stb = [message_line(value, tb)]
    # IPython (9) leaves showing a custom handler's error to the handler: this sends the
    # kernel's ``error`` output (what nbgrader grades as a failed cell)
    shell._showtraceback(etype, value, stb)
    display(folded_traceback(etype, value, tb), raw=True)
    return stb


def install(shell: Any = None) -> bool:
    """Show the kit's errors and failed checks as one line in this IPython kernel (or
    ``shell``); False, and nothing done, outside IPython (a script, the command line)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False

    def handler(self: Any, etype: Type[BaseException], value: BaseException,
                tb: Optional[TracebackType], tb_offset: Optional[int] = None) -> None:
        if isinstance(value, LabtoolsError) or is_check_failure(value, tb):
            show_kit_error(self, etype, value, tb, tb_offset)
        else:  # an assert inside the student's own program or a library: all of it
            self.showtraceback((etype, value, tb), tb_offset=tb_offset)

    shell.set_custom_exc((LabtoolsError, AssertionError), handler)
    return True
