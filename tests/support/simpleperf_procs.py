"""Real simpleperf processes for the tests: a JSON server read by a thread, clients.

Each helper starts ``python -m labtools.tools.simpleperf`` in a subprocess on 127.0.0.1
with a free ephemeral port.
"""

from __future__ import annotations

import json
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, List, Optional

ROOT = Path(__file__).resolve().parents[2]
TOOL = [sys.executable, "-m", "labtools.tools.simpleperf"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """A ``simpleperf -s --json`` subprocess whose stdout records are read by a thread."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.proc = subprocess.Popen(
            TOOL + ["-s", "-b", "127.0.0.1", "-p", str(port), "--json"], cwd=str(ROOT),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.records: "queue.Queue[dict]" = queue.Queue()
        self.seen: List[dict] = []
        threading.Thread(target=self._read, daemon=True).start()
        first = self.next_record(10.0)
        assert first["type"] == "server_start", first

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.records.put(json.loads(line))

    def next_record(self, timeout_s: float = 10.0) -> dict:
        record = self.records.get(timeout=timeout_s)
        self.seen.append(record)
        return record

    def wait_for(self, kind: str, session: Optional[str] = None, timeout_s: float = 10.0) -> dict:
        """The next record of type ``kind`` (for ``session`` if given)."""
        deadline = time.monotonic() + timeout_s
        while True:
            record = self.next_record(max(0.1, deadline - time.monotonic()))
            if record["type"] == kind and session in (None, record.get("session")):
                return record

    def stop(self, signum: int = signal.SIGINT) -> int:
        """Signal the server and wait for its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        return self.proc.wait(timeout=10)


def serve() -> Iterator[ServerProcess]:
    """A server for a test's fixture (``yield from serve()``), stopped after the test."""
    srv = ServerProcess(free_port())
    yield srv
    if srv.proc.poll() is None:
        srv.stop()
    if srv.proc.poll() is None:
        srv.proc.kill()


def run_client(port: int, *args: str, timeout_s: float = 30.0) -> subprocess.CompletedProcess:
    """A client run to the end against ``port`` on 127.0.0.1."""
    return subprocess.run(TOOL + ["-c", "-I", "127.0.0.1", "-p", str(port), *args],
                          cwd=str(ROOT), capture_output=True, text=True, timeout=timeout_s)


def records(stdout: str) -> List[dict]:
    """The JSON records of a ``--json`` output."""
    return [json.loads(line) for line in stdout.splitlines()]


def of_type(recs: List[dict], kind: str) -> List[dict]:
    """The records of one type."""
    return [r for r in recs if r["type"] == kind]
