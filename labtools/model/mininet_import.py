"""Reading a plain Mininet ``Topo`` object into the kit's topology data.

Duck-typed: this module calls the Topo's own methods (``nodes``, ``isSwitch``,
``nodeInfo``, ``links``) and never imports Mininet itself. Mininet's link options become
the kit's fields: ``bw`` (Mbit/s), ``delay`` (``'10ms'``, ``'500us'``, ``'0.1s'``),
``loss`` (%), ``max_queue_size`` (packets), ``use_htb``.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Dict, List, Optional

from labtools.errors import TopologyError
from labtools.model.addressing import assign_addresses
from labtools.model.topology import HOST, ROUTER, SWITCH, Link, Node, Topology

_DELAY_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(us|ms|s)?\s*$")
_DELAY_SCALE_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, None: 1.0}


def delay_ms_from_mininet(value: Any) -> float:
    """Mininet's delay (``'10ms'``, ``'250us'``, ``'0.1s'``, or a number of ms) in ms."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _DELAY_RE.match(str(value))
    if not match:
        raise TopologyError(f"cannot read Mininet delay {value!r}: use e.g. '10ms'")
    return float(match.group(1)) * _DELAY_SCALE_MS[match.group(2)]


def _queue(value: Any) -> Optional[int]:
    """Mininet's ``max_queue_size``: None for none; anything else must be a whole number
    (a queue of 0 reaches validation and is refused there, as tc would drop everything)."""
    if value is None:
        return None
    if isinstance(value, bool) or not float(value).is_integer():
        raise TopologyError(f"max_queue_size={value!r} must be a whole number of packets")
    return int(value)


def _kind(topo: Any, name: str, degree: int) -> str:
    if topo.isSwitch(name):
        return SWITCH
    cls = topo.nodeInfo(name).get("cls")
    cls_name = getattr(cls, "__name__", str(cls or ""))
    return ROUTER if "router" in cls_name.lower() or degree > 1 else HOST


def _address(info: Dict[str, Any], key: str) -> Optional[str]:
    ip = (info.get(key) or {}).get("ip") if isinstance(info.get(key), dict) else None
    if ip and "/" in str(ip):
        return str(ipaddress.ip_interface(ip))
    return None


def from_mininet_topo(topo: Any, name: str) -> Topology:
    """Convert a Mininet ``Topo`` instance to a :class:`Topology` named ``name``."""
    try:
        names = list(topo.nodes(sort=False))
        raw_links = list(topo.links(sort=False, withInfo=True))
    except (AttributeError, TypeError) as err:
        raise TopologyError(f"{name}: not a Mininet Topo object ({err})") from None
    degree = {n: 0 for n in names}
    for src, dst, _info in raw_links:
        degree[src] += 1
        degree[dst] += 1
    nodes = tuple(Node(n, _kind(topo, n, degree[n])) for n in names)
    first_ip = {n: topo.nodeInfo(n).get("ip") for n in names}
    links: List[Link] = []
    seen_first: set = set()
    for src, dst, info in raw_links:
        addrs: Dict[str, str] = {}
        for end, key in ((src, "params1"), (dst, "params2")):
            given = _address(info, key)
            first = first_ip.get(end)
            if given is None and end not in seen_first and first and "/" in str(first):
                given = str(ipaddress.ip_interface(first_ip[end]))
            if given is not None and not topo.isSwitch(end):
                addrs[end] = given
            seen_first.add(end)
        bw = info.get("bw")  # Mininet leaves a link with bw=0 (or none) unshaped
        queue = info.get("max_queue_size")  # but applies any queue given, 0 included
        links.append(Link(
            src, dst,
            bw_mbps=float(bw) if bw else None,
            delay_ms=delay_ms_from_mininet(info.get("delay")),
            loss_pct=float(info.get("loss") or 0),
            queue_pkts=_queue(queue),
            htb=bool(info.get("use_htb", True)),
            name=str(info.get("name", "")) if info.get("name") else "",
            addrs=addrs,
        ))
    result = Topology(name, nodes, tuple(links))
    try:
        assign_addresses(result)
    except TopologyError:  # inconsistent addresses in the file: let the kit assign them
        bare = tuple(Link(**{**lk.__dict__, "addrs": {}}) for lk in links)
        result = Topology(name, nodes, bare)
    return result
