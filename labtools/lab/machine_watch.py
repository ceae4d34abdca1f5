"""How late this machine's timers fire while a measurement runs, measured beside it.

A shaped link is driven by timers: netem releases a packet when its delay has passed, HTB
resumes a class when it has earned enough tokens. Under software emulation, with other
programs competing for the CPU, those timers fire late. Measured in the lab VM on a busy
host: a 5 ms delayed link took 2.8-5.1 ms longer per crossing at the median and 11-19 ms
at the 90th percentile, while iperf3 reached only 21-37 % of the links' rates; the
calibration at lab start, on an idle moment, had measured 0.18 ms.

So the lab pings across the calibration network's delayed link (its own namespaces, no
traffic of the lab's) for as long as a probe runs, and the judge gets the 90th percentile
of the lateness per crossing (``JudgeContext.machine_late_ms``). HTB lets a class catch up
on late timers with its burst (15 KiB: 4.1 ms at 30 Mbit/s); later than that, the link
cannot run at its rate, and a rate or an RTT the links alone cannot explain is the
machine's (:meth:`labtools.judge.machine.MachineProfile.timers_limit`).
"""

from __future__ import annotations

import signal
import subprocess
from typing import Optional

from labtools.errors import LabtoolsError
from labtools.lab.base import HostRunner
from labtools.lab.processes import terminate
from labtools.model.calibration import CALIBRATION_DELAY_MS
from labtools.tools.parsers import parse

#: seconds between the echoes of the watch (20 a second: a few KB/s beside the lab)
WATCH_INTERVAL_S = 0.05
#: the percentile of the lateness the judge gets
WATCH_PERCENTILE = 0.9


class LatenessWatch:
    """Pings across the calibration network's delayed link while a probe runs (a context
    manager); :attr:`late_ms` is then the 90th percentile of the lateness per crossing, or
    None (no calibration network, too few replies)."""

    def __init__(self, lab: HostRunner) -> None:
        self.lab = lab
        self.late_ms: Optional[float] = None
        self._proc: Optional["subprocess.Popen[str]"] = None

    def __enter__(self) -> "LatenessWatch":
        net = self.lab.calibration_net
        if net is None or net.delay_ms <= 0:  # no delayed link beside the lab: no timers
            return self
        _a, r1, r2, _b = net.nodes
        try:
            self._proc = self.lab.start_process(
                r1, ["ping", "-n", "-i", f"{WATCH_INTERVAL_S:g}", "-w", "3600",
                     net.address(r1, r2)])
        except LabtoolsError:
            self._proc = None
        return self

    def __exit__(self, *exc: object) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.send_signal(signal.SIGINT)  # ping prints its summary and exits
            out, _ = proc.communicate(timeout=10)
            self.late_ms = lateness_ms(out, net_delay_ms(self.lab))
        except (OSError, LabtoolsError, ValueError, subprocess.TimeoutExpired):
            self.late_ms = None  # the watch failed: the measurement stands without it
        finally:
            terminate(proc)


def net_delay_ms(lab: HostRunner) -> float:
    """The one-way delay of the calibration network's delayed link (ms)."""
    net = lab.calibration_net
    return CALIBRATION_DELAY_MS if net is None else net.delay_ms


def lateness_ms(ping_output: str, delay_ms: float = CALIBRATION_DELAY_MS) -> Optional[float]:
    """The 90th percentile of the lateness per crossing (ms) of a ping across the
    calibration network's delayed link: (RTT - 2 x its delay) / 2; None for fewer than 10
    replies."""
    rtts = sorted(r for r in parse("ping", ping_output).rows.column("rtt_ms")
                  if r is not None and r == r)
    if len(rtts) < 10:
        return None
    sample = rtts[min(len(rtts) - 1, int(WATCH_PERCENTILE * len(rtts)))]
    return round(max(0.0, (sample - 2 * delay_ms) / 2), 3)
