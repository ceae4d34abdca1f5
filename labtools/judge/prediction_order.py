"""Predict, then measure: was a compute-it-first answer on record before its measurement?

A lab asks a student to compute a value (``"rtt_ms r1 r2"``, see
:mod:`labtools.judge.exercises`) before measuring it. The answers a student checks are kept
with their time (:mod:`labtools.results.predictions`); the lab's measurements are kept with
theirs, each with its probe call (:class:`~labtools.judge.measurement.ProbeCall`). A
prediction counts when a right answer was recorded before the first measurement of that
quantity, or when the quantity has not been measured yet.

Which calls measure which quantity (:func:`measures`), the pair of nodes in either order:

- ``rtt_ms``, ``max_rtt_ms``: a ping between the two nodes (alone or under load);
- ``bottleneck_mbps``, ``tcp_goodput_ceiling_mbps``: a rate test between them (iperf3,
  simpleperf, iperf's UDP, a capacity search) with no window set;
- ``bdp_bytes``: a TCP test between them with a window set (the window experiments are
  where the bandwidth-delay product shows);
- ``window_rate_mbps``: a TCP test between them with that window;
- ``udp_received_mbps``: iperf's UDP between them;
- ``fair_share_mbps``, ``connection_window_bytes``: the concurrent flows of the question.

A measurement counts whatever made it: a probe call of any notebook, a command typed by
hand (``run_on``, ``labtools shell``; :mod:`labtools.judge.typed_commands`). Which ones
the caller passes is its choice (:mod:`labtools.teach.predict_first`).

Pure: the callers pass the times and calls they read from the results store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple

from labtools.judge.exercises import parse_question_id

#: probes that measure a round-trip time
RTT_PROBES = frozenset({"ping", "ping_under_load"})
#: probes that measure a rate between two nodes
RATE_PROBES = frozenset({"iperf3", "simpleperf", "iperf_udp", "capacity_search"})


@dataclass(frozen=True)
class MeasuredCall:
    """A measurement and when it started (aware UTC): a probe call, or a command typed by
    hand read as one (:mod:`labtools.judge.typed_commands`); ``source`` says what made it
    when it is not the notebook's own probe call (``run_on on h1 in notebook intro``)."""

    probe: str
    args: Mapping[str, Any]
    started_at: datetime
    source: str = ""


@dataclass(frozen=True)
class OnRecord:
    """Whether a question's prediction counts (``on_record``), and why in one line."""

    on_record: bool
    reason: str


def _pair(args: Mapping[str, Any]) -> frozenset:
    return frozenset({str(args.get("src", "")), str(args.get("dst", ""))})


def _flows(text: Any) -> str:
    return ",".join(part.strip() for part in str(text).split(","))


def _window(args: Mapping[str, Any]) -> Optional[int]:
    value = args.get("window_bytes")
    return None if value is None else int(value)


def _rules(kw: Mapping[str, Any]) -> Dict[str, Callable[[MeasuredCall], bool]]:
    """One test per question name: does ``call`` measure that quantity (``kw`` are the
    question's arguments)?"""
    pair = frozenset({str(kw.get("src", "")), str(kw.get("dst", ""))})

    def on_pair(call: MeasuredCall) -> bool:
        return _pair(call.args) == pair

    def rtt(call: MeasuredCall) -> bool:
        return call.probe in RTT_PROBES and on_pair(call)

    def rate(call: MeasuredCall) -> bool:
        return call.probe in RATE_PROBES and on_pair(call) and _window(call.args) is None

    def windowed(call: MeasuredCall) -> bool:
        return call.probe == "iperf3" and on_pair(call) and _window(call.args) is not None

    def window_rate(call: MeasuredCall) -> bool:
        return windowed(call) and _window(call.args) == int(kw.get("window_bytes", -1))

    def udp(call: MeasuredCall) -> bool:
        return call.probe == "iperf_udp" and on_pair(call)

    def flows(call: MeasuredCall) -> bool:
        return (call.probe == "concurrent_iperf3"
                and _flows(call.args.get("flows")) == _flows(kw.get("flows")))

    return {"rtt_ms": rtt, "max_rtt_ms": rtt, "bottleneck_mbps": rate,
            "tcp_goodput_ceiling_mbps": rate, "bdp_bytes": windowed,
            "window_rate_mbps": window_rate, "udp_received_mbps": udp,
            "fair_share_mbps": flows, "connection_window_bytes": flows}


def measures(question_id: str, call: MeasuredCall) -> bool:
    """Whether ``call`` measured the quantity ``question_id`` asks for (module docstring).

    Raises:
        InputError: a question id :mod:`labtools.judge.exercises` does not know.
    """
    name, kw = parse_question_id(question_id)
    rule = _rules(kw).get(name)
    return rule is not None and rule(call)


def first_call(question_id: str, calls: Iterable[MeasuredCall]) -> Optional[MeasuredCall]:
    """The first measurement of the quantity among ``calls``; None when it was not."""
    found = [c for c in calls if measures(question_id, c)]
    return min(found, key=lambda c: c.started_at) if found else None


def first_measured(question_id: str, calls: Iterable[MeasuredCall]) -> Optional[datetime]:
    """When the quantity was first measured among ``calls``; None when it was not."""
    call = first_call(question_id, calls)
    return None if call is None else call.started_at


def judge_record(question_id: str, answers: Sequence[Tuple[datetime, bool]],
                 calls: Iterable[MeasuredCall], refused: Sequence[str] = ()) -> OnRecord:
    """Whether ``question_id``'s prediction counts: ``answers`` are the checked answers on
    record for it (their time, whether right on the student's network), ``calls`` every
    measurement of the lab's network; ``refused`` the one-line reasons of the records that
    earn nothing (:mod:`labtools.judge.answer_record`), the first of which is the reason
    when no right answer is left."""
    first = first_call(question_id, calls)
    right = sorted(t for t, correct in answers if correct)
    if not right and refused:
        return OnRecord(False, refused[0])
    if not answers:
        return OnRecord(False, f"{question_id}: no checked answer on record (check your "
                               "answers in the lab, before measuring)")
    if not right:
        return OnRecord(False, f"{question_id}: no right answer on record")
    if first is None:
        return OnRecord(True, f"{question_id}: right at {_clock(right[0])}, not measured yet")
    measured = _clock(first.started_at) + (f", {first.source}" if first.source else "")
    if right[0] < first.started_at:
        return OnRecord(True, f"{question_id}: right at {_clock(right[0])}, before the "
                              f"measurement at {measured}")
    return OnRecord(False, f"{question_id}: the first right answer ({_clock(right[0])}) came "
                           f"after the measurement ({measured}): predict first")


def _clock(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")
