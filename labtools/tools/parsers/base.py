"""The result type every parser returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Optional

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
    """

    tool: str
    rows: Rows
    summary: Dict[str, Any] = field(default_factory=dict)
    raw: str = ""
    _frame: Optional[Any] = field(default=None, init=False, repr=False, compare=False)

    @property
    def table(self) -> "pd.DataFrame":
        """The rows as a pandas DataFrame (made when first asked for: measuring, judging
        and saving never need it)."""
        if self._frame is None:
            self._frame = self.rows.frame()
        return self._frame
