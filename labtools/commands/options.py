"""Argument types the subcommands share: a value that would do nothing, or something else
than asked, is refused by the argument parser (one line, exit status 2).

Each function is an ``argparse`` ``type=``: it gets the text as given and returns the
value, or raises :class:`argparse.ArgumentTypeError` with the reason.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

#: the smallest frame the expected-RTT sum makes sense for: an Ethernet and an IPv4 header
MIN_FRAME_BYTES = 14 + 20
#: the largest: the largest IPv4 packet (65,535 bytes) in one Ethernet frame
MAX_FRAME_BYTES = 65_535 + 14


def text(value: str) -> str:
    """Text that is not empty (``--flows ''`` would silently mean "no flows")."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def path(value: str) -> Path:
    """A file or folder name that is not empty (``Path('')`` is the current folder)."""
    return Path(text(value))


def frame_bytes(value: str) -> int:
    """A frame size in bytes, :data:`MIN_FRAME_BYTES` to :data:`MAX_FRAME_BYTES`."""
    try:
        size = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of bytes") from None
    if not MIN_FRAME_BYTES <= size <= MAX_FRAME_BYTES:
        raise argparse.ArgumentTypeError(
            f"{size} is outside {MIN_FRAME_BYTES}..{MAX_FRAME_BYTES} bytes (Ethernet and IPv4 "
            "headers, up to the largest IPv4 packet)")
    return size


def seconds(value: str) -> float:
    """A time limit in seconds: a finite number > 0."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(number) or number <= 0:
        raise argparse.ArgumentTypeError(f"{value} s is not a time limit: give seconds > 0")
    return number


def whole_seconds(value: str) -> int:
    """A time limit in whole seconds, at least 1."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of seconds") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} s is not a time limit: give seconds >= 1")
    return number


def count(value: str) -> int:
    """A count of at least 1 (CPUs...)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is less than 1")
    return number
