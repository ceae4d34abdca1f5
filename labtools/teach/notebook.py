"""What a lab notebook calls: its one setup call, and its checks of the network.

    from labtools.teach.notebook import open_lab, check_network
    lab = open_lab("path")      # quick mode, durations, results file, stop on exit
    lab.start()                 # the network (and this machine's calibration)

:func:`open_lab` reads the notebook's settings from one place, :mod:`labtools.settings`
(the environment; for the variant, also a file beside the notebook):

- ``LABTOOLS_QUICK=1``: the short durations CI uses (:func:`labtools.judge.policy.durations`);
- ``LABTOOLS_VARIANT`` or a file ``labtools-variant.txt``: the student's variant of the
  topology (``portfolio,variant=ID``, see :mod:`labtools.model.variants`); on JupyterHub
  the user's name (nbgrader's student id, which grading binds the variant to) by default;
- ``NBGRADER_EXECUTION`` (set by nbgrader while it grades or validates): no network, the
  student's recorded measurements are replayed (:mod:`labtools.lab.replay`);
- ``LABTOOLS_RATE_SCALE``: run the lab with every link rate scaled by this factor, for a
  machine too slow for the lab's rates (``auto``: the factor the last calibration of this
  machine suggests; see :mod:`labtools.model.scaling`);
- ``LABTOOLS_SHOW_ANSWERS=1``: self-study, or an instructor's demonstration: a wrong
  compute-it-first answer is shown beside the expected value. Otherwise (graded work) a
  wrong answer gets its explanation but never the number.
- ``LABTOOLS_MODE``: ``student`` (what the student's lab launchers set: ``make lab``, the
  lab VM's service) or ``instructor`` (the default). In student mode ``lab.expected()``
  refuses (the labs ask the student to compute those values; a measurement's own verdicts
  show them once it is made), and so does ``labtools expect``.

Measurements go to ``results/labtools.sqlite`` in the notebook's own folder (the folder
nbgrader collects), and the network stops when the notebook's kernel exits, whatever
happens. From :func:`open_lab` on, a kit error or a failed check shows as its one line
(:mod:`labtools.teach.kit_errors`) and a table shows its texts whole (a verdict's reason).

:func:`describe` prints the student's own network once it is up: its nodes and a table of
its shaped links (rate, one-way delay, queue limit): every value the compute-it-first
questions give, before they are asked, and nothing computed from them.

:func:`check_network` is how a notebook reports on the network rather than the student: it
shows the kit's verdicts and says when a result is one the network cannot produce
(``invalid``). It never fails: what the network and the machine did is reported, not
graded (a graded cell grades what the student can influence).
"""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Union

