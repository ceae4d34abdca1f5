"""Probes on Mininet hosts: each one measures, judges and saves in one step.

Every probe takes a running :class:`~labtools.lab.session.LabSession`, builds the tool's
arguments (:mod:`labtools.tools.args`), starts the server it needs, runs the client with a
time-out, parses and judges the output (:mod:`labtools.judge.measurement`) and saves the
judged measurement before returning it. A failure (hung or killed server, output that does
not parse) is saved with its raw output and raised as a typed error.

Durations and counts left out come from the session (``lab.durations``, see
:mod:`labtools.judge.policy`); a throughput run leaves out its warm-up (iperf3 ``-O``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

from labtools.errors import InputError, LabtoolsError, ToolError
from labtools.frame_sizes import IPERF_UDP_PAYLOAD_BYTES
from labtools.judge import policy
from labtools.judge.measurement import JudgeContext, Measurement, ProbeCall, judge_parsed
from labtools.judge.repeated import RepeatedMeasurement, check_repeat, judge_repeated
from labtools.judge.shares import FlowsMeasurement, flows_spec, judge_flows
from labtools.lab import own_simpleperf
from labtools.lab.machine_watch import LatenessWatch
from labtools.lab.processes import (
    SERVER_READY_S,
    TIMEOUT_MARGIN_S,
    ToolOutput,
    parse_output,
    server_failure,
    terminate,
    wait_output,
)
from labtools.lab.startgate import StartGate
from labtools.model.fairness import Flow
from labtools.results.records import GroupRecord, utc_now
from labtools.tools import args as toolargs
from labtools.tools.parsers.base import Parsed

if TYPE_CHECKING:  # pragma: no cover
    import subprocess

    from labtools.lab.session import LabSession

#: what a probe returns: its measurement, or with ``repeat`` > 1 its runs judged together
#: (while grading replays a results file without it: a stand-in that raises ReplayError
#: when used, :class:`labtools.lab.replay.MissingMeasurement`)
ProbeResult = Union[Measurement, RepeatedMeasurement]
#: seconds the clients of concurrent flows get to reach the start gate
GATE_READY_S = 30.0
T = TypeVar("T")


def repeated(lab: "LabSession", call: ProbeCall, repeat: int,
             measure: Callable[[ProbeCall], T]) -> Union[T, RepeatedMeasurement]:
    """``measure`` once as the step ``call`` (``repeat`` 1: the measurement itself), or
    ``repeat`` times as steps of their own, each saved with the call and its place
    (``repeat``, ``run``), judged together on their medians
    (:class:`~labtools.judge.repeated.RepeatedMeasurement`)."""
    check_repeat(repeat)
    if repeat == 1:
        return lab.perform(call, lambda: measure(call))
    runs = []
    for k in range(repeat):
        one = ProbeCall(call.probe, {**call.args, "repeat": repeat, "run": k})
        runs.append(lab.perform(one, partial(measure, one)))
    from labtools.lab.replay import MissingMeasurement

    missing = [run for run in runs if isinstance(run, MissingMeasurement)]
    if missing:  # replaying without these runs: missing as a whole, like a single call
        return missing[0]
    return judge_repeated(runs, call=ProbeCall(call.probe, {**call.args, "repeat": repeat}),
                          started_at=getattr(runs[0], "started_at", ""),
                          finished_at=getattr(runs[-1], "finished_at", ""))


def one_run(result: Union[T, RepeatedMeasurement]) -> T:
    """The one measurement of a probe called without ``repeat`` (an :class:`InputError`
    for runs judged together)."""
    if isinstance(result, RepeatedMeasurement):
        raise InputError(f"one run expected, got {len(result.runs)} judged together (repeat)")
    return result


class SocketWatch:
    """Reads the sender's socket with ``ss -tin`` while a TCP run goes on: the window the
    kernel granted (``snd_wnd``), the congestion window and the kernel's RTT. Kept with the
    measurement (``extra["ss"]``, the raw text of the latest read that found the data
    connection) and used to judge a window-limited rate
    (``JudgeContext.granted_window_bytes``).

    It reads once the warm-up is over (``first_s``) and again halfway (``at_s``); when
    neither read found the connection carrying data (a client that started late, a
    machine that stalled), it reads every :data:`RETRY_S` until the tool ends. A failed
    read is noted (``extra["ss_error"]``), never the measurement's failure."""

    #: seconds between reads when no read has found the data connection yet
    RETRY_S = 0.25
    #: bytes acknowledged on a connection that carries the data (iperf3's control
    #: connection carries a few hundred before the end)
    DATA_BYTES = 16_384

    def __init__(self, lab: "LabSession", src: str, dst_ip: str, at_s: float,
                 first_s: Optional[float] = None) -> None:
        self.lab, self.src, self.argv, self.at_s = lab, src, toolargs.ss_args(dst_ip), at_s
        self.first_s = at_s if first_s is None else min(first_s, at_s)
        self.extra: Dict[str, Any] = {}
        self.granted_bytes: Optional[int] = None

    def during(self, proc: "Optional[subprocess.Popen[str]]" = None) -> None:
        """Read the socket at ``first_s`` and ``at_s`` seconds from now (the tool is
        running), then until one read found the data or ``proc`` ended."""
        start = time.monotonic()
        for moment in sorted({self.first_s, self.at_s}):
            time.sleep(max(0.0, moment - (time.monotonic() - start)))
            self._read()
        while self.granted_bytes is None and proc is not None and proc.poll() is None:
            time.sleep(self.RETRY_S)
            self._read()

    def _read(self) -> None:
        try:
            output = self.lab.run(self.src, self.argv, 15)
            parsed = parse_output("ss", self.src, output)
        except LabtoolsError as err:
            if self.granted_bytes is None:
                self.extra["ss_error"] = str(err)
            return
        acked = [b for b in parsed.rows.column("bytes_acked") if b == b and b is not None]
        if not parsed.summary.get("snd_wnd_bytes") or max(acked, default=0) < self.DATA_BYTES:
            if self.granted_bytes is None:
                self.extra["ss_error"] = "ss: no connection carrying data yet"
            return
        self.extra["ss"] = output.text
        self.extra.pop("ss_error", None)
        self.granted_bytes = parsed.summary.get("snd_wnd_bytes")

    def judged_with(self, context: JudgeContext) -> JudgeContext:
        """``context`` with the window the kernel granted."""
        return replace(context, granted_window_bytes=self.granted_bytes)


