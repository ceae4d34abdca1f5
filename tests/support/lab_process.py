"""`make lab` (or its script) running in the background as a student runs it, its output
lines with their times, stopped with Ctrl-C. Used by tests/test_browser.py (the kit's lab)
and tests/instructor/test_edition_lab.py (the student edition's).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ctrl_c_reaches_it() -> None:
    """A terminal's Ctrl-C stops `make lab`. A test run started in the background by a
    shell without job control (as some CI runners do) inherits SIGINT *ignored*, and so
    would `make lab`: give it the default action, as in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Lab:
    """``command`` run in ``folder`` with ``LAB_PORT=port`` (and ``LABTOOLS_MODE=mode``
    when given), in a session of its own; its output lines with their times."""

    def __init__(self, port: int, folder: Path, command: Sequence[str],
                 mode: Optional[str] = None, env: Optional[Dict[str, str]] = None) -> None:
        environ = dict(os.environ, LAB_PORT=str(port), **(env or {}))
        if mode:
            environ["LABTOOLS_MODE"] = mode
        environ.pop("JUPYTER_TOKEN", None)
        self.folder = folder
        self.started = time.monotonic()
        self.proc = subprocess.Popen(list(command), cwd=folder, env=environ,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True,
                                     preexec_fn=_ctrl_c_reaches_it)
        self.lines: List[Tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic() - self.started, line.rstrip()))

    def wait_line(self, pattern: str, timeout_s: float) -> Tuple[float, str]:
        """The first line matching ``pattern`` and when it came (s after the start)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for at, line in list(self.lines):
                if re.search(pattern, line):
                    return at, line
            if self.proc.poll() is not None:
                time.sleep(0.5)
                break
            time.sleep(0.5)
        raise AssertionError(f"`make lab` did not print /{pattern}/ within {timeout_s:.0f} s:\n"
                             + "\n".join(line for _, line in self.lines[-30:]))

    def stop(self, labtools: Path) -> None:
        """Ctrl-C, as a student stops it; ``labtools clean`` when it did not stop in 60 s."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                # the lab VM runs in a session of its own: remove it as a student would
                print("make lab did not stop within 60 s of Ctrl-C: labtools clean", flush=True)
                subprocess.run([str(labtools), "clean"], cwd=self.folder, check=False,
                               timeout=300)

    def log(self) -> str:
        """Every line with its time."""
        return "\n".join(f"{at:7.1f} s  {line}" for at, line in self.lines) + "\n"


@contextmanager
def lab_running(lab: Lab, ready_s: float, labtools: Path, log: Path) -> Iterator[Tuple[Lab, str]]:
    """``lab`` until the block ends: (the lab, the address it printed once it answered);
    then stopped (``labtools`` cleans up if Ctrl-C does not) and its output kept in ``log``."""
    try:
        _, ready = lab.wait_line(r"\[lab\] ready: ", ready_s)
        yield lab, ready.split("ready: ", 1)[1].strip()
    finally:
        lab.stop(labtools)
        log.write_text(lab.log())
