"""Line: N forwarding nodes (routers) in a row, a host at each end.

    h1 -- r1 -- r2 -- ... -- rN -- h2

Parameters: ``n`` routers (default 7), ``bw_mbps`` per router-router link (default 10),
``delay_ms`` one-way per router-router link (default 1), ``queue_pkts`` (default None),
``variant`` (a student's ID: each router-router link's rate and delay drawn within 20 % of
the values given, the same for the same ID).

``labtools expect line,n=4 h1 h2`` or ``mn --custom topologies/line.py --topo line,n=4``.
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
from labtools.model.topology import HOST, ROUTER, Link, Node, Topology
from labtools.model.variants import around, draw_links


def topology(n: int = 7, bw_mbps: float = 10, delay_ms: float = 1,
             queue_pkts: Optional[int] = None, variant: object = None) -> Topology:
    """``n`` routers in a row with hosts h1 and h2 at the ends."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 60:
        raise TopologyError(f"line: n={n!r} must be an integer within 1..60")
    nodes = [Node("h1", HOST), Node("h2", HOST)] + [Node(f"r{i}", ROUTER) for i in range(1, n + 1)]
    links = [Link("h1", "r1")]
    for i in range(1, n):
        links.append(Link(f"r{i}", f"r{i + 1}", bw_mbps=bw_mbps, delay_ms=delay_ms,
                          queue_pkts=queue_pkts, name=f"L{i}"))
    links.append(Link(f"r{n}", "h2"))
    params = {"n": n, "bw_mbps": bw_mbps, "delay_ms": delay_ms, "queue_pkts": queue_pkts}
    reference = Topology("line", tuple(nodes), tuple(links), params)  # checks the values
    if variant is None or variant == "":
        return reference
    spread = around(bw_mbps, delay_ms)
    ranges = {f"L{i}": spread for i in range(1, n) if spread is not None}
    drawn = draw_links("line", str(variant), links, ranges)
    return Topology("line", tuple(nodes), drawn, {**params, "variant": str(variant)})


#: for `mn --custom topologies/line.py --topo line`
topos = mininet_topos("line", topology)
