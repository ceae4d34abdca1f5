"""Typed summaries of a parsed run: what a verdict, a plot or a student reads.

A parser (:mod:`labtools.tools.parsers`) returns the tool's own totals as a dict of every
number it printed; :func:`summarize` turns that, and the per-interval rows, into one of
three dataclasses with the units in the field names (plain Python: no pandas):

- :class:`RttSummary` (ping): replies, loss, min/avg/max/mdev and percentiles of the RTT;
- :class:`RateSummary` (a TCP transfer: iperf3, simpleperf): the sender's and the
  receiver's rate, and the receiver's rate after the warm-up (``steady_mbps``);
- :class:`UdpSummary` (iperf 2 or iperf3 UDP): sent and received rate, jitter, loss.

``as_dict()`` gives the JSON form saved in the results store.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar, Union

from labtools.errors import InputError
from labtools.tools.registry import RATE, RTT, descriptor
from labtools.tools.rows import Rows

if TYPE_CHECKING:  # pragma: no cover
    from labtools.tools.parsers.base import Parsed

#: percentiles reported for a ping series (fractions)
PERCENTILES = (0.50, 0.90, 0.99, 0.999)


@dataclass(frozen=True)
class RttSummary:
    """A ping series: counts, loss (%), RTT statistics (ms) and percentiles (ms)."""

    transmitted: Optional[int]
    received: Optional[int]
    loss_pct: Optional[float]
    min_ms: Optional[float]
    avg_ms: Optional[float]
    max_ms: Optional[float]
    mdev_ms: Optional[float]
    p50_ms: Optional[float] = None
    p90_ms: Optional[float] = None
    p99_ms: Optional[float] = None
    p999_ms: Optional[float] = None
    max_after_first_ms: Optional[float] = None  #: the largest RTT after the first reply
    complete: bool = True
    kind: str = "rtt"
    #: the replies the percentiles rest on; a tail percentile needs enough of them
    #: (:func:`percentile_needs`: p90 10, p99 100, p99.9 1000), else it is None
    samples: int = 0
    #: where the tool's output disagrees with itself (:attr:`Parsed.warnings`); the numbers
    #: above come from the consistent part
    warnings: Tuple[str, ...] = ()

    def as_dict(self) -> Dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class RateSummary:
    """A TCP transfer. Rates in Mbit/s: ``receiver_mbps`` is the tool's own whole-run
    receiver rate; ``steady_mbps`` the receiver's rate after the warm-up (``warmup_s``,
    or iperf3's ``-O`` intervals), the one the verdicts judge."""

    sender_mbps: Optional[float]
    receiver_mbps: Optional[float]
    steady_mbps: Optional[float]
    warmup_s: float
    duration_s: Optional[float]
    streams: Optional[int]
    retransmits: Optional[int] = None
    error: Optional[str] = None
    reverse_receiver_mbps: Optional[float] = None  #: --bidir: the server-to-client direction
    reverse_sender_mbps: Optional[float] = None
    kind: str = "tcp"
    #: where the tool's output disagrees with itself (:attr:`Parsed.warnings`); the numbers
    #: above come from the consistent part
    warnings: Tuple[str, ...] = ()

    def as_dict(self) -> Dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class UdpSummary:
    """A UDP stream: what the sender sent and what arrived (Mbit/s), jitter (ms), lost and
    total datagrams as the receiver counted them, loss (%)."""

    sender_mbps: Optional[float]
    receiver_mbps: Optional[float]
    jitter_ms: Optional[float]
    lost: Optional[int]
    total: Optional[int]
    loss_pct: Optional[float]
    error: Optional[str] = None
    #: iperf 2 -d/-r: the server-to-client direction (Mbit/s; loss in %)
    reverse_receiver_mbps: Optional[float] = None
    reverse_sender_mbps: Optional[float] = None
    reverse_loss_pct: Optional[float] = None
    kind: str = "udp"
    #: where the tool's output disagrees with itself (:attr:`Parsed.warnings`); the numbers
    #: above come from the consistent part
    warnings: Tuple[str, ...] = ()

    def as_dict(self) -> Dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


Summary = Union[RttSummary, RateSummary, UdpSummary]
#: one of the three kinds of summary
S = TypeVar("S", RttSummary, RateSummary, UdpSummary)


def require_kind(summary: Summary, kind: Type[S]) -> S:
    """``summary`` as the ``kind`` of summary the caller measured (a ping's
    :class:`RttSummary`, a TCP transfer's :class:`RateSummary`, a UDP stream's
    :class:`UdpSummary`).

    Raises:
        InputError: it is another kind (the output was another tool's, or a UDP run where
            a TCP one was meant).
    """
    if not isinstance(summary, kind):
        raise InputError(f"a {kind.__name__} was needed here, but this run's summary is a "
                         f"{type(summary).__name__} (kind {summary.kind!r})")
    return summary


