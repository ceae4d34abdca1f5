"""No figure is drawn while nbgrader autogrades a notebook: nobody looks at them then.

A rendered figure (matplotlib's inline backend turns each into a PNG at the end of its
cell) was most of what the kernels of the labs with plots cost to grade, and about a fifth
of a whole submission (benchmarks/grading.py; BENCHMARKS.md has the figures).
While nbgrader autogrades, the kernel draws with matplotlib's non-interactive
Agg backend instead: every plotting call still runs (a plot that fails, fails the same),
nothing is rendered, and each cell's figures are closed after it. The student's own
notebook keeps the figures it drew; the feedback shows the graded cells' output without
them. ``nbgrader validate`` (an instructor checking a notebook) still draws.
"""

from __future__ import annotations

import sys
from typing import Any

#: the line the lab's setup cell prints when figures are left out
NOT_DRAWN_LINE = "grading: figures are not drawn (your own notebook keeps the ones you drew)"
AGG = "agg"


def _close_figures() -> None:
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


def draw_no_figures() -> None:
    """From here on, figures are built and not rendered (matplotlib's Agg backend, also
    for a pyplot imported already), and closed after each cell."""
    import matplotlib

    matplotlib.use(AGG, force=True)
    shell = _ipython()
    if shell is not None and _close_figures not in shell.events.callbacks["post_execute"]:
        shell.events.register("post_execute", _close_figures)
    print(NOT_DRAWN_LINE)


def _ipython() -> Any:
    """The running IPython shell, or None outside one (IPython is not imported for it)."""
    module = sys.modules.get("IPython")
    return None if module is None else module.get_ipython()
