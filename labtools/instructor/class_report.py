"""The class report: what a class measured, for the instructor, after a lab.

    labtools class-report course/submitted        # or course/autograded

reads every submission's results file (:mod:`labtools.instructor.class_data`) and writes into
an output folder (default: ``class-report`` in the course folder):

- ``measurements.csv``: every student's value of every measured quantity of every lab,
  with their expected value (the kit's calculation for their own variant), the ratio, the
  verdict and whether the submission's measurements were made on their own network;
- ``calibrations.csv``: each notebook's machine calibration, and whether that machine was
  too slow for the lab's links (it then measured itself, not the network);
- ``copies.csv``: pairs of submissions with identical raw measurements;
- ``submissions.csv``: one row per submission: its variant, what was read, why its
  measured checks fail (another variant, another student, an edited topology);
- ``answer-keys/answer-key-STUDENT.html``: each student's answer key, for their own
  variant (:mod:`labtools.instructor.answer_keys`), and ``index.html``, one row per submission
  linking it to its key (``submissions.csv`` names the page too);
- ``lab-CASE.png`` (measured / expected across the class, one per lab),
  ``verdicts.png`` (the share of each verdict per lab), ``calibrations.png``.

The plots name no student and leave out submissions not measured on their own network;
the tables and the printed summary name everyone. nbgrader's ``export`` stays the grade
table: this report grades nothing.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Tuple

import pandas as pd

from labtools.errors import InputError
from labtools.instructor import class_plots
from labtools.instructor.answer_key_page import key_page_name, write_page
from labtools.instructor.answer_keys import keys_for
from labtools.instructor.class_data import ClassData, Submission, collect

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

#: the default output folder, in the course folder (beside submitted/ and autograded/)
OUTPUT_FOLDER = "class-report"
SUBMISSION_COLUMNS = ["student", "assignment", "variant", "variant_from", "results",
                      "runs", "recorded_variants", "judged", "inconclusive_pct",
                      "not_their_own", "note", "answer_key"]
#: the folder of the students' answer keys, in the report's folder
KEYS_FOLDER = "answer-keys"
PNG_DPI = 150


def default_output(folder: Path) -> Path:
    """Where the report goes when no folder is given: ``class-report`` beside ``folder``."""
    return Path(folder).resolve().parent / OUTPUT_FOLDER


def submissions_table(data: ClassData) -> pd.DataFrame:
    """One row per submission (:data:`SUBMISSION_COLUMNS`): ``judged`` numbers and the
    share of them inconclusive (%); ``not_their_own`` holds the first reason grading
    gives, prefixed by how many notebooks have one."""
    rows = []
    table = data.measurements
    for sub in data.submissions:
        reasons = list(sub.problems.values())
        verdicts = table[(table["student"] == sub.student) &
                         (table["assignment"] == sub.assignment)]["verdict"]
        rows.append({
            "student": sub.student, "assignment": sub.assignment,
            "variant": sub.binding.variant, "variant_from": sub.binding.source,
            "results": str(sub.results) if sub.results else "", "runs": sub.runs,
            "recorded_variants": " ".join(sorted(v or "(none)" for v in sub.recorded_variants)),
            "judged": len(verdicts),
            "inconclusive_pct": (round(100.0 * float((verdicts == "inconclusive").mean()), 1)
                                 if len(verdicts) else None),
            "not_their_own": (f"{len(reasons)} notebook(s): {reasons[0]}" if reasons else ""),
            "note": sub.note, "answer_key": f"{KEYS_FOLDER}/{key_page_name(sub.student)}"})
    return pd.DataFrame(rows, columns=SUBMISSION_COLUMNS)


def write_report(data: ClassData, out: Path) -> List[Path]:
    """Write the tables and plots into ``out`` (created); return the files written."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create {out}: {err.strerror}") from None
    written = []
    submissions = submissions_table(data)
    for name, table in (("measurements.csv", data.measurements),
                        ("calibrations.csv", data.calibrations),
                        ("copies.csv", data.copies),
                        ("submissions.csv", submissions)):
        written.append(_csv(table, out / name))
    written += write_answer_keys(data, out)
    written.append(_index(submissions, out / "index.html"))
    own = data.measurements[~data.measurements["flagged"].astype(bool)]
    for lab in dict.fromkeys(data.measurements["case"]):
        part = own[own["case"] == lab]
        left_out = data.measurements[(data.measurements["case"] == lab)]["student"].nunique() \
            - part["student"].nunique()
        title = (f"Lab '{lab}': measured / expected, {part['student'].nunique()} students"
                 + (f"\n({left_out} left out: not measured on their own network)"
                    if left_out else ""))
        written.append(_png(class_plots.plot_class_lab(part, title), out / f"lab-{lab}.png"))
    if len(own):
        written.append(_png(class_plots.plot_verdict_shares(own), out / "verdicts.png"))
    if data.calibrations["forward_mbps"].notna().any():
        written.append(_png(class_plots.plot_calibrations(data.calibrations),
                            out / "calibrations.png"))
    return written


