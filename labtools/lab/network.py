"""The one module that imports Mininet (lazily, inside functions).

It turns a :class:`~labtools.model.topology.Topology` into a Mininet ``Topo`` (what
``mn --custom`` gets): hosts and routers get the addresses and static routes computed by
``labtools.model.routing``, routers forward, shaped links become ``TCLink`` with the
parameters of :func:`labtools.model.topology.mininet_link_params`, and switches are Linux
bridges (no controller needed) unless Open vSwitch is asked for.

:class:`MininetBackend` runs a lab's network. With Linux bridges the kit builds it itself,
without importing Mininet and without root, inside a sandbox of the user who starts it
(:mod:`labtools.lab.sandbox`: a user namespace and a network namespace of its own, which
end with the lab's process): its hosts and routers are small shells in namespaces of their
own (:mod:`labtools.lab.nodes`, started by Mininet's ``mnexec``), and the links come from the
batched plan of :mod:`labtools.lab.netplan` (the same veths, addresses, routes and TCLink
shaping, in a few commands instead of hundreds). The machine's own network namespace is
never touched. With Open vSwitch it lets Mininet build everything in the machine's own
namespace, which needs root.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labtools.errors import EnvironmentProblem, InputError
from labtools.lab.nodes import NodeShell
from labtools.lab.sandbox import Sandbox
from labtools.model.routing import Routing, compute_routing
from labtools.model.topology import ROUTER, SWITCH, Topology, mininet_link_params, needs_netem

#: node shells started at once (each mostly waits for its process to come up)
SHELLS_AT_ONCE = 8
#: node scripts run at once: a thousand at once exhausted the lab VM's shared file system
#: (each `ip` opens its libraries through it: "libmnl.so.0: cannot open shared object file")
SCRIPTS_AT_ONCE = 64
#: seconds one ``ip``/``tc`` command in the sandbox's own namespace may take: this much,
#: plus ``ROOT_S_PER_LINE`` per line of a batch (under software emulation a thousand veth
#: pairs take minutes)
ROOT_COMMAND_S = 120.0
ROOT_S_PER_LINE = 0.5
#: why a lab with Open vSwitch switches cannot start without root
OVS_NEEDS_ROOT = ("Open vSwitch switches need root: Mininet builds them in this machine's "
                  "own network namespace. Run as root (sudo), or use Linux bridges (the "
                  "default, --switch lxbr), which need no root")
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

    The networks ``beside`` (such as the calibration network of
    :mod:`labtools.model.calibration`) are built with the lab's, separate from it: their
    own nodes and links, none joined to the lab's. Commands run on hosts as argument lists
    through ``mnexec`` (no shell involved).
    """

    def __init__(self, topo: Topology, switch: str = "lxbr",
                 beside: Sequence[Topology] = ()) -> None:
        self.topo = topo
        self.switch = switch
        self.beside = tuple(beside)
        self._net: Any = None  # Mininet builds it (Open vSwitch)
        self._sandbox: Optional[Sandbox] = None  # or the kit builds it (Linux bridges) in it
        self._hosts: Dict[str, NodeShell] = {}
        #: seconds each phase of the last start took (shells, root_ip, node_scripts, ...)
        self.phase_s: Dict[str, float] = {}

    @property
    def sandbox_pid(self) -> Optional[int]:
        """PID of the sandbox's holder (its user and network namespaces are the lab's);
        None before start and with Open vSwitch."""
        return self._sandbox.pid if self._sandbox is not None else None

    @property
    def needs_netem(self) -> bool:
        """True when a link of the network (of the networks beside it too) has a delay,
        a loss rate or a queue limit: the kernel's ``sch_netem`` shapes those."""
        return any(needs_netem(part) for part in self._parts())

    def start(self) -> None:
        """Build and start the network (links shaped, routes installed, bridges up).

        Raises :class:`EnvironmentProblem` when this machine does not let this user make a
        sandbox (with what to change), or for Open vSwitch switches without root."""
        if self.switch != "lxbr" and os.geteuid() != 0:
            switch_class(self.switch)  # an unknown kind is an InputError first
            raise EnvironmentProblem(OVS_NEEDS_ROOT)
        try:
            if self.switch == "lxbr":
                self._start_batched()
            else:
                self._start_mininet()
        except BaseException:
            self.stop()
            raise

    def _parts(self) -> Tuple[Topology, ...]:
        return (self.topo, *self.beside)

    def _start_mininet(self) -> None:
        import_mininet()
        from mininet.log import setLogLevel
        from mininet.net import Mininet

        setLogLevel("error")

        topo = to_mininet_topo(self.topo, self.switch, self.beside)
        self._net = Mininet(topo=topo, controller=None, autoSetMacs=True,
                            waitConnected=False, build=False)
        self._net.build()
        self._net.start()

    def _start_batched(self) -> None:
        from labtools.lab.netplan import gro_off_command, plan_network

        clock = _PhaseClock(self.phase_s)
        plan = plan_network(self._parts())
        clock.lap("plan")
        sandbox = self._sandbox = Sandbox()
        clock.lap("sandbox")
        self._start_shells(list(plan.nodes), sandbox)
        clock.lap("shells")
        pids = {name: host.pid for name, host in self._hosts.items()}
        _run_batch(sandbox, "ip", [line.format(pid=pids) for line in plan.root_ip])
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
                for name in wave:
                    status, out = self._hosts[name].wait_script()
                    if status != 0:
                        failed.append((name, out.strip() or f"exit status {status}"))
        clock.lap("node scripts")
        if failed:
            name, out = failed[0]
            raise EnvironmentProblem(f"configuring {name} failed: {out.splitlines()[-1]}")
        if plan.root_gro_off:
            _run(sandbox.command(["sh", "-c", "\n".join(gro_off_command(dev)
                                                         for dev in plan.root_gro_off)]),
                 env=sandbox.env)
        if plan.root_tc:
            _run_batch(sandbox, "tc", plan.root_tc)
        clock.lap("root shaping")

    def _start_shells(self, names: List[str], sandbox: Sandbox) -> None:
        """A shell in a new namespace for each node, several at once: each waits for its
        bash to start (a third of a second under software emulation). Every shell that
        started is kept in ``_hosts`` (so ``stop`` removes it) before an error is raised."""
        from concurrent.futures import ThreadPoolExecutor, wait

        pool = ThreadPoolExecutor(max_workers=max(1, min(SHELLS_AT_ONCE, len(names))))
        futures = {name: pool.submit(NodeShell, name, sandbox) for name in names}
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
        merged), the leader of its own process group."""
        if self._sandbox is not None:
            return self._sandbox.popen_in(self.pid(host), argv)
        return subprocess.Popen(["mnexec", "-da", str(self.pid(host)), *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True)

    def run_beside_switches(self, argv: List[str]) -> str:
        """Run ``argv`` in the network namespace of the lab's switches (its sandbox's own;
        the machine's with Open vSwitch) and return its output: ``ip link``, ``tc -s
        qdisc show dev s1-eth1``. :class:`EnvironmentProblem` when it fails."""
        if self._sandbox is None and self._net is None:
            raise EnvironmentProblem("the lab network is not running")
        if self._sandbox is None:
            return _run(argv)
        return _run(self._sandbox.command(argv), name=argv[0], env=self._sandbox.env)

    def popen_beside_switches(self, argv: List[str]) -> "subprocess.Popen[str]":
        """Start ``argv`` where :meth:`run_beside_switches` runs it, without waiting (a
        live demonstration's sampler, ``tc`` on a switch's port); as :meth:`popen`."""
        if self._sandbox is None and self._net is None:
            raise EnvironmentProblem("the lab network is not running")
        command, env = ((argv, None) if self._sandbox is None
                        else (self._sandbox.command(argv), self._sandbox.env))
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, start_new_session=True,
                                env=env)

    def pid(self, host: str) -> int:
        """PID of the shell that holds ``host``'s network namespace."""
        return int(self._node(host).pid)

    def stop(self) -> None:
        """Stop the network and remove its interfaces, bridges and qdiscs (idempotent).
        A sandboxed network ends with its sandbox: every process in it is killed, and its
        namespaces, with every interface and qdisc in them, go with the last of them."""
        net, self._net = self._net, None
        if net is not None:
            net.stop()
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            sandbox.close()
        hosts, self._hosts = self._hosts, {}
        for host in hosts.values():  # already ended with the sandbox: collect them
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


def _run(argv: List[str], stdin: str = "", name: str = "",
         env: Optional[Dict[str, str]] = None) -> str:
    """Run a command (``name`` says which in errors; default its first word); its output.
    :class:`EnvironmentProblem` when it fails or takes longer than ``ROOT_COMMAND_S`` plus
    ``ROOT_S_PER_LINE`` per line of ``stdin``."""
    name = name or argv[0]
    limit_s = ROOT_COMMAND_S + ROOT_S_PER_LINE * stdin.count("\n")
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                              timeout=limit_s, check=False, env=env)
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"{name} did not finish within {limit_s:g} s") from None
    if proc.returncode != 0:
        out = (proc.stderr or proc.stdout).strip().splitlines()
        raise EnvironmentProblem(f"{name} failed: {out[-1] if out else proc.returncode}")
    return proc.stdout


def _run_batch(sandbox: Sandbox, tool: str, lines: Sequence[str]) -> None:
    """``ip -batch -`` or ``tc -batch -`` in the sandbox's own namespace."""
    _run(sandbox.command([tool, "-batch", "-"]), "\n".join(lines) + "\n", tool, sandbox.env)
