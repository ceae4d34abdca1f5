"""Replaying a notebook's recorded measurements: grading without a network.

When nbgrader executes a notebook to grade or validate it (it sets ``NBGRADER_EXECUTION``,
:data:`labtools.settings.GRADING`),
the notebook's lab is a :class:`ReplaySession`: nothing starts, and each probe call returns
the student's own recorded measurement for it, judged again from its raw output
(:meth:`labtools.results.store.ResultStore.measurement`). No root, no Mininet, no VM.

Matching: every probe call a notebook makes is saved with its arguments (the probe and what
identifies the measurement: source, destination, flows, offered rate, window...; not the
durations, which follow the machine). A call takes the first recorded step of the same
notebook (``case``) with the same arguments that no earlier call took, looking in the
latest lab session first, then in earlier ones. A call with no such step gets a
:class:`MissingMeasurement`: using it raises :class:`~labtools.errors.ReplayError` with one
line saying what is missing, so the checks that need it fail with that reason while the
others still grade.

The durations are the ones the student measured with (saved with each run: the full set, or
the quick one CI uses), so a notebook that passes them to a probe asks for what was recorded.

Whose measurements: while nbgrader autogrades ``COURSE/autograded/STUDENT/ASSIGNMENT``, the
lab is bound to STUDENT (:mod:`labtools.results.ownership`): the topology is the student's
own variant (their id, or the course's ``labtools-variants.csv``), and a notebook whose
recorded runs were made on another variant, by another student, or on links the kit does
not build for that variant answers every call with a :class:`MissingMeasurement` giving
that one-line reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, NoReturn, Optional, Set, Tuple, TypeVar, Union, cast

from labtools import settings
from labtools.errors import ReplayError, StoreError
from labtools.judge import policy
from labtools.judge.measurement import ProbeCall
from labtools.lab.base import LabBase
from labtools.model.catalog import from_dict
from labtools.model.choice import TopologyChoice, choose
from labtools.model.topology import Topology
from labtools.results import ownership
from labtools.results.course_record_file import GradingRecord
from labtools.results.records import RunRecord
from labtools.results.store import ResultStore

T = TypeVar("T")


class MissingMeasurement:
    """Stands in for a measurement the results file does not hold: any use of it raises
    :class:`~labtools.errors.ReplayError` with the reason."""

    def __init__(self, call: ProbeCall, reason: str) -> None:
        self._call = call
        self._reason = reason

    def __getattr__(self, name: str) -> NoReturn:
        raise ReplayError(self._reason)

    def __repr__(self) -> str:
        return f"<missing: {self._reason}>"


@dataclass(frozen=True)
class RecordedCall:
    """One recorded probe call: a run or a group, in its session, with its arguments."""

    kind: str  #: ``run`` or ``group``
    ident: Union[int, str]
    session: str
    step: int
    key: str  #: :meth:`ProbeCall.key`


class ReplaySession(LabBase):
    """A notebook's lab that answers probe calls from ``results`` (see the module
    docstring). ``topology`` (the notebook's :class:`~labtools.model.choice.TopologyChoice`,
    or its spec) is used only when the file holds no recorded session; the
    topology (a per-student variant included) and the calibration are otherwise the ones
    the student measured with.

    While nbgrader autogrades a student's folder, the lab is bound to that student
    (:mod:`labtools.results.ownership`): its topology is the student's own variant, and
    runs measured on another variant, recorded by another student, or on a topology the
    kit does not build for them fail every measured check with that one-line reason.

    :attr:`course_record` reads the student's rows of the course's record for this
    notebook's predict-first checks, once
    (:class:`~labtools.results.course_record_file.GradingRecord`)."""

    replaying = True

    def __init__(self, topology: Union[str, TopologyChoice, Topology], results: Union[str, Path],
                 case: str,
                 durations: Optional[policy.Durations] = None) -> None:
        self.results = Path(results)
        self.store: Optional[ResultStore] = None
        self.problem = ""
        recorded: List[RecordedCall] = []
        first_run: Optional[RunRecord] = None
        try:
            self.store = ResultStore(self.results, create=False)
            recorded, first_run = recorded_calls(self.store, case)
        except StoreError as err:
            self.problem = str(err)
        if self.store is not None and not recorded and not self.problem:
            self.problem = f"{self.results} holds no measurement of this notebook ({case})"
        recorded_durations = policy.NAMED_DURATIONS.get(
            first_run.durations if first_run is not None else "")
        self.binding = ownership.graded_binding(Path.cwd())
        chosen = _recorded_topology(first_run) or topology
        if self.binding is not None and not isinstance(topology, Topology):
            chosen = self._bind(self.binding, choose(topology), _recorded_topology(first_run),
                                case) or chosen
        super().__init__(chosen, case, recorded_durations or durations)
        self.machine = (first_run.context.machine if first_run is not None
                        and first_run.context is not None else None)
        self._recorded = recorded
        self._taken: Set[Tuple[str, Union[int, str]]] = set()
        self.course_record = GradingRecord()

    def _bind(self, binding: ownership.Binding, choice: TopologyChoice,
              recorded: Optional[Topology], case: str) -> Optional[Topology]:
        """The student's own topology for the notebook's ``choice``; sets :attr:`problem`
        when the results file's runs of ``case`` are not theirs (the first reason found)."""
        own = ownership.bound_topology(choice, binding, recorded)
        if own is None:  # a topology without variants: nothing to bind
            return None
        if self.store is not None and not self.problem:
            self.problem = ownership.case_problem(self.store, case, choice, binding,
                                                  str(self.results))
        return own

    # --- a lab without a network ----------------------------------------------------------
    @property
    def running(self) -> bool:
        """A replaying lab never runs a network."""
        return False

    def start(self) -> None:
        """Nothing to start: say whose lab is graded and what is replayed."""
        if self.binding is not None:
            print(f"grading: {self.binding.describe()}")
        elif settings.current().grading == "autograde":
            print("grading: the student is unknown (the notebook is not in nbgrader's "
                  f"{ownership.AUTOGRADED}/STUDENT/ASSIGNMENT folder): the variant is not checked")
        if self.problem:
            print(f"grading: no network started; {self.problem}: the measured checks fail")
        else:
            sessions = len({r.session for r in self._recorded})
            print(f"grading: no network started; replaying {len(self._recorded)} recorded "
                  f"measurement(s) from {self.results} ({sessions} lab session(s))")

    def stop(self) -> None:
        """Nothing to stop."""

    def run(self, host: str, argv: List[str], timeout_s: float) -> NoReturn:
        """A replaying lab runs nothing on hosts."""
        raise ReplayError("grading replays recorded measurements: nothing runs on the hosts")

    start_process = run

    # --- steps ----------------------------------------------------------------------------
    def perform(self, call: ProbeCall, measure: Callable[[], T]) -> T:
        """The recorded measurement for ``call`` (``measure`` is not run)."""
        self.step += 1
        found = None if self.problem else self._take(call)
        if found is None:
            why = self.problem or (f"{self.results} has no recorded measurement for "
                                   f"{call.describe()} (call {self.step} of this notebook)")
            return cast(T, MissingMeasurement(call, why))  # fails on use, with the reason
        if self.store is None:  # pragma: no cover - found implies a store
            raise ReplayError(self.problem)
        # what was recorded for this call: what the probe returned when it ran
        if found.kind == "run":
            return cast(T, self.store.measurement(int(found.ident)))
        return cast(T, self.store.group(str(found.ident)))

    def _take(self, call: ProbeCall) -> Optional[RecordedCall]:
        key = call.key()
        for record in self._recorded:  # latest session first, in step order
            ident = (record.kind, record.ident)
            if record.key == key and ident not in self._taken:
                self._taken.add(ident)
                return record
        return None


