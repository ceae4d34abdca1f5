"""A live demonstration on a running lab: flows that keep running, links changed under
them, and the queue, the RTT and the rates sampled about once a second.

    from labtools.lab.session import LabSession
    from labtools.lab.live import LiveDemo
    from labtools.lab.live_plan import FlowSpec, parse_change
    with LabSession("portfolio") as lab:
        demo = LiveDemo(lab, [FlowSpec("tcp", "h1", "h4"), FlowSpec("ping", "h1", "h4")])
        demo.run(30, [parse_change("10s L2 delay_ms=40")], on_sample=print)

Flows start without blocking (iperf3 TCP or UDP with a long ``-t``, ``ping -D -i 0.2``).
A knob change (:meth:`LiveDemo.change`) runs ``tc class change`` / ``tc qdisc replace`` on
both ends of the link (:func:`labtools.lab.live_plan.tc_change_lines`): the flows keep
running. A link's end on a switch is the switch's port, shaped where Mininet's ``TCLink``
shapes it: beside the switches (the lab's own namespace; the machine's with Open vSwitch),
where one more sampler reads every watched port's queue.

A sample (:meth:`LiveDemo.sample`) holds, for each shaped link a data flow crosses, the
backlog of its sending end's queue (packets, bytes), the rate it sent and its
drops since the last sample (:mod:`labtools.tools.tc_stats`); for each TCP flow its cwnd,
RTT and rate from ``ss -tin`` on its sender (:mod:`labtools.tools.parsers.ss`; the rate
from ``bytes_acked``); each ping's replies with their own times; and the values the kit
expects now (:func:`labtools.lab.live_plan.expectations`). The nodes sample themselves
(:mod:`.live_readers`). Every event is saved to the lab's results store when it happens
(:mod:`labtools.results.live_events`) and kept in :attr:`LiveDemo.events`.

A machine too slow to sample once a second is named with its numbers
(:meth:`LiveDemo.slow_note`), never drawn as if it kept up.
"""

from __future__ import annotations

import queue
import statistics
import threading
import time
import uuid
from contextlib import ExitStack
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from labtools.errors import LabtoolsError, ParseError, ToolError
from labtools.judge import policy
from labtools.lab.live_plan import (
    SWITCHES,
    FlowSpec,
    KnobChange,
    changed_topology,
    expectations,
    shaped_knobs,
    site,
    tc_change_lines,
    watched_ends,
)
from labtools.lab.live_readers import NodeBlock, NodeSampler, PingReader, sampler_argv
from labtools.lab.netplan import link_devices
from labtools.lab.processes import last_line, terminate
from labtools.lab.session import LabSession
from labtools.model.expect import path
from labtools.model.topology import Topology
from labtools.results.live_events import LiveEvent
from labtools.tools import args as toolargs
from labtools.tools.parsers.ss import parse as parse_ss
from labtools.tools.tc_stats import link_queue, parse_qdisc_stats

#: seconds a flow's iperf3 runs beyond the demonstration (it is stopped at the end)
FLOW_MARGIN_S = 30.0
#: ping's interval (s): five RTTs a second
PING_INTERVAL_S = 0.2
#: the first port of the demonstration's iperf3 servers (one per flow)
FIRST_PORT = 5301
#: seconds one ``tc`` change may take on a node (minutes are not expected, even under
#: software emulation)
CHANGE_TIMEOUT_S = 60.0
#: samples the slowness check looks back on
SLOW_WINDOW = 5
_KNOB_NETEM = ("delay_ms", "loss_pct", "queue_pkts")

Watched = Tuple[str, str, str]  # link label, node of its sending end, interface


