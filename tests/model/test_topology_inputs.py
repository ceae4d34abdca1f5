"""Bad topology inputs are refused with a one-line reason, before anything runs.

Files a user may give (``.py``, ``.json``), values the lab cannot apply as given, loops of
switches, addresses no host can have, and spec strings."""

from __future__ import annotations

import json
import re

import pytest
from conftest import run_cli

from labtools.errors import TopologyError, UnknownNodeError
from labtools.model import limits
from labtools.model.catalog import from_dict, load_cases, load_topology, split_spec
from labtools.model.topology import ROUTER, SWITCH, Link, Node, Topology


def _one_line_error(spec: str, words: str) -> str:
    with pytest.raises(TopologyError) as err:
        load_topology(spec)
    message = str(err.value)
    assert len(message.splitlines()) == 1, message
    assert words in message, message
    return message


# --- .py topology files: whatever they raise is one TopologyError naming the file ----------

@pytest.mark.parametrize("source, reason", [
    ("raise ValueError('boom')\n", "ValueError: boom"),
    ("raise SystemExit(3)\n", "SystemExit: 3"),
    ("import sys\nsys.exit('bye\\nnow')\n", "SystemExit: bye now"),
    ("class Odd(BaseException):\n    pass\nraise Odd('odd')\n", "Odd: odd"),
    ("def broken(:\n    pass\n", "SyntaxError"),
    ("class Mute(Exception):\n    def __str__(self):\n        raise RuntimeError()\nraise Mute()\n",
     "Mute: (its message cannot be shown)"),
    ("def topology():\n    return 1 / 0\n", "ZeroDivisionError: division by zero"),
    ("def topology():\n    raise SystemExit(1)\n", "SystemExit: 1"),
    ("def topology():\n    return len(5)\n", "TypeError: object of type 'int' has no len()"),
    ("def f():\n    raise SystemExit(2)\ntopos = {'x': f}\n", "SystemExit: 2"),
    ("class T:\n    def nodes(self, sort=False):\n        raise ValueError('n')\n"
     "    def links(self, sort=False, withInfo=False):\n        return []\ntopos = {'x': T}\n",
     "ValueError: n"),
    ("def __getattr__(name):\n    raise SystemExit(5)\n", "SystemExit: 5"),
])
def test_anything_a_python_file_raises_is_one_topology_error(tmp_path, source, reason):
    path = tmp_path / "mine.py"
    path.write_text(source)
    message = _one_line_error(str(path), f"topology file {path} failed: ")
    assert message.endswith(reason) or reason in message


def test_the_command_line_says_so_in_one_line_with_status_2(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("def topology():\n    raise SystemExit(0)\n")
    result = run_cli(["expect", str(path), "h1", "h2"])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"labtools expect: error: topology file {path} failed: "
                             "SystemExit: 0\n")


