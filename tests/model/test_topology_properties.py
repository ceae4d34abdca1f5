"""Property tests of the topology loaders and the flow-spec parser (Hypothesis).

Whatever a user gives - a JSON object, a JSON file, a ``.py`` file, a Mininet ``Topo``, a
spec string like ``dumbbell,pairs=3,bw_mbps=20``, a flow spec like ``h1:h4x2,h2:h5`` - the
answer is a result or one of the kit's typed errors with a one-line message, never another
exception; and a topology that loads never holds a negative, NaN or infinite rate, delay,
loss or queue, nor one outside what the lab applies.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labtools.errors import InputError, LabtoolsError, TopologyError
from labtools.model import limits
from labtools.model.catalog import from_dict, load_topology, split_spec, to_dict
from labtools.model.fairness import MAX_CONNECTIONS, parse_flows
from labtools.model.mininet_import import from_mininet_topo
from labtools.model.routing import compute_routing
from labtools.model.topology import Topology

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
#: for properties whose every example loads a .py file, in a Python of its own (~0.2 s each)
CHILD_SETTINGS = settings(SETTINGS, max_examples=60)

NAMES = ["h1", "h2", "h3", "r1", "r2", "s1", "s2", "s3"]
JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8)
NUMBERS = st.one_of(st.integers(-10, 10**6), st.floats(), st.sampled_from(
    [0, 0.0004, 0.05, 0.1, 1, 10, 99.99, 100, 1000, 1000.5, 5000, 5001, 100_000, 100_001]))
FIELD_VALUES = {
    "bw_mbps": st.none() | NUMBERS | JUNK,
    "delay_ms": NUMBERS | JUNK,
    "loss_pct": NUMBERS | JUNK,
    "queue_pkts": st.none() | NUMBERS | JUNK,
    "htb": st.booleans() | JUNK,
    "name": st.sampled_from(["", "L1", "L2", "B", "x y", "L\n1"]) | JUNK,
    "addrs": st.dictionaries(st.sampled_from(NAMES), st.sampled_from(
        ["10.0.0.1/24", "10.0.0.2/24", "10.0.1.1/30", "10.0.0.0/24", "10.0.0.255/24",
         "127.0.0.1/8", "bad", "10.0.0.3"]) | JUNK, max_size=2) | JUNK,
}


def assert_sane(topo: Topology) -> None:
    """Every link's shaping is typed, finite and within what the lab applies."""
    for link in topo.links:
        if link.bw_mbps is not None:
            assert isinstance(link.bw_mbps, (int, float)) and math.isfinite(link.bw_mbps)
            assert limits.MIN_RATE_MBPS <= link.bw_mbps <= limits.TCLINK_MAX_MBPS
        assert isinstance(link.delay_ms, (int, float)) and math.isfinite(link.delay_ms)
        assert 0 <= link.delay_ms <= limits.MAX_DELAY_MS
        assert isinstance(link.loss_pct, (int, float)) and math.isfinite(link.loss_pct)
        assert 0 <= link.loss_pct < 100
        if link.queue_pkts is not None:
            assert type(link.queue_pkts) is int and 1 <= link.queue_pkts <= limits.MAX_QUEUE_PKTS
        assert isinstance(link.htb, bool)


def outcome(call: Callable[[], Any]) -> Any:
    """``call()``'s result, or None after one of the kit's errors on one line."""
    try:
        return call()
    except LabtoolsError as err:
        assert len(str(err).splitlines()) == 1, str(err)
        return None


@st.composite
def link_dicts(draw: Any) -> Dict[str, Any]:
    item = {"a": draw(st.sampled_from(NAMES) | JUNK), "b": draw(st.sampled_from(NAMES) | JUNK)}
    for key in draw(st.lists(st.sampled_from(sorted(FIELD_VALUES)), unique=True, max_size=4)):
        item[key] = draw(FIELD_VALUES[key])
    if draw(st.integers(0, 20)) == 0:
        item[draw(st.sampled_from(["type", "bandwidth", "A"]))] = 1
    return item


@st.composite
def topology_dicts(draw: Any) -> Dict[str, Any]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=8, unique=True))
    kinds = st.sampled_from(["host", "router", "switch"]) | JUNK
    nodes: List[Any] = [{"name": n, "kind": draw(kinds)} if draw(st.booleans()) else {"name": n}
                        for n in names]
    if draw(st.integers(0, 10)) == 0:
        nodes.append(draw(JUNK))
    if draw(st.integers(0, 10)) == 0:
        nodes.append({"name": names[0], "type": "switch"})
    data: Dict[str, Any] = {"nodes": nodes, "links": draw(st.lists(link_dicts(), max_size=8))}
    if draw(st.booleans()):
        data["name"] = draw(st.sampled_from(["t", ""]) | JUNK)
    if draw(st.booleans()):
        data["params"] = draw(st.dictionaries(st.text(max_size=5), JUNK, max_size=2) | JUNK)
    return data


