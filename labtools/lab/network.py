"""The one module that imports Mininet (lazily, inside functions).

It turns a :class:`~labtools.model.topology.Topology` into a Mininet ``Topo`` (what
``mn --custom`` gets): hosts and routers get the addresses and static routes computed by
``labtools.model.routing``, routers forward, shaped links become ``TCLink`` with the
parameters of :func:`labtools.model.topology.mininet_link_params`, and switches are Linux
bridges (no controller needed) unless Open vSwitch is asked for.

:class:`MininetBackend` runs a lab's network. With Linux bridges the kit builds it itself,
without importing Mininet: its hosts and routers are small shells in namespaces of their own
(:mod:`labtools.lab.nodes`, started by Mininet's ``mnexec``), and the links come from the
batched plan of :mod:`labtools.lab.netplan` (the same veths, addresses, routes and TCLink
shaping, in a few commands instead of hundreds). With Open vSwitch it lets Mininet build
everything.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labtools.errors import EnvironmentProblem, InputError
from labtools.lab.nodes import NodeShell, popen_in_namespace
from labtools.model.routing import Routing, compute_routing
from labtools.model.topology import ROUTER, SWITCH, Topology, mininet_link_params

#: node shells started at once (each mostly waits for its process to come up)
SHELLS_AT_ONCE = 8
#: node scripts run at once: a thousand at once exhausted the lab VM's shared file system
#: (each `ip` opens its libraries through it: "libmnl.so.0: cannot open shared object file")
SCRIPTS_AT_ONCE = 64
#: seconds one root ``ip``/``tc`` command may take: this much, plus ``ROOT_S_PER_LINE`` per
#: line of a batch (under software emulation a thousand veth pairs take minutes)
ROOT_COMMAND_S = 120.0
ROOT_S_PER_LINE = 0.5
#: the link groups (``ip link ... group N``) a network's bridges and switch ports are put
#: in, one drawn at random per network, so networks running side by side never share one
LINK_GROUPS = (1 << 16, 1 << 31)
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
        self._net: Any = None  # Mininet builds it (Open vSwitch)
        self._hosts: Dict[str, NodeShell] = {}  # or the kit builds it (Linux bridges)
        self._bridges: List[str] = []
        self._link_group = 0  #: of the bridges and switch ports (0: none yet)
        #: seconds each phase of the last start took (shells, root_ip, node_scripts, ...)
        self.phase_s: Dict[str, float] = {}
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
        try:
            if self.switch == "lxbr":
                self._start_batched()
            else:
                self._start_mininet()
        except BaseException:
            self.stop()
            raise

    def _parts(self) -> Tuple[Topology, ...]:
        return (self.topo, self.calibration_topo) if self.calibration_topo else (self.topo,)

    def _start_mininet(self) -> None:
        import_mininet()
        from mininet.log import setLogLevel
        from mininet.net import Mininet

        setLogLevel("error")

        topo = to_mininet_topo(self.topo, self.switch, self._parts()[1:])
        self._net = Mininet(topo=topo, controller=None, autoSetMacs=True,
                            waitConnected=False, build=False)
        self._net.build()
        self._net.start()

    def _start_batched(self) -> None:
        from labtools.lab.netplan import gro_off_command, plan_network

        clock = _PhaseClock(self.phase_s)
        plan = plan_network(self._parts())
        clock.lap("plan")
        self._bridges = list(plan.root_veths) + list(plan.bridges)  # removed at stop
        self._link_group = random.randrange(LINK_GROUPS[0], LINK_GROUPS[1])
        self._start_shells(list(plan.nodes))
        clock.lap("shells")
        pids = {name: host.pid for name, host in self._hosts.items()}
        _run_batch("ip", [line.format(pid=pids, group=self._link_group)
                          for line in plan.root_ip])
        clock.lap("links and bridges")
        failed: List[Tuple[str, str]] = []
        names = list(plan.nodes)
        with tempfile.TemporaryDirectory(prefix="labtools-net-") as scripts:
            for first in range(0, len(names), SCRIPTS_AT_ONCE):  # nodes configure themselves
                wave = names[first:first + SCRIPTS_AT_ONCE]
                for name in wave:
                    path = Path(scripts, f"{name}.sh")
                    path.write_text(plan.nodes[name].script())
                    self._hosts[name].send_script(str(path))
                failed += [(name, out.strip()) for name, out in
                           ((name, self._hosts[name].wait_output()) for name in wave)
                           if out.strip()]
        clock.lap("node scripts")
        if failed:
            name, out = failed[0]
            raise EnvironmentProblem(f"configuring {name} failed: {out.splitlines()[-1]}")
        if plan.root_gro_off:
            _run(["sh", "-c", "\n".join(gro_off_command(dev) for dev in plan.root_gro_off)])
        if plan.root_tc:
            _run_batch("tc", plan.root_tc)
        clock.lap("root shaping")

    def _start_shells(self, names: List[str]) -> None:
        """A shell in a new namespace for each node, several at once: each waits for its
        bash to start (a third of a second under software emulation). Every shell that
        started is kept in ``_hosts`` (so ``stop`` removes it) before an error is raised."""
        from concurrent.futures import ThreadPoolExecutor, wait

        pool = ThreadPoolExecutor(max_workers=max(1, min(SHELLS_AT_ONCE, len(names))))
        futures = {name: pool.submit(NodeShell, name) for name in names}
        try:
            pool.shutdown(wait=True)
        finally:  # also on Ctrl-C: the shells still starting finish, and all are kept
            wait(list(futures.values()))
            for name, future in futures.items():
                if future.exception() is None:
                    self._hosts[name] = future.result()
        for future in futures.values():
            error = future.exception()
            if error is not None:
                raise error

    def _node(self, host: str) -> Any:
        if self._net is not None:
            return self._net.get(host)
        if host not in self._hosts:
            raise EnvironmentProblem("the lab network is not running")
        return self._hosts[host]

    def popen(self, host: str, argv: List[str]) -> Any:
        """Start ``argv`` on ``host``; a ``subprocess.Popen`` with text stdout (stderr
        merged). ``mnexec -d`` makes it the leader of its own process group."""
        return popen_in_namespace(self.pid(host), argv)

    def pid(self, host: str) -> int:
        """PID of the shell that holds ``host``'s network namespace."""
        return int(self._node(host).pid)

    def stop(self) -> None:
        """Stop the network and remove its interfaces, bridges and qdiscs (idempotent)."""
        net, self._net = self._net, None
        if net is not None:
            net.stop()
        bridges, self._bridges = self._bridges, []
        if bridges:  # the bridges and the switch ports, with the veths' other ends, now
            _remove_root_links(self._link_group, bridges)
        hosts, self._hosts = self._hosts, {}
        for host in hosts.values():  # the namespaces, and the veths between nodes, go with them
            host.terminate()


