"""The batched network plan: the same shaping as Mininet's TCLink (checked against
Mininet's own command builders), and (marker ``root``) a real network built from it on
this machine, whose kernel has veth, bridges and HTB but no netem."""

from __future__ import annotations

import subprocess

import pytest

from labtools.lab.netplan import plan_network, tc_lines
from labtools.model.catalog import load_topology
from labtools.model.topology import Link, mininet_link_params

#: why a test that compares with Mininet's own builders skips on a machine without it
MININET_MISSING = "Mininet is not installed (Debian's mininet package; scripts/setup.sh as root)"


class _FakeIntf:
    """Just enough of a Mininet interface for TCIntf's command builders."""

    bwParamMax = 1000

    def __init__(self, name):
        self.name = name
        self.node = type("Node", (), {"name": "r1"})()

    def __str__(self):
        return self.name


@pytest.mark.parametrize("link", [
    Link("r1", "r2", bw_mbps=40, delay_ms=10, queue_pkts=67),
    Link("r1", "r2", bw_mbps=20, delay_ms=0.25, loss_pct=1.5),
    Link("r1", "r2", delay_ms=5),
    Link("r1", "r2", bw_mbps=7.5),
    Link("r1", "r2", bw_mbps=12, delay_ms=5, queue_pkts=30, htb=False),
    Link("r1", "r2", delay_ms=5, htb=False),
])
def test_the_shaping_is_mininets_tclink(link):
    TCIntf = pytest.importorskip("mininet.link", reason=MININET_MISSING).TCIntf

    params = mininet_link_params(link)
    intf = _FakeIntf("r1-eth1")
    bw_cmds, parent = TCIntf.bwCmds(intf, bw=params.get("bw"),
                                    use_tbf=params.get("use_tbf", False))
    delay_cmds, _ = TCIntf.delayCmds(parent, delay=params.get("delay"), loss=params.get("loss"),
                                     max_queue_size=params.get("max_queue_size"))
    mininet = [" ".join((cmd % ("tc", "r1-eth1")).split()[1:]) for cmd in bw_cmds + delay_cmds]
    ours = [" ".join(line.split()) for line in tc_lines(link, "r1-eth1")]
    assert ours == mininet


def test_the_plan_of_the_reference_topology(portfolio):
    plan = plan_network([portfolio])
    assert sorted(plan.nodes) == sorted(portfolio.hosts + portfolio.routers)
    assert plan.bridges == ["s1", "s2"]
    to_switches = [lk for lk in portfolio.links if "s" in (lk.a[0], lk.b[0])]
    assert len(plan.root_veths) == len(to_switches) and all(
        dev.startswith(("s1-eth", "s2-eth")) for dev in plan.root_veths)
    veths = [line for line in plan.root_ip if " type veth " in line]
    assert len(veths) == len(portfolio.links)
    assert "link add r1-eth1 netns {pid[r1]} type veth peer name r2-eth0 netns {pid[r2]}" in veths
    r1 = plan.nodes["r1"]
    assert r1.router and "route replace 10.0.4.0/24 via 10.0.1.2 dev r1-eth1" in r1.ip_lines
    script = r1.script()
    assert "echo 1 > /proc/sys/net/ipv4/ip_forward" in script
    assert "netem delay 10ms limit 67" in script
    assert "forward" not in plan.nodes["h1"].script()


def _ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.root
@pytest.mark.parametrize("htb, qdisc", [(True, "qdisc htb 5: root"), (False, "qdisc tbf 5: root")])
def test_a_batched_network_runs_and_leaves_nothing(tmp_path, htb, qdisc):
    """A dumbbell without delay (this kernel has no netem): real namespaces, veths, bridges
    and HTB (or TBF, ``htb=False``), built from the plan; traffic crosses it; stopping
    removes everything."""
    from dataclasses import replace

    from labtools.lab.network import MininetBackend
    from labtools.system.cleanup import find_leftovers

    before = find_leftovers().count()
    topo = load_topology("dumbbell,pairs=2,bw_mbps=20,delay_ms=0,queue_pkts=none")
    topo = replace(topo, links=tuple(replace(lk, htb=htb) for lk in topo.links))
    backend = MininetBackend(topo, "lxbr")
    backend.start()
    try:
        out = backend.popen("a1", ["ping", "-c", "2", "-i", "0.2", "10.0.0.2"]).communicate()[0]
        assert "2 received" in out, out
        ipv6 = backend.popen("a1", ["cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6"])
        assert ipv6.communicate()[0].strip() == "1"  # the node's own, set by its script
        qdiscs = backend.run_beside_switches(["tc", "qdisc", "show", "dev", "s1-eth1"])
        assert qdisc in qdiscs, qdiscs
        started = backend.popen_beside_switches(["tc", "qdisc", "show", "dev", "s1-eth1"])
        assert started.communicate()[0] == qdiscs  # a live demonstration's way there
        assert "s1" in backend.run_beside_switches(["ip", "-br", "link", "show", "type", "bridge"])
        assert "s1" not in _ip("-br", "link", "show", "type", "bridge")  # the lab's sandbox's
    finally:
        backend.stop()
    assert find_leftovers().count() == before
    assert "s1" not in _ip("-br", "link", "show", "type", "bridge")


def test_a_root_command_that_hangs_is_a_clear_error(monkeypatch):
    from labtools.errors import EnvironmentProblem
    from labtools.lab import network

    monkeypatch.setattr(network, "ROOT_COMMAND_S", 0.2)
    with pytest.raises(EnvironmentProblem, match=r"sleep did not finish within 0\.2 s"):
        network._run(["sleep", "30"])


def test_a_long_batch_gets_time_for_each_line(monkeypatch):
    """A batch of 40 lines gets 0.2 s + 40 x 0.25 s: a command of 1 s finishes."""
    from labtools.lab import network

    monkeypatch.setattr(network, "ROOT_COMMAND_S", 0.2)
    monkeypatch.setattr(network, "ROOT_S_PER_LINE", 0.25)
    out = network._run(["sh", "-c", "sleep 1; wc -l"], "x\n" * 40)
    assert out.strip() == "40"


def test_mininets_own_path_gets_tbf_when_the_link_says_so():
    """The Mininet path (``addLink`` with TCLink) passes TCIntf the keyword it takes for
    TBF, and TCIntf's own builder then writes a TBF qdisc; HTB otherwise."""
    from dataclasses import replace

    mn_link = pytest.importorskip("mininet.link", reason=MININET_MISSING)
    TCIntf, TCLink = mn_link.TCIntf, mn_link.TCLink

    from labtools.lab.network import link_options
    from labtools.model.routing import compute_routing

    topo = load_topology("dumbbell,pairs=1,bw_mbps=20,delay_ms=0,queue_pkts=none")
    for htb, word in ((True, " htb "), (False, " tbf ")):
        part = replace(topo, links=tuple(replace(lk, htb=htb) for lk in topo.links))
        shaped = next(i for i, lk in enumerate(part.links) if lk.bw_mbps)
        opts = link_options(part, compute_routing(part), shaped)
        assert opts["cls"] is TCLink and opts.get("use_tbf", False) is not htb
        cmds, _ = TCIntf.bwCmds(_FakeIntf("r1-eth1"), bw=opts["bw"],
                                use_tbf=opts.get("use_tbf", False))
        assert word in cmds[0], cmds
