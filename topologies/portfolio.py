"""The reference topology of the assignment: 9 hosts, 4 routers, 2 switches.

    h1, h2, h3 -- s1 -- r1 ==L1== r2 ==L2== r3 ==L3== r4 -- h9
                               |           |  \\
                              h7          s2   h8
                                         / | \\
                                       h4 h5 h6

L1: 40 Mbit/s, 10 ms, 67 packets; L2: 30 Mbit/s, 20 ms, 100 packets;
L3: 20 Mbit/s, 10 ms, 33 packets; all shaped with HTB. Other links are unshaped.

Runs with the kit (``labtools expect portfolio h1 h4``) and with plain Mininet:
``mn --custom topologies/portfolio.py --topo portfolio``.

``portfolio,variant=ID`` gives a student's own variant: L1 36-44 Mbit/s and 8-12 ms, L2
25-33 Mbit/s and 15-25 ms, L3 16-22 Mbit/s and 8-12 ms (queues holding the same time of
traffic as here), always with L1 > L2 > L3 > L2 / 2, the same for the same ID.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

# plain `mn --custom` (the system's Python; exec(), so no __file__) finds this checkout's kit
sys.path.append(str(Path(inspect.currentframe().f_code.co_filename).resolve().parents[1]))  # type: ignore[union-attr]

from labtools.lab.mn_custom import mininet_topos
from labtools.model.topology import HOST, ROUTER, SWITCH, Link, Node, Topology
from labtools.model.variants import LinkRange, draw_links

#: where a variant's shaped links are drawn from
VARIANT_RANGES = {
    "L1": LinkRange(bw_mbps=(36, 44), delay_ms=(8, 12)),
    "L2": LinkRange(bw_mbps=(25, 33), delay_ms=(15, 25)),
    "L3": LinkRange(bw_mbps=(16, 22), delay_ms=(8, 12)),
}


def _teachable(links: dict) -> bool:
    """L1 > L2 > L3, and L3 above half of L2 (two flows on L2 are held by L2)."""
    l1, l2, l3 = (links[n].bw_mbps for n in ("L1", "L2", "L3"))
    return l1 > l2 > l3 > l2 / 2


def topology(variant: object = None) -> Topology:
    """The reference topology, or the variant ``variant`` of it (see the module docstring)."""
    nodes = [Node(f"h{i}", HOST) for i in range(1, 10)]
    nodes += [Node(f"r{i}", ROUTER) for i in range(1, 5)]
    nodes += [Node("s1", SWITCH), Node("s2", SWITCH)]
    links = [
        # subnet A: the left LAN
        Link("h1", "s1", addrs={"h1": "10.0.0.2/24"}),
        Link("h2", "s1", addrs={"h2": "10.0.0.3/24"}),
        Link("h3", "s1", addrs={"h3": "10.0.0.4/24"}),
        Link("s1", "r1", addrs={"r1": "10.0.0.1/24"}),
        # subnet B: L1
        Link("r1", "r2", bw_mbps=40, delay_ms=10, queue_pkts=67, htb=True, name="L1",
             addrs={"r1": "10.0.1.1/24", "r2": "10.0.1.2/24"}),
        # subnet C: h7 on r2
        Link("h7", "r2", addrs={"h7": "10.0.2.2/24", "r2": "10.0.2.1/24"}),
        # subnet D: L2
        Link("r2", "r3", bw_mbps=30, delay_ms=20, queue_pkts=100, htb=True, name="L2",
             addrs={"r2": "10.0.3.1/24", "r3": "10.0.3.2/24"}),
        # subnet E: the right LAN
        Link("s2", "r3", addrs={"r3": "10.0.4.1/24"}),
        Link("h4", "s2", addrs={"h4": "10.0.4.2/24"}),
        Link("h5", "s2", addrs={"h5": "10.0.4.3/24"}),
        Link("h6", "s2", addrs={"h6": "10.0.4.4/24"}),
        # subnet F: h8 on r3
        Link("r3", "h8", addrs={"r3": "10.0.5.1/24", "h8": "10.0.5.2/24"}),
        # subnet G: L3
        Link("r3", "r4", bw_mbps=20, delay_ms=10, queue_pkts=33, htb=True, name="L3",
             addrs={"r3": "10.0.6.1/24", "r4": "10.0.6.2/24"}),
        # subnet H: h9 on r4
        Link("r4", "h9", addrs={"r4": "10.0.7.1/24", "h9": "10.0.7.2/24"}),
    ]
    if variant is None or variant == "":
        return Topology("portfolio", tuple(nodes), tuple(links))
    drawn = draw_links("portfolio", str(variant), links, VARIANT_RANGES, _teachable)
    return Topology("portfolio", tuple(nodes), drawn, {"variant": str(variant)})


#: for `mn --custom topologies/portfolio.py --topo portfolio`
topos = mininet_topos("portfolio", topology)

#: the pairs and flow sets of the assignment's five test cases (`labtools run portfolio CASE`)
CASES = {
    "path": ["h1:h4", "h1:h9", "h7:h9"],
    "mux": [["h1:h4", "h2:h5"], ["h1:h4", "h2:h5", "h3:h6"], ["h1:h4", "h7:h9"],
            ["h1:h4", "h8:h9"]],
    "parallel": [["h1:h4x2", "h2:h5", "h3:h6"]],
}
