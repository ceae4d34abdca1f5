"""What a written question gives, printed from the student's own network.

The notebooks' questions speak of "your network's L2 (the values printed above)": the cell
above such a question calls :func:`show_question_values`, which prints the inputs the
question gives (rates, delays, queue limits of the student's links; the lab's own settings)
from :data:`labtools.judge.question_givens.QUESTION_GIVENS`, which holds no answer: never
what the answer computes from them (:mod:`labtools.instructor.answer_keys`, the instructor's, not
in the student edition).
"""

from __future__ import annotations

from typing import Any, Dict

from labtools.judge.question_givens import givens, kit_topology, question_topology
from labtools.model.choice import TopologyChoice

#: how a given value is printed: the end of its name -> (what it is, its unit)
UNITS = {"_bw_mbps": ("rate", "Mbit/s"), "_delay_ms": ("delay", "ms one-way"),
         "_queue_pkts": ("queue limit", "packets"), "_mbps": ("", "Mbit/s")}


def question_values(lab: Any, question_id: str) -> Dict[str, Any]:
    """The values question ``question_id`` gives on ``lab``'s network (its topology, or,
    for a question about another lab's network, that network with the same variant).

    Raises:
        InputError: an unknown question id.
    """
    topo = lab.topo
    asked_on = question_topology(question_id)
    if asked_on.name != topo.name:
        topo = kit_topology(asked_on, TopologyChoice.of_topology(topo).variant)
    return givens(question_id, topo)


def format_values(values: Dict[str, Any]) -> str:
    """One line per value: ``L2 rate: 25 Mbit/s``."""
    lines = []
    for name, value in values.items():
        suffix = next((s for s in UNITS if name.endswith(s)), "")
        kind, unit = UNITS.get(suffix, ("", ""))
        label = " ".join(w for w in (name[: len(name) - len(suffix)].replace("_", " "), kind) if w)
        shown = "no limit" if value is None else f"{value:g}" if isinstance(value, float) \
            else str(value)
        lines.append(f"{label}: {shown} {unit}".rstrip())
    return "\n".join(lines)


def show_question_values(lab: Any, question_id: str) -> None:
    """Print the values question ``question_id`` gives, from the student's network."""
    values = question_values(lab, question_id)
    print(f"{question_id}: your network's values\n{format_values(values)}")
