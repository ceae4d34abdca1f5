"""Answer keys: every written question of labs 00-06, answered for one student's network.

The notebooks' questions and rubrics speak of "your network's L2"; what that means in
numbers, and which way each yes/no conclusion goes, depends on the student's variant
(:mod:`labtools.model.variants`). :data:`ANSWER_KEYS` maps each question id, as the
notebook shows it (``02-Q3``: lab 02, **Q3.**), to the function that answers it for a
topology (:mod:`labtools.judge.answer_key_questions`, labs 00-03, and
:mod:`labtools.judge.answer_key_sharing`, labs 04-06); :func:`question_topology` says on
which topology (spec, before the variant) the question is asked. ``labtools answer-key``
prints them per student; a notebook prints a question's given values with
:func:`labtools.teach.question_values.show_question_values`.

The kit's own topology files are imported once in this process (:func:`kit_topology`), so
a class's keys take seconds: the same ``topology(**params)`` the catalog calls.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from types import ModuleType
from typing import Callable, Dict, List, Optional

from labtools.errors import InputError, TopologyError
from labtools.judge import answer_key_questions as q
from labtools.judge import answer_key_sharing as s
from labtools.judge.answer_key_questions import Conclusion, QuestionKey
from labtools.model.catalog import split_spec, topologies_dir
from labtools.model.topology import Topology

__all__ = ["ANSWER_KEYS", "Conclusion", "QuestionKey", "LAB_TOPOLOGIES", "keys_for",
           "question_topology", "kit_topology", "labs"]

#: the topology each lab is measured on, before the student's variant is added (lab 06's
#: is the notebook's ``TOPOLOGY``)
LAB_TOPOLOGIES: Dict[str, str] = {
    "00": "portfolio", "01": "portfolio", "02": "portfolio", "03": "portfolio",
    "04": "portfolio", "05": "portfolio",
    "06": "dumbbell,pairs=4,bw_mbps=20,delay_ms=20,queue_pkts=100",
}
#: questions asked about another lab's network than their own
OTHER_TOPOLOGY: Dict[str, str] = {"06-Q6": "portfolio"}

#: question id -> its answer for a topology
ANSWER_KEYS: Dict[str, Callable[[Topology], QuestionKey]] = {
    "00-Q1": q.q00_1, "00-Q2": q.q00_2, "00-Q3": q.q00_3,
    "01-Q1": q.q01_1, "01-Q2": q.q01_2, "01-Q3": q.q01_3, "01-Q4": q.q01_4,
    "02-Q1": q.q02_1, "02-Q2": q.q02_2, "02-Q3": q.q02_3,
    "03-Q1": q.q03_1, "03-Q2": q.q03_2, "03-Q3": q.q03_3,
    "04-Q1": s.q04_1, "04-Q2": s.q04_2, "04-Q3": s.q04_3, "04-Q4": s.q04_4,
    "05-Q1": s.q05_1, "05-Q2": s.q05_2, "05-Q3": s.q05_3,
    "06-Q1": s.q06_1, "06-Q2": s.q06_2, "06-Q3": s.q06_3, "06-Q4": s.q06_4,
    "06-Q5": s.q06_5, "06-Q6": s.q06_6,
}


def labs() -> List[str]:
    """The labs that have keys, in order (``00`` ... ``06``)."""
    return sorted(LAB_TOPOLOGIES)


def question_topology(question_id: str) -> str:
    """The topology spec (without a variant) a question is asked on."""
    if question_id not in ANSWER_KEYS:
        raise InputError(f"no answer key for question {question_id!r}: choose one of "
                         f"{', '.join(ANSWER_KEYS)}")
    return OTHER_TOPOLOGY.get(question_id, LAB_TOPOLOGIES[question_id[:2]])


@lru_cache(maxsize=None)
def _kit_module(name: str) -> ModuleType:
    path = topologies_dir() / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"labtools_answer_key_{name}", str(path))
    if spec is None or spec.loader is None or not path.is_file():
        raise TopologyError(f"{name} is not one of the kit's topologies ({path})")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import does: dataclasses look it up there
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=4096)
def kit_topology(spec: str, variant: str = "") -> Topology:
    """The kit's topology ``spec`` (``NAME,key=value...``) with ``variant`` (none: the
    reference values), built in this process; the variant is read as a spec reads it
    (``007`` is the number 7)."""
    head, params = split_spec(f"{spec},variant={variant}" if variant else spec)
    topo = _kit_module(head).topology(**params)
    if not isinstance(topo, Topology):
        raise TopologyError(f"{head}.topology() did not return a Topology")
    return topo


def keys_for(variant: str, lab: Optional[str] = None,
             topologies: Optional[Dict[str, Topology]] = None) -> List[QuestionKey]:
    """Every question's key (or lab ``lab``'s: ``02`` or ``2``) for the network of
    ``variant`` ('' for the reference). ``topologies`` (spec -> topology) replaces the
    kit's build, e.g. with a rate-scaled network."""
    wanted = None if lab is None else _lab_id(lab)
    keys = []
    for question_id, answer in ANSWER_KEYS.items():
        if wanted is not None and not question_id.startswith(wanted + "-"):
            continue
        spec = question_topology(question_id)
        topo = (topologies or {}).get(spec) or kit_topology(spec, variant)
        keys.append(answer(topo))
    return keys


def _lab_id(lab: str) -> str:
    text = str(lab).strip()
    if text.isdigit() and f"{int(text):02d}" in LAB_TOPOLOGIES:
        return f"{int(text):02d}"
    raise InputError(f"no answer keys for lab {lab!r}: choose one of {', '.join(labs())}")
