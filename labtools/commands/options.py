"""Argument types the subcommands share: a value that would do nothing, or something else
than asked, is refused by the argument parser (one line, exit status 2).

Each function is an ``argparse`` ``type=``: it gets the text as given and returns the
value, or raises :class:`argparse.ArgumentTypeError` with the reason. The options several
subcommands define alike are added once here (:func:`add_course_folder`).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable, TypeVar

from labtools.frame_sizes import ETH_HEADER_BYTES, IPV4_HEADER_BYTES

#: the smallest frame the expected-RTT sum makes sense for: an Ethernet and an IPv4 header
MIN_FRAME_BYTES = ETH_HEADER_BYTES + IPV4_HEADER_BYTES
#: the largest: the largest IPv4 packet (65,535 bytes) in one Ethernet frame
MAX_FRAME_BYTES = 65_535 + ETH_HEADER_BYTES
N = TypeVar("N", int, float)


def text(value: str) -> str:
    """Text that is not empty (``--flows ''`` would silently mean "no flows")."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def path(value: str) -> Path:
    """A file or folder name that is not empty (``Path('')`` is the current folder)."""
    return Path(text(value))


def _number(value: str, kind: Callable[[str], N], what: str) -> N:
    """``value`` read as ``kind`` (int or float); ``"'x' is not {what}"`` otherwise."""
    try:
        return kind(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not {what}") from None


def frame_bytes(value: str) -> int:
    """A frame size in bytes, :data:`MIN_FRAME_BYTES` to :data:`MAX_FRAME_BYTES`."""
    size = _number(value, int, "a whole number of bytes")
    if not MIN_FRAME_BYTES <= size <= MAX_FRAME_BYTES:
        raise argparse.ArgumentTypeError(
            f"{size} is outside {MIN_FRAME_BYTES}..{MAX_FRAME_BYTES} bytes (Ethernet and IPv4 "
            "headers, up to the largest IPv4 packet)")
    return size


def seconds(value: str) -> float:
    """A time limit in seconds: a finite number > 0."""
    number = _number(value, float, "a number of seconds")
    if not math.isfinite(number) or number <= 0:
        raise argparse.ArgumentTypeError(f"{value} s is not a time limit: give seconds > 0")
    return number


def whole_seconds(value: str) -> int:
    """A time limit in whole seconds, at least 1."""
    number = _number(value, int, "a whole number of seconds")
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} s is not a time limit: give seconds >= 1")
    return number


def count(value: str) -> int:
    """A count of at least 1 (CPUs...)."""
    number = _number(value, int, "a whole number")
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is less than 1")
    return number


def add_course_folder(parser: argparse.ArgumentParser,
                      help_text: str = "the course folder (default: here)") -> None:
    """Add ``--course DIR`` to ``parser``: the course folder, as ``args.course`` (a
    :class:`~pathlib.Path`, default the current folder ``.``); ``help_text`` says what the
    subcommand reads there."""
    parser.add_argument("--course", metavar="DIR", type=path, default=Path("."),
                        help=help_text)


def instructors_only(command: str) -> None:
    """Refuse ``labtools COMMAND`` in a student's lab (``LABTOOLS_MODE=student``) with one
    line (an :class:`~labtools.errors.InputError`)."""
    from labtools.errors import InputError
    from labtools.teach.modes import student_mode

    if student_mode():
        raise InputError(f"labtools {command} is for instructors: not available in a "
                         "student's lab (LABTOOLS_MODE=student)")
