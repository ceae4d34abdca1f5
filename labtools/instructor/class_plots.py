"""The class report's plots: the slides an instructor shows after a lab.

Each function takes a table of :mod:`labtools.instructor.class_data` and an optional ``ax``;
without one it draws on a new matplotlib ``Figure`` of its own (not pyplot's: a command
writes PNGs without a display; in a notebook, ``display(ax.figure)``). The plots name no
student: they are shown to the class. Ratios are measured / expected (1 is the kit's
calculation for each student's own network), rates are in Mbit/s.
"""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, List, Optional, Tuple

from labtools.teach.plots import VERDICT_COLOURS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes

#: the ratio axis: measured / expected from a fifth to five times (beyond: at the edge)
RATIO_LIMITS = (0.2, 5.0)
RATIO_TICKS = (0.25, 0.5, 0.8, 1.0, 1.25, 2.0, 4.0)
VERDICTS = ("ok", "inconclusive", "suspicious", "invalid")
LABEL_WIDTH = 46
FONT_SIZE = 11


def _axes(ax: Optional["Axes"], size: Tuple[float, float]) -> "Axes":
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, layout="constrained")
    return figure.subplots()


def _label(text: str) -> str:
    return "\n".join(textwrap.wrap(text, LABEL_WIDTH, break_on_hyphens=False)[:2])


def quantity_order(table: "pd.DataFrame") -> List[str]:
    """The quantities of one lab in the order the notebook measures them (the median
    step each was measured at, then the table's order)."""
    steps = table.groupby("quantity", sort=False)["step"].median()
    first = {q: i for i, q in enumerate(table["quantity"].drop_duplicates())}
    return sorted(steps.index, key=lambda q: (steps[q], first[q]))


def plot_class_lab(table: "pd.DataFrame", title: str = "",
                   ax: Optional["Axes"] = None) -> "Axes":
    """Measured / expected of every quantity of one lab across the class: one row per
    quantity under its measurement's name, one dot per student (coloured by its verdict),
    the class median as a black bar, and the line where measured equals expected.

    ``table``: the rows of :data:`~labtools.instructor.class_data.MEASUREMENT_COLUMNS` of one
    lab; rows without a ratio (an expected value of 0) are left out."""
    rows = table[table["ratio"].notna()]
    order = quantity_order(rows) if len(rows) else []
    lines: List[Tuple[str, Optional[str]]] = []  # (label, quantity or None for a heading)
    heading: Optional[str] = None
    for quantity in order:
        first = rows[rows["quantity"] == quantity].iloc[0]
        if first["measurement"] != heading:
            heading = first["measurement"]
            lines.append((str(heading), None))
        lines.append((str(first["metric"]).replace("_", " "), quantity))
    ax = _axes(ax, (11, 0.36 * max(len(lines), 6) + 2.0))
    _dots(ax, rows, [q for _, q in lines])
    ax.axvline(1.0, color="black", linestyle=":", linewidth=1.2)
    low, high = RATIO_LIMITS
    ax.set_xscale("log")
    ax.set_xlim(low * 0.95, high * 1.05)
    ax.set_xticks(list(RATIO_TICKS))
    ax.set_xticklabels([f"{t:g}" for t in RATIO_TICKS], fontsize=FONT_SIZE)
    ax.minorticks_off()
    ax.set_yticks(range(len(lines)))
    ax.set_yticklabels([_label(text) if q is None else f"{_label(text)}  "
                        for text, q in lines], fontsize=FONT_SIZE - 1)
    for tick, (_, shown) in zip(ax.get_yticklabels(), lines):
        if shown is None:
            tick.set_fontweight("bold")
    ax.set_ylim(len(lines) - 0.5, -0.5)
    ax.set_xlabel("measured / expected (1 = the kit's value for each student's own network;"
                  " log scale)", fontsize=FONT_SIZE)
    ax.set_title(title or "Measured against expected, across the class", fontsize=FONT_SIZE + 2)
    ax.grid(True, axis="x", alpha=0.3)
    _verdict_legend(ax, rows, extra=[("black", "|", "class median")])
    return ax


def _dots(ax: "Axes", rows: "pd.DataFrame", shown: List[Optional[str]]) -> None:
    """Each quantity's dots at its line (spread a little around it; beyond the axis: an
    arrow at its edge) and its class median as a bar."""
    low, high = RATIO_LIMITS
    points: dict = {}  # (marker, colour) -> ([x], [y])
    medians: List[Tuple[float, float]] = []
    for y, quantity in enumerate(shown):
        if quantity is None:
            continue
        part = rows[rows["quantity"] == quantity]
        for i, (ratio, verdict) in enumerate(zip(part["ratio"], part["verdict"])):
            dy = 0.3 * (i / max(len(part) - 1, 1) - 0.5)
            marker = ">" if ratio > high else "<" if ratio < low else "o"
            key = (marker, VERDICT_COLOURS.get(verdict, "black"))
            points.setdefault(key, ([], []))
            points[key][0].append(min(max(float(ratio), low), high))
            points[key][1].append(y + dy)
        medians.append((min(max(float(part["ratio"].median()), low), high), y))
    for (marker, colour), (xs, ys) in points.items():
        ax.scatter(xs, ys, s=50, marker=marker, color=colour, alpha=0.85, zorder=3)
    if medians:
        ax.vlines([x for x, _ in medians], [y - 0.35 for _, y in medians],
                  [y + 0.35 for _, y in medians], color="black", linewidth=2.5, zorder=4)