def _num(value: Any) -> Optional[float]:
    if value is None or isinstance(value, bool):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _int(value: Any) -> Optional[int]:
    number = _num(value)
    return None if number is None else int(number)


def _replies(rows: Rows) -> Rows:
    """The rows of a ping table that are replies and not duplicates (a table without a
    ``status`` column, as the ping parser made before it had one, holds only replies)."""
    if "status" in rows.columns:
        rows = rows.where(lambda r: r["status"] == "reply")
    if "duplicate" in rows.columns:
        rows = rows.where(lambda r: not r["duplicate"])
    return rows


def percentile_needs(p: float) -> int:
    """Replies a percentile ``p`` (a fraction) needs before it is shown: at least one
    sample beyond it, so that it is not simply the largest sample (p99.9 of 100 pings is
    their maximum): 10 for p90, 100 for p99, 1000 for p99.9."""
    return math.ceil(round(1 / (1 - p), 9))


def rtt_percentiles(rows: Rows) -> Dict[str, Optional[float]]:
    """p50, p90, p99 and p99.9 (ms) of the replies' RTTs (duplicates, timeouts and errors
    left out; the nearest sample at or above each rank, so every value is a real sample).
    A percentile is None when the replies are too few for it (:func:`percentile_needs`);
    p50 is there whenever there is a reply."""
    keys = ("p50_ms", "p90_ms", "p99_ms", "p999_ms")
    if "rtt_ms" not in rows.columns:
        return dict.fromkeys(keys)
    values = sorted(_replies(rows).numbers("rtt_ms"))
    if not values:
        return dict.fromkeys(keys)
    out: Dict[str, Optional[float]] = {}
    for key, p in zip(keys, PERCENTILES):
        if p > 0.5 and len(values) < percentile_needs(p):
            out[key] = None
            continue
        rank = max(1, math.ceil(p * len(values)))
        out[key] = values[rank - 1]
    return out


def reply_count(rows: Rows) -> int:
    """How many replies the percentiles rest on (duplicates, timeouts and errors left out)."""
    return len(_replies(rows).numbers("rtt_ms")) if "rtt_ms" in rows.columns else 0


def _rtt(parsed: "Parsed") -> RttSummary:
    s = parsed.summary
    p = rtt_percentiles(parsed.rows)
    return RttSummary(
        transmitted=_int(s.get("transmitted")), received=_int(s.get("received")),
        loss_pct=_num(s.get("loss_pct")), min_ms=_num(s.get("min_ms")),
        avg_ms=_num(s.get("avg_ms")), max_ms=_num(s.get("max_ms")),
        mdev_ms=_num(s.get("mdev_ms")), p50_ms=p["p50_ms"], p90_ms=p["p90_ms"],
        p99_ms=p["p99_ms"], p999_ms=p["p999_ms"],
        max_after_first_ms=_max_after_first(parsed.rows),
        complete=bool(s.get("complete", True)), samples=reply_count(parsed.rows),
        warnings=tuple(parsed.warnings))


def _max_after_first(rows: Rows) -> Optional[float]:
    """The largest RTT (ms) of the replies after the first one (which also waits for
    address resolution); duplicates, timeouts and errors left out."""
    if "rtt_ms" not in rows.columns:
        return None
    later = [_num(v) for v in _replies(rows).column("rtt_ms")[1:]]
    return max((v for v in later if v is not None), default=None)


def steady_receiver_mbps(rows: Rows, warmup_s: float) -> Optional[float]:
    """The receiver's rate (Mbit/s) over its intervals after the warm-up: iperf3's ``-O``
    intervals when the run has them (iperf3 restarts its clock after them), otherwise the
    intervals that start before ``warmup_s``. None when the rows have no receiver rows."""
    if not {"side", "start_s", "end_s", "bytes"} <= set(rows.columns):
        return None
    mine = rows.where(lambda r: r["side"] == "receiver")
    if "direction" in rows.columns and len(set(rows.column("direction")) - {None}) > 1:
        mine = mine.where(lambda r: r["direction"] == "forward")  # --bidir
    if "stream" in rows.columns and -1 in mine.column("stream"):
        mine = mine.where(lambda r: r["stream"] == -1)  # iperf3's per-interval sums
    if "omitted" in rows.columns and any(mine.column("omitted")):
        mine = mine.where(lambda r: not r["omitted"])
    else:
        mine = mine.where(lambda r: float(r["start_s"]) >= warmup_s - 1e-6)
    if not len(mine):
        return None
    span = max(mine.numbers("end_s")) - min(mine.numbers("start_s"))
    if span <= 0:
        return None
    return sum(mine.numbers("bytes")) * 8 / span / 1e6


