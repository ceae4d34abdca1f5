"""A class's results files read together: every student's measured values judged against
their own variant, the machines they measured on, and submissions that are copies.

:func:`collect` reads nbgrader's ``submitted/`` or ``autograded/`` folder (one
``STUDENT/ASSIGNMENT/results/labtools.sqlite`` per submission). Each student is bound to a
variant as grading binds them (:mod:`labtools.results.ownership`: their student id, or the
course's ``labtools-variants.csv``), and each recorded measurement is judged again from its
raw output on the student's own topology, so its expected value is the kit's calculation
for that student's network, whatever the file says it was measured on. The measurements a
notebook's grading replays are the ones read: per notebook, the latest lab session's probe
calls, and earlier sessions' calls the latest one did not make again.

Raw measurements that are the same, byte for byte, in two submissions are a copy (no two
runs of a real tool print the same output: times, ports and sequence numbers differ),
unless the course's list binds both students to one variant (lab partners).

One bad submission never ends the report: a results file that cannot be read (not a
results store, a row tampered with) is a note on that submission, naming the file and why.
Nothing is read through a symbolic link: a student's or an assignment's folder, a results
folder or file (or a journal beside it) that is one, or a results file that lies outside
the folder read, is skipped with a note naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Set, Tuple

import pandas as pd

from labtools.errors import InputError, LabtoolsError, StoreError
from labtools.judge.machine import MachineProfile
from labtools.judge.policy import CAPACITY_HEADROOM
from labtools.judge.verdicts import Verdict
from labtools.lab.replay import RecordedCall, recorded_calls
from labtools.model.catalog import from_dict, to_dict
from labtools.model.choice import TopologyChoice
from labtools.model.json_topology import VARIANT
from labtools.model.scaling import peak_load_mbps, rate_scale, suggested_rate_scale
from labtools.model.topology import Topology
from labtools.results import ownership
from labtools.results.columns import decode_json
from labtools.results.rebuild import rebuild_group, rebuild_measurement
from labtools.results.store import DEFAULT_PATH, ResultStore

#: one row per verdict of each student's measurement (see :func:`collect`)
MEASUREMENT_COLUMNS = ["student", "assignment", "variant", "recorded_variant", "case",
                      "quantity", "measurement", "metric", "unit", "measured", "expected",
                      "ratio", "verdict", "reason", "flagged", "step", "probe", "pair", "call",
                      "occurrence", "source"]
CALIBRATION_COLUMNS = ["student", "assignment", "case", "emulation", "forward_mbps",
                       "unshaped_link_ms", "delayed_link_late_ms", "measured_at",
                       "peak_load_mbps", "rate_scale", "needed_mbps", "too_slow"]
#: what sqlite reads beside a results file (its journals), never through a symbolic link
SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")
#: what reading a tampered results file raises beyond the store's own checks (a call or a
#: topology that is JSON of another shape): the submission gets a note, the report goes on
UNREADABLE = (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError)
COPY_COLUMNS = ["student_a", "assignment_a", "student_b", "assignment_b", "identical_runs",
                "runs_a", "runs_b", "partners"]


@dataclass
class Submission:
    """One student's submission of one assignment.

    Attributes:
        problems: notebook (case) -> why its measurements are not the student's own
            (the one line grading gives), for the notebooks that have one.
        note: why nothing was read ('' when the results file was read).
        digests: SHA-256 of each successful run's raw output.
    """

    student: str
    assignment: str
    folder: Path
    binding: ownership.Binding
    results: Optional[Path] = None
    problems: Dict[str, str] = field(default_factory=dict)
    note: str = ""
    digests: Set[str] = field(default_factory=set)
    runs: int = 0
    recorded_variants: Set[str] = field(default_factory=set)


@dataclass
class ClassData:
    """What :func:`collect` read: the submissions and three tables (columns
    :data:`MEASUREMENT_COLUMNS`, :data:`CALIBRATION_COLUMNS`, :data:`COPY_COLUMNS`)."""

    folder: Path
    submissions: List[Submission]
    measurements: pd.DataFrame
    calibrations: pd.DataFrame
    copies: pd.DataFrame
    variants_file: Optional[Path] = None


class Place(NamedTuple):
    """A submission folder :func:`find_submissions` found: ``skipped`` says why it is not
    read ('' when it is); a student folder skipped has no ``assignment``."""

    student: str
    assignment: str
    folder: Path
    skipped: str = ""


def find_submissions(folder: Path) -> List[Place]:
    """Every ``FOLDER/STUDENT/ASSIGNMENT`` folder. Nothing is read through a symbolic link:
    a student or assignment folder that is one is listed, skipped, with a note naming it.

    Raises:
        InputError: ``folder`` is not a folder, is the course folder itself, or holds no
            submission folders.
    """
    if not folder.is_dir():
        raise InputError(f"{folder} is not a folder: give nbgrader's submitted/ or "
                         "autograded/ folder")
    if (folder / "nbgrader_config.py").is_file() or (folder / "submitted").is_dir():
        raise InputError(f"{folder} is a course folder: give its submitted/ or autograded/ "
                         "folder")
    found: List[Place] = []
    for student in _entries(folder):
        if student.is_symlink():
            found.append(Place(student.name, "", student, _link_note(student)))
            continue
        found += [Place(student.name, assignment.name, assignment,
                        _link_note(assignment) if assignment.is_symlink() else "")
                  for assignment in _entries(student)]
    if not found:
        raise InputError(f"no submissions in {folder}: give nbgrader's submitted/ or "
                         "autograded/ folder (STUDENT/ASSIGNMENT/results/labtools.sqlite)")
    return found


def _entries(folder: Path) -> List[Path]:
    """The folders in ``folder`` (and the symbolic links, which are never followed), by
    name; hidden ones left out."""
    return [p for p in sorted(folder.iterdir()) if not p.name.startswith(".")
            and (p.is_symlink() or p.is_dir())]


def _link_note(path: Path) -> str:
    """The note on a submission skipped because ``path`` is a symbolic link."""
    try:
        target = os.readlink(path)
    except OSError as err:
        target = f"? ({err.strerror})"
    return f"{path} is a symbolic link (to {target}): skipped (nothing is read through a link)"


def _results_file(place: Path, inside: Path) -> Tuple[Optional[Path], str]:
    """The submission's results file, or None and why it is not read: there is none, or it
    (its folder, or a journal sqlite would read beside it) is a symbolic link or lies
    outside ``inside`` (the folder read, resolved)."""
    results = place / DEFAULT_PATH
    folder = place / DEFAULT_PATH.parent
    sidecars = [results.with_name(results.name + tail) for tail in SQLITE_SIDE_FILES]
    for path in (folder, results, *sidecars):
        if path.is_symlink():
            return None, _link_note(path)
    if not results.is_file():
        return None, f"no results file ({DEFAULT_PATH})"
    if inside not in results.resolve().parents:
        return None, f"{results} lies outside {inside}: not read"
    return results, ""


def collect(folder: Path, variants_file: Optional[Path] = None,
            students: Optional[Set[str]] = None) -> ClassData:
    """Read every submission in ``folder`` (see the module docstring), or only those of
    ``students``. The course's variant list is ``variants_file``, else
    ``labtools-variants.csv`` beside ``folder`` (in the course folder), else every
    student's variant is their id."""
    folder = Path(folder)
    if variants_file is None and (folder.parent / ownership.VARIANTS_FILE).is_file():
        variants_file = folder.parent / ownership.VARIANTS_FILE
    variants = ownership.read_variant_list(variants_file) if variants_file else {}
    submissions: List[Submission] = []
    rows: List[Dict[str, Any]] = []
    calibrations: List[Dict[str, Any]] = []
    inside = folder.resolve()
    for student, assignment, place, skipped in find_submissions(folder):
        if students is not None and student not in students:
            continue
        sub = Submission(student, assignment, place, ownership.bind(student, variants))
        submissions.append(sub)
        results, sub.note = (None, skipped) if skipped else _results_file(place, inside)
        if results is None:
            continue
        sub.results = results
        mine: Tuple[List[Dict[str, Any]], List[Dict[str, Any]]] = ([], [])
        try:
            _read(ResultStore(results, create=False), sub, *mine)
        except LabtoolsError as err:
            submissions[-1] = _unread(sub, str(err))
        except UNREADABLE as err:  # a tampered row the store's checks do not cover
            submissions[-1] = _unread(sub, f"{results}: {type(err).__name__}: {err}")
        else:
            rows += mine[0]
            calibrations += mine[1]
    measurements = pd.DataFrame(rows, columns=MEASUREMENT_COLUMNS)
    _name_quantities(measurements)
    return ClassData(folder, submissions, measurements,
                     pd.DataFrame(calibrations, columns=CALIBRATION_COLUMNS),
                     _copies(submissions), variants_file)


