"""iperf3's ``end`` totals against its streams' own final reports (``end.streams``), for
:mod:`labtools.tools.parsers.iperf3`.

iperf3 writes each stream's final report (``end.streams[i].sender`` and ``.receiver``
for TCP, ``.udp`` for UDP) and their sums (``end.sum_sent``, ``end.sum_received``,
``end.sum``). The sums are read when they agree with the streams; where a sum is not the
sum of its streams (bytes, UDP datagrams lost) or is out of range (a negative loss, more
lost than counted, a percentage outside 0..100), the summary's numbers come from the
streams' reports instead and a warning says which sum disagreed: never a refusal of an
output whose streams are whole, never a silent choice.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from labtools.tools.parsers.iperf3_fields import as_list, integer, num, obj


def range_problem(section: Dict[str, Any], where: str) -> Optional[str]:
    """What in a total's UDP loss no run gives (None when nothing)."""
    lost = num(section, "lost_packets", where)
    packets = num(section, "packets", where)
    percent = num(section, "lost_percent", where)
    bad = []
    if lost is not None and lost < 0:
        bad.append(f"lost_packets {lost:g}")
    elif lost is not None and packets is not None and lost > packets:
        bad.append(f"lost_packets {lost:g} of {packets:g} datagrams")
    if percent is not None and not 0 <= percent <= 100:
        bad.append(f"lost_percent {percent:g}")
    return f"{where} says {' and '.join(bad)}, which no run counts" if bad else None


def _add(into: Dict[str, float], part: Dict[str, Any], where: str, udp: bool) -> None:
    into["bytes"] = into.get("bytes", 0) + (integer(part, "bytes", where) or 0)
    into["mbps"] = into.get("mbps", 0.0) + (num(part, "bits_per_second", where) or 0.0) / 1e6
    if udp:
        for key in ("lost_packets", "packets"):
            into[key] = into.get(key, 0) + (integer(part, key, where) or 0)
        into["jitter_ms"] = max(into.get("jitter_ms", 0.0), num(part, "jitter_ms", where) or 0.0)


def stream_sums(end: Dict[str, Any], udp: bool, bidir: bool) -> Dict[str, Dict[str, float]]:
    """The sums over ``end.streams`` by the total they make: ``sum_sent`` and
    ``sum_received`` (``_bidir_reverse`` for the server-to-client streams of ``--bidir``);
    UDP: ``udp`` (each stream's one report). {} when a stream lacks its report."""
    out: Dict[str, Dict[str, float]] = {}
    for i, stream in enumerate(as_list(end.get("streams"), "end.streams")):
        where = f"end.streams[{i}]"
        stream = obj(stream, where)
        parts = ("udp",) if udp else ("sender", "receiver")
        if any(not isinstance(stream.get(p), dict) for p in parts):
            return {}
        back = bidir and stream[parts[0]].get("sender") is False
        for part in parts:
            name = "udp" if udp else f"sum_{'sent' if part == 'sender' else 'received'}"
            _add(out.setdefault(name + ("_bidir_reverse" if back else ""), {}),
                 stream[part], f"{where}.{part}", udp)
    return out


def reconcile(out: Dict[str, Any], sums: Dict[str, Dict[str, Any]],
              parts: Dict[str, Dict[str, float]], udp: bool, sent_key: str,
              lost_key: Optional[str]) -> List[str]:
    """Check the totals read into ``out`` (:func:`labtools.tools.parsers.iperf3._totals`'s
    keys) against the streams' sums ``parts``; where they disagree or are out of range,
    put the streams' numbers in ``out``. ``sent_key``/``lost_key``: the totals the
    sender's and the loss numbers were read from. Returns the warnings."""
    warnings = [p for name, section in sums.items() if udp
                for p in [range_problem(section, f"end.{name}")] if p is not None]
    checks = [("sender", sent_key, parts.get("udp" if udp else "sum_sent"))]
    if not udp:
        checks.append(("receiver", "sum_received", parts.get("sum_received")))
    for side, name, part in checks:
        shown = out[f"{side}_bytes"]
        if part is None or shown is None or shown == part["bytes"]:
            continue
        warnings.append(f"end.{name}'s {shown} bytes are not the sum of its streams' "
                        f"{int(part['bytes'])} bytes; the streams' own totals are used")
        out[f"{side}_bytes"], out[f"{side}_mbps"] = int(part["bytes"]), part["mbps"]
    others = [(n, parts.get("udp")) for n in ("sum", "sum_sent") if udp and n != sent_key]
    others += [(n, parts.get(n)) for n in ("sum_sent_bidir_reverse",
                                           "sum_received_bidir_reverse")]
    for name, part in others:  # totals not read: a warning where they disagree
        section = sums.get(name)
        shown = None if section is None else integer(section, "bytes", f"end.{name}")
        if part is not None and shown is not None and shown != part["bytes"]:
            warnings.append(f"end.{name}'s {shown} bytes are not the sum of its streams' "
                            f"{int(part['bytes'])} bytes")
    if udp and lost_key is not None:
        _reconcile_loss(out, sums[lost_key], parts.get("udp"), lost_key, warnings)
    part = parts.get("udp")
    for name in ("sum", "sum_received"):
        section = sums.get(name)
        if not udp or name == lost_key or section is None or part is None \
                or range_problem(section, f"end.{name}") is not None:
            continue
        shown = integer(section, "lost_packets", f"end.{name}")
        if shown is not None and shown != part["lost_packets"]:
            warnings.append(f"end.{name}'s {shown} datagrams lost are not the sum of its "
                            f"streams' {int(part['lost_packets'])}")
    return warnings


def _reconcile_loss(out: Dict[str, Any], section: Dict[str, Any],
                    part: Optional[Dict[str, float]], name: str, warnings: List[str]) -> None:
    """The UDP loss numbers of ``out`` from the streams when the total read is out of
    range or not their sum (None when the streams' own are out of range too)."""
    broken = range_problem(section, f"end.{name}") is not None
    theirs = None if part is None else int(part["lost_packets"])
    differs = theirs is not None and out["lost_packets"] not in (None, theirs)
    if differs and not broken:
        warnings.append(f"end.{name}'s {out['lost_packets']} datagrams lost are not the sum "
                        f"of its streams' {theirs}; the streams' own counts are used")
    if not (broken or differs):
        return
    if part is not None and theirs is not None and 0 <= theirs <= part["packets"]:
        packets = int(part["packets"])
        out.update(lost_packets=theirs, packets=packets, jitter_ms=part["jitter_ms"],
                   lost_pct=100.0 * theirs / packets if packets else None)
    else:
        out.update(lost_packets=None, lost_pct=None)
