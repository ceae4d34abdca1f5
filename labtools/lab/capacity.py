"""Finding an unknown path's capacity with UDP, as a student would by hand, automated.

1. Start low (``start_mbps``) and multiply the offered rate by ``factor`` each step.
2. Watch the receiver: the knee is the first step where loss exceeds ``loss_pct`` or the
   received rate falls below ``growth`` x the offered rate (it stops growing).
3. Refine between the last clean rate and the knee by bisection (``refine_steps``).
4. The estimate is the highest received rate seen at or below the knee; the table keeps
   every step (offered, received, loss, jitter).

The search logic is pure (:func:`is_saturated`, :func:`next_rates`); :func:`probe_capacity`
drives any ``measure(rate_mbps) -> row`` function, such as a UDP probe on a real network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from labtools.errors import InputError

#: columns of the capacity table
CAPACITY_COLUMNS = ["step", "phase", "offered_mbps", "received_mbps", "loss_pct", "jitter_ms",
                    "saturated"]


@dataclass(frozen=True)
class SearchSettings:
    """How the capacity search proceeds (rates in Mbit/s)."""

    start_mbps: float = 1.0
    factor: float = 2.0
    max_mbps: float = 1000.0
    refine_steps: int = 3
    loss_pct: float = 1.0  #: loss above this marks saturation
    growth: float = 0.90  #: received below growth x offered marks saturation

    def check(self) -> None:
        """Refuse settings that cannot converge."""
        if not 0 < self.start_mbps <= self.max_mbps:
            raise InputError("start rate must be > 0 and at most the maximum rate")
        if self.factor <= 1:
            raise InputError("the rate factor must be > 1")
        if not 0 <= self.refine_steps <= 10:
            raise InputError("refine steps must be within 0..10")
        if not 0 < self.growth <= 1 or not 0 <= self.loss_pct <= 100:
            raise InputError("growth must be within (0, 1] and loss within 0..100 %")


def is_saturated(row: Dict[str, Any], settings: SearchSettings) -> bool:
    """True when a step shows loss above the threshold or a received rate that no longer
    follows the offered rate."""
    received = row.get("received_mbps")
    if received is None:
        return True
    loss = row.get("loss_pct") or 0.0
    return loss > settings.loss_pct or received < settings.growth * row["offered_mbps"]


def probe_capacity(measure: Callable[[float], Dict[str, Any]],
                   settings: Optional[SearchSettings] = None,
                   progress: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """Run the search; ``measure(rate)`` returns ``received_mbps``, ``loss_pct`` and
    ``jitter_ms`` for one UDP run at ``rate`` Mbit/s.

    Returns ``{"table": DataFrame (CAPACITY_COLUMNS), "estimate_mbps": float | None,
    "knee_mbps": float | None, "last_clean_mbps": float | None}``.
    """
    import pandas as pd

    settings = settings or SearchSettings()
    settings.check()
    rows: List[Dict[str, Any]] = []

    def step(rate: float, phase: str) -> bool:
        if progress is not None:
            progress(f"{phase}: offering {rate:.3g} Mbit/s")
        got = measure(rate)
        row = {"step": len(rows) + 1, "phase": phase, "offered_mbps": rate,
               "received_mbps": got.get("received_mbps"), "loss_pct": got.get("loss_pct"),
               "jitter_ms": got.get("jitter_ms")}
        row["saturated"] = is_saturated(row, settings)
        rows.append(row)
        return row["saturated"]

    clean, knee = None, None
    rate = settings.start_mbps
    while rate <= settings.max_mbps:
        if step(rate, "ramp"):
            knee = rate
            break
        clean = rate
        rate *= settings.factor
    if knee is not None and clean is not None:
        low, high = clean, knee
        for _ in range(settings.refine_steps):
            middle = (low + high) / 2
            if step(middle, "refine"):
                high = middle
            else:
                low = middle
        clean, knee = low, high
    table = pd.DataFrame(rows, columns=CAPACITY_COLUMNS)
    limit = knee if knee is not None else settings.max_mbps
    usable = table[table["offered_mbps"] <= limit]["received_mbps"].dropna()
    return {"table": table, "estimate_mbps": float(usable.max()) if len(usable) else None,
            "knee_mbps": knee, "last_clean_mbps": clean}
