"""Probes on Mininet hosts: build the arguments, run the tool, parse, save.

Each probe takes a running :class:`~labtools.lab.session.LabSession`; servers are started and
stopped by the probe. Every probe has a time-out (its duration plus
:data:`~labtools.lab.session.TIMEOUT_MARGIN_S`); a hung or killed server gives a typed error and
the raw output is saved with it.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional

from labtools.tools import args as toolargs
from labtools.errors import LabtoolsError, ProbeTimeout, ToolError
from labtools.lab.session import TIMEOUT_MARGIN_S, LabSession, Measurement, wait_output
from labtools.tools.parsers import parse
from labtools.lab.startgate import StartGate

#: A minimum RTT comes from a dense train of pings: 60 echoes 50 ms apart (3 s). Under
#: software emulation a busy emulated machine answers faster than an idle one, whose
#: CPUs wake late for every timer; on the reference topology the minimum of 60 pings 50 ms
#: apart was 0.4-1.1 ms closer to the path's propagation RTT than that of 20 pings 0.2 s
#: apart (measured side by side; README, "Where the kernel cannot emulate"). On a native
#: kernel both agree.
MIN_RTT_PING_COUNT = 60
MIN_RTT_PING_INTERVAL_S = 0.05


def _measure(lab: LabSession, tool: str, src: str, dst: str, argv: List[str],
             timeout_s: float, check: Optional[Callable[[Any], None]] = None) -> Measurement:
    """Run ``argv`` on ``src``, parse as ``tool``, save; save the failure too."""
    from labtools.results.store import utc_now

    raw, started = "", utc_now()
    try:
        raw = lab.run(src, argv, timeout_s)
        parsed = parse(tool, raw)
        if check is not None:
            check(parsed)
    except LabtoolsError as err:
        lab.save_failure(tool, src, dst, argv, raw, err, started)
        raise
    measurement = Measurement(tool, src, dst, argv, parsed, started_at=started)
    lab.save(measurement)
    return measurement


def ping(lab: LabSession, src: str, dst: str, count: int = 10, interval_s: float = 0.2,
         size_bytes: int = 56) -> Measurement:
    """``ping`` from ``src`` to ``dst``: per-reply RTTs (ms) and the summary."""
    argv = toolargs.ping_args(lab.ip_towards(src, dst), count, interval_s, size_bytes)
    timeout = count * interval_s + TIMEOUT_MARGIN_S
    return _measure(lab, "ping", src, dst, argv, timeout)


def _iperf3_ok(parsed: Any) -> None:
    if parsed.summary.get("error") and parsed.summary.get("receiver_mbps") is None:
        raise ToolError(f"iperf3: {parsed.summary['error']}")


def iperf3(lab: LabSession, src: str, dst: str, duration_s: float = 10,
           interval_s: float = 1, omit_s: float = 0, window_bytes: Optional[int] = None,
           parallel: int = 1, reverse: bool = False, bidir: bool = False, udp: bool = False,
           rate_mbps: Optional[float] = None, port: int = toolargs.DEFAULT_PORT) -> Measurement:
    """iperf3 from ``src`` (client) to a server the probe starts on ``dst``; JSON output
    with the server's own report (the receiver side)."""
    argv = toolargs.iperf3_client_args(
        lab.ip_towards(src, dst), duration_s, interval_s, omit_s, window_bytes, parallel,
        reverse, bidir, udp, rate_mbps, port)
    with lab.server(dst, toolargs.iperf3_server_args(port), port):
        return _measure(lab, "iperf3", src, dst, argv, duration_s + omit_s + TIMEOUT_MARGIN_S,
                        _iperf3_ok)


def iperf_udp(lab: LabSession, src: str, dst: str, rate_mbps: float, duration_s: float = 10,
              datagram_bytes: int = 1470, interval_s: Optional[float] = None,
              port: int = 5001) -> Measurement:
    """iperf 2 UDP at ``rate_mbps`` from ``src`` to a server on ``dst``; the summary carries
    the server report (received rate, jitter, lost/total)."""
    argv = toolargs.iperf2_udp_client_args(lab.ip_towards(src, dst), rate_mbps, duration_s,
                                           datagram_bytes, interval_s, port)

    def has_report(parsed: Any) -> None:
        if parsed.summary.get("receiver_mbps") is None:
            raise ToolError(f"iperf UDP {src}->{dst}: no server report (server gone or all lost)")

    with lab.server(dst, toolargs.iperf2_server_args(udp=True, port=port), port, udp=True):
        return _measure(lab, "iperf", src, dst, argv, duration_s + TIMEOUT_MARGIN_S, has_report)