def run_tool(lab: "LabSession", tool: str, src: str, dst: str, argv: List[str],
             timeout_s: float, context: JudgeContext, call: ProbeCall,
             check: Optional[Callable[[Parsed], None]] = None,
             extra: Optional[Dict[str, Any]] = None,
             watch: Optional[SocketWatch] = None) -> Measurement:
    """Run ``argv`` on ``src``, parse as ``tool``, judge, save; save a failure too.
    ``extra``: what else to keep with the measurement (e.g. the load it ran under);
    ``watch``: read the sender's socket while the tool runs."""
    output: Union[ToolOutput, str] = ""  # what the tool left, once it ended
    started = utc_now()
    try:
        with LatenessWatch(lab) as timers:
            if watch is None:
                ended = lab.run(src, argv, timeout_s)
            else:
                proc = lab.start_process(src, argv)
                try:
                    watch.during(proc)
                    ended = wait_output(proc, argv, src, timeout_s)
                finally:
                    terminate(proc)
                context = watch.judged_with(context)
        output = ended
        context = replace(context, machine_late_ms=timers.late_ms)
        parsed = parse_output(tool, src, ended)
        if check is not None:
            check(parsed)
    except LabtoolsError as err:
        lab.save_failure(tool, src, dst, argv, output, err, started, call)
        raise
    kept = {**(extra or {}), **(watch.extra if watch is not None else {})}
    m = judge_parsed(parsed, lab.topo, src, dst, context, argv, started_at=started, call=call,
                     extra=kept, exit_status=ended.exit_status)
    lab.save(m)
    return m


