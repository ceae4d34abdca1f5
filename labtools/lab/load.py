"""Measuring while something else loads the network or the machine (notebook 06).

:func:`ping_under_load` pings one pair while an iperf3 transfer fills the queues on the
way (bufferbloat); :func:`cpu_hog` keeps this machine's CPUs busy for the length of a
``with`` block, to show how the emulator's own limits distort a measurement. Both leave
nothing behind: the transfer and the busy processes are stopped when the block ends,
whatever happens.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Union

from labtools.errors import InputError, LabtoolsError
from labtools.judge import policy
from labtools.judge.measurement import Measurement, ProbeCall, judge_parsed
from labtools.judge.repeated import RepeatedMeasurement
from labtools.lab.machine_watch import LatenessWatch
from labtools.lab.processes import (
    TIMEOUT_MARGIN_S,
    ToolOutput,
    parse_output,
    terminate,
    wait_output,
)
from labtools.results.records import utc_now
from labtools.tools import args as toolargs
from labtools.tools.summaries import RateSummary, require_kind

if TYPE_CHECKING:  # pragma: no cover
    from labtools.lab.session import LabSession

#: seconds the load runs before the pings start (the queue fills) and after they end
LOAD_LEAD_S = 2.0
LOAD_PORT = 5290
#: a busy loop, one per CPU: what :func:`cpu_hog` runs
HOG = [sys.executable, "-c", "while True:\n    pass"]


@dataclass(frozen=True)
class _PingUnderLoad:
    """The commands of one run of :func:`ping_under_load`: the ping ``src`` -> ``dst`` of
    ``ping_s`` seconds, the ping that resolves the pair's addresses first, and the load
    ``load_src`` -> ``load_dst`` of ``load_s`` seconds (the ping's, with
    :data:`LOAD_LEAD_S` before and after)."""

    src: str
    dst: str
    load_src: str
    load_dst: str
    ping_s: float
    load_s: float
    ping_argv: List[str]
    prime_argv: List[str]
    load_options: toolargs.Iperf3Options
    load_argv: List[str]


def ping_under_load(lab: "LabSession", src: str, dst: str, load_src: str, load_dst: str,
                    count: Optional[int] = None, interval_s: Optional[float] = None,
                    repeat: int = 1) -> Union[Measurement, RepeatedMeasurement]:
    """Ping ``src`` -> ``dst`` while an iperf3 transfer ``load_src`` -> ``load_dst`` runs
    (it starts :data:`LOAD_LEAD_S` before the pings). The pair's addresses are resolved
    first (one ping, not kept): under load the address resolution itself waits in the full
    queue, and every echo sent meanwhile waits with it. The ping is judged against the queue
    model (:mod:`labtools.model.queues`) with the load's own received rate (did the machine
    drive the link at its rate?) and saved with the load named in ``extra``; the transfer
    is saved too. ``repeat``: runs of the same call, judged on their medians
    (:func:`labtools.lab.probes.repeated`)."""
    from labtools.lab.probes import repeated

    call = ProbeCall("ping_under_load", {"src": src, "dst": dst, "load_src": load_src,
                                         "load_dst": load_dst})
    count = lab.durations.ping_count if count is None else count
    interval_s = lab.durations.ping_interval_s if interval_s is None else interval_s
    seconds = count * interval_s + 2 * LOAD_LEAD_S
    load_options = toolargs.Iperf3Options(lab.ip_towards(load_src, load_dst),
                                          duration_s=max(1.0, round(seconds, 1)),
                                          port=LOAD_PORT)
    plan = _PingUnderLoad(
        src, dst, load_src, load_dst, count * interval_s, seconds,
        toolargs.ping_args(lab.ip_towards(src, dst), count, interval_s),
        toolargs.ping_args(lab.ip_towards(src, dst), 1, 0.2, deadline_s=5), load_options,
        load_options.argv())
    return repeated(lab, call, repeat, partial(_measure_under_load, lab, plan))


def _measure_under_load(lab: "LabSession", plan: _PingUnderLoad, call: ProbeCall
                        ) -> Measurement:
    """One run of :func:`ping_under_load` as the step ``call``: both measurements saved,
    the ping's returned (on a failure, both kept as failures and the error raised)."""
    src, dst, load_src, load_dst = plan.src, plan.dst, plan.load_src, plan.load_dst
    load_argv, ping_argv = plan.load_argv, plan.ping_argv
    lab.run(src, plan.prime_argv, 5 + TIMEOUT_MARGIN_S)  # resolve the addresses, idle
    with lab.server(load_dst, plan.load_options.server_argv(), LOAD_PORT):
        started = utc_now()
        proc = lab.start_process(load_src, load_argv)
        ping_out: Union[ToolOutput, str] = ""  # what ping left, once it ended
        load_out: Optional[ToolOutput] = None
        load_call = ProbeCall("load", {"src": load_src, "dst": load_dst})
        try:
            time.sleep(LOAD_LEAD_S)  # the queue fills
            with LatenessWatch(lab) as timers:
                ended = lab.run(src, ping_argv, plan.ping_s + TIMEOUT_MARGIN_S)
            ping_out = ended
            pinged = parse_output("ping", src, ended)
            load_out = wait_output(proc, load_argv, load_src, plan.load_s + TIMEOUT_MARGIN_S)
            warmup = policy.warmup_s(plan.load_options.duration_s)
            loaded = judge_parsed(parse_output("iperf3", load_src, load_out), lab.topo,
                                  load_src, load_dst, lab.context(warmup_s=warmup),
                                  load_argv, started_at=started, call=load_call,
                                  exit_status=load_out.exit_status)
        except LabtoolsError as err:  # no ping "under load" without its load: both kept
            lab.save_failure("ping", src, dst, ping_argv, ping_out, err, started, call)
            if load_out is not None:
                lab.save_failure("iperf3", load_src, load_dst, load_argv, load_out, err,
                                 started, load_call)
            raise
        finally:
            terminate(proc)
    context = replace(lab.context(), load=(load_src, load_dst),
                      load_received_mbps=require_kind(loaded.summary, RateSummary).steady_mbps,
                      machine_late_ms=timers.late_ms)
    m = judge_parsed(pinged, lab.topo, src, dst, context, ping_argv, started_at=started,
                     call=call, extra={"load": f"iperf3 {load_src} -> {load_dst}"},
                     exit_status=ended.exit_status)
    lab.save(m)
    lab.save(loaded)
    return m


@contextmanager
def cpu_hog(lab: Any, workers: Optional[int] = None) -> Iterator[List[int]]:
    """Busy loops on this machine (one per CPU unless ``workers`` says otherwise) for the
    length of the block; yields their PIDs. They are stopped when the block ends. A
    replaying lab (grading) starts none: its measurements were made already."""
    count = workers if workers is not None else (os.cpu_count() or 1)
    if not 1 <= count <= 64:
        raise InputError(f"workers must be within 1..64, got {count}")
    if getattr(lab, "replaying", False):
        yield []
        return
    procs = [subprocess.Popen(HOG, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True, text=True)
             for _ in range(count)]
    try:
        time.sleep(0.5)  # let them take the CPUs
        yield [p.pid for p in procs]
    finally:
        for proc in procs:
            terminate(proc, grace_s=1.0)
