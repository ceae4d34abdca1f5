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
  class name contains "Router", counts as a router). Whatever such a file raises (at
  import, in ``topology()``, in a ``topos`` factory; ``SystemExit`` too) becomes one
  :class:`TopologyError` "topology file PATH failed: ...";
- ``path/to/mine.json`` — ``{"name": ..., "params": {...}, "nodes": [{"name", "kind"}],
  "links": [{"a", "b", "bw_mbps", "delay_ms", "loss_pct", "queue_pkts", "htb", "name",
  "addrs"}]}``; any other key is refused, and so is a value of the wrong type (``"htb":
  "no"``), NaN or Infinity (see :mod:`labtools.model.json_topology`).

Loading validates the topology (:mod:`labtools.model.limits`: what the lab can build) and
checks that every pair of hosts has a route.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, List, Tuple, TypeVar

from labtools import settings
from labtools.errors import LabtoolsError, TopologyError
from labtools.model import scaling
from labtools.model.json_topology import from_dict, read_json, to_dict
from labtools.model.limits import one_line
from labtools.model.mininet_import import from_mininet_topo
from labtools.model.routing import compute_routing
from labtools.model.topology import Topology
from labtools.paths import PACKAGE_PARENT

__all__ = ["topologies_dir", "available", "split_spec", "load_topology", "load_cases",
           "from_dict", "to_dict"]

_T = TypeVar("_T")
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


def split_spec(spec: str) -> Tuple[str, Dict[str, Any]]:
    """``'dumbbell,pairs=3'`` -> ``('dumbbell', {'pairs': 3})`` (numbers become numbers)."""
    if not isinstance(spec, str):
        raise TopologyError(f"a topology spec is text like dumbbell,pairs=3, not {spec!r}")
    head, *rest = spec.split(",")
    params: Dict[str, Any] = {}
    for item in rest:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not _KEY_RE.fullmatch(key):
            raise TopologyError(f"bad topology parameter {item!r}: write key=value")
        if key in params:
            raise TopologyError(f"topology parameter {key!r} is given twice")
        params[key] = _number_or_text(key, value.strip())
    return head.strip(), params


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
        topo = from_dict(read_json(path))
    else:
        topo = _from_python(path, params)
    if factor is not None:
        topo = scaling.scale_rates(topo, factor)
    compute_routing(topo)  # every pair of hosts must have a route
    return topo


def _guarded(path: Path, call: Callable[[], _T]) -> _T:
    """``call()``, where any exception of a user's file (``SystemExit`` too, but not
    Ctrl-C) becomes one :class:`TopologyError` naming the file; the kit's own errors
    (a bad value in a Topology it builds) pass as they are, on one line."""
    try:
        return call()
    except KeyboardInterrupt:
        raise
    except LabtoolsError as err:
        if len(str(err).splitlines()) > 1:
            raise TopologyError(f"topology file {path} failed: {_reason(err)}") from None
        raise
    except BaseException as err:  # noqa: BLE001 - a user's file may fail in any way: one line
        raise TopologyError(f"topology file {path} failed: {_reason(err)}") from None


def _reason(err: BaseException) -> str:
    """``Type: message`` on one line, at most 300 characters (even when ``str(err)`` fails)."""
    try:
        text = one_line(str(err))
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - an exception that cannot say what it is
        text = "(its message cannot be shown)"
    reason = f"{type(err).__name__}: {text}" if text else type(err).__name__
    return reason if len(reason) <= 300 else reason[:297] + "..."


def _import_file(path: Path) -> ModuleType:
    """The module of a topology file, run once more on every call."""
    name = f"labtools_topology_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}"
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise TopologyError(f"cannot load topology file {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def run() -> ModuleType:
        sys.modules[name] = module  # as an import does: dataclasses look it up there
        try:
            loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module

    return _guarded(path, run)


def _check_parameters(path: Path, build: Callable[..., Any], params: Dict[str, Any]) -> None:
    """Refuse parameters ``build`` does not take, before calling it."""
    try:
        inspect.signature(build).bind(**params)
    except TypeError as err:
        raise TopologyError(f"topology {path.stem}: bad parameters {params}: {err}") from None
    except ValueError:  # no signature to check (a built-in): the call will tell
        pass


def _from_python(path: Path, params: Dict[str, Any]) -> Topology:
    module = _import_file(path)
    return _guarded(path, lambda: _build(path, module, params))


def _build(path: Path, module: ModuleType, params: Dict[str, Any]) -> Topology:
    build = getattr(module, "topology", None)
    if callable(build):
        _check_parameters(path, build, params)
        topo = build(**params)
        if not isinstance(topo, Topology):
            raise TopologyError(f"{path}: topology() must return a labtools Topology, not "
                                f"{type(topo).__name__}")
        return topo
    topos = getattr(module, "topos", None)
    if isinstance(topos, dict) and topos:
        name, factory = next(iter(topos.items()))
        if not callable(factory):
            raise TopologyError(f"{path}: topos[{name!r}] must be a Mininet Topo class or a "
                                "function that makes one")
        _check_parameters(path, factory, params)
        return from_mininet_topo(factory(**params), str(name))
    raise TopologyError(f"{path} defines neither topology() nor topos = {{...}}")


def load_cases(spec: str) -> Dict[str, Any]:
    """The ``CASES`` a topology file declares for ``labtools run`` (empty if none)."""
    head, _params = split_spec(spec)
    path = Path(head) if head.endswith(".py") or os.sep in head else topologies_dir() / f"{head}.py"
    if path.suffix != ".py" or not path.is_file():
        return {}
    module = _import_file(path)
    cases = _guarded(path, lambda: getattr(module, "CASES", None))
    return dict(cases) if isinstance(cases, dict) else {}