def _unread(sub: Submission, reason: str) -> Submission:
    """``sub`` as a submission whose results file could not be read: nothing of it counts,
    its note says why (one line)."""
    line = " ".join(reason.split())
    if str(sub.results) not in line:
        line = f"{sub.results}: {line}"
    return Submission(sub.student, sub.assignment, sub.folder, sub.binding, sub.results,
                      note=f"results file not readable: {line}")


def _read(store: ResultStore, sub: Submission, rows: List[Dict[str, Any]],
          calibrations: List[Dict[str, Any]]) -> None:
    """Read one results file into ``sub`` and the tables."""
    for run in store.successful_runs():
        where = f"{store.path}: runs row {run['id']}"
        sub.runs += 1
        if run["raw_output"]:
            sub.digests.add(hashlib.sha256(str(run["raw_output"]).encode()).hexdigest())
        params = decode_json(run["topology_json"], f"{where}: topology_json", dict, {}) \
            .get("params") or {}
        if not isinstance(params, dict):
            raise StoreError(f"{where}: topology_json: params is not an object")
        sub.recorded_variants.add(str(params.get(VARIANT) or ""))
    cases = store.cases()
    own_cache: Dict[str, Tuple[Dict[str, Any], str]] = {}
    for case in cases:
        calls, first = recorded_calls(store, case)
        if first is None or not first.topology_dict:
            continue
        recorded = from_dict(first.topology_dict)
        try:
            problem = ownership.case_problem(store, case, TopologyChoice.of_topology(recorded),
                                             sub.binding, str(sub.results))
        except LabtoolsError as err:
            problem = f"the recorded topology cannot be built again: {err}"
        if problem:
            sub.problems[case] = problem
        calibrations.append(_calibration(sub, case, recorded, first.context.machine
                                         if first.context is not None else None))
        for item, occurrence in _replayed(calls):
            rows += _judged(store, sub, case, item, occurrence, own_cache)


