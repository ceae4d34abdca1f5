"""The commands that build a lab network, planned in one go (pure: no root, no Mininet).

Mininet builds a network one command at a time (``ip``, ``tc``, ``ethtool`` for every
interface), and under software emulation every process costs tens of milliseconds: a
15-node lab took 30-70 s to start. The kit plans the same network as a few batches:

- the root namespace (the lab sandbox's own, :mod:`labtools.lab.sandbox`): the Linux
  bridges, and every veth pair created straight into the namespaces of its two nodes (one
  ``ip -batch``), then the shaping of the switches' own ports (one ``tc -batch``);
- each host or router: one shell script (addresses, routes, forwarding, shaping), run in
  all nodes at once.

The shaping is exactly Mininet's ``TCLink`` (an HTB class with ``burst 15k`` and a netem
child for delay, loss and the queue limit; ``ethtool -K gro off``), with the parameters of
:func:`labtools.model.topology.mininet_link_params`, so a network built this way behaves as
Mininet's. Interface names are Mininet's (``h1-eth0``; switch ports ``s1-eth1``...).

One difference, on purpose: every interface sends one segment per packet
(``gso_max_segs`` 1, :data:`ONE_FRAME_PER_PACKET`). With segmentation offloads a TCP sender
hands its qdiscs super-packets of several frames, and netem's queue limit counts each as one
packet: measured in the lab VM, 2586-2814 bytes per queued packet, so a queue of "105
packets" held up to 276 kB and the RTT under load ran far above what 105 frames allow. With
one frame per packet, a queue limit of Q packets is Q frames (:mod:`labtools.model.queues`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Tuple

from labtools.model.expect import HTB_BURST_BYTES
from labtools.model.routing import compute_routing
from labtools.model.topology import ROUTER, SWITCH, Link, Topology, mininet_link_params

#: the bucket of Mininet's TBF shaping (``TCIntf.bwCmds`` with ``use_tbf``), bytes
TBF_BURST_BYTES = 15000


@dataclass
class NodePlan:
    """What one host or router runs in its shell once its interfaces exist."""

    name: str
    router: bool
    ip_lines: List[str] = field(default_factory=list)  #: for ``ip -batch``
    tc_lines: List[str] = field(default_factory=list)  #: for ``tc -batch``
    gro_off: List[str] = field(default_factory=list)  #: interfaces shaped like TCLink

    def script(self) -> str:
        """The node's configuration as a POSIX shell script (run in the node: one round
        trip); it stops at the first failing command."""
        # the sysctls written by the shell itself (``sysctl`` is one more process per node)
        lines = ["set -e",
                 "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6",
                 "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6"]
        if self.router:
            lines.append("echo 1 > /proc/sys/net/ipv4/ip_forward")
        lines.append(_batch("ip", ["link set lo up", *self.ip_lines]))
        lines += [gro_off_command(dev) for dev in self.gro_off]
        if self.tc_lines:
            lines.append(_batch("tc", self.tc_lines))
        return "\n".join(lines) + "\n"


@dataclass
class NetPlan:
    """The whole build: node plans, the root namespace's batches, the bridges."""

    nodes: Dict[str, NodePlan]
    bridges: List[str]
    #: with ``{pid[NAME]}`` where a node's namespace goes
    root_ip: List[str]
    root_tc: List[str]
    root_gro_off: List[str]
    #: the switch ports: one end in the root namespace of every link to a switch
    root_veths: List[str] = field(default_factory=list)


#: ``ip link`` arguments that make an interface send one frame per packet (no TSO/GSO
#: super-packets), so that a queue limit in packets is a limit in frames
ONE_FRAME_PER_PACKET = "gso_max_segs 1"


def gro_off_command(dev: str) -> str:
    """Mininet's ``ethtool -K DEV gro off tx on rx on`` for a TCLink interface; like
    Mininet, nothing happens where ethtool is not installed."""
    return (f"if command -v ethtool >/dev/null; then ethtool -K {shlex.quote(dev)} "
            "gro off tx on rx on >/dev/null; fi")


def _batch(tool: str, lines: Sequence[str]) -> str:
    body = "\n".join(lines)
    return f"{tool} -batch - <<'LABTOOLS_EOF'\n{body}\nLABTOOLS_EOF"