from labtools import settings
from labtools.errors import InputError
from labtools.judge import policy
from labtools.lab.replay import ReplaySession
from labtools.lab.session import LabSession
from labtools.model.choice import TopologyChoice, choose
from labtools.model.json_topology import VARIANT, variant_of
from labtools.teach.grading_figures import draw_no_figures
from labtools.teach.modes import (  # noqa: F401 - the notebooks' one import place
    MODE_VARIABLE,
    SHOW_ANSWERS_VARIABLE,
    STUDENT_MODE_REFUSAL,
    answers_hidden,
    show_answers,
    student_mode,
)
from labtools.teach.predict_first import (  # noqa: F401 - the notebooks' one import place
    RECORD_COLUMNS,
    AnswerFeedback,
    assert_predicted_first,
    checked_answers,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from labtools.model.topology import Topology

#: verdicts on a sender's own count (flagged when above the path, not a network fault)
SENDER_METRICS = ("sender_rate",)
#: where a notebook keeps its measurements, relative to its own folder
RESULTS_FILE = "results/labtools.sqlite"
QUICK_VARIABLE = "LABTOOLS_QUICK"
VARIANT_VARIABLE = "LABTOOLS_VARIANT"
RATE_SCALE_VARIABLE = "LABTOOLS_RATE_SCALE"
#: a file beside the notebook whose first line is the student's variant
VARIANT_FILE = "labtools-variant.txt"


def quick_mode() -> bool:
    """True when ``LABTOOLS_QUICK=1`` asks for the short durations (CI)."""
    return settings.current().quick


def variant() -> str:
    """The student's variant: ``$LABTOOLS_VARIANT``, else the first line of
    ``labtools-variant.txt`` in the notebook's folder, else the JupyterHub user's name,
    else '' (the reference values); an id a topology cannot take (``o'neil``) in the form
    grading binds it to (:func:`labtools.model.json_topology.variant_of`)."""

    chosen = settings.current().variant
    if not chosen and Path(VARIANT_FILE).is_file():
        lines = Path(VARIANT_FILE).read_text(encoding="utf-8").strip().splitlines()
        chosen = lines[0].strip() if lines else ""
    chosen = (chosen or settings.current().hub_user or "").strip()
    # the form grading binds the same id to (an id a topology cannot take is mapped)
    return variant_of(chosen) if chosen else ""


def grading() -> bool:
    """True while nbgrader executes the notebook (autograde or validate)."""
    return bool(settings.current().grading)


class StudentLabSession(LabSession):
    """A student's lab: the same network and probes, but :meth:`expected` refuses (see
    :data:`STUDENT_MODE_REFUSAL`)."""

    def expected(self, src: str, dst: str) -> Any:
        """Refused in student mode: :class:`InputError`."""
        raise InputError(f"lab.expected({src!r}, {dst!r}): {STUDENT_MODE_REFUSAL}")


def grade_answers(lab: Union[LabSession, ReplaySession],
                  answers: Dict[str, Any]) -> AnswerFeedback:
    """Check compute-it-first answers on the lab's topology (the student's variant
    included) and keep them on record with their time: one row per question with the
    answer, whether it is right, what was probably forgotten, and whether the prediction
    came before its measurement (``on_record``, why in ``record``; see
    :mod:`labtools.teach.predict_first`). The expected value is shown in self-study mode,
    and in graded work once the answer is right or the quantity measured. Displayed, the
    table reads as one sentence per answer (:class:`AnswerFeedback`)."""
    table = checked_answers(lab, answers)
    return AnswerFeedback(
        table[["question", "answer", "expected", "correct", "message", *RECORD_COLUMNS]])


def machine_report(lab: Union[LabSession, ReplaySession]) -> str:
    """``labtools doctor``'s report on this machine; when grading, what the student's
    machine was (its calibration), since the grader's machine is not the one measured."""
    if lab.replaying:
        machine = lab.machine
        return ("grading: the machine check ran on the student's machine; " +
                (machine.describe() if machine is not None else "no calibration recorded"))
    from labtools.lab.calibration import calibration_lines
    from labtools.system.doctor import collect_checks, format_line, verdict

    checks = collect_checks()
    return "\n".join([*(format_line(c) for c in checks), verdict(checks),
                      *calibration_lines(lab.topo)])


def rate_scale_setting(choice: TopologyChoice) -> float:
    """The rate scale ``LABTOOLS_RATE_SCALE`` asks for (1.0 when unset): a number, or
    ``auto`` for what this machine's last calibration suggests for ``choice``'s topology."""
    from labtools.model.scaling import check_scale

    chosen = settings.current()
    if chosen.rate_scale_auto:
        from labtools.lab.calibration import last_calibration
        from labtools.model.scaling import suggested_rate_scale

        machine = last_calibration()
        return suggested_rate_scale(choice.build(),
                                    machine.forward_mbps if machine else None,
                                    policy.CAPACITY_HEADROOM)
    return 1.0 if chosen.rate_scale is None else check_scale(chosen.rate_scale)


def show_whole_texts() -> None:
    """Tables in this notebook show each text whole: pandas cuts a cell at 50 characters by
    default, and a verdict's reason (``verdicts_table``, :func:`verdict_table`) is a
    sentence the student must read to the end (a long one wraps in JupyterLab's table)."""
    import pandas as pd

    pd.set_option("display.max_colwidth", None)


def lab_topology(topology: Union[str, TopologyChoice] = "portfolio") -> TopologyChoice:
    """The topology a notebook's lab is built on: ``topology`` (the notebook's spec, or a
    choice) on the student's :func:`variant`, with the rate scale of
    :func:`rate_scale_setting` when it slows the lab down."""
    choice = choose(topology)
    mine = variant()
    if mine:
        choice = choice.with_variant(mine)
    factor = rate_scale_setting(choice)
    return choice.with_rate_scale(factor) if factor < 1.0 else choice


def open_lab(case: str, topology: Union[str, TopologyChoice] = "portfolio"
             ) -> Union[LabSession, ReplaySession]:
    """The lab of one notebook, not started yet (``lab.start()`` builds the network).

    Args:
        case: what the notebook measures (``intro``, ``udp``, ``link``, ``path``, ``mux``,
            ``parallel``, ``pitfalls``); saved with every measurement.
        topology: the topology (a spec such as ``dumbbell,pairs=4``, or a
            :class:`~labtools.model.choice.TopologyChoice`; the reference topology by
            default); the student's variant and the rate scale are added to it once
            (:func:`lab_topology`), and the lab keeps the result as ``lab.choice``.
    """
    from labtools.teach import kit_errors

    kit_errors.install()  # from here on, a kit error or a failed check shows as one line
    show_whole_texts()  # a verdict's reason whole, never cut with "..."
    choice = lab_topology(topology)
    durations = policy.durations(quick_mode())
    if grading():
        if settings.current().grading == "autograde":
            draw_no_figures()  # nobody sees them while grading
        return ReplaySession(choice, RESULTS_FILE, case, durations)
    kind = StudentLabSession if answers_hidden() else LabSession
    lab = kind(choice, results=RESULTS_FILE, case=case, durations=durations)
    atexit.register(lab.stop)  # the network also stops if the notebook ends early
    return lab


#: what a judged result that ran no single tool is called in :func:`check_network`'s lines
RESULT_NAMES = {"FlowsMeasurement": "flows together", "CapacitySearch": "capacity search"}


def _verdicts(results: Iterable[Any]) -> List[Any]:
    rows = []
    for result in results:
        label = getattr(result, "src", "") and f"{result.src}-{result.dst} "
        one = getattr(result, "median_run", result)  # a repeated measurement: its runs' kind
        kind = type(one).__name__
        tool = getattr(result, "tool", "") or RESULT_NAMES.get(kind, kind)
        rows += [(f"{label}{tool}", v) for v in result.verdicts]
    return rows


#: the last line :func:`check_network` prints starts with this, then the network's verdict
NETWORK_LINE = "the network:"


def check_network(*results: Any) -> str:
    """Report measurements (or sets of flows, or a capacity search) against the physics.

    Prints one line per verdict, then one line that starts with :data:`NETWORK_LINE`: the
    worst verdict about the network, naming the first ``invalid`` one (a result the network
    cannot produce). A sender's own count above what the path carries is not held against
    the network (that is the sender counting its socket buffer, the pitfall the flag
    teaches), but the line says it was flagged, so that it never reads "ok" alone under an
    ``INVALID`` line. Returns the worst verdict about the network. It reports on the
    network and the machine, never on the student: it does not fail."""
    rows = _verdicts(results)
    for what, v in rows:
        print(f"{v.verdict.upper():<13} {what}: {v.metric}: {v.reason}")
    network = [(what, v) for what, v in rows if v.metric not in SENDER_METRICS]
    worst = policy.worst([v.verdict for _, v in network])
    bad = [(what, v) for what, v in network if v.verdict == policy.INVALID]
    line = f"{NETWORK_LINE} {worst}"
    if bad:
        what, v = bad[0]
        line += f": {what}: {v.metric} is a result the network cannot produce"
    flagged = [(what, v) for what, v in rows
               if v.metric in SENDER_METRICS and v.verdict != policy.OK]
    if flagged:
        what, v = flagged[0]
        line += (f"; {what}: {v.metric} {v.verdict}: it counts what the sender handed "
                 "its socket, not what the network carried")
    print(f"{line} (reported, not graded)")
    return worst


def verdict_table(*results: Any) -> "pd.DataFrame":
    """The verdicts of several results in one table, each metric named after its result
    (``h1-h4 iperf3 receiver_rate``), ready for ``plots.plot_expected_vs_measured``."""
    import pandas as pd

    from labtools.judge.verdicts import COMPARE_COLUMNS, compare

    frames = []
    for what, v in _verdicts(results):
        row = compare([v])
        row["metric"] = f"{what}: {v.metric}"
        frames.append(row)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COMPARE_COLUMNS)