def recorded_calls(store: ResultStore, case: str
                   ) -> Tuple[List[RecordedCall], Optional[RunRecord]]:
    """The recorded probe calls of ``case``, latest session first (each in step order), and
    the record of that session's first run (its topology, calibration and durations; no
    table)."""
    runs = store.probe_call_runs(case)
    groups = store.probe_call_groups(case)
    recorded = [RecordedCall("run", int(r["id"]), r["session_id"], r["step"] or 0,
                          _key(r["call_json"])) for r in runs]
    recorded += [RecordedCall("group", str(g["id"]), g["session_id"], g["step"] or 0,
                           _key(g["call_json"])) for g in groups]
    latest: Dict[str, str] = {}
    for r in list(runs) + list(groups):
        latest[r["session_id"]] = max(latest.get(r["session_id"], ""), r["started_at"])
    order = sorted(latest, key=lambda s: latest[s], reverse=True)
    recorded.sort(key=lambda r: (order.index(r.session), r.step))
    if not order:
        return recorded, None
    head = store.first_run_id(order[0])
    return recorded, store.get(head, table=False) if head is not None else None


def _key(call_json: Optional[str]) -> str:
    call = ProbeCall.from_dict(json.loads(call_json)) if call_json else None
    return call.key() if call is not None else ""


def _recorded_topology(first_run: Optional[RunRecord]) -> Optional[Topology]:
    if first_run is None or not first_run.topology_dict:
        return None
    return from_dict(first_run.topology_dict)