def simpleperf(lab: LabSession, src: str, dst: str, duration_s: float = 10,
               interval_s: float = 1, parallel: int = 1, port: int = 8088) -> Measurement:
    """The kit's simpleperf from ``src`` to a server on ``dst``; the server's byte count
    is the receiver side."""
    server_ip = lab.ip_towards(src, dst)
    argv = toolargs.simpleperf_client_args(server_ip, duration_s, interval_s, parallel, port)
    with lab.server(dst, toolargs.simpleperf_server_args(server_ip, port), port):
        return _measure(lab, "simpleperf", src, dst, argv, duration_s + TIMEOUT_MARGIN_S)


#: seconds the clients of concurrent flows get to reach the start gate
GATE_READY_S = 30.0


def concurrent_iperf3(lab: LabSession, flows: List[Any], duration_s: float = 10,
                      omit_s: float = 0, interval_s: float = 1,
                      window_bytes: Optional[int] = None) -> List[Measurement]:
    """Several iperf3 flows at once, each to its own server (distinct ports); the clients
    are spawned first and then released together through a :class:`StartGate`
    (``extra["start_spread_ms"]``: from the release until the last one runs its tool; about
    50 ms under software emulation, where spawning them one by one spread them over 70-100
    ms). ``flows`` are
    :class:`~labtools.model.fairness.Flow` (a flow's connections become ``-P``)."""
    servers, clients = [], []
    try:
        for index, flow in enumerate(flows):
            port = toolargs.DEFAULT_PORT + index
            argv = toolargs.iperf3_client_args(
                lab.ip_towards(flow.src, flow.dst), duration_s, interval_s, omit_s,
                window_bytes, flow.connections, port=port)
            server = lab.server(flow.dst, toolargs.iperf3_server_args(port), port)
            server.__enter__()
            servers.append(server)
            clients.append((flow, argv))
        with StartGate(len(clients)) as gate:  # spawn them all, then start them at once
            procs = [(flow, argv, lab.start_process(flow.src, gate.wrap(argv, i)))
                     for i, (flow, argv) in enumerate(clients)]
            gate.wait_ready([p for _, _, p in procs], GATE_READY_S)
            started = time.monotonic()
            spread_ms = gate.release([p.pid for _, _, p in procs]) * 1e3
        results = []
        for flow, argv, proc in procs:
            timeout = max(1.0, duration_s + omit_s + TIMEOUT_MARGIN_S - (time.monotonic() - started))
            raw = ""
            try:
                raw = wait_output(proc, argv, flow.src, timeout)
                parsed = parse("iperf3", raw)
                _iperf3_ok(parsed)
            except (LabtoolsError, ProbeTimeout) as err:
                lab.save_failure("iperf3", flow.src, flow.dst, argv, raw, err)
                raise
            m = Measurement("iperf3", flow.src, flow.dst, argv, parsed,
                            extra={"start_spread_ms": round(spread_ms, 3)})
            lab.save(m)
            results.append(m)
        return results
    finally:
        for server in reversed(servers):
            server.__exit__(None, None, None)


def shares_table(lab: LabSession, flows: List[Any], measurements: List[Measurement]) -> Dict[str, Any]:
    """Measured receiver rates next to the max-min expectation, with Jain's index over
    the per-connection rates and a verdict per flow."""
    import pandas as pd

    from labtools.model.expect import bottleneck, tcp_goodput_ceiling_mbps
    from labtools.model.fairness import jain_index, max_min_shares
    from labtools.judge.verdicts import compare, share_verdicts

    expected = max_min_shares(lab.topo, flows)
    rows = []
    for flow, share, m in zip(flows, expected, measurements):
        ceiling = None if share.share_mbps is None else tcp_goodput_ceiling_mbps(share.share_mbps)
        rows.append({"flow": f"{flow.src}-{flow.dst}", "connections": flow.connections,
                     "expected_share_mbps": share.share_mbps,
                     "expected_goodput_mbps": ceiling,
                     "measured_mbps": m.summary.get("receiver_mbps"),
                     "sender_mbps": m.summary.get("sender_mbps"),
                     "limited_by": share.limited_by})
    table = pd.DataFrame(rows)
    per_conn = [r["measured_mbps"] / r["connections"] for r in rows if r["measured_mbps"]]
    limits = {s.limited_by for s in expected if s.limited_by}
    shared = limits.pop() if len(limits) == 1 else None
    cap = None
    if shared is not None:
        cap = tcp_goodput_ceiling_mbps(lab.topo.link(shared).bw_mbps)
    alone = []
    for flow in flows:
        link_mbps = bottleneck(lab.topo, flow.src, flow.dst)[0]
        alone.append(None if link_mbps is None else tcp_goodput_ceiling_mbps(link_mbps))
    verdicts = compare(share_verdicts(
        table["measured_mbps"].tolist(), table["expected_goodput_mbps"].tolist(),
        table["flow"].tolist(), cap, alone))
    jain = jain_index(per_conn) if per_conn and any(per_conn) else None
    return {"table": table, "verdicts": verdicts, "jain_index": jain}