class LiveDemo:
    """A demonstration on ``lab`` (started) with ``flows`` (see the module docstring).

    ``interval_s``: seconds between samples. ``duration_s``: how long flows are asked to
    run (iperf3's ``-t``, plus a margin; they are stopped by :meth:`stop`)."""

    def __init__(self, lab: LabSession, flows: Sequence[FlowSpec],
                 interval_s: float = policy.LIVE_SAMPLE_INTERVAL_S,
                 duration_s: float = 120.0) -> None:
        self.lab = lab
        self.topo: Topology = lab.topo
        self.flows = tuple(flows)
        self.interval_s = interval_s
        self.duration_s = duration_s
        self.demo_id = uuid.uuid4().hex
        self.events: List[LiveEvent] = []
        self.running: List[FlowSpec] = []
        self.expected: Dict[str, Dict[str, Any]] = {}
        self.t0 = 0.0
        self._stack = ExitStack()
        self._procs: List[Any] = []
        self._samplers: Dict[str, NodeSampler] = {}
        self._pings: Dict[str, PingReader] = {}
        self._ports: Dict[str, int] = {}
        self._used: Dict[str, NodeBlock] = {}
        self._intervals: List[float] = []
        self._requests: "queue.Queue[KnobChange]" = queue.Queue()
        #: the sending end of every shaped link a data flow crosses (a switch's port too)
        self.watched: List[Watched] = watched_ends(self.topo, self.flows)

    # --- starting and stopping ---------------------------------------------------------
    def _start_at(self, where: str, argv: List[str]) -> Any:
        """Start ``argv`` on node ``where``, or beside the switches (:data:`SWITCHES`)."""
        if where == SWITCHES:
            return self.lab.start_beside_switches(argv)
        return self.lab.start_process(where, argv)

    def start(self) -> None:
        """Start the samplers (one per node, one for every switch port) and record the
        start (the links and the flows)."""
        self.t0 = time.time()
        queues = {site(self.topo, n) for _, n, _ in self.watched}
        senders = {f.src for f in self.flows if f.kind == "tcp"}
        for where in sorted(queues | senders):
            proc = self._start_at(where, sampler_argv(where in queues, where in senders,
                                                      self.interval_s))
            self._procs.append(proc)
            self._samplers[where] = NodeSampler(where, proc)
        links = {lk.label: shaped_knobs(lk) for lk in self.topo.links if lk.shaped}
        self._record("start", {"flows": [f.label for f in self.flows], "links": links,
                               "watched": [list(w) for w in self.watched],
                               "interval_s": self.interval_s})

    def start_flow(self, flow: FlowSpec) -> None:
        """Start ``flow`` now, without waiting for it (an iperf3 server first, until it
        listens)."""
        dst_ip = path(self.topo, flow.src, flow.dst).dst_ip
        if flow.kind == "ping":
            argv = toolargs.ping_args(dst_ip, count=10_000, interval_s=PING_INTERVAL_S)
            proc = self.lab.start_process(flow.src, argv)
            self._procs.append(proc)
            self._pings[flow.label] = PingReader(flow.label, proc)
        else:
            port = FIRST_PORT + len(self._ports)
            options = toolargs.Iperf3Options(
                dst_ip, duration_s=min(self.duration_s + FLOW_MARGIN_S, toolargs.MAX_DURATION_S),
                window_bytes=flow.window_bytes, udp=flow.kind == "udp",
                rate_mbps=flow.rate_mbps, port=port)
            self._stack.enter_context(self.lab.server(flow.dst, options.server_argv(), port))
            self._procs.append(self.lab.start_process(flow.src, options.argv()))
            self._ports[flow.label] = port
        self.running.append(flow)
        self.expected = expectations(self.topo, self.running)
        self._record("flow", {"flow": flow.label, "expected": self.expected})

    def stop(self) -> None:
        """Stop every flow and sampler this demonstration started (idempotent)."""
        procs, self._procs = self._procs, []
        for proc in procs:
            terminate(proc)
        self._stack.close()
        if self.t0:
            self._record("end", {"samples": len(self._intervals),
                                 "median_interval_s": self.median_interval_s()})
            self.t0 = 0.0

    # --- changing a link --------------------------------------------------------------
    def request(self, change: KnobChange) -> None:
        """Ask for ``change`` from another thread (a slider): :meth:`run` applies it."""
        self._requests.put(change)

    def change(self, change: KnobChange) -> Dict[str, Any]:
        """Apply ``change`` to the running network now (both ends of its link: a node's
        interface in the node, a switch's port beside the switches), record it with its
        time and the values now expected; returns what was recorded.

        Raises:
            TopologyError: the link cannot take it (:func:`changed_topology`).
            ToolError: ``tc`` failed on one end.
        """
        asked = time.time()
        new_topo = changed_topology(self.topo, change)
        before, after = self.topo.link(change.link), new_topo.link(change.link)
        built = self.lab.topo.link(change.link)
        knobs = {k for k, _ in change.values}
        for node, dev in link_devices(self.lab.topo, built):
            where = site(self.lab.topo, node)
            for argv in tc_change_lines(before, after, dev):
                netem = "netem" in argv
                if (netem and knobs & set(_KNOB_NETEM)) or (not netem and "bw_mbps" in knobs):
                    done = (self.lab.run_beside_switches(argv, CHANGE_TIMEOUT_S)
                            if where == SWITCHES else self.lab.run(node, argv, CHANGE_TIMEOUT_S))
                    if done.exit_status != 0:
                        raise ToolError(f"{' '.join(argv)} on {node} failed "
                                        f"({done.describe_status()}): {last_line(done.text)}")
        self.topo = new_topo
        self.expected = expectations(self.topo, self.running)
        values = {"link": before.label, "knobs": dict(change.values), "text": change.text,
                  "asked_t_s": asked - self.t0, "expected": self.expected}
        self._record("change", values, at=time.time())
        return values

    # --- sampling -----------------------------------------------------------------------
    def sample(self) -> Dict[str, Any]:
        """One sample now (see the module docstring), recorded; its ``interval_s`` is the
        time between this sample's newest data and the last one's (the slowest node's). A
        link or flow whose node has sampled nothing since the last sample says so
        (``new`` False: the same numbers again, its rates None)."""
        blocks = {node: s.latest() for node, s in self._samplers.items()}
        gaps = [b.at_s - self._used[n].at_s for n, b in blocks.items()
                if b is not None and n in self._used]
        interval = max(gaps) if gaps else None
        if interval is not None and interval > 0:
            self._intervals.append(interval)
        values: Dict[str, Any] = {
            "interval_s": interval, "links": self._links(blocks), "tcp": self._tcp(blocks),
            "pings": {label: [[round(at - self.t0, 3), rtt] for at, rtt in reader.take()]
                      for label, reader in self._pings.items()},
            "expected": self.expected, "knobs": {lk.label: shaped_knobs(lk)
                                                 for lk in self.topo.links if lk.shaped}}
        self._used.update({n: b for n, b in blocks.items() if b is not None})
        return self._record("sample", values).values

    def _pair(self, blocks: Dict[str, Optional[NodeBlock]], node: str
              ) -> Tuple[Optional[NodeBlock], Optional[NodeBlock], Optional[float]]:
        now, before = blocks.get(node), self._used.get(node)
        dt = None if now is None or before is None or now.at_s <= before.at_s \
            else now.at_s - before.at_s
        return now, before, dt

    def _links(self, blocks: Dict[str, Optional[NodeBlock]]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for label, node, dev in self.watched:
            now, before, dt = self._pair(blocks, site(self.topo, node))
            if now is None:
                continue
            try:
                q = link_queue([s for s in parse_qdisc_stats(now.tc) if s.dev in (dev, None)])
                old = None if before is None or dt is None else link_queue(
                    [s for s in parse_qdisc_stats(before.tc) if s.dev in (dev, None)])
            except ParseError:
                continue
            out[label] = {"node": node, "dev": dev, "new": before is None or dt is not None,
                          "backlog_pkts": q.backlog_pkts,
                          "backlog_bytes": q.backlog_bytes,
                          "sent_mbps": None if old is None or dt is None else
                          (q.sent_bytes - old.sent_bytes) * 8 / dt / 1e6,
                          "dropped_per_s": None if old is None or dt is None else
                          (q.dropped_pkts - old.dropped_pkts) / dt}
        return out

    def _tcp(self, blocks: Dict[str, Optional[NodeBlock]]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for flow in self.running:
            if flow.kind != "tcp":
                continue
            now, before, dt = self._pair(blocks, flow.src)
            peer = f"{path(self.topo, flow.src, flow.dst).dst_ip}:{self._ports[flow.label]}"
            conn, why = _connection(now, peer)
            old, _ = _connection(before, peer)
            if conn is None:
                out[flow.label] = {"missing": why}
                continue
            acked, was = conn.get("bytes_acked"), (old or {}).get("bytes_acked")
            out[flow.label] = {
                "local": conn.get("local"), "cwnd": conn.get("cwnd"),
                "new": before is None or dt is not None,
                "rtt_ms": conn.get("rtt_ms"), "bytes_acked": acked,
                "mss_bytes": conn.get("mss_bytes"),
                "rate_mbps": None if acked is None or was is None or dt is None
                else (acked - was) * 8 / dt / 1e6}
        return out

    @property
    def intervals_s(self) -> List[float]:
        """The times between samples so far (s), oldest first."""
        return list(self._intervals)

    def median_interval_s(self) -> Optional[float]:
        """The median time between samples so far (s; None before two)."""
        return statistics.median(self._intervals) if self._intervals else None

    def slow_note(self) -> Optional[str]:
        """``samples every 2.8 s: this machine is too slow for a live demo ...`` when the
        recent samples came further apart than :data:`~labtools.judge.policy.LIVE_SLOW_SAMPLE_S`
        (their median); None while they keep up."""
        recent = self._intervals[-SLOW_WINDOW:]
        if len(recent) < 2 or statistics.median(recent) <= policy.LIVE_SLOW_SAMPLE_S:
            return None
        return (f"samples every {statistics.median(recent):.1f} s (the last {len(recent)}: "
                f"{', '.join(f'{g:.1f}' for g in recent)} s): this machine is too slow for "
                f"a live demo (it needs one every {self.interval_s:g} s, at most "
                f"{policy.LIVE_SLOW_SAMPLE_S:g} s apart)")

    # --- a whole demonstration ----------------------------------------------------------
    def run(self, duration_s: float, changes: Sequence[KnobChange] = (),
            on_sample: Optional[Callable[[Dict[str, Any]], None]] = None,
            stop: Optional[threading.Event] = None,
            on_change: Optional[Callable[[Dict[str, Any]], None]] = None) -> None:
        """Start, run the flows and timed ``changes`` (and those asked for with
        :meth:`request`) for ``duration_s`` seconds, sampling every ``interval_s``, then
        stop. A change the network refuses is recorded as refused and the run goes on."""
        self.start()
        todo: List[Tuple[float, int, Any]] = sorted(
            [(c.at_s, 0, c) for c in changes] + [(f.start_s, 1, f) for f in self.flows],
            key=lambda item: (item[0], item[1]))
        next_sample = self.t0 + self.interval_s
        try:
            while time.time() - self.t0 < duration_s and not (stop and stop.is_set()):
                # one change (or flow start) at a time, a due sample between two: under
                # emulation a change takes seconds, and a burst of them must not stop
                # the samples
                item = self._next_due(todo)
                while isinstance(item, FlowSpec):  # flows due together start together
                    self.start_flow(item)
                    item = self._next_due(todo)
                if item is not None:
                    self._do(item, on_change)
                if time.time() >= next_sample:
                    values = self.sample()
                    if on_sample is not None:
                        on_sample(values)
                    next_sample = max(next_sample + self.interval_s, time.time() + 0.05)
                if item is None:
                    time.sleep(max(0.0, min(0.05, next_sample - time.time())))
        finally:
            self.stop()

    def _next_due(self, todo: List[Tuple[float, int, Any]]) -> Any:
        """The next timed item of ``todo`` that is due (taken out), else the next change
        asked for with :meth:`request`, else None."""
        if todo and todo[0][0] <= time.time() - self.t0:
            return todo.pop(0)[2]
        if not self._requests.empty():
            return self._requests.get()
        return None

    def _do(self, item: Any, on_change: Optional[Callable[[Dict[str, Any]], None]]) -> None:
        if isinstance(item, FlowSpec):
            self.start_flow(item)
            return
        try:
            done = self.change(item)
        except LabtoolsError as err:
            done = self._record("change", {"link": item.link, "text": item.text,
                                           "refused": str(err)}).values
        if on_change is not None:
            on_change(done)

    def _record(self, kind: str, values: Dict[str, Any], at: Optional[float] = None
                ) -> LiveEvent:
        event = LiveEvent(self.demo_id, kind, round((at or time.time()) - self.t0, 4),
                          _json_ready(values), session_id=self.lab.session_id,
                          case=self.lab.case, topology=self.topo.name)
        self.events.append(event)
        if self.lab.store is not None:
            self.lab.store.save_live_events([event])
        return event


def _connection(block: Optional[NodeBlock], peer: str
                ) -> Tuple[Optional[Dict[str, Any]], str]:
    """The connection to ``peer`` that moved the most data in a block's ``ss -tin``, or
    None and why there is none."""
    if block is None or not block.ss.strip():
        return None, "no ss sample from the sender yet"
    try:
        rows = parse_ss(block.ss).rows.records
    except ParseError as err:
        return None, str(err)
    mine = [r for r in rows if r.get("peer") == peer]
    if not mine:
        seen = sorted({str(r.get("peer")) for r in rows})
        return None, f"no connection to {peer} (ss listed {', '.join(seen) or 'none'})"
    return max(mine, key=lambda r: r.get("bytes_acked") or 0), ""


def _json_ready(value: Any) -> Any:
    """``value`` with NaN (pandas' missing numbers) as None and numpy numbers as Python's."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value
