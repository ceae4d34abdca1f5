"""Tidy rows with their column types: plain Python until a DataFrame is asked for.

A parser's per-sample rows, a capacity search's steps and the shares of concurrent flows
are kept as :class:`Rows`. Measuring, judging and saving read them as they are;
:meth:`Rows.frame` makes the pandas DataFrame a notebook, a plot or ``labtools results``
shows. pandas takes about 20 s to import under software emulation (the lab VM without
KVM), so a lab that only measures, judges and saves never loads it.

Column types are pandas dtype names: ``int64``, ``Int64`` (integers, None where unknown),
``float64``, ``bool``, ``object``, and :data:`TIME_DTYPE` for a point in time, kept in the
rows as Unix seconds (a float; None or NaN when unknown). The store saves
:meth:`Rows.schema` and :meth:`Rows.json_rows`, and
:func:`labtools.results.records.rebuild_table` reads them back into the same DataFrame.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from labtools.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: the dtype of a time column (values in the rows: Unix seconds)
TIME_DTYPE = "datetime64[ns, UTC]"
#: the dtypes a column may have
DTYPES = ("int64", "Int64", "float64", "bool", "object", TIME_DTYPE)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

Record = Dict[str, Any]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def _time_us(value: Any) -> Optional[int]:
    """Unix seconds as whole microseconds (what ``ping -D`` prints), None when unknown."""
    return None if _missing(value) else round(float(value) * 1e6)


def _json_value(value: Any, dtype: str) -> Any:
    """One cell as the store keeps it (the value its DataFrame column holds)."""
    if dtype == "bool":
        return bool(value)
    if _missing(value):
        return None
    if dtype == "int64":
        return int(value)
    if dtype == "float64":
        return float(value)
    if dtype == TIME_DTYPE:
        return (_EPOCH + timedelta(microseconds=_time_us(value) or 0)).isoformat()
    return value


@dataclass(frozen=True)
class Rows:
    """Rows (dicts keyed by column) with the pandas dtype of each column.

    Build them with :meth:`of`, which keeps only the named columns of each record.
    """

    columns: Tuple[str, ...]
    dtypes: Mapping[str, str]
    records: Tuple[Record, ...] = ()

    def __post_init__(self) -> None:
        unknown = [f"{c}: {self.dtypes.get(c)}" for c in self.columns
                   if self.dtypes.get(c) not in DTYPES]
        if unknown:
            raise InputError(f"columns without a known dtype ({', '.join(unknown)}); "
                             f"use one of {', '.join(DTYPES)}")

    @classmethod
    def of(cls, columns: Iterable[str], dtypes: Mapping[str, str],
           records: Iterable[Mapping[str, Any]] = ()) -> "Rows":
        """Rows of ``records`` in ``columns`` order (missing keys read as None); a column
        not in ``dtypes`` is ``object``."""
        names = tuple(columns)
        types = {c: dtypes.get(c, "object") for c in names}
        return cls(names, types, tuple({c: r.get(c) for c in names} for r in records))

    @classmethod
    def empty(cls) -> "Rows":
        """No columns, no rows."""
        return cls((), {})

    def __len__(self) -> int:
        return len(self.records)

    def column(self, name: str) -> List[Any]:
        """The values of one column, in row order."""
        if name not in self.columns:
            raise InputError(f"no column {name!r} (columns: {', '.join(self.columns)})")
        return [r[name] for r in self.records]

    def numbers(self, name: str) -> List[float]:
        """The known values of a numeric column, as floats (None and NaN left out)."""
        return [float(v) for v in self.column(name) if not _missing(v)]

    def where(self, keep: Callable[[Record], bool]) -> "Rows":
        """The rows for which ``keep(row)`` is true."""
        return Rows(self.columns, self.dtypes, tuple(r for r in self.records if keep(r)))

    def schema(self) -> List[List[str]]:
        """``[[column, dtype], ...]``, as the store saves it."""
        return [[c, self.dtypes[c]] for c in self.columns]

    def json_rows(self) -> List[str]:
        """Each row as a JSON list in column order (times as ISO 8601 UTC text, NaN as
        null): the store's ``samples``."""
        return [json.dumps([_json_value(r[c], self.dtypes[c]) for c in self.columns],
                           default=str, allow_nan=False) for r in self.records]

    def frame(self) -> "pd.DataFrame":
        """The rows as a pandas DataFrame with the column dtypes (imports pandas)."""
        import pandas as pd

        table = pd.DataFrame(list(self.records), columns=list(self.columns))
        # text columns stay ``object`` (pandas 3 would infer its own string dtype)
        table = table.astype({c: t for c, t in self.dtypes.items() if t != TIME_DTYPE})
        for name in self.columns:
            if self.dtypes[name] == TIME_DTYPE:
                micro = [_time_us(v) for v in table[name]]
                table[name] = pd.to_datetime(
                    pd.Series(micro, index=table.index, dtype="Int64"), unit="us", utc=True
                ).astype(TIME_DTYPE)
        return table
