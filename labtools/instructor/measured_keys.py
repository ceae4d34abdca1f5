"""Answer keys on the network a student measured: their rate scale and their own values.

A student on a slow machine runs a lab with every rate scaled (``LABTOOLS_RATE_SCALE``, see
:mod:`labtools.model.scaling`); the values their notebook printed for a question were the
scaled ones, so the key must be too. The TA grades a conclusion against what the student
saw: beside the model's values the key shows the student's own measured values of that lab.

Both come from the student's submission (nbgrader's ``submitted/`` folder of the course,
else ``autograded/``), read as the class report reads it (:func:`labtools.instructor.class_data.
collect`: every measurement judged again on the student's own variant). Without a
submission a key is the model's alone, on the unscaled network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labtools.instructor import class_data
from labtools.instructor.answer_keys import QuestionKey, keys_for, lab_number
from labtools.judge.question_givens import LAB_CASES, LAB_TOPOLOGIES, kit_topology, labs
from labtools.model.scaling import scale_rates

#: nbgrader's folders a student's results are read from, the first that holds them
SUBMISSION_FOLDERS = ("submitted", "autograded")
#: the columns of a measured value a key shows (see :data:`class_data.MEASUREMENT_COLUMNS`)
SHOWN = ("quantity", "measured", "expected", "unit", "verdict")


@dataclass(frozen=True)
class MeasuredLab:
    """One lab of one student's submission.

    Attributes:
        lab: ``02``.
        case: what its notebook records measurements under (``link``).
        rate_scale: the factor every rate of their network was scaled by (1: none).
        values: each measured value judged on their network: ``quantity``, ``measured``,
            ``expected``, ``unit``, ``verdict`` (numbers as measured, units in ``unit``).
    """

    lab: str
    case: str
    rate_scale: float
    values: Tuple[Dict[str, Any], ...]

    def as_dict(self) -> Dict[str, Any]:
        """JSON form."""
        return {"lab": self.lab, "case": self.case, "rate_scale": self.rate_scale,
                "values": [dict(v) for v in self.values]}


def submission_folder(course: Path) -> Optional[Path]:
    """The course's folder of submissions to read (``submitted/``, else ``autograded/``),
    None when it has none."""
    for name in SUBMISSION_FOLDERS:
        folder = course / name
        if folder.is_dir() and any(p.is_dir() for p in folder.iterdir()):
            return folder
    return None


def measured_labs(course: Path, students: Sequence[str],
                  variants_file: Path) -> Dict[str, Dict[str, MeasuredLab]]:
    """student -> lab -> what their submission holds of it (students and labs without
    measurements left out)."""
    folder = submission_folder(course)
    if folder is None:
        return {}
    data = class_data.collect(folder, variants_file, set(students))
    cases = {case: lab for lab, case in LAB_CASES.items()}
    found: Dict[str, Dict[str, MeasuredLab]] = {}
    for row in data.calibrations.sort_values("assignment").itertuples():
        lab = cases.get(str(row.case))
        if lab is None:
            continue
        mine = data.measurements[(data.measurements["student"] == row.student)
                                 & (data.measurements["case"] == row.case)
                                 & (data.measurements["assignment"] == row.assignment)]
        values = tuple({k: _plain(v) for k, v in zip(SHOWN, r)}
                       for r in mine[list(SHOWN)].itertuples(index=False))
        found.setdefault(str(row.student), {})[lab] = MeasuredLab(
            lab, str(row.case), float(row.rate_scale), values)
    return found


def _plain(value: Any) -> Any:
    """A table's cell as JSON takes it (NaN as None, numpy numbers as Python's)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def measured_keys(variant: str, lab: Optional[str],
                  measured: Dict[str, MeasuredLab]) -> List[QuestionKey]:
    """The keys of every lab (or ``lab``'s) on ``variant``'s network, each lab's rates
    scaled as the student measured them (``measured``: lab -> what they submitted)."""
    keys: List[QuestionKey] = []
    wanted = labs() if lab is None else [lab_number(lab)]
    for lab_id in wanted:
        spec = LAB_TOPOLOGIES[lab_id]
        factor = measured[lab_id].rate_scale if lab_id in measured else 1.0
        scaled = {spec: scale_rates(kit_topology(spec, variant), factor)} if factor != 1.0 \
            else None
        keys += keys_for(variant, lab_id, scaled)
    return keys
