"""Tree: N hosts under a tree of switches, ``fanout`` children per switch.

Leaf switches take ``fanout`` hosts each; switches are joined in a tree of the same fanout
up to one root switch (no loops, so no spanning tree is needed). With hosts=100 and
fanout=10: 10 leaf switches under one root. Parameters: ``hosts`` (default 16, at most
1000), ``fanout`` (default 4, 2..32), ``bw_mbps`` and ``delay_ms`` of the switch-switch
links (default unshaped, no delay: runs on a kernel without netem). Addresses
``10.1.0.0/16`` (one subnet).

``mn --custom topologies/tree.py --topo tree,hosts=100,fanout=10``.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import List, Optional

# plain `mn --custom` (the system's Python; exec(), so no __file__) finds this checkout's kit
sys.path.append(str(Path(inspect.currentframe().f_code.co_filename).resolve().parents[1]))  # type: ignore[union-attr]

from labtools.errors import TopologyError
from labtools.lab.mn_custom import mininet_topos
from labtools.model.topology import HOST, SWITCH, Link, Node, Topology

MAX_HOSTS = 1000


def topology(hosts: int = 16, fanout: int = 4, bw_mbps: Optional[float] = None,
             delay_ms: float = 0) -> Topology:
    """``hosts`` hosts under a tree of switches with ``fanout`` children each."""
    if isinstance(hosts, bool) or not isinstance(hosts, int) or not 2 <= hosts <= MAX_HOSTS:
        raise TopologyError(f"tree: hosts={hosts!r} must be an integer within 2..{MAX_HOSTS}")
    if isinstance(fanout, bool) or not isinstance(fanout, int) or not 2 <= fanout <= 32:
        raise TopologyError(f"tree: fanout={fanout!r} must be an integer within 2..32")
    nodes = [Node(f"h{i}", HOST) for i in range(1, hosts + 1)]
    links: List[Link] = []
    count = 0

    def switch() -> str:
        nonlocal count
        count += 1
        nodes.append(Node(f"s{count}", SWITCH))
        return f"s{count}"

    level = []
    for first in range(1, hosts + 1, fanout):
        leaf = switch()
        level.append(leaf)
        for i in range(first, min(first + fanout, hosts + 1)):
            links.append(Link(f"h{i}", leaf, addrs={f"h{i}": f"10.1.{i // 250}.{i % 250 + 1}/16"}))
    while len(level) > 1:
        parents = []
        for start in range(0, len(level), fanout):
            parent = switch()
            parents.append(parent)
            links += [Link(child, parent, bw_mbps=bw_mbps, delay_ms=delay_ms)
                      for child in level[start:start + fanout]]
        level = parents
    return Topology("tree", tuple(nodes), tuple(links),
                    {"hosts": hosts, "fanout": fanout, "bw_mbps": bw_mbps, "delay_ms": delay_ms})


#: for `mn --custom topologies/tree.py --topo tree`
topos = mininet_topos("tree", topology)