@SETTINGS
@given(topology_dicts())
def test_a_json_object_gives_a_topology_or_a_typed_error(data):
    topo = outcome(lambda: from_dict(data))
    if topo is None:
        return
    assert_sane(topo)
    outcome(lambda: compute_routing(topo))
    assert to_dict(from_dict(to_dict(topo))) == to_dict(topo)  # what results keep reloads


PARAM_VALUES = JUNK | st.floats(0, 2) | st.sampled_from(
    [0, 1, -1, 5, 0.049, 0.05, 0.5, 1.0, True, None, "007", "0.5", "1e999", "s1", "a b", "",
     "s" * 64, "s" * 65, 10**400, [0.5]])


@SETTINGS
@given(st.dictionaries(st.sampled_from(["rate_scale", "variant", "rate_scal", "pairs", "x"])
                       | st.text(max_size=5), PARAM_VALUES, max_size=3),
       st.booleans())
def test_json_params_load_typed_or_give_a_topology_error(params, as_a_file):
    """A JSON topology's params either load, with ``rate_scale`` a number in (0, 1] and
    ``variant`` text, or are refused with one TopologyError line naming the field."""
    data = {"name": "t", "params": params, "nodes": [{"name": "h1"}, {"name": "h2"}],
            "links": [{"a": "h1", "b": "h2", "bw_mbps": 10}]}
    try:
        if as_a_file:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "mine.json"
                path.write_text(json.dumps(data))
                topo = load_topology(str(path))
        else:
            topo = from_dict(data)
    except TopologyError as err:
        assert len(str(err).splitlines()) == 1, str(err)
        # the file's reader refuses NaN and Infinity anywhere before params are looked at
        assert str(err).startswith("topology params") or "is not a number" in str(err), str(err)
        return
    scale = topo.params.get("rate_scale", 1.0)
    assert type(scale) is float and 0 < scale <= 1
    assert isinstance(topo.params.get("variant", ""), str)
    if as_a_file:
        assert set(topo.params) <= {"rate_scale", "variant"}
    assert to_dict(from_dict(to_dict(topo))) == to_dict(topo)


@SETTINGS
@given(JUNK)
def test_any_json_value_gives_a_topology_or_a_typed_error(data):
    topo = outcome(lambda: from_dict(data))
    if topo is not None:
        assert_sane(topo)


@SETTINGS
@given(st.one_of(
    st.text(max_size=60),
    topology_dicts().map(json.dumps),
    topology_dicts().map(lambda d: json.dumps(d).replace("1", "1e400").replace("0", "NaN"))))
def test_a_json_file_gives_a_topology_or_a_typed_error(text):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mine.json"
        path.write_text(text)
        topo = outcome(lambda: load_topology(str(path)))
    if topo is not None:
        assert_sane(topo)


IMPORT_TIME = ["", "raise ValueError('at import')", "raise SystemExit(3)",
               "import sys\nsys.exit('bye\\nnow')", "class Odd(BaseException):\n    pass\nraise Odd()",
               "def broken(:\n    pass", "x = 1 / 0", "import no_such_module_here",
               "class Mute(Exception):\n    def __str__(self):\n        raise RuntimeError()\n"
               "raise Mute()",
               "from labtools.errors import TopologyError\nraise TopologyError('two\\nlines')"]
BODIES = [
    "",
    "topology = 5",
    "def topology():\n    return None",
    "def topology():\n    raise SystemExit(1)",
    "def topology(**kw):\n    raise KeyError(kw)",
    "def topology(n=2):\n    return Topology('t', [Node('h1'), Node('h2')], [Link('h1', 'h2')])",
    "def topology(bw=10):\n    return Topology('t', (Node('h1'), Node('r1', 'router'), Node('h2')),"
    " (Link('h1', 'r1', bw_mbps=bw), Link('r1', 'h2', delay_ms=bw)))",
    "def topology():\n    return Topology('t', (Node('h1'), Node('h2')), (Link('h1', 'h2', htb='no'),))",
    "topos = {}",
    "topos = {'x': 5}",
    "def f(**kw):\n    raise GeneratorExit()\ntopos = {'x': f}",
    "topos = {'x': object}",
    "class T:\n    def nodes(self, sort=False):\n        return ['h1', 'h2']\n"
    "    def isSwitch(self, n):\n        return False\n"
    "    def nodeInfo(self, n):\n        return {}\n"
    "    def links(self, sort=False, withInfo=False):\n        return [('h1', 'h2', INFO)]\n"
    "topos = {'t': T}",
]
INFOS = st.dictionaries(st.sampled_from(["bw", "delay", "loss", "max_queue_size", "use_htb", "use_tbf",
                                         "params1", "name"]),
                        NUMBERS | JUNK | st.sampled_from(["10ms", "5 msec", "1e3us", "0.1s", "x"]),
                        max_size=4)


@CHILD_SETTINGS
@given(st.sampled_from(IMPORT_TIME), st.sampled_from(BODIES), INFOS,
       st.sampled_from(["", ",n=3", ",bw=1e-9", ",bw=nan", ",bw=20,bw=30", ",x=1", ",bad"]))