def ping(lab: "LabSession", src: str, dst: str, count: Optional[int] = None,
         interval_s: Optional[float] = None, size_bytes: int = 56, repeat: int = 1) -> ProbeResult:
    """``ping`` from ``src`` to ``dst`` (by default the dense train of the session's
    durations): per-reply RTTs (ms), the summary and the verdict on the minimum RTT.
    ``repeat``: runs of the same call (see :func:`repeated`)."""
    call = ProbeCall("ping", {"src": src, "dst": dst, "size_bytes": size_bytes})
    count = lab.durations.ping_count if count is None else count
    interval_s = lab.durations.ping_interval_s if interval_s is None else interval_s
    argv = toolargs.ping_args(lab.ip_towards(src, dst), count, interval_s, size_bytes)
    timeout = count * interval_s + TIMEOUT_MARGIN_S
    return repeated(lab, call, repeat, lambda one: run_tool(lab, "ping", src, dst, argv,
                                                            timeout, lab.context(), one))


def _iperf3_ok(parsed: Parsed) -> None:
    """A run iperf3 reported an error for was cut short: the tool's error, even with the
    partial intervals it printed (they are saved with the failure)."""
    if parsed.summary.get("error"):
        raise ToolError(f"iperf3: {parsed.summary['error']}")


def iperf3(lab: "LabSession", src: str, dst: str, duration_s: Optional[float] = None,
           interval_s: float = 1, omit_s: Optional[float] = None,
           window_bytes: Optional[int] = None, parallel: int = 1, reverse: bool = False,
           bidir: bool = False, udp: bool = False, rate_mbps: Optional[float] = None,
           port: int = toolargs.DEFAULT_PORT, repeat: int = 1) -> ProbeResult:
    """iperf3 from ``src`` (client) to a server the probe starts on ``dst``; JSON output
    with the server's own report (the receiver side). The warm-up (``omit_s``, by default
    :func:`labtools.judge.policy.warmup_s`) is left out with ``-O``. With a window
    (``window_bytes``), the sender's socket is read halfway (:class:`SocketWatch`): the
    rate is judged against the window the kernel granted. ``repeat``: runs of the same call
    (see :func:`repeated`)."""
    duration_s = lab.durations.tcp_s if duration_s is None else duration_s
    omit_s = (0.0 if udp else policy.warmup_s(duration_s)) if omit_s is None else omit_s
    options = toolargs.Iperf3Options(
        lab.ip_towards(src, dst), duration_s=duration_s, interval_s=interval_s, omit_s=omit_s,
        window_bytes=window_bytes, parallel=parallel, reverse=reverse, bidir=bidir, udp=udp,
        rate_mbps=rate_mbps, port=port)
    call = ProbeCall("iperf3", {"src": src, "dst": dst, **options.call_args()})
    return repeated(lab, call, repeat, lambda one: _iperf3_run(lab, src, dst, options, one))


def _iperf3_run(lab: "LabSession", src: str, dst: str, options: toolargs.Iperf3Options,
                call: ProbeCall) -> Measurement:
    """One run of :func:`iperf3`: the server on ``dst``, the client on ``src``, judged
    after the warm-up, against the window the kernel granted when one was asked for."""
    seconds = options.duration_s + options.omit_s
    context = lab.context(warmup_s=options.omit_s, window_bytes=options.window_bytes,
                          offered_mbps=options.rate_mbps if options.udp else None)
    sends = not (options.reverse or options.bidir)  # the client's socket is the sender's
    watch = (SocketWatch(lab, src, options.server_ip, options.omit_s + options.duration_s / 2,
                         first_s=options.omit_s)
             if options.window_bytes is not None and sends else None)
    with lab.server(dst, options.server_argv(), options.port):
        return run_tool(lab, "iperf3", src, dst, options.argv(), seconds + TIMEOUT_MARGIN_S,
                        context, call, _iperf3_ok, watch=watch)


