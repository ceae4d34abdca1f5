"""Answer keys: every written question of labs 00-06, answered for one student's network.

The notebooks' questions and rubrics speak of "your network's L2"; what that means in
numbers, and which way each yes/no conclusion goes, depends on the student's variant
(:mod:`labtools.model.variants`). :data:`ANSWER_KEYS` maps each question id, as the
notebook shows it (``02-Q3``: lab 02, **Q3.**), to the function that answers it for a
topology (:mod:`labtools.instructor.answer_key_questions`, labs 00-03, and
:mod:`labtools.instructor.answer_key_sharing`, labs 04-06), on top of the values the question
gives (:mod:`labtools.judge.question_givens`, which also says on which topology a question
is asked and builds the kit's topologies). ``labtools answer-key`` and the class report
print them per student; a notebook prints only a question's given values
(:func:`labtools.teach.question_values.show_question_values`).

The keys are the instructor's: where expected values are hidden (a student's lab, a
course) :func:`keys_for` and every key function refuse with
:data:`~labtools.instructor.answer_key_form.ANSWER_KEY_REFUSAL`, as
:func:`labtools.judge.exercises.solve` does, and the student edition does not carry these
modules (:mod:`labtools.instructor.student_edition`).
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

from labtools import settings
from labtools.errors import InputError
from labtools.instructor import answer_key_questions as q
from labtools.instructor import answer_key_sharing as s
from labtools.instructor.answer_key_form import ANSWER_KEY_REFUSAL, Conclusion, QuestionKey
from labtools.judge.question_givens import (
    LAB_TOPOLOGIES,
    OTHER_TOPOLOGY,
    kit_topology,
    labs,
    question_topology,
)
from labtools.model.choice import TopologyChoice
from labtools.model.topology import Topology

__all__ = ["ANSWER_KEYS", "ANSWER_KEY_REFUSAL", "Conclusion", "QuestionKey", "LAB_TOPOLOGIES",
           "OTHER_TOPOLOGY", "keys_for", "lab_number", "question_topology", "kit_topology",
           "labs"]

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


def keys_for(variant: str, lab: Optional[str] = None,
             topologies: Optional[Dict[TopologyChoice, Topology]] = None) -> List[QuestionKey]:
    """Every question's key (or lab ``lab``'s: ``02`` or ``2``) for the network of
    ``variant`` ('' for the reference). ``topologies`` (choice -> topology) replaces the
    kit's build, e.g. with a rate-scaled network.

    Raises:
        InputError: :data:`ANSWER_KEY_REFUSAL` where expected values are hidden (a
            student's lab, a course); an unknown lab.
    """
    if settings.current().answers_hidden:
        raise InputError(ANSWER_KEY_REFUSAL)
    wanted = None if lab is None else lab_number(lab)
    keys = []
    for question_id, answer in ANSWER_KEYS.items():
        if wanted is not None and not question_id.startswith(wanted + "-"):
            continue
        spec = question_topology(question_id)
        topo = (topologies or {}).get(spec) or kit_topology(spec, variant)
        keys.append(answer(topo))
    return keys


def lab_number(lab: str) -> str:
    """``lab`` (``2``, ``02``) as the two digits of a lab with written questions.

    Raises:
        InputError: no such lab.
    """
    text = str(lab).strip()
    if text.isdigit() and f"{int(text):02d}" in LAB_TOPOLOGIES:
        return f"{int(text):02d}"
    raise InputError(f"no answer keys for lab {lab!r}: choose one of {', '.join(labs())}")
