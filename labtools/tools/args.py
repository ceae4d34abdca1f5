"""Argument lists for the measurement tools (pure: validated values in, ``argv`` out).

Nothing reaches a shell: every value is checked against a range or a whitelist here and
the result is an argument list that runs through ``mnexec`` without a shell. Units are in
the names: ``_s`` seconds, ``_mbps`` Mbit/s, ``_bytes`` bytes.

A client with many options is one frozen value, checked when it is made
(:class:`Iperf3Options`, :class:`Iperf2UdpOptions`, :class:`SimpleperfOptions`): it gives
the client's ``argv``, its server's, and the values that identify the measurement in a
saved probe call (:meth:`Iperf3Options.call_args`), so a probe states its options once.
"""

from __future__ import annotations

import ipaddress
import sys
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from labtools.errors import InputError
from labtools.frame_sizes import IPERF_UDP_PAYLOAD_BYTES, MAX_UDP_PAYLOAD_BYTES

MAX_DURATION_S = 600
MAX_RATE_MBPS = 10_000
DEFAULT_PORT = 5201
#: how the kit's own tool is started on a host: the Python that runs the kit, on the tool's
#: folder, without site-packages (``-S``: the tool needs only the standard library and the
#: kit; a Python start with them took 1.5 s under software emulation here, without 0.25 s)
SIMPLEPERF = [sys.executable, "-S", str(Path(__file__).resolve().parent / "simpleperf")]


