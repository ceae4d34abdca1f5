"""The summary of an iperf 2 run from its rows, whichever form iperf printed them in (text
or ``-y C`` CSV): :mod:`labtools.tools.parsers.iperf2` documents the rows and the keys.

Each row is a dict with the table's columns (:data:`COLUMNS`) and two keys of its own:
``ooo`` (the datagrams the line's ``received out-of-order`` line counted, or None) and
``empty`` (True for a receiver's report of nothing received: 0 bytes, ``-nan`` rate, 0
datagrams).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

TOOL = "iperf"
COLUMNS = ["stream", "start_s", "end_s", "bytes", "rate_mbps", "jitter_ms", "lost", "total",
           "kind", "direction"]
DTYPES = {"stream": "int64", "start_s": "float64", "end_s": "float64", "bytes": "int64",
          "rate_mbps": "float64", "jitter_ms": "float64", "lost": "float64",
          "total": "float64", "kind": "object", "direction": "object"}
#: the largest integer an int64 column holds
MAX_INT = 2**63 - 1
#: how far a printed ``[SUM]`` transfer may be from the sum of its streams' (a fraction):
#: iperf prints three significant digits, so each side is within half a percent
ROUNDING = 0.01
#: the receiver numbers of one direction, by summary key
RECEIVED_KEYS = ("server_rate_mbps", "jitter_ms", "lost", "total", "lost_pct", "out_of_order")
REVERSE_KEYS = ("reverse_jitter_ms", "reverse_lost", "reverse_total", "reverse_lost_pct")


def mark_totals(rows: List[Dict[str, Any]]) -> None:
    """Mark each stream's (and the sum's) last row starting at 0 s as its ``total``."""
    last: Dict[Any, Dict[str, Any]] = {}
    for row in rows:
        if row["kind"] == "interval":
            last[(row["stream"], row["direction"])] = row
    for row in last.values():
        if row["start_s"] == 0.0:
            row["kind"] = "total"


def _rate(rows: Iterable[Dict[str, Any]]) -> float:
    return sum(r["rate_mbps"] for r in rows)


def received(rows: List[Dict[str, Any]], streams: Optional[Set[int]]) -> Dict[str, Any]:
    """The receiver numbers of one direction summed over its streams' reports: rate
    (Mbit/s), the largest jitter (ms), lost and total datagrams, loss (%) from the sums.
    All None when a stream has no receiver report (``streams``: the ids that need one), or
    the reports have no datagram counts (TCP); ``lost`` is None when a report received
    nothing (iperf prints no loss count then, only a wrapped-around number)."""
    if (not rows or any(r["total"] is None for r in rows)
            or (streams is not None and {r["stream"] for r in rows} != streams)):
        return dict.fromkeys(RECEIVED_KEYS)
    total = sum(int(r["total"]) for r in rows)
    lost = None if any(r["empty"] for r in rows) else sum(int(r["lost"]) for r in rows)
    jitters = [r["jitter_ms"] for r in rows if r["jitter_ms"] is not None]
    return {
        "server_rate_mbps": _rate(rows),
        "jitter_ms": max(jitters) if jitters else None,
        "lost": lost,
        "total": total,
        "lost_pct": 100.0 * lost / total if lost is not None and total else None,
        "out_of_order": sum(r["ooo"] or 0 for r in rows),
    }


def _first_intervals(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Each stream's first interval row (starting at 0 s, not its total)."""
    return [r for r in rows if r["kind"] == "interval" and r["start_s"] == 0.0]


def check_sum(sum_row: Optional[Dict[str, Any]], streams: List[Dict[str, Any]],
              firsts: List[Dict[str, Any]]) -> List[str]:
    """Where the ``[SUM]`` total disagrees with its streams' totals (transfer beyond
    rounding, datagrams at all): one warning each, naming both numbers (and saying so when
    the excess is the first interval counted twice, as iperf 2.0.x servers print it)."""
    if sum_row is None or not streams:
        return []
    found: List[str] = []
    parts = sum(r["bytes"] for r in streams)
    if abs(sum_row["bytes"] - parts) > ROUNDING * max(sum_row["bytes"], parts) + 1024:
        first = sum(r["bytes"] for r in firsts)
        twice = (bool(firsts) and abs(sum_row["bytes"] - parts - first)
                 <= ROUNDING * max(sum_row["bytes"], parts) + 1024 * len(streams))
        found.append(f"the [SUM] line's {sum_row['bytes']} bytes are not the sum of its "
                     f"streams' {parts} bytes" + (
                         " (it counts the first interval twice, as iperf 2.0.x does)"
                         if twice else "") + "; the streams' own totals are used")
    counts = [r["total"] for r in streams]
    if sum_row["total"] is not None and None not in counts and sum_row["total"] != sum(counts):
        found.append(f"the [SUM] line's {sum_row['total']} datagrams are not the sum of "
                     f"its streams' {sum(counts)} datagrams; the streams' own counts are used")
    return found


