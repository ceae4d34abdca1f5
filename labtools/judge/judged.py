"""What every judged result offers: its verdicts, the worst of them, and them as a table.

The single measurement (:class:`~labtools.judge.measurement.Measurement`), concurrent flows
(:class:`~labtools.judge.shares.FlowsMeasurement`), a capacity search
(:class:`~labtools.judge.capacity.CapacitySearch`) and repeated runs
(:class:`~labtools.judge.repeated.RepeatedMeasurement`) all derive from :class:`Judged`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List

from labtools.judge import policy, verdicts
from labtools.judge.verdicts import Verdict

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class Judged:
    """A judged result: subclasses (dataclasses) hold ``verdicts``."""

    verdicts: List[Verdict]

    @property
    def verdict(self) -> str:
        """The worst of the verdicts (:data:`~labtools.judge.policy.VERDICT_ORDER`)."""
        return policy.worst([v.verdict for v in self.verdicts])

    @property
    def verdicts_table(self) -> "pd.DataFrame":
        """The verdicts as a table (:data:`~labtools.judge.verdicts.COMPARE_COLUMNS`)."""
        return verdicts.compare(self.verdicts)
