"""What runs judged together share: concurrent flows
(:class:`~labtools.judge.shares.FlowsMeasurement`) and a capacity search
(:class:`~labtools.judge.capacity.CapacitySearch`) each have one row per flow or step, the
judging context, the probe call and group that made them, and when they ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from labtools.judge.judged import Judged
from labtools.judge.measurement import JudgeContext, ProbeCall
from labtools.tools.rows import Rows

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


@dataclass(kw_only=True)
class JudgedTogether(Judged):
    """Runs judged together (their fields are keyword-only, after each kind's own).

    Attributes:
        rows: one row per flow or step (each kind documents its columns).
        context: what judging needed besides the outputs.
        call: the probe call that made them.
        group_id: the group the store saved them as.
        started_at, finished_at: ISO 8601 UTC times.
    """

    rows: Rows
    context: JudgeContext = field(default_factory=JudgeContext)
    call: Optional[ProbeCall] = None
    group_id: Optional[str] = None
    started_at: str = ""
    finished_at: str = ""

    @property
    def table(self) -> "pd.DataFrame":
        """The rows as a table (imports pandas)."""
        return self.rows.frame()
