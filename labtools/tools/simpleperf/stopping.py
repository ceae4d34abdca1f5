"""Clean stops on Ctrl-C (SIGINT) and SIGTERM: a flag the worker loops poll."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any, Callable, Dict, Optional, Union

#: what :func:`signal.signal` gives back and takes: a function, SIG_DFL/SIG_IGN, or None
Handler = Union[Callable[[int, Optional[FrameType]], Any], int, None]

#: signal number -> exit status the shell convention gives it (128 + signal)
EXIT_STATUS: Dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143}


class StopFlag:
    """Set by a signal handler (or by code); read by the sending and receiving loops.

    Attributes:
        signum: the first signal received, or None.
        count: how many signals arrived (a second one aborts waiting for the server).
    """

    def __init__(self) -> None:
        self.signum: Optional[int] = None
        self.count = 0
        self._event = threading.Event()
        self._previous: Dict[int, Handler] = {}

    @property
    def is_set(self) -> bool:
        """True once a stop was requested."""
        return self._event.is_set()

    def set(self, signum: Optional[int] = None) -> None:
        """Request a stop (``signum`` is recorded for the exit status)."""
        if signum is not None and self.signum is None:
            self.signum = signum
        self.count += 1
        self._event.set()

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s`` seconds or until a stop; True if stopped."""
        return self._event.wait(timeout_s)

    def exit_status(self, default: int = 0) -> int:
        """130 after SIGINT, 143 after SIGTERM, else ``default``."""
        return EXIT_STATUS.get(self.signum, default) if self.signum is not None else default

    def _handler(self) -> Callable[[int, Optional[FrameType]], None]:
        def handle(signum: int, frame: Optional[FrameType]) -> None:
            self.set(signum)

        return handle

    def install(self) -> None:
        """Route SIGINT and SIGTERM to this flag (only possible in the main thread)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in EXIT_STATUS:
            self._previous[signum] = signal.signal(signum, self._handler())

    def restore(self) -> None:
        """Give SIGINT and SIGTERM back their previous handlers."""
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
