"""Whose network a results file was measured on, and whose it should be.

A graded lab is bound to its student: the topology variant a student measures on is, by
default, their nbgrader student id (``portfolio,variant=STUDENT``). A course may bind
students to other variants in ``labtools-variants.csv`` beside its ``nbgrader_config.py``,
one ``student_id,variant`` per line (a ``student_id,variant`` header is allowed): lab
partners who measure on one network share its variant, and their results file.

Who the student is while nbgrader autogrades: nbgrader 0.9 passes the student id to the
notebook's kernel no other way than through the folder the notebook runs in (the kernel's
working directory), ``COURSE/autograded/STUDENT/ASSIGNMENT``; :func:`graded_binding`
reads it from there, and the course list from ``COURSE``.

What a results file says about whom it belongs to: every run keeps the topology it was
measured on (its ``params`` hold the variant) and, since the kit records it, the student
who measured (the JupyterHub user, nbgrader's student id on a course server) in its
context. :func:`ownership_problem` compares both with the binding;
:func:`topology_problem` compares the recorded links with what the kit builds for the
student, so an edited topology in a results file is found too.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Optional, Tuple

from labtools.errors import InputError, StoreError, TopologyError
from labtools.model import scaling
from labtools.model.catalog import from_dict, legacy_text, to_dict
from labtools.model.choice import TopologyChoice
from labtools.model.json_topology import VARIANT, check_variant, variant_of
from labtools.model.topology import Topology
from labtools.results.records import STUDENT_KEY

if TYPE_CHECKING:  # pragma: no cover
    from labtools.results.store import ResultStore

#: the course's list of students bound to other variants than their id
VARIANTS_FILE = "labtools-variants.csv"
#: nbgrader's folder of autograded submissions (``CourseDirectory.autograded_directory``)
AUTOGRADED = "autograded"


@dataclass(frozen=True)
class Binding:
    """The variant a student is graded on.

    Attributes:
        student: the nbgrader student id.
        variant: the variant ID their network is drawn from.
        source: where the variant comes from (``their student id`` or the course list).
        partners: the other students the course list binds to the same variant.
    """

    student: str
    variant: str
    source: str = "their student id"
    partners: FrozenSet[str] = frozenset()

    def describe(self) -> str:
        """``student4's variant is 'student4' (their student id)``."""
        shared = f", shared with {', '.join(sorted(self.partners))}" if self.partners else ""
        return f"{self.student}'s variant is {self.variant!r} ({self.source}{shared})"


@dataclass(frozen=True)
class RecordedOwner:
    """Who a set of runs says it belongs to: the variant measured on, the student who
    measured (None where not recorded), and how many runs say so."""

    variant: str
    student: Optional[str]
    runs: int


def read_variant_list(path: Path) -> Dict[str, str]:
    """The course list ``student_id,variant`` (see the module docstring): student -> variant.

    Raises:
        InputError: a line without both values, a student listed twice, or a variant
            that cannot be part of a topology spec (``,`` or ``=``).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read {path}: {getattr(err, 'strerror', None) or err}") from None
    bound: Dict[str, str] = {}
    for number, row in enumerate(csv.reader(text.splitlines()), start=1):
        cells = [c.strip() for c in row]
        if not any(cells) or (number == 1 and cells[:2] == ["student_id", "variant"]):
            continue
        if len(cells) != 2 or not all(cells):
            raise InputError(f"{path} line {number}: write student_id,variant")
        student, variant = cells
        if student in bound:
            raise InputError(f"{path} line {number}: {student} is listed twice")
        try:
            check_variant(variant, f"{path} line {number}")
        except TopologyError as err:
            raise InputError(str(err)) from None
        bound[student] = variant
    return bound


def bind(student: str, variants: Optional[Dict[str, str]] = None,
         list_name: str = VARIANTS_FILE) -> Binding:
    """The binding of ``student``: the course list's variant for them, else their id."""
    variants = variants or {}
    if student in variants:
        variant = variants[student]
        partners = frozenset(s for s, v in variants.items() if v == variant and s != student)
        return Binding(student, variant, list_name, partners)
    try:
        variant = variant_of(student)
    except TopologyError as err:
        raise InputError(f"student id {student!r}: {err}") from None
    if variant == student:
        return Binding(student, student)
    return Binding(student, variant, "their student id, in the form a topology takes")


def course_variants(course: Path) -> Dict[str, str]:
    """The course list in folder ``course`` (empty when there is none)."""
    path = course / VARIANTS_FILE
    return read_variant_list(path) if path.is_file() else {}


def graded_student(folder: Path) -> Optional[Tuple[str, Path]]:
    """The student whose submission ``folder`` is and the course folder, when ``folder``
    is nbgrader's ``COURSE/autograded/STUDENT/ASSIGNMENT``; None otherwise."""
    folder = folder.resolve()
    if len(folder.parents) < 3 or folder.parent.parent.name != AUTOGRADED:
        return None
    return folder.parent.name, folder.parents[2]


def graded_binding(folder: Path) -> Optional[Binding]:
    """The binding of the student whose autograded submission ``folder`` is (None when it
    is not in an ``autograded/STUDENT/ASSIGNMENT`` folder)."""
    found = graded_student(folder)
    if found is None:
        return None
    student, course = found
    return bind(student, course_variants(course))


def accepted_variants(variant: str) -> FrozenSet[str]:
    """The recorded variants that are ``variant``: itself, and the form a spec gave a
    number-like id before variants stayed text (``007`` recorded as ``7``: runs made
    with the kit before stop 38, on the network that form draws)."""
    return frozenset({variant, legacy_text(VARIANT, variant)})


