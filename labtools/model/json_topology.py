"""The JSON form of a topology: read strictly, written with every result.

``{"name": ..., "params": {...}, "nodes": [{"name", "kind"}], "links": [{"a", "b",
"bw_mbps", "delay_ms", "loss_pct", "queue_pkts", "htb", "name", "addrs"}]}``. Only
``nodes``, ``links`` and each node's ``name`` and link's ``a``/``b`` are required. A key
the kit does not know is refused, not ignored (``"type": "switch"`` on a node would
otherwise make it a host), and so are NaN and Infinity, which JSON does not have;
:class:`~labtools.model.topology.Topology` checks the types and bounds of the values.

``params`` are checked as a topology spec's are (:func:`check_params`): ``rate_scale`` is a
number within 0.05..1 (not ``true``, not text such as ``"0.5"``), the factor the file's
rates are scaled by already; ``variant`` is text of 1..64 letters, digits and ``._@+-``
(``"007"`` stays ``"007"``; a number is refused rather than turned into text, as ``007``
would lose its zeros). A topology file's params may hold only these and the parameters of
the kit's topology it names (a file saved from ``dumbbell,pairs=3`` keeps ``pairs``); any
other key is refused naming the closest known one. Results keep the params of whatever
topology was measured, so reading them back checks only the values of the two.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Collection, Dict, List, Mapping, Optional

from labtools.errors import TopologyError
from labtools.model import scaling
from labtools.model.limits import MAX_LINKS, MAX_NODES, MAX_VARIANT_CHARS, one_line, show
from labtools.model.topology import HOST, Link, Node, Topology

_TOP_KEYS = ("name", "params", "nodes", "links")
_NODE_KEYS = ("name", "kind")
_LINK_KEYS = ("a", "b", "bw_mbps", "delay_ms", "loss_pct", "queue_pkts", "htb", "name", "addrs")
#: a topology file larger than this is refused before it is read (bytes): the largest
#: topology the kit takes (MAX_NODES nodes, MAX_LINKS links) is about 2 MB written out
MAX_JSON_BYTES = 16 * 2**20
#: the params the kit itself reads, of any topology
VARIANT = "variant"
KIT_PARAMS = (scaling.PARAMETER, VARIANT)
_VARIANT_RE = re.compile(r"[\w.@+-]+")


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


def from_dict(data: Mapping[str, Any], known_params: Optional[Collection[str]] = None
              ) -> Topology:
    """Build a topology from its JSON form (see the module docstring); with
    ``known_params``, a key of ``params`` neither among them nor the kit's own
    (:data:`KIT_PARAMS`) is refused."""
    if not isinstance(data, Mapping):
        raise TopologyError(f"a topology is a JSON object, not {type(data).__name__}")
    _known_keys(data, _TOP_KEYS, "the topology")
    nodes = [_node(item, i) for i, item in enumerate(_list(data, "nodes", MAX_NODES))]
    links = [_link(item, i) for i, item in enumerate(_list(data, "links", MAX_LINKS))]
    params = check_params(data.get("params", {}), "topology params", known_params)
    return Topology(data.get("name", "custom"), tuple(nodes), tuple(links), params)


def check_params(params: Any, where: str, known: Optional[Collection[str]] = None
                 ) -> Dict[str, Any]:
    """``params`` checked (a copy, ``rate_scale`` as a float): a JSON object of finite values,
    ``rate_scale`` by :func:`labtools.model.scaling.check_scale`, ``variant`` by
    :func:`check_variant`; with ``known``, any key neither there nor in :data:`KIT_PARAMS`
    is refused, naming the closest known one. :class:`TopologyError` on one line, which
    starts with ``where``."""
    if not isinstance(params, Mapping):
        raise TopologyError(f"{where} must be a JSON object, not {show(params)}")
    _check_finite(params, where)
    checked = dict(params)
    if known is not None:
        allowed = [*KIT_PARAMS, *(k for k in known if k not in KIT_PARAMS)]
        for key, value in checked.items():
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise TopologyError(f"{where}: unknown field {show(key, 30)}={show(value, 20)} "
                                    f"({hint}known: {', '.join(allowed)})")
    if scaling.PARAMETER in checked:
        checked[scaling.PARAMETER] = scaling.check_scale(checked[scaling.PARAMETER], where)
    if VARIANT in checked:
        check_variant(checked[VARIANT], where)
    return checked


def check_variant(value: Any, where: str) -> str:
    """A variant ID as the params of a topology hold it: text of 1..MAX_VARIANT_CHARS
    letters, digits and ``._@+-``, kept as it is (``"007"`` stays ``"007"``)."""
    if not isinstance(value, str):
        raise TopologyError(f"{where}: {VARIANT}={show(value, 30)} must be text (a student's ID "
                            f'like "s1234"; write a number in quotes: "007")')
    if not 1 <= len(value) <= MAX_VARIANT_CHARS or not _VARIANT_RE.fullmatch(value):
        raise TopologyError(f"{where}: {VARIANT}={show(value, 30)} must be 1..{MAX_VARIANT_CHARS}"
                            " letters, digits and ._@+-")
    return value


#: how many characters of a student id a mapped variant keeps (then ``-`` and 8 hex digits)
_MAPPED_KEEP = MAX_VARIANT_CHARS - 9


def variant_of(student_id: str) -> str:
    """The variant a student id draws, the one rule for every place that binds a student
    to a network (a notebook on a hub, grading, the answer keys): the id itself where a
    topology takes it (:func:`check_variant`), else a form it takes, the same for the same
    id on every machine: its characters other than letters, digits and ``._@+-`` as
    ``_``, at most ``MAX_VARIANT_CHARS - 9`` of them, then ``-`` and the first 8 hex
    digits of the id's SHA-256 (``o'neil`` -> ``o_neil-eb1aed4f``; ``o_neil`` stays itself,
    another network).

    Raises:
        TopologyError: an empty id.
    """
    text = str(student_id).strip()
    if not text:
        raise TopologyError("a student id is empty: it cannot name a network")
    if len(text) <= MAX_VARIANT_CHARS and _VARIANT_RE.fullmatch(text):
        return text
    kept = re.sub(r"[^\w.@+-]", "_", text)[:_MAPPED_KEEP]
    return f"{kept}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


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


def _check_finite(params: Mapping[str, Any], where: str) -> None:
    """Refuse NaN and infinity anywhere in ``params`` (JSON cannot hold them)."""
    stack: List[Any] = [params]
    while stack:
        value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise TopologyError(f"{where} hold {value}: not a number JSON can hold")
        if isinstance(value, Mapping):
            stack += [v for k, v in value.items()]
        elif isinstance(value, (list, tuple)):
            stack += list(value)
