"""Per-student variants of a topology: the same shape, other link values, drawn from an ID.

``portfolio,variant=s1234`` is the reference topology with each shaped link's rate, delay
and queue drawn from ranges around the reference values. The draw depends only on the
topology's name and the variant ID (a SHA-256 seed), so the same ID always gives the same
network, on every machine, and different IDs give different ones.

The ranges keep every lab teachable and faithful on a 2-core VM under software emulation:
rates stay at the reference's tens of Mbit/s, delays in whole milliseconds, queues hold
about the same time of traffic as the reference's, and the relations the notebooks teach
hold (on the reference topology: L1 faster than L2 faster than L3, and L3 faster than half
of L2, so two flows sharing L2 are held by L2).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from typing import Callable, Dict, Optional, Sequence, Tuple

from labtools.errors import TopologyError
from labtools.model.expect import TCP_FRAME_BYTES
from labtools.model.topology import Link


@dataclass(frozen=True)
class LinkRange:
    """Where a link's values are drawn from: whole Mbit/s and whole ms, both ends included."""

    bw_mbps: Tuple[int, int]
    delay_ms: Tuple[int, int]


def rng(topology: str, variant: str) -> random.Random:
    """The random generator of one variant (seeded from the topology name and the ID)."""
    if not variant or not str(variant).strip():
        raise TopologyError("a variant needs an ID (variant=ID)")
    digest = hashlib.sha256(f"{topology}:{str(variant).strip()}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def queue_for(reference: Link, bw_mbps: float) -> Optional[int]:
    """A queue holding as much time of traffic at ``bw_mbps`` as the reference's does (its
    drain time, :func:`labtools.model.expect.queue_drain_ms`, in full frames).

    The arithmetic is the one the variants were first drawn with, step for step: computed
    another way (through the drain time in ms), 853 of 24 million rate and queue pairs
    round to another queue, and a student's network must not change."""
    if reference.queue_pkts is None or reference.bw_mbps is None:
        return reference.queue_pkts
    frame_bits = TCP_FRAME_BYTES * 8
    seconds = reference.queue_pkts * frame_bits / (reference.bw_mbps * 1e6)
    return max(2, round(seconds * bw_mbps * 1e6 / frame_bits))


def draw_links(topology: str, variant: str, links: Sequence[Link],
               ranges: Dict[str, LinkRange],
               accept: Callable[[Dict[str, Link]], bool] = lambda drawn: True,
               attempts: int = 1000) -> Tuple[Link, ...]:
    """``links`` with the named ones redrawn from ``ranges`` (by link name), until
    ``accept`` (given the redrawn links by name) holds; deterministic for one variant."""
    gen = rng(topology, variant)
    for _ in range(attempts):
        drawn: Dict[str, Link] = {}
        for link in links:
            spec = ranges.get(link.name)
            if spec is not None:
                bw = gen.randint(*spec.bw_mbps)
                drawn[link.name] = replace(link, bw_mbps=bw, delay_ms=gen.randint(*spec.delay_ms),
                                           queue_pkts=queue_for(link, bw))
        if accept(drawn):
            return tuple(drawn.get(link.name, link) if link.name else link for link in links)
    raise TopologyError(f"variant {variant!r} of {topology}: no draw fits its ranges")


def around(bw_mbps: Optional[float], delay_ms: float, spread: float = 0.2) -> Optional[LinkRange]:
    """A range of ``spread`` (a fraction) either side of a link's values, in whole Mbit/s
    and whole ms (at least 1); None for an unshaped link."""
    if bw_mbps is None:
        return None
    low_bw = max(1, round(bw_mbps * (1 - spread)))
    delay = (max(1, round(delay_ms * (1 - spread))), max(1, round(delay_ms * (1 + spread)))) \
        if delay_ms > 0 else (0, 0)
    return LinkRange((low_bw, max(low_bw, round(bw_mbps * (1 + spread)))), delay)
