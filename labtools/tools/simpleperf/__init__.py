"""simpleperf: the kit's own iperf-like TCP throughput tool (server and client).

Run it as ``simpleperf`` or ``python -m labtools.tools.simpleperf``::

    simpleperf -s [-b ADDR] [-p PORT] [-f B|KB|MB] [--json]
    simpleperf -c [-I SERVER] [-p PORT] [-t SECONDS | -n AMOUNT] [-i SECONDS]
               [-P 1..5] [-f B|KB|MB] [--json]

The client sends on ``-P`` parallel TCP connections for ``-t`` seconds (default 25) or
``-n`` bytes per connection (``10MB``; decimal units, 1 KB = 1000 B); the server counts
what arrives and tells the client, whose report puts both side by side. The server's
count is the truth. ``--json`` prints one JSON object per line, parsed by
:mod:`labtools.tools.parsers.simpleperf` (``labtools parse simpleperf FILE``).

The functions below build argument lists (pure) for running the tool on a Mininet host
with the kit's Python, e.g. ``host.popen(simpleperf.server_argv(port=8088))``.
Importing this package is cheap (no sockets are opened, nothing heavy is imported).
"""

from __future__ import annotations

import sys
from typing import List, Optional

from labtools.errors import InputError


def _base(python: Optional[str]) -> List[str]:
    return [python or sys.executable, "-m", "labtools.tools.simpleperf"]


def server_argv(port: int = 8088, bind: str = "0.0.0.0", json: bool = True,
                python: Optional[str] = None) -> List[str]:
    """Arguments that start a simpleperf server on ``bind``:``port``.

    Args:
        port: TCP port, 1..65535.
        bind: address to listen on.
        json: print JSON lines (for :func:`labtools.tools.parsers.simpleperf.parse`).
        python: interpreter to use (default: the running one).
    """
    if not 1 <= port <= 65535:
        raise InputError(f"port {port} is outside 1..65535")
    return _base(python) + ["-s", "-b", bind, "-p", str(port)] + (["--json"] if json else [])


def client_argv(server: str, port: int = 8088, time_s: Optional[float] = 10.0,
                amount: Optional[str] = None, interval_s: float = 1.0, parallel: int = 1,
                json: bool = True, python: Optional[str] = None) -> List[str]:
    """Arguments that run a simpleperf client against ``server``:``port``.

    Args:
        server: server address.
        port: TCP port, 1..65535.
        time_s: seconds to send (used when ``amount`` is None).
        amount: bytes per connection with a unit, e.g. ``"10MB"`` (replaces ``time_s``).
        interval_s: report interval in seconds, 0 for none.
        parallel: parallel connections, 1..5.
        json: print JSON lines.
        python: interpreter to use (default: the running one).

    Raises:
        InputError: a value the tool would refuse (checked here, before running).
    """
    from labtools.tools.simpleperf.options import parse_options

    args = ["-c", "-I", server, "-p", str(port), "-i", f"{interval_s:g}", "-P", str(parallel)]
    args += ["-n", amount] if amount is not None else ["-t", f"{time_s:g}"]
    args += ["--json"] if json else []
    parse_options(args)  # the same validation the tool applies
    return _base(python) + args
