"""Command-line options of simpleperf: parsing and validation (pure, no sockets).

Units: ``B``, ``KB`` and ``MB`` are decimal (1 KB = 1000 B, 1 MB = 1000 000 B), so that
they agree with rates in Mbit/s (10^6 bit/s). Unit names are case-insensitive. An amount
(``-n``) must carry its unit (``10MB``, ``500KB``, ``1000B``, ``1.5MB``); a bare number is
refused, because ``-n 10`` meaning ten bytes surprises people.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import List, Optional

from labtools import __version__
from labtools.errors import InputError
from labtools.tools.simpleperf.protocol import MAX_PARALLEL

#: display / amount unit -> bytes (decimal)
UNITS = {"B": 1, "KB": 1000, "MB": 1000 * 1000}

DEFAULT_PORT = 8088
DEFAULT_TIME_S = 25.0
MAX_TIME_S = 3600.0
MIN_INTERVAL_S = 0.1
MAX_WAIT_S = 60.0
DEFAULT_SERVER = "127.0.0.1"
DEFAULT_BIND = "0.0.0.0"

_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*$")


@dataclass(frozen=True)
class Options:
    """Validated options of one simpleperf run.

    Attributes:
        mode: ``server`` or ``client``.
        port: TCP port (1..65535).
        unit: display unit of byte counts in the human tables: ``B``, ``KB`` or ``MB``.
        json: print JSON lines instead of tables.
        bind: server only: address to listen on.
        server: client only: address of the server.
        time_s: client only: how long to send, in seconds (ignored with ``amount_bytes``).
        interval_s: client only: report interval in seconds, 0 = no interval rows.
        parallel: client only: number of parallel connections (1..5).
        amount_bytes: client only: bytes to send on each connection, or None to send for
            ``time_s``.
        wait_s: client only: how long to keep trying while the server refuses (it may
            still be starting), in seconds; 0 = give up at once.
    """

    mode: str
    port: int = DEFAULT_PORT
    unit: str = "MB"
    json: bool = False
    bind: str = DEFAULT_BIND
    server: str = DEFAULT_SERVER
    time_s: float = DEFAULT_TIME_S
    interval_s: float = 0.0
    parallel: int = 1
    amount_bytes: Optional[int] = None
    wait_s: float = 0.0


def parse_amount(text: str) -> int:
    """Bytes in an amount such as ``10MB``, ``500kb``, ``1000B`` or ``1.5MB`` (decimal units).

    Raises:
        InputError: no number, no unit, an unknown unit, or less than one byte.
    """
    match = _AMOUNT.match(text)
    if not match:
        raise InputError(f"bad amount {text!r}: use a number and a unit, e.g. 10MB")
    number, unit = match.group(1), match.group(2).upper()
    if not unit:
        raise InputError(f"amount {text!r} needs a unit: B, KB or MB (e.g. 10MB)")
    if unit not in UNITS:
        raise InputError(f"bad unit {match.group(2)!r} in amount {text!r}: use B, KB or MB")
    amount = int(round(float(number) * UNITS[unit]))
    if amount < 1:
        raise InputError(f"amount {text!r} is less than one byte")
    return amount


def _unit(text: str) -> str:
    unit = text.upper()
    if unit not in UNITS:
        raise InputError(f"bad format {text!r}: use B, KB or MB")
    return unit


class _Parser(argparse.ArgumentParser):
    """An argument parser that raises :class:`InputError` instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(message)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``simpleperf``."""
    p = _Parser(
        prog="simpleperf",
        description="Measure TCP throughput between a simpleperf client and server. "
        "Units are decimal: 1 KB = 1000 B, 1 MB = 10^6 B; rates in Mbit/s (10^6 bit/s).",
    )
    p.add_argument("--version", action="version", version=f"simpleperf {__version__}")
    role = p.add_mutually_exclusive_group(required=True)
    role.add_argument("-s", "--server", action="store_true", help="run as server")
    role.add_argument("-c", "--client", action="store_true", help="run as client")
    p.add_argument("-b", "--bind", default=DEFAULT_BIND, help="server: address to listen on")
    p.add_argument("-I", "--serverip", default=DEFAULT_SERVER, help="client: server address")
    p.add_argument("-p", "--port", type=int, default=DEFAULT_PORT, help="TCP port (8088)")
    p.add_argument("-f", "--format", default="MB", help="display unit: B, KB or MB")
    p.add_argument("-t", "--time", type=float, default=None,
                   help=f"client: seconds to send ({DEFAULT_TIME_S:g})")
    p.add_argument("-i", "--interval", type=float, default=0.0,
                   help="client: report interval in s, 0 = none")
    p.add_argument("-P", "--parallel", type=int, default=1,
                   help=f"client: parallel connections, 1..{MAX_PARALLEL}")
    p.add_argument("-n", "--num", default=None,
                   help="client: amount per connection with unit (10MB); replaces -t")
    p.add_argument("-w", "--wait", type=float, default=0.0,
                   help="client: seconds to keep trying while the server is still starting "
                        f"(refuses), 0..{MAX_WAIT_S:g}")
    p.add_argument("--json", action="store_true", help="print JSON lines (one object each)")
    return p


def _check_common(args: argparse.Namespace) -> None:
    if not 1 <= args.port <= 65535:
        raise InputError(f"port {args.port} is outside 1..65535")


def _check_client(args: argparse.Namespace) -> None:
    if args.time is not None and args.num is not None:
        raise InputError("use either -t (time) or -n (amount), not both")
    if args.time is not None and not 0 < args.time <= MAX_TIME_S:
        raise InputError(f"time {args.time:g} s is outside 0 < t <= {MAX_TIME_S:g}")
    if args.interval != 0 and not MIN_INTERVAL_S <= args.interval <= MAX_TIME_S:
        raise InputError(
            f"interval {args.interval:g} s: use 0 (none) or {MIN_INTERVAL_S:g}..{MAX_TIME_S:g}"
        )
    if not 0 <= args.wait <= MAX_WAIT_S:
        raise InputError(f"wait {args.wait:g} s is outside 0..{MAX_WAIT_S:g}")
    if not 1 <= args.parallel <= MAX_PARALLEL:
        raise InputError(f"parallel {args.parallel} is outside 1..{MAX_PARALLEL}")


def parse_options(argv: Optional[List[str]]) -> Options:
    """Validated :class:`Options` from command-line arguments.

    Raises:
        InputError: an unknown option, a missing mode, or a value out of range.
    """
    args = build_parser().parse_args(argv)
    _check_common(args)
    unit = _unit(args.format)
    if args.server:
        return Options(mode="server", port=args.port, unit=unit, json=args.json, bind=args.bind)
    _check_client(args)
    amount = parse_amount(args.num) if args.num is not None else None
    return Options(
        mode="client",
        port=args.port,
        unit=unit,
        json=args.json,
        server=args.serverip,
        time_s=args.time if args.time is not None else DEFAULT_TIME_S,
        interval_s=args.interval,
        parallel=args.parallel,
        amount_bytes=amount,
        wait_s=args.wait,
    )
