"""Command-line options of simpleperf: parsing and validation (pure, no sockets).

Units: ``B``, ``KB`` and ``MB`` are decimal (1 KB = 1000 B, 1 MB = 1000 000 B), so that
they agree with rates in Mbit/s (10^6 bit/s). Unit names are case-insensitive. An amount
(``-n``) must carry its unit (``10MB``, ``500KB``, ``1000B``, ``1.5MB``); a bare number is
refused, because ``-n 10`` meaning ten bytes surprises people.

An option that does nothing in the mode given (``-t`` on a server, ``-b`` on a client) is
refused rather than ignored, and so is a host name that cannot be one (empty, a label
longer than 63 characters, characters that IDNA refuses): "cannot resolve ...".
"""

from __future__ import annotations

import argparse
import ipaddress
import re
from dataclasses import dataclass
from typing import List, NoReturn, Optional

from labtools import __version__
from labtools.errors import InputError
from labtools.tools.simpleperf.protocol import MAX_INTERVAL_MS, MAX_PARALLEL, MIN_INTERVAL_MS

#: display / amount unit -> bytes (decimal)
UNITS = {"B": 1, "KB": 1000, "MB": 1000 * 1000}

DEFAULT_PORT = 8088
DEFAULT_TIME_S = 25.0
MAX_TIME_S = MAX_INTERVAL_MS / 1000  # 3600 s
MIN_INTERVAL_S = MIN_INTERVAL_MS / 1000  # 0.1 s
MAX_WAIT_S = 60.0
#: largest amount per connection (-n): 10^12 B = 1 TB, about 20 min at 1 GB/s
MAX_AMOUNT_BYTES = 10 ** 12
DEFAULT_SERVER = "127.0.0.1"
DEFAULT_BIND = "0.0.0.0"

_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*$")
#: one label of a host name, once IDNA-encoded (RFC 1123 letters, digits, hyphens; and
#: underscores, which some local names carry)
_LABEL = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")

#: options that only one mode uses: argparse destination -> (option, mode that uses it)
_MODE_ONLY = {
    "bind": ("-b/--bind", "server (-s)"),
    "serverip": ("-I/--serverip", "client (-c)"),
    "time": ("-t/--time", "client (-c)"),
    "interval": ("-i/--interval", "client (-c)"),
    "parallel": ("-P/--parallel", "client (-c)"),
    "num": ("-n/--num", "client (-c)"),
    "wait": ("-w/--wait", "client (-c)"),
}


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
        InputError: no number, no unit, an unknown unit, less than one byte, or more than
            :data:`MAX_AMOUNT_BYTES`.
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
    if amount > MAX_AMOUNT_BYTES:
        raise InputError(f"amount {text!r} is more than {MAX_AMOUNT_BYTES // UNITS['MB']}MB "
                         "per connection")
    return amount


def check_host(name: str, what: str) -> str:
    """``name`` when it is an IP address or can be a host name.

    Raises:
        InputError: ``cannot resolve WHAT 'NAME': ...`` for an empty name or one that is
            not a host name (IDNA refuses it: a label empty or over 63 characters, an
            invalid character; or a character no host name has, such as a space).
    """
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        pass
    if not name:
        raise InputError(f"cannot resolve {what} '': the name is empty")
    try:
        encoded = name.encode("idna").decode("ascii")
    except UnicodeError as err:
        reason = str(err.__cause__ or err)
        raise InputError(f"cannot resolve {what} {name!r}: not a valid host name "
                         f"({reason})") from None
    labels = encoded[:-1] if encoded.endswith(".") else encoded
    if len(labels) > 253 or not all(_LABEL.match(label) for label in labels.split(".")):
        raise InputError(f"cannot resolve {what} {name!r}: not a valid host name")
    return name


def _unit(text: str) -> str:
    unit = text.upper()
    if unit not in UNITS:
        raise InputError(f"bad format {text!r}: use B, KB or MB")
    return unit


#: what ``simpleperf --help`` says first
DESCRIPTION = ("Measure TCP throughput between a simpleperf client and server. Units are "
               "decimal: 1 KB = 1000 B, 1 MB = 10^6 B; rates in Mbit/s (10^6 bit/s).")


class _Parser(argparse.ArgumentParser):
    """An argument parser that raises :class:`InputError` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise InputError(message)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``simpleperf``."""
    p = _Parser(prog="simpleperf", description=DESCRIPTION)
    p.add_argument("--version", action="version", version=f"simpleperf {__version__}")
    role = p.add_mutually_exclusive_group(required=True)
    role.add_argument("-s", "--server", action="store_true", help="run as server")
    role.add_argument("-c", "--client", action="store_true", help="run as client")
    p.add_argument("-b", "--bind", default=None,
                   help=f"server: address to listen on ({DEFAULT_BIND})")
    p.add_argument("-I", "--serverip", default=None,
                   help=f"client: server address ({DEFAULT_SERVER})")
    p.add_argument("-p", "--port", type=int, default=DEFAULT_PORT, help="TCP port (8088)")
    p.add_argument("-f", "--format", default="MB", help="display unit: B, KB or MB")
    p.add_argument("-t", "--time", type=float, default=None,
                   help=f"client: seconds to send ({DEFAULT_TIME_S:g})")
    p.add_argument("-i", "--interval", type=float, default=None,
                   help="client: report interval in s, 0 = none (0)")
    p.add_argument("-P", "--parallel", type=int, default=None,
                   help=f"client: parallel connections, 1..{MAX_PARALLEL} (1)")
    p.add_argument("-n", "--num", default=None,
                   help="client: amount per connection with unit (10MB); replaces -t")
    p.add_argument("-w", "--wait", type=float, default=None,
                   help="client: seconds to keep trying while the server is still starting "
                        f"(refuses), 0..{MAX_WAIT_S:g}")
    p.add_argument("--json", action="store_true", help="print JSON lines (one object each)")
    return p


def _check_common(args: argparse.Namespace) -> None:
    if not 1 <= args.port <= 65535:
        raise InputError(f"port {args.port} is outside 1..65535")
    mode = "server (-s)" if args.server else "client (-c)"
    for dest, (option, used_by) in _MODE_ONLY.items():
        if getattr(args, dest) is not None and used_by != mode:
            raise InputError(f"{option} does nothing on a {mode.split()[0]}: "
                             f"it is an option of the {used_by}")


def _fill_client_defaults(args: argparse.Namespace) -> None:
    for dest, default in (("serverip", DEFAULT_SERVER), ("interval", 0.0), ("parallel", 1),
                          ("wait", 0.0)):
        if getattr(args, dest) is None:
            setattr(args, dest, default)


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
        InputError: an unknown option, a missing mode, an option of the other mode, a value
            out of range, or a host name that cannot be one.
    """
    args = build_parser().parse_args(argv)
    _check_common(args)
    unit = _unit(args.format)
    if args.server:
        bind = check_host(args.bind if args.bind is not None else DEFAULT_BIND, "bind address")
        return Options(mode="server", port=args.port, unit=unit, json=args.json, bind=bind)
    _fill_client_defaults(args)
    _check_client(args)
    check_host(args.serverip, "server address")
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