def test_a_python_file_gives_a_topology_or_a_typed_error(header, body, info, params):
    source = ("from labtools.model.topology import Link, Node, Topology\n"
              f"INFO = {info!r}\n{header}\n{body}\n").replace("nan", "float('nan')")
    source = source.replace("inf,", "float('inf'),").replace("inf}", "float('inf')}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mine.py"
        path.write_text(source)
        topo = outcome(lambda: load_topology(f"{path}{params}"))
    if topo is not None:
        assert_sane(topo)


class FakeTopo:
    """The duck-typed interface of a Mininet Topo (no Mininet needed)."""

    def __init__(self, names: List[Any], links: List[Any], infos: Dict[str, Any]) -> None:
        self._names, self._links, self._infos = names, links, infos

    def nodes(self, sort: bool = False) -> List[Any]:
        return self._names

    def isSwitch(self, name: str) -> bool:  # noqa: N802 - Mininet's name
        return str(name).startswith("s")

    def nodeInfo(self, name: str) -> Any:  # noqa: N802 - Mininet's name
        return self._infos.get(name, {})

    def links(self, sort: bool = False, withInfo: bool = False) -> List[Any]:  # noqa: N803
        return self._links


@SETTINGS
@given(st.lists(st.sampled_from(NAMES) | JUNK, min_size=1, max_size=5, unique_by=repr),
       st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES), INFOS) | JUNK,
                max_size=5),
       st.dictionaries(st.sampled_from(NAMES), st.dictionaries(
           st.sampled_from(["ip", "cls"]), st.sampled_from(["10.0.0.1/24", "10.0.0.9", "x/1"])
           | JUNK, max_size=2) | JUNK, max_size=3))
def test_a_mininet_topo_gives_a_topology_or_a_typed_error(names, links, infos):
    topo = outcome(lambda: from_mininet_topo(FakeTopo(names, links, infos), "mine"))
    if topo is not None:
        assert_sane(topo)


KIT_PARAMETERS = {
    "dumbbell": ["pairs", "bw_mbps", "delay_ms", "queue_pkts", "variant", "rate_scale"],
    "line": ["n", "bw_mbps", "delay_ms", "queue_pkts", "variant", "rate_scale"],
    "portfolio": ["variant", "rate_scale", "colour"],
    "star": ["hosts", "bw_mbps", "delay_ms"],
    "tree": ["hosts", "fanout", "bw_mbps", "delay_ms"],
}
ODD_VALUES = st.sampled_from(["1e-9", "1e400", "-1e400", "nan", "inf", "-1", "0", "none",
                              "true", "1_0", "", "0x10", "s1", "9" * 400, "5e3", "5001",
                              "100001", "0.05", "1e-5", "12.5"])
VALUES = st.one_of(ODD_VALUES, st.integers(-5, 120).map(str), st.floats().map(repr),
                   st.text(alphabet="0123456789.eE+-x,=", max_size=8))


@st.composite
def kit_specs(draw: Any) -> str:
    name = draw(st.sampled_from(sorted(KIT_PARAMETERS)))
    keys = draw(st.lists(st.sampled_from(KIT_PARAMETERS[name]), max_size=3))
    return name + "".join(f",{key}={draw(VALUES)}" for key in keys)


@CHILD_SETTINGS
@given(kit_specs())
def test_a_kit_spec_gives_a_topology_or_a_typed_error(spec):
    topo = outcome(lambda: load_topology(spec))
    if topo is not None:
        assert_sane(topo)


@SETTINGS
@given(st.text(max_size=40) | kit_specs())
def test_any_spec_text_splits_or_gives_a_typed_error(spec):
    split = outcome(lambda: split_spec(spec))
    if split is not None:
        assert len(split[1]) == spec.count(",")  # each parameter once
        for value in split[1].values():
            assert not (isinstance(value, float) and not math.isfinite(value))


FLOW_TEXT = st.one_of(st.text(max_size=30),
                      st.text(alphabet="h1234569:x,rs _0", max_size=30),
                      st.lists(st.tuples(st.sampled_from(["h1", "h2", "hx2", "r1", "1h", ""]),
                                         st.sampled_from(["h4", "h5x2", "hx2", "h4x0", "h4x65",
                                                          "h4x" + "9" * 5000, "h4x064"])),
                               max_size=4).map(lambda fl: ",".join(f"{a}:{b}" for a, b in fl)))


@SETTINGS
@given(FLOW_TEXT, st.booleans())
def test_a_flow_spec_gives_flows_or_an_input_error(spec, with_topology):
    topo = load_topology("portfolio") if with_topology else None
    try:
        flows = parse_flows(spec, topo)
    except InputError as err:
        assert len(str(err).splitlines()) == 1 and len(str(err)) < 200
        return
    assert flows
    for flow in flows:
        assert 1 <= flow.connections <= MAX_CONNECTIONS
        assert flow.src and flow.dst
