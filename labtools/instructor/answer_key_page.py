"""One student's answer key as a plain HTML page, for the TA beside nbgrader's formgrader.

``labtools answer-key STUDENT --html DIR`` writes :func:`key_page_name` of each student into
DIR: per lab, per question (``02-Q3``), the values the student's network gives, the full
answer with its numbers, and each yes/no conclusion of the rubric as it holds for that
network, with its margin from the boundary and what a run resolves there ("borderline:
either answer" where the student's run cannot decide it). No script, no style sheet beyond
a few lines inside the page.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from labtools.errors import InputError
from labtools.instructor.answer_keys import QuestionKey
from labtools.instructor.measured_keys import MeasuredLab
from labtools.teach.question_values import format_values

#: how every key page's file name starts
KEY_PAGE_PREFIX = "answer-key-"
_STYLE = ("body{font-family:sans-serif;max-width:52em;margin:1em auto;line-height:1.4}"
          "h2{border-bottom:1px solid #999}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
          ".yes{color:#060}.no{color:#a00}.borderline{color:#a60;font-weight:bold}")


def key_page_name(student: str) -> str:
    """The file name of ``student``'s key page (relative: in the folder ``--html`` names)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", student.strip())
    if not safe or safe.strip(".") == "":
        raise InputError(f"student id {student!r} cannot name a page")
    return f"{KEY_PAGE_PREFIX}{safe}.html"


def _question(key: QuestionKey) -> List[str]:
    out = [f"<h3 id=\"{key.question_id}\">{key.question_id}"
           + ("" if key.yes is None else f" — <span class=\"{'yes' if key.yes else 'no'}\">"
              f"{'yes' if key.yes else 'no'}</span>")
           + (" — <span class=\"borderline\">borderline: either answer</span>"
              if key.borderline else "") + "</h3>"]
    if key.given:
        out.append("<pre>" + html.escape(format_values(key.given)) + "</pre>")
    out.append(f"<p>{html.escape(key.answer)}</p>")
    out += [f"<p class=\"borderline\">{html.escape(note)}</p>" for note in key.borderline_notes]
    if key.conclusions:
        out.append("<table><tr><th>rubric's condition</th><th>holds here</th>"
                   "<th>margin / a run resolves</th></tr>")
        for c in key.conclusions:
            mark = "yes" if c.holds else "no"
            margin = ("" if c.margin_rel is None else
                      f"{100 * abs(c.margin_rel):.1f} % / {100 * (c.resolution_rel or 0):.1f} %")
            shown = f"borderline: either answer ({margin})" if c.borderline else margin
            edge = " class=\"borderline\"" if c.borderline else ""
            out.append(f"<tr><td>{html.escape(c.name)}: {html.escape(c.condition)}</td>"
                       f"<td class=\"{mark}\">{mark}</td>"
                       f"<td{edge}>{html.escape(shown)}</td></tr>")
        out.append("</table>")
    return out


def measured_rows(measured: MeasuredLab) -> List[str]:
    """Each value the student measured in a lab, one line: ``h1-h4 ping: min RTT 61.4 ms
    (expected 60, ok)``."""
    rows = []
    for v in measured.values:
        expected = "" if v["expected"] is None else f"expected {_number(v['expected'])}, "
        rows.append(f"{v['quantity']}: {_number(v['measured'])} {v['unit'] or ''}".rstrip()
                    + f" ({expected}{v['verdict']})")
    return rows or ["no measurement in the submission"]


def _number(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _measured(measured: MeasuredLab) -> List[str]:
    scale = ("" if measured.rate_scale == 1 else
             f"; every rate of the network × {measured.rate_scale:g}, and the key with it")
    return ([f"<h3>What the student measured ({html.escape(measured.case)}"
             f"{html.escape(scale)})</h3>", "<ul>"]
            + [f"<li>{html.escape(row)}</li>" for row in measured_rows(measured)] + ["</ul>"])


def render_page(student: str, described: str, keys: Iterable[QuestionKey],
                measured: Optional[Dict[str, MeasuredLab]] = None) -> str:
    """The page: a title, whose network it is (``described``), then each lab's keys (with
    what the student measured in it: ``measured``, lab -> their submission's values)."""
    body = [f"<h1>Answer key: {html.escape(student)}</h1>", f"<p>{html.escape(described)}</p>"]
    lab = None
    for key in keys:
        if key.question_id[:2] != lab:
            lab = key.question_id[:2]
            body.append(f"<h2>Lab {lab}</h2>")
            if measured and lab in measured:
                body.extend(_measured(measured[lab]))
        body.extend(_question(key))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>Answer key: {html.escape(student)}</title><style>{_STYLE}</style>"
            "</head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def write_page(folder: Path, student: str, described: str, keys: Iterable[QuestionKey],
               measured: Optional[Dict[str, MeasuredLab]] = None) -> Path:
    """Write ``student``'s page into ``folder`` (made if needed); its path."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / key_page_name(student)
        target.write_text(render_page(student, described, keys, measured), encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot write into {folder}: {err.strerror or err}") from None
    return target
