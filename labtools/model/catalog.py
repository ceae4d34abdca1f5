"""Finding and loading topologies: by name from ``topologies/``, or from a file.

A topology spec is what a user types:

- ``portfolio`` — a file ``topologies/portfolio.py`` of the kit;
- ``dumbbell,pairs=3,bw_mbps=20`` — the same with parameters (as ``mn --topo`` takes them);
- ``path/to/mine.py`` (optionally ``,key=value``) — a Python file that defines
  ``topology(**params) -> Topology``; a plain Mininet custom file that only has
  ``topos = {...}`` works too (its nodes, links and ``bw``/``delay``/``loss``/
  ``max_queue_size`` options are read; a host-like node with more than one link, or whose
  class name contains "Router", counts as a router);
- ``path/to/mine.json`` — ``{"name": ..., "nodes": [{"name", "kind"}], "links": [{"a",
  "b", "bw_mbps", "delay_ms", "loss_pct", "queue_pkts", "htb", "name", "addrs"}]}``.

Loading validates the topology and checks that every pair of hosts has a route.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Tuple

from labtools.errors import TopologyError
from labtools.model import scaling
from labtools.model.mininet_import import from_mininet_topo
from labtools.model.routing import compute_routing
from labtools.model.topology import HOST, Link, Node, Topology
from labtools.paths import PACKAGE_PARENT

_LINK_KEYS = {"a", "b", "bw_mbps", "delay_ms", "loss_pct", "queue_pkts", "htb", "name", "addrs"}


def topologies_dir() -> Path:
    """The folder of the kit's topologies (``$LABTOOLS_TOPOLOGIES`` overrides it)."""
    override = os.environ.get("LABTOOLS_TOPOLOGIES")
    if override:
        return Path(override)
    return PACKAGE_PARENT / "topologies"


def available() -> List[str]:
    """Names of the kit's topologies."""
    folder = topologies_dir()
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def split_spec(spec: str) -> Tuple[str, Dict[str, Any]]:
    """``'dumbbell,pairs=3'`` -> ``('dumbbell', {'pairs': 3})`` (numbers become numbers)."""
    head, *rest = spec.split(",")
    params: Dict[str, Any] = {}
    for item in rest:
        key, sep, value = item.partition("=")
        if not sep or not re.match(r"^[A-Za-z_]\w*$", key.strip()):
            raise TopologyError(f"bad topology parameter {item!r}: write key=value")
        params[key.strip()] = _number_or_text(value.strip())
    return head.strip(), params


def _number_or_text(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(value.lower(), value)


def load_topology(spec: str) -> Topology:
    """Load, validate and route-check the topology that ``spec`` names.

    ``rate_scale=F`` (any topology) scales every link rate by ``F``
    (:mod:`labtools.model.scaling`)."""
    head, params = split_spec(spec)
    factor = params.pop(scaling.PARAMETER, None)
    path = Path(head)
    if path.suffix in (".py", ".json") or os.sep in head:
        if not path.is_file():
            raise TopologyError(f"topology file {head!r} not found")
    else:
        path = topologies_dir() / f"{head}.py"
        if not path.is_file():
            raise TopologyError(
                f"unknown topology {head!r}: choose one of {', '.join(available())} "
                "or give a path to a .py or .json file"
            )
    if path.suffix == ".json":
        if params:
            raise TopologyError("a .json topology takes no parameters")
        topo = from_dict(_read_json(path))
    else:
        topo = _from_python(path, params)
    if factor is not None:
        topo = scaling.scale_rates(topo, factor)
    compute_routing(topo)  # every pair of hosts must have a route
    return topo


def _read_json(path: Path) -> Dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise TopologyError(f"cannot read topology {path}: {err}") from None
    if not isinstance(data, dict):
        raise TopologyError(f"topology {path}: expected a JSON object")
    return data


def from_dict(data: Dict[str, Any]) -> Topology:
    """Build a topology from its JSON form (see the module docstring)."""
    try:
        nodes = tuple(Node(str(n["name"]), str(n.get("kind", HOST))) for n in data["nodes"])
        links = []
        for item in data["links"]:
            unknown = set(item) - _LINK_KEYS
            if unknown:
                raise TopologyError(f"link {item.get('a')}-{item.get('b')}: unknown field(s) "
                                    f"{', '.join(sorted(unknown))}")
            links.append(Link(**item))
    except (KeyError, TypeError) as err:
        raise TopologyError(f"topology JSON is missing or has a bad field: {err}") from None
    return Topology(str(data.get("name", "custom")), nodes, tuple(links),
                    dict(data.get("params", {})))


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


def _import_file(path: Path) -> ModuleType:
    name = f"labtools_topology_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}"
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise TopologyError(f"cannot load topology file {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except TopologyError:
        raise
    except Exception as err:  # noqa: BLE001 - a user's file may fail in any way: one line
        raise TopologyError(f"topology file {path} failed to load: "
                            f"{type(err).__name__}: {err}") from None
    return module


def _from_python(path: Path, params: Dict[str, Any]) -> Topology:
    module = _import_file(path)
    build = getattr(module, "topology", None)
    if callable(build):
        try:
            topo = build(**params)
        except TypeError as err:
            raise TopologyError(f"topology {path.stem}: bad parameters {params}: {err}") from None
        if not isinstance(topo, Topology):
            raise TopologyError(f"{path}: topology() must return a labtools Topology")
        return topo
    topos = getattr(module, "topos", None)
    if isinstance(topos, dict) and topos:
        name, factory = next(iter(topos.items()))
        try:
            mn_topo = factory(**params)
        except Exception as err:  # noqa: BLE001 - a user's Topo class may fail in any way
            raise TopologyError(f"{path}: building Mininet topo {name!r} failed: {err}") from None
        return from_mininet_topo(mn_topo, name)
    raise TopologyError(f"{path} defines neither topology() nor topos = {{...}}")


def load_cases(spec: str) -> Dict[str, Any]:
    """The ``CASES`` a topology file declares for ``labtools run`` (empty if none)."""
    head, _params = split_spec(spec)
    path = Path(head) if head.endswith(".py") or os.sep in head else topologies_dir() / f"{head}.py"
    if path.suffix != ".py" or not path.is_file():
        return {}
    cases = getattr(_import_file(path), "CASES", None)
    return dict(cases) if isinstance(cases, dict) else {}
