"""Reading a plain Mininet ``Topo`` object into the kit's topology data.

Duck-typed: this module calls the Topo's own methods (``nodes``, ``isSwitch``,
``nodeInfo``, ``links``) and never imports Mininet itself. Mininet's link options become
the kit's fields: ``bw`` (Mbit/s), ``delay`` (``'10ms'``, ``'500us'``, ``'0.1s'``),
``loss`` (%), ``max_queue_size`` (packets), ``use_tbf`` (TBF rather than HTB; ``use_htb``,
which older scripts pass and Mininet 2.3 ignores, is accepted and changes nothing).
"""

from __future__ import annotations

import ipaddress
import math
import re
from typing import Any, Dict, List, Optional, Tuple

from labtools.errors import TopologyError
from labtools.model.addressing import assign_addresses
from labtools.model.limits import name_of, one_line, show
from labtools.model.topology import HOST, ROUTER, SWITCH, Link, Node, Topology

# what tc's get_time reads: a number and a unit (Mininet hands the text to tc as it is)
_DELAY_RE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*"
                       r"(s|secs?|ms|msecs?|us|usecs?)?\s*", re.IGNORECASE)
_DELAY_SCALE_MS = {"s": 1e3, "sec": 1e3, "secs": 1e3, "ms": 1.0, "msec": 1.0, "msecs": 1.0,
                   "us": 1e-3, "usec": 1e-3, "usecs": 1e-3, None: 1.0}


def delay_ms_from_mininet(value: Any) -> float:
    """Mininet's delay (``'10ms'``, ``'250us'``, ``'0.1s'``, or a number of ms) in ms."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _DELAY_RE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        raise TopologyError(f"cannot read Mininet delay {show(value)}: use e.g. '10ms'")
    unit = match.group(2).lower() if match.group(2) else None
    return float(match.group(1)) * _DELAY_SCALE_MS[unit]


def _number(info: Dict[str, Any], key: str, where: str) -> Optional[float]:
    """A numeric link option (``bw``, ``loss``, ``max_queue_size``): None when absent;
    Mininet formats it with ``%f``/``%d``, so text or a boolean is refused."""
    value = info.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TopologyError(f"{where}: {key}={show(value)} must be a number")
    return float(value)


def _queue(value: Optional[float], where: str) -> Optional[int]:
    """Mininet's ``max_queue_size``: None for none; anything else must be a whole number
    (a queue of 0 reaches validation and is refused there, as tc would drop everything)."""
    if value is None:
        return None
    if not math.isfinite(value) or not value.is_integer():
        raise TopologyError(f"{where}: max_queue_size={show(value)} must be a whole number of "
                            "packets")
    return int(value)


def _kind(topo: Any, name: str, degree: int) -> str:
    if topo.isSwitch(name):
        return SWITCH
    cls = _info(topo, name).get("cls")
    cls_name = getattr(cls, "__name__", str(cls or ""))
    return ROUTER if "router" in cls_name.lower() or degree > 1 else HOST


def _info(topo: Any, name: str) -> Dict[str, Any]:
    info = topo.nodeInfo(name)
    if not isinstance(info, dict):
        raise TopologyError(f"node {show(name)}: nodeInfo() gave {show(info)}, not a dict")
    return info


def _address(value: Any, where: str) -> Optional[str]:
    """``'10.0.0.1/24'`` as the kit writes it; None without a prefix (Mininet's own)."""
    if not value or "/" not in str(value):
        return None
    try:
        return str(ipaddress.ip_interface(str(value)))
    except ValueError:
        raise TopologyError(f"{where}: bad address {show(value)}") from None


def _link_triples(topo: Any, name: str) -> List[Tuple[str, str, Dict[str, Any]]]:
    raw = list(topo.links(sort=False, withInfo=True))
    for item in raw:
        if not (isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], str)
                and isinstance(item[1], str) and isinstance(item[2], dict)):
            raise TopologyError(f"{name_of(name)}: links() gave {show(item)}, not (node, node, "
                                "options)")
    return raw


def from_mininet_topo(topo: Any, name: str) -> Topology:
    """Convert a Mininet ``Topo`` instance to a :class:`Topology` named ``name``."""
    try:
        names = list(topo.nodes(sort=False))
        raw_links = _link_triples(topo, name)
        for node in names:
            if not isinstance(node, str):
                raise TopologyError(f"{name_of(name)}: nodes() gave {show(node)}, not a name")
    except (AttributeError, TypeError) as err:
        raise TopologyError(f"{name_of(name)}: not a Mininet Topo object "
                            f"({one_line(str(err))})") from None
    degree: Dict[str, int] = {n: 0 for n in names}
    for src, dst, _options in raw_links:
        for end in (src, dst):
            if end not in degree:
                raise TopologyError(f"{name_of(name)}: link {name_of(src)}-{name_of(dst)} names "
                                    f"a node {show(end)} that nodes() does not list")
            degree[end] += 1
    nodes = tuple(Node(n, _kind(topo, n, degree[n])) for n in names)
    first_ip = {n: _address(_info(topo, n).get("ip"), f"node {name_of(n)}") for n in names}
    links: List[Link] = []
    seen_first: set = set()
    for src, dst, info in raw_links:
        where = f"link {name_of(src)}-{name_of(dst)}"
        addrs: Dict[str, str] = {}
        for end, key in ((src, "params1"), (dst, "params2")):
            params = info.get(key)
            given = _address(params.get("ip"), where) if isinstance(params, dict) else None
            if given is None and end not in seen_first:
                given = first_ip[end]
            if given is not None and not topo.isSwitch(end):
                addrs[end] = given
            seen_first.add(end)
        links.append(_shaped_link(src, dst, info, addrs, where))
    result = Topology(name, nodes, tuple(links))
    try:
        assign_addresses(result)
    except TopologyError:  # inconsistent addresses in the file: let the kit assign them
        bare = tuple(Link(**{**lk.__dict__, "addrs": {}}) for lk in links)
        result = Topology(name, nodes, bare)
    return result


def _shaped_link(src: str, dst: str, info: Dict[str, Any], addrs: Dict[str, str],
                 where: str) -> Link:
    """The link ``src``-``dst`` with the shaping Mininet's ``addLink`` options ``info``
    give it (``bw`` Mbit/s, ``delay``, ``loss`` %, ``max_queue_size`` packets, TBF or
    HTB) and the addresses ``addrs``; ``where`` names it in errors."""
    bw = _number(info, "bw", where)  # Mininet leaves a link with bw=0 (or none) unshaped
    for key in ("use_tbf", "use_htb"):  # Mininet 2.3 takes use_tbf and ignores use_htb
        if not isinstance(info.get(key, False), bool):
            raise TopologyError(f"{where}: {key}={show(info[key])} must be True or False")
    return Link(
        src, dst,
        bw_mbps=bw if bw else None,
        delay_ms=delay_ms_from_mininet(info.get("delay")),
        loss_pct=_number(info, "loss", where) or 0.0,
        queue_pkts=_queue(_number(info, "max_queue_size", where), where),  # 0 included
        htb=not info.get("use_tbf", False),
        name=str(info["name"]) if info.get("name") else "",
        addrs=addrs,
    )