def iperf_udp(lab: "LabSession", src: str, dst: str, rate_mbps: float,
              duration_s: Optional[float] = None,
              datagram_bytes: int = IPERF_UDP_PAYLOAD_BYTES,
              interval_s: Optional[float] = None, port: int = 5001, repeat: int = 1) -> ProbeResult:
    """iperf 2 UDP at ``rate_mbps`` from ``src`` to a server on ``dst``; the summary carries
    the server report (received rate, jitter, lost/total). ``repeat``: runs of the same call
    (see :func:`repeated`)."""
    options = toolargs.Iperf2UdpOptions(
        lab.ip_towards(src, dst), rate_mbps,
        duration_s=lab.durations.udp_s if duration_s is None else duration_s,
        datagram_bytes=datagram_bytes, interval_s=interval_s, port=port)
    call = ProbeCall("iperf_udp", {"src": src, "dst": dst, **options.call_args()})

    def has_report(parsed: Parsed) -> None:
        if parsed.summary.get("receiver_mbps") is None:
            raise ToolError(f"iperf UDP {src}->{dst}: no server report (server gone or all lost)")

    def measure(one: ProbeCall) -> Measurement:
        with lab.server(dst, options.server_argv(), port, udp=True):
            return run_tool(lab, "iperf", src, dst, options.argv(),
                            options.duration_s + TIMEOUT_MARGIN_S,
                            lab.context(offered_mbps=rate_mbps), one, has_report)

    return repeated(lab, call, repeat, measure)


def _simpleperf_ok(parsed: Parsed) -> None:
    """A simpleperf run that did not end as planned (a side stopped or killed, a lost
    connection) is the tool's error, even with the counts it printed (they are saved with
    the failure)."""
    if not parsed.summary.get("complete"):
        raise ToolError(f"simpleperf: {parsed.summary.get('error') or 'incomplete run'}")


def simpleperf(lab: "LabSession", src: str, dst: str, duration_s: Optional[float] = None,
               interval_s: float = 1, parallel: int = 1, port: int = 8088,
               repeat: int = 1, program: Optional[Union[str, Path]] = None) -> ProbeResult:
    """The kit's simpleperf from ``src`` to a server on ``dst``; the server's byte count
    is the receiver side, judged after the warm-up. ``repeat``: runs of the same call (see
    :func:`repeated`). ``program``: a student's own simpleperf (its folder or file) as the
    client instead of the kit's, against the kit's server (:mod:`.own_simpleperf`)."""
    duration_s = lab.durations.tcp_s if duration_s is None else duration_s
    options = toolargs.SimpleperfOptions(lab.ip_towards(src, dst), duration_s=duration_s,
                                         interval_s=interval_s, parallel=parallel, port=port)
    call = ProbeCall("simpleperf", {"src": src, "dst": dst, **options.call_args()})
    context = lab.context(warmup_s=policy.warmup_s(duration_s))
    if program is not None:
        call = ProbeCall("simpleperf", {**call.args, "program": Path(program).name})
        return repeated(lab, call, repeat, lambda one: own_simpleperf.measure(
            lab, src, dst, program, options, one, context))
    # server and client start together (a Python start each: seconds under software
    # emulation); the client keeps trying until the server listens
    argv = replace(options, wait_s=SERVER_READY_S).argv()

    def measure(one: ProbeCall) -> Measurement:
        with lab.server(dst, options.server_argv(), port, wait=False) as server:
            try:
                return run_tool(lab, "simpleperf", src, dst, argv,
                                SERVER_READY_S + duration_s + TIMEOUT_MARGIN_S, context, one,
                                _simpleperf_ok)
            except LabtoolsError as err:
                raise server_failure(server, "simpleperf", dst) or err from None

    return repeated(lab, call, repeat, measure)


def concurrent_iperf3(lab: "LabSession", flows: Sequence[Flow],
                      duration_s: Optional[float] = None, omit_s: Optional[float] = None,
                      interval_s: float = 1, window_bytes: Optional[int] = None,
                      repeat: int = 1) -> Union[FlowsMeasurement, RepeatedMeasurement]:
    """Several iperf3 flows at once, each to its own server, released together through a
    :class:`StartGate`; judged against their max-min fair shares (a flow's connections
    become ``-P``). Every flow's output is saved, the failed ones too, before an error is
    raised; the set is saved as a group with the start spread and the verdicts.
    ``repeat``: sets of the same flows, one after the other (see :func:`repeated`)."""
    flows = list(flows)
    duration_s = lab.durations.sharing_s if duration_s is None else duration_s
    omit_s = policy.warmup_s(duration_s) if omit_s is None else omit_s
    options = [toolargs.Iperf3Options(
        lab.ip_towards(f.src, f.dst), duration_s=duration_s, interval_s=interval_s,
        omit_s=omit_s, window_bytes=window_bytes, parallel=f.connections,
        port=toolargs.DEFAULT_PORT + i) for i, f in enumerate(flows)]
    call = ProbeCall("concurrent_iperf3", {"flows": flows_spec(flows),
                                           "window_bytes": window_bytes})
    return repeated(lab, call, repeat, lambda one: _run_flows(lab, flows, options,
                                                              duration_s + omit_s, omit_s, one))


