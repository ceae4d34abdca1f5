"""The fields of an iperf3 JSON document, read and range-checked for
:mod:`labtools.tools.parsers.iperf3`: each reader names the field it refuses
(``end.sum_sent.bytes``, ``intervals[3].sum.start``) in a one-line
:class:`~labtools.errors.ParseError`."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from labtools.errors import ParseError

TOOL = "iperf3"
#: fields that are counts of lost datagrams: iperf3 prints them negative for reordering
#: within an interval (:func:`check_loss` keeps them in their range)
SIGNED_FIELDS = ("lost_packets", "lost_percent")
#: the largest integer an int64 column holds
MAX_INT = 2**63 - 1
#: how far an interval may start before the previous one ended: iperf3 takes both from
#: one clock reading, in whole microseconds, so real output shows none (every capture of
#: tests/fixtures/iperf3 from 3.6 to 3.12 starts each interval exactly where the last one
#: ended); this allows for the rounding of the printed decimals
CLOCK_SLACK_S = 1e-6


def bad(where: str, value: Any, what: str) -> ParseError:
    """The error for the field at ``where`` holding ``value`` (shown cut to 40 chars)."""
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return ParseError(TOOL, f"{where} is {shown}: {what}")


def at(where: str, key: str) -> str:
    """The path of a field, as the error names it: ``end.sum_sent.bytes``."""
    return f"{where}.{key}" if where else key


def obj(value: Any, where: str) -> Dict[str, Any]:
    """An object of the document ({} when absent or null)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(where, value, "not an object")
    return value


def as_list(value: Any, where: str) -> List[Any]:
    """A list of the document ([] when absent or null)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad(where, value, "not a list")
    return value


def num(section: Dict[str, Any], key: str, where: str) -> Optional[float]:
    """``section[key]`` as a finite float, None when absent or null (iperf3's NaN).

    Raises:
        ParseError: not a number, infinite, or negative (except :data:`SIGNED_FIELDS`).
    """
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad(at(where, key), value, "not a number")
    try:
        number = float(value)
    except OverflowError:
        raise bad(at(where, key), value, "too large") from None
    if not math.isfinite(number):
        raise bad(at(where, key), value, "not a finite number")
    if number < 0 and key not in SIGNED_FIELDS:
        raise bad(at(where, key), value, "negative")
    return number


def required(section: Dict[str, Any], key: str, where: str) -> float:
    """``section[key]`` as :func:`num` reads it; missing is an error."""
    number = num(section, key, where)
    if number is None:
        raise ParseError(TOOL, f"{where}.{key} is missing")
    return number


def integer(section: Dict[str, Any], key: str, where: str) -> Optional[int]:
    """An integer field (a size, a count, a socket) that fits the table's int64 column."""
    number = num(section, key, where)
    if number is not None and abs(number) > MAX_INT:
        raise bad(at(where, key), section[key], "too large")
    return None if number is None else int(number)


def flag(section: Dict[str, Any], key: str, where: str) -> Optional[bool]:
    """A true/false field (iperf3 writes true/false, or 0/1 in ``test_start``)."""
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or (type(value) is int and value in (0, 1)):
        return bool(value)
    raise bad(at(where, key), value, "not true/false")


def text_field(section: Dict[str, Any], key: str, where: str) -> Optional[str]:
    """``section[key]`` as a text, None when absent or null."""
    value = section.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad(at(where, key), value, "not a text")
    return value


def mbps(section: Dict[str, Any], where: str) -> Optional[float]:
    """The object's rate in Mbit/s; None where iperf3 wrote none (a rate over no time).

    Raises:
        ParseError: a rate above 0 over ``seconds`` of 0 (iperf3 writes null or 0 there).
    """
    bps = num(section, "bits_per_second", where)
    seconds = num(section, "seconds", where)
    if bps and seconds is not None and seconds <= 0:
        raise bad(at(where, "seconds"), section["seconds"],
                  f"a rate of {bps:g} bit/s over no time")
    return None if bps is None else bps / 1e6


def check_loss(section: Dict[str, Any], where: str, total: bool) -> None:
    """UDP loss within its range: never more datagrams lost than counted, a percentage of
    at most 100, and (in the ``end`` totals, ``total``) never negative. Within an interval
    the loss may be negative: iperf3 takes a datagram that arrives late off the loss count
    of the interval it arrives in, while its running total never drops below 0.

    Raises:
        ParseError: naming the field.
    """
    lost = num(section, "lost_packets", where)
    packets = num(section, "packets", where)
    percent = num(section, "lost_percent", where)
    if total and lost is not None and lost < 0:
        raise bad(at(where, "lost_packets"), section["lost_packets"],
                  "negative (iperf3's total loss never is)")
    if lost is not None and packets is not None and lost > packets:
        raise bad(at(where, "lost_packets"), section["lost_packets"],
                  f"more than the {packets:g} datagrams counted")
    negative_ok = not total and lost is not None and lost < 0  # an interval's late arrivals
    if percent is not None and (percent > 100 or (percent < 0 and not negative_ok)):
        raise bad(at(where, "lost_percent"), section["lost_percent"],
                  "not a percentage (0 to 100)" if total else "not a percentage of its loss")


def in_order(item: Dict[str, Any], where: str, before: Optional[Tuple[float, bool, str]],
              omits: bool) -> None:
    """Refuse an interval that starts before the previous one of its stream (or sum) ended.

    ``before``: that previous interval's end, whether it was omitted, where it is. With
    ``-O`` (``omits``) iperf3 restarts its clock when the omitted period ends: the first
    interval after an omitted one may start anew.
    """
    if before is None:
        return
    end, omitted, previous = before
    if omits and omitted and not item.get("omitted"):
        return
    start = required(item, "start", where)
    if start < end - CLOCK_SLACK_S:
        raise bad(f"{where}.start", item["start"],
                  f"before {previous} ended ({end:g} s): intervals out of order")