def _replayed(calls: List[RecordedCall]) -> List[Tuple[RecordedCall, int]]:
    """The calls a notebook's grading replays, each with its occurrence (the n-th call
    with the same arguments): the latest session's, then what earlier ones add."""
    taken: Dict[Tuple[str, int], RecordedCall] = {}
    counts: Dict[str, Counter] = {}
    for call in calls:  # latest session first, in step order
        seen = counts.setdefault(call.session, Counter())
        occurrence = seen[call.key]
        seen[call.key] += 1
        taken.setdefault((call.key, occurrence), call)
    return [(call, occurrence) for (_, occurrence), call in taken.items()]


def _own(record_topology: Dict[str, Any], binding: ownership.Binding,
         cache: Dict[str, Tuple[Dict[str, Any], str]]) -> Tuple[Dict[str, Any], str]:
    """The student's own topology for a recorded one (as a dict), and where it comes from:
    ``their variant``, or ``the recorded topology`` when the kit cannot build theirs."""
    text = json.dumps(record_topology, sort_keys=True)
    if text not in cache:
        own = ownership.own_topology(from_dict(record_topology), binding)
        cache[text] = ((to_dict(own), "their variant") if own is not None
                       else (record_topology, "the recorded topology"))
    return cache[text]


def _judged(store: ResultStore, sub: Submission, case: str, item: RecordedCall,
            occurrence: int, cache: Dict[str, Tuple[Dict[str, Any], str]]
            ) -> List[Dict[str, Any]]:
    """The verdict rows of one replayed call, judged on the student's own topology."""
    call: Dict[str, Any] = json.loads(item.key) if item.key else {"probe": "", "args": {}}
    try:
        if item.kind == "run":
            record = store.get(int(item.ident), table=False)
            topology, source = _own(record.topology_dict or {}, sub.binding, cache)
            result: Any = rebuild_measurement(replace(record, topology_dict=topology))
            pair = f"{record.src}-{record.dst}"
            recorded = (record.topology_dict or {}).get("params", {}).get(VARIANT)
        else:
            group = store.groups(id=str(item.ident))[0]
            members = [store.get(int(i), table=False)
                       for i in store.runs(group_id=str(item.ident))["id"]]
            topology, source = _own(members[0].topology_dict or {}, sub.binding, cache)
            result = rebuild_group(group, [replace(m, topology_dict=topology) for m in members])
            args = call.get("args", {})
            pair = str(args.get("flows") or f"{args.get('src', '')}-{args.get('dst', '')}")
            recorded = (members[0].topology_dict or {}).get("params", {}).get(VARIANT)
        verdicts: List[Verdict] = list(result.verdicts)
    except (LabtoolsError, IndexError, KeyError) as err:
        verdicts = [Verdict("(not judged)", None, None, "", "inconclusive",
                            f"cannot be judged again: {err}")]
        pair, source, recorded = "", "", None
    base = {"student": sub.student, "assignment": sub.assignment,
            "variant": sub.binding.variant, "recorded_variant": str(recorded or ""),
            "case": case, "flagged": case in sub.problems, "step": item.step,
            "probe": call.get("probe", ""), "pair": pair,
            "call": json.dumps(call.get("args", {}), sort_keys=True),
            "occurrence": occurrence, "source": source}
    return [{**base, "metric": v.metric, "unit": v.unit, "measured": v.measured,
             "expected": v.expected, "ratio": v.ratio, "verdict": v.verdict,
             "reason": v.reason} for v in verdicts]


