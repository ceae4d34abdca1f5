"""Dumbbell: N host pairs on two switches joined by one shaped link.

    a1 --+                      +-- b1
    a2 --+-- s1 ====B==== s2 --+-- b2
    ...                          ...

Hosts ``a1..aN`` hang on switch ``s1``, hosts ``b1..bN`` on switch ``s2``; the link ``B``
between the switches is the bottleneck. All hosts are on one subnet (no routers).

Parameters: ``bw_mbps`` (default 10), ``delay_ms`` one-way (default 10), ``pairs``
(default 2), ``queue_pkts`` (default 100), ``variant`` (a student's ID: the bottleneck's
rate and delay drawn within 20 % of the values given, the same for the same ID).

``labtools expect dumbbell,pairs=3,bw_mbps=20 a1 b1`` or
``mn --custom topologies/dumbbell.py --topo dumbbell,pairs=3``.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Optional

# plain `mn --custom` (the system's Python; exec(), so no __file__) finds this checkout's kit
sys.path.append(str(Path(inspect.currentframe().f_code.co_filename).resolve().parents[1]))  # type: ignore[union-attr]

from labtools.errors import TopologyError
from labtools.lab.mn_custom import mininet_topos
from labtools.model.topology import HOST, SWITCH, Link, Node, Topology
from labtools.model.variants import around, draw_links


def topology(bw_mbps: float = 10, delay_ms: float = 10, pairs: int = 2,
             queue_pkts: Optional[int] = 100, variant: object = None) -> Topology:
    """A dumbbell with ``pairs`` host pairs across a ``bw_mbps``/``delay_ms`` link."""
    if isinstance(pairs, bool) or not isinstance(pairs, int) or not 1 <= pairs <= 50:
        raise TopologyError(f"dumbbell: pairs={pairs!r} must be an integer within 1..50")
    nodes = [Node("s1", SWITCH), Node("s2", SWITCH)]
    links = [Link("s1", "s2", bw_mbps=bw_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts,
                  name="B")]
    for i in range(1, pairs + 1):
        nodes += [Node(f"a{i}", HOST), Node(f"b{i}", HOST)]
        links += [Link(f"a{i}", "s1"), Link(f"b{i}", "s2")]
    params = {"bw_mbps": bw_mbps, "delay_ms": delay_ms, "pairs": pairs, "queue_pkts": queue_pkts}
    reference = Topology("dumbbell", tuple(nodes), tuple(links), params)  # checks the values
    if variant is None or variant == "":
        return reference
    spread = around(bw_mbps, delay_ms)
    drawn = draw_links("dumbbell", str(variant), links, {"B": spread} if spread else {})
    return Topology("dumbbell", tuple(nodes), drawn, {**params, "variant": str(variant)})


#: for `mn --custom topologies/dumbbell.py --topo dumbbell`
topos = mininet_topos("dumbbell", topology)