def tc_lines(link: Link, dev: str) -> List[str]:
    """Mininet's ``TCIntf`` commands for one end of ``link`` (without the ``tc`` word)."""
    params = mininet_link_params(link)
    lines, parent = [], "root"
    if "bw" in params and params.get("use_tbf"):
        latency_ms = TBF_BURST_BYTES * 8 / 1000 / params["bw"]  # TCIntf's: 15.0 * 8 / bw
        lines += [f"qdisc add dev {dev} root handle 5: tbf rate {params['bw']:f}Mbit "
                  f"burst {TBF_BURST_BYTES} latency {latency_ms:f}ms"]
        parent = "parent 5:1"
    elif "bw" in params:
        lines += [f"qdisc add dev {dev} root handle 5:0 htb default 1",
                  f"class add dev {dev} parent 5:0 classid 5:1 htb rate {params['bw']:f}Mbit "
                  f"burst {HTB_BURST_BYTES // 1024}k"]
        parent = "parent 5:1"
    netem = []
    if "delay" in params:
        netem.append(f"delay {params['delay']}")
    if params.get("loss"):
        netem.append(f"loss {params['loss']:.5f}")
    if "max_queue_size" in params:
        netem.append(f"limit {params['max_queue_size']:d}")
    if netem:
        lines.append(f"qdisc add dev {dev} {parent} handle 10: netem {' '.join(netem)}")
    return lines


def _ends(part: Topology, link: Link) -> Tuple[Tuple[str, str], Tuple[str, str]]:
    """(node, interface name) of both ends; switch ports are numbered from 1 as in Mininet."""
    routing = compute_routing(part)
    names = []
    for end in (link.a, link.b):
        if part.node(end).kind == SWITCH:
            port = [lk for lk in part.links_of(end)].index(link) + 1
            names.append((end, f"{end}-eth{port}"))
        else:
            iface = next(i for i in routing.addressing.of_node(end) if i.link is link)
            names.append((end, iface.name))
    return names[0], names[1]


def link_devices(part: Topology, link: Link) -> Tuple[Tuple[str, str], Tuple[str, str]]:
    """(node, interface name) of both ends of ``link`` of ``part``, as the plan names them
    (a switch's end is its port in the lab's own namespace)."""
    return _ends(part, link)


def plan_network(parts: Sequence[Topology]) -> NetPlan:
    """The plan of a network made of ``parts`` (the lab's topology, the calibration
    network...); their node names must not clash."""
    nodes: Dict[str, NodePlan] = {}
    bridges: List[str] = []
    root_ip: List[str] = []
    root_tc: List[str] = []
    gro: List[str] = []
    for part in parts:
        routing = compute_routing(part)
        for node in part.nodes:
            if node.kind == SWITCH:
                bridges.append(node.name)
                root_ip.append(f"link add name {node.name} type bridge")
            else:
                plan = nodes[node.name] = NodePlan(node.name, node.kind == ROUTER)
                for iface in routing.addressing.of_node(node.name):
                    plan.ip_lines += [f"addr add {iface.cidr} dev {iface.name}",
                                      f"link set {iface.name} {ONE_FRAME_PER_PACKET} up"]
                plan.ip_lines += [f"route replace {r.network} via {r.gateway} dev {r.dev}"
                                  for r in routing.routes(node.name)]
        for link in part.links:
            root_ip += _link_lines(part, link, nodes, root_tc, gro)
    root_ip += [f"link set {name} up" for name in bridges]
    veths = [next(dev for end, dev in _ends(part, lk) if part.node(end).kind == SWITCH)
             for part in parts for lk in part.links
             if SWITCH in (part.node(lk.a).kind, part.node(lk.b).kind)]
    return NetPlan(nodes, bridges, root_ip, root_tc, gro, veths)


def _link_lines(part: Topology, link: Link, nodes: Dict[str, NodePlan], root_tc: List[str],
                gro: List[str]) -> List[str]:
    """The root namespace's lines for one link; the shaping of node ends goes to the
    nodes' plans, that of switch ports to ``root_tc``."""
    (a, dev_a), (b, dev_b) = _ends(part, link)
    where = {end: (f"netns {{pid[{end}]}}" if part.node(end).kind != SWITCH else "")
             for end in (a, b)}
    lines = [f"link add {dev_a} {where[a]} type veth peer name {dev_b} {where[b]}".replace(
        "  ", " ").strip()]
    for end, dev in ((a, dev_a), (b, dev_b)):
        shaping = tc_lines(link, dev) if mininet_link_params(link) else []
        if part.node(end).kind == SWITCH:
            lines += [f"link set dev {dev} master {end}",
                      f"link set dev {dev} {ONE_FRAME_PER_PACKET} up"]
            root_tc += shaping
            gro += [dev] if shaping else []
        else:
            nodes[end].tc_lines += shaping
            nodes[end].gro_off += [dev] if shaping else []
    return lines