class _PhaseClock:
    """Writes the seconds since the previous lap into ``into[name]``."""

    def __init__(self, into: Dict[str, float]) -> None:
        self.into = into
        into.clear()
        self.last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.into[name] = round(now - self.last, 4)
        self.last = now


def import_mininet() -> None:
    """Import Mininet, keeping setuptools out of it: Mininet imports ``distutils`` for one
    version comparison, and where setuptools stands in for it (its ``distutils`` shim)
    that import costs seconds under software emulation. The standard library's own
    ``distutils`` (Python < 3.12) is used instead when there is one."""
    if "mininet.net" in sys.modules:
        return
    shims = [f for f in sys.meta_path if type(f).__name__ == "DistutilsMetaFinder"]
    if sys.version_info >= (3, 12) or not shims:
        import mininet.net  # noqa: F401
        return
    for finder in shims:
        sys.meta_path.remove(finder)
    try:
        import mininet.net  # noqa: F401
    finally:
        sys.meta_path[:0] = shims


def _run(argv: List[str], stdin: str = "", check: bool = True) -> str:
    """Run a command in the root namespace; its output. :class:`EnvironmentProblem` when it
    fails (with ``check``) or takes longer than ``ROOT_COMMAND_S`` plus ``ROOT_S_PER_LINE``
    per line of ``stdin``."""
    limit_s = ROOT_COMMAND_S + ROOT_S_PER_LINE * stdin.count("\n")
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                              timeout=limit_s, check=False)
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"{argv[0]} did not finish within {limit_s:g} s") from None
    if check and proc.returncode != 0:
        out = (proc.stderr or proc.stdout).strip().splitlines()
        raise EnvironmentProblem(f"{argv[0]} failed: {out[-1] if out else proc.returncode}")
    return proc.stdout


def _remove_root_links(group: int, names: Sequence[str]) -> None:
    """Delete a network's bridges and switch ports (and the veths' other ends) before
    returning: all at once by their link group, since the kernel waits once per deletion
    (deleting 1000 ports by name took 23 s natively); by name those still there (a start
    that failed before it put them in the group)."""
    if group:
        _run(["ip", "link", "delete", "group", str(group)], check=False)
    left = [name for name in names if Path("/sys/class/net", name).exists()]
    if left:
        _run_batch("ip", [f"link del {name}" for name in left], check=False)


def _run_batch(tool: str, lines: Sequence[str], check: bool = True) -> None:
    """``ip -batch -`` or ``tc -batch -`` in the root namespace (``-force``: go on after an
    error, for removals)."""
    _run([tool, *([] if check else ["-force"]), "-batch", "-"], "\n".join(lines) + "\n", check)
