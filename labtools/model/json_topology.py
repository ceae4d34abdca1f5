"""The JSON form of a topology: read strictly, written with every result.

``{"name": ..., "params": {...}, "nodes": [{"name", "kind"}], "links": [{"a", "b",
"bw_mbps", "delay_ms", "loss_pct", "queue_pkts", "htb", "name", "addrs"}]}``. Only
``nodes``, ``links`` and each node's ``name`` and link's ``a``/``b`` are required. A key
the kit does not know is refused, not ignored (``"type": "switch"`` on a node would
otherwise make it a host), and so are NaN and Infinity, which JSON does not have;
:class:`~labtools.model.topology.Topology` checks the types and bounds of the values.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List, Mapping

from labtools.errors import TopologyError
from labtools.model.limits import MAX_LINKS, MAX_NODES, one_line, show
from labtools.model.topology import HOST, Link, Node, Topology

_TOP_KEYS = ("name", "params", "nodes", "links")
_NODE_KEYS = ("name", "kind")
_LINK_KEYS = ("a", "b", "bw_mbps", "delay_ms", "loss_pct", "queue_pkts", "htb", "name", "addrs")
#: a topology file larger than this is refused before it is read (bytes): the largest
#: topology the kit takes (MAX_NODES nodes, MAX_LINKS links) is about 2 MB written out
MAX_JSON_BYTES = 16 * 2**20


def read_json(path: Path) -> Dict[str, Any]:
    """The JSON object in ``path``; :class:`TopologyError` for anything else."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise TopologyError(f"topology {path} is {size / 2**20:.0f} MiB: the kit takes files "
                                f"up to {MAX_JSON_BYTES // 2**20} MiB ({MAX_NODES} nodes, "
                                f"{MAX_LINKS} links)")
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant,
                          parse_float=_finite_float)
    except (OSError, ValueError) as err:
        raise TopologyError(f"cannot read topology {path}: {one_line(str(err))}") from None
    except RecursionError:
        raise TopologyError(f"cannot read topology {path}: nested too deeply") from None
    if not isinstance(data, dict):
        raise TopologyError(f"topology {path}: expected a JSON object")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is too large")
    return value


def from_dict(data: Mapping[str, Any]) -> Topology:
    """Build a topology from its JSON form (see the module docstring)."""
    if not isinstance(data, Mapping):
        raise TopologyError(f"a topology is a JSON object, not {type(data).__name__}")
    _known_keys(data, _TOP_KEYS, "the topology")
    nodes = [_node(item, i) for i, item in enumerate(_list(data, "nodes", MAX_NODES))]
    links = [_link(item, i) for i, item in enumerate(_list(data, "links", MAX_LINKS))]
    params = data.get("params", {})
    if not isinstance(params, Mapping):
        raise TopologyError(f"topology params must be a JSON object, not {show(params)}")
    _check_finite(params)
    return Topology(data.get("name", "custom"), tuple(nodes), tuple(links), dict(params))


def to_dict(topo: Topology) -> Dict[str, Any]:
    """The JSON form of a topology (saved with every result)."""
    return {
        "name": topo.name,
        "params": dict(topo.params),
        "nodes": [{"name": n.name, "kind": n.kind} for n in topo.nodes],
        "links": [
            {"a": lk.a, "b": lk.b, "bw_mbps": lk.bw_mbps, "delay_ms": lk.delay_ms,
             "loss_pct": lk.loss_pct, "queue_pkts": lk.queue_pkts, "htb": lk.htb,
             "name": lk.name, "addrs": dict(lk.addrs)}
            for lk in topo.links
        ],
    }


def _list(data: Mapping[str, Any], key: str, most: int) -> List[Any]:
    if key not in data:
        raise TopologyError(f"the topology has no {key!r} list")
    items = data[key]
    if not isinstance(items, list):
        raise TopologyError(f"topology {key!r} must be a JSON list, not {show(items)}")
    if len(items) > most:
        raise TopologyError(f"the topology has {len(items)} {key}: the kit takes at most {most}")
    return items


def _node(item: Any, index: int) -> Node:
    where = f"node #{index + 1}"
    if not isinstance(item, Mapping):
        raise TopologyError(f'{where}: expected an object like {{"name": "h1", "kind": "host"}}, '
                            f"not {show(item)}")
    if "name" in item:
        where = f"node {show(item['name'])}"
    _known_keys(item, _NODE_KEYS, where)
    if "name" not in item:
        raise TopologyError(f"{where}: has no name")
    return Node(item["name"], item.get("kind", HOST))


def _link(item: Any, index: int) -> Link:
    where = f"link #{index + 1}"
    if not isinstance(item, Mapping):
        raise TopologyError(f'{where}: expected an object like {{"a": "h1", "b": "s1"}}, not '
                            f"{show(item)}")
    if "a" in item and "b" in item:
        where = f"link {show(item['a'], 20)}-{show(item['b'], 20)}"
    _known_keys(item, _LINK_KEYS, where)
    for end in ("a", "b"):
        if end not in item:
            raise TopologyError(f"{where}: has no {end!r} (the node at that end)")
    return Link(**{key: item[key] for key in _LINK_KEYS if key in item})


def _known_keys(item: Mapping[str, Any], known: tuple, where: str) -> None:
    unknown = [key for key in item if key not in known]
    if unknown:
        names = ", ".join(show(key, 30) for key in unknown[:5])
        raise TopologyError(f"{where}: unknown field(s) {names} (known: {', '.join(known)})")


def _check_finite(params: Mapping[str, Any]) -> None:
    """Refuse NaN and infinity anywhere in ``params`` (JSON cannot hold them)."""
    stack: List[Any] = [params]
    while stack:
        value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise TopologyError(f"topology params hold {value}: not a number JSON can hold")
        if isinstance(value, Mapping):
            stack += [v for k, v in value.items()]
        elif isinstance(value, (list, tuple)):
            stack += list(value)
