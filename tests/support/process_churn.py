"""Short processes started and ended one after the other, as on a busy CI machine or a
class server, until stopped (SIGTERM or SIGINT); prints how many ran.

    python tests/support/process_churn.py [--pause-ms 5] [--seconds S]

``make test`` runs it beside the unit tests (`scripts/test.sh`): a test that reads
``/proc`` of a process that exits meanwhile then fails there, not at random in a later CI
run. ``tests/system/test_procfs.py`` uses :func:`churning` for the same purpose inside one test.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import subprocess
import sys
import threading
import time
from typing import Iterator, List

#: the program each short process runs
SHORT = ["true"]


def churn(stop: threading.Event, pause_s: float, counter: List[int]) -> None:
    """Start and reap ``SHORT`` until ``stop`` is set, ``pause_s`` between two."""
    while not stop.is_set():
        subprocess.run(SHORT, check=False)
        counter[0] += 1
        if pause_s:
            stop.wait(pause_s)


@contextlib.contextmanager
def churning(threads: int = 2, pause_s: float = 0.0) -> Iterator[List[int]]:
    """Churn processes in ``threads`` threads while the block runs; yields a one-item
    list holding how many processes have run so far."""
    stop, counter = threading.Event(), [0]
    workers = [threading.Thread(target=churn, args=(stop, pause_s, counter), daemon=True)
               for _ in range(threads)]
    for worker in workers:
        worker.start()
    try:
        yield counter
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=10)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pause-ms", type=float, default=5.0,
                        help="pause between two processes, ms (default 5)")
    parser.add_argument("--seconds", type=float, default=0.0,
                        help="stop after this long (default: when signalled)")
    args = parser.parse_args(argv)
    stop, counter = threading.Event(), [0]
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    began = time.monotonic()
    worker = threading.Thread(target=churn, args=(stop, args.pause_ms / 1000, counter))
    worker.start()
    while not stop.wait(0.2):
        if args.seconds and time.monotonic() - began >= args.seconds:
            stop.set()
    worker.join()
    took = time.monotonic() - began
    print(f"process churn: {counter[0]} short processes started and ended in {took:.0f} s "
          f"({counter[0] / max(took, 1e-9):.0f}/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