def write_answer_keys(data: ClassData, out: Path) -> List[Path]:
    """One answer-key page per student of the class, for their own variant, into
    ``out/answer-keys``; the pages written."""
    bindings = {sub.student: sub.binding for sub in data.submissions}
    return [write_page(out / KEYS_FOLDER, student, binding.describe(),
                       keys_for(binding.variant))
            for student, binding in sorted(bindings.items())]


def _index(submissions: pd.DataFrame, path: Path) -> Path:
    """``index.html``: one row per submission, its variant, its note, a link to its key."""
    rows = "\n".join(
        f"<tr><td>{html.escape(str(r.student))}</td><td>{html.escape(str(r.assignment))}</td>"
        f"<td>{html.escape(str(r.variant))}</td><td>{html.escape(str(r.note or ''))}</td>"
        f"<td><a href=\"{html.escape(str(r.answer_key))}\">answer key</a></td></tr>"
        for r in submissions.itertuples())
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>Class report</title></head><body>\n<h1>Submissions</h1>\n<table>\n"
            "<tr><th>student</th><th>assignment</th><th>variant</th><th>note</th>"
            f"<th>key</th></tr>\n{rows}\n</table>\n</body></html>\n")
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot write {path}: {err.strerror}") from None
    return path


def _csv(table: pd.DataFrame, path: Path) -> Path:
    try:
        table.to_csv(path, index=False)
    except OSError as err:
        raise InputError(f"cannot write {path}: {err.strerror}") from None
    return path


def _png(ax: "Axes", path: Path) -> Path:
    figure = ax.get_figure(root=True)
    if figure is None:  # pragma: no cover - every plot of the report is drawn on a figure
        raise InputError(f"cannot write {path}: the plot has no figure")
    try:
        figure.savefig(path, dpi=PNG_DPI)
    except OSError as err:
        raise InputError(f"cannot write {path}: {err.strerror}") from None
    return path


def summary_lines(data: ClassData) -> List[str]:
    """The printed summary: submissions, who did not measure their own network, copies,
    slow machines, and per lab each quantity's measured / expected over the class."""
    subs = data.submissions
    read = [s for s in subs if s.results and not s.note]
    lines = [f"class report of {data.folder}: {len(subs)} submission(s), {len(read)} with a "
             f"results file" + (f"; variants from {data.variants_file}"
                                if data.variants_file else "; each student's variant is "
                                "their student id")]
    lines += [f"  {_who(s)}: {s.note}" for s in subs if s.note]
    foreign = [s for s in subs if s.problems]
    if foreign:
        lines.append("not measured on their own network (their measured checks fail):")
        for s in foreign:
            case, reason = next(iter(s.problems.items()))
            lines.append(f"  {s.student} ({s.assignment}): {len(s.problems)} notebook(s) "
                         f"({', '.join(s.problems)}); {case}: {reason.split(': ', 1)[-1]}")
    lines += _copy_lines(data)
    lines += _machine_lines(data)
    lines += _lab_lines(data)
    return lines