def test_ctrl_c_in_a_topology_file_still_interrupts(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        load_topology(str(path))


def test_the_kits_own_errors_pass_as_they_are_and_parameters_are_checked_first(tmp_path):
    _one_line_error("dumbbell,pairs=0", "dumbbell: pairs=0 must be an integer within 1..50")
    _one_line_error("dumbbell,colour=red", "bad parameters {'colour': 'red'}")
    # a variant is drawn only from values that are valid themselves
    _one_line_error("dumbbell,bw_mbps=fast,variant=s1", "link B: rate bw_mbps='fast'")
    _one_line_error("line,delay_ms=nan,variant=s1", "link L1: delay_ms='nan'")


def test_a_topology_file_with_dataclasses_loads(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(
        "from __future__ import annotations\nfrom dataclasses import dataclass\n"
        "from labtools.model.topology import Link, Node, Topology\n"
        "@dataclass\nclass Spec:\n    rate: float = 10.0\n"
        "def topology():\n    return Topology('dc', [Node('h1'), Node('h2')],"
        " [Link('h1', 'h2', bw_mbps=Spec().rate)])\nCASES = {'path': ['h1:h2']}\n")
    assert load_topology(str(path)).links[0].bw_mbps == 10.0
    assert load_cases(str(path)) == {"path": ["h1:h2"]}


# --- JSON topologies: every key known, every value of its type, finite -------------------

def _json(tmp_path, data) -> str:
    path = tmp_path / "mine.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def _base(**fields):
    return {"nodes": [{"name": "h1"}, {"name": "r1", "kind": "router"}, {"name": "h2"}],
            "links": [dict({"a": "h1", "b": "r1"}, **fields), {"a": "r1", "b": "h2"}]}


@pytest.mark.parametrize("data, words", [
    ({"nodes": [{"name": "h1"}, {"name": "s9", "type": "switch"}], "links": []},
     "node 's9': unknown field(s) 'type' (known: name, kind)"),
    (dict(_base(), link=[]), "unknown field(s) 'link'"),
    (_base(bandwidth=3), "link 'h1'-'r1': unknown field(s) 'bandwidth'"),
    (_base(htb="no"), "htb='no' must be true or false"),
    (_base(htb=0), "htb=0 must be true or false"),
    (dict(_base(), params=5), "params must be a JSON object, not 5"),
    (dict(_base(), params=[["a", 1]]), "params must be a JSON object"),
    (_base(bw_mbps="10"), "rate bw_mbps='10' must be a number > 0"),
    (_base(delay_ms=True), "delay_ms=True must be a number >= 0"),
    (_base(queue_pkts=10.5), "queue_pkts=10.5 must be an integer"),
    (_base(addrs="10.0.0.1/24"), "addrs must map node names to addresses"),
    (_base(addrs={"h1": 5}), "address 5 for h1 must be text"),
    (_base(name=5), "name 5 is invalid"),
    (_base(name="L1\nL2"), "name 'L1\\nL2' is invalid"),
    ({"nodes": [{"name": "h1\n"}], "links": []}, "node name 'h1\\n' is invalid"),
    ({"nodes": [{"name": True}], "links": []}, "node name True is invalid"),
    ({"nodes": [{"name": "h1", "kind": None}], "links": []}, "kind None is not one of"),
    ({"nodes": [{"name": "h1"}], "links": [{"a": ["h1"], "b": "h1"}]},
     "endpoints must be node names, not ['h1']"),
    ({"nodes": "h1", "links": []}, "'nodes' must be a JSON list"),
    ({"nodes": [5], "links": []}, "node #1: expected an object"),
    ({"nodes": [{"name": "h1"}], "links": ["h1-h2"]}, "link #1: expected an object"),
    ({"nodes": [{"name": "h1"}], "links": [{"a": "h1"}]}, "link #1: has no 'b'"),
    (dict(_base(), name="a\nb"), "topology name 'a\\nb' must be text on one line"),
    ({"links": []}, "the topology has no 'nodes' list"),
])
def test_json_keys_and_types_are_checked(tmp_path, data, words):
    _one_line_error(_json(tmp_path, data), words)


@pytest.mark.parametrize("text, words", [
    (json.dumps(_base(delay_ms=float("inf"))), "Infinity is not a number"),
    (json.dumps(_base(bw_mbps=float("nan"))), "NaN is not a number"),
    (json.dumps(_base(loss_pct=float("-inf"))), "-Infinity is not a number"),
    (json.dumps(_base()).replace('"b": "r1"', '"b": "r1", "delay_ms": 1e400'),
     "the number 1e400 is too large"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("{nodes: }", "cannot read topology"),
])
def test_json_without_nan_or_infinity(tmp_path, text, words):
    _one_line_error(_json(tmp_path, text), words)


def test_a_json_file_too_large_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.json"
    with path.open("w") as out:
        out.truncate(17 * 2**20)
    _one_line_error(str(path), "is 17 MiB: the kit takes files up to 16 MiB")


def test_a_json_topology_keeps_its_meaning_when_saved_and_read_again(portfolio):
    from labtools.model.catalog import to_dict

    again = from_dict(json.loads(json.dumps(to_dict(portfolio))))
    assert to_dict(again) == to_dict(portfolio)


# --- values the lab cannot apply as given ----------------------------------------------

def _topo(**fields) -> Topology:
    return Topology("t", (Node("h1"), Node("r1", ROUTER), Node("h2")),
                    (Link("h1", "r1", **fields), Link("r1", "h2")))


@pytest.mark.parametrize("fields, words", [
    ({"bw_mbps": 1e-9}, "bw_mbps=1e-09 is below the 0.1 Mbit/s the kit shapes"),
    ({"bw_mbps": 0.0999}, "below the 0.1 Mbit/s"),
    ({"delay_ms": 5000.5}, "delay_ms=5000.5 is more than 5000 ms one way"),
    ({"delay_ms": float("inf")}, "delay_ms=inf must be a number >= 0"),
    ({"loss_pct": 100}, "loss_pct=100 must be a number within 0..100, below 100"),
    ({"loss_pct": 1e-6}, "loss_pct=1e-06 is below the 1e-05 %"),
    ({"queue_pkts": 100_001}, "queue_pkts=100001 must be an integer within 1..100000"),
    ({"queue_pkts": 10**5000}, "queue_pkts=<int too large to show>"),
    ({"htb": "no"}, "htb='no' must be true or false"),
])
def test_values_outside_what_the_lab_applies_are_refused(fields, words):
    with pytest.raises(TopologyError, match=re.escape(words)):
        _topo(**fields)


def test_the_bounds_themselves_are_accepted():
    topo = _topo(bw_mbps=limits.MIN_RATE_MBPS, delay_ms=limits.MAX_DELAY_MS,
                 loss_pct=limits.MIN_LOSS_PCT, queue_pkts=limits.MAX_QUEUE_PKTS)
    assert topo.links[0].bw_mbps == 0.1
    assert _topo(bw_mbps=1000, loss_pct=99.9, delay_ms=0.001, queue_pkts=1)


def test_scaling_below_the_slowest_rate_names_the_factor():
    _one_line_error("dumbbell,bw_mbps=1,rate_scale=0.05",
                    "rate_scale=0.05 would slow link B from 1 to 0.05 Mbit/s, below the 0.1")


# --- loops of switches, switch ports, addresses ----------------------------------------

def _switches(links, count=4):
    nodes = [Node(f"s{i}", SWITCH) for i in range(1, count + 1)] + [Node("h1"), Node("h2")]
    return Topology("t", tuple(nodes), tuple(Link(a, b) for a, b in links))


@pytest.mark.parametrize("links, words", [
    ([("s1", "s2"), ("s2", "s3"), ("s3", "s1"), ("h1", "s1"), ("h2", "s3")],
     "switches s1-s2-s3 form a loop (links s1-s2, s2-s3, s3-s1)"),
    ([("s3", "s1"), ("s2", "s3"), ("s1", "s2"), ("h1", "s1")],
     "switches s1-s2-s3 form a loop (links s1-s2, s2-s3, s3-s1)"),
    ([("h1", "s1"), ("s1", "s2"), ("s2", "s3"), ("s3", "s4"), ("s4", "s2"), ("s3", "h2")],
     "switches s2-s3-s4 form a loop (links s2-s3, s3-s4, s4-s2)"),
    ([("s1", "s2"), ("s2", "s1"), ("h1", "s1"), ("h2", "s2")],
     "switches s1-s2 form a loop (links s2-s1, s1-s2)"),
])
def test_a_loop_of_switches_is_refused_naming_it(links, words):
    with pytest.raises(TopologyError) as err:
        _switches(links)
    assert words in str(err.value)
    assert "Linux bridges without STP" in str(err.value)


def test_trees_of_switches_and_rings_of_routers_are_fine():
    assert _switches([("s1", "s2"), ("s1", "s3"), ("s3", "s4"), ("h1", "s2"), ("h2", "s4")])
    nodes = (Node("r1", ROUTER), Node("r2", ROUTER), Node("r3", ROUTER), Node("h1"), Node("h2"))
    ring = Topology("ring", nodes, (Link("r1", "r2"), Link("r2", "r3"), Link("r3", "r1"),
                                    Link("h1", "r1"), Link("h2", "r3")))
    assert len(ring.links) == 5


@pytest.mark.parametrize("address, words", [
    ("10.0.0.0/24", "the network address of 10.0.0.0/24"),
    ("10.0.0.255/24", "the broadcast address of 10.0.0.0/24"),
    ("127.0.0.2/8", "a loopback, multicast or reserved address"),
    ("224.0.0.1/24", "a loopback, multicast or reserved address"),
    ("0.0.0.1/8", "a loopback, multicast or reserved address"),
    ("10.0.0.1", "must be IPv4 with a prefix of /30 or wider"),
])
def test_an_address_no_host_can_have_is_refused(address, words):
    with pytest.raises(TopologyError, match=re.escape(words)):
        _topo(addrs={"h1": address})


def test_two_segments_in_one_subnet_are_refused(tmp_path):
    data = {"nodes": [{"name": "h1"}, {"name": "r1", "kind": "router"}, {"name": "h2"}],
            "links": [{"a": "h1", "b": "r1", "addrs": {"h1": "10.5.0.1/24"}},
                      {"a": "r1", "b": "h2", "addrs": {"h2": "10.5.0.9/16"}}]}
    _one_line_error(_json(tmp_path, data), "links h1-r1 and r1-h2 are in different segments but "
                    "their subnets 10.5.0.0/24 and 10.5.0.0/16 overlap")


def test_automatic_subnets_avoid_the_given_ones():
    from labtools.model.routing import compute_routing

    links = (Link("h1", "r1", addrs={"h1": "10.0.0.5/23"}), Link("r1", "h2"), Link("r1", "h3"))
    mixed = Topology("t", (Node("h1"), Node("h2"), Node("h3"), Node("r1", ROUTER)), links)
    networks = [seg.network for seg in compute_routing(mixed).addressing.segments]
    assert networks == ["10.0.0.0/23", "10.0.2.0/24", "10.0.3.0/24"]


def test_unknown_node_names_stay_one_line():
    with pytest.raises(UnknownNodeError, match=r"link 'h1\\n'-r1: unknown node 'h1\\n'"):
        Topology("t", (Node("r1", ROUTER),), (Link("h1\n", "r1"),))


# --- spec strings -------------------------------------------------------------------------

@pytest.mark.parametrize("spec, words", [
    ("dumbbell,pairs=3,pairs=4", "topology parameter 'pairs' is given twice"),
    ("dumbbell,bw_mbps=1e400", "topology parameter bw_mbps=1e400: the number is too large"),
    ("dumbbell,pairs=" + "9" * 5000, "the number is too large"),
    ("dumbbell,delay_ms=inf", "delay_ms='inf' must be a number >= 0"),
    ("dumbbell,bw_mbps=1_0", "bw_mbps='1_0' must be a number > 0"),
])
def test_spec_parameters_are_numbers_only_when_finite(spec, words):
    _one_line_error(spec, words)


@pytest.mark.parametrize("spec, words", [
    ("portfolio,variant=", "topology parameter 'variant' has no value: write variant=VALUE"),
    ("portfolio,variant= ", "topology parameter 'variant' has no value"),
    ("dumbbell,pairs=", "topology parameter 'pairs' has no value"),
    ("dumbbell,", "bad topology parameter '': write key=value"),
    ("dumbbell,,pairs=3", "bad topology parameter '': write key=value"),
    (",pairs=3", "a topology spec starts with the topology's name"),
    ("", "a topology spec starts with the topology's name"),
])
def test_an_empty_or_malformed_spec_parameter_is_one_line_error(spec, words):
    _one_line_error(spec, words)


def test_the_command_line_refuses_an_empty_variant_in_one_line_with_status_2():
    result = run_cli(["expect", "portfolio,variant=", "h1", "h2"])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("labtools expect: error: topology parameter 'variant' has no "
                             "value: write variant=VALUE\n")


def test_spec_values():
    assert split_spec("dumbbell,pairs=3,bw_mbps=2.5,x=a,v=none,w=True,q=-4,e=1e3") == (
        "dumbbell", {"pairs": 3, "bw_mbps": 2.5, "x": "a", "v": None, "w": True, "q": -4,
                     "e": 1000.0})


# --- a JSON topology's params: typed and ranged as a spec's are ----------------------------

def _with_params(params) -> dict:
    return dict(_base(bw_mbps=10), name="mine", params=params)


@pytest.mark.parametrize("params, words", [
    ({"rate_scale": "x"}, "rate_scale='x' must be a number within 0.05..1, not text"),
    ({"rate_scale": "0.5"}, "rate_scale='0.5' must be a number"),  # text, even if it reads
    ({"rate_scale": "1e999"}, "rate_scale='1e999' must be a number"),
    ({"rate_scale": None}, "rate_scale=None must be a number within 0.05..1, not none"),
    ({"rate_scale": [0.5]}, "rate_scale=[0.5] must be a number"),
    ({"rate_scale": {"f": 0.5}}, "rate_scale={'f': 0.5} must be a number"),
    ({"rate_scale": True}, "rate_scale=True must be a number within 0.05..1, not true/false"),
    ({"rate_scale": 0}, "rate_scale=0 is outside 0.05..1"),
    ({"rate_scale": -1}, "rate_scale=-1 is outside 0.05..1"),
    ({"rate_scale": 5}, "rate_scale=5 is outside 0.05..1"),
    ({"rate_scale": 0.049}, "rate_scale=0.049 is outside 0.05..1"),
    ({"rate_scale": 10**400}, "rate_scale=" + "1" + "0" * 26 + "...: the number is too large"),
    ({"variant": 7}, "variant=7 must be text"),
    ({"variant": 7.0}, "variant=7.0 must be text"),
    ({"variant": None}, "variant=None must be text"),
    ({"variant": True}, "variant=True must be text"),
    ({"variant": ["s1"]}, "variant=['s1'] must be text"),
    ({"variant": ""}, "variant='' must be 1..64 letters, digits and ._@+-"),
    ({"variant": "s 1"}, "variant='s 1' must be 1..64"),
    ({"variant": "s1,bw_mbps=1"}, "variant='s1,bw_mbps=1' must be 1..64"),
    ({"variant": "s1\n"}, "variant='s1\\n' must be 1..64"),
    ({"variant": "s" * 65}, "variant='" + "s" * 26 + "... must be 1..64"),
    ({"rate_scal": 0.5}, "unknown field 'rate_scal'=0.5 (did you mean 'rate_scale'? known: "
                         "rate_scale, variant)"),
    ({"Variant": "s1"}, "unknown field 'Variant'='s1' (did you mean 'variant'?"),
    ({"colour": "red"}, "unknown field 'colour'='red' (known: rate_scale, variant)"),
])
def test_json_params_are_checked_naming_the_field_and_the_value(tmp_path, params, words):
    message = _one_line_error(_json(tmp_path, _with_params(params)), words)
    assert message.startswith("topology params: "), message


def test_json_params_that_are_right_are_kept_as_given(tmp_path):
    from labtools.model import scaling

    topo = load_topology(_json(tmp_path, _with_params({"rate_scale": 0.5, "variant": "007"})))
    assert topo.params == {"rate_scale": 0.5, "variant": "007"}  # "007" stays text
    assert topo.links[0].bw_mbps == 10  # the file's rates are scaled already: as they are
    assert "scaled by 0.5" in scaling.rate_note(topo)
    whole = load_topology(_json(tmp_path, _with_params({"rate_scale": 1, "variant": "a.b@c-d"})))
    assert whole.params["rate_scale"] == 1.0 and scaling.rate_note(whole) == ""


def test_a_json_file_saved_from_a_kit_topology_keeps_its_parameters(tmp_path):
    from labtools.model.catalog import to_dict

    saved = to_dict(load_topology("dumbbell,pairs=3,variant=s1"))
    again = load_topology(_json(tmp_path, saved))
    assert dict(again.params) == {"bw_mbps": 10, "delay_ms": 10, "pairs": 3, "queue_pkts": 100,
                                  "variant": "s1"}
    # the kit's own parameters are known for the topology the file names, and only for it
    _one_line_error(_json(tmp_path, dict(saved, name="portfolio")),
                    "unknown field 'bw_mbps'=10 (known: rate_scale, variant)")
    _one_line_error(_json(tmp_path, dict(saved, params={"pair": 3})),
                    "unknown field 'pair'=3 (did you mean 'pairs'?")


def test_a_results_topology_keeps_the_params_of_any_file():
    """What a results file keeps of a course's own .py topology reads back (only the kit's
    own params are checked there), and its bad values are still refused."""
    data = dict(_with_params({"k": 3, "variant": "s1"}))
    assert dict(from_dict(data).params) == {"k": 3, "variant": "s1"}
    with pytest.raises(TopologyError, match=r"^topology params: variant=3 must be text"):
        from_dict(_with_params({"k": 3, "variant": 3}))


@pytest.mark.parametrize("scale, words", [
    ("true", "rate_scale=True must be a number within 0.05..1, not true/false"),
    ("none", "rate_scale=None must be a number within 0.05..1, not none"),
    ("5", "rate_scale=5 is outside 0.05..1"),
    ("fast", "rate_scale='fast' must be a number"),
])
def test_a_spec_rate_scale_is_a_number_too(scale, words):
    _one_line_error(f"portfolio,rate_scale={scale}", words)


def test_the_command_line_refuses_bad_params_in_one_line_with_status_2(tmp_path):
    path = _json(tmp_path, _with_params({"rate_scale": "x"}))
    result = run_cli(["expect", path, "h1", "h2"])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("labtools expect: error: topology params: rate_scale='x' must be a "
                             "number within 0.05..1, not text\n")


# --- a .py topology loads within a time limit, in a child process ------------------------

LOOP = "import os, pathlib\npathlib.Path({pid!r}).write_text(str(os.getpid()))\nwhile True:\n    pass\n"


def _gone(pid_file) -> bool:
    import os

    try:
        os.kill(int(pid_file.read_text()), 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("where", ["import", "topology", "cases"])
def test_a_python_file_that_never_finishes_is_stopped(tmp_path, monkeypatch, where):
    import time

    monkeypatch.setattr(limits, "PYTHON_LOAD_TIME_S", 2.0)
    pid_file = tmp_path / "pid"
    loop = LOOP.format(pid=str(pid_file))
    if where == "topology":
        loop = "def topology():\n" + "".join(f"    {line}\n" for line in loop.splitlines())
    path = tmp_path / "mine.py"
    path.write_text(loop)
    started = time.monotonic()
    with pytest.raises(TopologyError) as err:
        load_cases(str(path)) if where == "cases" else load_topology(str(path))
    assert str(err.value) == f"topology file {path} did not finish loading within 2 s (a loop, " \
                             "or a wait for input?)"
    assert 2.0 <= time.monotonic() - started < 15
    # stopped (on a machine so busy that the child never reached the loop, nothing ran)
    assert not pid_file.exists() or _gone(pid_file)


def test_the_command_line_stops_a_file_that_waits_for_input(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("input('rate? ')\n")
    result = run_cli(["expect", str(path), "h1", "h2"])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.endswith(f"labtools expect: error: topology file {path} failed: "
                                  "EOFError: EOF when reading a line\n")


def test_ctrl_c_while_a_file_loads_stops_it(tmp_path):
    import os
    import signal
    import threading
    import time

    pid_file = tmp_path / "pid"
    path = tmp_path / "mine.py"
    path.write_text(LOOP.format(pid=str(pid_file)))

    def interrupt_once_it_loops() -> None:
        deadline = time.monotonic() + 9
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt_once_it_loops)
    thread.start()
    with pytest.raises(KeyboardInterrupt):
        load_topology(str(path))  # long before the kit would stop it
    thread.join()
    assert pid_file.exists() and _gone(pid_file)


def test_what_a_file_prints_goes_to_stderr_and_the_answer_stays_whole(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("import os\nprint('building')\nos.write(1, b'raw\\n')\n"
                    "from labtools.model.topology import Link, Node, Topology\n"
                    "def topology():\n    return Topology('t', [Node('h1'), Node('h2')], "
                    "[Link('h1', 'h2', bw_mbps=10)])\n")
    result = run_cli(["expect", str(path), "h1", "h2", "--json"])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["bottleneck_mbps"] == 10
    assert "building" in result.stderr and "raw" in result.stderr


def test_the_kits_own_errors_keep_their_class(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("from labtools.errors import UnknownNodeError\n"
                    "def topology():\n    raise UnknownNodeError('no node x')\n")
    with pytest.raises(UnknownNodeError, match="^no node x$"):
        load_topology(str(path))


def test_a_file_params_must_be_json_values(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("from labtools.model.topology import Link, Node, Topology\n"
                    "def topology():\n    return Topology('t', [Node('h1'), Node('h2')], "
                    "[Link('h1', 'h2')], {'when': object()})\n")
    _one_line_error(str(path), f"topology file {path}: topology 't': params must be JSON values")


def test_a_child_left_alone_ends_itself(tmp_path):
    """A child whose caller is gone (a kernel killed at once) ends a few seconds after its
    limit: here asked with a limit of 1 s and never stopped by its caller."""
    import subprocess
    import sys
    import time

    from labtools.model import python_topology

    path = tmp_path / "mine.py"
    path.write_text("while True:\n    pass\n")
    request = json.dumps({"mode": "topology", "path": str(path), "params": {}, "sys_path": [],
                          "limit_s": 1})
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", python_topology._CHILD_CODE], input=request,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode < 0 and done.stdout == ""  # ended by a signal, with no answer
    assert time.monotonic() - started < 30
