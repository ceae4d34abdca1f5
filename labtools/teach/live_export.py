"""A recorded live demonstration handed out as a notebook that draws it again.

    labtools demo --export last --out bufferbloat.ipynb

    from labtools.results.store import ResultStore
    from labtools.teach.live_export import export_demo
    export_demo(ResultStore("results/labtools.sqlite", create=False), "last",
                Path("handout/bufferbloat.ipynb"))

:func:`export_demo` writes three files side by side: ``NAME.ipynb``; ``NAME.sqlite``, a
results store holding that demonstration's events only (its ``live_events``: every sample
and knob change, with its time); and ``NAME.csv``, the same as one table of the points the
plots draw (:data:`CSV_COLUMNS`), for a spreadsheet or pandas without the kit. The notebook
has no outputs; its cells read the events from ``NAME.sqlite`` with the kit's
:class:`~labtools.results.store.ResultStore`, draw the panel's plots
(:func:`labtools.teach.live_panel.demo_figure`: the queue, the RTT, the rates, the cwnd,
the expected values dashed, each change marked), list the changes with their times and
read the CSV. They need no network: the notebook runs wherever the kit is installed.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Sequence

from labtools.errors import InputError, StoreError
from labtools.lab.live_presets import PRESETS
from labtools.results.live_events import LiveEvent, pick_demo
from labtools.results.store import ResultStore
from labtools.teach.live_panel import series

#: the CSV's columns: which plot (queue, rtt, rate, cwnd, expected, or change for a knob
#: change), which line of it, the time (s after the start), the value (in the plot's unit:
#: packets, ms, Mbit/s, segments) or, for a change, its text
CSV_COLUMNS = ("plot", "name", "t_s", "value", "text")
#: the plots of :func:`labtools.teach.live_panel.series`, in the CSV's order
PLOTS = ("queue", "rtt", "rate", "cwnd", "expected")


@dataclass(frozen=True)
class ExportedDemo:
    """What :func:`export_demo` wrote: the notebook, the results file, the CSV, and the
    demonstration's id and number of events."""

    notebook: Path
    results: Path
    table: Path
    demo_id: str
    events: int


def demo_rows(events: Sequence[LiveEvent]) -> List[Dict[str, Any]]:
    """The CSV's rows (:data:`CSV_COLUMNS`): every point the plots draw, plot by plot,
    then every knob change (``value`` empty, ``text`` the change as written, with
    ``(refused)`` when the network refused it)."""
    data = series(events)
    rows = [{"plot": plot, "name": name, "t_s": t, "value": value, "text": ""}
            for plot in PLOTS for name, points in data[plot].items() for t, value in points]
    rows += [{"plot": "change", "name": "", "t_s": t, "value": None, "text": text}
             for t, text in data["changes"]]
    return rows


