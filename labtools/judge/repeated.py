"""One probe call run N times: every run kept, the set judged on its medians.

A single run can mislead: the same two flows shared a link evenly in one run and 2.4 : 1 in
the next (notebook 05). A probe called with ``repeat=N`` makes N runs, each judged and saved
on its own, and returns a :class:`RepeatedMeasurement`:

- ``spread``: for every verdict's number (``receiver_rate``, ``rtt_min``, a flow's share,
  Jain's index...), the median, the smallest and the largest over the runs, with how many
  runs had it;
- ``verdicts``: one per metric, judged on the median: the verdict the *median run* of that
  metric received (the run whose number is the median; with an even N the lower of the two
  middle runs), its measured number replaced by the median and the spread named in the
  reason. The same judging code as a single run, on the number a careful experimenter
  would report.

The runs are :class:`~labtools.judge.measurement.Measurement` or
:class:`~labtools.judge.shares.FlowsMeasurement` objects; anything with ``verdicts`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from labtools.errors import InputError
from labtools.judge import policy
from labtools.judge.judged import Judged
from labtools.judge.verdicts import Verdict

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from labtools.judge.measurement import ProbeCall

#: the most runs one call may ask for
MAX_REPEAT = 20


@dataclass(frozen=True)
class Spread:
    """A number over repeated runs: median, smallest, largest, and how many runs had it."""

    median: float
    low: float
    high: float
    runs: int

    def describe(self, unit: str = "") -> str:
        """``median 14.2 (12.9-15.1) Mbit/s over 3 runs``."""
        unit = f" {unit}" if unit else ""
        return (f"median {self.median:.4g} ({self.low:.4g}-{self.high:.4g}){unit} over "
                f"{self.runs} runs")

    def as_dict(self) -> Dict[str, Any]:
        """JSON form."""
        return {"median": self.median, "low": self.low, "high": self.high, "runs": self.runs}


def check_repeat(repeat: int) -> int:
    """``repeat`` if it is a whole number of runs within 1..:data:`MAX_REPEAT`."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_REPEAT:
        raise InputError(f"repeat must be a whole number of runs within 1..{MAX_REPEAT}, "
                         f"got {repeat!r}")
    return repeat


def _median_index(values: Sequence[float]) -> int:
    """Index of the median value (the lower middle one for an even count)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    return order[(len(order) - 1) // 2]


@dataclass
class RepeatedMeasurement(Judged):
    """N runs of one probe call, judged on the median of each verdict's number."""

    runs: List[Any]
    spread: Dict[str, Spread]
    verdicts: List[Verdict]
    call: Optional["ProbeCall"] = None
    group_id: Optional[str] = None
    started_at: str = ""
    finished_at: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def spread_table(self) -> "pd.DataFrame":
        """One row per metric: median, low, high, runs."""
        import pandas as pd

        return pd.DataFrame([{"metric": metric, **s.as_dict()}
                             for metric, s in self.spread.items()],
                            columns=["metric", "median", "low", "high", "runs"])

    @property
    def table(self) -> "pd.DataFrame":
        """Every run's own table, one after the other, with a ``run`` column (0-based)."""
        import pandas as pd

        frames = []
        for i, run in enumerate(self.runs):
            frame = run.table.copy()
            frame.insert(0, "run", i)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    def __getattr__(self, name: str) -> Any:
        """What a single run offers (``summary``, ``expected``, ``src``...) is the median
        run's: the run whose first verdict's number is the median."""
        if name.startswith("_") or name in ("runs", "spread", "verdicts"):
            raise AttributeError(name)
        return getattr(self.median_run, name)

    @property
    def median_run(self) -> Any:
        """The run whose first verdict's number is the median over the runs."""
        first = self.verdicts[0].metric if self.verdicts else None
        values = [_measured(run, first) for run in self.runs]
        if first is None or any(v is None for v in values):
            return self.runs[0]
        return self.runs[_median_index([float(v) for v in values if v is not None])]


def _measured(run: Any, metric: Optional[str]) -> Optional[float]:
    for v in run.verdicts:
        if v.metric == metric:
            return None if v.measured is None else float(v.measured)
    return None


def judge_repeated(runs: Sequence[Any], **meta: Any) -> RepeatedMeasurement:
    """Judge ``runs`` of one probe call together (see the module docstring); ``meta``:
    call, group_id, started_at, finished_at, extra."""
    if not runs:
        raise InputError("no runs to judge")
    metrics = [v.metric for v in runs[0].verdicts]
    spread: Dict[str, Spread] = {}
    judged: List[Verdict] = []
    for metric in metrics:
        rows = [next((v for v in run.verdicts if v.metric == metric), None) for run in runs]
        numbers = [float(v.measured) for v in rows if v is not None and v.measured is not None]
        if len(numbers) < len(runs):  # a run without this number: judged on the worst
            worst = max((v for v in rows if v is not None),
                        key=lambda v: policy.VERDICT_ORDER.index(v.verdict))
            judged.append(replace(worst, reason=f"{worst.reason} (not every run measured it)"))
            continue
        s = Spread(sorted(numbers)[(len(numbers) - 1) // 2], min(numbers), max(numbers),
                   len(numbers))
        spread[metric] = s
        middle = rows[_median_index(numbers)]
        if middle is None:  # pragma: no cover - every run has the metric here
            continue
        judged.append(replace(middle, measured=s.median,
                              reason=f"{s.describe(middle.unit)}; median run: {middle.reason}"))
    return RepeatedMeasurement(list(runs), spread, judged, **meta)