def recorded_owners(store: "ResultStore", case: str) -> List[RecordedOwner]:
    """Who the runs of ``case`` in ``store`` say they belong to."""
    counts: Counter = Counter()
    for row in store.owner_columns(case):
        topology = _json(row["topology_json"], f"runs row {row['id']}: topology_json")
        context = _json(row["context_json"], f"runs row {row['id']}: context_json")
        variant = (topology.get("params") or {}).get(VARIANT)
        student = context.get(STUDENT_KEY)
        counts[("" if variant in (None, "") else str(variant),
                None if not student else str(student))] += 1
    return [RecordedOwner(v, s, n) for (v, s), n in sorted(counts.items(), key=str)]


def ownership_problem(binding: Binding, owners: List[RecordedOwner], where: str) -> str:
    """One line on why runs said to belong to ``owners`` are not the bound student's own;
    '' when they are."""
    total = sum(o.runs for o in owners)
    want = accepted_variants(binding.variant)
    foreign = [o for o in owners if o.variant not in want]
    if foreign:
        got = " and ".join(sorted({f"variant {o.variant!r}" if o.variant else
                                   "the reference topology (no variant)" for o in foreign}))
        by = sorted({o.student for o in foreign if o.student})
        count = sum(o.runs for o in foreign)
        return (f"{where}: this notebook's measurements ({count} of {total}) were made on "
                f"{got}{' by ' + ', '.join(by) if by else ''}; {binding.describe()}: "
                "measure on your own network")
    # the student whose own id a listed variant is may have measured it for the partners
    allowed = {binding.student, binding.variant, *binding.partners}
    others = sorted({o.student for o in owners if o.student and o.student not in allowed})
    if others:
        return (f"{where}: this notebook's measurements were recorded by {', '.join(others)}, "
                f"not by {binding.student}: hand in your own measurements")
    return ""


def bound_topology(choice: TopologyChoice, binding: Binding,
                   recorded: Optional[Topology]) -> Optional[Topology]:
    """The student's own topology for the notebook's ``choice``: on their variant, with the
    rate scale they measured with (a machine too slow for the lab's rates may scale them);
    None when that topology takes no variant (a course's own topology file), which leaves
    nothing to bind. A run recorded on the form a number-like id once took
    (:func:`accepted_variants`) is bound to the network that form draws.

    Raises:
        TopologyError: the notebook's topology itself cannot be built.
    """
    factor = None if recorded is None else recorded.params.get(scaling.PARAMETER)
    base = choice.with_variant("").with_rate_scale(None if factor is None
                                                   else scaling.check_scale(factor))
    variant = binding.variant
    was = None if recorded is None else recorded.params.get(VARIANT)
    if isinstance(was, str) and was != variant and was in accepted_variants(variant):
        variant = was
    try:
        return base.with_variant(variant).build()
    except TopologyError:
        base.build()  # the notebook's topology itself: its error
        return None


def own_topology(recorded: Topology, binding: Binding) -> Optional[Topology]:
    """The topology the student should have measured where ``recorded`` was measured: the
    same topology and parameters with their own variant (None when the kit cannot build
    it, e.g. a topology file of the course's own)."""
    try:
        return bound_topology(TopologyChoice.of_topology(recorded), binding, recorded)
    except (TopologyError, InputError):
        return None


def topology_problem(recorded: Topology, own: Topology, where: str) -> str:
    """One line on how a recorded topology differs from the one the kit builds for the
    student (an edited results file); '' when they are the same."""
    if recorded.name != own.name:
        return f"{where}: measured on topology {recorded.name}, this notebook's is {own.name}"
    mine, theirs = to_dict(own), to_dict(recorded)
    if mine["nodes"] != theirs["nodes"] or len(mine["links"]) != len(theirs["links"]):
        return f"{where}: the recorded {recorded.name} has other nodes or links than the kit's"
    for a, b in zip(theirs["links"], mine["links"]):
        if a != b:
            name = b.get("name") or f"{b['a']}-{b['b']}"
            return (f"{where}: the recorded link {name} ({_link_text(a)}) is not the kit's "
                    f"for this variant ({_link_text(b)}): the results file was changed")
    return ""


def recorded_topologies(store: "ResultStore", case: str) -> List[Topology]:
    """The distinct topologies the runs of ``case`` in ``store`` were measured on."""
    found = []
    for text in store.topology_texts(case):
        try:
            found.append(from_dict(_json(text, f"{case} runs: topology_json")))
        except TopologyError as err:
            raise StoreError(f"a {case} run's topology cannot be read: {err}") from None
    return found


def case_problem(store: "ResultStore", case: str, choice: TopologyChoice, binding: Binding,
                 where: str) -> str:
    """One line on why the runs of ``case`` in ``store`` are not the bound student's own
    measurements on the notebook's topology ``choice``; '' when they are."""
    problem = ownership_problem(binding, recorded_owners(store, case), where)
    for recorded in recorded_topologies(store, case):
        if problem:
            break
        own = bound_topology(choice, binding, recorded)
        if own is not None:
            problem = topology_problem(recorded, own, where)
    return problem


def _link_text(link: Dict[str, Any]) -> str:
    return (f"{link.get('bw_mbps')} Mbit/s, {link.get('delay_ms')} ms, "
            f"queue {link.get('queue_pkts')}")


def _json(text: Optional[str], where: str) -> Dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise StoreError(f"{where} is not valid JSON") from None
    if not isinstance(value, dict):
        raise StoreError(f"{where} is not a JSON object")
    return value
