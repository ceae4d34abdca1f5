"""Compute it first: check a student's expected values and explain a wrong answer.

The student computes a value by hand (an RTT, a bottleneck, a goodput ceiling, a
bandwidth-delay product, a fair share) before measuring; :func:`check` compares it with the
kit's calculator (:mod:`labtools.model.expect`, :mod:`labtools.model.fairness`) and, when
it is wrong,
recognises common mistakes by recomputing the value each mistake produces.

Questions and their keyword arguments (units are in the names): ``rtt_ms`` (src, dst):
round-trip propagation time in ms; ``bottleneck_mbps`` (src, dst): smallest link rate on the
path, Mbit/s; ``tcp_goodput_ceiling_mbps`` (src, dst): most TCP payload the path carries,
Mbit/s; ``bdp_bytes`` (src, dst): bottleneck rate x RTT in bytes; ``max_rtt_ms`` (src,
dst): the worst RTT the links produce, every queue on the data's way full, ms;
``fair_share_mbps`` (flows, flow): max-min share of one flow, all its parallel connections
together, Mbit/s; ``udp_received_mbps`` (src, dst, offered_mbps): the UDP payload that
arrives when iperf offers that much payload, Mbit/s; ``window_rate_mbps`` (src, dst,
window_bytes): the most a TCP window carries over the path, Mbit/s;
``connection_window_bytes`` (flows, flow): the window one connection of a flow needs to keep
its fair share moving, bytes (:mod:`labtools.judge.window_solvers`).

``flows`` is a flow spec as ``labtools expect --flows`` takes it (``h1:h4x2,h2:h5``);
``flow`` is the flow's index (0-based) or its ``src:dst``.

Question ids, for :func:`grade` and the notebook widgets, are the question and its
arguments separated by spaces: ``"rtt_ms h1 h4"``, ``"fair_share_mbps h1:h4x2,h2:h5 h1:h4"``,
``"window_rate_mbps h1 h9 25000"``.

Grading is exact within :data:`REL_TOL` (relative) or :data:`ABS_TOL` (absolute), whichever
is larger. A wrong answer's message explains the mistake but does not give the number away;
the number is in :attr:`Feedback.expected`.

Where expected values are hidden (a student's lab, and always on a course: see
:attr:`labtools.settings.Settings.answers_hidden`) :func:`solve` refuses with
:data:`SOLVE_REFUSAL`, and :func:`check` and :func:`grade` still judge an answer but give
NaN for the expected value.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Collection, Dict, List, Mapping, Tuple

from labtools import settings
from labtools.errors import InputError
from labtools.judge import solvers, window_solvers
from labtools.judge.solvers import Mistake, Solution
from labtools.model.topology import Topology

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

REL_TOL = 0.005  #: 0.5 % of the expected value
ABS_TOL = 0.01  #: in the question's unit
_MAX_SUBSET_LINKS = 6  #: paths with more delayed links skip the per-subset RTT mistakes

#: why :func:`solve` refuses where expected values are hidden
SOLVE_REFUSAL = ("exercises.solve() is not available in a student's lab: the expected "
                 "values are what the labs ask you to compute (check your answer with "
                 "exercises.check or the notebook's checks)")

#: the message of a question left unanswered (None)
NO_ANSWER = "no answer yet"

#: columns of :func:`grade`
GRADE_COLUMNS = ["question", "answer", "expected", "unit", "correct", "mistake", "message"]


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer.

    Attributes:
        correct: the answer is within tolerance of the expected value.
        expected: the kit's value, in the question's unit.
        message: one or two sentences for the student (no number given away when wrong).
        mistake: code of the recognised mistake (``one_way``, ``sum``...), ``""`` if none.
    """

    correct: bool
    expected: float
    message: str
    mistake: str = ""



def close(value: float, target: float) -> bool:
    """True when ``value`` is within the grading tolerance of ``target``."""
    return abs(value - target) <= max(ABS_TOL, REL_TOL * abs(target))




@dataclass(frozen=True)
class Question:
    """A question of the registry: its solver and argument names."""

    solve: Callable[..., Solution]
    params: Tuple[str, ...]
    unit: str
    text: str  #: a template with the argument names, e.g. "RTT {src} → {dst} (ms)"


#: question name -> definition (explicit registry)
QUESTIONS: Dict[str, Question] = {
    "rtt_ms": Question(solvers.rtt, ("src", "dst"), "ms", "RTT {src} → {dst}"),
    "bottleneck_mbps": Question(solvers.bottleneck, ("src", "dst"), "Mbit/s",
                                "bottleneck rate {src} → {dst}"),
    "tcp_goodput_ceiling_mbps": Question(solvers.goodput, ("src", "dst"), "Mbit/s",
                                         "TCP goodput ceiling {src} → {dst}"),
    "bdp_bytes": Question(solvers.bdp, ("src", "dst"), "bytes",
                          "bandwidth-delay product {src} → {dst}"),
    "max_rtt_ms": Question(solvers.max_rtt, ("src", "dst"), "ms",
                           "worst RTT {src} → {dst} (every queue on the way full)"),
    "fair_share_mbps": Question(solvers.fair_share, ("flows", "flow"), "Mbit/s",
                                "fair share of flow {flow} in {flows}"),
    "udp_received_mbps": Question(window_solvers.udp_received, ("src", "dst", "offered_mbps"),
                                  "Mbit/s", "UDP payload {src} → {dst} receives when "
                                  "{offered_mbps} Mbit/s are offered"),
    "window_rate_mbps": Question(window_solvers.window_rate, ("src", "dst", "window_bytes"),
                                 "Mbit/s", "most a {window_bytes}-byte window carries "
                                 "{src} → {dst}"),
    "connection_window_bytes": Question(window_solvers.connection_window, ("flows", "flow"),
                                        "bytes", "window one connection of {flow} needs in "
                                        "{flows}"),
}