def _stream_is(stream: int) -> Callable[[Dict[str, Any]], bool]:
    return lambda row: int(row["stream"]) == stream


def steady_stream_mbps(rows: Rows, warmup_s: float) -> List[float]:
    """Each stream's receiver rate (Mbit/s) after the warm-up, in stream order, from
    iperf3's per-stream receiver intervals (a ``-P`` run: one connection each); empty when
    the rows have none (no server report, or not iperf3's rows)."""
    if not {"side", "stream", "start_s", "end_s", "bytes"} <= set(rows.columns):
        return []
    mine = rows.where(lambda r: r["side"] == "receiver" and int(r["stream"]) >= 1)
    if "direction" in rows.columns:
        mine = mine.where(lambda r: r["direction"] in ("forward", None))
    if "omitted" in rows.columns and any(mine.column("omitted")):
        mine = mine.where(lambda r: not r["omitted"])
    else:
        mine = mine.where(lambda r: float(r["start_s"]) >= warmup_s - 1e-6)
    rates = []
    for stream in sorted(set(int(v) for v in mine.column("stream"))):
        one = mine.where(_stream_is(stream))
        span = max(one.numbers("end_s")) - min(one.numbers("start_s"))
        rates.append(sum(one.numbers("bytes")) * 8 / span / 1e6 if span > 0 else 0.0)
    return rates


def _tcp(parsed: "Parsed", warmup_s: float) -> RateSummary:
    s = parsed.summary
    receiver = _num(s.get("receiver_mbps"))
    steady = steady_receiver_mbps(parsed.rows, warmup_s)
    return RateSummary(
        sender_mbps=_num(s.get("sender_mbps")), receiver_mbps=receiver,
        steady_mbps=steady if steady is not None else receiver, warmup_s=warmup_s,
        duration_s=_num(s.get("duration_s")),
        streams=_int(s.get("streams") or s.get("connections")),
        retransmits=_int(s.get("retransmits")), error=s.get("error"),
        reverse_receiver_mbps=_num(s.get("reverse_receiver_mbps")),
        reverse_sender_mbps=_num(s.get("reverse_sender_mbps")), warnings=tuple(parsed.warnings))


def _udp(parsed: "Parsed") -> UdpSummary:
    s = parsed.summary
    lost_key, total_key = descriptor(parsed.tool).udp_count_keys
    lost, total = s.get(lost_key), s.get(total_key)
    return UdpSummary(
        sender_mbps=_num(s.get("sender_mbps")), receiver_mbps=_num(s.get("receiver_mbps")),
        jitter_ms=_num(s.get("jitter_ms")), lost=_int(lost), total=_int(total),
        loss_pct=_num(s.get("lost_pct")), error=s.get("error"),
        reverse_receiver_mbps=_num(s.get("reverse_receiver_mbps")),
        reverse_sender_mbps=_num(s.get("reverse_sender_mbps")),
        reverse_loss_pct=_num(s.get("reverse_lost_pct")), warnings=tuple(parsed.warnings))


def is_udp(parsed: "Parsed") -> bool:
    """True for the output of a UDP run."""
    return str(parsed.summary.get("protocol", "")).upper() == "UDP"


def _rate(parsed: "Parsed", warmup_s: float) -> Union[RateSummary, UdpSummary]:
    return _udp(parsed) if is_udp(parsed) else _tcp(parsed, warmup_s)


#: a tool's summary kind (:mod:`labtools.tools.registry`) -> what summarizes its runs
SUMMARIZERS: Dict[str, Callable[["Parsed", float], Summary]] = {
    RTT: lambda parsed, _warmup_s: _rtt(parsed),
    RATE: _rate,
}


def summarize(parsed: "Parsed", warmup_s: float = 0.0) -> Summary:
    """The typed summary of a parsed run (``warmup_s``: seconds the rate leaves out), as
    its tool's descriptor says; an :class:`InputError` for a tool whose output is not a
    measurement."""
    kind = descriptor(parsed.tool).summary_kind
    if kind not in SUMMARIZERS:
        raise InputError(f"{parsed.tool}'s output is a reading, not a measurement: "
                         "it has no summary")
    return SUMMARIZERS[kind](parsed, warmup_s)