def _run_flows(lab: "LabSession", flows: List[Flow], options: List[toolargs.Iperf3Options],
               seconds: float, omit_s: float, call: ProbeCall) -> FlowsMeasurement:
    from contextlib import ExitStack

    argvs = [o.argv() for o in options]
    with ExitStack() as servers, lab.group() as group_id:
        starting = []  # the servers start side by side, then each is awaited
        for flow, o in zip(flows, options):
            argv = o.server_argv()
            proc = servers.enter_context(lab.server(flow.dst, argv, o.port, wait=False))
            starting.append((proc, argv, flow.dst, o.port))
        for proc, argv, host, port in starting:
            lab.await_server(proc, argv, host, port)
        with LatenessWatch(lab) as timers:
            with StartGate(len(flows)) as gate:  # spawn them all, then start them at once
                procs = [lab.start_process(f.src, gate.wrap(argv, i))
                         for i, (f, argv) in enumerate(zip(flows, argvs))]
                gate.wait_ready(procs, GATE_READY_S)
                started, began = utc_now(), time.monotonic()
                spread_ms = round(gate.release([p.pid for p in procs]) * 1e3, 3)
            outputs, statuses = _collect(lab, flows, argvs, procs, seconds + TIMEOUT_MARGIN_S,
                                         began, started, call)
        metas = [{"started_at": started, "finished_at": utc_now(), "call": call,
                  "extra": {"start_spread_ms": spread_ms}, "exit_status": status}
                 for status in statuses]
        context = lab.context(warmup_s=omit_s, machine_late_ms=timers.late_ms)
        result = judge_flows(lab.topo, flows, outputs, context, argvs, spread_ms, metas)
        for m in result.measurements:
            lab.save(m)
        result.group_id, result.call, result.started_at = group_id, call, started
        result.finished_at = utc_now()
        if lab.store is not None:
            lab.store.save_group(GroupRecord(
                group_id, "flows", {"flows": flows_spec(flows), "start_spread_ms": spread_ms},
                result.summary, result.verdicts, lab.session_id, lab.step, call, lab.case,
                context, started, result.finished_at))
    return result


def _collect(lab: "LabSession", flows: List[Flow], argvs: List[List[str]], procs: List[Any],
             timeout_s: float, began: float, started: str, call: ProbeCall
             ) -> Tuple[List[Parsed], List[int]]:
    """Every flow's parsed output and exit status; the failures are saved, then the first
    one is raised."""
    done: List[Optional[Tuple[Parsed, int]]] = []
    failure: Optional[LabtoolsError] = None
    for flow, argv, proc in zip(flows, argvs, procs):
        output: Union[ToolOutput, str] = ""  # what the tool left, once it ended
        try:
            left = max(1.0, timeout_s - (time.monotonic() - began))
            output = wait_output(proc, argv, flow.src, left)
            parsed = parse_output("iperf3", flow.src, output)
            _iperf3_ok(parsed)
            done.append((parsed, output.exit_status))
        except LabtoolsError as err:
            lab.save_failure("iperf3", flow.src, flow.dst, argv, output, err, started, call)
            done.append(None)
            failure = failure or err
    if failure is not None:
        for flow, argv, finished in zip(flows, argvs, done):
            if finished is not None:  # finished fine: keep it, judged alone (its set failed)
                lab.save(judge_parsed(finished[0], lab.topo, flow.src, flow.dst, lab.context(),
                                      argv, started_at=started, call=call,
                                      exit_status=finished[1]))
        raise failure
    kept = [d for d in done if d is not None]
    return [parsed for parsed, _ in kept], [status for _, status in kept]
