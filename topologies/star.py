"""Star: N hosts on one switch, for measuring how large a network the machine can start.

    h1 --+
    h2 --+-- s1
    ...  |
    hN --+

Parameters: ``hosts`` (default 10, at most 1000: a Linux bridge takes 1024 ports),
``bw_mbps`` and ``delay_ms`` of every host link (default unshaped, no delay: such a
network runs on a kernel without netem). Addresses ``10.1.0.0/16`` (one subnet).

``labtools expect star,hosts=100 h1 h100``, or
``mn --custom topologies/star.py --topo star,hosts=100``.
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

MAX_HOSTS = 1000


def host_address(i: int) -> str:
    """Address of host ``h<i>`` (1-based) in 10.1.0.0/16."""
    return f"10.1.{i // 250}.{i % 250 + 1}/16"


def topology(hosts: int = 10, bw_mbps: Optional[float] = None, delay_ms: float = 0) -> Topology:
    """``hosts`` hosts on switch s1."""
    if isinstance(hosts, bool) or not isinstance(hosts, int) or not 2 <= hosts <= MAX_HOSTS:
        raise TopologyError(f"star: hosts={hosts!r} must be an integer within 2..{MAX_HOSTS}")
    nodes = [Node("s1", SWITCH)] + [Node(f"h{i}", HOST) for i in range(1, hosts + 1)]
    links = [Link(f"h{i}", "s1", bw_mbps=bw_mbps, delay_ms=delay_ms,
                  addrs={f"h{i}": host_address(i)}) for i in range(1, hosts + 1)]
    return Topology("star", tuple(nodes), tuple(links),
                    {"hosts": hosts, "bw_mbps": bw_mbps, "delay_ms": delay_ms})


#: for `mn --custom topologies/star.py --topo star`
topos = mininet_topos("star", topology)
