"""Stopping a lab cleanly when the process is asked to end (SIGTERM, SIGHUP)."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Sequence


@contextmanager
def guard_signals(signals: Sequence[int] = (signal.SIGTERM, signal.SIGHUP)) -> Iterator[None]:
    """Inside the block, SIGTERM and SIGHUP raise :class:`KeyboardInterrupt` like Ctrl-C
    does, so ``finally:`` clauses (stopping the network, saving results) run. The old
    handlers come back afterwards. Outside the main thread this does nothing (Python
    delivers signals to the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _interrupt(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    old = {sig: signal.signal(sig, _interrupt) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
