"""What a live demonstration does, as data: its flows, its timed knob changes, the tc
commands a change becomes, and the values the kit expects after each change (pure: no
root, no network).

A *knob* is one of a shaped link's parameters, named as :class:`~labtools.model.topology.Link`
names them: ``bw_mbps``, ``delay_ms``, ``loss_pct``, ``queue_pkts``. A change is written
as the rehearsal mode's command line takes it, ``"5s L2 delay_ms=40"`` (seconds after the
start, the link's label, one or more ``knob=value``); :func:`parse_change` reads it. A
change gives a new topology (:func:`changed_topology`, checked by the kit's limits as
every topology is), from which :func:`expectations` redraws the expected values with
:mod:`labtools.model.expect` and :mod:`labtools.model.fairness` (no second formula), and
becomes tc commands on the running network (:func:`tc_change_lines`): the same classes
and qdiscs as :func:`labtools.lab.netplan.tc_lines` made them (Mininet's ``TCLink``
handles), changed in place (``tc class change``, ``tc qdisc replace``), so the flows keep
running and the packets waiting in the queue stay. :func:`watched_ends` names the queue
each data flow fills (the sending end of each shaped link it crosses) and :func:`site`
where its commands run (a switch's port: beside the switches, :data:`SWITCHES`).

A link keeps the shape it was built with: a rate can change on a link built with one, not
be added to or taken from a link; delay, loss and the queue limit may be set on any
shaped link (netem is added under its rate class where it had none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labtools.errors import InputError, TopologyError
from labtools.judge import policy
from labtools.lab.netplan import link_devices, tc_lines
from labtools.model import expect
from labtools.model.fairness import Flow, max_min_shares
from labtools.model.topology import SWITCH, Link, Topology, mininet_link_params

#: the knobs of a shaped link, with the type each takes
KNOBS: Dict[str, type] = {"bw_mbps": float, "delay_ms": float, "loss_pct": float,
                          "queue_pkts": int}
#: netem's own queue limit when none is given (packets): what a link without
#: ``queue_pkts`` has
NETEM_DEFAULT_LIMIT_PKTS = 1000
#: the kinds of flow a demonstration starts
FLOW_KINDS = ("tcp", "udp", "ping")
#: where the switches' ports are: a live demonstration samples and changes them there
SWITCHES = "(switches)"
_CHANGE = re.compile(r"^\s*(?P<at>\d+(?:\.\d+)?)s\s+(?P<link>\S+)\s+(?P<knobs>.+?)\s*$")


@dataclass(frozen=True)
class FlowSpec:
    """A flow of a demonstration: ``kind`` (tcp, udp or ping) from ``src`` to ``dst``,
    started ``start_s`` seconds after the demonstration starts; a TCP flow may ask for a
    socket buffer (``window_bytes``, iperf3's ``-w``), a UDP flow offers ``rate_mbps``."""

    kind: str
    src: str
    dst: str
    start_s: float = 0.0
    window_bytes: Optional[int] = None
    rate_mbps: Optional[float] = None

    def __post_init__(self) -> None:
        if self.kind not in FLOW_KINDS:
            raise InputError(f"flow kind {self.kind!r}: choose one of {', '.join(FLOW_KINDS)}")
        if self.kind == "udp" and self.rate_mbps is None:
            raise InputError(f"a UDP flow {self.src} -> {self.dst} needs its rate_mbps")

    @property
    def label(self) -> str:
        """``tcp h1>h4`` (with ``w=100000`` or ``20 Mbit/s`` where given)."""
        extra = (f" w={self.window_bytes}" if self.window_bytes else "") + \
            (f" {self.rate_mbps:g} Mbit/s" if self.kind == "udp" else "")
        return f"{self.kind} {self.src}>{self.dst}{extra}"


@dataclass(frozen=True)
class KnobChange:
    """Knobs of one link set ``at_s`` seconds after the start (values in the knobs' units)."""

    link: str
    values: Tuple[Tuple[str, float], ...]
    at_s: float = 0.0

    @property
    def text(self) -> str:
        """As :func:`parse_change` reads it: ``5s L2 delay_ms=40``."""
        knobs = " ".join(f"{k}={v:g}" for k, v in self.values)
        return f"{self.at_s:g}s {self.link} {knobs}"


@dataclass(frozen=True)
class Preset:
    """A story told in under a minute: a topology, its flows, timed changes and what to
    look at (one line the instructor can read out, and one per change)."""

    name: str
    topology: str
    flows: Tuple[FlowSpec, ...]
    changes: Tuple[KnobChange, ...]
    look_at: str
    change_notes: Tuple[str, ...] = ()
    duration_s: float = 45.0
    sliders: Tuple[str, ...] = field(default=("L1", "L2", "L3"))


def parse_change(text: str) -> KnobChange:
    """``"5s L2 delay_ms=40 queue_pkts=50"`` as a :class:`KnobChange`.

    Raises:
        InputError: not ``Ns LINK knob=value...``, an unknown knob, or a value that is not
            a number of the knob's type.
    """
    found = _CHANGE.match(text)
    if found is None:
        raise InputError(f"change {text!r}: write it as '5s L2 delay_ms=40' (seconds after "
                         "the start, the link, knob=value...)")
    values = []
    for word in found["knobs"].split():
        name, _, shown = word.partition("=")
        if name not in KNOBS:
            raise InputError(f"change {text!r}: unknown knob {name!r} (knobs: "
                             f"{', '.join(KNOBS)})")
        try:
            value = KNOBS[name](shown)
        except ValueError:
            raise InputError(f"change {text!r}: {name}={shown!r} is not a "
                             f"{'whole number' if KNOBS[name] is int else 'number'}") from None
        values.append((name, value))
    return KnobChange(found["link"], tuple(values), float(found["at"]))


def changed_topology(topo: Topology, change: KnobChange) -> Topology:
    """``topo`` with ``change`` applied to its link (validated as every topology is).

    Raises:
        TopologyError: no such link, a link without shaping, a rate added to or taken
            from a link, or a value outside what the lab can build.
    """
    link = topo.link(change.link)
    if not link.shaped:
        raise TopologyError(f"link {link.label} is not shaped: the live demonstration "
                            "changes shaped links only")
    values: Dict[str, Any] = {k: (int(v) if KNOBS[k] is int else float(v))
                              for k, v in change.values}
    new = replace(link, **values)
    if (new.bw_mbps is None) != (link.bw_mbps is None):
        raise TopologyError(f"link {link.label}: a rate can change, not be added or removed "
                            "on a running network")
    links = tuple(new if lk is link else lk for lk in topo.links)
    return Topology(topo.name, topo.nodes, links, dict(topo.params))


def site(topo: Topology, node: str) -> str:
    """Where a command on ``node``'s interfaces runs: in the node itself, or, for a switch,
    :data:`SWITCHES` (every switch's ports are in the lab's own namespace, as Mininet's
    ``TCLink`` shapes them in the machine's)."""
    return SWITCHES if topo.node(node).kind == SWITCH else node


def watched_ends(topo: Topology, flows: Sequence[FlowSpec]) -> List[Tuple[str, str, str]]:
    """(link label, node, interface) of the sending end of every shaped link a TCP or UDP
    flow of ``flows`` crosses (a switch's port included), each once, in the flows' order."""
    found: Dict[Tuple[str, str], Tuple[str, str, str]] = {}
    for flow in flows:
        if flow.kind == "ping":
            continue
        info = expect.path(topo, flow.src, flow.dst)
        for link in info.links:
            if link.shaped:
                node, dev = min(link_devices(topo, link),
                                key=lambda end: info.nodes.index(end[0]))
                found.setdefault((node, dev), (link.label, node, dev))
    return list(found.values())


def tc_change_lines(before: Link, after: Link, dev: str) -> List[List[str]]:
    """The ``tc`` argument lists that turn ``dev``'s shaping of ``before`` into that of
    ``after`` in place (one end of the link; the other end gets the same with its own
    interface)."""
    made = [line.split() for line in tc_lines(after, dev)]
    lines: List[List[str]] = []
    for words in made:
        if words[:2] == ["class", "add"]:
            lines.append(["tc", "class", "change", *words[2:]])
        elif words[:2] == ["qdisc", "add"] and "tbf" in words:
            lines.append(["tc", "qdisc", "change", *words[2:]])
        elif words[:2] == ["qdisc", "add"] and "netem" in words:
            lines.append(["tc", "qdisc", "replace", *words[2:]])
    had_netem = any("netem" in line for line in tc_lines(before, dev))
    if had_netem and not any("netem" in words for words in made):
        parent = ["parent", "5:1"] if after.bw_mbps is not None else ["root"]
        lines.append(["tc", "qdisc", "replace", "dev", dev, *parent, "handle", "10:", "netem",
                      "limit", str(NETEM_DEFAULT_LIMIT_PKTS)])
    return lines


def flow_expectation(topo: Topology, flow: FlowSpec,
                     share_mbps: Optional[float] = None) -> Dict[str, Optional[float]]:
    """What the kit expects of ``flow`` on ``topo`` (units in the keys): the RTT of an
    empty path and with every queue full (``rtt_ms``, ``max_rtt_ms``), the bandwidth-delay
    product, and the rate: for TCP the lowest of the path's limit (ceiling, loss estimate,
    queue cap), the window's (``window_bytes`` / RTT) and the fair share (``share_mbps``,
    Mbit/s of frames, when flows share a link); for UDP what the path carries of the
    offered rate."""
    pair = expect.expect_pair(topo, flow.src, flow.dst)
    out: Dict[str, Optional[float]] = {
        "rtt_ms": pair.rtt_ms, "max_rtt_ms": pair.max_rtt_ms, "bdp_bytes": pair.bdp_bytes,
        "mathis_limit_mbps": pair.mathis_limit_mbps}
    if flow.kind == "tcp":
        rates = [pair.tcp_limit_mbps]
        if flow.window_bytes is not None and pair.rtt_ms > 0:
            rates.append(expect.window_rate_mbps(flow.window_bytes, pair.rtt_ms))
        if share_mbps is not None:
            rates.append(expect.tcp_goodput_ceiling_mbps(share_mbps))
        known = [r for r in rates if r is not None]
        out["rate_mbps"] = min(known) if known else None
    elif flow.kind == "udp" and flow.rate_mbps is not None:
        ceiling = pair.udp_goodput_ceiling_mbps
        out["rate_mbps"] = flow.rate_mbps if ceiling is None else min(flow.rate_mbps, ceiling)
    return out


def expectations(topo: Topology, flows: Sequence[FlowSpec]) -> Dict[str, Dict[str, Any]]:
    """Each running flow's expected values (:func:`flow_expectation`), by its label; TCP
    flows get their max-min fair share of the links they share (and ``share_mbps``)."""
    tcp = [f for f in flows if f.kind == "tcp"]
    shares = ({f.label: s.share_mbps for f, s in
               zip(tcp, max_min_shares(topo, [Flow(f.src, f.dst) for f in tcp]))}
              if len(tcp) > 1 else {})
    result: Dict[str, Dict[str, Any]] = {}
    for flow in flows:
        share = shares.get(flow.label)
        result[flow.label] = {**flow_expectation(topo, flow, share), "share_mbps": share}
    return result


def shaped_knobs(link: Link) -> Dict[str, Optional[float]]:
    """A link's knob values (``queue_pkts`` None: netem's default limit)."""
    return {"bw_mbps": link.bw_mbps, "delay_ms": link.delay_ms, "loss_pct": link.loss_pct,
            "queue_pkts": link.queue_pkts}


def describe_params(link: Link) -> str:
    """A link's shaping as Mininet's ``TCLink`` keywords (``bw=30 delay=20ms ...``)."""
    return " ".join(f"{k}={v}" for k, v in mininet_link_params(link).items())


@dataclass(frozen=True)
class RttFollow:
    """How a ping's RTT followed a change of the expected RTT from ``old_ms`` to
    ``new_ms`` (the empty path's; times in s after the demonstration's start).

    ``followed_after_s``: from the change to the first reply on the new side of the step
    (for a rise at least the RTT before it plus the expected step, less ``tolerance_ms``;
    for a fall at most that, plus ``tolerance_ms``); None when none came. ``before_ms`` /
    ``after_ms``: the median RTT of the replies before the change and of those from
    ``LIVE_FOLLOW_S`` after it (None without)."""

    old_ms: float
    new_ms: float
    tolerance_ms: float
    followed_after_s: Optional[float]
    before_ms: Optional[float]
    after_ms: Optional[float]
    replies_before: int
    replies_after: int

    @property
    def step_ms(self) -> Optional[float]:
        """The measured step of the median RTT (ms)."""
        if self.before_ms is None or self.after_ms is None:
            return None
        return self.after_ms - self.before_ms

    @property
    def ok(self) -> bool:
        """Followed within ``LIVE_FOLLOW_S``, and the step within the tolerance of the
        expected one."""
        step = self.step_ms
        return (self.followed_after_s is not None
                and self.followed_after_s <= policy.LIVE_FOLLOW_S and step is not None
                and abs(step - (self.new_ms - self.old_ms)) <= self.tolerance_ms)

    def describe(self) -> str:
        """One line with the numbers."""
        def ms(value: Optional[float]) -> str:
            return "-" if value is None else f"{value:.1f} ms"
        after = "never" if self.followed_after_s is None else f"{self.followed_after_s:.2f} s"
        return (f"RTT expected {self.old_ms:g} -> {self.new_ms:g} ms; median {ms(self.before_ms)}"
                f" ({self.replies_before} replies) -> {ms(self.after_ms)} "
                f"({self.replies_after}), step {ms(self.step_ms)} (tolerance "
                f"{self.tolerance_ms:.1f} ms); followed after {after}")


def rtt_follow(replies: Sequence[Tuple[float, float]], change_s: float, old_ms: float,
               new_ms: float) -> RttFollow:
    """How the ``replies`` ((time s, RTT ms), the ping's own times) followed a change made
    at ``change_s`` from an expected RTT of ``old_ms`` to ``new_ms``; the tolerance is
    ``max(RTT_TOL_MS, LIVE_RTT_TOL_REL x new_ms)`` (:mod:`labtools.judge.policy`)."""
    import statistics

    tol = max(policy.RTT_TOL_MS, policy.LIVE_RTT_TOL_REL * new_ms)
    before = [rtt for at, rtt in replies if at < change_s]
    settled = [rtt for at, rtt in replies if at >= change_s + policy.LIVE_FOLLOW_S]
    base = statistics.median(before) if before else old_ms
    target = base + new_ms - old_ms  # what this machine adds stays
    rise = new_ms >= old_ms
    first = next((at - change_s for at, rtt in sorted(replies) if at >= change_s
                  and (rtt >= target - tol if rise else rtt <= target + tol)), None)
    return RttFollow(old_ms, new_ms, tol, first, statistics.median(before) if before else None,
                     statistics.median(settled) if settled else None,
                     len(before), len(settled))
