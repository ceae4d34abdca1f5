"""What each written question of labs 00-06 gives: the values read off a student's network.

:data:`QUESTION_GIVENS` maps each question id, as the notebook shows it (``02-Q3``: lab 02,
**Q3.**), to the function that reads the values the question gives from a topology: the
rates, one-way delays and queue limits of the links it names, and the lab's own settings
(lab 1's offered rate). Nothing computed from them that a question asks for is here: a
notebook prints these values (:func:`labtools.teach.question_values.show_question_values`),
so this module ships in the student edition. The answers built on top of them, for the
instructor, are in :mod:`labtools.instructor.answer_keys`.

:func:`question_topology` says on which topology (a
:class:`~labtools.model.choice.TopologyChoice`, before the variant) a question is asked;
:func:`kit_topology` builds the kit's own topologies in this process, each file imported
once, so a class's values take seconds: the same ``topology(**params)`` the catalog calls.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Dict, List, Union

from labtools.errors import InputError
from labtools.model.choice import TopologyChoice
from labtools.model.topology import Topology

__all__ = ["QUESTION_GIVENS", "LAB_TOPOLOGIES", "LAB_CASES", "OTHER_TOPOLOGY", "LAB1_RATE_MBPS",
           "givens", "question_topology", "kit_topology", "labs"]

#: lab 1's offered UDP payload rate (the notebook's ``RATE_MBPS``), Mbit/s
LAB1_RATE_MBPS = 25
#: the reference topology of labs 00-05
_PORTFOLIO = TopologyChoice("portfolio")
#: the topology each lab is measured on, before the student's variant is added (lab 06's
#: is the notebook's ``TOPOLOGY``)
LAB_TOPOLOGIES: Dict[str, TopologyChoice] = {
    "00": _PORTFOLIO, "01": _PORTFOLIO, "02": _PORTFOLIO, "03": _PORTFOLIO,
    "04": _PORTFOLIO, "05": _PORTFOLIO,
    "06": TopologyChoice("dumbbell", (("pairs", 4), ("bw_mbps", 20), ("delay_ms", 20),
                                      ("queue_pkts", 100))),
}
#: the case each lab's notebook records its measurements under (its ``open_lab(CASE)``)
LAB_CASES: Dict[str, str] = {
    "00": "intro", "01": "udp", "02": "link", "03": "path", "04": "mux", "05": "parallel",
    "06": "pitfalls",
}
#: questions asked about another lab's network than their own
OTHER_TOPOLOGY: Dict[str, TopologyChoice] = {"06-Q6": _PORTFOLIO}


def links_given(topo: Topology, *names: str, queue: bool = False) -> Dict[str, Any]:
    """Rate (``NAME_bw_mbps``), one-way delay (``NAME_delay_ms``) and, with ``queue``, the
    queue limit (``NAME_queue_pkts``) of the named links, as the topology holds them."""
    out: Dict[str, Any] = {}
    for name in names:
        link = topo.link(name)
        out[f"{name}_bw_mbps"] = link.bw_mbps
        out[f"{name}_delay_ms"] = link.delay_ms
        if queue:
            out[f"{name}_queue_pkts"] = link.queue_pkts
    return out


def _rate_mbps(topo: Topology, name: str) -> float:
    """Link ``name``'s rate in Mbit/s (0 for an unshaped link)."""
    return float(topo.link(name).bw_mbps or 0.0)


def _rates(*names: str) -> Callable[[Topology], Dict[str, Any]]:
    """The rates of the named links only."""
    return lambda topo: {f"{name}_bw_mbps": _rate_mbps(topo, name) for name in names}


def _links(*names: str, queue: bool = False) -> Callable[[Topology], Dict[str, Any]]:
    return lambda topo: links_given(topo, *names, queue=queue)


def _nothing(topo: Topology) -> Dict[str, Any]:
    """A question that takes no number of the network."""
    return {}