def _given(value: Optional[float]) -> str:
    return "no limit" if value is None else f"{value:g}"


def links_table(topo: "Topology") -> str:
    """The shaped links of ``topo`` as a text table, one row per link: its name, the nodes
    it joins, its rate (Mbit/s), one-way delay (ms) and queue limit (packets), and its
    random loss (%) when a link has some. Only what the network is built from (the givens
    of the compute-it-first questions), never what is computed from it."""
    links = [link for link in topo.links if link.shaped]
    if not links:
        return "no shaped link: every link is unshaped (no rate limit, no delay)"
    lossy = any(link.loss_pct for link in links)
    header = ["link", "between", "rate (Mbit/s)", "one-way delay (ms)", "queue (packets)"]
    header += ["loss (%)"] if lossy else []
    rows = [[link.label, f"{link.a}-{link.b}", _given(link.bw_mbps), f"{link.delay_ms:g}",
             _given(link.queue_pkts)] + ([f"{link.loss_pct:g}"] if lossy else [])
            for link in links]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
             for row in [header, *rows]]
    variant = topo.params.get(VARIANT)
    whose = f"your network (variant {variant})" if variant else "this network"
    rest = len(topo.links) - len(links)
    tail = [f"the other {rest} links are unshaped: no rate limit, no delay"] if rest else []
    return "\n".join([f"{whose}: its shaped links", *lines, *tail])


def describe(lab: Union[LabSession, Any]) -> str:
    """A started lab in a few lines: its nodes, its shaped links (:func:`links_table`: the
    values the compute-it-first questions give, from the student's own network) and what
    this machine adds and carries."""
    from labtools.model.scaling import rate_note

    topo = lab.topo
    line = f"network up: {', '.join(topo.hosts + topo.routers)}\n{links_table(topo)}"
    if rate_note(topo):
        line += f"\n{rate_note(topo)}"
    machine = getattr(lab, "machine", None)
    if machine is not None:
        line += f"\n{machine.describe()}"
    return line
