"""The result type every parser returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from labtools.tools.rows import Rows

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


@dataclass
class Parsed:
    """One tool run, parsed.

    Attributes:
        tool: ``ping``, ``iperf``, ``iperf3`` or ``simpleperf``.
        rows: tidy per-sample / per-interval rows with their column types; the column
            schema is documented in each parser module.
        summary: the run's totals, JSON-serialisable; rates in Mbit/s, times in ms
            (durations in s), sizes in bytes; keys documented in each parser module.
        raw: the text that was parsed, kept so nothing is lost.
        warnings: where the tool's own output disagrees with itself or is out of range
            (a ``[SUM]`` that is not the sum of its streams, a printed loss its counts
            contradict, totals no run gives), one sentence each. The result's numbers
            never come from the part that disagrees: they come from one consistent
            source (each stream's final report, the counts); the parser's summary lists
            the same sentences under ``warnings``.
    """

    tool: str
    rows: Rows
    summary: Dict[str, Any] = field(default_factory=dict)
    raw: str = ""
    warnings: Tuple[str, ...] = ()
    _frame: Optional[Any] = field(default=None, init=False, repr=False, compare=False)

    @property
    def table(self) -> "pd.DataFrame":
        """The rows as a pandas DataFrame (made when first asked for: measuring, judging
        and saving never need it)."""
        if self._frame is None:
            self._frame = self.rows.frame()
        return self._frame