def _check_number(name: str, value: float, low: float, high: float, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise InputError(f"{name} must be a number, got {value!r}")
    if not low <= value <= high:
        raise InputError(f"{name}={value:g} {unit} is outside {low:g}..{high:g} {unit}")
    return value


def _check_int(name: str, value: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise InputError(f"{name}={value} is outside {low}..{high}")
    return value


def check_ip(address: str) -> str:
    """``address`` if it is an IPv4 address; :class:`InputError` otherwise."""
    try:
        return str(ipaddress.IPv4Address(address))
    except (ipaddress.AddressValueError, ValueError):
        raise InputError(f"{address!r} is not an IPv4 address") from None


def check_duration(duration_s: float) -> float:
    """A measurement duration in seconds (0.5..600)."""
    return _check_number("duration", duration_s, 0.5, MAX_DURATION_S, "s")


def check_rate(rate_mbps: float) -> float:
    """An offered rate in Mbit/s (> 0, at most 10 Gbit/s)."""
    if isinstance(rate_mbps, (int, float)) and not isinstance(rate_mbps, bool) and rate_mbps <= 0:
        raise InputError(f"rate must be > 0 Mbit/s, got {rate_mbps:g}")
    return _check_number("rate", rate_mbps, 0.001, MAX_RATE_MBPS, "Mbit/s")


def rate_bps_arg(rate_mbps: float) -> str:
    """An offered rate for ``-b``, in bits per second (``25`` Mbit/s -> ``25000000``).

    iperf 2 reads ``-b``'s suffixes as powers of two: ``-b 10M`` is 10 x 2^20 = 10.49
    Mbit/s (captured: "IPG target: 1121.52 us" for 1470-byte datagrams, against 1176.00 us
    for ``-b 10000000``; tests/fixtures/iperf2/udp_interval.txt and udp_bps.txt). iperf3
    reads ``M`` as 10^6, but a plain number means the same to both."""
    return str(round(check_rate(rate_mbps) * 1e6))


def ping_args(dst_ip: str, count: int = 10, interval_s: float = 0.2,
              size_bytes: int = 56, deadline_s: Optional[float] = None) -> List[str]:
    """``ping -D -n -c COUNT -i INTERVAL -s SIZE [-w DEADLINE] DST``."""
    _check_int("count", count, 1, 10_000)
    _check_number("interval", interval_s, 0.01, 60, "s")
    # below 16 bytes the echo cannot carry ping's timestamp: replies come without a time
    _check_int("size", size_bytes, 16, 65_507)
    argv = ["ping", "-D", "-n", "-c", str(count), "-i", f"{interval_s:g}", "-s", str(size_bytes)]
    if deadline_s is not None:
        argv += ["-w", str(int(_check_number("deadline", deadline_s, 1, 36_000, "s")))]
    return argv + [check_ip(dst_ip)]


def ss_args(dst_ip: str) -> List[str]:
    """``ss -tin dst IP``: the kernel's view of the TCP connections to ``dst_ip``."""
    return ["ss", "-tin", "dst", check_ip(dst_ip)]


def iperf3_server_args(port: int = DEFAULT_PORT) -> List[str]:
    """``iperf3 -s -1 -J -p PORT``: a server for exactly one test, reporting in JSON, so a
    client's ``--get-server-output`` brings the receiver's own intervals (the rate that
    crossed the link, second by second) rather than the server's text."""
    return ["iperf3", "-s", "-1", "-J", "-p", str(_check_int("port", port, 1024, 65_535))]


@dataclass(frozen=True)
class Iperf3Options:
    """What an iperf3 client is asked to do, checked when made (:class:`InputError`).

    Attributes:
        server_ip: the server's IPv4 address.
        duration_s: seconds the test runs (``-t``), warm-up included.
        interval_s: seconds between interval reports (``-i``).
        omit_s: seconds of warm-up left out of the report (``-O``; 0: none).
        window_bytes: the socket buffer asked for (``-w``; None: the kernel's).
        parallel: connections at once (``-P``).
        reverse: the server sends (``-R``).
        bidir: both send at once (``--bidir``; not with ``reverse``).
        udp: UDP at ``rate_mbps`` (1 Mbit/s if None) instead of TCP.
        rate_mbps: the offered rate (``-b``, in bit/s); for TCP a cap (None: none).
        port: the server's port (``-p``).
    """

    server_ip: str
    _: KW_ONLY
    duration_s: float = 10
    interval_s: float = 1
    omit_s: float = 0
    window_bytes: Optional[int] = None
    parallel: int = 1
    reverse: bool = False
    bidir: bool = False
    udp: bool = False
    rate_mbps: Optional[float] = None
    port: int = DEFAULT_PORT

    def __post_init__(self) -> None:
        check_ip(self.server_ip)
        check_duration(self.duration_s)
        _check_number("interval", self.interval_s, 0.1, 60, "s")
        _check_number("omit", self.omit_s, 0, self.duration_s, "s")
        _check_int("parallel", self.parallel, 1, 128)
        _check_int("port", self.port, 1024, 65_535)
        if self.window_bytes is not None:
            _check_int("window", self.window_bytes, 4096, 256 * 2**20)
        if self.rate_mbps is not None:
            check_rate(self.rate_mbps)
        if self.reverse and self.bidir:
            raise InputError("choose reverse or bidirectional, not both")

    def argv(self) -> List[str]:
        """The client with JSON output and the server's own report (receiver side)."""
        argv = ["iperf3", "-c", check_ip(self.server_ip), "-p", str(self.port),
                "-t", f"{self.duration_s:g}", "-i", f"{self.interval_s:g}", "-J",
                "--get-server-output"]
        if self.omit_s:
            argv += ["-O", f"{self.omit_s:g}"]
        if self.window_bytes is not None:
            argv += ["-w", str(self.window_bytes)]
        if self.parallel > 1:
            argv += ["-P", str(self.parallel)]
        if self.reverse:
            argv.append("-R")
        if self.bidir:
            argv.append("--bidir")
        if self.udp:
            argv += ["-u", "-b", rate_bps_arg(self.rate_mbps if self.rate_mbps is not None else 1)]
        elif self.rate_mbps is not None:
            argv += ["-b", rate_bps_arg(self.rate_mbps)]
        return argv

    def server_argv(self) -> List[str]:
        """The server this client needs (:func:`iperf3_server_args` on its port)."""
        return iperf3_server_args(self.port)

    def call_args(self) -> Dict[str, Any]:
        """What identifies the measurement in a saved probe call, as given: the window,
        connections, direction, UDP and offered rate (durations, interval, warm-up and port
        are left out: they follow the machine and the quick mode). Recorded results are
        replayed by these keys (:mod:`labtools.lab.replay`): they never change."""
        return {"window_bytes": self.window_bytes, "parallel": self.parallel,
                "reverse": self.reverse, "bidir": self.bidir, "udp": self.udp,
                "rate_mbps": self.rate_mbps}


def iperf2_server_args(udp: bool = True, port: int = 5001) -> List[str]:
    """``iperf -s [-u] -p PORT`` (iperf 2)."""
    argv = ["iperf", "-s", "-p", str(_check_int("port", port, 1024, 65_535))]
    return argv + (["-u"] if udp else [])


@dataclass(frozen=True)
class Iperf2UdpOptions:
    """What an iperf 2 UDP client is asked to do, checked when made (:class:`InputError`):
    ``rate_mbps`` offered to ``server_ip`` for ``duration_s`` seconds in datagrams of
    ``datagram_bytes``, interval reports every ``interval_s`` seconds (None: none), to
    ``port``."""

    server_ip: str
    rate_mbps: float
    _: KW_ONLY
    duration_s: float = 10
    datagram_bytes: int = IPERF_UDP_PAYLOAD_BYTES
    interval_s: Optional[float] = None
    port: int = 5001

    def __post_init__(self) -> None:
        check_ip(self.server_ip)
        check_rate(self.rate_mbps)
        check_duration(self.duration_s)
        _check_int("datagram size", self.datagram_bytes, 16, MAX_UDP_PAYLOAD_BYTES)
        _check_int("port", self.port, 1024, 65_535)
        if self.interval_s is not None:
            _check_number("interval", self.interval_s, 0.5, 60, "s")

    def argv(self) -> List[str]:
        """``iperf -c IP -u -b RATE -l SIZE -t DURATION -p PORT [-i I]`` (``RATE`` in bits
        per second: see :func:`rate_bps_arg`)."""
        argv = ["iperf", "-c", check_ip(self.server_ip), "-u", "-b", rate_bps_arg(self.rate_mbps),
                "-l", str(self.datagram_bytes), "-t", f"{self.duration_s:g}",
                "-p", str(self.port)]
        if self.interval_s is not None:
            argv += ["-i", f"{self.interval_s:g}"]
        return argv

    def server_argv(self) -> List[str]:
        """The UDP server this client needs, on its port."""
        return iperf2_server_args(udp=True, port=self.port)

    def call_args(self) -> Dict[str, Any]:
        """What identifies the measurement in a saved probe call, as given: the offered
        rate and the datagram size (the keys recorded results are replayed by)."""
        return {"rate_mbps": self.rate_mbps, "datagram_bytes": self.datagram_bytes}


def simpleperf_server_args(bind_ip: str, port: int = 8088) -> List[str]:
    """The kit's simpleperf server with JSON lines."""
    return [*SIMPLEPERF, "-s", "-b", check_ip(bind_ip),
            "-p", str(_check_int("port", port, 1024, 65_535)), "--json"]


@dataclass(frozen=True)
class SimpleperfOptions:
    """What a simpleperf client is asked to do, checked when made (:class:`InputError`):
    ``parallel`` connections to ``server_ip``:``port`` for ``duration_s`` seconds, a report
    row every ``interval_s`` seconds (0: none), trying for ``wait_s`` seconds while the
    server is still starting (``-w``; 0: it fails at once)."""

    server_ip: str
    _: KW_ONLY
    duration_s: float = 10
    interval_s: float = 1
    parallel: int = 1
    port: int = 8088
    wait_s: float = 0

    def __post_init__(self) -> None:
        check_ip(self.server_ip)
        check_duration(self.duration_s)
        _check_number("interval", self.interval_s, 0, 60, "s")
        _check_int("parallel", self.parallel, 1, 5)
        _check_int("port", self.port, 1024, 65_535)
        _check_number("wait", self.wait_s, 0, 60, "s")

    def options(self) -> List[str]:
        """The client's options without the program and ``--json`` (``-c -I -p -t -i -P
        [-w]``): what a student's own simpleperf gets too."""
        waiting = ["-w", f"{self.wait_s:g}"] if self.wait_s else []
        return ["-c", "-I", check_ip(self.server_ip), "-p", str(self.port),
                "-t", f"{self.duration_s:g}", "-i", f"{self.interval_s:g}",
                "-P", str(self.parallel), *waiting]

    def argv(self) -> List[str]:
        """The kit's simpleperf client with JSON lines."""
        return [*SIMPLEPERF, *self.options(), "--json"]

    def server_argv(self) -> List[str]:
        """The kit's server this client needs, on the client's server address and port."""
        return simpleperf_server_args(self.server_ip, self.port)

    def call_args(self) -> Dict[str, Any]:
        """What identifies the measurement in a saved probe call, as given: the number of
        connections (the key recorded results are replayed by)."""
        return {"parallel": self.parallel}
