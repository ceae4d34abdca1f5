"""Start several processes at the same moment: a FIFO gate.

Starting a process on a Mininet host costs tens of milliseconds under software emulation,
so clients started one after the other begin up to a round trip apart, and the first TCP
flow keeps an advantage. The gate separates the slow part (spawning) from the start:

1. :meth:`StartGate.wrap` turns ``argv`` into ``sh -c SCRIPT FIFO INDEX argv...``: the
   shell marks itself ready, blocks reading one byte from the FIFO, then ``exec``s
   ``argv`` (passed as positional arguments: nothing is interpolated into shell code);
2. :meth:`StartGate.wait_ready` waits until every wrapper is blocked at the gate;
3. :meth:`StartGate.release` writes one byte per process in a single write: all wake at
   once, and the seconds until the last of them has ``exec``'d its tool are returned.

The gate's writer end stays open until :meth:`StartGate.close`, so a wrapper that arrives
late still finds its byte; closing it makes a wrapper that was never released exit (125)
without running its tool.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, List, Sequence

from labtools.errors import ToolError
from labtools.system import procfs

#: the wrapper: mark ready, wait for the gate, become the tool
GATE_SCRIPT = ': > "$0.$1.ready"; shift; read _ < "$0" || exit 125; exec "$@"'
#: how often the gate looks at its processes (seconds)
POLL_S = 0.002


class StartGate:
    """A FIFO gate for ``count`` processes; use as a context manager."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError("a start gate needs at least one process")
        self.count = count
        self._dir = Path(tempfile.mkdtemp(prefix="labtools-gate-"))
        self.fifo = self._dir / "gate"
        os.mkfifo(self.fifo, 0o600)
        # read-write and non-blocking: opening does not wait for a reader, and readers
        # never see end-of-file while the gate is open
        self._fd = os.open(self.fifo, os.O_RDWR | os.O_NONBLOCK)
        self.released = False

    def wrap(self, argv: Sequence[str], index: int) -> List[str]:
        """``argv`` held at the gate as process number ``index`` (0-based)."""
        return ["sh", "-c", GATE_SCRIPT, str(self.fifo), str(index), *argv]

    def wait_ready(self, procs: Sequence[Any], timeout_s: float) -> None:
        """Wait until all wrappers are at the gate (``procs`` are their ``Popen`` objects).

        Raises :class:`ToolError` when one exits first or they are not ready in time."""
        deadline = time.monotonic() + timeout_s
        while True:
            ready = sum((self._dir / f"gate.{i}.ready").exists() for i in range(self.count))
            if ready == self.count:
                return
            dead = [p for p in procs if p.poll() is not None]
            if dead:
                raise ToolError(f"a process exited before the start gate opened "
                                f"(exit status {dead[0].returncode})")
            if time.monotonic() > deadline:
                raise ToolError(f"only {ready} of {self.count} processes reached the start "
                                f"gate within {timeout_s:g} s")
            time.sleep(POLL_S)

    def release(self, pids: Sequence[int], timeout_s: float = 5.0) -> float:
        """Open the gate; return the seconds until every process has left its wrapper
        (an upper bound of the start spread, polled every ``POLL_S``)."""
        start = time.monotonic()
        os.write(self._fd, b"\n" * self.count)
        self.released = True
        waiting = list(pids)
        while waiting and time.monotonic() - start < timeout_s:
            waiting = [pid for pid in waiting if _still_wrapper(pid)]
            if waiting:
                time.sleep(POLL_S)
        return time.monotonic() - start

    def close(self) -> None:
        """Close the gate (unreleased wrappers exit) and remove its folder."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "StartGate":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _still_wrapper(pid: int) -> bool:
    """True while ``pid`` is still the gate's shell (it has not ``exec``'d its tool)."""
    return procfs.comm(pid) == "sh"  # None when gone: it started (and ended) already