def _name_quantities(table: pd.DataFrame) -> None:
    """Name each row's measurement and quantity, the same for every student: the pair,
    the probe, the arguments that tell its calls apart in that notebook (``h1-h9 iperf3
    window_bytes=100000``), and the metric (``...: receiver_rate``)."""
    varying: Dict[Tuple[str, str, str], List[str]] = {}
    for (case, probe, pair), part in table.groupby(["case", "probe", "pair"]):
        calls = [json.loads(c) for c in part["call"].unique()]
        keys = {k for c in calls for k in c if k not in ("src", "dst", "flows")}
        varying[(case, probe, pair)] = sorted(
            k for k in keys if len({json.dumps(c.get(k)) for c in calls}) > 1)
    measurements = []
    for row in table.itertuples():
        args = json.loads(row.call)
        extra = [f"{k}={'default' if args.get(k) is None else args.get(k)}"
                 for k in varying.get((row.case, row.probe, row.pair), [])]
        again = [f"(#{row.occurrence + 1})"] if row.occurrence else []
        measurements.append(" ".join([row.pair, row.probe.replace("_", " "), *extra,
                                      *again]).strip())
    table["measurement"] = measurements
    table["quantity"] = [f"{m}: {metric}" for m, metric in zip(measurements, table["metric"])]


def _calibration(sub: Submission, case: str, measured_on: Topology,
                 profile: Optional[MachineProfile]) -> Dict[str, Any]:
    """One row of the calibrations table: the machine of the notebook's latest session,
    and whether it forwards what the lab's links carry at once."""
    machine = {} if profile is None else profile.as_dict()
    forward = machine.get("forward_mbps")
    load = peak_load_mbps(measured_on)
    slow = None if forward is None else \
        suggested_rate_scale(measured_on, float(forward), CAPACITY_HEADROOM) < 1.0
    return {"student": sub.student, "assignment": sub.assignment, "case": case,
            "emulation": machine.get("emulation"), "forward_mbps": forward,
            "unshaped_link_ms": machine.get("unshaped_link_ms"),
            "delayed_link_late_ms": machine.get("delayed_link_late_ms"),
            "measured_at": machine.get("measured_at"), "peak_load_mbps": load,
            "rate_scale": rate_scale(measured_on),
            "needed_mbps": load / CAPACITY_HEADROOM if load else None, "too_slow": slow}


def _copies(submissions: List[Submission]) -> pd.DataFrame:
    """Pairs of submissions that share raw measurements."""
    rows = []
    for a, b in combinations([s for s in submissions if s.digests], 2):
        same = len(a.digests & b.digests)
        if same:
            rows.append({"student_a": a.student, "assignment_a": a.assignment,
                         "student_b": b.student, "assignment_b": b.assignment,
                         "identical_runs": same, "runs_a": len(a.digests),
                         "runs_b": len(b.digests),
                         # two students share a variant only by the course's list
                         "partners": a.student != b.student and
                         a.binding.variant == b.binding.variant})
    return pd.DataFrame(rows, columns=COPY_COLUMNS)