def _question(name: str, kw: Mapping[str, Any]) -> Question:
    if name not in QUESTIONS:
        raise InputError(f"unknown question {name!r}: choose one of {', '.join(QUESTIONS)}")
    q = QUESTIONS[name]
    missing = [p for p in q.params if p not in kw]
    extra = [k for k in kw if k not in q.params]
    if missing or extra:
        raise InputError(f"question {name} takes {', '.join(q.params)}"
                         + (f"; missing {', '.join(missing)}" if missing else "")
                         + (f"; unknown {', '.join(extra)}" if extra else ""))
    return q


def _number(answer: Any) -> float:
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        raise InputError(f"the answer must be a number, got {answer!r}")
    if not math.isfinite(answer):
        raise InputError(f"the answer must be a finite number, got {answer!r}")
    return float(answer)


def solve(question: str, topo: Topology, **kw: Any) -> Solution:
    """The expected value of ``question`` on ``topo`` and the mistakes it checks for.

    Raises:
        InputError: :data:`SOLVE_REFUSAL` where expected values are hidden (a student's
            lab, a course).
    """
    if settings.current().answers_hidden:
        raise InputError(SOLVE_REFUSAL)
    return _solve(question, topo, kw)


def _solve(question: str, topo: Topology, kw: Mapping[str, Any]) -> Solution:
    return _question(question, kw).solve(topo, **kw)


def _shown(expected: float) -> float:
    """``expected``, or NaN where expected values are hidden."""
    return math.nan if settings.current().answers_hidden else expected


def check(question: str, answer: float, topo: Topology, **kw: Any) -> Feedback:
    """Check a student's ``answer`` (in the question's unit) to ``question`` on ``topo``
    (the feedback's expected value is NaN where expected values are hidden).

    ``kw`` are the question's arguments (``src``/``dst`` or ``flows``/``flow``). Raises
    :class:`~labtools.errors.InputError` for an unknown question, missing arguments or an
    answer that is not a finite number."""
    value = _number(answer)
    sol = _solve(question, topo, kw)
    if close(value, sol.expected):
        return Feedback(True, _shown(sol.expected), f"correct: {value:g} {sol.unit}")
    found: List[Mistake] = []
    near = sorted((m for m in sol.mistakes if close(value, m.value)),
                  key=lambda m: abs(value - m.value))  # the nearest reading first
    for m in near:
        if not close(m.value, sol.expected) and all(m.explanation != f.explanation for f in found):
            found.append(m)
    if found:
        said = "; or ".join(m.explanation for m in found[:2])
        return Feedback(False, _shown(sol.expected), f"not quite: {said}.", found[0].code)
    return Feedback(False, _shown(sol.expected), f"not quite: {sol.hint}.")


# --- question ids and grading -----------------------------------------------------------
def parse_question_id(question_id: str) -> Tuple[str, Dict[str, Any]]:
    """``"rtt_ms h1 h4"`` -> ``("rtt_ms", {"src": "h1", "dst": "h4"})``; a flow given as
    digits becomes an index."""
    name, *args = str(question_id).split() or [""]
    if name not in QUESTIONS:
        raise InputError(f"unknown question {name!r} in {question_id!r}: choose one of "
                         f"{', '.join(QUESTIONS)}")
    params = QUESTIONS[name].params
    if len(args) != len(params):
        raise InputError(f"question id {question_id!r}: write '{name} {' '.join(params).upper()}'")
    kw: Dict[str, Any] = dict(zip(params, args))
    if "flow" in kw and kw["flow"].isdigit():
        kw["flow"] = int(kw["flow"])
    return name, kw


def question_text(question_id: str) -> str:
    """A readable label for a question id, e.g. ``RTT h1 → h4 (ms)``."""
    name, kw = parse_question_id(question_id)
    q = QUESTIONS[name]
    return f"{q.text.format(**kw)} ({q.unit})"


def grade(answers: Mapping[str, Any], topo: Topology,
          measured: Collection[str] = ()) -> "pd.DataFrame":
    """Grade ``{question id: answer}`` (see the module docstring), one row per question with
    :data:`GRADE_COLUMNS`. A missing (None) or non-numeric answer is graded wrong; a bad
    question id raises :class:`~labtools.errors.InputError` (that is the notebook's fault).

    Where expected values are hidden, a row's expected value is still shown once it is no
    secret: the answer is right, or the question's quantity is among ``measured`` (question
    ids; the measurement's verdict shows it anyway)."""
    import pandas as pd

    rows = []
    for question_id, answer in answers.items():
        name, kw = parse_question_id(question_id)
        sol = _solve(name, topo, kw)
        row = {"question": question_id, "answer": answer, "expected": _shown(sol.expected),
               "unit": sol.unit}
        if answer is None:
            row.update(correct=False, mistake="", message=NO_ANSWER)
        else:
            try:
                fb = check(name, answer, topo, **kw)
                row.update(correct=fb.correct, mistake=fb.mistake, message=fb.message)
            except InputError as err:
                row.update(correct=False, mistake="", message=str(err))
        if row["correct"] or question_id in measured:
            row["expected"] = sol.expected
        rows.append(row)
    return pd.DataFrame(rows, columns=GRADE_COLUMNS)