def _who(sub: Submission) -> str:
    """``student (assignment)``, or the student alone where no assignment was read."""
    return f"{sub.student} ({sub.assignment})" if sub.assignment else sub.student


def _copy_lines(data: ClassData) -> List[str]:
    """The summary's lines on pairs of submissions with identical raw measurements."""
    if not len(data.copies):
        return ["identical raw measurements: none"]
    lines = ["identical raw measurements (no two real runs print the same output):"]
    for row in data.copies.itertuples():
        what = ("lab partners (one variant by the course's list)" if row.partners
                else "a copy")
        lines.append(f"  {row.student_a} ({row.assignment_a}) and {row.student_b} "
                     f"({row.assignment_b}): {row.identical_runs} identical of "
                     f"{row.runs_a} and {row.runs_b} runs: {what}")
    return lines


def _machine_lines(data: ClassData) -> List[str]:
    """The summary's lines on the students' machines: how many were calibrated, and those
    too slow for a lab's links."""
    table = data.calibrations
    known = table[table["forward_mbps"].notna()]
    slow = known[known["too_slow"].fillna(False).astype(bool)]
    lines = [f"machines: {known['student'].nunique()} student(s) calibrated, "
             f"{table['student'].nunique() - known['student'].nunique()} without a "
             f"calibration; too slow for a lab's links: {slow['student'].nunique() or 'none'}"]
    for (student, assignment), part in slow.groupby(["student", "assignment"]):
        labs = ", ".join(part["case"])
        worst = part.sort_values("forward_mbps").iloc[0]
        lines.append(f"  {student} ({assignment}): {worst['emulation']} forwards "
                     f"{worst['forward_mbps']:.0f} Mbit/s, the links carry "
                     f"{worst['peak_load_mbps']:.0f} at once: {labs}")
    return lines


def _lab_lines(data: ClassData) -> List[str]:
    """The summary's lines per lab: measured / expected across the class, and the verdicts."""
    table = data.measurements
    own = table[~table["flagged"].astype(bool)]
    lines = ["per lab, on each student's own network: measured / expected, median (min-max) "
             "over the class, and the verdicts"]
    for lab in dict.fromkeys(table["case"]):
        part = own[own["case"] == lab]
        share = 100.0 * float((part["verdict"] == "inconclusive").mean()) if len(part) else 0.0
        lines.append(f"  {lab}: {part['student'].nunique()} student(s); inconclusive "
                     f"{share:.0f}% of {len(part)} judged numbers")
        heading = None
        for quantity in class_plots.quantity_order(part) if len(part) else []:
            rows = part[part["quantity"] == quantity]
            if rows["measurement"].iloc[0] != heading:
                heading = rows["measurement"].iloc[0]
                lines.append(f"    {heading}")
            lines.append(f"      {rows['metric'].iloc[0]:<40.40} {_ratio_text(rows['ratio'])}"
                         f"  {_verdict_counts(rows['verdict'])}")
    return lines


def _ratio_text(ratios: pd.Series) -> str:
    values = ratios.dropna()
    if not len(values):
        return f"{'-':>21}"
    return f"{values.median():6.3f} ({values.min():.3f}-{values.max():.3f})"


def _verdict_counts(verdicts: pd.Series) -> str:
    counts = verdicts.value_counts()
    return " ".join(f"{v} {int(counts[v])}" for v in class_plots.VERDICTS if v in counts)


def make_report(folder: Path, out: Optional[Path] = None,
                variants_file: Optional[Path] = None
                ) -> Tuple[ClassData, List[Path], List[str]]:
    """Collect ``folder``, write the report into ``out`` (default :func:`default_output`);
    return the data, the files written and the summary lines."""
    data = collect(Path(folder), variants_file)
    written = write_report(data, out or default_output(folder))
    return data, written, summary_lines(data)
