"""Finding and loading topologies: by name from ``topologies/``, or from a file.

A topology spec is what a user types:

- ``portfolio`` — a file ``topologies/portfolio.py`` of the kit;
- ``dumbbell,pairs=3,bw_mbps=20`` — the same with parameters (as ``mn --topo`` takes them;
  a value that reads as a finite number is a number, ``true``/``false``/``none`` are those
  values, anything else is text; each parameter at most once);
- ``path/to/mine.py`` (optionally ``,key=value``) — a Python file that defines
  ``topology(**params) -> Topology``; a plain Mininet custom file that only has
  ``topos = {...}`` works too (its nodes, links and ``bw``/``delay``/``loss``/
  ``max_queue_size`` options are read; a host-like node with more than one link, or whose
  class name contains "Router", counts as a router). Such a file runs in a child process
  (:mod:`labtools.model.python_topology`): whatever it raises (at import, in
  ``topology()``, in a ``topos`` factory; ``SystemExit`` too) becomes one
  :class:`TopologyError` "topology file PATH failed: ...", and one that has not finished
  within :data:`labtools.model.limits.PYTHON_LOAD_TIME_S` is stopped: "topology file PATH
  did not finish loading within N s";
- ``path/to/mine.json`` — ``{"name": ..., "params": {...}, "nodes": [{"name", "kind"}],
  "links": [{"a", "b", "bw_mbps", "delay_ms", "loss_pct", "queue_pkts", "htb", "name",
  "addrs"}]}``; any other key is refused, and so is a value of the wrong type (``"htb":
  "no"``), NaN or Infinity, and its ``params`` are checked as a spec's are: ``rate_scale``
  a number within 0.05..1, ``variant`` text, no other key but the parameters of the kit's
  topology it names (see :mod:`labtools.model.json_topology`).

``rate_scale=F`` scales any topology's rates (:mod:`labtools.model.scaling`): a number
within 0.05..1 (``true``, ``none`` or text are refused). A file whose params already hold a
``rate_scale`` is scaled by it already; another ``F`` is refused rather than scaling twice
(the same ``F``, as results record it, leaves the file as it is).

Loading validates the topology (:mod:`labtools.model.limits`: what the lab can build) and
checks that every pair of hosts has a route.
"""

from __future__ import annotations

import ast
import math
import os
import re
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Mapping, Tuple

from labtools import settings
from labtools.errors import TopologyError
from labtools.model import python_topology, scaling
from labtools.model.json_topology import VARIANT, from_dict, read_json, to_dict
from labtools.model.routing import compute_routing
from labtools.model.topology import Topology
from labtools.paths import PACKAGE_PARENT

__all__ = ["topologies_dir", "available", "split_spec", "load_topology", "load_cases",
           "kit_module", "from_dict", "to_dict"]

#: a Python file's module, run in this process (tests build a kit file's Mininet Topo from it)
_import_file = python_topology.import_file
_NOT_GIVEN = object()
_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def topologies_dir() -> Path:
    """The folder of the kit's topologies (``$LABTOOLS_TOPOLOGIES`` overrides it)."""
    return settings.current().topologies or PACKAGE_PARENT / "topologies"


def available() -> List[str]:
    """Names of the kit's topologies."""
    folder = topologies_dir()
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


#: parameters whose value is text whatever it looks like (an id: ``variant=007`` is not 7)
TEXT_PARAMETERS = (VARIANT,)


def split_spec(spec: str) -> Tuple[str, Dict[str, Any]]:
    """``'dumbbell,pairs=3'`` -> ``('dumbbell', {'pairs': 3})`` (numbers become numbers,
    except in :data:`TEXT_PARAMETERS`).

    Raises:
        TopologyError: no name, a parameter that is not ``key=value``, a key given twice,
            or an empty value (``variant=``).
    """
    if not isinstance(spec, str):
        raise TopologyError(f"a topology spec is text like dumbbell,pairs=3, not {spec!r}")
    head, *rest = spec.split(",")
    if not head.strip():
        raise TopologyError(f"a topology spec starts with the topology's name, like "
                            f"dumbbell,pairs=3, not {spec[:60]!r}")
    params: Dict[str, Any] = {}
    for item in rest:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not _KEY_RE.fullmatch(key):
            raise TopologyError(f"bad topology parameter {item[:60]!r}: write key=value")
        if key in params:
            raise TopologyError(f"topology parameter {key!r} is given twice")
        value = value.strip()
        if not value:
            raise TopologyError(f"topology parameter {key!r} has no value: write {key}=VALUE")
        params[key] = value if key in TEXT_PARAMETERS else _number_or_text(key, value)
    return head.strip(), params