def _verdict_legend(ax: "Axes", rows: "pd.DataFrame",
                    extra: Optional[List[Tuple[str, str, str]]] = None) -> None:
    from matplotlib.lines import Line2D

    counts = rows["verdict"].value_counts() if len(rows) else {}
    handles = [Line2D([], [], marker="o", linestyle="none", color=VERDICT_COLOURS[v],
                      label=f"{v} ({int(counts.get(v, 0))})") for v in VERDICTS
               if counts.get(v, 0)]
    handles += [Line2D([], [], marker=m, linestyle="none", color=c, markersize=12, label=t)
                for c, m, t in extra or []]
    ax.legend(handles=handles, fontsize=FONT_SIZE - 1, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), frameon=False)


def plot_verdict_shares(table: "pd.DataFrame", labs: Optional[List[str]] = None,
                        ax: Optional["Axes"] = None) -> "Axes":
    """The share of each verdict per lab (percent of all the class's judged numbers):
    an inconclusive verdict is what a machine could not show, not a student's fault."""
    labs = labs or list(dict.fromkeys(table["case"]))
    ax = _axes(ax, (11, 0.55 * max(len(labs), 2) + 1.8))
    for y, lab in enumerate(labs):
        part = table[table["case"] == lab]
        left = 0.0
        for verdict in VERDICTS:
            share = 100.0 * float((part["verdict"] == verdict).mean()) if len(part) else 0.0
            if share:
                ax.barh(y, share, left=left, color=VERDICT_COLOURS[verdict], height=0.6)
                if share >= 6:
                    ax.text(left + share / 2, y, f"{share:.0f}%", ha="center", va="center",
                            fontsize=FONT_SIZE - 1, color="white")
            left += share
    ax.set_yticks(range(len(labs)))
    ax.set_yticklabels(labs, fontsize=FONT_SIZE)
    ax.set_ylim(len(labs) - 0.5, -0.5)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the class's judged numbers (%)", fontsize=FONT_SIZE)
    ax.set_title("Verdicts per lab (inconclusive: the machine, not the network, set the "
                 "number)", fontsize=FONT_SIZE + 1)
    _verdict_legend(ax, table)
    return ax


def plot_calibrations(calibrations: "pd.DataFrame", ax: Optional["Axes"] = None) -> "Axes":
    """What each student's machine forwards (Mbit/s, its slowest calibration), sorted,
    against what the labs' links carry at once: a machine below that line measured itself
    rather than the network in the labs with fast links."""
    known = calibrations.dropna(subset=["forward_mbps"])
    per = known.assign(too_slow=known["too_slow"].fillna(False).astype(bool)).groupby(
        ["student", "assignment"]).agg(forward_mbps=("forward_mbps", "min"),
                                       needed_mbps=("needed_mbps", "max"),
                                       too_slow=("too_slow", "any"))
    per = per.sort_values("forward_mbps").reset_index(drop=True)
    ax = _axes(ax, (11, 4.5))
    colours = ["tab:red" if slow else "tab:blue" for slow in per["too_slow"]]
    ax.bar(range(len(per)), per["forward_mbps"], color=colours, width=0.7)
    needed = float(per["needed_mbps"].max()) if len(per) else 0.0
    if needed and math.isfinite(needed):
        ax.axhline(needed, color="black", linestyle="--", linewidth=1.5,
                   label=f"a lab needs {needed:.0f} Mbit/s (its links at full rate, "
                   "with headroom)")
        ax.legend(fontsize=FONT_SIZE - 1, loc="upper left", framealpha=0.9)
    top = max([needed, *per["forward_mbps"]]) if len(per) else 1.0
    ax.set_ylim(0, top * 1.25)
    ax.set_xticks([])
    ax.set_xlabel(f"students' machines, slowest first ({len(per)}; "
                  f"{int(per['too_slow'].sum())} too slow, in red)", fontsize=FONT_SIZE)
    ax.set_ylabel("forwards at most (Mbit/s)", fontsize=FONT_SIZE)
    ax.set_title("The machines the class measured on (calibration)", fontsize=FONT_SIZE + 1)
    ax.grid(True, axis="y", alpha=0.3)
    return ax