def _h1_h4_bottleneck(topo: Topology) -> Dict[str, Any]:
    """The slower of L1 and L2: the rate lab 1's path h1 -> h4 is limited to."""
    return {"bottleneck_h1_h4_mbps": min(_rate_mbps(topo, "L1"), _rate_mbps(topo, "L2"))}


def _lab1_offered_l2_l3(topo: Topology) -> Dict[str, Any]:
    """Lab 1's offered rate, and L2 and L3 (h1 -> h9's datagrams cross both)."""
    return {"offered_payload_mbps": LAB1_RATE_MBPS, **links_given(topo, "L2", "L3", queue=True)}


def _l2_l3_and_lab1_offered(topo: Topology) -> Dict[str, Any]:
    """L2 (h1-h4's bottleneck) and L3 (h1-h9's), and lab 1's offered rate."""
    return {"L2_bw_mbps": _rate_mbps(topo, "L2"), "L3_bw_mbps": _rate_mbps(topo, "L3"),
            "offered_payload_mbps": LAB1_RATE_MBPS}


#: question id -> the values it gives on a topology (units in the names)
QUESTION_GIVENS: Dict[str, Callable[[Topology], Dict[str, Any]]] = {
    "00-Q1": _nothing, "00-Q2": _nothing, "00-Q3": _links("L1", "L2"),
    "01-Q1": _lab1_offered_l2_l3, "01-Q2": _nothing, "01-Q3": _h1_h4_bottleneck,
    "01-Q4": _h1_h4_bottleneck,
    "02-Q1": _nothing, "02-Q2": _nothing, "02-Q3": _links("L2", queue=True),
    "03-Q1": _links("L1", "L2", "L3"), "03-Q2": _nothing, "03-Q3": _links("L2", "L3"),
    "04-Q1": _rates("L2", "L3"), "04-Q2": _rates("L2", "L3"), "04-Q3": _nothing,
    "04-Q4": _rates("L2", "L3"),
    "05-Q1": _rates("L2"), "05-Q2": _nothing, "05-Q3": _links("L1", "L2"),
    "06-Q1": _links("B"), "06-Q2": _links("B", queue=True), "06-Q3": _rates("B"),
    "06-Q4": _links("B", queue=True), "06-Q5": _nothing, "06-Q6": _l2_l3_and_lab1_offered,
}


def givens(question_id: str, topo: Topology) -> Dict[str, Any]:
    """The values question ``question_id`` gives on ``topo`` (a new dict each call).

    Raises:
        InputError: an unknown question id.
    """
    question_topology(question_id)  # an unknown id says which ones there are
    return dict(QUESTION_GIVENS[question_id](topo))


def labs() -> List[str]:
    """The labs that have written questions, in order (``00`` ... ``06``)."""
    return sorted(LAB_TOPOLOGIES)


def question_topology(question_id: str) -> TopologyChoice:
    """The topology (without a variant) a question is asked on.

    Raises:
        InputError: an unknown question id.
    """
    if question_id not in QUESTION_GIVENS:
        raise InputError(f"no written question {question_id!r}: choose one of "
                         f"{', '.join(QUESTION_GIVENS)}")
    return OTHER_TOPOLOGY.get(question_id, LAB_TOPOLOGIES[question_id[:2]])


def kit_topology(choice: Union[TopologyChoice, str], variant: str = "") -> Topology:
    """The kit's topology ``choice`` (a :class:`TopologyChoice`, or a kit topology's name)
    on the network of ``variant`` (none: the choice's own variant, or the reference
    values), built in this process (:meth:`TopologyChoice.build_kit`) once per choice;
    the variant stays text (``007`` is not 7)."""
    chosen = choice if isinstance(choice, TopologyChoice) else TopologyChoice(choice)
    return _built(chosen.with_variant(variant) if variant else chosen)


@lru_cache(maxsize=4096)
def _built(choice: TopologyChoice) -> Topology:
    return choice.build_kit()
