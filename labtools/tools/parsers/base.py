"""The result type every parser returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


@dataclass
class Parsed:
    """One tool run, parsed.

    Attributes:
        tool: ``ping``, ``iperf``, ``iperf3`` or ``simpleperf``.
        table: tidy per-sample / per-interval rows; the column schema is documented in
            each parser module.
        summary: the run's totals, JSON-serialisable; rates in Mbit/s, times in ms
            (durations in s), sizes in bytes; keys documented in each parser module.
        raw: the text that was parsed, kept so nothing is lost.
    """

    tool: str
    table: pd.DataFrame
    summary: Dict[str, Any] = field(default_factory=dict)
    raw: str = ""