def legacy_text(key: str, value: str) -> str:
    """How a spec read ``key=value`` before a text parameter stayed text, as text: a
    number-like ``value`` as its number (``007`` as ``7``), ``true``, ``false`` and
    ``none`` as Python names; the value itself when it read as text then too. Grading
    accepts a variant recorded this way (:mod:`labtools.results.ownership`)."""
    try:
        return str(_number_or_text(key, value))
    except TopologyError:  # a number too large: it never made a topology
        return value


def _number_or_text(key: str, value: str) -> Any:
    if _INT_RE.fullmatch(value) or _FLOAT_RE.fullmatch(value):
        try:
            number = int(value) if _INT_RE.fullmatch(value) else float(value)
        except ValueError:  # more digits than Python reads
            number = math.inf
        if isinstance(number, float) and not math.isfinite(number):
            raise TopologyError(f"topology parameter {key}={value[:20]}: the number is too large")
        return number
    return {"true": True, "false": False, "none": None}.get(value.lower(), value)


def load_topology(spec: str) -> Topology:
    """Load, validate and route-check the topology that ``spec`` names.

    ``rate_scale=F`` (any topology) scales every link rate by ``F``
    (:mod:`labtools.model.scaling`; a file whose params hold a ``rate_scale`` of its own
    is scaled already: ``F`` must be that factor, or left out)."""
    return build_topology(*split_spec(spec))


def build_topology(head: str, params: Mapping[str, Any]) -> Topology:
    """The topology ``head`` (a kit topology's name, or a file) with ``params``: what
    :func:`load_topology` builds from a spec, without the spec's text."""
    params = dict(params)
    scale = params.pop(scaling.PARAMETER, _NOT_GIVEN)
    path = _topology_path(head)
    if path.suffix == ".json":
        if params:
            raise TopologyError("a .json topology takes no parameters")
        data = read_json(path)
        topo = from_dict(data, known_params=_kit_parameters(data.get("name")))
    else:
        topo = from_dict(python_topology.build(path, params))
    if scale is not _NOT_GIVEN:
        topo = scaling.scale_rates(topo, scale)
    compute_routing(topo)  # every pair of hosts must have a route
    return topo


def _topology_path(head: str) -> Path:
    """The file a spec's head names: a path, or a kit topology's name."""
    path = Path(head)
    if path.suffix in (".py", ".json") or os.sep in head:
        if not path.is_file():
            raise TopologyError(f"topology file {head!r} not found")
        return path
    path = topologies_dir() / f"{head}.py"
    if not path.is_file():
        raise TopologyError(
            f"unknown topology {head!r}: choose one of {', '.join(available())} "
            "or give a path to a .py or .json file"
        )
    return path


def _kit_parameters(name: Any) -> Tuple[str, ...]:
    """The parameter names of the kit's topology ``name`` (read from its file's
    ``def topology(...)``, not run); none when ``name`` is not one of the kit's."""
    if not isinstance(name, str) or name not in available():
        return ()
    try:
        tree = ast.parse((topologies_dir() / f"{name}.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return ()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "topology":
            args = node.args
            return tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
    return ()


@lru_cache(maxsize=None)
def kit_module(name: str) -> ModuleType:
    """The module of the kit's own topology file ``name``, imported once in this process
    (:func:`labtools.model.python_topology.import_file`, the one loader of topology files;
    the kit's files are trusted, so no child process): what builds the kit's topologies by
    the hundred (:meth:`labtools.model.choice.TopologyChoice.build_kit`).

    Raises:
        TopologyError: ``name`` is not one of the kit's topologies.
    """
    path = topologies_dir() / f"{name}.py"
    if os.sep in name or not path.is_file():
        raise TopologyError(f"{name} is not one of the kit's topologies ({path})")
    return python_topology.import_file(path)


def load_cases(spec: str) -> Dict[str, Any]:
    """The ``CASES`` a topology file declares for ``labtools run`` (empty if none)."""
    head, _params = split_spec(spec)
    path = Path(head) if head.endswith(".py") or os.sep in head else topologies_dir() / f"{head}.py"
    if path.suffix != ".py" or not path.is_file():
        return {}
    return python_topology.cases(path)