def _cell(kind: str, source: str) -> Dict[str, Any]:
    cell: Dict[str, Any] = {"cell_type": kind, "id": "", "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _about(events: Sequence[LiveEvent]) -> str:
    """The notebook's first cell: what was demonstrated, when, what to look at."""
    first = events[0]
    name = first.case[len("demo "):] if first.case.startswith("demo ") else ""
    chosen = PRESETS.get(name)
    flows = ", ".join(first.values.get("flows", [])) if first.kind == "start" else ""
    lines = [f"# A live demonstration: {first.case or 'the live panel'} on {first.topology}",
             "",
             f"Recorded {first.recorded_at[:19].replace('T', ' ')} UTC (demonstration "
             f"`{first.demo_id}`); flows: {flows or 'none recorded'}."]
    if chosen is not None:
        lines += ["", f"**What to look at.** {chosen.look_at}"]
    notes = dict(zip((c.text for c in chosen.changes), chosen.change_notes)) if chosen else {}
    changes = [e for e in events if e.kind == "change"]
    if changes:
        lines += ["", "The links were changed while the flows ran:", ""]
        for e in changes:
            note = notes.get(str(e.values.get("text")), "")
            refused = f" (refused: {e.values['refused']})" if "refused" in e.values else ""
            lines.append(f"- at {e.t_s:.1f} s: `{e.values.get('text', '')}`{refused}"
                         f"{': ' + note if note else ''}")
    return "\n".join(lines)


def handout_notebook(events: Sequence[LiveEvent], results_name: str,
                     table_name: str) -> Dict[str, Any]:
    """The notebook (nbformat 4, as a dict, without outputs) that reads ``events``' demonstration
    from the results file ``results_name`` and the CSV ``table_name`` beside it."""
    demo_id = events[0].demo_id
    cells = [
        _cell("markdown", _about(events)),
        _cell("code", "from labtools.results.store import ResultStore\n\n"
                      f"events = ResultStore({results_name!r}, create=False).live_events(\n"
                      f"    demo_id={demo_id!r})\n"
                      "print(len(events), 'events:', {k: sum(e.kind == k for e in events)\n"
                      "                          for k in sorted({e.kind for e in events})})"),
        _cell("markdown", "The panel's plots, drawn again: the bottleneck queue (packets), "
                          "the RTT (the ping's and TCP's own), the rates and TCP's congestion "
                          "window; the values the kit expected are dashed, and a vertical line "
                          "marks each change of a link."),
        _cell("code", "from IPython.display import Image\n"
                      "from labtools.teach.live_panel import demo_figure, figure_png\n\n"
                      "Image(figure_png(demo_figure(events)))"),
        _cell("markdown", "Each change with its time (s after the start) and the rate and "
                          "RTT the kit expected after it:"),
        _cell("code", "import pandas as pd\n\n"
                      "pd.DataFrame([{'t_s': e.t_s, 'change': e.values.get('text'),\n"
                      "               'refused': e.values.get('refused'),\n"
                      "               **{f'{flow} {key}': want.get(key)\n"
                      "                  for flow, want in e.values.get('expected', {}).items()\n"
                      "                  for key in ('rate_mbps', 'rtt_ms')}}\n"
                      "              for e in events if e.kind == 'change'])"),
        _cell("markdown", f"Every point of the plots as one table (`{table_name}`, beside "
                          "this notebook: `plot`, `name`, `t_s`, `value` in the plot's unit, "
                          "`text` for a change). For instance, the queue's samples: "
                          "`table[table.plot == 'queue']`."),
        _cell("code", f"table = pd.read_csv({table_name!r})\n"
                      "table.groupby(['plot', 'name']).value.describe()"),
    ]
    for number, cell in enumerate(cells, 1):
        cell["id"] = f"live-demo-{number}"
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3",
                                                         "language": "python",
                                                         "name": "python3"},
                                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def export_demo(store: ResultStore, wanted: str, out: Path) -> ExportedDemo:
    """Write the handout of the demonstration ``wanted`` names (``last``, its id, or the
    beginning of it: :func:`~labtools.results.live_events.pick_demo`) in ``store``:
    ``out`` (``NAME.ipynb``), ``NAME.sqlite`` and ``NAME.csv`` beside it.

    Raises:
        InputError: ``out`` does not end in ``.ipynb``, one of the three files exists
            already, or no demonstration is named so.
        StoreError: the store cannot be read, or the new one written.
    """
    if out.suffix != ".ipynb":
        raise InputError(f"--out {out}: name the notebook NAME.ipynb")
    results, table = out.with_suffix(".sqlite"), out.with_suffix(".csv")
    existing = [p for p in (out, results, table) if p.exists()]
    if existing:
        raise InputError(f"{existing[0]} exists already: choose another --out")
    demo_id = pick_demo(store.live_events(kind="start"), wanted)
    events = store.live_events(demo_id=demo_id)
    ResultStore(results).save_live_events([replace(e, id=None) for e in events])
    _write_csv(table, demo_rows(events))
    nb = handout_notebook(events, results.name, table.name)
    _write_text(out, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return ExportedDemo(out, results, table, demo_id, len(events))


def _write_csv(path: Path, rows: List[Dict[str, Any]]) -> None:
    try:
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
    except OSError as err:
        raise StoreError(f"cannot write {path}: {err.strerror}") from None


def _write_text(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise StoreError(f"cannot write {path}: {err.strerror}") from None
