"""Start a simpleperf program with every TCP connection it opens paced by the kernel.

Run by path, before the program: ``python [-B|-S] paced_start.py RATE_BYTES_S PROGRAM
[ARGS...]`` runs PROGRAM (a file, or a folder with ``__main__.py``) with ARGS as
``python PROGRAM ARGS`` would, except that each TCP socket it connects has
``SO_MAX_PACING_RATE`` set to RATE_BYTES_S bytes per second first. The kernel then sends
no faster than that, so a client that sends "as fast as TCP lets it" on loopback waits in
``send`` instead of running two CPUs flat out (about 1 CPU second per second for each
side, 20 Gbit/s that nobody looks at). The program's code, output and exit status are its
own; a kernel without the option leaves the connection unpaced.

It imports nothing of the kit (the student edition and ``python -S`` run it as well).
"""

import os
import runpy
import socket
import sys
from typing import Any, List

#: Linux's SO_MAX_PACING_RATE (asm-generic/socket.h); Python does not name it
SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)


def pace_connections(rate_bytes_s: int) -> None:
    """Make every ``socket.socket`` of type SOCK_STREAM ask the kernel to pace itself at
    ``rate_bytes_s`` (bytes/s) before it connects."""
    connect = socket.socket.connect

    def paced_connect(self: socket.socket, address: Any) -> None:
        if self.type == socket.SOCK_STREAM:
            try:
                self.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, rate_bytes_s)
            except OSError:
                pass  # not Linux, or a kernel without pacing: the run goes unpaced
        connect(self, address)

    patched: Any = socket.socket  # a method replaced on the class: typed as Any on purpose
    patched.connect = paced_connect  # every stream socket from now on is paced


def main(argv: List[str]) -> None:
    """``argv``: RATE_BYTES_S PROGRAM [ARGS...] (without this script's name)."""
    rate_bytes_s, program = int(argv[0]), os.path.abspath(argv[1])
    pace_connections(rate_bytes_s)
    sys.argv = [program, *argv[2:]]
    # as `python PROGRAM`: its own folder first on the path, not this script's
    sys.path[0] = program if os.path.isdir(program) else os.path.dirname(program)
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
