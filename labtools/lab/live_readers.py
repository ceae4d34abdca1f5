"""What a live demonstration reads from a running lab without waiting for it: a sampler
on each watched node and each ping's replies, read by threads as they come.

Starting a command on a node costs a process through ``nsenter`` each time: in the lab VM
under software emulation, ``tc`` and ``ss`` started from here took 2.6-5.3 s together
while a TCP flow loaded the machine. So each watched node runs one small loop of its own
(:func:`sampler_argv`): every interval it prints the time (the node's clock, which is the
machine's), then ``tc -s qdisc show`` and/or ``ss -tin``, between marker lines; a thread
keeps the newest block (:class:`NodeSampler`). A ping started with ``-D`` stamps each reply
itself (:class:`PingReader`), so an RTT's time is the reply's, however late it is read.
"""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from labtools.errors import InputError
from labtools.tools.parsers.ping_lines import classify, strip_timestamp

#: the lines that frame one sample of a node's sampler
BEGIN, TC_MARK, SS_MARK, END = "@@sample", "@@tc", "@@ss", "@@end"


def sampler_argv(tc: bool, ss: bool, interval_s: float) -> List[str]:
    """A loop on a node that prints a stamped sample every ``interval_s`` seconds (the
    commands' own time included): ``tc -s qdisc show`` (every interface of the node) with
    ``tc``, ``ss -tin`` (every TCP connection) with ``ss``. The script is the kit's own
    text: only the interval, a checked number, is put into it."""
    if isinstance(interval_s, bool) or not 0.1 <= float(interval_s) <= 60:
        raise InputError(f"sampling interval {interval_s!r} s: choose 0.1..60 s")
    steps = [f'echo "{BEGIN} $(date +%s.%N)"']
    if tc:
        steps += [f"echo {TC_MARK}", "tc -s qdisc show"]
    if ss:
        steps += [f"echo {SS_MARK}", "ss -tin"]
    steps += [f"echo {END}", f"sleep {max(0.05, float(interval_s) * 0.9):.2f}"]
    return ["sh", "-c", "while :; do " + "; ".join(steps) + "; done"]


@dataclass(frozen=True)
class NodeBlock:
    """One sample of a node: when (Unix seconds, the node's clock), what ``tc -s qdisc
    show`` and ``ss -tin`` printed ('' when not asked for)."""

    at_s: float
    tc: str
    ss: str


def read_blocks(lines: List[str]) -> List[NodeBlock]:
    """The complete blocks in a sampler's output lines (an unfinished last one is left
    out; a line before the first ``@@sample`` is skipped)."""
    blocks: List[NodeBlock] = []
    at: Optional[float] = None
    parts = {TC_MARK: [], SS_MARK: []}  # type: dict
    into: Optional[str] = None
    for line in lines:
        word = line.split(" ", 1)
        if word[0] == BEGIN and len(word) == 2:
            try:
                at = float(word[1])
            except ValueError:
                at = None
            parts, into = {TC_MARK: [], SS_MARK: []}, None
        elif line in (TC_MARK, SS_MARK):
            into = line
        elif line == END and at is not None:
            blocks.append(NodeBlock(at, "\n".join(parts[TC_MARK]), "\n".join(parts[SS_MARK])))
            at, into = None, None
        elif into is not None and at is not None:
            parts[into].append(line)
    return blocks


class _LineThread:
    """Reads a process's output lines on a thread of its own and hands each to ``take``."""

    def __init__(self, proc: "subprocess.Popen[str]", take: Callable[[str], None]) -> None:
        self.proc = proc
        self._take = take
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        if self.proc.stdout is None:
            return
        for line in self.proc.stdout:
            self._take(line.rstrip("\n"))

    def join(self, timeout_s: float = 2.0) -> None:
        """Wait (at most ``timeout_s``) for the output to end."""
        self._thread.join(timeout_s)


class NodeSampler(_LineThread):
    """The newest samples of a node's sampler loop (:func:`sampler_argv`)."""

    def __init__(self, node: str, proc: "subprocess.Popen[str]") -> None:
        self.node = node
        self._lock = threading.Lock()
        self._lines: List[str] = []
        self._blocks: List[NodeBlock] = []
        super().__init__(proc, self._line)

    def _line(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
            if line == END:
                self._blocks += read_blocks(self._lines)
                self._blocks = self._blocks[-2:]
                self._lines = []

    def latest(self) -> Optional[NodeBlock]:
        """The newest complete sample (None before the first)."""
        with self._lock:
            return self._blocks[-1] if self._blocks else None


class PingReader(_LineThread):
    """The replies of a ``ping -D``: (Unix seconds of the reply, RTT in ms), as they come."""

    def __init__(self, label: str, proc: "subprocess.Popen[str]") -> None:
        self.label = label
        self._lock = threading.Lock()
        self._replies: List[Tuple[float, float]] = []
        super().__init__(proc, self._line)

    def _line(self, line: str) -> None:
        rest, at, _ = strip_timestamp(line)
        kind, found = classify(rest)
        if kind == "reply" and found is not None and found["rtt"] and at is not None:
            with self._lock:
                self._replies.append((at, float(found["rtt"])))

    def take(self) -> List[Tuple[float, float]]:
        """The replies read since the last call."""
        with self._lock:
            replies, self._replies = self._replies, []
        return replies
