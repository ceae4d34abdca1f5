"""The one module that imports Mininet (lazily, inside functions).

It turns a :class:`~labtools.model.topology.Topology` into a Mininet ``Topo`` (used by
``mn --custom`` and by :class:`LabNetwork`): hosts and routers get the addresses and static
routes computed by ``labtools.model.routing``, routers forward, shaped links become ``TCLink``
with the parameters of :func:`labtools.model.topology.mininet_link_params`, and switches are
Linux bridges (no controller needed) unless Open vSwitch is asked for.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labtools.errors import InputError
from labtools.model.routing import Routing, compute_routing
from labtools.model.topology import ROUTER, SWITCH, Topology, mininet_link_params

#: switch kinds a user may ask for -> Mininet class names
SWITCH_KINDS = {"lxbr": "LinuxBridge", "ovs": "OVSBridge"}


@lru_cache(maxsize=1)
def _node_classes() -> Tuple[type, type]:
    """Host and router classes that install the kit's static routes (built on first use)."""
    from mininet.node import Host

    class LabHost(Host):
        """A host that installs the static routes the kit computed."""

        forwards = False

        def config(self, routes: Tuple[Tuple[str, str, str], ...] = (), **params: Any) -> Any:
            result = super().config(**params)
            # one shell round trip for all of it: each costs much under emulation
            steps = ["sysctl -qw net.ipv6.conf.all.disable_ipv6=1"]
            steps += [f"ip route replace {net} via {gw} dev {dev}" for net, gw, dev in routes]
            if self.forwards:
                steps.append("sysctl -qw net.ipv4.ip_forward=1")
            self.cmd("; ".join(steps))
            return result

    class LabRouter(LabHost):
        """A host that forwards IPv4 packets."""

        forwards = True

    return LabHost, LabRouter


def node_options(routing: Routing, name: str) -> Dict[str, Any]:
    """Mininet ``addHost`` options for an addressed node: its primary address and routes."""
    ifaces = routing.addressing.of_node(name)
    routes = tuple((r.network, r.gateway, r.dev) for r in routing.routes(name))
    return {"ip": ifaces[0].cidr if ifaces else None, "routes": routes}


def link_options(topo: Topology, routing: Routing, index: int) -> Dict[str, Any]:
    """Mininet ``addLink`` options for link number ``index``: shaping, names, addresses."""
    from mininet.link import Link as MnLink
    from mininet.link import TCLink

    link = topo.links[index]
    opts: Dict[str, Any] = dict(mininet_link_params(link))
    opts["cls"] = TCLink if opts else MnLink
    for end, suffix in ((link.a, "1"), (link.b, "2")):
        if topo.node(end).kind == SWITCH:
            continue
        iface = next(i for i in routing.addressing.of_node(end) if i.link is link)
        opts[f"intfName{suffix}"] = iface.name
        opts[f"params{suffix}"] = {"ip": iface.cidr}
    return opts


def switch_class(kind: str) -> type:
    """The Mininet switch class for ``lxbr`` (Linux bridge) or ``ovs`` (Open vSwitch)."""
    if kind not in SWITCH_KINDS:
        raise InputError(f"unknown switch kind {kind!r}: choose one of {', '.join(SWITCH_KINDS)}")
    import mininet.node
    import mininet.nodelib

    return {"lxbr": mininet.nodelib.LinuxBridge, "ovs": mininet.node.OVSBridge}[kind]


def to_mininet_topo(topo: Topology, switch: str = "lxbr",
                    extra: Sequence[Topology] = ()) -> Any:
    """A Mininet ``Topo`` equivalent to ``topo`` (also what ``mn --custom`` gets), plus
    the nodes and links of the ``extra`` topologies (separate networks in the same
    Mininet, such as the calibration network)."""
    from mininet.topo import Topo

    host_cls, router_cls = _node_classes()
    sw_cls = switch_class(switch)
    parts = [(part, compute_routing(part)) for part in (topo, *extra)]

    class KitTopo(Topo):
        def build(self) -> None:
            for part, routing in parts:
                for node in part.nodes:
                    if node.kind == SWITCH:
                        self.addSwitch(node.name, cls=sw_cls)
                    else:
                        cls = router_cls if node.kind == ROUTER else host_cls
                        self.addHost(node.name, cls=cls, **node_options(routing, node.name))
                for index, link in enumerate(part.links):
                    self.addLink(link.a, link.b, **link_options(part, routing, index))

    return KitTopo()


class MininetBackend:
    """A running Mininet network built from a topology; the lab session drives it.

    With ``calibration``, the small network of :mod:`labtools.lab.calibration` is built
    beside the lab's (its nodes are in :attr:`calibration_nodes`). Commands run on hosts as
    argument lists through ``mnexec`` (no shell involved).
    """

    def __init__(self, topo: Topology, switch: str = "lxbr", calibration: bool = False) -> None:
        self.topo = topo
        self.switch = switch
        self._net: Any = None
        self.calibration_topo: Optional[Topology] = None
        if calibration:
            from labtools.lab.calibration import calibration_topology

            self.calibration_topo = calibration_topology(set(topo.names()))

    @property
    def calibration_nodes(self) -> Tuple[str, ...]:
        """Names of the calibration network's nodes (empty without one)."""
        return tuple(self.calibration_topo.names()) if self.calibration_topo else ()

    def start(self) -> None:
        """Build and start the network (links shaped, routes installed, bridges up)."""
        from mininet.log import setLogLevel
        from mininet.net import Mininet

        setLogLevel("error")
        extra = (self.calibration_topo,) if self.calibration_topo else ()
        self._net = Mininet(topo=to_mininet_topo(self.topo, self.switch, extra),
                            controller=None, autoSetMacs=True, waitConnected=False, build=False)
        try:
            self._net.build()
            self._net.start()
        except BaseException:
            self.stop()
            raise

    def popen(self, host: str, argv: List[str]) -> Any:
        """Start ``argv`` on ``host``; a ``subprocess.Popen`` with text stdout (stderr
        merged). ``mnexec -d`` makes it the leader of its own process group."""
        import subprocess

        node = self._net.get(host)
        return node.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, text=True)

    def pid(self, host: str) -> int:
        """PID of the shell that holds ``host``'s network namespace."""
        return int(self._net.get(host).pid)

    def stop(self) -> None:
        """Stop the network and remove its interfaces, bridges and qdiscs (idempotent)."""
        net, self._net = self._net, None
        if net is not None:
            net.stop()