def _whole(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """rate_mbps, bytes and duration_s of the run's forward direction: the sum of its
    streams' own totals (the longest stream's duration)."""
    if not rows:
        return {"rate_mbps": None, "bytes": None, "duration_s": None}
    return {"rate_mbps": _rate(rows), "bytes": sum(r["bytes"] for r in rows),
            "duration_s": max(r["end_s"] - r["start_s"] for r in rows)}


def summarize(rows: List[Dict[str, Any]], protocol: str, role: Optional[str],
              sent: Dict[int, int], sum_sent: Optional[int],
              disagreements: Optional[List[str]] = None) -> Dict[str, Any]:
    """The summary keys of :mod:`labtools.tools.parsers.iperf2` (``warnings`` aside).

    ``sent``: the ``Sent N datagrams`` of each stream; ``sum_sent``: the ``[SUM-N] Sent``.
    Where iperf's own sums disagree with its streams a sentence is appended to
    ``disagreements`` (the summary's numbers are the streams').
    """
    found = disagreements if disagreements is not None else []
    totals = [r for r in rows if r["kind"] == "total"]
    own = {d: [r for r in totals if r["stream"] >= 0 and r["direction"] == d]
           for d in ("forward", "reverse")}
    reports = {d: [r for r in rows if r["kind"] == "server_report" and r["direction"] == d]
               for d in ("forward", "reverse")}
    both = bool(own["forward"]) and bool(own["reverse"])
    sum_row = None if both else next((r for r in totals if r["stream"] == -1), None)
    found += check_sum(sum_row, own["forward"],
                       [r for r in _first_intervals(rows) if r["stream"] >= 0
                        and r["direction"] == "forward"])
    ids = {d: {r["stream"] for r in own[d]} for d in own}
    client, server = role == "client", role == "server"
    sent = _forward_sent(sent, sum_sent, ids["reverse"], client, found)
    fwd_received, rev_received = _received_both_ways(own, reports, ids, role)
    whole = _whole(own["forward"])
    summary: Dict[str, Any] = {
        "protocol": protocol,
        "role": role,
        "streams": len(ids["forward"]),
        "bidirectional": both,
        **whole,
        "sender_mbps": _rate(own["forward"]) if client and own["forward"] else None,
        "receiver_mbps": (fwd_received["server_rate_mbps"] if client
                          else whole["rate_mbps"] if server else None),
        "reverse_sender_mbps": _rate(own["reverse"]) if server and own["reverse"] else None,
        "reverse_receiver_mbps": (_rate(own["reverse"]) if client and own["reverse"]
                                  else rev_received["server_rate_mbps"] if server else None),
    }
    summary.update(fwd_received)
    summary.update({f"reverse_{k}": rev_received[k] for k in ("jitter_ms", "lost", "total",
                                                              "lost_pct")})
    summary["sent_datagrams"] = sum(sent.values()) if sent else None
    return summary


def _forward_sent(sent: Dict[int, int], sum_sent: Optional[int], reverse_ids: Set[int],
                  client: bool, found: List[str]) -> Dict[int, int]:
    """The datagrams each forward stream sent: a client's ``Sent`` lines are its forward
    streams' (a server's, its reverse streams': none here). A ``[SUM]`` count that is not
    their sum is noted in ``found``."""
    sent = {k: n for k, n in sent.items() if k not in reverse_ids} if client else {}
    if sum_sent is not None and sent and sum_sent != sum(sent.values()):
        found.append(f"the [SUM] line's {sum_sent} datagrams sent are not the sum of its "
                     f"streams' {sum(sent.values())}; the streams' own counts are used")
    return sent


def _received_both_ways(own: Dict[str, List[Dict[str, Any]]],
                        reports: Dict[str, List[Dict[str, Any]]],
                        ids: Dict[str, Set[int]], role: Optional[str]
                        ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """What was received forward and in reverse (:func:`received`), from what each side
    printed: a client its own sending (forward) and receiving (reverse) and the server's
    reports; a server its receiving (forward) and sending (reverse)."""
    client, server = role == "client", role == "server"
    fwd_received = (received(reports["forward"], ids["forward"]) if client
                    else received(own["forward"], None) if server else received([], None))
    rev_received = (received(own["reverse"], None) if client
                    else received(reports["reverse"], ids["reverse"]))
    return fwd_received, rev_received
