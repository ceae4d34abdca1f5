"""``labtools results``: list the saved measurements, or export them as CSV.

    labtools results [--db PATH] [--case C] [--tool T] [--json] [--csv DIR]

One line per run: id, start time (UTC), topology, src-dst, tool, case, status, the
headline number (the receiver's rate in Mbit/s, else the minimum RTT in ms) and the worst
of its verdicts. ``--json`` prints the same as a list of objects (key ``headline`` with
``headline_unit``, ``verdict``); ``--csv DIR`` writes ``runs.csv`` and ``samples.csv``
there and prints their paths.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, Dict, List, Optional, Tuple

from labtools.commands import options

#: summary keys tried for the headline number, in order, with their unit
HEADLINES = (("receiver_mbps", "Mbit/s"), ("min_ms", "ms"))


def add_parser(sub: Any) -> None:
    """Register ``labtools results``."""
    p = sub.add_parser("results", help="list saved measurements, export CSV",
                       description="List the measurements in the results store.")
    p.add_argument("--db", metavar="PATH", default="results/labtools.sqlite", type=options.text,
                   help="the results store (default: results/labtools.sqlite)")
    p.add_argument("--case", metavar="C", type=options.text,
                   help="only this test case (udp, link, path, mux, parallel)")
    p.add_argument("--tool", metavar="T", type=options.text, help="only this tool")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--csv", metavar="DIR", type=options.text,
                   help="write runs.csv and samples.csv into DIR")
    p.set_defaults(handler=run)


def headline(summary: Dict[str, Any]) -> Tuple[Optional[float], str]:
    """The number that sums a run up, and its unit: receiver rate, else minimum RTT."""
    for key, unit in HEADLINES:
        value = summary.get(key)
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value), unit
    return None, ""


def run(args: argparse.Namespace) -> int:
    """List or export; return 0."""
    from labtools.results.store import ResultStore

    store = ResultStore(args.db, create=False)
    filters = {k: v for k, v in (("case", args.case), ("tool", args.tool)) if v}
    if args.csv:
        for path in store.export_csv(args.csv, **filters):
            print(path)
        return 0
    rows = _rows(store, filters)
    if args.json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print(f"no runs in {args.db}")
    else:
        print(_text(rows))
    return 0


def _rows(store: Any, filters: Dict[str, str]) -> List[Dict[str, Any]]:
    frame = store.runs(**filters)
    summary_cols = [c for c in frame.columns if c.startswith("summary.")]
    rows = []
    for rec in frame.to_dict(orient="records"):
        summary = {c[len("summary."):]: rec[c] for c in summary_cols}
        value, unit = headline(summary)
        rows.append({
            "id": int(rec["id"]), "started_at": rec["started_at"].isoformat(),
            "topology": rec["topology"], "src": rec["src"], "dst": rec["dst"],
            "tool": rec["tool"], "case": rec["case"], "label": rec["label"],
            "status": rec["status"], "error": _text_or_none(rec["error"]),
            "headline": value, "headline_unit": unit,
            "verdict": _worst(rec.get("verdicts_json")),
        })
    return rows


def _worst(verdicts_json: Any) -> Optional[str]:
    """The worst verdict saved with a run (None when it has none)."""
    from labtools.judge.policy import worst

    rows = json.loads(verdicts_json) if isinstance(verdicts_json, str) and verdicts_json else []
    return worst([r["verdict"] for r in rows]) if rows else None


def _text_or_none(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _text(rows: List[Dict[str, Any]]) -> str:
    lines = [f"{'id':>4}  {'started (UTC)':<19}  {'topology':<10} {'pair':<9} {'tool':<10} "
             f"{'case':<8} {'status':<6} {'verdict':<13}result"]
    for r in rows:
        pair = f"{r['src']}-{r['dst']}" if r["src"] or r["dst"] else "-"
        if r["status"] == "error":
            result = r["error"] or "failed"
        elif r["headline"] is None:
            result = "-"
        else:
            result = f"{r['headline']:.2f} {r['headline_unit']}"
        lines.append(f"{r['id']:>4}  {r['started_at'][:19].replace('T', ' '):<19}  "
                     f"{r['topology'] or '-':<10} {pair:<9} {r['tool']:<10} "
                     f"{r['case'] or '-':<8} {r['status']:<6} {r['verdict'] or '-':<13}{result}")
    return "\n".join(lines)
